/*
 * bloom-batch.c - check_many and add_many over a blocked Bloom filter.
 *
 * Keys go through in chunks: while one chunk is tested, the next one is
 * hashed and its blocks prefetched, so up to two chunks of cache misses are
 * in flight and the test loop never waits on a hash. The test of a chunk is
 * picked per call from k and the CPU (probed once): AVX-512 where the CPU
 * has it (the k positions of a key in one multiply, its words fetched from
 * the block in one permute), the scalar SHMF_FOR_EACH_POS loop otherwise.
 * Both answer the same bits; test-bloom proves it. A filter of two or
 * three lines a key goes through the same pipeline with every line of the
 * next chunk prefetched (run_lines).
 */
#include <immintrin.h>
#include <stdatomic.h>

#include "libclient/bloom.h"

#define CHUNK 32u

typedef size_t (*chunk_fn)(const struct shmf_bloom_geom *g, uint64_t *const blocks[], const uint64_t h[], size_t n,
			   uint8_t *out);

/* Hash keys[0..n) and prefetch their blocks: for writing (@p rw) when the
 * chunk will be added, so the line arrives owned. */
static inline void hash_chunk(const struct shmf_bloom_geom *g, const shmf_key_t *keys, size_t n, int rw, uint64_t h[],
			      uint64_t *blocks[])
{
	for (size_t j = 0; j < n; j++) {
		h[j] = shmf_hash(keys[j].ptr, keys[j].len, g->seed);
		blocks[j] = g->blocks + shmf_block_index(h[j], g->nblocks) * SHMF_BLOCK_WORDS;
		if (rw)
			__builtin_prefetch(blocks[j], 1, 3);
		else
			__builtin_prefetch(blocks[j], 0, 3);
	}
}

__attribute__((flatten)) static size_t run(const struct shmf_bloom_geom *g, const shmf_key_t *keys, size_t n,
					   uint8_t *out, int rw, chunk_fn test)
{
	uint64_t h[2][CHUNK];
	uint64_t *blocks[2][CHUNK];
	size_t count = 0;

	hash_chunk(g, keys, n < CHUNK ? n : CHUNK, rw, h[0], blocks[0]);
	for (size_t c = 0, cur = 0; c < n; c += CHUNK, cur ^= 1) {
		size_t m = n - c < CHUNK ? n - c : CHUNK;
		if (n - c > CHUNK) {
			size_t next = n - c - CHUNK < CHUNK ? n - c - CHUNK : CHUNK;
			hash_chunk(g, keys + c + CHUNK, next, rw, h[cur ^ 1], blocks[cur ^ 1]);
		}
		count += test(g, blocks[cur], h[cur], m, out == NULL ? NULL : out + c);
	}
	return count;
}

static size_t check_chunk_scalar(const struct shmf_bloom_geom *g, uint64_t *const blocks[], const uint64_t h[],
				 size_t n, uint8_t *out)
{
	size_t present = 0;
	for (size_t j = 0; j < n; j++) {
		int r = shmf_bloom_block_check_key(blocks[j], h[j], g->k);
		out[j] = (uint8_t)r;
		present += (size_t)r;
	}
	return present;
}

/*
 * Positions 16 at a time: each 32-bit lane multiplies its word of x (the
 * broadcast 64-bit x puts the low word in even lanes and the high word in
 * odd ones, as shmf_pos takes them) by its salt; the top 4 bits of the
 * product pick the block's 32-bit word, the next 5 the bit in it. The
 * permute fetches each lane's word, the rotate brings its bit to bit 0.
 * Returns the lanes of @p live whose bit is set.
 */
__attribute__((target("avx512f"))) static inline __mmask16 lanes_set(__m512i x, __m512i salt, __m512i block,
								     __mmask16 live)
{
	__m512i p = _mm512_mullo_epi32(x, salt);
	__m512i word = _mm512_permutexvar_epi32(_mm512_srli_epi32(p, 28), block);
	/* rorv counts modulo 32: bits 23..27 of p, the bit within the word. */
	word = _mm512_rorv_epi32(word, _mm512_srli_epi32(p, SHMF_POS_SHIFT));
	return _mm512_mask_test_epi32_mask(live, word, _mm512_set1_epi32(1));
}

/* The block is read with one 64-byte load: bits only ever go from 0 to 1,
 * so each lane sees its word before or after a concurrent add, and either
 * answer is one a relaxed scalar load could have given. */
