/*
 * filter-verbs.c - a filter behind the BF.* and CF.* verbs, as RedisBloom and
 * shmd (unix socket or TCP) both speak them: EXISTS / MEXISTS for checks,
 * ADD / MADD (Bloom) or ADD / INSERT (cuckoo) for adds; one request per
 * call, or for checks also n EXISTS in one pipeline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/die.h"
#include "bench/keys.h"
#include "bench/remote.h"

/* Queue one request for n keys (n is at most a few thousand: the vectors
 * live on the stack; hiredis copies them into its buffer here). */
static void verb_append(struct remote *r, const char *verb, int items, const shmf_key_t *keys, size_t n)
{
	const char *argv[n + 4];
	size_t lens[n + 4];
	int argc = 0;
	argv[argc] = verb;
	lens[argc++] = strlen(verb);
	argv[argc] = r->target;
	lens[argc++] = strlen(r->target);
	if (items && n > 1) { /* CF.INSERT name NOCREATE ITEMS key... */
		argv[argc] = "NOCREATE";
		lens[argc++] = 8;
		argv[argc] = "ITEMS";
		lens[argc++] = 5;
	}
	for (size_t i = 0; i < n; i++) {
		argv[argc] = keys[i].ptr;
		lens[argc++] = keys[i].len;
	}
	resp_append(r->c, r->ep, argc, argv, lens);
}

/* Read the reply of a request for n keys: out[i] = 1 if answer i is 1. A
 * -1 (a full cuckoo filter) or anything else but 0 and 1 ends the run. */
static size_t verb_read(struct remote *r, const char *verb, size_t n, uint8_t *out)
{
	if (n == 1) {
		long long v = resp_int(r->c, r->ep, verb);
		if (v != 0 && v != 1)
			die("%s: %s %s answered %lld", endpoint_name(r->ep), verb, r->target, v);
		out[0] = (uint8_t)v;
		return out[0];
	}
	redisReply *rep = resp_reply(r->c, r->ep, verb);
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != n)
		die("%s: %s %s: expected an array of %zu answers", endpoint_name(r->ep), verb, r->target, n);
	size_t ones = 0;
	for (size_t i = 0; i < n; i++) {
		const redisReply *e = rep->element[i];
		if (e->type != REDIS_REPLY_INTEGER || (e->integer != 0 && e->integer != 1))
			die("%s: %s %s: answer %zu is not 0 or 1%s", endpoint_name(r->ep), verb, r->target, i,
			    e->type == REDIS_REPLY_INTEGER && e->integer == -1 ? " (-1: the filter is full)" : "");
		out[i] = (uint8_t)e->integer;
		ones += out[i];
	}
	freeReplyObject(rep);
	return ones;
}

/* One round trip: the one-key verb or the many-key one. */
static size_t verb_call(struct remote *r, const char *one, const char *many, int items, const shmf_key_t *keys,
			size_t n, uint8_t *out)
{
	const char *verb = n == 1 ? one : many;
	verb_append(r, verb, items, keys, n);
	return verb_read(r, verb, n, out);
}

/* n one-key requests queued, then their n replies read: one round trip. */
static size_t verb_pipelined(struct remote *r, const char *verb, const shmf_key_t *keys, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n; i++)
		verb_append(r, verb, 0, keys + i, 1);
	size_t ones = 0;
	for (size_t i = 0; i < n; i++)
		ones += verb_read(r, verb, 1, out + i);
	return ones;
}

static size_t bf_check_pipelined(struct remote *r, const shmf_key_t *keys, size_t n, uint8_t *out)
{
	return verb_pipelined(r, "BF.EXISTS", keys, n, out);
}

static size_t cf_check_pipelined(struct remote *r, const shmf_key_t *keys, size_t n, uint8_t *out)
{
	return verb_pipelined(r, "CF.EXISTS", keys, n, out);
}

