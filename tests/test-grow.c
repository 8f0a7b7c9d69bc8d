/*
 * test-grow.c - growing filters through libshmf on filters shmd's registry
 * made, the grow tick (grow_filter()) called by hand: layers published
 * one by one and checked against the layer function, a standby looked at
 * only once opened, every key found across layers, "new" over every
 * layer, the measured FPR of a filter grown through 8 layers within its
 * declared rate (the layers' rates sum to 0.89%; one filter's small first
 * layers vary from filter to filter by a few percent); NONSCALING
 * refusals; cuckoo layers (counts, deletes, full without
 * a standby, EXPANSION 0), and those of buckets of 2 (every layer the first
 * one's bucket size, through a snapshot too); the layer limit; capped adds exact across a
 * layer switch from 8 processes; the one-layer view is the plain one; bad
 * specs refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libclient/cuckoo.h"
#include "tests/fixture.h"
#include "shmd/files/grow.h"
#include "libclient/hash.h"
#include "libclient/journal.h"
#include "libclient/layers.h"
#include "libclient/rundir.h"
#include "common/snapshot.h"

static struct fixture fx;

static const struct shmf_slot *slot_of(int slot)
{
	return &fx.reg.ctl.slots[slot];
}

/* Add keys [from, to) of @p family; @return how many were new (Bloom) or stored (cuckoo). */
static uint64_t add_range(shmf_t *f, unsigned family, uint64_t from, uint64_t to)
{
	char key[32];
	uint64_t n = 0;
	for (uint64_t i = from; i < to; i++) {
		int r = shmf_add(f, key, fixture_key(key, family, i));
		if (r < 0)
			fail_msg("add of key %llu: %s", (unsigned long long)i, shmf_strerror(r));
		n += (uint64_t)r;
	}
	return n;
}

static uint64_t found(shmf_t *f, unsigned family, uint64_t from, uint64_t to)
{
	char key[32];
	uint64_t n = 0;
	for (uint64_t i = from; i < to; i++)
		n += shmf_check(f, key, fixture_key(key, family, i)) == 1;
	return n;
}

/* Keys of @p family from @p from on added one by one until the current
 * layer holds @p items (seen through @p r). @return the next key. */
static uint64_t add_until_items(shmf_t *w, shmf_t *r, unsigned family, uint64_t from, uint64_t items)
{
	struct shmf_layer_status st[SHMF_LAYERS_MAX];
	uint64_t n = from;
	while (shmf_layers(r, st, SHMF_LAYERS_MAX) >= 1 && st[0].items < items) {
		add_range(w, family, n, n + 1);
		n++;
	}
	assert_int_equal(st[0].items, items);
	return n;
}

/* Keys added one grow tick apart, @p step at a time, as a steady adder
 * with shmd's tick between its batches would. */
static void add_ticking(int slot, shmf_t *f, unsigned family, uint64_t from, uint64_t to, uint64_t step)
{
	for (uint64_t i = from; i < to; i += step) {
		add_range(f, family, i, i + step < to ? i + step : to);
		grow_filter(&fx.reg, slot);
	}
}

/* A Bloom filter grown layer by layer: the standby made at half, checked
 * only once opened, opened by the adder that found the current layer
 * full, made current by the tick; every layer's shape the function's. */
