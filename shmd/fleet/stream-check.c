/*
 * stream-check.c - what the follower asks Redis of a stream besides its
 * entries (engine.h): XINFO STREAM, whether it lost entries this node has
 * not applied, and why (trimmed, deleted, reset by a Redis that restarted
 * without its data); TYPE, whether the key at its name is a stream at all.
 * Each answer touches only its own filter.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "shmd/base/log.h"
#include "shmd/fleet/engine.h"

int redis_run_id(redisContext *c, char *out, size_t len)
{
	redisReply *r = redisCommand(c, "INFO server");
	if (r == NULL)
		return -EIO;
	const char *at = r->type == REDIS_REPLY_STRING ? strstr(r->str, "run_id:") : NULL;
	if (at != NULL)
		snprintf(out, len, "%.*s", (int)strcspn(at + 7, "\r\n"), at + 7);
	freeReplyObject(r);
	return 0;
}

int stream_unreadable(struct replication *e, redisContext *c, struct rfilter *f)
{
	redisReply *r = redisCommand(c, "TYPE %s", f->stream);
	if (r == NULL)
		return -EIO;
	int bad = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "stream") != 0 && strcmp(r->str, "none") != 0;
	char why[REPL_ERROR_MAX] = "";
	if (bad)
		snprintf(why, sizeof(why),
			 "key %s is a %s, not a stream (another application uses the name?): this filter is not "
			 "followed until it is deleted or renamed, or stream_prefix changed",
			 f->stream, r->str);
	freeReplyObject(r);
	pthread_mutex_lock(&e->lock);
	int changed = strcmp(f->follow_error, why) != 0;
	snprintf(f->follow_error, sizeof(f->follow_error), "%s", why);
	pthread_mutex_unlock(&e->lock);
	f->unreadable = bad;
	if (changed && bad)
		log_msg(LOG_ERR, "filter '%s': %s; the other filters are followed", f->name, why);
	else if (changed)
		log_msg(LOG_NOTICE, "filter '%s': key %s is a stream again (or none): following it", f->name,
			f->stream);
	return bad;
}

/* Why a stream that is gone or new lost this node's entries: Redis
 * restarted without its data (its run_id changed since this stream was
 * last checked), or the stream was deleted. */
static const char *reset_cause(const struct replication *e, const struct rfilter *f)
{
	if (f->run_id[0] != '\0' && e->run_id[0] != '\0' && strcmp(f->run_id, e->run_id) != 0)
		return "Redis restarted without its data (its run_id changed; no appendonly?)";
	return "the stream was deleted (DEL, FLUSHALL) and made anew";
}

struct xinfo {
	struct fleet_id last, first, maxdel;
	int have_first, have_maxdel;
	long long length, added; /* -1: not said (Redis before 7) */
};

static void xinfo_read(const redisReply *r, struct xinfo *x)
{
	const redisReply *v;
	*x = (struct xinfo){ .length = -1, .added = -1 };
	if ((v = reply_field(r, "last-generated-id")) != NULL && v->type == REDIS_REPLY_STRING)
		fleet_id_parse(v->str, v->len, &x->last);
	if ((v = reply_field(r, "max-deleted-entry-id")) != NULL && v->type == REDIS_REPLY_STRING)
		x->have_maxdel = fleet_id_parse(v->str, v->len, &x->maxdel) == 0;
	if ((v = reply_field(r, "first-entry")) != NULL && v->type == REDIS_REPLY_ARRAY && v->elements >= 1 &&
	    v->element[0]->type == REDIS_REPLY_STRING)
		x->have_first = fleet_id_parse(v->element[0]->str, v->element[0]->len, &x->first) == 0;
	if ((v = reply_field(r, "length")) != NULL && v->type == REDIS_REPLY_INTEGER)
		x->length = v->integer;
	if ((v = reply_field(r, "entries-added")) != NULL && v->type == REDIS_REPLY_INTEGER)
		x->added = v->integer;
}

/* What XINFO STREAM says of a stream that exists, against cursor @p cur:
 * "" if nothing was lost, else why into @p why; *reset when the stream is
 * not the one the cursor was read from. */
