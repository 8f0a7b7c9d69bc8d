/*
 * reply-errors.c - the table of RedisBloom's and Redis' error texts (reply-errors.h).
 * RedisBloom's are those of its current releases (Redis 8's probabilistic
 * types, as redis.io's "Probabilistic data type errors" lists them), byte
 * for byte: some carry the ERR code and some carry none ("Filter is full",
 * "Bad capacity", ...), and a client that matches a text sees the one
 * RedisBloom sends. Redis' come from Redis 7.
 */
#include "shmd/resp/reply-errors.h"
#include <shmf.h>

static const char *const texts[RB_ERROR_COUNT] = {
	[RB_NOT_FOUND] = "ERR not found",
	[RB_CF_DEL_NOT_FOUND] = "Not found",
	[RB_ITEM_EXISTS] = "ERR item exists",
	[RB_WRONGTYPE] = "WRONGTYPE Operation against a key holding the wrong kind of value",
	[RB_BAD_ERROR_RATE] = "ERR bad error rate",
	[RB_ERROR_RATE_RANGE] = "ERR error rate must be in the range (0.000000, 1.000000)",
	[RB_BAD_CAPACITY] = "ERR bad capacity",
	[RB_CAPACITY_RANGE] = "ERR capacity must be in the range [1, 1073741824]",
	[RB_NONSCALING_FULL] = "ERR non scaling filter is full",
	[RB_FILTER_FULL] = "Filter is full",
	[RB_MAX_EXPANSIONS] = "Maximum expansions reached",
	[RB_CF_BAD_CAPACITY] = "Bad capacity",
	[RB_CF_CAPACITY_RANGE] = "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
	[RB_CF_INSERT_CAPACITY_RANGE] = "Capacity must be in the range [cf-bucket-size * 2, 1073741824]",
	[RB_CF_BAD_BUCKETSIZE] = "Couldn't parse BUCKETSIZE",
	[RB_CF_BUCKETSIZE_RANGE] = "BUCKETSIZE: value must be in the range [1, 255]",
	[RB_CF_BAD_MAXITER] = "Couldn't parse MAXITERATIONS",
	[RB_CF_MAXITER_RANGE] = "MAXITERATIONS: value must be in the range [1, 65535]",
	[RB_CF_BAD_EXPANSION] = "Couldn't parse EXPANSION",
	[RB_CF_EXPANSION_RANGE] = "EXPANSION: value must be in the range [0, 32768]",
	[RB_INSERT_BAD_RATE] = "Bad error rate",
	[RB_INSERT_BAD_CAPACITY] = "Bad capacity",
	[RB_INSERT_BAD_EXPANSION] = "Bad expansion",
	[RB_UNKNOWN_ARGUMENT] = "Unknown argument received",
	[RB_INFO_FIELD] = "Invalid information value",
	[RB_NO_EXPANSION] = "ERR no expansion",
	[RB_BAD_EXPANSION] = "ERR bad expansion",
	[RB_EXPANSION_RANGE] = "ERR expansion must be in the range [0, 32768]",
	[RB_NONSCALING_EXPAND] = "Nonscaling filters cannot expand",
	[RB_BF_SCANDUMP_ITER] = "Second argument must be numeric",
	[RB_BF_LOADCHUNK_ITER] = "ERR Second argument must be numeric",
	[RB_BF_BAD_CHUNK] = "ERR received bad data",
	[RB_CF_INVALID_POSITION] = "Invalid position",
	[RB_CF_BAD_HEADER] = "Couldn't create filter!",
	[RB_CF_BAD_CHUNK] = "Couldn't load chunk!",
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
	else if (rc == SHMF_E_STATIC)
		reply_error(out,
			    "ERR filter '%s' is a static filter (binary fuse, built offline): it answers BF.EXISTS and "
			    "BF.MEXISTS only; build it again with shmctl build --type static and swap it in",
			    filter);
	else
		reply_error(out, "ERR filter '%s': %s", filter, shmf_strerror(rc));
}
