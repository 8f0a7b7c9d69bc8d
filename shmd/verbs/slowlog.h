/*
 * slowlog.h - the slow log (SLOWLOG GET, LEN, RESET), as Redis keeps it:
 * the requests that ran for at least [instance] slowlog_log_slower_than
 * microseconds, newest first, at most slowlog_max_len of them. Each entry
 * holds what Redis' does: an id, the unix time it ran, its duration, its
 * arguments (at most 32, each cut at 128 bytes, as Redis cuts them), the
 * client's address and name (cut at 128 bytes too, so that an entry stays
 * within SLOWLOG_ENTRY_MAX).
 *
 * The dispatcher logs (dispatch.c); the server loop owns the log
 * (server_view's slowlog). Single-threaded: the server loop only.
 */
#ifndef SHMD_SLOWLOG_H
#define SHMD_SLOWLOG_H

#include <stddef.h>
#include <stdint.h>

#include "shmd/resp/reply.h"
#include "shmd/resp/request.h"
#include "shmd/session/session.h"

#define SLOWLOG_ARGS      32  /* arguments kept of a request: the last one says how many more there were */
#define SLOWLOG_ARG_BYTES 128 /* bytes kept of an argument (and of the client's name) */
/* The most one entry's reply takes: its arguments with their "... (N more
 * bytes)", the address and the name, and the RESP around them. */
#define SLOWLOG_ENTRY_MAX (SLOWLOG_ARGS * (SLOWLOG_ARG_BYTES + 48) + 2 * 160 + 128)

struct slowlog;

/** An empty slow log, or NULL when out of memory (then nothing is logged). */
struct slowlog *slowlog_new(void);

/** Free @p l and its entries (NULL: nothing). */
void slowlog_free(struct slowlog *l);

/**
 * Log request @p req of session @p s, which ran @p usec microseconds; its
 * arguments after the verb are logged as "(redacted)" when @p redact (a
 * verb that may carry a password). The oldest entries go so that at most
 * @p max_len stay. Out of memory, the request is not logged.
 */
void slowlog_push(struct slowlog *l, const struct request *req, int redact, const struct session *s, uint64_t usec,
		  unsigned max_len);

/** Entries held. */
size_t slowlog_len(const struct slowlog *l);

/** Forget every entry (ids go on counting, as in Redis). */
void slowlog_reset(struct slowlog *l);

/** Reply the newest @p count entries (-1: all) in Redis' shape: an array of [id, time, usec, args, addr, name]. */
void slowlog_reply(const struct slowlog *l, long long count, struct reply *out);

/** The most SLOWLOG GET's reply to @p req can take: its count's entries (default 10, -1 every one kept). */
size_t slowlog_reply_max(const struct request *req);

#endif