static void test_bloom_layers(void **state)
{
	(void)state;
	/* First layer B keys; N keys in all: 7 full layers and the eighth a
	 * quarter full (the first layers of a few thousand keys, so that
	 * their rates vary little from one filter to the next). */
	enum { B = 4000, N = 4000 * 127 + 4000 * 32 };
	int slot = fixture_growing(&fx, "g", SHMF_TYPE_BLOOM, B, 0.01, 2, 0);
	shmf_t *w = fixture_open("g", SHMF_RDWR), *r = fixture_open("g", SHMF_RDONLY);
	shmf_info_t info;
	assert_true(slot_of(slot)->flags & SHMF_SLOT_LAYERED);
	assert_int_equal(slot_of(slot)->expansion, 2);

	/* Below half: no standby. (Counted in items: a new key that a false
	 * positive answers present is none.) */
	uint64_t n1 = add_until_items(w, r, 1, 0, B / 2 - 1);
	grow_filter(&fx.reg, slot);
	assert_int_equal(slot_of(slot)->nlive, 1);
	/* Half: the next layer, made ahead, not yet current. */
	n1 = add_until_items(w, r, 1, n1, B / 2);
	grow_filter(&fx.reg, slot);
	assert_int_equal(slot_of(slot)->nlive, 2);
	assert_true(slot_of(slot)->flags & SHMF_SLOT_STANDBY);
	assert_int_equal(shmf_info(r, &info), 0);
	assert_int_equal(info.live_generations, 1); /* the standby is no layer yet */
	struct shmf_layer_status st[SHMF_LAYERS_MAX];
	assert_int_equal(shmf_layers(r, st, SHMF_LAYERS_MAX), 2);
	assert_true(st[1].standby && st[1].layer == 1 && st[1].capacity == 2 * B && st[1].state == 0);

	/* Full (B new keys; some answered 0, false positives): the adder
	 * moves to the standby at once (no tick between). */
	for (; shmf_layers(r, st, SHMF_LAYERS_MAX) == 2 && !(st[0].state & SHMF_LAYER_FULL); n1++)
		add_range(w, 1, n1, n1 + 1);
	assert_int_equal(st[0].items, B);
	/* New, but for the false positives of the full layer (0.5%). */
	uint64_t fresh2 = add_range(w, 2, 0, 100);
	assert_true(fresh2 >= 95);
	assert_int_equal(shmf_layers(r, st, SHMF_LAYERS_MAX), 2);
	assert_true(st[1].state & SHMF_LAYER_OPENED);
	assert_int_equal(st[1].items, fresh2);
	/* Both handles see every key, before the tick made it current. */
	assert_int_equal(found(r, 1, 0, n1), n1);
	assert_int_equal(found(r, 2, 0, 100), 100);
	/* "New" looks at every layer, and a key held is not added again. */
	assert_int_equal(add_range(w, 1, 0, n1), 0);
	assert_int_equal(shmf_layers(r, st, SHMF_LAYERS_MAX), 2);
	assert_int_equal(st[1].items, fresh2);

	/* The tick makes it current: the same ring, one generation number on. */
	uint64_t word = atomic_load(&slot_of(slot)->generation);
	grow_filter(&fx.reg, slot);
	assert_false(slot_of(slot)->flags & SHMF_SLOT_STANDBY);
	assert_int_equal(atomic_load(&slot_of(slot)->generation), word + 1);
	assert_int_equal(slot_of(slot)->live[0] + 1, word + 1);
	assert_int_equal(shmf_info(r, &info), 0);
	assert_int_equal(info.live_generations, 2);
	assert_int_equal(info.capacity, 2 * B); /* the current layer's */
	assert_int_equal(info.items_live, B + fresh2);
	assert_int_equal(found(r, 1, 0, n1) + found(r, 2, 0, 100), n1 + 100);

	/* On to 8 layers, a tick every 100 keys; each layer as the function makes it. */
	add_ticking(slot, w, 2, 100, N, B / 10);
	int n = shmf_layers(r, st, SHMF_LAYERS_MAX);
	assert_true(n >= 8);
	double fpr = 0.01;
	for (int i = 0; i < n; i++) {
		struct shmf_layer want;
		assert_int_equal(shmf_geometry_layer(SHMF_TYPE_BLOOM, B, fpr, 0, 0, 2, st[i].layer, &want), 0);
		assert_int_equal(st[i].capacity, want.capacity);
		assert_int_equal(st[i].k, want.g.k);
		assert_int_equal(st[i].nblocks, want.g.nblocks);
		assert_true(fabs(st[i].fpr - 0.01 * 0.9 * pow(0.5, st[i].layer + 1)) < 1e-15);
		assert_int_equal(st[i].capacity, (uint64_t)B << st[i].layer);
	}
	assert_int_equal(st[0].layer, 7);
	assert_int_equal(found(r, 1, 0, n1) + found(r, 2, 0, N), n1 + N);
	/* Absent keys: the rate of the whole filter within the declared one
	 * (the layers' rates sum to 0.89% for 7 full layers; one filter's
	 * small first layers vary by a few percent around that). */
	uint64_t fp = found(r, 9, 0, 1000000);
	print_message("8 layers, %llu keys: %llu false positives in 1,000,000 absent keys (%.4f%%, declared 1%%)\n",
		      (unsigned long long)(n1 + N), (unsigned long long)fp, (double)fp / 1e4);
	assert_true(fp <= 10000);
	shmf_close(w);
	shmf_close(r);
}

/* A NONSCALING filter takes exactly its capacity from one handle, then
 * refuses new keys (keys present answer 0); batches stop at the refusal. */
static void test_nonscaling(void **state)
{
	(void)state;
	int slot = fixture_growing(&fx, "ns", SHMF_TYPE_BLOOM, 5000, 0.001, 0, 1);
	assert_true(slot_of(slot)->flags & SHMF_SLOT_NONSCALING);
	shmf_t *w = fixture_open("ns", SHMF_RDWR);
	char key[32];
	uint64_t fresh = 0, i = 0;
	for (; fresh < 5000; i++) {
		int r = shmf_add(w, key, fixture_key(key, 1, i));
		assert_true(r == 0 || r == 1);
		fresh += (uint64_t)r;
	}
	/* Full: a new key refused, a present one answers 0, nothing grows. */
	int refused = 0;
	for (uint64_t j = 0; j < 100; j++) {
		int r = shmf_add(w, key, fixture_key(key, 2, j));
		assert_true(r == 0 || r == SHMF_E_NONSCALING);
		refused += r == SHMF_E_NONSCALING;
	}
	assert_true(refused >= 95);
	assert_int_equal(shmf_add(w, key, fixture_key(key, 1, 0)), 0);
	grow_filter(&fx.reg, slot);
	assert_int_equal(slot_of(slot)->nlive, 1);
	shmf_info_t info;
	assert_int_equal(shmf_info(w, &info), 0);
	assert_int_equal(info.items, 5000);
	assert_int_equal(found(w, 1, 0, i), i);
	/* A batch: the keys before the first refused are in, the rest are not. */
	shmf_key_t keys[3];
	char k0[32], k1[32], k2[32];
	keys[0] = (shmf_key_t){ k0, fixture_key(k0, 1, 1) };
	keys[1] = (shmf_key_t){ k1, fixture_key(k1, 3, 1) };
	keys[2] = (shmf_key_t){ k2, fixture_key(k2, 3, 2) };
	uint8_t out[3] = { 9, 9, 9 };
	int r = shmf_add_many(w, keys, 3, out);
	if (shmf_check(w, k1, keys[1].len) == 1 && r != SHMF_E_NONSCALING)
		skip(); /* k1 is a false positive: it answers 0 and the batch goes on */
	assert_int_equal(r, SHMF_E_NONSCALING);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[2], 0);
	assert_string_equal(shmf_strerror(SHMF_E_NONSCALING),
			    "non scaling filter is full (a NONSCALING Bloom filter holds its capacity and refuses new "
			    "keys)");
	shmf_close(w);
}

