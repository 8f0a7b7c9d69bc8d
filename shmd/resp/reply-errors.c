/*
 * reply-errors.c - the table of RedisBloom's and Redis' error texts (reply-errors.h).
 * RedisBloom's come from its module (rebloom.c, 2.4 and later, with the
 * ERR prefix its later versions give every reply; CF.RESERVE's ranges as
 * 2.4.9 and 2.6.12 check them); Redis' from Redis 7.
 */
#include "shmd/resp/reply-errors.h"
#include <shmf.h>

static const char *const texts[RB_ERROR_COUNT] = {
	[RB_NOT_FOUND] = "ERR not found",
	[RB_ITEM_EXISTS] = "ERR item exists",
	[RB_WRONGTYPE] = "WRONGTYPE Operation against a key holding the wrong kind of value",
	[RB_BAD_ERROR_RATE] = "ERR bad error rate",
	[RB_ERROR_RATE_RANGE] = "ERR (0 < error rate range < 1)",
	[RB_BAD_CAPACITY] = "ERR bad capacity",
	[RB_CAPACITY_RANGE] = "ERR (capacity should be larger than 0)",
	[RB_NONSCALING_FULL] = "ERR non scaling filter is full",
	[RB_FILTER_FULL] = "ERR Filter is full",
	[RB_CF_BAD_CAPACITY] = "ERR Bad capacity",
	[RB_CF_CAPACITY_SMALL] = "ERR Capacity must be at least (BucketSize * 2)",
	[RB_CF_BAD_BUCKETSIZE] = "ERR Couldn't parse BUCKETSIZE",
	[RB_CF_BUCKETSIZE_RANGE] = "ERR BUCKETSIZE: value must be an integer between 1 and 255, inclusive.",
	[RB_CF_BAD_MAXITER] = "ERR Couldn't parse MAXITERATIONS",
	[RB_CF_MAXITER_RANGE] = "ERR MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.",
	[RB_INSERT_BAD_RATE] = "ERR Bad error rate",
	[RB_INSERT_BAD_CAPACITY] = "ERR Bad capacity",
	[RB_INSERT_BAD_ARGUMENT] = "ERR Bad argument received",
	[RB_UNKNOWN_ARGUMENT] = "ERR Unknown argument received",
	[RB_INFO_FIELD] = "ERR Invalid information value",
	[RB_NO_EXPANSION] = "ERR no expansion",
	[RB_BAD_EXPANSION] = "ERR bad expansion",
	[RB_EXPANSION_RANGE] = "ERR expansion should be greater or equal to 1",
	[RB_NONSCALING_EXPAND] = "ERR Nonscaling filters cannot expand",
	[RB_INSERT_BAD_EXPANSION] = "ERR Bad expansion",
	[RB_CF_BAD_EXPANSION] = "ERR Couldn't parse EXPANSION",
	[RB_CF_EXPANSION_RANGE] = "ERR EXPANSION parameter needs to be a non-negative integer",
	[RE_SYNTAX] = "ERR syntax error",
	[RE_NOT_INTEGER] = "ERR value is not an integer or out of range",
	[RE_EXEC_WITHOUT_MULTI] = "ERR EXEC without MULTI",
	[RE_DISCARD_WITHOUT_MULTI] = "ERR DISCARD without MULTI",
	[RE_MULTI_NESTED] = "ERR MULTI calls can not be nested",
	[RE_EXECABORT] = "EXECABORT Transaction discarded because of previous errors.",
	[RE_WATCH_IN_MULTI] = "ERR WATCH inside MULTI is not allowed",
	[RE_FLUSHALL_OFF] = "ERR FLUSHALL and FLUSHDB are off: set flushall = yes in [defaults] to drop every filter "
			    "with one command",
};

const char *rb_error_text(enum rb_error e)
{
	return (unsigned)e < RB_ERROR_COUNT && texts[e] != NULL ? texts[e] : "ERR internal error";
}

void reply_rb_error(struct reply *out, enum rb_error e)
{
	reply_error(out, "%s", rb_error_text(e));
}

void reply_lib_error(struct reply *out, const char *filter, int rc)
{
	/* RedisBloom's words where it has them: a full cuckoo filter, a
	 * filter dropped mid-request. */
	if (rc == SHMF_E_FULL)
		reply_rb_error(out, RB_FILTER_FULL);
	else if (rc == SHMF_E_NONSCALING)
		reply_rb_error(out, RB_NONSCALING_FULL);
	else if (rc == SHMF_E_NOTFOUND)
		reply_rb_error(out, RB_NOT_FOUND);
	else
		reply_error(out, "ERR filter '%s': %s", filter, shmf_strerror(rc));
}
