/* cuckoo.c - the cuckoo filter's operations on shared buckets (cuckoo.h). */
#include <errno.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "libclient/cuckoo.h"

/* Reads that race a move this many times fall back to count_stable(),
 * which gives up checking the versions after STABLE_TRIES (backing off,
 * about 40 ms in all). */
#define READ_TRIES   64
#define STABLE_TRIES 2048
/* Relocation paths that a concurrent writer spoilt before we could use
 * them: after this many the filter is, for this caller, full. */
#define PATH_TRIES 32

/* Test builds (SHMF_TEST_HOOKS) can stall a reader between its bucket
 * loads and a relocation between its copy and its clear (cuckoo.h), to
 * widen the windows in which a move could fool a reader or be caught by
 * a kill, and send every count to its slow read; other builds have
 * neither the hooks nor a branch on them. */
#ifdef SHMF_TEST_HOOKS
void (*shmf_cuckoo_read_hook)(void);
void (*shmf_cuckoo_move_hook)(void);
void (*shmf_cuckoo_copy_hook)(void);
unsigned shmf_cuckoo_read_tries = READ_TRIES;
#define FAST_TRIES shmf_cuckoo_read_tries
#else
#define FAST_TRIES READ_TRIES
#endif

/* ---- Sizing ------------------------------------------------------------ */

int shmf_cuckoo_geom_layout(struct shmf_cuckoo_geom *g)
{
	if (!shmf_cuckoo_layout_ok(g->slots, g->fp_bits) || g->nbuckets == 0 ||
	    (shmf_cuckoo_even_buckets(g->slots) && g->nbuckets % 2 != 0))
		return SHMF_E_FORMAT;
	g->alt_odd = shmf_cuckoo_even_buckets(g->slots);
	g->layout = SHMF_CUCKOO_LAYOUT(g->slots, g->fp_bits);
	g->lanes = shmf_cuckoo_lanes_of(g->slots, g->fp_bits);
	return 0;
}

double shmf_cuckoo_load(uint32_t slots, uint32_t fp_bits)
{
	/* The usual loads for 2 candidate buckets (Fan et al., "Cuckoo Filter:
	 * Practically Better Than Bloom", 2014: 50%, 84%, 95%, 98% for buckets
	 * of 1, 2, 4, 8), less a margin where this table needs one
	 * (bench-cuckoo-fill --load, docs/design.md section 5): buckets of 1
	 * reach 50% in large tables, but standard cuckoo hashing fails in small
	 * ones well before (2% of tables of 1,000 keys at 45%, none at 30%);
	 * buckets of 2 at 84% left 22 tables in 4,000 of 1,024 keys (a
	 * filter created on the fly) short with RedisBloom's 20 kicks, none at
	 * 80%. Buckets of 2 with 32-bit fingerprints, the low-rate layout, plan
	 * for 82%: they fill at 87-88% from 1,000 to a million keys (500
	 * kicks); at 80% a filter of a million keys would take 40.2 bits a
	 * key, at 82% 39.2, below a classic Bloom filter at 1e-9 (43.1). 84%
	 * costs 38.2 but with 20 kicks left 1,051 tables in 4,000 of 10,000
	 * keys short (82%: 135, 80%: 42; 500 kicks: none). Older layouts keep
	 * their loads: the shape of every filter and snapshot made before
	 * depends on them. */
	switch (slots) {
	case 1: return 0.30;
	case 2: return fp_bits == 32 ? 0.82 : 0.80;
	case 8: return 0.97;
	default: return 0.95;
	}
}

/* Whether 8-bit fingerprints let a table of @p nbuckets buckets of
 * @p slots reach its planned load. Partial-key cuckoo hashing gives a
 * fingerprint only 255 other buckets to move to, and a bucket's
 * fingerprints fewer choices the fewer slots it has: buckets of 1 with
 * 8-bit fingerprints fill at 39% (22,000 buckets) down to 10-20% (a
 * million), and buckets of 2 dip below 84% from about a million buckets
 * (83.9% at 12 million, 74% at 60 million) where 16-bit ones reach 88%.
 * Buckets of 4 and 8 keep their loads with 8 bits (94.5% and 99.2% at 26
 * and 13 million buckets). */
static int fp8_holds(uint32_t slots, uint64_t nbuckets)
{
	return slots >= 4 || (slots == 2 && nbuckets <= (UINT64_C(1) << 20));
}

double shmf_cuckoo_fpr(uint64_t items, uint64_t nbuckets, uint32_t fp_bits, uint32_t slots)
{
	if (nbuckets == 0 || fp_bits == 0 || slots == 0)
		return 1.0;
	double load = (double)items / ((double)nbuckets * slots);
	if (load > 1.0)
		load = 1.0;
	double values = ldexp(1.0, (int)fp_bits) - 1.0;
	return -expm1(2.0 * slots * load * log1p(-1.0 / values));
}

int shmf_cuckoo_buckets(uint64_t capacity, uint32_t slots, uint32_t fp_bits, int headroom, uint64_t *out)
{
	if (capacity == 0 || !shmf_cuckoo_layout_ok(slots, 8))
		return SHMF_E_INVAL;
	double buckets = ceil((double)capacity / (slots * shmf_cuckoo_load(slots, fp_bits)));
	if (headroom)
		buckets += ceil(sqrt((double)capacity));
	/* The widest bucket word any size may get, before it is chosen. */
	if (buckets * 8 > (double)SHMF_DATA_MAX_BYTES)
		return SHMF_E_TOOBIG;
	uint64_t nb = (uint64_t)buckets;
	if (shmf_cuckoo_even_buckets(slots))
		nb += nb % 2;
	*out = nb;
	return 0;
}

