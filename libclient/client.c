/*
 * client.c - the libshmf handle: open, the hot path, generation changes.
 *
 * A handle holds the instance directory, the read-only control mapping and
 * the current data mapping ("view"). Every call loads the slot's published
 * generation once and compares it with the view's; on a mismatch it takes
 * the slow path, maps the new generation and retires the old view after a
 * liburcu-bp grace period (threads of one process may share a handle).
 *
 * A read-write handle on a replicated filter also journals (journal.h)
 * every add that changed the filter: its view then has a journal writer,
 * and the add path's only extra cost on other filters is the test of that
 * NULL pointer. The check path never looks at it.
 *
 * A growing filter (docs/design.md, "Layers") is a ring of layers of
 * growing shapes: the view's p[0] is the current layer, where adds go,
 * older layers follow, and a standby layer shmd made ahead, if any, is the
 * last part, looked at by checks only once an adder opened it. A filter
 * with one layer and no standby checks with exactly the code of a plain
 * filter; adds to a growing filter take an out-of-line path that picks
 * the layer and counts its fill from the item counter's return value.
 */
/* liburcu-bp's read side: reader.h (inlined, the thread's reader looked
 * up once a call; out of line in sanitizer builds). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libclient/bloom.h"
#include "libclient/cuckoo.h"
#include "libclient/fuse.h"
#include "libclient/journal.h"
#include "libclient/layers.h"
#include "libclient/reader.h"
#include "libclient/redisbloom.h"
#include "libclient/rundir.h"
#include "libclient/segment.h"
#include <shmf.h>

/* ThreadSanitizer builds only: liburcu is not instrumented, so tell the
 * sanitizer what a grace period means. A thread leaving its read-side
 * section releases; the remapper acquires after synchronize_rcu(), before
 * it frees the old view: what readers did with it happens before the free. */
#if defined(__SANITIZE_THREAD__)
#define SHMF_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHMF_TSAN 1
#endif
#endif
#ifdef SHMF_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
static char tsan_grace;
#define GRACE_RELEASE() __tsan_release(&tsan_grace)
#define GRACE_ACQUIRE() __tsan_acquire(&tsan_grace)
#else
#define GRACE_RELEASE() ((void)0)
#define GRACE_ACQUIRE() ((void)0)
#endif

/* One mapped generation (or layer) of a filter. */
struct part {
	_Atomic uint64_t *items;   /* this handle's counter stripe */
	_Atomic uint64_t *deletes; /* and its delete counter (cuckoo) */
	uint64_t step_mask;        /* a growing filter's layer: its stripes are summed when an add takes this
				      stripe across a multiple of step_mask + 1; UINT64_MAX: never */
	union {
		struct shmf_bloom_geom bloom;   /* type Bloom: the filter in this mapping */
		struct shmf_cuckoo_geom cuckoo; /* type cuckoo: the table in this mapping */
		struct shmf_fuse_geom fuse;     /* type static: its table, checked, and fingerprints */
	};
	struct shmf_cuckoo_lock lock; /* type cuckoo: this process's side of its relocation lock */
	uint32_t window;              /* its window number, floor(created / window_secs); 0: no window */
	_Atomic uint64_t *state;      /* its layer state word (SHMF_LAYER_*) */
	uint64_t capacity;            /* keys it holds before it is full (growing and NONSCALING filters) */
	unsigned layer;               /* growing filter: its layer number, 0 the oldest */
	struct shmf_rb *rb;           /* imported from RedisBloom (scheme RB_*): its table, checked; else NULL */
	struct shmf_data_map data;
};

/* A view's type for a filter imported from RedisBloom: neither of the
 * native types, so that their hot paths never take it for theirs. */
#define VIEW_IMPORTED 0x100u

/* What a handle uses: the generations the slot published, mapped.
 * Immutable once published in a handle. A plain filter has one part; a
 * time-windowed filter one per live generation, p[0] the newest (adds go
 * there) and the older ones looked at only when p[0] does not hold a key
 * (a branch on nparts that the plain filter's hot path never takes). A
 * growing filter one per layer, p[0] the current one, and its standby
 * last (p[nparts - 1] when standby is 1). */
struct view {
	const _Atomic uint64_t *published; /* &slot->generation in the control map */
	uint64_t generation;
	uint32_t type;
	unsigned nparts;
	unsigned nalloc;  /* parts allocated (view_free closes those mapped) */
	unsigned standby; /* 1: p[nparts - 1] is a standby layer (checked once OPENED) */
	int grows;        /* growing or NONSCALING: adds take the out-of-line path that picks the layer */
	uint32_t flags;   /* the slot's SHMF_SLOT_* */
	uint32_t expansion;
	uint64_t window_secs;
	uint32_t window_gens;
	struct shmf_journal_writer *journal; /* the handle's, if it journals this filter's adds; else NULL */
	struct part p[];
};

struct shmf {
	struct view *view; /* rcu: readers load it (acquire) inside a read-side section; remap publishes (release) */
	int flags;
	int slot;
	unsigned stripe;
	struct shmf_dir dir;
	struct shmf_ctl_map ctl;
	pthread_mutex_t remap_lock;          /* serialises the slow path of one handle */
	struct shmf_journal_writer *journal; /* made by the first view of a replicated filter
						(under remap_lock), freed at close */
	char name[SHMF_NAME_MAX + 1];
};

static void view_free(struct view *v)
{
	if (v == NULL)
		return;
	for (unsigned i = 0; i < v->nalloc; i++) {
		if (v->p[i].data.base != NULL)
			shmf_data_map_close(&v->p[i].data);
		shmf_rb_free(v->p[i].rb);
	}
	free(v);
}

/* Map generation @p gen of the slot @p copy describes into @p part. */
static int part_open(struct shmf *f, const struct shmf_slot *copy, uint64_t gen, struct part *pt)
{
	pt->data.fd = -1;
	int r = shmf_data_map_open_gen(&f->dir, copy, gen, (f->flags & SHMF_RDWR) != 0, &pt->data);
	if (r < 0)
		/* The file vanished between the slot read and the open: the
		 * daemon replaced, rotated or dropped it meanwhile. */
		return r == SHMF_E_NOTFOUND ? -EAGAIN : r;
	pt->items = &pt->data.counters[f->stripe].items;
	pt->deletes = &pt->data.counters[f->stripe].deletes;
	pt->state = &pt->data.state->bits;
	pt->step_mask = UINT64_MAX;
	if (pt->data.hdr.scheme != SHMF_SCHEME_NATIVE) {
		/* RedisBloom's table, copied and checked before any check reads
		 * the payload. */
		r = shmf_rb_open(pt->data.hdr.scheme, pt->data.blocks, pt->data.hdr.nblocks * SHMF_BLOCK_BYTES,
				 &pt->rb);
		if (r < 0)
			shmf_data_map_close(&pt->data);
		return r;
	}
	if (pt->data.hdr.type == SHMF_TYPE_STATIC) {
		/* The table copied and checked against the header's shape
		 * before any check reads a fingerprint. */
		const struct shmf_data_header *h = &pt->data.hdr;
		r = shmf_fuse_open(pt->data.blocks, h->nblocks * SHMF_BLOCK_BYTES, h->k, h->bucket_size, h->nbuckets,
				   h->capacity, h->seed, &pt->fuse);
		if (r < 0)
			shmf_data_map_close(&pt->data);
		return r;
	}
	if (pt->data.hdr.type == SHMF_TYPE_CUCKOO) {
		/* The timeout from the slot, which only shmd writes: a writer
		 * of the data file cannot make this process wait longer. */
		shmf_cuckoo_lock_init(&pt->lock, copy->lock_timeout_ms);
		pt->cuckoo = (struct shmf_cuckoo_geom){
			.buckets = (char *)pt->data.blocks + sizeof(struct shmf_cuckoo_meta),
			.nbuckets = pt->data.hdr.nbuckets,
			.seed = pt->data.hdr.seed,
			.fp_bits = pt->data.hdr.k,
			.slots = pt->data.hdr.bucket_size,
			.max_kicks = pt->data.hdr.max_kicks,
			.meta = (struct shmf_cuckoo_meta *)pt->data.blocks,
			.lock = &pt->lock,
			.cow = (struct shmf_cuckoo_cow *)((char *)pt->data.base + SHMF_DATA_COW_OFF),
		};
		/* The header was checked (shmf_geometry_check): this cannot fail. */
		if ((r = shmf_cuckoo_geom_layout(&pt->cuckoo)) < 0) {
			shmf_data_map_close(&pt->data);
			return r;
		}
	} else {
		pt->bloom = (struct shmf_bloom_geom){ pt->data.blocks, pt->data.hdr.nblocks, pt->data.hdr.seed,
						      pt->data.hdr.k, pt->data.hdr.bucket_size };
	}
	return 0;
}

