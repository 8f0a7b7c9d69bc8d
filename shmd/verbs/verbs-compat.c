/*
 * verbs-compat.c - COMMAND and INFO: what shmd tells Redis client
 * libraries and tools about itself. Enough for redis-cli,
 * redis-py and phpredis to connect and for tools that read INFO's
 * redis_version. COMMAND describes each verb from its row of the verb
 * table (verbs.c: arguments, group, last key too, command-docs.c);
 * COMMAND DOCS serves them as Redis 7 does, so that redis-cli's hints and
 * client libraries' key routing work.

 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "shmd/verbs/handlers.h"
#include "shmd/session/session.h"
#include "shmd/verbs/command-docs.h"
#include "shmd/verbs/verbs.h"

/* Redis 7's command entry: name, arity, flags, first key, last key, step,
 * ACL categories, tips, key specifications, subcommands. */
static void reply_entry(struct reply *out, const struct verb *v)
{
	const char *flags[4];
	size_t nflags = 0;
	if (v->flags & VERB_CONN) {
		flags[nflags++] = "loading";
		flags[nflags++] = "stale";
		flags[nflags++] = "fast";
		if (v->flags & VERB_NOAUTH)
			flags[nflags++] = "no_auth";
	} else if (v->flags & VERB_READONLY) {
		flags[nflags++] = "readonly";
		flags[nflags++] = "fast";
	} else {
		flags[nflags++] = "write";
		flags[nflags++] = "denyoom";
	}
	reply_array(out, 10);
	reply_bulk_str(out, v->name);
	reply_int(out, v->max_args == v->min_args ? v->min_args : -v->min_args);
	reply_set(out, nflags);
	for (size_t i = 0; i < nflags; i++)
		reply_status(out, flags[i]);
	reply_int(out, v->key);
	reply_int(out, v->key == 0 ? 0 : v->last_key < 0 ? -1 : v->key);
	reply_int(out, v->key != 0);
	reply_array(out, 0);
	reply_array(out, 0);
	reply_array(out, 0);
	reply_array(out, 0);
}

static const char *const command_help[] = {
	"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"(no subcommand)",
	"    Return details about all commands.",
	"COUNT",
	"    Return the total number of commands.",
	"LIST",
	"    Return a list of all command names.",
	"INFO [<command-name> ...]",
	"    Return details about the given commands (all of them without a name).",
	"DOCS [<command-name> ...]",
	"    Return documentation details about the given commands (all of them without a name).",
	"GETKEYS <full-command>",
	"    Return the keys (filter names) in a full command.",
	"HELP",
	"    Print this help.",
};

/* COMMAND GETKEYS verb arg...: the filter the request would name. */
static void command_getkeys(const struct request *req, struct reply *out)
{
	const struct verb *v = verbs_find(req->argv[2], req->lens[2]);
	if (v == NULL)
		reply_error(out, "ERR Invalid command specified");
	else if (!verb_arity_ok(v, req->argc - 2))
		reply_error(out, "ERR Invalid number of arguments specified for command");
	else if (v->key == 0)
		reply_error(out, "ERR The command has no key arguments");
	else {
		reply_array(out, 1);
		reply_bulk(out, req->argv[2 + v->key], req->lens[2 + v->key]);
	}
}

/* COMMAND DOCS [name...]: a map of each known verb's docs (all of them
 * without a name; an unknown name is left out, as Redis does). */
static void command_docs(const struct request *req, struct reply *out, size_t total)
{
	const struct verb *v;
	if (req->argc == 2) {
		reply_map(out, total);
		for (size_t i = 0; (v = verbs_at(i)) != NULL; i++) {
			reply_bulk_str(out, v->name);
			command_docs_reply(out, v);
		}
		return;
	}
	size_t n = 0;
	for (int i = 2; i < req->argc; i++)
		n += verbs_find(req->argv[i], req->lens[i]) != NULL;
	reply_map(out, n);
	for (int i = 2; i < req->argc; i++) {
		if ((v = verbs_find(req->argv[i], req->lens[i])) == NULL)
			continue;
		reply_bulk_str(out, v->name);
		command_docs_reply(out, v);
	}
}

