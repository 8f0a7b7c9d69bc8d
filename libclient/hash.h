/*
 * hash.h - how a key becomes a block index and a bit pattern.
 *
 * One XXH3-64 per key, seeded with the filter's secret seed. The block is
 * chosen from the hash with a multiply-high (Lemire's fast range, 64-bit so
 * filters past 2^32 bits work); the k bit positions inside the 512-bit block
 * come from a bijective remix of the same hash, 9 bits at a time.
 */
#ifndef SHMF_HASH_H
#define SHMF_HASH_H

#include <stddef.h>
#include <stdint.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "segment-format.h"

static inline uint64_t shmf_hash(const void *key, size_t len, uint64_t seed)
{
	return XXH3_64bits_withSeed(key, len, seed);
}

/* Block index in [0, nblocks): the high word of hash * nblocks. */
static inline uint64_t shmf_block_index(uint64_t h, uint64_t nblocks)
{
	return (uint64_t)(((unsigned __int128)h * nblocks) >> 64);
}

/* A bijective 64-bit mixer (the finaliser of SplitMix64). */
static inline uint64_t shmf_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	x ^= x >> 31;
	return x;
}

/* The golden-ratio increment of SplitMix64: position word g of a key is
 * shmf_mix64(h + g * SHMF_POS_STEP), and yields 7 positions of 9 bits. */
#define SHMF_POS_STEP UINT64_C(0x9e3779b97f4a7c15)
#define SHMF_POS_PER_WORD 7u

/*
 * The one definition of where a key's k bits lie in its 512-bit block:
 * runs @p stmt with the unsigned @p pos set to each position in turn
 * (drawn with replacement, as the false-positive formula in bloom.c
 * assumes). A macro so that check and add share it with no call and no
 * positions array on the hot path.
 */
#define SHMF_FOR_EACH_POS(h, k, pos, stmt)                                                              \
	for (uint32_t base_ = 0, g_ = 0; base_ < (k); base_ += SHMF_POS_PER_WORD, g_++) {             \
		uint64_t z_ = shmf_mix64((h) + g_ * SHMF_POS_STEP);                                     \
		uint32_t n_ = (k) - base_ < SHMF_POS_PER_WORD ? (k) - base_ : SHMF_POS_PER_WORD;       \
		for (uint32_t i_ = 0; i_ < n_; i_++, z_ >>= 9) {                                        \
			unsigned pos = (unsigned)(z_ & (SHMF_BLOCK_BITS - 1));                          \
			stmt;                                                                           \
		}                                                                                       \
	}

/* Fill mask[0..7] with the key's k bits. */
static inline void shmf_block_masks(uint64_t h, uint32_t k, uint64_t mask[SHMF_BLOCK_WORDS])
{
	for (unsigned w = 0; w < SHMF_BLOCK_WORDS; w++)
		mask[w] = 0;
	SHMF_FOR_EACH_POS(h, k, pos, mask[pos >> 6] |= UINT64_C(1) << (pos & 63));
}

#endif