/* Fill detection of a layer of @p capacity keys: its stripes are summed
 * every step new keys of one stripe, step a power of 2 near capacity /
 * 1024 (so a layer is seen full within a thousandth of its capacity per
 * adding handle), at least 1. */
static uint64_t fill_step_mask(uint64_t capacity)
{
	uint64_t want = capacity / 1024 ? capacity / 1024 : 1, step = 1;
	while (step <= want / 2)
		step <<= 1;
	return step - 1;
}

/* Map the generations the slot publishes now. */
static int view_open(struct shmf *f, struct view **out)
{
	struct shmf_slot copy;
	struct view *v;
	int r;

	r = shmf_slot_read(&f->ctl.slots[f->slot], &copy);
	if (r < 0)
		return r;
	if (atomic_load_explicit(&copy.generation, memory_order_relaxed) == 0 || strcmp(copy.name, f->name) != 0)
		return SHMF_E_DROPPED;
	if ((r = shmf_slot_check(&copy)) < 0)
		return r;
	v = calloc(1, sizeof(*v) + copy.nlive * sizeof(v->p[0]));
	if (v == NULL)
		return -ENOMEM;
	v->nalloc = copy.nlive;
	for (unsigned i = 0; i < copy.nlive; i++)
		v->p[i].data.fd = -1;
	v->flags = copy.flags;
	v->expansion = copy.expansion;
	v->grows = (copy.flags & (SHMF_SLOT_LAYERED | SHMF_SLOT_NONSCALING)) != 0;
	v->standby = (copy.flags & SHMF_SLOT_STANDBY) != 0;
	for (unsigned i = 0; i < copy.nlive; i++) {
		/* live[] is newest first; a standby (live[0]) goes last. */
		unsigned at = v->standby ? (i == 0 ? copy.nlive - 1 : i - 1) : i;
		struct part *pt = &v->p[at];
		struct shmf_layer want;
		if ((r = shmf_slot_layer(&copy, i, &want)) < 0 || (r = part_open(f, &copy, copy.live[i], pt)) < 0) {
			view_free(v);
			return r;
		}
		v->nparts++;
		pt->layer = copy.nlive - 1 - i;
		pt->capacity = want.capacity;
		if (v->grows)
			pt->step_mask = fill_step_mask(want.capacity);
	}
	/* Every generation of a window hashes with the newest's seed, and
	 * every layer with the first's. */
	for (unsigned i = 1; i < v->nparts; i++)
		if (v->p[i].data.hdr.seed != v->p[0].data.hdr.seed || v->p[i].data.hdr.type != v->p[0].data.hdr.type) {
			view_free(v);
			return SHMF_E_FORMAT;
		}
	v->published = &f->ctl.slots[f->slot].generation;
	v->generation = atomic_load_explicit(&copy.generation, memory_order_relaxed);
	v->type = v->p[0].rb != NULL ? VIEW_IMPORTED : v->p[0].data.hdr.type;
	v->window_secs = copy.window_secs;
	v->window_gens = copy.window_gens;
	for (unsigned i = 0; i < v->nparts; i++)
		v->p[i].window = copy.window_secs ? (uint32_t)(copy.live_created[i] / copy.window_secs) : 0;
	if ((copy.flags & SHMF_SLOT_REPLICATED) && (f->flags & SHMF_RDWR) && !(f->flags & SHMF_OPEN_NOJOURNAL)) {
		/* The journal outlives generations: one writer per handle,
		 * made here (the handle's open or its remap lock serialise
		 * this), its ring claimed on the first journalled add. */
		if (f->journal == NULL && (f->journal = shmf_journal_writer_new(&f->dir, f->name)) == NULL) {
			view_free(v);
			return -ENOMEM;
		}
		v->journal = f->journal;
	}
	*out = v;
	return 0;
}

static void handle_free(struct shmf *f)
{
	shmf_journal_writer_free(f->journal);
	shmf_ctl_map_close(&f->ctl);
	shmf_dir_close(&f->dir);
	pthread_mutex_destroy(&f->remap_lock);
	free(f);
}

static int open_handle(const char *instance, const char *filter, int flags, shmf_t **out)
{
	struct shmf *f;
	struct shmf_slot copy;
	int r;

	if ((r = shmf_name_check(filter)) < 0)
		return r;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return -ENOMEM;
	f->dir.fd = -1;
	f->ctl.fd = -1;
	f->flags = flags;
	pthread_mutex_init(&f->remap_lock, NULL);
	strcpy(f->name, filter);
	/* Spread adders over the counter stripes: one stripe per handle, so an
	 * add that reports new increments a line this core usually owns. */
	f->stripe = (unsigned)(shmf_mix64((uint64_t)getpid() ^ (uint64_t)(uintptr_t)f) % SHMF_ITEM_STRIPES);

	if ((r = shmf_dir_open(instance, &f->dir)) < 0)
		goto fail;
	if ((r = shmf_ctl_map_open(&f->dir, 0, &f->ctl)) < 0)
		goto fail;
	for (int tries = 0; tries < 100; tries++) {
		if ((r = shmf_slot_find(&f->ctl, filter, &copy)) < 0)
			goto fail;
		f->slot = r;
		r = view_open(f, &f->view);
		if (r != -EAGAIN && r != SHMF_E_DROPPED)
			break;
	}
	/* Still racing after 100 tries: the slot names a file that is not
	 * there, so for this caller the filter does not exist. */
	if (r == -EAGAIN || r == SHMF_E_DROPPED)
		r = SHMF_E_NOTFOUND;
	if (r < 0)
		goto fail;
	*out = f;
	return 0;
fail:
	handle_free(f);
	return r;
}