/* Cuckoo layers: counts and deletes over every layer, full without a
 * standby until the tick makes one, EXPANSION 0 (fixed) full for good. */
static void test_cuckoo_layers(void **state)
{
	(void)state;
	int slot = fixture_growing(&fx, "c", SHMF_TYPE_CUCKOO, 1000, 0.01, 1, 0);
	shmf_t *w = fixture_open("c", SHMF_RDWR);
	char key[32];
	/* No tick: the first layer fills up, then answers full. */
	uint64_t i = 0;
	int r;
	while ((r = shmf_add(w, key, fixture_key(key, 1, i))) == 1)
		i++;
	assert_int_equal(r, SHMF_E_FULL);
	assert_true(i >= 1000);
	assert_int_equal(found(w, 1, 0, i), i);
	/* The tick makes the next layer: the add goes there at once. */
	grow_filter(&fx.reg, slot);
	assert_true(slot_of(slot)->flags & SHMF_SLOT_STANDBY);
	assert_int_equal(shmf_add(w, key, fixture_key(key, 1, i)), 1);
	i++;
	add_ticking(slot, w, 1, i, 5000, 50);
	assert_true(slot_of(slot)->nlive >= 5);
	assert_int_equal(found(w, 1, 0, 5000), 5000);
	/* Counts over every layer; deletes take the newest copy first. */
	const char k[] = "twice";
	assert_int_equal(shmf_add(w, k, 5), 1);
	add_ticking(slot, w, 2, 0, 3000, 50);
	assert_int_equal(shmf_add(w, k, 5), 1);
	assert_int_equal(shmf_count(w, k, 5), 2);
	assert_int_equal(shmf_del(w, k, 5), 1);
	assert_int_equal(shmf_count(w, k, 5), 1);
	assert_int_equal(shmf_del(w, k, 5), 1);
	assert_int_equal(shmf_count(w, k, 5), 0);
	for (uint64_t j = 0; j < 5000; j += 2)
		assert_int_equal(shmf_del(w, key, fixture_key(key, 1, j)), 1);
	assert_int_equal(found(w, 1, 0, 5000) - found(w, 1, 0, 0), found(w, 1, 0, 5000));
	uint64_t odd = 0;
	for (uint64_t j = 1; j < 5000; j += 2)
		odd += shmf_check(w, key, fixture_key(key, 1, j)) == 1;
	assert_int_equal(odd, 2500);
	/* Unique adds over every layer. */
	assert_int_equal(shmf_add_unique(w, key, fixture_key(key, 1, 1)), 0);
	assert_int_equal(shmf_add_unique(w, "fresh", 5), 1);
	shmf_close(w);

	/* EXPANSION 0: a cuckoo filter that never grows. */
	slot = fixture_growing(&fx, "c0", SHMF_TYPE_CUCKOO, 1000, 0.01, 0, 0);
	w = fixture_open("c0", SHMF_RDWR);
	i = 0;
	while ((r = shmf_add(w, key, fixture_key(key, 1, i))) == 1) {
		i++;
		if (i % 100 == 0)
			grow_filter(&fx.reg, slot);
	}
	assert_int_equal(r, SHMF_E_FULL);
	assert_int_equal(slot_of(slot)->nlive, 1);
	assert_false(slot_of(slot)->flags & SHMF_SLOT_LAYERED);
	shmf_close(w);
}

/* Every layer of a growing cuckoo filter of buckets of 2 as the layer
 * function makes it: buckets of 2 and layer 0's fingerprint width, an even
 * number of buckets (the bucket function's H is odd for every size but 4),
 * the capacity its place gives. */
static void assert_bucket_layers_at(shmf_t *f, uint64_t capacity, double fpr, uint32_t fp_bits, int min_layers)
{
	struct shmf_layer_status st[SHMF_LAYERS_MAX];
	int n = shmf_layers(f, st, SHMF_LAYERS_MAX);
	assert_true(n >= min_layers);
	for (int i = 0; i < n; i++) {
		struct shmf_layer want;
		assert_int_equal(shmf_geometry_layer(SHMF_TYPE_CUCKOO, capacity, fpr, 0, 2, 2, st[i].layer, &want), 0);
		assert_int_equal(st[i].bucket_size, 2);
		assert_int_equal(st[i].k, fp_bits);
		assert_int_equal(st[i].capacity, capacity << st[i].layer);
		assert_int_equal(st[i].nbuckets, want.g.nbuckets);
		assert_int_equal(st[i].nblocks, want.g.nblocks);
		assert_int_equal(st[i].nbuckets % 2, 0);
	}
}

static void assert_bucket_layers(shmf_t *f, uint64_t capacity, uint32_t fp_bits, int min_layers)
{
	assert_bucket_layers_at(f, capacity, 0.01, fp_bits, min_layers);
}

