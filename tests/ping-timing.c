/* ping-timing.c - PINGs timed while shmd meets what it must not wait on (ping-timing.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "tests/ping-timing.h"

double ping_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint64_t generation(shmf_t *w)
{
	shmf_info_t info;
	if (w == NULL)
		return 0;
	assert_int_equal(shmf_info(w, &info), 0);
	return info.generation;
}

void ping_timing_run(redisContext *rc, shmf_t *w, double ms, int (*until)(void *), void *arg, struct ping_timing *t)
{
	uint64_t gen = generation(w);
	double start = ping_now_ms(), last_rotation = start;
	*t = (struct ping_timing){ 0 };
	while (ping_now_ms() - start < ms && (until == NULL || !until(arg))) {
		double t0 = ping_now_ms();
		redisReply *r = redisCommand(rc, "PING");
		double dt = ping_now_ms() - t0;
		if (r == NULL)
			fail_msg("no reply to PING: %s", rc->errstr);
		assert_int_equal(r->type, REDIS_REPLY_STATUS);
		freeReplyObject(r);
		t->pings++;
		if (dt > t->worst_ping)
			t->worst_ping = dt;
		if (dt > PING_BOUND_MS) {
			t->slow_pings++;
			printf("# a PING of %.1f ms, %.0f ms in\n", dt, t0 - start);
		}
		uint64_t g = generation(w);
		if (g != gen) {
			double gap = ping_now_ms() - last_rotation;
			/* The first gap starts at an arbitrary point of the window. */
			if (t->rotations > 0 && gap > t->worst_gap)
				t->worst_gap = gap;
			t->rotations++;
			last_rotation = ping_now_ms();
			gen = g;
		}
		usleep(10000);
	}
}

void ping_timing_assert(const struct ping_timing *t)
{
	assert_true(t->worst_ping < PING_OUTLIER_MS);
	assert_true(t->slow_pings * 100 <= t->pings * PING_SLOW_PCT);
}
