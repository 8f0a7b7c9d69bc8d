/*
 * segment-format.h - the shared-memory format of shmfilter, in one place.
 *
 * An instance directory <runtime dir>/<instance>/ holds:
 *   control            the control segment: header + a fixed table of slots.
 *                      Written by shmd only; clients map it read-only.
 *   <name>.<gen>.data  one data segment per filter generation: header page,
 *                      item-counter page, then the payload in 64-byte blocks:
 *                      Bloom: the filter blocks (a key's bits in 1,
 *                      2 or 3 of them: bloom.h); cuckoo: struct
 *                      shmf_cuckoo_meta (relocation state and version
 *                      stripes, cuckoo.h), then the bucket table.
 *                      Adders map it read-write, checkers read-only.
 *   <name>.journal     a replicated filter only: its fleet journal, header
 *                      page then rings of entries (the hashes of adds that
 *                      changed the filter, for shmd to send to the other
 *                      hosts). Created by shmd with the filter's mode, kept
 *                      across generations; adders claim one ring per handle
 *                      and map it read-write, checkers never open it.
 *
 * Every field is a plain integer or an _Atomic integer of at most 8 bytes;
 * only offsets, never pointers. Bump SHMF_FORMAT_VERSION on any change,
 * including a change of where a key's bits lie (hash.h).
 */
#ifndef SHMF_SEGMENT_FORMAT_H
#define SHMF_SEGMENT_FORMAT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <shmf.h>

/* Format versions: 2: multiply-shift bit positions (hash.h); 3: cuckoo
 * filters; 4: time windows (slot of 512 bytes); 5: fleet journal, slot
 * flags and stream cursor; 6: the cuckoo relocation lock is a robust
 * futex word in the meta block instead of a lock on the data file (a
 * writer of format 5 would not exclude one of format 6), with its timeout
 * in the data header and the snapshot log in the header page; 7: growing
 * filters (the slot's expansion and its flags LAYERED, STANDBY and
 * NONSCALING, and a layer state word in every data header page: a client
 * of format 6 would neither see a filter's newer layers nor stop at a
 * NONSCALING filter's capacity) and the cuckoo bucket size (1, 2, 4 or 8
 * fingerprints a bucket word) in the slot and the data header (a client of
 * format 6 would read buckets of another size as buckets of 4); 8: the
 * cuckoo relocation lock's timeout is in the slot (which only shmd
 * writes), no longer in the data header, where any writer could raise it
 * to an hour and make every locked call of every process, shmd's
 * included, wait that long; 9: a filter's scheme (the slot's and the data
 * header's former zero pads): how its keys map to its payload, shmfilter's
 * own or a filter imported from RedisBloom (struct shmf_rb_table), which a
 * client of format 8 would read as blocks or buckets of its own; 10: a
 * replicated filter's fleet sequences (the slot's fleet_sent_seq,
 * fleet_floor and fleet_peers, in a slot of 28 cache lines): the last
 * sequence sent and applied per sender, which refuse replayed entries; 11:
 * Bloom filters of two or three lines a key (the bucket size field of the
 * slot and the data header, 0 before, is a Bloom filter's lines a key: 1, 2
 * or 3), whose other lines a client of format 10 would not look at; 12:
 * static filters (type SHMF_TYPE_STATIC: a binary fuse filter, its payload
 * a struct shmf_fuse_table and its fingerprints, libclient/fuse.h), which a
 * client of format 11 would refuse by type only after mapping them. */
#define SHMF_FORMAT_VERSION 12u

#define SHMF_CTL_MAGIC     UINT64_C(0x4c5443464d485300) /* "\0SHMFCTL" little-endian */
#define SHMF_DATA_MAGIC    UINT64_C(0x41544144464d4853) /* "SHMFDATA" little-endian */
#define SHMF_JOURNAL_MAGIC UINT64_C(0x4c4e524a464d4853) /* "SHMFJRNL" little-endian */

