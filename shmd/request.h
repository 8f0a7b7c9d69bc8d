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

#include "commands.h"

#define REQUEST_MAX_BYTES (64u << 20)
#define REQUEST_MAX_ARGS  (1u << 20)
#define REQUEST_MAX_ARG   (16u << 20)

struct request_reader;

/** A reader for one connection, or NULL when out of memory. */
struct request_reader *request_reader_new(void);

/** Free the reader and the last request it handed out. NULL is ignored. */
void request_reader_free(struct request_reader *rr);

/**
 * Append bytes received from the client. Bytes after a protocol error are
 * ignored; requests completed before the error are still handed out.
 * @return 0, or -1 once the stream has a protocol error (see request_reader_error()).
 */
int request_reader_feed(struct request_reader *rr, const char *buf, size_t len);

/**
 * The next complete request. @p req stays valid until the next call or
 * request_reader_free().
 * @return 1 with @p req filled, 0 when more bytes are needed, -1 on a
 *         protocol error (every request before it has been handed out).
 */
int request_reader_next(struct request_reader *rr, struct request *req);

/** What was wrong with the stream, as "Protocol error: ..."; "" if nothing. */
const char *request_reader_error(const struct request_reader *rr);

/** Bytes of a request buffered but not complete yet (for tests). */
size_t request_reader_pending(const struct request_reader *rr);

#endif
