/*
 * hash.h - how a key becomes a block index and a bit pattern.
 *
 * One XXH3-64 per key, seeded with the filter's secret seed. The block is
 * chosen from the hash with a multiply-high (Lemire's fast range, 64-bit so
 * filters past 2^32 bits work); the k bit positions inside the 512-bit block
 * come from multiply-shift hashing of the same hash (see shmf_pos).
 */
#ifndef SHMF_HASH_H
#define SHMF_HASH_H

#include <stddef.h>
#include <stdint.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "libclient/segment-format.h"

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
 * Bit positions. The key's hash h is multiplied by SHMF_POS_MUL once; the
 * product's low 32-bit word feeds the even positions and its high word the
 * odd ones, so a position pattern depends on all 64 bits of h (the block
 * index uses mostly the top bits; the low word alone would leave a
 * pattern-collision floor of 2^-32 per key in the block, too close to the
 * 1e-9 of the click-dedupe case). Position i is the top 9 bits of the
 * 32-bit product of its word with odd salt i (multiply-shift hashing), a
 * bit of the 512-bit block numbered little-endian: bit p is bit p % 64 of
 * 64-bit word p / 64, which is also bit p % 32 of 32-bit word p / 32. The
 * k positions are independent multiplies, so the scalar path has no chain
 * between them and the AVX-512 path computes 16 in one instruction.
 */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "bit p of a block is bit p % 32 of 32-bit word p / 32 only on little-endian machines");

#define SHMF_POS_MUL   UINT64_C(0x9e3779b97f4a7c15)
#define SHMF_POS_SHIFT (32u - 9u) /* 9 bits: log2(SHMF_BLOCK_BITS) */

/* The salts, one per position (SHMF_K_MAX of them); hash.c lists them. */
extern const uint32_t shmf_pos_salt[SHMF_K_MAX];

/* Position @p i of a key whose remixed hash is @p x = h * SHMF_POS_MUL. */
static inline unsigned shmf_pos(uint64_t x, uint32_t i)
{
	uint32_t w = (uint32_t)(x >> (32u * (i & 1u)));
	return (unsigned)((uint32_t)(w * shmf_pos_salt[i]) >> SHMF_POS_SHIFT);
}

/*
 * The one definition of where a key's k bits lie in its 512-bit block:
 * runs @p stmt with the unsigned @p pos set to each position in turn
 * (drawn with replacement, as the false-positive formula in bloom.c
 * assumes). A macro so that check and add share it with no call and no
 * positions array on the hot path.
 */
#define SHMF_FOR_EACH_POS(h, k, pos, stmt)                     \
	for (uint32_t i_ = 0, k_ = (k); i_ < k_; i_++) {       \
		unsigned pos = shmf_pos((h)*SHMF_POS_MUL, i_); \
		stmt;                                          \
	}

/*
 * A Bloom filter of several lines a key (bloom.h, docs/design.md section
 * 4.1) keeps k bits in each of its lines. Line 0 is the one-line layout's
 * line (hash h); line j > 0 takes the hash shmf_mix64(h + j * SHMF_LINE_MUL),
 * a bijection of the one XXH3 (no second hash of the key), for both its
 * index (shmf_block_index) and its positions (SHMF_FOR_EACH_POS).
 */
#define SHMF_LINE_MUL UINT64_C(0xd6e8feb86659fd93)

static inline uint64_t shmf_line_hash(uint64_t h, uint32_t j)
{
	return j == 0 ? h : shmf_mix64(h + j * SHMF_LINE_MUL);
}

/* Fill mask[0..7] with the key's k bits. */
static inline void shmf_block_masks(uint64_t h, uint32_t k, uint64_t mask[SHMF_BLOCK_WORDS])
{
	for (unsigned w = 0; w < SHMF_BLOCK_WORDS; w++)
		mask[w] = 0;
	SHMF_FOR_EACH_POS(h, k, pos, mask[pos >> 6] |= UINT64_C(1) << (pos & 63));
}

#endif
