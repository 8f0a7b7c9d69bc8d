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

verb_handler cmd_multi, cmd_exec, cmd_discard, cmd_watch, cmd_unwatch;

/** Whether a request queued since MULTI would change, or lock, a filter
 * that a job of the file worker holds: EXEC then waits (VERB_WAIT). */
int multi_waits(const struct session *s);

#endif
