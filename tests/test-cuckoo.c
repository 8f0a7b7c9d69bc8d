/*
 * test-cuckoo.c - the cuckoo filter's promises on a shared table: no false
 * negatives up to 95% load and under concurrent writers, the false-positive
 * bound, SHMF_E_FULL without loss, delete and counts, and a relocation-lock
 * holder that dies. (The capped add across processes is tested through the
 * public calls, in test-cuckoo-handle.)
 *
 * The table lives in a file under /dev/shm mapped MAP_SHARED, as a data
 * segment does, and its snapshot log in a shared anonymous mapping (a data
 * segment keeps it in its header page). Forked processes use the table as
 * they inherited it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libclient/cuckoo.h"
#include "tests/fixture.h"
#include "libclient/geometry.h"

struct table {
	char path[64];
	int fd;
	size_t len;
	void *base;
	struct shmf_cuckoo_lock lock;
	struct shmf_cuckoo_geom g;
};

/* A table of buckets of @p slots for @p capacity keys at @p fpr. */
static void table_open_b(struct table *t, uint64_t capacity, double fpr, uint32_t slots)
{
	struct shmf_cuckoo_params p;
	assert_int_equal(shmf_cuckoo_size(capacity, fpr, slots, 1, &p), 0);
	snprintf(t->path, sizeof(t->path), "/dev/shm/shmf-test-cuckoo.%d", (int)getpid());
	int fd = t->fd = open(t->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	t->len = sizeof(struct shmf_cuckoo_meta) + p.table_bytes;
	assert_int_equal(ftruncate(fd, (off_t)t->len), 0);
	t->base = mmap(NULL, t->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(t->base != MAP_FAILED);
	t->g = (struct shmf_cuckoo_geom){
		.buckets = (char *)t->base + sizeof(struct shmf_cuckoo_meta),
		.nbuckets = p.nbuckets,
		.seed = 0x5eed,
		.fp_bits = p.fp_bits,
		.slots = p.slots,
		.max_kicks = SHMF_CUCKOO_MAX_KICKS,
		.meta = t->base,
		.lock = &t->lock,
		.cow = fixture_shared_map(sizeof(struct shmf_cuckoo_cow)),
	};
	assert_int_equal(shmf_cuckoo_geom_layout(&t->g), 0);
	shmf_cuckoo_lock_init(&t->lock, 0);
}

/* A table of buckets of 4, the default. */
static void table_open(struct table *t, uint64_t capacity, double fpr)
{
	table_open_b(t, capacity, fpr, SHMF_CUCKOO_SLOTS_DEFAULT);
}

static void table_close(struct table *t)
{
	munmap(t->base, t->len);
	munmap(t->g.cow, sizeof(struct shmf_cuckoo_cow));
	close(t->fd);
	unlink(t->path);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static struct shmf_cuckoo_key key(const struct table *t, unsigned family, uint64_t i)
{
	uint64_t k[2] = { i, family };
	return shmf_cuckoo_locate(&t->g, shmf_hash(k, sizeof(k), t->g.seed));
}

static uint64_t slots(const struct table *t)
{
	return t->g.nbuckets * t->g.slots;
}

static void test_sizing(void **state)
{
	(void)state;
	struct shmf_cuckoo_params p;
	assert_int_equal(shmf_cuckoo_size(1000000, 0.05, 4, 1, &p), 0);
	assert_int_equal(p.fp_bits, 8);
	assert_int_equal(p.nbuckets, 263158 + 1000); /* ceil(1e6 / (4 * 0.95)) + sqrt(1e6) */
	assert_int_equal(shmf_cuckoo_size(1000000, 0.05, 4, 0, &p), 0);
	assert_int_equal(p.nbuckets, 263158); /* without the headroom */
	assert_int_equal(shmf_cuckoo_size(1000000, 0.01, 4, 1, &p), 0);
	assert_int_equal(p.fp_bits, 16);
	assert_true(shmf_cuckoo_fpr(1000000, p.nbuckets, 16, 4) <= 0.01);
	assert_int_equal(shmf_cuckoo_size(1000000, 1e-5, 4, 1, &p), SHMF_E_INVAL);
	assert_int_equal(shmf_cuckoo_size(0, 0.01, 4, 1, &p), SHMF_E_INVAL);
	assert_int_equal(shmf_cuckoo_size(1000, 0.0, 4, 1, &p), SHMF_E_INVAL);
	assert_int_equal(shmf_cuckoo_size(1000, 1.0, 4, 1, &p), SHMF_E_INVAL);
	assert_int_equal(shmf_cuckoo_size(UINT64_C(1) << 62, 0.01, 4, 1, &p), SHMF_E_TOOBIG);

	/* A shape from before the headroom is still recognised, also where the
	 * headroom would take the same capacity past the size limit. */
	uint64_t cap = (uint64_t)((double)((UINT64_C(1) << 43) - 10000) * 3.8);
	assert_int_equal(shmf_cuckoo_size(cap, 0.01, 4, 0, &p), 0);
	struct shmf_geometry g = { .type = SHMF_TYPE_CUCKOO,
				   .k = p.fp_bits,
				   .nbuckets = p.nbuckets,
				   .nblocks = (sizeof(struct shmf_cuckoo_meta) + p.table_bytes) / SHMF_BLOCK_BYTES,
				   .max_kicks = SHMF_CUCKOO_MAX_KICKS,
				   .bucket_size = 4 },
			     now;
	assert_int_equal(shmf_geometry_size(SHMF_TYPE_CUCKOO, cap, 0.01, 0, 0, &now), SHMF_E_TOOBIG);
	assert_int_equal(shmf_geometry_sized(&g, cap, 0.01), 0);
	g.nbuckets--; /* and a shape no sizing gives is not */
	assert_int_equal(shmf_geometry_sized(&g, cap, 0.01), SHMF_E_TOOBIG);
	assert_int_equal(shmf_cuckoo_size(1000, 0.01, 4, 0, &p), 0);
	g = (struct shmf_geometry){ .type = SHMF_TYPE_CUCKOO,
				    .k = p.fp_bits,
				    .nbuckets = p.nbuckets + 1,
				    .nblocks = (sizeof(struct shmf_cuckoo_meta) + p.table_bytes) / SHMF_BLOCK_BYTES,
				    .max_kicks = SHMF_CUCKOO_MAX_KICKS,
				    .bucket_size = 4 };
	assert_int_equal(shmf_geometry_sized(&g, 1000, 0.01), SHMF_E_FORMAT);
}

/* Bits a key of a filter of @p capacity: its whole data segment. */
static double bits_per_key(const struct shmf_geometry *g, uint64_t capacity)
{
	return (double)g->data_bytes * 8.0 / (double)capacity;
}

/*
 * Below the rates buckets of 4 reach (about 1.2e-4), a filter with no
 * bucket size asked for gets buckets of 2: 16-bit fingerprints down to
 * what they reach, then 32-bit ones, at 1e-9 in at most 40 bits a key
 * (a classic Bloom filter: 43.1). A bucket size asked for keeps its
 * fingerprints; below what 32-bit ones reach, nothing. Layers keep their
 * first layer's fingerprints, and the shape checks take 32-bit ones only
 * in buckets of 1 and 2.
 */
static void test_sizing_32(void **state)
{
	(void)state;
	const uint64_t cap = 1000000;
	struct shmf_geometry g;
	assert_int_equal(shmf_geometry_size(SHMF_TYPE_CUCKOO, cap, 2e-4, 0, 0, &g), 0);
	assert_true(g.k == 16 && g.bucket_size == 4); /* unchanged where buckets of 4 reach it */
	assert_int_equal(shmf_geometry_size(SHMF_TYPE_CUCKOO, cap, 6e-5, 0, 0, &g), 0);
	assert_true(g.k == 16 && g.bucket_size == 2);
	static const double rates[] = { 1e-6, 1e-9 };
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(shmf_geometry_size(SHMF_TYPE_CUCKOO, cap, rates[i], 0, 0, &g), 0);
		printf("capacity %llu at %g: %u-bit fingerprints in buckets of %u, %llu bytes, %.2f bits a key\n",
		       (unsigned long long)cap, rates[i], g.k, g.bucket_size, (unsigned long long)g.data_bytes,
		       bits_per_key(&g, cap));
		assert_int_equal(g.k, 32);
		assert_int_equal(g.bucket_size, 2);
		assert_true(shmf_cuckoo_fpr(cap, g.nbuckets, g.k, g.bucket_size) <= rates[i]);
		assert_true(bits_per_key(&g, cap) <= 40.0);
		assert_int_equal(shmf_geometry_sized(&g, cap, rates[i]), 0); /* a restore recognises it */
	}
	/* A bucket size asked for: 4 cannot hold 32-bit fingerprints; 2 and 1 do. */
	assert_int_equal(shmf_geometry_size(SHMF_TYPE_CUCKOO, cap, 1e-6, 0, 4, &g), SHMF_E_INVAL);
	assert_int_equal(shmf_geometry_size(SHMF_TYPE_CUCKOO, cap, 1e-6, 0, 2, &g), 0);
	assert_true(g.k == 32 && g.bucket_size == 2);
	assert_int_equal(shmf_geometry_size(SHMF_TYPE_CUCKOO, cap, 2e-10, 0, 1, &g), 0);
	assert_true(g.k == 32 && g.bucket_size == 1);
	assert_int_equal(shmf_geometry_size(SHMF_TYPE_CUCKOO, cap, 5e-10, 0, 0, &g), SHMF_E_INVAL);
	assert_int_equal(shmf_geometry_size(SHMF_TYPE_CUCKOO, cap, 5e-10, 0, 2, &g), SHMF_E_INVAL);
	/* A growing filter's later layers keep 32-bit fingerprints. */
	struct shmf_layer l;
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(shmf_geometry_layer(SHMF_TYPE_CUCKOO, 1000, 1e-9, 0, 0, 2, i, &l), 0);
		assert_true(l.g.k == 32 && l.g.bucket_size == 2);
		assert_int_equal(shmf_geometry_check(l.g.type, l.g.scheme, l.g.k, l.g.bucket_size, l.g.nblocks,
						     l.g.nbuckets),
				 0);
	}
	/* The shape check: 32 bits in buckets of 1 and 2 only; no width but 8, 16, 32. */
	assert_int_equal(shmf_geometry_size(SHMF_TYPE_CUCKOO, cap, 1e-9, 0, 0, &g), 0);
	assert_int_equal(shmf_geometry_check(g.type, g.scheme, 32, 2, g.nblocks, g.nbuckets), 0);
	/* 24 bits refused even where the blocks would match such a table. */
	uint64_t blocks24 = (sizeof(struct shmf_cuckoo_meta) + shmf_cuckoo_table_bytes(g.nbuckets, 24, 2)) /
			    SHMF_BLOCK_BYTES;
	assert_int_equal(shmf_geometry_check(g.type, g.scheme, 24, 2, blocks24, g.nbuckets), SHMF_E_FORMAT);
	assert_int_equal(shmf_geometry_check(g.type, g.scheme, 24, 2, g.nblocks, g.nbuckets), SHMF_E_FORMAT);
	assert_int_equal(shmf_geometry_check(g.type, g.scheme, 64, 1, g.nblocks, g.nbuckets), SHMF_E_FORMAT);
	assert_int_equal(shmf_geometry_check(g.type, g.scheme, 32, 4, g.nblocks, g.nbuckets / 2), SHMF_E_FORMAT);
}

/*
 * A 32-bit filter at 1e-6 filled to its capacity (82% of its slots): every
 * key found, and of 2,000,000 keys never added at most 2 answer present
 * (the declared rate; the bound at this load is 7.6e-10, so none is
 * expected). Fingerprints cut to 16 bits would give about 100. A key's
 * fingerprint is never 0, the empty slot.
 */
static void test_fpr_32(void **state)
{
	(void)state;
	const uint64_t capacity = 1000000, probes = 2000000;
	const double fpr = 1e-6;
	struct table t;
	table_open_b(&t, capacity, fpr, 2);
	assert_int_equal(t.g.fp_bits, 32);
	/* The fingerprint is the hash's low 32 bits, all of them; 0 (an empty
	 * slot) becomes 1. */
	assert_int_equal(shmf_cuckoo_locate(&t.g, UINT64_C(0x12345678ffffffff)).fp, 0xffffffffu);
	assert_int_equal(shmf_cuckoo_locate(&t.g, UINT64_C(0x1234567800000000)).fp, 1);
	assert_int_equal(shmf_cuckoo_locate(&t.g, UINT64_C(0x1234567880010000)).fp, 0x80010000u);
	for (uint64_t i = 0; i < capacity; i++) {
		struct shmf_cuckoo_key k = key(&t, 30, i);
		int r = shmf_cuckoo_add(&t.g, &k);
		if (r != 0)
			fail_msg("add %llu of %llu: %s", (unsigned long long)i, (unsigned long long)capacity,
				 shmf_strerror(r));
	}
	for (uint64_t i = 0; i < capacity; i++) {
		struct shmf_cuckoo_key k = key(&t, 30, i);
		if (shmf_cuckoo_count(&t.g, &k) < 1)
			fail_msg("key %llu lost", (unsigned long long)i);
	}
	uint64_t fp = 0;
	for (uint64_t i = 0; i < probes; i++) {
		struct shmf_cuckoo_key k = key(&t, 31, i);
		fp += shmf_cuckoo_count(&t.g, &k) > 0;
	}
	printf("32-bit fingerprints, %llu buckets (load %.3f), %llu moves: %llu false positives of %llu, declared "
	       "%g, bound %g\n",
	       (unsigned long long)t.g.nbuckets, (double)capacity / (double)slots(&t),
	       (unsigned long long)t.g.meta->moves, (unsigned long long)fp, (unsigned long long)probes, fpr,
	       shmf_cuckoo_fpr(capacity, t.g.nbuckets, t.g.fp_bits, t.g.slots));
	assert_true((double)fp <= fpr * (double)probes);
	table_close(&t);
}

/* Fill to 95% of the slots; every key found; then the FPR over 1M absent
 * keys is within 0.5-1.5x of the bound at that load. */
static void fill_and_measure(uint64_t capacity, double fpr)
{
	struct table t;
	table_open(&t, capacity, fpr);
	uint64_t n = slots(&t) * 95 / 100;
	for (uint64_t i = 0; i < n; i++) {
		struct shmf_cuckoo_key k = key(&t, 1, i);
		int r = shmf_cuckoo_add(&t.g, &k);
		if (r != 0)
			fail_msg("add %llu of %llu (load %.3f): %s", (unsigned long long)i, (unsigned long long)n,
				 (double)i / (double)slots(&t), shmf_strerror(r));
	}
	for (uint64_t i = 0; i < n; i++) {
		struct shmf_cuckoo_key k = key(&t, 1, i);
		if (shmf_cuckoo_count(&t.g, &k) < 1)
			fail_msg("key %llu lost", (unsigned long long)i);
	}
	const uint64_t probes = 1000000;
	uint64_t fp = 0;
	for (uint64_t i = 0; i < probes; i++) {
		struct shmf_cuckoo_key k = key(&t, 2, i);
		fp += shmf_cuckoo_count(&t.g, &k) > 0;
	}
	double measured = (double)fp / (double)probes, bound = shmf_cuckoo_fpr(n, t.g.nbuckets, t.g.fp_bits, t.g.slots);
	printf("%u-bit fingerprints, %llu buckets, load 0.95, %llu moves: FPR %g (%llu of %llu), bound %g\n",
	       t.g.fp_bits, (unsigned long long)t.g.nbuckets, (unsigned long long)t.g.meta->moves, measured,
	       (unsigned long long)fp, (unsigned long long)probes, bound);
	assert_true(measured <= 1.5 * bound);
	assert_true(measured >= 0.5 * bound);
	table_close(&t);
}

/* A filter holds at least its capacity, however small: for each capacity,
 * 100 tables with other seeds are filled until an add fails. (Without the
 * sizing's headroom, 1 table in 13 of capacity 30 failed short of it.) The
 * seeds are fixed: 1 or 2 tables in 200,000 of capacity 10 to 100 still
 * fill early (cuckoo.h, bench/bench-cuckoo-fill), which these seeds do not
 * hit. */
static void test_small_capacities(void **state)
{
	(void)state;
	static const uint64_t caps[] = { 1, 2, 3, 5, 8, 13, 20, 30, 50, 75, 100, 200, 300, 500, 1000 };
	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		uint64_t least = UINT64_MAX;
		for (unsigned trial = 0; trial < 100; trial++) {
			struct table t;
			table_open(&t, caps[c], 0.01);
			t.g.seed = 0x5eed + 7919 * (uint64_t)trial + caps[c];
			uint64_t n = 0;
			for (;; n++) {
				struct shmf_cuckoo_key k = key(&t, 3, n);
				int r = shmf_cuckoo_add(&t.g, &k);
				if (r == SHMF_E_FULL)
					break;
				assert_int_equal(r, 0);
			}
			if (n < caps[c])
				fail_msg("capacity %llu, seed %llu: full after %llu keys", (unsigned long long)caps[c],
					 (unsigned long long)t.g.seed, (unsigned long long)n);
			if (n < least)
				least = n;
			table_close(&t);
		}
		printf("capacity %llu: 100 tables, the first to fill took %llu keys\n", (unsigned long long)caps[c],
		       (unsigned long long)least);
	}
}

