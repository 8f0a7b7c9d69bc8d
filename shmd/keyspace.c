/*
 * keyspace.c - the Redis keyspace commands and the filters' expiries (see
 * keyspace.h). Replies and error texts are Redis 7's.
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

#include "commands.h"
#include "errors.h"
#include "keyspace.h"
#include "log.h"
#include "rundir.h"
#include "session.h"

/* RedisBloom's type names, which TYPE answers and SCAN ... TYPE takes. */
#define TYPE_BLOOM  "MBbloom--"
#define TYPE_CUCKOO "MBbloomCF"

struct expiry {
	char name[SHMF_NAME_MAX + 1];
	uint64_t at_ms; /* unix milliseconds */
};

/* The table, for the one registry a daemon has (tests open several in
 * turn: a different registry reloads it). */
static struct {
	const struct registry *reg;
	unsigned n;
	struct expiry e[SHMF_SLOTS];
} tab;

static uint64_t now_unix_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

/* Read the table from the instance directory: a line "<ms> <name>" per
 * expiry; lines that do not parse are skipped, with a warning. */
static void load(struct registry *r)
{
	tab.reg = r;
	tab.n = 0;
	int fd = openat(r->dir.fd, KEYSPACE_EXPIRES_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (f == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	char line[SHMF_NAME_MAX + 64];
	while (fgets(line, sizeof(line), f) != NULL && tab.n < SHMF_SLOTS) {
		struct expiry *x = &tab.e[tab.n];
		char *nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		char *sp = strchr(line, ' ');
		char *end;
		errno = 0;
		x->at_ms = strtoull(line, &end, 10);
		if (sp == NULL || end != sp || errno != 0 || shmf_name_check(sp + 1) < 0) {
			log_msg(LOG_WARNING, "%s/%s: skipping a line that is not '<ms> <filter>'", r->dir_path,
				KEYSPACE_EXPIRES_FILE);
			continue;
		}
		snprintf(x->name, sizeof(x->name), "%s", sp + 1);
		tab.n++;
	}
	fclose(f);
}

static void ensure_loaded(struct registry *r)
{
	if (tab.reg != r)
		load(r);
}

/* Replace the file with the table (a temporary file renamed over it, so a
 * crash leaves the old table or the new one). A failure is logged: the
 * expiries still hold until shmd restarts. */
static void save(struct registry *r)
{
	static const char tmp[] = KEYSPACE_EXPIRES_FILE ".tmp";
	if (tab.n == 0) {
		if (unlinkat(r->dir.fd, KEYSPACE_EXPIRES_FILE, 0) < 0 && errno != ENOENT)
			log_msg(LOG_WARNING, "%s/%s: cannot remove: %s", r->dir_path, KEYSPACE_EXPIRES_FILE,
				strerror(errno));
		return;
	}
	int fd = openat(r->dir.fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (f == NULL) {
		log_msg(LOG_WARNING, "%s/%s: cannot write: %s", r->dir_path, tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	for (unsigned i = 0; i < tab.n; i++)
		fprintf(f, "%" PRIu64 " %s\n", tab.e[i].at_ms, tab.e[i].name);
	int bad = ferror(f);
	if (fclose(f) != 0 || bad || renameat(r->dir.fd, tmp, r->dir.fd, KEYSPACE_EXPIRES_FILE) < 0) {
		log_msg(LOG_WARNING, "%s/%s: cannot save the expiries: %s", r->dir_path, KEYSPACE_EXPIRES_FILE,
			strerror(errno));
		unlinkat(r->dir.fd, tmp, 0);
	}
}

static struct expiry *find(const char *name)
{
	for (unsigned i = 0; i < tab.n; i++)
		if (strcmp(tab.e[i].name, name) == 0)
			return &tab.e[i];
	return NULL;
}

/* Remove entry @p x from the table (not saved). */
static void remove_entry(struct expiry *x)
{
	*x = tab.e[--tab.n];
}

void keyspace_forget(struct registry *r, const char *name)
{
	ensure_loaded(r);
	struct expiry *x = find(name);
	if (x != NULL) {
		remove_entry(x);
		save(r);
	}
}

/* Set filter @p name's expiry (the table has room: one entry per filter). */
static void set_expiry(struct registry *r, const char *name, uint64_t at_ms)
{
	struct expiry *x = find(name);
	if (x == NULL && tab.n < SHMF_SLOTS) {
		x = &tab.e[tab.n++];
		snprintf(x->name, sizeof(x->name), "%s", name);
	}
	if (x != NULL)
		x->at_ms = at_ms;
	save(r);
}

/* Drop filter @p name now (DEL, an expiry, FLUSHALL): 1 dropped, 0 there
 * was none. Its expiry goes with it. */
static int drop(struct registry *r, const char *name)
{
	char err[REGISTRY_ERR_MAX];
	int rc = registry_drop(r, name, err, sizeof(err));
	if (rc < 0 && rc != SHMF_E_NOTFOUND)
		log_msg(LOG_WARNING, "dropping filter '%s': %s", name, err);
	keyspace_forget(r, name);
	return rc == 0;
}

void keyspace_tick(struct registry *r, uint64_t now_ms)
{
	ensure_loaded(r);
	for (unsigned i = 0; i < tab.n;) {
		struct expiry *x = &tab.e[i];
		if (x->at_ms > now_ms) {
			i++;
			continue;
		}
		char name[SHMF_NAME_MAX + 1];
		snprintf(name, sizeof(name), "%s", x->name);
		if (registry_find(r, name) >= 0)
			log_msg(LOG_INFO, "filter '%s' expired: dropping it", name);
		drop(r, name); /* removes the entry: look at slot i again */
	}
}

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
	ensure_loaded(c->reg);
	long long n = 0;
	for (int i = 1; i < c->req->argc; i++)
		if (key_slot(c, i) >= 0)
			n += drop(c->reg, c->req->argv[i]);
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
	if (!cmd_defaults(c)->flushall) {
		reply_rb_error(c->out, RE_FLUSHALL_OFF);
		return;
	}
	ensure_loaded(c->reg);
	int slots[SHMF_SLOTS];
	char names[SHMF_SLOTS][SHMF_NAME_MAX + 1];
	int n = registry_list(c->reg, slots);
	for (int i = 0; i < n; i++)
		snprintf(names[i], sizeof(names[i]), "%s", c->reg->ctl.slots[slots[i]].name);
	for (int i = 0; i < n; i++)
		drop(c->reg, names[i]);
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
static int expire_condition(struct verb_call *c, const struct expiry *old, uint64_t at)
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
		return old != NULL && at > old->at_ms;
	return old == NULL || at < old->at_ms;
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
	uint64_t now = now_unix_ms();
	long long unit = expire_verbs[v].unit_ms;
	/* Redis' bound: the time in milliseconds, plus now when relative, fits in a long long. */
	if (t > INT64_MAX / unit || t < INT64_MIN / unit ||
	    (!expire_verbs[v].absolute && t * unit > INT64_MAX - (long long)now)) {
		reply_error(c->out, "ERR invalid expire time in '%s' command", expire_verbs[v].name);
		return;
	}
	long long at = t * unit + (expire_verbs[v].absolute ? 0 : (long long)now);
	ensure_loaded(c->reg);
	if (key_slot(c, 1) < 0) {
		reply_int(c->out, 0);
		return;
	}
	int ok = expire_condition(c, find(req->argv[1]), at < 0 ? 0 : (uint64_t)at);
	if (ok < 0)
		return;
	if (ok && at <= (long long)now)
		drop(c->reg, req->argv[1]);
	else if (ok)
		set_expiry(c->reg, req->argv[1], (uint64_t)at);
	reply_int(c->out, ok);
}

/* TTL / PTTL / EXPIRETIME / PEXPIRETIME key: -2 no such filter, -1 no expiry. */
void cmd_ttl(struct verb_call *c)
{
	const char *verb = c->req->argv[0];
	ensure_loaded(c->reg);
	if (key_slot(c, 1) < 0) {
		reply_int(c->out, -2);
		return;
	}
	const struct expiry *x = find(c->req->argv[1]);
	if (x == NULL) {
		reply_int(c->out, -1);
		return;
	}
	uint64_t now = now_unix_ms();
	long long left = x->at_ms > now ? (long long)(x->at_ms - now) : 0;
	if (!strcasecmp(verb, "pttl"))
		reply_int(c->out, left);
	else if (!strcasecmp(verb, "ttl"))
		reply_int(c->out, (left + 500) / 1000);
	else if (!strcasecmp(verb, "pexpiretime"))
		reply_int(c->out, (long long)x->at_ms);
	else
		reply_int(c->out, (long long)(x->at_ms / 1000));
}

/* PERSIST key: 1 if the filter had an expiry, now removed. */
void cmd_persist(struct verb_call *c)
{
	ensure_loaded(c->reg);
	int had = key_slot(c, 1) >= 0 && find(c->req->argv[1]) != NULL;
	if (had)
		keyspace_forget(c->reg, c->req->argv[1]);
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
