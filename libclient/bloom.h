/*
 * bloom.h - the cache-line blocked Bloom filter: sizing, estimates, and the
 * per-block check and add used by the hot path.
 */
#ifndef SHMF_BLOOM_H
#define SHMF_BLOOM_H

#include <stdint.h>

#include "libclient/hash.h"

/* What shmf_bloom_size() chose. */
struct shmf_bloom_params {
	uint32_t k;       /* bits per key */
	uint64_t nblocks; /* 64-byte blocks */
	uint64_t bits;    /* nblocks * 512 */
};

/**
 * Size a blocked Bloom filter for @p capacity keys at false-positive rate
 * @p fpr: the smallest number of blocks (and its k) whose expected FPR at
 * capacity, by shmf_bloom_fpr(), is at most @p fpr.
 * @return 0, SHMF_E_INVAL (capacity 0, fpr not in (0,1), or an fpr a
 *         blocked filter cannot reach), or SHMF_E_TOOBIG (more than
 *         SHMF_DATA_MAX_BYTES).
 */
int shmf_bloom_size(uint64_t capacity, double fpr, struct shmf_bloom_params *out);

/**
 * Expected false-positive rate of a blocked Bloom filter of @p nblocks
 * 512-bit blocks holding @p n keys with @p k bits each: the block loads are
 * Poisson with mean n/nblocks, and a block holding i keys answers a false
 * positive with probability (1 - (1 - 1/512)^(i k))^k.
 */
double shmf_bloom_fpr(uint64_t n, uint64_t nblocks, uint32_t k);

/** Expected fraction of bits set after @p n keys: 1 - (1 - 1/m)^(n k). */
double shmf_bloom_fill(uint64_t n, uint64_t nblocks, uint32_t k);

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

/* What a batch call needs of a mapped generation. */
struct shmf_bloom_geom {
	uint64_t *blocks;
	uint64_t nblocks;
	uint64_t seed;
	uint32_t k;
};

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
