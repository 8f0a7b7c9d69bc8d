/*
 * dispatch.c - a request run as its row of the verb table says (see
 * dispatch.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/snapshot-format.h"
#include "shmd/base/clock.h"
#include "libclient/rundir.h"
#include "shmd/files/jobs.h"
#include "shmd/session/queue.h"
#include "shmd/session/session.h"
#include "shmd/verbs/allow.h"
#include "shmd/verbs/dispatch.h"
#include "shmd/verbs/handlers.h"
#include "shmd/verbs/slowlog.h"
#include "shmd/verbs/verbs.h"

/* ---- The table as the dispatcher reads it ------------------------------ */

/* Rows the dispatcher knows the kind of; a table longer than this would
 * leave the rows past it neither subcommands nor their verbs (test-verbs
 * checks that it is not). */
#define ROWS_MAX 512

enum { ROW_PLAIN, ROW_PARENT, ROW_SUB };

/* Learnt from the table once: its rows, and which verbs have subcommand
 * rows ("client|kill" makes "client" a parent). */
static struct {
	const struct verb *first;
	size_t n;
	unsigned char kind[ROWS_MAX]; /* ROW_* by place */
} table;

static void table_learn(void)
{
	const struct verb *v;
	table.first = verbs_at(0);
	for (table.n = 0; (v = verbs_at(table.n)) != NULL; table.n++) {
		const char *bar = strchr(v->name, '|');
		if (table.n >= ROWS_MAX || bar == NULL)
			continue;
		char name[64];
		int len = snprintf(name, sizeof(name), "%.*s", (int)(bar - v->name), v->name);
		table.kind[table.n] = ROW_SUB;
		const struct verb *parent = verbs_find(name, (size_t)len);
		if (parent != NULL && (size_t)(parent - table.first) < ROWS_MAX)
			table.kind[parent - table.first] = ROW_PARENT;
	}
}

size_t dispatch_rows(void)
{
	if (table.first == NULL)
		table_learn();
	return table.n;
}

size_t dispatch_place(const struct verb *v)
{
	if (__builtin_expect(table.first == NULL, 0))
		table_learn();
	return (size_t)(v - table.first);
}

const struct verb *dispatch_resolve(const struct verb *v, const struct request *req)
{
	if (v == NULL)
		return NULL;
	size_t i = dispatch_place(v);
	int kind = i < ROWS_MAX ? table.kind[i] : ROW_PLAIN;
	if (kind == ROW_SUB)
		return NULL; /* "CLIENT|KILL" sent as a verb: Redis' unknown command */
	if (kind != ROW_PARENT || req->argc < 2 || req->lens[1] > 32 || strlen(req->argv[1]) != req->lens[1])
		return v;
	char name[80];
	int n = snprintf(name, sizeof(name), "%s|%s", v->name, req->argv[1]);
	const struct verb *sub = verbs_find(name, (size_t)n);
	return sub != NULL ? sub : v;
}

/* ---- What a reply can take at most (the VERB_REPLY_* kinds) ----------- */

size_t dispatch_verb_reply_max(const struct session *s, const struct verb *v, const struct request *req)
{
	size_t n = 64;
	switch (v->flags & VERB_REPLY_MASK) {
	case VERB_REPLY_ITEMS:
		/* An item per argument (those before the items too), or an
		 * error in the place of one. */
		return VERB_REPLY_SMALL + 5 * (size_t)req->argc;
	case VERB_REPLY_ECHO:
		for (int i = 1; i < req->argc; i++)
			n += req->lens[i] + 16;
		return n;
	case VERB_REPLY_LIST:
		/* At most a line or a name (63 bytes) for each of the
		 * SHMF_SLOTS filters (INFO, KEYS, SCAN, SHMF.LIST, SHMF.RELOAD's
		 * report of RELOAD_LINES lines), one filter's fields with its
		 * generations and layers, CLIENT INFO with a 4 KiB name. */
		return (size_t)SHMF_SLOTS * 1024;
	case VERB_REPLY_CHUNK: return SHMF_CHUNK_BYTES + VERB_REPLY_SMALL;
	case VERB_REPLY_FLEET:
		/* Each replicated filter's fields and up to 32 nodes. */
		return (size_t)SHMF_SLOTS * (8u << 10);
	case VERB_REPLY_COMMAND: return command_reply_max(req);
	case VERB_REPLY_SLOWLOG: return slowlog_reply_max(req);
	case VERB_REPLY_CLIENTS: return client_list_reply_max(s);
	default: return VERB_REPLY_SMALL;
	}
}

