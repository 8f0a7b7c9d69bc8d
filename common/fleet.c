/*
 * fleet.c - the seed, the shape and the stream entry of a replicated
 * filter (fleet.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <xxhash.h>

#include "common/fleet.h"
#include <shmf.h>

uint64_t fleet_seed(const char *secret, const char *name)
{
	return XXH3_64bits_withSeed(name, strlen(name), XXH3_64bits(secret, strlen(secret)));
}

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t get_le32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

uint64_t fleet_shape(const struct shmf_slot *s, uint64_t seed)
{
	/* Fixed-width little-endian fields, so that hosts of any byte order
	 * and any struct padding agree. */
	uint64_t f[12] = { s->type,     s->k,           s->capacity,    s->fpr_bits, s->nblocks,
			   s->nbuckets, s->window_secs, s->window_gens, seed };
	size_t n = 9;
	/* How a filter grows is part of its shape; a fixed filter's shape is
	 * the one it had before filters grew (nodes of both agree on it). */
	if (s->expansion != 0 || (s->flags & SHMF_SLOT_NONSCALING)) {
		f[n++] = s->expansion;
		f[n++] = s->flags & SHMF_SLOT_NONSCALING;
	}
	/* The bucket size only where it is not 4 (a Bloom filter's lines a
	 * key only where they are not 1): a filter of buckets of 4, or of one
	 * line, keeps the shape it had before bucket sizes and lines, so nodes
	 * upgraded one by one go on applying each other's entries. */
	if (s->type == SHMF_TYPE_CUCKOO ? s->bucket_size != 0 && s->bucket_size != 4 : s->bucket_size > 1)
		f[n++] = s->bucket_size;
	unsigned char buf[sizeof(f)];
	for (size_t i = 0; i < n; i++)
		put_le64(buf + 8 * i, f[i]);
	return XXH3_64bits(buf, 8 * n);
}

void fleet_shape_text(uint64_t shape, char out[17])
{
	snprintf(out, 17, "%016" PRIx64, shape);
}

int fleet_shape_parse(const char *text, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	if (len != 16)
		return SHMF_E_INVAL;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return SHMF_E_INVAL;
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

size_t fleet_batch_encode(const struct shmf_jentry *e, size_t n, unsigned char *out)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char *p = out + i * FLEET_ENTRY_BYTES;
		put_le64(p, e[i].hash);
		put_le32(p + 8, e[i].op);
		put_le32(p + 12, e[i].window);
	}
	return n * FLEET_ENTRY_BYTES;
}

int fleet_batch_decode(const void *buf, size_t len, struct shmf_jentry *out)
{
	const unsigned char *p = buf;
	if (len % FLEET_ENTRY_BYTES != 0 || len / FLEET_ENTRY_BYTES > FLEET_BATCH_MAX)
		return SHMF_E_FORMAT;
	size_t n = len / FLEET_ENTRY_BYTES;
	for (size_t i = 0; i < n; i++, p += FLEET_ENTRY_BYTES) {
		out[i].hash = get_le64(p);
		out[i].op = get_le32(p + 8);
		out[i].window = get_le32(p + 12);
		if (out[i].op < SHMF_JOP_ADD || out[i].op > SHMF_JOP_MAX)
			return SHMF_E_FORMAT;
	}
	return (int)n;
}

/* Decimal digits of text[0..len) into *out: 0, or SHMF_E_INVAL (none,
 * another character, or more than 64 bits). */
int fleet_u64_parse(const char *text, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	if (len == 0)
		return SHMF_E_INVAL;
	for (size_t i = 0; i < len; i++) {
		if (text[i] < '0' || text[i] > '9')
			return SHMF_E_INVAL;
		uint64_t d = (uint64_t)(text[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return SHMF_E_INVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int fleet_id_parse(const char *text, size_t len, struct fleet_id *out)
{
	const char *dash = memchr(text, '-', len);
	struct fleet_id id;
	if (dash == NULL || fleet_u64_parse(text, (size_t)(dash - text), &id.ms) < 0 ||
	    fleet_u64_parse(dash + 1, len - (size_t)(dash - text) - 1, &id.seq) < 0)
		return SHMF_E_INVAL;
	*out = id;
	return 0;
}

char *fleet_id_text(struct fleet_id id, char *buf, size_t size)
{
	snprintf(buf, size, "%" PRIu64 "-%" PRIu64, id.ms, id.seq);
	return buf;
}
