/*
 * keyjob.h - the key operations of a request that would wait, carried on
 * by the file worker (jobs.h), so that the event loop never waits on
 * anything a client can hold or write.
 *
 * The loop runs with a wait deadline of now (shmf_cuckoo_wait_deadline):
 * a cuckoo call that finds the relocation lock held past a short spin, or
 * a read that moves keep racing, answers SHMF_E_BUSY at once and changes
 * nothing. The handler then hands the request's remaining keys here: a
 * worker thread opens its own handle on the filter and makes the calls,
 * each waiting at most the filter's lock timeout (the slot's, which only
 * shmd writes) and all of them together at most twice that; the reply
 * comes when it ends, in the shape the handler would have given. Meanwhile
 * the filter is busy (jobs_busy): what would change it, or read it through
 * another key job, waits its turn, so a filter has at most one key job and
 * commands on it keep their order. Other filters, other clients, PING and
 * the rotation schedule go on.
 *
 * Inside EXEC, which answers in one turn of the loop, a call that would
 * wait is an error in the transaction's reply instead.
 *
 * Single-threaded but for the work itself: called from the server loop.
 */
#ifndef SHMD_KEYJOB_H
#define SHMD_KEYJOB_H

#include <stddef.h>

#include "shmd/verbs/verbs.h"

/* The call made on each key. */
enum keyjob_op {
	KEYJOB_ADD,        /* shmf_add */
	KEYJOB_ADD_UNIQUE, /* shmf_add_unique */
	KEYJOB_DEL,        /* shmf_del */
	KEYJOB_CHECK,      /* shmf_check */
	KEYJOB_COUNT,      /* shmf_count */
	KEYJOB_CAPPED,     /* shmf_add_capped with the request's cap */
};

/* The reply, as the verb's handler gives it. */
enum keyjob_shape {
	KEYJOB_BOOL,       /* one key: a boolean, or the library's error */
	KEYJOB_INT,        /* one key: an integer, or the library's error */
	KEYJOB_INSERT,     /* CF.INSERTNX: an integer a key, -1 where it was full; another error replaces it all */
	KEYJOB_INSERT_ADD, /* CF.INSERT: the same, an added key true in RESP3 (RedisBloom's types) */
	KEYJOB_BOOLS,      /* CF.MEXISTS: a boolean a key, or the library's error */
};

/**
 * Request @p c met SHMF_E_BUSY on the loop at its key argv[first + done]
 * (keys argv[first..argc) in all, the first @p done of them made, their
 * results in @p res): make @p op (@p cap for KEYJOB_CAPPED) on the rest
 * off the loop, and reply in @p shape when that ends (c->parked set).
 * Replies at once instead inside EXEC, or when out of memory; sets
 * c->wait (no reply: dispatch again later) when a job already holds the
 * filter.
 */
void keyjob_defer(struct verb_call *c, enum keyjob_op op, unsigned cap, int first, size_t done, const long long *res,
		  enum keyjob_shape shape);

#endif
