/*
 * verbs-keyspace.c - the Redis keyspace commands over shmd's filters, whose
 * names are the keys (DEL, UNLINK, EXISTS, TYPE, SCAN, KEYS, DBSIZE,
 * FLUSHALL, FLUSHDB, TIME, and the expiry commands over expires.h).
 *
 * Replies and error texts are Redis 7's.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "shmd/verbs/call.h"
#include "shmd/store/expires.h"
#include "shmd/resp/reply-errors.h"
#include "shmd/verbs/handlers.h"
#include "shmd/base/log.h"
#include "libclient/rundir.h"
#include "shmd/session/session.h"

/* RedisBloom's type names, which TYPE answers and SCAN ... TYPE takes. */
#define TYPE_BLOOM  "MBbloom--"
#define TYPE_CUCKOO "MBbloomCF"

/* The filter of key argument @p i: its slot, or a negative code (a name no
 * filter can have is simply not there). */
static int key_slot(struct verb_call *c, int i)
{
	const char *name = c->req->argv[i];
	if (strlen(name) != c->req->lens[i] || shmf_name_check(name) < 0)
		return SHMF_E_NOTFOUND;
	return registry_find(c->reg, name);
}

/* DEL / UNLINK key...: how many filters were dropped. */
void cmd_del(struct verb_call *c)
{
	long long n = 0;
	for (int i = 1; i < c->req->argc; i++)
		if (key_slot(c, i) >= 0)
			n += expires_drop_logged(c->reg, c->req->argv[i]);
	reply_int(c->out, n);
}

/* EXISTS key...: how many of the keys name a filter (a key given twice counts twice). */
void cmd_exists(struct verb_call *c)
{
	long long n = 0;
	for (int i = 1; i < c->req->argc; i++)
		n += key_slot(c, i) >= 0;
	reply_int(c->out, n);
}

static const char *type_name(const struct registry *r, int slot)
{
	return r->ctl.slots[slot].type == SHMF_TYPE_CUCKOO ? TYPE_CUCKOO : TYPE_BLOOM;
}

void cmd_type(struct verb_call *c)
{
	int slot = key_slot(c, 1);
	reply_status(c->out, slot >= 0 ? type_name(c->reg, slot) : "none");
}

void cmd_dbsize(struct verb_call *c)
{
	int slots[SHMF_SLOTS];
	reply_int(c->out, registry_list(c->reg, slots));
}

/* An integer argument as Redis reads one: optional sign, digits, in range. */
static int int_arg(const char *text, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || isspace((unsigned char)text[0]))
		return SHMF_E_INVAL;
	*out = v;
	return 0;
}

struct scan_opts {
	const char *match; /* NULL: every name */
	const char *type;  /* NULL: both kinds */
	long long count;
};

/* SCAN's and KEYS' options from argv[first]: MATCH pattern, COUNT n, TYPE t. 0, or an error after replying. */
static int scan_options(struct verb_call *c, int first, struct scan_opts *o)
{
	const struct request *req = c->req;
	o->count = 10;
	for (int i = first; i < req->argc; i += 2) {
		if (i + 1 >= req->argc) {
			reply_rb_error(c->out, RE_SYNTAX);
			return SHMF_E_INVAL;
		}
		const char *v = req->argv[i + 1];
		if (!strcasecmp(req->argv[i], "MATCH")) {
			o->match = v;
		} else if (!strcasecmp(req->argv[i], "COUNT")) {
			if (int_arg(v, &o->count) < 0) {
				reply_rb_error(c->out, RE_NOT_INTEGER);
				return SHMF_E_INVAL;
			}
			if (o->count < 1) {
				reply_rb_error(c->out, RE_SYNTAX);
				return SHMF_E_INVAL;
			}
		} else if (!strcasecmp(req->argv[i], "TYPE")) {
			o->type = v;
		} else {
			reply_rb_error(c->out, RE_SYNTAX);
			return SHMF_E_INVAL;
		}
	}
	return 0;
}

static int scan_wants(const struct verb_call *c, const struct scan_opts *o, int slot)
{
	const char *name = c->reg->ctl.slots[slot].name;
	if (o->type != NULL && strcasecmp(o->type, type_name(c->reg, slot)) != 0)
		return 0;
	return o->match == NULL || fnmatch(o->match, name, 0) == 0;
}

/*
 * SCAN cursor [MATCH pattern] [COUNT n] [TYPE t]: the cursor is the slot
 * to go on from (0 to begin; 0 again once every slot was seen). Each call
 * looks at COUNT live filters at most. A filter that lives throughout the
 * scan is returned exactly once, as Redis promises.
 */
