/*
 * cuckoo.h - the cuckoo filter: sizing, where a key lives, and the
 * concurrent operations on its buckets.
 *
 * A bucket is b fingerprint slots (b, the bucket size, is 1, 2, 4 or 8)
 * packed in one word that is read and compare-and-swapped whole: b * f
 * bits for f-bit fingerprints (8, 16 or 32), a word of 8, 16, 32 or 64
 * bits. So only the sizes whose bucket fits one 64-bit word exist: 1, 2, 4
 * and 8 with 8-bit fingerprints, 1, 2 and 4 with 16-bit ones, 1 and 2 with
 * 32-bit ones (the low-rate layout: about 7.6e-10 in buckets of 2). A bucket of more
 * slots, or of a size that is no power of two, would span two words: a
 * lookup could no longer read it in one atomic load, nor a move CAS it,
 * and the lock-free reads and adds below rest on both. (12-bit
 * fingerprints would need the same words as 16-bit ones, at 16 times the
 * false-positive rate, so sizing never picks them.) Slot value 0 means
 * empty. A key has two candidate buckets (partial-key cuckoo hashing): i1
 * from its hash, i2 = alt(i1, fp) where alt is an involution that needs
 * only the bucket and the fingerprint, so a fingerprint can be moved
 * without its key.
 *
 * Concurrency (see docs/design.md): lookups never write and take no lock;
 * placing a fingerprint in a free slot or clearing one is one CAS on the
 * bucket; only relocation ("kicks") and capped adds take the writer lock, a
 * robust futex word in the table's shared memory (struct
 * shmf_cuckoo_lockword): no system call uncontended, and the kernel marks
 * it when its holder dies. A move writes the fingerprint into its new
 * bucket before clearing the old one, inside a version window (odd while
 * moving) on the version stripes of both buckets, so a reader that raced
 * a move sees the version change and reads again; one that keeps racing
 * (or finds a window that a stopped or dead mover left open) reads in a
 * way one move in progress cannot fool, still without a lock.
 */
#ifndef SHMF_CUCKOO_H
#define SHMF_CUCKOO_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "libclient/hash.h"

#define SHMF_CUCKOO_SLOTS_DEFAULT  4u     /* bucket size when none is asked for */
#define SHMF_CUCKOO_SLOTS_LOW_RATE 2u     /* ... and below the rates buckets of 4 reach (32-bit fingerprints) */
#define SHMF_CUCKOO_SLOTS_MAX      8u     /* the most slots one 64-bit word holds (8-bit fingerprints) */
#define SHMF_CUCKOO_STRIPES        1024u  /* version counters, bucket i uses i % STRIPES */
#define SHMF_CUCKOO_MAX_KICKS      500u   /* default bound on one insert's relocation path */
#define SHMF_CUCKOO_KICKS_LIMIT    65535u /* largest configurable bound: RedisBloom's MAXITERATIONS limit */
#define SHMF_CUCKOO_KICKS_STACK    1024u  /* paths up to this long live on the stack, longer ones on the heap */

/* Bucket words of 1 and 2 bytes are shared across processes like the
 * others: only lock-free atomics work there. */
_Static_assert(ATOMIC_CHAR_LOCK_FREE == 2 && ATOMIC_SHORT_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2 &&
		       ATOMIC_LLONG_LOCK_FREE == 2,
	       "bucket words of 1, 2, 4 and 8 bytes are lock-free atomics");

/* Longest and default wait for the writer lock, in milliseconds; the data
 * header's lock_timeout_ms (0: the default) chooses per filter. */
#define SHMF_CUCKOO_LOCK_TIMEOUT_DEFAULT 1000u
#define SHMF_CUCKOO_LOCK_TIMEOUT_MAX     3600000u

/*
 * The writer lock: a futex word laid out for the kernel's robust-futex list
 * (Documentation/locking/robust-futex-ABI.rst). The holder links list_next
 * into its thread's robust list (the one glibc registered), so that when it
 * dies the kernel sets FUTEX_OWNER_DIED in the word and wakes a waiter. The
 * link sits 32 bytes after the word, where glibc's futex_offset expects a
 * pthread mutex's link, and list_prev where glibc writes a back pointer if
 * the thread locks a robust mutex while holding this lock (it never does in
 * the library). Nobody reads the links from shared memory but the kernel
 * walking a dying holder's list: a writer that scribbles them can make the
 * kernel look at wrong addresses of that dying process, and no more.
 */
