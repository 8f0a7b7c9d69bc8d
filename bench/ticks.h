/*
 * ticks.h - the bench's clock.
 *
 * On x86-64 the time-stamp counter, read between two lfences so that the
 * work before the read has finished and the work after it has not begun
 * (a bare rdtsc can be reordered around the loads it is meant to time);
 * elsewhere CLOCK_MONOTONIC. ticks_init() measures the counter's rate
 * against CLOCK_MONOTONIC, so every figure is in nanoseconds of that clock.
 */
#ifndef BENCH_TICKS_H
#define BENCH_TICKS_H

#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

static inline uint64_t ticks_now(void)
{
#if defined(__x86_64__)
	_mm_lfence();
	uint64_t t = __rdtsc();
	_mm_lfence();
	return t;
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
#endif
}

/** Measure the rate of ticks_now() (about 50 ms). Call once, before forking. */
void ticks_init(void);

/** Ticks per nanosecond, as ticks_init() measured it. */
double ticks_per_ns(void);

/** Nanoseconds in @p ticks. */
static inline double ticks_ns(uint64_t ticks)
{
	return (double)ticks / ticks_per_ns();
}

/** The tick @p seconds from now. */
uint64_t ticks_deadline(double seconds);

/** How the clock is read, for the report: "TSC (lfence; rdtsc; lfence), 2.45 ticks/ns". */
const char *ticks_method(void);

#endif
