/* geometry.c - a filter's data-segment shape, for either type, and the
 * shape of each layer of a growing filter (geometry.h). */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "libclient/bloom.h"
#include "libclient/cuckoo.h"
#include "libclient/fuse.h"
#include "libclient/geometry.h"

/* A cuckoo filter's table for @p bucket_size, or where none was asked
 * for, buckets of 4 (SHMF_CUCKOO_SLOTS_DEFAULT), and below the rates their
 * fingerprints reach, buckets of 2: 16-bit fingerprints down to about
 * 4.9e-5 at 20 bits a key, then 32-bit ones (about 7.6e-10 at 39 bits a
 * key), each the least memory that reaches the rate (docs/design.md
 * section 5). */
static int cuckoo_size(uint64_t capacity, double fpr, uint32_t bucket_size, int headroom, struct shmf_cuckoo_params *p)
{
	if (bucket_size != 0)
		return shmf_cuckoo_size(capacity, fpr, bucket_size, headroom, p);
	int r = shmf_cuckoo_size(capacity, fpr, SHMF_CUCKOO_SLOTS_DEFAULT, headroom, p);
	if (r == SHMF_E_INVAL && capacity != 0 && fpr > 0.0 && fpr < 1.0)
		r = shmf_cuckoo_size(capacity, fpr, SHMF_CUCKOO_SLOTS_LOW_RATE, headroom, p);
	return r;
}

