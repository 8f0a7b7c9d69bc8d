/* geometry.c - a filter's data-segment shape, for either type (geometry.h). */
#include "bloom.h"
#include "cuckoo.h"
#include "geometry.h"

static int geometry_size(int type, uint64_t capacity, double fpr, uint32_t max_kicks, uint32_t bucket_size,
			 int headroom, struct shmf_geometry *out)
{
	struct shmf_geometry g = { .type = (uint32_t)type };
	int r;

	switch (type) {
	case SHMF_TYPE_BLOOM: {
		struct shmf_bloom_params p;
		if (max_kicks != 0 || bucket_size != 0)
			return SHMF_E_INVAL;
		if ((r = shmf_bloom_size(capacity, fpr, &p)) < 0)
			return r;
		g.k = p.k;
		g.nblocks = p.nblocks;
		break;
	}
	case SHMF_TYPE_CUCKOO: {
		struct shmf_cuckoo_params p;
		if (max_kicks > SHMF_CUCKOO_KICKS_LIMIT)
			return SHMF_E_INVAL;
		if ((r = shmf_cuckoo_size(capacity, fpr, bucket_size ? bucket_size : SHMF_CUCKOO_SLOTS_DEFAULT,
					  headroom, &p)) < 0)
			return r;
		g.k = p.fp_bits;
		g.bucket_size = p.slots;
		g.nbuckets = p.nbuckets;
		g.max_kicks = max_kicks ? max_kicks : SHMF_CUCKOO_MAX_KICKS;
		g.nblocks = (sizeof(struct shmf_cuckoo_meta) + p.table_bytes) / SHMF_BLOCK_BYTES;
		break;
	}
	default: return SHMF_E_TYPE;
	}
	if (g.nblocks > (SHMF_DATA_MAX_BYTES - SHMF_DATA_BLOCKS_OFF) / SHMF_BLOCK_BYTES)
		return SHMF_E_TOOBIG;
	g.data_bytes = SHMF_DATA_BLOCKS_OFF + g.nblocks * SHMF_BLOCK_BYTES;
	*out = g;
	return 0;
}

int shmf_geometry_size(int type, uint64_t capacity, double fpr, uint32_t max_kicks, uint32_t bucket_size,
		       struct shmf_geometry *out)
{
	return geometry_size(type, capacity, fpr, max_kicks, bucket_size, 1, out);
}

static int same_shape(const struct shmf_geometry *a, const struct shmf_geometry *b)
{
	return a->type == b->type && a->k == b->k && a->nblocks == b->nblocks && a->nbuckets == b->nbuckets &&
	       a->max_kicks == b->max_kicks && a->bucket_size == b->bucket_size;
}

int shmf_geometry_sized(const struct shmf_geometry *g, uint64_t capacity, double fpr)
{
	struct shmf_geometry want;
	int r = geometry_size((int)g->type, capacity, fpr, g->max_kicks, g->bucket_size, 1, &want);
	if (r == 0 && same_shape(g, &want))
		return 0;
	/* Also when the headroom made the current sizing too big: the older
	 * one may still fit. */
	if (g->type == SHMF_TYPE_CUCKOO &&
	    geometry_size((int)g->type, capacity, fpr, g->max_kicks, g->bucket_size, 0, &want) == 0 &&
	    same_shape(g, &want))
		return 0;
	return r < 0 ? r : SHMF_E_FORMAT;
}

int shmf_geometry_check(uint32_t type, uint32_t k, uint32_t bucket_size, uint64_t nblocks, uint64_t nbuckets)
{
	if (nblocks == 0 || nblocks > (SHMF_DATA_MAX_BYTES - SHMF_DATA_BLOCKS_OFF) / SHMF_BLOCK_BYTES)
		return SHMF_E_FORMAT;
	switch (type) {
	case SHMF_TYPE_BLOOM: return k >= 1 && k <= SHMF_K_MAX && nbuckets == 0 && bucket_size == 0 ? 0 : SHMF_E_FORMAT;
	case SHMF_TYPE_CUCKOO:
		/* The bucket size decides the width of every word a client
		 * reads and CASes: one it does not know is refused here, before
		 * any index is computed from it. */
		if (!shmf_cuckoo_layout_ok(bucket_size, k) || nbuckets == 0 ||
		    nbuckets > SHMF_DATA_MAX_BYTES / (bucket_size * k / 8) ||
		    (shmf_cuckoo_even_buckets(bucket_size) && nbuckets % 2 != 0))
			return SHMF_E_FORMAT;
		if (nblocks * SHMF_BLOCK_BYTES !=
		    sizeof(struct shmf_cuckoo_meta) + shmf_cuckoo_table_bytes(nbuckets, k, bucket_size))
			return SHMF_E_FORMAT;
		return 0;
	default: return SHMF_E_FORMAT;
	}
}
