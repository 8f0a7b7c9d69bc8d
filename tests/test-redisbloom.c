/*
 * test-redisbloom.c - libclient's reading of filters imported from
 * RedisBloom (libclient/redisbloom.h): its two hashes against SMHasher's
 * published verification values, a chain's positions against the formula
 * written out directly, and a table refused for each field that does not
 * hold. tests/redisbloom/test-import.py compares whole filters with an
 * independent model of RedisBloom.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libclient/redisbloom.h"
#include "tests/run-named.h"

/* SMHasher's verification: hash the keys {}, {0}, {0,1}, ... {0..254}
 * with seeds 256, 255, ... 2, hash the concatenated hashes with seed 0,
 * and read the first 4 bytes of that, little-endian. */
static uint32_t verification(int wide)
{
	uint8_t key[256], hashes[256 * 8], final[8];
	size_t width = wide ? 8 : 4;
	for (unsigned i = 0; i < 256; i++) {
		key[i] = (uint8_t)i;
		if (wide) {
			uint64_t h = shmf_murmur64a(key, i, 256 - i);
			memcpy(&hashes[i * width], &h, width);
		} else {
			uint32_t h = shmf_murmur2(key, i, 256 - i);
			memcpy(&hashes[i * width], &h, width);
		}
	}
	if (wide) {
		uint64_t h = shmf_murmur64a(hashes, 256 * width, 0);
		memcpy(final, &h, 8);
	} else {
		uint32_t h = shmf_murmur2(hashes, 256 * width, 0);
		memcpy(final, &h, 4);
	}
	return (uint32_t) final[0] | (uint32_t) final[1] << 8 | (uint32_t) final[2] << 16 | (uint32_t) final[3] << 24;
}

static void test_murmur(void **state)
{
	(void)state;
	/* SMHasher's table: Murmur2 0x27864C1E, Murmur2B (MurmurHash64A) 0x1F0D3804. */
	assert_int_equal(verification(0), 0x27864C1Eu);
	assert_int_equal(verification(1), 0x1F0D3804u);
	/* The empty key: seed ^ 0, then the final mix alone. */
	assert_true(shmf_murmur64a("", 0, 0) == 0);
	assert_true(shmf_murmur64a("a", 1, 0) != shmf_murmur64a("b", 1, 0));
}

/* ---- Tables built here --------------------------------------------------- */

struct linkdef {
	uint64_t bits; /* a multiple of 8 */
	uint32_t k, n2;
	uint64_t size;
};

/* A chain's payload of @p n links (FORCE64 when @p wide): table, links,
 * zeroed bits. @p bytes gets its size. */
static uint8_t *chain_new(const struct linkdef *d, unsigned n, int wide, uint64_t *bytes)
{
	uint64_t at = shmf_rb_align(shmf_rb_table_bytes(n)), items = 0;
	struct shmf_rb_link l[8];
	for (unsigned i = 0; i < n; i++) {
		double error = 0.01, bpe = (d[i].k - 0.5) / 0.693147180559945;
		l[i] = (struct shmf_rb_link){ .offset = at,
					      .bytes = d[i].bits / 8,
					      .bits = d[i].bits,
					      .entries = 1000,
					      .size = d[i].size,
					      .hashes = d[i].k,
					      .n2 = d[i].n2 };
		memcpy(&l[i].error_bits, &error, 8);
		memcpy(&l[i].bpe_bits, &bpe, 8);
		at = shmf_rb_align(at + l[i].bytes);
		items += d[i].size;
	}
	uint8_t *p = calloc(1, at);
	struct shmf_rb_table t = { .magic = SHMF_RB_MAGIC,
				   .nlinks = n,
				   .hash = wide ? SHMF_RB_HASH_MURMUR64 : SHMF_RB_HASH_MURMUR32,
				   .items = items,
				   .options = wide ? 5u : 1u,
				   .growth = 2 };
	memcpy(p, &t, sizeof(t));
	memcpy(p + sizeof(t), l, n * sizeof(l[0]));
	*bytes = at;
	return p;
}

