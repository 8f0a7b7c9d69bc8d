/*
 * import.c - shmctl import (see import.h): SCANDUMP a RedisBloom filter of
 * a running Redis and LOADCHUNK each of its chunks into the local shmd
 * over its unix socket, cut to 4 MiB at most. The local daemon checks
 * RedisBloom's header, builds the import out of sight and publishes it
 * with the last byte. The last piece is held back until the header has
 * been asked for again: a filter that changed during the dump (RedisBloom
 * dumps a live filter chunk by chunk) is taken again, a few times, so the
 * copy is of one moment of it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>

#include "tools/cli.h"
#include "tools/import.h"
#include "common/redisbloom-dump.h"
#include "libclient/rundir.h"
#include <shmf.h>

/* Dumps taken again when the filter changed during one, at most. */
#define IMPORT_TRIES 5
/* Bytes of one LOADCHUNK: RedisBloom's chunks go up to 16 MiB, a request
 * argument of shmd's as well; 4 MiB is what shmd's own dumps send. */
#define IMPORT_PIECE (4u << 20)

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "shmctl: import: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_ERROR);
}

/* die() quoting error reply @p r, freed first. */
static void die_reply(redisReply *r, const char *fmt, const char *who) __attribute__((noreturn));
static void die_reply(redisReply *r, const char *fmt, const char *who)
{
	char text[1024];
	snprintf(text, sizeof(text), "%s", r->str);
	freeReplyObject(r);
	die(fmt, who, text);
}

struct import {
	const char *redis, *key, *as, *password, *user;
	char host[256], path[4096], url_user[256], url_pass[256];
	int port;
	long db;
	redisContext *r, *local;
	int cuckoo;
};

/* One request to Redis; exits if the connection fails. */
static redisReply *ask(struct import *im, int argc, const char **argv, const size_t *lens)
{
	redisReply *r = redisCommandArgv(im->r, argc, argv, lens);
	if (r == NULL)
		die("Redis %s: %s", im->redis, im->r->errstr[0] ? im->r->errstr : "no reply");
	return r;
}

/* ---- Where Redis is ------------------------------------------------------ */

static int hex(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* @p s, @p n bytes of a URL, %XX decoded into @p out. 0, or -1. */
static int url_part(const char *s, size_t n, char *out, size_t size)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (o + 1 >= size)
			return -1;
		if (s[i] == '%') {
			if (i + 2 >= n || hex(s[i + 1]) < 0 || hex(s[i + 2]) < 0)
				return -1;
			out[o++] = (char)(hex(s[i + 1]) << 4 | hex(s[i + 2]));
			i += 2;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = '\0';
	return 0;
}

/* HOST:PORT, [V6]:PORT or HOST (port 6379 when @p default_port) of @p s,
 * @p n bytes long. 0, or -1. */
static int host_port(struct import *im, const char *s, size_t n, int default_port)
{
	const char *colon = NULL;
	for (size_t i = 0; i < n; i++)
		if (s[i] == ':')
			colon = s + i;
	if (n > 0 && s[0] == '[') { /* an IPv6 address: its colons are its own */
		const char *close = memchr(s, ']', n);
		colon = close != NULL && close + 1 < s + n && close[1] == ':' ? close + 1 : NULL;
		if (close == NULL)
			return -1;
	}
	size_t hl = colon != NULL ? (size_t)(colon - s) : n;
	long port = default_port ? 6379 : -1;
	if (colon != NULL) {
		char digits[8], *end;
		size_t dl = n - hl - 1;
		if (dl == 0 || dl >= sizeof(digits))
			return -1;
		memcpy(digits, colon + 1, dl);
		digits[dl] = '\0';
		port = strtol(digits, &end, 10);
		if (*end != '\0')
			return -1;
	}
	if (s[0] == '[' && hl >= 2) {
		s++;
		hl -= 2;
	}
	if (hl == 0 || hl >= sizeof(im->host) || port < 1 || port > 65535)
		return -1;
	memcpy(im->host, s, hl);
	im->host[hl] = '\0';
	im->port = (int)port;
	return 0;
}

/* redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]. 0, or -1. */
static int parse_url(struct import *im, const char *u)
{
	const char *rest = u + strlen("redis://"), *at = strrchr(rest, '@');
	if (at != NULL) {
		const char *colon = memchr(rest, ':', (size_t)(at - rest));
		const char *pass = colon != NULL ? colon + 1 : rest;
		if ((colon != NULL && url_part(rest, (size_t)(colon - rest), im->url_user, sizeof(im->url_user)) < 0) ||
		    url_part(pass, (size_t)(at - pass), im->url_pass, sizeof(im->url_pass)) < 0)
			return -1;
		if (im->user == NULL && im->url_user[0] != '\0')
			im->user = im->url_user;
		if (im->password == NULL && im->url_pass[0] != '\0')
			im->password = im->url_pass;
		rest = at + 1;
	}
	const char *slash = strchr(rest, '/');
	if (slash != NULL && slash[1] != '\0') {
		char *end;
		im->db = strtol(slash + 1, &end, 10);
		if (*end != '\0' || im->db < 0)
			return -1;
	}
	return host_port(im, rest, slash != NULL ? (size_t)(slash - rest) : strlen(rest), 1);
}

static void parse_target(struct import *im)
{
	const char *t = im->redis;
	int bad;
	if (!strncmp(t, "rediss://", 9))
		die("REDIS '%s': TLS (rediss://) is not supported; reach Redis over plain TCP or its unix socket", t);
	if (!strncmp(t, "redis://", 8))
		bad = parse_url(im, t);
	else if (!strncmp(t, "unix://", 7) || t[0] == '/')
		bad = snprintf(im->path, sizeof(im->path), "%s", t[0] == '/' ? t : t + 7) >= (int)sizeof(im->path);
	else
		bad = host_port(im, t, strlen(t), 0);
	if (bad)
		die("REDIS '%s': HOST:PORT, redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] or the path of Redis' unix "
		    "socket expected, such as 10.0.0.7:6379",
		    t);
}

static int db_arg(const char *s, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v < 0 || errno != 0)
		return -1;
	*out = v;
	return 0;
}