#define SHMF_CTL_FILE       "control"
#define SHMF_DATA_SUFFIX    ".data"
#define SHMF_JOURNAL_SUFFIX ".journal"

#define SHMF_SLOTS        256u /* filters per instance */
#define SHMF_BLOCK_BYTES  64u  /* one cache line per key */
#define SHMF_BLOCK_BITS   512u
#define SHMF_BLOCK_WORDS  8u
#define SHMF_ITEM_STRIPES 64u /* item counters, one cache line each */
#define SHMF_K_MAX        32u
/* A slot's ring (live[]) holds what checks look at: a time window's
 * generations, or a growing filter's layers. 60 entries: the most
 * sections a snapshot's header page has room for (snapshot-format.h), so
 * that every state of a slot can be saved. A Bloom filter grows through
 * them all (RedisBloom sets its Bloom filters no limit; 60 layers of
 * expansion 2 are 2^60 times the first capacity, past any memory, and of
 * expansion 1 sixty times it); a cuckoo filter through RedisBloom's 32
 * expansions, 33 layers. */
#define SHMF_RING_MAX          60u           /* entries of a slot's live[] ring */
#define SHMF_WINDOW_MAX        16u           /* generations in a time window's ring */
#define SHMF_LAYERS_MAX        SHMF_RING_MAX /* layers of a growing Bloom filter: the whole ring */
#define SHMF_CUCKOO_LAYERS_MAX 33u           /* layers of a growing cuckoo filter: RedisBloom's 32 expansions */
_Static_assert(SHMF_WINDOW_MAX <= SHMF_RING_MAX && SHMF_CUCKOO_LAYERS_MAX <= SHMF_RING_MAX, "rings fit live[]");

/* The longest time window, in seconds: ten years. A window number is 32
 * bits in the journal and the fleet's stream (floor(unix time / window));
 * with windows shorter than 2^32 s, any window number times the window
 * length, plus the ring, fits 64 bits, so that every window boundary shmd
 * and libshmf compute in seconds is exact (docs/design.md, section 6). */
#define SHMF_WINDOW_SECS_MAX UINT64_C(315360000)
#define SHMF_WINDOW_NUM_MAX  UINT32_MAX /* a window number fits the journal's 32 bits */
_Static_assert(SHMF_WINDOW_SECS_MAX < (UINT64_C(1) << 32) &&
		       (uint64_t)SHMF_WINDOW_NUM_MAX + SHMF_WINDOW_MAX <= UINT64_MAX / SHMF_WINDOW_SECS_MAX,
	       "a window number times the window length must fit 64 bits");

/* Data segment: header page, counter page, blocks. The header page holds
 * the header (written once), for a cuckoo filter the snapshot log
 * (struct shmf_cuckoo_cow, cuckoo.h) at SHMF_DATA_COW_OFF, which writers
 * and shmd change while a snapshot copies the table, and in a cache line
 * of its own the layer state word (struct shmf_layer_state). */
#define SHMF_DATA_HDR_BYTES    4096u
#define SHMF_DATA_COW_OFF      1024u
#define SHMF_DATA_STATE_OFF    3328u
#define SHMF_DATA_COUNTERS_OFF 4096u
#define SHMF_DATA_BLOCKS_OFF   8192u

/* Slot flags (struct shmf_slot.flags). */
#define SHMF_SLOT_REPLICATED 0x1u /* the filter has a journal: adds that change it are journalled */
#define SHMF_SLOT_LAYERED    0x2u /* a growing filter: live[] are its layers, the oldest last (docs/design.md) */
#define SHMF_SLOT_STANDBY    0x4u /* LAYERED: live[0] is the next layer, made ahead, not yet current */
#define SHMF_SLOT_NONSCALING 0x8u /* Bloom: adds of new keys past its capacity are refused */
/* Every flag defined; others make the slot malformed. */
#define SHMF_SLOT_FLAGS (SHMF_SLOT_REPLICATED | SHMF_SLOT_LAYERED | SHMF_SLOT_STANDBY | SHMF_SLOT_NONSCALING)