int shmf_open(const char *instance, const char *filter, int flags, shmf_t **out)
{
	shmf_detail_clear();
	if (out == NULL || (flags & ~SHMF_RDWR) != 0)
		return SHMF_E_INVAL;
	return open_handle(instance, filter, flags, out);
}

int shmf_open_internal(const char *instance, const char *filter, int flags, shmf_t **out)
{
	if (out == NULL || (flags & ~(SHMF_RDWR | SHMF_OPEN_NOJOURNAL)) != 0)
		return SHMF_E_INVAL;
	return open_handle(instance, filter, flags, out);
}

void shmf_close(shmf_t *f)
{
	if (f == NULL)
		return;
	view_free(f->view);
	handle_free(f);
}

/*
 * Slow path: the published generation differs from the view's. Map the new
 * one, publish it to the handle, and free the old view once no thread can
 * still be using it.
 */
static __attribute__((noinline, cold)) int refresh(struct shmf *f)
{
	struct view *old, *nv = NULL;
	int r = 0;

	pthread_mutex_lock(&f->remap_lock);
	old = f->view;
	if (atomic_load_explicit(old->published, memory_order_acquire) != old->generation) {
		for (int tries = 0; tries < 100; tries++) {
			r = view_open(f, &nv);
			if (r != -EAGAIN)
				break;
		}
		if (r == -EAGAIN)
			r = SHMF_E_NOTFOUND;
		if (r == 0) {
			/* release: pairs with the acquire load in enter(). A C11
			 * atomic store, not rcu_assign_pointer()'s volatile one:
			 * it races with the readers' loads, and only an atomic
			 * store makes that race defined (ThreadSanitizer agrees). */
			__atomic_store_n(&f->view, nv, __ATOMIC_RELEASE);
			pthread_mutex_unlock(&f->remap_lock);
			synchronize_rcu();
			GRACE_ACQUIRE();
			view_free(old);
			return 0;
		}
	}
	pthread_mutex_unlock(&f->remap_lock);
	return r;
}

/*
 * Enter the read side and get a current view. The generation test is the
 * one load per call the design allows; it is almost always a hit in L1.
 */
static inline int enter(struct shmf *f, struct view **out, shmf_reader_t *rd)
{
	for (;;) {
		*rd = shmf_reader_lock();
		/* acquire: pairs with the release store in refresh() (free on x86,
		 * where every load is an acquire). */
		struct view *v = __atomic_load_n(&f->view, __ATOMIC_ACQUIRE);
		/* acquire: pairs with the daemon's release store of a new
		 * generation, which follows the complete new data segment. */
		if (__builtin_expect(atomic_load_explicit(v->published, memory_order_acquire) == v->generation, 1)) {
			*out = v;
			return 0;
		}
		GRACE_RELEASE();
		shmf_reader_unlock(*rd);
		int r = refresh(f);
		if (r < 0)
			return r;
	}
}

static inline void leave(shmf_reader_t rd)
{
	GRACE_RELEASE();
	shmf_reader_unlock(rd);
}

static inline struct shmf_cuckoo_key cuckoo_key(const struct part *p, const void *key, size_t len)
{
	return shmf_cuckoo_locate(&p->cuckoo, shmf_hash(key, len, p->cuckoo.seed));
}

/* Copies of the key in part @p p (cuckoo): the one-try read inline, the
 * rest out of line (shmf_cuckoo_count). */
static int cuckoo_count_in(const struct part *p, const struct shmf_cuckoo_key *k)
{
	int r = shmf_cuckoo_count_try(&p->cuckoo, k);
	if (__builtin_expect(r < 0, 0))
		r = shmf_cuckoo_count(&p->cuckoo, k);
	return r;
}

static inline int bloom_has(const struct shmf_bloom_geom *g, uint64_t h)
{
	return shmf_bloom_has(g, h);
}

/* Ask for the lines of the key of hash @p h in @p g: the layers of a
 * growing filter are looked at one after the other, their cache misses
 * need not be. */
static inline void bloom_prefetch(const struct shmf_bloom_geom *g, uint64_t h)
{
	shmf_bloom_prefetch(g, h, 0);
}

/* ---- Layers of a growing filter ------------------------------------------ */

/* Has an adder opened standby part @p p? acquire: pairs with the release
 * in layer_mark(); an adder sets OPENED before its first add into the
 * standby, so a check that starts after that add returned finds the key. */
static inline int opened(const struct part *p)
{
	return (atomic_load_explicit(p->state, memory_order_acquire) & SHMF_LAYER_OPENED) != 0;
}

/* The parts that may hold keys, p[0..end): every one but a standby that
 * nobody opened yet. */
static inline unsigned checked_parts(const struct view *v)
{
	unsigned n = v->nparts - v->standby;
	return n + (v->standby && opened(&v->p[n]));
}

/* Set state bits @p bits of part @p p. release: what this thread wrote
 * before is visible to whoever sees the bits; the bits themselves are
 * stored before anything this thread does next (a locked RMW on x86). */
static void layer_mark(struct part *p, uint64_t bits)
{
	if ((atomic_load_explicit(p->state, memory_order_relaxed) & bits) != bits)
		atomic_fetch_or_explicit(p->state, bits, memory_order_release);
}

/* A stripe of part @p p passed a multiple of its step: sum every stripe
 * and mark the layer FULL at its capacity (NEAR within 64 steps of it,
 * where a NONSCALING filter's adders count every new key). */
static __attribute__((noinline, cold)) void layer_fill(struct part *p)
{
	uint64_t items = shmf_data_items(&p->data);
	/* A cuckoo delete counted before its add reads as a wrapped sum. */
	if (items > UINT64_MAX / 2)
		items = 0;
	if (items >= p->capacity)
		layer_mark(p, SHMF_LAYER_FULL | SHMF_LAYER_NEAR);
	else if (p->capacity - items <= 64 * (p->step_mask + 1))
		layer_mark(p, SHMF_LAYER_NEAR);
}

/* Count @p n new keys in part @p p's stripe of this handle; the return
 * value of the increment says when the stripe passes a multiple of a
 * growing layer's step (never for other filters: step_mask UINT64_MAX).
 * No shared write but the increment itself. */
static inline void count_new(struct part *p, uint64_t n)
{
	uint64_t old = atomic_fetch_add_explicit(p->items, n, memory_order_relaxed);
	if (__builtin_expect(((old ^ (old + n)) & ~p->step_mask) != 0, 0))
		layer_fill(p);
}

/* The part an add to a growing filter goes to: the current layer, or once
 * it is full (@p cur_state, its state as loaded) the standby, opened by
 * this call if nobody did yet. Without a standby (shmd has not made it, or
 * the filter has all its layers), the current one: a Bloom layer overfills,
 * a cuckoo layer holds what it can. */
static inline struct part *add_target(struct view *v, uint64_t cur_state)
{
	if ((cur_state & SHMF_LAYER_FULL) && v->standby) {
		struct part *sb = &v->p[v->nparts - 1];
		layer_mark(sb, SHMF_LAYER_OPENED);
		return sb;
	}
	return &v->p[0];
}

/* Is the key of hash @p h in one of the older generations of a time
 * window, the older layers of a growing filter or its opened standby
 * (parts 1..)? Every generation and layer shares the first's seed, so one
 * hash serves; a cuckoo key is located in each part's own table.
 * @return 1, 0, or an error. */
