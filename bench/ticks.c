/* ticks.c - the rate of the bench's clock. */
#include <stdio.h>

#include "bench/ticks.h"

static double rate = 1.0; /* ticks per ns */
static char method[128] = "CLOCK_MONOTONIC";

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

void ticks_init(void)
{
#if defined(__x86_64__)
	/* Busy-wait 50 ms on both clocks; the ends are read back to back, so
	 * the error is a few ns in 50 ms. */
	uint64_t n0 = mono_ns(), t0 = ticks_now(), n1, t1;
	do {
		n1 = mono_ns();
		t1 = ticks_now();
	} while (n1 - n0 < 50000000);
	rate = (double)(t1 - t0) / (double)(n1 - n0);
	snprintf(method, sizeof(method),
		 "TSC read as lfence; rdtsc; lfence (%.3f ticks/ns, measured against CLOCK_MONOTONIC)", rate);
#endif
}

double ticks_per_ns(void)
{
	return rate;
}

uint64_t ticks_deadline(double seconds)
{
	return ticks_now() + (uint64_t)(seconds * 1e9 * rate);
}

const char *ticks_method(void)
{
	return method;
}