/* A growing cuckoo filter of buckets of 2 (RedisBloom's BUCKETSIZE 2,
 * what CF.ADD creates on the fly) grows through at least 3 layers, each
 * with the first one's bucket size and fingerprint width: every key found
 * from a writer and from a reader opened after the growth (which checks
 * each layer's header against the layer function, bucket size included),
 * counts and deletes over the layers, the measured false-positive rate
 * within what the layers' rates sum to; a layer whose header says another
 * bucket size is refused. */
static void test_cuckoo_bucket_layers(void **state)
{
	(void)state;
	enum { B = 1000, N = 12000 };
	int slot = fixture_cuckoo_growing(&fx, "cb2", B, 0.01, 2, 2);
	assert_true(slot_of(slot)->flags & SHMF_SLOT_LAYERED);
	assert_int_equal(slot_of(slot)->bucket_size, 2);
	assert_int_equal(slot_of(slot)->expansion, 2);
	uint32_t fp_bits = slot_of(slot)->k;
	shmf_t *w = fixture_open("cb2", SHMF_RDWR);
	add_ticking(slot, w, 1, 0, N, 50);
	assert_true(slot_of(slot)->nlive >= 3);
	assert_int_equal(slot_of(slot)->bucket_size, 2);
	assert_int_equal(found(w, 1, 0, N), N);
	assert_bucket_layers(w, B, fp_bits, 3);

	shmf_t *r = fixture_open("cb2", SHMF_RDONLY);
	assert_int_equal(found(r, 1, 0, N), N);
	assert_bucket_layers(r, B, fp_bits, 3);
	shmf_info_t info;
	assert_int_equal(shmf_info(r, &info), 0);
	assert_int_equal(info.bucket_size, 2);
	assert_int_equal(info.fingerprint_bits, fp_bits);
	assert_true(info.live_generations >= 3);

	/* Counts and deletes over every layer. */
	char key[32];
	size_t len = fixture_key(key, 1, 7);
	assert_int_equal(shmf_count(r, key, len), 1);
	assert_int_equal(shmf_add(w, key, len), 1);
	assert_int_equal(shmf_count(r, key, len), 2);
	assert_int_equal(shmf_del(w, key, len), 1);
	assert_int_equal(shmf_del(w, key, len), 1);
	assert_int_equal(shmf_count(r, key, len), 0);
	assert_int_equal(shmf_add(w, key, len), 1);

	/* Absent keys: each layer answers for at most its own bound. */
	struct shmf_layer_status st[SHMF_LAYERS_MAX];
	int n = shmf_layers(r, st, SHMF_LAYERS_MAX);
	double bound = 0;
	for (int i = 0; i < n; i++)
		bound += shmf_cuckoo_fpr(st[i].capacity, st[i].nbuckets, st[i].k, st[i].bucket_size);
	uint64_t fp = found(r, 9, 0, 200000);
	print_message("%d layers of buckets of 2, %d-bit fingerprints: %llu false positives in 200,000 absent keys "
		      "(bound %.5f%%)\n",
		      n, (int)fp_bits, (unsigned long long)fp, bound * 100);
	assert_true((double)fp <= 1.5 * bound * 200000 + 10);
	shmf_close(r);

	/* The second layer's header edited to buckets of 4: a new handle
	 * refuses the filter; put back, it opens again. */
	char fname[128], path[512];
	uint64_t gen = slot_of(slot)->live[slot_of(slot)->nlive - 2];
	assert_int_equal(shmf_data_filename("cb2", gen, fname, sizeof(fname)), 0);
	fixture_path(&fx, fname, path, sizeof(path));
	FILE *hf = fopen(path, "r+b");
	assert_non_null(hf);
	uint32_t four = 4, two = 2;
	long at = (long)offsetof(struct shmf_data_header, bucket_size);
	assert_int_equal(fseek(hf, at, SEEK_SET), 0);
	assert_int_equal(fwrite(&four, sizeof(four), 1, hf), 1);
	fflush(hf);
	shmf_t *bad = NULL;
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, "cb2", SHMF_RDONLY, &bad), SHMF_E_FORMAT);
	assert_null(bad);
	assert_int_equal(fseek(hf, at, SEEK_SET), 0);
	assert_int_equal(fwrite(&two, sizeof(two), 1, hf), 1);
	fclose(hf);
	r = fixture_open("cb2", SHMF_RDONLY);
	assert_int_equal(found(r, 1, 0, N), N);
	shmf_close(r);
	shmf_close(w);
}

/* A growing cuckoo filter at 1e-9 (buckets of 2, 32-bit fingerprints):
 * every layer keeps 32-bit fingerprints and the layer function's shape,
 * every key is found from a writer and a new reader, a count and delete
 * reach the layers, and a snapshot restores with the same layers and
 * keys. */
