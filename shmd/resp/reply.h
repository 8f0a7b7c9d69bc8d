/*
 * reply.h - RESP2 and RESP3 replies, appended to a growing output buffer.
 *
 * Every function appends one complete RESP element (or an aggregate's
 * header) to the buffer. A failed allocation marks the buffer broken (oom)
 * and later appends do nothing; the server then closes the connection.
 *
 * The buffer knows the protocol its connection speaks (proto, 2 or 3, set
 * by HELLO through the dispatcher), and this file is the one place that
 * turns a RESP3 type into its RESP2 form: a map is a flat array of key,
 * value; a boolean the integer 1 or 0; a double a bulk string; a null the
 * null bulk string; a set an array. Handlers write the RESP3 type
 * RedisBloom and Redis answer and never look at proto themselves.
 */
#ifndef SHMD_REPLY_H
#define SHMD_REPLY_H

#include <stddef.h>

/* The most a connection's replies may hold unsent: a request whose reply
 * could pass it waits until the client has read enough (or, if its reply
 * alone could pass it, is refused); see server.c and verbs.h (reply_max). */
#define REPLY_UNSENT_MAX (64u << 20)

struct reply {
	char *data;
	size_t len;  /* bytes appended */
	size_t sent; /* bytes already written to the peer */
	size_t cap;
	int oom;
	int proto; /* 2 or 3 (0 counts as 2) */
};

/** Release the buffer's memory (the struct itself is the caller's). */
void reply_free(struct reply *r);

/** Drop bytes already sent once they are as many as those pending, keeping
 * what is pending; give back room the pending bytes do not need (past
 * 64 KiB: a burst leaves no big buffer). */
void reply_compact(struct reply *r);

/** Bytes the buffer holds allocated. */
static inline size_t reply_memory(const struct reply *r)
{
	return r->cap;
}

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

/** RESP3 `_`, the null; RESP2 `$-1`, the null bulk string. */
void reply_nil(struct reply *r);

/** `*n`: the next @p n elements form an array. */
void reply_array(struct reply *r, size_t n);

/** RESP3 `%n`: the next 2 @p n elements are n key, value pairs; RESP2 `*2n`. */
void reply_map(struct reply *r, size_t n);

/** RESP3 `~n`: the next @p n elements form a set; RESP2 `*n`. */
void reply_set(struct reply *r, size_t n);

/** RESP3 `#t` / `#f`; RESP2 `:1` / `:0`. */
void reply_bool(struct reply *r, int v);

/** RESP3 `,v`; RESP2 the bulk string of v (shortest text that reads back as v). */
void reply_double(struct reply *r, double v);

/** Whether replies go out in RESP3. */
static inline int reply_resp3(const struct reply *r)
{
	return r->proto == 3;
}

#endif
