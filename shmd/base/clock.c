/*
 * clock.c - the cheap monotonic clock (see clock.h).
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "shmd/base/clock.h"

struct clock_rate clock_rate = { .tsc = 0, .per_us = 1000.0 };

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether the kernel keeps time with the counter: then it found it
 * constant and in step across CPUs (else it would have chosen another). */
static int kernel_uses_tsc(void)
{
	char buf[32] = "";
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n >= 3 && strncmp(buf, "tsc", 3) == 0 && (n == 3 || buf[3] == '\n');
}

void clock_init(void)
{
#if CLOCK_HAVE_TSC
	if (!kernel_uses_tsc())
		return;
	/* 2 ms of both clocks: the rate within a few parts in a million. */
	uint64_t ns0 = mono_ns(), t0 = __rdtsc(), ns1, t1;
	do {
		ns1 = mono_ns();
		t1 = __rdtsc();
	} while (ns1 - ns0 < 2000000);
	if (t1 > t0) {
		clock_rate.per_us = (double)(t1 - t0) * 1000.0 / (double)(ns1 - ns0);
		clock_rate.tsc = 1;
	}
#endif
}
