/*
 * request.c - framing and parsing of RESP requests (see request.h).
 *
 * The guard walks the header lines of each request and skips over bulk
 * bodies; only bytes it accepted reach hiredis, whose reader then builds
 * the argument vector through our object functions.
 */
#include <hiredis/read.h>
#include <hiredis/sds.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errmsg.h"
#include "shmd/resp/request.h"
#include <shmf.h>

enum guard_state {
	G_ARRAY, /* expecting "*<count>\r\n" */
	G_BULK,  /* expecting "$<length>\r\n" */
	G_BODY,  /* inside a bulk string's bytes */
	G_CR,    /* expecting the CR after a bulk string */
	G_LF,    /* expecting the LF after a bulk string */
};

/* What hiredis builds: one request's arguments, in one allocation with
 * room for the arguments themselves when they are small (a check's verb,
 * filter name and key), so that a request costs one malloc, not one per
 * argument and two for the vectors.
 *
 * The vectors grow with the arguments that arrived, never with the count
 * the header announced: "*1048576\r\n" is 10 bytes, and vectors for a
 * million arguments would be 16 MiB. Each argument takes at least 6 bytes
 * on the wire ("$0\r\n\r\n") and at most 32 bytes of vector (16, doubled
 * as it grows), so what a request makes stays within a few times what its
 * client sent, and the reader's total (request_reader_memory()) says so. */
#define REQOBJ_POOL 256
#define REQOBJ_ARGS 8

struct reqobj {
	int argc;    /* the header's count: complete once this many arrived */
	int cap;     /* room in argv[] and lens[] */
	char **argv; /* small_argv, or a block of cap pointers then cap lengths */
	size_t *lens;
	size_t bytes;              /* what this object holds in all (request_reader_memory()) */
	struct request_reader *rr; /* whose total counts it */
	char *small_argv[REQOBJ_ARGS];
	size_t small_lens[REQOBJ_ARGS];
	size_t pool_used;
	char pool[REQOBJ_POOL]; /* small arguments, copied here */
};

struct request_reader {
	redisReader *reader;
	enum guard_state st;
	char line[24];
	size_t line_len;
	unsigned long args_left;
	size_t body_left;
	size_t req_bytes;
	int failed;
	int stop_at_end;  /* guard(): stop after the request that completes */
	int request_done; /* guard() stopped there */
	char err[200];
	struct request_limits lim;
	struct reqobj *cur;
	size_t obj_bytes; /* held by the request being built and the one handed out */
};

const struct request_limits request_limits_max = {
	.max_bytes = REQUEST_MAX_BYTES,
	.max_args = REQUEST_MAX_ARGS,
	.max_arg = REQUEST_MAX_ARG,
	.why = "",
};

static void reqobj_free(void *p)
{
	struct reqobj *o = p;
	if (o == NULL)
		return;
	/* Arguments arrive in order: the first NULL ends those that came. */
	for (int i = 0; i < o->cap && o->argv[i] != NULL; i++)
		if ((uintptr_t)o->argv[i] - (uintptr_t)o->pool >= REQOBJ_POOL) /* not in the pool */
			free(o->argv[i]);
	if (o->argv != o->small_argv)
		free(o->argv);
	o->rr->obj_bytes -= o->bytes;
	free(o);
}

static void *create_array(const redisReadTask *task, int elements)
{
	/* The guard admits only top-level arrays of 1..REQUEST_MAX_ARGS. */
	if (task->parent != NULL || elements < 1 || (unsigned)elements > REQUEST_MAX_ARGS || task->privdata == NULL)
		return NULL;
	struct reqobj *o = malloc(sizeof(*o));
	if (o == NULL)
		return NULL;
	o->argc = elements;
	o->cap = REQOBJ_ARGS;
	o->argv = o->small_argv;
	o->lens = o->small_lens;
	o->pool_used = 0;
	o->bytes = sizeof(*o);
	o->rr = task->privdata;
	o->rr->obj_bytes += o->bytes;
	memset(o->small_argv, 0, sizeof(o->small_argv));
	return o;
}

/* Room for argument @p idx: the vectors doubled (up to the header's
 * count) when it is past their end. 0, or -1 when out of memory. */
