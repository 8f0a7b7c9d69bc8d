/*
 * test-quotas.c - the writers' quotas hold for a filter's whole life, with
 * a real unprivileged writer (a member of the client group, made for the
 * test) against a real shmd running as root, [roles] writer_create = yes
 * and writer_max_filter_bytes = 2m:
 *
 *   growth   - a writer's 15 KB Bloom filter with EXPANSION 32768 (its next
 *              layer 82 MB) and a cuckoo one: adds through the socket until
 *              growth is refused; new keys then answer "Filter is full"
 *              naming writer_max_filter_bytes, keys it holds answer 0; the
 *              instance directory and shmd's RSS grow by less than the
 *              quota; after a restart the record holds (shmd-owners, 0600)
 *              and growth is still refused;
 *   replace  - an admin's SHMF.RESIZE, SHMF.SWAP and SHMF.RESTORE of a
 *              writer's filter past its quota refused naming it, the filter
 *              unchanged; within it, done; a drop forgets the record;
 *   host     - an admin's filter whose next layer (EXPANSION 32768) is more
 *              than the host's memory: growth refused before any page, the
 *              log and the full answer say so.
 *
 * Usage: test-quotas PATH-TO-SHMD [TEST]
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/daemon-process.h"
#include "tests/fixture.h"
#include "tests/users.h"
#include "tests/run-named.h"

#define INSTANCE "qt"
#define QUOTA    (2u << 20)
static const char *shmd_path;
static struct daemon_dir shmd; /* shmd's runtime directory and files */
static char g_client[32], u_writer[32];
static pid_t daemon_pid;

static void start_shmd(void)
{
	assert_int_equal(daemon_write_conf(shmd.conf,
					   "[instance]\nname = " INSTANCE "\nsocket_mode = 0660\ngroup = %s\n"
					   "[roles]\nwriter_create = yes\nwriter_max_filter_bytes = 2m\n"
					   "writer_max_total_bytes = 64m\n",
					   g_client),
			 0);
	daemon_pid = daemon_start(shmd_path, shmd.conf, shmd.sock, shmd.log);
}

/* SIGTERM: a clean exit, status 0 (under the sanitizers, an error found
 * in shmd makes it another). */
static void stop_shmd(void)
{
	int st = daemon_pid > 0 ? daemon_stop(daemon_pid, SIGTERM) : 0;
	daemon_pid = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("shmd exited with wait status %d on SIGTERM; its log: %s", st, daemon_read_file(shmd.log));
}

/* One request on connection @p fd; the first line of its reply in @p reply. */
static void request_on(int fd, int argc, const char *const *argv, char *reply, size_t cap)
{
	resp_send(fd, argc, argv, NULL);
	resp_read_line(fd, reply, cap, 10000);
}

/* One request on a new unix connection (as whoever runs this). */
static void request(int argc, const char *const *argv, char *reply, size_t cap)
{
	int fd = sock_unix_connect(shmd.sock);
	reply[0] = '\0';
	if (fd < 0) {
		snprintf(reply, cap, "(cannot connect: %s)", strerror(-fd));
		return;
	}
	request_on(fd, argc, argv, reply, cap);
	close(fd);
}

#define REQ(reply, ...)                                                                \
	request((int)(sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(const char *)), \
		(const char *[]){ __VA_ARGS__ }, reply, sizeof(reply))

/* Bytes the files of the instance directory take. */
static uint64_t instance_bytes(void)
{
	DIR *d = opendir(shmd.idir);
	assert_non_null(d);
	struct dirent *e;
	uint64_t bytes = 0;
	while ((e = readdir(d)) != NULL) {
		char p[512];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s", shmd.idir, e->d_name);
		if (e->d_name[0] != '.' && stat(p, &st) == 0)
			bytes += (uint64_t)st.st_blocks * 512;
	}
	closedir(d);
	return bytes;
}

/* shmd's resident memory, bytes (VmRSS: what it maps and touched, and its heap). */
static uint64_t shmd_rss(void)
{
	char path[64], *text, *p;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)daemon_pid);
	text = daemon_read_file(path);
	p = text != NULL ? strstr(text, "VmRSS:") : NULL;
	return p != NULL ? strtoull(p + 6, NULL, 10) * 1024 : 0;
}

