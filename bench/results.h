/*
 * results.h - the CSV the report is made from: one row per measurement,
 * also printed as a line on stdout while the run goes.
 */
#ifndef BENCH_RESULTS_H
#define BENCH_RESULTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What a filter was when it was measured. */
struct facts {
	const char *filter;  /* "bloom-1M" */
	const char *type;    /* "bloom" or "cuckoo" */
	uint64_t keys;       /* keys it is meant for */
	double fpr_target;   /* expected false-positive rate with that many keys */
	double fpr_measured; /* of the absent probes, by shmf_check; < 0 if none */
	uint32_t k;          /* Bloom: bits per key; cuckoo: fingerprint bits */
	double bits_per_key; /* filter bits / keys */
	double load;         /* keys in the filter when checks were timed / keys */
};

struct row {
	const struct facts *f;
	size_t key_bytes;
	const char *system;    /* shmfilter, redis-getbit, shmd, redisbloom, redisbloom-standin */
	const char *transport; /* in-process, tcp, unix */
	const char *op;        /* check or add */
	size_t keys_per_call;
	int workers;      /* throughput rows: 1, 2, 4; latency rows: 1 */
	double median_ns; /* per key; latency rows */
	double p99_ns;
	double keys_per_s;   /* throughput rows */
	double workers_cpus; /* throughput rows: CPUs' worth of time the workers got */
	double others_cpus;  /* throughput rows: CPUs' worth of time every process but the workers
				used meanwhile (the server under test included); see workers.h */
	size_t samples;
	const char *sample; /* what one sample is: "group of 32 calls", "call", "1.0 s" */
};

struct results {
	FILE *fp;
	int err; /* sticky: set by any failed write, checked once by results_close() */
};

/** Create @p path and write the header line. 0, or -1 with errno set. */
int results_open(struct results *r, const char *path);

/** Append a latency row (median_ns/p99_ns) or a throughput row (keys_per_s). */
void results_row(struct results *r, const struct row *row);

/** Close; 0, or -1 if any write failed. */
int results_close(struct results *r);

#endif
