/*
 * memstat.h - the daemon's memory as INFO memory and MEMORY STATS report
 * it, in Redis' terms: what its allocator holds for it (used_memory) and
 * what is resident (used_memory_rss), and the host's memory.
 *
 * Any thread; each call reads the allocator's or the kernel's figures
 * afresh (a few microseconds: for INFO, never a hot path).
 */
#ifndef SHMD_MEMSTAT_H
#define SHMD_MEMSTAT_H

#include <stddef.h>
#include <stdint.h>

/**
 * Bytes the allocator has handed out and not had back: glibc's mallinfo2()
 * (arenas' and mapped chunks' in-use bytes), or a sanitizer's allocator's
 * own count when one replaces glibc's.
 */
uint64_t memstat_heap(void);

/** Bytes resident in memory (/proc/self/statm), the filters' pages this process touched included; 0 if unknown. */
uint64_t memstat_rss(void);

/** Bytes of memory the host has (sysconf); 0 if unknown. */
uint64_t memstat_system(void);

/** @p n as Redis writes sizes for people ("1.50M", "512B"), into @p buf. */
const char *memstat_human(uint64_t n, char buf[32]);

#endif
