/*
 * slowlog.c - the slow log (see slowlog.h): a ring of entries, newest
 * last, each one allocation holding its arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shmd/config/config.h"
#include "shmd/verbs/slowlog.h"

struct slowlog_entry {
	uint64_t id, time, usec;
	int argc;
	char **argv; /* argc strings, in the entry's own block */
	size_t *lens;
	char *addr, *name;
};

struct slowlog {
	struct slowlog_entry *ring[SLOWLOG_MAX_LEN_LIMIT];
	size_t head, len; /* the oldest entry's place, and how many */
	uint64_t next_id;
};

struct slowlog *slowlog_new(void)
{
	return calloc(1, sizeof(struct slowlog));
}

static void drop_oldest(struct slowlog *l)
{
	free(l->ring[l->head]);
	l->ring[l->head] = NULL;
	l->head = (l->head + 1) % SLOWLOG_MAX_LEN_LIMIT;
	l->len--;
}

void slowlog_reset(struct slowlog *l)
{
	while (l->len > 0)
		drop_oldest(l);
}

void slowlog_free(struct slowlog *l)
{
	if (l == NULL)
		return;
	slowlog_reset(l);
	free(l);
}

size_t slowlog_len(const struct slowlog *l)
{
	return l->len;
}

/* Argument @p i of @p req as the entry keeps it, into @p buf (at least
 * SLOWLOG_ARG_BYTES + 48 bytes): Redis' cuts. Its length. */
static size_t kept_arg(const struct request *req, int i, int redact, char *buf)
{
	if (i == SLOWLOG_ARGS - 1 && req->argc > SLOWLOG_ARGS)
		return (size_t)sprintf(buf, "... (%d more arguments)", req->argc - SLOWLOG_ARGS + 1);
	if (redact && i > 0)
		return (size_t)sprintf(buf, "(redacted)");
	size_t n = req->lens[i];
	if (n <= SLOWLOG_ARG_BYTES) {
		memcpy(buf, req->argv[i], n);
		return n;
	}
	memcpy(buf, req->argv[i], SLOWLOG_ARG_BYTES);
	return SLOWLOG_ARG_BYTES +
	       (size_t)sprintf(buf + SLOWLOG_ARG_BYTES, "... (%zu more bytes)", n - SLOWLOG_ARG_BYTES);
}

/* A text cut at SLOWLOG_ARG_BYTES, copied to @p at. The byte after it. */
static char *put_text(char *at, const char *text, char **out)
{
	size_t n = strnlen(text, SLOWLOG_ARG_BYTES);
	*out = at;
	memcpy(at, text, n);
	at[n] = '\0';
	return at + n + 1;
}

void slowlog_push(struct slowlog *l, const struct request *req, int redact, const struct session *s, uint64_t usec,
		  unsigned max_len)
{
	int argc = req->argc < SLOWLOG_ARGS ? req->argc : SLOWLOG_ARGS;
	char buf[SLOWLOG_ARGS][SLOWLOG_ARG_BYTES + 48];
	size_t lens[SLOWLOG_ARGS], bytes = sizeof(struct slowlog_entry) + argc * (sizeof(char *) + sizeof(size_t));
	for (int i = 0; i < argc; i++)
		bytes += (lens[i] = kept_arg(req, i, redact, buf[i])) + 1;
	bytes += 2 * (SLOWLOG_ARG_BYTES + 1);
	struct slowlog_entry *e = malloc(bytes);
	if (e == NULL)
		return;
	*e = (struct slowlog_entry){ .id = l->next_id++, .time = (uint64_t)time(NULL), .usec = usec, .argc = argc };
	e->argv = (char **)(e + 1);
	e->lens = (size_t *)(e->argv + argc);
	char *at = (char *)(e->lens + argc);
	for (int i = 0; i < argc; i++) {
		e->argv[i] = at;
		e->lens[i] = lens[i];
		memcpy(at, buf[i], lens[i]);
		at[lens[i]] = '\0';
		at += lens[i] + 1;
	}
	at = put_text(at, s->addr, &e->addr);
	put_text(at, s->name != NULL ? s->name : "", &e->name);
	if (max_len < 1)
		max_len = 1;
	if (max_len > SLOWLOG_MAX_LEN_LIMIT)
		max_len = SLOWLOG_MAX_LEN_LIMIT;
	while (l->len >= max_len)
		drop_oldest(l);
	l->ring[(l->head + l->len) % SLOWLOG_MAX_LEN_LIMIT] = e;
	l->len++;
}

void slowlog_reply(const struct slowlog *l, long long count, struct reply *out)
{
	size_t n = count < 0 || (unsigned long long)count > l->len ? l->len : (size_t)count;
	reply_array(out, n);
	for (size_t i = 0; i < n; i++) {
		const struct slowlog_entry *e = l->ring[(l->head + l->len - 1 - i) % SLOWLOG_MAX_LEN_LIMIT];
		reply_array(out, 6);
		reply_int(out, (long long)e->id);
		reply_int(out, (long long)e->time);
		reply_int(out, (long long)e->usec);
		reply_array(out, (size_t)e->argc);
		for (int j = 0; j < e->argc; j++)
			reply_bulk(out, e->argv[j], e->lens[j]);
		reply_bulk_str(out, e->addr);
		reply_bulk_str(out, e->name);
	}
}

size_t slowlog_reply_max(const struct request *req)
{
	long long count = 10;
	if (req->argc >= 3) {
		char *end;
		count = strtoll(req->argv[2], &end, 10);
		if (*end != '\0' || count < 0 || count > SLOWLOG_MAX_LEN_LIMIT)
			count = SLOWLOG_MAX_LEN_LIMIT;
	}
	return 64 + (size_t)count * SLOWLOG_ENTRY_MAX;
}
