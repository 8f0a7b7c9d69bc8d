/*
 * test-static.c - static filters (binary fuse, libclient/fuse.h): built
 * from a set with duplicates, restored into a registry and checked
 * through libshmf one key at a time and in batches; the false-positive
 * rate of each fingerprint width; writes refused; a forged or damaged
 * table refused by the reader, the registry and a new handle; sizing past
 * 2^32 keys; a swap from Bloom to static and back under forked workers.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/fixture.h"
#include "libclient/fuse.h"
#include "libclient/geometry.h"
#include "libclient/hash.h"
#include "common/fuse-build.h"
#include "common/snapshot.h"
#include "common/spec.h"

static struct fixture fx;

/* How a test file is made: keys of family 1, numbers 0..n-1, each
 * @p copies times; the table forged when @p forge. */
struct spec_file {
	uint64_t n;
	unsigned copies;
	double fpr;
	int forge;
};

/* Build the static filter of the spec into snapshot @p path, named
 * @p name. @return its distinct keys. */
static uint64_t make_static(const char *path, const char *name, const struct spec_file *sp)
{
	uint64_t seed = UINT64_C(0x5eed) ^ sp->n, total = sp->n * sp->copies;
	uint64_t *h = malloc(total * sizeof(*h));
	assert_non_null(h);
	char key[128]; /* XXH3's longer paths in reach of gcc's bounds analysis */
	for (uint64_t i = 0; i < total; i++) {
		size_t len = fixture_key(key, 1, i % sp->n);
		h[i] = shmf_hash(key, len, seed);
	}
	struct fuse_built b;
	assert_int_equal(fuse_build(h, total, sp->fpr, &b), 0);
	free(h);
	if (sp->forge)
		((struct shmf_fuse_table *)b.payload)->mix ^= 1, ((struct shmf_fuse_table *)b.payload)->keys++;
	struct filter_spec fs;
	spec_defaults(&fs, name);
	fs.type = SHMF_TYPE_STATIC;
	fs.capacity = b.keys;
	fs.fpr = sp->fpr;
	struct shmf_geometry g;
	assert_int_equal(shmf_geometry_size(SHMF_TYPE_STATIC, b.keys, sp->fpr, 0, 0, &g), 0);
	assert_int_equal(g.nblocks, b.p.nblocks);
	struct snap_source src = { .nsections = 1 };
	snapshot_header_fill(&src.hdr, &fs, &g, seed, 1, 1);
	src.sec[0] = (struct shmf_snap_section){ .generation = 1, .created_epoch = 1, .items = b.keys };
	src.payload[0] = b.payload;
	char err[SNAPSHOT_ERR_MAX];
	if (snapshot_write(path, &src, 0644, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	uint64_t keys = b.keys;
	fuse_built_free(&b);
	return keys;
}

static shmf_t *restore_static(const char *name, const struct spec_file *sp, uint64_t *distinct)
{
	char path[512], err[512];
	snprintf(path, sizeof(path), "%s/%s.snap", fx.files, name);
	*distinct = make_static(path, name, sp);
	if (fixture_replace(&fx, name, path, REGISTRY_RESTORE, err, sizeof(err)) < 0)
		fail_msg("restore: %s", err);
	return fixture_open(name, SHMF_RDONLY);
}

/* Every key of the set, one by one and in batches of 1000: present. */
static void all_present(shmf_t *f, uint64_t n)
{
	char key[1000][32];
	shmf_key_t batch[1000];
	uint8_t out[1000];
	for (uint64_t i = 0; i < n; i += 1000) {
		size_t m = n - i < 1000 ? (size_t)(n - i) : 1000;
		for (size_t j = 0; j < m; j++) {
			batch[j] = (shmf_key_t){ key[j], fixture_key(key[j], 1, i + j) };
			if (shmf_check(f, batch[j].ptr, batch[j].len) != 1)
				fail_msg("key %" PRIu64 " of the set reads as absent", i + j);
		}
		memset(out, 7, sizeof(out));
		assert_int_equal(shmf_check_many(f, batch, m, out), (int)m);
		for (size_t j = 0; j < m; j++)
			assert_int_equal(out[j], 1);
	}
}

/* Zero false negatives at each width; duplicates in the input counted
 * once, and the filter's items and shape say the distinct keys. */
static void test_no_false_negatives(void **state)
{
	(void)state;
	const double rates[] = { 0.01, 1e-4, 1e-9 };
	const uint32_t bits[] = { 8, 16, 32 };
	for (unsigned w = 0; w < 3; w++) {
		struct spec_file sp = { .n = 100000 + w * 37, .copies = 2, .fpr = rates[w] };
		char name[32];
		snprintf(name, sizeof(name), "set%u", w);
		uint64_t distinct;
		shmf_t *f = restore_static(name, &sp, &distinct);
		assert_int_equal(distinct, sp.n);
		all_present(f, sp.n);
		shmf_info_t info;
		assert_int_equal(shmf_info(f, &info), 0);
		assert_int_equal(info.type, SHMF_TYPE_STATIC);
		assert_int_equal(info.fingerprint_bits, bits[w]);
		assert_int_equal(info.items, sp.n);
		assert_int_equal(info.capacity, sp.n);
		double bpk = (double)info.bits / (double)sp.n;
		/* 1.125 fingerprints a key from 10^6 keys; at 10^5, 1.175. */
		assert_true(bpk > bits[w] * 1.17 && bpk < bits[w] * 1.19);
		shmf_close(f);
	}
	/* Tiny sets: one key, two keys, three. */
	for (uint64_t n = 1; n <= 3; n++) {
		struct spec_file sp = { .n = n, .copies = 3, .fpr = 0.01 };
		char name[32];
		snprintf(name, sizeof(name), "tiny%" PRIu64, n);
		uint64_t distinct;
		shmf_t *f = restore_static(name, &sp, &distinct);
		assert_int_equal(distinct, n);
		all_present(f, n);
		shmf_close(f);
	}
}

/* Absent keys (family 2) that read as present, out of @p n. */
static uint64_t false_positives(shmf_t *f, uint64_t n)
{
	char key[256][32];
	shmf_key_t batch[256];
	uint8_t out[256];
	uint64_t fp = 0, single = 0;
	for (uint64_t i = 0; i < n; i += 256) {
		for (size_t j = 0; j < 256; j++)
			batch[j] = (shmf_key_t){ key[j], fixture_key(key[j], 2, i + j) };
		int r = shmf_check_many(f, batch, 256, out);
		assert_true(r >= 0);
		fp += (uint64_t)r;
		if (i < n / 8)
			for (size_t j = 0; j < 256; j++)
				single += (uint64_t)(shmf_check(f, batch[j].ptr, batch[j].len) == 1) != out[j];
	}
	assert_int_equal(single, 0); /* one by one as in batches */
	return fp;
}

/* The rate of each width on absent keys: 2^-8 and 2^-16 within four
 * standard deviations (so a check that always said "absent" fails too),
 * 2^-32 as the model says (no false positive in 2^22 keys but by a chance
 * of 1 in 1000). */
static void test_fpr(void **state)
{
	(void)state;
	const double rates[] = { 0.005, 2e-5, 1e-9 };
	const uint64_t absent[] = { UINT64_C(1) << 20, UINT64_C(1) << 23, UINT64_C(1) << 22 };
	for (unsigned w = 0; w < 3; w++) {
		struct spec_file sp = { .n = 200000, .copies = 1, .fpr = rates[w] };
		char name[32];
		snprintf(name, sizeof(name), "fpr%u", w);
		uint64_t distinct;
		shmf_t *f = restore_static(name, &sp, &distinct);
		uint64_t fp = false_positives(f, absent[w]);
		shmf_info_t info;
		assert_int_equal(shmf_info(f, &info), 0);
		double expect = (double)absent[w] * info.fpr_estimate, sd = sqrt(expect);
		printf("  %u-bit: %" PRIu64 " false positives in %" PRIu64 " absent keys (expected %.1f)\n",
		       info.fingerprint_bits, fp, absent[w], expect);
		assert_true(info.fpr_estimate <= rates[w]);
		if (w < 2)
			assert_true(fabs((double)fp - expect) <= 4 * sd);
		else
			assert_true(fp <= 1);
		shmf_close(f);
	}
}

/* Adds, batch adds, unique and capped adds, deletes: SHMF_E_STATIC, the
 * filter unchanged; counts: SHMF_E_TYPE. */
static void test_writes_refused(void **state)
{
	(void)state;
	struct spec_file sp = { .n = 5000, .copies = 1, .fpr = 0.01 };
	uint64_t distinct;
	shmf_close(restore_static("ro", &sp, &distinct));
	shmf_t *f = fixture_open("ro", SHMF_RDWR);
	char key[32];
	size_t len = fixture_key(key, 2, 12345);
	int before = shmf_check(f, key, len);
	shmf_key_t k = { key, len };
	uint8_t out = 9;
	assert_int_equal(shmf_add(f, key, len), SHMF_E_STATIC);
	assert_int_equal(shmf_add_many(f, &k, 1, &out), SHMF_E_STATIC);
	assert_int_equal(shmf_add_unique(f, key, len), SHMF_E_STATIC);
	assert_int_equal(shmf_add_capped(f, key, len, 3), SHMF_E_STATIC);
	assert_int_equal(shmf_del(f, key, len), SHMF_E_STATIC);
	assert_int_equal(shmf_count(f, key, len), SHMF_E_TYPE);
	assert_non_null(strstr(shmf_strerror(SHMF_E_STATIC), "static"));
	assert_int_equal(shmf_check(f, key, len), before);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.items, sp.n);
	shmf_close(f);
}

/* A table that does not match its header (its checksums good: a forged
 * file) is refused by the reader naming bytes 4096-4159, by the
 * registry's swap with the filter unchanged; a table scribbled in the
 * live data file is refused by a new handle. */
static void test_forged_table(void **state)
{
	(void)state;
	struct spec_file good = { .n = 3000, .copies = 1, .fpr = 0.01 };
	uint64_t distinct;
	shmf_t *f = restore_static("forged", &good, &distinct);
	char path[512], err[512];
	snprintf(path, sizeof(path), "%s/bad.snap", fx.files);
	struct spec_file bad = good;
	bad.forge = 1;
	make_static(path, "forged", &bad);
	struct snap_file sf;
	assert_int_equal(snapshot_open(&sf, path, err, sizeof(err)), SHMF_E_FORMAT);
	assert_non_null(strstr(err, "bytes 4096-4159"));
	assert_int_equal(fixture_replace(&fx, "forged", path, REGISTRY_SWAP, err, sizeof(err)), SHMF_E_FORMAT);
	assert_non_null(strstr(err, "4096-4159"));
	all_present(f, good.n);
	/* Scribbled in place: the table's magic. */
	char data[512];
	fixture_data_path(&fx, "forged", data, sizeof(data));
	FILE *fp = fopen(data, "r+");
	assert_non_null(fp);
	assert_int_equal(fseek(fp, SHMF_DATA_BLOCKS_OFF, SEEK_SET), 0);
	assert_int_equal(fputc('X', fp), 'X');
	fclose(fp);
	shmf_t *g = NULL;
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, "forged", SHMF_RDONLY, &g), SHMF_E_FORMAT);
	shmf_close(f);
}