static void parse_args(struct import *im, int argc, char **argv)
{
	const char *pos[4];
	int npos = 0;
	for (int i = 1; i < argc; i++) {
		const char **slot = NULL;
		if (!strcmp(argv[i], "--password"))
			slot = &im->password;
		else if (!strcmp(argv[i], "--user"))
			slot = &im->user;
		else if (!strcmp(argv[i], "--as"))
			slot = &im->as;
		if (slot != NULL || !strcmp(argv[i], "--db")) {
			if (i + 1 >= argc)
				cli_usage_error("import", "%s needs a value", argv[i]);
			if (slot != NULL)
				*slot = argv[++i];
			else if (db_arg(argv[++i], &im->db) < 0)
				cli_usage_error("import", "--db '%s': a database number (0, 1, ...)", argv[i]);
		} else if (argv[i][0] == '-' && argv[i][1] == '-') {
			cli_usage_error("import", "unknown option '%s' (--password P, --user U, --db N, --as NAME)",
					argv[i]);
		} else if (npos < 4) {
			pos[npos++] = argv[i];
		} else {
			cli_usage_error("import", "unexpected argument '%s'", argv[i]);
		}
	}
	if (npos == 4 && strcasecmp(pos[2], "AS") == 0 && im->as == NULL)
		im->as = pos[3];
	else if (npos < 2)
		cli_usage_error("import", "missing %s",
				npos == 0 ? "REDIS, where Redis is" : "KEY, the filter's key there");
	else if (npos != 2)
		cli_usage_error("import", "unexpected argument '%s' (REDIS KEY [AS NAME])", pos[2]);
	im->redis = pos[0];
	im->key = pos[1];
	if (im->as == NULL)
		im->as = im->key;
	if (shmf_name_check(im->as) < 0)
		cli_usage_error("import",
				"'%s' is not a valid filter name (1-63 of A-Z a-z 0-9 _ . : -); name it with AS NAME",
				im->as);
	if (im->user != NULL && im->password == NULL)
		cli_usage_error("import", "--user needs --password");
	parse_target(im);
}

/* ---- Redis ----------------------------------------------------------------- */

