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

/*
 * Fill mask[0..7] with the key's k bits (positions drawn with replacement,
 * as the false-positive formula in bloom.c assumes).
 */
static inline void shmf_block_masks(uint64_t h, uint32_t k, uint64_t mask[SHMF_BLOCK_WORDS])
{
	uint64_t state = h;
	uint64_t z = shmf_mix64(state);
	unsigned avail = 7;

	for (unsigned w = 0; w < SHMF_BLOCK_WORDS; w++)
		mask[w] = 0;
	for (uint32_t i = 0; i < k; i++) {
		if (avail == 0) {
			/* A fresh word from the next SplitMix64 state: 7 more positions. */
			state += UINT64_C(0x9e3779b97f4a7c15);
			z = shmf_mix64(state);
			avail = 7;
		}
		unsigned pos = (unsigned)(z & (SHMF_BLOCK_BITS - 1));
		z >>= 9;
		avail--;
		mask[pos >> 6] |= UINT64_C(1) << (pos & 63);
	}
}

#endif
