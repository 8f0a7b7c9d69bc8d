/*
 * test-scandump.c - a filter chunk by chunk (BF.SCANDUMP / BF.LOADCHUNK,
 * CF.SCANDUMP / CF.LOADCHUNK) through the verb dispatcher, as connections
 * send them, against a private registry: copies that answer every check
 * as the original, dumps taken while 2 processes add, refused dumps and
 * chunks that leave nothing behind, abandoned loads, and the stream cursor
 * through snapshots and dumps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "tests/fixture.h"
#include "shmd/verbs/dispatch.h"
#include "shmd/files/merge.h"
#include "shmd/store/generations.h"
#include "shmd/store/scandump.h"
#include "shmd/session/session.h"
#include "shmd/verbs/verbs.h"
#include "common/snapshot.h"
#include "common/spec.h"

static struct fixture fx;
static struct server_view view; /* unix-socket clients, no password */

/* ---- Requests as a connection sends them -------------------------------- */

struct answer {
	char *raw; /* the whole reply, NUL-terminated */
	size_t len;
};

/* Run one request of @p argc arguments (@p lens NULL: strings) on
 * connection @p s; the reply in *a (free a->raw). */
static void call(struct session *s, int argc, const char *const *argv, const size_t *lens, struct answer *a)
{
	char *av[8];
	size_t l[8];
	assert_true(argc <= 8);
	for (int i = 0; i < argc; i++) {
		av[i] = (char *)argv[i];
		l[i] = lens != NULL ? lens[i] : strlen(argv[i]);
	}
	struct request req = { .argc = argc, .argv = av, .lens = l };
	struct reply out = { 0 };
	dispatch_request(s, &fx.reg, &req, &out);
	assert_false(out.oom);
	a->raw = calloc(1, out.len + 1);
	assert_non_null(a->raw);
	memcpy(a->raw, out.data, out.len);
	a->len = out.len;
	reply_free(&out);
}

/* A reply that must start with @p prefix (errors are told by their start,
 * and must name what is wrong: @p also, when not NULL, is in it). */
static void expect(struct answer *a, const char *prefix, const char *also)
{
	if (strncmp(a->raw, prefix, strlen(prefix)) != 0 || (also != NULL && strstr(a->raw, also) == NULL))
		fail_msg("reply\n  got:  %.300s\n  want: %s... containing '%s'", a->raw, prefix, also ? also : "");
	free(a->raw);
	a->raw = NULL;
}

/* One chunk of a dump, as SCANDUMP answered it. */
struct chunk {
	uint64_t iter;
	char *data;
	size_t len;
};

struct dump {
	size_t n;
	struct chunk c[4096];
};

static void dump_free(struct dump *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->c[i].data);
	d->n = 0;
}

/* Parse "*2 :iter $len data" (or the end: ":0" and "" or nil); 0, or -1 for
 * an error reply (left in a->raw). */
static int parse_chunk(struct answer *a, struct chunk *out, int *end)
{
	if (a->raw[0] == '-')
		return -1;
	/* By hand: scanf's "\r\n" would eat the CRLF after an empty string too. */
	char *p;
	assert_int_equal(strncmp(a->raw, "*2\r\n:", 5), 0);
	out->iter = strtoull(a->raw + 5, &p, 10);
	assert_int_equal(strncmp(p, "\r\n", 2), 0);
	p += 2;
	out->data = NULL;
	out->len = 0;
	*end = out->iter == 0;
	if (!strncmp(p, "$-1\r\n", 5))
		return 0;
	assert_true(*p == '$');
	size_t n = strtoull(p + 1, &p, 10);
	assert_int_equal(strncmp(p, "\r\n", 2), 0);
	p += 2;
	assert_true((size_t)(p - a->raw) + n + 2 == a->len);
	out->data = malloc(n ? n : 1);
	memcpy(out->data, p, n);
	out->len = n;
	return 0;
}

/* SCANDUMP @p name (verb @p verb) whole on connection @p s into @p d.
 * @return 0, or -1 with the error reply in @p err. */
static int dump_all(struct session *s, const char *verb, const char *name, struct dump *d, char *err, size_t errlen)
{
	uint64_t iter = 0;
	d->n = 0;
	for (;;) {
		char it[32];
		snprintf(it, sizeof(it), "%" PRIu64, iter);
		const char *argv[] = { verb, name, it };
		struct answer a;
		call(s, 3, argv, NULL, &a);
		struct chunk c;
		int end;
		if (parse_chunk(&a, &c, &end) < 0) {
			snprintf(err, errlen, "%s", a.raw);
			free(a.raw);
			dump_free(d);
			return -1;
		}
		free(a.raw);
		if (end) {
			/* RedisBloom's end: BF [0, ""], CF [0, nil]. */
			if (verb[0] == 'B')
				assert_true(c.data != NULL && c.len == 0);
			else
				assert_null(c.data);
			free(c.data);
			/* A dump shmd no longer holds (the filter changed) answers
			 * its end early, as RedisBloom answers any iterator: the
			 * header chunk says how many chunks a whole one has. */
			struct shmf_chunk_header h;
			assert_true(d->n > 0 && d->c[0].len >= sizeof(h));
			memcpy(&h, d->c[0].data, sizeof(h));
			if (d->n != h.total + 1) {
				snprintf(err, errlen,
					 "the dump ended after %zu of %" PRIu64 " chunks: start the dump again", d->n,
					 h.total + 1);
				dump_free(d);
				return -1;
			}
			return 0;
		}
		assert_true(d->n < sizeof(d->c) / sizeof(d->c[0]));
		d->c[d->n++] = c;
		iter = c.iter;
	}
}

/* LOADCHUNK one chunk; the reply. */
static void load_one(struct session *s, const char *verb, const char *name, uint64_t iter, const void *data, size_t len,
		     struct answer *a)
{
	char it[32];
	snprintf(it, sizeof(it), "%" PRIu64, iter);
	const char *argv[] = { verb, name, it, data };
	size_t lens[] = { strlen(verb), strlen(name), strlen(it), len };
	call(s, 4, argv, lens, a);
}

static void load_all(struct session *s, const char *verb, const char *name, const struct dump *d)
{
	for (size_t i = 0; i < d->n; i++) {
		struct answer a;
		load_one(s, verb, name, d->c[i].iter, d->c[i].data, d->c[i].len, &a);
		expect(&a, "+OK\r\n", NULL);
	}
}

/* ---- Filters, keys and the files of the instance ------------------------ */

static void add_keys(const char *name, unsigned family, uint64_t n)
{
	shmf_t *f = fixture_open(name, SHMF_RDWR);
	char key[32];
	for (uint64_t i = 0; i < n; i++)
		assert_true(shmf_add(f, key, fixture_key(key, family, i)) >= 0);
	shmf_close(f);
}

static uint64_t count_present(const char *name, unsigned family, uint64_t n)
{
	shmf_t *f = fixture_open(name, SHMF_RDONLY);
	char key[32];
	uint64_t hits = 0;
	for (uint64_t i = 0; i < n; i++)
		hits += shmf_check(f, key, fixture_key(key, family, i)) == 1;
	shmf_close(f);
	return hits;
}

/* Filters @p a and @p b answer every check (and for cuckoo, every count)
 * alike over keys [0, n) of @p family: the keys added and as many others. */