/* Sizing: the width each rate gets; the paper's bits a key at large sets;
 * past 2^32 keys, 64-bit positions within the array, in three
 * consecutive segments. */
static void test_sizing(void **state)
{
	(void)state;
	assert_int_equal(shmf_fuse_bits_for(0.004), 8);
	assert_int_equal(shmf_fuse_bits_for(ldexp(1, -8)), 8);
	assert_int_equal(shmf_fuse_bits_for(0.0039), 16);
	assert_int_equal(shmf_fuse_bits_for(2e-5), 16);
	assert_int_equal(shmf_fuse_bits_for(1e-5), 32);
	assert_int_equal(shmf_fuse_bits_for(1e-10), 0);
	struct shmf_fuse_params p;
	assert_int_equal(shmf_fuse_size(0, 0.01, &p), SHMF_E_INVAL);
	assert_int_equal(shmf_fuse_size(1000, 1e-10, &p), SHMF_E_INVAL);
	const uint64_t sizes[] = { 100000000, UINT64_C(6) << 30, UINT64_C(1) << 34 };
	for (unsigned s = 0; s < 3; s++) {
		assert_int_equal(shmf_fuse_size(sizes[s], 0.01, &p), 0);
		double bpk = (double)p.array_len * 8 / (double)sizes[s];
		assert_true(bpk >= 9.0 && bpk < 9.05);
		assert_int_equal(p.segment_len, s == 0 ? SHMF_FUSE_SEGMENT_MAX / 2 : SHMF_FUSE_SEGMENT_MAX);
		assert_int_equal(shmf_fuse_shape_check(8, p.segment_len, p.nblocks, p.array_len), 0);
		uint64_t count_len = p.segment_count * p.segment_len, st = 42, top = 0;
		for (int i = 0; i < 100000; i++) {
			uint64_t m = fixture_random(&st);
			struct shmf_fuse_pos q = shmf_fuse_locate(m, count_len, p.segment_len, p.segment_len - 1, 8);
			assert_true(q.p2 < p.array_len);
			assert_int_equal(q.p1 / p.segment_len, q.p0 / p.segment_len + 1);
			assert_int_equal(q.p2 / p.segment_len, q.p0 / p.segment_len + 2);
			top = q.p0 > top ? q.p0 : top;
		}
		/* The first positions reach the last segments, past 2^32. */
		assert_true(top > count_len - count_len / 1000);
	}
	/* A shape one fingerprint off is refused. */
	assert_int_equal(shmf_fuse_size(1000000, 0.01, &p), 0);
	assert_int_equal(shmf_fuse_shape_check(8, p.segment_len, p.nblocks, p.array_len + p.segment_len),
			 SHMF_E_FORMAT);
	assert_int_equal(shmf_fuse_shape_check(8, p.segment_len * 3, p.nblocks, p.array_len), SHMF_E_FORMAT);
}

