/*
 * memstat.c - the daemon's memory in Redis' terms (see memstat.h).
 */
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <unistd.h>

#include "shmd/base/memstat.h"

/* A sanitizer's allocator replaces glibc's (the sanitizer build of the
 * tests), and mallinfo2() then says 0: ask it instead. */
extern size_t __sanitizer_get_current_allocated_bytes(void) __attribute__((weak));

uint64_t memstat_heap(void)
{
	if (__sanitizer_get_current_allocated_bytes != NULL)
		return __sanitizer_get_current_allocated_bytes();
	struct mallinfo2 mi = mallinfo2();
	return (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
}

uint64_t memstat_rss(void)
{
	char buf[128];
	unsigned long long size, resident;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &size, &resident) != 2)
		return 0;
	long page = sysconf(_SC_PAGESIZE);
	return (uint64_t)resident * (uint64_t)(page > 0 ? page : 4096);
}

uint64_t memstat_system(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

const char *memstat_human(uint64_t n, char buf[32])
{
	static const char units[] = "KMGTP";
	double d = (double)n;
	int u = -1;
	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, 32, "%lluB", (unsigned long long)n);
	else
		snprintf(buf, 32, "%.2f%c", d, units[u]);
	return buf;
}
