/*
 * test-journal.c - the fleet journal of a replicated filter (journal.h):
 *
 *   create     - shmf_journal_create: exact mode, size and header; bad
 *                sizes, modes and an existing file refused;
 *   entries    - an add that changes the filter writes exactly one entry
 *                (hash, op, window), a repeated add none, for every call
 *                of both types; check-only, non-replicated and
 *                no-journal handles never open the journal;
 *   apply      - entries drained from one filter and applied to an empty
 *                one of the same shape and seed make it answer every
 *                check (and cuckoo count) as the first; nothing echoes;
 *   full       - a full ring: adds still succeed, dropped counts exactly
 *                the overflow; no free ring: adds succeed, counted missed;
 *                a closed handle's ring is freed once drained;
 *   window     - the window number is carried, applied to the generation
 *                of that window, and counted retired when it is gone;
 *   scribbled  - a journal whose header is damaged is refused (and the
 *                adds go on, counted missed); random bytes over its rings
 *                never crash a drain and are reported;
 *   threads    - threads sharing a handle: every add that set a bit is
 *                journalled once, drained while they add;
 *   processes  - forked processes add at once, each through its own ring;
 *                the drained entries are exactly the adds that set a bit;
 *   fork       - a child using its parent's handle claims a ring of its
 *                own, and closing the handle there leaves the parent's;
 *   dead_owner - a ring whose owner died with a position reserved and not
 *                written is drained past it (counted lost) and reclaimed;
 *                a live owner's unwritten position is waited for;
 *   killed     - a process killed -9 at random points while adding: every
 *                add that returned is drained, the ring is reclaimed.
 *
 * The registry cannot mark a filter replicated yet (the daemon's side of
 * replication comes later), so the tests create the journal as shmd will,
 * with shmf_journal_create(), and set the slot flag themselves
 * (set_replicated below).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libclient/bloom.h"
#include "tests/fixture.h"
#include "libclient/journal.h"
#include "libclient/rundir.h"

static struct fixture fx;

/* ---- Helpers ----------------------------------------------------------- */

/* Test-only: mark the filter in @p slot replicated, as shmd will once the
 * registry supports it: the flag written inside the slot's sequence. */
static void set_replicated(int slot)
{
	struct shmf_slot *s = &fx.reg.ctl.slots[slot];
	shmf_slot_write_begin(s);
	s->flags |= SHMF_SLOT_REPLICATED;
	shmf_slot_write_end(s);
}

static void make_journal(const char *name, unsigned nrings, unsigned entries)
{
	int r = shmf_journal_create(fx.reg.dir.fd, name, 0640, (gid_t)-1, nrings, entries);
	if (r < 0)
		fail_msg("journal of %s: %s", name, shmf_strerror(r));
}

static int replicated(const char *name, int type, uint64_t capacity, double fpr, unsigned nrings, unsigned entries)
{
	int slot = fixture_filter(&fx, name, type, capacity, fpr);
	make_journal(name, nrings, entries);
	set_replicated(slot);
	return slot;
}

static int windowed(const char *name, int type, uint64_t secs, uint32_t gens)
{
	char err[REGISTRY_ERR_MAX];
	struct filter_spec spec = { .type = type,
				    .capacity = 20000,
				    .fpr = type == SHMF_TYPE_BLOOM ? 1e-4 : 1e-3,
				    .mode = 0640,
				    .window_secs = secs,
				    .window_gens = gens };
	snprintf(spec.name, sizeof(spec.name), "%s", name);
	int slot = registry_create(&fx.reg, &spec, err, sizeof(err));
	if (slot < 0)
		fail_msg("create %s: %s", name, err);
	return slot;
}

static void slot_of(const char *name, struct shmf_slot *copy)
{
	assert_true(shmf_slot_find(&fx.reg.ctl, name, copy) >= 0);
}

static uint64_t seed_of(const char *name)
{
	struct shmf_slot copy;
	struct shmf_data_map dm = { .fd = -1 };
	slot_of(name, &copy);
	assert_int_equal(shmf_data_map_open(&fx.reg.dir, &copy, 0, &dm), 0);
	uint64_t seed = dm.hdr.seed;
	shmf_data_map_close(&dm);
	return seed;
}

/* Give filter @p name (no handle open on it yet) the seed @p seed, as the
 * daemon will derive one seed for a replicated filter on every host: the
 * seed field of its newest generation's header, rewritten. */
static void set_seed(const char *name, uint64_t seed)
{
	struct shmf_slot copy;
	char fname[128], path[512];
	slot_of(name, &copy);
	assert_int_equal(shmf_data_filename(name, atomic_load(&copy.generation), fname, sizeof(fname)), 0);
	fixture_path(&fx, fname, path, sizeof(path));
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &seed, sizeof(seed), offsetof(struct shmf_data_header, seed)), sizeof(seed));
	close(fd);
}

static struct shmf_journal_reader *reader(const char *name)
{
	struct shmf_journal_reader *r = NULL;
	int rc = shmf_journal_reader_open(&fx.reg.dir, name, &r);
	if (rc < 0)
		fail_msg("reader %s: %s", name, shmf_strerror(rc));
	return r;
}

/* What a drain handed out, in order, with each entry's ring. */
struct got {
	struct shmf_jentry *e;
	unsigned *ring;
	size_t n, cap;
};

static int collect(void *arg, unsigned ring, const struct shmf_jentry *e, size_t n)
{
	struct got *g = arg;
	if (g->n + n > g->cap) {
		size_t cap = (g->n + n) * 2;
		g->e = realloc(g->e, cap * sizeof(*g->e));
		g->ring = realloc(g->ring, cap * sizeof(*g->ring));
		if (g->e == NULL || g->ring == NULL)
			abort();
		g->cap = cap;
	}
	for (size_t i = 0; i < n; i++) {
		/* Every entry handed out has a valid operation. */
		if (e[i].op == 0 || e[i].op > SHMF_JOP_MAX)
			abort();
		g->e[g->n] = e[i];
		g->ring[g->n++] = ring;
	}
	return 0;
}

/* Drain until a pass hands out nothing; returns how many it handed out. */
static size_t drain_all(struct shmf_journal_reader *r, struct got *g, unsigned flags)
{
	size_t before = g->n;
	int n;
	while ((n = shmf_journal_drain(r, collect, g, flags)) > 0)
		;
	assert_true(n == 0);
	return g->n - before;
}

static void got_free(struct got *g)
{
	free(g->e);
	free(g->ring);
	memset(g, 0, sizeof(*g));
}