size_t dispatch_reply_max(const struct session *s, const struct verb *v, const struct request *req)
{
	v = dispatch_resolve(v, req);
	if (v == NULL || !verb_arity_ok(v, req->argc) || (s->in_multi && !(v->flags & VERB_TXN)))
		return VERB_REPLY_SMALL; /* an error, or +QUEUED */
	if ((v->flags & VERB_REPLY_MASK) == VERB_REPLY_EXEC)
		return 64 + queue_reply_max(s->multi);
	return dispatch_verb_reply_max(s, v, req);
}

/* Inside MULTI, take request @p req (verb @p v) for the queue: reply
 * +QUEUED and return 0, or the error that makes EXEC abort and -1. */
static int queue_request(struct session *s, const struct verb *v, const struct request *req, struct reply *out)
{
	int rc;
	if (v->flags & VERB_NAMES_FILE) {
		reply_error(out, "ERR Command not allowed inside a transaction: %s names a file on the daemon's host",
			    v->name);
		s->multi_dirty = 1;
		return -1;
	}
	rc = queue_push(&s->multi, req, dispatch_verb_reply_max(s, v, req));
	if (rc == SHMF_E_TOOBIG) {
		reply_error(out, "ERR transaction too large: at most %d commands and %u MiB queued", QUEUE_MAX_REQUESTS,
			    QUEUE_MAX_BYTES >> 20);
		s->multi_dirty = 1;
	} else if (rc == -ERANGE) {
		reply_error(out,
			    "ERR transaction too large: EXEC's replies could pass %u MiB, the most a connection's "
			    "unread replies may hold (docs/protocol.md, Limits)",
			    REPLY_UNSENT_MAX >> 20);
		s->multi_dirty = 1;
	} else if (rc < 0) {
		reply_error(out, "ERR out of memory queueing the command");
		s->multi_dirty = 1;
	} else {
		reply_status(out, "QUEUED");
		return 0;
	}
	return -1;
}

/* Whether a request EXEC would run waits: a file job holds a filter it
 * would change or lock. */
static int queue_waits(const struct session *s)
{
	for (size_t i = 0; i < queue_len(s->multi); i++) {
		const struct request *req = queue_at(s->multi, i);
		const struct verb *v = verbs_find(req->argv[0], req->lens[0]);
		if (v != NULL && v->key > 0 && v->key < req->argc && (v->flags & (VERB_WRITES | VERB_LOCKS)) &&
		    jobs_busy(req->argv[v->key]))
			return 1;
	}
	return 0;
}

static const char NOAUTH[] = "NOAUTH Authentication required.";

/* 1 if session @p s may run verb @p v (NULL: unknown) with these
 * arguments; else 0, and the reply says why. */
static int may_run(const struct session *s, const struct verb *v, const struct request *req, struct reply *out)
{
	if (!s->authed && (v == NULL || !(v->flags & VERB_NOAUTH)))
		reply_error(out, "%s", NOAUTH);
	else if (v == NULL && keyspace_foreign_verb(req->argv[0], req->lens[0]))
		reply_error(out,
			    "ERR shmd serves only Bloom and cuckoo filters: '%.*s' is a Redis data command it does "
			    "not have (BF.*, CF.* and the keyspace commands are served)",
			    32, req->argv[0]);
	else if (v == NULL)
		reply_error(out, "ERR unknown command '%.*s'", 64, req->argv[0]);
	else if (s->kind == SESSION_TCP && !(v->flags & VERB_TCP_OK))
		reply_error(out, "ERR %.*s is refused over TCP: %s (use the unix socket)", 16, req->argv[0],
			    v->flags & VERB_NAMES_FILE
				    ? "it names a file on the daemon's host, which a network client may not"
				    : "it administers the daemon itself, which a network client may not");
	else if (!verb_arity_ok(v, req->argc))
		reply_error(out, "ERR wrong number of arguments for '%s' command", v->name);
	else
		return 1;
	return 0;
}

int dispatch_request(struct session *s, struct registry *reg, const struct request *req, struct reply *out)
{
	return dispatch_row(s, reg, verbs_of(req), req, out);
}

/* ---- Counting (INFO commandstats) and the slow log ------------------------ */

