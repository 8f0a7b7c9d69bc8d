/*
 * bench-atomics.c - what the locked instructions of a capped add cost on
 * this machine, alone, to set beside `cuckoo shmf_add_capped` in
 * bench-filter (which also makes a check's reads, and the relocations its
 * repeated copies need: its relocations-an-add column).
 *
 *   bench-atomics [MILLIONS]
 *
 * A capped add takes the relocation lock (a compare-and-swap) and lets it
 * go (an exchange), stores its fingerprint with a compare-and-swap (lock-
 * free adders of other processes write the same buckets) and adds to an
 * item counter: four locked instructions that a check does not make. Each
 * is timed here in a loop on one cache line of this process (no other
 * writer: the cheapest they get), MILLIONS (default 20) million times, the
 * median of 5 runs. A time per operation, nothing asserted.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench/clock.h"

#define RUNS 5

static _Alignas(64) _Atomic uint32_t lock_word;
static _Alignas(64) _Atomic uint64_t bucket;
static _Alignas(64) _Atomic uint64_t counter;

/* The lock taken free and let go, as the relocation lock is uncontended. */
static void lock_unlock(void)
{
	uint32_t free_word = 0;
	atomic_compare_exchange_strong_explicit(&lock_word, &free_word, 1, memory_order_acquire, memory_order_relaxed);
	atomic_exchange_explicit(&lock_word, 0, memory_order_release);
}

/* A fingerprint stored as a move or an add stores it: read, then swap. */
static void bucket_cas(void)
{
	uint64_t b = atomic_load_explicit(&bucket, memory_order_relaxed);
	atomic_compare_exchange_strong_explicit(&bucket, &b, b + 1, memory_order_release, memory_order_relaxed);
}

static void counter_add(void)
{
	atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
}

static double time_op(void (*op)(void), uint64_t n)
{
	double v[RUNS];
	for (int r = 0; r < RUNS; r++) {
		double t0 = bench_now_ns();
		for (uint64_t i = 0; i < n; i++)
			op();
		v[r] = (bench_now_ns() - t0) / (double)n;
	}
	return bench_median(v, RUNS);
}

int main(int argc, char **argv)
{
	char *end = NULL;
	unsigned long millions = argc > 1 ? strtoul(argv[1], &end, 10) : 20;
	if (argc > 2 || (argc > 1 && (*end != '\0' || millions == 0 || millions > 10000))) {
		fprintf(stderr, "usage: %s [MILLIONS]  (1 to 10000, default 20)\n", argv[0]);
		return 2;
	}
	uint64_t n = (uint64_t)millions * 1000000u;
	double l = time_op(lock_unlock, n), b = time_op(bucket_cas, n), c = time_op(counter_add, n);
	printf("%-44s %6.1f ns\n", "lock taken and let go (cas + exchange)", l);
	printf("%-44s %6.1f ns\n", "bucket compare-and-swap (load + cas)", b);
	printf("%-44s %6.1f ns\n", "item counter add (fetch_add)", c);
	printf("%-44s %6.1f ns  (a capped add's lock and store, relocations aside)\n", "the three together", l + b + c);
	return 0;
}
