/*
 * handles.h - the process's open filters, one persistent libshmf handle per
 * (instance, filter, mode), shared by every request the process serves.
 *
 * A PHP-FPM worker serves thousands of requests; opening a filter costs a
 * few system calls and mappings, a check costs nanoseconds. So a handle is
 * opened on the first `new Shmf\Filter(...)` in a process and kept until the
 * process ends (MSHUTDOWN), and every later Filter object of that process
 * for the same filter and mode reuses it. libshmf follows swaps and
 * rotations by itself on the next call; a handle whose filter was dropped
 * is closed and reopened on its next use.
 *
 * One thread per process (PHP's NTS builds: PHP-FPM, the CLI, Apache's
 * prefork). shmf.c refuses to build for ZTS.
 */
#ifndef SHMF_PHP_HANDLES_H
#define SHMF_PHP_HANDLES_H

#include <shmf.h>
#include <stdbool.h>

struct shmf_php_handle {
	shmf_t *f;               /* NULL while closed (after a drop) */
	char *instance;          /* NULL: the default instance */
	char filter[SHMF_NAME_MAX + 1];
	bool writable;           /* opened SHMF_RDWR */
	unsigned long opens;     /* successful shmf_open calls in this process */
};

/* The handle for (instance, filter, writable), opened now if this process
 * has none. Returns 0 and sets *out, or a negative shmf error code (the
 * open failed; nothing is kept, so the next call tries again). */
int shmf_php_handle_get(const char *instance, const char *filter, bool writable,
                        struct shmf_php_handle **out);

/* Open a handle again after shmf_php_handle_lost(): 0 or an error code. */
int shmf_php_handle_reopen(struct shmf_php_handle *h);

/* The filter behind h is gone (SHMF_E_DROPPED): close it so that the next
 * use reopens by name (the operator may have created it again). */
void shmf_php_handle_lost(struct shmf_php_handle *h);

/* Call fn for every handle of this process, in opening order. */
void shmf_php_handles_each(void (*fn)(const struct shmf_php_handle *h, void *arg), void *arg);

/* Close every handle (module shutdown). */
void shmf_php_handles_close_all(void);

#endif
