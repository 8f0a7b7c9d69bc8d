/*
 * getbit.c - the classic Redis Bloom filter of the blog posts and of
 * Orestes-Bloomfilter: the client hashes the key, then sends k GETBITs (a
 * check) or k SETBITs (an add) in one pipeline and combines the replies.
 *
 * The bit offsets are the shmfilter filter's own (block * 512 + position,
 * from the same seeded hash), so with the same k and m the Redis string
 * and the shared-memory filter hold the same bits after getbit_upload(),
 * and every GETBIT answer can be checked against shmf_check().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libclient/bloom.h"
#include "bench/die.h"
#include "libclient/hash.h"
#include "bench/remote.h"

/* Decimal digits of @p v into @p buf (no NUL); returns the length. */
static size_t u64_dec(char *buf, uint64_t v)
{
	char tmp[24];
	size_t n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	return n;
}

#define OFFSETS_MAX (SHMF_K_MAX * SHMF_BLOOM_LINES_MAX)

/* The k bit offsets of @p key in each of its lines in the Redis string. */
static unsigned key_offsets(const struct getbit_geom *g, const shmf_key_t *key, uint64_t offs[OFFSETS_MAX])
{
	uint64_t h = shmf_hash(key->ptr, key->len, g->seed);
	unsigned np = 0;
	for (uint32_t j = 0; j < (g->lines ? g->lines : 1); j++) {
		uint64_t hj = shmf_line_hash(h, j);
		uint64_t base = shmf_block_index(hj, g->nblocks) * SHMF_BLOCK_BITS;
		SHMF_FOR_EACH_POS(hj, g->k, pos, offs[np++] = base + pos);
	}
	return np;
}

/* Queue one GETBIT or SETBIT per offset of each key, then read them all:
 * one round trip for the n keys. */
static size_t bits_call(struct remote *r, const shmf_key_t *keys, size_t n, uint8_t *out, int set)
{
	const char *argv[4] = { set ? "SETBIT" : "GETBIT", r->target, NULL, "1" };
	size_t lens[4] = { 6, strlen(r->target), 0, 1 };
	char num[24];
	uint64_t offs[OFFSETS_MAX];

	for (size_t i = 0; i < n; i++) {
		unsigned np = key_offsets(&r->g, &keys[i], offs);
		for (unsigned j = 0; j < np; j++) {
			lens[2] = u64_dec(num, offs[j]);
			argv[2] = num;
			resp_append(r->c, r->ep, set ? 4 : 3, argv, lens);
		}
	}
	size_t ones = 0;
	for (size_t i = 0; i < n; i++) {
		/* check: present if every bit is set; add: new if any bit was clear */
		long long all = 1, any_clear = 0;
		for (uint32_t j = 0; j < r->g.k * (r->g.lines ? r->g.lines : 1); j++) {
			long long bit = resp_int(r->c, r->ep, argv[0]);
			all &= bit;
			any_clear |= !bit;
		}
		out[i] = (uint8_t)(set ? any_clear : all);
		ones += out[i];
	}
	return ones;
}

static size_t getbit_check(struct remote *r, const shmf_key_t *keys, size_t n, uint8_t *out)
{
	return bits_call(r, keys, n, out, 0);
}

static size_t getbit_add(struct remote *r, const shmf_key_t *keys, size_t n, uint8_t *out)
{
	return bits_call(r, keys, n, out, 1);
}

void getbit_remote(struct remote *r, const struct endpoint *ep, const char *key, const struct getbit_geom *g)
{
	*r = (struct remote){ .system = "redis-getbit", .ep = ep, .type = SHMF_TYPE_BLOOM, .g = *g };
	snprintf(r->target, sizeof(r->target), "%s", key);
	r->check = getbit_check;
	r->add = getbit_add;
	r->c = resp_connect(ep);
}

void getbit_upload(redisContext *c, const struct endpoint *ep, const char *key, const uint64_t *blocks,
		   uint64_t nblocks)
{
	enum { CHUNK = 1 << 20, IN_FLIGHT = 8 };
	uint8_t rev[256];
	for (unsigned b = 0; b < 256; b++) {
		unsigned v = 0;
		for (unsigned i = 0; i < 8; i++)
			v |= ((b >> i) & 1u) << (7 - i);
		rev[b] = (uint8_t)v;
	}
	const uint64_t bytes = nblocks * SHMF_BLOCK_BYTES;
	const uint8_t *src = (const uint8_t *)blocks;
	uint8_t *chunk = malloc(CHUNK);
	if (chunk == NULL)
		die("out of memory for the upload buffer");
	char off[24];
	const char *argv[4] = { "SETRANGE", key, off, (const char *)chunk };
	size_t lens[4] = { 8, strlen(key), 0, 1 };

	freeReplyObject(resp_run(c, ep, "DEL", key, (char *)NULL));
	/* One SETRANGE at the last byte first: Redis allocates the whole
	 * string once, instead of growing (and copying) it chunk by chunk. */
	chunk[0] = 0;
	lens[2] = u64_dec(off, bytes - 1);
	resp_append(c, ep, 4, argv, lens);
	if ((uint64_t)resp_int(c, ep, "SETRANGE") != bytes)
		die("%s: SETRANGE %s did not make a string of %llu bytes", endpoint_name(ep), key,
		    (unsigned long long)bytes);

	unsigned queued = 0;
	for (uint64_t at = 0; at < bytes; at += CHUNK) {
		size_t n = bytes - at < CHUNK ? (size_t)(bytes - at) : CHUNK;
		for (size_t i = 0; i < n; i++)
			chunk[i] = rev[src[at + i]];
		lens[2] = u64_dec(off, at);
		lens[3] = n;
		resp_append(c, ep, 4, argv, lens);
		if (++queued == IN_FLIGHT || at + n == bytes) {
			while (queued > 0) {
				if ((uint64_t)resp_int(c, ep, "SETRANGE") != bytes)
					die("%s: SETRANGE %s changed the string's length", endpoint_name(ep), key);
				queued--;
			}
		}
	}
	free(chunk);
}
