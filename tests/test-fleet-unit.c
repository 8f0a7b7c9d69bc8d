/*
 * test-fleet-unit.c - the fleet's parts that need no Redis: the seed and
 * shape every node must agree on, the stream entry's batch and id, and
 * the [replication] configuration with its errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "shmd/config/config.h"
#include "tests/fixture.h"
#include "common/fleet-auth.h"
#include "common/fleet.h"
#include "libclient/journal.h"
#include "common/spec.h"

static void test_seed(void **state)
{
	(void)state;
	/* The formula of the design, spelled out here independently. */
	uint64_t key = XXH3_64bits("s3cret", 6);
	assert_true(fleet_seed("s3cret", "clicks") == XXH3_64bits_withSeed("clicks", 6, key));
	/* The same on every call; another secret or name, another seed. */
	assert_true(fleet_seed("s3cret", "clicks") == fleet_seed("s3cret", "clicks"));
	assert_true(fleet_seed("s3cret", "clicks") != fleet_seed("s3cret!", "clicks"));
	assert_true(fleet_seed("s3cret", "clicks") != fleet_seed("s3cret", "click"));
	assert_true(fleet_seed("", "a") != fleet_seed("", "b"));
}

static struct shmf_slot shaped(void)
{
	struct shmf_slot s;
	memset(&s, 0, sizeof(s));
	s.type = SHMF_TYPE_BLOOM;
	s.k = 7;
	s.capacity = 1000000;
	double fpr = 0.01;
	memcpy(&s.fpr_bits, &fpr, sizeof(fpr));
	s.nblocks = 150000;
	s.window_secs = 600;
	s.window_gens = 3;
	return s;
}

static void test_shape(void **state)
{
	(void)state;
	struct shmf_slot s = shaped();
	uint64_t base = fleet_shape(&s, 42);
	assert_true(base == fleet_shape(&s, 42));
	assert_true(base != fleet_shape(&s, 43));
	/* Every field of the shape changes it; the rest of the slot does not. */
	uint64_t *fields[] = { &s.capacity, &s.fpr_bits, &s.nblocks, &s.nbuckets, &s.window_secs };
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		struct shmf_slot t = s;
		uint64_t *f = (uint64_t *)((char *)&t + ((char *)fields[i] - (char *)&s));
		*f += 1;
		assert_true(fleet_shape(&t, 42) != base);
	}
	struct shmf_slot t = s;
	t.type = SHMF_TYPE_CUCKOO;
	assert_true(fleet_shape(&t, 42) != base);
	t = s;
	t.k = 8;
	assert_true(fleet_shape(&t, 42) != base);
	t = s;
	t.window_gens = 4;
	assert_true(fleet_shape(&t, 42) != base);
	/* A cuckoo filter's bucket size: buckets of 4 hash as they did before
	 * the field existed (a fleet upgraded node by node still agrees), every
	 * other size differs from them and from each other. */
	t = s;
	t.type = SHMF_TYPE_CUCKOO;
	t.bucket_size = 4;
	uint64_t four = fleet_shape(&t, 42);
	t.bucket_size = 0;
	assert_true(fleet_shape(&t, 42) == four);
	uint64_t seen[4] = { four };
	for (uint32_t b = 1, n = 1; b <= 8; b *= 2) {
		if (b == 4)
			continue;
		t.bucket_size = b;
		seen[n] = fleet_shape(&t, 42);
		for (uint32_t j = 0; j < n; j++)
			assert_true(seen[n] != seen[j]);
		n++;
	}
	/* A Bloom filter's lines a key: one line hashes as before the field
	 * existed (0), two and three lines differ from it and each other. */
	t = s;
	t.bucket_size = 1;
	assert_true(fleet_shape(&t, 42) == base);
	t.bucket_size = 2;
	uint64_t two = fleet_shape(&t, 42);
	assert_true(two != base);
	t.bucket_size = 3;
	assert_true(fleet_shape(&t, 42) != base && fleet_shape(&t, 42) != two);
	/* The fingerprint width: 2 x 16 and 2 x 32 bits are other shapes. */
	t = s;
	t.type = SHMF_TYPE_CUCKOO;
	t.bucket_size = 2;
	t.k = 16;
	uint64_t k16 = fleet_shape(&t, 42);
	t.k = 32;
	assert_true(fleet_shape(&t, 42) != k16);
	t = s;
	t.created_epoch = 12345;
	t.cursor_ms = 99;
	t.flags = SHMF_SLOT_REPLICATED;
	snprintf(t.name, sizeof(t.name), "other");
	t.live_created[0] = 777;
	assert_true(fleet_shape(&t, 42) == base);

	char text[17];
	uint64_t back = 0;
	fleet_shape_text(base, text);
	assert_int_equal(strlen(text), 16);
	assert_int_equal(fleet_shape_parse(text, 16, &back), 0);
	assert_true(back == base);
	fleet_shape_text(0xABCDEFull, text);
	assert_string_equal(text, "0000000000abcdef");
	assert_int_equal(fleet_shape_parse("0000000000ABCDEF", 16, &back), 0);
	assert_true(back == 0xABCDEFull);
	assert_int_equal(fleet_shape_parse("0000000000abcdeg", 16, &back), SHMF_E_INVAL);
	assert_int_equal(fleet_shape_parse("abcdef", 6, &back), SHMF_E_INVAL);
	assert_int_equal(fleet_shape_parse("0000000000abcdef0", 17, &back), SHMF_E_INVAL);
}