static struct shmf_rb_link *link_of(uint8_t *p, unsigned i)
{
	return (struct shmf_rb_link *)(p + sizeof(struct shmf_rb_table)) + i;
}

/* The hash pair, and bit i of a link, as the formula says: (a + i b)
 * mod 2^64, then mod m, computed afresh for each i. */
static void pair(int wide, const char *key, size_t len, uint64_t *a, uint64_t *b)
{
	if (wide) {
		*a = shmf_murmur64a(key, len, UINT64_C(0xc6a4a7935bd1e995));
		*b = shmf_murmur64a(key, len, *a);
	} else {
		*a = shmf_murmur2(key, len, 0x9747b28cu);
		*b = shmf_murmur2(key, len, (uint32_t)*a);
	}
}

static uint64_t position(const struct shmf_rb_link *l, uint64_t a, uint64_t b, uint64_t i)
{
	uint64_t m = l->n2 ? UINT64_C(1) << l->n2 : l->bits;
	return (a + i * b) % m;
}

static void naive_add(uint8_t *p, unsigned link, int wide, const char *key, size_t len)
{
	const struct shmf_rb_link *l = link_of(p, link);
	uint64_t a, b;
	pair(wide, key, len, &a, &b);
	for (uint64_t i = 0; i < l->hashes; i++) {
		uint64_t x = position(l, a, b, i);
		p[l->offset + x / 8] |= (uint8_t)(1u << (x % 8));
	}
}

static int naive_check(const uint8_t *p, unsigned n, int wide, const char *key, size_t len)
{
	uint64_t a, b;
	pair(wide, key, len, &a, &b);
	for (unsigned j = 0; j < n; j++) {
		const struct shmf_rb_link *l = link_of((uint8_t *)p, j);
		int all = 1;
		for (uint64_t i = 0; i < l->hashes && all; i++) {
			uint64_t x = position(l, a, b, i);
			all = (p[l->offset + x / 8] >> (x % 8)) & 1;
		}
		if (all)
			return 1;
	}
	return 0;
}

/* Links whose moduli are odd multiples of 8 (a + i b wraps 2^64 within
 * most keys' k steps, so the remainder's correction is exercised), a
 * power of 2 smaller than its bits (n2), a bit count that is a power of 2
 * without n2 (the remainder by multiplication of a power of 2), a k of 1,
 * 40 and 81. */
static const struct linkdef few[] = { { 8 * 1237, 7, 0, 300 },
				      { 8 * 40961, 40, 0, 300 },
				      { 8 * 4100, 5, 15, 300 },
				      { 8 * 97, 1, 0, 300 },
				      { 8 * 1024, 4, 0, 300 } };
static const struct linkdef many[] = { { 8 * 1237, 40, 0, 300 },
				       { 8 * 40961, 40, 0, 300 },
				       { 8 * 8200, 40, 15, 300 },
				       { 8 * 9001, 81, 0, 300 } };

static void positions_in(int wide, const struct linkdef *d, unsigned nl)
{
	uint64_t bytes;
	uint8_t *p = chain_new(d, nl, wide, &bytes);
	char key[32];
	for (unsigned j = 0; j < nl; j++)
		for (unsigned i = 0; i < 300; i++)
			naive_add(p, j, wide, key, (size_t)snprintf(key, sizeof(key), "key-%u-%u", j, i));
	struct shmf_rb *rb;
	assert_int_equal(shmf_rb_open(SHMF_SCHEME_RB_BLOOM, p, bytes, &rb), 0);
	for (unsigned j = 0; j < nl; j++)
		for (unsigned i = 0; i < 300; i++)
			assert_int_equal(shmf_rb_check(rb, key, (size_t)snprintf(key, sizeof(key), "key-%u-%u", j, i)),
					 1);
	unsigned fp = 0;
	enum { BATCH = 100 };
	char keys[BATCH][32];
	shmf_key_t batch[BATCH];
	uint8_t want[BATCH], got[BATCH];
	for (unsigned i = 0; i < 200000; i++) {
		size_t n = (size_t)snprintf(keys[i % BATCH], 32, "absent-%u", i);
		batch[i % BATCH] = (shmf_key_t){ keys[i % BATCH], n };
		want[i % BATCH] = (uint8_t)naive_check(p, nl, wide, keys[i % BATCH], n);
		assert_int_equal(shmf_rb_check(rb, keys[i % BATCH], n), want[i % BATCH]);
		fp += want[i % BATCH];
		if (i % BATCH == BATCH - 1) {
			size_t present = 0;
			for (unsigned j = 0; j < BATCH; j++)
				present += want[j];
			assert_int_equal(shmf_rb_check_many(rb, batch, BATCH, got), present);
			assert_memory_equal(got, want, BATCH);
		}
	}
	/* The chain holds keys: some absent keys answer present, not all. */
	assert_true(fp > 0 && fp < 200000);
	assert_int_equal(shmf_rb_count(rb, "x", 1), SHMF_E_TYPE);
	shmf_rb_free(rb);
	free(p);
}

