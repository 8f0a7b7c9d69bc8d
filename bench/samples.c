/* samples.c - collecting latencies and taking quantiles. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/samples.h"

void samples_add(struct samples *s, double ns)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		double *v = realloc(s->v, cap * sizeof(*v));
		if (v == NULL) {
			fprintf(stderr, "bench-redis: out of memory for %zu samples\n", cap);
			exit(1);
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = ns;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double samples_quantile(struct samples *s, double q)
{
	qsort(s->v, s->n, sizeof(double), cmp_double);
	/* Nearest rank: the smallest sample with at least q of them at or below it. */
	size_t rank = (size_t)ceil(q * (double)s->n);
	return s->v[rank ? rank - 1 : 0];
}

void samples_clear(struct samples *s)
{
	s->n = 0;
}

void samples_free(struct samples *s)
{
	free(s->v);
	*s = (struct samples){ 0 };
}