/* Where verb @p v's calls are counted: its row's verb_stats, or NULL. */
static struct verb_stats *stats_of(const struct session *s, const struct verb *v)
{
	struct server_stats *st = s->srv != NULL ? s->srv->stats : NULL;
	if (st == NULL || st->verbs == NULL || v == NULL)
		return NULL;
	size_t i = dispatch_place(v);
	return i < st->nverbs ? &st->verbs[i] : NULL;
}

/* Log request @p c, which ran @p ticks, if it is slow. EXEC's requests
 * are logged one by one, as they run (Redis' skip_slowlog). A verb that
 * runs before AUTH may carry a password: its arguments are never logged. */
static void log_if_slow(struct session *s, const struct verb *v, struct verb_call *c, uint64_t ticks)
{
	const struct slowlog_config *cfg = s->srv->slowlog_cfg;
	int threshold = cfg != NULL ? cfg->log_slower_than : SLOWLOG_SLOWER_THAN_DEFAULT;
	if (threshold < 0 || ticks < clock_ticks_of_us((uint64_t)threshold) ||
	    (v->flags & VERB_REPLY_MASK) == VERB_REPLY_EXEC)
		return;
	slowlog_push(s->srv->slowlog, c->req, !!(v->flags & VERB_NOAUTH), s, clock_us(ticks),
		     cfg != NULL ? cfg->max_len : SLOWLOG_MAX_LEN_DEFAULT);
}

/* Run verb @p v's handler for @p c, counting the call in @p st (NULL:
 * not counted), its time and an error reply, and logging it when slow. */
static void run_counted(struct session *s, const struct verb *v, struct verb_call *c, struct verb_stats *st)
{
	int logged = s->srv != NULL && s->srv->slowlog != NULL;
	size_t before = c->out->len;
	uint64_t start = st != NULL || logged ? clock_ticks() : 0;
	s->last_cmd = v->name; /* CLIENT LIST's cmd: the one running, as Redis */
	v->run(c);
	if (c->wait)
		return; /* it did nothing: counted when it runs */
	uint64_t ticks = st != NULL || logged ? clock_ticks() - start : 0;
	if (st != NULL) {
		st->calls++;
		st->ticks += ticks;
		st->failed += !c->parked && c->out->len > before && c->out->data[before] == '-';
	}
	if (logged)
		log_if_slow(s, v, c, ticks);
}

int dispatch_row(struct session *s, struct registry *reg, const struct verb *v, const struct request *req,
		 struct reply *out)
{
	out->proto = s->proto;
	if (req->argc < 1) {
		reply_error(out, "ERR empty request");
		return VERB_DONE;
	}
	v = dispatch_resolve(v, req);
	struct verb_stats *st = stats_of(s, v);
	if (!may_run(s, v, req, out)) {
		s->multi_dirty |= s->in_multi; /* Redis: EXEC then answers -EXECABORT */
		if (st != NULL)
			st->rejected++;
		return VERB_DONE;
	}
	if (s->in_multi && !(v->flags & VERB_TXN)) {
		if (queue_request(s, v, req, out) < 0 && st != NULL)
			st->rejected++;
		return VERB_DONE;
	}
	/* EXEC runs its queue in one go: it waits while a file job holds a
	 * filter one of them would change. */
	if ((v->flags & VERB_REPLY_MASK) == VERB_REPLY_EXEC && s->in_multi && queue_waits(s))
		return VERB_WAIT;
	struct verb_call c = { .req = req, .out = out, .reg = reg, .sess = s, .peer = &s->peer };
	if (v->key > 0) {
		const char *name = req->argv[v->key];
		c.key_rc = strlen(name) == req->lens[v->key] ? shmf_name_check(name) : SHMF_E_NAME;
	}
	if (!allow_verb(&c, v)) {
		if (st != NULL)
			st->rejected++;
		return VERB_DONE;
	}
	/* A file job holds the filter: what would change it, or wait on its
	 * relocation lock, comes after, in order. Reads go on. */
	if (c.key_rc == 0 && v->key > 0 && (v->flags & (VERB_WRITES | VERB_LOCKS)) && jobs_busy(req->argv[v->key]))
		return VERB_WAIT;
	run_counted(s, v, &c, st);
	return c.parked ? VERB_PARKED : c.wait ? VERB_WAIT : VERB_DONE;
}
