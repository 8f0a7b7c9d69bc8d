/* check-jobs.c - the checks a worker process runs until its deadline. */
#include <stdlib.h>

#include "bench/die.h"
#include "bench/check-jobs.h"
#include "bench/ticks.h"

struct worker_state {
	const struct job_args *a;
	shmf_t *f;       /* shmfilter jobs */
	struct remote r; /* baseline jobs */
	size_t at;       /* next probe */
	uint8_t *out;
};

static volatile int sink;

static struct worker_state *state_new(const struct job_args *a, int idx, int nworkers)
{
	struct worker_state *w = calloc(1, sizeof(*w));
	if (w == NULL || (w->out = malloc(a->per_call)) == NULL)
		die("out of memory in a worker");
	w->a = a;
	/* Start apart so that workers do not walk the probes in step. */
	w->at = a->probes->n / (size_t)nworkers * (size_t)idx / a->per_call * a->per_call;
	return w;
}

/* The next batch of probes, wrapping around. */
static const shmf_key_t *next_keys(struct worker_state *w)
{
	if (w->at + w->a->per_call > w->a->probes->n)
		w->at = 0;
	const shmf_key_t *k = w->a->probes->keys + w->at;
	w->at += w->a->per_call;
	return k;
}

static void *local_setup(const void *arg, int idx, int nworkers)
{
	const struct job_args *a = arg;
	struct worker_state *w = state_new(a, idx, nworkers);
	/* Each worker opens its own handle after fork(), as a real one does. */
	int rc = shmf_open(a->instance, a->filter, SHMF_RDONLY, &w->f);
	if (rc < 0)
		die("worker %d: shmf_open %s: %s", idx, a->filter, shmf_strerror(rc));
	return w;
}

static uint64_t local_run(void *state, uint64_t deadline)
{
	struct worker_state *w = state;
	const size_t n = w->a->per_call;
	uint64_t done = 0;
	int hits = 0;
	/* Read the clock once per 64 keys: its cost stays out of the rate. */
	const size_t calls = n >= 64 ? 1 : 64 / n;
	while (ticks_now() < deadline) {
		for (size_t c = 0; c < calls; c++) {
			const shmf_key_t *k = next_keys(w);
			int rc = n == 1 ? shmf_check(w->f, k->ptr, k->len) : shmf_check_many(w->f, k, n, w->out);
			if (rc < 0)
				die("worker: check: %s", shmf_strerror(rc));
			hits += rc;
		}
		done += calls * n;
	}
	sink = hits;
	return done;
}

static void *remote_setup(const void *arg, int idx, int nworkers)
{
	const struct job_args *a = arg;
	struct worker_state *w = state_new(a, idx, nworkers);
	remote_reconnect(&w->r, a->remote);
	return w;
}

static uint64_t remote_run(void *state, uint64_t deadline)
{
	struct worker_state *w = state;
	const size_t n = w->a->per_call;
	uint64_t done = 0;
	while (ticks_now() < deadline) {
		if (w->a->pipelined)
			w->r.check_pipelined(&w->r, next_keys(w), n, w->out);
		else
			w->r.check(&w->r, next_keys(w), n, w->out);
		done += n;
	}
	return done;
}

struct worker_job job_local_check(const struct job_args *a)
{
	return (struct worker_job){ .setup = local_setup, .run = local_run, .arg = a };
}

struct worker_job job_remote_check(const struct job_args *a)
{
	return (struct worker_job){ .setup = remote_setup, .run = remote_run, .arg = a };
}