struct shmf_cuckoo_lockword {
	_Atomic uint32_t word; /* writers: 0 free, else holder's thread id | FUTEX_WAITERS;
				  kernel: FUTEX_OWNER_DIED when the holder died */
	uint32_t pad;
	uint64_t reserved[2];
	uint64_t list_prev; /* see above: glibc's back pointer, never read by the library */
	uint64_t list_next; /* holder: its robust-list link; read by the kernel only */
};

/* The relocation state in shared memory, before the version stripes.
 * Written only by the holder of the writer lock (and the lock word by its
 * takers). Its size is part of the snapshot format (the payload holds it). */
struct shmf_cuckoo_meta {
	_Atomic uint64_t moving;          /* lock holder: stripes+1 of the move in progress
					     (a | b << 32), 0 when none; the next holder
					     repairs the versions of a holder that died */
	_Atomic uint64_t moves;           /* lock holder: relocations done (informational) */
	struct shmf_cuckoo_lockword lock; /* writers: the relocation lock */
	uint64_t pad[1];
	_Atomic uint64_t version[SHMF_CUCKOO_STRIPES]; /* lock holder: odd while a move
							   touches a bucket of the stripe;
							   readers: seqlock validation */
};

_Static_assert(sizeof(struct shmf_cuckoo_lockword) == 40, "lock word and its robust-list link");
_Static_assert(offsetof(struct shmf_cuckoo_lockword, list_next) - offsetof(struct shmf_cuckoo_lockword, word) == 32,
	       "the link where glibc's robust futex_offset looks for it");
_Static_assert(offsetof(struct shmf_cuckoo_meta, lock) == 16, "lock in the meta block's first line");
_Static_assert(sizeof(struct shmf_cuckoo_meta) == 8256, "meta block size: part of the snapshot format");

/* Whether buckets of @p slots fingerprints of @p fp_bits bits are one
 * word this library reads and CASes whole: fp_bits 8, 16 or 32, slots a power
 * of two up to SHMF_CUCKOO_SLOTS_MAX, and slots * fp_bits at most 64. */
static inline int shmf_cuckoo_layout_ok(uint32_t slots, uint32_t fp_bits)
{
	return (fp_bits == 8 || fp_bits == 16 || fp_bits == 32) && slots != 0 && slots <= SHMF_CUCKOO_SLOTS_MAX &&
	       (slots & (slots - 1)) == 0 && slots * fp_bits <= 64;
}

/* Payload of a cuckoo data segment: the meta block, then the table
 * (nbuckets words of slots * fp_bits bits) rounded up to whole 64-byte
 * blocks. */
static inline uint64_t shmf_cuckoo_table_bytes(uint64_t nbuckets, uint32_t fp_bits, uint32_t slots)
{
	return (nbuckets * (slots * fp_bits / 8) + 63) & ~UINT64_C(63);
}

/* What shmf_cuckoo_size() chose. */
struct shmf_cuckoo_params {
	uint32_t fp_bits; /* 8, 16 or 32 */
	uint32_t slots;   /* fingerprints per bucket, as asked */
	uint64_t nbuckets;
	uint64_t table_bytes; /* nbuckets * bucket bytes, rounded up to 64 */
};

/*
 * The snapshot log: a snapshot copies a table while writers go on, and
 * every move made meanwhile first logs the words of the two buckets it is
 * about to change; the copy then takes, for each bucket a move touched, its
 * word from before the first such move (shmf_cuckoo_copy). It lives in the
 * data header page (SHMF_DATA_COW_OFF, segment-format.h), outside the
 * payload a snapshot holds. The lock holder is its one producer, the copier
 * its one consumer.
 */
#define SHMF_CUCKOO_COW_ENTRIES 128u /* a power of 2 */

struct shmf_cuckoo_cow_entry {
	_Atomic uint64_t bucket; /* lock holder, before head: the bucket a move is about to change */
	_Atomic uint64_t word;   /* lock holder, before head: its word then */
};

