/*
 * test-protocol.c - the control protocol without a socket: RESP framing
 * and its limits, every verb's reply shape, and bad requests answered with
 * an error that names what was wrong and changes nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fixture.h"
#include "shmd/verbs/dispatch.h"
#include "shmd/resp/request.h"
#include "shmd/session/session.h"
#include "shmd/verbs/verbs.h"

static struct fixture fx;

/* The group's set-up: one fixture for every test, with Bloom filter
 * "main"; fixture_down() is the tear-down. */
static int setup(void **state)
{
	*state = &fx;
	fixture_up(state);
	fixture_bloom(&fx, "main", 10000, 0.01);
	return 0;
}

/* Feed @p wire (len bytes) in pieces of @p piece bytes, execute every
 * complete request; returns the replies (caller frees) and in *status the
 * reader's verdict: 0 ok, -1 protocol error (its text appended as -ERR). */
static char *run_wire(const char *wire, size_t len, size_t piece, int *status)
{
	struct request_reader *rr = request_reader_new();
	struct reply out = { 0 };
	struct request req;
	struct server_view view = { 0 }; /* a unix-socket client: no password */
	struct session sess;
	int rc = 0;
	assert_non_null(rr);
	session_init(&sess, 1, SESSION_UNIX, &view);
	sess.peer.uid = geteuid(); /* the daemon's own uid: an admin (roles.h) */
	for (size_t off = 0; off < len && rc >= 0; off += piece) {
		size_t n = len - off < piece ? len - off : piece;
		request_reader_feed(rr, wire + off, n);
		while ((rc = request_reader_next(rr, &req)) == 1) {
			/* Every reply within what its verb's row says it can
			 * take (the server judges requests by that). */
			size_t most = dispatch_reply_max(&sess, verbs_of(&req), &req), before = out.len;
			dispatch_request(&sess, &fx.reg, &req, &out);
			if (out.len - before > most)
				fail_msg("'%s': a reply of %zu bytes, more than the %zu its row allows", req.argv[0],
					 out.len - before, most);
		}
	}
	session_free(&sess);
	if (rc < 0)
		reply_error(&out, "ERR %s", request_reader_error(rr));
	*status = rc < 0 ? -1 : 0;
	request_reader_free(rr);
	char *s = calloc(1, out.len + 1);
	if (out.len > 0)
		memcpy(s, out.data, out.len);
	reply_free(&out);
	return s;
}

/* Encode argv as a RESP array of bulk strings. */
static char *encode(int argc, const char **argv, size_t *len)
{
	size_t cap = 32;
	for (int i = 0; i < argc; i++)
		cap += strlen(argv[i]) + 32;
	char *s = malloc(cap);
	size_t n = (size_t)sprintf(s, "*%d\r\n", argc);
	for (int i = 0; i < argc; i++)
		n += (size_t)sprintf(s + n, "$%zu\r\n%s\r\n", strlen(argv[i]), argv[i]);
	*len = n;
	return s;
}

/* Run one command given as words; returns the reply text. */
static char *cmd(int argc, const char **argv)
{
	size_t len;
	int status;
	char *wire = encode(argc, argv, &len);
	char *r = run_wire(wire, len, len, &status);
	free(wire);
	assert_int_equal(status, 0);
	return r;
}

#define CMD(...) cmd(sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(const char *), (const char *[]){ __VA_ARGS__ })

static void expect(char *got, const char *want)
{
	if (strcmp(got, want) != 0)
		fail_msg("reply\n  got:  %s\n  want: %s", got, want);
	free(got);
}

/* The reply starts with @p prefix (error texts are checked by their start). */
static void expect_prefix(char *got, const char *prefix)
{
	if (strncmp(got, prefix, strlen(prefix)) != 0)
		fail_msg("reply\n  got:  %s\n  want: %s...", got, prefix);
	free(got);
}

