/*
 * geometry.h - the shape of a filter's data segment, for either type: one
 * sizing call for the daemon (and offline builders), one consistency check
 * for everything that reads a slot or a data header.
 */
#ifndef SHMF_GEOMETRY_H
#define SHMF_GEOMETRY_H

#include <stdint.h>

/* The fields a slot and a data header carry about a filter's shape. */
struct shmf_geometry {
	uint32_t type;        /* SHMF_TYPE_BLOOM or SHMF_TYPE_CUCKOO */
	uint32_t k;           /* Bloom: bits per key; cuckoo: fingerprint bits */
	uint64_t nblocks;     /* 64-byte payload blocks */
	uint64_t nbuckets;    /* cuckoo: buckets; Bloom: 0 */
	uint32_t max_kicks;   /* cuckoo: relocation bound; Bloom: 0 */
	uint32_t bucket_size; /* cuckoo: fingerprints per bucket (1, 2, 4 or 8); Bloom: 0 */
	uint64_t data_bytes;  /* the whole data segment */
};

/**
 * Size a filter of @p type for @p capacity keys at @p fpr (@p max_kicks
 * and @p bucket_size: cuckoo only, 0 for the defaults, 500 and 4).
 * @return 0, SHMF_E_TYPE (unknown type), SHMF_E_INVAL (capacity 0, fpr
 *         out of (0,1) or not reachable by the type and bucket size, a
 *         bucket size other than 1, 2, 4 or 8, max_kicks above
 *         SHMF_CUCKOO_KICKS_LIMIT, either given for Bloom), SHMF_E_TOOBIG.
 */
int shmf_geometry_size(int type, uint64_t capacity, double fpr, uint32_t max_kicks, uint32_t bucket_size,
		       struct shmf_geometry *out);

/**
 * Whether @p g, a shape read from a file, is the one shmf_geometry_size()
 * gives for @p capacity at @p fpr with its own bucket size, or (cuckoo
 * only) the one it gave before cuckoo sizing had its headroom
 * (shmf_cuckoo_size()). The type, k, bucket size, buckets, blocks and
 * max_kicks are compared; data_bytes is not.
 * @return 0, SHMF_E_FORMAT (another shape), or the sizing's error.
 */
int shmf_geometry_sized(const struct shmf_geometry *g, uint64_t capacity, double fpr);

/** Type, k, bucket size, blocks and buckets agree with each other and the
 * size limit (max_kicks and data_bytes are not looked at). @return 0 or
 * SHMF_E_FORMAT. */
int shmf_geometry_check(uint32_t type, uint32_t k, uint32_t bucket_size, uint64_t nblocks, uint64_t nbuckets);

#endif