static void assert_same_answers(const char *a, const char *b, unsigned family, uint64_t n, int cuckoo)
{
	shmf_t *fa = fixture_open(a, SHMF_RDONLY), *fb = fixture_open(b, SHMF_RDONLY);
	char key[32];
	for (uint64_t i = 0; i < n; i++) {
		size_t len = fixture_key(key, family, i);
		int ca = shmf_check(fa, key, len), cb = shmf_check(fb, key, len);
		if (ca != cb)
			fail_msg("key %" PRIu64 " of family %u: '%s' answers %d, '%s' %d", i, family, a, ca, b, cb);
		if (cuckoo)
			assert_int_equal(shmf_count(fa, key, len), shmf_count(fb, key, len));
	}
	shmf_info_t ia, ib;
	assert_int_equal(shmf_info(fa, &ia), 0);
	assert_int_equal(shmf_info(fb, &ib), 0);
	assert_int_equal(ia.type, ib.type);
	assert_int_equal(ia.k, ib.k);
	assert_int_equal(ia.bits, ib.bits);
	assert_int_equal(ia.capacity, ib.capacity);
	assert_int_equal(ia.items, ib.items);
	assert_int_equal(ia.items_live, ib.items_live);
	assert_int_equal(ia.live_generations, ib.live_generations);
	assert_int_equal(ia.window_secs, ib.window_secs);
	shmf_close(fa);
	shmf_close(fb);
}

/* Data files in the instance directory. */
static int count_data_files(void)
{
	char path[512];
	fixture_path(&fx, "", path, sizeof(path));
	DIR *d = opendir(path);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		n += strstr(e->d_name, ".data") != NULL;
	closedir(d);
	return n;
}

static void file_path(const char *name, char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "%s/%s", fx.files, name) >= len)
		fail_msg("path too long");
}

/* ---- Round trips --------------------------------------------------------- */

/* @p window: a windowed filter; @p bucket: a cuckoo filter of that bucket
 * size (the other arguments as they are) at error rate @p fpr. */
static void roundtrip_in(const char *name, int type, uint64_t capacity, uint64_t keys, int window, uint32_t bucket,
			 double fpr)
{
	struct session s;
	struct dump *d = calloc(1, sizeof(*d));
	char err[1024], copy[64];
	session_init(&s, 1, SESSION_UNIX, &view);
	s.peer.uid = geteuid(); /* the daemon's own uid: an admin (roles.h) */
	if (window) {
		fixture_window(&fx, name, type, capacity, fpr, 3600, 3);
		add_keys(name, 10, keys);
		fixture_rotate(&fx, name);
		add_keys(name, 11, keys);
		fixture_rotate(&fx, name);
	} else if (bucket != 0) {
		fixture_cuckoo(&fx, name, capacity, fpr, bucket);
	} else {
		fixture_filter(&fx, name, type, capacity, fpr);
	}
	add_keys(name, 12, keys);
	const char *bf = type == SHMF_TYPE_BLOOM ? "BF.SCANDUMP" : "CF.SCANDUMP";
	const char *lf = type == SHMF_TYPE_BLOOM ? "BF.LOADCHUNK" : "CF.LOADCHUNK";
	if (dump_all(&s, bf, name, d, err, sizeof(err)) < 0)
		fail_msg("%s: %s", name, err);
	/* Chunks of at most 4 MiB of payload, iterators 1, 2, ... in their
	 * low half. */
	for (size_t i = 0; i < d->n; i++) {
		assert_true(d->c[i].len <= SHMF_CHUNK_BYTES + sizeof(struct shmf_chunk_header));
		assert_int_equal(d->c[i].iter & 0xffffffffu, i + 1);
	}
	snprintf(copy, sizeof(copy), "%s-copy", name);
	load_all(&s, lf, copy, d);
	assert_int_equal(scandump_loads(), 0);
	for (unsigned fam = 10; fam <= 13; fam++)
		assert_same_answers(name, copy, fam, 2 * keys, type == SHMF_TYPE_CUCKOO);
	if (type == SHMF_TYPE_BLOOM) {
		/* The copy has the original's lines a key: 1, 2 at 1e-6, 3 at 1e-9. */
		shmf_t *f = fixture_open(copy, SHMF_RDONLY);
		shmf_info_t info;
		assert_int_equal(shmf_info(f, &info), 0);
		assert_int_equal(info.lines, fpr >= 5e-4 ? 1 : fpr >= 2e-7 ? 2 : 3);
		shmf_close(f);
	}
	if (bucket != 0) {
		shmf_t *f = fixture_open(copy, SHMF_RDONLY);
		shmf_info_t info;
		assert_int_equal(shmf_info(f, &info), 0);
		assert_int_equal(info.bucket_size, bucket);
		assert_int_equal(info.fingerprint_bits, fpr < 1e-6 ? 32 : info.fingerprint_bits);
		shmf_close(f);
	}
	assert_int_equal(count_present(copy, 12, keys), keys);
	if (window) {
		assert_int_equal(count_present(copy, 10, keys), keys);
		assert_int_equal(count_present(copy, 11, keys), keys);
	}
	/* Loading it again replaces the copy whole, as a restore does. */
	int files = count_data_files();
	load_all(&s, lf, copy, d);
	assert_int_equal(count_data_files(), files);
	assert_same_answers(name, copy, 12, 2 * keys, type == SHMF_TYPE_CUCKOO);
	dump_free(d);
	free(d);
	session_free(&s);
}

static void roundtrip(const char *name, int type, uint64_t capacity, uint64_t keys, int window)
{
	roundtrip_in(name, type, capacity, keys, window, 0, 0.01);
}

/* Cuckoo filters of every bucket size, dumped and loaded. */
static void test_bucket_sizes(void **state)
{
	(void)state;
	roundtrip_in("cb1", SHMF_TYPE_CUCKOO, 100000, 50000, 0, 1, 0.01);
	roundtrip_in("cb2", SHMF_TYPE_CUCKOO, 100000, 50000, 0, 2, 0.05);
	roundtrip_in("cb4", SHMF_TYPE_CUCKOO, 100000, 50000, 0, 4, 0.05);
	roundtrip_in("cb8", SHMF_TYPE_CUCKOO, 100000, 50000, 0, 8, 0.1);
	roundtrip_in("cb2x32", SHMF_TYPE_CUCKOO, 100000, 50000, 0, 2, 1e-9); /* 32-bit fingerprints */
}

static void test_roundtrip(void **state)
{
	(void)state;
	/* 8 million keys at 1%: about 10 MB, three payload chunks. */
	roundtrip("bloom", SHMF_TYPE_BLOOM, 8000000, 50000, 0);
	roundtrip("cuckoo", SHMF_TYPE_CUCKOO, 100000, 50000, 0);
	roundtrip("window", SHMF_TYPE_BLOOM, 100000, 20000, 1);
	roundtrip("cwindow", SHMF_TYPE_CUCKOO, 100000, 20000, 1);
	/* Bloom filters of two and three lines a key, the second windowed. */
	roundtrip_in("bloom2", SHMF_TYPE_BLOOM, 1000000, 50000, 0, 0, 1e-6);
	roundtrip_in("bloom3w", SHMF_TYPE_BLOOM, 100000, 20000, 1, 0, 1e-9);
}

