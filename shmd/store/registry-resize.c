/*
 * registry-resize.c - a live filter given a new capacity and error rate
 * (registry_resize(), registry.h).
 *
 * What can be done without the keys: a filter that holds no key yet (a
 * misjudged capacity caught before use) is replaced by an empty one of
 * the new shape, published like a swap. A filter that holds keys cannot:
 *
 *  - Bloom: a bit says some key set it, not which; a larger bit array
 *    needs every key hashed again.
 *  - cuckoo: a fingerprint can move between a key's two buckets without
 *    the key (alt(i, fp) needs only the bucket and the fingerprint), but
 *    not into a table of another size: a key's first bucket is the fast
 *    range of the high bits of its hash over the bucket count, so in a
 *    table of n' buckets it depends on hash bits that neither the
 *    fingerprint (the low bits) nor the bucket in the old table keep, and
 *    the old bucket does not even say which of the key's two it is.
 *
 * Both answers say so and name the way that works: `shmctl build` from
 * the keys, then `shmctl swap --reshape`.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "libclient/cuckoo.h"
#include "common/errmsg.h"
#include "libclient/geometry.h"
#include "shmd/base/log.h"
#include "shmd/store/quotas.h"
#include "shmd/store/generations.h"
#include "shmd/store/registry.h"
#include "common/spec.h"

/* 1 if no key was ever stored in generation @p gen of the filter @p copy
 * (its payload bits, or its bucket table, all zero), 0 if one was, or an error. */
static int generation_empty(struct registry *r, const struct shmf_slot *copy, uint64_t gen)
{
	struct shmf_data_map dm = { .fd = -1 };
	int rc = shmf_data_map_open_gen(&r->dir, copy, gen, 0, &dm);
	if (rc < 0)
		return rc;
	const uint64_t *w = dm.blocks;
	uint64_t words = dm.hdr.nblocks * 8;
	if (dm.hdr.type == SHMF_TYPE_CUCKOO) {
		/* The relocation state before the table counts moves, not keys. */
		w = (const uint64_t *)((const char *)dm.blocks + sizeof(struct shmf_cuckoo_meta));
		words = shmf_cuckoo_table_bytes(dm.hdr.nbuckets, dm.hdr.k, dm.hdr.bucket_size) / 8;
	}
	int empty = 1;
	for (uint64_t i = 0; i < words && empty; i++)
		empty = __atomic_load_n(&w[i], __ATOMIC_RELAXED) == 0;
	shmf_data_map_close(&dm);
	return empty;
}

/* A static filter's shape follows from its keys: no resize. */
static int static_refused(const char *name, char *err, size_t errlen)
{
	return errmsg(err, errlen, SHMF_E_TYPE,
		      "filter '%s' is a static filter (binary fuse): its shape follows from its keys; build it again "
		      "with shmctl build --type static and swap it in",
		      name);
}

/* Why filter @p copy, which holds keys, cannot be resized, and what to do. */
static int cannot(const struct shmf_slot *copy, uint64_t capacity, double fpr, char *err, size_t errlen)
{
	const char *why = copy->type == SHMF_TYPE_BLOOM
				  ? "a Bloom filter cannot be rebuilt from its bits (a bit does not say which keys "
				    "set it)"
				  : "a cuckoo filter's fingerprints cannot move to a table of another size (a key's "
				    "bucket there depends on bits of its hash that neither its fingerprint nor its "
				    "bucket here keep)";
	return errmsg(err, errlen, SHMF_E_TYPE,
		      "filter '%s' holds keys, and %s: build the new filter from the keys with `shmctl build --type "
		      "%s --capacity %" PRIu64 " --fpr %g --from KEYS -o FILE`, then `shmctl swap %s FILE --reshape`",
		      copy->name, why, spec_type_name((int)copy->type), capacity, fpr, copy->name);
}