static size_t bf_check(struct remote *r, const shmf_key_t *keys, size_t n, uint8_t *out)
{
	return verb_call(r, "BF.EXISTS", "BF.MEXISTS", 0, keys, n, out);
}

static size_t bf_add(struct remote *r, const shmf_key_t *keys, size_t n, uint8_t *out)
{
	return verb_call(r, "BF.ADD", "BF.MADD", 0, keys, n, out);
}

static size_t cf_check(struct remote *r, const shmf_key_t *keys, size_t n, uint8_t *out)
{
	return verb_call(r, "CF.EXISTS", "CF.MEXISTS", 0, keys, n, out);
}

static size_t cf_add(struct remote *r, const shmf_key_t *keys, size_t n, uint8_t *out)
{
	return verb_call(r, "CF.ADD", "CF.INSERT", 1, keys, n, out);
}

void verbs_remote(struct remote *r, const char *system, const struct endpoint *ep, const char *name, int type)
{
	*r = (struct remote){ .system = system, .ep = ep, .type = type };
	snprintf(r->target, sizeof(r->target), "%s", name);
	r->check = type == SHMF_TYPE_CUCKOO ? cf_check : bf_check;
	r->add = type == SHMF_TYPE_CUCKOO ? cf_add : bf_add;
	r->check_pipelined = type == SHMF_TYPE_CUCKOO ? cf_check_pipelined : bf_check_pipelined;
	r->c = resp_connect(ep);
}

void verbs_reserve(struct remote *r, uint64_t capacity, double fpr)
{
	char cap[32], rate[32];
	snprintf(cap, sizeof(cap), "%llu", (unsigned long long)capacity);
	snprintf(rate, sizeof(rate), "%.17g", fpr);
	redisReply *rep = r->type == SHMF_TYPE_CUCKOO
				  ? resp_run(r->c, r->ep, "CF.RESERVE", r->target, cap, "BUCKETSIZE", "4", (char *)NULL)
				  : resp_run(r->c, r->ep, "BF.RESERVE", r->target, rate, cap, "NONSCALING",
					     (char *)NULL);
	freeReplyObject(rep);
}

void verbs_fill(struct remote *r, uint64_t n)
{
	enum { BATCH = 1000, IN_FLIGHT = 8 }; /* 8 requests queued before the first reply is read */
	const int cuckoo = r->type == SHMF_TYPE_CUCKOO;
	const char *verb = cuckoo ? "CF.INSERT" : "BF.MADD";
	char *buf = malloc((size_t)BATCH * KEYS_MAX_LEN);
	shmf_key_t *keys = malloc(sizeof(*keys) * BATCH);
	uint8_t *out = malloc(BATCH);
	size_t sizes[IN_FLIGHT];
	if (buf == NULL || keys == NULL || out == NULL)
		die("out of memory for the fill of %s", r->target);
	for (uint64_t at = 0; at < n;) {
		int queued = 0;
		for (; queued < IN_FLIGHT && at < n; queued++) {
			size_t m = n - at < BATCH ? (size_t)(n - at) : BATCH;
			keys_fill_batch(at, m, buf, keys);
			verb_append(r, m == 1 ? (cuckoo ? "CF.ADD" : "BF.ADD") : verb, cuckoo, keys, m);
			sizes[queued] = m;
			at += m;
		}
		for (int q = 0; q < queued; q++)
			verb_read(r, sizes[q] == 1 ? (cuckoo ? "CF.ADD" : "BF.ADD") : verb, sizes[q], out);
	}
	free(buf);
	free(keys);
	free(out);
}

void verbs_drop(struct remote *r)
{
	redisReply *rep = !strcmp(r->system, "redisbloom")
				  ? resp_run(r->c, r->ep, "DEL", r->target, (char *)NULL)
				  : resp_run(r->c, r->ep, "SHMF.DROP", r->target, (char *)NULL);
	freeReplyObject(rep);
}