static void test_load_and_fpr(void **state)
{
	(void)state;
	fill_and_measure(1000000, 0.05); /* 8-bit */
	fill_and_measure(1000000, 0.01); /* 16-bit */
}

static void test_full(void **state)
{
	(void)state;
	struct table t;
	table_open(&t, 20000, 0.01);
	uint64_t n = 0;
	int r;
	for (;; n++) {
		struct shmf_cuckoo_key k = key(&t, 3, n);
		r = shmf_cuckoo_add(&t.g, &k);
		if (r != 0)
			break;
		assert_true(n < slots(&t));
	}
	assert_int_equal(r, SHMF_E_FULL);
	printf("full at %llu of %llu slots (load %.4f)\n", (unsigned long long)n, (unsigned long long)slots(&t),
	       (double)n / (double)slots(&t));
	assert_true(n >= slots(&t) * 95 / 100);
	/* A refused add changes no byte, however often it is tried. */
	size_t bytes = t.len - sizeof(struct shmf_cuckoo_meta);
	char *before = malloc(bytes);
	memcpy(before, t.g.buckets, bytes);
	for (uint64_t i = 0; i < 100; i++) {
		struct shmf_cuckoo_key k = key(&t, 4, i);
		r = shmf_cuckoo_add(&t.g, &k);
		assert_true(r == SHMF_E_FULL || r == 0);
		if (r == 0)
			break; /* the rare key whose buckets still had room */
		assert_memory_equal(before, t.g.buckets, bytes);
	}
	free(before);
	for (uint64_t i = 0; i < n; i++) {
		struct shmf_cuckoo_key k = key(&t, 3, i);
		if (shmf_cuckoo_count(&t.g, &k) < 1)
			fail_msg("key %llu lost after the filter filled up", (unsigned long long)i);
	}
	table_close(&t);
}

