/*
 * verbs-ops.c - the operators' verbs that monitoring tools and client
 * libraries send: CONFIG (GET, SET, RESETSTAT), SLOWLOG (GET, LEN,
 * RESET) and MEMORY (USAGE, STATS), each subcommand a row of the verb
 * table ("config|get"), and the answer of a verb with subcommand rows to
 * a subcommand it does not have.
 *
 * CONFIG GET answers Redis' parameter names that tools ask, from what
 * shmd runs with (the server's view of its configuration: session.h);
 * CONFIG SET changes nothing: shmd's configuration is its file, applied
 * by a reload. Replies and errors follow Redis 7's.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shmd/base/memstat.h"
#include "shmd/session/session.h"
#include "shmd/store/quotas.h"
#include "shmd/verbs/handlers.h"
#include "shmd/verbs/slowlog.h"

static void reply_help(struct reply *out, const char *const *lines, size_t n)
{
	reply_array(out, n);
	for (size_t i = 0; i < n; i++)
		reply_status(out, lines[i]);
}

#define HELP(out, lines) reply_help(out, lines, sizeof(lines) / sizeof(lines[0]))

void cmd_subcommand_unknown(struct verb_call *c)
{
	char verb[32];
	size_t i;
	for (i = 0; c->req->argv[0][i] != '\0' && i + 1 < sizeof(verb); i++)
		verb[i] = (char)(c->req->argv[0][i] >= 'a' && c->req->argv[0][i] <= 'z' ? c->req->argv[0][i] - 32
											: c->req->argv[0][i]);
	verb[i] = '\0';
	reply_error(c->out, "ERR unknown subcommand '%.128s'. Try %s HELP.", c->req->argv[1], verb);
}

/* ---- CONFIG --------------------------------------------------------------- */

static const struct server_view no_server = { 0 };

static const struct server_view *view(const struct verb_call *c)
{
	return c->sess->srv != NULL ? c->sess->srv : &no_server;
}

/* A parameter's value, as CONFIG GET gives it, into @p buf. */
typedef void config_value(const struct verb_call *c, char *buf, size_t len);

static void v_no(const struct verb_call *c, char *buf, size_t len)
{
	(void)c;
	snprintf(buf, len, "no");
}

static void v_zero(const struct verb_call *c, char *buf, size_t len)
{
	(void)c;
	snprintf(buf, len, "0");
}

static void v_empty(const struct verb_call *c, char *buf, size_t len)
{
	(void)c;
	snprintf(buf, len, "%s", "");
}

static void v_databases(const struct verb_call *c, char *buf, size_t len)
{
	(void)c;
	snprintf(buf, len, "1");
}

static void v_policy(const struct verb_call *c, char *buf, size_t len)
{
	(void)c;
	snprintf(buf, len, "noeviction");
}

/* As INFO's maxclients: the TCP listener's when there is one. */
static void v_maxclients(const struct verb_call *c, char *buf, size_t len)
{
	const struct server_view *v = view(c);
	snprintf(buf, len, "%u", v->tcp_port ? v->maxclients[SESSION_TCP] : v->maxclients[SESSION_UNIX]);
}

static void v_maxmemory_clients(const struct verb_call *c, char *buf, size_t len)
{
	snprintf(buf, len, "%zu", view(c)->maxmemory_clients);
}

static void v_port(const struct verb_call *c, char *buf, size_t len)
{
	snprintf(buf, len, "%d", view(c)->tcp_port);
}

static void v_bind(const struct verb_call *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s", view(c)->tcp_bind != NULL ? view(c)->tcp_bind : "");
}

/* The password is never sent: readers may run CONFIG GET. */
static void v_requirepass(const struct verb_call *c, char *buf, size_t len)
{
	const char *pass = view(c)->requirepass;
	snprintf(buf, len, "%s", pass != NULL && pass[0] != '\0' ? "(hidden)" : "");
}

/* The idle timeout of the listener the asking connection came through. */
static void v_timeout(const struct verb_call *c, char *buf, size_t len)
{
	snprintf(buf, len, "%u", view(c)->timeout[c->sess->kind == SESSION_TCP]);
}

static void v_unixsocket(const struct verb_call *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s", view(c)->unix_path != NULL ? view(c)->unix_path : "");
}