struct shmf_cuckoo_cow {
	_Atomic uint64_t active; /* copier, under the lock: its session while it copies, else 0; a lock
				    holder that found no room for too long stores 0 (the copy fails) */
	_Atomic uint64_t copied; /* copier (release): buckets below this one are copied, a move need not
				    log them; lock holders read it (acquire) */
	uint64_t pad0[6];
	_Atomic uint64_t head; /* lock holder (release): entries logged; copier reads (acquire) */
	uint64_t pad1[7];
	_Atomic uint64_t tail; /* copier (release): entries taken; lock holder reads (acquire) */
	uint64_t pad2[7];
	struct shmf_cuckoo_cow_entry entry[SHMF_CUCKOO_COW_ENTRIES]; /* entry i % ENTRIES */
};

_Static_assert(sizeof(struct shmf_cuckoo_cow) == 192 + 16 * SHMF_CUCKOO_COW_ENTRIES, "snapshot log size");

/*
 * A process's side of the relocation lock of a mapped table: how long a
 * writer waits for it, and the holder's private note of how to unlink it
 * from its thread's robust list (never read back from shared memory).
 * Threads of a process share one; only the holder writes it.
 */
struct shmf_cuckoo_lock {
	uint32_t timeout_ms; /* wait at most this long, then SHMF_E_BUSY */
	void *saved_list;    /* holder: its thread's robust-list head before the lock was linked */
};

/** Start using a table's lock in this process; @p timeout_ms 0 is the
 * default (SHMF_CUCKOO_LOCK_TIMEOUT_DEFAULT). */
void shmf_cuckoo_lock_init(struct shmf_cuckoo_lock *l, uint32_t timeout_ms);

/* Functions the hot paths specialise by layout: inlined, so that the
 * lanes of a constant layout fold into immediates. */
#define SHMF_CUCKOO_INLINE static inline __attribute__((always_inline))

/* What the lane arithmetic needs of a bucket layout (slots fingerprints of
 * w bits in a word of bytes bytes). */
struct shmf_cuckoo_lanes {
	uint32_t w;     /* fingerprint bits, the lane width: 8, 16 or 32 */
	uint32_t bytes; /* slots * w / 8: 1, 2, 4 or 8, the width of a bucket word */
	uint32_t shift; /* (slots - 1) * w: the top lane, where a lane count collects */
	uint32_t slots; /* lanes in a word */
	uint64_t ones;  /* bit 0 of every lane */
};

/* The lanes of buckets of @p slots @p w-bit fingerprints; folded to a
 * constant where both are constants. */
SHMF_CUCKOO_INLINE struct shmf_cuckoo_lanes shmf_cuckoo_lanes_of(uint32_t slots, uint32_t w)
{
	struct shmf_cuckoo_lanes L = { w, slots * w / 8, (slots - 1) * w, slots, 0 };
	for (uint32_t j = 0; j < slots; j++)
		L.ones |= UINT64_C(1) << (j * w);
	return L;
}

/* A layout's number, for the one comparison that picks a specialised path. */
#define SHMF_CUCKOO_LAYOUT(slots, w) ((uint32_t)(slots) << 8 | (uint32_t)(w))

/* A mapped cuckoo table. Whoever fills one in calls
 * shmf_cuckoo_geom_layout() before using it. */
struct shmf_cuckoo_geom {
	void *buckets; /* nbuckets words of slots * fp_bits bits */
	uint64_t nbuckets;
	uint64_t seed;
	uint32_t fp_bits; /* 8, 16 or 32 */
	uint32_t slots;   /* fingerprints per bucket: 1, 2, 4 or 8 (shmf_cuckoo_layout_ok) */
	uint32_t max_kicks;
	/* Derived from fp_bits and slots by shmf_cuckoo_geom_layout(): */
	uint32_t layout;                /* SHMF_CUCKOO_LAYOUT(slots, fp_bits) */
	struct shmf_cuckoo_lanes lanes; /* for the paths that read the layout from here */
	uint64_t alt_odd;               /* 1 where shmf_cuckoo_alt() makes H odd (slots other than 4, n even), else 0 */
	struct shmf_cuckoo_meta *meta;
	struct shmf_cuckoo_lock *lock; /* this process's side of the relocation lock */
	struct shmf_cuckoo_cow *cow;   /* the snapshot log in the data header page; NULL where
					  nothing copies the table while writers run */
};

/* Whether a table of @p slots fingerprints a bucket needs an even number
 * of buckets (shmf_cuckoo_alt(): every size but 4). */