void cmd_scan(struct verb_call *c)
{
	long long cursor;
	struct scan_opts o = { 0 };
	if (int_arg(c->req->argv[1], &cursor) < 0 || cursor < 0) {
		reply_error(c->out, "ERR invalid cursor");
		return;
	}
	if (scan_options(c, 2, &o) < 0)
		return;
	int slots[SHMF_SLOTS], hits[SHMF_SLOTS];
	int n = registry_list(c->reg, slots), nhits = 0, i = 0;
	long long seen = 0;
	while (i < n && slots[i] < cursor)
		i++;
	for (; i < n && seen < o.count; i++, seen++)
		if (scan_wants(c, &o, slots[i]))
			hits[nhits++] = slots[i];
	char next[24];
	snprintf(next, sizeof(next), "%d", i < n ? slots[i] : 0);
	reply_array(c->out, 2);
	reply_bulk_str(c->out, next);
	reply_array(c->out, (size_t)nhits);
	for (int j = 0; j < nhits; j++)
		reply_bulk_str(c->out, c->reg->ctl.slots[hits[j]].name);
}

/* KEYS pattern: every filter name the glob matches. */
void cmd_keys(struct verb_call *c)
{
	struct scan_opts o = { .match = c->req->argv[1] };
	int slots[SHMF_SLOTS], hits[SHMF_SLOTS], nhits = 0;
	int n = registry_list(c->reg, slots);
	for (int i = 0; i < n; i++)
		if (scan_wants(c, &o, slots[i]))
			hits[nhits++] = slots[i];
	reply_array(c->out, (size_t)nhits);
	for (int j = 0; j < nhits; j++)
		reply_bulk_str(c->out, c->reg->ctl.slots[hits[j]].name);
}

/* FLUSHALL / FLUSHDB [ASYNC | SYNC]: drop every filter, when [defaults]
 * flushall = yes says an operator wants one command able to. */
void cmd_flushall(struct verb_call *c)
{
	if (c->req->argc == 2 && strcasecmp(c->req->argv[1], "ASYNC") != 0 &&
	    strcasecmp(c->req->argv[1], "SYNC") != 0) {
		reply_rb_error(c->out, RE_SYNTAX);
		return;
	}
	if (!session_defaults(c->sess)->flushall) {
		reply_rb_error(c->out, RE_FLUSHALL_OFF);
		return;
	}
	int slots[SHMF_SLOTS];
	char names[SHMF_SLOTS][SHMF_NAME_MAX + 1];
	int n = registry_list(c->reg, slots);
	for (int i = 0; i < n; i++)
		snprintf(names[i], sizeof(names[i]), "%s", c->reg->ctl.slots[slots[i]].name);
	for (int i = 0; i < n; i++)
		expires_drop_logged(c->reg, names[i]);
	reply_status(c->out, "OK");
}

void cmd_time(struct verb_call *c)
{
	struct timeval tv;
	char s[24], us[24];
	gettimeofday(&tv, NULL);
	snprintf(s, sizeof(s), "%lld", (long long)tv.tv_sec);
	snprintf(us, sizeof(us), "%lld", (long long)tv.tv_usec);
	reply_array(c->out, 2);
	reply_bulk_str(c->out, s);
	reply_bulk_str(c->out, us);
}

/* The expiry verbs: the unit of their time argument and whether it is absolute. */
static const struct {
	const char *name;
	long long unit_ms;
	int absolute;
} expire_verbs[] = {
	{ "expire", 1000, 0 },
	{ "pexpire", 1, 0 },
	{ "expireat", 1000, 1 },
	{ "pexpireat", 1, 1 },
};

/* NX | XX | GT | LT at argv[3], Redis 7's conditions: whether the new time
 * @p at may replace @p old (0: none). 1 yes, 0 no, or an error after replying. */
static int expire_condition(struct verb_call *c, const uint64_t *old, uint64_t at)
{
	if (c->req->argc < 4)
		return 1;
	const char *k = c->req->argv[3];
	if (c->req->argc > 4 ||
	    (strcasecmp(k, "NX") && strcasecmp(k, "XX") && strcasecmp(k, "GT") && strcasecmp(k, "LT"))) {
		reply_error(c->out, "ERR Unsupported option %.*s", 32, c->req->argv[c->req->argc > 4 ? 4 : 3]);
		return SHMF_E_INVAL;
	}
	if (!strcasecmp(k, "NX"))
		return old == NULL;
	if (!strcasecmp(k, "XX"))
		return old != NULL;
	if (!strcasecmp(k, "GT")) /* no expiry counts as forever */
		return old != NULL && at > *old;
	return old == NULL || at < *old;
}

/* EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT key time [NX | XX | GT | LT]:
 * 1 set (a time already past drops the filter now, as Redis deletes the
 * key), 0 no such filter or the condition did not hold. */