static void test_positions(void **state)
{
	(void)state;
	positions_in(1, few, 5);
	positions_in(0, few, 5);
	positions_in(1, many, 4);
	positions_in(0, many, 4);
}

/* ---- Tables refused ------------------------------------------------------ */

/* Each change to a good two-link table makes it one that does not hold. */
static void test_table(void **state)
{
	(void)state;
	static const struct linkdef d[] = { { 8 * 128, 7, 0, 3 }, { 8 * 1024, 8, 10, 4 } };
	uint64_t bytes;
	uint8_t *good = chain_new(d, 2, 1, &bytes), *p = malloc(bytes);
	assert_int_equal(shmf_rb_open(SHMF_SCHEME_RB_BLOOM, good, bytes, NULL), 0);
	assert_int_equal(shmf_rb_open(SHMF_SCHEME_RB_CUCKOO, good, bytes, NULL), SHMF_E_FORMAT);
	assert_int_equal(shmf_rb_open(7, good, bytes, NULL), SHMF_E_TYPE);
	assert_int_equal(shmf_rb_open(SHMF_SCHEME_RB_BLOOM, good, bytes - 64, NULL), SHMF_E_FORMAT);
	assert_int_equal(shmf_rb_open(SHMF_SCHEME_RB_BLOOM, good, 32, NULL), SHMF_E_FORMAT);
	double nan = NAN, one = 1.0, big = 2000.0;
	struct {
		size_t off;
		uint64_t v;
		size_t size;
	} bad[] = {
		{ 0, 0, 8 }, /* magic */
		{ 8, 0, 4 },
		{ 8, SHMF_RB_LINKS_MAX + 1, 4 },
		{ 8, 3, 4 }, /* nlinks */
		{ 12, SHMF_RB_HASH_MURMUR32, 4 },
		{ 12, SHMF_RB_HASH_CUCKOO, 4 }, /* hash */
		{ 16, 8, 8 },                   /* items: sizes sum to 7 */
		{ 24, 1, 8 },
		{ 32, 16 | 5, 4 },
		{ 32, 1, 4 }, /* deletes, options */
		{ 40, 4, 4 },
		{ 44, 20, 4 },
		{ 48, 1, 8 },           /* bucket size, MAXITERATIONS, pad */
		{ 64 + 0, 64 * 4, 8 },  /* link 0 offset */
		{ 128 + 0, 64 * 6, 8 }, /* link 1 offset */
		{ 64 + 8, 0, 8 },
		{ 64 + 8, 129, 8 },
		{ 64 + 16, 8 * 127, 8 },     /* bytes, bits */
		{ 128 + 8, 1024 * 1024, 8 }, /* link 1 past the payload */
		{ 128 + 60, 14, 4 },
		{ 128 + 60, 64, 4 }, /* n2: 2^14 > bits, > 63 */
		{ 64 + 56, 8, 4 },
		{ 64 + 56, 0, 4 }, /* k against bits per entry */
		{ 64 + 40, 0, 8 }, /* error 0 */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(p, good, bytes);
		memcpy(p + bad[i].off, &bad[i].v, bad[i].size);
		int r = shmf_rb_open(SHMF_SCHEME_RB_BLOOM, p, bytes, NULL);
		if (r != SHMF_E_FORMAT)
			fail_msg("table byte %zu = %#llx: %d, not refused", bad[i].off, (unsigned long long)bad[i].v,
				 r);
	}
	const double doubles[] = { nan, one, -0.5 };
	for (size_t i = 0; i < 3; i++) {
		memcpy(p, good, bytes);
		memcpy(p + 64 + 40, &doubles[i], 8); /* error rate */
		assert_int_equal(shmf_rb_open(SHMF_SCHEME_RB_BLOOM, p, bytes, NULL), SHMF_E_FORMAT);
	}
	memcpy(p, good, bytes);
	memcpy(p + 64 + 48, &big, 8); /* bits per entry: k would be 1387 */
	assert_int_equal(shmf_rb_open(SHMF_SCHEME_RB_BLOOM, p, bytes, NULL), SHMF_E_FORMAT);
	free(p);
	free(good);
}

