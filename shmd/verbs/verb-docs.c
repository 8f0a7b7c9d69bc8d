/*
 * verb-docs.c - every verb's arguments, group and last key, for COMMAND
 * DOCS and COMMAND INFO (see verb-docs.h). The BF and CF verbs' arguments
 * are RedisBloom's, with shmd's additions (MODE, WINDOW, ...).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "shmd/verbs/verb-docs.h"

static const struct verb_doc docs[] = {
	{ "auth", "connection", 0, "[username:string] password:string" },
	{ "hello", "connection", 0, "[protover:integer] [AUTH username:string] [SETNAME clientname:string]" },
	{ "quit", "connection", 0, "" },
	{ "reset", "connection", 0, "" },
	{ "client", "connection", 0, "subcommand:string [arg:string...]" },
	{ "select", "connection", 0, "index:integer" },
	{ "echo", "connection", 0, "message:string" },
	{ "command", "server", 0, "[subcommand:string] [arg:string...]" },
	{ "info", "server", 0, "[section:string...]" },
	{ "ping", "connection", 0, "[message:string]" },
	{ "time", "server", 0, "" },
	{ "multi", "transactions", 0, "" },
	{ "exec", "transactions", 0, "" },
	{ "discard", "transactions", 0, "" },
	{ "watch", "transactions", 0, "filter:string..." },
	{ "unwatch", "transactions", 0, "" },
	{ "del", "generic", -1, "key..." },
	{ "unlink", "generic", -1, "key..." },
	{ "exists", "generic", -1, "key..." },
	{ "type", "generic", 1, "key" },
	{ "scan", "generic", 0, "cursor:integer [MATCH pattern:pattern] [COUNT count:integer] [TYPE type:string]" },
	{ "keys", "generic", 0, "pattern:pattern" },
	{ "dbsize", "server", 0, "" },
	{ "flushall", "server", 0, "[ASYNC|SYNC]" },
	{ "flushdb", "server", 0, "[ASYNC|SYNC]" },
	{ "expire", "generic", 1, "key seconds:integer [NX|XX|GT|LT]" },
	{ "pexpire", "generic", 1, "key milliseconds:integer [NX|XX|GT|LT]" },
	{ "expireat", "generic", 1, "key unix-time-seconds:unix-time [NX|XX|GT|LT]" },
	{ "pexpireat", "generic", 1, "key unix-time-milliseconds:unix-time [NX|XX|GT|LT]" },
	{ "persist", "generic", 1, "key" },
	{ "ttl", "generic", 1, "key" },
	{ "pttl", "generic", 1, "key" },
	{ "expiretime", "generic", 1, "key" },
	{ "pexpiretime", "generic", 1, "key" },
	{ "bf.reserve", "bf", 1,
	  "key error_rate:double capacity:integer [EXPANSION expansion:integer] [NONSCALING] [FIXED] "
	  "[MODE mode:string] [WINDOW duration:string] [GENERATIONS generations:integer] [REPLICATE]" },
	{ "bf.add", "bf", 1, "key item:string" },
	{ "bf.madd", "bf", 1, "key item:string..." },
	{ "bf.exists", "bf", 1, "key item:string" },
	{ "bf.mexists", "bf", 1, "key item:string..." },
	{ "bf.info", "bf", 1, "key [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION]" },
	{ "bf.card", "bf", 1, "key" },
	{ "bf.insert", "bf", 1,
	  "key [CAPACITY capacity:integer] [ERROR error:double] [EXPANSION expansion:integer] [NOCREATE] "
	  "[NONSCALING] [MODE mode:string] ITEMS item:string..." },
	{ "cf.reserve", "cf", 1,
	  "key capacity:integer [BUCKETSIZE bucketsize:integer] [MAXITERATIONS maxiterations:integer] "
	  "[EXPANSION expansion:integer] [ERROR error:double] [MODE mode:string] [WINDOW duration:string] "
	  "[GENERATIONS generations:integer] [REPLICATE]" },
	{ "cf.add", "cf", 1, "key item:string" },
	{ "cf.addnx", "cf", 1, "key item:string" },
	{ "cf.insert", "cf", 1, "key [CAPACITY capacity:integer] [NOCREATE] ITEMS item:string..." },
	{ "cf.insertnx", "cf", 1, "key [CAPACITY capacity:integer] [NOCREATE] ITEMS item:string..." },
	{ "cf.exists", "cf", 1, "key item:string" },
	{ "cf.mexists", "cf", 1, "key item:string..." },
	{ "cf.del", "cf", 1, "key item:string" },
	{ "cf.count", "cf", 1, "key item:string" },
	{ "cf.info", "cf", 1, "key" },
	{ "cf.compact", "cf", 1, "key" },
	{ "shmf.addcapped", "shmf", 1, "key item:string cap:integer" },
	{ "shmf.list", "shmf", 0, "" },
	{ "shmf.info", "shmf", 1, "key" },
	{ "shmf.drop", "shmf", 1, "key" },
	{ "shmf.snapshot", "shmf", 1, "key path:string" },
	{ "shmf.swap", "shmf", 1, "key path:string [RESHAPE]" },
	{ "shmf.restore", "shmf", 1, "key path:string" },
	{ "shmf.rotate", "shmf", 1, "key" },
	{ "shmf.replication", "shmf", 0, "[filter:string]" },
	{ "bf.scandump", "bf", 1, "key iterator:integer" },
	{ "bf.loadchunk", "bf", 1, "key iterator:integer data:string" },
	{ "cf.scandump", "cf", 1, "key iterator:integer" },
	{ "cf.loadchunk", "cf", 1, "key iterator:integer data:string" },
	{ "shmf.merge", "shmf", 1, "key path:string" },
	{ "shmf.chmod", "shmf", 1, "key mode:string" },
	{ "shmf.resize", "shmf", 1, "key capacity:integer [error_rate:double]" },
	{ "shmf.reload", "server", 0, "" },
};

const struct verb_doc *verb_doc_find(const char *name)
{
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
		if (strcmp(docs[i].name, name) == 0)
			return &docs[i];
	return NULL;
}

/* One word of the syntax, with what brackets and dots around it said. */
struct word {
	char text[64];
	int optional, multiple, open, close;
};