int shmf_cuckoo_size(uint64_t capacity, double fpr, uint32_t slots, int headroom, struct shmf_cuckoo_params *out)
{
	if (capacity == 0 || !(fpr > 0.0 && fpr < 1.0) || !shmf_cuckoo_layout_ok(slots, 8))
		return SHMF_E_INVAL;
	/* The narrowest fingerprint that reaches the rate in a bucket that is
	 * one word: the least memory for these slots. */
	for (uint32_t bits = 8; bits <= 32; bits *= 2) {
		uint64_t nb;
		if (!shmf_cuckoo_layout_ok(slots, bits))
			continue;
		int r = shmf_cuckoo_buckets(capacity, slots, bits, headroom, &nb);
		if (r < 0)
			return r;
		if ((bits == 8 && !fp8_holds(slots, nb)) || shmf_cuckoo_fpr(capacity, nb, bits, slots) > fpr)
			continue;
		out->fp_bits = bits;
		out->slots = slots;
		out->nbuckets = nb;
		out->table_bytes = shmf_cuckoo_table_bytes(nb, bits, slots);
		return 0;
	}
	return SHMF_E_INVAL;
}

/* ---- Buckets ----------------------------------------------------------- */

static inline unsigned lane_of(uint64_t mask, uint32_t w)
{
	return (unsigned)__builtin_ctzll(mask) / w;
}

static inline uint64_t lane_mask(unsigned lane, uint32_t w)
{
	return ((UINT64_C(1) << w) - 1) << (lane * w);
}

static inline uint32_t slot_value(uint64_t bucket, unsigned lane, uint32_t w)
{
	return (uint32_t)((bucket >> (lane * w)) & ((UINT64_C(1) << w) - 1));
}

/* seq_cst CAS of the bucket word, whatever its width: on failure *expect
 * holds the word seen. */
SHMF_CUCKOO_INLINE int bucket_cas(const struct shmf_cuckoo_geom *g, struct shmf_cuckoo_lanes L, uint64_t i,
				  uint64_t *expect, uint64_t desired)
{
	int ok;
	if (L.bytes == 8)
		return atomic_compare_exchange_strong((_Atomic uint64_t *)g->buckets + i, expect, desired);
	if (L.bytes == 4) {
		uint32_t e = (uint32_t)*expect;
		ok = atomic_compare_exchange_strong((_Atomic uint32_t *)g->buckets + i, &e, (uint32_t)desired);
		*expect = e;
	} else if (L.bytes == 2) {
		uint16_t e = (uint16_t)*expect;
		ok = atomic_compare_exchange_strong((_Atomic uint16_t *)g->buckets + i, &e, (uint16_t)desired);
		*expect = e;
	} else {
		uint8_t e = (uint8_t)*expect;
		ok = atomic_compare_exchange_strong((_Atomic uint8_t *)g->buckets + i, &e, (uint8_t)desired);
		*expect = e;
	}
	return ok;
}

/* Put @p fp in a free slot of bucket @p i. @return 1 placed, 0 full. */
SHMF_CUCKOO_INLINE int place_as(const struct shmf_cuckoo_geom *g, struct shmf_cuckoo_lanes L, uint64_t i, uint32_t fp)
{
	uint64_t b = shmf_cuckoo_word_load(g, L, i, memory_order_relaxed);
	for (;;) {
		uint64_t empty = shmf_cuckoo_lanes_equal(L, b, 0);
		if (empty == 0)
			return 0;
		unsigned lane = lane_of(empty, L.w);
		if (bucket_cas(g, L, i, &b, b | ((uint64_t)fp << (lane * L.w))))
			return 1;
	}
}

static int place(const struct shmf_cuckoo_geom *g, uint64_t i, uint32_t fp)
{
	return place_as(g, g->lanes, i, fp);
}

/* Clear one slot of bucket @p i that holds @p fp. @return 1 or 0. */
static int unplace(const struct shmf_cuckoo_geom *g, uint64_t i, uint32_t fp)
{
	struct shmf_cuckoo_lanes L = g->lanes;
	uint64_t b = shmf_cuckoo_word_load(g, L, i, memory_order_relaxed);
	for (;;) {
		uint64_t m = shmf_cuckoo_lanes_equal(L, b, fp);
		if (m == 0)
			return 0;
		if (bucket_cas(g, L, i, &b, b & ~lane_mask(lane_of(m, L.w), L.w)))
			return 1;
	}
}

/* Place in the emptier of the two buckets (the power of two choices: at
 * 75% load this halves how often both are full and an insert needs the
 * relocation lock, compared with trying i1 first). */
SHMF_CUCKOO_INLINE int place_balanced_as(const struct shmf_cuckoo_geom *g, struct shmf_cuckoo_lanes L,
					 const struct shmf_cuckoo_key *k)
{
	uint64_t b1 = shmf_cuckoo_word_load(g, L, k->i1, memory_order_relaxed);
	uint64_t b2 = shmf_cuckoo_word_load(g, L, k->i2, memory_order_relaxed);
	unsigned e1 = shmf_cuckoo_lanes_count(L, shmf_cuckoo_lanes_equal(L, b1, 0));
	unsigned e2 = shmf_cuckoo_lanes_count(L, shmf_cuckoo_lanes_equal(L, b2, 0));
	if (e2 > e1)
		return place_as(g, L, k->i2, k->fp) || place_as(g, L, k->i1, k->fp);
	return place_as(g, L, k->i1, k->fp) || place_as(g, L, k->i2, k->fp);
}

static int place_balanced(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k)
{
	return place_balanced_as(g, g->lanes, k);
}

/* ---- The writer lock --------------------------------------------------- */

