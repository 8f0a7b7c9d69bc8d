/* cuckoo.c - the cuckoo filter's operations on shared buckets (cuckoo.h). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#include "cuckoo.h"

/* Test builds (SHMF_TEST_HOOKS) can stall a reader between its two bucket
 * loads and a relocation between its copy and its clear (cuckoo.h), to
 * widen the windows in which a move could fool a reader or be caught by
 * a kill; other builds have neither the hooks nor a branch on them. */
#ifdef SHMF_TEST_HOOKS
void (*shmf_cuckoo_read_hook)(void);
void (*shmf_cuckoo_move_hook)(void);
#endif

/* Reads that race a move this many times fall back to a locked read. */
#define READ_TRIES 64
/* Relocation paths that a concurrent writer spoilt before we could use
 * them: after this many the filter is, for this caller, full. */
#define PATH_TRIES 32

/* ---- Sizing ------------------------------------------------------------ */

double shmf_cuckoo_fpr(uint64_t items, uint64_t nbuckets, uint32_t fp_bits)
{
	if (nbuckets == 0 || fp_bits == 0)
		return 1.0;
	double load = (double)items / (double)(nbuckets * SHMF_CUCKOO_SLOTS);
	if (load > 1.0)
		load = 1.0;
	double values = ldexp(1.0, (int)fp_bits) - 1.0;
	return -expm1(2.0 * SHMF_CUCKOO_SLOTS * load * log1p(-1.0 / values));
}

