/*
 * redisbloom.h - filters imported from RedisBloom, read as RedisBloom
 * reads them: its hashes (MurmurHash64A and MurmurHash2, written here from
 * their published definitions), a scalable Bloom chain's bit positions and
 * a cuckoo filter's buckets, over the payload layout of segment-format.h
 * (struct shmf_rb_table). Read-only: nothing here writes a payload.
 *
 * shmf_rb_open() copies and checks the table before anything else reads
 * the payload; from then on every position is bounded by that private
 * copy, so a scribbled payload can make answers wrong, never make a
 * reader leave its mapping. shmd runs the same check on a table it built
 * or was sent before it publishes one.
 */
#ifndef SHMF_REDISBLOOM_H
#define SHMF_REDISBLOOM_H

#include <stddef.h>
#include <stdint.h>

#include "libclient/segment-format.h"
#include <shmf.h>

/* MurmurHash64A (Austin Appleby's 64-bit MurmurHash2, bytes read
 * little-endian), as RedisBloom hashes keys. */
uint64_t shmf_murmur64a(const void *key, size_t len, uint64_t seed);

/* MurmurHash2 (32-bit, bytes read little-endian), as RedisBloom's older
 * chains hash keys. */
uint32_t shmf_murmur2(const void *key, size_t len, uint32_t seed);

/* One link (sub-filter) as a check reads it, private to the reader. */
struct shmf_rb_part {
	const uint8_t *bytes;  /* its bytes in the mapping */
	uint64_t mod;          /* Bloom: the modulus (2^n2 or bits); cuckoo: buckets */
	uint64_t wrap;         /* Bloom: 2^64 mod mod, for the positions' incremental remainders */
	unsigned __int128 inv; /* Bloom, a modulus not a power of 2: ceil(2^128 / mod), for remainders
				  by multiplication (redisbloom.c, rb_mod) */
	uint64_t size;         /* Bloom: keys added to it (RedisBloom's count) */
	uint32_t k;            /* Bloom: bits per key; cuckoo: fingerprints per bucket */
	uint32_t pow2;         /* Bloom: the modulus is a power of 2 */
};

/* An imported filter: its table, copied and checked. */
struct shmf_rb {
	uint32_t scheme; /* SHMF_SCHEME_RB_BLOOM or SHMF_SCHEME_RB_CUCKOO */
	uint32_t hash;   /* SHMF_RB_HASH_* */
	uint32_t nlinks;
	uint32_t bucket_size;    /* cuckoo */
	uint32_t max_iterations; /* cuckoo: RedisBloom's MAXITERATIONS */
	uint64_t items;          /* RedisBloom's count at the dump */
	uint64_t deletes;        /* cuckoo */
	uint64_t capacity;       /* Bloom: the links' entries summed; cuckoo: buckets * bucket size summed */
	uint64_t bits;           /* Bloom: the links' bits summed; cuckoo: their fingerprint bits */
	uint32_t growth;         /* the table's growth (expansion) */
	uint32_t options;        /* Bloom: RedisBloom's option bits */
	double error;            /* Bloom: the first link's error rate; cuckoo: 0 */
	struct shmf_rb_part part[];
};

/**
 * Check the table at the start of @p payload (@p bytes long, 64-byte
 * aligned; a filter of scheme @p scheme): magic, link count, hash, every
 * link's fields as RedisBloom checks them (bits = bytes * 8, 2^n2 <= bits,
 * k = ceil(ln 2 * bits per entry) up to 1075, an error rate in (0, 1),
 * the links' sizes summing to the chain's; a cuckoo filter's bucket size
 * 1..255 and sub-filters of fewer than 2^32 bytes), and each link within
 * the payload where the layout puts it, then copy what a check needs.
 * @return 0 with *@p out (free with shmf_rb_free()), SHMF_E_FORMAT (a
 *         table that does not hold), SHMF_E_TYPE (an unknown scheme), or
 *         -ENOMEM. With @p out NULL, only checks, and reads nothing past
 *         the table (@p bytes is the payload's length all the same).
 */
int shmf_rb_open(uint32_t scheme, const void *payload, uint64_t bytes, struct shmf_rb **out);

void shmf_rb_free(struct shmf_rb *rb);

/** The payload bytes a table of @p nlinks links takes before link 0. */
static inline uint64_t shmf_rb_table_bytes(uint32_t nlinks)
{
	return sizeof(struct shmf_rb_table) + (uint64_t)nlinks * sizeof(struct shmf_rb_link);
}

/** Where the link after one ending at payload offset @p end begins. */
static inline uint64_t shmf_rb_align(uint64_t end)
{
	return (end + SHMF_BLOCK_BYTES - 1) / SHMF_BLOCK_BYTES * SHMF_BLOCK_BYTES;
}

/**
 * 1 if RedisBloom's BF.EXISTS (a chain) or CF.EXISTS (a cuckoo filter)
 * would answer 1 for the key, else 0.
 */
int shmf_rb_check(const struct shmf_rb *rb, const void *key, size_t len);

/**
 * shmf_rb_check() of keys[0..n) into out[0..n) (a chain's keys hashed a
 * few ahead, their first positions prefetched).
 * @return the number present.
 */
size_t shmf_rb_check_many(const struct shmf_rb *rb, const shmf_key_t *keys, size_t n, uint8_t *out);

/**
 * Cuckoo: what RedisBloom's CF.COUNT answers for the key (the matching
 * fingerprints in both its buckets of every sub-filter; a bucket that is
 * both counted twice, as RedisBloom counts it). Bloom: SHMF_E_TYPE.
 */
int shmf_rb_count(const struct shmf_rb *rb, const void *key, size_t len);

/**
 * Estimates from the counts the table carries: @p fill, the expected
 * fraction of bits set (Bloom) or slots used (cuckoo); @p fpr, the
 * expected false-positive rate (Bloom: 1 - the product over the links of
 * 1 - (1 - e^(-k size / bits))^k; cuckoo: 2 b / 255 per sub-filter at the
 * mean load).
 */
void shmf_rb_estimates(const struct shmf_rb *rb, double *fill, double *fpr);

#endif