static void test_cuckoo_layers_32(void **state)
{
	(void)state;
	enum { B = 1000, N = 12000 };
	int slot = fixture_cuckoo_growing(&fx, "cg32", B, 1e-9, 2, 2);
	assert_int_equal(slot_of(slot)->k, 32);
	shmf_t *w = fixture_open("cg32", SHMF_RDWR);
	add_ticking(slot, w, 1, 0, N, 50);
	assert_int_equal(found(w, 1, 0, N), N);
	assert_int_equal(found(w, 2, 0, N), 0); /* 12,000 absent keys at 1e-9: none */
	assert_bucket_layers_at(w, B, 1e-9, 32, 3);
	shmf_t *r = fixture_open("cg32", SHMF_RDONLY);
	assert_int_equal(found(r, 1, 0, N), N);
	/* Batch checks over every layer: each key present. */
	char keys[64][32];
	shmf_key_t ks[64];
	uint8_t out[64];
	for (uint64_t i = 0; i < N; i += 64) {
		unsigned n = N - i < 64 ? (unsigned)(N - i) : 64;
		for (unsigned j = 0; j < n; j++)
			ks[j] = (shmf_key_t){ keys[j], fixture_key(keys[j], 1, i + j) };
		assert_int_equal(shmf_check_many(r, ks, n, out), (int)n);
		for (unsigned j = 0; j < n; j++)
			assert_int_equal(out[j], 1);
	}
	char key[32];
	size_t len = fixture_key(key, 1, 7);
	assert_int_equal(shmf_count(r, key, len), 1);
	assert_int_equal(shmf_del(w, key, len), 1);
	assert_int_equal(shmf_count(r, key, len), 0);
	assert_int_equal(shmf_add(w, key, len), 1);

	char path[512], err[SNAPSHOT_ERR_MAX];
	snprintf(path, sizeof(path), "%s/cg32.snap", fx.files);
	assert_int_equal(registry_snapshot(&fx.reg, "cg32", path, NULL, err, sizeof(err)), 0);
	assert_true(fixture_replace(&fx, "cg32-copy", path, REGISTRY_RESTORE, err, sizeof(err)) >= 0);
	shmf_t *c = fixture_open("cg32-copy", SHMF_RDONLY);
	assert_int_equal(found(c, 1, 0, N), N);
	assert_bucket_layers_at(c, B, 1e-9, 32, 3);
	shmf_close(c);
	shmf_close(r);
	shmf_close(w);
}

/* A snapshot of that filter (version 3: LAYERED, its expansion, bucket
 * size 2, one section a layer) restores under another name with the same
 * layers, every key and count, and goes on growing with buckets of 2. */
static void test_cuckoo_bucket_snapshot(void **state)
{
	(void)state;
	enum { B = 1000, N = 9000 };
	int slot = fixture_cuckoo_growing(&fx, "cs2", B, 0.01, 2, 2);
	uint32_t fp_bits = slot_of(slot)->k;
	shmf_t *w = fixture_open("cs2", SHMF_RDWR);
	add_ticking(slot, w, 1, 0, N, 50);
	char key[32];
	for (uint64_t i = 0; i < 50; i++) /* second copies in older layers */
		assert_int_equal(shmf_add(w, key, fixture_key(key, 1, i)), 1);
	struct shmf_layer_status before[SHMF_LAYERS_MAX];
	int nb = shmf_layers(w, before, SHMF_LAYERS_MAX);
	unsigned layers = 0;
	for (int i = 0; i < nb; i++)
		layers += !(before[i].standby && !(before[i].state & SHMF_LAYER_OPENED));
	assert_true(layers >= 3);

	char path[512], err[SNAPSHOT_ERR_MAX];
	snprintf(path, sizeof(path), "%s/cs2.snap", fx.files);
	assert_int_equal(registry_snapshot(&fx.reg, "cs2", path, NULL, err, sizeof(err)), 0);
	struct snap_file sf;
	assert_int_equal(snapshot_open(&sf, path, err, sizeof(err)), 0);
	assert_int_equal(sf.hdr.version, SHMF_SNAP_VERSION);
	assert_true(sf.hdr.version >= 3); /* version 3 brought layers and bucket sizes */
	assert_true(sf.hdr.flags & SHMF_SNAP_F_LAYERED);
	assert_int_equal(sf.hdr.expansion, 2);
	assert_int_equal(sf.hdr.bucket_size, 2);
	assert_int_equal(sf.hdr.k, fp_bits);
	assert_int_equal(sf.hdr.nsections, layers);
	snapshot_close(&sf);

	assert_true(fixture_replace(&fx, "cs2-copy", path, REGISTRY_RESTORE, err, sizeof(err)) >= 0);
	int copy = registry_find(&fx.reg, "cs2-copy");
	assert_true(copy >= 0);
	assert_true(slot_of(copy)->flags & SHMF_SLOT_LAYERED);
	assert_int_equal(slot_of(copy)->bucket_size, 2);
	assert_int_equal(slot_of(copy)->expansion, 2);
	assert_int_equal(slot_of(copy)->nlive, layers);
	shmf_t *c = fixture_open("cs2-copy", SHMF_RDWR);
	assert_bucket_layers(c, B, fp_bits, (int)layers);
	struct shmf_layer_status after[SHMF_LAYERS_MAX];
	assert_int_equal(shmf_layers(c, after, SHMF_LAYERS_MAX), (int)layers);
	for (unsigned i = 0, j = 0; i < (unsigned)nb; i++) {
		if (before[i].standby && !(before[i].state & SHMF_LAYER_OPENED))
			continue;
		assert_int_equal(after[j].layer, before[i].layer);
		assert_int_equal(after[j].nbuckets, before[i].nbuckets);
		assert_int_equal(after[j].items, before[i].items);
		j++;
	}
	assert_int_equal(found(c, 1, 0, N), N);
	for (uint64_t i = 0; i < N; i += 97) {
		size_t len = fixture_key(key, 1, i);
		assert_int_equal(shmf_count(c, key, len), shmf_count(w, key, len));
	}
	/* It goes on growing, its new layers of buckets of 2. */
	add_ticking(copy, c, 2, 0, 4 * N, 100);
	assert_true(slot_of(copy)->nlive > layers);
	assert_int_equal(found(c, 1, 0, N) + found(c, 2, 0, 4 * N), 5 * N);
	assert_bucket_layers(c, B, fp_bits, (int)layers + 1);
	shmf_close(c);
	shmf_close(w);
}

