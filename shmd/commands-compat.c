/*
 * commands-compat.c - COMMAND and INFO: what shmd tells Redis client
 * libraries and tools about itself (see session.h). Enough for redis-cli,
 * redis-py and phpredis to connect and for tools that read INFO's
 * redis_version; shmd has no command documentation to give (COMMAND DOCS
 * answers an empty map, after which redis-cli uses its own hints).
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

#include "session.h"

/* One verb as COMMAND describes it. */
struct verb_desc {
	const char *name;
	int min_args, max_args;
	int noauth;      /* a connection verb that runs before AUTH */
	int connection;  /* a connection verb (session.c), not a filter verb */
};

/* Entry @p i of the verbs shmd serves: the connection verbs, then the
 * filter verbs. 0 past the end. */
static int verb_at(size_t i, struct verb_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->name = session_verb(i, &d->min_args, &d->max_args, &d->noauth);
	if (d->name != NULL) {
		d->connection = 1;
		return 1;
	}
	size_t nsession = 0;
	int a, b, c;
	while (session_verb(nsession, &a, &b, &c) != NULL)
		nsession++;
	d->name = commands_verb(i - nsession, &d->min_args, &d->max_args);
	return d->name != NULL;
}

static int find_verb(const char *name, size_t len, struct verb_desc *d)
{
	for (size_t i = 0; verb_at(i, d); i++)
		if (strlen(d->name) == len && !strcasecmp(d->name, name))
			return 1;
	return 0;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcasecmp(s + n - m, suffix);
}

/* A filter verb whose argv[1] is a filter name: the key, for cluster-aware clients. */
static int has_key(const struct verb_desc *d)
{
	return !d->connection && strchr(d->name, '.') != NULL && strcasecmp(d->name, "SHMF.LIST") != 0;
}

static int read_only(const struct verb_desc *d)
{
	static const char *const ro[] = { "EXISTS", "MEXISTS", "INFO", "CARD", "COUNT", ".LIST" };
	if (d->connection || !strcasecmp(d->name, "PING"))
		return 1;
	for (size_t i = 0; i < sizeof(ro) / sizeof(ro[0]); i++)
		if (ends_with(d->name, ro[i]))
			return 1;
	return 0;
}

/* Redis 7's command entry: name, arity, flags, first key, last key, step,
 * ACL categories, tips, key specifications, subcommands. */
static void reply_entry(struct reply *out, const struct verb_desc *d)
{
	char lower[32];
	size_t n = strlen(d->name) < sizeof(lower) - 1 ? strlen(d->name) : sizeof(lower) - 1;
	for (size_t i = 0; i < n; i++)
		lower[i] = (char)tolower((unsigned char)d->name[i]);
	lower[n] = '\0';
	int key = has_key(d);
	reply_array(out, 10);
	reply_bulk_str(out, lower);
	reply_int(out, d->max_args == d->min_args ? d->min_args : -d->min_args);
	const char *flags[4];
	size_t nflags = 0;
	if (d->connection) {
		flags[nflags++] = "loading";
		flags[nflags++] = "stale";
		flags[nflags++] = "fast";
		if (d->noauth)
			flags[nflags++] = "no_auth";
	} else if (read_only(d)) {
		flags[nflags++] = "readonly";
		flags[nflags++] = "fast";
	} else {
		flags[nflags++] = "write";
		flags[nflags++] = "denyoom";
	}
	reply_array(out, nflags);
	for (size_t i = 0; i < nflags; i++)
		reply_status(out, flags[i]);
	reply_int(out, key);
	reply_int(out, key);
	reply_int(out, key);
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
	"    Return documentation: none in shmd (an empty map); see docs/protocol.md.",
	"GETKEYS <full-command>",
	"    Return the keys (filter names) in a full command.",
	"HELP",
	"    Print this help.",
};

void compat_command(const struct session *s, const struct request *req, struct reply *out)
{
	(void)s;
	struct verb_desc d;
	size_t total = 0;
	while (verb_at(total, &d))
		total++;
	if (req->argc == 1 || (!strcasecmp(req->argv[1], "INFO") && req->argc == 2)) {
		reply_array(out, total);
		for (size_t i = 0; verb_at(i, &d); i++)
			reply_entry(out, &d);
		return;
	}
	const char *sub = req->argv[1];
	if (!strcasecmp(sub, "COUNT") && req->argc == 2) {
		reply_int(out, (long long)total);
	} else if (!strcasecmp(sub, "LIST") && req->argc == 2) {
		reply_array(out, total);
		for (size_t i = 0; verb_at(i, &d); i++) {
			char lower[32];
			size_t n = strlen(d.name) < sizeof(lower) - 1 ? strlen(d.name) : sizeof(lower) - 1;
			for (size_t j = 0; j < n; j++)
				lower[j] = (char)tolower((unsigned char)d.name[j]);
			lower[n] = '\0';
			reply_bulk_str(out, lower);
		}
	} else if (!strcasecmp(sub, "INFO")) {
		reply_array(out, (size_t)req->argc - 2);
		for (int i = 2; i < req->argc; i++) {
			if (find_verb(req->argv[i], req->lens[i], &d))
				reply_entry(out, &d);
			else
				reply_nil(out);
		}
	} else if (!strcasecmp(sub, "DOCS")) {
		reply_array(out, 0);
	} else if (!strcasecmp(sub, "GETKEYS") && req->argc >= 3) {
		if (!find_verb(req->argv[2], req->lens[2], &d)) {
			reply_error(out, "ERR Invalid command specified");
		} else if (req->argc - 2 < d.min_args || (d.max_args >= 0 && req->argc - 2 > d.max_args)) {
			reply_error(out, "ERR Invalid number of arguments specified for command");
		} else if (!has_key(&d)) {
			reply_error(out, "ERR The command has no key arguments");
		} else {
			reply_array(out, 1);
			reply_bulk(out, req->argv[3], req->lens[3]);
		}
	} else if (!strcasecmp(sub, "HELP") && req->argc == 2) {
		reply_array(out, sizeof(command_help) / sizeof(command_help[0]));
		for (size_t i = 0; i < sizeof(command_help) / sizeof(command_help[0]); i++)
			reply_status(out, command_help[i]);
	} else {
		reply_error(out, "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try COMMAND HELP.", 32,
			    sub);
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
		{ "server", SEC_SERVER }, { "clients", SEC_CLIENTS }, { "stats", SEC_STATS },
		{ "keyspace", SEC_KEYSPACE }, { "default", SEC_ALL }, { "all", SEC_ALL }, { "everything", SEC_ALL },
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

void compat_info(const struct session *s, struct registry *reg, const struct request *req, struct reply *out)
{
	const struct server_view *v = s->srv;
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
		add(&t, "%s", "");
	}
	if (bits & SEC_STATS) {
		add(&t, "# Stats");
		add(&t, "total_connections_received:%llu", (unsigned long long)v->connections_received);
		add(&t, "total_commands_processed:%llu", (unsigned long long)v->commands_processed);
		add(&t, "rejected_connections:%llu", (unsigned long long)v->rejected_connections);
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
