/*
 * reply-errors.h - the error replies shmd shares with RedisBloom and Redis, in
 * one table (reply-errors.c), so that code written for RedisBloom that matches
 * an error's text keeps working. Where RedisBloom or Redis has a reply for
 * the same meaning, shmd answers its exact text; shmd's own wording
 * (naming the filter, the option and what a good value is) is kept for
 * what RedisBloom has no reply for. docs/protocol.md lists them.
 */
#ifndef SHMD_REPLY_ERRORS_H
#define SHMD_REPLY_ERRORS_H

#include "shmd/resp/reply.h"

enum rb_error {
	/* RedisBloom (its current releases; redis.io lists them) */
	RB_NOT_FOUND,                /* a missing filter where one must exist (BF.INFO, NOCREATE, ...) */
	RB_CF_DEL_NOT_FOUND,         /* CF.DEL of a missing filter */
	RB_ITEM_EXISTS,              /* BF.RESERVE / CF.RESERVE of a name in use */
	RB_WRONGTYPE,                /* a BF verb on a cuckoo filter or the other way round */
	RB_BAD_ERROR_RATE,           /* BF.RESERVE: not a number */
	RB_ERROR_RATE_RANGE,         /* BF.RESERVE: outside (0, 1) */
	RB_BAD_CAPACITY,             /* BF.RESERVE: not an integer */
	RB_CAPACITY_RANGE,           /* BF.RESERVE: outside 1..2^30 */
	RB_NONSCALING_FULL,          /* an add past a NONSCALING filter's capacity */
	RB_FILTER_FULL,              /* CF.ADD / CF.ADDNX on a full cuckoo filter */
	RB_MAX_EXPANSIONS,           /* CF.ADD / CF.ADDNX: the filter has all the layers it may have */
	RB_CF_BAD_CAPACITY,          /* CF.RESERVE, CF.INSERT: not an integer */
	RB_CF_CAPACITY_RANGE,        /* CF.RESERVE: below twice the bucket size, or above 2^30 */
	RB_CF_INSERT_CAPACITY_RANGE, /* CF.INSERT: the same against [defaults]' bucket size */
	RB_CF_BAD_BUCKETSIZE,        /* CF.RESERVE BUCKETSIZE: not an integer */
	RB_CF_BUCKETSIZE_RANGE,      /* CF.RESERVE BUCKETSIZE: outside 1..255 */
	RB_CF_BAD_MAXITER,           /* CF.RESERVE MAXITERATIONS: not an integer */
	RB_CF_MAXITER_RANGE,         /* CF.RESERVE MAXITERATIONS: outside 1..65535 */
	RB_CF_BAD_EXPANSION,         /* CF.RESERVE EXPANSION: not an integer */
	RB_CF_EXPANSION_RANGE,       /* CF.RESERVE EXPANSION: outside 0..32768 */
	RB_INSERT_BAD_RATE,          /* BF.INSERT ERROR: not a number, or outside (0, 1) */
	RB_INSERT_BAD_CAPACITY,      /* BF.INSERT CAPACITY: not an integer, or outside 1..2^30 */
	RB_INSERT_BAD_EXPANSION,     /* BF.INSERT EXPANSION: not an integer, or outside 0..32768 */
	RB_UNKNOWN_ARGUMENT,         /* BF.INSERT, CF.INSERT: an option it does not know */
	RB_INFO_FIELD,               /* BF.INFO key FIELD: not a field */
	RB_NO_EXPANSION,             /* BF.RESERVE: EXPANSION without a value */
	RB_BAD_EXPANSION,            /* BF.RESERVE: EXPANSION not an integer */
	RB_EXPANSION_RANGE,          /* BF.RESERVE: EXPANSION outside 0..32768 */
	RB_NONSCALING_EXPAND,        /* BF.RESERVE: NONSCALING and an EXPANSION other than 0 */
	RB_BF_SCANDUMP_ITER,         /* BF.SCANDUMP: the iterator is not an integer */
	RB_BF_LOADCHUNK_ITER,        /* BF.LOADCHUNK: the iterator is not an integer */
	RB_BF_BAD_CHUNK,             /* BF.LOADCHUNK: a chunk that cannot be loaded */
	RB_CF_INVALID_POSITION,      /* CF.SCANDUMP, CF.LOADCHUNK: an iterator that is no position */
	RB_CF_BAD_HEADER,            /* CF.LOADCHUNK: a first chunk that cannot begin a filter */
	RB_CF_BAD_CHUNK,             /* CF.LOADCHUNK: a later chunk that cannot be loaded */
	/* Redis */
	RE_SYNTAX,
	RE_NOT_INTEGER,
	RE_EXEC_WITHOUT_MULTI,
	RE_DISCARD_WITHOUT_MULTI,
	RE_MULTI_NESTED,
	RE_EXECABORT,
	RE_WATCH_IN_MULTI,
	RE_FLUSHALL_OFF, /* shmd's: FLUSHALL without flushall = yes */
	RB_ERROR_COUNT
};

/** The text of error @p e, without the leading '-'. */
const char *rb_error_text(enum rb_error e);

/** Reply with error @p e. */
void reply_rb_error(struct reply *out, enum rb_error e);

/** Reply with libshmf's error @p rc on filter @p filter: RedisBloom's
 * words where it has them (full, NONSCALING full, not found), else
 * "ERR filter 'NAME': " and shmf_strerror(). */
void reply_lib_error(struct reply *out, const char *filter, int rc);

#endif
