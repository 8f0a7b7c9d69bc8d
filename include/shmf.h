/*
 * shmf.h - libshmf, the client library of shmfilter.
 *
 * Design note
 * -----------
 * shmd (the supervisor daemon) keeps Bloom and cuckoo filters in
 * memory-backed files under <runtime dir>/<instance>/. A worker process
 * opens a filter by name with shmf_open() and then checks, adds (and, for
 * cuckoo, deletes and counts) keys with plain loads and atomic operations
 * on the mapped memory: no syscall, no socket and no allocation on the hot
 * path. Each key is hashed once (XXH3-64 with the filter's secret seed). A
 * Bloom key touches one 64-byte block, set with atomic fetch-or; a cuckoo
 * key its two candidate buckets, changed with one compare-and-swap each.
 * Only a cuckoo add that must relocate fingerprints, or a capped add, takes
 * the filter's relocation lock (a word in shared memory; see Caveats). A
 * filter may be a ring of time windows or grow in layers; a handle follows
 * new generations and layers by itself.
 *
 * The runtime directory is $SHMF_RUNTIME_DIR if set, else /run/shmd for root
 * and $XDG_RUNTIME_DIR/shmd for other users.
 *
 * The library trusts nothing it maps: before first use it checks the owner,
 * mode and size of each file, copies the headers it needs into private
 * memory, validates magic, format version, layout fingerprint and sizes, and
 * bounds every index by that private copy.
 *
 * Caveats
 * -------
 * - fork(): a handle opened before fork() keeps working in the child (the
 *   mappings are shared, not copied). Close it in each process that no longer
 *   needs it; closing in one process does not affect the other. Parent and
 *   child exclude each other from a cuckoo filter's relocation lock as any
 *   two processes do. Do not fork while another thread is inside a call on
 *   the handle: the child would inherit that thread's handle mutex, held.
 * - Threads: all calls on one handle are safe from several threads at once,
 *   including the remap that follows a new generation. The old mapping is
 *   unmapped only after every thread has left the call that used it
 *   (liburcu-bp grace period). shmf_close() must not race with other calls
 *   on the same handle.
 * - A worker that crashes leaves nothing held: a cuckoo filter's relocation
 *   lock (a word in the filter's shared memory, taken without a system call
 *   when free) is on the kernel's robust-futex list of the thread holding
 *   it, so when that thread dies the kernel marks it and the next writer
 *   takes it at once and repairs what a move cut short left (a duplicate
 *   fingerprint, never a lost one). Bloom adds are single atomic operations
 *   per 64-bit word: an add interrupted between words leaves some of the
 *   key's bits set; the key then reads as absent (it was never reported
 *   added) and the next add of it reports it new.
 * - A worker that is stopped (SIGSTOP, a debugger) or stuck while it holds a
 *   cuckoo filter's relocation lock, or a writer that overwrites the lock's
 *   bytes, makes the calls that need the lock (capped and unique adds, adds
 *   that must relocate, rarely a delete) wait the filter's lock timeout
 *   (lock_timeout_ms in its configuration, 1 second by default) and answer
 *   SHMF_E_BUSY; checks and counts never wait for it, and nobody who can
 *   only read a filter can delay its writers.
 * - Daemon restart: the segments stay in the runtime directory, so open
 *   handles keep working while shmd is down or restarting. shmd re-attaches
 *   the same segments when it starts again.
 * - Generations: when shmd publishes a new generation of a filter (swap,
 *   rotation) or drops it, the next call on an open handle notices (one load
 *   of a hot cache line) and remaps, or returns SHMF_E_DROPPED. A stuck
 *   worker that never calls into the library keeps the old generation's
 *   memory mapped (POSIX keeps an unlinked file alive until its last
 *   mapping goes away) until it calls again or closes the handle.
 * - "Was new" (shmf_add, shmf_add_many) is exact for adds that do not
 *   overlap in time. Two processes adding the same new key at the same
 *   instant may both be told it was new (a key's bits span several 64-bit
 *   words, each set by its own atomic operation); both never being told is
 *   impossible.
 * - Replicated filters (kept in step across a fleet of hosts by shmd): a
 *   read-write handle also appends the hash of every add, capped add and
 *   delete that changed the filter to a ring of the filter's journal
 *   (<name>.journal in the instance directory), which it claims on its
 *   first such call and which shmd drains and sends to the other hosts. No
 *   system call, and never an error or a wait: when the ring is full (shmd
 *   stopped or behind) or every ring is taken, the add succeeds here and is
 *   counted as not replicated (shmd reports the count; a pull or a merge
 *   repairs the filter). An add that changed nothing (a Bloom add whose
 *   bits were all set) is not journalled. A check-only handle never opens
 *   the journal, and checks cost what they cost on any filter. After
 *   fork(), a child that adds through its parent's handle claims a ring of
 *   its own. shmf_close() gives the ring back; a process that exits or
 *   crashes without closing leaves its ring to shmd, which frees it once
 *   drained; one that calls exec() without closing keeps it until it
 *   exits. "Was new" and caps are exact on each host only: another host's
 *   add of the same key arrives later (typically milliseconds).
 * - Growing filters (created with an expansion, RedisBloom's default): a
 *   filter is a chain of layers, each larger than the one before. shmd
 *   makes the next layer ahead, when the current one is half full; the
 *   adder that finds the current layer full moves to it at once (no
 *   system call, no wait), and every handle maps it on its next call.
 *   Checks then look at every layer (a filter created with the right
 *   capacity has one layer and pays nothing). If shmd is slow to make the
 *   next layer (or the filter has its 16 layers), a Bloom add goes into
 *   the full layer (never lost, never blocked: a flood can overfill a
 *   layer and raise its false-positive rate), and a cuckoo add that finds
 *   no room answers SHMF_E_FULL as a filter that does not grow does. A
 *   layer counts as full from its capacity on, give or take a thousandth
 *   of its capacity per adding handle (each handle sums the counters of a
 *   layer when its own passes a step of capacity / 1024).
 * - NONSCALING Bloom filters refuse new keys once they hold their capacity
 *   (SHMF_E_NONSCALING, RedisBloom's "non scaling filter is full"); a key
 *   already present still answers 0. Close to the capacity every new key
 *   is counted, so one adding handle stops exactly at it; several racing
 *   adders may store a few keys more.
 * - Filters imported from RedisBloom (shmctl import, or RedisBloom's own
 *   chunks through BF.LOADCHUNK / CF.LOADCHUNK) keep RedisBloom's hashing
 *   and layout, so every key answers as it did in RedisBloom. They are
 *   read-only: shmf_add, shmf_add_many, shmf_add_unique, shmf_add_capped
 *   and shmf_del answer SHMF_E_IMPORTED and change nothing; shmf_check,
 *   shmf_check_many and (cuckoo) shmf_count work. A check costs more than
 *   on a filter of shmd's own (a key's k bits lie in k places of each of
 *   RedisBloom's links, not in one cache line; figures in
 *   docs/benchmarks.md).
 * - Static filters (SHMF_TYPE_STATIC, binary fuse) hold a fixed set built
 *   offline (shmctl build --type static) and swapped or restored in; a
 *   new set is a new build and another swap, which handles follow as any
 *   new generation. shmf_add, shmf_add_many, shmf_add_unique,
 *   shmf_add_capped and shmf_del answer SHMF_E_STATIC and change
 *   nothing; shmf_count answers SHMF_E_TYPE. A check hashes the key once
 *   and reads three fingerprints (usually three cache lines).
 */