/* A cuckoo filter of two sub-filters, counted as RedisBloom counts. */
static void test_cuckoo(void **state)
{
	(void)state;
	const uint32_t bs = 3, nb[2] = { 17, 34 };
	uint64_t at = shmf_rb_align(shmf_rb_table_bytes(2)), off[2];
	for (int i = 0; i < 2; i++) {
		off[i] = at;
		at = shmf_rb_align(at + nb[i] * bs);
	}
	uint8_t *p = calloc(1, at);
	struct shmf_rb_table t = { .magic = SHMF_RB_MAGIC,
				   .nlinks = 2,
				   .hash = SHMF_RB_HASH_CUCKOO,
				   .items = 3,
				   .growth = 2,
				   .bucket_size = bs };
	memcpy(p, &t, sizeof(t));
	for (int i = 0; i < 2; i++) {
		struct shmf_rb_link l = { .offset = off[i], .bytes = nb[i] * bs, .bits = nb[i] };
		memcpy(p + 64 + 64 * i, &l, sizeof(l));
	}
	/* "k": its fingerprint once in its first bucket of sub-filter 0 and
	 * once in its second bucket of sub-filter 1. */
	uint64_t h = shmf_murmur64a("k", 1, 0);
	uint8_t fp = (uint8_t)(h % 255 + 1);
	uint64_t h2 = h ^ ((uint64_t)fp * 0x5bd1e995u);
	p[off[0] + (h % nb[0]) * bs + 2] = fp;
	p[off[1] + (h2 % nb[1]) * bs] = fp;
	struct shmf_rb *rb;
	assert_int_equal(shmf_rb_open(SHMF_SCHEME_RB_CUCKOO, p, at, &rb), 0);
	assert_int_equal(shmf_rb_check(rb, "k", 1), 1);
	assert_int_equal(shmf_rb_count(rb, "k", 1), 2);
	unsigned absent = 0;
	for (unsigned i = 0; i < 1000; i++) {
		char key[16];
		absent += shmf_rb_check(rb, key, (size_t)snprintf(key, sizeof(key), "z%u", i)) == 0;
	}
	assert_true(absent >= 990);
	shmf_rb_free(rb);
	/* A bucket size of 0 or 256, a sub-filter's bytes not buckets x size. */
	uint32_t sizes[] = { 0, 256 };
	for (int i = 0; i < 2; i++) {
		memcpy(p + 40, &sizes[i], 4);
		assert_int_equal(shmf_rb_open(SHMF_SCHEME_RB_CUCKOO, p, at, NULL), SHMF_E_FORMAT);
	}
	memcpy(p + 40, &bs, 4);
	uint64_t wrong = nb[0] * bs + 1;
	memcpy(p + 64 + 8, &wrong, 8);
	assert_int_equal(shmf_rb_open(SHMF_SCHEME_RB_CUCKOO, p, at, NULL), SHMF_E_FORMAT);
	free(p);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_murmur),
		cmocka_unit_test(test_positions),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_cuckoo),
	};
	static const char *const names[] = { "murmur", "positions", "table", "cuckoo" };
	return RUN_NAMED("redisbloom", argc > 1 ? argv[1] : NULL, tests, names, NULL, NULL);
}