static uint64_t key_hash(unsigned family, uint64_t i, uint64_t seed)
{
	char key[32];
	size_t len = fixture_key(key, family, i);
	return shmf_hash(key, len, seed);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* The hashes of @p g, sorted. */
static uint64_t *sorted_hashes(const struct got *g)
{
	uint64_t *h = malloc((g->n + 1) * sizeof(*h));
	for (size_t i = 0; i < g->n; i++)
		h[i] = g->e[i].hash;
	qsort(h, g->n, sizeof(*h), cmp_u64);
	return h;
}

/* How many mappings of files whose names end in @p suffix this process has. */
static int maps_file(const char *suffix)
{
	char line[1024];
	int found = 0;
	FILE *m = fopen("/proc/self/maps", "r");
	assert_non_null(m);
	while (fgets(line, sizeof(line), m) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		size_t n = strlen(line), s = strlen(suffix);
		found += n >= s && strcmp(line + n - s, suffix) == 0;
	}
	fclose(m);
	return found;
}

static struct shmf_journal_writer_stats wstats(shmf_t *f)
{
	struct shmf_journal_writer_stats s;
	assert_int_equal(shmf_journal_handle_stats(f, &s), 0);
	return s;
}

static struct shmf_journal_stats rstats(const struct shmf_journal_reader *r, struct shmf_journal_ring_stats *rings,
					size_t n)
{
	struct shmf_journal_stats s;
	shmf_journal_stats(r, &s, rings, n);
	return s;
}

static int add_key(shmf_t *f, unsigned family, uint64_t i)
{
	char key[32];
	return shmf_add(f, key, fixture_key(key, family, i));
}

/* ---- create ------------------------------------------------------------ */

static void test_create(void **state)
{
	(void)state;
	int dfd = fx.reg.dir.fd;
	struct stat st;
	char path[512];
	mode_t old = umask(077);
	assert_int_equal(shmf_journal_create(dfd, "j", 0660, (gid_t)-1, 3, 64), 0);
	umask(old);
	fixture_path(&fx, "j.journal", path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0660); /* exactly, whatever the umask */
	assert_int_equal((uint64_t)st.st_size, shmf_journal_bytes(3, 64));
	assert_int_equal((uint64_t)st.st_size, 4096 + 3 * (192 + 64 * 16));
	struct shmf_journal_header h;
	int fd = open(path, O_RDONLY);
	assert_int_equal(pread(fd, &h, sizeof(h), 0), sizeof(h));
	close(fd);
	assert_int_equal(shmf_journal_header_check(&h, "j", (uint64_t)st.st_size), 0);
	assert_int_equal(h.nrings, 3);
	assert_int_equal(h.ring_entries, 64);
	assert_string_equal(h.name, "j");
	assert_true(h.created_epoch + 5 >= (uint64_t)time(NULL));
	/* Another filter's name, or another size, is refused. */
	assert_int_equal(shmf_journal_header_check(&h, "k", (uint64_t)st.st_size), SHMF_E_FORMAT);
	assert_int_equal(shmf_journal_header_check(&h, "j", (uint64_t)st.st_size + 64), SHMF_E_FORMAT);

	assert_int_equal(shmf_journal_create(dfd, "j", 0660, (gid_t)-1, 3, 64), SHMF_E_EXISTS);
	assert_int_equal(shmf_journal_create(dfd, "x", 0660, (gid_t)-1, 0, 64), SHMF_E_INVAL);
	assert_int_equal(shmf_journal_create(dfd, "x", 0660, (gid_t)-1, SHMF_JOURNAL_RINGS_MAX + 1, 64), SHMF_E_INVAL);
	assert_int_equal(shmf_journal_create(dfd, "x", 0660, (gid_t)-1, 1, 100), SHMF_E_INVAL);
	assert_int_equal(shmf_journal_create(dfd, "x", 0660, (gid_t)-1, 1, 8), SHMF_E_INVAL);
	assert_int_equal(shmf_journal_create(dfd, "x", 0660, (gid_t)-1, 1, SHMF_JOURNAL_ENTRIES_MAX * 2), SHMF_E_INVAL);
	assert_int_equal(shmf_journal_create(dfd, "x", 0662, (gid_t)-1, 1, 64), SHMF_E_INVAL);
	assert_int_equal(shmf_journal_create(dfd, "x", 04660, (gid_t)-1, 1, 64), SHMF_E_INVAL);
	assert_int_equal(shmf_journal_create(dfd, "../x", 0660, (gid_t)-1, 1, 64), SHMF_E_NAME);
	fixture_path(&fx, "x.journal", path, sizeof(path));
	assert_int_equal(stat(path, &st), -1); /* nothing left behind */
	/* A symbolic link in its place is not followed (its target in the
	 * fixture's own directory: a fixed path could exist on the host). */
	char target[512];
	fixture_path(&fx, "link-target", target, sizeof(target));
	assert_int_equal(symlinkat(target, dfd, "s.journal"), 0);
	assert_int_equal(shmf_journal_create(dfd, "s", 0660, (gid_t)-1, 1, 64), SHMF_E_EXISTS);
	assert_int_equal(access(target, F_OK), -1);
}

/* ---- entries ----------------------------------------------------------- */

static void test_entries_bloom(void)
{
	char key[32];
	replicated("r", SHMF_TYPE_BLOOM, 10000, 1e-6, 4, 1024);
	uint64_t seed = seed_of("r");
	struct got g = { 0 };

	shmf_t *f = fixture_open("r", SHMF_RDWR);
	/* Lazily: nothing is mapped or claimed before the first journalled add. */
	assert_int_equal(maps_file("/r.journal"), 0);
	assert_int_equal(shmf_check(f, "k1", 2), 0);
	assert_int_equal(add_key(f, 1, 0), 1);
	assert_int_equal(maps_file("/r.journal"), 1);
	struct shmf_journal_reader *jr = reader("r");
	assert_int_equal(drain_all(jr, &g, 0), 1);
	assert_int_equal(g.e[0].hash, key_hash(1, 0, seed));
	assert_int_equal(g.e[0].op, SHMF_JOP_ADD);
	assert_int_equal(g.e[0].window, 0);
	struct shmf_journal_writer_stats ws = wstats(f);
	assert_int_equal(ws.journals, 1);
	assert_int_equal(g.ring[0], (unsigned)ws.ring);
	assert_int_equal(ws.missed, 0);
	/* The same key again sets no bit: no entry. Checks write none. */
	assert_int_equal(add_key(f, 1, 0), 0);
	assert_int_equal(shmf_check(f, key, fixture_key(key, 1, 0)), 1);
	assert_int_equal(shmf_add_unique(f, key, fixture_key(key, 1, 0)), 0);
	assert_int_equal(drain_all(jr, &g, 0), 0);
	/* add_unique of a new key: one entry. */
	assert_int_equal(shmf_add_unique(f, key, fixture_key(key, 1, 1)), 1);
	assert_int_equal(drain_all(jr, &g, 0), 1);
	assert_int_equal(g.e[1].hash, key_hash(1, 1, seed));

	/* add_many: one entry per key that set a bit (repeats and present keys none). */
	enum { N = 300 };
	char keys[N][32];
	shmf_key_t ks[N];
	uint8_t out[N];
	for (unsigned i = 0; i < N; i++)
		ks[i] = (shmf_key_t){ keys[i], fixture_key(keys[i], 2, i % 200) }; /* 100 repeats */
	assert_int_equal(add_key(f, 2, 7), 1);                                     /* present before the batch */
	size_t before = g.n;
	assert_int_equal(drain_all(jr, &g, 0), 1);
	int fresh = shmf_add_many(f, ks, N, out);
	assert_int_equal(fresh, 199);
	assert_int_equal(drain_all(jr, &g, 0), 199);
	for (unsigned i = 0, j = (unsigned)before + 1; i < N; i++)
		if (out[i])
			assert_int_equal(g.e[j++].hash, key_hash(2, i % 200, seed));
	/* Without out[], the same. */
	for (unsigned i = 0; i < N; i++)
		ks[i] = (shmf_key_t){ keys[i], fixture_key(keys[i], 3, i) };
	assert_int_equal(shmf_add_many(f, ks, N, NULL), N);
	assert_int_equal(drain_all(jr, &g, 0), N);

	/* A check-only handle on the same filter journals nothing and opens no
	 * journal; a no-journal handle (shmd's, applying) neither. */
	shmf_t *ro = fixture_open("r", SHMF_RDONLY);
	assert_int_equal(shmf_check(ro, key, fixture_key(key, 1, 0)), 1);
	assert_int_equal(wstats(ro).journals, 0);
	shmf_t *nj = NULL;
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, "r", SHMF_RDWR | SHMF_OPEN_NOJOURNAL, &nj), SHMF_E_INVAL);
	assert_int_equal(shmf_open_internal(FIXTURE_INSTANCE, "r", SHMF_RDWR | SHMF_OPEN_NOJOURNAL, &nj), 0);
	assert_int_equal(add_key(nj, 4, 0), 1);
	assert_int_equal(wstats(nj).journals, 0);
	assert_int_equal(drain_all(jr, &g, 0), 0);
	assert_int_equal(maps_file("/r.journal"), 2); /* f's and the reader's: no more */
	shmf_close(ro);
	shmf_close(nj);
	shmf_close(f);
	/* Closed with its ring drained: the ring is free at once. */
	assert_int_equal(rstats(jr, NULL, 0).claimed, 0);
	got_free(&g);
	shmf_journal_reader_close(jr);

	/* A filter that does not replicate never opens a journal, even one
	 * that exists under its name. */
	fixture_bloom(&fx, "plain", 10000, 1e-6);
	make_journal("plain", 2, 64);
	jr = reader("plain");
	f = fixture_open("plain", SHMF_RDWR);
	for (unsigned i = 0; i < 100; i++)
		assert_int_equal(add_key(f, 5, i), 1);
	assert_int_equal(maps_file("/plain.journal"), 1); /* the reader's alone */
	assert_int_equal(wstats(f).journals, 0);
	assert_int_equal(drain_all(jr, &g, 0), 0);
	assert_int_equal(rstats(jr, NULL, 0).claimed, 0);
	shmf_close(f);
	shmf_journal_reader_close(jr);
	got_free(&g);
}