static __attribute__((noinline)) int in_older_hash(const struct view *v, uint64_t h)
{
	unsigned end = checked_parts(v);
	if (v->type == SHMF_TYPE_BLOOM) {
		for (unsigned i = 1; i < end; i++)
			bloom_prefetch(&v->p[i].bloom, h);
		for (unsigned i = 1; i < end; i++)
			if (bloom_has(&v->p[i].bloom, h))
				return 1;
		return 0;
	}
	for (unsigned i = 1; i < end; i++) {
		struct shmf_cuckoo_key k = shmf_cuckoo_locate(&v->p[i].cuckoo, h);
		int r = cuckoo_count_in(&v->p[i], &k);
		if (r != 0)
			return r < 0 ? r : 1;
	}
	return 0;
}

static __attribute__((noinline)) int in_older(const struct view *v, const void *key, size_t len)
{
	/* A standby nobody opened is all there is past p[0]: no hash again. */
	if (checked_parts(v) <= 1)
		return 0;
	return in_older_hash(v, shmf_hash(key, len, v->p[0].data.hdr.seed));
}

/* Copies of the key of hash @p h in parts 1.. (cuckoo windows and layers). */
static int count_older(const struct view *v, uint64_t h)
{
	int sum = 0;
	unsigned end = checked_parts(v);
	for (unsigned i = 1; i < end; i++) {
		struct shmf_cuckoo_key k = shmf_cuckoo_locate(&v->p[i].cuckoo, h);
		int r = cuckoo_count_in(&v->p[i], &k);
		if (r < 0)
			return r;
		sum += r;
	}
	return sum;
}

/* flatten: XXH3 inlined, as in the batch loop. */
__attribute__((flatten)) int shmf_check(shmf_t *f, const void *key, size_t len)
{
	struct view *v;
	shmf_reader_t rd;
	int r;

	if (__builtin_expect(key == NULL && len != 0, 0))
		return SHMF_E_INVAL;
	if ((r = enter(f, &v, &rd)) < 0)
		return r;
	if (__builtin_expect(v->type == SHMF_TYPE_BLOOM, 1)) {
		const struct shmf_bloom_geom *g = &v->p[0].bloom;
		r = bloom_has(g, shmf_hash(key, len, g->seed));
	} else if (__builtin_expect(v->type == SHMF_TYPE_CUCKOO, 1)) {
		struct shmf_cuckoo_key k = cuckoo_key(&v->p[0], key, len);
		r = cuckoo_count_in(&v->p[0], &k);
		r = r < 0 ? r : r > 0;
	} else if (v->type == SHMF_TYPE_STATIC) {
		const struct shmf_fuse_geom *g = &v->p[0].fuse;
		r = shmf_fuse_has(g, shmf_hash(key, len, g->seed));
	} else {
		r = shmf_rb_check(v->p[0].rb, key, len);
	}
	if (__builtin_expect(r == 0 && v->nparts > 1, 0))
		r = in_older(v, key, len);
	leave(rd);
	return r;
}

/* Set the bits of the key of hash @p h in part @p p: 1 if this call set
 * one of them. */
static inline int bloom_add_hash(struct part *p, uint64_t h)
{
	int r = shmf_bloom_add_key(&p->bloom, h);
	if (r)
		count_new(p, 1);
	return r;
}

/* Journal an operation that changed part @p p, if the view journals. */
static inline void journal(const struct view *v, const struct part *p, uint64_t h, uint32_t op)
{
	if (__builtin_expect(v->journal != NULL, 0))
		shmf_journal_put(v->journal, h, op, p->window);
}

/* A Bloom add of hash @p h to a growing or NONSCALING filter, as
 * RedisBloom's: a key that any layer holds is not new and is not added
 * again; else it goes where add_target() says, or for a full NONSCALING
 * filter is refused. Journalled (@p jnl) when it set a bit. */
static __attribute__((noinline)) int bloom_add_grows(struct view *v, uint64_t h, int jnl)
{
	struct part *cur = &v->p[0];
	uint64_t st = atomic_load_explicit(cur->state, memory_order_acquire);
	if ((st & SHMF_LAYER_FULL) && (v->flags & SHMF_SLOT_NONSCALING))
		return bloom_has(&cur->bloom, h) ? 0 : SHMF_E_NONSCALING;
	struct part *t = add_target(v, st);
	unsigned end = checked_parts(v);
	for (unsigned i = 0; i < end; i++)
		bloom_prefetch(&v->p[i].bloom, h);
	for (unsigned i = 0; i < end; i++)
		if (&v->p[i] != t && bloom_has(&v->p[i].bloom, h))
			return 0;
	int r = bloom_add_hash(t, h);
	if (r == 1) {
		if (jnl)
			journal(v, t, h, SHMF_JOP_ADD);
		/* Close to a NONSCALING filter's capacity: count every new key. */
		if ((st & SHMF_LAYER_NEAR) && (v->flags & SHMF_SLOT_NONSCALING))
			layer_fill(t);
	}
	return r;
}

/* A Bloom add into the newest generation (always: the key then lives a
 * whole window more), new only if no live generation held it. Journalled
 * when it set a bit of the newest generation, new or not: the other hosts'
 * newest generations need that bit as much. */
static int bloom_add_view(struct view *v, const void *key, size_t len)
{
	uint64_t h = shmf_hash(key, len, v->p[0].bloom.seed);
	if (__builtin_expect(v->grows, 0))
		return bloom_add_grows(v, h, 1);
	int r = bloom_add_hash(&v->p[0], h);
	if (r == 1) {
		journal(v, &v->p[0], h, SHMF_JOP_ADD);
		if (__builtin_expect(v->nparts > 1, 0) && in_older_hash(v, h) == 1)
			r = 0;
	}
	return r;
}

/* One copy of the key of hash @p h into a growing cuckoo filter: into the
 * part add_target() picks, and if the current layer has no room left (its
 * count below capacity, but no relocation path: it is as good as full),
 * marked FULL and into the standby. *at gets the part. @return 0 stored,
 * or an error (SHMF_E_FULL: no standby to go to, or it is full too). */
static __attribute__((noinline)) int cuckoo_add_grows(struct view *v, uint64_t h, struct part **at)
{
	struct part *cur = &v->p[0];
	struct part *t = add_target(v, atomic_load_explicit(cur->state, memory_order_acquire));
	struct shmf_cuckoo_key k = shmf_cuckoo_locate(&t->cuckoo, h);
	int r = shmf_cuckoo_add(&t->cuckoo, &k);
	if (r == SHMF_E_FULL && t == cur) {
		layer_mark(cur, SHMF_LAYER_FULL);
		if (v->standby) {
			t = add_target(v, SHMF_LAYER_FULL);
			k = shmf_cuckoo_locate(&t->cuckoo, h);
			r = shmf_cuckoo_add(&t->cuckoo, &k);
		}
	}
	*at = t;
	return r;
}

/* A cuckoo add of one copy into the newest generation (a growing filter:
 * its current layer, or the next): 1 stored, or an error. */
