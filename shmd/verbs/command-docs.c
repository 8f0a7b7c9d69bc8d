/*
 * command-docs.c - COMMAND DOCS' entry of a verb, its arguments parsed
 * from the syntax its row of the table gives (see command-docs.h). The BF
 * and CF verbs' arguments are RedisBloom's, with shmd's additions (MODE,
 * WINDOW, ...).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "shmd/verbs/command-docs.h"

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

void command_docs_reply(struct reply *out, const struct verb *v)
{
	const char *args = v->syntax;
	reply_map(out, 4);
	reply_bulk_str(out, "summary");
	reply_bulk_str(out, v->summary);
	reply_bulk_str(out, "since");
	reply_bulk_str(out, "1.0.0");
	reply_bulk_str(out, "group");
	reply_bulk_str(out, strchr(v->name, '.') == NULL ? v->group : "module");
	reply_bulk_str(out, "arguments");
	reply_array(out, count_entries(args));
	struct word w;
	while (next_word(&args, &w))
		entry_reply(out, &args, &w);
}
