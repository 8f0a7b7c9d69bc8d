/*
 * registry-internal.h - what registry.c shares with the other files of the
 * registry (registry-snapshot.c): making a data segment and publishing it.
 * Not for the rest of the daemon.
 */
#ifndef SHMD_REGISTRY_INTERNAL_H
#define SHMD_REGISTRY_INTERNAL_H

#include "geometry.h"
#include "registry.h"

/* Create generation @p gen's data file for @p spec, shaped @p p, with hash
 * seed @p seed: allocated, header written, not yet named by any slot.
 * @p fill_later: the caller writes every payload byte through the file
 * (a restore), so only the header and counter pages are allocated here. */
int registry_data_create(struct registry *r, const struct filter_spec *spec, const struct shmf_geometry *p,
			 uint64_t gen, uint64_t seed, int fill_later, char *err, size_t errlen);

/* The live generations of a filter, newest first. */
struct live_ring {
	unsigned n;
	uint64_t gen[SHMF_WINDOW_MAX];
	uint64_t created[SHMF_WINDOW_MAX];
};

/* Point @p slot at the generations of @p ring (ring->gen[0] the newest,
 * the one adds go to): one store that every client sees on its next call.
 * Window length and ring size come from @p spec. */
void registry_publish(struct registry *r, int slot, const struct filter_spec *spec, const struct shmf_geometry *p,
		      const struct live_ring *ring);

/* The spec (mode from the newest data file) and shape of the filter in a
 * slot copy. */
/* Filter @p name's slot, copied into @p copy and checked (its ring is in
 * range): the control file is shared memory that a writer other than shmd
 * may have scribbled on, and callers walk the ring. @return the slot
 * index, or a negative code with @p err naming the filter. */
int registry_slot_copy(struct registry *r, const char *name, struct shmf_slot *copy, char *err, size_t errlen);

void registry_spec_of(struct registry *r, const struct shmf_slot *s, struct filter_spec *spec, struct shmf_geometry *g);

/* Unlink the data files of @p ring's generations of filter @p name. */
void registry_unlink_ring(struct registry *r, const char *name, const struct live_ring *ring);

#endif