/* The largest entry COMMAND INFO or COMMAND DOCS gives a verb, in either
 * protocol: measured once, from the table itself, so that it stays true
 * as verbs and docs change. */
static size_t entry_max(void)
{
	static size_t max;
	const struct verb *v;
	if (max != 0)
		return max;
	for (size_t i = 0; (v = verbs_at(i)) != NULL; i++)
		for (int proto = 2; proto <= 3; proto++) {
			struct reply r = { .proto = proto };
			reply_entry(&r, v);
			size_t a = r.len;
			r.len = 0;
			reply_bulk_str(&r, v->name);
			command_docs_reply(&r, v);
			if (a > max)
				max = a;
			if (r.len > max)
				max = r.len;
			reply_free(&r);
		}
	return max;
}

size_t command_reply_max(const struct request *req)
{
	size_t total = 0, entry = entry_max() + 64;
	while (verbs_at(total) != NULL)
		total++;
	size_t n = 1024 + total * entry;    /* COMMAND, COMMAND DOCS: every verb */
	for (int i = 2; i < req->argc; i++) /* INFO, DOCS: an entry a name; GETKEYS: the arguments */
		n += entry + req->lens[i];
	return n;
}

void cmd_command(struct verb_call *c)
{
	const struct request *req = c->req;
	struct reply *out = c->out;
	const struct verb *v;
	size_t total = 0;
	while (verbs_at(total) != NULL)
		total++;
	const char *sub = req->argc > 1 ? req->argv[1] : "";
	if (req->argc == 1 || (!strcasecmp(sub, "INFO") && req->argc == 2)) {
		reply_array(out, total);
		for (size_t i = 0; (v = verbs_at(i)) != NULL; i++)
			reply_entry(out, v);
	} else if (!strcasecmp(sub, "COUNT") && req->argc == 2) {
		reply_int(out, (long long)total);
	} else if (!strcasecmp(sub, "LIST") && req->argc == 2) {
		reply_array(out, total);
		for (size_t i = 0; (v = verbs_at(i)) != NULL; i++)
			reply_bulk_str(out, v->name);
	} else if (!strcasecmp(sub, "INFO")) {
		reply_array(out, (size_t)req->argc - 2);
		for (int i = 2; i < req->argc; i++) {
			if ((v = verbs_find(req->argv[i], req->lens[i])) != NULL)
				reply_entry(out, v);
			else
				reply_nil(out);
		}
	} else if (!strcasecmp(sub, "DOCS")) {
		command_docs(req, out, total);
	} else if (!strcasecmp(sub, "GETKEYS") && req->argc >= 3) {
		command_getkeys(req, out);
	} else if (!strcasecmp(sub, "HELP") && req->argc == 2) {
		reply_array(out, sizeof(command_help) / sizeof(command_help[0]));
		for (size_t i = 0; i < sizeof(command_help) / sizeof(command_help[0]); i++)
			reply_status(out, command_help[i]);
	} else {
		reply_error(out, "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try COMMAND HELP.",
			    32, sub);
	}
}

/* The text INFO builds, growing as needed. */
struct text {
	char *p;
	size_t len, cap;
	int oom;
};

static void add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct text *t, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || t->oom)
		return;
	size_t len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
	if (t->len + len + 3 > t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		while (cap < t->len + len + 3)
			cap *= 2;
		char *p = realloc(t->p, cap);
		if (p == NULL) {
			t->oom = 1;
			return;
		}
		t->p = p;
		t->cap = cap;
	}
	memcpy(t->p + t->len, line, len);
	t->len += len;
	memcpy(t->p + t->len, "\r\n", 2);
	t->len += 2;
}

enum { SEC_SERVER = 1, SEC_CLIENTS = 2, SEC_STATS = 4, SEC_KEYSPACE = 8, SEC_ALL = 15 };

/* INFO's sections: default, all and everything are all four; an unknown
 * name adds nothing (as in Redis, whose reply is then empty). */