static int reqobj_room(struct reqobj *o, int idx)
{
	if (idx < o->cap)
		return 0;
	size_t cap = 2 * (size_t)o->cap;
	if (cap > (size_t)o->argc)
		cap = (size_t)o->argc;
	if (cap < (size_t)idx + 1)
		cap = (size_t)idx + 1;
	char **argv = malloc(cap * (sizeof(*argv) + sizeof(*o->lens)));
	if (argv == NULL)
		return -1;
	size_t *lens = (size_t *)(argv + cap);
	memcpy(argv, o->argv, (size_t)o->cap * sizeof(*argv));
	memcpy(lens, o->lens, (size_t)o->cap * sizeof(*lens));
	memset(argv + o->cap, 0, (cap - (size_t)o->cap) * sizeof(*argv));
	size_t old = o->argv == o->small_argv ? 0 : (size_t)o->cap * (sizeof(*argv) + sizeof(*lens));
	if (o->argv != o->small_argv)
		free(o->argv);
	size_t now = cap * (sizeof(*argv) + sizeof(*lens));
	o->bytes += now - old;
	o->rr->obj_bytes += now - old;
	o->argv = argv;
	o->lens = lens;
	o->cap = (int)cap;
	return 0;
}

static void *create_string(const redisReadTask *task, char *str, size_t len)
{
	if (task->parent == NULL)
		return NULL;
	struct reqobj *o = task->parent->obj;
	if (o == NULL || task->idx < 0 || task->idx >= o->argc || reqobj_room(o, task->idx) < 0)
		return NULL;
	char *copy;
	if (len < REQOBJ_POOL - o->pool_used) {
		copy = o->pool + o->pool_used;
		o->pool_used += len + 1;
	} else if ((copy = malloc(len + 1)) == NULL) {
		return NULL;
	} else {
		o->bytes += len + 1;
		o->rr->obj_bytes += len + 1;
	}
	memcpy(copy, str, len);
	copy[len] = '\0';
	o->argv[task->idx] = copy;
	o->lens[task->idx] = len;
	return copy;
}

static void *create_integer(const redisReadTask *task, long long v)
{
	(void)task;
	(void)v;
	return NULL;
}

static void *create_nil(const redisReadTask *task)
{
	(void)task;
	return NULL;
}

static redisReplyObjectFunctions functions = {
	.createString = create_string,
	.createArray = create_array,
	.createInteger = create_integer,
	.createNil = create_nil,
	.freeObject = reqobj_free,
};

struct request_reader *request_reader_new(void)
{
	struct request_reader *rr = calloc(1, sizeof(*rr));
	if (rr == NULL)
		return NULL;
	rr->reader = redisReaderCreateWithFunctions(&functions);
	if (rr->reader == NULL) {
		free(rr);
		return NULL;
	}
	rr->reader->privdata = rr; /* not redisReaderSetPrivdata(): it casts the pointer to int */
	rr->lim = request_limits_max;
	return rr;
}

void request_reader_set_limits(struct request_reader *rr, const struct request_limits *l)
{
	rr->lim = *l;
	if (rr->lim.max_bytes == 0 || rr->lim.max_bytes > REQUEST_MAX_BYTES)
		rr->lim.max_bytes = REQUEST_MAX_BYTES;
	if (rr->lim.max_args == 0 || rr->lim.max_args > REQUEST_MAX_ARGS)
		rr->lim.max_args = REQUEST_MAX_ARGS;
	if (rr->lim.max_arg > REQUEST_MAX_ARG)
		rr->lim.max_arg = REQUEST_MAX_ARG;
	if (rr->lim.why == NULL)
		rr->lim.why = "";
}

void request_reader_free(struct request_reader *rr)
{
	if (rr == NULL)
		return;
	reqobj_free(rr->cur);
	redisReaderFree(rr->reader);
	free(rr);
}

/* The stream is broken: say why ("Protocol error: ...") and take no more
 * bytes. Evaluates to SHMF_E_PROTO. */
#define fail(rr, ...) ((rr)->failed = 1, errmsg((rr)->err, sizeof((rr)->err), SHMF_E_PROTO, __VA_ARGS__))

static const char *show(unsigned char c, char buf[8])
{
	if (c >= 0x20 && c < 0x7f)
		snprintf(buf, 8, "'%c'", c);
	else
		snprintf(buf, 8, "0x%02x", c);
	return buf;
}

/* A size for people: "64 MiB", "16 KiB", or "1000 bytes". */
static const char *size_text(size_t n, char buf[32])
{
	if (n >= (1u << 20) && n % (1u << 20) == 0)
		snprintf(buf, 32, "%zu MiB", n >> 20);
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(buf, 32, "%zu KiB", n >> 10);
	else
		snprintf(buf, 32, "%zu bytes", n);
	return buf;
}

/* Parse the digits of a header line "<type><digits>\r": the number, or
 * SHMF_E_PROTO if malformed. */
