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
	uint32_t type;        /* SHMF_TYPE_BLOOM, SHMF_TYPE_CUCKOO or SHMF_TYPE_STATIC */
	uint32_t k;           /* Bloom: bits per key; cuckoo and static: fingerprint bits */
	uint64_t nblocks;     /* 64-byte payload blocks */
	uint64_t nbuckets;    /* cuckoo: buckets; static: fingerprints (fuse.h); Bloom: 0 */
	uint32_t max_kicks;   /* cuckoo: relocation bound; Bloom: 0 */
	uint32_t bucket_size; /* cuckoo: fingerprints per bucket (1, 2, 4 or 8);
				 Bloom: lines a key's bits span (1, 2 or 3: bloom.h);
				 static: fingerprints a segment (fuse.h) */
	uint32_t scheme;      /* SHMF_SCHEME_*: 0 shmfilter's own; else an import, whose shape is in its payload */
	uint64_t data_bytes;  /* the whole data segment */
};

/**
 * Size a filter of @p type for @p capacity keys at @p fpr (@p max_kicks
 * cuckoo only, 0 for the default, 500; @p bucket_size 0 for the default:
 * cuckoo buckets of 4, or 2 below the rates buckets of 4 reach
 * (shmf_geometry_bucket_size()); Bloom, the layout shmf_bloom_size()
 * chooses, or 1..3 for that many lines a key).
 * @return 0, SHMF_E_TYPE (unknown type), SHMF_E_INVAL (capacity 0, fpr
 *         out of (0,1) or not reachable by the type and bucket size, a
 *         cuckoo bucket size other than 1, 2, 4 or 8, a Bloom one past 3,
 *         max_kicks above SHMF_CUCKOO_KICKS_LIMIT or given for Bloom),
 *         SHMF_E_TOOBIG.
 */
int shmf_geometry_size(int type, uint64_t capacity, double fpr, uint32_t max_kicks, uint32_t bucket_size,
		       struct shmf_geometry *out);

/** The bucket size a cuckoo filter of @p capacity keys at @p fpr gets
 * when none is asked for: 4 (SHMF_CUCKOO_SLOTS_DEFAULT), or 2 below the
 * rates buckets of 4 reach (SHMF_CUCKOO_SLOTS_LOW_RATE); 4 where neither
 * reaches it (the sizing then refuses it, naming buckets of 4). */
uint32_t shmf_geometry_bucket_size(uint64_t capacity, double fpr);

/**
 * Whether @p g, a shape read from a file, is the one shmf_geometry_size()
 * gives for @p capacity at @p fpr with its own bucket size, or (cuckoo
 * only) the one it gave before cuckoo sizing had its headroom
 * (shmf_cuckoo_size()). The type, k, bucket size, buckets, blocks and
 * max_kicks are compared; data_bytes is not.
 * @return 0, SHMF_E_FORMAT (another shape), or the sizing's error.
 */
int shmf_geometry_sized(const struct shmf_geometry *g, uint64_t capacity, double fpr);

/*
 * Growing filters (docs/design.md, "Layers"): a filter created for
 * capacity keys at error rate fpr that grows by an expansion e >= 1 is a
 * chain of layers. Layer i holds capacity * e^i keys; a Bloom layer i is
 * sized for fpr * 0.9 * 0.5^(i+1) (RedisBloom's tightening ratio 0.5
 * between layers; layer 0 at 0.45 of the declared rate, so that the rates
 * of every layer sum to at most 0.9 of it, and one filter's realised rate,
 * which varies by a few percent around that sum, stays within it), with
 * layer 0's lines a key (its bucket size), a
 * cuckoo layer keeps layer 0's fingerprint and bucket sizes (its rate is
 * layer 0's: RedisBloom's cuckoo layers do not tighten either). A filter
 * that does not grow (expansion 0) is layer 0 alone, sized for fpr itself.
 */
#define SHMF_EXPANSION_MAX    32768u /* largest expansion a filter may have */
#define SHMF_LAYER_TIGHTENING 0.5    /* each Bloom layer's error rate against the one before */
#define SHMF_LAYER_MARGIN     0.9    /* what the Bloom layers' rates sum to at most, of the declared rate */
/* The lowest rate a Bloom layer is tightened to: a one-line layer cannot
 * reach much below 1e-17 (k is at most 32 bits in a 512-bit line), and a
 * filter growing by 1 from 1% would need that by its 49th layer. Layers
 * past it keep this rate: the 19 more a filter can then have add at most
 * 2e-14 to its rate. A filter created below it tightens no layer. */
#define SHMF_LAYER_FPR_FLOOR 1e-15

/* What one layer of a filter is. */
struct shmf_layer {
	uint64_t capacity; /* keys it is sized for */
	double fpr;        /* the error rate it is sized for */
	struct shmf_geometry g;
};

/** The most layers a growing filter of @p type has, its standby
 * included: SHMF_CUCKOO_LAYERS_MAX for a cuckoo filter, SHMF_LAYERS_MAX
 * for a Bloom filter (segment-format.h). */
unsigned shmf_layers_max(uint32_t type);

/**
 * Layer @p i of a filter of @p type created for @p capacity keys at
 * @p fpr (@p max_kicks and @p bucket_size as shmf_geometry_size() takes
 * them) that grows by @p expansion (0: does not grow; then only layer 0
 * exists). A pure function of its arguments, the one that shmd (creating
 * a layer), the snapshot reader and libshmf (validating each layer's data
 * header) call; results are cached per process, since a Bloom sizing
 * takes milliseconds.
 * @return 0, SHMF_E_INVAL (i past the last layer, bad expansion, or the
 *         sizing's refusal), SHMF_E_TOOBIG (the layer's capacity or size
 *         is past what the format allows), SHMF_E_TYPE.
 */
int shmf_geometry_layer(int type, uint64_t capacity, double fpr, uint32_t max_kicks, uint32_t bucket_size,
			uint32_t expansion, unsigned i, struct shmf_layer *out);

/** Type, scheme, k, bucket size, blocks and buckets agree with each other
 * and the size limit (max_kicks and data_bytes are not looked at). A
 * filter imported from RedisBloom (scheme RB_BLOOM with type Bloom,
 * RB_CUCKOO with type cuckoo) has k, bucket size and buckets 0 and at
 * least three blocks (its table, then its links: the rest is checked in
 * its payload, redisbloom.h). @return 0 or SHMF_E_FORMAT. */
int shmf_geometry_check(uint32_t type, uint32_t scheme, uint32_t k, uint32_t bucket_size, uint64_t nblocks,
			uint64_t nbuckets);

#endif