/* ---- Dumps while 2 processes add ---------------------------------------- */

#define ADDERS 2
struct board {
	_Atomic uint64_t progress[ADDERS]; /* adder i's adds [0, progress) have returned */
	_Atomic int stop;
};

static void adder(struct board *b, const char *name, unsigned id, uint64_t limit)
{
	/* Gone with the test, should it fail before it stops us. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	shmf_t *f;
	if (shmf_open(FIXTURE_INSTANCE, name, SHMF_RDWR, &f) < 0)
		_exit(3);
	char key[32];
	for (uint64_t i = 0; i < limit && !atomic_load(&b->stop); i++) {
		if (shmf_add(f, key, fixture_key(key, 20 + id, i)) < 0)
			_exit(4);
		atomic_store(&b->progress[id], i + 1);
	}
	shmf_close(f);
	_exit(0);
}

static void concurrent(const char *name, int type, uint64_t capacity, uint64_t limit)
{
	struct session s;
	struct dump *d = calloc(1, sizeof(*d));
	char err[1024], copy[64];
	session_init(&s, 2, SESSION_UNIX, &view);
	s.peer.uid = geteuid(); /* the daemon's own uid: an admin (roles.h) */
	fixture_filter(&fx, name, type, capacity, 0.01);
	struct board *b = fixture_shared_map(sizeof(*b));
	pid_t pids[ADDERS];
	for (unsigned i = 0; i < ADDERS; i++)
		if ((pids[i] = fork()) == 0)
			adder(b, name, i, limit);
	while (atomic_load(&b->progress[ADDERS - 1]) < 20000)
		usleep(1000);
	uint64_t before[ADDERS], after[ADDERS];
	int tries = 0, rc;
	/* A cuckoo dump is refused when a fingerprint moved during it: take
	 * it again, as shmctl pull does. */
	do {
		for (unsigned i = 0; i < ADDERS; i++)
			before[i] = atomic_load(&b->progress[i]);
		rc = dump_all(&s, type == SHMF_TYPE_BLOOM ? "BF.SCANDUMP" : "CF.SCANDUMP", name, d, err, sizeof(err));
		if (rc < 0 && strstr(err, "start the dump again") == NULL)
			fail_msg("%s: %s", name, err);
	} while (rc < 0 && ++tries < 50);
	assert_int_equal(rc, 0);
	for (unsigned i = 0; i < ADDERS; i++)
		after[i] = atomic_load(&b->progress[i]);
	atomic_store(&b->stop, 1);
	for (unsigned i = 0; i < ADDERS; i++)
		fixture_reap(pids[i]);
	snprintf(copy, sizeof(copy), "%s-copy", name);
	load_all(&s, type == SHMF_TYPE_BLOOM ? "BF.LOADCHUNK" : "CF.LOADCHUNK", copy, d);
	/* The adds went on during the dump (or it proves nothing). */
	assert_true(after[0] + after[1] > before[0] + before[1]);
	for (unsigned i = 0; i < ADDERS; i++)
		assert_int_equal(count_present(copy, 20 + i, before[i]), before[i]);
	dump_free(d);
	free(d);
	munmap(b, sizeof(*b));
	session_free(&s);
}

static void test_concurrent(void **state)
{
	(void)state;
	/* 20 million keys: 24 MB, six chunks, each copied as its request comes. */
	concurrent("cb", SHMF_TYPE_BLOOM, 20000000, 20000000);
	/* Cuckoo at low load, where moves are rare, so that a dump completes. */
	concurrent("cc", SHMF_TYPE_CUCKOO, 2000000, 150000);
}

/* A cuckoo dump of a table at 95% load while 2 processes churn it (each
 * adds a key and deletes it again, as fast as they can: relocations all
 * the time) completes at its first try, every time, and the filter loaded
 * from it holds every key stored before it began. Before, such a dump was
 * refused at the first relocation between two of its chunks (0 of 20 at
 * 1,000 adds a second). The iterators of a connection's earlier dump then
 * fit nothing, and no chunk of another dump fits a load begun from it. */
static void churner(struct board *b, const char *name, unsigned id)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	shmf_t *f;
	if (shmf_open(FIXTURE_INSTANCE, name, SHMF_RDWR, &f) < 0)
		_exit(3);
	char key[32];
	for (uint64_t i = 0; !atomic_load(&b->stop); i++) {
		size_t len = fixture_key(key, 41 + id, i % 1000);
		int r = shmf_add(f, key, len);
		if (r == 1 && shmf_del(f, key, len) < 0)
			_exit(4);
		if (r < 0 && r != SHMF_E_FULL)
			_exit(5);
		atomic_store(&b->progress[id], i + 1);
	}
	shmf_close(f);
	_exit(0);
}

static void test_cuckoo_churn(void **state)
{
	(void)state;
	struct session s;
	char err[1024];
	session_init(&s, 3, SESSION_UNIX, &view);
	s.peer.uid = geteuid(); /* the daemon's own uid: an admin (roles.h) */
	/* 3 million keys: a table of several 4 MiB chunks. */
	const uint64_t capacity = 3000000, base = capacity * 95 / 100;
	fixture_filter(&fx, "churn", SHMF_TYPE_CUCKOO, capacity, 0.01);
	add_keys("churn", 40, base);
	struct board *b = fixture_shared_map(sizeof(*b));
	pid_t pids[ADDERS];
	for (unsigned i = 0; i < ADDERS; i++)
		if ((pids[i] = fork()) == 0)
			churner(b, "churn", i);
	while (atomic_load(&b->progress[ADDERS - 1]) < 1000)
		usleep(1000);
	shmf_t *f = fixture_open("churn", SHMF_RDONLY);
	shmf_info_t before, after;
	assert_int_equal(shmf_info(f, &before), 0);
	struct dump *d = calloc(1, sizeof(*d));
	char name[32];
	for (int round = 0; round < 5; round++) {
		uint64_t p0 = atomic_load(&b->progress[0]) + atomic_load(&b->progress[1]);
		if (dump_all(&s, "CF.SCANDUMP", "churn", d, err, sizeof(err)) < 0)
			fail_msg("dump %d under churn refused: %s", round, err);
		uint64_t p1 = atomic_load(&b->progress[0]) + atomic_load(&b->progress[1]);
		assert_true(d->n >= 3); /* a header and at least two payload chunks */
		snprintf(name, sizeof(name), "churn-copy%d", round);
		load_all(&s, "CF.LOADCHUNK", name, d);
		assert_int_equal(count_present(name, 40, base), base);
		printf("# dump %d under churn: %zu chunks, complete; %" PRIu64 " churn adds during it\n", round, d->n,
		       p1 - p0);
		if (round < 4)
			dump_free(d);
	}
	assert_int_equal(shmf_info(f, &after), 0);
	atomic_store(&b->stop, 1);
	for (unsigned i = 0; i < ADDERS; i++)
		fixture_reap(pids[i]);
	/* The churn relocated fingerprints while the dumps ran (or the test
	 * proves nothing). */
	printf("# %" PRIu64 " relocations during the dumps\n", after.relocations - before.relocations);
	assert_true(after.relocations > before.relocations);
	shmf_close(f);

	/* The last dump is complete and dropped: its iterators fit nothing. */
	char it[32];
	struct answer a;
	snprintf(it, sizeof(it), "%" PRIu64, d->c[1].iter);
	const char *next[] = { "CF.SCANDUMP", "churn", it };
	call(&s, 3, next, NULL, &a);
	expect(&a, "*2\r\n:0\r\n$-1\r\n", NULL); /* RedisBloom's end of a dump, for an iterator no dump goes with */
	/* A load begun from that dump's header takes no chunk of another
	 * (moves after it, so that the next dump's tag differs). */
	add_keys("churn", 42, capacity / 100);
	struct dump *d2 = calloc(1, sizeof(*d2));
	assert_int_equal(dump_all(&s, "CF.SCANDUMP", "churn", d2, err, sizeof(err)), 0);
	load_one(&s, "CF.LOADCHUNK", "churn-mixed", d->c[0].iter, d->c[0].data, d->c[0].len, &a);
	expect(&a, "+OK", NULL);
	load_one(&s, "CF.LOADCHUNK", "churn-mixed", d2->c[1].iter, d2->c[1].data, d2->c[1].len, &a);
	expect(&a, "-Couldn't load chunk!\r\n", NULL); /* RedisBloom's text; "of another dump" goes to the log */
	assert_int_equal(scandump_loads(), 0);
	assert_true(registry_find(&fx.reg, "churn-mixed") < 0);
	assert_int_equal(scandump_dumps(), 0);
	dump_free(d);
	dump_free(d2);
	free(d);
	free(d2);
	munmap(b, sizeof(*b));
	session_free(&s);
}

