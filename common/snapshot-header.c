/*
 * snapshot-header.c - what a snapshot header says of its filter, both
 * ways: filled from the filter's parameters and shape (for shmd's
 * snapshots and shmctl build alike, so the two cannot drift), and read
 * back as the shape a restored filter gets (snapshot.h).
 */
#include <stdio.h>
#include <string.h>

#include "libclient/cuckoo.h"
#include "libclient/segment-format.h"
#include "common/snapshot.h"

void snapshot_header_fill(struct shmf_snap_header *h, const struct filter_spec *spec, const struct shmf_geometry *g,
			  uint64_t seed, uint64_t created_epoch, uint64_t snapshot_epoch)
{
	h->type = g->type;
	h->k = g->k;
	h->capacity = spec->capacity;
	memcpy(&h->fpr_bits, &spec->fpr, sizeof(h->fpr_bits));
	h->nblocks = g->nblocks;
	h->nbuckets = g->nbuckets;
	h->max_kicks = g->max_kicks;
	h->bucket_size = g->bucket_size;
	h->scheme = g->scheme;
	h->seed = seed;
	h->created_epoch = created_epoch;
	h->snapshot_epoch = snapshot_epoch;
	h->window_secs = spec->window_secs;
	h->window_gens = spec->window_gens;
	h->expansion = spec->expansion;
	h->flags = (h->flags & ~(uint32_t)(SHMF_SNAP_F_LAYERED | SHMF_SNAP_F_NONSCALING)) |
		   (spec->expansion ? SHMF_SNAP_F_LAYERED : 0) | (spec->nonscaling ? SHMF_SNAP_F_NONSCALING : 0);
	/* NUL-padded: the header is checksummed whole. */
	memset(h->name, 0, sizeof(h->name));
	snprintf(h->name, sizeof(h->name), "%s", spec->name);
}

void snapshot_geometry(const struct shmf_snap_header *h, struct shmf_geometry *g)
{
	*g = (struct shmf_geometry){ .type = h->type,
				     .k = h->k,
				     .nblocks = h->nblocks,
				     .nbuckets = h->nbuckets,
				     .max_kicks = h->max_kicks,
				     .bucket_size = h->bucket_size,
				     .scheme = h->scheme,
				     .data_bytes = SHMF_DATA_BLOCKS_OFF + h->nblocks * SHMF_BLOCK_BYTES };
	/* Before version 3 every cuckoo bucket held 4 fingerprints (and the
	 * field was reserved, zero). */
	if (h->version < 3 && h->type == SHMF_TYPE_CUCKOO)
		g->bucket_size = SHMF_CUCKOO_SLOTS_DEFAULT;
	/* Before version 5 every Bloom filter had one line a key (and the
	 * field was zero). */
	if (h->version < 5 && h->type == SHMF_TYPE_BLOOM && h->scheme == SHMF_SCHEME_NATIVE)
		g->bucket_size = 1;
}

void snapshot_spec(const struct shmf_snap_header *h, struct filter_spec *spec)
{
	spec_defaults(spec, h->name);
	spec->type = (int)h->type;
	spec->capacity = h->capacity;
	memcpy(&spec->fpr, &h->fpr_bits, sizeof(spec->fpr));
	spec->window_secs = h->window_secs;
	spec->window_gens = h->window_gens;
	spec->expansion = (h->flags & SHMF_SNAP_F_LAYERED) ? h->expansion : 0;
	spec->nonscaling = (h->flags & SHMF_SNAP_F_NONSCALING) != 0;
}