static inline int shmf_cuckoo_even_buckets(uint32_t slots)
{
	return slots != 4;
}

/**
 * Fill in the derived fields of @p g from its fp_bits, slots and nbuckets.
 * @return 0, or SHMF_E_FORMAT (not a layout shmf_cuckoo_layout_ok()
 *         allows, or an odd number of buckets where it must be even).
 */
int shmf_cuckoo_geom_layout(struct shmf_cuckoo_geom *g);

/** The load at capacity that sizing plans for, by bucket size (and for
 * buckets of 2, fingerprint width): the loads a cuckoo filter reaches
 * before inserts start to fail, less a margin (docs/design.md section 5). */
double shmf_cuckoo_load(uint32_t slots, uint32_t fp_bits);

/**
 * Size a cuckoo filter of buckets of @p slots fingerprints for @p capacity
 * keys at false-positive rate @p fpr: buckets for capacity at load
 * shmf_cuckoo_load() plus a headroom of sqrt(capacity) buckets, and the
 * smallest fingerprint (8, 16 or 32 bits) whose shmf_cuckoo_fpr() there is
 * at most @p fpr and whose bucket fits one word (shmf_cuckoo_layout_ok).
 *
 * The headroom is what makes a small filter hold its capacity: the load at
 * which a table fills varies by about sqrt(n) keys, so without it 1 table
 * of capacity 100 in 80 (and of capacity 30, 1 in 13) filled before its
 * capacity. With it, 1 or 2 tables in 200,000 of capacity 10 to 100 still
 * do (keys whose two buckets are the same one, which only a change of the
 * bucket function could rule out), and none of capacity 300 or 1000
 * (bench/bench-cuckoo-fill 200000). It costs 0.4% of the memory at a
 * million keys, 0.04% at 100 million.
 *
 * @p headroom 0 gives the shape without it, which filters created before
 * it was added (snapshot files among them) have.
 * @return 0, SHMF_E_INVAL (capacity 0, fpr not in (0,1), a bucket size
 *         other than 1, 2, 4 or 8, or an fpr below what the fingerprints
 *         that fit reach: about 1.2e-4 for 16-bit ones in buckets of 4,
 *         7.6e-10 for 32-bit ones in buckets of 2, 1.4e-10 in buckets of 1,
 *         and 8-bit ones only in buckets of 8, about 6%), or SHMF_E_TOOBIG.
 */
int shmf_cuckoo_size(uint64_t capacity, double fpr, uint32_t slots, int headroom, struct shmf_cuckoo_params *out);

/** The buckets shmf_cuckoo_size() gives @p capacity keys in buckets of
 * @p slots of @p fp_bits fingerprints (with or without the headroom): a
 * growing filter's layers keep their first layer's fingerprint and bucket
 * sizes.
 * @return 0, SHMF_E_INVAL (capacity 0, a bucket size other than 1, 2, 4
 *         or 8) or SHMF_E_TOOBIG. */
int shmf_cuckoo_buckets(uint64_t capacity, uint32_t slots, uint32_t fp_bits, int headroom, uint64_t *out);

/** The false-positive bound at load @p items / (slots * nbuckets): the
 * chance that one of the 2 * slots * load occupied candidate slots holds
 * the probe's fingerprint (about 2 * slots / 2^fp_bits when full). */
double shmf_cuckoo_fpr(uint64_t items, uint64_t nbuckets, uint32_t fp_bits, uint32_t slots);

/* Where a key lives. */
struct shmf_cuckoo_key {
	uint64_t i1, i2;
	uint32_t fp;
};

static inline uint64_t shmf_cuckoo_alt(const struct shmf_cuckoo_geom *g, uint64_t i, uint32_t fp)
{
	/* (H(fp) - i) mod n: an involution for any n, so alt(alt(i)) = i.
	 * H spreads the fingerprint with one odd multiply and maps it to
	 * [0, n) by fast range. Buckets other than 4 have an even n and an
	 * odd H (alt_odd): then 2i = H mod n has no solution, and no key has
	 * its two buckets the same one, which a bucket of 1 could not bear
	 * (buckets of 4 keep the function older filters and snapshots have). */
	uint64_t hf = shmf_block_index((uint64_t)fp * UINT64_C(0x9e3779b97f4a7c15), g->nbuckets) | g->alt_odd;
	return hf >= i ? hf - i : hf + g->nbuckets - i;
}

