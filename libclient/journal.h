/*
 * journal.h - the fleet journal of a replicated filter (its format is in
 * segment-format.h): the adders' side, which a read-write handle uses on
 * its add path, and the internal API shmd uses to create journals, drain
 * them and apply entries. Nothing here is exported from libshmf.so.
 *
 * The adders' side: a handle claims one ring of the journal on its first
 * journalled add (a CAS of the ring's owner) and from then on appends with
 * a CAS on the ring's head and three stores, no system call. A full ring,
 * a missing journal or no free ring never fails the add: the entry is
 * counted (the ring's dropped, the handle's missed) and the add returns.
 * After fork() a handle claims a ring of the child's own on the child's
 * first journalled add (a fork epoch, bumped by a pthread_atfork handler,
 * tells it that its claim is the parent's).
 */
#ifndef SHMF_JOURNAL_H
#define SHMF_JOURNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "libclient/segment.h"
#include <shmf.h>

/* ---- Handles ------------------------------------------------------------ */

/* Internal open flag: the handle never journals, whatever the filter (shmd's
 * handle that applies other hosts' entries: what it applies must not be
 * sent back). */
#define SHMF_OPEN_NOJOURNAL 0x100

/** shmf_open() with the internal flags above allowed too. */
int shmf_open_internal(const char *instance, const char *filter, int flags, shmf_t **out);

/* ---- Creating a journal (shmd) ------------------------------------------ */

/** Write the journal file name "<name>.journal" into buf. 0 or -ENAMETOOLONG. */
int shmf_journal_filename(const char *name, char *buf, size_t size);

/**
 * Create the journal of filter @p name in directory @p dirfd: O_CREAT |
 * O_EXCL | O_NOFOLLOW with @p mode (the filter's: who may add may journal)
 * and group @p gid ((gid_t)-1 keeps the process's), every page allocated,
 * the header written. The slot's SHMF_SLOT_REPLICATED flag is the caller's
 * to set, after this returns.
 * @param nrings        rings: handles that can journal at once, 1..SHMF_JOURNAL_RINGS_MAX
 * @param ring_entries  entries per ring, a power of 2 in
 *                      SHMF_JOURNAL_ENTRIES_MIN..SHMF_JOURNAL_ENTRIES_MAX
 * @return 0, SHMF_E_NAME, SHMF_E_INVAL (sizes, or a mode with other-write
 *         or non-permission bits), SHMF_E_EXISTS (the file exists: nothing
 *         was changed), -errno (the file is removed again).
 */
int shmf_journal_create(int dirfd, const char *name, mode_t mode, gid_t gid, unsigned nrings, unsigned ring_entries);

/* ---- The adders' side (client.c) ----------------------------------------- */

/* Bumped in the child of every fork(). */
extern _Atomic uint32_t shmf_journal_fork_epoch;

/* A handle's way into the journal. Mapped and claimed lazily, under lock;
 * the hot path reads claim and the fields it publishes. */
struct shmf_journal_writer {
	_Atomic uint64_t claim; /* fork epoch << 32 | (ring + 1); 0: none. Released
				   after rings, ring_bytes and mask are set */
	char *rings;            /* ring 0 in the mapping */
	uint64_t ring_bytes;
	uint32_t mask; /* ring_entries - 1 */
	uint32_t nrings;
	_Atomic uint64_t missed;   /* journalled adds that found no journal or no free ring */
	_Atomic uint64_t retry_at; /* the slow path tries again once missed reaches it */
	pthread_mutex_t lock;      /* mapping and claiming */
	uint64_t backoff;          /* under lock: adds missed between tries */
	int error;                 /* under lock: why the last try failed, 0 if it did not */
	uint64_t owner;            /* under lock: the owner value of our claim */
	uint64_t reported;         /* under lock: missed as last added to the header's missed */
	int fd;
	void *base;
	size_t len;
	const struct shmf_dir *dir; /* the handle's */
	const char *name;           /* the handle's filter name */
};

/** A writer for the journal of filter @p name in @p dir (both must outlive
 * it); nothing is opened yet. NULL if out of memory. */
struct shmf_journal_writer *shmf_journal_writer_new(const struct shmf_dir *dir, const char *name);

/** Give the ring back (0 if drained, else marked CLOSED for shmd to free
 * once drained) if this process claimed it, unmap, free. NULL is ignored.
 * @pre no other thread uses @p w */
void shmf_journal_writer_free(struct shmf_journal_writer *w);