/* SHMF_LAYERS_MAX (60) layers, then no more: the Bloom filter overfills
 * its last one, never refusing and never losing a key. With expansion 1
 * the layers past the 41st are sized at the floor rate (geometry.h). A
 * snapshot holds every layer and restores them. */
static void test_layer_limit(void **state)
{
	(void)state;
	int slot = fixture_growing(&fx, "lim", SHMF_TYPE_BLOOM, 10, 0.01, 1, 0);
	shmf_t *w = fixture_open("lim", SHMF_RDWR);
	add_ticking(slot, w, 1, 0, 1000, 1);
	assert_int_equal(slot_of(slot)->nlive, SHMF_LAYERS_MAX);
	assert_false(slot_of(slot)->flags & SHMF_SLOT_STANDBY);
	assert_int_equal(found(w, 1, 0, 1000), 1000);
	shmf_info_t info;
	assert_int_equal(shmf_info(w, &info), 0);
	assert_int_equal(info.live_generations, SHMF_LAYERS_MAX);
	/* A snapshot holds all 60 layers, one section each, and restores them. */
	char path[512], err[SNAPSHOT_ERR_MAX];
	snprintf(path, sizeof(path), "%s/lim.snap", fx.files);
	assert_int_equal(registry_snapshot(&fx.reg, "lim", path, NULL, err, sizeof(err)), 0);
	struct snap_file sf;
	assert_int_equal(snapshot_open(&sf, path, err, sizeof(err)), 0);
	assert_int_equal(sf.hdr.nsections, SHMF_LAYERS_MAX);
	snapshot_close(&sf);
	assert_true(fixture_replace(&fx, "lim-copy", path, REGISTRY_RESTORE, err, sizeof(err)) >= 0);
	int copy = registry_find(&fx.reg, "lim-copy");
	assert_true(copy >= 0);
	assert_int_equal(slot_of(copy)->nlive, SHMF_LAYERS_MAX);
	shmf_t *c = fixture_open("lim-copy", SHMF_RDONLY);
	assert_int_equal(found(c, 1, 0, 1000), 1000);
	shmf_close(c);
	shmf_close(w);
}

/* A filter created with the right capacity is one layer: the handle's view
 * has one part, as a plain filter's (the check runs the plain code). */
static void test_one_layer(void **state)
{
	(void)state;
	int slot = fixture_growing(&fx, "one", SHMF_TYPE_BLOOM, 100000, 0.01, 2, 0);
	shmf_t *w = fixture_open("one", SHMF_RDWR);
	add_ticking(slot, w, 1, 0, 40000, 1000);
	struct shmf_layer_status st[SHMF_LAYERS_MAX];
	assert_int_equal(shmf_layers(w, st, SHMF_LAYERS_MAX), 1);
	assert_int_equal(slot_of(slot)->nlive, 1);
	/* Its first layer is sized at 0.45 of the declared rate (geometry.h). */
	assert_true(fabs(st[0].fpr - 0.0045) < 1e-15);
	shmf_close(w);
}

/* Capped adds stay exact across a layer switch: 8 processes each try 10
 * capped adds (cap 4) of each of 40 keys into a cuckoo filter whose first
 * layer fills meanwhile (its other keys added by the same processes) while
 * the parent ticks: every key ends with exactly 4 copies. An add that
 * finds the current layer full before the tick made the next one answers
 * SHMF_E_FULL (nothing added), as designed. */
static void test_capped_across_layers(void **state)
{
	(void)state;
	int slot = fixture_growing(&fx, "cap", SHMF_TYPE_CUCKOO, 2000, 0.01, 1, 0);
	shmf_t *w = fixture_open("cap", SHMF_RDWR);
	add_range(w, 7, 0, 1700); /* close to full */
	_Atomic int *done = fixture_shared_map(sizeof(*done));
	pid_t kids[8];
	for (int p = 0; p < 8; p++) {
		kids[p] = fork();
		assert_true(kids[p] >= 0);
		if (kids[p] != 0)
			continue;
		shmf_t *f;
		if (shmf_open(FIXTURE_INSTANCE, "cap", SHMF_RDWR, &f) < 0)
			_exit(2);
		char key[32];
		int rc = 0;
		for (int round = 0; round < 10 && rc == 0; round++)
			for (uint64_t k = 0; k < 40 && rc == 0; k++) {
				/* Full, until the tick makes the next layer:
				 * nothing added, and a later round adds. */
				int r = shmf_add_capped(f, key, fixture_key(key, 1, k), 4);
				if ((r < 0 && r != SHMF_E_FULL) || r > 4) {
					fprintf(stderr, "capped add: %d (%s)\n", r, shmf_strerror(r));
					rc = 3;
				}
				/* Filler keys push the layers on. */
				r = shmf_add(f, key, fixture_key(key, 10 + (unsigned)p, (uint64_t)round * 40 + k));
				if (rc == 0 && r < 0 && r != SHMF_E_FULL) {
					fprintf(stderr, "add: %s\n", shmf_strerror(r));
					rc = 4;
				}
			}
		shmf_close(f);
		atomic_fetch_add(done, 1);
		_exit(rc);
	}
	while (atomic_load(done) < 8) {
		grow_filter(&fx.reg, slot);
		usleep(200);
	}
	for (int p = 0; p < 8; p++)
		fixture_reap(kids[p]);
	grow_filter(&fx.reg, slot);
	assert_true(slot_of(slot)->nlive >= 2);
	char key[32];
	for (uint64_t k = 0; k < 40; k++)
		if (shmf_count(w, key, fixture_key(key, 1, k)) != 4)
			fail_msg("key %llu: %d copies, want 4", (unsigned long long)k,
				 shmf_count(w, key, fixture_key(key, 1, k)));
	munmap((void *)done, sizeof(*done));
	shmf_close(w);
}