static inline struct shmf_cuckoo_key shmf_cuckoo_locate(const struct shmf_cuckoo_geom *g, uint64_t h)
{
	struct shmf_cuckoo_key k;
	/* The fingerprint from the low bits, the bucket from the high ones. */
	k.fp = (uint32_t)(h & ((UINT64_C(1) << g->fp_bits) - 1));
	k.fp += k.fp == 0;
	k.i1 = shmf_block_index(h, g->nbuckets);
	k.i2 = shmf_cuckoo_alt(g, k.i1, k.fp);
	return k;
}

/* The lanes of a bucket word are fp_bits wide, slots of them. */

/* The high bit of each lane of @p bucket that holds @p fp, exactly (no
 * borrow between lanes: each lane's sum stays inside it). */
SHMF_CUCKOO_INLINE uint64_t shmf_cuckoo_lanes_equal(struct shmf_cuckoo_lanes L, uint64_t bucket, uint32_t fp)
{
	uint64_t high = L.ones << (L.w - 1), low = high - L.ones;
	uint64_t x = bucket ^ (fp * L.ones);
	return ~(((x & low) + low) | x) & high;
}

/* How many lanes a shmf_cuckoo_lanes_equal() mask marks: one multiply
 * sums the lane flags into the top lane (no popcount instruction needed,
 * which baseline x86-64 lacks); at most 8, so its low byte holds it. */
SHMF_CUCKOO_INLINE unsigned shmf_cuckoo_lanes_count(struct shmf_cuckoo_lanes L, uint64_t mask)
{
	uint64_t flags = mask >> (L.w - 1); /* 1 at the bottom of each marked lane */
	return (unsigned)((flags * L.ones) >> L.shift) & 0xffu;
}

/* Bucket word @p i, read whole, with memory order @p mo (a constant where
 * this is inlined): one atomic load of its width. */
SHMF_CUCKOO_INLINE uint64_t shmf_cuckoo_word_load(const struct shmf_cuckoo_geom *g, struct shmf_cuckoo_lanes L,
						  uint64_t i, memory_order mo)
{
	if (L.bytes == 8)
		return atomic_load_explicit((_Atomic uint64_t *)g->buckets + i, mo);
	if (L.bytes == 4)
		return atomic_load_explicit((_Atomic uint32_t *)g->buckets + i, mo);
	if (L.bytes == 2)
		return atomic_load_explicit((_Atomic uint16_t *)g->buckets + i, mo);
	return atomic_load_explicit((_Atomic uint8_t *)g->buckets + i, mo);
}

/* relaxed: a bucket word is read whole; ordering against moves comes from
 * the version fences around the reads. */
static inline uint64_t shmf_cuckoo_bucket_load(const struct shmf_cuckoo_geom *g, uint64_t i)
{
	return shmf_cuckoo_word_load(g, g->lanes, i, memory_order_relaxed);
}

#ifdef SHMF_TEST_HOOKS
/* Test builds only: called by a lookup between its two bucket loads. */
extern void (*shmf_cuckoo_read_hook)(void);
/* Test builds only: called by a relocation between writing a fingerprint
 * into its new bucket and clearing the old one. */
extern void (*shmf_cuckoo_move_hook)(void);
/* Test builds only: called by shmf_cuckoo_copy() after each piece it
 * copied without the lock. */
extern void (*shmf_cuckoo_copy_hook)(void);
/* Test builds only: the quick tries shmf_cuckoo_count() makes before its
 * read that one move cannot fool (64; 0 sends every count there). */
extern unsigned shmf_cuckoo_read_tries;
/* Call test hook @p h if a test has set it; nothing at all in other builds. */
#define SHMF_TEST_HOOK(h)        \
	do {                     \
		if ((h) != NULL) \
			(h)();   \
	} while (0)
#else
#define SHMF_TEST_HOOK(h) ((void)0)
#endif

/* The version stripe of bucket @p i. */
static inline _Atomic uint64_t *shmf_cuckoo_stripe(const struct shmf_cuckoo_geom *g, uint64_t i)
{
	return &g->meta->version[i % SHMF_CUCKOO_STRIPES];
}