#ifndef SHMF_H
#define SHMF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SHMF_API __attribute__((visibility("default")))
#else
#define SHMF_API
#endif

/** Library version, as numbers and as a string. */
#define SHMF_VERSION_MAJOR  0
#define SHMF_VERSION_MINOR  1
#define SHMF_VERSION_STRING "0.1.0"

/* ---- Error codes ------------------------------------------------------
 * Every function that can fail returns a negative code: -errno for system
 * failures (for example -EACCES, -ENOMEM), or one of the library codes
 * below, which live in a band of their own (-5000 to -5099) so they never
 * clash with errno values. shmf_strerror() turns any of them into text.
 */
#define SHMF_E_NOTFOUND   (-5001) /**< no such filter, or no such instance */
#define SHMF_E_FORMAT     (-5002) /**< a segment or file is malformed: magic, sizes or fields */
#define SHMF_E_VERSION    (-5003) /**< a segment has another format version */
#define SHMF_E_LAYOUT     (-5004) /**< a segment was built with another struct layout */
#define SHMF_E_OWNER      (-5005) /**< a file or directory has an untrusted owner or mode */
#define SHMF_E_READONLY   (-5006) /**< write through a handle opened with SHMF_RDONLY */
#define SHMF_E_TYPE       (-5007) /**< the filter type does not support this call */
#define SHMF_E_FULL       (-5008) /**< the filter is full */
#define SHMF_E_INVAL      (-5009) /**< an argument is invalid (flags, capacity, fpr, NULL) */
#define SHMF_E_NAME       (-5010) /**< an instance or filter name is invalid */
#define SHMF_E_EXISTS     (-5011) /**< a filter of that name already exists */
#define SHMF_E_RUNDIR     (-5012) /**< the runtime directory cannot be determined */
#define SHMF_E_DROPPED    (-5013) /**< the filter was dropped while this handle was open */
#define SHMF_E_TOOBIG     (-5014) /**< the requested filter is larger than this library allows */
#define SHMF_E_PROTO      (-5015) /**< the control socket answered something unexpected */
#define SHMF_E_BUSY       (-5016) /**< a cuckoo filter's relocation lock stayed held past its timeout */
#define SHMF_E_NONSCALING (-5017) /**< a NONSCALING Bloom filter holds its capacity: a new key is refused */
#define SHMF_E_IMPORTED   (-5018) /**< the filter was imported from RedisBloom: it answers checks and counts only */
#define SHMF_E_STATIC                                                                                               \
	(-5019)              /**< the filter is static (built offline): it answers checks only; rebuild and swap it \
			      */
