/*
 * fuse.h - static filters: binary fuse filters of 8-, 16- or 32-bit
 * fingerprints (Graf and Lemire, "Binary Fuse Filters: Fast and Smaller
 * Than Xor Filters", 2022), arity 3. Built offline once from a set of keys
 * (common/fuse-build.h), then only checked: a filter of the set, no add.
 *
 * A key's hash h = shmf_hash(key, seed) (the data header's seed) is mixed
 * with the table's construction seed, m = shmf_mix64(h + mix), so that a
 * construction that fails is tried again with another mix and no key read
 * again. The key's three positions lie in three consecutive segments of
 * segment_len fingerprints (a power of 2):
 *
 *   p0 = (m * segment_count * segment_len) >> 64
 *   p1 = (p0 + segment_len) ^ ((m >> 18) & (segment_len - 1))
 *   p2 = (p0 + 2 * segment_len) ^ (m & (segment_len - 1))
 *
 * and its fingerprint is the low fp_bits of m ^ (m >> 32). The key may be
 * present when F[p0] ^ F[p1] ^ F[p2] equals its fingerprint: every key of
 * the set does, another key with probability 2^-fp_bits. Positions are
 * 64-bit, so a filter of more than 2^32 keys is sized and checked alike.
 *
 * The payload (segment-format.h's data segment, from its blocks offset):
 *
 *   0    struct shmf_fuse_table (64 bytes): magic, the mix seed, the keys,
 *        the fingerprints and their width, the segment length
 *   64   array_len fingerprints of fp_bits each, little-endian, then zero
 *        up to the end of the last 64-byte block
 *
 * The slot and data header carry type SHMF_TYPE_STATIC, k = fingerprint
 * bits, bucket_size = segment length, nbuckets = fingerprints (array_len),
 * capacity = the set's distinct keys: the sizing is a function of the keys
 * and the rate (shmf_fuse_size), checked as every shape is.
 */
#ifndef SHMF_FUSE_H
#define SHMF_FUSE_H

#include <stddef.h>
#include <stdint.h>

#include <shmf.h>

#include "libclient/hash.h"

#define SHMF_FUSE_MAGIC       UINT64_C(0x4553554646464d53) /* "SMFFFUSE" little-endian */
#define SHMF_FUSE_ARITY       3u
#define SHMF_FUSE_SEGMENT_MAX (1u << 18) /* the paper's cap on a segment's length */
#define SHMF_FUSE_SEGMENT_MIN 4u
#define SHMF_FUSE_TABLE_BYTES 64u

/* The payload's first cache line: written once by the builder, copied and
 * checked by every client before its first check. */
struct shmf_fuse_table {
	uint64_t magic;       /* SHMF_FUSE_MAGIC */
	uint64_t mix;         /* the construction's seed: m = shmf_mix64(h + mix) */
	uint64_t keys;        /* distinct keys built from (the slot's capacity) */
	uint64_t array_len;   /* fingerprints: (segment_count + 2) * segment_len */
	uint32_t segment_len; /* a power of 2, SHMF_FUSE_SEGMENT_MIN..MAX */
	uint32_t fp_bits;     /* 8, 16 or 32 */
	uint64_t pad[3];      /* zero */
};
_Static_assert(sizeof(struct shmf_fuse_table) == SHMF_FUSE_TABLE_BYTES, "fuse table is one cache line");

/* A filter's shape, from its keys and rate (shmf_fuse_size). */
struct shmf_fuse_params {
	uint32_t fp_bits;       /* 8, 16 or 32: the narrowest whose 2^-bits reaches the rate */
	uint32_t segment_len;   /* fingerprints a segment */
	uint64_t segment_count; /* segments a key's first position may lie in */
	uint64_t array_len;     /* fingerprints: (segment_count + 2) * segment_len */
	uint64_t nblocks;       /* 64-byte payload blocks: the table, then the fingerprints */
};

/* What a check reads: private copies, bounded by the checked table. */
struct shmf_fuse_geom {
	const void *fp;        /* the fingerprints (payload + 64) */
	uint64_t seed;         /* XXH3 seed (the data header's) */
	uint64_t mix;          /* the table's mix seed */
	uint64_t count_len;    /* segment_count * segment_len */
	uint64_t segment_len;  /* a power of 2 */
	uint64_t segment_mask; /* segment_len - 1 */
	uint32_t fp_bits;      /* 8, 16 or 32 */
	uint64_t keys;         /* the table's */
	uint64_t array_len;    /* the table's */
};