/* The versions of a key's two stripes, as a lookup saw them before looking. */
struct shmf_cuckoo_seen {
	uint64_t v1, v2;
};

/* Seqlock read side, before: @return 0 if a move is in progress on either
 * stripe (look again later), 1 if the lookup may go ahead. */
static inline int shmf_cuckoo_read_begin(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k,
					 struct shmf_cuckoo_seen *seen)
{
	/* acquire: pairs with the release that closes a move's window. */
	seen->v1 = atomic_load_explicit(shmf_cuckoo_stripe(g, k->i1), memory_order_acquire);
	seen->v2 = atomic_load_explicit(shmf_cuckoo_stripe(g, k->i2), memory_order_acquire);
	return ((seen->v1 | seen->v2) & 1) == 0;
}

/* Seqlock read side, after: 1 if no move touched either stripe since
 * shmf_cuckoo_read_begin(), so what was read in between is consistent. */
static inline int shmf_cuckoo_read_valid(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k,
					 const struct shmf_cuckoo_seen *seen)
{
	/* acquire fence: the bucket reads happen before the re-reads. */
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(shmf_cuckoo_stripe(g, k->i1), memory_order_relaxed) == seen->v1 &&
	       atomic_load_explicit(shmf_cuckoo_stripe(g, k->i2), memory_order_relaxed) == seen->v2;
}

/* Copies of the key's fingerprint in its two buckets (a bucket counted
 * once when both are the same), read now with layout @p L: consistent
 * only between read_begin and read_valid, or under the lock. */
SHMF_CUCKOO_INLINE unsigned shmf_cuckoo_copies_as(const struct shmf_cuckoo_geom *g, struct shmf_cuckoo_lanes L,
						  const struct shmf_cuckoo_key *k)
{
	uint64_t b1 = shmf_cuckoo_word_load(g, L, k->i1, memory_order_relaxed);
	SHMF_TEST_HOOK(shmf_cuckoo_read_hook);
	uint64_t b2 = k->i2 != k->i1 ? shmf_cuckoo_word_load(g, L, k->i2, memory_order_relaxed) : 0;
	return shmf_cuckoo_lanes_count(L, shmf_cuckoo_lanes_equal(L, b1, k->fp)) +
	       shmf_cuckoo_lanes_count(L, shmf_cuckoo_lanes_equal(L, b2, k->fp));
}

static inline unsigned shmf_cuckoo_copies(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k)
{
	return shmf_cuckoo_copies_as(g, g->lanes, k);
}

SHMF_CUCKOO_INLINE int shmf_cuckoo_count_try_as(const struct shmf_cuckoo_geom *g, struct shmf_cuckoo_lanes L,
						const struct shmf_cuckoo_key *k)
{
	struct shmf_cuckoo_seen seen;
	if (!shmf_cuckoo_read_begin(g, k, &seen))
		return -1;
	unsigned n = shmf_cuckoo_copies_as(g, L, k);
	return shmf_cuckoo_read_valid(g, k, &seen) ? (int)n : -1;
}

/*
 * One try at a consistent count. @return the copies of the fingerprint in
 * the key's two buckets, or -1 if a move was in progress or ran meanwhile.
 * Inline: it is the whole lookup of a check. Buckets of 4, the default,
 * take paths of their own on which every lane constant is folded into the
 * code (no slower than when 4 was the only size); the other sizes read
 * them from the geometry.
 */
static inline int shmf_cuckoo_count_try(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k)
{
	if (__builtin_expect(g->layout == SHMF_CUCKOO_LAYOUT(4, 16), 1))
		return shmf_cuckoo_count_try_as(g, shmf_cuckoo_lanes_of(4, 16), k);
	if (g->layout == SHMF_CUCKOO_LAYOUT(4, 8))
		return shmf_cuckoo_count_try_as(g, shmf_cuckoo_lanes_of(4, 8), k);
	return shmf_cuckoo_count_try_as(g, g->lanes, k);
}

/**
 * Copies of the key's fingerprint in its two buckets (once if they are the
 * same bucket), read consistently with respect to relocation and without
 * writing anything (read-only mappings use it): tries
 * shmf_cuckoo_count_try() a bounded number of times, then reads in a way
 * that one move in progress cannot fool (a mover that is stopped or died
 * with its window open leaves exactly that), backing off while moves keep
 * racing it.
 * @return the count (0 to 2 * slots), or SHMF_E_BUSY when the calling
 *         thread's wait deadline (shmf_cuckoo_wait_deadline) passed before
 *         a read came out consistent.
 */