__attribute__((target("avx512f"))) static size_t check_chunk_avx512(const struct shmf_bloom_geom *g,
								    uint64_t *const blocks[], const uint64_t h[],
								    size_t n, uint8_t *out)
{
	const __m512i salt_lo = _mm512_load_si512((const void *)shmf_pos_salt);
	const __m512i salt_hi = _mm512_load_si512((const void *)(shmf_pos_salt + 16));
	const uint32_t k = g->k;
	const __mmask16 live_lo = (__mmask16)(k >= 16 ? 0xffffu : (1u << k) - 1);
	const __mmask16 live_hi = (__mmask16)(k <= 16 ? 0u : k >= 32 ? 0xffffu : (1u << (k - 16)) - 1);
	size_t present = 0;

	if (k <= 16) {
		for (size_t j = 0; j < n; j++) {
			__m512i x = _mm512_set1_epi64((long long)(h[j] * SHMF_POS_MUL));
			__m512i block = _mm512_load_si512((const void *)blocks[j]);
			out[j] = lanes_set(x, salt_lo, block, live_lo) == live_lo;
		}
	} else {
		for (size_t j = 0; j < n; j++) {
			__m512i x = _mm512_set1_epi64((long long)(h[j] * SHMF_POS_MUL));
			__m512i block = _mm512_load_si512((const void *)blocks[j]);
			out[j] = (lanes_set(x, salt_lo, block, live_lo) == live_lo) &
				 (lanes_set(x, salt_hi, block, live_hi) == live_hi);
		}
	}
	for (size_t j = 0; j < n; j++)
		present += out[j];
	return present;
}

/*
 * k <= 8: the same test on 256-bit vectors, 8 lanes, with the block's two
 * halves as the two sources of one two-table permute. Without 512-bit
 * instructions in flight the core keeps a third vector port, and this loop
 * is port-bound, so it runs faster than the 16-lane one with half its
 * lanes masked off.
 */
__attribute__((target("avx512f,avx512vl"))) static size_t check_chunk_avx512_k8(const struct shmf_bloom_geom *g,
										uint64_t *const blocks[],
										const uint64_t h[], size_t n,
										uint8_t *out)
{
	const __m256i salt = _mm256_load_si256((const void *)shmf_pos_salt);
	const __mmask8 live = (__mmask8)((1u << g->k) - 1);
	const __m256i one = _mm256_set1_epi32(1);
	size_t present = 0;

	for (size_t j = 0; j < n; j++) {
		__m256i p = _mm256_mullo_epi32(_mm256_set1_epi64x((long long)(h[j] * SHMF_POS_MUL)), salt);
		const __m256i *b = (const __m256i *)blocks[j];
		__m256i word = _mm256_permutex2var_epi32(_mm256_load_si256(b), _mm256_srli_epi32(p, 28),
							 _mm256_load_si256(b + 1));
		word = _mm256_rorv_epi32(word, _mm256_srli_epi32(p, SHMF_POS_SHIFT));
		out[j] = _mm256_mask_test_epi32_mask(live, word, one) == live;
	}
	for (size_t j = 0; j < n; j++)
		present += out[j];
	return present;
}

static size_t add_chunk(const struct shmf_bloom_geom *g, uint64_t *const blocks[], const uint64_t h[], size_t n,
			uint8_t *out)
{
	uint64_t mask[SHMF_BLOCK_WORDS];
	size_t fresh = 0;
	for (size_t j = 0; j < n; j++) {
		shmf_block_masks(h[j], g->k, mask);
		int r = shmf_bloom_block_add(blocks[j], mask);
		if (out != NULL)
			out[j] = (uint8_t)r;
		fresh += (size_t)r;
	}
	return fresh;
}

/* ---- Several lines a key ------------------------------------------------- */

/* A chunk of a filter of several lines: line j of key q is line[j][q],
 * its hash hj[j][q]. */
struct lines_chunk {
	uint64_t hj[SHMF_BLOOM_LINES_MAX][CHUNK];
	uint64_t *line[SHMF_BLOOM_LINES_MAX][CHUNK];
};

typedef size_t (*lines_fn)(const struct shmf_bloom_geom *g, const struct lines_chunk *c, size_t n, uint8_t *out);

static inline void hash_chunk_lines(const struct shmf_bloom_geom *g, const shmf_key_t *keys, size_t n, int rw,
				    struct lines_chunk *c)
{
	for (size_t q = 0; q < n; q++) {
		uint64_t h = shmf_hash(keys[q].ptr, keys[q].len, g->seed);
		for (uint32_t j = 0; j < g->lines; j++) {
			c->hj[j][q] = shmf_line_hash(h, j);
			c->line[j][q] = shmf_bloom_line(g, c->hj[j][q]);
			if (rw)
				__builtin_prefetch(c->line[j][q], 1, 3);
			else
				__builtin_prefetch(c->line[j][q], 0, 3);
		}
	}
}