/* Schemes (struct shmf_slot.scheme, struct shmf_data_header.scheme): how
 * a filter's keys map to its payload. A filter imported from RedisBloom
 * keeps RedisBloom's hashing and positions, so that it answers every key
 * as RedisBloom did; it is read-only (no add, delete, window, layer or
 * journal), its shape is in its payload (struct shmf_rb_table), and its
 * slot's k, buckets and bucket size are 0. */
#define SHMF_SCHEME_NATIVE    0u /* shmfilter's own: blocked Bloom (hash.h), cuckoo buckets (cuckoo.h) */
#define SHMF_SCHEME_RB_BLOOM  1u /* type Bloom: RedisBloom's scalable chain of Bloom filters */
#define SHMF_SCHEME_RB_CUCKOO 2u /* type cuckoo: RedisBloom's cuckoo filter and its sub-filters */
#define SHMF_SCHEME_MAX       SHMF_SCHEME_RB_CUCKOO

/* Layer state bits (struct shmf_layer_state.bits). */
#define SHMF_LAYER_OPENED 0x1u /* a standby layer that adds go to: checks look at it from now on */
#define SHMF_LAYER_FULL   0x2u /* the layer holds its capacity: adds go to the next layer */
#define SHMF_LAYER_NEAR   0x4u /* NONSCALING: close to capacity, adders count every new key */

/* Largest data segment the library will map: 64 TiB. */
#define SHMF_DATA_MAX_BYTES (UINT64_C(1) << 46)

/* Senders a replicated filter's slot remembers the last sequence of
 * (docs/design.md, section 11). */
#define SHMF_FLEET_PEERS 32u

/* One sender of a replicated filter's stream, in its slot. */
struct shmf_fleet_peer {
	uint64_t node; /* shmd's follower writes (fleet_node_id() of the sender's name; 0: free), shmd reads */
	uint64_t seq;  /* shmd's follower writes: the last sequence applied from it; shmd reads */
};

/* Control segment header: one cache line. Written by shmd at creation and
 * at each daemon start; read (copied) by clients at open. */
struct shmf_ctl_header {
	uint64_t magic;           /* shmd writes once; clients validate */
	uint32_t version;         /* SHMF_FORMAT_VERSION */
	uint32_t header_size;     /* sizeof(struct shmf_ctl_header) */
	uint64_t layout;          /* shmf_layout_fingerprint() of the writer */
	uint32_t nslots;          /* SHMF_SLOTS */
	uint32_t slot_size;       /* sizeof(struct shmf_slot) */
	uint64_t slots_offset;    /* offset of slot 0 from the file start */
	uint64_t daemon_pid;      /* shmd writes at start; informational */
	uint64_t start_epoch;     /* shmd writes at start (unix seconds) */
	uint64_t last_generation; /* shmd only: generations are never reused in an instance */
};

/* A filter slot: twenty-eight cache lines. The daemon rewrites the fields under
 * the sequence counter (odd while writing); clients copy them with the
 * seqlock read protocol and then use only their copy.
 *
 * A time-windowed filter (window_gens > 0) is a ring of generations, each
 * its own data file of the same shape and seed: live[0] is the newest
 * (adds go there; it equals generation), live[1..nlive-1] older ones that
 * checks also look at. A rotation publishes a new newest and drops the
 * oldest. A plain filter has window_gens 0, nlive 1, live[0] = generation. */