/* ---- Refused chunks and requests ----------------------------------------- */

/* Nothing was created or changed: no filter "copy", "main" still the
 * same generation with its keys, no load left, no stray data file. */
static void assert_nothing_changed(uint64_t gen, int files)
{
	assert_true(registry_find(&fx.reg, "copy") < 0);
	shmf_t *f = fixture_open("main", SHMF_RDONLY);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.generation, gen);
	shmf_close(f);
	assert_int_equal(count_present("main", 40, 5000), 5000);
	assert_int_equal(scandump_loads(), 0);
	assert_int_equal(count_data_files(), files);
}

/* A copy of chunk @p c with byte @p at XORed with @p x. */
static char *damaged(const struct chunk *c, size_t at, int x)
{
	char *p = malloc(c->len);
	memcpy(p, c->data, c->len);
	if (at < c->len)
		p[at] ^= (char)x;
	return p;
}

/* Random bytes, long and short, as a first chunk, into a new filter and
 * over an existing one (with iterator 1 read as RedisBloom's header chunk,
 * with 2 as neither kind of chunk); then random bytes behind a valid chunk
 * magic. Draws the bytes from *@p seed. */
static void check_junk_refused(struct session *s, const struct dump *d, uint64_t *seed, uint64_t gen, int files)
{
	struct answer a;
	char *junk = malloc(100000);
	for (size_t i = 0; i < 100000; i++)
		junk[i] = (char)fixture_random(seed);
	size_t sizes[] = { 0, 1, 95, 96, 97, 400, 100000 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		load_one(s, "BF.LOADCHUNK", "copy", 1, junk, sizes[i], &a);
		expect(&a, "-ERR received bad data\r\n", NULL);
		load_one(s, "BF.LOADCHUNK", "copy", 2, junk, sizes[i], &a);
		expect(&a, "-ERR received bad data\r\n", NULL);
		load_one(s, "BF.LOADCHUNK", "main", d->c[0].iter, junk, sizes[i], &a);
		expect(&a, "-ERR ", NULL);
	}
	memcpy(junk, SHMF_CHUNK_MAGIC, 8);
	load_one(s, "BF.LOADCHUNK", "copy", 1, junk, 5000, &a);
	expect(&a, "-ERR ", NULL);
	free(junk);
	assert_nothing_changed(gen, files);
}

/* The header chunk of dump @p d refused: every 97th byte flipped (and the
 * last), under the wrong iterator, through CF.LOADCHUNK, and over a filter
 * of the other type (RedisBloom's WRONGTYPE). */
static void check_bad_header_chunk_refused(struct session *s, const struct dump *d, uint64_t gen, int files)
{
	struct answer a;
	for (size_t at = 0; at < d->c[0].len + 97; at += 97) {
		size_t where = at < d->c[0].len ? at : d->c[0].len - 1;
		char *p = damaged(&d->c[0], where, 0x10);
		load_one(s, "BF.LOADCHUNK", "copy", d->c[0].iter, p, d->c[0].len, &a);
		expect(&a, "-ERR ", NULL);
		free(p);
	}
	load_one(s, "BF.LOADCHUNK", "copy", d->c[0].iter + 1, d->c[0].data, d->c[0].len, &a);
	expect(&a, "-ERR received bad data\r\n", NULL);
	load_one(s, "CF.LOADCHUNK", "copy", d->c[0].iter, d->c[0].data, d->c[0].len, &a);
	expect(&a, "-Couldn't create filter!\r\n", NULL);
	load_one(s, "BF.LOADCHUNK", "cf", d->c[0].iter, d->c[0].data, d->c[0].len, &a);
	expect(&a, "-WRONGTYPE ", NULL);
	assert_nothing_changed(gen, files);
}

/* A payload chunk with no load begun is refused. Then, a load of dump
 * @p d begun: a damaged payload chunk (first byte, a middle one, the
 * last), a truncated one, one out of order, one twice, one of another
 * dump (@p foreign), one under the wrong iterator. Each discards the load. */
