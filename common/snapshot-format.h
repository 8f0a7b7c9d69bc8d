/*
 * snapshot-format.h - the snapshot file format, in one place.
 * docs/snapshot-format.md describes it byte by byte for other languages.
 *
 * Every integer is little-endian (the daemon refuses to build on a
 * big-endian host rather than write another byte order). Layout:
 *
 *   0                      header, 256 bytes (struct shmf_snap_header)
 *   256                    nsections section headers, 64 bytes each
 *   4096                   nsections payloads, back to back: the data
 *                          segment's payload blocks, as mapped, of
 *                          section_bytes each (a growing filter's: each
 *                          its layer's size, see below)
 *   after the payloads     chunk table: per section, one XXH3-64 per
 *                          chunk_bytes of its payload (the last chunk may
 *                          be short)
 *   file_bytes - 16        trailer: XXH3-64 of the header, the section
 *                          headers and the chunk table; then "SHMFEND\0"
 *
 * A section is one generation of the filter: a plain filter has one, a
 * time-windowed filter one per live generation, newest first. A growing
 * filter (SHMF_SNAP_F_LAYERED, version 3) one per layer, newest first:
 * the header's capacity, error rate and shape are its first layer's
 * (capacity, rate as created), and section i, layer nsections - 1 - i,
 * has the shape shmf_geometry_layer() gives that layer (its payload
 * nblocks * 64 bytes of that shape; section_bytes is layer 0's).
 */
#ifndef SHMF_COMMON_SNAPSHOT_FORMAT_H
#define SHMF_COMMON_SNAPSHOT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include <shmf.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "snapshot files are little-endian; this host is not"
#endif

#define SHMF_SNAP_MAGIC     "SHMFSNAP"
#define SHMF_SNAP_END_MAGIC "SHMFEND" /* 8 bytes with its NUL */
/* Versions: 1 the first; 2 the stream cursor and flags of a replicated
 * filter (bytes 184-203, reserved and zero in version 1, so that a version
 * 1 file reads as cursor 0-0, not replicated); 3 growing and NONSCALING
 * filters (the flags LAYERED and NONSCALING, the expansion at bytes
 * 204-207 and each section's layer at section bytes 32-35) and the cuckoo
 * bucket size (bytes 208-211), reserved and zero before: older files read
 * as fixed filters of one layer, their cuckoo buckets of 4 fingerprints;
 * 4 the filter's scheme (bytes 212-215, reserved and zero before: older
 * files hold shmfilter's own filters), so that a filter imported from
 * RedisBloom (its payload a struct shmf_rb_table and RedisBloom's links,
 * segment-format.h) is snapshotted, restored, dumped and pulled as one;
 * 5 Bloom filters of several lines a key: a Bloom filter's bucket size
 * (bytes 208-211) is its lines a key, 1, 2 or 3 (zero before: one line,
 * which readers take older files' Bloom filters to have);
 * 6 static filters (type 3, SHMF_TYPE_STATIC: k its fingerprint bits,
 * bucket size its segment length, buckets its fingerprints, capacity its
 * distinct keys; one section, its payload a struct shmf_fuse_table and the
 * fingerprints, libclient/fuse.h), which a reader of version 5 would
 * refuse by type; no other field changed meaning. Also in version 6
 * (unreleased when it came): a replicated filter's fleet block (flag
 * FLEET, struct shmf_snap_fleet, between the chunk table and the
 * trailer): the per-sender sequences that go with the stream cursor, so
 * that a restore refuses replays of entries older than the copy; files
 * without it restore with an empty table, as before.
 * Readers accept all six. */
#define SHMF_SNAP_VERSION     6u
#define SHMF_SNAP_VERSION_MIN 1u
#define SHMF_SNAP_PAYLOAD_OFF 4096u
#define SHMF_SNAP_CHUNK       (4u << 20) /* checksum chunk of a payload */
/* Most generations in one file: as many section headers as fit between
 * byte 256 and the payload, (4096 - 256) / 64, which is also the ring a
 * slot publishes (SHMF_RING_MAX, asserted in snapshot.c). Up to 16 before
 * layers grew to 60; the layout is the same, so a file of at most 16
 * sections reads as it did. */
#define SHMF_SNAP_SECTIONS 60u
#define SHMF_SNAP_TRAILER  16u