/* The writer, a member of the client group. */
static int make_users(void)
{
	if (users_make_group("shmqc", g_client, sizeof(g_client), NULL) < 0 ||
	    users_make_user("shmqw", u_writer, sizeof(u_writer), NULL, g_client, NULL) < 0)
		return -1;
	return 0;
}

static int setup(void **state)
{
	(void)state;
	if (daemon_dir_make_as_root(&shmd, "test-quotas", make_users, "quotas", INSTANCE) < 0)
		return -1;
	start_shmd();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	stop_shmd(); /* SIGTERM, its exit status checked; daemon_pid 0 after */
	int rc = daemon_dir_remove(&shmd, &daemon_pid, SIGTERM);
	users_remove();
	return rc;
}

/* ---- growth, as the writer ------------------------------------------------ */

/*
 * Adds of new keys (@p prefix-0, -1, ...) to filter @p name, one request each, until one is
 * refused (at most @p max): the count of keys added, the refusal in
 * @p refusal. Then an add of the first key (held) must answer 0 (Bloom)
 * or be refused too (cuckoo: a copy of it needs room as well).
 */
static int add_until_full(const char *verb, const char *name, const char *prefix, int max, char *refusal, size_t cap)
{
	int fd = sock_unix_connect(shmd.sock);
	if (fd < 0)
		return -1;
	char key[32], reply[2048];
	int added = 0;
	refusal[0] = '\0';
	for (int i = 0; i < max; i++) {
		snprintf(key, sizeof(key), "%s-%d", prefix, i);
		const char *argv[] = { verb, name, key };
		request_on(fd, 3, argv, reply, sizeof(reply));
		if (reply[0] == '-') {
			snprintf(refusal, cap, "%s", reply);
			break;
		}
		if (reply[0] != ':') {
			snprintf(refusal, cap, "(unexpected reply to key %d: '%.1900s')", i, reply);
			break;
		}
		added++;
	}
	close(fd);
	return added;
}

static int writer_growth(void)
{
	int f = 0;
	char reply[2048], refusal[2048];
	/* About 10 KB: far within the quota; its second layer would be 82 MB. */
	REQ(reply, "BF.RESERVE", "wb", "0.01", "1500", "EXPANSION", "32768", "MODE", "0660");
	if (strcmp(reply, "+OK\r\n") != 0)
		return fprintf(stderr, "  BF.RESERVE wb: %s\n", reply), 1;
	int added = add_until_full("BF.ADD", "wb", "key", 6000, refusal, sizeof(refusal));
	if (added < 1400 || added > 1600 || strncmp(refusal, "-Filter is full: filter 'wb' was made by a writer", 49) ||
	    !strstr(refusal, "[roles] writer_max_filter_bytes = 2097152 binds it for its whole life") ||
	    !strstr(refusal, "growing its layer 1 of "))
		f++, fprintf(stderr, "  Bloom: %d keys added, then: %s\n", added, refusal);
	REQ(reply, "BF.ADD", "wb", "key-0");
	if (strcmp(reply, ":0\r\n") != 0)
		f++, fprintf(stderr, "  Bloom: a key the full filter holds: %s\n", reply);
	/* BF.MADD stops at the refused key, its place the error: a key the
	 * full filter answers absent (about 1% of keys never added are false
	 * positives, which BF.MADD answers 0; CI met one). */
	char absent[32] = "";
	for (int i = 0; i < 1000 && absent[0] == '\0'; i++) {
		char name[32];
		snprintf(name, sizeof(name), "never-added-%d", i);
		REQ(reply, "BF.EXISTS", "wb", name);
		if (strcmp(reply, ":0\r\n") == 0)
			snprintf(absent, sizeof(absent), "%s", name);
	}
	if (absent[0] == '\0')
		return fprintf(stderr, "  Bloom: no key of 1,000 answered absent\n"), f + 1;
	REQ(reply, "BF.MADD", "wb", "key-1", absent);
	if (strncmp(reply, "*2\r\n:0\r\n-Filter is full: filter 'wb'", 36) != 0)
		f++, fprintf(stderr, "  Bloom: BF.MADD: %s\n", reply);
	/* The same for a cuckoo filter (its second layer: 33 million keys). */
	REQ(reply, "CF.RESERVE", "wc", "1000", "EXPANSION", "32768", "MODE", "0660");
	if (strcmp(reply, "+OK\r\n") != 0)
		return fprintf(stderr, "  CF.RESERVE wc: %s\n", reply), f + 1;
	added = add_until_full("CF.ADD", "wc", "key", 6000, refusal, sizeof(refusal));
	if (added < 900 || strncmp(refusal, "-Filter is full: filter 'wc' was made by a writer", 49) ||
	    !strstr(refusal, "writer_max_filter_bytes = 2097152"))
		f++, fprintf(stderr, "  cuckoo: %d keys added, then: %s\n", added, refusal);
	return f;
}

