/*
 * request.h - framing and parsing of RESP requests on the control socket.
 *
 * Bytes from a client are checked against the limits of docs/protocol.md
 * (an array of 1..1,048,576 bulk strings, each at most 16 MiB, at most
 * 64 MiB in all) before hiredis' reader builds the argument vector, so no
 * declared length can make the reader allocate or read past what the
 * limits allow. Nothing here touches a socket: the reader is fed bytes
 * and hands out complete requests, which makes it testable and fuzzable
 * on its own.
 */
#ifndef SHMD_REQUEST_H
#define SHMD_REQUEST_H

#include <stddef.h>

/* One request: argc arguments, each NUL-terminated with its true length in
 * lens[] (an argument may contain NUL bytes; names that do are refused). */
struct request {
	int argc;
	char **argv;
	size_t *lens;
};

#define REQUEST_MAX_BYTES (64u << 20)
#define REQUEST_MAX_ARGS  (1u << 20)
#define REQUEST_MAX_ARG   (16u << 20)

/* What one request may hold. A reader starts with the largest limits
 * (the constants above); a connection may narrow them, for instance before
 * a TCP client has authenticated. */
struct request_limits {
	size_t max_bytes;       /* the whole request, headers included: 1..REQUEST_MAX_BYTES */
	unsigned long max_args; /* 1..REQUEST_MAX_ARGS */
	size_t max_arg;         /* one argument's bytes: 0..REQUEST_MAX_ARG */
	const char *why;        /* appended to the error, such as " before AUTH" ("" or NULL: nothing) */
};

/** The largest limits: 64 MiB, 1,048,576 arguments, 16 MiB an argument. */
extern const struct request_limits request_limits_max;

struct request_reader;

/** A reader for one connection, or NULL when out of memory. */
struct request_reader *request_reader_new(void);

/**
 * Apply @p l from the next request on (values above the constants are
 * lowered to them). Call it between requests: after request_reader_next()
 * handed out a request and before more bytes are fed.
 */
void request_reader_set_limits(struct request_reader *rr, const struct request_limits *l);

/** Free the reader and the last request it handed out. NULL is ignored. */
void request_reader_free(struct request_reader *rr);

/**
 * Append bytes received from the client. Bytes after a protocol error are
 * ignored; requests completed before the error are still handed out.
 * @return 0, or SHMF_E_PROTO once the stream has a protocol error (see request_reader_error()).
 */
int request_reader_feed(struct request_reader *rr, const char *buf, size_t len);

/**
 * Like request_reader_feed(), but stop after the first request that
 * completes in @p buf, so that the caller can execute it (and change the
 * limits, say after AUTH) before the next one is read: every byte is
 * judged by the limits in force for its own request. *used says how many
 * bytes were taken; feed the rest afterwards.
 * @return 0, or SHMF_E_PROTO once the stream has a protocol error.
 */
int request_reader_feed_some(struct request_reader *rr, const char *buf, size_t len, size_t *used);

/**
 * The next complete request. @p req stays valid until the next call or
 * request_reader_free().
 * @return 1 with @p req filled, 0 when more bytes are needed, SHMF_E_PROTO
 *         on a protocol error (every request before it has been handed out).
 */
int request_reader_next(struct request_reader *rr, struct request *req);

/** What was wrong with the stream, as "Protocol error: ..."; "" if nothing. */
const char *request_reader_error(const struct request_reader *rr);

/**
 * Bytes the reader holds now: its buffer (a request's bytes until it is
 * complete), the request being built and the last one handed out. It grows
 * with the bytes received, never with a count or length a header announces
 * before its bytes came (docs/protocol.md, "Limits").
 */
size_t request_reader_memory(const struct request_reader *rr);

/** Bytes of a request buffered but not complete yet (for tests). */
size_t request_reader_pending(const struct request_reader *rr);

#endif
