/*
 * grow.c - growing filters' next layers (grow.h; docs/design.md, "Layers").
 *
 * shmd writes nothing on an adder's path: adders count a layer's fill and
 * open the standby themselves. What shmd does, per growing filter and
 * tick: read the current layer's count and state through its own handle
 * (shmf_layers: a sum of 64 counter stripes), and
 *   - at half the capacity, with no standby and fewer than shmf_layers_max()
 *     layers, make the next layer: generation numbers reserved on the loop
 *     (the file's, and one more for its promotion), the data file made and
 *     allocated, then published on the loop as the standby (the ring gains
 *     it in front, SHMF_SLOT_STANDBY), if the filter is still the one it
 *     was made for. A layer of more than GROW_INLINE_KEYS keys is made on
 *     the file worker (its pages take long to allocate: about 0.2 ms a
 *     MiB); a smaller one, at most a few MiB (under a millisecond, and its
 *     sizing's 2 ms the first time), at once on the loop, so that adds
 *     through the socket, which arrive faster than the tick, find it
 *     (docs/benchmarks.md, "Growing filters", has the times);
 *   - once an adder opened the standby, publish the same ring without the
 *     flag under the reserved number, so that every handle maps the layers
 *     with the standby as its current one;
 *   - mark a layer FULL at its capacity if no adder did (a NONSCALING
 *     filter's too).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "shmd/files/grow.h"
#include "shmd/files/jobs.h"
#include "libclient/layers.h"
#include "shmd/base/log.h"
#include "shmd/resp/reply-errors.h"
#include "shmd/store/quotas.h"
#include "shmd/store/generations.h"
#include "common/spec.h"

int grow_any(struct registry *r)
{
	for (unsigned i = 0; i < SHMF_SLOTS; i++) {
		const struct shmf_slot *s = &r->ctl.slots[i];
		if (atomic_load_explicit(&s->generation, memory_order_relaxed) != 0 &&
		    (s->flags & (SHMF_SLOT_LAYERED | SHMF_SLOT_NONSCALING)))
			return 1;
	}
	return 0;
}

/* A next layer being made: prepared on the loop, its file made on the
 * file worker, published (or removed) on the loop. */
struct grow_job {
	struct job j;
	int slot;
	struct filter_spec base; /* the filter's spec: its first layer's capacity and rate, its expansion */
	unsigned layer;          /* the layer being made */
	uint64_t gen;            /* its data file's generation; gen + 1 is reserved for its promotion */
	uint64_t after;          /* the newest generation when it began: published only if still so */
	uint64_t seed;
	uint64_t bytes; /* its data file's size, once known */
};

/* The shape of layer @p layer of the growing filter @p base: 0, or an
 * error in @p err saying why it cannot be made (its capacity, the
 * first's times expansion^layer, past 2^64, or a sizing that fails). */
static int layer_shape(const struct filter_spec *base, unsigned layer, struct filter_spec *ls,
		       struct shmf_geometry *geo, char *err, size_t errlen)
{
	int rc = registry_layer_spec(base, layer, ls, geo);
	if (rc == SHMF_E_TOOBIG)
		return errmsg(err, errlen, rc,
			      "filter '%s': layer %u would hold %" PRIu64 " x %u^%u keys, more than can be counted "
			      "(2^64)",
			      base->name, layer, base->capacity, base->expansion, layer);
	if (rc < 0)
		return errmsg(err, errlen, rc, "filter '%s': layer %u cannot be sized: %s", base->name, layer,
			      shmf_strerror(rc));
	return 0;
}