static long parse_header(const char *line, size_t len)
{
	if (len < 3 || len > 10 || line[len - 1] != '\r')
		return SHMF_E_PROTO;
	long v = 0;
	for (size_t i = 1; i < len - 1; i++) {
		if (line[i] < '0' || line[i] > '9')
			return SHMF_E_PROTO;
		v = v * 10 + (line[i] - '0');
	}
	return v;
}

/* A complete header line in rr->line: check it and move on. 0, or
 * SHMF_E_PROTO once the stream failed. */
static int header_done(struct request_reader *rr)
{
	long v = parse_header(rr->line, rr->line_len);
	char size[32];
	rr->line_len = 0;
	if (rr->st == G_ARRAY) {
		if (v < 1)
			return fail(rr, "Protocol error: invalid multibulk length");
		if ((unsigned long)v > rr->lim.max_args)
			return fail(rr, "Protocol error: %lu arguments, more than %lu in one request%s",
				    (unsigned long)v, rr->lim.max_args, rr->lim.why);
		rr->args_left = (unsigned long)v;
		rr->st = G_BULK;
		return 0;
	}
	if (v < 0)
		return fail(rr, "Protocol error: invalid bulk length");
	if ((unsigned long)v > rr->lim.max_arg)
		return fail(rr, "Protocol error: argument of %lu bytes, larger than %s%s", (unsigned long)v,
			    size_text(rr->lim.max_arg, size), rr->lim.why);
	/* Refuse a request that cannot fit at its header, not after its bytes
	 * arrived: the client learns at once, and nothing is buffered for it. */
	if (rr->req_bytes + 1 + (size_t)v + 2 > rr->lim.max_bytes) /* this LF, the bytes, CR LF */
		return fail(rr, "Protocol error: request larger than %s%s", size_text(rr->lim.max_bytes, size),
			    rr->lim.why);
	rr->body_left = (size_t)v;
	rr->st = v > 0 ? G_BODY : G_CR;
	return 0;
}

/* A CR or LF where a request would start: an empty line, which carries
 * no request and is skipped, as Redis skips an empty inline command
 * (redis-cli --pipe sends one before its closing ECHO). */
static int blank(const struct request_reader *rr, unsigned char c)
{
	return rr->st == G_ARRAY && rr->line_len == 0 && (c == '\r' || c == '\n');
}

/* The bytes of a header line at p[*i] ("*<count>" or "$<length>", CR, LF):
 * the whole line at once when this buffer holds it (as it nearly always
 * does), else one byte. Leaves *i at the last byte taken, which the
 * caller counts. 0, or SHMF_E_PROTO once the stream failed. */
static int header_bytes(struct request_reader *rr, const char *p, size_t n, size_t *i)
{
	unsigned char c = (unsigned char)p[*i];
	char b[8];
	if (rr->line_len == 0 && c != (rr->st == G_ARRAY ? '*' : '$')) {
		if (rr->st == G_ARRAY)
			return fail(rr,
				    "Protocol error: expected '*' (a request is an array of bulk strings; "
				    "inline commands are not accepted), got %s",
				    show(c, b));
		return fail(rr, "Protocol error: expected '$' (a bulk string), got %s", show(c, b));
	}
	if (rr->line_len == 0) {
		size_t window = n - *i < sizeof(rr->line) + 1 ? n - *i : sizeof(rr->line) + 1;
		const char *nl = memchr(p + *i, '\n', window);
		if (nl != NULL) {
			size_t ll = (size_t)(nl - (p + *i));
			memcpy(rr->line, p + *i, ll);
			rr->line_len = ll;
			rr->req_bytes += ll;
			*i += ll; /* at the LF */
			return header_done(rr);
		}
	}
	if (c == '\n')
		return header_done(rr);
	if (rr->line_len >= sizeof(rr->line))
		return fail(rr, "Protocol error: header line longer than %zu bytes", sizeof(rr->line));
	rr->line[rr->line_len++] = (char)c;
	return 0;
}

/* The CR or LF @p c after a bulk string's bytes: 1 if it ended the request,
 * 0 if not, or SHMF_E_PROTO once the stream failed. */
static int trailer_byte(struct request_reader *rr, unsigned char c)
{
	if (c != (rr->st == G_CR ? '\r' : '\n'))
		return fail(rr, "Protocol error: bulk string longer than its declared length");
	if (rr->st == G_CR) {
		rr->st = G_LF;
	} else if (--rr->args_left > 0) {
		rr->st = G_BULK;
	} else {
		rr->st = G_ARRAY;
		rr->req_bytes = 0;
		return 1;
	}
	return 0;
}