struct shmf_slot {
	_Atomic uint64_t generation;          /* shmd stores (release, inside the seq window);
						 clients load on every call; 0 = slot empty */
	_Atomic uint64_t seq;                 /* shmd: odd while rewriting; clients: seqlock reads */
	uint32_t type;                        /* shmd writes; SHMF_TYPE_BLOOM, _CUCKOO or _STATIC */
	uint32_t k;                           /* shmd writes; Bloom: bits per key, 1..SHMF_K_MAX;
						 cuckoo: fingerprint bits, 8 or 16 */
	uint64_t capacity;                    /* shmd writes; keys sized for */
	uint64_t fpr_bits;                    /* shmd writes; target FPR, IEEE-754 double bits */
	uint64_t nblocks;                     /* shmd writes; 64-byte payload blocks in the data segment */
	uint64_t data_bytes;                  /* shmd writes; exact size of the data segment */
	uint64_t created_epoch;               /* shmd writes; unix seconds */
	uint64_t nbuckets;                    /* shmd writes; cuckoo: buckets; Bloom: 0 */
	char name[SHMF_NAME_MAX + 1];         /* shmd writes; NUL-terminated filter name */
	uint64_t window_secs;                 /* shmd writes; seconds per generation, 0: no window */
	uint32_t window_gens;                 /* shmd writes; generations in the ring, 0: no window */
	uint32_t nlive;                       /* shmd writes; live generations, 1..SHMF_RING_MAX */
	uint64_t live[SHMF_RING_MAX];         /* shmd writes; generations, newest first */
	uint64_t live_created[SHMF_RING_MAX]; /* shmd writes; unix seconds each began */
	uint32_t flags;                       /* shmd writes; SHMF_SLOT_* */
	uint32_t flags_pad;                   /* zero */
	uint64_t cursor_ms;                   /* shmd writes (replication): the last stream entry applied, */
	uint64_t cursor_seq;                  /* as its Redis id <ms>-<seq>; clients never use them */
	uint32_t expansion;                   /* shmd writes; LAYERED: each layer's capacity is the one
						 before times this (1..SHMF_EXPANSION_MAX); else 0 */
	uint32_t bucket_size;                 /* shmd writes; cuckoo: fingerprints per bucket (1, 2,
						 4 or 8, one word: cuckoo.h); Bloom: lines a key (1, 2 or 3:
						 bloom.h); every layer's the same */
	uint32_t lock_timeout_ms;             /* shmd writes; cuckoo: longest wait for a layer's relocation
						 lock, 1..SHMF_CUCKOO_LOCK_TIMEOUT_MAX; Bloom: 0 */
	uint32_t scheme;                      /* shmd writes; SHMF_SCHEME_*: how keys map to the payload
						 (0: shmfilter's own; else a read-only RedisBloom import) */
	uint64_t fleet_sent_seq;              /* shmd's sender writes and reads (replication):
						 the last sequence it sent; clients never use it */
	uint64_t fleet_floor;                 /* shmd's follower writes and reads: a sender not in
						 fleet_peers must send a sequence above this */
	struct shmf_fleet_peer fleet_peers[SHMF_FLEET_PEERS]; /* shmd's follower: with the cursor */
	uint8_t pad[1792 - 1680];
};

/* Data segment header. Written by shmd before the generation is
 * published; never changed afterwards. Clients copy and validate it. */
struct shmf_data_header {
	uint64_t magic;           /* SHMF_DATA_MAGIC */
	uint32_t version;         /* SHMF_FORMAT_VERSION */
	uint32_t header_size;     /* sizeof(struct shmf_data_header) */
	uint64_t layout;          /* shmf_layout_fingerprint() */
	uint32_t type;            /* SHMF_TYPE_BLOOM or SHMF_TYPE_CUCKOO */
	uint32_t k;               /* Bloom: bits per key; cuckoo: fingerprint bits */
	uint64_t nblocks;         /* number of 64-byte payload blocks */
	uint64_t seed;            /* XXH3 seed, drawn with arc4random at creation */
	uint64_t generation;      /* generation this file holds */
	uint64_t capacity;        /* keys sized for */
	uint64_t fpr_bits;        /* target FPR, IEEE-754 double bits */
	uint64_t blocks_offset;   /* SHMF_DATA_BLOCKS_OFF */
	uint64_t counters_offset; /* SHMF_DATA_COUNTERS_OFF */
	uint64_t nbuckets;        /* cuckoo: buckets; Bloom: 0 */
	uint32_t max_kicks;       /* cuckoo: bound on one insert's relocation path; Bloom: 0 */
	uint32_t reserved;        /* zero; nobody reads it (format 7 kept the lock timeout here,
				     where every writer could change it: it is in the slot now) */
	uint32_t bucket_size;     /* cuckoo: fingerprints per bucket; Bloom: lines a key; as the slot says */
	uint32_t scheme;          /* SHMF_SCHEME_*, as the slot says */
	char name[SHMF_NAME_MAX + 1];
};

