/* fuse.c - static filters (binary fuse, arity 3): sizing, the table's
 * check and the batch check (fuse.h). Construction: common/fuse-build.c. */
#include <math.h>
#include <string.h>

#include "libclient/fuse.h"
#include "libclient/segment-format.h"

double shmf_fuse_fpr(uint32_t fp_bits)
{
	return ldexp(1.0, -(int)fp_bits);
}

uint32_t shmf_fuse_bits_for(double fpr)
{
	if (!(fpr > 0.0 && fpr < 1.0))
		return 0;
	static const uint32_t widths[] = { 8, 16, 32 };
	for (unsigned i = 0; i < 3; i++)
		if (shmf_fuse_fpr(widths[i]) <= fpr)
			return widths[i];
	return 0;
}

/* The paper's segment length for n keys (arity 3): 2^floor(ln n / ln 3.33
 * + 2.25), between SHMF_FUSE_SEGMENT_MIN and MAX. */
static uint32_t segment_len_for(uint64_t n)
{
	double e = floor(log((double)n) / log(3.33) + 2.25);
	if (e < 2)
		e = 2;
	if (e > 18)
		e = 18;
	return 1u << (unsigned)e;
}

int shmf_fuse_size(uint64_t keys, double fpr, struct shmf_fuse_params *out)
{
	struct shmf_fuse_params p = { .fp_bits = shmf_fuse_bits_for(fpr) };
	if (keys == 0 || p.fp_bits == 0)
		return SHMF_E_INVAL;
	/* Beyond the payload limit at 1.125 fingerprints a key of 1 byte. */
	if (keys > SHMF_DATA_MAX_BYTES)
		return SHMF_E_TOOBIG;
	uint64_t n = keys < 2 ? 2 : keys;
	p.segment_len = segment_len_for(n);
	double factor = fmax(1.125, 0.875 + 0.25 * log(1e6) / log((double)n));
	uint64_t cap = (uint64_t)llround((double)n * factor);
	uint64_t segs = (cap + p.segment_len - 1) / p.segment_len;
	p.segment_count = segs > SHMF_FUSE_ARITY - 1 ? segs - (SHMF_FUSE_ARITY - 1) : 1;
	p.array_len = (p.segment_count + SHMF_FUSE_ARITY - 1) * p.segment_len;
	uint64_t bytes = p.array_len * (p.fp_bits / 8);
	p.nblocks = 1 + (bytes + SHMF_BLOCK_BYTES - 1) / SHMF_BLOCK_BYTES;
	if (p.nblocks > (SHMF_DATA_MAX_BYTES - SHMF_DATA_BLOCKS_OFF) / SHMF_BLOCK_BYTES)
		return SHMF_E_TOOBIG;
	*out = p;
	return 0;
}

int shmf_fuse_shape_check(uint32_t fp_bits, uint32_t segment_len, uint64_t nblocks, uint64_t array_len)
{
	if ((fp_bits != 8 && fp_bits != 16 && fp_bits != 32) || segment_len < SHMF_FUSE_SEGMENT_MIN ||
	    segment_len > SHMF_FUSE_SEGMENT_MAX || (segment_len & (segment_len - 1)) != 0)
		return SHMF_E_FORMAT;
	if (array_len % segment_len != 0 || array_len / segment_len < SHMF_FUSE_ARITY ||
	    array_len > SHMF_DATA_MAX_BYTES)
		return SHMF_E_FORMAT;
	uint64_t bytes = array_len * (fp_bits / 8);
	return nblocks == 1 + (bytes + SHMF_BLOCK_BYTES - 1) / SHMF_BLOCK_BYTES ? 0 : SHMF_E_FORMAT;
}

int shmf_fuse_open(const void *payload, uint64_t bytes, uint32_t fp_bits, uint32_t segment_len, uint64_t array_len,
		   uint64_t keys, uint64_t seed, struct shmf_fuse_geom *g)
{
	struct shmf_fuse_table t;
	if (bytes < sizeof(t) || shmf_fuse_shape_check(fp_bits, segment_len, bytes / SHMF_BLOCK_BYTES, array_len) < 0)
		return SHMF_E_FORMAT;
	/* A private copy: a writer of the file cannot change it under us. */
	memcpy(&t, payload, sizeof(t));
	if (t.magic != SHMF_FUSE_MAGIC || t.fp_bits != fp_bits || t.segment_len != segment_len ||
	    t.array_len != array_len || t.keys != keys || t.pad[0] != 0 || t.pad[1] != 0 || t.pad[2] != 0)
		return SHMF_E_FORMAT;
	*g = (struct shmf_fuse_geom){
		.fp = (const char *)payload + SHMF_FUSE_TABLE_BYTES,
		.seed = seed,
		.mix = t.mix,
		.count_len = array_len - (SHMF_FUSE_ARITY - 1) * (uint64_t)segment_len,
		.segment_len = segment_len,
		.segment_mask = segment_len - 1u,
		.fp_bits = fp_bits,
		.keys = keys,
		.array_len = array_len,
	};
	return 0;
}

#define FUSE_AHEAD 16

size_t shmf_fuse_check_many(const struct shmf_fuse_geom *g, const shmf_key_t *keys, size_t n, uint8_t *out)
{
	struct shmf_fuse_pos ring[FUSE_AHEAD];
	const unsigned width = g->fp_bits / 8;
	const char *a = g->fp;
	size_t present = 0;
	for (size_t i = 0; i < n + FUSE_AHEAD; i++) {
		/* Test key i - AHEAD before key i takes its ring slot. */
		if (i >= FUSE_AHEAD) {
			size_t j = i - FUSE_AHEAD;
			const struct shmf_fuse_pos *p = &ring[j % FUSE_AHEAD];
			uint32_t x = shmf_fuse_load(a, g->fp_bits, p->p0) ^ shmf_fuse_load(a, g->fp_bits, p->p1) ^
				     shmf_fuse_load(a, g->fp_bits, p->p2);
			int r = x == p->fp;
			out[j] = (uint8_t)r;
			present += (size_t)r;
		}
		if (i < n) {
			struct shmf_fuse_pos *p = &ring[i % FUSE_AHEAD];
			uint64_t m = shmf_fuse_mix(shmf_hash(keys[i].ptr, keys[i].len, g->seed), g->mix);
			*p = shmf_fuse_locate(m, g->count_len, g->segment_len, g->segment_mask, g->fp_bits);
			__builtin_prefetch(a + p->p0 * width);
			__builtin_prefetch(a + p->p1 * width);
			__builtin_prefetch(a + p->p2 * width);
		}
	}
	return present;
}
