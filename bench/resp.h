/*
 * resp.h - connections to the RESP servers the bench measures (Redis over
 * TCP loopback and over its unix socket, shmd's unix socket), through
 * hiredis. Every failure, an error reply included, ends the run with a
 * message naming the server and the command.
 */
#ifndef BENCH_RESP_H
#define BENCH_RESP_H

#include <stddef.h>
#include <hiredis/hiredis.h>

struct endpoint {
	const char *server;    /* "redis" or "shmd": for messages */
	const char *transport; /* "tcp" or "unix" */
	char host[64];         /* tcp */
	int port;              /* tcp */
	char path[4096];       /* unix */
};

/** Parse "HOST:PORT" (@p transport "tcp") or a socket path ("unix").
 *  @return 0, or -1 with a sentence in @p err. */
int endpoint_parse(struct endpoint *e, const char *server, const char *transport, const char *text, char *err,
		   size_t errlen);

/** "redis over tcp 127.0.0.1:6379", for messages. */
const char *endpoint_name(const struct endpoint *e);

/** Connect (exits on failure). */
redisContext *resp_connect(const struct endpoint *e);

/** Queue one command; nothing is sent until a reply is read. */
void resp_append(redisContext *c, const struct endpoint *e, int argc, const char **argv, const size_t *lens);

/** Read the next reply; exits on a broken connection or an error reply
 *  (@p what names the command in the message). Free it with freeReplyObject(). */
redisReply *resp_reply(redisContext *c, const struct endpoint *e, const char *what);

/** The next reply, which must be an integer. */
long long resp_int(redisContext *c, const struct endpoint *e, const char *what);

/** One command of plain strings (NULL-terminated list), its reply read and returned. */
redisReply *resp_run(redisContext *c, const struct endpoint *e, const char *arg0, ...) __attribute__((sentinel));

#endif