static void test_batch(void **state)
{
	(void)state;
	static struct shmf_jentry in[FLEET_BATCH_MAX], out[FLEET_BATCH_MAX];
	static unsigned char buf[FLEET_BATCH_MAX * FLEET_ENTRY_BYTES + FLEET_ENTRY_BYTES];
	uint64_t rnd = 7;
	for (size_t i = 0; i < FLEET_BATCH_MAX; i++)
		in[i] = (struct shmf_jentry){ .hash = fixture_random(&rnd),
					      .op = 1 + (uint32_t)(i % SHMF_JOP_MAX),
					      .window = (uint32_t)fixture_random(&rnd) };
	assert_int_equal(fleet_batch_encode(in, FLEET_BATCH_MAX, buf), FLEET_BATCH_MAX * FLEET_ENTRY_BYTES);
	assert_int_equal(fleet_batch_decode(buf, FLEET_BATCH_MAX * FLEET_ENTRY_BYTES, out), FLEET_BATCH_MAX);
	assert_memory_equal(in, out, sizeof(in));

	/* The journal's entry layout, little-endian, byte for byte. */
	struct shmf_jentry one = { .hash = 0x0102030405060708ull, .op = SHMF_JOP_DEL, .window = 0xA0B0C0D0u };
	static const unsigned char want[16] = { 8, 7, 6, 5, 4, 3, 2, 1, 2, 0, 0, 0, 0xD0, 0xC0, 0xB0, 0xA0 };
	assert_int_equal(fleet_batch_encode(&one, 1, buf), 16);
	assert_memory_equal(buf, want, 16);

	/* Refused whole: a ragged length, too many entries, an unknown op. */
	assert_int_equal(fleet_batch_decode(buf, 15, out), SHMF_E_FORMAT);
	assert_int_equal(fleet_batch_decode(buf, 17, out), SHMF_E_FORMAT);
	assert_int_equal(fleet_batch_decode(buf, (FLEET_BATCH_MAX + 1) * FLEET_ENTRY_BYTES, out), SHMF_E_FORMAT);
	assert_int_equal(fleet_batch_decode(buf, 0, out), 0);
	fleet_batch_encode(in, 3, buf);
	buf[16 + 8] = 0; /* entry 1: op 0 */
	assert_int_equal(fleet_batch_decode(buf, 48, out), SHMF_E_FORMAT);
	buf[16 + 8] = SHMF_JOP_MAX + 1;
	assert_int_equal(fleet_batch_decode(buf, 48, out), SHMF_E_FORMAT);
	buf[16 + 8] = SHMF_JOP_ADD;
	assert_int_equal(fleet_batch_decode(buf, 48, out), 3);
}