static void test_entries_cuckoo(void)
{
	char key[48];
	replicated("c", SHMF_TYPE_CUCKOO, 10000, 1e-3, 2, 256);
	uint64_t seed = seed_of("c");
	struct shmf_journal_reader *jr = reader("c");
	struct got g = { 0 };
	shmf_t *f = fixture_open("c", SHMF_RDWR);
	size_t len = fixture_key(key, 1, 0);

	assert_int_equal(shmf_add(f, key, len), 1);           /* ADD */
	assert_int_equal(shmf_add(f, key, len), 1);           /* ADD: a second copy */
	assert_int_equal(shmf_add_capped(f, key, len, 3), 2); /* CAPPED: stored the third */
	assert_int_equal(shmf_add_capped(f, key, len, 3), 3); /* at the cap: nothing */
	assert_int_equal(shmf_del(f, key, len), 1);           /* DEL */
	size_t len2 = fixture_key(key + 16, 1, 1);
	assert_int_equal(shmf_del(f, key + 16, len2), 0);        /* nothing to delete: nothing */
	assert_int_equal(shmf_add_unique(f, key + 16, len2), 1); /* CAPPED (cap 1) */
	assert_int_equal(shmf_add_unique(f, key + 16, len2), 0); /* present: nothing */
	assert_int_equal(shmf_count(f, key, len), 2);
	assert_int_equal(drain_all(jr, &g, 0), 5);
	static const uint32_t ops[] = { SHMF_JOP_ADD, SHMF_JOP_ADD, SHMF_JOP_CAPPED, SHMF_JOP_DEL, SHMF_JOP_CAPPED };
	for (unsigned i = 0; i < 5; i++) {
		assert_int_equal(g.e[i].op, ops[i]);
		assert_int_equal(g.e[i].hash, shmf_hash(i < 4 ? key : key + 16, len, seed));
		assert_int_equal(g.e[i].window, 0);
	}
	/* add_many: every key stores a copy, each one entry. */
	char keys[50][32];
	shmf_key_t ks[50];
	for (unsigned i = 0; i < 50; i++)
		ks[i] = (shmf_key_t){ keys[i], fixture_key(keys[i], 2, i) };
	assert_int_equal(shmf_add_many(f, ks, 50, NULL), 50);
	assert_int_equal(drain_all(jr, &g, 0), 50);
	for (unsigned i = 0; i < 50; i++) {
		assert_int_equal(g.e[5 + i].op, SHMF_JOP_ADD);
		assert_int_equal(g.e[5 + i].hash, key_hash(2, i, seed));
	}
	shmf_close(f);
	shmf_journal_reader_close(jr);
	got_free(&g);
}

static void test_entries(void **state)
{
	(void)state;
	test_entries_bloom();
	test_entries_cuckoo();
}

/* ---- apply ------------------------------------------------------------- */

static void test_apply_bloom(void)
{
	replicated("a", SHMF_TYPE_BLOOM, 20000, 1e-3, 2, 1u << 16);
	/* The copy replicates too: what is applied to it must not come back. */
	replicated("b", SHMF_TYPE_BLOOM, 20000, 1e-3, 2, 64);
	set_seed("b", seed_of("a"));
	shmf_t *a = fixture_open("a", SHMF_RDWR), *b = NULL;
	assert_int_equal(shmf_open_internal(FIXTURE_INSTANCE, "b", SHMF_RDWR | SHMF_OPEN_NOJOURNAL, &b), 0);
	uint64_t fresh = 0;
	for (uint64_t i = 0; i < 15000; i++)
		fresh += (uint64_t)add_key(a, 1, i % 12000); /* 3000 repeats */
	struct shmf_journal_reader *jr = reader("a"), *jb = reader("b");
	struct got g = { 0 };
	assert_int_equal(drain_all(jr, &g, 0), fresh);
	struct shmf_japply_counts c = { 0 };
	assert_int_equal(shmf_journal_apply_many(b, g.e, g.n, &c), 0);
	/* Same bits set in the same order: each entry changes b as it changed a. */
	assert_int_equal(c.changed, fresh);
	assert_int_equal(c.unchanged + c.retired + c.failed, 0);
	char key[32];
	for (uint64_t i = 0; i < 50000; i++) {
		size_t len = fixture_key(key, 1, i);
		assert_int_equal(shmf_check(a, key, len), shmf_check(b, key, len));
	}
	/* Bit for bit: the payloads are equal. */
	struct shmf_slot sa, sb;
	struct shmf_data_map ma = { .fd = -1 }, mb = { .fd = -1 };
	slot_of("a", &sa);
	slot_of("b", &sb);
	assert_int_equal(shmf_data_map_open(&fx.reg.dir, &sa, 0, &ma), 0);
	assert_int_equal(shmf_data_map_open(&fx.reg.dir, &sb, 0, &mb), 0);
	assert_int_equal(memcmp(ma.blocks, mb.blocks, ma.hdr.nblocks * SHMF_BLOCK_BYTES), 0);
	assert_int_equal(shmf_data_items(&mb), fresh);
	shmf_data_map_close(&ma);
	shmf_data_map_close(&mb);
	/* Applied twice: nothing changes (Bloom adds are idempotent). */
	memset(&c, 0, sizeof(c));
	assert_int_equal(shmf_journal_apply_many(b, g.e, g.n, &c), 0);
	assert_int_equal(c.unchanged, fresh);
	/* No echo: b's journal holds nothing. */
	struct got gb = { 0 };
	assert_int_equal(drain_all(jb, &gb, 0), 0);
	/* Bad entries: refused one by one. */
	struct shmf_jentry bad[] = {
		{ 1, 0, 0 }, { 1, SHMF_JOP_MAX + 1, 0 }, { 1, SHMF_JOP_DEL, 0 }, { 1, SHMF_JOP_CAPPED, 0 }
	};
	assert_int_equal(shmf_journal_apply(b, &bad[0]), SHMF_E_INVAL);
	assert_int_equal(shmf_journal_apply(b, &bad[1]), SHMF_E_INVAL);
	assert_int_equal(shmf_journal_apply(b, &bad[2]), SHMF_E_TYPE);
	assert_int_equal(shmf_journal_apply(b, &bad[3]), SHMF_E_TYPE);
	shmf_t *ro = fixture_open("b", SHMF_RDONLY);
	assert_int_equal(shmf_journal_apply(ro, &g.e[0]), SHMF_E_READONLY);
	shmf_close(ro);
	shmf_close(a);
	shmf_close(b);
	shmf_journal_reader_close(jr);
	shmf_journal_reader_close(jb);
	got_free(&g);
	got_free(&gb);
}