/* After a restart: the record holds, growth is refused again. */
static int writer_growth_again(void)
{
	char refusal[2048];
	int f = 0;
	int added = add_until_full("BF.ADD", "wb", "later", 100, refusal, sizeof(refusal));
	if (added > 50 || !strstr(refusal, "writer_max_filter_bytes = 2097152"))
		f++, fprintf(stderr, "  after a restart: %d keys added, then: %s\n", added, refusal);
	return f;
}

static void test_growth(void **state)
{
	(void)state;
	uint64_t bytes0 = instance_bytes(), rss0 = shmd_rss();
	int rc = users_run_as(u_writer, writer_growth);
	uint64_t bytes1 = instance_bytes(), rss1 = shmd_rss();
	if (rc != 0)
		fail_msg("growth as %s: %d check(s) failed (above)", u_writer, rc);
	printf("instance directory %" PRIu64 " -> %" PRIu64 " bytes, shmd RSS %" PRIu64 " -> %" PRIu64 " bytes\n",
	       bytes0, bytes1, rss0, rss1);
	assert_true(bytes1 - bytes0 < QUOTA);
	/* shmd's memory: the filters' pages it maps, within the quota, and
	 * its own heap for the requests (the sanitizers' bookkeeping adds
	 * about 2 MB): under twice the quota, where an 82 MB layer was made. */
	assert_true(rss1 < rss0 + 2 * QUOTA);
	assert_true(daemon_log_count(shmd.log, "filter 'wb' was made by a writer") >= 1);
	/* The record is shmd's own: 0600, root's. */
	char path[192];
	struct stat st;
	snprintf(path, sizeof(path), "%s/shmd-owners", shmd.idir);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, 0);
	char *text = daemon_read_file(path);
	assert_non_null(strstr(text, "wb uid "));
	assert_non_null(strstr(text, "wc uid "));
	stop_shmd();
	start_shmd();
	rc = users_run_as(u_writer, writer_growth_again);
	if (rc != 0)
		fail_msg("growth after a restart as %s: %d check(s) failed (above)", u_writer, rc);
	assert_true(instance_bytes() - bytes0 < QUOTA);
}

/* ---- resize, swap and restore, as an admin --------------------------------- */

static int writer_makes_wr(void)
{
	char reply[512];
	REQ(reply, "BF.RESERVE", "wr", "0.01", "1000", "MODE", "0660");
	return strcmp(reply, "+OK\r\n") != 0 ? (fprintf(stderr, "  BF.RESERVE wr: %s\n", reply), 1) : 0;
}

static uint64_t capacity_of(const char *name)
{
	shmf_t *f;
	shmf_info_t info;
	assert_int_equal(shmf_open(INSTANCE, name, SHMF_RDONLY, &f), 0);
	assert_int_equal(shmf_info(f, &info), 0);
	shmf_close(f);
	return info.capacity;
}