/* Connect, AUTH, SELECT, and learn the key's type. */
static void redis_open(struct import *im)
{
	struct timeval tv = { .tv_sec = 5 };
	im->r = im->path[0] ? redisConnectUnixWithTimeout(im->path, tv)
			    : redisConnectWithTimeout(im->host, im->port, tv);
	if (im->r == NULL || im->r->err)
		die("cannot connect to Redis %s: %s", im->redis, im->r ? im->r->errstr : "out of memory");
	struct timeval op = { .tv_sec = 120 };
	redisSetTimeout(im->r, op);
	redisReply *r;
	if (im->password != NULL) {
		const char *argv[] = { "AUTH", im->user ? im->user : im->password, im->password };
		r = ask(im, im->user ? 3 : 2, argv, NULL);
		if (r->type == REDIS_REPLY_ERROR)
			die_reply(r, "Redis %s refused the credentials: %s", im->redis);
		freeReplyObject(r);
	}
	if (im->db != 0) {
		char db[24];
		snprintf(db, sizeof(db), "%ld", im->db);
		const char *argv[] = { "SELECT", db };
		r = ask(im, 2, argv, NULL);
		if (r->type == REDIS_REPLY_ERROR)
			die_reply(r, "Redis %s: SELECT: %s", im->redis);
		freeReplyObject(r);
	}
	const char *type[] = { "TYPE", im->key };
	r = ask(im, 2, type, NULL);
	if (r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOAUTH", 6))
		die_reply(r, "Redis %s wants a password (--password): %s", im->redis);
	if (r->type == REDIS_REPLY_ERROR)
		die_reply(r, "Redis %s: TYPE: %s", im->redis);
	const char *t = r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING ? r->str : "";
	if (!strcmp(t, "none")) {
		freeReplyObject(r);
		die("key '%s' not found on Redis %s", im->key, im->redis);
	}
	if (strcmp(t, "MBbloom--") != 0 && strcmp(t, "MBbloomCF") != 0) {
		char kind[64];
		snprintf(kind, sizeof(kind), "%s", t);
		freeReplyObject(r);
		die("key '%s' on Redis %s is a %s, not a RedisBloom Bloom (MBbloom--) or cuckoo (MBbloomCF) filter",
		    im->key, im->redis, kind);
	}
	im->cuckoo = !strcmp(t, "MBbloomCF");
	freeReplyObject(r);
}

/* SCANDUMP KEY ITER: [next, data]; exits on an error or another shape. */
static redisReply *scandump(struct import *im, long long iter)
{
	char it[24];
	snprintf(it, sizeof(it), "%lld", iter);
	const char *argv[] = { im->cuckoo ? "CF.SCANDUMP" : "BF.SCANDUMP", im->key, it };
	redisReply *r = ask(im, 3, argv, NULL);
	if (r->type == REDIS_REPLY_ERROR)
		die_reply(r, "Redis %s: SCANDUMP: %s", im->redis);
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_INTEGER ||
	    (r->element[0]->integer != 0 && r->element[1]->type != REDIS_REPLY_STRING)) {
		freeReplyObject(r);
		die("Redis %s: %s answered what RedisBloom does not (is RedisBloom loaded there?)", im->redis, argv[0]);
	}
	return r;
}

/* ---- Into the local shmd --------------------------------------------------- */

/* One request to the local daemon: NULL when it succeeded; else its
 * error's text in @p text (exits if the connection fails). */
static const char *local_ask(struct import *im, int argc, const char **argv, const size_t *lens, char *text, size_t len)
{
	redisReply *r = redisCommandArgv(im->local, argc, argv, lens);
	if (r == NULL)
		die("local shmd: %s", im->local->errstr[0] ? im->local->errstr : "no reply");
	int refused = r->type == REDIS_REPLY_ERROR;
	if (refused)
		snprintf(text, len, "%s", cli_error_text(r));
	freeReplyObject(r);
	return refused ? text : NULL;
}

/* LOADCHUNK NAME ITER DATA into the local daemon; exits on an error reply. */
static void load(struct import *im, uint64_t iter, const char *data, size_t len)
{
	char it[24], text[1024];
	snprintf(it, sizeof(it), "%" PRIu64, iter);
	const char *cmd = im->cuckoo ? "CF.LOADCHUNK" : "BF.LOADCHUNK";
	const char *argv[] = { cmd, im->as, it, data };
	size_t lens[] = { strlen(cmd), strlen(im->as), strlen(it), len };
	/* shmd answers a chunk it refuses as RedisBloom would, and logs why. */
	if (local_ask(im, 4, argv, lens, text, sizeof(text)) != NULL)
		die("local shmd refused chunk %" PRIu64 " of '%s': %s (shmd's log says why)", iter, im->key, text);
}