static void test_apply_cuckoo(void)
{
	char key[32];
	replicated("ca", SHMF_TYPE_CUCKOO, 40000, 1e-3, 2, 1u << 16);
	fixture_filter(&fx, "cb", SHMF_TYPE_CUCKOO, 40000, 1e-3);
	set_seed("cb", seed_of("ca"));
	shmf_t *a = fixture_open("ca", SHMF_RDWR), *b = NULL;
	assert_int_equal(shmf_open_internal(FIXTURE_INSTANCE, "cb", SHMF_RDWR | SHMF_OPEN_NOJOURNAL, &b), 0);
	/* Adds, second copies, capped adds, deletes. */
	for (uint64_t i = 0; i < 12000; i++)
		assert_int_equal(add_key(a, 1, i), 1);
	for (uint64_t i = 0; i < 3000; i++)
		assert_int_equal(add_key(a, 1, i), 1);
	uint64_t capped = 0;
	for (uint64_t i = 0; i < 4000; i++) {
		size_t len = fixture_key(key, 1, i);
		int r = shmf_add_capped(a, key, len, 3);
		assert_true(r >= 1);
		capped += r < 3; /* stored (another key's fingerprint may fill the cap) */
	}
	for (uint64_t i = 2000; i < 6000; i++) {
		size_t len = fixture_key(key, 1, i);
		assert_int_equal(shmf_del(a, key, len), 1);
	}
	struct shmf_journal_reader *jr = reader("ca");
	struct got g = { 0 };
	size_t n = drain_all(jr, &g, 0);
	assert_int_equal(n, 12000 + 3000 + capped + 4000);
	assert_true(capped > 3900);
	struct shmf_japply_counts c = { 0 };
	assert_int_equal(shmf_journal_apply_many(b, g.e, g.n, &c), 0);
	assert_int_equal(c.changed, n);
	for (uint64_t i = 0; i < 30000; i++) {
		size_t len = fixture_key(key, 1, i);
		assert_int_equal(shmf_count(a, key, len), shmf_count(b, key, len));
		assert_int_equal(shmf_check(a, key, len), shmf_check(b, key, len));
	}
	shmf_info_t ia, ib;
	assert_int_equal(shmf_info(a, &ia), 0);
	assert_int_equal(shmf_info(b, &ib), 0);
	assert_int_equal(ia.items, ib.items);
	assert_int_equal(ia.deletes, ib.deletes);
	shmf_close(a);
	shmf_close(b);
	shmf_journal_reader_close(jr);
	got_free(&g);
}

static void test_apply(void **state)
{
	(void)state;
	test_apply_bloom();
	test_apply_cuckoo();
}

/* ---- full -------------------------------------------------------------- */

static void test_full(void **state)
{
	(void)state;
	replicated("f", SHMF_TYPE_BLOOM, 10000, 1e-6, 1, 16);
	uint64_t seed = seed_of("f");
	struct shmf_journal_reader *jr = reader("f");
	struct got g = { 0 };
	shmf_t *f = fixture_open("f", SHMF_RDWR);
	for (uint64_t i = 0; i < 100; i++)
		assert_int_equal(add_key(f, 1, i), 1); /* never fails for the journal */
	struct shmf_journal_ring_stats rs[1];
	struct shmf_journal_stats s = rstats(jr, rs, 1);
	assert_int_equal(s.depth, 16);
	assert_int_equal(s.dropped, 84);
	assert_int_equal(rs[0].dropped, 84);
	assert_int_equal(rs[0].owner >> 32, (uint64_t)getpid());
	assert_int_equal(wstats(f).dropped, 84);
	assert_int_equal(drain_all(jr, &g, 0), 16);
	for (unsigned i = 0; i < 16; i++)
		assert_int_equal(g.e[i].hash, key_hash(1, i, seed)); /* the first 16, in order */
	/* Room again: the next adds are journalled, dropped stays. */
	for (uint64_t i = 100; i < 110; i++)
		assert_int_equal(add_key(f, 1, i), 1);
	assert_int_equal(drain_all(jr, &g, 0), 10);
	assert_int_equal(rstats(jr, NULL, 0).dropped, 84);
	assert_int_equal(rstats(jr, NULL, 0).drained, 26);

	/* The only ring is taken: a second handle's adds succeed, counted missed. */
	shmf_t *f2 = fixture_open("f", SHMF_RDWR);
	for (uint64_t i = 0; i < 500; i++)
		assert_int_equal(add_key(f2, 2, i), 1);
	struct shmf_journal_writer_stats w2 = wstats(f2);
	assert_int_equal(w2.ring, -1);
	assert_int_equal(w2.missed, 500);
	assert_int_equal(w2.error, SHMF_E_FULL);
	assert_int_equal(drain_all(jr, &g, 0), 0);
	/* Reported to shmd: at the tries, and the rest at close. */
	assert_true(rstats(jr, NULL, 0).missed > 0);
	shmf_close(f2);
	assert_int_equal(rstats(jr, NULL, 0).missed, 500);

	/* Closed with entries waiting: the ring stays the closed handle's
	 * until drained, then it is free, and another handle can claim it. */
	for (uint64_t i = 200; i < 205; i++)
		assert_int_equal(add_key(f, 1, i), 1);
	shmf_close(f);
	s = rstats(jr, rs, 1);
	assert_int_equal(s.claimed, 1);
	assert_true(rs[0].owner & SHMF_JOURNAL_OWNER_CLOSED);
	assert_int_equal(drain_all(jr, &g, 0), 5);
	s = rstats(jr, rs, 1);
	assert_int_equal(s.claimed, 0);
	assert_int_equal(s.reclaimed, 1);
	f = fixture_open("f", SHMF_RDWR);
	assert_int_equal(add_key(f, 3, 0), 1);
	assert_int_equal(wstats(f).ring, 0);
	assert_int_equal(drain_all(jr, &g, 0), 1);
	shmf_close(f);
	shmf_journal_reader_close(jr);
	got_free(&g);
}

/* ---- window ------------------------------------------------------------ */

static void rotate(const char *name)
{
	char err[REGISTRY_ERR_MAX];
	if (registry_rotate(&fx.reg, name, err, sizeof(err)) < 0)
		fail_msg("rotate %s: %s", name, err);
}

/* Is the key of hash @p h in generation @p gen of filter @p name (Bloom)? */
static int in_generation(const char *name, uint64_t gen, uint64_t h)
{
	struct shmf_slot copy;
	struct shmf_data_map dm = { .fd = -1 };
	slot_of(name, &copy);
	assert_int_equal(shmf_data_map_open_gen(&fx.reg.dir, &copy, gen, 0, &dm), 0);
	const uint64_t *block = dm.blocks + shmf_block_index(h, dm.hdr.nblocks) * SHMF_BLOCK_WORDS;
	int r = shmf_bloom_block_check_key(block, h, dm.hdr.k);
	shmf_data_map_close(&dm);
	return r;
}

/* The generation of @p s an entry of window @p w belongs in, as the apply
 * rule says: the newest whose window began at or before w; 0 if none. */
static uint64_t generation_for(const struct shmf_slot *s, uint32_t w)
{
	for (unsigned i = 0; i < s->nlive; i++)
		if (s->live_created[i] / s->window_secs <= w)
			return s->live[i];
	return 0;
}

static void wait_past(uint64_t t)
{
	while ((uint64_t)time(NULL) <= t)
		usleep(20000);
}

/*
 * Bloom windows of 1 s: wa's journal entries carry the window of the
 * generation each add went to (a key present in an older live generation
 * too: was-new 0, yet it set bits in the newest, which the other hosts'
 * newest need as well). Applied to wb (same seed): each to the generation
 * current in its window; entries from a host whose clock is ahead go to
 * the newest, entries of a window before every live generation are
 * retired.
 */