static int count_files(void)
{
	char path[512];
	fixture_path(&fx, "", path, sizeof(path));
	DIR *d = opendir(path);
	int n = 0;
	struct dirent *e;
	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void test_verbs_reply_in_redisbloom_shapes(void **state)
{
	(void)state;
	expect(CMD("PING"), "+PONG\r\n");
	expect(CMD("ping", "hello"), "$5\r\nhello\r\n");
	expect(CMD("BF.RESERVE", "shapes", "0.001", "5000"), "+OK\r\n");
	expect(CMD("BF.RESERVE", "shapes", "0.001", "5000"), "-ERR item exists\r\n");
	expect(CMD("bf.add", "shapes", "k1"), ":1\r\n");
	expect(CMD("BF.ADD", "shapes", "k1"), ":0\r\n");
	expect(CMD("BF.EXISTS", "shapes", "k1"), ":1\r\n");
	expect(CMD("BF.EXISTS", "shapes", "k2"), ":0\r\n");
	expect(CMD("BF.MADD", "shapes", "k1", "k2", "k3"), "*3\r\n:0\r\n:1\r\n:1\r\n");
	expect(CMD("BF.MEXISTS", "shapes", "k3", "nope", "k2"), "*3\r\n:1\r\n:0\r\n:1\r\n");
	expect(CMD("BF.CARD", "shapes"), ":3\r\n");
	expect(CMD("BF.INFO", "shapes", "ITEMS"), "*1\r\n:3\r\n");
	expect(CMD("BF.INFO", "shapes", "capacity"), "*1\r\n:5000\r\n");
	expect(CMD("BF.INFO", "shapes", "COLOR"), "-Invalid information value\r\n");
	/* BF.RESERVE's filter grows by [defaults]' expansion (RedisBloom's 2). */
	expect(CMD("BF.INFO", "shapes", "EXPANSION"), "*1\r\n:2\r\n");
	/* RedisBloom's five fields, in its order, names as simple strings, and no other. */
	char *info = CMD("BF.INFO", "shapes");
	assert_non_null(strstr(info, "*10\r\n+Capacity\r\n:5000\r\n+Size\r\n:"));
	assert_non_null(strstr(info, "+Number of filters\r\n:1\r\n+Number of items inserted\r\n:3\r\n"
				     "+Expansion rate\r\n:2\r\n"));
	assert_null(strstr(info, "Error rate"));
	free(info);
	expect(CMD("SHMF.LIST"), "*2\r\n$4\r\nmain\r\n$6\r\nshapes\r\n");
	char *si = CMD("SHMF.INFO", "shapes");
	/* 14 fields, a Bloom filter's 2 (its layout) and a growing filter's 4. */
	assert_non_null(strstr(si, "*40\r\n$4\r\nname\r\n$6\r\nshapes\r\n$4\r\ntype\r\n$5\r\nbloom\r\n"));
	assert_non_null(strstr(si, "$5\r\nlines\r\n:1\r\n$12\r\nbits_per_key\r\n"));
	assert_non_null(strstr(si, "$9\r\nexpansion\r\n:2\r\n$11\r\nlayer_count\r\n:1\r\n"));
	assert_non_null(strstr(si, "$5\r\nitems\r\n:3\r\n"));
	assert_non_null(strstr(si, "$4\r\nmode\r\n$4\r\n0640\r\n"));
	free(si);
	expect(CMD("BF.RESERVE", "shared", "0.01", "100", "NONSCALING", "MODE", "0660"), "+OK\r\n");
	si = CMD("SHMF.INFO", "shared");
	assert_non_null(strstr(si, "$4\r\nmode\r\n$4\r\n0660\r\n"));
	assert_non_null(strstr(si, "$10\r\nnonscaling\r\n:1\r\n"));
	free(si);
	/* A NONSCALING filter has no expansion rate: nil, as in RedisBloom. */
	expect(CMD("BF.INFO", "shared", "EXPANSION"), "*1\r\n$-1\r\n");
	expect(CMD("SHMF.DROP", "shared"), "+OK\r\n");
	expect(CMD("SHMF.DROP", "shapes"), "+OK\r\n");
	expect(CMD("BF.EXISTS", "shapes", "k1"), ":0\r\n"); /* a missing filter: 0, as in RedisBloom */
	expect(CMD("SHMF.LIST"), "*1\r\n$4\r\nmain\r\n");
}

/* Each bad request: the exact error start, and the instance unchanged. */
static void test_cf_verbs_reply_in_redisbloom_shapes(void **state)
{
	(void)state;
	expect(CMD("CF.RESERVE", "cf", "1000", "BUCKETSIZE", "4", "MAXITERATIONS", "20"), "+OK\r\n");
	expect(CMD("CF.RESERVE", "cf", "1000"), "-ERR item exists\r\n");
	expect(CMD("cf.add", "cf", "k1"), ":1\r\n");
	expect(CMD("CF.ADD", "cf", "k1"), ":1\r\n");
	expect(CMD("CF.COUNT", "cf", "k1"), ":2\r\n");
	expect(CMD("CF.ADDNX", "cf", "k1"), ":0\r\n");
	expect(CMD("CF.ADDNX", "cf", "k2"), ":1\r\n");
	expect(CMD("CF.EXISTS", "cf", "k2"), ":1\r\n");
	expect(CMD("CF.EXISTS", "cf", "k3"), ":0\r\n");
	expect(CMD("CF.MEXISTS", "cf", "k1", "k3", "k2"), "*3\r\n:1\r\n:0\r\n:1\r\n");
	expect(CMD("CF.DEL", "cf", "k1"), ":1\r\n");
	expect(CMD("CF.COUNT", "cf", "k1"), ":1\r\n");
	expect(CMD("CF.DEL", "cf", "k3"), ":0\r\n");
	expect(CMD("CF.INSERT", "cf", "ITEMS", "k4", "k4"), "*2\r\n:1\r\n:1\r\n");
	expect(CMD("CF.DEL", "nosuch", "k4"), "-Not found\r\n");
	expect(CMD("CF.INSERTNX", "cf", "NOCREATE", "ITEMS", "k4", "k5"), "*2\r\n:0\r\n:1\r\n");
	expect(CMD("CF.INSERT", "cf2", "CAPACITY", "100", "ITEMS", "a"), "*1\r\n:1\r\n");
	expect(CMD("CF.INSERT", "cf3", "NOCREATE", "ITEMS", "a"), "-ERR not found\r\n");
	expect(CMD("SHMF.ADDCAPPED", "cf", "dev", "2"), ":0\r\n");
	expect(CMD("SHMF.ADDCAPPED", "cf", "dev", "2"), ":1\r\n");
	expect(CMD("SHMF.ADDCAPPED", "cf", "dev", "2"), ":2\r\n");
	expect(CMD("CF.COUNT", "cf", "dev"), ":2\r\n");
	/* k1 x1, k2, k4 x2, k5, dev x2 = 7 stored, 1 deleted: RedisBloom's "inserted" counts what is stored */
	char *info = CMD("CF.INFO", "cf");
	assert_non_null(strstr(info, "*16\r\n+Size\r\n:"));
	assert_non_null(strstr(info, "+Number of buckets\r\n:296\r\n+Number of filters\r\n:1\r\n"
				     "+Number of items inserted\r\n:7\r\n+Number of items deleted\r\n:1\r\n"
				     "+Bucket size\r\n:4\r\n+Expansion rate\r\n:1\r\n"
				     "+Max iterations\r\n:20\r\n"));
	assert_null(strstr(info, "Fingerprint bits"));
	free(info);
	char *si = CMD("SHMF.INFO", "cf");
	assert_non_null(strstr(si, "*48\r\n$4\r\nname\r\n$2\r\ncf\r\n$4\r\ntype\r\n$6\r\ncuckoo\r\n"));
	assert_non_null(strstr(si, "$5\r\nitems\r\n:7\r\n"));
	assert_non_null(strstr(si,
			       "$7\r\nbuckets\r\n:296\r\n$11\r\nbucket_size\r\n:4\r\n$16\r\nfingerprint_bits\r\n:16\r\n"
			       "$9\r\nmax_kicks\r\n:20\r\n"));
	assert_non_null(strstr(si, "$7\r\ndeletes\r\n:1\r\n"));
	free(si);
	/* Each family of verbs refuses the other type, in Redis' words. */
#define WRONGTYPE "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
	expect(CMD("BF.ADD", "cf", "x"), WRONGTYPE);
	expect(CMD("BF.MEXISTS", "cf", "x"), WRONGTYPE);
	expect(CMD("BF.CARD", "cf"), WRONGTYPE);
	expect(CMD("CF.ADD", "main", "x"), WRONGTYPE);
	expect(CMD("CF.DEL", "main", "x"), WRONGTYPE);
	expect(CMD("SHMF.ADDCAPPED", "main", "x", "1"), WRONGTYPE);
	expect(CMD("CF.INSERT", "main", "ITEMS", "x"), WRONGTYPE);
	expect(CMD("SHMF.DROP", "cf"), "+OK\r\n");
	/* Created on the fly: RedisBloom's bucket size 2 and 20 iterations,
	 * from [defaults]. */
	info = CMD("CF.INFO", "cf2");
	assert_non_null(strstr(info, "+Bucket size\r\n:2\r\n+Expansion rate\r\n:1\r\n+Max iterations\r\n:20\r\n"));
	free(info);
	expect(CMD("SHMF.DROP", "cf2"), "+OK\r\n");
	/* Every bucket size that is one word, each answering for its keys;
	 * MAXITERATIONS up to RedisBloom's 65535. */
	static const struct {
		const char *size, *error, *want;
	} sizes[] = {
		{ "1", "0.01", "+Bucket size\r\n:1\r\n+Expansion rate\r\n:1\r\n+Max iterations\r\n:65535\r\n" },
		{ "2", "0.05", "+Bucket size\r\n:2\r\n+Expansion rate\r\n:1\r\n+Max iterations\r\n:65535\r\n" },
		{ "4", "0.05", "+Bucket size\r\n:4\r\n+Expansion rate\r\n:1\r\n+Max iterations\r\n:65535\r\n" },
		{ "8", "0.07", "+Bucket size\r\n:8\r\n+Expansion rate\r\n:1\r\n+Max iterations\r\n:65535\r\n" },
	};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		const char *argv[] = { "CF.RESERVE",    "cfb",   "1000",  "bucketsize",  sizes[i].size,
				       "MAXITERATIONS", "65535", "ERROR", sizes[i].error };
		expect(cmd(9, argv), "+OK\r\n");
		expect(CMD("CF.ADD", "cfb", "k1"), ":1\r\n");
		expect(CMD("CF.ADD", "cfb", "k1"), ":1\r\n");
		expect(CMD("CF.COUNT", "cfb", "k1"), ":2\r\n");
		expect(CMD("CF.DEL", "cfb", "k1"), ":1\r\n");
		expect(CMD("CF.EXISTS", "cfb", "k1"), ":1\r\n");
		info = CMD("CF.INFO", "cfb");
		if (strstr(info, sizes[i].want) == NULL)
			fail_msg("BUCKETSIZE %s: CF.INFO\n%s", sizes[i].size, info);
		free(info);
		expect(CMD("SHMF.DROP", "cfb"), "+OK\r\n");
	}
}