static void test_delete_and_count(void **state)
{
	(void)state;
	struct table t;
	table_open(&t, 100000, 0.01);
	const uint64_t n = 80000;
	for (uint64_t i = 0; i < n; i++) {
		struct shmf_cuckoo_key k = key(&t, 5, i);
		assert_int_equal(shmf_cuckoo_add(&t.g, &k), 0);
	}
	/* Delete the even keys: each one removed once, then absent unless
	 * another key shares its fingerprint and buckets. */
	uint64_t still = 0;
	for (uint64_t i = 0; i < n; i += 2) {
		struct shmf_cuckoo_key k = key(&t, 5, i);
		assert_int_equal(shmf_cuckoo_del(&t.g, &k), 1);
		still += shmf_cuckoo_count(&t.g, &k) > 0;
	}
	assert_true(still < 10);
	for (uint64_t i = 1; i < n; i += 2) {
		struct shmf_cuckoo_key k = key(&t, 5, i);
		if (shmf_cuckoo_count(&t.g, &k) < 1)
			fail_msg("odd key %llu lost by deleting the even ones", (unsigned long long)i);
	}
	/* Copies: three adds count 3, a delete takes one. */
	struct shmf_cuckoo_key d = key(&t, 6, 1);
	assert_int_equal(shmf_cuckoo_count(&t.g, &d), 0);
	for (int c = 1; c <= 3; c++) {
		assert_int_equal(shmf_cuckoo_add(&t.g, &d), 0);
		assert_int_equal(shmf_cuckoo_count(&t.g, &d), c);
	}
	assert_int_equal(shmf_cuckoo_del(&t.g, &d), 1);
	assert_int_equal(shmf_cuckoo_count(&t.g, &d), 2);
	/* Capped add in one process: counts before, adds only below the cap. */
	assert_int_equal(shmf_cuckoo_add_capped(&t.g, &d, 3), 2);
	assert_int_equal(shmf_cuckoo_add_capped(&t.g, &d, 3), 3);
	assert_int_equal(shmf_cuckoo_count(&t.g, &d), 3);
	assert_int_equal(shmf_cuckoo_del(&t.g, &d), 1);
	assert_int_equal(shmf_cuckoo_del(&t.g, &d), 1);
	assert_int_equal(shmf_cuckoo_del(&t.g, &d), 1);
	assert_int_equal(shmf_cuckoo_del(&t.g, &d), 0);
	table_close(&t);
}