struct shmf_snap_header {
	char magic[8];                /*   0: "SHMFSNAP" */
	uint32_t version;             /*   8: SHMF_SNAP_VERSION */
	uint32_t header_size;         /*  12: 256 */
	uint32_t type;                /*  16: 1 Bloom, 2 cuckoo, 3 static (v6) (SHMF_TYPE_*) */
	uint32_t k;                   /*  20: Bloom: bits per key; cuckoo: fingerprint bits */
	uint64_t capacity;            /*  24: keys the filter is sized for */
	uint64_t fpr_bits;            /*  32: target FPR, IEEE-754 double */
	uint64_t nblocks;             /*  40: 64-byte payload blocks per section */
	uint64_t nbuckets;            /*  48: cuckoo: buckets; Bloom: 0 */
	uint32_t max_kicks;           /*  56: cuckoo: relocation bound; Bloom: 0 */
	uint32_t nsections;           /*  60: generations held, 1..SHMF_SNAP_SECTIONS */
	uint64_t seed;                /*  64: the hash seed of every section */
	uint64_t created_epoch;       /*  72: when the filter was created (unix seconds) */
	uint64_t snapshot_epoch;      /*  80: when this snapshot began (unix seconds) */
	uint64_t window_secs;         /*  88: time window length; 0: not windowed */
	uint32_t window_gens;         /*  96: generations in the window ring; 0: not windowed */
	uint32_t chunk_bytes;         /* 100: checksum chunk size, SHMF_SNAP_CHUNK */
	uint64_t section_bytes;       /* 104: payload bytes per section, nblocks * 64 */
	uint64_t file_bytes;          /* 112: size of the whole file */
	char name[SHMF_NAME_MAX + 1]; /* 120: filter name, NUL-padded */
	uint64_t cursor_ms;           /* 184: v2: the stream cursor <ms>-<seq> of a replicated filter */
	uint64_t cursor_seq;          /* 192:     when the copy began (0-0: none) */
	uint32_t flags;               /* 200: v2: SHMF_SNAP_F_* */
	uint32_t expansion;           /* 204: v3: a growing filter's expansion (LAYERED); else 0 */
	uint32_t bucket_size; /* 208: v3: cuckoo: fingerprints per bucket (1, 2, 4, 8); Bloom: v5: lines a key (1, 2,
				 3), 0 before */
	uint32_t scheme;      /* 212: v4: SHMF_SCHEME_* (0: shmfilter's own; else an import from
				 RedisBloom: one section, its payload the import's, k 0) */
	uint8_t reserved[32]; /* 216: zero */
	uint64_t header_xxh3; /* 248: XXH3-64 (seed 0) of bytes 0..247 */
};

/* Header flags. */
#define SHMF_SNAP_F_REPLICATED 0x1u /* the filter replicated (its slot's SHMF_SLOT_REPLICATED) */
#define SHMF_SNAP_F_LAYERED    0x2u /* v3: a growing filter, its sections its layers (its slot's LAYERED) */
#define SHMF_SNAP_F_NONSCALING 0x4u /* v3: a NONSCALING Bloom filter (its slot's NONSCALING) */
#define SHMF_SNAP_F_FLEET      0x8u /* v6: a fleet block follows the chunk table (with REPLICATED only) */
/* Every flag defined; others make the file malformed. */
#define SHMF_SNAP_F_ALL (SHMF_SNAP_F_REPLICATED | SHMF_SNAP_F_LAYERED | SHMF_SNAP_F_NONSCALING | SHMF_SNAP_F_FLEET)

/* The fleet block of a replicated filter (flag FLEET, version 6): its
 * slot's fleet sequences when the copy began (segment-format.h's
 * fleet_sent_seq, fleet_floor and fleet_peers), which go with the header's
 * stream cursor. A file has it between the chunk table and the trailer; a
 * dump's header chunk after the relocation counts. */
#define SHMF_SNAP_FLEET_PEERS 32u
struct shmf_snap_fleet {
	uint64_t sent_seq; /*   0: the last sequence this node sent for the filter */
	uint64_t floor;    /*   8: a sender not in peers must send above this */
	struct {
		uint64_t node;          /* fleet_node_id() of a sender's name; 0: free */
		uint64_t seq;           /* the last sequence applied from it */
	} peers[SHMF_SNAP_FLEET_PEERS]; /*  16 */
	uint64_t reserved;              /* 528: zero */
	uint64_t xxh3;                  /* 536: XXH3-64 (seed 0) of bytes 0..535 */
};

struct shmf_snap_section {
	uint64_t generation;    /*  0: generation number in the daemon that wrote it */
	uint64_t created_epoch; /*  8: when this generation began (unix seconds) */
	uint64_t items;         /* 16: item counter (Bloom: adds that were new; cuckoo: copies) */
	uint64_t deletes;       /* 24: cuckoo: copies deleted; Bloom: 0 */
	uint32_t layer;         /* 32: v3: a growing filter's layer in this section (0 the first); else 0 */
	uint32_t reserved0;     /* 36: zero */
	uint64_t reserved[2];   /* 40: zero */
	uint64_t xxh3;          /* 56: XXH3-64 (seed 0) of bytes 0..55 */
};