/* Map, claim, or count the entry as missed; then write it if claimed. */
void shmf_journal_put_slow(struct shmf_journal_writer *w, uint64_t hash, uint32_t op, uint32_t window);

/* Append one entry to ring @p r (entries after its header, @p mask + 1 of
 * them), or count it in the ring's dropped if the ring is full. */
static inline void shmf_journal_put_ring(struct shmf_journal_ring *r, uint32_t mask, uint64_t hash, uint32_t op,
					 uint32_t window)
{
	/* tail before head: tail <= head at every instant and both only grow,
	 * so head - tail never goes negative; a stale tail only makes the ring
	 * look fuller. acquire: pairs with shmd's release store of tail, made
	 * after it zeroed the entries it drained. */
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	for (int fresh_tail = 0;;) {
		if (__builtin_expect(head - tail > mask, 0)) {
			/* Full, or tail was stale: look once more (a few times at
			 * most: a writer scribbling over tail must not hold us). */
			if (fresh_tail++ < 3) {
				uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
				if (t != tail) {
					tail = t;
					head = atomic_load_explicit(&r->head, memory_order_relaxed);
					continue;
				}
			}
			atomic_fetch_add_explicit(&r->dropped, 1, memory_order_relaxed);
			return;
		}
		/* relaxed: the CAS only hands out positions; the entry is
		 * published by the release store of op below. */
		if (atomic_compare_exchange_weak_explicit(&r->head, &head, head + 1, memory_order_relaxed,
							  memory_order_relaxed))
			break;
	}
	struct shmf_journal_entry *e = (struct shmf_journal_entry *)(r + 1) + (head & mask);
	atomic_store_explicit(&e->hash, hash, memory_order_relaxed);
	atomic_store_explicit(&e->window, window, memory_order_relaxed);
	/* release: pairs with shmd's acquire load of op; hash and window first. */
	atomic_store_explicit(&e->op, op, memory_order_release);
}

/* Journal one operation: the handle's ring if it has claimed one in this
 * process, else the slow path. */
static inline void shmf_journal_put(struct shmf_journal_writer *w, uint64_t hash, uint32_t op, uint32_t window)
{
	/* acquire: pairs with the release store of claim in the slow path,
	 * made after rings, ring_bytes and mask were set. */
	uint64_t c = atomic_load_explicit(&w->claim, memory_order_acquire);
	if (__builtin_expect((uint32_t)c != 0 && (uint32_t)(c >> 32) == atomic_load_explicit(&shmf_journal_fork_epoch,
											     memory_order_relaxed),
			     1)) {
		struct shmf_journal_ring *r = (struct shmf_journal_ring *)(w->rings +
									   (uint64_t)((uint32_t)c - 1) * w->ring_bytes);
		shmf_journal_put_ring(r, w->mask, hash, op, window);
		return;
	}
	shmf_journal_put_slow(w, hash, op, window);
}

/* What a handle knows of its journalling (shmf_journal_handle_stats). */
struct shmf_journal_writer_stats {
	int journals;     /* 1 if the handle journals its adds (replicated, read-write, not NOJOURNAL) */
	int ring;         /* the ring this process claimed, -1 if none */
	int error;        /* why the last map or claim failed, 0 if none did */
	uint64_t missed;  /* journalled adds written nowhere: no journal, or no free ring */
	uint64_t dropped; /* the claimed ring's dropped counter (shared, cumulative) */
};

/** Fill @p out for writer @p w (NULL: a handle that does not journal). */
void shmf_journal_writer_stats(struct shmf_journal_writer *w, struct shmf_journal_writer_stats *out);

/** The same for handle @p f. @return 0 or SHMF_E_INVAL. */
int shmf_journal_handle_stats(shmf_t *f, struct shmf_journal_writer_stats *out);

/* ---- Draining (shmd) --------------------------------------------------- */

/* An entry copied out of the journal (private memory). */
struct shmf_jentry {
	uint64_t hash;
	uint32_t op;     /* SHMF_JOP_* */
	uint32_t window; /* window number, 0 without a window */
};

/* One reader per journal (shmd's), used by one thread: it alone stores
 * the rings' tails. */
struct shmf_journal_reader;

/**
 * Open the journal of filter @p name for draining: owner and mode checked
 * as for a data segment, the header copied and validated against the file
 * size and the name; every index is bounded by that private copy.
 * @return 0, SHMF_E_NOTFOUND, SHMF_E_OWNER, SHMF_E_FORMAT, SHMF_E_VERSION,
 *         SHMF_E_LAYOUT, -ENOMEM, -errno.
 */