__attribute__((flatten)) static size_t run_lines(const struct shmf_bloom_geom *g, const shmf_key_t *keys, size_t n,
						 uint8_t *out, int rw, lines_fn test)
{
	struct lines_chunk c[2];
	size_t count = 0;

	hash_chunk_lines(g, keys, n < CHUNK ? n : CHUNK, rw, &c[0]);
	for (size_t at = 0, cur = 0; at < n; at += CHUNK, cur ^= 1) {
		size_t m = n - at < CHUNK ? n - at : CHUNK;
		if (n - at > CHUNK) {
			size_t next = n - at - CHUNK < CHUNK ? n - at - CHUNK : CHUNK;
			hash_chunk_lines(g, keys + at + CHUNK, next, rw, &c[cur ^ 1]);
		}
		count += test(g, &c[cur], m, out == NULL ? NULL : out + at);
	}
	return count;
}

static size_t check_lines_scalar(const struct shmf_bloom_geom *g, const struct lines_chunk *c, size_t n, uint8_t *out)
{
	size_t present = 0;
	for (size_t q = 0; q < n; q++) {
		int r = 1;
		for (uint32_t j = 0; j < g->lines && r; j++)
			r = shmf_bloom_block_check_key(c->line[j][q], c->hj[j][q], g->k);
		out[q] = (uint8_t)r;
		present += (size_t)r;
	}
	return present;
}

/* Each line as check_chunk_avx512 tests a block, stopping at the first
 * line that lacks a bit. */
__attribute__((target("avx512f"))) static size_t check_lines_avx512(const struct shmf_bloom_geom *g,
								    const struct lines_chunk *c, size_t n, uint8_t *out)
{
	const __m512i salt_lo = _mm512_load_si512((const void *)shmf_pos_salt);
	const __m512i salt_hi = _mm512_load_si512((const void *)(shmf_pos_salt + 16));
	const uint32_t k = g->k;
	const __mmask16 live_lo = (__mmask16)(k >= 16 ? 0xffffu : (1u << k) - 1);
	const __mmask16 live_hi = (__mmask16)(k <= 16 ? 0u : k >= 32 ? 0xffffu : (1u << (k - 16)) - 1);
	size_t present = 0;

	for (size_t q = 0; q < n; q++) {
		int r = 1;
		for (uint32_t j = 0; j < g->lines; j++) {
			__m512i x = _mm512_set1_epi64((long long)(c->hj[j][q] * SHMF_POS_MUL));
			__m512i block = _mm512_load_si512((const void *)c->line[j][q]);
			r &= lanes_set(x, salt_lo, block, live_lo) == live_lo;
			if (k > 16)
				r &= lanes_set(x, salt_hi, block, live_hi) == live_hi;
		}
		out[q] = (uint8_t)r;
		present += (size_t)r;
	}
	return present;
}

static size_t add_lines(const struct shmf_bloom_geom *g, const struct lines_chunk *c, size_t n, uint8_t *out)
{
	uint64_t mask[SHMF_BLOCK_WORDS];
	size_t fresh = 0;
	for (size_t q = 0; q < n; q++) {
		int r = 0;
		for (uint32_t j = 0; j < g->lines; j++) {
			shmf_block_masks(c->hj[j][q], g->k, mask);
			r |= shmf_bloom_block_add(c->line[j][q], mask);
		}
		if (out != NULL)
			out[q] = (uint8_t)r;
		fresh += (size_t)r;
	}
	return fresh;
}

int shmf_bloom_have_avx512(void)
{
	/* relaxed: every thread computes the same answer. */
	static _Atomic int known = -1;
	int have = atomic_load_explicit(&known, memory_order_relaxed);
	if (have < 0) {
		__builtin_cpu_init();
		have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
		atomic_store_explicit(&known, have, memory_order_relaxed);
	}
	return have;
}

static chunk_fn pick_check(enum shmf_bloom_impl impl, uint32_t k)
{
	if (impl == SHMF_BLOOM_SCALAR || (impl == SHMF_BLOOM_AUTO && !shmf_bloom_have_avx512()))
		return check_chunk_scalar;
	if (!shmf_bloom_have_avx512())
		return NULL;
	return k <= 8 ? check_chunk_avx512_k8 : check_chunk_avx512;
}

size_t shmf_bloom_check_batch(const struct shmf_bloom_geom *g, const shmf_key_t *keys, size_t n, uint8_t *out,
			      enum shmf_bloom_impl impl)
{
	chunk_fn test = pick_check(impl, g->k);
	if (test == NULL)
		return SIZE_MAX;
	if (g->lines > 1)
		return run_lines(g, keys, n, out, 0,
				 test == check_chunk_scalar ? check_lines_scalar : check_lines_avx512);
	return run(g, keys, n, out, 0, test);
}

size_t shmf_bloom_add_batch(const struct shmf_bloom_geom *g, const shmf_key_t *keys, size_t n, uint8_t *out)
{
	if (g->lines > 1)
		return run_lines(g, keys, n, out, 1, add_lines);
	return run(g, keys, n, out, 1, add_chunk);
}