/* Reader stall: every lookup waits a few microseconds between its two
 * bucket loads, long enough for whole moves to fit in between (without
 * the version check, this test then fails in most runs). */
static void stall_reads(void)
{
	for (int i = 0; i < 30; i++)
		__builtin_ia32_pause();
}

/*
 * 4 writers add and delete keys of their own (@p churn each, @p rounds
 * rounds of deleting half and adding it back, and more until the readers
 * have swept twice), keeping the table near its
 * load so relocations run all the time, while 2 readers check @p stable
 * keys that are never deleted: a reader that finds one absent fails.
 * @return the relocations made meanwhile.
 */
static uint64_t churn_and_check(struct table *t, uint64_t stable, uint64_t churn, int rounds)
{
	for (uint64_t i = 0; i < stable; i++) {
		struct shmf_cuckoo_key k = key(t, 8, i);
		assert_int_equal(shmf_cuckoo_add(&t->g, &k), 0);
	}
	uint64_t moves_before = atomic_load(&t->g.meta->moves);
	struct shared {
		_Atomic int writers_done;
		_Atomic uint64_t sweeps;
	} *sh = fixture_shared_map(sizeof(*sh));
	pid_t pids[6];
	for (int p = 0; p < 6; p++) {
		pids[p] = fork();
		assert_true(pids[p] >= 0);
		if (pids[p] != 0)
			continue;
		if (p < 4) {
			/* Writer: fill its share, then rounds of delete-half/re-add. */
			unsigned family = 100 + (unsigned)p;
			for (uint64_t i = 0; i < churn; i++) {
				struct shmf_cuckoo_key k = key(t, family, i);
				if (shmf_cuckoo_add(&t->g, &k) != 0)
					_exit(2);
			}
			/* The rounds asked for, and more until the readers have
			 * swept twice meanwhile: on a busy machine they may get
			 * no time before the rounds end (CI once saw 0 sweeps). */
			for (int round = 0; round < rounds || (atomic_load(&sh->sweeps) < 2 && round < 1000 * rounds);
			     round++) {
				for (uint64_t i = (uint64_t)round & 1; i < churn; i += 2) {
					struct shmf_cuckoo_key k = key(t, family, i);
					if (shmf_cuckoo_del(&t->g, &k) != 1)
						_exit(3);
				}
				for (uint64_t i = (uint64_t)round & 1; i < churn; i += 2) {
					struct shmf_cuckoo_key k = key(t, family, i);
					if (shmf_cuckoo_add(&t->g, &k) != 0)
						_exit(4);
				}
			}
			_exit(0);
		}
		/* Reader: sweep the stable keys until the writers are done. The
		 * second reader counts only with the read that one move cannot
		 * fool (which every count falls back to). */
		shmf_cuckoo_read_hook = stall_reads;
		if (p == 5)
			shmf_cuckoo_read_tries = 0;
		while (!atomic_load(&sh->writers_done)) {
			for (uint64_t i = 0; i < stable; i++) {
				struct shmf_cuckoo_key k = key(t, 8, i);
				if (shmf_cuckoo_count(&t->g, &k) < 1)
					_exit(5);
			}
			atomic_fetch_add(&sh->sweeps, 1);
		}
		_exit(0);
	}
	for (int p = 0; p < 6; p++) {
		if (p == 4)
			atomic_store(&sh->writers_done, 1);
		int st;
		assert_int_equal(waitpid(pids[p], &st, 0), pids[p]);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fail_msg("%s %d: status %d (2-4: a writer's add or delete failed, 5: a reader saw a false negative)",
				 p < 4 ? "writer" : "reader", p, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
	uint64_t moves = atomic_load(&t->g.meta->moves) - moves_before;
	printf("buckets of %u, %u-bit fingerprints: %llu relocations while the readers made %llu sweeps of %llu keys\n",
	       t->g.slots, t->g.fp_bits, (unsigned long long)moves, (unsigned long long)atomic_load(&sh->sweeps),
	       (unsigned long long)stable);
	assert_true(atomic_load(&sh->sweeps) >= 2);
	munmap(sh, sizeof(*sh));
	for (uint64_t i = 0; i < stable; i++) {
		struct shmf_cuckoo_key k = key(t, 8, i);
		assert_true(shmf_cuckoo_count(&t->g, &k) >= 1);
	}
	return moves;
}

static void test_no_false_negatives_under_churn(void **state)
{
	(void)state;
	struct table t;
	table_open(&t, 200000, 0.01);
	/* Half the slots stable, 44% churning: about 94% of the slots. */
	assert_true(churn_and_check(&t, slots(&t) / 2, slots(&t) * 44 / 100 / 4, 300) > 1000);
	table_close(&t);
}

/* Each layout there is: a bucket size with a fingerprint width sizing
 * gives it, and an error rate that asks for that width. */
static const struct layout {
	uint32_t slots, bits;
	double fpr;
} layouts[] = {
	{ 1, 16, 0.01 }, { 2, 8, 0.05 }, { 2, 16, 0.01 },  { 4, 8, 0.05 },
	{ 4, 16, 0.01 }, { 8, 8, 0.1 },  { 1, 32, 2e-10 }, { 2, 32, 1e-9 },
};
#define NLAYOUTS (sizeof(layouts) / sizeof(layouts[0]))

/*
 * For each layout, a table sized for 200,000 keys: filled to its capacity
 * (every add stored, no relocation path missing), every key found, and the
 * false-positive rate over 1,000,000 keys never added at most the declared
 * rate (and within 0.5-1.5x of the bound where that expects enough false
 * positives to tell); then deletes and counts: each even key deleted once,
 * every odd one still there, copies of one key counted up to the two
 * buckets' slots, capped adds.
 */
static void test_layouts(void **state)
{
	(void)state;
	const uint64_t capacity = 200000, probes = 1000000;
	for (size_t l = 0; l < NLAYOUTS; l++) {
		const struct layout *ly = &layouts[l];
		struct table t;
		table_open_b(&t, capacity, ly->fpr, ly->slots);
		assert_int_equal(t.g.slots, ly->slots);
		assert_int_equal(t.g.fp_bits, ly->bits);
		for (uint64_t i = 0; i < capacity; i++) {
			struct shmf_cuckoo_key k = key(&t, 20, i);
			int r = shmf_cuckoo_add(&t.g, &k);
			if (r != 0)
				fail_msg("buckets of %u, %u-bit: add %llu of %llu: %s", ly->slots, ly->bits,
					 (unsigned long long)i, (unsigned long long)capacity, shmf_strerror(r));
		}
		for (uint64_t i = 0; i < capacity; i++) {
			struct shmf_cuckoo_key k = key(&t, 20, i);
			if (shmf_cuckoo_count(&t.g, &k) < 1)
				fail_msg("buckets of %u, %u-bit: key %llu lost", ly->slots, ly->bits,
					 (unsigned long long)i);
		}
		uint64_t fp = 0;
		for (uint64_t i = 0; i < probes; i++) {
			struct shmf_cuckoo_key k = key(&t, 21, i);
			fp += shmf_cuckoo_count(&t.g, &k) > 0;
		}
		double measured = (double)fp / (double)probes;
		double bound = shmf_cuckoo_fpr(capacity, t.g.nbuckets, t.g.fp_bits, t.g.slots);
		printf("buckets of %u, %u-bit fingerprints, %llu buckets (load %.3f), %llu moves: FPR %g (%llu of "
		       "%llu), bound %g, declared %g\n",
		       ly->slots, ly->bits, (unsigned long long)t.g.nbuckets, (double)capacity / (double)slots(&t),
		       (unsigned long long)t.g.meta->moves, measured, (unsigned long long)fp,
		       (unsigned long long)probes, bound, ly->fpr);
		assert_true(measured <= ly->fpr);
		if (bound * (double)probes >= 1000) {
			assert_true(measured <= 1.5 * bound);
			assert_true(measured >= 0.5 * bound);
		}

		/* Deletes: each even key once; the odd ones stay. */
		uint64_t still = 0;
		for (uint64_t i = 0; i < capacity; i += 2) {
			struct shmf_cuckoo_key k = key(&t, 20, i);
			assert_int_equal(shmf_cuckoo_del(&t.g, &k), 1);
			still += shmf_cuckoo_count(&t.g, &k) > 0;
		}
		assert_true((double)still <= 3.0 * bound * (double)capacity + 10);
		for (uint64_t i = 1; i < capacity; i += 2) {
			struct shmf_cuckoo_key k = key(&t, 20, i);
			if (shmf_cuckoo_count(&t.g, &k) < 1)
				fail_msg("buckets of %u: odd key %llu lost by deleting the even ones", ly->slots,
					 (unsigned long long)i);
		}
		/* Copies: as many as the key's two buckets hold (3 at most here),
		 * counted; a delete takes one; capped adds stop at the cap. */
		struct shmf_cuckoo_key d = key(&t, 22, 1);
		int copies = 2 * (int)ly->slots < 3 ? 2 * (int)ly->slots : 3;
		assert_int_equal(shmf_cuckoo_count(&t.g, &d), 0);
		for (int c = 1; c <= copies; c++) {
			assert_int_equal(shmf_cuckoo_add(&t.g, &d), 0);
			assert_int_equal(shmf_cuckoo_count(&t.g, &d), c);
		}
		assert_int_equal(shmf_cuckoo_del(&t.g, &d), 1);
		assert_int_equal(shmf_cuckoo_count(&t.g, &d), copies - 1);
		assert_int_equal(shmf_cuckoo_add_capped(&t.g, &d, (unsigned)copies), copies - 1);
		assert_int_equal(shmf_cuckoo_add_capped(&t.g, &d, (unsigned)copies), copies);
		assert_int_equal(shmf_cuckoo_count(&t.g, &d), copies);
		for (int c = 0; c < copies; c++)
			assert_int_equal(shmf_cuckoo_del(&t.g, &d), 1);
		assert_int_equal(shmf_cuckoo_del(&t.g, &d), 0);
		table_close(&t);
	}
}

/*
 * Relocation paths longer than the 1,024 moves kept on the stack (RedisBloom
 * allows MAXITERATIONS up to 65,535: such paths are kept on the heap): a
 * table with max_kicks 20,000 filled until an add answers SHMF_E_FULL, which
 * takes the walks to their bound; it holds at least what max_kicks 500 does,
 * keeps every key, and its refused add changes nothing.
 */
static void test_long_paths(void **state)
{
	(void)state;
	struct table t;
	table_open(&t, 20000, 0.01);
	t.g.max_kicks = 20000;
	uint64_t n = 0;
	int r;
	for (;; n++) {
		struct shmf_cuckoo_key k = key(&t, 23, n);
		if ((r = shmf_cuckoo_add(&t.g, &k)) != 0)
			break;
	}
	assert_int_equal(r, SHMF_E_FULL);
	printf("max_kicks 20000: full at %llu of %llu slots (load %.4f), %llu moves\n", (unsigned long long)n,
	       (unsigned long long)slots(&t), (double)n / (double)slots(&t), (unsigned long long)t.g.meta->moves);
	assert_true(n >= slots(&t) * 96 / 100);
	size_t bytes = t.len - sizeof(struct shmf_cuckoo_meta);
	char *before = malloc(bytes);
	memcpy(before, t.g.buckets, bytes);
	struct shmf_cuckoo_key k = key(&t, 23, n);
	assert_int_equal(shmf_cuckoo_add(&t.g, &k), SHMF_E_FULL);
	assert_memory_equal(before, t.g.buckets, bytes);
	free(before);
	for (uint64_t i = 0; i < n; i++) {
		k = key(&t, 23, i);
		if (shmf_cuckoo_count(&t.g, &k) < 1)
			fail_msg("key %llu lost on a long relocation path", (unsigned long long)i);
	}
	/* A bound past RedisBloom's is refused, not walked. */
	t.g.max_kicks = SHMF_CUCKOO_KICKS_LIMIT + 1;
	assert_int_equal(shmf_cuckoo_add(&t.g, &k), SHMF_E_INVAL);
	table_close(&t);
}

/* For each layout, the churn above near its planned load: a table of
 * 40,000 keys, half stable, 45% churning (95% of the capacity). */
static void test_layouts_churn(void **state)
{
	(void)state;
	const uint64_t capacity = 40000;
	for (size_t l = 0; l < NLAYOUTS; l++) {
		struct table t;
		table_open_b(&t, capacity, layouts[l].fpr, layouts[l].slots);
		assert_int_equal(t.g.fp_bits, layouts[l].bits);
		assert_true(churn_and_check(&t, capacity / 2, capacity * 45 / 100 / 4, 100) > 100);
		table_close(&t);
	}
}

static void die_mid_move(void)
{
	raise(SIGKILL);
}

/* Fill a table until adds need relocations; returns how many keys. */
static uint64_t fill_until_full_buckets(struct table *t, unsigned family)
{
	/* Buckets of 2 fill at about 88%. */
	uint64_t n = slots(t) * (t->g.slots == 2 ? 84 : 90) / 100;
	for (uint64_t i = 0; i < n; i++) {
		struct shmf_cuckoo_key k = key(t, family, i);
		assert_int_equal(shmf_cuckoo_add(&t->g, &k), 0);
	}
	return n;
}

static void lock_holder_killed(uint32_t bucket_size, double fpr)
{
	struct table t;
	table_open_b(&t, 20000, fpr, bucket_size);
	/* Long, so that "at once" below cannot be confused with a noisy machine. */
	t.lock.timeout_ms = 10000;
	uint64_t n = fill_until_full_buckets(&t, 9);

	/* 1. A process holding the lock is killed: the kernel marks the lock
	 * word (robust list), so a writer that needs it gets it at once. */
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (shmf_cuckoo_lock(&t.g) != 0)
			_exit(2);
		(void)!write(ready[1], "L", 1);
		pause();
		_exit(0);
	}
	char c;
	assert_int_equal(read(ready[0], &c, 1), 1);
	assert_true(shmf_cuckoo_lock_held(t.g.meta));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_false(shmf_cuckoo_lock_held(t.g.meta)); /* the kernel cleared the holder */
	uint64_t t0 = now_ms();
	assert_int_equal(shmf_cuckoo_lock(&t.g), 0);
	assert_true(now_ms() - t0 < 5000); /* at once, not after the 10 s timeout */
	assert_true(shmf_cuckoo_lock_held(t.g.meta));
	shmf_cuckoo_unlock(&t.g);
	assert_false(shmf_cuckoo_lock_held(t.g.meta));

	/* 2. A writer killed between copying a fingerprint to its new bucket
	 * and clearing the old one: the version window stays open, readers
	 * still answer (the read one move cannot fool), the next writer closes
	 * the window, and no key is lost. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		shmf_cuckoo_move_hook = die_mid_move;
		for (uint64_t i = 0;; i++) {
			struct shmf_cuckoo_key k = key(&t, 10, i);
			if (shmf_cuckoo_add(&t.g, &k) != 0)
				_exit(2); /* never reached a relocation */
		}
	}
	int st;
	waitpid(pid, &st, 0);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_true(atomic_load(&t.g.meta->moving) != 0);
	for (uint64_t i = 0; i < n; i++) {
		struct shmf_cuckoo_key k = key(&t, 9, i);
		if (shmf_cuckoo_count(&t.g, &k) < 1)
			fail_msg("key %llu lost by a writer killed mid-move", (unsigned long long)i);
	}
	assert_int_equal(shmf_cuckoo_lock(&t.g), 0);
	assert_int_equal(atomic_load(&t.g.meta->moving), 0);
	for (unsigned s = 0; s < SHMF_CUCKOO_STRIPES; s++)
		assert_int_equal(atomic_load(&t.g.meta->version[s]) & 1, 0);
	shmf_cuckoo_unlock(&t.g);
	for (uint64_t i = 0; i < 200; i++) { /* writers go on, with relocations */
		struct shmf_cuckoo_key k = key(&t, 11, i);
		assert_int_equal(shmf_cuckoo_add(&t.g, &k), 0);
	}
	for (uint64_t i = 0; i < n; i++) {
		struct shmf_cuckoo_key k = key(&t, 9, i);
		assert_true(shmf_cuckoo_count(&t.g, &k) >= 1);
	}
	close(ready[0]);
	close(ready[1]);
	table_close(&t);
}

