/* resp.c - hiredis connections and replies, with errors that name the server. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/die.h"
#include "bench/resp.h"

int endpoint_parse(struct endpoint *e, const char *server, const char *transport, const char *text, char *err,
		   size_t errlen)
{
	memset(e, 0, sizeof(*e));
	e->server = server;
	e->transport = transport;
	if (!strcmp(transport, "unix")) {
		if (text[0] != '/' || strlen(text) >= sizeof(e->path)) {
			snprintf(err, errlen, "%s socket '%s': not an absolute path", server, text);
			return -1;
		}
		snprintf(e->path, sizeof(e->path), "%s", text);
		return 0;
	}
	const char *colon = strrchr(text, ':');
	char *end;
	long port = colon ? strtol(colon + 1, &end, 10) : 0;
	if (colon == NULL || colon == text || (size_t)(colon - text) >= sizeof(e->host) || colon[1] == '\0' ||
	    *end != '\0' || port < 1 || port > 65535) {
		snprintf(err, errlen, "%s address '%s': want HOST:PORT with a port from 1 to 65535", server, text);
		return -1;
	}
	snprintf(e->host, sizeof(e->host), "%.*s", (int)(colon - text), text);
	e->port = (int)port;
	return 0;
}

const char *endpoint_name(const struct endpoint *e)
{
	static __thread char buf[4200];
	if (!strcmp(e->transport, "unix"))
		snprintf(buf, sizeof(buf), "%s over unix socket %s", e->server, e->path);
	else
		snprintf(buf, sizeof(buf), "%s over tcp %s:%d", e->server, e->host, e->port);
	return buf;
}

redisContext *resp_connect(const struct endpoint *e)
{
	redisContext *c = !strcmp(e->transport, "unix") ? redisConnectUnix(e->path) : redisConnect(e->host, e->port);
	if (c == NULL)
		die("%s: cannot connect: out of memory", endpoint_name(e));
	if (c->err)
		die("%s: cannot connect: %s", endpoint_name(e), c->errstr);
	return c;
}

void resp_append(redisContext *c, const struct endpoint *e, int argc, const char **argv, const size_t *lens)
{
	if (redisAppendCommandArgv(c, argc, argv, lens) != REDIS_OK)
		die("%s: %s: %s", endpoint_name(e), argv[0], c->errstr);
}

redisReply *resp_reply(redisContext *c, const struct endpoint *e, const char *what)
{
	void *r = NULL;
	if (redisGetReply(c, &r) != REDIS_OK || r == NULL)
		die("%s: %s: %s", endpoint_name(e), what, c->err ? c->errstr : "no reply");
	redisReply *reply = r;
	if (reply->type == REDIS_REPLY_ERROR)
		die("%s: %s: the server answered: %s", endpoint_name(e), what, reply->str);
	return reply;
}

long long resp_int(redisContext *c, const struct endpoint *e, const char *what)
{
	redisReply *r = resp_reply(c, e, what);
	if (r->type != REDIS_REPLY_INTEGER)
		die("%s: %s: expected an integer reply, got type %d", endpoint_name(e), what, r->type);
	long long v = r->integer;
	freeReplyObject(r);
	return v;
}

redisReply *resp_run(redisContext *c, const struct endpoint *e, const char *arg0, ...)
{
	const char *argv[32];
	size_t lens[32];
	int argc = 0;
	va_list ap;
	va_start(ap, arg0);
	for (const char *a = arg0; a != NULL && argc < 32; a = va_arg(ap, const char *)) {
		argv[argc] = a;
		lens[argc++] = strlen(a);
	}
	va_end(ap);
	resp_append(c, e, argc, argv, lens);
	return resp_reply(c, e, arg0);
}