static void check_bloom_entries_go_to_their_window(void)
{
	/* b first, so its windows begin no later than a's. */
	windowed("wb", SHMF_TYPE_BLOOM, 1, 3);
	int sa = windowed("wa", SHMF_TYPE_BLOOM, 1, 3);
	make_journal("wa", 2, 256);
	set_replicated(sa);
	set_seed("wb", seed_of("wa"));
	uint64_t seed = seed_of("wa");
	shmf_t *a = fixture_open("wa", SHMF_RDWR), *b = NULL;
	assert_int_equal(shmf_open_internal(FIXTURE_INSTANCE, "wb", SHMF_RDWR | SHMF_OPEN_NOJOURNAL, &b), 0);
	struct shmf_journal_reader *jr = reader("wa");
	struct got g = { 0 };
	struct shmf_slot s;

	slot_of("wa", &s);
	uint32_t w0 = (uint32_t)s.live_created[0];
	assert_int_equal(add_key(a, 1, 0), 1);
	wait_past(w0);
	rotate("wa");
	rotate("wb");
	slot_of("wa", &s);
	uint32_t w1 = (uint32_t)s.live_created[0];
	assert_true(w1 > w0);
	assert_int_equal(add_key(a, 1, 1), 1);
	assert_int_equal(add_key(a, 1, 0), 0);
	assert_int_equal(drain_all(jr, &g, 0), 3);
	assert_int_equal(g.e[0].window, w0);
	assert_int_equal(g.e[1].window, w1);
	assert_int_equal(g.e[2].window, w1);
	assert_int_equal(g.e[2].hash, key_hash(1, 0, seed));

	struct shmf_slot sb;
	slot_of("wb", &sb);
	assert_int_equal(sb.nlive, 2);
	for (unsigned i = 0; i < 3; i++) {
		uint64_t gen = generation_for(&sb, g.e[i].window);
		assert_true(gen != 0);
		int r = shmf_journal_apply(b, &g.e[i]);
		/* Key 0 twice in one generation only if b rotated a second
		 * later than a did (a second boundary between the two calls). */
		assert_true(r == 1 || (i == 2 && r == 0 && generation_for(&sb, w0) == gen));
		assert_int_equal(in_generation("wb", gen, g.e[i].hash), 1);
	}
	/* Key 1 only in the generation of its window. */
	uint64_t h1 = key_hash(1, 1, seed), other = generation_for(&sb, w1) == sb.live[0] ? sb.live[1] : sb.live[0];
	assert_int_equal(in_generation("wb", other, h1), 0);
	struct shmf_jentry ahead = { key_hash(2, 0, seed), SHMF_JOP_ADD, UINT32_MAX };
	struct shmf_jentry old = { key_hash(2, 1, seed), SHMF_JOP_ADD, 1 };
	assert_int_equal(shmf_journal_apply(b, &ahead), 1);
	assert_int_equal(in_generation("wb", sb.live[0], ahead.hash), 1);
	assert_int_equal(shmf_journal_apply(b, &old), SHMF_JAPPLY_RETIRED);
	char key[32];
	assert_int_equal(shmf_check(b, key, fixture_key(key, 2, 1)), 0);
	/* Once every generation of b began after w1, both windows are retired. */
	wait_past(w1);
	rotate("wb");
	rotate("wb");
	rotate("wb");
	struct shmf_japply_counts c = { 0 };
	assert_int_equal(shmf_journal_apply_many(b, g.e, g.n, &c), 0);
	assert_int_equal(c.retired, 3);
	assert_int_equal(c.changed + c.unchanged + c.failed, 0);
	assert_int_equal(shmf_check(b, key, fixture_key(key, 1, 1)), 0);

	shmf_close(a);
	shmf_close(b);
	shmf_journal_reader_close(jr);
	got_free(&g);
}

/* Cuckoo windows of 1 s: a delete from wc carries the window of the
 * generation it removed from, and is applied there in wd. */
static void check_cuckoo_delete_goes_to_its_window(void)
{
	struct shmf_slot s;
	char key[32];
	windowed("wd", SHMF_TYPE_CUCKOO, 1, 3);
	int sc = windowed("wc", SHMF_TYPE_CUCKOO, 1, 3);
	make_journal("wc", 1, 64);
	set_replicated(sc);
	set_seed("wd", seed_of("wc"));
	shmf_t *wc = fixture_open("wc", SHMF_RDWR), *wd = NULL;
	assert_int_equal(shmf_open_internal(FIXTURE_INSTANCE, "wd", SHMF_RDWR | SHMF_OPEN_NOJOURNAL, &wd), 0);
	struct shmf_journal_reader *jc = reader("wc");
	slot_of("wc", &s);
	uint32_t c0 = (uint32_t)s.live_created[0];
	size_t len = fixture_key(key, 3, 0);
	assert_int_equal(shmf_add(wc, key, len), 1);
	wait_past(c0);
	rotate("wc");
	rotate("wd");
	assert_int_equal(shmf_del(wc, key, len), 1); /* from the older generation */
	struct got gc = { 0 };
	assert_int_equal(drain_all(jc, &gc, 0), 2);
	assert_int_equal(gc.e[0].op, SHMF_JOP_ADD);
	assert_int_equal(gc.e[1].op, SHMF_JOP_DEL);
	assert_int_equal(gc.e[0].window, c0);
	assert_int_equal(gc.e[1].window, c0);
	assert_int_equal(shmf_journal_apply(wd, &gc.e[0]), 1);
	assert_int_equal(shmf_count(wd, key, len), 1);
	assert_int_equal(shmf_journal_apply(wd, &gc.e[1]), 1);
	assert_int_equal(shmf_count(wd, key, len), 0);
	shmf_close(wc);
	shmf_close(wd);
	shmf_journal_reader_close(jc);
	got_free(&gc);
}

static void test_window(void **state)
{
	(void)state;
	check_bloom_entries_go_to_their_window();
	check_cuckoo_delete_goes_to_its_window();
}

/* ---- scribbled --------------------------------------------------------- */

static void *map_file(const char *file, size_t *len)
{
	char path[512];
	struct stat st;
	fixture_path(&fx, file, path, sizeof(path));
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	close(fd);
	*len = (size_t)st.st_size;
	return p;
}

/* One header field set to a wrong value in turn: the reader refuses the
 * journal and an adder journals nothing, its adds going on. */
static void header_field(const char *what, size_t off, size_t width, uint64_t value, int want)
{
	size_t len;
	char *p = map_file("h.journal", &len);
	uint64_t saved = 0;
	memcpy(&saved, p + off, width);
	memcpy(p + off, &value, width);
	struct shmf_journal_reader *jr = NULL;
	int r = shmf_journal_reader_open(&fx.reg.dir, "h", &jr);
	if (r != want)
		fail_msg("%s = %#llx: reader got %s, wanted %s", what, (unsigned long long)value, shmf_strerror(r),
			 shmf_strerror(want));
	shmf_t *f = fixture_open("h", SHMF_RDWR);
	static uint64_t i;
	assert_int_equal(add_key(f, 9, i++), 1);
	struct shmf_journal_writer_stats ws = wstats(f);
	assert_int_equal(ws.ring, -1);
	assert_int_equal(ws.missed, 1);
	assert_int_equal(ws.error, want);
	shmf_close(f);
	memcpy(p + off, &saved, width);
	munmap(p, len);
}

/* Journal h's header fields set to a wrong value in turn (header_field()),
 * each refused with its error. */
static void check_bad_header_fields_refused(void)
{
#define H(field)                                                     \
#field, offsetof(struct shmf_journal_header, field),         \
		sizeof(((struct shmf_journal_header *)0)->field) < 8 \
		? sizeof(((struct shmf_journal_header *)0)->field) : 8
	header_field(H(magic), 0x4e, SHMF_E_FORMAT);
	header_field(H(version), SHMF_FORMAT_VERSION + 1, SHMF_E_VERSION);
	header_field(H(layout), 1, SHMF_E_LAYOUT);
	header_field(H(header_size), 64, SHMF_E_FORMAT);
	header_field(H(nrings), 0, SHMF_E_FORMAT);
	header_field(H(nrings), 3, SHMF_E_FORMAT); /* past the file */
	header_field(H(nrings), 1, SHMF_E_FORMAT); /* short of the file */
	header_field(H(nrings), UINT32_MAX, SHMF_E_FORMAT);
	header_field(H(ring_entries), 128, SHMF_E_FORMAT);
	header_field(H(ring_entries), 63, SHMF_E_FORMAT);
	header_field(H(ring_entries), 0, SHMF_E_FORMAT);
	header_field(H(entry_size), 8, SHMF_E_FORMAT);
	header_field(H(ring_header_size), 64, SHMF_E_FORMAT);
	header_field(H(rings_offset), 0, SHMF_E_FORMAT);
	header_field(H(ring_bytes), 1, SHMF_E_FORMAT);
	header_field(H(name), 'x', SHMF_E_FORMAT);
#undef H
}