/* The layer state word of a data segment, at SHMF_DATA_STATE_OFF in its
 * header page, in a cache line of its own (adders load it on every add to
 * a growing filter; it changes at most three times in a layer's life).
 * Every data file has one; it stays 0 for filters that do not grow. */
struct shmf_layer_state {
	_Atomic uint64_t bits; /* SHMF_LAYER_*: adders set OPENED (release, before their first add
				  into a standby layer), FULL and NEAR (when they counted the layer's
				  items at capacity); shmd sets FULL too; checkers load OPENED
				  (acquire) of a standby, adders FULL; never cleared */
	uint64_t pad[7];
};

/* One item-counter stripe: adders fetch_add (relaxed) on their handle's
 * stripe when an add reports new (cuckoo: stores a copy) and deleters
 * subtract; readers sum all stripes, modulo 2^64. */
struct shmf_counter {
	_Atomic uint64_t items;   /* clients with RDWR handles add or subtract; anyone sums */
	_Atomic uint64_t deletes; /* cuckoo: clients with RDWR handles add removed copies */
	uint64_t pad[6];
};

/*
 * The payload of a filter imported from RedisBloom (scheme RB_BLOOM or
 * RB_CUCKOO; docs/design.md, "Filters imported from RedisBloom"). Written
 * once by shmd before the generation is published and never changed; a
 * client copies the table and checks every link against the payload's
 * size before its first check (libclient/redisbloom.h):
 *
 *   0                 struct shmf_rb_table
 *   64                nlinks struct shmf_rb_link, 64 bytes each
 *   link[i].offset    link i's bytes as RedisBloom holds them: a Bloom
 *                     link's bit array (bit x is bit x % 8 of byte x / 8),
 *                     a cuckoo sub-filter's buckets (bucket_size one-byte
 *                     fingerprints each, 0 empty); the first link first,
 *                     each at the first multiple of 64 after the one before
 *                     (the table's end for link 0), zero up to the next
 *
 * A Bloom chain answers a key present when one link has all its k bits:
 * bit i of a link is (a + i * b) mod 2^64 mod m, m the link's modulus
 * (2^n2, or its bit count when n2 is 0), (a, b) the key's hash pair
 * (SHMF_RB_HASH_*). A cuckoo key is h = MurmurHash64A(key, seed 0), its
 * fingerprint h mod 255 + 1, its buckets h and h ^ fingerprint * 0x5bd1e995,
 * each mod the sub-filter's bucket count.
 */
#define SHMF_RB_MAGIC      UINT64_C(0x00544252464d4853) /* "SHMFRBT\0" little-endian */
#define SHMF_RB_LINKS_MAX  1024u                        /* links (sub-filters) an imported filter may have */
#define SHMF_RB_HASHES_MAX 1075u                        /* k of a link: RedisBloom's bound (BLOOM_MAX_HASHES) */
#define SHMF_RB_HASH_MURMUR64                                             \
	1u /* Bloom (RedisBloom's FORCE64 chains, every chain since 2.0): \
	      a = MurmurHash64A(key, 0xc6a4a7935bd1e995), b = MurmurHash64A(key, a) */
#define SHMF_RB_HASH_MURMUR32                                                            \
	2u                     /* Bloom, older chains: a = MurmurHash2(key, 0x9747b28c), \
				  b = MurmurHash2(key, a) (32-bit values) */
#define SHMF_RB_HASH_CUCKOO 3u /* cuckoo: h = MurmurHash64A(key, 0) */

