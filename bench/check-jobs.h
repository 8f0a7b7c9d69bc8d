/*
 * check-jobs.h - what a worker process does in the throughput runs: checks
 * through its own libshmf handle, or through its own connection to a
 * baseline, one key or a batch per call, over the probes of the run.
 */
#ifndef BENCH_CHECK_JOBS_H
#define BENCH_CHECK_JOBS_H

#include <stddef.h>

#include "bench/keys.h"
#include "bench/remote.h"
#include "bench/workers.h"

struct job_args {
	const char *instance; /* shmfilter jobs: the instance and filter to open */
	const char *filter;
	const struct remote *remote; /* baseline jobs: what to connect to */
	const struct keyset *probes; /* each worker starts at its own offset */
	size_t per_call;             /* keys per call: 1 or a batch */
	int pipelined;               /* baseline jobs: the batch as one-key requests in one pipeline */
};

/** A worker that opens the filter read-only and calls shmf_check or shmf_check_many. */
struct worker_job job_local_check(const struct job_args *a);

/** A worker that connects to the baseline and checks through it. */
struct worker_job job_remote_check(const struct job_args *a);

#endif