static void grow_work(struct job *j)
{
	struct grow_job *g = (struct grow_job *)j;
	struct filter_spec ls;
	struct shmf_geometry geo;
	char what[SHMF_NAME_MAX + 64];
	/* The sizing (milliseconds for a Bloom layer) off the loop too. */
	if ((j->rc = layer_shape(&g->base, g->layer, &ls, &geo, j->err, sizeof(j->err))) < 0)
		return;
	g->bytes = geo.data_bytes;
	/* Before any page: a layer the host cannot hold is refused here, not
	 * found out by the allocation (fstatvfs and the limits are safe to
	 * read from a worker). */
	snprintf(what, sizeof(what), "filter '%s': layer %u", g->base.name, g->layer);
	if ((j->rc = registry_room(j->reg, what, geo.data_bytes, j->err, sizeof(j->err))) < 0)
		return;
	j->rc = registry_data_create(j->reg, &ls, &geo, g->gen, g->seed, 0, j->err, sizeof(j->err));
}

/* Why growth stopped, per slot: the generation it stopped after
 * (r->grow_stuck) and the sentence an add that finds the filter full
 * answers with. A table of the daemon's one registry. */
static struct {
	const struct registry *reg;
	uint64_t after;
	char why[REGISTRY_ERR_MAX];
} stopped[SHMF_SLOTS];

/* The filter in @p slot grows no more after generation @p after, for @p why (logged once). */
static void stop_growing(struct registry *r, int slot, uint64_t after, const char *why, int type)
{
	r->grow_stuck[slot] = after;
	stopped[slot].reg = r;
	stopped[slot].after = after;
	snprintf(stopped[slot].why, sizeof(stopped[slot].why), "%s", why);
	log_msg(LOG_WARNING, "%s; the filter grows no more for now (adds %s)", why,
		type == SHMF_TYPE_BLOOM
			? "of new keys through the socket answer 'filter is full' once its last layer is, "
			  "through libshmf overfill it"
			: "answer 'filter is full' once it is");
}

int grow_refused(struct registry *r, int slot, char *why, size_t len)
{
	const struct shmf_slot *s = &r->ctl.slots[slot];
	shmf_t *h;
	char err[REGISTRY_ERR_MAX];
	struct shmf_layer_status st[SHMF_LAYERS_MAX];
	if (!(s->flags & SHMF_SLOT_LAYERED) || (s->flags & SHMF_SLOT_STANDBY) || stopped[slot].reg != r ||
	    r->grow_stuck[slot] != s->live[0] || stopped[slot].after != s->live[0])
		return 0;
	if (registry_handle(r, slot, &h, err, sizeof(err)) < 0 || shmf_layers(h, st, SHMF_LAYERS_MAX) <= 0)
		return 0;
	if (!(st[0].state & SHMF_LAYER_FULL) && st[0].items < st[0].capacity)
		return 0;
	snprintf(why, len, "%s", stopped[slot].why);
	return 1;
}

static void grow_done(struct job *j, struct registry *r)
{
	struct grow_job *g = (struct grow_job *)j;
	const char *name = g->base.name;
	struct shmf_slot *s = &r->ctl.slots[g->slot];
	r->grow_making[g->slot] = 0;
	if (j->rc < 0) {
		if (j->rc != -ECANCELED)
			stop_growing(r, g->slot, g->after, j->err, g->base.type);
		free(g);
		return;
	}
	/* Still the filter, and the ring, it was made for? */
	struct live_ring made = { .n = 1, .gen = { g->gen } };
	if (registry_find(r, name) != g->slot || s->live[0] != g->after || !(s->flags & SHMF_SLOT_LAYERED) ||
	    (s->flags & SHMF_SLOT_STANDBY) || s->nlive != g->layer) {
		log_msg(LOG_INFO, "filter '%s': changed while its layer %u was made; that layer is dropped", name,
			g->layer);
		registry_unlink_ring(r, name, &made);
		free(g);
		return;
	}
	struct shmf_slot copy;
	struct filter_spec spec;
	struct shmf_geometry geo;
	if (shmf_slot_read(s, &copy) < 0 || shmf_slot_check(&copy) < 0) {
		registry_unlink_ring(r, name, &made);
		free(g);
		return;
	}
	registry_spec_of(r, &copy, &spec, &geo);
	struct live_ring ring = { .n = copy.nlive + 1, .standby = 1 };
	ring.gen[0] = g->gen;
	ring.created[0] = (uint64_t)time(NULL);
	memcpy(ring.gen + 1, copy.live, copy.nlive * sizeof(ring.gen[0]));
	memcpy(ring.created + 1, copy.live_created, copy.nlive * sizeof(ring.created[0]));
	registry_publish(r, g->slot, &spec, &geo, &ring);
	log_msg(LOG_INFO, "filter '%s': layer %u made ahead (generation %" PRIu64 ", %" PRIu64 " bytes)", name,
		g->layer, g->gen, g->bytes);
	free(g);
}