int shmf_cuckoo_size(uint64_t capacity, double fpr, int headroom, struct shmf_cuckoo_params *out)
{
	if (capacity == 0 || !(fpr > 0.0 && fpr < 1.0))
		return SHMF_E_INVAL;
	double buckets = ceil((double)capacity / (SHMF_CUCKOO_SLOTS * SHMF_CUCKOO_LOAD));
	if (headroom)
		buckets += ceil(sqrt((double)capacity));
	if (buckets * 8 > (double)SHMF_DATA_MAX_BYTES)
		return SHMF_E_TOOBIG;
	uint64_t nb = (uint64_t)buckets;
	uint32_t bits;
	if (shmf_cuckoo_fpr(capacity, nb, 8) <= fpr)
		bits = 8;
	else if (shmf_cuckoo_fpr(capacity, nb, 16) <= fpr)
		bits = 16;
	else
		return SHMF_E_INVAL;
	out->fp_bits = bits;
	out->nbuckets = nb;
	out->table_bytes = shmf_cuckoo_table_bytes(nb, bits);
	return 0;
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

/* seq_cst CAS: on failure *expect holds the word seen. */
static inline int bucket_cas(const struct shmf_cuckoo_geom *g, uint64_t i, uint64_t *expect, uint64_t desired)
{
	if (g->fp_bits == 16)
		return atomic_compare_exchange_strong((_Atomic uint64_t *)g->buckets + i, expect, desired);
	uint32_t e = (uint32_t)*expect;
	int ok = atomic_compare_exchange_strong((_Atomic uint32_t *)g->buckets + i, &e, (uint32_t)desired);
	*expect = e;
	return ok;
}

/* Put @p fp in a free slot of bucket @p i. @return 1 placed, 0 full. */
static int place(const struct shmf_cuckoo_geom *g, uint64_t i, uint32_t fp)
{
	uint64_t b = shmf_cuckoo_bucket_load(g, i);
	for (;;) {
		uint64_t empty = shmf_cuckoo_lanes_equal(b, 0, g->fp_bits);
		if (empty == 0)
			return 0;
		unsigned lane = lane_of(empty, g->fp_bits);
		if (bucket_cas(g, i, &b, b | ((uint64_t)fp << (lane * g->fp_bits))))
			return 1;
	}
}

/* Clear one slot of bucket @p i that holds @p fp. @return 1 or 0. */
static int unplace(const struct shmf_cuckoo_geom *g, uint64_t i, uint32_t fp)
{
	uint64_t b = shmf_cuckoo_bucket_load(g, i);
	for (;;) {
		uint64_t m = shmf_cuckoo_lanes_equal(b, fp, g->fp_bits);
		if (m == 0)
			return 0;
		if (bucket_cas(g, i, &b, b & ~lane_mask(lane_of(m, g->fp_bits), g->fp_bits)))
			return 1;
	}
}

/* Place in the emptier of the two buckets (the power of two choices: at
 * 75% load this halves how often both are full and an insert needs the
 * relocation lock, compared with trying i1 first). */
static int place_balanced(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k)
{
	uint32_t w = g->fp_bits;
	unsigned e1 = shmf_cuckoo_lanes_count(shmf_cuckoo_lanes_equal(shmf_cuckoo_bucket_load(g, k->i1), 0, w), w);
	unsigned e2 = shmf_cuckoo_lanes_count(shmf_cuckoo_lanes_equal(shmf_cuckoo_bucket_load(g, k->i2), 0, w), w);
	if (e2 > e1)
		return place(g, k->i2, k->fp) || place(g, k->i1, k->fp);
	return place(g, k->i1, k->fp) || place(g, k->i2, k->fp);
}

/* ---- The writer lock --------------------------------------------------- */

static int ofd(int fd, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
	while (fcntl(fd, F_OFD_SETLKW, &fl) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* Bumped in the child of every fork(): a lock whose descriptor is from an
 * older generation shares its open file description with the parent. */
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

void shmf_cuckoo_lock_init(struct shmf_cuckoo_lock *l, int file_fd)
{
	pthread_once(&atfork_once, register_atfork);
	l->file_fd = file_fd;
	l->fd = file_fd;
	l->generation = atomic_load_explicit(&fork_generation, memory_order_relaxed);
	pthread_mutex_init(&l->mutex, NULL);
}

void shmf_cuckoo_lock_fini(struct shmf_cuckoo_lock *l)
{
	if (l->fd != l->file_fd)
		close(l->fd);
	pthread_mutex_destroy(&l->mutex);
}

/* After a fork, open the data file again (through /proc/self/fd, which
 * works for an unlinked file too) for a description of our own. */
static int own_fd_locked(struct shmf_cuckoo_lock *l)
{
	unsigned gen = atomic_load_explicit(&fork_generation, memory_order_relaxed);
	if (l->generation != gen) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/fd/%d", l->file_fd);
		int mode = (fcntl(l->file_fd, F_GETFL) & O_ACCMODE) == O_RDWR ? O_RDWR : O_RDONLY;
		int fd = open(path, mode | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (l->fd != l->file_fd)
			close(l->fd);
		l->fd = fd;
		l->generation = gen;
	}
	return l->fd;
}

/* Take the OFD lock in @p type mode (F_WRLCK or F_RDLCK), after this
 * process's other threads. */
static int lock_as(const struct shmf_cuckoo_geom *g, short type)
{
	struct shmf_cuckoo_lock *l = g->lock;
	pthread_mutex_lock(&l->mutex);
	int fd = own_fd_locked(l);
	int r = fd < 0 ? fd : ofd(fd, type);
	if (r < 0)
		pthread_mutex_unlock(&l->mutex);
	return r;
}

static void unlock_any(const struct shmf_cuckoo_geom *g)
{
	(void)ofd(g->lock->fd, F_UNLCK);
	pthread_mutex_unlock(&g->lock->mutex);
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
	int r = lock_as(g, F_WRLCK);
	if (r == 0)
		repair_locked(g);
	return r;
}

void shmf_cuckoo_unlock(const struct shmf_cuckoo_geom *g)
{
	unlock_any(g);
}

/* ---- Reads ------------------------------------------------------------- */

int shmf_cuckoo_count(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k)
{
	for (int t = 0; t < READ_TRIES; t++) {
		int n = shmf_cuckoo_count_try(g, k);
		if (n >= 0)
			return n;
		__builtin_ia32_pause();
	}
	/* A move keeps racing us (or its mover died with the window open):
	 * read under the lock in shared mode, when no move can run. */
	int r = lock_as(g, F_RDLCK);
	if (r < 0)
		return r;
	unsigned n = shmf_cuckoo_copies(g, k);
	unlock_any(g);
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
	atomic_fetch_add_explicit(&g->meta->moves, 1, memory_order_relaxed);
}

/* Move one fingerprint to its other bucket: copy first, then clear the
 * old slot, so at every instant it is in at least one of its buckets.
 * @return 1 moved; 0 if the new bucket had no room or the old copy was
 * deleted meanwhile (then the copy is taken back and nothing changed). */
static int move_locked(const struct shmf_cuckoo_geom *g, const struct kick *m)
{
	uint32_t w = g->fp_bits;
	int moved = 0;
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
			if (bucket_cas(g, m->from, &b, b & ~lane_mask(m->lane, w))) {
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

/* Find a chain of moves that frees a slot in i1 or i2 (a random walk of at
 * most max_kicks buckets, nothing changed while looking), then carry it
 * out from its far end. @return 1 placed, 0 no path, -1 path spoilt by a
 * concurrent writer (try again). */
static int relocate_locked(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k, uint64_t *rng,
			   struct kick *path)
{
	uint32_t w = g->fp_bits;
	uint64_t b = (next_random(rng) & 1) ? k->i2 : k->i1;
	unsigned len = 0;

	for (;;) {
		if (len == g->max_kicks)
			return 0;
		uint64_t word = shmf_cuckoo_bucket_load(g, b);
		if (shmf_cuckoo_lanes_equal(word, 0, w) != 0)
			break; /* a slot came free here meanwhile */
		unsigned lane = (unsigned)(next_random(rng) % SHMF_CUCKOO_SLOTS);
		uint32_t fp = slot_value(word, lane, w);
		uint64_t to = shmf_cuckoo_alt(g, b, fp);
		path[len++] = (struct kick){ b, to, lane, fp };
		if (shmf_cuckoo_lanes_equal(shmf_cuckoo_bucket_load(g, to), 0, w) != 0)
			break;
		b = to;
	}
	while (len > 0)
		if (!move_locked(g, &path[--len]))
			return -1;
	return place(g, k->i1, k->fp) || place(g, k->i2, k->fp) ? 1 : -1;
}

static int add_locked(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k)
{
	struct kick path[SHMF_CUCKOO_KICKS_LIMIT];
	uint64_t rng = k->i1 ^ ((uint64_t)k->fp << 40);

	if (g->max_kicks > SHMF_CUCKOO_KICKS_LIMIT)
		return SHMF_E_INVAL;
	for (int t = 0; t < PATH_TRIES; t++) {
		if (place_balanced(g, k))
			return 0;
		int r = relocate_locked(g, k, &rng, path);
		if (r >= 0)
			return r == 1 ? 0 : SHMF_E_FULL;
	}
	return SHMF_E_FULL;
}

/* ---- Writes ------------------------------------------------------------ */

int shmf_cuckoo_add(const struct shmf_cuckoo_geom *g, const struct shmf_cuckoo_key *k)
{
	if (place_balanced(g, k))
		return 0;
	int r = shmf_cuckoo_lock(g);
	if (r < 0)
		return r;
	r = add_locked(g, k);
	shmf_cuckoo_unlock(g);
	return r;
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