/* Journal h (2 rings of 64) with an unterminated name, other-writable or
 * of the wrong size, and journal l a symbolic link to it: each refused,
 * as damaged (SHMF_E_FORMAT) or untrusted (SHMF_E_OWNER). */
static void check_bad_journal_file_refused(void)
{
	size_t len;
	char *p = map_file("h.journal", &len);
	memset(p + offsetof(struct shmf_journal_header, name), 'h', SHMF_NAME_MAX + 1);
	struct shmf_journal_reader *jr = NULL;
	assert_int_equal(shmf_journal_reader_open(&fx.reg.dir, "h", &jr), SHMF_E_FORMAT);
	memset(p + offsetof(struct shmf_journal_header, name), 0, SHMF_NAME_MAX + 1);
	p[offsetof(struct shmf_journal_header, name)] = 'h';
	munmap(p, len);
	char path[512];
	fixture_path(&fx, "h.journal", path, sizeof(path));
	assert_int_equal(chmod(path, 0642), 0);
	assert_int_equal(shmf_journal_reader_open(&fx.reg.dir, "h", &jr), SHMF_E_OWNER);
	assert_int_equal(chmod(path, 0640), 0);
	assert_int_equal(truncate(path, (off_t)shmf_journal_bytes(2, 64) + 4096), 0);
	assert_int_equal(shmf_journal_reader_open(&fx.reg.dir, "h", &jr), SHMF_E_FORMAT);
	assert_int_equal(truncate(path, (off_t)shmf_journal_bytes(2, 64)), 0);
	replicated("l", SHMF_TYPE_BLOOM, 1000, 1e-3, 1, 64);
	char lpath[512];
	fixture_path(&fx, "l.journal", lpath, sizeof(lpath));
	assert_int_equal(unlink(lpath), 0);
	assert_int_equal(symlink(path, lpath), 0);
	assert_int_equal(shmf_journal_reader_open(&fx.reg.dir, "l", &jr), SHMF_E_OWNER);
}

/* Scribble on the rings of journal @p m (@p len bytes, 4 rings of 64),
 * round @p round of a sequence whose state *@p x holds: a few random bytes
 * (never the header page, whose private copies are all anyone uses after
 * opening), and every 7th round one of the fields that matter most set to
 * an extreme. */
static void scribble_rings(char *m, size_t len, unsigned round, uint64_t *x)
{
	for (int j = 0; j < 4; j++) {
		*x = shmf_mix64(*x + round);
		size_t off = SHMF_JOURNAL_HDR_BYTES + (size_t)(*x % (len - SHMF_JOURNAL_HDR_BYTES));
		size_t n = 1 + (size_t)((*x >> 40) % 16);
		if (off + n > len)
			n = len - off;
		for (size_t k = 0; k < n; k++)
			m[off + k] = (char)(shmf_mix64(*x + k) >> 56);
	}
	if (round % 7 == 0) {
		struct shmf_journal_ring *r = (struct shmf_journal_ring *)(m + SHMF_JOURNAL_HDR_BYTES +
									   (*x % 4) * shmf_journal_ring_bytes(64));
		static const uint64_t v[] = { 0, 1, 63, 64, 65, UINT64_MAX, UINT64_MAX - 63, UINT64_C(1) << 63 };
		uint64_t val = v[(*x >> 8) % 8];
		switch ((*x >> 16) % 4) {
		case 0: atomic_store(&r->head, val); break;
		case 1: atomic_store(&r->tail, val); break;
		case 2: atomic_store(&r->owner, val); break;
		default: atomic_store(&r->head, atomic_load(&r->tail) + val); break;
		}
	}
}

/* Random bytes over rings and entries while adders add and a reader
 * drains: the drain stays within the journal and says what it found. */
static void check_drain_survives_scribbles(void)
{
	size_t len;
	replicated("s", SHMF_TYPE_BLOOM, 100000, 1e-3, 4, 64);
	struct shmf_journal_reader *jr = reader("s");
	shmf_t *f[3];
	for (int i = 0; i < 3; i++)
		f[i] = fixture_open("s", SHMF_RDWR);
	char *m = map_file("s.journal", &len);
	struct got g = { 0 };
	uint64_t x = 12345;
	for (unsigned round = 0; round < 3000; round++) {
		for (int i = 0; i < 3; i++)
			assert_true(add_key(f[i], (unsigned)(10 + i), round) >= 0);
		scribble_rings(m, len, round, &x);
		int n = shmf_journal_drain(jr, collect, &g, round % 5 == 0 ? SHMF_JDRAIN_RECLAIM : 0);
		assert_true(n >= 0 && n <= 4 * 64);
	}
	struct shmf_journal_stats s = rstats(jr, NULL, 0);
	print_message("scribbled: %llu entries handed out, %llu lost, %llu damaged rings found\n",
		      (unsigned long long)s.drained, (unsigned long long)s.lost, (unsigned long long)s.damaged);
	assert_true(s.damaged > 0);
	assert_true(s.lost > 0);
	assert_true(s.depth <= 4 * 64);
	for (int i = 0; i < 3; i++)
		shmf_close(f[i]);
	munmap(m, len);
	shmf_journal_reader_close(jr);
	got_free(&g);
}

static void test_scribbled(void **state)
{
	(void)state;
	replicated("h", SHMF_TYPE_BLOOM, 10000, 1e-6, 2, 64);
	check_bad_header_fields_refused();
	check_bad_journal_file_refused();
	check_drain_survives_scribbles();
}

/* ---- threads ----------------------------------------------------------- */

#define THREADS     4
#define PER_THREAD  100000
#define SHARED_KEYS 20000

struct tworker {
	pthread_t t;
	shmf_t *f;
	atomic_int *go;
	unsigned id;
	uint8_t *fresh; /* [PER_THREAD + SHARED_KEYS]: this thread's add set a bit */
};

static void *tadder(void *arg)
{
	struct tworker *w = arg;
	while (!atomic_load(w->go))
		;
	for (uint64_t i = 0; i < PER_THREAD + SHARED_KEYS; i++) {
		/* Own keys, interleaved with the shared ones all threads race on. */
		int r = i % 5 == 0 && i / 5 < SHARED_KEYS ? add_key(w->f, 99, i / 5) : add_key(w->f, 20 + w->id, i);
		if (r < 0)
			abort();
		w->fresh[i] = (uint8_t)r;
	}
	return NULL;
}

struct tdrainer {
	pthread_t t;
	struct shmf_journal_reader *jr;
	struct got *g;
	atomic_int stop;
	uint64_t passes;
};