/* Layers up to this many keys are made on the loop: at most 4.5 MiB
 * (a blocked Bloom layer at 1e-9 takes 79 bits a key, cuckoo at most 17). */
#define GROW_INLINE_KEYS (UINT64_C(1) << 19)

/* Begin making the next layer of the filter in @p slot (@p copy, checked). */
static void start_layer(struct registry *r, int slot, const struct shmf_slot *copy)
{
	struct grow_job *g = calloc(1, sizeof(*g));
	struct shmf_data_map dm = { .fd = -1 };
	struct shmf_geometry geo;
	if (g == NULL)
		return;
	registry_spec_of(r, copy, &g->base, &geo);
	/* The seed and relocation bound every layer shares. */
	if (shmf_data_map_open(&r->dir, copy, 0, &dm) < 0) {
		free(g);
		return;
	}
	g->seed = dm.hdr.seed;
	g->base.max_kicks = dm.hdr.type == SHMF_TYPE_CUCKOO ? dm.hdr.max_kicks : 0;
	shmf_data_map_close(&dm);
	g->slot = slot;
	g->layer = copy->nlive;
	/* A writer's filter: its quotas hold for its whole life, so the
	 * layer is sized here (a millisecond, cached per shape) and checked
	 * against them before a generation number or a page is taken. */
	if (r->quotas != NULL && quotas_owner(r, copy->name, NULL)) {
		struct filter_spec ls;
		struct shmf_geometry lg;
		char why[REGISTRY_ERR_MAX], what[96];
		int rc = layer_shape(&g->base, g->layer, &ls, &lg, why, sizeof(why));
		if (rc == 0) {
			snprintf(what, sizeof(what), "growing its layer %u of %" PRIu64 " bytes", g->layer,
				 lg.data_bytes);
			uint64_t now = quotas_filter_bytes(r, slot);
			rc = quotas_may_change(r, slot, now + lg.data_bytes, what, why, sizeof(why));
		}
		if (rc < 0) {
			stop_growing(r, slot, copy->live[0], why, (int)copy->type);
			free(g);
			return;
		}
	}
	g->after = copy->live[0];
	g->gen = r->ctl.hdr->last_generation + 1;
	r->ctl.hdr->last_generation = g->gen + 1;
	r->grow_making[slot] = g->after;
	/* Not the filter's job: nothing waits for it, and requests on the
	 * filter (adds, snapshots) go on meanwhile. */
	g->j.filter[0] = '\0';
	g->j.work = grow_work;
	g->j.done = grow_done;
	uint64_t keys = g->base.capacity;
	for (unsigned i = 0; i < g->layer && keys <= GROW_INLINE_KEYS; i++)
		keys *= g->base.expansion;
	if (keys > GROW_INLINE_KEYS) {
		jobs_submit(&g->j, r);
		return;
	}
	/* Small: the sizing (cached per shape) and the file, here and now. */
	g->j.reg = r;
	grow_work(&g->j);
	grow_done(&g->j, r);
}

/* Make the standby of the filter in @p slot (@p copy) its current layer. */
static void promote(struct registry *r, int slot, const struct shmf_slot *copy)
{
	struct filter_spec spec;
	struct shmf_geometry geo;
	registry_spec_of(r, copy, &spec, &geo);
	struct live_ring ring = { .n = copy->nlive, .promoted = 1 };
	memcpy(ring.gen, copy->live, sizeof(ring.gen));
	memcpy(ring.created, copy->live_created, sizeof(ring.created));
	registry_publish(r, slot, &spec, &geo, &ring);
	r->counts[slot].growths++;
	log_msg(LOG_INFO, "filter '%s': layer %u (generation %" PRIu64 ") is current; %u layers", copy->name,
		copy->nlive - 1, copy->live[0], copy->nlive);
}