static const struct slowlog_config slowlog_defaults = { SLOWLOG_SLOWER_THAN_DEFAULT, SLOWLOG_MAX_LEN_DEFAULT };

static const struct slowlog_config *slowlog_cfg(const struct verb_call *c)
{
	return view(c)->slowlog_cfg != NULL ? view(c)->slowlog_cfg : &slowlog_defaults;
}

static void v_slower_than(const struct verb_call *c, char *buf, size_t len)
{
	snprintf(buf, len, "%d", slowlog_cfg(c)->log_slower_than);
}

static void v_max_len(const struct verb_call *c, char *buf, size_t len)
{
	snprintf(buf, len, "%u", slowlog_cfg(c)->max_len);
}

/* Redis' parameters that tools ask, in Redis' names, and where shmd's
 * value comes from (its configuration key, or the fixed answer of a
 * daemon without persistence, eviction, databases or cluster). */
static const struct {
	const char *name;
	config_value *value;
} config_params[] = {
	{ "appendonly", v_no },
	{ "bind", v_bind }, /* [tcp] bind; "" without a listener */
	{ "cluster-enabled", v_no },
	{ "databases", v_databases },
	{ "maxclients", v_maxclients },               /* [tcp] maxclients with a listener, else [instance]'s */
	{ "maxmemory", v_zero },                      /* filters are sized when made: nothing to evict */
	{ "maxmemory-clients", v_maxmemory_clients }, /* [instance] maxmemory_clients */
	{ "maxmemory-policy", v_policy },
	{ "port", v_port }, /* [tcp] port; 0 without a listener */
	{ "requirepass", v_requirepass },
	{ "save", v_empty },                          /* no RDB: snapshots are per filter ([filter] snapshot_every) */
	{ "slowlog-log-slower-than", v_slower_than }, /* [instance] slowlog_log_slower_than */
	{ "slowlog-max-len", v_max_len },             /* [instance] slowlog_max_len */
	{ "timeout", v_timeout },                     /* [tcp] timeout or [instance] timeout: this connection's */
	{ "unixsocket", v_unixsocket },
};

#define NPARAMS (sizeof(config_params) / sizeof(config_params[0]))

/* CONFIG GET pattern...: a map of every parameter a pattern (a glob, any
 * case) matches, each once, as Redis 7. */
void cmd_config_get(struct verb_call *c)
{
	int match[NPARAMS] = { 0 };
	size_t n = 0;
	for (size_t i = 0; i < NPARAMS; i++) {
		for (int a = 2; a < c->req->argc && !match[i]; a++)
			match[i] = fnmatch(c->req->argv[a], config_params[i].name, FNM_CASEFOLD) == 0;
		n += match[i];
	}
	reply_map(c->out, n);
	for (size_t i = 0; i < NPARAMS; i++) {
		char value[512];
		if (!match[i])
			continue;
		config_params[i].value(c, value, sizeof(value));
		reply_bulk_str(c->out, config_params[i].name);
		reply_bulk_str(c->out, value);
	}
}

/* One source of configuration: a value set here would differ from the
 * file until the next reload or restart put the file's back. */
void cmd_config_set(struct verb_call *c)
{
	reply_error(c->out,
		    "ERR CONFIG SET is not supported by shmd: its configuration is its file (shmd -c); change "
		    "'%.64s' there and reload (SHMF.RELOAD or SIGHUP), which applies what can change live",
		    c->req->argv[2]);
}

void cmd_config_resetstat(struct verb_call *c)
{
	struct server_stats *st = view(c)->stats;
	if (st != NULL) {
		st->connections_received = st->commands_processed = 0;
		st->rejected_connections = st->evicted_clients = 0;
		memset(st->rejected_by, 0, sizeof(st->rejected_by));
		if (st->verbs != NULL)
			memset(st->verbs, 0, st->nverbs * sizeof(st->verbs[0]));
	}
	reply_status(c->out, "OK");
}

void cmd_config_help(struct verb_call *c)
{
	static const char *const lines[] = {
		"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GET <pattern>",
		"    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>",
		"    Refused: shmd's configuration is its file, applied by SHMF.RELOAD or SIGHUP.",
		"RESETSTAT",
		"    Reset statistics reported by the INFO command.",
		"HELP",
		"    Print this help.",
	};
	HELP(c->out, lines);
}