/* Walk @p n bytes; returns how many are acceptable: all of them, or fewer
 * when the guard failed (the rest must not reach the reader), stopped
 * after a request (stop_at_end), or met a blank byte (not for hiredis). */
static size_t guard(struct request_reader *rr, const char *p, size_t n)
{
	size_t i = 0;
	rr->request_done = 0;
	while (i < n) {
		size_t step = 1;
		unsigned char c = (unsigned char)p[i];
		int rc = 0;
		if (blank(rr, c))
			return i;
		if (rr->st == G_ARRAY || rr->st == G_BULK) {
			rc = header_bytes(rr, p, n, &i);
		} else if (rr->st == G_BODY) {
			step = n - i < rr->body_left ? n - i : rr->body_left;
			rr->body_left -= step;
			if (rr->body_left == 0)
				rr->st = G_CR;
		} else {
			rc = trailer_byte(rr, c);
		}
		if (rc < 0)
			return i;
		if (rc > 0) { /* the request ended: its bytes count against no other */
			i += step;
			if (rr->stop_at_end) {
				rr->request_done = 1;
				return i;
			}
			continue;
		}
		rr->req_bytes += step;
		if (rr->req_bytes > rr->lim.max_bytes) {
			char size[32];
			fail(rr, "Protocol error: request larger than %s%s", size_text(rr->lim.max_bytes, size),
			     rr->lim.why);
			return i;
		}
		i += step;
	}
	return i;
}

/* Guard and hand to hiredis what the guard accepts, skipping blank bytes
 * between requests; *used: bytes taken. */
static int feed(struct request_reader *rr, const char *buf, size_t len, size_t *used)
{
	size_t off = 0;
	while (off < len && !rr->failed) {
		size_t ok = guard(rr, buf + off, len - off);
		if (ok > 0 && redisReaderFeed(rr->reader, buf + off, ok) != REDIS_OK)
			fail(rr, "Protocol error: out of memory buffering the request");
		off += ok;
		if (rr->failed || rr->request_done)
			break;
		while (off < len && blank(rr, (unsigned char)buf[off]))
			off++;
	}
	*used = rr->failed ? len : off;
	return rr->failed ? SHMF_E_PROTO : 0;
}

int request_reader_feed(struct request_reader *rr, const char *buf, size_t len)
{
	size_t used;
	rr->stop_at_end = 0;
	return feed(rr, buf, len, &used);
}

int request_reader_feed_some(struct request_reader *rr, const char *buf, size_t len, size_t *used)
{
	rr->stop_at_end = 1;
	return feed(rr, buf, len, used);
}

/* hiredis keeps its buffer's room after the bytes in it are taken (until
 * the next bytes come, and then only if none is left): a client that sent
 * one big request and went quiet would keep it. Between requests, with
 * nothing buffered, a buffer grown past hiredis' own threshold is given
 * back, by a fresh reader (hiredis has no call to shrink one). */
static void trim(struct request_reader *rr)
{
	redisReader *r = rr->reader;
	if (r->buf == NULL || r->ridx != -1 || r->pos != r->len || sdsalloc(r->buf) <= REDIS_READER_MAX_BUF)
		return;
	redisReader *fresh = redisReaderCreateWithFunctions(&functions);
	if (fresh == NULL)
		return; /* kept: it works, only larger */
	fresh->privdata = rr;
	redisReaderFree(r);
	rr->reader = fresh;
}

int request_reader_next(struct request_reader *rr, struct request *req)
{
	void *obj = NULL;
	reqobj_free(rr->cur);
	rr->cur = NULL;
	if (redisReaderGetReply(rr->reader, &obj) != REDIS_OK)
		return rr->failed ? SHMF_E_PROTO : fail(rr, "Protocol error: %s", rr->reader->errstr);
	if (obj == NULL) {
		if (!rr->failed)
			trim(rr);
		return rr->failed ? SHMF_E_PROTO : 0;
	}
	rr->cur = obj;
	req->argc = rr->cur->argc;
	req->argv = rr->cur->argv;
	req->lens = rr->cur->lens;
	return 1;
}

const char *request_reader_error(const struct request_reader *rr)
{
	return rr->failed ? rr->err : "";
}

size_t request_reader_memory(const struct request_reader *rr)
{
	/* hiredis frees its buffer when it fails (buf NULL). */
	const redisReader *r = rr->reader;
	return sizeof(*rr) + sizeof(*r) + (r->buf != NULL ? sdsalloc(r->buf) : 0) + rr->obj_bytes;
}

size_t request_reader_pending(const struct request_reader *rr)
{
	return rr->reader->len - rr->reader->pos;
}