void grow_filter(struct registry *r, int slot)
{
	char err[REGISTRY_ERR_MAX];
	struct shmf_slot copy;
	struct shmf_layer_status st[SHMF_LAYERS_MAX];
	shmf_t *h;
	struct shmf_slot *s = &r->ctl.slots[slot];
	if (shmf_slot_read(s, &copy) < 0 || shmf_slot_check(&copy) < 0 ||
	    !(copy.flags & (SHMF_SLOT_LAYERED | SHMF_SLOT_NONSCALING)))
		return;
	if (registry_handle(r, slot, &h, err, sizeof(err)) < 0)
		return;
	int n = shmf_layers(h, st, SHMF_LAYERS_MAX);
	if (n <= 0)
		return;
	/* The handle's view is the slot's now, or newer than the copy: act
	 * on the copy only if they agree. */
	const struct shmf_layer_status *cur = &st[0];
	if (cur->items >= cur->capacity && !(cur->state & SHMF_LAYER_FULL))
		shmf_layer_mark(h, cur->generation, SHMF_LAYER_FULL | SHMF_LAYER_NEAR);
	if (!(copy.flags & SHMF_SLOT_LAYERED) || (unsigned)n != copy.nlive)
		return;
	if (copy.flags & SHMF_SLOT_STANDBY) {
		if (st[n - 1].standby && (st[n - 1].state & SHMF_LAYER_OPENED))
			promote(r, slot, &copy);
		return;
	}
	/* Half full: time to make the next one. */
	if (r->grow_making[slot] != 0 || r->grow_stuck[slot] == copy.live[0] || cur->items < (cur->capacity + 1) / 2)
		return;
	if (copy.nlive >= shmf_layers_max(copy.type)) {
		log_msg(LOG_WARNING,
			"filter '%s': has its %u layers and grows no more (adds %s once its last layer is full)",
			copy.name, shmf_layers_max(copy.type),
			copy.type == SHMF_TYPE_BLOOM ? "overfill it" : "answer 'filter is full'");
		r->grow_stuck[slot] = copy.live[0];
		return;
	}
	start_layer(r, slot, &copy);
}

void grow_tick(struct registry *r)
{
	static uint64_t last_ms;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	if (now == last_ms)
		return;
	last_ms = now;
	for (unsigned i = 0; i < SHMF_SLOTS; i++) {
		const struct shmf_slot *s = &r->ctl.slots[i];
		if (atomic_load_explicit(&s->generation, memory_order_relaxed) != 0 &&
		    (s->flags & (SHMF_SLOT_LAYERED | SHMF_SLOT_NONSCALING)))
			grow_filter(r, (int)i);
	}
}

/* Whether the growing cuckoo filter in @p slot has every layer it may have. */
static int cuckoo_layers_all(struct registry *r, int slot)
{
	char err[REGISTRY_ERR_MAX];
	struct filter_info fi;
	const struct shmf_slot *s = &r->ctl.slots[slot];
	if (s->type != SHMF_TYPE_CUCKOO || !(s->flags & SHMF_SLOT_LAYERED))
		return 0;
	return registry_info(r, slot, &fi, err, sizeof(err)) == 0 && fi.nlayers >= shmf_layers_max(SHMF_TYPE_CUCKOO);
}

void grow_reply_full(struct registry *r, int slot, struct reply *out)
{
	char why[REGISTRY_ERR_MAX];
	if (slot >= 0 && grow_refused(r, slot, why, sizeof(why)))
		reply_error(out, "%s: %s", rb_error_text(RB_FILTER_FULL), why);
	else if (slot >= 0 && cuckoo_layers_all(r, slot))
		reply_rb_error(out, RB_MAX_EXPANSIONS);
	else
		reply_rb_error(out, RB_FILTER_FULL);
}