/*
 * Dump chunks: a filter copied over the protocol, chunk by chunk
 * (BF.SCANDUMP / BF.LOADCHUNK, CF.SCANDUMP / CF.LOADCHUNK; shmd's own
 * format, which RedisBloom does not load). Every chunk is a chunk header
 * then its data:
 *
 *   chunk 0, the header chunk: struct shmf_snap_header (as a snapshot file
 *   has it, checksums and all), nsections struct shmf_snap_section, then
 *   nsections u64: each section's cuckoo relocation count when the dump
 *   began (Bloom: 0)
 *   chunks 1..total, the payload chunks: SHMF_CHUNK_BYTES of one section's
 *   payload (the last of a section may be shorter), sections in order,
 *   each from its first byte to its last
 *
 * The iterator that goes with chunk i (what SCANDUMP answers, and what
 * LOADCHUNK takes with it) is tag << 32 | (i + 1), tag being 31 bits of
 * the XXH3 of the filter's seed, generations and relocation counts, so
 * that an iterator of a filter that was rotated, replaced or (cuckoo)
 * relocated entries since is told apart.
 */
#define SHMF_CHUNK_MAGIC     "SHMFCHNK"
#define SHMF_CHUNK_VERSION   1u
#define SHMF_CHUNK_KIND_HEAD 1u
#define SHMF_CHUNK_KIND_DATA 2u
#define SHMF_CHUNK_BYTES     SHMF_SNAP_CHUNK /* payload bytes of a data chunk, at most */
#define SHMF_CHUNK_TAG_MASK  0x7fffffffu

struct shmf_chunk_header {
	char magic[8];       /*  0: "SHMFCHNK" */
	uint32_t version;    /*  8: SHMF_CHUNK_VERSION */
	uint32_t kind;       /* 12: SHMF_CHUNK_KIND_* */
	uint64_t index;      /* 16: 0 the header chunk, 1..total the payload chunks */
	uint64_t total;      /* 24: payload chunks in the dump */
	uint32_t section;    /* 32: payload: the section (0 newest); header: 0 */
	uint32_t tag;        /* 36: the iterator's tag (31 bits) */
	uint64_t offset;     /* 40: payload: byte offset in the section's payload; header: 0 */
	uint64_t length;     /* 48: bytes of data after this header */
	uint64_t generation; /* 56: payload: the generation read (the section header's); header: 0 */
	uint64_t seed;       /* 64: the filter's hash seed */
	uint64_t moves;      /* 72: payload: the section's cuckoo relocation count at the copy; header: 0 */
	uint64_t reserved;   /* 80: zero */
	uint64_t xxh3;       /* 88: XXH3-64 (seed 0) of bytes 0..87 and then the data */
};

_Static_assert(sizeof(struct shmf_chunk_header) == 96, "chunk header is 96 bytes");
_Static_assert(offsetof(struct shmf_chunk_header, xxh3) == 88, "chunk checksum last");
_Static_assert(SHMF_CHUNK_BYTES + 96 <= (16u << 20), "a chunk fits a RESP argument (16 MiB)");

_Static_assert(sizeof(struct shmf_snap_header) == 256, "snapshot header is 256 bytes");
_Static_assert(offsetof(struct shmf_snap_header, name) == 120, "name offset");
_Static_assert(offsetof(struct shmf_snap_header, cursor_ms) == 184, "cursor offset");
_Static_assert(offsetof(struct shmf_snap_header, flags) == 200, "flags offset");
_Static_assert(offsetof(struct shmf_snap_header, expansion) == 204, "expansion offset");
_Static_assert(offsetof(struct shmf_snap_header, bucket_size) == 208, "bucket size offset");
_Static_assert(offsetof(struct shmf_snap_header, scheme) == 212, "scheme offset");
_Static_assert(offsetof(struct shmf_snap_section, layer) == 32, "section layer offset");
_Static_assert(offsetof(struct shmf_snap_header, header_xxh3) == 248, "header checksum last");
_Static_assert(sizeof(struct shmf_snap_section) == 64, "section header is 64 bytes");
_Static_assert(256 + SHMF_SNAP_SECTIONS * 64 <= SHMF_SNAP_PAYLOAD_OFF, "section headers fit before the payload");

#endif