/* The table's header: written by shmd once, read (copied) by clients. */
struct shmf_rb_table {
	uint64_t magic;          /* SHMF_RB_MAGIC */
	uint32_t nlinks;         /* 1..SHMF_RB_LINKS_MAX */
	uint32_t hash;           /* SHMF_RB_HASH_*, the one the scheme takes */
	uint64_t items;          /* RedisBloom's count at the dump: Bloom size, cuckoo numItems */
	uint64_t deletes;        /* cuckoo: numDeletes; Bloom: 0 */
	uint32_t options;        /* Bloom: RedisBloom's option bits (NOROUND 1, FORCE64 4, NO_SCALING 8); cuckoo: 0 */
	uint32_t growth;         /* Bloom: growth (EXPANSION); cuckoo: expansion */
	uint32_t bucket_size;    /* cuckoo: fingerprints per bucket, 1..255; Bloom: 0 */
	uint32_t max_iterations; /* cuckoo: RedisBloom's MAXITERATIONS; Bloom: 0 */
	uint64_t pad[2];         /* zero */
};

/* One link of a chain, or one sub-filter of a cuckoo filter. */
struct shmf_rb_link {
	uint64_t offset;     /* its bytes' offset in the payload (the layout above) */
	uint64_t bytes;      /* Bloom: bytes of its bit array; cuckoo: buckets * bucket_size */
	uint64_t bits;       /* Bloom: bytes * 8; cuckoo: its buckets */
	uint64_t entries;    /* Bloom: the keys it was sized for; cuckoo: 0 */
	uint64_t size;       /* Bloom: keys added to it; cuckoo: 0 */
	uint64_t error_bits; /* Bloom: its error rate, IEEE-754 double; cuckoo: 0 */
	uint64_t bpe_bits;   /* Bloom: bits per entry, IEEE-754 double; k = ceil(ln 2 * bpe); cuckoo: 0 */
	uint32_t hashes;     /* Bloom: k; cuckoo: 0 */
	uint32_t n2;         /* Bloom: 0 (modulus: bits) or 1..63 (modulus: 2^n2 <= bits); cuckoo: 0 */
};

_Static_assert(sizeof(struct shmf_rb_table) == 64, "imported table header is one cache line");
_Static_assert(sizeof(struct shmf_rb_link) == 64, "imported link is one cache line");
_Static_assert(offsetof(struct shmf_rb_link, hashes) == 56, "imported link k offset");
_Static_assert(offsetof(struct shmf_rb_table, bucket_size) == 40, "imported table bucket size offset");
_Static_assert((uint64_t)(SHMF_RB_LINKS_MAX + 1) * 64 < SHMF_DATA_MAX_BYTES, "an imported table fits a payload");

/*
 * The fleet journal of a replicated filter: <name>.journal.
 *
 *   header page (SHMF_JOURNAL_HDR_BYTES): struct shmf_journal_header
 *   nrings rings, each ring_bytes long: struct shmf_journal_ring (three
 *   cache lines), then ring_entries (a power of 2) struct shmf_journal_entry
 *
 * A ring belongs to one handle of one process at a time: the handle claims
 * it by a CAS of owner from 0 to pid << 32 | token on its first journalled
 * add, and gives it back on close (0 if empty, else token | CLOSED: shmd
 * frees it once drained); shmd frees the ring of a process that is gone.
 * The threads sharing the handle reserve entries by a CAS on head, after
 * checking head - tail < ring_entries (full: count in dropped and go on,
 * the add itself has succeeded); they write hash and window, then op with
 * release. shmd alone drains: from tail while op != 0 (acquire), zeroes op,
 * then stores tail (release). Adders of different handles write different
 * cache lines; no line is written by every adder.
 */
#define SHMF_JOURNAL_HDR_BYTES   4096u
#define SHMF_JOURNAL_RINGS_MAX   4096u /* claiming handles at once */
#define SHMF_JOURNAL_ENTRIES_MIN 16u
#define SHMF_JOURNAL_ENTRIES_MAX (1u << 24) /* per ring: 256 MiB */

/* Entry operations (low byte of op; the bits above are flags, none defined
 * yet, and must be 0). 0 means not written yet, or drained. */