/* Buckets of 4 (16-bit fingerprints) and of 2 with 32-bit ones. */
static void test_lock_holder_killed(void **state)
{
	(void)state;
	lock_holder_killed(4, 0.01);
	lock_holder_killed(2, 1e-9);
}

static void stop_mid_move(void)
{
	raise(SIGSTOP);
}

/* Fork a writer that takes the lock (with @p mid_move: that relocates, and
 * stops in the middle of a move) and stops itself there. @return its pid,
 * stopped. */
static pid_t stopped_holder(struct table *t, int mid_move)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (!mid_move) {
			if (shmf_cuckoo_lock(&t->g) != 0)
				_exit(2);
			raise(SIGSTOP);
			shmf_cuckoo_unlock(&t->g);
			_exit(0);
		}
		shmf_cuckoo_move_hook = stop_mid_move;
		for (uint64_t i = 0;; i++) {
			struct shmf_cuckoo_key k = key(t, 12, i);
			if (shmf_cuckoo_add(&t->g, &k) != 0)
				_exit(3);
			if (atomic_load(&t->g.meta->moves) > 0 && !mid_move)
				_exit(0);
		}
	}
	int st;
	assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
	if (!WIFSTOPPED(st))
		fail_msg("the lock holder ended (status %#x) instead of stopping", st);
	return pid;
}