static __attribute__((noinline)) int cuckoo_add(struct view *v, const void *key, size_t len)
{
	struct part *p = &v->p[0];
	uint64_t h = shmf_hash(key, len, p->cuckoo.seed);
	int r;
	if (__builtin_expect(v->grows, 0)) {
		r = cuckoo_add_grows(v, h, &p);
	} else {
		struct shmf_cuckoo_key k = shmf_cuckoo_locate(&p->cuckoo, h);
		r = shmf_cuckoo_add(&p->cuckoo, &k);
	}
	if (r < 0)
		return r;
	count_new(p, 1);
	journal(v, p, h, SHMF_JOP_ADD);
	return 1;
}

/* The answer of a write that the view's type does not take: an import
 * from RedisBloom takes none (SHMF_E_IMPORTED), nor a static filter
 * (SHMF_E_STATIC); a Bloom filter no delete or capped add (SHMF_E_TYPE). */
static int no_write(const struct view *v)
{
	return v->type == VIEW_IMPORTED ? SHMF_E_IMPORTED : v->type == SHMF_TYPE_STATIC ? SHMF_E_STATIC : SHMF_E_TYPE;
}

/* Enter for a write: a read-write handle and a valid key. A filter
 * imported from RedisBloom takes no write: each write refuses it where it
 * tells the types apart, off the Bloom add's path (no_write()). */
static inline int enter_rw(struct shmf *f, const void *key, size_t len, struct view **v, shmf_reader_t *rd)
{
	if (__builtin_expect(!(f->flags & SHMF_RDWR), 0))
		return SHMF_E_READONLY;
	if (__builtin_expect(key == NULL && len != 0, 0))
		return SHMF_E_INVAL;
	return enter(f, v, rd);
}

__attribute__((flatten)) int shmf_add(shmf_t *f, const void *key, size_t len)
{
	struct view *v;
	shmf_reader_t rd;
	int r;

	if ((r = enter_rw(f, key, len, &v, &rd)) < 0)
		return r;
	r = __builtin_expect(v->type == SHMF_TYPE_BLOOM, 1) ? bloom_add_view(v, key, len)
	    : v->type == SHMF_TYPE_CUCKOO                   ? cuckoo_add(v, key, len)
							    : no_write(v);
	leave(rd);
	return r;
}

/*
 * A capped add to a growing cuckoo filter. The capped adds of every
 * process serialise on the relocation lock of the oldest layer (layer 0:
 * it never leaves the ring, so every view has it): under it the copies in
 * every layer are counted and one is added where an add would go, so a
 * layer switch between two capped adds cannot let one copy too many in. A
 * newer layer's lock may be taken inside it (a relocation there), never
 * the other way round. A view older than the slot may lack a layer another
 * process added to; under the lock that shows as a new generation word
 * (the lock's acquire orders it after that process's add), and the call
 * answers -EAGAIN to start again on the new view. @return the copies
 * before, or an error.
 */
static int cuckoo_add_capped_grows(struct view *v, uint64_t h, unsigned cap)
{
	struct part *oldest = &v->p[v->nparts - 1 - v->standby];
	int r = shmf_cuckoo_lock(&oldest->cuckoo);
	if (r < 0)
		return r;
	if (atomic_load_explicit(v->published, memory_order_acquire) != v->generation) {
		shmf_cuckoo_unlock(&oldest->cuckoo);
		return -EAGAIN;
	}
	unsigned end = checked_parts(v);
	int before = 0;
	for (unsigned i = 0; i < end; i++) {
		struct part *p = &v->p[i];
		struct shmf_cuckoo_key k = shmf_cuckoo_locate(&p->cuckoo, h);
		/* No move runs in the oldest layer while we hold its lock. */
		int n = p == oldest ? (int)shmf_cuckoo_copies(&p->cuckoo, &k) : cuckoo_count_in(p, &k);
		if (n < 0) {
			before = n;
			goto out;
		}
		before += n;
	}
	if ((unsigned)before >= cap)
		goto out;
	struct part *cur = &v->p[0];
	struct part *t = add_target(v, atomic_load_explicit(cur->state, memory_order_acquire));
	for (;;) {
		struct shmf_cuckoo_key k = shmf_cuckoo_locate(&t->cuckoo, h);
		r = t == oldest ? shmf_cuckoo_add_held(&t->cuckoo, &k) : shmf_cuckoo_add(&t->cuckoo, &k);
		if (r == SHMF_E_FULL && t == cur) {
			layer_mark(cur, SHMF_LAYER_FULL);
			if (v->standby) {
				t = add_target(v, SHMF_LAYER_FULL);
				continue;
			}
		}
		break;
	}
	if (r < 0) {
		before = r;
		goto out;
	}
	count_new(t, 1);
	journal(v, t, h, SHMF_JOP_CAPPED);
out:
	shmf_cuckoo_unlock(&oldest->cuckoo);
	return before;
}

/* The capped add behind shmf_add_capped and, with cap 1, shmf_add_unique:
 * the count before the call (over every live generation), or an error.
 * Copies in older generations count against the cap; the add goes to the
 * newest, atomically against other capped adds there. */
static int cuckoo_add_capped(struct view *v, const void *key, size_t len, unsigned cap)
{
	struct part *p = &v->p[0];
	uint64_t h = shmf_hash(key, len, p->cuckoo.seed);
	if (v->grows)
		return cuckoo_add_capped_grows(v, h, cap);
	struct shmf_cuckoo_key k = shmf_cuckoo_locate(&p->cuckoo, h);
	int older = v->nparts > 1 ? count_older(v, h) : 0;
	if (older < 0 || (unsigned)older >= cap)
		return older;
	int before = shmf_cuckoo_add_capped(&p->cuckoo, &k, cap - (unsigned)older);
	if (before < 0)
		return before;
	if ((unsigned)before < cap - (unsigned)older) {
		count_new(p, 1);
		journal(v, p, h, SHMF_JOP_CAPPED);
	}
	return older + before;
}

/* A capped add on the current view: a growing filter's may have to start
 * again on a newer one (-EAGAIN, above); bounded, as a remap is. */
static int add_capped(struct shmf *f, const void *key, size_t len, unsigned cap)
{
	struct view *v;
	shmf_reader_t rd;
	int r = -EAGAIN;
	for (int tries = 0; tries < 100 && r == -EAGAIN; tries++) {
		if ((r = enter_rw(f, key, len, &v, &rd)) < 0)
			return r;
		r = v->type == SHMF_TYPE_CUCKOO ? cuckoo_add_capped(v, key, len, cap) : no_write(v);
		leave(rd);
	}
	return r == -EAGAIN ? SHMF_E_BUSY : r;
}

int shmf_add_unique(shmf_t *f, const void *key, size_t len)
{
	struct view *v;
	shmf_reader_t rd;
	int r;

	if ((r = enter_rw(f, key, len, &v, &rd)) < 0)
		return r;
	int bloom = v->type == SHMF_TYPE_BLOOM;
	if (bloom)
		r = bloom_add_view(v, key, len);
	leave(rd);
	if (bloom)
		return r;
	r = add_capped(f, key, len, 1);
	return r < 0 ? r : r == 0;
}

int shmf_add_capped(shmf_t *f, const void *key, size_t len, unsigned cap)
{
	return add_capped(f, key, len, cap);
}

/* A cuckoo delete of one copy: the newest copy first, the one that would
 * live longest (a window's newest generation; a growing filter's opened
 * standby, then its layers from the current one back). Each part locates
 * the key in its own table. */
