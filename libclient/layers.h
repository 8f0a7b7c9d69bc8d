/*
 * layers.h - what shmd reads and marks of a growing filter's layers
 * through its own handle (client.c; docs/design.md, "Layers"). Internal:
 * nothing here is exported from libshmf.so.
 */
#ifndef SHMF_LAYERS_H
#define SHMF_LAYERS_H

#include <stdint.h>

#include <shmf.h>

/* One layer (or generation) of a filter, as the handle maps it. */
struct shmf_layer_status {
	uint64_t generation;  /* its data file's */
	unsigned layer;       /* a growing filter's layer number, 0 the oldest; else 0 */
	int standby;          /* 1: the standby, made ahead and not yet current */
	uint64_t capacity;    /* keys it holds before it is full */
	double fpr;           /* the error rate it is sized for */
	uint64_t items;       /* its item counters summed (Bloom: new keys; cuckoo: copies) */
	uint64_t deletes;     /* cuckoo: copies deleted */
	uint64_t bytes;       /* its data file */
	uint64_t state;       /* SHMF_LAYER_* */
	uint32_t k;           /* Bloom: bits per key; cuckoo: fingerprint bits */
	uint32_t max_kicks;   /* cuckoo */
	uint32_t bucket_size; /* cuckoo: fingerprints per bucket; Bloom: lines a key; every layer's the first's */
	uint64_t nblocks, nbuckets;
	uint32_t links;  /* an import from RedisBloom: its links (sub-filters); else 0 */
	uint32_t growth; /* an import: its table's growth (RedisBloom's expansion rate); else 0 */
};

/**
 * The parts of the view of @p f (refreshed first, as any call): the
 * current layer (or newest generation) first, the older ones after it,
 * a standby last; at most @p max of them into @p out.
 * @return how many, or an error from entering the handle.
 */
int shmf_layers(shmf_t *f, struct shmf_layer_status *out, unsigned max);

/**
 * Set state bits @p bits (SHMF_LAYER_*) of the layer whose data file is
 * generation @p generation, as an adder would (shmd: FULL, when its count
 * reached the capacity and no adder saw it).
 * @return 0, SHMF_E_NOTFOUND (no such layer in the view), SHMF_E_INVAL,
 *         SHMF_E_READONLY.
 */
int shmf_layer_mark(shmf_t *f, uint64_t generation, uint64_t bits);

#endif