enum { WORKERS = 3, SWAP_KEYS = 20000 };

struct board {
	_Atomic int stop;
	_Atomic uint64_t checks[WORKERS];
	_Atomic uint64_t misses[WORKERS];
	_Atomic uint64_t errors[WORKERS];
	_Atomic uint32_t types_seen[WORKERS]; /* bit 1 << type */
};

static void worker(struct board *b, unsigned w)
{
	shmf_t *f = NULL;
	if (shmf_open(FIXTURE_INSTANCE, "swapped", SHMF_RDONLY, &f) < 0)
		_exit(3);
	char key[32];
	uint64_t i = w;
	while (!atomic_load(&b->stop)) {
		size_t len = fixture_key(key, 1, i++ % SWAP_KEYS);
		int r = shmf_check(f, key, len);
		if (r < 0)
			atomic_fetch_add(&b->errors[w], 1);
		else if (r == 0)
			atomic_fetch_add(&b->misses[w], 1);
		atomic_fetch_add(&b->checks[w], 1);
		shmf_info_t info;
		if ((i & 1023) == 0 && shmf_info(f, &info) == 0)
			atomic_fetch_or(&b->types_seen[w], 1u << info.type);
	}
	shmf_close(f);
	_exit(0);
}

static void swap_to(const char *path)
{
	char err[512];
	if (fixture_replace(&fx, "swapped", path, REGISTRY_SWAP, err, sizeof(err)) < 0)
		fail_msg("swap %s: %s", path, err);
	usleep(100000);
}