static int geometry_size(int type, uint64_t capacity, double fpr, uint32_t max_kicks, uint32_t bucket_size,
			 int headroom, struct shmf_geometry *out)
{
	struct shmf_geometry g = { .type = (uint32_t)type };
	int r;

	switch (type) {
	case SHMF_TYPE_BLOOM: {
		/* A Bloom filter's bucket size is its lines a key: 0 asks
		 * for the sizing's choice. */
		struct shmf_bloom_params p;
		if (max_kicks != 0 || bucket_size > SHMF_BLOOM_LINES_MAX)
			return SHMF_E_INVAL;
		if ((r = shmf_bloom_size(capacity, fpr, bucket_size, &p)) < 0)
			return r;
		g.k = p.k;
		g.bucket_size = p.lines;
		g.nblocks = p.nblocks;
		break;
	}
	case SHMF_TYPE_CUCKOO: {
		struct shmf_cuckoo_params p;
		if (max_kicks > SHMF_CUCKOO_KICKS_LIMIT)
			return SHMF_E_INVAL;
		if ((r = cuckoo_size(capacity, fpr, bucket_size, headroom, &p)) < 0)
			return r;
		g.k = p.fp_bits;
		g.bucket_size = p.slots;
		g.nbuckets = p.nbuckets;
		g.max_kicks = max_kicks ? max_kicks : SHMF_CUCKOO_MAX_KICKS;
		g.nblocks = (sizeof(struct shmf_cuckoo_meta) + p.table_bytes) / SHMF_BLOCK_BYTES;
		break;
	}
	case SHMF_TYPE_STATIC: {
		/* A static filter's shape follows from its keys and rate alone:
		 * a bucket size asked for (the segment length read back from a
		 * file, shmf_geometry_sized) is compared, not used. */
		struct shmf_fuse_params p;
		if (max_kicks != 0)
			return SHMF_E_INVAL;
		if ((r = shmf_fuse_size(capacity, fpr, &p)) < 0)
			return r;
		g.k = p.fp_bits;
		g.bucket_size = p.segment_len;
		g.nbuckets = p.array_len;
		g.nblocks = p.nblocks;
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

/* Sizings done, per process: a Bloom sizing searches 32 values of k
 * (about 15 ms), and every open or remap of a grown filter validates each
 * of its layers against one. Shapes never change, so a hit is exact. */
#define CACHE_SLOTS 64
static struct cached_size {
	int type;
	uint32_t max_kicks;
	uint32_t bucket_size;
	uint64_t capacity;
	uint64_t fpr_bits;
	struct shmf_geometry g;
} cache[CACHE_SLOTS];
static unsigned cache_used, cache_next;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static int sized_cached(int type, uint64_t capacity, double fpr, uint32_t max_kicks, uint32_t bucket_size,
			struct shmf_geometry *out)
{
	uint64_t bits;
	memcpy(&bits, &fpr, sizeof(bits));
	pthread_mutex_lock(&cache_lock);
	for (unsigned i = 0; i < cache_used; i++)
		if (cache[i].type == type && cache[i].capacity == capacity && cache[i].fpr_bits == bits &&
		    cache[i].max_kicks == max_kicks && cache[i].bucket_size == bucket_size) {
			*out = cache[i].g;
			pthread_mutex_unlock(&cache_lock);
			return 0;
		}
	pthread_mutex_unlock(&cache_lock);
	int r = geometry_size(type, capacity, fpr, max_kicks, bucket_size, 1, out);
	if (r < 0)
		return r;
	pthread_mutex_lock(&cache_lock);
	cache[cache_next] = (struct cached_size){ type, max_kicks, bucket_size, capacity, bits, *out };
	cache_next = (cache_next + 1) % CACHE_SLOTS;
	if (cache_used < CACHE_SLOTS)
		cache_used++;
	pthread_mutex_unlock(&cache_lock);
	return 0;
}

int shmf_geometry_size(int type, uint64_t capacity, double fpr, uint32_t max_kicks, uint32_t bucket_size,
		       struct shmf_geometry *out)
{
	return sized_cached(type, capacity, fpr, max_kicks, bucket_size, out);
}

uint32_t shmf_geometry_bucket_size(uint64_t capacity, double fpr)
{
	struct shmf_geometry g;
	if (sized_cached(SHMF_TYPE_CUCKOO, capacity, fpr, 0, 0, &g) == 0)
		return g.bucket_size;
	return SHMF_CUCKOO_SLOTS_DEFAULT;
}

unsigned shmf_layers_max(uint32_t type)
{
	return type == SHMF_TYPE_CUCKOO ? SHMF_CUCKOO_LAYERS_MAX : SHMF_LAYERS_MAX;
}

int shmf_geometry_layer(int type, uint64_t capacity, double fpr, uint32_t max_kicks, uint32_t bucket_size,
			uint32_t expansion, unsigned i, struct shmf_layer *out)
{
	struct shmf_layer l = { .capacity = capacity, .fpr = fpr };
	int r;

	if (expansion > SHMF_EXPANSION_MAX || i >= shmf_layers_max((uint32_t)type) || (expansion == 0 && i != 0))
		return SHMF_E_INVAL;
	if (type != SHMF_TYPE_BLOOM && type != SHMF_TYPE_CUCKOO && type != SHMF_TYPE_STATIC)
		return SHMF_E_TYPE;
	if (type == SHMF_TYPE_STATIC && expansion != 0)
		return SHMF_E_INVAL; /* a static filter never grows */
	if (expansion == 0)
		return (r = sized_cached(type, capacity, fpr, max_kicks, bucket_size, &l.g)) < 0 ? r : (*out = l, 0);
	for (unsigned j = 0; j < i; j++) {
		if (l.capacity > UINT64_MAX / expansion)
			return SHMF_E_TOOBIG;
		l.capacity *= expansion;
	}
	if (type == SHMF_TYPE_BLOOM) {
		/* The first layer is tightened too, so that the rates of every
		 * layer sum to less than the declared one, with a margin for
		 * what one filter's realised rate varies by (geometry.h). */
		l.fpr = fpr * SHMF_LAYER_MARGIN * pow(SHMF_LAYER_TIGHTENING, (double)(i + 1));
		double floor = fmin(SHMF_LAYER_FPR_FLOOR, fpr * SHMF_LAYER_MARGIN * SHMF_LAYER_TIGHTENING);
		if (l.fpr < floor)
			l.fpr = floor;
		/* Every layer keeps the first layer's lines, as a cuckoo
		 * filter's its bucket size: one shape rule for the filter's
		 * life (a filter restored from a file of one line a key grows
		 * in one-line layers). */
		if (bucket_size == 0 && i > 0) {
			struct shmf_layer first;
			if ((r = shmf_geometry_layer(type, capacity, fpr, max_kicks, 0, expansion, 0, &first)) < 0)
				return r;
			bucket_size = first.g.bucket_size;
		}
		if ((r = sized_cached(type, l.capacity, l.fpr, max_kicks, bucket_size, &l.g)) < 0)
			return r;
		*out = l;
		return 0;
	}
	/* Cuckoo: layer 0 as any cuckoo filter; the others its fingerprint
	 * and bucket sizes (a layer's rate is layer 0's, and a handle reads
	 * every layer with the one layout), and buckets for their own
	 * capacity. */
	struct shmf_geometry base;
	if ((r = sized_cached(type, capacity, fpr, max_kicks, bucket_size, &base)) < 0)
		return r;
	l.g = base;
	if (i > 0) {
		uint64_t nb;
		if ((r = shmf_cuckoo_buckets(l.capacity, base.bucket_size, base.k, 1, &nb)) < 0)
			return r;
		l.g.nbuckets = nb;
		l.g.nblocks = (sizeof(struct shmf_cuckoo_meta) +
			       shmf_cuckoo_table_bytes(nb, base.k, base.bucket_size)) /
			      SHMF_BLOCK_BYTES;
		if (l.g.nblocks > (SHMF_DATA_MAX_BYTES - SHMF_DATA_BLOCKS_OFF) / SHMF_BLOCK_BYTES)
			return SHMF_E_TOOBIG;
		l.g.data_bytes = SHMF_DATA_BLOCKS_OFF + l.g.nblocks * SHMF_BLOCK_BYTES;
	}
	*out = l;
	return 0;
}

static int same_shape(const struct shmf_geometry *a, const struct shmf_geometry *b)
{
	return a->type == b->type && a->scheme == b->scheme && a->k == b->k && a->nblocks == b->nblocks &&
	       a->nbuckets == b->nbuckets && a->max_kicks == b->max_kicks && a->bucket_size == b->bucket_size;
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

int shmf_geometry_check(uint32_t type, uint32_t scheme, uint32_t k, uint32_t bucket_size, uint64_t nblocks,
			uint64_t nbuckets)
{
	if (nblocks == 0 || nblocks > (SHMF_DATA_MAX_BYTES - SHMF_DATA_BLOCKS_OFF) / SHMF_BLOCK_BYTES)
		return SHMF_E_FORMAT;
	if (scheme != SHMF_SCHEME_NATIVE)
		return ((scheme == SHMF_SCHEME_RB_BLOOM && type == SHMF_TYPE_BLOOM) ||
			(scheme == SHMF_SCHEME_RB_CUCKOO && type == SHMF_TYPE_CUCKOO)) &&
				       k == 0 && bucket_size == 0 && nbuckets == 0 && nblocks >= 3
			       ? 0
			       : SHMF_E_FORMAT;
	switch (type) {
	case SHMF_TYPE_BLOOM:
		return k >= 1 && k <= SHMF_K_MAX && nbuckets == 0 && bucket_size >= 1 &&
				       bucket_size <= SHMF_BLOOM_LINES_MAX
			       ? 0
			       : SHMF_E_FORMAT;
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
	case SHMF_TYPE_STATIC: return shmf_fuse_shape_check(k, bucket_size, nblocks, nbuckets);
	default: return SHMF_E_FORMAT;
	}
}