static void check_bad_payload_chunk_discards(struct session *s, const struct dump *d, const struct dump *foreign,
					     uint64_t gen, int files)
{
	struct answer a;
	load_one(s, "BF.LOADCHUNK", "copy", d->c[1].iter, d->c[1].data, d->c[1].len, &a);
	expect(&a, "-ERR received bad data\r\n", NULL);
	struct {
		const char *why, *says;
		size_t chunk, at, cut;
		int x, iter_delta, second;
		const struct dump *from;
	} cases[] = {
		{ "first byte", "not a chunk", 1, 0, 0, 1, 0, 0, NULL },
		{ "data byte", "checksum mismatch", 1, 4096, 0, 4, 0, 0, NULL },
		{ "last byte", "checksum mismatch", 1, SIZE_MAX, 0, 0x80, 0, 0, NULL },
		{ "truncated", "truncated", 1, 0, 1, 0, 0, 0, NULL },
		{ "reordered", "was expected", 2, 0, 0, 0, 0, 0, NULL },
		{ "twice", "was expected", 1, 0, 0, 0, 0, 1, NULL },
		{ "foreign", "another dump", 1, 0, 0, 0, 0, 0, foreign },
		{ "iterator", "another dump", 1, 0, 0, 0, 1 << 20, 0, NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct dump *from = cases[i].from ? cases[i].from : d;
		const struct chunk *c = &from->c[cases[i].chunk];
		load_one(s, "BF.LOADCHUNK", "main", d->c[0].iter, d->c[0].data, d->c[0].len, &a);
		expect(&a, "+OK", NULL);
		assert_int_equal(scandump_loads(), 1);
		if (cases[i].second) {
			load_one(s, "BF.LOADCHUNK", "main", d->c[1].iter, d->c[1].data, d->c[1].len, &a);
			expect(&a, "+OK", NULL);
		}
		size_t at = cases[i].at == SIZE_MAX ? c->len - 1 : cases[i].at;
		char *p = damaged(c, at, cases[i].x);
		size_t len = cases[i].cut ? c->len - cases[i].cut : c->len;
		load_one(s, "BF.LOADCHUNK", "main", c->iter + (uint64_t)cases[i].iter_delta, p, len, &a);
		/* RedisBloom's text; shmd's sentence (cases[i].says) goes to the log. */
		if (strcmp(a.raw, "-ERR received bad data\r\n") != 0 || scandump_loads() != 0)
			fail_msg("%s (%s): %s", cases[i].why, cases[i].says, a.raw);
		free(a.raw);
		free(p);
		assert_nothing_changed(gen, files);
	}
}

/* Random damage: 200 times a random chunk of dump @p d (the header one or
 * a payload one) with a random byte changed or a random length, after the
 * chunks before it loaded well. Each is refused, and nothing is left.
 * Draws its choices from *@p seed. */
static void check_random_damage_refused(struct session *s, const struct dump *d, uint64_t *seed, uint64_t gen,
					int files)
{
	struct answer a;
	for (int round = 0; round < 200; round++) {
		size_t k = (size_t)(fixture_random(seed) % d->n);
		const struct chunk *c = &d->c[k];
		for (size_t i = 0; i < k; i++) {
			load_one(s, "BF.LOADCHUNK", "copy", d->c[i].iter, d->c[i].data, d->c[i].len, &a);
			expect(&a, "+OK", NULL);
		}
		size_t at = (size_t)(fixture_random(seed) % c->len), len = c->len;
		int x = (int)(fixture_random(seed) % 255) + 1;
		if (round % 4 == 3) {
			len = (size_t)(fixture_random(seed) % c->len); /* cut short */
			x = 0;
		}
		char *p = damaged(c, at, x);
		load_one(s, "BF.LOADCHUNK", "copy", c->iter, p, len, &a);
		if (strncmp(a.raw, "-ERR ", 5) != 0)
			fail_msg("round %d: chunk %zu, byte %zu ^ %d, %zu bytes: %s", round, k, at, x, len, a.raw);
		free(a.raw);
		free(p);
		assert_nothing_changed(gen, files);
	}
}

/* A load of dump @p d (filter "copy", keys 0-999 of family 41) in
 * progress on connection @p s: @p other's chunks are refused and change
 * nothing of it; it completes. */
static void check_load_kept_from_other_connection(struct session *s, struct session *other, const struct dump *d)
{
	struct answer a;
	load_one(s, "BF.LOADCHUNK", "copy", d->c[0].iter, d->c[0].data, d->c[0].len, &a);
	expect(&a, "+OK", NULL);
	load_one(other, "BF.LOADCHUNK", "copy", d->c[0].iter, d->c[0].data, d->c[0].len, &a);
	expect(&a, "-ERR ", "another connection");
	load_one(other, "BF.LOADCHUNK", "copy", d->c[1].iter, d->c[1].data, d->c[1].len, &a);
	expect(&a, "-ERR received bad data\r\n", NULL);
	for (size_t i = 1; i < d->n; i++) {
		load_one(s, "BF.LOADCHUNK", "copy", d->c[i].iter, d->c[i].data, d->c[i].len, &a);
		expect(&a, "+OK", NULL);
	}
	assert_int_equal(count_present("copy", 41, 1000), 1000);
	assert_int_equal(scandump_loads(), 0);
}

/* Arity, iterators and types of SCANDUMP and LOADCHUNK on Bloom filter
 * "src": each answered as RedisBloom answers it (an error, or the end of
 * a dump for an iterator no dump goes with); the connection still
 * answers PING. */
static void check_bad_scandump_requests_answered(struct session *s)
{
	struct answer a;
	const char *const bad[][4] = {
		{ "BF.SCANDUMP", "src", NULL, NULL },
		{ "BF.SCANDUMP", "src", "0", "x" },
		{ "BF.LOADCHUNK", "src", "1", NULL },
		{ "BF.SCANDUMP", "src", "-1", NULL },
		{ "BF.SCANDUMP", "src", "abc", NULL },
		{ "BF.SCANDUMP", "src", "", NULL },
		{ "BF.SCANDUMP", "src", "99999999999999999999", NULL },
		{ "BF.SCANDUMP", "src", "9223372036854775808", NULL },
		{ "BF.SCANDUMP", "src", "9223372036854775807", NULL },
		{ "BF.SCANDUMP", "src", "4294967296", NULL },
		{ "BF.SCANDUMP", "src", "1", NULL },
		{ "BF.SCANDUMP", "nosuch", "0", NULL },
		{ "BF.SCANDUMP", "bad name", "0", NULL },
		{ "BF.LOADCHUNK", "src", "-5", "x" },
		{ "BF.LOADCHUNK", "src", "0", "x" },
		{ "BF.LOADCHUNK", "bad/name", "1", "x" },
	};
	/* RedisBloom's answers: an iterator no dump goes with (negative, past
	 * the end, never handed out) gets the end of the dump, [0, ""]. */
#define BF_END "*2\r\n:0\r\n$0\r\n\r\n"
	const char *const says[] = { "-ERR wrong number of arguments",
				     "-ERR wrong number of arguments",
				     "-ERR wrong number of arguments",
				     BF_END,
				     "-Second argument must be numeric\r\n",
				     "-Second argument must be numeric\r\n",
				     "-Second argument must be numeric\r\n",
				     "-Second argument must be numeric\r\n",
				     BF_END,
				     BF_END,
				     BF_END,
				     "-ERR not found\r\n",
				     "-ERR invalid filter name",
				     "-ERR received bad data\r\n",
				     "-ERR received bad data\r\n",
				     "-ERR invalid filter name" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int argc = bad[i][3] ? 4 : bad[i][2] ? 3 : 2;
		call(s, argc, bad[i], NULL, &a);
		if (strncmp(a.raw, says[i], strlen(says[i])) != 0)
			fail_msg("%s %s %s: %s", bad[i][0], bad[i][1], bad[i][2] ? bad[i][2] : "", a.raw);
		free(a.raw);
	}
	const char *const wrong[] = { "CF.SCANDUMP", "src", "0" };
	call(s, 3, wrong, NULL, &a);
	expect(&a, "-WRONGTYPE ", NULL);
	const char *const ping[] = { "PING" };
	call(s, 1, ping, NULL, &a);
	expect(&a, "+PONG", NULL);
}

static void test_bad_chunks(void **state)
{
	(void)state;
	struct session s, other;
	struct dump *d = calloc(1, sizeof(*d)), *d2 = calloc(1, sizeof(*d2));
	char err[1024];
	session_init(&s, 4, SESSION_UNIX, &view);
	s.peer.uid = geteuid(); /* the daemon's own uid: an admin (roles.h) */
	session_init(&other, 5, SESSION_UNIX, &view);
	other.peer.uid = geteuid(); /* the daemon's own uid: an admin (roles.h) */
	fixture_bloom(&fx, "src", 8000000, 0.01);
	fixture_bloom(&fx, "src2", 8000000, 0.01);
	fixture_bloom(&fx, "main", 8000000, 0.01);
	fixture_filter(&fx, "cf", SHMF_TYPE_CUCKOO, 1000, 0.01);
	add_keys("src", 41, 1000);
	add_keys("main", 40, 5000);
	assert_int_equal(dump_all(&s, "BF.SCANDUMP", "src", d, err, sizeof(err)), 0);
	assert_int_equal(dump_all(&s, "BF.SCANDUMP", "src2", d2, err, sizeof(err)), 0);
	assert_true(d->n >= 3);
	shmf_t *m = fixture_open("main", SHMF_RDONLY);
	shmf_info_t info;
	assert_int_equal(shmf_info(m, &info), 0);
	shmf_close(m);
	uint64_t gen = info.generation;
	int files = count_data_files();

	/* One seed for the junk and the random damage after it, so that a
	 * failing round replays. */
	uint64_t seed = 7;
	check_junk_refused(&s, d, &seed, gen, files);
	check_bad_header_chunk_refused(&s, d, gen, files);
	check_bad_payload_chunk_discards(&s, d, d2, gen, files);
	check_random_damage_refused(&s, d, &seed, gen, files);
	check_load_kept_from_other_connection(&s, &other, d);
	check_bad_scandump_requests_answered(&s);
	assert_int_equal(count_present("main", 40, 5000), 5000);

	dump_free(d);
	dump_free(d2);
	free(d);
	free(d2);
	session_free(&s);
	session_free(&other);
}

/* A load whose connection goes, or that gets no chunk for the idle time,
 * is discarded with its files; nothing of it is ever visible. */
static void test_abandoned(void **state)
{
	(void)state;
	struct session s;
	struct answer a;
	struct dump *d = calloc(1, sizeof(*d));
	char err[1024];
	session_init(&s, 6, SESSION_UNIX, &view);
	s.peer.uid = geteuid(); /* the daemon's own uid: an admin (roles.h) */
	fixture_bloom(&fx, "src", 8000000, 0.01);
	add_keys("src", 50, 1000);
	assert_int_equal(dump_all(&s, "BF.SCANDUMP", "src", d, err, sizeof(err)), 0);
	int files = count_data_files();
	for (int how = 0; how < 2; how++) {
		struct session t;
		session_init(&t, 7 + (uint64_t)how, SESSION_UNIX, &view);
		t.peer.uid = geteuid(); /* the daemon's own uid: an admin (roles.h) */
		for (size_t i = 0; i + 1 < d->n; i++) {
			load_one(&t, "BF.LOADCHUNK", "copy", d->c[i].iter, d->c[i].data, d->c[i].len, &a);
			expect(&a, "+OK", NULL);
		}
		assert_int_equal(scandump_loads(), 1);
		assert_true(count_data_files() > files);
		assert_true(registry_find(&fx.reg, "copy") < 0);
		if (how == 0) {
			session_free(&t); /* the client went */
		} else {
			uint64_t saved = scandump_idle_ms;
			scandump_idle_ms = 100;
			scandump_expire();
			assert_int_equal(scandump_loads(), 1); /* not yet */
			usleep(150000);
			scandump_expire();
			scandump_idle_ms = saved;
			/* Its last chunk now finds no load. */
			size_t last = d->n - 1;
			load_one(&t, "BF.LOADCHUNK", "copy", d->c[last].iter, d->c[last].data, d->c[last].len, &a);
			expect(&a, "-ERR received bad data\r\n", NULL); /* the load was discarded: no load to go on */
			session_free(&t);
		}
		assert_int_equal(scandump_loads(), 0);
		assert_int_equal(count_data_files(), files);
		assert_true(registry_find(&fx.reg, "copy") < 0);
	}
	dump_free(d);
	free(d);
	session_free(&s);
}

/* ---- The stream cursor ---------------------------------------------------- */

static void cursor_of(const char *name, uint64_t *ms, uint64_t *seq)
{
	int slot = registry_find(&fx.reg, name);
	assert_true(slot >= 0);
	registry_cursor_get(&fx.reg, slot, ms, seq);
}

static void test_cursor(void **state)
{
	(void)state;
	char path[512], err[SNAPSHOT_ERR_MAX];
	uint64_t ms, seq;
	struct session s;
	struct dump *d = calloc(1, sizeof(*d));
	session_init(&s, 9, SESSION_UNIX, &view);
	s.peer.uid = geteuid(); /* the daemon's own uid: an admin (roles.h) */
	int slot = fixture_bloom(&fx, "rep", 100000, 0.01);
	add_keys("rep", 60, 1000);
	registry_cursor_set(&fx.reg, slot, 1700000000123ull, 42);
	/* The slot says it replicates (the daemon's flag; this test makes no
	 * journal, so the adds above were not journalled anyway). */
	fx.reg.ctl.slots[slot].flags |= SHMF_SLOT_REPLICATED;

	/* Snapshot -> file (version 2 and later: the cursor and the flag) -> restore. */
	file_path("rep.snap", path, sizeof(path));
	assert_int_equal(registry_snapshot(&fx.reg, "rep", path, NULL, err, sizeof(err)), 0);
	struct snap_file sf;
	assert_int_equal(snapshot_open(&sf, path, err, sizeof(err)), 0);
	assert_int_equal(sf.hdr.version, SHMF_SNAP_VERSION);
	assert_int_equal(sf.hdr.cursor_ms, 1700000000123ull);
	assert_int_equal(sf.hdr.cursor_seq, 42);
	assert_int_equal(sf.hdr.flags, SHMF_SNAP_F_REPLICATED | SHMF_SNAP_F_FLEET);
	snapshot_close(&sf);
	assert_true(fixture_replace(&fx, "restored", path, REGISTRY_RESTORE, err, sizeof(err)) >= 0);
	cursor_of("restored", &ms, &seq);
	assert_int_equal(ms, 1700000000123ull);
	assert_int_equal(seq, 42);
	assert_int_equal(count_present("restored", 60, 1000), 1000);

	/* SCANDUMP -> LOADCHUNK over an existing filter whose cursor is elsewhere. */
	registry_cursor_set(&fx.reg, slot, 1800000000000ull, 7);
	assert_int_equal(dump_all(&s, "BF.SCANDUMP", "rep", d, err, sizeof(err)), 0);
	registry_cursor_set(&fx.reg, registry_find(&fx.reg, "restored"), 5, 5);
	load_all(&s, "BF.LOADCHUNK", "restored", d);
	cursor_of("restored", &ms, &seq);
	assert_int_equal(ms, 1800000000000ull);
	assert_int_equal(seq, 7);

	/* A swap from a file without a cursor (version 2 of a filter that
	 * does not replicate) sets 0-0: the stream is replayed whole. */
	fixture_bloom(&fx, "plain", 100000, 0.01);
	file_path("plain.snap", path, sizeof(path));
	assert_int_equal(registry_snapshot(&fx.reg, "plain", path, NULL, err, sizeof(err)), 0);
	assert_true(fixture_replace(&fx, "restored", path, REGISTRY_SWAP, err, sizeof(err)) >= 0);
	cursor_of("restored", &ms, &seq);
	assert_int_equal(ms, 0);
	assert_int_equal(seq, 0);

	/* A version 1 file reads as cursor 0-0; one whose bytes 184-203 are
	 * set is refused (they were reserved then). */
	size_t len;
	int fd = open(path, O_RDONLY);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	len = (size_t)st.st_size;
	char *buf = malloc(len);
	assert_int_equal(read(fd, buf, len), (ssize_t)len);
	close(fd);
	struct shmf_snap_header *h = (struct shmf_snap_header *)buf;
	char v1[512];
	file_path("v1.snap", v1, sizeof(v1));
	for (int set = 0; set < 2; set++) {
		h->version = 1;
		h->bucket_size = 0; /* a Bloom filter's lines a key: version 5's */
		h->cursor_ms = set ? 99 : 0;
		h->header_xxh3 = XXH3_64bits(h, offsetof(struct shmf_snap_header, header_xxh3));
		/* The trailer covers the header too. */
		uint64_t nch = (h->section_bytes + h->chunk_bytes - 1) / h->chunk_bytes;
		size_t table = SHMF_SNAP_PAYLOAD_OFF + h->section_bytes;
		XXH3_state_t *x = XXH3_createState();
		XXH3_64bits_reset(x);
		XXH3_64bits_update(x, h, sizeof(*h));
		XXH3_64bits_update(x, buf + sizeof(*h), h->nsections * sizeof(struct shmf_snap_section));
		XXH3_64bits_update(x, buf + table, nch * 8);
		uint64_t sum = XXH3_64bits_digest(x);
		XXH3_freeState(x);
		memcpy(buf + len - 16, &sum, 8);
		fd = open(v1, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		assert_int_equal(write(fd, buf, len), (ssize_t)len);
		close(fd);
		registry_cursor_set(&fx.reg, registry_find(&fx.reg, "restored"), 5, 5);
		int rc = fixture_replace(&fx, "restored", v1, REGISTRY_SWAP, err, sizeof(err));
		if (set) {
			assert_int_equal(rc, SHMF_E_FORMAT);
			assert_non_null(strstr(err, "bytes 184-203"));
		} else {
			assert_true(rc >= 0);
			cursor_of("restored", &ms, &seq);
			assert_int_equal(ms, 0);
			assert_int_equal(seq, 0);
		}
	}
	free(buf);
	dump_free(d);
	free(d);
	session_free(&s);
}

/* ---- SHMF.MERGE ------------------------------------------------------------ */

/* SHMF.MERGE name path on a connection of our own identity; the reply. */
static void merge_call(struct session *s, const char *name, const char *path, struct answer *a)
{
	const char *argv[] = { "SHMF.MERGE", name, path };
	call(s, 3, argv, NULL, a);
}

/* A filter of the same shape and seed as @p name, through a snapshot of it
 * taken before any key was added, restored under @p copy. */
static void same_seed_copy(const char *name, const char *copy)
{
	char path[512], err[SNAPSHOT_ERR_MAX];
	file_path("seed.snap", path, sizeof(path));
	assert_int_equal(registry_snapshot(&fx.reg, name, path, NULL, err, sizeof(err)), 0);
	assert_true(fixture_replace(&fx, copy, path, REGISTRY_RESTORE, err, sizeof(err)) >= 0);
}

/* Set the start of each live generation of windowed filter @p name, as the
 * daemon's rotation would have by the clock. */
static void set_created(const char *name, const uint64_t *created, unsigned n)
{
	struct shmf_slot *sl = &fx.reg.ctl.slots[registry_find(&fx.reg, name)];
	assert_int_equal(sl->nlive, n);
	shmf_slot_write_begin(sl);
	memcpy(sl->live_created, created, n * sizeof(created[0]));
	shmf_slot_write_end(sl);
}

/* Two copies of one filter that were cut off from each other: each has
 * keys the other lacks. Merging b's snapshot (written to @p path) into a
 * gives a both; merging again changes nothing: a union is idempotent. */
static void check_merge_unions_cut_off_copies(struct session *s, uint64_t n, char *path, size_t pathlen)
{
	char err[SNAPSHOT_ERR_MAX];
	struct answer a;
	fixture_bloom(&fx, "a", 8000000, 0.01);
	same_seed_copy("a", "b");
	add_keys("a", 70, n);
	add_keys("b", 71, n);
	assert_true(count_present("a", 71, n) < n / 10);
	file_path("b.snap", path, pathlen);
	assert_int_equal(registry_snapshot(&fx.reg, "b", path, NULL, err, sizeof(err)), 0);
	merge_call(s, "a", path, &a);
	expect(&a, "+OK\r\n", NULL);
	assert_int_equal(count_present("a", 70, n), n);
	assert_int_equal(count_present("a", 71, n), n);
	struct merge_report rep;
	struct snap_file sf;
	assert_int_equal(snapshot_open(&sf, path, err, sizeof(err)), 0);
	assert_int_equal(merge_snapshot(&fx.reg, "a", &sf, &rep, err, sizeof(err)), 0);
	snapshot_close(&sf);
	assert_int_equal(rep.bits, 0);
	assert_int_equal(rep.merged, 1);
}

/* Flip the last payload byte of snapshot @p path (a Bloom filter of
 * 8,000,000 at 1%): before the chunk table and the trailer. */
static void flip_last_payload_byte(const char *path)
{
	int fd = open(path, O_RDWR);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	off_t at = SHMF_SNAP_PAYLOAD_OFF + 9904128 - 8192 - 1;
	char byte;
	assert_int_equal(pread(fd, &byte, 1, at), 1);
	byte ^= 0x40;
	assert_int_equal(pwrite(fd, &byte, 1, at), 1);
	close(fd);
}

/* Merges refused, with filter a (holding keys of family 70, made by
 * check_merge_unions_cut_off_copies()) untouched, its answers for c's keys
 * unchanged: another seed, another shape, a cuckoo file or filter, a
 * damaged payload (in its last chunk: the chunks before it are whole). */
static void check_merge_refused_leaves_filter(struct session *s, uint64_t n)
{
	char other[512], err[SNAPSHOT_ERR_MAX];
	struct answer a;
	fixture_bloom(&fx, "c", 8000000, 0.01); /* another seed */
	fixture_bloom(&fx, "d", 100000, 0.001); /* another k and size */
	fixture_filter(&fx, "e", SHMF_TYPE_CUCKOO, 100000, 0.01);
	same_seed_copy("a", "f");
	add_keys("c", 72, n);
	add_keys("d", 72, n);
	add_keys("e", 72, 1000);
	add_keys("f", 72, n);
	uint64_t before = count_present("a", 72, n);
	assert_true(before < n / 10);
	const struct {
		const char *src, *into, *says;
	} refused[] = {
		{ "c", "a", "seed" },
		{ "d", "a", "k 6 here" },
		{ "e", "a", "union of cuckoo tables is not defined" },
		{ "a", "e", "union of cuckoo tables is not defined" },
		{ "f", "a", "checksum mismatch" },
		{ "c", "nosuch", "not found" },
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		file_path(refused[i].src, other, sizeof(other));
		assert_int_equal(registry_snapshot(&fx.reg, refused[i].src, other, NULL, err, sizeof(err)), 0);
		if (!strcmp(refused[i].src, "f"))
			flip_last_payload_byte(other);
		merge_call(s, refused[i].into, other, &a);
		expect(&a, "-ERR ", refused[i].says);
		assert_int_equal(count_present("a", 72, n), before);
		assert_int_equal(count_present("a", 70, n), n);
	}
}

/* A file the client may not read (the daemon could), a relative path: the
 * client an admin by its group (roles.h), whose files are still opened as
 * itself. Both merges of snapshot @p path into a refused. */
static void check_merge_of_unreadable_or_relative_path_refused(struct session *s, const char *path)
{
	struct answer a;
	static struct roles_config admins;
	roles_config_defaults(&admins);
	admins.admin_gid = 65534;
	view.roles = &admins;
	s->peer = (struct fscred){ .set = 1, .uid = 65534, .gid = 65534 };
	merge_call(s, "a", path, &a);
	expect(&a, "-ERR ", "Permission denied");
	merge_call(s, "a", "b.snap", &a);
	expect(&a, "-ERR ", "absolute");
	view.roles = NULL;
	s->peer = (struct fscred){ .set = 1, .uid = geteuid(), .gid = getegid() };
}

/* Windows: each section into the live generation of its window. w and w2
 * share seed and shape; w2's newest window is w's middle one, and w2's
 * oldest is older than any of w's. Another window shape is refused. */
static void check_merge_of_windows(struct session *s, uint64_t n)
{
	char path[512], err[SNAPSHOT_ERR_MAX];
	struct answer a;
	uint64_t t = (uint64_t)time(NULL) / 60 * 60;
	fixture_window(&fx, "w", SHMF_TYPE_BLOOM, 100000, 0.01, 60, 3);
	fixture_rotate(&fx, "w");
	fixture_rotate(&fx, "w");
	same_seed_copy("w", "w2");
	set_created("w", (const uint64_t[]){ t, t - 60, t - 120 }, 3);
	set_created("w2", (const uint64_t[]){ t - 60, t - 120, t - 180 }, 3);
	add_keys("w", 80, n);
	add_keys("w2", 81, n);
	file_path("w2.snap", path, sizeof(path));
	assert_int_equal(registry_snapshot(&fx.reg, "w2", path, NULL, err, sizeof(err)), 0);
	merge_call(s, "w", path, &a);
	expect(&a, "+OK merged 2 of 3 generations; 1 had no live generation", NULL);
	assert_int_equal(count_present("w", 80, n), n);
	assert_int_equal(count_present("w", 81, n), n);
	/* w2's newest went into w's middle generation: two rotations retire
	 * it and keep w's newest. */
	fixture_rotate(&fx, "w");
	fixture_rotate(&fx, "w");
	assert_int_equal(count_present("w", 80, n), n);
	assert_true(count_present("w", 81, n) < n / 10);
	fixture_window(&fx, "w3", SHMF_TYPE_BLOOM, 100000, 0.01, 120, 3);
	merge_call(s, "w3", path, &a);
	expect(&a, "-ERR ", "window seconds 120 here, 60 in the file");
}

static void test_merge(void **state)
{
	(void)state;
	char path[512];
	struct session s;
	session_init(&s, 10, SESSION_UNIX, &view);
	s.peer = (struct fscred){ .set = 1, .uid = geteuid(), .gid = getegid() };
	const uint64_t n = 20000;
	check_merge_unions_cut_off_copies(&s, n, path, sizeof(path));
	check_merge_refused_leaves_filter(&s, n);
	check_merge_of_unreadable_or_relative_path_refused(&s, path);
	check_merge_of_windows(&s, n);
	session_free(&s);
}

/* A dump of a replicated filter loaded on a node of the same fleet under
 * the same name (the seed is the fleet's for it) replicates there, journal
 * and all, from the dump's cursor; loaded under another name, or without a
 * fleet, it stays local (its seed would be a foreign shape). */
static void test_replicated_load(void **state)
{
	(void)state;
	char err[1024];
	struct session s;
	struct dump *d = calloc(1, sizeof(*d));
	session_init(&s, 11, SESSION_UNIX, &view);
	s.peer.uid = geteuid(); /* the daemon's own uid: an admin (roles.h) */
	fx.reg.fleet =
		(struct registry_fleet){ .enabled = 1, .secret = "s3cret", .journal_rings = 4, .journal_entries = 64 };
	struct filter_spec spec;
	spec_defaults(&spec, "fleet");
	spec.capacity = 100000;
	spec.mode = 0660;
	spec.replicate = 1;
	int slot = registry_create(&fx.reg, &spec, err, sizeof(err));
	assert_true(slot >= 0);
	add_keys("fleet", 90, 1000);
	registry_cursor_set(&fx.reg, slot, 1700000000999ull, 3);
	assert_int_equal(dump_all(&s, "BF.SCANDUMP", "fleet", d, err, sizeof(err)), 0);

	/* Under another name: local, with the dump's cursor all the same. */
	load_all(&s, "BF.LOADCHUNK", "other", d);
	int other = registry_find(&fx.reg, "other");
	assert_false(fx.reg.ctl.slots[other].flags & SHMF_SLOT_REPLICATED);
	char path[512];
	fixture_path(&fx, "other.journal", path, sizeof(path));
	assert_int_not_equal(access(path, F_OK), 0);

	/* Under its own name on a node that lost it: replicated again. */
	assert_int_equal(registry_drop(&fx.reg, "fleet", err, sizeof(err)), 0);
	load_all(&s, "BF.LOADCHUNK", "fleet", d);
	slot = registry_find(&fx.reg, "fleet");
	assert_true(fx.reg.ctl.slots[slot].flags & SHMF_SLOT_REPLICATED);
	fixture_path(&fx, "fleet.journal", path, sizeof(path));
	assert_int_equal(access(path, F_OK), 0);
	uint64_t ms, seq;
	registry_cursor_get(&fx.reg, slot, &ms, &seq);
	assert_int_equal(ms, 1700000000999ull);
	assert_int_equal(seq, 3);
	assert_int_equal(count_present("fleet", 90, 1000), 1000);

	/* Without a fleet: local. */
	assert_int_equal(registry_drop(&fx.reg, "fleet", err, sizeof(err)), 0);
	fx.reg.fleet.enabled = 0;
	load_all(&s, "BF.LOADCHUNK", "fleet", d);
	assert_false(fx.reg.ctl.slots[registry_find(&fx.reg, "fleet")].flags & SHMF_SLOT_REPLICATED);
	dump_free(d);
	free(d);
	session_free(&s);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		fixture_unit_test(test_roundtrip, fx),    fixture_unit_test(test_concurrent, fx),
		fixture_unit_test(test_cuckoo_churn, fx), fixture_unit_test(test_bad_chunks, fx),
		fixture_unit_test(test_abandoned, fx),    fixture_unit_test(test_cursor, fx),
		fixture_unit_test(test_merge, fx),        fixture_unit_test(test_replicated_load, fx),
		fixture_unit_test(test_bucket_sizes, fx),
	};
	static const char *const names[] = { "roundtrip", "concurrent", "cuckoo_churn",    "bad_chunks",  "abandoned",
					     "cursor",    "merge",      "replicated_load", "bucket_sizes" };
	return fixture_run(argc, argv, tests, names);
}
