/*
 * errmsg.h - the one way the daemon's and shmctl's modules report an
 * error: a code returned, and a sentence naming the object and the cause
 * written into the caller's buffer.
 */
#ifndef SHMF_COMMON_ERRMSG_H
#define SHMF_COMMON_ERRMSG_H

#include <stddef.h>
#include <sys/types.h>

/** Format the sentence into @p err (when not NULL) and return @p code. */
int errmsg(char *err, size_t errlen, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/**
 * What a file of mode @p m is, for a sentence ("/tmp/x is a FIFO, not a
 * snapshot file"): "a directory", "a FIFO", "a character device", ...;
 * "a regular file"; "not a regular file" for a type it does not name.
 */
const char *errmsg_file_kind(mode_t m);

#endif