static int cuckoo_del_view(struct view *v, uint64_t h, int jnl)
{
	unsigned end = checked_parts(v);
	int r = 0;
	for (unsigned j = 0; j < end && r == 0; j++) {
		unsigned i = v->standby && end == v->nparts ? (j == 0 ? end - 1 : j - 1) : j;
		struct part *p = &v->p[i];
		struct shmf_cuckoo_key k = shmf_cuckoo_locate(&p->cuckoo, h);
		r = shmf_cuckoo_del(&p->cuckoo, &k);
		if (r == 1) {
			atomic_fetch_sub_explicit(p->items, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(p->deletes, 1, memory_order_relaxed);
			/* With the window of the generation it came from. */
			if (jnl)
				journal(v, p, h, SHMF_JOP_DEL);
		}
	}
	return r;
}

int shmf_del(shmf_t *f, const void *key, size_t len)
{
	struct view *v;
	shmf_reader_t rd;
	int r;

	if ((r = enter_rw(f, key, len, &v, &rd)) < 0)
		return r;
	if (v->type == SHMF_TYPE_CUCKOO)
		r = cuckoo_del_view(v, shmf_hash(key, len, v->p[0].cuckoo.seed), 1);
	else
		r = no_write(v);
	leave(rd);
	return r;
}

int shmf_count(shmf_t *f, const void *key, size_t len)
{
	struct view *v;
	shmf_reader_t rd;
	int r;

	if (key == NULL && len != 0)
		return SHMF_E_INVAL;
	if ((r = enter(f, &v, &rd)) < 0)
		return r;
	if (v->type == SHMF_TYPE_CUCKOO) {
		uint64_t h = shmf_hash(key, len, v->p[0].cuckoo.seed);
		struct shmf_cuckoo_key k = shmf_cuckoo_locate(&v->p[0].cuckoo, h);
		r = shmf_cuckoo_count(&v->p[0].cuckoo, &k);
		if (r >= 0 && v->nparts > 1) {
			int older = count_older(v, h);
			r = older < 0 ? older : r + older;
		}
	} else if (v->type == VIEW_IMPORTED) {
		r = shmf_rb_count(v->p[0].rb, key, len);
	} else {
		r = SHMF_E_TYPE;
	}
	leave(rd);
	return r;
}

static int keys_valid(const shmf_key_t *keys, size_t n)
{
	if (n != 0 && keys == NULL)
		return 0;
	int bad = 0;
	for (size_t i = 0; i < n; i++)
		bad |= (keys[i].ptr == NULL) & (keys[i].len != 0);
	return !bad;
}

/* Cuckoo batch check: keys located CUCKOO_AHEAD ahead and both their
 * buckets prefetched, so that many misses are in flight. */
#define CUCKOO_AHEAD 16
static size_t cuckoo_check_many(const struct part *p, const shmf_key_t *keys, size_t n, uint8_t *out, int *err)
{
	const struct shmf_cuckoo_geom *g = &p->cuckoo;
	struct shmf_cuckoo_key ring[CUCKOO_AHEAD];
	const size_t width = g->lanes.bytes;
	size_t present = 0;
	for (size_t i = 0; i < n + CUCKOO_AHEAD; i++) {
		/* Test key i - AHEAD before key i takes its ring slot. */
		if (i >= CUCKOO_AHEAD) {
			size_t j = i - CUCKOO_AHEAD;
			const struct shmf_cuckoo_key *k = &ring[j % CUCKOO_AHEAD];
			int r = shmf_cuckoo_count_try(g, k);
			if (__builtin_expect(r < 0, 0) && (r = shmf_cuckoo_count(g, k)) < 0)
				*err = r; /* the thread may not wait (cuckoo.h): the batch fails */
			out[j] = r > 0;
			present += (size_t)(r > 0);
		}
		if (i < n) {
			struct shmf_cuckoo_key *k = &ring[i % CUCKOO_AHEAD];
			*k = cuckoo_key(p, keys[i].ptr, keys[i].len);
			__builtin_prefetch((const char *)g->buckets + k->i1 * width);
			__builtin_prefetch((const char *)g->buckets + k->i2 * width);
		}
	}
	return present;
}

/* Bloom: the keys p[0] lacks, asked of the other parts layer by layer,
 * 64 keys at a time with their blocks prefetched first (a layer's misses
 * in flight together, as the batch code's are). */
static size_t bloom_many_older(const struct view *v, const shmf_key_t *keys, size_t n, uint8_t *out, unsigned end)
{
	enum { CHUNK = 64 };
	uint64_t h[CHUNK];
	size_t at[CHUNK], found = 0;
	const uint64_t seed = v->p[0].bloom.seed;
	for (size_t base = 0; base < n; base += CHUNK) {
		size_t m = 0;
		for (size_t j = base; j < n && j < base + CHUNK; j++)
			if (!out[j]) {
				at[m] = j;
				h[m++] = shmf_hash(keys[j].ptr, keys[j].len, seed);
			}
		for (unsigned i = 1; i < end && m > 0; i++) {
			const struct shmf_bloom_geom *g = &v->p[i].bloom;
			for (size_t q = 0; q < m; q++)
				bloom_prefetch(g, h[q]);
			size_t keep = 0;
			for (size_t q = 0; q < m; q++) {
				if (bloom_has(g, h[q])) {
					out[at[q]] = 1;
					found++;
				} else {
					at[keep] = at[q];
					h[keep++] = h[q];
				}
			}
			m = keep;
		}
	}
	return found;
}

/* Time windows and layers: the keys the newest generation (the current
 * layer) lacks, asked of the other ones. */
static size_t check_many_older(const struct view *v, const shmf_key_t *keys, size_t n, uint8_t *out, int *err)
{
	size_t found = 0;
	/* Only a standby nobody opened: nothing to look at (one load for the batch). */
	unsigned end = checked_parts(v);
	if (end <= 1)
		return 0;
	if (v->type == SHMF_TYPE_BLOOM)
		return bloom_many_older(v, keys, n, out, end);
	for (size_t i = 0; i < n; i++) {
		if (out[i])
			continue;
		int r = in_older(v, keys[i].ptr, keys[i].len);
		if (r < 0) {
			*err = r;
			return 0;
		}
		out[i] = (uint8_t)r;
		found += (size_t)r;
	}
	return found;
}

int shmf_check_many(shmf_t *f, const shmf_key_t *keys, size_t n, uint8_t *out)
{
	struct view *v;
	shmf_reader_t rd;
	int r;

	if (n > INT32_MAX || (n != 0 && out == NULL) || !keys_valid(keys, n))
		return SHMF_E_INVAL;
	if ((r = enter(f, &v, &rd)) < 0)
		return r;
	size_t present = 0;
	if (v->type == SHMF_TYPE_BLOOM) {
		present = shmf_bloom_check_batch(&v->p[0].bloom, keys, n, out, SHMF_BLOOM_AUTO);
	} else if (v->type == SHMF_TYPE_CUCKOO) {
		present = cuckoo_check_many(&v->p[0], keys, n, out, &r);
	} else if (v->type == SHMF_TYPE_STATIC) {
		present = shmf_fuse_check_many(&v->p[0].fuse, keys, n, out);
	} else {
		present = shmf_rb_check_many(v->p[0].rb, keys, n, out);
	}
	if (r >= 0 && v->nparts > 1 && present < n)
		present += check_many_older(v, keys, n, out, &r);
	leave(rd);
	return r < 0 ? r : (int)present;
}

/* A Bloom batch add that journals each key that set a bit: the batch
 * code reports which keys did, and those are hashed again (a few
 * nanoseconds a key, against a batch path that bloom-batch.c keeps free
 * of journal code). */
static size_t bloom_add_many_journalled(struct view *v, const shmf_key_t *keys, size_t n, uint8_t *out)
{
	enum { CHUNK = 256 };
	uint8_t local[CHUNK];
	struct part *p = &v->p[0];
	size_t fresh = 0;
	for (size_t i = 0; i < n; i += CHUNK) {
		size_t m = n - i < CHUNK ? n - i : CHUNK;
		uint8_t *o = out != NULL ? out + i : local;
		size_t got = shmf_bloom_add_batch(&p->bloom, keys + i, m, o);
		fresh += got;
		for (size_t j = 0; j < m && got > 0; j++)
			if (o[j]) {
				journal(v, p, shmf_hash(keys[i + j].ptr, keys[i + j].len, p->bloom.seed), SHMF_JOP_ADD);
				got--;
			}
	}
	return fresh;
}

int shmf_add_many(shmf_t *f, const shmf_key_t *keys, size_t n, uint8_t *out)
{
	struct view *v;
	shmf_reader_t rd;
	int r;

	if (!(f->flags & SHMF_RDWR))
		return SHMF_E_READONLY;
	if (n > INT32_MAX || !keys_valid(keys, n))
		return SHMF_E_INVAL;
	if ((r = enter(f, &v, &rd)) < 0)
		return r;
	if (v->type == VIEW_IMPORTED || v->type == SHMF_TYPE_STATIC) {
		leave(rd);
		return no_write(v);
	}
	size_t fresh = 0;
	/* One generation or layer, and (a growing or NONSCALING filter) not
	 * full nor close to it: the batch code, the keys counted at once. */
	if (v->type == SHMF_TYPE_BLOOM && v->nparts == 1 &&
	    (!v->grows ||
	     !(atomic_load_explicit(v->p[0].state, memory_order_acquire) & (SHMF_LAYER_FULL | SHMF_LAYER_NEAR)))) {
		fresh = __builtin_expect(v->journal == NULL, 1) ? shmf_bloom_add_batch(&v->p[0].bloom, keys, n, out)
								: bloom_add_many_journalled(v, keys, n, out);
		if (fresh)
			count_new(&v->p[0], fresh);
	} else if (v->type == SHMF_TYPE_BLOOM) {
		/* A window or layers: new only if no live generation or layer
		 * held the key. A full NONSCALING filter stops at the first key
		 * it refuses, as a full cuckoo filter does below. */
		if (out != NULL)
			memset(out, 0, n);
		for (size_t i = 0; i < n; i++) {
			int one = bloom_add_view(v, keys[i].ptr, keys[i].len);
			if (one < 0) {
				r = one;
				break;
			}
			if (out != NULL)
				out[i] = (uint8_t)one;
			fresh += (size_t)one;
		}
	} else {
		/* Stops at the first key that does not fit: the keys before it
		 * are stored (out[i] = 1), the rest are not (out[i] = 0). */
		if (out != NULL)
			memset(out, 0, n);
		for (size_t i = 0; i < n; i++) {
			if ((r = cuckoo_add(v, keys[i].ptr, keys[i].len)) < 0)
				break;
			if (out != NULL)
				out[i] = 1;
			fresh++;
		}
	}
	leave(rd);
	return r < 0 ? r : (int)fresh;
}

/* What shmf_info() says of a filter imported from RedisBloom: the
 * counts its table carries, and estimates from its links. */
static void info_imported(const struct shmf_rb *rb, shmf_info_t *out)
{
	out->bits = rb->bits;
	out->items = rb->items;
	out->deletes = rb->deletes;
	if (rb->scheme == SHMF_SCHEME_RB_CUCKOO) {
		out->bucket_size = rb->bucket_size;
		out->buckets = rb->capacity / rb->bucket_size;
		out->fingerprint_bits = 8;
		out->max_kicks = rb->max_iterations;
	} else {
		out->k = rb->part[rb->nlinks - 1].k;
	}
	shmf_rb_estimates(rb, &out->fill_ratio, &out->fpr_estimate);
}

int shmf_info(shmf_t *f, shmf_info_t *out)
{
	struct view *v;
	shmf_reader_t rd;
	int r;

	if (f == NULL || out == NULL)
		return SHMF_E_INVAL;
	if ((r = enter(f, &v, &rd)) < 0)
		return r;
	const struct part *p = &v->p[0];
	memset(out, 0, sizeof(*out));
	memcpy(out->name, p->data.hdr.name, sizeof(out->name));
	out->type = (int)p->data.hdr.type;
	out->k = p->data.hdr.k;
	out->capacity = p->data.hdr.capacity;
	memcpy(&out->fpr_target, &p->data.hdr.fpr_bits, sizeof(double));
	out->window_secs = v->window_secs;
	out->window_generations = v->window_gens;
	/* A growing filter's layers count as its live generations (a standby
	 * nobody opened does not). */
	unsigned end = checked_parts(v);
	out->live_generations = end;
	/* Sizes, items and the estimates are the newest generation's (the
	 * current layer's), the one adds fill; items_live sums every live
	 * generation (layer). */
	out->bytes = p->data.len;
	out->items = shmf_data_items(&p->data);
	for (unsigned i = 0; i < end; i++)
		out->items_live += shmf_data_items(&v->p[i].data);
	if (v->type == VIEW_IMPORTED) {
		info_imported(p->rb, out);
	} else if (v->type == SHMF_TYPE_STATIC) {
		const struct shmf_fuse_geom *g = &p->fuse;
		out->bits = g->array_len * g->fp_bits;
		out->buckets = g->array_len;
		out->bucket_size = (uint32_t)g->segment_len;
		out->fingerprint_bits = g->fp_bits;
		out->fill_ratio = (double)g->keys / (double)g->array_len;
		out->fpr_estimate = shmf_fuse_fpr(g->fp_bits);
	} else if (v->type == SHMF_TYPE_BLOOM) {
		const struct shmf_bloom_geom *g = &p->bloom;
		out->bits = g->nblocks * SHMF_BLOCK_BITS;
		out->k = g->k * g->lines;
		out->lines = g->lines;
		out->fill_ratio = shmf_bloom_fill(out->items, g->nblocks, g->k, g->lines);
		out->fpr_estimate = shmf_bloom_fpr_lines(out->items, g->nblocks, g->k, g->lines);
	} else {
		const struct shmf_cuckoo_geom *g = &p->cuckoo;
		uint64_t slots = g->nbuckets * g->slots;
		out->bits = slots * g->fp_bits;
		out->buckets = g->nbuckets;
		out->bucket_size = g->slots;
		out->fingerprint_bits = g->fp_bits;
		out->max_kicks = g->max_kicks;
		out->relocations = atomic_load_explicit(&g->meta->moves, memory_order_relaxed);
		out->deletes = shmf_data_deletes(&p->data);
		/* The counter sums modulo 2^64; a transient negative (a delete
		 * counted before its add) reads as 0. */
		uint64_t items = out->items > slots * 2 ? 0 : out->items;
		out->items = items;
		out->fill_ratio = (double)items / (double)slots;
		out->fpr_estimate = shmf_cuckoo_fpr(items, g->nbuckets, g->fp_bits, g->slots);
	}
	if (out->items_live > out->items && end == 1)
		out->items_live = out->items;
	/* The current layer's file (a promoted standby's generation word is
	 * its file's plus one). */
	out->generation = p->data.hdr.generation;
	leave(rd);
	return 0;
}

/* ---- The layers, for shmd (layers.h) ------------------------------------- */

int shmf_layers(shmf_t *f, struct shmf_layer_status *out, unsigned max)
{
	struct view *v;
	shmf_reader_t rd;
	int r;

	if (f == NULL || out == NULL)
		return SHMF_E_INVAL;
	if ((r = enter(f, &v, &rd)) < 0)
		return r;
	unsigned n = v->nparts < max ? v->nparts : max;
	for (unsigned i = 0; i < n; i++) {
		const struct part *p = &v->p[i];
		uint64_t items = shmf_data_items(&p->data);
		out[i] = (struct shmf_layer_status){
			.generation = p->data.hdr.generation,
			.layer = p->layer,
			.capacity = p->capacity,
			.items = items > UINT64_MAX / 2 ? 0 : items,
			.deletes = shmf_data_deletes(&p->data),
			.bytes = p->data.len,
			.state = atomic_load_explicit(p->state, memory_order_acquire),
			.standby = v->standby && i == v->nparts - 1,
			.k = p->data.hdr.k,
			.nbuckets = p->data.hdr.nbuckets,
			.nblocks = p->data.hdr.nblocks,
			.max_kicks = p->data.hdr.max_kicks,
			.bucket_size = p->data.hdr.bucket_size,
			.links = p->rb != NULL ? p->rb->nlinks : 0,
			.growth = p->rb != NULL ? p->rb->growth : 0,
		};
		/* An imported cuckoo filter's buckets are its first sub-filter's,
		 * as RedisBloom counts them. */
		if (p->rb != NULL && p->rb->scheme == SHMF_SCHEME_RB_CUCKOO)
			out[i].nbuckets = p->rb->part[0].mod;
		memcpy(&out[i].fpr, &p->data.hdr.fpr_bits, sizeof(double));
	}
	leave(rd);
	return (int)n;
}

int shmf_layer_mark(shmf_t *f, uint64_t generation, uint64_t bits)
{
	struct view *v;
	shmf_reader_t rd;
	int r;

	if (f == NULL || (bits & ~(uint64_t)(SHMF_LAYER_OPENED | SHMF_LAYER_FULL | SHMF_LAYER_NEAR)) != 0)
		return SHMF_E_INVAL;
	if (!(f->flags & SHMF_RDWR))
		return SHMF_E_READONLY;
	if ((r = enter(f, &v, &rd)) < 0)
		return r;
	r = SHMF_E_NOTFOUND;
	for (unsigned i = 0; i < v->nparts; i++)
		if (v->p[i].data.hdr.generation == generation) {
			layer_mark(&v->p[i], bits);
			r = 0;
		}
	leave(rd);
	return r;
}

/* ---- Applying journal entries (journal.h) ------------------------------ */

/* The generation an entry of window @p w belongs to: the newest live one
 * whose window began at or before w (the one that was current then, also
 * across a rotation this host missed; the newest for a host whose clock is
 * ahead), or NULL if every live one began after it (w is retired). */
static struct part *part_for_window(struct view *v, uint32_t w)
{
	if (v->window_secs == 0)
		return &v->p[0];
	for (unsigned i = 0; i < v->nparts; i++)
		if (v->p[i].window <= w)
			return &v->p[i];
	return NULL;
}

/* One entry into view @p v; never journals. A growing filter's entry goes
 * where a local add or delete would: its current layer (or the next). */
static int apply_one(struct view *v, const struct shmf_jentry *e)
{
	if (e->op == 0 || e->op > SHMF_JOP_MAX)
		return SHMF_E_INVAL;
	if (v->type == VIEW_IMPORTED || v->type == SHMF_TYPE_STATIC)
		return no_write(v);
	if (v->type == SHMF_TYPE_BLOOM && e->op != SHMF_JOP_ADD)
		return SHMF_E_TYPE;
	if (v->grows) {
		if (v->type == SHMF_TYPE_BLOOM)
			return bloom_add_grows(v, e->hash, 0);
		if (e->op == SHMF_JOP_DEL)
			return cuckoo_del_view(v, e->hash, 0);
		struct part *at;
		int r = cuckoo_add_grows(v, e->hash, &at);
		if (r < 0)
			return r;
		count_new(at, 1);
		return 1;
	}
	struct part *p = part_for_window(v, e->window);
	if (p == NULL)
		return SHMF_JAPPLY_RETIRED;
	if (v->type == SHMF_TYPE_BLOOM)
		return bloom_add_hash(p, e->hash);
	struct shmf_cuckoo_key k = shmf_cuckoo_locate(&p->cuckoo, e->hash);
	int r;
	if (e->op == SHMF_JOP_DEL) {
		r = shmf_cuckoo_del(&p->cuckoo, &k);
		if (r == 1) {
			atomic_fetch_sub_explicit(p->items, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(p->deletes, 1, memory_order_relaxed);
		}
		return r;
	}
	/* ADD and CAPPED alike: the cap held where the add was made. */
	if ((r = shmf_cuckoo_add(&p->cuckoo, &k)) < 0)
		return r;
	count_new(p, 1);
	return 1;
}

int shmf_journal_apply(shmf_t *f, const struct shmf_jentry *e)
{
	struct view *v;
	shmf_reader_t rd;
	int r;

	if (f == NULL || e == NULL)
		return SHMF_E_INVAL;
	if (!(f->flags & SHMF_RDWR))
		return SHMF_E_READONLY;
	if ((r = enter(f, &v, &rd)) < 0)
		return r;
	r = apply_one(v, e);
	leave(rd);
	return r;
}

int shmf_journal_apply_many(shmf_t *f, const struct shmf_jentry *e, size_t n, struct shmf_japply_counts *c)
{
	struct view *v;
	shmf_reader_t rd;
	int r;

	if (f == NULL || c == NULL || (n != 0 && e == NULL))
		return SHMF_E_INVAL;
	if (!(f->flags & SHMF_RDWR))
		return SHMF_E_READONLY;
	if ((r = enter(f, &v, &rd)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		r = apply_one(v, &e[i]);
		if (r == 1)
			c->changed++;
		else if (r == 0)
			c->unchanged++;
		else if (r == SHMF_JAPPLY_RETIRED)
			c->retired++;
		else
			c->failed++, c->error = r;
	}
	leave(rd);
	return 0;
}

int shmf_journal_handle_stats(shmf_t *f, struct shmf_journal_writer_stats *out)
{
	if (f == NULL || out == NULL)
		return SHMF_E_INVAL;
	/* f->journal is made under remap_lock (view_open). */
	pthread_mutex_lock(&f->remap_lock);
	struct shmf_journal_writer *w = f->journal;
	pthread_mutex_unlock(&f->remap_lock);
	shmf_journal_writer_stats(w, out);
	return 0;
}