#define SHMF_JOP_ADD    1u /* Bloom add that set a bit, or cuckoo add that stored a copy */
#define SHMF_JOP_DEL    2u /* cuckoo delete that removed a copy */
#define SHMF_JOP_CAPPED 3u /* cuckoo capped add (or add-if-absent) that stored a copy */
#define SHMF_JOP_MAX    3u

/* In a ring's owner: the claim's token half carries this bit once its
 * handle is closed with entries still in the ring. */
#define SHMF_JOURNAL_OWNER_CLOSED (UINT64_C(1) << 31)

/* Header page of a journal. Written by shmd at creation and never changed
 * afterwards, except missed; validated (copied) by every process that maps
 * the journal. */
struct shmf_journal_header {
	uint64_t magic;               /* SHMF_JOURNAL_MAGIC */
	uint32_t version;             /* SHMF_FORMAT_VERSION */
	uint32_t header_size;         /* sizeof(struct shmf_journal_header) */
	uint64_t layout;              /* shmf_layout_fingerprint() */
	uint32_t nrings;              /* 1..SHMF_JOURNAL_RINGS_MAX */
	uint32_t ring_entries;        /* power of 2, SHMF_JOURNAL_ENTRIES_MIN..MAX */
	uint32_t entry_size;          /* sizeof(struct shmf_journal_entry) */
	uint32_t ring_header_size;    /* sizeof(struct shmf_journal_ring) */
	uint64_t rings_offset;        /* SHMF_JOURNAL_HDR_BYTES */
	uint64_t ring_bytes;          /* ring_header_size + ring_entries * entry_size */
	uint64_t created_epoch;       /* unix seconds */
	char name[SHMF_NAME_MAX + 1]; /* the filter's name */
	_Atomic uint64_t missed;      /* adders (relaxed, only while they cannot journal): adds that
					 changed the filter but were journalled nowhere (no free
					 ring); shmd reads: the filter then needs a repair */
	uint64_t pad[7];
};

/* A ring's header: three cache lines, so that the claim, the adders' line
 * and shmd's line never share one. */
struct shmf_journal_ring {
	_Atomic uint64_t owner; /* claiming handle: CAS 0 -> pid << 32 | token; on close
				   -> 0 or | CLOSED; shmd: CAS -> 0 to reclaim */
	uint64_t pad0[7];
	_Atomic uint64_t head;    /* owning handle's threads: CAS to reserve entry head */
	_Atomic uint64_t dropped; /* owning handle (relaxed): entries that found the ring full;
				     never reset, shmd reads */
	uint64_t pad1[6];
	_Atomic uint64_t tail; /* shmd only (release): next entry to drain; adders load it */
	_Atomic uint64_t lost; /* shmd only: entries it skipped (a dead owner's unwritten
				  reservation, damage); informational */
	uint64_t pad2[6];
};

/* One journalled operation: 16 bytes, four to a cache line. */
struct shmf_journal_entry {
	_Atomic uint64_t hash;   /* adder, before op: shmf_hash(key, len, seed) */
	_Atomic uint32_t op;     /* adder stores last (release); shmd loads (acquire), zeroes */
	_Atomic uint32_t window; /* adder, before op: window number of the generation
				    (floor(created / window_secs)); 0 without a window */
};

_Static_assert(sizeof(_Atomic uint64_t) == 8, "8-byte atomics");
_Static_assert(sizeof(struct shmf_ctl_header) == 64, "control header is one cache line");
_Static_assert(sizeof(struct shmf_slot) == 1792, "slot is twenty-eight cache lines");
_Static_assert(offsetof(struct shmf_slot, fleet_peers) == 1168, "slot fleet peers offset");
_Static_assert(sizeof(struct shmf_fleet_peer) == 16, "a fleet peer is 16 bytes");
_Static_assert(offsetof(struct shmf_slot, live) == 152, "slot ring offset");
_Static_assert(offsetof(struct shmf_slot, generation) == 0, "generation first");
_Static_assert(offsetof(struct shmf_slot, name) == 72, "slot name offset");
_Static_assert(sizeof(struct shmf_data_header) <= SHMF_DATA_COW_OFF, "data header before the snapshot log");
_Static_assert(sizeof(struct shmf_counter) == 64, "counter stripe is one cache line");
_Static_assert(sizeof(struct shmf_layer_state) == 64, "layer state is one cache line");
_Static_assert(SHMF_DATA_STATE_OFF % 64 == 0 &&
		       SHMF_DATA_STATE_OFF + sizeof(struct shmf_layer_state) <= SHMF_DATA_HDR_BYTES,
	       "layer state in a cache line of the header page");
