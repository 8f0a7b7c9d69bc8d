/*
 * clock.h - a monotonic clock cheap enough to read twice for every
 * request (INFO commandstats' time, the slow log): the CPU's time-stamp
 * counter where the kernel itself keeps time with it (clocksource tsc:
 * constant rate, in step across CPUs), calibrated once against
 * CLOCK_MONOTONIC, as Redis' monotonic clock does; clock_gettime()
 * elsewhere, in nanoseconds. On a KVM guest a clock_gettime() took 21 ns
 * and the counter 10 ns, measured by hand: two clock_gettime() a request
 * were 7 to 11% of a pipelined PING's or BF.EXISTS' time in shmd.
 *
 * clock_init() once, before other threads start; then any thread.
 */
#ifndef SHMD_CLOCK_H
#define SHMD_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define CLOCK_HAVE_TSC 1
#else
#define CLOCK_HAVE_TSC 0
#endif

struct clock_rate {
	int tsc;       /* ticks are the time-stamp counter's; else nanoseconds */
	double per_us; /* ticks in a microsecond */
};

extern struct clock_rate clock_rate;

/** Choose the clock (the counter when the kernel's clocksource is tsc) and measure its rate (about 2 ms). */
void clock_init(void);

/** Now, in ticks of the clock clock_init() chose (nanoseconds before it ran). */
static inline uint64_t clock_ticks(void)
{
#if CLOCK_HAVE_TSC
	if (clock_rate.tsc)
		return __rdtsc();
#endif
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/** @p ticks in microseconds. */
static inline uint64_t clock_us(uint64_t ticks)
{
	return (uint64_t)((double)ticks / clock_rate.per_us);
}

/** @p us microseconds in ticks (a threshold to compare ticks with). */
static inline uint64_t clock_ticks_of_us(uint64_t us)
{
	return (uint64_t)((double)us * clock_rate.per_us);
}

#endif
