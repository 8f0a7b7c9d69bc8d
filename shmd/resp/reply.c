/*
 * reply.c - RESP2 and RESP3 replies, appended to a growing output buffer
 * (see reply.h: each RESP3 type and its RESP2 form).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmd/resp/reply.h"

void reply_free(struct reply *r)
{
	free(r->data);
	memset(r, 0, sizeof(*r));
}

/* Room kept however little is pending: a connection's usual replies fit. */
#define KEEP_CAP (64u << 10)

void reply_compact(struct reply *r)
{
	/* Only once the sent bytes are at least as many as those pending:
	 * a client reading a few KiB at a time from 64 MiB of replies must
	 * not make every write move the rest (each byte moves at most once). */
	if (r->sent != 0 && r->sent >= r->len - r->sent) {
		memmove(r->data, r->data + r->sent, r->len - r->sent);
		r->len -= r->sent;
		r->sent = 0;
	}
	if (r->cap <= KEEP_CAP || r->len > r->cap / 4)
		return;
	size_t cap = r->len * 2 > KEEP_CAP ? r->len * 2 : KEEP_CAP;
	char *p = realloc(r->data, cap);
	if (p != NULL) { /* else kept as it is, larger */
		r->data = p;
		r->cap = cap;
	}
}

static int reserve(struct reply *r, size_t more)
{
	if (r->oom)
		return -ENOMEM;
	if (r->len + more <= r->cap)
		return 0;
	/* Doubling up to 1 MiB, then 1 MiB past the need: what is allocated
	 * stays close to what is pending (the server counts it), and realloc
	 * moves large blocks by remapping them, without a copy. */
	size_t cap = r->cap ? r->cap : 4096;
	while (cap < r->len + more && cap < (1u << 20))
		cap *= 2;
	if (cap < r->len + more)
		cap = r->len + more + (1u << 20);
	char *p = realloc(r->data, cap);
	if (p == NULL) {
		r->oom = 1;
		return -ENOMEM;
	}
	r->data = p;
	r->cap = cap;
	return 0;
}

static void append(struct reply *r, const void *bytes, size_t n)
{
	if (reserve(r, n) < 0)
		return;
	memcpy(r->data + r->len, bytes, n);
	r->len += n;
}

static void append_line(struct reply *r, char type, const char *text, size_t n)
{
	if (reserve(r, n + 3) < 0)
		return;
	r->data[r->len++] = type;
	memcpy(r->data + r->len, text, n);
	r->len += n;
	r->data[r->len++] = '\r';
	r->data[r->len++] = '\n';
}

void reply_status(struct reply *r, const char *text)
{
	append_line(r, '+', text, strlen(text));
}

void reply_error(struct reply *r, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	size_t len = (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f)
			text[i] = '?';
	append_line(r, '-', text, len);
}

static void append_number(struct reply *r, char type, long long n)
{
	/* By hand rather than snprintf: an integer ends almost every reply
	 * (":1" to BF.EXISTS), and printf's machinery was a tenth of the
	 * daemon's time under pipelined checks. */
	char text[24];
	char *p = text + sizeof(text);
	unsigned long long v = n < 0 ? 0ULL - (unsigned long long)n : (unsigned long long)n;
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	if (n < 0)
		*--p = '-';
	append_line(r, type, p, (size_t)(text + sizeof(text) - p));
}

void reply_int(struct reply *r, long long n)
{
	append_number(r, ':', n);
}

void reply_bulk(struct reply *r, const void *data, size_t len)
{
	append_number(r, '$', (long long)len);
	append(r, data, len);
	append(r, "\r\n", 2);
}

void reply_bulk_str(struct reply *r, const char *text)
{
	reply_bulk(r, text, strlen(text));
}

void reply_nil(struct reply *r)
{
	if (reply_resp3(r))
		append(r, "_\r\n", 3);
	else
		append(r, "$-1\r\n", 5);
}

void reply_array(struct reply *r, size_t n)
{
	append_number(r, '*', (long long)n);
}

void reply_map(struct reply *r, size_t n)
{
	if (reply_resp3(r))
		append_number(r, '%', (long long)n);
	else
		append_number(r, '*', 2 * (long long)n);
}

void reply_set(struct reply *r, size_t n)
{
	append_number(r, reply_resp3(r) ? '~' : '*', (long long)n);
}

void reply_bool(struct reply *r, int v)
{
	if (reply_resp3(r))
		append(r, v ? "#t\r\n" : "#f\r\n", 4);
	else
		append(r, v ? ":1\r\n" : ":0\r\n", 4);
}

void reply_double(struct reply *r, double v)
{
	char text[40];
	int n;
	if (isinf(v))
		n = snprintf(text, sizeof(text), "%s", v > 0 ? "inf" : "-inf");
	else if (isnan(v))
		n = snprintf(text, sizeof(text), "nan");
	else if ((n = snprintf(text, sizeof(text), "%.15g", v)) > 0 && strtod(text, NULL) != v)
		n = snprintf(text, sizeof(text), "%.17g", v);
	if (reply_resp3(r))
		append_line(r, ',', text, (size_t)n);
	else
		reply_bulk(r, text, (size_t)n);
}
