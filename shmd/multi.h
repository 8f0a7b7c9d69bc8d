/*
 * multi.h - MULTI, EXEC, DISCARD and WATCH: Redis' transactions over one
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
 */
#ifndef SHMD_MULTI_H
#define SHMD_MULTI_H

#include "verbs.h"

struct multi_queue;

/* Requests queued at most in one transaction, and the memory the queue
 * takes at most: each request's copy, its vectors and its entry, counted
 * as allocated (the largest request, 64 MiB, still fits once). The
 * replies EXEC could give are bounded too: at most REPLY_UNSENT_MAX in all,
 * by each verb's reply_max (verbs.h), checked as each request is queued. */
#define MULTI_MAX_QUEUED 100000
#define MULTI_MAX_BYTES  (64u << 20)

/**
 * Inside MULTI, take request @p req (verb @p v, NULL if unknown) for the
 * queue: reply +QUEUED, or the error that makes EXEC abort.
 */
void multi_queue_request(struct session *s, const struct verb *v, const struct request *req, struct reply *out);

/** The most bytes EXEC's reply can take: its array of the queued requests' replies. */
size_t multi_reply_max(const struct session *s);

/** The memory the transaction's queue takes (0 without one). */
size_t multi_memory(const struct session *s);

/** Whether verb @p v runs at once inside MULTI rather than being queued (EXEC, DISCARD, MULTI, WATCH, QUIT, RESET). */
int multi_runs_now(const struct verb *v);

/** Forget the transaction, if any (DISCARD, RESET, the connection's end). */
void multi_reset(struct session *s);

verb_handler cmd_multi, cmd_exec, cmd_discard, cmd_watch, cmd_unwatch;

/** Whether a request queued since MULTI would change, or lock, a filter
 * that a job of the file worker holds: EXEC then waits (VERB_WAIT). */
int multi_waits(const struct session *s);

#endif
