/*
 * multi.c - MULTI, EXEC, DISCARD, WATCH (see multi.h). Error texts are
 * Redis 7's.
 */
#include "errors.h"
#include "multi.h"
#include "queue.h"
#include "session.h"

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
		session_multi_end(s);
		reply_rb_error(c->out, RE_EXECABORT);
		return;
	}
	struct multi_queue *m = s->multi;
	s->multi = NULL;
	session_multi_end(s);
	size_t n = queue_len(m);
	reply_array(c->out, n);
	s->in_exec = 1;
	for (size_t i = 0; i < n; i++)
		verbs_dispatch(s, c->reg, queue_at(m, i), c->out);
	s->in_exec = 0;
	queue_free(m);
}

void cmd_discard(struct verb_call *c)
{
	if (!c->sess->in_multi) {
		reply_rb_error(c->out, RE_DISCARD_WITHOUT_MULTI);
		return;
	}
	session_multi_end(c->sess);
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