static void *tdrain(void *arg)
{
	struct tdrainer *d = arg;
	while (!atomic_load(&d->stop)) {
		if (shmf_journal_drain(d->jr, collect, d->g, 0) < 0)
			abort();
		d->passes++;
		sched_yield();
	}
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	replicated("t", SHMF_TYPE_BLOOM, 1000000, 1e-6, 2, 1u << 19);
	uint64_t seed = seed_of("t");
	shmf_t *f = fixture_open("t", SHMF_RDWR);
	struct got g = { 0 };
	struct tdrainer d = { .jr = reader("t"), .g = &g };
	struct tworker w[THREADS];
	atomic_int go = 0;
	assert_int_equal(pthread_create(&d.t, NULL, tdrain, &d), 0);
	for (unsigned i = 0; i < THREADS; i++) {
		w[i] = (struct tworker){ .f = f, .go = &go, .id = i, .fresh = calloc(PER_THREAD + SHARED_KEYS, 1) };
		assert_int_equal(pthread_create(&w[i].t, NULL, tadder, &w[i]), 0);
	}
	atomic_store(&go, 1); /* all at once, so that they race on the ring's head */
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(w[i].t, NULL);
	atomic_store(&d.stop, 1);
	pthread_join(d.t, NULL);
	drain_all(d.jr, &g, 0);

	/* What the adds said set a bit, as a sorted multiset of hashes. */
	uint64_t *want = malloc(THREADS * (PER_THREAD + SHARED_KEYS) * sizeof(*want));
	size_t nw = 0;
	for (unsigned t = 0; t < THREADS; t++)
		for (uint64_t i = 0; i < PER_THREAD + SHARED_KEYS; i++)
			if (w[t].fresh[i])
				want[nw++] = i % 5 == 0 && i / 5 < SHARED_KEYS ? key_hash(99, i / 5, seed)
									       : key_hash(20 + t, i, seed);
	qsort(want, nw, sizeof(*want), cmp_u64);
	uint64_t *have = sorted_hashes(&g);
	print_message("threads: %zu adds set a bit (shared keys raced: %zu reported new more than once), "
		      "%zu entries drained in %llu passes\n",
		      nw, nw - (size_t)THREADS * PER_THREAD - SHARED_KEYS, g.n, (unsigned long long)d.passes);
	assert_int_equal(g.n, nw);
	assert_int_equal(memcmp(want, have, nw * sizeof(*want)), 0);
	/* One handle, one ring. */
	unsigned ring = (unsigned)wstats(f).ring;
	for (size_t i = 0; i < g.n; i++)
		assert_int_equal(g.ring[i], ring);
	assert_int_equal(rstats(d.jr, NULL, 0).dropped, 0);
	free(want);
	free(have);
	for (unsigned i = 0; i < THREADS; i++)
		free(w[i].fresh);
	shmf_close(f);
	shmf_journal_reader_close(d.jr);
	got_free(&g);
}

/* ---- processes --------------------------------------------------------- */

#define PROCS       4
#define PER_PROC    20000
#define PROC_SHARED 4000

struct pboard {
	atomic_int go;
	_Atomic int ring[PROCS];
	uint8_t fresh[PROCS][PER_PROC + PROC_SHARED];
};

static void padder(struct pboard *b, unsigned id)
{
	shmf_t *f;
	if (shmf_open(FIXTURE_INSTANCE, "p", SHMF_RDWR, &f) < 0)
		_exit(3);
	while (!atomic_load(&b->go))
		;
	for (uint64_t i = 0; i < PER_PROC + PROC_SHARED; i++) {
		int r = i < PER_PROC ? add_key(f, 30 + id, i) : add_key(f, 98, i - PER_PROC);
		if (r < 0)
			_exit(4);
		b->fresh[id][i] = (uint8_t)r;
	}
	struct shmf_journal_writer_stats s;
	shmf_journal_handle_stats(f, &s);
	atomic_store(&b->ring[id], s.ring);
	shmf_close(f);
	_exit(s.ring >= 0 && s.missed == 0 && s.dropped == 0 ? 0 : 5);
}

static void test_processes(void **state)
{
	(void)state;
	replicated("p", SHMF_TYPE_BLOOM, 200000, 1e-6, 8, 1u << 15);
	uint64_t seed = seed_of("p");
	struct pboard *b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(b != MAP_FAILED);
	pid_t pid[PROCS];
	for (unsigned i = 0; i < PROCS; i++)
		if ((pid[i] = fork()) == 0)
			padder(b, i);
	struct shmf_journal_reader *jr = reader("p");
	struct got g = { 0 };
	atomic_store(&b->go, 1);
	/* Drain while they add. */
	for (int live = PROCS; live > 0;) {
		assert_true(shmf_journal_drain(jr, collect, &g, 0) >= 0);
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p > 0) {
			assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
			live--;
		}
		usleep(200);
	}
	drain_all(jr, &g, SHMF_JDRAIN_RECLAIM);
	uint64_t *want = malloc(PROCS * (PER_PROC + PROC_SHARED) * sizeof(*want));
	size_t nw = 0;
	for (unsigned c = 0; c < PROCS; c++)
		for (uint64_t i = 0; i < PER_PROC + PROC_SHARED; i++)
			if (b->fresh[c][i])
				want[nw++] = i < PER_PROC ? key_hash(30 + c, i, seed)
							  : key_hash(98, i - PER_PROC, seed);
	qsort(want, nw, sizeof(*want), cmp_u64);
	uint64_t *have = sorted_hashes(&g);
	print_message("processes: %zu adds set a bit, %zu entries drained\n", nw, g.n);
	assert_int_equal(g.n, nw);
	assert_int_equal(memcmp(want, have, nw * sizeof(*want)), 0);
	/* Each process wrote its own ring: its own keys' entries came from
	 * the ring it claimed, and no two claimed the same. */
	for (unsigned c = 0; c < PROCS; c++)
		for (unsigned d = 0; d < c; d++)
			assert_int_not_equal(atomic_load(&b->ring[c]), atomic_load(&b->ring[d]));
	for (size_t i = 0; i < g.n; i++)
		for (unsigned c = 0; c < PROCS; c++)
			if (g.e[i].hash == key_hash(30 + c, 0, seed))
				assert_int_equal(g.ring[i], (unsigned)atomic_load(&b->ring[c]));
	size_t per_ring[8] = { 0 };
	for (size_t i = 0; i < g.n; i++)
		per_ring[g.ring[i] % 8]++;
	for (unsigned c = 0; c < PROCS; c++)
		assert_true(per_ring[atomic_load(&b->ring[c])] >= PER_PROC);
	struct shmf_journal_stats s = rstats(jr, NULL, 0);
	assert_int_equal(s.claimed, 0); /* closed, drained: all free */
	assert_int_equal(s.dropped + s.lost + s.missed, 0);
	free(want);
	free(have);
	munmap(b, sizeof(*b));
	shmf_journal_reader_close(jr);
	got_free(&g);
}

/* ---- fork -------------------------------------------------------------- */

static void test_fork(void **state)
{
	(void)state;
	replicated("k", SHMF_TYPE_BLOOM, 10000, 1e-6, 4, 256);
	uint64_t seed = seed_of("k");
	shmf_t *f = fixture_open("k", SHMF_RDWR);
	struct shmf_journal_reader *jr = reader("k");
	struct got g = { 0 };
	for (uint64_t i = 0; i < 10; i++)
		assert_int_equal(add_key(f, 1, i), 1);
	int parent_ring = wstats(f).ring;
	assert_true(parent_ring >= 0);
	_Atomic int *child_ring = mmap(NULL, sizeof(*child_ring), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				       -1, 0);
	atomic_store(child_ring, -2);
	pid_t p = fork();
	if (p == 0) {
		/* The parent's handle: the first add claims a ring of our own. */
		for (uint64_t i = 0; i < 10; i++)
			if (add_key(f, 2, i) != 1)
				_exit(3);
		atomic_store(child_ring, wstats(f).ring);
		_exit(0); /* without closing: shmd frees the ring of a dead process */
	}
	int st;
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	int cr = atomic_load(child_ring);
	assert_true(cr >= 0);
	assert_int_not_equal(cr, parent_ring);
	/* The parent goes on in its own ring. */
	for (uint64_t i = 10; i < 20; i++)
		assert_int_equal(add_key(f, 1, i), 1);
	assert_int_equal(wstats(f).ring, parent_ring);
	assert_int_equal(drain_all(jr, &g, 0), 30);
	for (size_t i = 0; i < g.n; i++) {
		int child = 0;
		for (uint64_t k = 0; k < 10; k++)
			child |= g.e[i].hash == key_hash(2, k, seed);
		assert_int_equal(g.ring[i], (unsigned)(child ? cr : parent_ring));
	}
	/* Without RECLAIM the dead child's ring stays claimed; with it, freed. */
	struct shmf_journal_ring_stats rs[4];
	assert_int_equal(rstats(jr, rs, 4).claimed, 2);
	drain_all(jr, &g, SHMF_JDRAIN_RECLAIM);
	struct shmf_journal_stats s = rstats(jr, rs, 4);
	assert_int_equal(s.claimed, 1);
	assert_int_equal(s.reclaimed, 1);
	assert_int_equal(rs[parent_ring].owner >> 32, (uint64_t)getpid());
	assert_int_equal(rs[cr].owner, 0);

	/* A child that closes the inherited handle gives back nothing of the
	 * parent's (it never claimed a ring). */
	assert_int_equal(add_key(f, 1, 100), 1); /* an entry waiting in the parent's ring */
	if ((p = fork()) == 0) {
		shmf_close(f);
		_exit(0);
	}
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	s = rstats(jr, rs, 4);
	assert_int_equal(rs[parent_ring].owner >> 32, (uint64_t)getpid());
	assert_false(rs[parent_ring].owner & SHMF_JOURNAL_OWNER_CLOSED);
	assert_int_equal(drain_all(jr, &g, SHMF_JDRAIN_RECLAIM), 1);
	assert_int_equal(rstats(jr, rs, 4).claimed, 1);
	assert_int_equal(add_key(f, 1, 101), 1);
	assert_int_equal(drain_all(jr, &g, 0), 1);
	assert_int_equal(g.ring[g.n - 1], (unsigned)parent_ring);
	munmap((void *)child_ring, sizeof(*child_ring));
	shmf_close(f);
	shmf_journal_reader_close(jr);
	got_free(&g);
}

