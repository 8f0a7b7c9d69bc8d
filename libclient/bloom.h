/*
 * bloom.h - the cache-line blocked Bloom filter: sizing, estimates, and the
 * per-block check and add used by the hot path.
 */
#ifndef SHMF_BLOOM_H
#define SHMF_BLOOM_H

#include <stdint.h>

#include "libclient/hash.h"

/*
 * Layouts (docs/design.md section 4.1): a key's bits lie in 1, 2 or 3
 * independent 512-bit lines, k bits in each; a check needs all of them.
 * One line costs one cache miss a check and is within 1.10x of a classic
 * Bloom filter's memory down to about 5e-4; below, two lines are (down to
 * about 2e-7), then three (1.077x at 1e-9, where one line takes 1.84x).
 */
#define SHMF_BLOOM_LINES_MAX 3u
#define SHMF_BLOOM_WITHIN    1.10 /* a layout is chosen within this of classic Bloom's memory */

/* What shmf_bloom_size() chose. */
struct shmf_bloom_params {
	uint32_t k;       /* bits per key in each of its lines */
	uint32_t lines;   /* lines a key's bits span: 1..SHMF_BLOOM_LINES_MAX */
	uint64_t nblocks; /* 64-byte blocks */
	uint64_t bits;    /* nblocks * 512 */
};

/**
 * Size a blocked Bloom filter for @p capacity keys at false-positive rate
 * @p fpr, with @p lines lines a key (1..SHMF_BLOOM_LINES_MAX), or 0 for
 * the layout with the fewest lines whose memory is within
 * SHMF_BLOOM_WITHIN of a classic Bloom filter's (the least memory where
 * none is): for that layout, the smallest number of blocks (and its k)
 * whose expected FPR at capacity, by shmf_bloom_fpr_lines(), is at most
 * @p fpr.
 * @return 0, SHMF_E_INVAL (capacity 0, fpr not in (0,1), lines past
 *         SHMF_BLOOM_LINES_MAX, or an fpr the layout cannot reach), or
 *         SHMF_E_TOOBIG (more than SHMF_DATA_MAX_BYTES).
 */
int shmf_bloom_size(uint64_t capacity, double fpr, uint32_t lines, struct shmf_bloom_params *out);

/** Bits a key a classic Bloom filter (k separate bits, the best k) needs
 * for @p fpr: -ln(fpr) / ln(2)^2. The yardstick of the layout choice. */
double shmf_bloom_classic_bits(double fpr);

/**
 * Expected false-positive rate of a filter of @p lines lines a key: each
 * line of an absent key is a line of the one-line filter holding
 * @p lines * @p n patterns (shmf_bloom_fpr()), and its lines are
 * independent: that rate to the power @p lines.
 */
double shmf_bloom_fpr_lines(uint64_t n, uint64_t nblocks, uint32_t k, uint32_t lines);

/**
 * Expected false-positive rate of a blocked Bloom filter of @p nblocks
 * 512-bit blocks holding @p n keys with @p k bits each: the block loads are
 * Poisson with mean n/nblocks, and a block holding i keys answers a false
 * positive with probability (1 - (1 - 1/512)^(i k))^k.
 */
double shmf_bloom_fpr(uint64_t n, uint64_t nblocks, uint32_t k);

/** Expected fraction of bits set after @p n keys of @p lines lines of
 * @p k bits: 1 - (1 - 1/m)^(n k lines). */
double shmf_bloom_fill(uint64_t n, uint64_t nblocks, uint32_t k, uint32_t lines);

/* 1 if all of the key's k bits (SHMF_FOR_EACH_POS) are set in the block:
 * each bit is tested where it lies, with no mask built in memory,
 * branch-free. Relaxed loads: a concurrent add only ever sets bits, and an
 * add that has returned happens-before any check that is ordered after it
 * by the caller's own synchronisation. */
static inline int shmf_bloom_block_check_key(const uint64_t *block, uint64_t h, uint32_t k)
{
	uint64_t ok = 1;
	SHMF_FOR_EACH_POS(h, k, pos, ok &= __atomic_load_n(&block[pos >> 6], __ATOMIC_RELAXED) >> (pos & 63));
	return (int)(ok & 1);
}

/* Set the mask's bits; 1 if this call set at least one of them. Words
 * whose bits are all set already are only read: no atomic write, so adding
 * a present key writes nothing to shared memory. The words that need a
 * write are found branch-free first (whether a word needs one is a coin
 * toss the branch predictor cannot learn), then each gets one atomic
 * fetch-or whose old value tells, atomically, whether this call set a bit. */
static inline int shmf_bloom_block_add(uint64_t *block, const uint64_t mask[SHMF_BLOCK_WORDS])
{
	unsigned todo = 0;
	int fresh = 0;

	for (unsigned w = 0; w < SHMF_BLOCK_WORDS; w++)
		todo |= (unsigned)((__atomic_load_n(&block[w], __ATOMIC_RELAXED) & mask[w]) != mask[w]) << w;
	while (todo != 0) {
		unsigned w = (unsigned)__builtin_ctz(todo);
		todo &= todo - 1;
		/* relaxed: bits are monotonic, nothing else is published by them. */
		uint64_t old = __atomic_fetch_or(&block[w], mask[w], __ATOMIC_RELAXED);
		fresh |= (old & mask[w]) != mask[w];
	}
	return fresh;
}