/* A piece held back: the last one publishes the filter. */
struct held {
	char *data;
	size_t len;
	uint64_t iter;
};

/* Load the piece held (if any), then hold @p len bytes of @p data that
 * end at dump position @p end (their iterator is end + 1). */
static void hold(struct import *im, struct held *h, const char *data, size_t len, uint64_t end)
{
	if (h->data != NULL)
		load(im, h->iter, h->data, h->len);
	char *copy = realloc(h->data, len ? len : 1);
	if (copy == NULL)
		die("out of memory for a chunk of %zu bytes", len);
	memcpy(copy, data, len);
	*h = (struct held){ copy, len, end + 1 };
}

/* What a dump brought. */
struct tally {
	uint64_t chunks, bytes;
	char *header;
	size_t header_len;
};

/* Every data chunk after the header, cut to IMPORT_PIECE, into the local
 * daemon but for the last piece, which @p h holds. */
static void load_chunks(struct import *im, struct held *h, struct tally *t)
{
	long long iter = 1;
	for (;;) {
		redisReply *r = scandump(im, iter);
		long long next = r->element[0]->integer;
		const redisReply *d = r->element[1];
		if (next == 0) {
			freeReplyObject(r);
			return;
		}
		/* RedisBloom's iterator: 1 + the position after the chunk. */
		if (next <= iter || (unsigned long long)(next - iter) != d->len) {
			freeReplyObject(r);
			die("Redis %s: a chunk of %s does not follow the one before (iterator %lld after %lld)",
			    im->redis, im->key, next, iter);
		}
		for (size_t off = 0; off < d->len; off += IMPORT_PIECE) {
			size_t n = d->len - off < IMPORT_PIECE ? d->len - off : IMPORT_PIECE;
			hold(im, h, d->str + off, n, (uint64_t)iter - 1 + off + n);
		}
		t->chunks++;
		t->bytes += d->len;
		iter = next;
		freeReplyObject(r);
	}
}

/* One dump. @return 0 once the last piece is loaded (the filter is
 * published), 1 when the filter changed during the dump (take it again),
 * 2 for an empty cuckoo filter (no dump at all: import_empty()). */
static int import_once(struct import *im, struct tally *t)
{
	struct held h = { 0 };
	redisReply *r = scandump(im, 0);
	if (r->element[0]->integer == 0) {
		/* RedisBloom dumps nothing of an empty cuckoo filter. */
		freeReplyObject(r);
		return 2;
	}
	free(t->header);
	*t = (struct tally){ .header = malloc(r->element[1]->len + 1), .header_len = r->element[1]->len };
	if (t->header == NULL)
		die("out of memory");
	memcpy(t->header, r->element[1]->str, t->header_len);
	load(im, 1, t->header, t->header_len);
	freeReplyObject(r);
	load_chunks(im, &h, t);
	if (h.data == NULL)
		die("Redis %s: the dump of '%s' has a header and no data", im->redis, im->key);
	/* The same header (its item count, its links) now as at the start:
	 * nothing was added or removed while the chunks were read. */
	r = scandump(im, 0);
	int same = r->element[0]->integer != 0 && r->element[1]->len == t->header_len &&
		   memcmp(r->element[1]->str, t->header, t->header_len) == 0;
	freeReplyObject(r);
	if (same)
		load(im, h.iter, h.data, h.len);
	free(h.data);
	return !same;
}

/* The integer field @p name of the flat field-value array @p r, or -1. */
static long long info_field(const redisReply *r, const char *name)
{
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2)
		if ((r->element[i]->type == REDIS_REPLY_STATUS || r->element[i]->type == REDIS_REPLY_STRING) &&
		    !strcmp(r->element[i]->str, name) && r->element[i + 1]->type == REDIS_REPLY_INTEGER)
			return r->element[i + 1]->integer;
	return -1;
}

/*
 * An empty cuckoo filter: RedisBloom's CF.SCANDUMP answers nothing of it,
 * so there is nothing of RedisBloom's to keep. It answers every key
 * "absent", as a new filter does; made here as a cuckoo filter of shmd's
 * own, writable, of RedisBloom's shape (CF.INFO: its buckets times their
 * size as the capacity, the bucket size, MAXITERATIONS and EXPANSION).
 * @return 0, or 1 when it was no longer empty (take it again).
 */