/* What REPLICATE with EXPANSION rests on: entries another node's adds
 * journalled, applied here by hash (as the fleet's follower applies
 * them), go where a local add would, the current layer, and grow the
 * filter; checks see every one. Cuckoo deletes take the newest copy. */
static void test_applied_by_hash(void **state)
{
	(void)state;
	char key[32];
	int slot = fixture_growing(&fx, "rb", SHMF_TYPE_BLOOM, 500, 0.01, 2, 0);
	uint64_t seed;
	assert_int_equal(registry_seed(&fx.reg, slot, &seed), 0);
	shmf_t *f = fixture_open("rb", SHMF_RDWR);
	for (uint64_t i = 0; i < 5000; i++) {
		struct shmf_jentry e = { .hash = shmf_hash(key, fixture_key(key, 1, i), seed), .op = SHMF_JOP_ADD };
		assert_true(shmf_journal_apply(f, &e) >= 0);
		if (i % 50 == 0)
			grow_filter(&fx.reg, slot);
	}
	assert_true(slot_of(slot)->nlive >= 4);
	assert_int_equal(found(f, 1, 0, 5000), 5000);
	shmf_close(f);

	slot = fixture_growing(&fx, "rc", SHMF_TYPE_CUCKOO, 500, 0.01, 1, 0);
	assert_int_equal(registry_seed(&fx.reg, slot, &seed), 0);
	f = fixture_open("rc", SHMF_RDWR);
	for (uint64_t i = 0; i < 3000; i++) {
		struct shmf_jentry e = { .hash = shmf_hash(key, fixture_key(key, 1, i), seed), .op = SHMF_JOP_ADD };
		assert_int_equal(shmf_journal_apply(f, &e), 1);
		if (i % 50 == 0)
			grow_filter(&fx.reg, slot);
	}
	assert_true(slot_of(slot)->nlive >= 5);
	assert_int_equal(found(f, 1, 0, 3000), 3000);
	struct shmf_jentry del = { .hash = shmf_hash(key, fixture_key(key, 1, 7), seed), .op = SHMF_JOP_DEL };
	assert_int_equal(shmf_journal_apply(f, &del), 1);
	assert_int_equal(shmf_count(f, key, fixture_key(key, 1, 7)), 0);
	shmf_close(f);
}

/* What a growing filter cannot be: refused, nothing made. */
static void test_bad_specs(void **state)
{
	(void)state;
	char err[REGISTRY_ERR_MAX];
	struct filter_spec s = { .name = "bad", .type = SHMF_TYPE_BLOOM, .capacity = 100, .fpr = 0.01, .mode = 0640 };
	struct filter_spec w = s;
	w.expansion = 2;
	w.window_secs = 60;
	w.window_gens = 2;
	assert_int_equal(registry_create(&fx.reg, &w, err, sizeof(err)), SHMF_E_INVAL);
	assert_non_null(strstr(err, "windowed filter does not grow"));
	w = s;
	w.expansion = SHMF_EXPANSION_MAX + 1;
	assert_int_equal(registry_create(&fx.reg, &w, err, sizeof(err)), SHMF_E_INVAL);
	assert_non_null(strstr(err, "above the limit"));
	w = s;
	w.nonscaling = 1;
	w.expansion = 2;
	assert_int_equal(registry_create(&fx.reg, &w, err, sizeof(err)), SHMF_E_INVAL);
	w = s;
	w.nonscaling = 1;
	w.type = SHMF_TYPE_CUCKOO;
	assert_int_equal(registry_create(&fx.reg, &w, err, sizeof(err)), SHMF_E_INVAL);
	assert_non_null(strstr(err, "NONSCALING is for a Bloom filter"));
	w = s;
	w.expansion = 1u << 15;
	w.capacity = UINT64_MAX / 4;
	assert_true(registry_create(&fx.reg, &w, err, sizeof(err)) < 0);
	assert_int_equal(registry_find(&fx.reg, "bad"), SHMF_E_NOTFOUND);
	/* The layer function's limits. */
	struct shmf_layer l;
	assert_int_equal(shmf_geometry_layer(SHMF_TYPE_BLOOM, 100, 0.01, 0, 0, 0, 1, &l), SHMF_E_INVAL);
	assert_int_equal(shmf_geometry_layer(SHMF_TYPE_BLOOM, 100, 0.01, 0, 0, 2, SHMF_LAYERS_MAX, &l), SHMF_E_INVAL);
	assert_int_equal(shmf_geometry_layer(SHMF_TYPE_CUCKOO, 100, 0.01, 0, 0, 1, SHMF_CUCKOO_LAYERS_MAX - 1, &l), 0);
	assert_int_equal(shmf_geometry_layer(SHMF_TYPE_CUCKOO, 100, 0.01, 0, 0, 1, SHMF_CUCKOO_LAYERS_MAX, &l),
			 SHMF_E_INVAL);
	/* Bloom layers tighten to the floor rate and keep it. */
	assert_int_equal(shmf_geometry_layer(SHMF_TYPE_BLOOM, 100, 0.01, 0, 0, 1, SHMF_LAYERS_MAX - 1, &l), 0);
	assert_true(l.fpr == SHMF_LAYER_FPR_FLOOR);
	assert_int_equal(shmf_geometry_layer(SHMF_TYPE_BLOOM, 100, 0.01, 0, 0, 1, 10, &l), 0);
	assert_true(fabs(l.fpr - 0.01 * 0.9 * pow(0.5, 11)) < 1e-18);
	assert_int_equal(shmf_geometry_layer(SHMF_TYPE_BLOOM, UINT64_MAX / 2, 0.01, 0, 0, 4, 2, &l), SHMF_E_TOOBIG);
	assert_int_equal(shmf_geometry_layer(SHMF_TYPE_CUCKOO, 1000, 0.01, 0, 0, 4, 3, &l), 0);
	assert_int_equal(l.capacity, 64000);
	assert_int_equal(l.g.k, 16); /* layer 0's fingerprint */
}