/* Every key of @p family below @p n is found, by checks that do not wait
 * for the lock: @return the milliseconds they took. */
static uint64_t all_found(const struct table *t, unsigned family, uint64_t n, const char *what)
{
	uint64_t t0 = now_ms();
	for (uint64_t i = 0; i < n; i++) {
		struct shmf_cuckoo_key k = key(t, family, i);
		if (shmf_cuckoo_count(&t->g, &k) < 1)
			fail_msg("key %llu not found %s", (unsigned long long)i, what);
	}
	return now_ms() - t0;
}

/* A locked call answers SHMF_E_BUSY after the lock's timeout, not before
 * and not much later. */
static void assert_busy_in_time(struct table *t, unsigned family, const char *what)
{
	struct shmf_cuckoo_key k = key(t, family, 0);
	uint64_t t0 = now_ms();
	int r = shmf_cuckoo_add_capped(&t->g, &k, 1);
	uint64_t ms = now_ms() - t0;
	if (r != SHMF_E_BUSY || ms < t->lock.timeout_ms || ms > t->lock.timeout_ms + 2000)
		fail_msg("%s: a capped add answered %d after %llu ms (SHMF_E_BUSY after %u ms expected)", what, r,
			 (unsigned long long)ms, t->lock.timeout_ms);
}

