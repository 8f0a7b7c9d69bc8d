/*
 * pull.c - shmctl pull (see pull.h): SCANDUMP a filter of the peer's shmd
 * over its TCP listener and LOADCHUNK each chunk into the local shmd over
 * its unix socket. The local daemon builds the copy out of sight and
 * publishes it with the last chunk, stream cursor and all, so a
 * replicated filter follows the stream from where the peer's copy was
 * taken. A dump the peer refuses because the filter changed under it
 * (rotated, replaced, cuckoo fingerprints moved) is taken again from the
 * start, a few times.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "tools/pull.h"
#include "libclient/rundir.h"
#include <shmf.h>
#include "common/snapshot-format.h"

#define EXIT_ERROR 2
/* Dumps begun again when the filter changed during one, at most. */
#define PULL_TRIES 5

/* A usage error: one line, and where the help is. */
static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die_usage(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "shmctl: pull: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see 'shmctl help pull')\n");
	exit(EXIT_ERROR);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "shmctl: pull: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_ERROR);
}

/* die() after freeing the reply @p r that the message quotes: the text is
 * formatted first (LeakSanitizer, in the sanitizer build, reports a reply
 * still held at exit). */
static void die_reply(redisReply *r, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die_reply(redisReply *r, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	freeReplyObject(r);
	die("%s", msg);
}

/* An error reply's text without Redis' "ERR " prefix. */
static const char *text(const redisReply *r)
{
	return strncmp(r->str, "ERR ", 4) == 0 ? r->str + 4 : r->str;
}

/* One request; exits if the connection fails. Error replies are the caller's. */
static redisReply *ask(redisContext *c, const char *who, int argc, const char **argv, const size_t *lens)
{
	redisReply *r = redisCommandArgv(c, argc, argv, lens);
	if (r == NULL)
		die("%s: %s", who, c->errstr[0] ? c->errstr : "no reply");
	return r;
}

struct pull {
	const char *filter, *as, *from, *password, *user;
	char host[256];
	int port;
	redisContext *peer, *local;
	int cuckoo;
};

static void parse_args(struct pull *p, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char **slot = NULL;
		if (!strcmp(argv[i], "--from"))
			slot = &p->from;
		else if (!strcmp(argv[i], "--password"))
			slot = &p->password;
		else if (!strcmp(argv[i], "--user"))
			slot = &p->user;
		else if (!strcmp(argv[i], "--as"))
			slot = &p->as;
		if (slot != NULL) {
			if (i + 1 >= argc)
				die_usage("%s needs a value", argv[i]);
			*slot = argv[++i];
		} else if (argv[i][0] == '-' && argv[i][1] == '-') {
			die_usage("unknown option '%s' (--from HOST:PORT, --password P, --user U, --as NAME)", argv[i]);
		} else if (p->filter == NULL) {
			p->filter = argv[i];
		} else {
			die_usage("unexpected argument '%s'", argv[i]);
		}
	}
	if (p->filter == NULL || p->from == NULL)
		die_usage("missing %s", p->filter == NULL ? "FILTER, the filter to copy"
							  : "--from HOST:PORT, the peer's TCP listener");
	if (p->as == NULL)
		p->as = p->filter;
	if (shmf_name_check(p->filter) < 0 || shmf_name_check(p->as) < 0)
		die_usage("'%s' is not a valid filter name", shmf_name_check(p->filter) < 0 ? p->filter : p->as);
	if (p->user != NULL && p->password == NULL)
		die_usage("--user needs --password");
	/* HOST:PORT, the host maybe an IPv6 address in brackets. */
	const char *colon = strrchr(p->from, ':');
	char *end;
	long port = colon != NULL ? strtol(colon + 1, &end, 10) : 0;
	if (colon == NULL || colon == p->from || colon[1] == '\0' || *end != '\0' || port < 1 || port > 65535)
		die("--from '%s': HOST:PORT expected, such as 10.0.0.7:6380", p->from);
	const char *h = p->from;
	size_t hl = (size_t)(colon - p->from);
	if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	if (hl >= sizeof(p->host))
		die("--from '%s': host name too long", p->from);
	memcpy(p->host, h, hl);
	p->host[hl] = '\0';
	p->port = (int)port;
}

/* Connect to the peer, AUTH, and learn the filter's type. */
static void peer_open(struct pull *p)
{
	struct timeval tv = { .tv_sec = 5 };
	p->peer = redisConnectWithTimeout(p->host, p->port, tv);
	if (p->peer == NULL || p->peer->err)
		die("cannot connect to peer %s: %s (is its shmd's [tcp] listener enabled there?)", p->from,
		    p->peer ? p->peer->errstr : "out of memory");
	struct timeval op = { .tv_sec = 120 };
	redisSetTimeout(p->peer, op);
	redisReply *r;
	if (p->password != NULL) {
		const char *argv[] = { "AUTH", p->user ? p->user : p->password, p->password };
		r = ask(p->peer, p->from, p->user ? 3 : 2, argv, NULL);
		if (r->type == REDIS_REPLY_ERROR)
			die_reply(r, "peer %s refused the credentials: %s", p->from, text(r));
		freeReplyObject(r);
	}
	const char *info[] = { "SHMF.INFO", p->filter };
	r = ask(p->peer, p->from, 2, info, NULL);
	if (r->type == REDIS_REPLY_ERROR) {
		if (!strncmp(r->str, "NOAUTH", 6))
			die_reply(r, "peer %s wants a password (--password): %s", p->from, r->str);
		die_reply(r, "peer %s: %s", p->from, text(r));
	}
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2)
		if (r->element[i]->type == REDIS_REPLY_STRING && !strcmp(r->element[i]->str, "type"))
			p->cuckoo = r->element[i + 1]->type == REDIS_REPLY_STRING &&
				    !strcmp(r->element[i + 1]->str, "cuckoo");
	freeReplyObject(r);
}

