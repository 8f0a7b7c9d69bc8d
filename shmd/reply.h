/*
 * reply.h - RESP2 replies, appended to a growing output buffer.
 *
 * Every function appends one complete RESP element (or an array header) to
 * the buffer. A failed allocation marks the buffer broken (oom) and later
 * appends do nothing; the server then closes the connection.
 */
#ifndef SHMD_REPLY_H
#define SHMD_REPLY_H

#include <stddef.h>

struct reply {
	char *data;
	size_t len;  /* bytes appended */
	size_t sent; /* bytes already written to the peer */
	size_t cap;
	int oom;
};

/** Release the buffer's memory (the struct itself is the caller's). */
void reply_free(struct reply *r);

/** Drop bytes already sent, keeping what is still pending. */
void reply_compact(struct reply *r);

/** Bytes appended but not sent yet. */
static inline size_t reply_pending(const struct reply *r)
{
	return r->len - r->sent;
}

/** `+text` (text must not contain CR or LF). */
void reply_status(struct reply *r, const char *text);

/** `-ERR ...`: printf-style; CR, LF and other control characters are replaced by '?'. */
void reply_error(struct reply *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** `:n` */
void reply_int(struct reply *r, long long n);

/** `$len` + bytes: any bytes are allowed. */
void reply_bulk(struct reply *r, const void *data, size_t len);

/** Bulk string of a NUL-terminated text. */
void reply_bulk_str(struct reply *r, const char *text);

/** `$-1`, the null bulk string. */
void reply_nil(struct reply *r);

/** `*n`: the next @p n elements form an array. */
void reply_array(struct reply *r, size_t n);

#endif