int shmf_cuckoo_count(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k);

/**
 * Add one copy of the fingerprint (duplicates allowed). A free slot in
 * either bucket is taken with one CAS; when both are full, relocation
 * under the writer lock makes room.
 * @return 0, SHMF_E_FULL (no room within max_kicks moves: nothing was
 *         changed, no key lost), SHMF_E_BUSY or another error from the lock.
 */
int shmf_cuckoo_add(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k);

/**
 * shmf_cuckoo_add() for a caller that holds the writer lock of @p g
 * already (a growing filter's capped add into its oldest layer).
 * @return 0, SHMF_E_FULL or SHMF_E_INVAL.
 */
int shmf_cuckoo_add_held(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k);

/**
 * Add a copy only if fewer than @p cap are present, atomically against
 * every other capped add (cap 1 is add-if-absent): holds the writer lock.
 * @return the count before the call (the add happened iff it is < cap),
 *         SHMF_E_FULL (count < cap but no room; nothing changed), or an
 *         error from the lock.
 */
int shmf_cuckoo_add_capped(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k, unsigned cap);

/**
 * Remove one copy of the fingerprint.
 * @return 1 removed, 0 none found, or an error from the lock (taken only
 *         when moves keep racing the lock-free delete).
 */
int shmf_cuckoo_del(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k);

/**
 * The writer lock, for the library's writers and for tests (a holder that
 * is stopped or killed). Waits at most the lock's timeout; a holder that
 * died is detected (the kernel marks the word) and what its move left
 * open is repaired before this returns.
 * @return 0, SHMF_E_BUSY (still held, or its bytes overwritten, after the
 *         timeout), or -ENOTSUP (this thread's robust list has a layout
 *         other than glibc's: the lock cannot be held safely).
 */
int shmf_cuckoo_lock(const struct shmf_cuckoo_geom *g);
void shmf_cuckoo_unlock(const struct shmf_cuckoo_geom *g);

/* No deadline: a thread waits what each lock's timeout allows. */
#define SHMF_CUCKOO_NO_DEADLINE UINT64_MAX

/**
 * Bound every wait of the calling thread (for a relocation lock, or for a
 * read that moves keep racing) by @p deadline_ns (CLOCK_MONOTONIC
 * nanoseconds, shmf_cuckoo_now_ns()), on top of each lock's timeout: past
 * it, a call that would wait answers SHMF_E_BUSY and changes nothing. A
 * deadline of 0 lets the thread spin briefly and never sleep: shmd's event
 * loop runs so, and moves a request that would wait to a worker thread.
 * SHMF_CUCKOO_NO_DEADLINE (every thread's start) removes it. Only the slow
 * paths read it: a call that does not wait pays nothing.
 * @return the deadline it replaces.
 */
uint64_t shmf_cuckoo_wait_deadline(uint64_t deadline_ns);

/** CLOCK_MONOTONIC now, in nanoseconds. */
uint64_t shmf_cuckoo_now_ns(void);

/** Whether the writer lock word of @p m names a holder (for tests and
 * diagnostics: a holder that died reads as not holding). */
int shmf_cuckoo_lock_held(const struct shmf_cuckoo_meta *m);

/**
 * Copy a table's payload (the meta block, then the buckets: @p bytes, the
 * data file from SHMF_DATA_BLOCKS_OFF on) into private memory @p dst while
 * writers go on, holding the writer lock only for a moment at the start
 * and at the end; @p g->cow must be set. The copy is an image in which
 * every fingerprint stored before the call began is in one of its
 * buckets, once (each bucket as it was before the first move that touched
 * it during the copy, or as read); adds and deletes that run during the
 * copy may or may not be in it.
 * @return 0, SHMF_E_BUSY (the lock), -EAGAIN (writers waited for room in
 *         the log for too long and cancelled the copy: try again),
 *         SHMF_E_FORMAT (the log was overwritten), -ENOMEM.
 */
int shmf_cuckoo_copy(const struct shmf_cuckoo_geom *g, void *dst, uint64_t bytes);

#endif
