/*
 * verbs-multi.c - MULTI, EXEC, DISCARD and WATCH: Redis' transactions over one
 * connection. After MULTI, each request is checked as it arrives (an
 * unknown verb, a wrong number of arguments, a verb that names a file:
 * an error now, and EXEC then answers -EXECABORT) and queued, answered
 * +QUEUED; EXEC runs the queue in one go through the dispatcher, within
 * one turn of the single-threaded server loop, so no other client's
 * request runs between them, and answers the array of their replies (a
 * command that fails at run time has its error in the array; the others
 * still run, as in Redis). DISCARD drops the queue.
 *
 * WATCH and UNWATCH are accepted and do nothing: EXEC never aborts
 * because a watched filter changed (a Bloom or cuckoo add is not a
 * read-modify-write a client needs to guard; a check-then-add is one
 * command, CF.ADDNX or SHMF.ADDCAPPED).
 *
 * The verbs that name a file on the daemon's host (SHMF.SNAPSHOT, SWAP,
 * RESTORE, MERGE) are refused inside MULTI: they may run off the loop,
 * which a transaction must not wait for.
 *
 * Single-threaded: called from the server loop only.
 *
 * Error texts are Redis 7's.
 */
#include "shmd/verbs/dispatch.h"
#include "shmd/resp/reply-errors.h"
#include "shmd/verbs/handlers.h"
#include "shmd/session/queue.h"
#include "shmd/session/session.h"

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
		dispatch_request(s, c->reg, queue_at(m, i), c->out);
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
