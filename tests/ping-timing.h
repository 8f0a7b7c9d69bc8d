/*
 * ping-timing.h - "the event loop never waits on X", measured from outside:
 * a client PINGs a real shmd every 10 ms while the test makes shmd meet X
 * (a frozen disk, a FIFO, a held lock), and follows a 1-second window's
 * generation to see rotations keep their times (docs/testing.md, "time in
 * tests").
 *
 * The bound is 50 ms a PING. The machine that runs the suite may
 * deschedule the test or shmd for that long and more (2 cores shared with
 * other jobs: a CI run saw 297 ms), so 95% of PINGs must meet it and every
 * one must come within a second: a loop that waited on X would take all
 * of X's time (seconds) for one PING. The figures are printed.
 */
#ifndef SHMF_TEST_PING_TIMING_H
#define SHMF_TEST_PING_TIMING_H

#include <hiredis/hiredis.h>

#include <shmf.h>

#define PING_BOUND_MS   50.0
#define PING_SLOW_PCT   5
#define PING_OUTLIER_MS 1000.0
/* A 1-second window rotates within this of its due time (the tick runs
 * at least once a second; the PING loop sees it a PING later). */
#define ROTATE_BOUND_MS 2500.0

struct ping_timing {
	double worst_ping, worst_gap;          /* ms: the slowest PING, the longest time between rotations */
	unsigned pings, slow_pings, rotations; /* slow: over PING_BOUND_MS */
};

/** CLOCK_MONOTONIC in milliseconds. */
double ping_now_ms(void);

/**
 * PING every 10 ms on @p rc for @p ms milliseconds, or until @p until
 * (when not NULL) returns non-zero, while following the generation of
 * window @p w (NULL: none). Fails the test on a reply that is not PONG.
 */
void ping_timing_run(redisContext *rc, shmf_t *w, double ms, int (*until)(void *), void *arg, struct ping_timing *t);

/** The PINGs met the bound: 95% under PING_BOUND_MS, none over PING_OUTLIER_MS. */
void ping_timing_assert(const struct ping_timing *t);

#endif
