/*
 * records.h - a small text file of one line per filter in the instance
 * directory (shmd-owners, shmd-expires), read once and replaced whole: a
 * temporary file renamed over it, so a crash leaves the old table or the
 * new one. Single-threaded: the daemon's loop.
 */
#ifndef SHMD_RECORDS_H
#define SHMD_RECORDS_H

#include <stdio.h>

struct registry;

/** The longest line a record file may hold, its newline included. */
#define RECORDS_LINE_MAX 512

/**
 * Read file @p file of @p r's instance directory, if it is there and a
 * regular file (anything else is logged and ignored: never waited on),
 * handing each line, without its newline, to @p take. @p take returns 0
 * (kept), 1 (dropped: a record of a filter that is gone) or -1 (a line
 * that does not parse: logged as "not @p shape" and skipped).
 * @return how many lines @p take dropped.
 */
int records_load(struct registry *r, const char *file, const char *shape, int (*take)(char *line, void *arg),
		 void *arg);

/**
 * Replace file @p file of @p r's instance directory with @p n lines, the
 * i-th written by @p put(f, i, arg); none removes the file. A failure is
 * logged ("cannot save @p what"): the table still holds in memory.
 */
void records_save(struct registry *r, const char *file, const char *what, unsigned n,
		  void (*put)(FILE *f, unsigned i, void *arg), void *arg);

#endif
