/*
 * redisbloom-dump.h - RedisBloom's own dump format, read: the header chunk
 * its BF.SCANDUMP and CF.SCANDUMP hand out first, turned into the table of
 * a filter imported from RedisBloom (segment-format.h, struct
 * shmf_rb_table) and the snapshot header a load of it begins with; and
 * where each byte of its later chunks goes. shmd's LOADCHUNK takes such
 * chunks; shmctl import fetches them from a Redis.
 *
 * The format (RedisBloom's sb.c and cf.h; every integer little-endian,
 * the structs packed):
 *
 *   Bloom header chunk, 20 + 53 n bytes: u64 size (items), u32 nfilters
 *   (n), u32 options, u32 growth, then per link: u64 bytes, u64 bits, u64
 *   size, f64 error, f64 bpe, u32 hashes, u64 entries, u8 n2. (A chain
 *   with a hash configuration, RedisBloom's bf-hash-seed, has 16 bytes
 *   more; it is refused.)
 *
 *   cuckoo header chunk, 38 bytes: u64 numItems, u64 numBuckets, u64
 *   numDeletes, u64 numFilters, u16 bucketSize, u16 maxIterations, u16
 *   expansion; sub-filter i has numBuckets * expansion^i buckets of
 *   bucketSize one-byte fingerprints.
 *
 *   data chunks: the links' (sub-filters') bytes, the first link first,
 *   each chunk within one link; the iterator that comes with a chunk is 1
 *   plus the position of its last byte plus 1, counting bytes across the
 *   links from 0 (the header chunk's iterator is 1).
 */
#ifndef SHMF_COMMON_REDISBLOOM_DUMP_H
#define SHMF_COMMON_REDISBLOOM_DUMP_H

#include <stddef.h>
#include <stdint.h>

#include "libclient/segment-format.h"
#include "common/snapshot-format.h"

#define RB_DUMP_BLOOM_HEAD  20u /* a Bloom header chunk's fixed part */
#define RB_DUMP_BLOOM_LINK  53u /* and each link's */
#define RB_DUMP_CUCKOO_HEAD 38u /* a cuckoo header chunk */
#define RB_DUMP_HASH_CONFIG 16u /* the hash configuration some chains carry last */

/* A RedisBloom dump, as its header chunk says, checked. */
struct rb_dump {
	uint32_t type;        /* SHMF_TYPE_BLOOM or SHMF_TYPE_CUCKOO */
	uint32_t scheme;      /* SHMF_SCHEME_RB_BLOOM or SHMF_SCHEME_RB_CUCKOO */
	uint64_t dump_bytes;  /* the bytes of every link, as its data chunks carry them */
	uint64_t table_bytes; /* the table's, at the start of the payload */
	uint64_t payload;     /* the whole payload: table, links, padding */
	uint64_t capacity;    /* Bloom: entries summed; cuckoo: fingerprint slots summed */
	double fpr;           /* Bloom: the rate RedisBloom was asked for (the first link's, doubled
				 for a chain that scales); cuckoo: 2 * bucket size / 255 */
	struct shmf_rb_table t;
	struct shmf_rb_link link[]; /* t.nlinks */
};

/**
 * Read RedisBloom's header chunk @p data (@p len bytes) of a filter of
 * @p type (the LOADCHUNK verb's family). @return 0 with *@p out (free()),
 * or SHMF_E_FORMAT with a sentence in @p err naming what does not hold
 * (its length, a link's field, a sub-filter's size), -ENOMEM.
 */
int rb_dump_parse(int type, const void *data, size_t len, struct rb_dump **out, char *err, size_t errlen);

/**
 * Where dump byte @p pos (0 the first byte of the first link) goes: its
 * payload offset, and how many bytes of its link follow it, itself
 * included. @return 0, or SHMF_E_INVAL past the last byte.
 */
int rb_dump_locate(const struct rb_dump *d, uint64_t pos, uint64_t *payload_off, uint64_t *left);

/**
 * The table as the payload begins with it (@p d->table_bytes bytes into
 * @p out).
 */
void rb_dump_table(const struct rb_dump *d, void *out);

/**
 * The snapshot header (checksums and all, as snapshot_header_check()
 * accepts it) and section header a load of @p d as filter @p name begins
 * with: one section of the import's scheme, created @p now.
 */
void rb_dump_snapshot(const struct rb_dump *d, const char *name, uint64_t now, struct shmf_snap_header *h,
		      struct shmf_snap_section *sec);

#endif