/* What a dump brought. */
struct tally {
	uint64_t chunks, bytes, cursor_ms, cursor_seq;
	uint64_t total; /* the header chunk's payload chunks: a complete dump is total + 1 chunks */
	int replicated;
};

/* The peer said the dump ended (iterator 0). @return 0 when every chunk
 * came, 1 when it ended early: a dump the peer no longer holds answers its
 * end, as RedisBloom's does, and the local load (never published without
 * its last chunk) is taken again. Exits for an empty cuckoo filter, whose
 * dump is empty (RedisBloom's answer) and carries no shape to copy. */
static int pull_end(struct pull *p, const struct tally *t)
{
	if (t->chunks == 0 && p->cuckoo)
		die("filter '%s' on %s is an empty cuckoo filter: its dump is empty (as RedisBloom's), so there is "
		    "nothing to copy; create '%s' here with shmctl create",
		    p->filter, p->from, p->as);
	if (t->chunks == t->total + 1)
		return 0;
	fprintf(stderr,
		"shmctl: pull: the dump of '%s' ended after %" PRIu64 " of %" PRIu64
		" chunks (the filter changed on %s); taking the dump again\n",
		p->filter, t->chunks, t->total + 1, p->from);
	return 1;
}

/* One dump, chunk by chunk into the local daemon. @return 0 once the last
 * chunk is loaded, 1 when the peer says the filter changed during the
 * dump (take it again); exits on any other error. */
static int pull_once(struct pull *p, struct tally *t)
{
	const char *dump = p->cuckoo ? "CF.SCANDUMP" : "BF.SCANDUMP";
	const char *load = p->cuckoo ? "CF.LOADCHUNK" : "BF.LOADCHUNK";
	char iter[32] = "0";
	memset(t, 0, sizeof(*t));
	for (;;) {
		const char *dargv[] = { dump, p->filter, iter };
		redisReply *r = ask(p->peer, p->from, 3, dargv, NULL);
		if (r->type == REDIS_REPLY_ERROR) {
			int again = strstr(r->str, "start the dump again") != NULL;
			if (!again)
				die_reply(r, "peer %s: %s", p->from, text(r));
			fprintf(stderr, "shmctl: pull: %s; taking the dump again\n", text(r));
			freeReplyObject(r);
			return 1;
		}
		if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_INTEGER)
			die_reply(r, "peer %s: unexpected reply to %s", p->from, dump);
		long long next = r->element[0]->integer;
		const redisReply *data = r->element[1];
		if (next == 0) {
			freeReplyObject(r);
			return pull_end(p, t);
		}
		if (data->type != REDIS_REPLY_STRING)
			die_reply(r, "peer %s: unexpected reply to %s", p->from, dump);
		if (t->chunks == 0 && data->len >= sizeof(struct shmf_chunk_header) + sizeof(struct shmf_snap_header)) {
			/* The header chunk: say what the copy carries (the daemon
			 * checks it all). */
			struct shmf_snap_header h;
			struct shmf_chunk_header ch;
			memcpy(&ch, data->str, sizeof(ch));
			memcpy(&h, data->str + sizeof(struct shmf_chunk_header), sizeof(h));
			t->total = ch.total;
			t->cursor_ms = h.cursor_ms;
			t->cursor_seq = h.cursor_seq;
			t->replicated = (h.flags & SHMF_SNAP_F_REPLICATED) != 0;
		}
		snprintf(iter, sizeof(iter), "%lld", next);
		const char *largv[] = { load, p->as, iter, data->str };
		size_t llens[] = { strlen(load), strlen(p->as), strlen(iter), data->len };
		redisReply *l = ask(p->local, "local shmd", 4, largv, llens);
		if (l->type == REDIS_REPLY_ERROR) {
			freeReplyObject(r);
			die_reply(l, "local shmd: %s", text(l));
		}
		freeReplyObject(l);
		t->chunks++;
		t->bytes += data->len;
		freeReplyObject(r);
	}
}

int shmctl_pull(int argc, char **argv, redisContext *(*local)(void))
{
	struct pull p = { 0 };
	struct tally t;
	parse_args(&p, argc, argv);
	peer_open(&p);
	p.local = local();
	int tries = 0;
	while (pull_once(&p, &t) == 1)
		if (++tries >= PULL_TRIES)
			die("filter '%s' changed during each of %d dumps on %s (busy cuckoo filters move fingerprints "
			    "as they fill); try again, or copy a snapshot file",
			    p.filter, PULL_TRIES, p.from);
	redisFree(p.peer);
	printf("filter '%s' pulled from %s as '%s': %" PRIu64 " chunks, %" PRIu64 " bytes, stream cursor %" PRIu64
	       "-%" PRIu64 "%s\n",
	       p.filter, p.from, p.as, t.chunks, t.bytes, t.cursor_ms, t.cursor_seq,
	       t.replicated ? "" : " (the peer's filter does not replicate)");
	return 0;
}