/* The layers of a growing Bloom filter keep the first layer's lines a key:
 * at 1e-5 (layer 0 at 4.5e-6) two lines in every layer; at 1e-2 (layer 0
 * at 4.5e-3) one line in every layer, also past the eighth, tightened to
 * 1.8e-5, where a filter of its own would take two. Every key is found,
 * and each layer's shape is the layer function's. */
static void grow_lines(const char *name, double fpr, uint32_t lines, uint64_t capacity, uint64_t keys)
{
	int slot = fixture_growing(&fx, name, SHMF_TYPE_BLOOM, capacity, fpr, 2, 0);
	shmf_t *w = fixture_open(name, SHMF_RDWR);
	add_ticking(slot, w, 40, 0, keys, capacity / 4);
	struct shmf_layer_status st[SHMF_LAYERS_MAX];
	int n = shmf_layers(w, st, SHMF_LAYERS_MAX);
	assert_true(n >= 4);
	for (int i = 0; i < n; i++) {
		struct shmf_layer l;
		assert_int_equal(shmf_geometry_layer(SHMF_TYPE_BLOOM, capacity, fpr, 0, 0, 2, st[i].layer, &l), 0);
		if (st[i].bucket_size != lines || l.g.bucket_size != lines || st[i].nblocks != l.g.nblocks)
			fail_msg("%s layer %u: %u lines (%" PRIu64 " blocks), the function's %u (%" PRIu64 "), want %u",
				 name, st[i].layer, st[i].bucket_size, st[i].nblocks, l.g.bucket_size, l.g.nblocks,
				 lines);
	}
	assert_int_equal(found(w, 40, 0, keys), keys);
	shmf_close(w);
}

static void test_bloom_layers_lines(void **state)
{
	(void)state;
	grow_lines("g2", 1e-5, 2, 1000, 16000);
	grow_lines("g1", 1e-2, 1, 100, 60000);
	/* A filter of its own at the ninth layer's rate takes two lines. */
	struct shmf_layer l;
	assert_int_equal(shmf_geometry_layer(SHMF_TYPE_BLOOM, 100, 1e-2, 0, 0, 2, 9, &l), 0);
	struct shmf_geometry own;
	assert_int_equal(shmf_geometry_size(SHMF_TYPE_BLOOM, l.capacity, l.fpr, 0, 0, &own), 0);
	assert_int_equal(own.bucket_size, 2);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest all[] = {
		fixture_unit_test(test_bloom_layers, fx),
		fixture_unit_test(test_nonscaling, fx),
		fixture_unit_test(test_cuckoo_layers, fx),
		fixture_unit_test(test_layer_limit, fx),
		fixture_unit_test(test_one_layer, fx),
		fixture_unit_test(test_capped_across_layers, fx),
		fixture_unit_test(test_bad_specs, fx),
		fixture_unit_test(test_applied_by_hash, fx),
		fixture_unit_test(test_cuckoo_bucket_layers, fx),
		fixture_unit_test(test_cuckoo_bucket_snapshot, fx),
		fixture_unit_test(test_cuckoo_layers_32, fx),
		fixture_unit_test(test_bloom_layers_lines, fx),
	};
	const char *const names[] = { "bloom_layers",
				      "nonscaling",
				      "cuckoo_layers",
				      "layer_limit",
				      "one_layer",
				      "capped",
				      "bad_specs",
				      "applied",
				      "cuckoo_bucket_layers",
				      "cuckoo_bucket_snapshot",
				      "cuckoo_layers_32",
				      "bloom_layers_lines" };
	return fixture_run(argc, argv, all, names);
}