/* One request and the start of the error it must get. */
struct refusal {
	int argc;
	const char *argv[8];
	const char *want;
};

/* Send each of the @p n requests of @p cases: each must be answered with
 * its error. */
static void expect_refusals(struct refusal *cases, size_t n)
{
	for (size_t i = 0; i < n; i++)
		expect_prefix(cmd(cases[i].argc, cases[i].argv), cases[i].want);
}

/* Cuckoo verbs with too few or too many arguments: Redis's text, naming
 * the verb. */
static void check_cf_arity_refused(void)
{
	struct refusal cases[] = {
		{ 2, { "CF.RESERVE", "x" }, "-ERR wrong number of arguments for 'cf.reserve' command" },
		{ 1, { "CF.RESERVE" }, "-ERR wrong number of arguments for 'cf.reserve' command" },
		{ 2, { "CF.ADD", "cfm" }, "-ERR wrong number of arguments for 'cf.add' command" },
		{ 3, { "CF.INSERT", "cfm", "ITEMS" }, "-ERR wrong number of arguments for 'cf.insert' command" },
		{ 3, { "CF.INFO", "cfm", "x" }, "-ERR wrong number of arguments for 'cf.info' command" },
		{ 3, { "SHMF.ADDCAPPED", "cfm", "x" }, "-ERR wrong number of arguments for 'shmf.addcapped' command" },
	};
	expect_refusals(cases, sizeof(cases) / sizeof(cases[0]));
}

/* CF.RESERVE's capacity: RedisBloom's "Bad capacity" for what is no
 * integer (as Redis reads one: no sign but minus, no leading zero), and
 * its range rule, at least twice the bucket size (RedisBloom's 2 unless
 * BUCKETSIZE says). */
static void check_cf_capacity_refused(void)
{
	struct refusal cases[] = {
		{ 3, { "CF.RESERVE", "x", "ten" }, "-Bad capacity\r\n" },
		{ 3, { "CF.RESERVE", "x", "99999999999999999999" }, "-Bad capacity\r\n" },
		{ 3, { "CF.RESERVE", "x", "+100" }, "-Bad capacity\r\n" },
		{ 3, { "CF.RESERVE", "x", "0100" }, "-Bad capacity\r\n" },
		{ 3, { "CF.RESERVE", "x", "0" }, "-Capacity must be in the range [2 * BUCKETSIZE, 1073741824]\r\n" },
		{ 3,
		  { "CF.RESERVE", "x", "1000000000000000" },
		  "-ERR filter 'x': capacity 1000000000000000 at error rate 0.01 needs more memory than this host has" },
		{ 3, { "CF.RESERVE", "x", "-5" }, "-Capacity must be in the range [2 * BUCKETSIZE, 1073741824]\r\n" },
		{ 3, { "CF.RESERVE", "x", "3" }, "-Capacity must be in the range [2 * BUCKETSIZE, 1073741824]\r\n" },
		{ 5,
		  { "CF.RESERVE", "x", "7", "BUCKETSIZE", "4" },
		  "-Capacity must be in the range [2 * BUCKETSIZE, 1073741824]\r\n" },
		{ 5,
		  { "CF.RESERVE", "x", "15", "BUCKETSIZE", "8" },
		  "-Capacity must be in the range [2 * BUCKETSIZE, 1073741824]\r\n" },
		{ 5,
		  { "CF.RESERVE", "x", "1", "BUCKETSIZE", "1" },
		  "-Capacity must be in the range [2 * BUCKETSIZE, 1073741824]\r\n" },
	};
	expect_refusals(cases, sizeof(cases) / sizeof(cases[0]));
}