static int sections(const struct request *req)
{
	static const struct {
		const char *name;
		int bits;
	} names[] = {
		{ "server", SEC_SERVER },     { "clients", SEC_CLIENTS }, { "stats", SEC_STATS },
		{ "keyspace", SEC_KEYSPACE }, { "default", SEC_ALL },     { "all", SEC_ALL },
		{ "everything", SEC_ALL },
	};
	if (req->argc == 1)
		return SEC_ALL;
	int bits = 0;
	for (int i = 1; i < req->argc; i++)
		for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++)
			if (!strcasecmp(req->argv[i], names[j].name))
				bits |= names[j].bits;
	return bits;
}

void cmd_info(struct verb_call *c)
{
	const struct request *req = c->req;
	struct registry *reg = c->reg;
	struct reply *out = c->out;
	const struct server_view *v = c->sess->srv;
	struct text t = { 0 };
	int bits = sections(req);
	uint64_t now = (uint64_t)time(NULL), up = now > v->started ? now - v->started : 0;
	if (bits & SEC_SERVER) {
		struct utsname u;
		if (uname(&u) < 0)
			memset(&u, 0, sizeof(u));
		add(&t, "# Server");
		add(&t, "redis_version:%s", COMPAT_REDIS_VERSION);
		add(&t, "shmd_version:%s", SHMF_VERSION_STRING);
		add(&t, "redis_mode:standalone");
		add(&t, "os:%s %s %s", u.sysname, u.release, u.machine);
		add(&t, "arch_bits:%zu", 8 * sizeof(void *));
		add(&t, "multiplexing_api:epoll");
		add(&t, "process_id:%ld", (long)getpid());
		add(&t, "tcp_port:%d", v->tcp_port);
		add(&t, "uptime_in_seconds:%llu", (unsigned long long)up);
		add(&t, "uptime_in_days:%llu", (unsigned long long)(up / 86400));
		add(&t, "shmd_instance:%s", reg->instance);
		add(&t, "%s", "");
	}
	if (bits & SEC_CLIENTS) {
		add(&t, "# Clients");
		add(&t, "connected_clients:%u", v->clients[SESSION_UNIX] + v->clients[SESSION_TCP]);
		add(&t, "unix_clients:%u", v->clients[SESSION_UNIX]);
		add(&t, "tcp_clients:%u", v->clients[SESSION_TCP]);
		add(&t, "maxclients:%u", v->tcp_port ? v->maxclients[SESSION_TCP] : v->maxclients[SESSION_UNIX]);
		/* Redis 7 names these two mem_clients_normal (INFO memory) and maxmemory_clients. */
		add(&t, "mem_clients_normal:%zu", v->clients_memory);
		add(&t, "maxmemory_clients:%zu", v->maxmemory_clients);
		add(&t, "%s", "");
	}
	if (bits & SEC_STATS) {
		add(&t, "# Stats");
		add(&t, "total_connections_received:%llu", (unsigned long long)v->connections_received);
		add(&t, "total_commands_processed:%llu", (unsigned long long)v->commands_processed);
		add(&t, "rejected_connections:%llu", (unsigned long long)v->rejected_connections);
		add(&t, "evicted_clients:%llu", (unsigned long long)v->evicted_clients);
		add(&t, "%s", "");
	}
	if (bits & SEC_KEYSPACE) {
		int slots[SHMF_SLOTS];
		int n = registry_list(reg, slots);
		add(&t, "# Keyspace");
		if (n > 0)
			add(&t, "db0:keys=%d,expires=0,avg_ttl=0", n);
		add(&t, "%s", "");
	}
	if (t.oom) {
		reply_error(out, "ERR out of memory for INFO");
	} else {
		/* Redis ends the text without the last section's blank line. */
		size_t len = t.len;
		while (len >= 2 && t.p[len - 2] == '\r' && t.p[len - 1] == '\n' && (len < 4 || t.p[len - 4] == '\r'))
			len -= 2;
		reply_bulk(out, t.p ? t.p : "", len);
	}
	free(t.p);
}