/* ---- SLOWLOG -------------------------------------------------------------- */

void cmd_slowlog_get(struct verb_call *c)
{
	long long count = 10;
	if (c->req->argc == 3) {
		char *end;
		errno = 0;
		count = strtoll(c->req->argv[2], &end, 10);
		if (errno || end == c->req->argv[2] || *end != '\0') {
			reply_error(c->out, "ERR value is not an integer or out of range");
			return;
		}
		if (count < -1) {
			reply_error(c->out, "ERR count should be greater than or equal to -1");
			return;
		}
	}
	if (view(c)->slowlog == NULL)
		reply_array(c->out, 0);
	else
		slowlog_reply(view(c)->slowlog, count, c->out);
}

void cmd_slowlog_len(struct verb_call *c)
{
	reply_int(c->out, view(c)->slowlog != NULL ? (long long)slowlog_len(view(c)->slowlog) : 0);
}

void cmd_slowlog_reset(struct verb_call *c)
{
	if (view(c)->slowlog != NULL)
		slowlog_reset(view(c)->slowlog);
	reply_status(c->out, "OK");
}

void cmd_slowlog_help(struct verb_call *c)
{
	static const char *const lines[] = {
		"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GET [<count>]",
		"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
		"    Entries are made of:",
		"    id, timestamp, time in microseconds, arguments array, client IP and port,",
		"    client name",
		"LEN",
		"    Return the length of the slowlog.",
		"RESET",
		"    Reset the slowlog.",
		"HELP",
		"    Print this help.",
	};
	HELP(c->out, lines);
}

/* ---- MEMORY --------------------------------------------------------------- */

/* MEMORY USAGE key [SAMPLES count]: the filter's data segments in bytes
 * (every generation and layer; nothing to sample), nil for no filter. */
void cmd_memory_usage(struct verb_call *c)
{
	const struct request *req = c->req;
	for (int i = 3; i < req->argc; i += 2) {
		char *end;
		if (strcasecmp(req->argv[i], "SAMPLES") != 0 || i + 1 >= req->argc) {
			reply_error(c->out, "ERR syntax error");
			return;
		}
		errno = 0;
		long long n = strtoll(req->argv[i + 1], &end, 10);
		if (errno || end == req->argv[i + 1] || *end != '\0' || n < 0) {
			reply_error(c->out, "ERR value is out of range, must be positive");
			return;
		}
	}
	int slot = c->key_rc == 0 && c->reg != NULL ? registry_find(c->reg, req->argv[2]) : -1;
	if (slot < 0)
		reply_nil(c->out);
	else
		reply_int(c->out, (long long)quotas_filter_bytes(c->reg, slot));
}

/* MEMORY STATS: Redis' fields that shmd has figures for. */
void cmd_memory_stats(struct verb_call *c)
{
	unsigned count = 0;
	uint64_t filters = c->reg != NULL ? quotas_instance_bytes(c->reg, &count) : 0;
	reply_map(c->out, 6);
	reply_bulk_str(c->out, "total.allocated"); /* INFO's used_memory: the heap and the filters */
	reply_int(c->out, (long long)(memstat_heap() + filters));
	reply_bulk_str(c->out, "clients.normal");
	reply_int(c->out, (long long)view(c)->clients_memory);
	reply_bulk_str(c->out, "keys.count");
	reply_int(c->out, count);
	reply_bulk_str(c->out, "dataset.bytes");
	reply_int(c->out, (long long)filters);
	reply_bulk_str(c->out, "rss.bytes");
	reply_int(c->out, (long long)memstat_rss());
	reply_bulk_str(c->out, "filters.bytes");
	reply_int(c->out, (long long)filters);
}

void cmd_memory_help(struct verb_call *c)
{
	static const char *const lines[] = {
		"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"STATS",
		"    Return information about the memory usage of the server.",
		"USAGE <key> [SAMPLES <count>]",
		"    Return memory in bytes used by the filter <key>: its data segments.",
		"HELP",
		"    Print this help.",
	};
	HELP(c->out, lines);
}