/* BUCKETSIZE: RedisBloom's texts outside 1..255, shmd's for the sizes
 * inside whose bucket is not one word; 8 fingerprints of 16 bits, which
 * the default 1% (or less) needs, are not one word either. */
static void check_cf_bucket_size_refused(void)
{
	struct refusal cases[] = {
		{ 5,
		  { "CF.RESERVE", "x", "100", "BUCKETSIZE", "0" },
		  "-BUCKETSIZE: value must be in the range [1, 255]\r\n" },
		{ 5,
		  { "CF.RESERVE", "x", "100", "BUCKETSIZE", "-1" },
		  "-BUCKETSIZE: value must be in the range [1, 255]\r\n" },
		{ 5,
		  { "CF.RESERVE", "x", "1000", "BUCKETSIZE", "256" },
		  "-BUCKETSIZE: value must be in the range [1, 255]\r\n" },
		{ 5,
		  { "CF.RESERVE", "x", "100", "BUCKETSIZE", "99999999999999999999" },
		  "-Couldn't parse BUCKETSIZE\r\n" },
		{ 5, { "CF.RESERVE", "x", "100", "BUCKETSIZE", "two" }, "-Couldn't parse BUCKETSIZE\r\n" },
		{ 5,
		  { "CF.RESERVE", "x", "100", "BUCKETSIZE", "3" },
		  "-ERR BUCKETSIZE 3 is not supported: a bucket holds 1, 2, 4 or 8 fingerprints here (a bucket is one word "
		  "that a lookup reads in one atomic load and a move compare-and-swaps: 8 fingerprints fit it only at 8 "
		  "bits, 4 at 16 bits)\r\n" },
		{ 5, { "CF.RESERVE", "x", "100", "BUCKETSIZE", "16" }, "-ERR BUCKETSIZE 16 is not supported: " },
		{ 5, { "CF.RESERVE", "x", "1000", "BUCKETSIZE", "255" }, "-ERR BUCKETSIZE 255 is not supported: " },
		{ 5,
		  { "CF.RESERVE", "x", "100", "BUCKETSIZE", "8" },
		  "-ERR filter 'x': a bucket of 8 fingerprints holds only 8-bit ones (8 x 8 bits fill the 64-bit word a "
		  "lookup reads at once), which reach an error rate of " },
		{ 7,
		  { "CF.RESERVE", "x", "100", "BUCKETSIZE", "8", "ERROR", "0.001" },
		  "-ERR filter 'x': a bucket of 8 fingerprints holds only 8-bit ones" },
	};
	expect_refusals(cases, sizeof(cases) / sizeof(cases[0]));
}

/* MAXITERATIONS: RedisBloom's texts, and its order (checked before
 * BUCKETSIZE and the capacity's range). */
static void check_cf_max_iterations_refused(void)
{
	struct refusal cases[] = {
		{ 5,
		  { "CF.RESERVE", "x", "100", "MAXITERATIONS", "0" },
		  "-MAXITERATIONS: value must be in the range [1, 65535]\r\n" },
		{ 5,
		  { "CF.RESERVE", "x", "100", "MAXITERATIONS", "-20" },
		  "-MAXITERATIONS: value must be in the range [1, 65535]\r\n" },
		{ 5,
		  { "CF.RESERVE", "x", "100", "MAXITERATIONS", "65536" },
		  "-MAXITERATIONS: value must be in the range [1, 65535]\r\n" },
		{ 5,
		  { "CF.RESERVE", "x", "100", "MAXITERATIONS", "99999999999999999999" },
		  "-Couldn't parse MAXITERATIONS\r\n" },
		{ 7,
		  { "CF.RESERVE", "x", "1", "BUCKETSIZE", "0", "MAXITERATIONS", "0" },
		  "-MAXITERATIONS: value must be in the range [1, 65535]\r\n" },
		{ 7,
		  { "CF.RESERVE", "x", "1", "MAXITERATIONS", "5", "BUCKETSIZE", "300" },
		  "-BUCKETSIZE: value must be in the range [1, 255]\r\n" },
		{ 5, { "CF.RESERVE", "x", "ten", "MAXITERATIONS", "0" }, "-Bad capacity\r\n" },
	};
	expect_refusals(cases, sizeof(cases) / sizeof(cases[0]));
}

/* EXPANSION: RedisBloom's texts, checked after BUCKETSIZE and before the
 * capacity's range; shmd's past its limit. */
static void check_cf_expansion_refused(void)
{
	struct refusal cases[] = {
		{ 5, { "CF.RESERVE", "x", "100", "EXPANSION", "two" }, "-Couldn't parse EXPANSION\r\n" },
		{ 5,
		  { "CF.RESERVE", "x", "100", "EXPANSION", "-1" },
		  "-EXPANSION: value must be in the range [0, 32768]\r\n" },
		{ 5,
		  { "CF.RESERVE", "x", "100", "EXPANSION", "40000" },
		  "-EXPANSION: value must be in the range [0, 32768]\r\n" },
		{ 7,
		  { "CF.RESERVE", "x", "100", "EXPANSION", "2", "WINDOW", "1h" },
		  "-ERR EXPANSION cannot be combined with WINDOW" },
		{ 7,
		  { "CF.RESERVE", "x", "100", "EXPANSION", "-1", "BUCKETSIZE", "0" },
		  "-BUCKETSIZE: value must be in the range [1, 255]\r\n" },
		{ 5,
		  { "CF.RESERVE", "x", "1", "EXPANSION", "-1" },
		  "-EXPANSION: value must be in the range [0, 32768]\r\n" },
		{ 7,
		  { "CF.RESERVE", "x", "100", "BUCKETSIZE", "3", "EXPANSION", "40000" },
		  "-EXPANSION: value must be in the range [0, 32768]\r\n" },
	};
	expect_refusals(cases, sizeof(cases) / sizeof(cases[0]));
}