/* A robust futex lock (cuckoo.h): the word holds the holder's thread id,
 * FUTEX_WAITERS when someone sleeps on it, and FUTEX_OWNER_DIED once the
 * kernel found its holder dead. Taking it free is one CAS and releasing it
 * one exchange; the kernel is entered only to sleep and to wake a sleeper.
 *
 * Not a pthread robust mutex: glibc unlinks one from its thread's list
 * through pointers it reads from the mutex itself (DEQUEUE_MUTEX), so
 * anyone who may write the filter could make a writer, or shmd, store a
 * value of their choice at an address of their choice. This lock keeps the
 * link it must restore in private memory (struct shmf_cuckoo_lock), and
 * only the kernel ever reads the link in shared memory. */

/* Where the kernel looks for the futex word relative to a robust-list
 * link: glibc registers every thread's list with this offset (a pthread
 * mutex's __lock is 32 bytes before its list link on LP64). */
#define FUTEX_OFFSET \
	(-(long)(offsetof(struct shmf_cuckoo_lockword, list_next) - offsetof(struct shmf_cuckoo_lockword, word)))

/* Spins on a held lock before sleeping: most holders (a capped add) keep
 * it for tens of nanoseconds. */
#define LOCK_SPINS 100

/* Bumped in the child of every fork(): a thread's cached id and robust
 * list are from an older generation there. */
static _Atomic unsigned fork_generation;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void on_fork_child(void)
{
	atomic_fetch_add_explicit(&fork_generation, 1, memory_order_relaxed);
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, on_fork_child);
}

/* This thread as the lock knows it. */
struct self {
	struct robust_list_head *head; /* the thread's robust list, as registered with the kernel */
	uint32_t tid;
	unsigned generation; /* the fork generation head and tid belong to */
};
static __thread struct self self;
/* A list of the library's own, for a thread that has none registered
 * (a C library other than glibc): only this lock's links are on it. */
static __thread struct robust_list_head own_head;

static __attribute__((noinline, cold)) int self_setup(unsigned generation)
{
	struct robust_list_head *h = NULL;
	size_t len = 0;
	if (syscall(SYS_get_robust_list, 0, &h, &len) != 0)
		return -errno;
	if (h == NULL) {
		own_head.list.next = &own_head.list;
		own_head.futex_offset = FUTEX_OFFSET;
		own_head.list_op_pending = NULL;
		if (syscall(SYS_set_robust_list, &own_head, sizeof(own_head)) != 0)
			return -errno;
		h = &own_head;
	}
	/* Another layout would have the kernel look for the word elsewhere. */
	if (h->futex_offset != FUTEX_OFFSET)
		return -ENOTSUP;
	self.head = h;
	self.tid = (uint32_t)syscall(SYS_gettid);
	self.generation = generation;
	return 0;
}

static inline int self_ready(void)
{
	unsigned gen = atomic_load_explicit(&fork_generation, memory_order_relaxed);
	if (__builtin_expect(self.head != NULL && self.generation == gen, 1))
		return 0;
	return self_setup(gen);
}

void shmf_cuckoo_lock_init(struct shmf_cuckoo_lock *l, uint32_t timeout_ms)
{
	pthread_once(&atfork_once, register_atfork);
	l->timeout_ms = timeout_ms ? timeout_ms : SHMF_CUCKOO_LOCK_TIMEOUT_DEFAULT;
	l->saved_list = NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t shmf_cuckoo_now_ns(void)
{
	return now_ns();
}

/* The calling thread's wait deadline (shmf_cuckoo_wait_deadline): read
 * only where a call would otherwise spin longer or sleep. */
static _Thread_local uint64_t thread_deadline = SHMF_CUCKOO_NO_DEADLINE;

uint64_t shmf_cuckoo_wait_deadline(uint64_t deadline_ns)
{
	uint64_t old = thread_deadline;
	thread_deadline = deadline_ns;
	return old;
}

/* Whether the thread's deadline has passed (never, without one). */
static int thread_deadline_passed(void)
{
	return thread_deadline != SHMF_CUCKOO_NO_DEADLINE && now_ns() >= thread_deadline;
}

/* Sleep while the word is @p v, until @p deadline (CLOCK_MONOTONIC ns). */
static void futex_wait_until(_Atomic uint32_t *word, uint32_t v, uint64_t deadline)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline / 1000000000u), .tv_nsec = (long)(deadline % 1000000000u) };
	(void)syscall(SYS_futex, word, FUTEX_WAIT_BITSET, v, &ts, NULL, FUTEX_BITSET_MATCH_ANY);
}