/* Bloom to static and back, three times, while forked workers check the
 * set's keys: never an error, never a key of the set absent, and every
 * worker saw both types. */
static void wait_types(struct board *b, unsigned bit)
{
	for (int i = 0; i < 10000; i++) {
		unsigned all = 1;
		for (unsigned w = 0; w < WORKERS; w++)
			all &= (atomic_load(&b->types_seen[w]) & bit) != 0;
		if (all)
			return;
		usleep(1000);
	}
}

static void test_swap_reshape(void **state)
{
	(void)state;
	fixture_bloom(&fx, "swapped", SWAP_KEYS, 0.01);
	shmf_t *w = fixture_open("swapped", SHMF_RDWR);
	char key[32], bloom_path[512], static_path[512], err[512];
	for (uint64_t i = 0; i < SWAP_KEYS; i++) {
		size_t len = fixture_key(key, 1, i);
		assert_true(shmf_add(w, key, len) >= 0);
	}
	shmf_close(w);
	snprintf(bloom_path, sizeof(bloom_path), "%s/bloom.snap", fx.files);
	snprintf(static_path, sizeof(static_path), "%s/static.snap", fx.files);
	if (registry_snapshot(&fx.reg, "swapped", bloom_path, NULL, err, sizeof(err)) < 0)
		fail_msg("snapshot: %s", err);
	struct spec_file sp = { .n = SWAP_KEYS, .copies = 1, .fpr = 0.01 };
	make_static(static_path, "swapped", &sp);
	struct board *b = fixture_shared_map(sizeof(*b));
	pid_t pids[WORKERS];
	for (unsigned i = 0; i < WORKERS; i++)
		if ((pids[i] = fork()) == 0)
			worker(b, i);
	usleep(100000);
	/* After each swap, wait (up to 10 s) until every worker has checked
	 * the new type: on a busy machine a worker may not run between swaps. */
	for (int round = 0; round < 3; round++) {
		swap_to(static_path);
		wait_types(b, 1u << SHMF_TYPE_STATIC);
		swap_to(bloom_path);
		wait_types(b, 1u << SHMF_TYPE_BLOOM);
	}
	atomic_store(&b->stop, 1);
	for (unsigned i = 0; i < WORKERS; i++) {
		fixture_reap(pids[i]);
		assert_true(atomic_load(&b->checks[i]) > 1000);
		assert_int_equal(atomic_load(&b->errors[i]), 0);
		assert_int_equal(atomic_load(&b->misses[i]), 0);
		assert_int_equal(atomic_load(&b->types_seen[i]), (1u << SHMF_TYPE_BLOOM) | (1u << SHMF_TYPE_STATIC));
	}
	munmap(b, sizeof(*b));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		fixture_unit_test(test_no_false_negatives, fx),
		fixture_unit_test(test_fpr, fx),
		fixture_unit_test(test_writes_refused, fx),
		fixture_unit_test(test_forged_table, fx),
		fixture_unit_test(test_sizing, fx),
		fixture_unit_test(test_swap_reshape, fx),
	};
	static const char *const names[] = { "no_false_negatives", "fpr",    "writes_refused",
					     "forged_table",       "sizing", "swap_reshape" };
	return fixture_run(argc, argv, tests, names);
}