int registry_resize(struct registry *r, const char *name, uint64_t capacity, double fpr, char *err, size_t errlen)
{
	struct shmf_slot copy;
	int slot = registry_slot_copy(r, name, &copy, err, errlen), rc;
	if (slot < 0)
		return slot;
	if (copy.type == SHMF_TYPE_STATIC)
		return static_refused(name, err, errlen);
	if (copy.scheme != SHMF_SCHEME_NATIVE)
		return errmsg(err, errlen, SHMF_E_TYPE,
			      "filter '%s' was imported from RedisBloom and is read-only: its shape is RedisBloom's; "
			      "build a filter of shmfilter's own from the keys instead (shmctl build)",
			      name);
	struct filter_spec spec;
	struct shmf_geometry old, g;
	registry_spec_of(r, &copy, &spec, &old);
	if (fpr <= 0.0)
		fpr = spec.fpr;
	struct shmf_data_map dm = { .fd = -1 };
	if ((rc = shmf_data_map_open(&r->dir, &copy, 0, &dm)) < 0)
		return errmsg(err, errlen, rc, "filter '%s': cannot map its newest generation: %s", name,
			      shmf_strerror(rc));
	uint64_t seed = dm.hdr.seed;
	uint32_t kicks = dm.hdr.max_kicks, bucket_size = dm.hdr.bucket_size; /* both kept */
	shmf_data_map_close(&dm);
	/* A growing filter keeps growing: its new first layer. */
	struct filter_spec want = spec, first;
	want.capacity = capacity;
	want.fpr = fpr;
	want.max_kicks = kicks;
	want.bucket_size = bucket_size;
	if ((rc = registry_layer_spec(&want, 0, &first, &g)) < 0)
		return errmsg(err, errlen, rc, "filter '%s': capacity %" PRIu64 " at error rate %g %s", name, capacity,
			      fpr,
			      rc == SHMF_E_INVAL ? "cannot be reached by this type"
						 : "needs more memory than this host has");
	/* What the new shape will hold: every generation of a window (as at
	 * creation), checked against the host and, for a writer's filter,
	 * its quotas, before anything is made. */
	uint64_t gens = spec.window_gens ? spec.window_gens : 1, after = g.data_bytes * gens;
	char what[SHMF_NAME_MAX + 96];
	snprintf(what, sizeof(what), "filter '%s': capacity %" PRIu64 " at error rate %g", name, capacity, fpr);
	if ((rc = registry_room(r, what, after, err, errlen)) < 0)
		return rc;
	snprintf(what, sizeof(what), "resizing it to capacity %" PRIu64 " at error rate %g", capacity, fpr);
	if ((rc = quotas_may_change(r, slot, after, what, err, errlen)) < 0)
		return rc;
	if (g.k == old.k && g.nblocks == old.nblocks && g.nbuckets == old.nbuckets)
		return errmsg(err, errlen, SHMF_E_EXISTS, "filter '%s' already has that shape (%" PRIu64 " bytes)",
			      name, old.data_bytes);
	if (copy.flags & SHMF_SLOT_REPLICATED)
		return errmsg(err, errlen, SHMF_E_TYPE,
			      "filter '%s' replicates: every node would have to change its shape at once (the others "
			      "refuse a foreign shape); drop and create it with the new size on every node",
			      name);
	for (unsigned i = 0; i < copy.nlive; i++) {
		if ((rc = generation_empty(r, &copy, copy.live[i])) < 0)
			return errmsg(err, errlen, rc, "filter '%s': cannot read generation %" PRIu64 ": %s", name,
				      copy.live[i], shmf_strerror(rc));
		if (rc == 0)
			return cannot(&copy, capacity, fpr, err, errlen);
	}
	/* Empty: a new, empty generation of the new shape replaces the ring,
	 * as a swap would. Adds that reach the old generation between the
	 * look above and the publication go with it, as with any swap. */
	spec.capacity = capacity;
	spec.fpr = fpr;
	uint64_t gen = r->ctl.hdr->last_generation + 1;
	if ((rc = registry_data_create(r, &first, &g, gen, seed, 0, err, errlen)) < 0)
		return rc;
	r->ctl.hdr->last_generation = gen;
	struct live_ring ring = { .n = 1, .gen = { gen }, .created = { (uint64_t)time(NULL) } }, retired = { 0 };
	retired.n = copy.nlive;
	memcpy(retired.gen, copy.live, sizeof(retired.gen));
	registry_publish(r, slot, &spec, &g, &ring);
	registry_unlink_ring(r, name, &retired);
	log_msg(LOG_INFO,
		"filter '%s': resized (it held no key) from %" PRIu64 " to %" PRIu64 " keys at fpr %g, %" PRIu64
		" bytes, generation %" PRIu64,
		name, copy.capacity, capacity, fpr, g.data_bytes, gen);
	return 0;
}
