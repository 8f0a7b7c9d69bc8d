/* die.c - the bench's one way out on a failure. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/die.h"

void die(const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fputs("bench-redis: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}