/* The next word from *p: 1, or 0 at the end. */
static int next_word(const char **p, struct word *w)
{
	while (**p == ' ')
		(*p)++;
	if (**p == '\0')
		return 0;
	memset(w, 0, sizeof(*w));
	if (**p == '[') {
		w->open = 1;
		(*p)++;
	}
	size_t n = strcspn(*p, " ]");
	snprintf(w->text, sizeof(w->text), "%.*s", (int)n, *p);
	*p += n;
	if (**p == ']') {
		w->close = 1;
		(*p)++;
	}
	size_t len = strlen(w->text);
	if (len > 3 && strcmp(w->text + len - 3, "...") == 0) {
		w->multiple = 1;
		w->text[len - 3] = '\0';
	}
	return 1;
}

/* @p t in lower case, '|' as '-' (a oneof's name). */
static void lower_name(const char *t, char *out, size_t len)
{
	size_t i = 0;
	for (; t[i] != '\0' && i + 1 < len; i++)
		out[i] = t[i] == '|' ? '-' : (char)tolower((unsigned char)t[i]);
	out[i] = '\0';
}

static int is_token(const char *t)
{
	return t[0] >= 'A' && t[0] <= 'Z';
}

/* One argument: a map of name, type, [token], [flags]. */
static void arg_reply(struct reply *out, const char *name, const char *type, const char *token, int optional,
		      int multiple)
{
	reply_map(out, (size_t)(2 + (token != NULL) + (optional || multiple)));
	reply_bulk_str(out, "name");
	reply_bulk_str(out, name);
	reply_bulk_str(out, "type");
	reply_bulk_str(out, type);
	if (token != NULL) {
		reply_bulk_str(out, "token");
		reply_bulk_str(out, token);
	}
	if (optional || multiple) {
		reply_bulk_str(out, "flags");
		reply_set(out, (size_t)(optional + multiple));
		if (optional)
			reply_status(out, "optional");
		if (multiple)
			reply_status(out, "multiple");
	}
}

/* A "name:type" word: its name and type ("key" alone is a key). */
static void split(const char *text, char *name, size_t nlen, const char **type)
{
	const char *colon = strchr(text, ':');
	snprintf(name, nlen, "%.*s", colon ? (int)(colon - text) : (int)strlen(text), text);
	*type = colon ? colon + 1 : strcmp(text, "key") == 0 ? "key" : "string";
}

/* One entry of the syntax (a word, or a bracketed group): replied. */
static void entry_reply(struct reply *out, const char **p, const struct word *w)
{
	char name[64], lower[64];
	const char *type;
	struct word v;
	lower_name(w->text, lower, sizeof(lower));
	if (strchr(w->text, '|') != NULL) { /* a|b|c: one of the tokens */
		arg_reply(out, lower, "oneof", NULL, w->open, 0);
	} else if (w->open && !w->close && is_token(w->text) && next_word(p, &v)) {
		split(v.text, name, sizeof(name), &type); /* [TOKEN name:type] */
		arg_reply(out, name, type, w->text, 1, v.multiple);
	} else if (is_token(w->text)) {
		arg_reply(out, lower, "pure-token", w->text, w->open, 0);
	} else {
		split(w->text, name, sizeof(name), &type);
		arg_reply(out, name, type, NULL, w->open, w->multiple);
	}
}

static size_t count_entries(const char *args)
{
	size_t n = 0;
	struct word w, v;
	while (next_word(&args, &w)) {
		if (w.open && !w.close && is_token(w.text) && strchr(w.text, '|') == NULL)
			next_word(&args, &v);
		n++;
	}
	return n;
}

void verb_doc_reply(struct reply *out, const struct verb *v)
{
	const struct verb_doc *d = verb_doc_find(v->name);
	const char *args = d != NULL ? d->args : "";
	reply_map(out, 4);
	reply_bulk_str(out, "summary");
	reply_bulk_str(out, v->summary);
	reply_bulk_str(out, "since");
	reply_bulk_str(out, "1.0.0");
	reply_bulk_str(out, "group");
	reply_bulk_str(out, d != NULL && strchr(v->name, '.') == NULL ? d->group : "module");
	reply_bulk_str(out, "arguments");
	reply_array(out, count_entries(args));
	struct word w;
	while (next_word(&args, &w))
		entry_reply(out, &args, &w);
}