/* A holder that is stopped (SIGSTOP), holding the lock or in the middle of
 * a move: writers that need the lock get SHMF_E_BUSY after the timeout,
 * checks are not held up, and when the holder goes on (or is killed)
 * everything does. */
static void lock_holder_stopped(uint32_t bucket_size, double fpr)
{
	struct table t;
	table_open_b(&t, 20000, fpr, bucket_size);
	t.lock.timeout_ms = 200;
	uint64_t n = fill_until_full_buckets(&t, 13);

	/* 1. Stopped holding the lock. */
	pid_t pid = stopped_holder(&t, 0);
	assert_true(shmf_cuckoo_lock_held(t.g.meta));
	uint64_t ms = all_found(&t, 13, n, "while a lock holder is stopped");
	assert_busy_in_time(&t, 14, "lock holder stopped");
	kill(pid, SIGCONT);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(shmf_cuckoo_lock(&t.g), 0);
	shmf_cuckoo_unlock(&t.g);
	printf("holder stopped: %llu checks in %llu ms, a capped add SHMF_E_BUSY after %u ms\n", (unsigned long long)n,
	       (unsigned long long)ms, t.lock.timeout_ms);

	/* 2. Stopped in the middle of a move: its window stays open, checks
	 * of the keys on its two stripes use the read one move cannot fool
	 * (its holder is alive, so the window is no stale one). */
	pid = stopped_holder(&t, 1);
	uint64_t moving = atomic_load(&t.g.meta->moving);
	assert_true(moving != 0);
	ms = all_found(&t, 13, n, "while a writer is stopped mid-move");
	assert_busy_in_time(&t, 15, "stopped mid-move");
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(shmf_cuckoo_lock(&t.g), 0);
	assert_int_equal(atomic_load(&t.g.meta->moving), 0);
	shmf_cuckoo_unlock(&t.g);
	all_found(&t, 13, n, "after the writer stopped mid-move was killed");
	printf("writer stopped mid-move on stripes %llu and %llu: %llu checks in %llu ms\n",
	       (unsigned long long)(moving & 0xffffffffu) - 1, (unsigned long long)(moving >> 32) - 1,
	       (unsigned long long)n, (unsigned long long)ms);
	table_close(&t);
}

/* Buckets of 4 (16-bit fingerprints) and of 2 with 32-bit ones. */
static void test_lock_holder_stopped(void **state)
{
	(void)state;
	lock_holder_stopped(4, 0.01);
	lock_holder_stopped(2, 1e-9);
}

static void stall_copy(void)
{
	usleep(1000);
}

/* Stop this process the first time it is called. */
static void stop_once(void)
{
	static int stopped;
	if (!stopped++)
		raise(SIGSTOP);
}

/* The image a copy made, as a table to look keys up in. */
static struct shmf_cuckoo_geom image_of(const struct table *t, void *img)
{
	struct shmf_cuckoo_geom g = t->g;
	g.meta = img;
	g.buckets = (char *)img + sizeof(struct shmf_cuckoo_meta);
	g.cow = NULL;
	return g;
}

/*
 * A writer of test_copy_while_moving(), in a forked child: adds @p churn
 * keys of @p family, then deletes and adds back every other one, round
 * after round, until *@p stop. Exits 0, or 2-4 at the first add or
 * delete that failed.
 */
static void churn_until_stopped(struct table *t, unsigned family, uint64_t churn, _Atomic int *stop)
{
	for (uint64_t i = 0; i < churn; i++) {
		struct shmf_cuckoo_key k = key(t, family, i);
		if (shmf_cuckoo_add(&t->g, &k) != 0)
			_exit(2);
	}
	for (uint64_t round = 0; !atomic_load(stop); round++) {
		for (uint64_t i = round & 1; i < churn; i += 2) {
			struct shmf_cuckoo_key k = key(t, family, i);
			if (shmf_cuckoo_del(&t->g, &k) != 1)
				_exit(3);
		}
		for (uint64_t i = round & 1; i < churn; i += 2) {
			struct shmf_cuckoo_key k = key(t, family, i);
			if (shmf_cuckoo_add(&t->g, &k) != 0)
				_exit(4);
		}
	}
	_exit(0);
}

/* What the copies of copy_ten_times() met. */
struct copy_run {
	unsigned copies, cancelled; /* copies that completed; copies the writers cancelled */
	uint64_t most;              /* the most moves during one completed copy */
};

/*
 * Ten copies of table @p t into @p img (t->len bytes), a millisecond a
 * piece (stall_copy) while the writers move keys, each tried again when
 * cancelled (100 cancels at most): each image holds every one of the
 * @p stable keys of family 16, with no move in progress and the lock free.
 */
static struct copy_run copy_ten_times(struct table *t, void *img, uint64_t stable)
{
	struct copy_run run = { 0 };
	shmf_cuckoo_copy_hook = stall_copy;
	while (run.copies < 10) {
		uint64_t m0 = atomic_load(&t->g.meta->moves);
		int r = shmf_cuckoo_copy(&t->g, img, t->len);
		if (r == -EAGAIN) {
			run.cancelled++;
			assert_true(run.cancelled < 100);
			continue;
		}
		assert_int_equal(r, 0);
		run.copies++;
		uint64_t during = atomic_load(&t->g.meta->moves) - m0;
		run.most = during > run.most ? during : run.most;
		struct shmf_cuckoo_geom g = image_of(t, img);
		assert_int_equal(atomic_load(&g.meta->moving), 0);
		assert_false(shmf_cuckoo_lock_held(g.meta));
		for (uint64_t i = 0; i < stable; i++) {
			struct shmf_cuckoo_key k = key(t, 16, i);
			if (shmf_cuckoo_count(&g, &k) < 1)
				fail_msg("copy %u: stable key %llu missing from the image (%llu moves during the copy)",
					 run.copies, (unsigned long long)i, (unsigned long long)during);
		}
	}
	shmf_cuckoo_copy_hook = NULL;
	return run;
}

