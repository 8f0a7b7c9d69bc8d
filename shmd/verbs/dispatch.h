/*
 * dispatch.h - a request run as its row of the verb table says: who may
 * run it (AUTH, TCP, the role: allow.h) and with how many arguments,
 * queued inside MULTI, held while a job of the file worker has its
 * filter, and what its reply can take at most.
 *
 * Single-threaded, like the registry: called from the server loop only.
 */
#ifndef SHMD_DISPATCH_H
#define SHMD_DISPATCH_H

#include <stddef.h>

#include "shmd/verbs/verb.h"

/**
 * The most bytes the reply of verb @p v to @p req can take in session
 * @p s, from its VERB_REPLY_* kind (the server holds or refuses a request
 * whose reply could overflow the connection's unsent replies: reply.h).
 */
size_t dispatch_verb_reply_max(const struct session *s, const struct verb *v, const struct request *req);

/**
 * The row that runs @p req, whose verb's row is @p v (verbs_of(@p req)):
 * a subcommand's row ("client|kill" for CLIENT KILL) when the verb has
 * subcommand rows and one is named; @p v itself otherwise (for a verb
 * with subcommand rows, its own handler answers an unknown subcommand);
 * NULL when @p v is NULL or a subcommand's row named as a verb
 * ("CLIENT|KILL": an unknown command, as in Redis).
 */
const struct verb *dispatch_resolve(const struct verb *v, const struct request *req);

/** Rows in the verb table: what INFO commandstats counts (struct server_stats' verbs). */
size_t dispatch_rows(void);

/** Row @p v's place in the verb table (verbs_at(place) is @p v). */
size_t dispatch_place(const struct verb *v);

/**
 * The most bytes the reply to @p req (verb @p v, verbs_of(req)) can take
 * in session @p s: the row's reply_max, a small bound for a request that
 * is refused or queued (inside MULTI), and for EXEC the sum of what it
 * queued (verbs-multi.c).
 */
size_t dispatch_reply_max(const struct session *s, const struct verb *v, const struct request *req);

/**
 * Execute @p req for session @p s and append exactly one reply to @p out
 * (the row dispatch_resolve() gives runs it):
 * -NOAUTH before AUTH where a password is set (unless the verb runs
 * before AUTH), -ERR for an unknown verb, for a verb refused over TCP and
 * for a wrong number of arguments, -NOPERM for a role or file permission
 * the connection lacks (allow_verb()); else the verb's handler, which may
 * change the session (s->quit, s->limits_changed) and the registry.
 * With s->srv->stats, the row's calls are counted there (INFO
 * commandstats): a refusal before the handler as rejected, a handler
 * that ran as a call with its time, and as failed too when it answered an
 * error; a request that ran at least [instance] slowlog_log_slower_than
 * goes to s->srv->slowlog.
 * A verb that writes (or VERB_LOCKS) on a filter that a job of the file
 * worker holds is not run: commands on one filter keep their order.
 * @return VERB_DONE, VERB_PARKED (the reply is appended to @p out when
 *         the job ends: send nothing else meanwhile) or VERB_WAIT (nothing
 *         appended: call again with the same request once a job ended).
 */
int dispatch_request(struct session *s, struct registry *reg, const struct request *req, struct reply *out);

/** dispatch_request() of a request whose row the caller looked up: @p v is verbs_of(@p req). */
int dispatch_row(struct session *s, struct registry *reg, const struct verb *v, const struct request *req,
		 struct reply *out);

#endif