_Static_assert(offsetof(struct shmf_slot, expansion) == 1136, "slot expansion offset");
_Static_assert(SHMF_ITEM_STRIPES * sizeof(struct shmf_counter) == SHMF_DATA_BLOCKS_OFF - SHMF_DATA_COUNTERS_OFF,
	       "counters fill their page");
_Static_assert(offsetof(struct shmf_slot, flags) == 1112, "slot flags offset");
_Static_assert(offsetof(struct shmf_slot, cursor_ms) == 1120, "slot cursor offset");
_Static_assert(offsetof(struct shmf_slot, cursor_seq) == 1128, "slot cursor offset");
_Static_assert(offsetof(struct shmf_slot, bucket_size) == 1140, "slot bucket size offset");
_Static_assert(offsetof(struct shmf_slot, scheme) == 1148, "slot scheme offset");
_Static_assert(offsetof(struct shmf_data_header, scheme) == 108, "data header scheme offset");
_Static_assert(sizeof(struct shmf_journal_header) == 192, "journal header is three cache lines");
_Static_assert(sizeof(struct shmf_journal_header) <= SHMF_JOURNAL_HDR_BYTES, "journal header fits its page");
_Static_assert(offsetof(struct shmf_journal_header, name) == 64, "journal name offset");
_Static_assert(offsetof(struct shmf_journal_header, missed) == 128, "journal missed in a line of its own");
_Static_assert(sizeof(struct shmf_journal_ring) == 192, "ring header is three cache lines");
_Static_assert(offsetof(struct shmf_journal_ring, owner) == 0, "ring owner line");
_Static_assert(offsetof(struct shmf_journal_ring, head) == 64, "ring producer line");
_Static_assert(offsetof(struct shmf_journal_ring, dropped) == 72, "ring producer line");
_Static_assert(offsetof(struct shmf_journal_ring, tail) == 128, "ring consumer line");
_Static_assert(offsetof(struct shmf_journal_ring, lost) == 136, "ring consumer line");
_Static_assert(sizeof(struct shmf_journal_entry) == 16, "journal entry is 16 bytes");
_Static_assert(offsetof(struct shmf_journal_entry, op) == 8, "journal entry op offset");
_Static_assert(offsetof(struct shmf_journal_entry, window) == 12, "journal entry window offset");
_Static_assert(sizeof(_Atomic uint32_t) == 4, "4-byte atomics");

/* After the slots, one page: how shmd was started, as a command line
 * ("shmd -c /etc/shmd/x.conf -i x"), NUL-terminated, written by shmd at
 * each start, so that shmctl can say how to start it again the same way
 * when it is not running. No client of the filters reads it. */
#define SHMF_CTL_STARTED_OFF \
	((uint64_t)sizeof(struct shmf_ctl_header) + (uint64_t)SHMF_SLOTS * sizeof(struct shmf_slot))
#define SHMF_CTL_STARTED_BYTES 4096u

/* Size of the control segment file. */
#define SHMF_CTL_BYTES (SHMF_CTL_STARTED_OFF + SHMF_CTL_STARTED_BYTES)

/**
 * Fingerprint of the sizes, offsets and alignments of the structs above
 * and of the format constants. A client refuses a segment whose
 * fingerprint differs from its own.
 */
uint64_t shmf_layout_fingerprint(void);

#endif
