/* die.h - how the bench gives up: one line on stderr naming what failed, exit 1. */
#ifndef BENCH_DIE_H
#define BENCH_DIE_H

__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);

#endif