#define SHMF_E_FIRST (-5099) /**< lowest library code */
#define SHMF_E_LAST  (-5000) /**< highest library code */

/* ---- Types ------------------------------------------------------------- */

/** An open filter. Opaque; one per shmf_open(). */
typedef struct shmf shmf_t;

/** A key for the batch calls: a pointer and a length in bytes. */
typedef struct {
	const void *ptr;
	size_t len;
} shmf_key_t;

/** Flags for shmf_open(). */
#define SHMF_RDONLY 0x0 /**< check-only handle; the data is mapped read-only */
#define SHMF_RDWR   0x1 /**< check and add; needs write permission on the data file */

/** Filter types. */
#define SHMF_TYPE_BLOOM  1 /**< cache-line blocked Bloom filter */
#define SHMF_TYPE_CUCKOO 2 /**< cuckoo filter: delete, count, capped add */
/** static filter: a binary fuse filter (arity 3) of a fixed set, built
 * offline by `shmctl build --type static` and swapped or restored in; it
 * answers checks only (adds and deletes: SHMF_E_STATIC). 8-bit
 * fingerprints reach rates down to 2^-8 (0.39%) at 9.0 bits a key, 16-bit
 * down to 2^-16 (1.5e-5) at 18.0, 32-bit down to 2^-32 (2.3e-10) at 36.0;
 * the narrowest that reaches the requested rate is taken. */
#define SHMF_TYPE_STATIC 3

/** Longest instance or filter name, without the terminating NUL. */
#define SHMF_NAME_MAX 63

/** What shmf_info() reports about an open filter. */
typedef struct {
	char name[SHMF_NAME_MAX + 1]; /**< filter name */
	int type;                     /**< SHMF_TYPE_BLOOM, SHMF_TYPE_CUCKOO or SHMF_TYPE_STATIC */
	uint32_t k;                   /**< Bloom: bits set per key (in all its lines); cuckoo and static:
					 fingerprint bits */
	uint64_t capacity;            /**< keys it was sized for */
	double fpr_target;   /**< false-positive rate it was sized for, at capacity ("error_rate" in SHMF.INFO, shmctl
				info --json and PHP's info()) */
	uint64_t bits;       /**< Bloom: filter bits (64-byte blocks x 512);
				  cuckoo: fingerprint slots x fingerprint bits;
				  static: fingerprints x fingerprint bits */
	uint64_t bytes;      /**< size of the data segment in bytes, header included */
	uint64_t items;      /**< Bloom: adds that reported the key new;
				  cuckoo: fingerprints stored (adds minus deletes);
				  static: the distinct keys it was built from */
	double fill_ratio;   /**< Bloom: expected fraction of bits set;
				  cuckoo: fraction of slots in use (load) */
	double fpr_estimate; /**< expected false-positive rate now, from items (static: 2^-fingerprint_bits) */
	uint64_t generation; /**< generation this handle has mapped */
	uint64_t buckets;    /**< cuckoo: buckets of bucket_size slots; static: fingerprints; Bloom: 0 */
	uint32_t fingerprint_bits;   /**< cuckoo and static: 8, 16 or 32; Bloom: 0 */
	uint32_t max_kicks;          /**< cuckoo: bound on one insert's relocations; Bloom: 0 */
	uint64_t relocations;        /**< cuckoo: fingerprints moved so far; Bloom: 0 */
	uint64_t deletes;            /**< cuckoo: copies removed by shmf_del(); Bloom: 0 */
	uint64_t window_secs;        /**< time window: seconds per generation; 0: not windowed */
	uint32_t window_generations; /**< time window: generations kept; 0: not windowed */
	uint32_t live_generations;   /**< generations checked now (1 unless windowed); the
					  fields above describe the newest, where adds go */
	uint64_t items_live;         /**< items summed over the live generations */
	uint32_t bucket_size;        /**< cuckoo: fingerprints per bucket, 1, 2, 4 or 8 (RedisBloom's
					  BUCKETSIZE); static: fingerprints a segment; Bloom: 0 */
	uint32_t lines;              /**< Bloom: cache lines a key's bits lie in, each check reads them:
					  1, or 2 or 3 at low rates (k / lines bits in each); cuckoo: 0.
					  (Reserved and zero before 0.1.0.) */
} shmf_info_t;