/*
 * A copier (a forked child) stopped in the middle of its copy of @p t into
 * @p img: writers go on. This process adds and deletes 20,000 keys of
 * family 19 at high load meanwhile; the writers cancel the copy, and the
 * copier, let go, finds it cancelled. @return the slowest of those adds,
 * in ns.
 */
static uint64_t add_past_stopped_copier(struct table *t, void *img)
{
	uint64_t worst_ns = 0;
	pid_t copier = fork();
	assert_true(copier >= 0);
	if (copier == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		shmf_cuckoo_copy_hook = stop_once;
		int r = shmf_cuckoo_copy(&t->g, img, t->len);
		_exit(r == -EAGAIN ? 0 : r == 0 ? 5 : 6);
	}
	int st;
	assert_int_equal(waitpid(copier, &st, WUNTRACED), copier);
	assert_true(WIFSTOPPED(st)); /* copying (the churning writers may cancel it already) */
	for (uint64_t i = 0; i < 20000; i++) {
		struct shmf_cuckoo_key k = key(t, 19, i);
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		int r = shmf_cuckoo_add(&t->g, &k);
		clock_gettime(CLOCK_MONOTONIC, &b);
		assert_true(r == 0 || r == SHMF_E_FULL);
		uint64_t ns = (uint64_t)((b.tv_sec - a.tv_sec) * 1000000000 + (b.tv_nsec - a.tv_nsec));
		worst_ns = ns > worst_ns ? ns : worst_ns;
		if (r == 0 && shmf_cuckoo_del(&t->g, &k) != 1)
			fail_msg("key 19/%llu added, then not found by its delete", (unsigned long long)i);
	}
	assert_int_equal(atomic_load(&t->g.cow->active), 0); /* the writers cancelled the copy */
	kill(copier, SIGCONT);
	assert_int_equal(waitpid(copier, &st, 0), copier);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("the stopped copier's copy was not cancelled (status %#x)", st);
	return worst_ns;
}

/*
 * shmf_cuckoo_copy() while 2 writers add and delete at 90-95% load (moves
 * all the time): every key stored before the copy began is in the image,
 * once (the stable keys are each added once; the image counts no more
 * copies of one than the table has once the writers stopped, give or take
 * keys of the churn that share its fingerprint and buckets). A copier that
 * stops in the middle holds no writer up: the writers cancel its copy
 * after a few milliseconds without room in the log.
 */
static void copy_while_moving(uint32_t bucket_size, double fpr)
{
	struct table t;
	table_open_b(&t, 200000, fpr, bucket_size);
	/* 94% of the slots at most (buckets of 4), 80% (buckets of 2). */
	const uint64_t stable = slots(&t) * (bucket_size == 2 ? 40 : 50) / 100,
		       churn = slots(&t) * (bucket_size == 2 ? 40 : 44) / 100 / 2;
	for (uint64_t i = 0; i < stable; i++) {
		struct shmf_cuckoo_key k = key(&t, 16, i);
		assert_int_equal(shmf_cuckoo_add(&t.g, &k), 0);
	}
	_Atomic int *stop = fixture_shared_map(sizeof(*stop));
	pid_t pids[2];
	for (int p = 0; p < 2; p++) {
		pids[p] = fork();
		assert_true(pids[p] >= 0);
		if (pids[p] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failing test ends its writers too */
			churn_until_stopped(&t, 17 + (unsigned)p, churn, stop);
		}
	}
	void *img = malloc(t.len);
	assert_non_null(img);
	uint64_t moves0 = atomic_load(&t.g.meta->moves);
	/* Copy once the writers relocate, a millisecond per piece: moves then
	 * run during every copy. */
	for (unsigned ms = 0; atomic_load(&t.g.meta->moves) - moves0 < 10000; ms++) {
		if (ms > 60000)
			fail_msg("the writers made no 10,000 moves in a minute");
		usleep(1000);
	}
	struct copy_run run = copy_ten_times(&t, img, stable);
	uint64_t worst_ns = add_past_stopped_copier(&t, img);
	atomic_store(stop, 1);
	for (int p = 0; p < 2; p++) {
		int st;
		assert_int_equal(waitpid(pids[p], &st, 0), pids[p]);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fail_msg("writer %d: status %#x", p, st);
	}
	printf("%u consistent copies (%u cancelled and tried again) while writers made %llu moves, up to %llu "
	       "during one copy; with the copier stopped, the slowest add took %.1f ms\n",
	       run.copies, run.cancelled, (unsigned long long)(atomic_load(&t.g.meta->moves) - moves0),
	       (unsigned long long)run.most, (double)worst_ns / 1e6);
	assert_true(run.most > 100);
	if (worst_ns > 2000 * 1000000u)
		fail_msg("an add waited %.1f ms for a stopped copier (the log wait is 5 ms)", (double)worst_ns / 1e6);
	free(img);
	munmap((void *)stop, sizeof(*stop));
	table_close(&t);
}

static void test_copy_while_moving(void **state)
{
	(void)state;
	copy_while_moving(4, 0.01);
	copy_while_moving(2, 1e-9);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest all[] = {
		cmocka_unit_test(test_sizing),
		cmocka_unit_test(test_sizing_32),
		cmocka_unit_test(test_fpr_32),
		cmocka_unit_test(test_small_capacities),
		cmocka_unit_test(test_load_and_fpr),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_delete_and_count),
		cmocka_unit_test(test_no_false_negatives_under_churn),
		cmocka_unit_test(test_lock_holder_killed),
		cmocka_unit_test(test_lock_holder_stopped),
		cmocka_unit_test(test_copy_while_moving),
		cmocka_unit_test(test_layouts),
		cmocka_unit_test(test_layouts_churn),
		cmocka_unit_test(test_long_paths),
	};
	const char *const names[] = { "sizing", "sizing32", "fpr32",         "small",     "load_fpr",
				      "full",   "delete",   "churn",         "killed",    "stopped",
				      "copy",   "layouts",  "layouts_churn", "long_paths" };
	return fixture_run(argc, argv, all, names);
}