int shmf_journal_reader_open(const struct shmf_dir *dir, const char *name, struct shmf_journal_reader **out);

void shmf_journal_reader_close(struct shmf_journal_reader *r);

/* Receives a batch of entries of ring @p ring, in the order they were
 * reserved. Return 0 to consume them, or a negative code to leave them in
 * the ring (the drain stops and returns it; the next drain hands them out
 * again: at-least-once). */
typedef int (*shmf_journal_fn)(void *arg, unsigned ring, const struct shmf_jentry *e, size_t n);

/* Drain flags. */
#define SHMF_JDRAIN_RECLAIM                                                \
	0x1 /* also ask (kill(pid, 0)) whether the owners of drained rings \
	       are alive, and free the rings of those that are not */

/**
 * Hand every ring's waiting entries to @p fn, at most one ring's worth of
 * entries per ring per call, and consume them once @p fn accepts them.
 * Never trusts the rings: a ring whose head and tail make no sense is
 * reset (its entries counted lost, the ring counted damaged), an entry
 * with an unknown operation is skipped and counted lost, and a position a
 * dead owner reserved but never wrote is skipped and counted lost. A
 * drained ring whose owner closed its handle is freed; with
 * SHMF_JDRAIN_RECLAIM, so is one whose owner process is gone.
 * @return the entries handed out and consumed (at most INT_MAX), or the
 *         negative code @p fn returned.
 */
int shmf_journal_drain(struct shmf_journal_reader *r, shmf_journal_fn fn, void *arg, unsigned flags);

struct shmf_journal_ring_stats {
	uint64_t owner;   /* pid << 32 | token, as read now; 0: free */
	uint64_t depth;   /* entries waiting */
	uint64_t dropped; /* adds that found this ring full (the adders' count, cumulative) */
	uint64_t lost;    /* entries this reader skipped (dead owner, damage) */
	uint64_t drained; /* entries this reader handed out and consumed */
	uint64_t damaged; /* times this reader found the ring's head or tail scribbled */
};

struct shmf_journal_stats {
	uint32_t nrings, ring_entries;
	uint32_t claimed;                                /* rings with an owner now */
	uint64_t depth, dropped, lost, drained, damaged; /* sums of the rings' */
	uint64_t reclaimed;                              /* rings this reader freed */
	uint64_t missed;                                 /* adds journalled nowhere, as the adders report them (the
							    header's missed): at their next try and when they close */
};

/** Totals into @p total, and the first @p n rings' counts into @p rings
 * (may be NULL). */
void shmf_journal_stats(const struct shmf_journal_reader *r, struct shmf_journal_stats *total,
			struct shmf_journal_ring_stats *rings, size_t n);

/* ---- Applying entries (shmd; client.c) ---------------------------------- */

/* shmf_journal_apply(): the entry's window is no live generation's. */
#define SHMF_JAPPLY_RETIRED 2

/**
 * Apply an entry (from this host's journal or another's) to the filter of
 * read-write handle @p f, as the local operation it stands for, without
 * the key: Bloom ADD sets the hash's bits; cuckoo ADD and CAPPED store a
 * copy of its fingerprint (the cap was enforced where the add was made),
 * DEL removes one. A windowed filter applies it to the generation that
 * was current in the entry's window: the newest live one whose window
 * number is at most the entry's (so an entry from a host whose clock is
 * ahead goes to the newest); if every live generation is newer, the
 * entry's is retired. Never journals (no echo).
 * @return 1 the filter changed, 0 it did not (bits set already, nothing to
 *         delete), SHMF_JAPPLY_RETIRED (its generation is retired: nothing
 *         done), or SHMF_E_INVAL (unknown op), SHMF_E_TYPE (DEL or CAPPED
 *         on a Bloom filter), SHMF_E_READONLY, SHMF_E_FULL, or an error
 *         from remapping.
 */
int shmf_journal_apply(shmf_t *f, const struct shmf_jentry *e);

struct shmf_japply_counts {
	uint64_t changed, unchanged, retired, failed;
	int error; /* the last entry's error, 0 if none failed */
};

/**
 * shmf_journal_apply() for @p n entries under one generation check; each
 * result is added to @p c (not zeroed first).
 * @return 0, or an error that stopped the batch before any entry
 *         (SHMF_E_READONLY, SHMF_E_INVAL, remapping).
 */
int shmf_journal_apply_many(shmf_t *f, const struct shmf_jentry *e, size_t n, struct shmf_japply_counts *c);

#endif