static void test_ids(void **state)
{
	(void)state;
	struct fleet_id id;
	char text[48];
	assert_int_equal(fleet_id_parse("1700000000123-7", 15, &id), 0);
	assert_true(id.ms == 1700000000123ull && id.seq == 7);
	assert_string_equal(fleet_id_text(id, text, sizeof(text)), "1700000000123-7");
	assert_int_equal(fleet_id_parse("18446744073709551615-18446744073709551615", 41, &id), 0);
	assert_true(id.ms == UINT64_MAX && id.seq == UINT64_MAX);
	assert_int_equal(fleet_id_parse("0-0", 3, &id), 0);
	assert_true(id.ms == 0 && id.seq == 0);
	/* Only the given bytes count. */
	assert_int_equal(fleet_id_parse("5-3junk", 3, &id), 0);
	assert_true(id.ms == 5 && id.seq == 3);
	const char *bad[] = { "", "5", "5-", "-3", "a-1", "1-b", "1-2-3", "18446744073709551616-0", "+1-2", " 1-2" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(fleet_id_parse(bad[i], strlen(bad[i]), &id), SHMF_E_INVAL);
	struct fleet_id a = { 5, 3 }, b = { 5, 4 }, c = { 6, 0 };
	assert_true(fleet_id_cmp(a, b) < 0 && fleet_id_cmp(b, a) > 0 && fleet_id_cmp(a, a) == 0);
	assert_true(fleet_id_cmp(b, c) < 0 && fleet_id_cmp(c, b) > 0);
	assert_true(fleet_window(1200, 600) == 2 && fleet_window(1799, 600) == 2 && fleet_window(5, 0) == 0);
}

/* [replication]'s Sentinel keys: parsed, and each bad one named at its line. */
static void config_sentinel(void)
{
	struct config c;
	char err[512];
	/* Sentinel: the sentinels parsed, the master named, WAIT's count. */
	const char sentinel[] = "[replication]\n"
				"sentinel = 10.0.0.1:26379, [::1]:26380,s3.example:26381\n"
				"master = fleet-master\n"
				"sentinel_password = sp\n"
				"password = mp\n"
				"replicas_wait = 2\n";
	if (config_parse(&c, sentinel, "t", err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(c.repl.nsentinels, 3);
	assert_string_equal(c.repl.sentinels[0].host, "10.0.0.1");
	assert_int_equal(c.repl.sentinels[0].port, 26379);
	assert_string_equal(c.repl.sentinels[1].host, "::1");
	assert_int_equal(c.repl.sentinels[1].port, 26380);
	assert_string_equal(c.repl.sentinels[2].host, "s3.example");
	assert_int_equal(c.repl.sentinels[2].port, 26381);
	assert_string_equal(c.repl.master, "fleet-master");
	assert_string_equal(c.repl.sentinel_password, "sp");
	assert_string_equal(c.repl.password, "mp");
	assert_int_equal(c.repl.replicas_wait, 2);
	assert_false(c.repl.redis_given);
	assert_int_equal(config_parse(&c, "[replication]\nredis = h:1\n", "t", err, sizeof(err)), 0);
	assert_int_equal(c.repl.nsentinels, 0);
	assert_int_equal(c.repl.replicas_wait, 0);
	static const struct {
		const char *text, *says;
	} bad[] = {
		/* Sentinel's keys, each at the line of its section or key */
		{ "[replication]\nsentinel = h:26379\n", "conf:1: [replication] sentinel needs master = NAME" },
		{ "[replication]\nmaster = m\n", "conf:1: [replication] master 'm' needs sentinel = HOST:PORT" },
		{ "[replication]\nredis = h:1\nsentinel = h:26379\nmaster = m\n",
		  "conf:1: [replication] redis and sentinel are both set" },
		{ "[replication]\nsentinel_password = x\n", "conf:1: [replication] sentinel_password needs sentinel" },
		{ "\n[replication]\nsentinel = h:26379,h\nmaster = m\n",
		  "conf:3: [replication] sentinel 'h:26379,h': host:port of each sentinel" },
		{ "[replication]\nsentinel = h:0\n", "conf:2: [replication] sentinel 'h:0'" },
		{ "[replication]\nsentinel = /run/s.sock\n", "conf:2: [replication] sentinel '/run/s.sock'" },
		{ "[replication]\nsentinel = h:1,,h:2\n", "sentinel 'h:1,,h:2'" },
		{ "[replication]\nsentinel = a:1,a:2,a:3,a:4,a:5,a:6,a:7,a:8,a:9,a:10,a:11,a:12,a:13,a:14,a:15,a:16,a:17\n",
		  "sentinel 'a:1,a:2," },
		{ "[replication]\nmaster = a b\n", "conf:2: [replication] master: the name the sentinels monitor" },
		{ "[replication]\nreplicas_wait = 65\n",
		  "conf:2: [replication] replicas_wait '65': replicas that must" },
		{ "[replication]\nreplicas_wait = -1\n", "replicas_wait '-1'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (config_parse(&c, bad[i].text, "conf", err, sizeof(err)) != SHMF_E_INVAL)
			fail_msg("accepted: %s", bad[i].text);
		if (strstr(err, bad[i].says) == NULL)
			fail_msg("for %s: said '%s', not '%s'", bad[i].text, err, bad[i].says);
	}
}

static void test_config(void **state)
{
	(void)state;
	struct config c;
	char err[512];
	const char full[] = "[replication]\n"
			    "redis = redis.example:6380\n"
			    "password = pw\n"
			    "user = fleet\n"
			    "node = web-7\n"
			    "secret = s3cret\n"
			    "stream_prefix = f:\n"
			    "retention = 5000\n"
			    "journal_rings = 8\n"
			    "journal_entries = 1024\n"
			    "[filter clicks]\n"
			    "replicate = yes\n"
			    "[filter local]\n";
	if (config_parse(&c, full, "t", err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_true(c.repl.enabled);
	assert_string_equal(c.repl.host, "redis.example");
	assert_int_equal(c.repl.port, 6380);
	assert_string_equal(c.repl.password, "pw");
	assert_string_equal(c.repl.user, "fleet");
	assert_string_equal(c.repl.node, "web-7");
	assert_string_equal(c.repl.secret, "s3cret");
	assert_string_equal(c.repl.stream_prefix, "f:");
	assert_int_equal(c.repl.retention, 5000);
	assert_int_equal(c.repl.journal_rings, 8);
	assert_int_equal(c.repl.journal_entries, 1024);
	assert_int_equal(c.nfilters, 2);
	assert_int_equal(c.filters[0].replicate, 1);
	assert_int_equal(c.filters[1].replicate, 0);

	/* Defaults; a unix socket; node from the host name; no section at all. */
	if (config_parse(&c, "[replication]\nredis = /run/redis/redis.sock\n", "t", err, sizeof(err)) != 0)
		fail_msg("%s", err);
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	assert_string_equal(c.repl.host, "/run/redis/redis.sock");
	assert_int_equal(c.repl.port, 0);
	assert_string_equal(c.repl.node, host);
	assert_string_equal(c.repl.stream_prefix, "shmf:");
	assert_int_equal(c.repl.retention, 1000000);
	assert_int_equal(c.repl.journal_rings, 64);
	assert_int_equal(c.repl.journal_entries, 16384);
	assert_int_equal(config_parse(&c, "[replication]\nredis = [::1]:7000\n", "t", err, sizeof(err)), 0);
	assert_string_equal(c.repl.host, "::1");
	assert_int_equal(c.repl.port, 7000);
	config_sentinel();
	assert_int_equal(config_parse(&c, config_default_text, "t", err, sizeof(err)), 0);
	assert_false(c.repl.enabled);
	assert_int_equal(c.filters[0].replicate, 0);

	/* Each error names the section, the key or the filter, and the cause. */
	static const struct {
		const char *text, *says;
	} bad[] = {
		{ "[filter a]\nreplicate = yes\n", "[filter a] replicate = yes needs a [replication] section" },
		{ "[replication]\nredis = h:1\n[filter a]\nreplicate = yes\n",
		  "[filter a] replicates but [replication] has no secret" },
		{ "[filter a]\nreplicate = maybe\n", "replicate 'maybe': expected yes or no" },
		{ "[replication]\nredis = localhost\n", "[replication] redis 'localhost': host:port" },
		{ "[replication]\nredis = h:0\n", "redis 'h:0': host:port (port 1 to 65535)" },
		{ "[replication]\nredis = h:65536\n", "redis 'h:65536'" },
		{ "[replication]\nredis = :6379\n", "redis ':6379'" },
		{ "[replication]\nredis = run/redis.sock\n", "redis 'run/redis.sock'" },
		{ "[replication]\njournal_entries = 1000\n",
		  "journal_entries '1000': entries per ring, a power of 2, from 16 to 16777216" },
		{ "[replication]\njournal_entries = 8\n", "journal_entries '8'" },
		{ "[replication]\njournal_entries = 33554432\n", "journal_entries '33554432'" },
		{ "[replication]\njournal_rings = 0\n", "journal_rings '0': rings per journal" },
		{ "[replication]\njournal_rings = 4097\n", "journal_rings '4097'" },
		{ "[replication]\nretention = -5\n", "retention '-5'" },
		{ "[replication]\nnode = web 7\n", "[replication] node: this host's name in the fleet" },
		{ "[replication]\nuser = u\n", "[replication] user 'u' needs a password" },
		{ "[replication]\nsecrets = x\n", "unknown key 'secrets' in [replication]" },
		{ "[replication]\n[replication]\n", "[replication] given twice" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (config_parse(&c, bad[i].text, "conf", err, sizeof(err)) != SHMF_E_INVAL)
			fail_msg("accepted: %s", bad[i].text);
		if (strstr(err, bad[i].says) == NULL || strncmp(err, "conf", 4) != 0)
			fail_msg("for %s: said '%s', not '%s'", bad[i].text, err, bad[i].says);
	}
}

/* ---- the registry's side: replicated filters ---------------------------- */

static struct fixture fx;

static void fleet_on(void)
{
	fx.reg.fleet =
		(struct registry_fleet){ .enabled = 1, .secret = "s3cret", .journal_rings = 4, .journal_entries = 64 };
}

static int create(const char *name, int type, int replicate, uint64_t window, uint32_t gens, char *err, size_t errlen)
{
	struct filter_spec spec;
	spec_defaults(&spec, name);
	spec.type = type;
	spec.capacity = 1000;
	spec.mode = 0660;
	spec.replicate = replicate;
	spec.window_secs = window;
	spec.window_gens = gens;
	return registry_create(&fx.reg, &spec, err, errlen);
}

static int journal_exists(const char *name, mode_t *mode)
{
	char fname[128];
	struct stat st;
	snprintf(fname, sizeof(fname), "%s.journal", name);
	if (fstatat(fx.reg.dir.fd, fname, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (mode != NULL)
		*mode = st.st_mode & 0777;
	return 1;
}

static uint64_t seed_of(int slot)
{
	uint64_t seed = 0;
	assert_int_equal(registry_seed(&fx.reg, slot, &seed), 0);
	return seed;
}

static void test_registry_replicated(void **state)
{
	(void)state;
	char err[REGISTRY_ERR_MAX];
	/* No fleet: refused, by name. */
	assert_int_equal(create("r", SHMF_TYPE_BLOOM, 1, 0, 0, err, sizeof(err)), SHMF_E_INVAL);
	assert_non_null(strstr(err, "filter 'r': cannot replicate: shmd's configuration has no [replication]"));
	fx.reg.fleet = (struct registry_fleet){ .enabled = 1, .secret = "", .journal_rings = 4, .journal_entries = 64 };
	assert_int_equal(create("r", SHMF_TYPE_BLOOM, 1, 0, 0, err, sizeof(err)), SHMF_E_INVAL);
	assert_non_null(strstr(err, "no secret"));
	assert_false(journal_exists("r", NULL));
	assert_int_equal(registry_find(&fx.reg, "r"), SHMF_E_NOTFOUND);

	fleet_on();
	int r = create("r", SHMF_TYPE_BLOOM, 1, 0, 0, err, sizeof(err));
	int c = create("c", SHMF_TYPE_CUCKOO, 1, 0, 0, err, sizeof(err));
	int p = create("p", SHMF_TYPE_BLOOM, 0, 0, 0, err, sizeof(err));
	assert_true(r >= 0 && c >= 0 && p >= 0);
	mode_t mode = 0;
	assert_true(journal_exists("r", &mode));
	assert_int_equal(mode, 0660);
	assert_true(journal_exists("c", NULL));
	assert_false(journal_exists("p", NULL));
	assert_true(fx.reg.ctl.slots[r].flags & SHMF_SLOT_REPLICATED);
	assert_true(fx.reg.ctl.slots[c].flags & SHMF_SLOT_REPLICATED);
	assert_int_equal(fx.reg.ctl.slots[p].flags, 0);
	/* The fleet's seed for replicated filters, a random one otherwise. */
	assert_true(seed_of(r) == fleet_seed("s3cret", "r"));
	assert_true(seed_of(c) == fleet_seed("s3cret", "c"));
	assert_true(seed_of(p) != fleet_seed("s3cret", "p"));
	/* An adder of a replicated filter journals; of a plain one not. */
	shmf_t *h = fixture_open("r", SHMF_RDWR);
	struct shmf_journal_writer_stats ws;
	assert_int_equal(shmf_add(h, "k", 1), 1);
	assert_int_equal(shmf_journal_handle_stats(h, &ws), 0);
	assert_int_equal(ws.journals, 1);
	assert_true(ws.ring >= 0);
	shmf_close(h);
	/* A cuckoo filter at 1e-9 (32-bit fingerprints) journals its adds too. */
	struct filter_spec low;
	spec_defaults(&low, "c32");
	low.type = SHMF_TYPE_CUCKOO;
	low.capacity = 1000;
	low.fpr = 1e-9;
	low.mode = 0660;
	low.replicate = 1;
	int c32 = registry_create(&fx.reg, &low, err, sizeof(err));
	assert_true(c32 >= 0);
	assert_int_equal(fx.reg.ctl.slots[c32].k, 32);
	assert_true(journal_exists("c32", NULL));
	h = fixture_open("c32", SHMF_RDWR);
	assert_int_equal(shmf_add(h, "k", 1), 1);
	assert_int_equal(shmf_journal_handle_stats(h, &ws), 0);
	assert_int_equal(ws.journals, 1);
	shmf_close(h);

	/* The cursor lives with the filter: kept by a swap, cleared by a drop. */
	uint64_t ms, seq;
	registry_cursor_get(&fx.reg, r, &ms, &seq);
	assert_true(ms == 0 && seq == 0);
	registry_cursor_set(&fx.reg, r, 1700000000123ull, 5);
	char snap[512];
	snprintf(snap, sizeof(snap), "%s/r.snap", fx.files);
	assert_int_equal(registry_snapshot(&fx.reg, "r", snap, NULL, err, sizeof(err)), 0);
	assert_int_equal(fixture_replace(&fx, "r", snap, REGISTRY_SWAP, err, sizeof(err)), r);
	registry_cursor_get(&fx.reg, r, &ms, &seq);
	assert_true(ms == 1700000000123ull && seq == 5);
	assert_true(fx.reg.ctl.slots[r].flags & SHMF_SLOT_REPLICATED);
	assert_true(journal_exists("r", NULL));
	assert_int_equal(registry_drop(&fx.reg, "r", err, sizeof(err)), 0);
	assert_false(journal_exists("r", NULL));
	assert_int_equal(fx.reg.ctl.slots[r].flags, 0);
	registry_cursor_get(&fx.reg, r, &ms, &seq);
	assert_true(ms == 0 && seq == 0);
	/* The slot again, for a plain filter: nothing of the old one. */
	int again = create("q", SHMF_TYPE_BLOOM, 0, 0, 0, err, sizeof(err));
	assert_int_equal(again, r);
	assert_int_equal(fx.reg.ctl.slots[again].flags, 0);

	/* A plain filter made replicated: journal, flag. */
	assert_int_equal(registry_replicate(&fx.reg, p, err, sizeof(err)), 0);
	assert_true(journal_exists("p", NULL));
	assert_true(fx.reg.ctl.slots[p].flags & SHMF_SLOT_REPLICATED);
}

static void test_registry_restart(void **state)
{
	(void)state;
	char err[REGISTRY_ERR_MAX];
	fleet_on();
	int r = create("r", SHMF_TYPE_BLOOM, 1, 0, 0, err, sizeof(err));
	assert_true(r >= 0);
	registry_cursor_set(&fx.reg, r, 42, 7);
	shmf_t *h = fixture_open("r", SHMF_RDWR);
	assert_int_equal(shmf_add(h, "waiting", 7), 1);
	shmf_close(h);
	/* A journal nobody names (a crash between making it and publishing). */
	assert_int_equal(shmf_journal_create(fx.reg.dir.fd, "ghost", 0640, (gid_t)-1, 1, 16), 0);
	registry_close(&fx.reg, 0);
	assert_int_equal(registry_open(&fx.reg, FIXTURE_INSTANCE, 0750, 0640, (gid_t)-1, err, sizeof(err)), 0);
	fleet_on();
	assert_int_equal(registry_find(&fx.reg, "r"), r);
	assert_true(fx.reg.ctl.slots[r].flags & SHMF_SLOT_REPLICATED);
	uint64_t ms, seq;
	registry_cursor_get(&fx.reg, r, &ms, &seq);
	assert_true(ms == 42 && seq == 7);
	assert_true(journal_exists("r", NULL));
	assert_false(journal_exists("ghost", NULL));
	/* The entry written before the restart is still there to send. */
	struct shmf_journal_reader *jr;
	assert_int_equal(shmf_journal_reader_open(&fx.reg.dir, "r", &jr), 0);
	struct shmf_journal_stats js;
	shmf_journal_stats(jr, &js, NULL, 0);
	assert_int_equal(js.depth, 1);
	shmf_journal_reader_close(jr);

	/* A journal lost (the file removed): made again at start; without a
	 * fleet configured, starting is refused by name. */
	char fname[64];
	snprintf(fname, sizeof(fname), "r.journal");
	assert_int_equal(unlinkat(fx.reg.dir.fd, fname, 0), 0);
	assert_int_equal(registry_fleet_attach(&fx.reg, err, sizeof(err)), 0);
	assert_true(journal_exists("r", NULL));
	fx.reg.fleet.enabled = 0;
	assert_int_equal(registry_fleet_attach(&fx.reg, err, sizeof(err)), SHMF_E_INVAL);
	assert_non_null(strstr(err, "filter 'r' replicates"));
	assert_non_null(strstr(err, "no [replication] section"));
}

static void test_registry_windows(void **state)
{
	(void)state;
	char err[REGISTRY_ERR_MAX];
	fleet_on();
	uint64_t before = (uint64_t)time(NULL);
	int w = create("w", SHMF_TYPE_BLOOM, 1, 60, 3, err, sizeof(err));
	uint64_t after = (uint64_t)time(NULL);
	assert_true(w >= 0);
	const struct shmf_slot *s = &fx.reg.ctl.slots[w];
	/* The first generation begins at the wall-clock boundary. */
	uint64_t W = s->live_created[0] / 60;
	assert_int_equal(s->live_created[0] % 60, 0);
	assert_true(W == before / 60 || W == after / 60);
	/* By hand: only to the current window, which it is already. */
	if ((uint64_t)time(NULL) / 60 == W) {
		assert_int_equal(registry_rotate(&fx.reg, "w", err, sizeof(err)), SHMF_E_TYPE);
		assert_non_null(strstr(err, "wall-clock window"));
	}
	registry_cursor_set(&fx.reg, w, 9, 9);
	/* The next window (an entry of a node whose clock is ahead). */
	assert_int_equal(registry_rotate_to(&fx.reg, "w", W + 1, err, sizeof(err)), 0);
	assert_int_equal(s->nlive, 2);
	assert_int_equal(s->live_created[0], (W + 1) * 60);
	assert_int_equal(s->live_created[1], W * 60);
	/* Not back, not twice. */
	assert_int_equal(registry_rotate_to(&fx.reg, "w", W + 1, err, sizeof(err)), 0);
	assert_int_equal(registry_rotate_to(&fx.reg, "w", W, err, sizeof(err)), 0);
	assert_int_equal(s->nlive, 2);
	/* Windows slept through: what left the ring of 3 is retired. */
	assert_int_equal(registry_rotate_to(&fx.reg, "w", W + 3, err, sizeof(err)), 0);
	assert_int_equal(s->nlive, 2); /* W + 1 and W + 3; W left */
	assert_int_equal(s->live_created[0], (W + 3) * 60);
	assert_int_equal(s->live_created[1], (W + 1) * 60);
	/* The clock decides: due once now is in a later window, to that window. */
	registry_rotate_due(&fx.reg, (W + 4) * 60 - 1);
	assert_int_equal(s->live_created[0], (W + 3) * 60);
	registry_rotate_due(&fx.reg, (W + 5) * 60 + 17);
	assert_int_equal(s->live_created[0], (W + 5) * 60);
	assert_int_equal(s->nlive, 2); /* W + 5, W + 3 */
	/* Every republish kept the cursor and the flag. */
	uint64_t ms, seq;
	registry_cursor_get(&fx.reg, w, &ms, &seq);
	assert_true(ms == 9 && seq == 9);
	assert_true(s->flags & SHMF_SLOT_REPLICATED);
	/* A plain windowed filter keeps rotating by its own age. */
	int p = create("p", SHMF_TYPE_BLOOM, 0, 60, 3, err, sizeof(err));
	assert_int_equal(registry_rotate_to(&fx.reg, "p", W + 9, err, sizeof(err)), SHMF_E_TYPE);
	uint64_t created = fx.reg.ctl.slots[p].live_created[0];
	registry_rotate_due(&fx.reg, created + 59);
	assert_int_equal(fx.reg.ctl.slots[p].nlive, 1);
	registry_rotate_due(&fx.reg, created + 60);
	assert_int_equal(fx.reg.ctl.slots[p].nlive, 2);
}

/* The skew tolerance and the window check at the extremes: the shortest
 * and longest windows, window numbers 0 and 2^32 - 1, a window of 50 days
 * (where window x length x 1000 wraps 64 bits), and the durations the
 * configuration accepts for a window. */
static void test_window_checks(void **state)
{
	(void)state;
	/* min(30 s, a quarter of the window). */
	assert_int_equal(fleet_skew_ms(1), 250);
	assert_int_equal(fleet_skew_ms(10), 2500);
	assert_int_equal(fleet_skew_ms(119), 29750);
	assert_int_equal(fleet_skew_ms(120), 30000);
	assert_int_equal(fleet_skew_ms(86400), 30000);
	assert_int_equal(fleet_skew_ms(SHMF_WINDOW_SECS_MAX), 30000);
	assert_int_equal(fleet_skew_ms(UINT64_MAX), 30000);

	uint64_t T = 1795574523; /* a unix time in 2026 */
	/* No window: the number means nothing, never ahead. */
	assert_false(fleet_window_ahead(UINT32_MAX, 0, T * 1000));
	/* 1 s windows: the next one is ahead until 250 ms before it begins. */
	assert_false(fleet_window_ahead(T, 1, T * 1000));
	assert_true(fleet_window_ahead(T + 1, 1, T * 1000));
	assert_true(fleet_window_ahead(T + 1, 1, T * 1000 + 749));
	assert_false(fleet_window_ahead(T + 1, 1, T * 1000 + 750));
	assert_true(fleet_window_ahead(T + 2, 1, T * 1000 + 999));
	assert_false(fleet_window_ahead(0, 1, T * 1000));
	assert_true(fleet_window_ahead(SHMF_WINDOW_NUM_MAX, 1, T * 1000));
	/* 10 s windows and a node 25 s ahead: its window is 2 or 3 on. */
	uint64_t W = T / 10;
	assert_false(fleet_window_ahead(W + 1, 10, (W + 1) * 10000 - 2500));
	assert_true(fleet_window_ahead(W + 1, 10, (W + 1) * 10000 - 2501));
	assert_true(fleet_window_ahead((T * 1000 + 25000) / 10000, 10, T * 1000));
	/* 50 days: a window number whose want * secs * 1000 wraps to less
	 * than now + 30 s (what the old check let through), though in
	 * seconds it begins 585 million years on. */
	uint64_t d50 = 50 * 86400, wrap = UINT64_MAX / (d50 * 1000) + 1;
	assert_true(wrap <= UINT32_MAX);
	assert_true(wrap * d50 * 1000 <= T * 1000 + 30000);
	assert_true(fleet_window_ahead(wrap, d50, T * 1000));
	assert_true(fleet_window_ahead(UINT32_MAX, d50, T * 1000));
	for (uint64_t w = UINT32_MAX; w > UINT32_MAX - 100000; w--)
		assert_true(fleet_window_ahead(w, d50, T * 1000));
	assert_false(fleet_window_ahead(T / d50, d50, T * 1000));
	assert_true(fleet_window_ahead(T / d50 + 1, d50, T * 1000));
	/* The longest window: its next one is ten years on; the current and
	 * the ones before are not ahead; past the limits, always ahead. */
	uint64_t M = SHMF_WINDOW_SECS_MAX;
	assert_false(fleet_window_ahead(T / M, M, T * 1000));
	assert_false(fleet_window_ahead(0, M, T * 1000));
	assert_true(fleet_window_ahead(T / M + 1, M, T * 1000));
	assert_false(fleet_window_ahead(T / M + 1, M, (T / M + 1) * M * 1000 - 30000));
	assert_true(fleet_window_ahead(SHMF_WINDOW_NUM_MAX, M, UINT32_MAX * (uint64_t)1000));
	assert_true(fleet_window_ahead((uint64_t)SHMF_WINDOW_NUM_MAX + 1, 1, UINT64_MAX / 2));
	assert_true(fleet_window_ahead(0, M + 1, T * 1000));
	/* The clock near 2^64 ms: no wrap either. */
	assert_false(fleet_window_ahead(UINT64_MAX / 1000 / M, M, UINT64_MAX - 10));
	assert_true(fleet_window_ahead(SHMF_WINDOW_NUM_MAX, M, UINT64_MAX - 10));
	assert_false(fleet_window_ahead(SHMF_WINDOW_NUM_MAX, 1, UINT64_MAX - 10));

	/* What the configuration and BF.RESERVE accept as a window: 1 s to
	 * ten years. */
	uint64_t secs = 0;
	assert_int_equal(spec_parse_duration("1", &secs), 0);
	assert_int_equal(secs, 1);
	assert_int_equal(spec_parse_duration("3650d", &secs), 0);
	assert_int_equal(secs, SHMF_WINDOW_SECS_MAX);
	assert_int_equal(spec_parse_duration("315360000", &secs), 0);
	assert_int_equal(spec_parse_duration("315360001", &secs), SHMF_E_INVAL);
	assert_int_equal(spec_parse_duration("3651d", &secs), SHMF_E_INVAL);
	assert_int_equal(spec_parse_duration("18446744073709551615", &secs), SHMF_E_INVAL);
	assert_int_equal(spec_parse_duration("0", &secs), SHMF_E_INVAL);
	assert_int_equal(secs, SHMF_WINDOW_SECS_MAX);
}

/* Registry windows at the extremes: the longest window rotates to the
 * largest window number with exact arithmetic, a longer window or a
 * larger number is refused, and rotation by age never wraps. */
static void test_registry_window_limits(void **state)
{
	(void)state;
	char err[REGISTRY_ERR_MAX];
	fleet_on();
	uint64_t M = SHMF_WINDOW_SECS_MAX;
	assert_int_equal(create("toolong", SHMF_TYPE_BLOOM, 1, M + 1, 2, err, sizeof(err)), SHMF_E_INVAL);
	assert_non_null(strstr(err, "longer than the longest"));
	assert_int_equal(create("toolong", SHMF_TYPE_BLOOM, 0, UINT64_MAX, 2, err, sizeof(err)), SHMF_E_INVAL);
	int w = create("longest", SHMF_TYPE_BLOOM, 1, M, 2, err, sizeof(err));
	assert_true(w >= 0);
	const struct shmf_slot *s = &fx.reg.ctl.slots[w];
	uint64_t W = (uint64_t)time(NULL) / M;
	assert_int_equal(s->live_created[0], W * M);
	/* Past 32 bits: refused, nothing changed. */
	assert_int_equal(registry_rotate_to(&fx.reg, "longest", (uint64_t)SHMF_WINDOW_NUM_MAX + 1, err, sizeof(err)),
			 SHMF_E_INVAL);
	assert_non_null(strstr(err, "does not fit 32 bits"));
	assert_int_equal(s->nlive, 1);
	assert_int_equal(s->live_created[0], W * M);
	/* The largest window number: exact, and the slot still checks. */
	assert_int_equal(registry_rotate_to(&fx.reg, "longest", SHMF_WINDOW_NUM_MAX, err, sizeof(err)), 0);
	assert_int_equal(s->live_created[0], (uint64_t)SHMF_WINDOW_NUM_MAX * M);
	assert_int_equal(s->live_created[0] / M, SHMF_WINDOW_NUM_MAX);
	struct shmf_slot copy;
	assert_int_equal(shmf_slot_read(s, &copy), 0);
	assert_int_equal(shmf_slot_check(&copy), 0);
	/* A slot whose window is longer than the longest, or whose window
	 * number does not fit 32 bits, is refused by every reader. */
	copy.window_secs = M + 1;
	assert_int_equal(shmf_slot_check(&copy), SHMF_E_FORMAT);
	copy.window_secs = 1;
	assert_int_equal(shmf_slot_check(&copy), SHMF_E_FORMAT);

	/* A plain window of the longest length rotates by its age, exactly. */
	int p = create("plainlong", SHMF_TYPE_BLOOM, 0, M, 2, err, sizeof(err));
	assert_true(p >= 0);
	uint64_t created = fx.reg.ctl.slots[p].live_created[0];
	registry_rotate_due(&fx.reg, created + M - 1);
	assert_int_equal(fx.reg.ctl.slots[p].nlive, 1);
	registry_rotate_due(&fx.reg, UINT64_MAX - 5); /* created + M would not wrap, now - created cannot */
	assert_int_equal(fx.reg.ctl.slots[p].nlive, 2);
	/* A 1 s window: the shortest, rotates once a second by age. */
	int one = create("shortest", SHMF_TYPE_BLOOM, 0, 1, 2, err, sizeof(err));
	assert_true(one >= 0);
	created = fx.reg.ctl.slots[one].live_created[0];
	registry_rotate_due(&fx.reg, created);
	assert_int_equal(fx.reg.ctl.slots[one].nlive, 1);
	registry_rotate_due(&fx.reg, created + 1);
	assert_int_equal(fx.reg.ctl.slots[one].nlive, 2);
}

/* The tags of a stream entry: the same secret gives the same key and
 * tags; another secret, node, shape or sequence fails the header tag; a
 * batch changed by one bit (or cut short) fails the entry tag alone; tags
 * of another length fail. */
static void test_auth(void **state)
{
	(void)state;
	struct fleet_key k1, k2, other;
	unsigned char batch[64], mac[FLEET_MAC_BYTES], mac2[FLEET_MAC_BYTES];
	for (size_t i = 0; i < sizeof(batch); i++)
		batch[i] = (unsigned char)(i * 37);
	assert_int_equal(fleet_key_derive("s3cret", &k1), 0);
	assert_int_equal(fleet_key_derive("s3cret", &k2), 0);
	assert_int_equal(fleet_key_derive("s3creT", &other), 0);
	assert_memory_equal(k1.k, k2.k, FLEET_KEY_BYTES);
	assert_memory_not_equal(k1.k, other.k, FLEET_KEY_BYTES);
	fleet_mac(&k1, "node1", 5, 0xabc, 7, batch, sizeof(batch), mac);
	fleet_mac(&k2, "node1", 5, 0xabc, 7, batch, sizeof(batch), mac2);
	assert_memory_equal(mac, mac2, sizeof(mac));
	assert_int_equal(fleet_mac_verify(&k1, "node1", 5, 0xabc, 7, batch, sizeof(batch), mac, sizeof(mac)),
			 FLEET_MAC_OK);
	assert_int_equal(fleet_mac_verify(&other, "node1", 5, 0xabc, 7, batch, sizeof(batch), mac, sizeof(mac)),
			 FLEET_MAC_HEADER);
	assert_int_equal(fleet_mac_verify(&k1, "node2", 5, 0xabc, 7, batch, sizeof(batch), mac, sizeof(mac)),
			 FLEET_MAC_HEADER);
	assert_int_equal(fleet_mac_verify(&k1, "node1", 5, 0xabd, 7, batch, sizeof(batch), mac, sizeof(mac)),
			 FLEET_MAC_HEADER);
	assert_int_equal(fleet_mac_verify(&k1, "node1", 5, 0xabc, 8, batch, sizeof(batch), mac, sizeof(mac)),
			 FLEET_MAC_HEADER);
	assert_int_equal(fleet_mac_verify(&k1, "node1", 5, 0xabc, 7, batch, sizeof(batch) - 16, mac, sizeof(mac)),
			 FLEET_MAC_BATCH);
	batch[40] ^= 0x10;
	assert_int_equal(fleet_mac_verify(&k1, "node1", 5, 0xabc, 7, batch, sizeof(batch), mac, sizeof(mac)),
			 FLEET_MAC_BATCH);
	batch[40] ^= 0x10;
	assert_int_equal(fleet_mac_verify(&k1, "node1", 5, 0xabc, 7, batch, sizeof(batch), mac, sizeof(mac) - 1),
			 FLEET_MAC_HEADER);
	/* A sender's id: its name's, never 0 (a free entry of the slot's table). */
	assert_int_equal(fleet_node_id("node1", 5), fleet_node_id("node1", 5));
	assert_true(fleet_node_id("node1", 5) != fleet_node_id("node2", 5));
	assert_true(fleet_node_id("", 0) != 0);
}

/* An announcement (a node's listener address and credentials, published
 * in Redis): sealed with the fleet's key for one node; it opens with the
 * same secret as that node's text, and is refused opened with another
 * secret, as another node's, with any one byte flipped (nonce, ciphertext
 * or tag), cut short, or longer than the most there may be. */
static void test_announce(void **state)
{
	(void)state;
	struct fleet_key k1, k2, other;
	assert_int_equal(fleet_key_derive("s3cret", &k1), 0);
	assert_int_equal(fleet_key_derive("s3cret", &k2), 0);
	assert_int_equal(fleet_key_derive("s3creT", &other), 0);
	static const char msg[] = "tcp=127.0.0.1:6390 user=fleet password=hunter2";
	size_t len = sizeof(msg) - 1;
	unsigned char sealed[FLEET_ANNOUNCE_OVER + FLEET_ANNOUNCE_MAX + 1];
	char text[FLEET_ANNOUNCE_MAX + 1];
	size_t n = fleet_announce_seal(&k1, "node1", msg, len, sealed);
	assert_int_equal(n, len + FLEET_ANNOUNCE_OVER);
	/* Not the text in clear. */
	assert_null(memmem(sealed, n, "hunter2", 7));
	assert_int_equal(fleet_announce_open(&k2, "node1", sealed, n, text), (int)len);
	assert_string_equal(text, msg);
	assert_int_equal(fleet_announce_open(&other, "node1", sealed, n, text), -1);
	assert_int_equal(fleet_announce_open(&k1, "node2", sealed, n, text), -1);
	assert_int_equal(fleet_announce_open(&k1, "node", sealed, n, text), -1);
	for (size_t i = 0; i < n; i++) {
		sealed[i] ^= 0x01;
		assert_int_equal(fleet_announce_open(&k1, "node1", sealed, n, text), -1);
		sealed[i] ^= 0x01;
	}
	assert_int_equal(fleet_announce_open(&k1, "node1", sealed, n - 1, text), -1);
	assert_int_equal(fleet_announce_open(&k1, "node1", sealed, FLEET_ANNOUNCE_OVER - 1, text), -1);
	assert_int_equal(fleet_announce_open(&k1, "node1", sealed, sizeof(sealed), text), -1);
	/* Two seals of one text differ (a fresh nonce each), both open. */
	unsigned char again[sizeof(sealed)];
	assert_int_equal(fleet_announce_seal(&k1, "node1", msg, len, again), n);
	assert_memory_not_equal(again, sealed, n);
	assert_int_equal(fleet_announce_open(&k1, "node1", again, n, text), (int)len);
	assert_int_equal(fleet_announce_open(&k1, "node1", sealed, n, text), (int)len);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed),
		cmocka_unit_test(test_shape),
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_config),
		fixture_unit_test(test_registry_replicated, fx),
		fixture_unit_test(test_registry_restart, fx),
		fixture_unit_test(test_registry_windows, fx),
		cmocka_unit_test(test_window_checks),
		fixture_unit_test(test_registry_window_limits, fx),
		cmocka_unit_test(test_auth),
		cmocka_unit_test(test_announce),
	};
	static const char *const names[] = {
		"seed",
		"shape",
		"batch",
		"ids",
		"config",
		"registry_replicated",
		"registry_restart",
		"registry_windows",
		"window_checks",
		"registry_window_limits",
		"auth",
		"announce",
	};
	return fixture_run(argc, argv, tests, names);
}
