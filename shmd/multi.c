/*
 * multi.c - MULTI, EXEC, DISCARD, WATCH (see multi.h). Error texts are
 * Redis 7's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "errors.h"
#include "jobs.h"
#include "multi.h"
#include "session.h"

/* One queued request: its vectors and arguments copied into one block
 * (the reader's buffer is reused for the next request). */
struct queued {
	struct request req; /* argv, lens and the strings all in mem */
	void *mem;
};

struct multi_queue {
	struct queued *q;
	size_t n, cap;
	size_t bytes;     /* memory taken: the blocks and the entries' array */
	size_t reply_max; /* what EXEC's reply can take at most */
};

static void queue_free(struct multi_queue *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->q[i].mem);
	free(m->q);
	free(m);
}

void multi_reset(struct session *s)
{
	queue_free(s->multi);
	s->multi = NULL;
	s->in_multi = 0;
	s->multi_dirty = 0;
}

size_t multi_reply_max(const struct session *s)
{
	return 64 + (s->multi != NULL ? s->multi->reply_max : 0);
}

size_t multi_memory(const struct session *s)
{
	return s->multi != NULL ? sizeof(*s->multi) + s->multi->bytes : 0;
}

/* Copy @p req, whose reply takes at most @p reply bytes, to the end of
 * the queue. 0, or -ENOMEM, SHMF_E_TOOBIG or -ERANGE (its replies
 * would not fit). */
static int queue_push(struct multi_queue *m, const struct request *req, size_t reply)
{
	size_t vec = (size_t)req->argc * (sizeof(char *) + sizeof(size_t)), bytes = vec;
	for (int i = 0; i < req->argc; i++)
		bytes += req->lens[i] + 1;
	size_t grow = m->n == m->cap ? (m->cap ? m->cap : 16) * sizeof(*m->q) : 0;
	if (m->n >= MULTI_MAX_QUEUED || m->bytes + bytes + grow > MULTI_MAX_BYTES)
		return SHMF_E_TOOBIG;
	if (m->reply_max + reply > REPLY_UNSENT_MAX)
		return -ERANGE;
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 16;
		struct queued *q = realloc(m->q, cap * sizeof(*q));
		if (q == NULL)
			return -ENOMEM;
		m->q = q;
		m->cap = cap;
		m->bytes += grow;
	}
	struct queued *e = &m->q[m->n];
	if ((e->mem = malloc(bytes)) == NULL)
		return -ENOMEM;
	e->req.argv = e->mem;
	e->req.lens = (size_t *)(e->req.argv + req->argc);
	char *p = (char *)(e->req.lens + req->argc);
	for (int i = 0; i < req->argc; i++) {
		memcpy(p, req->argv[i], req->lens[i]);
		p[req->lens[i]] = '\0';
		e->req.argv[i] = p;
		e->req.lens[i] = req->lens[i];
		p += req->lens[i] + 1;
	}
	e->req.argc = req->argc;
	m->n++;
	m->bytes += bytes;
	m->reply_max += reply;
	return 0;
}

int multi_runs_now(const struct verb *v)
{
	static const char *const now[] = { "exec", "discard", "multi", "watch", "unwatch", "quit", "reset" };
	if (v == NULL)
		return 0;
	for (size_t i = 0; i < sizeof(now) / sizeof(now[0]); i++)
		if (strcmp(v->name, now[i]) == 0)
			return 1;
	return 0;
}

void multi_queue_request(struct session *s, const struct verb *v, const struct request *req, struct reply *out)
{
	int rc;
	if (v->flags & VERB_NAMES_FILE) {
		reply_error(out, "ERR Command not allowed inside a transaction: %s names a file on the daemon's host",
			    v->name);
		s->multi_dirty = 1;
		return;
	}
	if (s->multi == NULL && (s->multi = calloc(1, sizeof(*s->multi))) == NULL)
		rc = -ENOMEM;
	else
		rc = queue_push(s->multi, req, verb_reply_max(v, req));
	if (rc == SHMF_E_TOOBIG) {
		reply_error(out, "ERR transaction too large: at most %d commands and %u MiB queued", MULTI_MAX_QUEUED,
			    MULTI_MAX_BYTES >> 20);
		s->multi_dirty = 1;
	} else if (rc == -ERANGE) {
		reply_error(out,
			    "ERR transaction too large: EXEC's replies could pass %u MiB, the most a connection's "
			    "unread replies may hold (docs/protocol.md, Limits)",
			    REPLY_UNSENT_MAX >> 20);
		s->multi_dirty = 1;
	} else if (rc < 0) {
		reply_error(out, "ERR out of memory queueing the command");
		s->multi_dirty = 1;
	} else {
		reply_status(out, "QUEUED");
	}
}

void cmd_multi(struct verb_call *c)
{
	if (c->sess->in_multi) {
		/* Redis answers the error and keeps the transaction as it was. */
		reply_rb_error(c->out, RE_MULTI_NESTED);
		return;
	}
	c->sess->in_multi = 1;
	reply_status(c->out, "OK");
}

int multi_waits(const struct session *s)
{
	const struct multi_queue *m = s->multi;
	for (size_t i = 0; m != NULL && i < m->n; i++) {
		const struct request *req = &m->q[i].req;
		const struct verb *v = verbs_find(req->argv[0], req->lens[0]);
		if (v != NULL && v->key > 0 && v->key < req->argc && (v->flags & (VERB_WRITES | VERB_LOCKS)) &&
		    jobs_busy(req->argv[v->key]))
			return 1;
	}
	return 0;
}

/* EXEC: the queued requests, each through the dispatcher as if it came
 * now, their replies in one array. */
void cmd_exec(struct verb_call *c)
{
	struct session *s = c->sess;
	if (!s->in_multi) {
		reply_rb_error(c->out, RE_EXEC_WITHOUT_MULTI);
		return;
	}
	if (s->multi_dirty) {
		multi_reset(s);
		reply_rb_error(c->out, RE_EXECABORT);
		return;
	}
	struct multi_queue *m = s->multi;
	s->multi = NULL;
	multi_reset(s);
	size_t n = m != NULL ? m->n : 0;
	reply_array(c->out, n);
	s->in_exec = 1;
	for (size_t i = 0; i < n; i++)
		verbs_dispatch(s, c->reg, &m->q[i].req, c->out);
	s->in_exec = 0;
	queue_free(m);
}

void cmd_discard(struct verb_call *c)
{
	if (!c->sess->in_multi) {
		reply_rb_error(c->out, RE_DISCARD_WITHOUT_MULTI);
		return;
	}
	multi_reset(c->sess);
	reply_status(c->out, "OK");
}

void cmd_watch(struct verb_call *c)
{
	if (c->sess->in_multi)
		reply_rb_error(c->out, RE_WATCH_IN_MULTI);
	else
		reply_status(c->out, "OK");
}

void cmd_unwatch(struct verb_call *c)
{
	reply_status(c->out, "OK");
}
