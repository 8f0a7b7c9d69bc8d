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
 * seed @p seed: allocated, header written, not yet named by any slot. */
int registry_data_create(struct registry *r, const struct filter_spec *spec, const struct shmf_geometry *p,
			 uint64_t gen, uint64_t seed, char *err, size_t errlen);

/* Point @p slot at generation @p gen of the filter: one store that every
 * client sees on its next call. */
void registry_publish(struct registry *r, int slot, const struct filter_spec *spec, const struct shmf_geometry *p,
		      uint64_t gen, uint64_t created);

#endif