void cmd_expire(struct verb_call *c)
{
	const struct request *req = c->req;
	size_t v = 0;
	while (strcasecmp(req->argv[0], expire_verbs[v].name) != 0)
		v++;
	long long t;
	if (int_arg(req->argv[2], &t) < 0) {
		reply_rb_error(c->out, RE_NOT_INTEGER);
		return;
	}
	uint64_t now = expires_now_ms();
	long long unit = expire_verbs[v].unit_ms;
	/* Redis' bound: the time in milliseconds, plus now when relative, fits in a long long. */
	if (t > INT64_MAX / unit || t < INT64_MIN / unit ||
	    (!expire_verbs[v].absolute && t * unit > INT64_MAX - (long long)now)) {
		reply_error(c->out, "ERR invalid expire time in '%s' command", expire_verbs[v].name);
		return;
	}
	long long at = t * unit + (expire_verbs[v].absolute ? 0 : (long long)now);
	if (key_slot(c, 1) < 0) {
		reply_int(c->out, 0);
		return;
	}
	uint64_t old;
	int had = expires_get(c->reg, req->argv[1], &old);
	int ok = expire_condition(c, had ? &old : NULL, at < 0 ? 0 : (uint64_t)at);
	if (ok < 0)
		return;
	if (ok && at <= (long long)now)
		expires_drop_logged(c->reg, req->argv[1]);
	else if (ok)
		expires_set(c->reg, req->argv[1], (uint64_t)at);
	reply_int(c->out, ok);
}

/* TTL / PTTL / EXPIRETIME / PEXPIRETIME key: -2 no such filter, -1 no expiry. */
void cmd_ttl(struct verb_call *c)
{
	const char *verb = c->req->argv[0];
	if (key_slot(c, 1) < 0) {
		reply_int(c->out, -2);
		return;
	}
	uint64_t at_ms;
	if (!expires_get(c->reg, c->req->argv[1], &at_ms)) {
		reply_int(c->out, -1);
		return;
	}
	uint64_t now = expires_now_ms();
	long long left = at_ms > now ? (long long)(at_ms - now) : 0;
	if (!strcasecmp(verb, "pttl"))
		reply_int(c->out, left);
	else if (!strcasecmp(verb, "ttl"))
		reply_int(c->out, (left + 500) / 1000);
	else if (!strcasecmp(verb, "pexpiretime"))
		reply_int(c->out, (long long)at_ms);
	else
		reply_int(c->out, (long long)(at_ms / 1000));
}

/* PERSIST key: 1 if the filter had an expiry, now removed. */
void cmd_persist(struct verb_call *c)
{
	int had = key_slot(c, 1) >= 0 && expires_get(c->reg, c->req->argv[1], NULL);
	if (had)
		expires_forget(c->reg, c->req->argv[1]);
	reply_int(c->out, had);
}

/* Redis' data commands (strings, hashes, lists, sets, sorted sets, streams,
 * bitmaps, HyperLogLog, geo, scripts, pub/sub): shmd serves none of them,
 * and says so rather than "unknown command". */
static const char *const foreign[] = {
	"append",        "bitcount",   "bitfield", "bitop",       "bitpos",      "blmove",    "blpop",   "brpop",
	"bzpopmax",      "bzpopmin",   "copy",     "decr",        "decrby",      "dump",      "eval",    "evalsha",
	"fcall",         "geoadd",     "geodist",  "geopos",      "georadius",   "geosearch", "get",     "getbit",
	"getdel",        "getex",      "getrange", "getset",      "hdel",        "hexists",   "hget",    "hgetall",
	"hincrby",       "hkeys",      "hlen",     "hmget",       "hmset",       "hscan",     "hset",    "hsetnx",
	"hvals",         "incr",       "incrby",   "incrbyfloat", "lindex",      "linsert",   "llen",    "lmove",
	"lpop",          "lpush",      "lrange",   "lrem",        "lset",        "ltrim",     "mget",    "move",
	"mset",          "msetnx",     "object",   "pfadd",       "pfcount",     "pfmerge",   "psetex",  "psubscribe",
	"publish",       "rename",     "renamenx", "restore",     "rpop",        "rpush",     "sadd",    "scard",
	"sdiff",         "set",        "setbit",   "setex",       "setnx",       "setrange",  "sinter",  "sismember",
	"smembers",      "smove",      "sort",     "spop",        "srandmember", "srem",      "sscan",   "strlen",
	"subscribe",     "sunion",     "touch",    "xack",        "xadd",        "xdel",      "xlen",    "xrange",
	"xread",         "xreadgroup", "xtrim",    "zadd",        "zcard",       "zcount",    "zincrby", "zrange",
	"zrangebyscore", "zrank",      "zrem",     "zrevrange",   "zscore",      "zscan",
};

int keyspace_foreign_verb(const char *name, size_t len)
{
	if (strlen(name) != len)
		return 0;
	for (size_t i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++)
		if (strcasecmp(name, foreign[i]) == 0)
			return 1;
	return 0;
}