static void test_replace(void **state)
{
	(void)state;
	char reply[2048], path[160];
	assert_int_equal(users_run_as(u_writer, writer_makes_wr), 0);
	/* Resize: 10 million keys (12 MB) is past the quota, whoever asks. */
	REQ(reply, "SHMF.RESIZE", "wr", "10000000");
	if (strncmp(reply, "-ERR filter 'wr' was made by a writer", 37) != 0 ||
	    !strstr(reply, "writer_max_filter_bytes = 2097152") || !strstr(reply, "resizing it to capacity 10000000"))
		fail_msg("resize past the quota: %s", reply);
	assert_int_equal(capacity_of("wr"), 1000);
	REQ(reply, "SHMF.RESIZE", "wr", "2000");
	assert_string_equal(reply, "+OK\r\n");
	assert_int_equal(capacity_of("wr"), 2000);
	/* Swap and restore: a 3.6 MB filter's snapshot. */
	REQ(reply, "BF.RESERVE", "adminbig", "0.01", "3000000");
	assert_string_equal(reply, "+OK\r\n");
	snprintf(path, sizeof(path), "%s/big.snap", shmd.root);
	REQ(reply, "SHMF.SNAPSHOT", "adminbig", path);
	assert_string_equal(reply, "+OK\r\n");
	REQ(reply, "SHMF.SWAP", "wr", path, "RESHAPE");
	if (!strstr(reply, "filter 'wr' was made by a writer") || !strstr(reply, "writer_max_filter_bytes = 2097152") ||
	    !strstr(reply, "a swap would make it"))
		fail_msg("swap past the quota: %s", reply);
	REQ(reply, "SHMF.RESTORE", "wr", path);
	if (!strstr(reply, "filter 'wr' was made by a writer") || !strstr(reply, "writer_max_filter_bytes = 2097152"))
		fail_msg("restore over the writer's filter past the quota: %s", reply);
	assert_int_equal(capacity_of("wr"), 2000);
	/* A file within the quota swaps in. */
	REQ(reply, "BF.RESERVE", "adminsmall", "0.01", "5000");
	snprintf(path, sizeof(path), "%s/small.snap", shmd.root);
	REQ(reply, "SHMF.SNAPSHOT", "adminsmall", path);
	assert_string_equal(reply, "+OK\r\n");
	REQ(reply, "SHMF.SWAP", "wr", path, "RESHAPE");
	assert_string_equal(reply, "+OK\r\n");
	assert_int_equal(capacity_of("wr"), 5000);
	/* A drop forgets the record: a filter made anew by an admin is free of it. */
	REQ(reply, "SHMF.DROP", "wr");
	assert_string_equal(reply, "+OK\r\n");
	char owners[192];
	snprintf(owners, sizeof(owners), "%s/shmd-owners", shmd.idir);
	char *text = daemon_read_file(owners);
	assert_true(text == NULL || strstr(text, "wr uid ") == NULL);
	REQ(reply, "BF.RESERVE", "wr", "0.01", "1000");
	REQ(reply, "SHMF.RESIZE", "wr", "10000000");
	assert_string_equal(reply, "+OK\r\n");
}

/* ---- what the host can hold ------------------------------------------------ */

static void test_host(void **state)
{
	(void)state;
	char reply[2048];
	/* An admin's filter: its next layer, 10^6 x 32768 keys, is tens of GB. */
	REQ(reply, "BF.RESERVE", "hostbig", "0.01", "1000000", "EXPANSION", "32768");
	assert_string_equal(reply, "+OK\r\n");
	shmf_t *f;
	char key[32];
	assert_int_equal(shmf_open(INSTANCE, "hostbig", SHMF_RDWR, &f), 0);
	uint64_t bytes0 = instance_bytes();
	for (int i = 0; i < 600000; i++) {
		int n = snprintf(key, sizeof(key), "h%d", i);
		assert_true(shmf_add(f, key, (size_t)n) >= 0);
	}
	/* At half the capacity the tick tries the next layer: refused. */
	int logged = 0;
	for (int i = 0; i < 200 && !logged; i++, usleep(50000))
		logged = daemon_log_count(shmd.log, "filter 'hostbig': layer 1 needs ") > 0;
	if (!logged)
		fail_msg("no refusal of the layer logged: %s", daemon_read_file(shmd.log));
	assert_true(daemon_log_count(shmd.log, "more memory than this host has") > 0 ||
		    daemon_log_count(shmd.log, "has free") > 0);
	for (int i = 600000; i < 1100000; i++) {
		int n = snprintf(key, sizeof(key), "h%d", i);
		assert_true(shmf_add(f, key, (size_t)n) >= 0);
	}
	shmf_close(f);
	REQ(reply, "BF.ADD", "hostbig", "brand-new-key");
	if (strncmp(reply, "-Filter is full: filter 'hostbig': layer 1 needs ", 49) != 0)
		fail_msg("an add past the last layer: %s", reply);
	assert_true(instance_bytes() - bytes0 < (16u << 20));
	REQ(reply, "PING");
	assert_string_equal(reply, "+PONG\r\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH-TO-SHMD [TEST]\n", argv[0]);
		return 2;
	}
	shmd_path = argv[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_replace),
		cmocka_unit_test(test_host),
	};
	static const char *const names[] = { "growth", "replace", "host" };
	return RUN_NAMED("quotas", argc > 2 ? argv[2] : NULL, tests, names, setup, teardown);
}
