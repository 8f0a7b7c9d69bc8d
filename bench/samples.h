/*
 * samples.h - latencies collected by a measurement, and their median and
 * 99th percentile.
 */
#ifndef BENCH_SAMPLES_H
#define BENCH_SAMPLES_H

#include <stddef.h>

struct samples {
	double *v; /* nanoseconds per key, one per timed call or group */
	size_t n;
	size_t cap;
};

/** Append one sample (exits on out of memory). */
void samples_add(struct samples *s, double ns);

/** The @p q quantile (0 <= q <= 1, nearest rank) of the samples; sorts them.
 *  @pre s->n > 0 */
double samples_quantile(struct samples *s, double q);

void samples_clear(struct samples *s);
void samples_free(struct samples *s);

#endif
