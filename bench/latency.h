/*
 * latency.h - timed loops: one sample per timed call, or per group of
 * LOCAL_GROUP calls for shmfilter's one-key calls (tens of nanoseconds,
 * too short to time one by one: the clock read itself costs about as
 * much). Every sample is nanoseconds per key.
 */
#ifndef BENCH_LATENCY_H
#define BENCH_LATENCY_H

#include <stddef.h>
#include <stdint.h>

#include "bench/keys.h"
#include "bench/remote.h"
#include "bench/samples.h"
#include <shmf.h>

#define LOCAL_GROUP 32

/** shmf_check() of every key, untimed: the reference answers. Exits on an error. */
void local_answers(shmf_t *f, const struct keyset *ks, uint8_t *out);

/** shmf_check() over @p ks, untimed, again and again for @p ms milliseconds:
 *  the code, the TLB and a CPU that idled through round trips warm up
 *  first. Warm with keys other than the timed ones: their blocks would
 *  be in the cache, and a check of a large filter that hits the cache
 *  is not the check a worker gets. */
void local_warm(shmf_t *f, const struct keyset *ks, double ms);

/** shmf_check() one key per call, timed in groups of LOCAL_GROUP; answers in @p out. */
void local_check_one(shmf_t *f, const struct keyset *ks, struct samples *s, uint8_t *out);

/** shmf_add() one key per call, timed in groups of LOCAL_GROUP. */
void local_add_one(shmf_t *f, const struct keyset *ks, struct samples *s);

/** shmf_check_many() of @p per_call keys a call, each call timed; answers in @p out. */
void local_check_many(shmf_t *f, const struct keyset *ks, size_t per_call, struct samples *s, uint8_t *out);

/** shmf_add_many() of @p per_call keys a call, each call timed. */
void local_add_many(shmf_t *f, const struct keyset *ks, size_t per_call, struct samples *s);

/** One-key checks of @p ks through @p r, untimed, for @p ms milliseconds:
 *  the connection, the server and the CPUs get going first (with keys
 *  other than the timed ones, as for local_warm()). */
void remote_warm(struct remote *r, const struct keyset *ks, double ms);

/** Calls of @p per_call keys over all of @p ks through @p r, each call
 *  timed; answers in @p out (ks->n bytes). */
void remote_calls(struct remote *r, int add, const struct keyset *ks, size_t per_call, struct samples *s, uint8_t *out);

/** As remote_calls() for checks, each call @p per_call one-key requests in
 *  one pipeline (r->check_pipelined). */
void remote_calls_pipelined(struct remote *r, const struct keyset *ks, size_t per_call, struct samples *s,
			    uint8_t *out);

#endif