static void futex_wake_one(_Atomic uint32_t *word)
{
	(void)syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* The lock is held: spin a little, then sleep on it, until it is free or
 * its holder died, or @p deadline_ns passes. @return 0 (taken) or
 * SHMF_E_BUSY. */
static __attribute__((noinline)) int lock_wait(struct shmf_cuckoo_lockword *lw, uint64_t timeout_ns)
{
	uint32_t waiters = 0;
	uint64_t deadline = 0;
	for (unsigned spin = 0;; spin++) {
		uint32_t v = atomic_load_explicit(&lw->word, memory_order_relaxed);
		if (v == 0 || (v & FUTEX_OWNER_DIED)) {
			/* Free, or its holder died (the kernel cleared its id and
			 * set OWNER_DIED): take it, keeping the waiters bit for the
			 * others, and setting it once we slept ourselves (another
			 * sleeper may be left). acquire: pairs with the release
			 * exchange in unlock_word. */
			uint32_t want = self.tid | (v & FUTEX_WAITERS) | waiters;
			if (atomic_compare_exchange_weak_explicit(&lw->word, &v, want, memory_order_acquire,
								  memory_order_relaxed))
				return 0;
			continue;
		}
		if (spin < LOCK_SPINS) {
			/* Look less often the longer it stays held: every look
			 * takes the line from the holder, who writes it too. */
			for (unsigned i = 0; i < (1u << (spin < 6 ? spin : 6)); i++)
				__builtin_ia32_pause();
			continue;
		}
		if (deadline == 0) {
			deadline = now_ns() + timeout_ns;
			/* The thread's own deadline, if sooner (shmd's loop: now). */
			if (thread_deadline < deadline)
				deadline = thread_deadline;
		}
		if (now_ns() >= deadline)
			return SHMF_E_BUSY;
		/* Announce a sleeper, so that the unlock (or the kernel, when
		 * the holder dies) wakes one. */
		if (!(v & FUTEX_WAITERS) &&
		    !atomic_compare_exchange_weak_explicit(&lw->word, &v, v | FUTEX_WAITERS, memory_order_relaxed,
							   memory_order_relaxed))
			continue;
		waiters = FUTEX_WAITERS;
		futex_wait_until(&lw->word, v | FUTEX_WAITERS, deadline);
	}
}

/* Take the lock word within @p timeout_ns and link it into this thread's
 * robust list. The kernel reads list_op_pending if the thread dies between
 * taking the word and linking it, so the lock is never held unlisted. */
static int lock_word(const struct shmf_cuckoo_geom *g, uint64_t timeout_ns)
{
	int r = self_ready();
	if (r < 0)
		return r;
	struct shmf_cuckoo_lockword *lw = &g->meta->lock;
	struct robust_list_head *h = self.head;
	struct robust_list *node = (struct robust_list *)(void *)&lw->list_next;
	h->list_op_pending = node;
	/* Compiler barriers: the kernel reads the list after this thread
	 * stopped, so program order is all the order it needs. */
	atomic_signal_fence(memory_order_seq_cst);
	uint32_t v = 0;
	/* acquire: pairs with the release exchange in unlock_word. */
	if (__builtin_expect(!atomic_compare_exchange_strong_explicit(&lw->word, &v, self.tid, memory_order_acquire,
								      memory_order_relaxed),
			     0) &&
	    (r = lock_wait(lw, timeout_ns)) < 0) {
		atomic_signal_fence(memory_order_seq_cst);
		h->list_op_pending = NULL;
		return r;
	}
	/* In front of the list: the library takes other robust locks while
	 * it holds this one only as a growing filter's capped add does (the
	 * oldest layer's, then a newer layer's for a relocation), and lets
	 * them go in the reverse order, so the unlock finds it in front
	 * again. */
	g->lock->saved_list = h->list.next;
	lw->list_next = (uint64_t)(uintptr_t)h->list.next;
	atomic_signal_fence(memory_order_seq_cst);
	h->list.next = node;
	atomic_signal_fence(memory_order_seq_cst);
	h->list_op_pending = NULL;
	return 0;
}

static void unlock_word(const struct shmf_cuckoo_geom *g)
{
	struct shmf_cuckoo_lockword *lw = &g->meta->lock;
	struct robust_list_head *h = self.head;
	struct robust_list *node = (struct robust_list *)(void *)&lw->list_next;
	h->list_op_pending = node;
	atomic_signal_fence(memory_order_seq_cst);
	/* The link to restore comes from private memory, never from the
	 * shared one. */
	if (h->list.next == node)
		h->list.next = g->lock->saved_list;
	atomic_signal_fence(memory_order_seq_cst);
	/* release: pairs with the acquiring CAS of the next holder. */
	uint32_t v = atomic_exchange_explicit(&lw->word, 0, memory_order_release);
	if (v & FUTEX_WAITERS)
		futex_wake_one(&lw->word);
	atomic_signal_fence(memory_order_seq_cst);
	h->list_op_pending = NULL;
}

/* Close the version window of a holder that died mid-move: its stripes
 * are odd, and nobody else can be moving now. The fingerprint it was
 * moving is in its old bucket, its new one, or both: never lost. */
static void repair_locked(const struct shmf_cuckoo_geom *g)
{
	uint64_t moving = atomic_load_explicit(&g->meta->moving, memory_order_relaxed);
	if (moving == 0)
		return;
	uint64_t s[2] = { (moving & 0xffffffffu) - 1, (moving >> 32) - 1 };
	for (int j = 0; j < 2; j++) {
		if (s[j] >= SHMF_CUCKOO_STRIPES)
			continue;
		_Atomic uint64_t *v = &g->meta->version[s[j]];
		uint64_t x = atomic_load_explicit(v, memory_order_relaxed);
		if (x & 1)
			atomic_store_explicit(v, x + 1, memory_order_release);
	}
	atomic_store_explicit(&g->meta->moving, 0, memory_order_relaxed);
}

int shmf_cuckoo_lock(const struct shmf_cuckoo_geom *g)
{
	int r = lock_word(g, (uint64_t)g->lock->timeout_ms * 1000000u);
	if (r == 0)
		repair_locked(g);
	return r;
}

void shmf_cuckoo_unlock(const struct shmf_cuckoo_geom *g)
{
	unlock_word(g);
}

int shmf_cuckoo_lock_held(const struct shmf_cuckoo_meta *m)
{
	uint32_t v = atomic_load_explicit(&((struct shmf_cuckoo_meta *)m)->lock.word, memory_order_relaxed);
	return (v & FUTEX_TID_MASK) != 0;
}

/* ---- Reads ------------------------------------------------------------- */

/*
 * One read that a single move in progress cannot fool, whatever the parity
 * of the versions: bucket i1, then i2, then i1 again, between two reads of
 * both versions that must agree (no window opened or closed meanwhile, so
 * at most the one move whose window was open throughout touched them). A
 * move copies before it clears: if the reader missed the fingerprint in
 * the first i1 because it was still in i2, and in i2 because it had left,
 * then it had arrived in i1 before the second look (and the other way
 * round, i2 holds it after it left i1). The larger of the two counts: it
 * counts a fingerprint twice only while it is in both buckets.
 * @return 1 and *n, or 0 if a window opened or closed meanwhile (*n is
 * the count anyway).
 */
static int count_stable(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k, unsigned *n)
{
	_Atomic uint64_t *s1 = shmf_cuckoo_stripe(g, k->i1), *s2 = shmf_cuckoo_stripe(g, k->i2);
	/* acquire: pairs with the releases that open and close windows. */
	uint64_t v1 = atomic_load_explicit(s1, memory_order_acquire);
	uint64_t v2 = atomic_load_explicit(s2, memory_order_acquire);
	/* acquire, each: the three loads happen in this order, and one that
	 * sees a move's clear sees its copy (the CASes are seq_cst). */
	struct shmf_cuckoo_lanes L = g->lanes;
	uint64_t a = shmf_cuckoo_word_load(g, L, k->i1, memory_order_acquire);
	SHMF_TEST_HOOK(shmf_cuckoo_read_hook);
	uint64_t b = k->i2 != k->i1 ? shmf_cuckoo_word_load(g, L, k->i2, memory_order_acquire) : 0;
	SHMF_TEST_HOOK(shmf_cuckoo_read_hook);
	uint64_t a2 = shmf_cuckoo_word_load(g, L, k->i1, memory_order_acquire);
	atomic_thread_fence(memory_order_acquire);
	int valid = atomic_load_explicit(s1, memory_order_relaxed) == v1 &&
		    atomic_load_explicit(s2, memory_order_relaxed) == v2;
	unsigned nb = shmf_cuckoo_lanes_count(L, shmf_cuckoo_lanes_equal(L, b, k->fp));
	unsigned n1 = shmf_cuckoo_lanes_count(L, shmf_cuckoo_lanes_equal(L, a, k->fp)) + nb;
	unsigned n2 = shmf_cuckoo_lanes_count(L, shmf_cuckoo_lanes_equal(L, a2, k->fp)) + nb;
	*n = n1 > n2 ? n1 : n2;
	return valid;
}

/* Back off after @p t failed tries: spin, then yield, then sleep. */
static void backoff(unsigned t)
{
	if (t < 16) {
		for (unsigned i = 0; i < (1u << (t / 2)); i++)
			__builtin_ia32_pause();
	} else if (t < 48) {
		sched_yield();
	} else {
		struct timespec ts = { .tv_sec = 0, .tv_nsec = 20000 };
		nanosleep(&ts, NULL);
	}
}

int shmf_cuckoo_count(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k)
{
	for (unsigned t = 0; t < FAST_TRIES; t++) {
		int n = shmf_cuckoo_count_try(g, k);
		if (n >= 0)
			return n;
		__builtin_ia32_pause();
	}
	/* Moves keep racing us, or a mover is stopped or died with its window
	 * open: read in a way one move in progress cannot fool. Moves do not
	 * open windows on the same two stripes back to back for long, so this
	 * soon succeeds; only a writer scribbling the versions could keep it
	 * from it, and gets the unchecked count after STABLE_TRIES. */
	unsigned n = 0;
	for (unsigned t = 0; t < STABLE_TRIES; t++) {
		if (count_stable(g, k, &n))
			break;
		/* A thread that may not wait that long (shmd's loop) hands
		 * the read to one that may. */
		if (thread_deadline_passed())
			return SHMF_E_BUSY;
		backoff(t);
	}
	return (int)n;
}

/* ---- Relocation (writer lock held) ------------------------------------ */

struct kick {
	uint64_t from, to;
	unsigned lane;
	uint32_t fp;
};

static void window_open_locked(const struct shmf_cuckoo_geom *g, uint64_t a, uint64_t b)
{
	_Atomic uint64_t *sa = shmf_cuckoo_stripe(g, a), *sb = shmf_cuckoo_stripe(g, b);
	atomic_store_explicit(&g->meta->moving, (a % SHMF_CUCKOO_STRIPES + 1) | (b % SHMF_CUCKOO_STRIPES + 1) << 32,
			      memory_order_relaxed);
	atomic_store_explicit(sa, atomic_load_explicit(sa, memory_order_relaxed) + 1, memory_order_relaxed);
	if (sb != sa)
		atomic_store_explicit(sb, atomic_load_explicit(sb, memory_order_relaxed) + 1, memory_order_relaxed);
	/* release fence: the odd versions are visible before any bucket
	 * write of the move (seqlock write side). */
	atomic_thread_fence(memory_order_release);
}

static void window_close_locked(const struct shmf_cuckoo_geom *g, uint64_t a, uint64_t b)
{
	_Atomic uint64_t *sa = shmf_cuckoo_stripe(g, a), *sb = shmf_cuckoo_stripe(g, b);
	/* release: pairs with the readers' acquire loads of the version. */
	atomic_store_explicit(sa, atomic_load_explicit(sa, memory_order_relaxed) + 1, memory_order_release);
	if (sb != sa)
		atomic_store_explicit(sb, atomic_load_explicit(sb, memory_order_relaxed) + 1, memory_order_release);
	atomic_store_explicit(&g->meta->moving, 0, memory_order_relaxed);
	/* Only the lock holder writes it: no read-modify-write needed. */
	atomic_store_explicit(&g->meta->moves, atomic_load_explicit(&g->meta->moves, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* ---- The snapshot log (lock held) -------------------------------------- */

/* How long a lock holder waits for room in the snapshot log before it
 * cancels the copy (the copier drains it every COPY_PIECE bytes, so only
 * a copier that stopped or died makes anyone wait that long). */
#define COW_WAIT_NS (5 * 1000000u)

/* Wait for room for @p n entries after @p head. @return 1, or 0 if the
 * copier did not make room in time (or the log's counters are not
 * plausible). */
static int cow_room_locked(struct shmf_cuckoo_cow *c, uint64_t head, unsigned n)
{
	uint64_t deadline = 0;
	for (unsigned t = 0;; t++) {
		/* acquire: pairs with the copier's release store of tail, after
		 * it read the entries we are about to reuse. */
		uint64_t used = head - atomic_load_explicit(&c->tail, memory_order_acquire);
		if (used > SHMF_CUCKOO_COW_ENTRIES)
			return 0;
		if (used + n <= SHMF_CUCKOO_COW_ENTRIES)
			return 1;
		if (t < 64) {
			__builtin_ia32_pause();
			continue;
		}
		uint64_t now = now_ns();
		if (deadline == 0)
			deadline = now + COW_WAIT_NS;
		else if (now >= deadline)
			return 0;
		sched_yield();
	}
}

/* While a snapshot copies the table, log the words of buckets @p a and
 * @p b before a move changes them (shmf_cuckoo_copy), those the copy has
 * not passed yet. A copier that makes no room in time loses its copy, not
 * the writer its time. */
static void cow_log_locked(const struct shmf_cuckoo_geom *g, uint64_t a, uint64_t b)
{
	struct shmf_cuckoo_cow *c = g->cow;
	if (c == NULL || atomic_load_explicit(&c->active, memory_order_relaxed) == 0)
		return;
	/* acquire: pairs with the copier's release store after it read the
	 * buckets below: those reads come before our writes to them. */
	uint64_t copied = atomic_load_explicit(&c->copied, memory_order_acquire);
	uint64_t at[2];
	unsigned n = 0;
	if (a >= copied)
		at[n++] = a;
	if (b >= copied && b != a)
		at[n++] = b;
	if (n == 0)
		return;
	uint64_t head = atomic_load_explicit(&c->head, memory_order_relaxed);
	if (!cow_room_locked(c, head, n)) {
		atomic_store_explicit(&c->active, 0, memory_order_relaxed);
		return;
	}
	for (unsigned j = 0; j < n; j++) {
		struct shmf_cuckoo_cow_entry *e = &c->entry[(head + j) % SHMF_CUCKOO_COW_ENTRIES];
		atomic_store_explicit(&e->bucket, at[j], memory_order_relaxed);
		atomic_store_explicit(&e->word, shmf_cuckoo_bucket_load(g, at[j]), memory_order_relaxed);
	}
	/* release: the entries are visible before the copier sees head. */
	atomic_store_explicit(&c->head, head + n, memory_order_release);
}

/* Move one fingerprint to its other bucket: copy first, then clear the
 * old slot, so at every instant it is in at least one of its buckets.
 * @return 1 moved; 0 if the new bucket had no room or the old copy was
 * deleted meanwhile (then the copy is taken back and nothing changed). */
static int move_locked(const struct shmf_cuckoo_geom *g, const struct kick *m)
{
	uint32_t w = g->fp_bits;
	int moved = 0;
	cow_log_locked(g, m->from, m->to);
	window_open_locked(g, m->from, m->to);
	if (place(g, m->to, m->fp)) {
		SHMF_TEST_HOOK(shmf_cuckoo_move_hook);
		uint64_t b = shmf_cuckoo_bucket_load(g, m->from);
		for (;;) {
			if (slot_value(b, m->lane, w) != m->fp) {
				/* A delete took the old copy: the delete counts,
				 * so the new copy goes too. */
				unplace(g, m->to, m->fp);
				break;
			}
			if (bucket_cas(g, g->lanes, m->from, &b, b & ~lane_mask(m->lane, w))) {
				moved = 1;
				break;
			}
		}
	}
	window_close_locked(g, m->from, m->to);
	return moved;
}

static inline uint64_t next_random(uint64_t *state)
{
	*state += UINT64_C(0x9e3779b97f4a7c15);
	return shmf_mix64(*state);
}

/* Find a chain of moves from bucket @p b (i1 or i2) that frees a slot
 * there (a random walk of at most max_kicks buckets, nothing changed while
 * looking), then carry it out from its far end. @return 1 placed, 0 no
 * path, -1 path spoilt by a concurrent writer (try again). */
static int relocate_locked(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k, uint64_t b, uint64_t *rng,
			   struct kick *path)
{
	uint32_t w = g->fp_bits, slots = g->slots;
	unsigned len = 0;

	for (;;) {
		if (len == g->max_kicks)
			return 0;
		uint64_t word = shmf_cuckoo_bucket_load(g, b);
		if (shmf_cuckoo_lanes_equal(g->lanes, word, 0) != 0)
			break; /* a slot came free here meanwhile */
		/* Look one step ahead: a fingerprint whose other bucket has room
		 * ends the path here (at 70% load one of a bucket of four nearly
		 * always does); else a random one moves on. slots is a power of
		 * two. */
		unsigned first = (unsigned)(next_random(rng) & (slots - 1)), lane = first;
		uint64_t to[SHMF_CUCKOO_SLOTS_MAX] = { 0 };
		for (unsigned j = 0; j < slots; j++) {
			to[j] = shmf_cuckoo_alt(g, b, slot_value(word, j, w));
			__builtin_prefetch((const char *)g->buckets + to[j] * g->lanes.bytes);
		}
		int room = 0;
		for (unsigned j = 0; j < slots && !room; j++) {
			lane = (first + j) & (slots - 1);
			room = shmf_cuckoo_lanes_equal(g->lanes, shmf_cuckoo_bucket_load(g, to[lane]), 0) != 0;
		}
		if (!room)
			lane = first;
		path[len++] = (struct kick){ b, to[lane], lane, slot_value(word, lane, w) };
		if (room)
			break;
		b = to[lane];
	}
	while (len > 0)
		if (!move_locked(g, &path[--len]))
			return -1;
	return place(g, k->i1, k->fp) || place(g, k->i2, k->fp) ? 1 : -1;
}

static int add_locked(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k)
{
	/* A path of max_kicks moves: on the stack up to KICKS_STACK (24 KiB),
	 * on the heap for the longer bounds RedisBloom allows. */
	struct kick stack[SHMF_CUCKOO_KICKS_STACK], *path = stack;
	uint64_t rng = k->i1 ^ ((uint64_t)k->fp << 40);
	int r = SHMF_E_FULL;

	if (g->max_kicks > SHMF_CUCKOO_KICKS_LIMIT)
		return SHMF_E_INVAL;
	if (g->max_kicks > SHMF_CUCKOO_KICKS_STACK && (path = malloc(g->max_kicks * sizeof(*path))) == NULL)
		return -ENOMEM;
	/* A walk from one of the key's buckets, and if it finds no path, one
	 * from the other: with buckets of 1 the walk has no choice to make, and
	 * a chain that runs into a cycle from one bucket may end in a free
	 * slot from the other (what the classic insertion finds when the key
	 * it placed is kicked back out). */
	for (int t = 0; t < PATH_TRIES; t++) {
		if (place_balanced(g, k)) {
			r = 0;
			break;
		}
		uint64_t first = (next_random(&rng) & 1) ? k->i2 : k->i1;
		int moved = relocate_locked(g, k, first, &rng, path);
		if (moved == 0 && k->i2 != k->i1)
			moved = relocate_locked(g, k, first == k->i1 ? k->i2 : k->i1, &rng, path);
		if (moved >= 0) {
			r = moved == 1 ? 0 : SHMF_E_FULL;
			break;
		}
	}
	if (path != stack)
		free(path);
	return r;
}

/* ---- Writes ------------------------------------------------------------ */

int shmf_cuckoo_add(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k)
{
	/* The lock-free add, on a path of its own for buckets of 4 (lanes
	 * folded into the code, as in shmf_cuckoo_count_try). */
	int placed;
	if (__builtin_expect(g->layout == SHMF_CUCKOO_LAYOUT(4, 16), 1))
		placed = place_balanced_as(g, shmf_cuckoo_lanes_of(4, 16), k);
	else if (g->layout == SHMF_CUCKOO_LAYOUT(4, 8))
		placed = place_balanced_as(g, shmf_cuckoo_lanes_of(4, 8), k);
	else
		placed = place_balanced(g, k);
	if (placed)
		return 0;
	int r = shmf_cuckoo_lock(g);
	if (r < 0)
		return r;
	r = add_locked(g, k);
	shmf_cuckoo_unlock(g);
	return r;
}

int shmf_cuckoo_add_held(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k)
{
	return add_locked(g, k);
}

int shmf_cuckoo_add_capped(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k, unsigned cap)
{
	int r = shmf_cuckoo_lock(g);
	if (r < 0)
		return r;
	/* No move can run while we hold the lock: a plain read is consistent. */
	int before = (int)shmf_cuckoo_copies(g, k);
	if ((unsigned)before < cap && (r = add_locked(g, k)) < 0)
		before = r;
	shmf_cuckoo_unlock(g);
	return before;
}

int shmf_cuckoo_del(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k)
{
	struct shmf_cuckoo_seen seen;
	for (int t = 0; t < READ_TRIES; t++) {
		if (!shmf_cuckoo_read_begin(g, k, &seen)) {
			__builtin_ia32_pause();
			continue;
		}
		if (unplace(g, k->i1, k->fp) || (k->i2 != k->i1 && unplace(g, k->i2, k->fp)))
			return 1;
		/* Not found: true only if no move ran while we looked. */
		if (shmf_cuckoo_read_valid(g, k, &seen))
			return 0;
	}
	int r = shmf_cuckoo_lock(g);
	if (r < 0)
		return r;
	r = unplace(g, k->i1, k->fp) || unplace(g, k->i2, k->fp);
	shmf_cuckoo_unlock(g);
	return r;
}

/* ---- A consistent copy while writers go on ----------------------------- */

/* Bytes copied between two looks at the snapshot log: a lock holder waits
 * for room at most about as long as copying this takes. */
#define COPY_PIECE (32u * 1024u)
/* Pre-images kept at most (16 bytes each): a copy that writers outrun for
 * that long fails with -ENOMEM rather than take the memory. */
#define COPY_LOG_MAX (UINT64_C(1) << 26)

struct pre_image {
	uint64_t bucket, word;
};

/* Store bucket word @p word, @p width bytes wide, at @p at as the table
 * holds it (in the host's byte order). */
static void put_word(char *at, uint64_t word, uint32_t width)
{
	uint64_t w64 = word;
	uint32_t w32 = (uint32_t)word;
	uint16_t w16 = (uint16_t)word;
	uint8_t w8 = (uint8_t)word;
	switch (width) {
	case 8: memcpy(at, &w64, 8); break;
	case 4: memcpy(at, &w32, 4); break;
	case 2: memcpy(at, &w16, 2); break;
	default: memcpy(at, &w8, 1); break;
	}
}

/* In chunks, never moved once written: a drain that copied a growing array
 * would keep lock holders waiting for room while it did. */
#define CHUNK_ENTRIES (UINT64_C(1) << 16)

struct pre_images {
	struct pre_image *chunk[COPY_LOG_MAX / CHUNK_ENTRIES];
	uint64_t n;
};

static struct pre_image *pre_image_at(struct pre_images *log, uint64_t i)
{
	return &log->chunk[i / CHUNK_ENTRIES][i % CHUNK_ENTRIES];
}

/* Take what the lock holders logged. @return 0, SHMF_E_FORMAT (the log's
 * counters or a bucket number are not plausible: overwritten), -ENOMEM. */
static int drain(const struct shmf_cuckoo_geom *g, struct pre_images *log)
{
	struct shmf_cuckoo_cow *c = g->cow;
	/* acquire: pairs with the lock holder's release store of head. */
	uint64_t head = atomic_load_explicit(&c->head, memory_order_acquire);
	uint64_t tail = atomic_load_explicit(&c->tail, memory_order_relaxed);
	if (head - tail > SHMF_CUCKOO_COW_ENTRIES)
		return SHMF_E_FORMAT;
	for (; tail != head; tail++) {
		if (log->n % CHUNK_ENTRIES == 0) {
			if (log->n == COPY_LOG_MAX || (log->chunk[log->n / CHUNK_ENTRIES] = malloc(
							       CHUNK_ENTRIES * sizeof(struct pre_image))) == NULL)
				return -ENOMEM;
		}
		const struct shmf_cuckoo_cow_entry *e = &c->entry[tail % SHMF_CUCKOO_COW_ENTRIES];
		struct pre_image *p = pre_image_at(log, log->n++);
		p->bucket = atomic_load_explicit(&e->bucket, memory_order_relaxed);
		p->word = atomic_load_explicit(&e->word, memory_order_relaxed);
		if (p->bucket >= g->nbuckets)
			return SHMF_E_FORMAT;
	}
	/* release: we read the entries before a lock holder may reuse them. */
	atomic_store_explicit(&c->tail, tail, memory_order_release);
	return 0;
}

/* Take the lock within the lock's timeout while draining the log: a
 * holder may be waiting for room in it. */
static int lock_draining(const struct shmf_cuckoo_geom *g, struct pre_images *log)
{
	uint64_t deadline = now_ns() + (uint64_t)g->lock->timeout_ms * 1000000u;
	for (;;) {
		int r = drain(g, log);
		if (r < 0)
			return r;
		if ((r = lock_word(g, 200000)) != SHMF_E_BUSY)
			return r;
		if (now_ns() >= deadline)
			return SHMF_E_BUSY;
	}
}

int shmf_cuckoo_copy(const struct shmf_cuckoo_geom *g, void *dst, uint64_t bytes)
{
	static _Atomic uint32_t sessions;
	const uint64_t meta_bytes = sizeof(struct shmf_cuckoo_meta);
	uint64_t width = g->lanes.bytes;
	if (g->cow == NULL || bytes < meta_bytes + g->nbuckets * width)
		return SHMF_E_INVAL;
	struct shmf_cuckoo_cow *c = g->cow;
	uint64_t session = (uint64_t)getpid() << 32 | (atomic_fetch_add(&sessions, 1) + 1);
	struct pre_images log = { 0 }; /* 8 KiB of chunk pointers */

	/* Under the lock: no move is open (what a dead holder left is
	 * repaired), so the relocation state is copied as it is, the lock
	 * word aside; from now on every move logs what it changes. */
	int r = shmf_cuckoo_lock(g);
	if (r < 0)
		return r;
	struct shmf_cuckoo_meta *m = dst;
	memcpy(m, g->meta, meta_bytes);
	memset(&m->lock, 0, sizeof(m->lock));
	atomic_store_explicit(&c->tail, atomic_load_explicit(&c->head, memory_order_relaxed), memory_order_relaxed);
	atomic_store_explicit(&c->copied, 0, memory_order_relaxed);
	atomic_store_explicit(&c->active, session, memory_order_relaxed);
	shmf_cuckoo_unlock(g);

	/* The buckets, without the lock. A bucket that no move touched before
	 * it was read changed only by adds and deletes; the others are put back
	 * below, each as it was before the first move that touched it (moves
	 * after it was read need no log: it is copied). A torn read of a word
	 * (memcpy) mixes old and new only in lanes that changed meanwhile: a
	 * lock-free add or delete, or a move, logged. */
	const char *src = (const char *)g->meta + meta_bytes;
	char *out = (char *)dst + meta_bytes;
	uint64_t table = bytes - meta_bytes;
	for (uint64_t off = 0; off < table && r == 0; off += COPY_PIECE) {
		uint64_t len = table - off < COPY_PIECE ? table - off : COPY_PIECE;
		memcpy(out + off, src + off, len);
		/* release: the reads above come before any move that sees this
		 * and changes a bucket below without logging it. */
		atomic_store_explicit(&c->copied, (off + len) / width, memory_order_release);
		SHMF_TEST_HOOK(shmf_cuckoo_copy_hook);
		r = drain(g, &log);
	}

	/* Stop the logging under the lock: every move until now is logged. */
	int lr = lock_draining(g, &log);
	if (lr == 0) {
		if (r == 0)
			r = drain(g, &log);
		if (atomic_load_explicit(&c->active, memory_order_relaxed) != session && r == 0)
			r = -EAGAIN; /* a writer cancelled the copy */
		atomic_store_explicit(&c->active, 0, memory_order_relaxed);
		shmf_cuckoo_unlock(g);
	} else {
		/* Without the lock: harmless to the movers, who only stop logging. */
		atomic_store_explicit(&c->active, 0, memory_order_relaxed);
		if (r == 0)
			r = lr;
	}

	/* Each touched bucket as it was before the first move that touched
	 * it: the log is in time order, so the earliest entry is put last. */
	for (uint64_t i = log.n; r == 0 && i-- > 0;) {
		const struct pre_image *p = pre_image_at(&log, i);
		put_word(out + p->bucket * width, p->word, (uint32_t)width);
	}
	for (uint64_t i = 0; i < (log.n + CHUNK_ENTRIES - 1) / CHUNK_ENTRIES; i++)
		free(log.chunk[i]);
	return r;
}