static int import_empty(struct import *im)
{
	const char *argv[] = { "CF.INFO", im->key };
	redisReply *r = ask(im, 2, argv, NULL);
	if (r->type == REDIS_REPLY_ERROR)
		die_reply(r, "Redis %s: CF.INFO: %s", im->redis);
	long long buckets = info_field(r, "Number of buckets"), size = info_field(r, "Bucket size"),
		  iters = info_field(r, "Max iterations"), exp = info_field(r, "Expansion rate"),
		  items = info_field(r, "Number of items inserted");
	freeReplyObject(r);
	if (buckets < 1 || size < 1 || size > 255 || iters < 1 || iters > 65535 || exp < 0 || exp > 32768 ||
	    items < 0 || buckets > (1LL << 40))
		die("Redis %s: CF.INFO of '%s' is not RedisBloom's (buckets, bucket size, max iterations, expansion)",
		    im->redis, im->key);
	if (items > 0)
		return 1;
	char cap[24], bs[24], it[24], ex[24];
	snprintf(cap, sizeof(cap), "%lld", buckets * size);
	snprintf(bs, sizeof(bs), "%lld", size);
	snprintf(it, sizeof(it), "%lld", iters);
	snprintf(ex, sizeof(ex), "%lld", exp);
	const char *mk[] = { "CF.RESERVE", im->as, cap, "BUCKETSIZE", bs, "MAXITERATIONS", it, "EXPANSION", ex };
	char text[1024];
	if (local_ask(im, 9, mk, NULL, text, sizeof(text)) != NULL)
		die("local shmd refused to make '%s' like the empty cuckoo filter '%s' (capacity %s, BUCKETSIZE %s, "
		    "MAXITERATIONS %s, EXPANSION %s): %s",
		    im->as, im->key, cap, bs, it, ex, text);
	printf("filter '%s' on Redis %s is an empty cuckoo filter, which RedisBloom dumps nothing of: made '%s', "
	       "a cuckoo filter of shmd's own with its shape (capacity %s, BUCKETSIZE %s, MAXITERATIONS %s, "
	       "EXPANSION %s). It is empty, as it was there, and writable.\n",
	       im->key, im->redis, im->as, cap, bs, it, ex);
	return 0;
}

/* What was imported, from its header (the daemon checked it). */
static void report(const struct import *im, const struct tally *t)
{
	char err[256];
	struct rb_dump *d = NULL;
	printf("filter '%s' imported from Redis %s as '%s'", im->key, im->redis, im->as);
	if (rb_dump_parse(im->cuckoo ? SHMF_TYPE_CUCKOO : SHMF_TYPE_BLOOM, t->header, t->header_len, &d, err,
			  sizeof(err)) == 0) {
		if (im->cuckoo)
			printf(": a cuckoo filter of %" PRIu32 " sub-filter%s, %" PRIu64 " fingerprint slots, %" PRIu64
			       " items",
			       d->t.nlinks, d->t.nlinks > 1 ? "s" : "", d->capacity, d->t.items);
		else
			printf(": a Bloom chain of %" PRIu32 " link%s, capacity %" PRIu64 ", %" PRIu64 " items",
			       d->t.nlinks, d->t.nlinks > 1 ? "s" : "", d->capacity, d->t.items);
		free(d);
	}
	printf("; %" PRIu64 " bytes in %" PRIu64 " chunks. It answers as RedisBloom's did, and is read-only.\n",
	       t->bytes, t->chunks);
}

int shmctl_import(int argc, char **argv, redisContext *(*local)(void))
{
	struct import im = { 0 };
	struct tally t = { 0 };
	parse_args(&im, argc, argv);
	redis_open(&im);
	im.local = local();
	int tries = 0, rc;
	while ((rc = import_once(&im, &t)) != 0 && (rc != 2 || import_empty(&im) != 0)) {
		if (++tries >= IMPORT_TRIES)
			die("filter '%s' changed during each of %d dumps on Redis %s (adds went on meanwhile); try again "
			    "when it is quieter",
			    im.key, IMPORT_TRIES, im.redis);
		fprintf(stderr, "shmctl: import: filter '%s' changed during the dump; taking it again\n", im.key);
	}
	if (rc == 2) {
		redisFree(im.r);
		return 0;
	}
	redisFree(im.r);
	report(&im, &t);
	free(t.header);
	return 0;
}