/* The false-positive rate a fingerprint width answers at: 2^-bits
 * (0.39% for 8 bits, 1.53e-5 for 16, 2.33e-10 for 32). */
double shmf_fuse_fpr(uint32_t fp_bits);

/* The narrowest fingerprint width whose rate reaches @p fpr: 8, 16 or
 * 32, or 0 when none does (below 2^-32) or fpr is not in (0, 1). */
uint32_t shmf_fuse_bits_for(double fpr);

/**
 * Size a static filter of @p keys distinct keys at @p fpr: the paper's
 * segment length (2^floor(ln n / ln 3.33 + 2.25), at most 2^18) and
 * array (n times max(1.125, 0.875 + 0.25 ln 10^6 / ln n), in whole
 * segments, at least three), n taken as 2 below 2.
 * @return 0, SHMF_E_INVAL (keys 0, fpr out of (0, 1) or below 2^-32),
 *         SHMF_E_TOOBIG.
 */
int shmf_fuse_size(uint64_t keys, double fpr, struct shmf_fuse_params *out);

/* Whether k, bucket size, blocks and buckets can be a static filter's
 * shape (geometry.h's check): @return 0 or SHMF_E_FORMAT. */
int shmf_fuse_shape_check(uint32_t fp_bits, uint32_t segment_len, uint64_t nblocks, uint64_t array_len);

/**
 * Check the table at the start of @p payload (@p bytes long) against the
 * shape the header gives (@p fp_bits, @p segment_len, @p array_len,
 * @p keys the capacity), and fill @p g from it.
 * @return 0 or SHMF_E_FORMAT.
 */
int shmf_fuse_open(const void *payload, uint64_t bytes, uint32_t fp_bits, uint32_t segment_len, uint64_t array_len,
		   uint64_t keys, uint64_t seed, struct shmf_fuse_geom *g);

/* A key's positions and fingerprint, from its mixed hash @p m. */
struct shmf_fuse_pos {
	uint64_t p0, p1, p2;
	uint32_t fp;
};

static inline struct shmf_fuse_pos shmf_fuse_locate(uint64_t m, uint64_t count_len, uint64_t segment_len,
						    uint64_t segment_mask, uint32_t fp_bits)
{
	struct shmf_fuse_pos p;
	p.p0 = (uint64_t)(((unsigned __int128)m * count_len) >> 64);
	p.p1 = (p.p0 + segment_len) ^ ((m >> 18) & segment_mask);
	p.p2 = (p.p0 + 2 * segment_len) ^ (m & segment_mask);
	uint64_t f = m ^ (m >> 32);
	p.fp = fp_bits == 32 ? (uint32_t)f : (uint32_t)f & ((1u << fp_bits) - 1u);
	return p;
}

static inline uint64_t shmf_fuse_mix(uint64_t h, uint64_t mix)
{
	return shmf_mix64(h + mix);
}

static inline uint32_t shmf_fuse_load(const void *fp, uint32_t fp_bits, uint64_t i)
{
	switch (fp_bits) {
	case 8: return ((const uint8_t *)fp)[i];
	case 16: return ((const uint16_t *)fp)[i];
	default: return ((const uint32_t *)fp)[i];
	}
}

/* Is the key of hash @p h (shmf_hash with g->seed) in the set? 1 or 0. */
static inline int shmf_fuse_has(const struct shmf_fuse_geom *g, uint64_t h)
{
	struct shmf_fuse_pos p = shmf_fuse_locate(shmf_fuse_mix(h, g->mix), g->count_len, g->segment_len,
						  g->segment_mask, g->fp_bits);
	switch (g->fp_bits) {
	case 8: {
		const uint8_t *a = g->fp;
		return (uint8_t)(a[p.p0] ^ a[p.p1] ^ a[p.p2]) == p.fp;
	}
	case 16: {
		const uint16_t *a = g->fp;
		return (uint16_t)(a[p.p0] ^ a[p.p1] ^ a[p.p2]) == p.fp;
	}
	default: {
		const uint32_t *a = g->fp;
		return (a[p.p0] ^ a[p.p1] ^ a[p.p2]) == p.fp;
	}
	}
}

/**
 * Check @p n keys, hashed ahead and their three lines prefetched so that
 * many misses are in flight (as bloom-batch.c's batch check); out[i] 1 or
 * 0. @return the keys that may be present.
 */
size_t shmf_fuse_check_many(const struct shmf_fuse_geom *g, const shmf_key_t *keys, size_t n, uint8_t *out);

#endif
