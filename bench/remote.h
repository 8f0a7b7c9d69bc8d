/*
 * remote.h - a baseline: a system that answers checks and adds over RESP,
 * one connection, n keys per round trip.
 *
 * Two kinds: the classic Redis Bloom filter (getbit.c: k GETBITs per check,
 * k SETBITs per add, pipelined, on a Redis string holding the very bits of
 * the shmfilter filter) and the filter verbs (verbs.c: BF.* and CF.*, as
 * RedisBloom and shmd speak them, on its unix socket and over TCP).
 */
#ifndef BENCH_REMOTE_H
#define BENCH_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "bench/resp.h"
#include <shmf.h>

/* Where a key's bits lie in the shmfilter filter, and so in the Redis
 * string: the data header's seed, blocks, k and lines a key. */
struct getbit_geom {
	uint64_t seed;
	uint64_t nblocks;
	uint32_t k;
	uint32_t lines;
};

struct remote {
	const char *system; /* "redis-getbit", "shmd", "redisbloom", "redisbloom-standin" */
	const struct endpoint *ep;
	redisContext *c;
	char target[80];      /* the Redis key (GETBIT) or the filter name (verbs) */
	int type;             /* SHMF_TYPE_BLOOM or SHMF_TYPE_CUCKOO */
	struct getbit_geom g; /* redis-getbit only */
	/* Check or add keys[0..n) in one round trip: out[i] = 1 if key i may
	 * be present (check) or was new / was stored (add). Returns how many
	 * are 1. Exits on any failure. */
	size_t (*check)(struct remote *r, const shmf_key_t *keys, size_t n, uint8_t *out);
	size_t (*add)(struct remote *r, const shmf_key_t *keys, size_t n, uint8_t *out);
	/* The same n checks as n one-key requests in one pipeline (BF.EXISTS
	 * or CF.EXISTS n times, one round trip); NULL where that is what
	 * check() does already (GETBIT). */
	size_t (*check_pipelined)(struct remote *r, const shmf_key_t *keys, size_t n, uint8_t *out);
};

/** A connected copy of @p proto, for a worker process (exits on failure). */
void remote_reconnect(struct remote *r, const struct remote *proto);

/** Close the connection. */
void remote_close(struct remote *r);

/* ---- getbit.c ---- */

/** The classic Redis Bloom filter on Redis key @p key with geometry @p g. */
void getbit_remote(struct remote *r, const struct endpoint *ep, const char *key, const struct getbit_geom *g);

/**
 * Make Redis key @p key hold the bits of @p blocks (nblocks 64-byte
 * blocks), so that GETBIT at block * 512 + position answers what the
 * shmfilter filter holds: SETRANGE in chunks of 1 MiB, each byte's bits
 * reversed (Redis numbers the bits of a byte from the most significant,
 * shmfilter from the least).
 */
void getbit_upload(redisContext *c, const struct endpoint *ep, const char *key, const uint64_t *blocks,
		   uint64_t nblocks);

/* ---- verbs.c ---- */

/** Filter @p name of @p type on a server speaking BF.* and CF.*. */
void verbs_remote(struct remote *r, const char *system, const struct endpoint *ep, const char *name, int type);

/** Create filter r->target (BF.RESERVE NONSCALING, or CF.RESERVE with
 *  buckets of 4) for @p capacity keys at @p fpr (Bloom only: RedisBloom's
 *  CF.RESERVE takes no error rate). */
void verbs_reserve(struct remote *r, uint64_t capacity, double fpr);

/** Add fill keys [0, n) (keys.h) with BF.MADD or CF.INSERT, 1000 a request. */
void verbs_fill(struct remote *r, uint64_t n);

/** Remove filter r->target (DEL on Redis, SHMF.DROP on shmd). */
void verbs_drop(struct remote *r);

#endif
