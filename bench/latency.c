/* latency.c - the timed loops of shmfilter's calls and of a baseline's round trips. */
#include <stdlib.h>

#include "bench/die.h"
#include "bench/latency.h"
#include "bench/ticks.h"

static volatile int sink;

void local_answers(shmf_t *f, const struct keyset *ks, uint8_t *out)
{
	for (size_t i = 0; i < ks->n; i++) {
		int rc = shmf_check(f, ks->keys[i].ptr, ks->keys[i].len);
		if (rc < 0)
			die("shmf_check: %s", shmf_strerror(rc));
		out[i] = (uint8_t)rc;
	}
}

void local_warm(shmf_t *f, const struct keyset *ks, double ms)
{
	uint64_t deadline = ticks_deadline(ms / 1e3);
	int hits = 0;
	do {
		for (size_t i = 0; i < ks->n; i++)
			hits += shmf_check(f, ks->keys[i].ptr, ks->keys[i].len);
	} while (ticks_now() < deadline);
	sink = hits;
}

void local_check_one(shmf_t *f, const struct keyset *ks, struct samples *s, uint8_t *out)
{
	int any = 0; /* the OR of the results: negative after an error */
	for (size_t i = 0; i + LOCAL_GROUP <= ks->n; i += LOCAL_GROUP) {
		const shmf_key_t *k = ks->keys + i;
		uint64_t t0 = ticks_now();
		for (unsigned j = 0; j < LOCAL_GROUP; j++) {
			int rc = shmf_check(f, k[j].ptr, k[j].len);
			out[i + j] = (uint8_t)rc;
			any |= rc;
		}
		uint64_t t1 = ticks_now();
		samples_add(s, ticks_ns(t1 - t0) / LOCAL_GROUP);
	}
	if (any < 0)
		die("shmf_check failed in the timed loop");
}

void local_add_one(shmf_t *f, const struct keyset *ks, struct samples *s)
{
	int fresh = 0, any = 0;
	for (size_t i = 0; i + LOCAL_GROUP <= ks->n; i += LOCAL_GROUP) {
		const shmf_key_t *k = ks->keys + i;
		uint64_t t0 = ticks_now();
		for (unsigned j = 0; j < LOCAL_GROUP; j++) {
			int rc = shmf_add(f, k[j].ptr, k[j].len);
			fresh += rc;
			any |= rc;
		}
		uint64_t t1 = ticks_now();
		samples_add(s, ticks_ns(t1 - t0) / LOCAL_GROUP);
	}
	if (any < 0)
		die("shmf_add failed in the timed loop (a full cuckoo filter?)");
	sink = fresh;
}

void local_check_many(shmf_t *f, const struct keyset *ks, size_t per_call, struct samples *s, uint8_t *out)
{
	for (size_t i = 0; i + per_call <= ks->n; i += per_call) {
		uint64_t t0 = ticks_now();
		int rc = shmf_check_many(f, ks->keys + i, per_call, out + i);
		uint64_t t1 = ticks_now();
		if (rc < 0)
			die("shmf_check_many: %s", shmf_strerror(rc));
		samples_add(s, ticks_ns(t1 - t0) / (double)per_call);
	}
}

void local_add_many(shmf_t *f, const struct keyset *ks, size_t per_call, struct samples *s)
{
	for (size_t i = 0; i + per_call <= ks->n; i += per_call) {
		uint64_t t0 = ticks_now();
		int rc = shmf_add_many(f, ks->keys + i, per_call, NULL);
		uint64_t t1 = ticks_now();
		if (rc < 0)
			die("shmf_add_many: %s", shmf_strerror(rc));
		samples_add(s, ticks_ns(t1 - t0) / (double)per_call);
	}
}

void remote_warm(struct remote *r, const struct keyset *ks, double ms)
{
	uint64_t deadline = ticks_deadline(ms / 1e3);
	uint8_t out;
	for (size_t i = 0; ticks_now() < deadline; i = (i + 1) % ks->n)
		r->check(r, ks->keys + i, 1, &out);
}

void remote_calls(struct remote *r, int add, const struct keyset *ks, size_t per_call, struct samples *s, uint8_t *out)
{
	for (size_t i = 0; i + per_call <= ks->n; i += per_call) {
		uint64_t t0 = ticks_now();
		if (add)
			r->add(r, ks->keys + i, per_call, out + i);
		else
			r->check(r, ks->keys + i, per_call, out + i);
		uint64_t t1 = ticks_now();
		samples_add(s, ticks_ns(t1 - t0) / (double)per_call);
	}
}

void remote_calls_pipelined(struct remote *r, const struct keyset *ks, size_t per_call, struct samples *s, uint8_t *out)
{
	for (size_t i = 0; i + per_call <= ks->n; i += per_call) {
		uint64_t t0 = ticks_now();
		r->check_pipelined(r, ks->keys + i, per_call, out + i);
		uint64_t t1 = ticks_now();
		samples_add(s, ticks_ns(t1 - t0) / (double)per_call);
	}
}