/* ERROR out of range, unknown options, CF.INSERT's CAPACITY and ITEMS,
 * SHMF.ADDCAPPED's cap, a filter that is not there and a bad name. */
static void check_cf_other_bad_requests_refused(void)
{
	struct refusal cases[] = {
		{ 5,
		  { "CF.RESERVE", "x", "100", "ERROR", "1e-11" },
		  "-ERR filter 'x': error rate 1e-11 is below what cuckoo filters reach" },
		{ 7,
		  { "CF.RESERVE", "x", "100", "ERROR", "0.00001", "BUCKETSIZE", "4" },
		  "-ERR filter 'x': error rate 1e-05 is below what buckets of 4 with 16-bit fingerprints reach" },
		{ 5, { "CF.RESERVE", "x", "100", "ERROR", "2" }, "-ERR bad ERROR '2'" },
		{ 4, { "CF.RESERVE", "x", "100", "COLOR" }, "-ERR option 'COLOR' needs a value, or is unknown" },
		{ 5, { "CF.RESERVE", "x", "100", "COLOR", "red" }, "-ERR unknown option 'COLOR'" },
		{ 5, { "CF.INSERT", "x", "CAPACITY", "ten", "ITEMS" }, "-Bad capacity" },
		{ 5,
		  { "CF.INSERT", "x", "CAPACITY", "0", "ITEMS" },
		  "-Capacity must be in the range [cf-bucket-size * 2, 1073741824]" },
		{ 5,
		  { "CF.INSERT", "x", "CAPACITY", "3", "ITEMS" },
		  "-Capacity must be in the range [cf-bucket-size * 2, 1073741824]" },
		{ 4, { "CF.INSERT", "x", "NOCREATE", "k" }, "-Unknown argument received" },
		{ 5,
		  { "CF.INSERT", "x", "NOCREATE", "NOCREATE", "ITEMS" },
		  "-ERR ITEMS and at least one item are required" },
		{ 4, { "SHMF.ADDCAPPED", "cfm", "x", "-1" }, "-ERR bad cap '-1'" },
		{ 4, { "SHMF.ADDCAPPED", "cfm", "x", "many" }, "-ERR bad cap 'many'" },
		{ 3, { "CF.DEL", "nosuch", "a" }, "-Not found\r\n" },
		{ 3, { "CF.ADD", "../cfm", "a" }, "-ERR invalid filter name '../cfm'" },
	};
	expect_refusals(cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_bad_cf_requests_change_nothing(void **state)
{
	(void)state;
	expect(CMD("CF.RESERVE", "cfm", "1000"), "+OK\r\n");
	expect(CMD("CF.ADD", "cfm", "seed"), ":1\r\n");
	int files = count_files();
	check_cf_arity_refused();
	check_cf_capacity_refused();
	check_cf_bucket_size_refused();
	check_cf_max_iterations_refused();
	check_cf_expansion_refused();
	check_cf_other_bad_requests_refused();
	expect(CMD("SHMF.LIST"), "*2\r\n$4\r\nmain\r\n$3\r\ncfm\r\n");
	expect(CMD("CF.COUNT", "cfm", "seed"), ":1\r\n");
	expect(CMD("CF.EXISTS", "cfm", "x"), ":0\r\n");
	assert_int_equal(count_files(), files);
	expect(CMD("SHMF.DROP", "cfm"), "+OK\r\n");
}

static void test_bad_requests_change_nothing(void **state)
{
	(void)state;
	expect(CMD("BF.ADD", "main", "seed"), ":1\r\n");
	int files = count_files();
	char longname[70];
	memset(longname, 'n', 64);
	longname[64] = '\0';
	struct {
		int argc;
		const char *argv[8];
		const char *want;
	} cases[] = {
		{ 1, { "BF.ADD" }, "-ERR wrong number of arguments for 'bf.add' command" },
		{ 4, { "BF.ADD", "main", "a", "b" }, "-ERR wrong number of arguments for 'bf.add' command" },
		{ 2, { "BF.EXISTS", "main" }, "-ERR wrong number of arguments for 'bf.exists' command" },
		{ 2, { "BF.MADD", "main" }, "-ERR wrong number of arguments for 'bf.madd' command" },
		{ 2, { "BF.MEXISTS", "main" }, "-ERR wrong number of arguments for 'bf.mexists' command" },
		{ 3, { "BF.RESERVE", "x", "0.01" }, "-ERR wrong number of arguments for 'bf.reserve' command" },
		{ 1, { "BF.CARD" }, "-ERR wrong number of arguments for 'bf.card' command" },
		{ 4, { "BF.INFO", "main", "ITEMS", "x" }, "-ERR wrong number of arguments for 'bf.info' command" },
		{ 2, { "SHMF.LIST", "x" }, "-ERR wrong number of arguments for 'shmf.list' command" },
		{ 1, { "SHMF.DROP" }, "-ERR wrong number of arguments for 'shmf.drop' command" },
		{ 3, { "PING", "a", "b" }, "-ERR wrong number of arguments for 'ping' command" },
		{ 1, { "FLUSHALL" }, "-ERR FLUSHALL and FLUSHDB are off" },
		{ 1, { "XYZZY" }, "-ERR unknown command 'XYZZY'" },
		{ 3, { "SET", "a", "b" }, "-ERR shmd serves only Bloom and cuckoo filters: 'SET'" },
		{ 2, { "BF.INFO", "nosuch" }, "-ERR not found" },
		{ 2, { "SHMF.DROP", "nosuch" }, "-ERR filter 'nosuch' not found" },
		{ 3, { "BF.INFO", "main", "COLOR" }, "-Invalid information value\r\n" },
		/* RedisBloom's texts: an integer out of range, or no integer. */
		{ 4, { "BF.RESERVE", "x", "0.01", "0" }, "-ERR capacity must be in the range [1, 1073741824]\r\n" },
		{ 4, { "BF.RESERVE", "x", "0.01", "-5" }, "-ERR capacity must be in the range [1, 1073741824]\r\n" },
		{ 4, { "BF.RESERVE", "x", "0.01", "12abc" }, "-ERR bad capacity\r\n" },
		{ 4, { "BF.RESERVE", "x", "0.01", "+5" }, "-ERR bad capacity\r\n" },
		{ 4, { "BF.RESERVE", "x", "0.01", "99999999999999999999999" }, "-ERR bad capacity" },
		{ 4, { "BF.RESERVE", "x", "0.01", "1000000000000000000" }, "-ERR filter 'x': capacity" },
		{ 4,
		  { "BF.RESERVE", "x", "0", "100" },
		  "-ERR error rate must be in the range (0.000000, 1.000000)\r\n" },
		{ 4,
		  { "BF.RESERVE", "x", "1", "100" },
		  "-ERR error rate must be in the range (0.000000, 1.000000)\r\n" },
		{ 4,
		  { "BF.RESERVE", "x", "-0.1", "100" },
		  "-ERR error rate must be in the range (0.000000, 1.000000)\r\n" },
		{ 4,
		  { "BF.RESERVE", "x", "nan", "100" },
		  "-ERR error rate must be in the range (0.000000, 1.000000)\r\n" },
		{ 4, { "BF.RESERVE", "x", "0.01x", "100" }, "-ERR bad error rate\r\n" },
		{ 4, { "BF.RESERVE", "", "0.01", "100" }, "-ERR invalid filter name ''" },
		{ 4, { "BF.RESERVE", longname, "0.01", "100" }, "-ERR invalid filter name 'nnnn" },
		{ 4, { "BF.RESERVE", "a/b", "0.01", "100" }, "-ERR invalid filter name 'a/b'" },
		{ 4, { "BF.RESERVE", "..", "0.01", "100" }, "-ERR invalid filter name '..'" },
		{ 4, { "BF.RESERVE", "../escape", "0.01", "100" }, "-ERR invalid filter name '../escape'" },
		{ 3, { "BF.ADD", "../main", "a" }, "-ERR invalid filter name '../main'" },
		{ 5, { "BF.RESERVE", "x", "0.01", "100", "EXPANSION" }, "-ERR no expansion\r\n" },
		{ 6,
		  { "BF.RESERVE", "x", "0.01", "100", "EXPANSION", "-2" },
		  "-ERR expansion must be in the range [0, 32768]\r\n" },
		{ 6, { "BF.RESERVE", "x", "0.01", "100", "EXPANSION", "2x" }, "-ERR bad expansion\r\n" },
		{ 6,
		  { "BF.RESERVE", "x", "0.01", "100", "EXPANSION", "99999999999999999999" },
		  "-ERR bad expansion\r\n" },
		{ 6,
		  { "BF.RESERVE", "x", "0.01", "100", "EXPANSION", "32769" },
		  "-ERR expansion must be in the range [0, 32768]\r\n" },
		{ 7,
		  { "BF.RESERVE", "x", "0.01", "100", "EXPANSION", "2", "NONSCALING" },
		  "-Nonscaling filters cannot expand\r\n" },
		{ 8,
		  { "BF.RESERVE", "x", "0.01", "100", "EXPANSION", "2", "WINDOW", "1h" },
		  "-ERR EXPANSION cannot be combined with WINDOW" },
		{ 7,
		  { "BF.RESERVE", "x", "0.01", "100", "NONSCALING", "WINDOW", "1h" },
		  "-ERR NONSCALING cannot be combined with WINDOW" },
		{ 6, { "BF.RESERVE", "x", "0.01", "100", "FIXED", "NONSCALING" }, "-ERR FIXED cannot be combined" },
		{ 6, { "BF.INSERT", "x", "EXPANSION", "-1", "ITEMS", "a" }, "-Bad expansion\r\n" },
		{ 6, { "BF.INSERT", "x", "CAPACITY", "0", "ITEMS", "a" }, "-Bad capacity\r\n" },
		{ 6, { "BF.INSERT", "x", "ERROR", "1", "ITEMS", "a" }, "-Bad error rate\r\n" },
		{ 3, { "BF.INSERT", "x", "CAPACITY" }, "-ERR wrong number of arguments for 'bf.insert' command\r\n" },
		{ 6, { "BF.INSERT", "x", "EXPANSION", "y", "ITEMS", "a" }, "-Bad expansion\r\n" },
		{ 6, { "BF.RESERVE", "x", "0.01", "100", "MODE", "0666" }, "-ERR bad MODE '0666'" },
		{ 6, { "BF.RESERVE", "x", "0.01", "100", "MODE", "rw" }, "-ERR bad MODE 'rw'" },
		{ 5, { "BF.RESERVE", "x", "0.01", "100", "COLOR" }, "-ERR unknown option 'COLOR'" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_prefix(cmd(cases[i].argc, cases[i].argv), cases[i].want);
	/* A name with a NUL byte inside: "main\0x" must not address "main". */
	int status;
	const char nul[] = "*3\r\n$6\r\nBF.ADD\r\n$6\r\nmain\0x\r\n$1\r\nq\r\n";
	expect_prefix(run_wire(nul, sizeof(nul) - 1, 64, &status), "-ERR invalid filter name 'main'");
	assert_int_equal(status, 0);

	expect(CMD("SHMF.LIST"), "*1\r\n$4\r\nmain\r\n");
	expect(CMD("BF.CARD", "main"), ":1\r\n");
	expect(CMD("BF.EXISTS", "main", "a"), ":0\r\n");
	expect(CMD("BF.EXISTS", "main", "q"), ":0\r\n");
	assert_int_equal(count_files(), files);
}

/* Malformed streams: a protocol error naming the fault, after answering
 * the requests that came complete before it. */
static void test_malformed_streams_are_refused(void **state)
{
	(void)state;
	struct {
		const char *wire;
		const char *want;
	} cases[] = {
		{ "PING\r\n", "-ERR Protocol error: expected '*'" },
		{ "*1\r\n$4\r\nPING\r\nPING\r\n", "+PONG\r\n-ERR Protocol error: expected '*'" },
		{ "*x\r\n", "-ERR Protocol error: invalid multibulk length" },
		{ "*-1\r\n", "-ERR Protocol error: invalid multibulk length" },
		{ "*0\r\n", "-ERR Protocol error: invalid multibulk length" },
		{ "*\r\n", "-ERR Protocol error: invalid multibulk length" },
		{ "*1\n", "-ERR Protocol error: invalid multibulk length" },
		{ "*2\r\n:1\r\n", "-ERR Protocol error: expected '$' (a bulk string), got ':'" },
		{ "*1\r\n*1\r\n", "-ERR Protocol error: expected '$' (a bulk string), got '*'" },
		{ "$4\r\nPING\r\n", "-ERR Protocol error: expected '*'" },
		{ "*1\r\n$-1\r\n", "-ERR Protocol error: invalid bulk length" },
		{ "*1\r\n$2\r\nPING\r\n", "-ERR Protocol error: bulk string longer than its declared length" },
		{ "*1\r\n$4\r\nPINGx\r\n", "-ERR Protocol error: bulk string longer than its declared length" },
		{ "*1111111111111111111111111111\r\n", "-ERR Protocol error: header line longer than" },
		{ "*1048577\r\n", "-ERR Protocol error: 1048577 arguments, more than 1048576" },
		{ "*99999999\r\n", "-ERR Protocol error: 99999999 arguments" },
		{ "*1\r\n$16777217\r\n", "-ERR Protocol error: argument of 16777217 bytes, larger than 16 MiB" },
		{ "*1\r\n$999999999\r\n", "-ERR Protocol error: invalid bulk length" },
		{ "\x01\x02", "-ERR Protocol error: expected '*' (a request is an array of bulk strings; inline "
			      "commands are not accepted), got 0x01" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int status;
		/* Whole, and one byte at a time: same verdict. */
		for (size_t piece = 1; piece <= 64; piece += 63) {
			expect_prefix(run_wire(cases[i].wire, strlen(cases[i].wire), piece, &status), cases[i].want);
			assert_int_equal(status, -1);
		}
	}
	/* The 1,048,576-argument limit itself is allowed. */
	struct request_reader *rr = request_reader_new();
	assert_int_equal(request_reader_feed(rr, "*1048576\r\n", 10), 0);
	request_reader_free(rr);
}

/* 16 MiB arguments are fine; five of them pass 64 MiB and are refused
 * without buffering much past the limit. */
static void test_request_size_limit(void **state)
{
	(void)state;
	size_t arg = 16u << 20;
	char *body = malloc(arg + 2);
	memset(body, 'k', arg);
	memcpy(body + arg, "\r\n", 2);
	char hdr[64];
	struct request_reader *rr = request_reader_new();
	struct request req;
	int n = sprintf(hdr, "*5\r\n");
	assert_int_equal(request_reader_feed(rr, hdr, (size_t)n), 0);
	int rc = 0;
	for (int i = 0; i < 5 && rc == 0; i++) {
		n = sprintf(hdr, "$%zu\r\n", arg);
		rc = request_reader_feed(rr, hdr, (size_t)n);
		if (rc == 0)
			rc = request_reader_feed(rr, body, arg + 2);
	}
	assert_int_equal(rc, SHMF_E_PROTO);
	assert_int_equal(request_reader_next(rr, &req), SHMF_E_PROTO);
	assert_non_null(strstr(request_reader_error(rr), "request larger than 64 MiB"));
	assert_true(request_reader_pending(rr) <= REQUEST_MAX_BYTES);
	request_reader_free(rr);

	/* One 16 MiB key is a legal request. */
	rr = request_reader_new();
	n = sprintf(hdr, "*3\r\n$9\r\nBF.EXISTS\r\n$4\r\nmain\r\n$%zu\r\n", arg);
	assert_int_equal(request_reader_feed(rr, hdr, (size_t)n), 0);
	assert_int_equal(request_reader_feed(rr, body, arg + 2), 0);
	assert_int_equal(request_reader_next(rr, &req), 1);
	assert_int_equal(req.argc, 3);
	assert_int_equal(req.lens[2], arg);
	request_reader_free(rr);
	free(body);
}

/* A pipeline split at every possible byte gives the same replies. */
static void test_pipeline_split_anywhere(void **state)
{
	(void)state;
	const char wire[] = "*3\r\n$6\r\nBF.ADD\r\n$4\r\nmain\r\n$3\r\nabc\r\n"
			    "*4\r\n$10\r\nBF.MEXISTS\r\n$4\r\nmain\r\n$3\r\nabc\r\n$0\r\n\r\n"
			    "*1\r\n$4\r\nPING\r\n";
	int status;
	free(CMD("BF.ADD", "main", "abc"));
	char *whole = run_wire(wire, sizeof(wire) - 1, sizeof(wire), &status);
	assert_int_equal(status, 0);
	assert_string_equal(whole, ":0\r\n*2\r\n:1\r\n:0\r\n+PONG\r\n");
	for (size_t piece = 1; piece < sizeof(wire); piece++) {
		char *r = run_wire(wire, sizeof(wire) - 1, piece, &status);
		assert_int_equal(status, 0);
		assert_string_equal(r, whole);
		free(r);
	}
	free(whole);
}

/* Random bytes and random mutations of valid requests never crash the
 * reader (run under AddressSanitizer in the sanitizer build), and every
 * stream ends in a request, a wait for more bytes, or a named error. */
static void test_random_streams(void **state)
{
	(void)state;
	const char valid[] = "*3\r\n$9\r\nBF.EXISTS\r\n$4\r\nmain\r\n$3\r\nabc\r\n";
	char buf[sizeof(valid) + 16];
	char *card = CMD("BF.CARD", "main");
	srandom(42);
	for (int iter = 0; iter < 20000; iter++) {
		size_t len;
		if (iter % 2) {
			len = (size_t)(random() % (long)sizeof(buf));
			for (size_t i = 0; i < len; i++)
				buf[i] = (char)(random() & 0xff);
		} else {
			len = sizeof(valid) - 1;
			memcpy(buf, valid, len);
			for (int m = 0; m < 1 + iter % 4; m++)
				buf[random() % (long)len] = "*$\r\n0123456789-x"[random() % 16];
		}
		int status;
		char *r = run_wire(buf, len, 1 + (size_t)(iter % 7), &status);
		if (status < 0)
			assert_non_null(strstr(r, "-ERR Protocol error: "));
		free(r);
	}
	/* Mutations of a check can never have added anything. */
	expect(CMD("BF.CARD", "main"), card);
	free(card);
}

/* The reader's memory follows the bytes that came, not the counts and
 * lengths that headers announce: "*1048576" (10 bytes) once made 16 MiB of
 * argument vectors; a request taken leaves no big buffer behind. */
static void test_reader_memory_follows_bytes(void **state)
{
	(void)state;
	struct request_reader *rr = request_reader_new();
	size_t empty = request_reader_memory(rr);
	assert_true(empty < 64u << 10);
	struct request req;
	assert_int_equal(request_reader_feed(rr, "*1048576\r\n", 10), 0);
	assert_int_equal(request_reader_next(rr, &req), 0); /* the header parsed: the array made */
	print_message("    after *1048576: the reader holds %zu bytes\n", request_reader_memory(rr));
	assert_true(request_reader_memory(rr) < empty + (4u << 10));
	/* 100,000 empty arguments: 600 KB sent, a few times that held at most. */
	size_t sent = 10;
	for (int i = 0; i < 100000; i++, sent += 6) {
		assert_int_equal(request_reader_feed(rr, "$0\r\n\r\n", 6), 0);
		if (i % 1000 == 0) /* parsed as the server does, after each read */
			assert_int_equal(request_reader_next(rr, &req), 0);
	}
	assert_int_equal(request_reader_next(rr, &req), 0);
	size_t held = request_reader_memory(rr);
	print_message("    *1048576 then %zu bytes of arguments: the reader holds %zu bytes\n", sent, held);
	assert_true(held < empty + 8 * sent);
	assert_true(held > sent); /* it does count them */
	request_reader_free(rr);

	/* A 4 MiB request taken: its buffer and arguments are given back. */
	rr = request_reader_new();
	size_t arg = 4u << 20;
	char *body = malloc(arg + 2);
	memset(body, 'k', arg);
	memcpy(body + arg, "\r\n", 2);
	char hdr[64];
	int n = sprintf(hdr, "*2\r\n$4\r\nECHO\r\n$%zu\r\n", arg);
	assert_int_equal(request_reader_feed(rr, hdr, (size_t)n), 0);
	assert_int_equal(request_reader_feed(rr, body, arg + 2), 0);
	assert_int_equal(request_reader_next(rr, &req), 1);
	assert_true(request_reader_memory(rr) > 2 * arg); /* its bytes and the argument's copy */
	assert_int_equal(req.lens[1], arg);
	assert_int_equal(request_reader_next(rr, &req), 0);
	print_message("    after a 4 MiB request was taken: %zu bytes\n", request_reader_memory(rr));
	assert_true(request_reader_memory(rr) < empty + (32u << 10));
	free(body);
	request_reader_free(rr);
}

/* The replies that grow with the verb table, the filters or the request:
 * each within what its verb's row says (run_wire() checks every reply),
 * in RESP2 and RESP3; COMMAND INFO for every verb at once. */
static void test_replies_within_rows(void **state)
{
	(void)state;
	static const char *const words[][4] = {
		{ "COMMAND" },
		{ "COMMAND", "DOCS" },
		{ "COMMAND", "LIST" },
		{ "INFO" },
		{ "INFO", "all" },
		{ "CLIENT", "INFO" },
		{ "CLIENT", "HELP" },
		{ "CLIENT", "LIST" },
		{ "CONFIG", "GET", "*" },
		{ "SLOWLOG", "GET", "-1" },
		{ "MEMORY", "STATS" },
		{ "MEMORY", "USAGE", "main" },
		{ "INFO", "everything" },
		{ "HELLO", "3" },
		{ "SHMF.INFO", "main" },
		{ "BF.INFO", "main" },
		{ "KEYS", "*" },
		{ "SCAN", "0" },
		{ "SHMF.LIST" },
		{ "ECHO", "hello" },
		{ "PING" },
		{ "TIME" },
		{ "COMMAND", "GETKEYS", "BF.ADD", "main" },
		{ "BF.SCANDUMP", "main", "0" },
		{ "SHMF.REPLICATION" },
	};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		int n = 0;
		while (n < 4 && words[i][n] != NULL)
			n++;
		free(cmd(n, (const char **)words[i]));
	}
	const char *argv[128] = { "COMMAND", "INFO" };
	int n = 2;
	const struct verb *v;
	for (size_t i = 0; (v = verbs_at(i)) != NULL && n < 128; i++)
		argv[n++] = v->name;
	free(cmd(n, argv));
	argv[1] = "DOCS";
	free(cmd(n, argv));
}

int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verbs_reply_in_redisbloom_shapes),
		cmocka_unit_test(test_cf_verbs_reply_in_redisbloom_shapes),
		cmocka_unit_test(test_bad_cf_requests_change_nothing),
		cmocka_unit_test(test_bad_requests_change_nothing),
		cmocka_unit_test(test_malformed_streams_are_refused),
		cmocka_unit_test(test_request_size_limit),
		cmocka_unit_test(test_pipeline_split_anywhere),
		cmocka_unit_test(test_random_streams),
		cmocka_unit_test(test_reader_memory_follows_bytes),
		cmocka_unit_test(test_replies_within_rows),
	};
	return cmocka_run_group_tests(tests, setup, fixture_down);
}