/* What a check or an add needs of a mapped generation. */
struct shmf_bloom_geom {
	uint64_t *blocks;
	uint64_t nblocks;
	uint64_t seed;
	uint32_t k;     /* bits in each line */
	uint32_t lines; /* lines a key: 1..SHMF_BLOOM_LINES_MAX */
};

/* Line @p j of the key of hash @p h (shmf_line_hash() gives its hash). */
static inline uint64_t *shmf_bloom_line(const struct shmf_bloom_geom *g, uint64_t hj)
{
	return g->blocks + shmf_block_index(hj, g->nblocks) * SHMF_BLOCK_WORDS;
}

/* Ask for every line of the key of hash @p h (for writing if @p rw). */
static inline void shmf_bloom_prefetch(const struct shmf_bloom_geom *g, uint64_t h, int rw)
{
	for (uint32_t j = 0; j < g->lines; j++) {
		const uint64_t *line = shmf_bloom_line(g, shmf_line_hash(h, j));
		if (rw)
			__builtin_prefetch(line, 1, 3);
		else
			__builtin_prefetch(line, 0, 3);
	}
}

/* 1 if the key of hash @p h has its bits in every line of a filter of
 * several lines: every line is asked for first, so their misses overlap;
 * then the test stops at the first line that lacks a bit (an absent key
 * usually costs one line's test). */
static inline int shmf_bloom_check_lines(const struct shmf_bloom_geom *g, uint64_t h)
{
	uint64_t hj[SHMF_BLOOM_LINES_MAX];
	const uint64_t *line[SHMF_BLOOM_LINES_MAX];
	uint32_t n = g->lines;
	for (uint32_t j = 0; j < n; j++) {
		hj[j] = shmf_line_hash(h, j);
		line[j] = shmf_bloom_line(g, hj[j]);
		__builtin_prefetch(line[j]);
	}
	for (uint32_t j = 0; j < n; j++)
		if (!shmf_bloom_block_check_key(line[j], hj[j], g->k))
			return 0;
	return 1;
}

/* 1 if the key of hash @p h may be present: one line's test, or the
 * lines' (the branch is on the filter, the same for every key). */
static inline int shmf_bloom_has(const struct shmf_bloom_geom *g, uint64_t h)
{
	if (__builtin_expect(g->lines > 1, 0))
		return shmf_bloom_check_lines(g, h);
	return shmf_bloom_block_check_key(shmf_bloom_line(g, h), h, g->k);
}

/* Set the key's bits in every one of its lines, each line's words read
 * first and only those lacking a bit fetch-ored (shmf_bloom_block_add);
 * 1 if this call set a bit in any line. Two racing adders of a new key:
 * the first fetch-or of each word that lacked a bit sees it clear, so at
 * least one of them hears "new" (docs/design.md section 4.1). */
static inline int shmf_bloom_add_key(const struct shmf_bloom_geom *g, uint64_t h)
{
	uint64_t mask[SHMF_BLOCK_WORDS];
	int fresh = 0;
	if (__builtin_expect(g->lines > 1, 0))
		shmf_bloom_prefetch(g, h, 1);
	for (uint32_t j = 0; j < g->lines; j++) {
		uint64_t hj = shmf_line_hash(h, j);
		shmf_block_masks(hj, g->k, mask);
		fresh |= shmf_bloom_block_add(shmf_bloom_line(g, hj), mask);
	}
	return fresh;
}

/* Which test a batch check runs: AUTO picks AVX-512 when the CPU has it.
 * Tests name one to compare them. */
enum shmf_bloom_impl { SHMF_BLOOM_AUTO, SHMF_BLOOM_SCALAR, SHMF_BLOOM_AVX512 };

/** 1 if this CPU (and kernel) run AVX-512F and AVX-512VL code. */
int shmf_bloom_have_avx512(void);

/**
 * Check keys[0..n): out[i] = 1 if key i may be present, 0 if absent.
 * @pre every key is valid (ptr non-NULL or len 0), out has n bytes.
 * @return the number present, or SIZE_MAX if @p impl is SHMF_BLOOM_AVX512
 *         on a CPU without it.
 */
size_t shmf_bloom_check_batch(const struct shmf_bloom_geom *g, const shmf_key_t *keys, size_t n, uint8_t *out,
			      enum shmf_bloom_impl impl);

/**
 * Add keys[0..n); out[i] (when out is not NULL) = 1 if this call set a bit
 * of key i. @return the number of keys that were new.
 */
size_t shmf_bloom_add_batch(const struct shmf_bloom_geom *g, const shmf_key_t *keys, size_t n, uint8_t *out);

#endif