static void judge_stream(const struct replication *e, const struct rfilter *f, const struct xinfo *x,
			 struct fleet_id cur, char *why, size_t len, int *reset)
{
	char a[48], b[48];
	int zero = (cur.ms | cur.seq) == 0;
	*reset = 0;
	if (fleet_id_cmp(x->last, cur) < 0) {
		*reset = 1;
		snprintf(why, len, "stream %s ends at %s, before this node's cursor %s: %s", f->stream,
			 fleet_id_text(x->last, a, sizeof(a)), fleet_id_text(cur, b, sizeof(b)), reset_cause(e, f));
	} else if (!zero && x->have_first && fleet_id_cmp(x->first, cur) > 0 && x->added >= 0 &&
		   x->added == x->length) {
		/* Nothing was ever removed from this stream, yet its oldest
		 * entry is past the cursor: not a trim, a stream made anew. */
		snprintf(why, len, "stream %s begins at %s, after this node's cursor %s, and never lost an entry: %s",
			 f->stream, fleet_id_text(x->first, a, sizeof(a)), fleet_id_text(cur, b, sizeof(b)),
			 reset_cause(e, f));
	} else if (!zero && ((x->have_first && fleet_id_cmp(x->first, cur) > 0) ||
			     (x->have_maxdel && fleet_id_cmp(x->maxdel, cur) > 0))) {
		/* Trimmed (MAXLEN) past the cursor: the oldest entry left is
		 * after it; deleted (XDEL) past it: max-deleted-entry-id. A
		 * trim that stopped exactly at the cursor looks the same as one
		 * past it; that needs a node behind by the whole retention. */
		int del = x->have_maxdel && fleet_id_cmp(x->maxdel, cur) > 0;
		snprintf(why, len,
			 "stream %s was trimmed past this node's cursor %s (entries before %s are gone: raise "
			 "retention)",
			 f->stream, fleet_id_text(cur, a, sizeof(a)),
			 fleet_id_text(del ? x->maxdel : x->first, b, sizeof(b)));
	}
}

/* The filter lacks entries (@p why): diverged, said once; a stream that is
 * gone or new (@p reset) is read from its start, cursor 0-0, so that what
 * the nodes send from now on is followed. */
static void diverge(struct replication *e, struct rfilter *f, struct fleet_id cur, uint64_t epoch, const char *why,
		    int reset)
{
	pthread_mutex_lock(&e->lock);
	int was = f->diverged;
	if (f->live && f->epoch == epoch) {
		f->diverged = 1;
		snprintf(f->why, sizeof(f->why),
			 "%s; this node lacks entries: repair with shmctl pull %s --from PEER or shmctl merge %s "
			 "SNAPSHOT",
			 why, f->name, f->name);
		struct fleet_id now;
		registry_cursor_get(e->reg, f->slot, &now.ms, &now.seq);
		if (reset && fleet_id_cmp(now, cur) == 0 && (cur.ms | cur.seq) != 0) {
			registry_cursor_set(e->reg, f->slot, 0, 0);
			f->stored = (struct fleet_id){ 0, 0 };
		}
		if (!was)
			repair_want_locked(e, f, NULL, 0);
	}
	pthread_mutex_unlock(&e->lock);
	if (!was)
		log_msg(LOG_ERR,
			"filter '%s': diverged: %s; it keeps serving and following%s; repair with shmctl pull %s "
			"--from PEER or shmctl merge %s SNAPSHOT",
			f->name, why, reset ? " the stream from its start" : "", f->name, f->name);
}

int stream_check(struct replication *e, redisContext *c, struct rfilter *f, struct fleet_id cur, uint64_t epoch)
{
	const char *argv[] = { "XINFO", "STREAM", f->stream };
	redisReply *r = redisCommandArgv(c, 3, argv, NULL);
	if (r == NULL)
		return -EIO;
	char why[REPL_ERROR_MAX] = "", a[48];
	int reset = 0;
	if (r->type == REDIS_REPLY_ERROR && strcasestr(r->str, "no such key") != NULL && (cur.ms | cur.seq) != 0) {
		reset = 1;
		snprintf(why, sizeof(why), "stream %s is gone though this node applied entries up to %s: %s", f->stream,
			 fleet_id_text(cur, a, sizeof(a)), reset_cause(e, f));
	} else if (r->type == REDIS_REPLY_ARRAY) {
		struct xinfo x;
		xinfo_read(r, &x);
		judge_stream(e, f, &x, cur, why, sizeof(why), &reset);
	}
	freeReplyObject(r);
	snprintf(f->run_id, sizeof(f->run_id), "%s", e->run_id);
	if (why[0] != '\0')
		diverge(e, f, cur, epoch, why, reset);
	return 0;
}