/* ---- Functions --------------------------------------------------------- */

/**
 * Open filter @p filter of instance @p instance.
 *
 * @param instance  instance name, or NULL for "default"
 * @param filter    filter name (1-63 characters of [A-Za-z0-9_.:-], not
 *                  starting with '.')
 * @param flags     SHMF_RDONLY or SHMF_RDWR
 * @param out       receives the handle on success; untouched on failure
 * @pre the instance's daemon has created the filter (the daemon need not be
 *      running now: the segments outlive it)
 * @return 0, or SHMF_E_NAME (bad instance or filter name), SHMF_E_INVAL
 *         (unknown flags, NULL argument), SHMF_E_RUNDIR, SHMF_E_NOTFOUND
 *         (no such instance or filter), SHMF_E_OWNER (a file or the
 *         directory is owned by an untrusted user or writable by others),
 *         SHMF_E_FORMAT, SHMF_E_VERSION, SHMF_E_LAYOUT (a segment fails
 *         validation), -EACCES (no permission, e.g. SHMF_RDWR without write
 *         access to the data file), -ENOMEM, or another -errno.
 */
SHMF_API int shmf_open(const char *instance, const char *filter, int flags, shmf_t **out);

/**
 * Close a handle and unmap its segments. NULL is accepted and ignored.
 * @pre no other thread is using @p f
 */
SHMF_API void shmf_close(shmf_t *f);

/**
 * Check whether a key may be in the filter.
 *
 * @return 1 if the key may be present (false positives at the filter's
 *         rate), 0 if it is certainly absent, or SHMF_E_INVAL (NULL key
 *         with non-zero length), SHMF_E_DROPPED, or an error from
 *         remapping a new generation (see shmf_open).
 */
SHMF_API int shmf_check(shmf_t *f, const void *key, size_t len);

/**
 * Add a key.
 *
 * Bloom: sets the key's bits. Cuckoo: stores one more copy of the key's
 * fingerprint, even if one is there already (duplicates count, as
 * RedisBloom's CF.ADD); see shmf_add_unique() for add-if-absent.
 *
 * @return Bloom: 1 if the key was not in the filter before this call (this
 *         call set at least one of its bits), 0 if it may have been. Two
 *         adds of the same new key that race (in two processes or threads)
 *         may both return 1, because a key's bits lie in several words;
 *         for exactly-once under races use a cuckoo filter's
 *         shmf_add_unique().
 *         Cuckoo: 1 (a copy was stored). Or SHMF_E_READONLY (the handle
 *         was opened for checks only), SHMF_E_INVAL, SHMF_E_FULL (cuckoo:
 *         no room even after relocating, nor in a next layer; the filter
 *         is unchanged), SHMF_E_NONSCALING (a NONSCALING Bloom filter
 *         holds its capacity and the key is new; nothing changed),
 *         SHMF_E_IMPORTED (a filter imported from RedisBloom: read-only),
 *         SHMF_E_STATIC (a static filter: built offline, read-only),
 *         SHMF_E_DROPPED, SHMF_E_BUSY (cuckoo: the add had to relocate and
 *         the relocation lock stayed held past the filter's lock timeout;
 *         nothing was stored), or an error from remapping.
 */
SHMF_API int shmf_add(shmf_t *f, const void *key, size_t len);

/**
 * Add a key only if it is absent (RedisBloom's CF.ADDNX), atomically
 * against every other shmf_add_unique() and shmf_add_capped() on the
 * filter, in any process. On a Bloom filter this is shmf_add().
 *
 * @return 1 if the key was added, 0 if it was (or may have been, by a
 *         false positive) present already, or an error as for shmf_add().
 */
SHMF_API int shmf_add_unique(shmf_t *f, const void *key, size_t len);