/* ---- dead_owner -------------------------------------------------------- */

static struct shmf_journal_ring *ring_of(char *m, int i)
{
	return (struct shmf_journal_ring *)(m + SHMF_JOURNAL_HDR_BYTES + (size_t)i * shmf_journal_ring_bytes(256));
}

static void test_dead_owner(void **state)
{
	(void)state;
	replicated("d", SHMF_TYPE_BLOOM, 10000, 1e-6, 2, 256);
	size_t len;
	char *m = map_file("d.journal", &len);
	struct shmf_journal_reader *jr = reader("d");
	struct got g = { 0 };

	/* A live owner's position reserved and not written yet: waited for. */
	shmf_t *f = fixture_open("d", SHMF_RDWR);
	assert_int_equal(add_key(f, 1, 0), 1);
	int mine = wstats(f).ring;
	struct shmf_journal_ring *r = ring_of(m, mine);
	uint64_t hole = atomic_fetch_add(&r->head, 1); /* as an add between its CAS and its stores */
	for (uint64_t i = 1; i < 6; i++)
		assert_int_equal(add_key(f, 1, i), 1);
	assert_int_equal(drain_all(jr, &g, SHMF_JDRAIN_RECLAIM), 1); /* up to the hole */
	assert_int_equal(rstats(jr, NULL, 0).depth, 6);
	struct shmf_journal_entry *e = (struct shmf_journal_entry *)(r + 1) + (hole & 255);
	atomic_store(&e->hash, 42);
	atomic_store(&e->op, SHMF_JOP_ADD); /* the add completes */
	assert_int_equal(drain_all(jr, &g, SHMF_JDRAIN_RECLAIM), 6);
	assert_int_equal(g.e[1].hash, 42);
	assert_int_equal(rstats(jr, NULL, 0).lost, 0);
	shmf_close(f);

	/* A process that dies between reserving a position and writing it:
	 * the drain gets past the hole once the owner is gone, counts it
	 * lost, hands out what came after, and frees the ring. */
	g.n = 0;
	pid_t p = fork();
	if (p == 0) {
		shmf_t *c = fixture_open("d", SHMF_RDWR);
		for (uint64_t i = 0; i < 50; i++)
			if (add_key(c, 2, i) != 1)
				_exit(3);
		atomic_fetch_add(&ring_of(m, wstats(c).ring)->head, 1);
		for (uint64_t i = 50; i < 60; i++)
			if (add_key(c, 2, i) != 1)
				_exit(3);
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(rstats(jr, NULL, 0).claimed, 1);
	assert_int_equal(drain_all(jr, &g, 0), 60);
	struct shmf_journal_stats s = rstats(jr, NULL, 0);
	assert_int_equal(s.lost, 1);
	assert_int_equal(s.depth, 0);
	assert_int_equal(s.claimed, 1); /* not asked about the pid: still claimed */
	drain_all(jr, &g, SHMF_JDRAIN_RECLAIM);
	s = rstats(jr, NULL, 0);
	assert_int_equal(s.claimed, 0);
	assert_int_equal(s.reclaimed, 1); /* the first handle gave its ring back, drained, at close */
	munmap(m, len);
	shmf_journal_reader_close(jr);
	got_free(&g);
}

/* ---- killed ------------------------------------------------------------ */

struct kboard {
	_Atomic uint64_t returned; /* adds that returned, keys [0, returned) */
	uint8_t fresh[60000];      /* whether each set a bit (a false positive sets none) */
};

static void test_killed(void **state)
{
	(void)state;
	enum { RUNS = 10, MAXKEYS = 60000 };
	replicated("x", SHMF_TYPE_BLOOM, RUNS * MAXKEYS, 1e-6, 2, 1u << 16);
	uint64_t seed = seed_of("x");
	struct kboard *b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct shmf_journal_reader *jr = reader("x");
	uint64_t lost = 0;
	srand((unsigned)time(NULL));
	for (unsigned run = 0; run < RUNS; run++) {
		struct got g = { 0 };
		atomic_store(&b->returned, 0);
		pid_t p = fork();
		if (p == 0) {
			shmf_t *f = fixture_open("x", SHMF_RDWR);
			for (uint64_t i = 0; i < MAXKEYS; i++) {
				int r = add_key(f, 40 + run, i);
				if (r < 0)
					_exit(3);
				b->fresh[i] = (uint8_t)r;
				/* release: the add returned (and fresh[i] is written)
				 * before it is counted. */
				atomic_store_explicit(&b->returned, i + 1, memory_order_release);
			}
			pause();
			_exit(0);
		}
		while (atomic_load(&b->returned) == 0)
			usleep(100);
		usleep((useconds_t)(rand() % 20000));
		kill(p, SIGKILL);
		int st;
		assert_int_equal(waitpid(p, &st, 0), p);
		uint64_t returned = atomic_load_explicit(&b->returned, memory_order_acquire);
		drain_all(jr, &g, SHMF_JDRAIN_RECLAIM);
		/* Every add that returned having set a bit was journalled; at
		 * most the one in flight more (written, or reserved and lost). */
		uint64_t fresh = 0;
		for (uint64_t i = 0; i < returned; i++)
			fresh += b->fresh[i];
		assert_true(g.n >= fresh && g.n <= fresh + 1);
		uint64_t *have = sorted_hashes(&g);
		for (uint64_t i = 0; i < returned; i++) {
			uint64_t h = key_hash(40 + run, i, seed);
			if (b->fresh[i])
				assert_non_null(bsearch(&h, have, g.n, sizeof(*have), cmp_u64));
		}
		free(have);
		struct shmf_journal_stats s = rstats(jr, NULL, 0);
		assert_int_equal(s.claimed, 0); /* reclaimed */
		assert_int_equal(s.depth, 0);
		assert_true(s.lost - lost <= 1);
		lost = s.lost;
		got_free(&g);
	}
	print_message("killed: %u runs, %llu reserved positions lost with their process\n", RUNS,
		      (unsigned long long)lost);
	munmap(b, sizeof(*b));
	shmf_journal_reader_close(jr);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		fixture_unit_test(test_create, fx),  fixture_unit_test(test_entries, fx),
		fixture_unit_test(test_apply, fx),   fixture_unit_test(test_full, fx),
		fixture_unit_test(test_window, fx),  fixture_unit_test(test_scribbled, fx),
		fixture_unit_test(test_threads, fx), fixture_unit_test(test_processes, fx),
		fixture_unit_test(test_fork, fx),    fixture_unit_test(test_dead_owner, fx),
		fixture_unit_test(test_killed, fx),
	};
	static const char *const names[] = { "create",  "entries",   "apply", "full",       "window", "scribbled",
					     "threads", "processes", "fork",  "dead_owner", "killed" };
	return fixture_run(argc, argv, tests, names);
}
