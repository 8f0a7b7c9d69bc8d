/*
 * verbs-compat.c - COMMAND: what shmd tells Redis client libraries and
 * tools about its verbs. COMMAND describes each verb from its row of the
 * verb table (verbs.c: arguments, group, last key too, command-docs.c),
 * a verb with subcommand rows with their entries inside its own, as
 * Redis 7 does; COMMAND DOCS serves them as Redis 7 does, so that
 * redis-cli's hints and client libraries' key routing work. INFO is
 * verbs-info.c's.

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

/* Whether row @p v is a subcommand's ("client|kill"): listed inside its
 * verb's entry, not among the verbs. */
static int is_sub(const struct verb *v)
{
	return strchr(v->name, '|') != NULL;
}

/* Whether row @p sub is a subcommand of verb @p v. */
static int sub_of(const struct verb *sub, const struct verb *v)
{
	size_t n = strlen(v->name);
	return strncmp(sub->name, v->name, n) == 0 && sub->name[n] == '|';
}

/* The verbs COMMAND lists: the rows that are no subcommand's. */
static size_t verbs_top(void)
{
	const struct verb *v;
	size_t n = 0;
	for (size_t i = 0; (v = verbs_at(i)) != NULL; i++)
		n += !is_sub(v);
	return n;
}

static void reply_entry(struct reply *out, const struct verb *v);

/* An entry's last element: its subcommands' entries (none but for a verb
 * with subcommand rows). */
static void reply_subcommands(struct reply *out, const struct verb *v)
{
	const struct verb *w;
	size_t n = 0;
	if (is_sub(v)) {
		reply_array(out, 0);
		return;
	}
	for (size_t i = 0; (w = verbs_at(i)) != NULL; i++)
		n += sub_of(w, v);
	reply_array(out, n);
	for (size_t i = 0; (w = verbs_at(i)) != NULL; i++)
		if (sub_of(w, v))
			reply_entry(out, w);
}

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
	reply_subcommands(out, v);
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

/* COMMAND DOCS' entry of verb @p v, a verb with subcommand rows with
 * their entries under "subcommands", as Redis 7 gives CLIENT's. */
static void docs_entry(struct reply *out, const struct verb *v)
{
	const struct verb *w;
	size_t n = 0;
	for (size_t i = 0; !is_sub(v) && (w = verbs_at(i)) != NULL; i++)
		n += sub_of(w, v);
	command_docs_reply(out, v, n > 0);
	if (n == 0)
		return;
	reply_bulk_str(out, "subcommands");
	reply_map(out, n);
	for (size_t i = 0; (w = verbs_at(i)) != NULL; i++)
		if (sub_of(w, v)) {
			reply_bulk_str(out, w->name);
			command_docs_reply(out, w, 0);
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
			if (is_sub(v))
				continue;
			reply_bulk_str(out, v->name);
			docs_entry(out, v);
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
		docs_entry(out, v);
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
			docs_entry(&r, v);
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
	size_t top = verbs_top();
	if (req->argc == 1 || (!strcasecmp(sub, "INFO") && req->argc == 2)) {
		reply_array(out, top);
		for (size_t i = 0; (v = verbs_at(i)) != NULL; i++)
			if (!is_sub(v))
				reply_entry(out, v);
	} else if (!strcasecmp(sub, "COUNT") && req->argc == 2) {
		reply_int(out, (long long)top);
	} else if (!strcasecmp(sub, "LIST") && req->argc == 2) {
		/* Redis 7 lists the subcommands too ("client|kill"). */
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
		command_docs(req, out, top);
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