/**
 * Cuckoo only: add a copy of the key only if fewer than @p cap copies are
 * present, atomically against every other shmf_add_capped() and
 * shmf_add_unique() on the filter, in any process: N processes racing
 * with the same key and cap store exactly cap copies in all. The
 * frequency-cap call ("at most 4 pushes per device per day").
 * A plain shmf_add() of the same key is not part of that atomicity.
 * It takes the relocation lock (a word in shared memory: no system call
 * unless another process holds it).
 *
 * @return the number of copies present before the call (the add happened
 *         if and only if that is below @p cap), or SHMF_E_TYPE (a Bloom
 *         filter), SHMF_E_FULL (below the cap but no room; nothing
 *         changed), SHMF_E_BUSY (the relocation lock stayed held past
 *         the filter's lock timeout; nothing changed), or an error as for
 *         shmf_add().
 */
SHMF_API int shmf_add_capped(shmf_t *f, const void *key, size_t len, unsigned cap);

/**
 * Cuckoo only: remove one copy of the key.
 *
 * Deleting a key that was never added is unsafe, as in every cuckoo
 * filter: if another key shares its fingerprint and buckets, that key's
 * copy is removed instead and that key reads as absent afterwards.
 *
 * @return 1 if a copy was removed, 0 if none was found, or SHMF_E_TYPE
 *         (a Bloom filter), SHMF_E_READONLY, SHMF_E_INVAL, SHMF_E_BUSY
 *         (moves kept racing the delete and the relocation lock stayed
 *         held past the lock timeout), or an error from remapping.
 */
SHMF_API int shmf_del(shmf_t *f, const void *key, size_t len);

/**
 * Cuckoo only: how many copies of the key's fingerprint its two buckets
 * hold (0 to twice the bucket size, 16 at most; more than the adds of
 * this key when other keys share its fingerprint and buckets, at the
 * filter's false-positive rate).
 *
 * @return the count, or SHMF_E_TYPE (a Bloom filter), SHMF_E_INVAL, or an
 *         error from remapping.
 */
SHMF_API int shmf_count(shmf_t *f, const void *key, size_t len);

/**
 * Check @p n keys; out[i] is set to 1 (may be present) or 0 (absent).
 * Hashes ahead and prefetches the blocks so that many cache misses are in
 * flight at once: much faster per key than a loop of shmf_check().
 *
 * @return the number of keys that may be present, or a negative error as
 *         for shmf_check() (then @p out is unspecified).
 */
SHMF_API int shmf_check_many(shmf_t *f, const shmf_key_t *keys, size_t n, uint8_t *out);

/**
 * Add @p n keys; out[i] (if @p out is not NULL) is set to 1 if key i was
 * new, 0 if it may have been present. A key repeated within the batch is
 * new at most once (Bloom). Cuckoo: every key stores a copy (out[i] = 1);
 * on SHMF_E_FULL the keys before the one that did not fit are stored
 * (out[i] = 1) and the rest are not (out[i] = 0); the same on
 * SHMF_E_NONSCALING for a NONSCALING Bloom filter that filled.
 *
 * @return the number of keys that were new (cuckoo: stored), or a
 *         negative error as for shmf_add().
 */
SHMF_API int shmf_add_many(shmf_t *f, const shmf_key_t *keys, size_t n, uint8_t *out);

/**
 * Describe the filter: type, sizing, items and estimates (of a growing
 * filter, its current layer's; live_generations counts its layers and
 * items_live sums them).
 * @return 0, or SHMF_E_INVAL, SHMF_E_DROPPED, or an error from remapping.
 */
SHMF_API int shmf_info(shmf_t *f, shmf_info_t *out);

/**
 * A sentence describing @p err (a negative code from any shmf_ function).
 * Never NULL; the string is static.
 */
SHMF_API const char *shmf_strerror(int err);

/**
 * More about the last failure of a call in this thread, where there is
 * more to say than shmf_strerror(): for -EACCES and -EPERM from
 * shmf_open() (or from a call that maps a new generation), the file or
 * directory refused, its owner, group and mode, the caller's user and
 * groups, and what to change. Example: "/run/shmd/default/clicks.1.data:
 * Permission denied opening it to add (SHMF_RDWR) for user www-data (uid
 * 33, gid 33 www-data, in group shmf): it is root:shmf, mode 0640; its
 * group may only check: ...".
 *
 * Per thread, so a worker's threads never read each other's. shmf_open()
 * clears it first; other calls only set it. Read it right after the
 * failing call, before the thread's next shmf_ call.
 * @return the sentence, or "" when the last failure had nothing to add.
 *         Never NULL; valid until the thread's next shmf_ call.
 */
SHMF_API const char *shmf_error_detail(void);

#ifdef __cplusplus
}
#endif
#endif /* SHMF_H */
