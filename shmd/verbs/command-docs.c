/*
 * command-docs.c - COMMAND DOCS' entry of a verb, its arguments parsed
 * from the syntax its row of the table gives (see command-docs.h). The BF
 * and CF verbs' arguments are RedisBloom's, with shmd's additions (MODE,
 * WINDOW, ...).
 *
 * The entry has the shape Redis documents for COMMAND DOCS, because
 * redis-cli 7 reads every entry at start to build its help and hints, and
 * trusts it: a oneof or block without its nested "arguments" array, or an
 * argument without a type, crashes it (issue 27). The syntax is parsed
 * into a tree first, then replied, so that every count in the reply is
 * known before its elements are written.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "shmd/verbs/command-docs.h"

/* Arguments and nested arguments of one verb, and how deep brackets nest. */
#define DOC_ARGS  48
#define DOC_DEPTH 4

/* One argument of the tree. */
struct doc_arg {
	char name[64];
	char token[32];   /* "" for none */
	const char *type; /* one of Redis' argument types */
	int optional, multiple, multiple_token;
	int child; /* first nested argument of a oneof or block; -1 none */
	int next;  /* next sibling; -1 none */
};

struct doc {
	struct doc_arg a[DOC_ARGS];
	int n;
	int first; /* first top-level argument; -1 none */
	int err;   /* the syntax is malformed or too long: the tree holds what parsed */
};

/* The syntax, a word or bracket at a time. */
struct lexer {
	const char *p;
	char word[64];
	int multiple; /* the word or ']' was followed by "..." */
};

enum { LEX_END, LEX_OPEN, LEX_CLOSE, LEX_WORD };

static const char *const value_types[] = { "string", "integer", "double", "key", "pattern", "unix-time" };

static int lex(struct lexer *l, struct doc *d)
{
	while (*l->p == ' ')
		l->p++;
	l->multiple = 0;
	l->word[0] = '\0';
	if (*l->p == '\0')
		return LEX_END;
	if (*l->p == '[') {
		l->p++;
		return LEX_OPEN;
	}
	int kind = LEX_CLOSE;
	if (*l->p == ']') {
		l->p++;
	} else {
		size_t n = strcspn(l->p, " []");
		if (n >= sizeof(l->word))
			d->err = 1;
		snprintf(l->word, sizeof(l->word), "%.*s", (int)n, l->p);
		l->p += n;
		kind = LEX_WORD;
	}
	size_t len = strlen(l->word);
	if (len >= 3 && strcmp(l->word + len - 3, "...") == 0) {
		l->word[len - 3] = '\0';
		l->multiple = 1;
	} else if (kind == LEX_CLOSE && strncmp(l->p, "...", 3) == 0) {
		l->p += 3;
		l->multiple = 1;
	}
	return kind;
}

static int new_arg(struct doc *d, const char *type)
{
	if (d->n == DOC_ARGS) {
		d->err = 1;
		return -1;
	}
	struct doc_arg *a = &d->a[d->n];
	memset(a, 0, sizeof(*a));
	a->type = type;
	a->child = a->next = -1;
	return d->n++;
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

static int is_value(const struct doc_arg *a)
{
	for (size_t i = 0; i < sizeof(value_types) / sizeof(value_types[0]); i++)
		if (a->type == value_types[i])
			return 1;
	return 0;
}

/* A token alone: a pure-token named after it. */
static int pure_token(struct doc *d, const char *t, size_t len)
{
	int i = new_arg(d, "pure-token");
	if (i < 0)
		return -1;
	snprintf(d->a[i].token, sizeof(d->a[i].token), "%.*s", (int)len, t);
	lower_name(d->a[i].token, d->a[i].name, sizeof(d->a[i].name));
	if (len == 0 || len >= sizeof(d->a[i].token) || !is_token(d->a[i].token))
		d->err = 1;
	return i;
}

/* A|B|C: a oneof whose alternatives are pure-tokens. */
static int one_of(struct doc *d, const char *w)
{
	int i = new_arg(d, "oneof"), last = -1;
	if (i < 0)
		return -1;
	lower_name(w, d->a[i].name, sizeof(d->a[i].name));
	for (const char *p = w;; p++) {
		size_t n = strcspn(p, "|");
		int t = pure_token(d, p, n);
		if (t < 0)
			return i;
		if (last < 0)
			d->a[i].child = t;
		else
			d->a[last].next = t;
		last = t;
		p += n;
		if (*p == '\0')
			return i;
	}
}

/* One word: "name:type" ("key" alone is a key, a name alone a string), a
 * TOKEN or a oneof. */
static int atom(struct doc *d, const char *w, int multiple)
{
	int i;
	if (strchr(w, '|') != NULL) {
		i = one_of(d, w);
	} else if (is_token(w)) {
		i = pure_token(d, w, strlen(w));
	} else {
		const char *colon = strchr(w, ':');
		const char *type = colon ? colon + 1 : strcmp(w, "key") == 0 ? "key" : "string";
		i = new_arg(d, NULL);
		if (i < 0)
			return -1;
		for (size_t t = 0; t < sizeof(value_types) / sizeof(value_types[0]); t++)
			if (strcmp(type, value_types[t]) == 0)
				d->a[i].type = value_types[t];
		if (d->a[i].type == NULL) {
			d->a[i].type = "string";
			d->err = 1;
		}
		snprintf(d->a[i].name, sizeof(d->a[i].name), "%.*s", colon ? (int)(colon - w) : (int)strlen(w), w);
		if (d->a[i].name[0] == '\0')
			d->err = 1;
	}
	if (i >= 0)
		d->a[i].multiple = multiple;
	return i;
}

/* A bracketed group of @p n entries from @p first: the entry itself if it
 * is alone; "[TOKEN name:type]" the value introduced by its token; "[TOKEN
 * a b ...]" a block introduced by the token; else a block of the entries,
 * named after them. The caller marks it optional. */
static int group(struct doc *d, int first, int n)
{
	if (n == 0 || first < 0) {
		d->err = 1;
		return -1;
	}
	if (n == 1)
		return first;
	struct doc_arg *head = &d->a[first];
	int second = head->next;
	if (strcmp(head->type, "pure-token") == 0 && !head->optional && !head->multiple) {
		if (n == 2 && is_value(&d->a[second]) && d->a[second].token[0] == '\0' && !d->a[second].optional) {
			memcpy(d->a[second].token, head->token, sizeof(head->token));
			return second;
		}
		head->type = "block";
		head->child = second;
		head->next = -1;
		return first;
	}
	int b = new_arg(d, "block");
	if (b < 0)
		return -1;
	d->a[b].child = first;
	char name[sizeof(d->a[b].name)] = "";
	for (int i = first; i >= 0; i = d->a[i].next) {
		size_t len = strlen(name);
		snprintf(name + len, sizeof(name) - len, "%s%s", i == first ? "" : "_", d->a[i].name);
	}
	memcpy(d->a[b].name, name, sizeof(name));
	return b;
}

/* The entries up to the ']' that closes a group (depth > 0) or the end of
 * the syntax: the first, the rest linked by next; their number in *count. */
static int parse_list(struct doc *d, struct lexer *l, int depth, int *count)
{
	int first = -1, last = -1;
	*count = 0;
	for (;;) {
		int kind = lex(l, d), i;
		if (kind == LEX_END || kind == LEX_CLOSE) {
			if ((kind == LEX_END) != (depth == 0))
				d->err = 1;
			return first;
		}
		if (kind == LEX_OPEN) {
			int n;
			if (depth == DOC_DEPTH) {
				d->err = 1;
				return first;
			}
			int list = parse_list(d, l, depth + 1, &n);
			int repeated = l->multiple; /* the "..." after its ']' */
			if ((i = group(d, list, n)) >= 0) {
				d->a[i].optional = 1;
				if (repeated) {
					d->a[i].multiple = 1;
					d->a[i].multiple_token = d->a[i].token[0] != '\0';
				}
			}
		} else {
			i = atom(d, l->word, l->multiple);
		}
		if (i < 0)
			return first;
		if (last < 0)
			first = i;
		else
			d->a[last].next = i;
		last = i;
		++*count;
	}
}

static void doc_parse(struct doc *d, const char *syntax)
{
	struct lexer l = { .p = syntax };
	int n;
	d->n = 0;
	d->err = 0;
	d->first = parse_list(d, &l, 0, &n);
}

/* The arguments from @p i on, each a map in the order Redis replies its
 * fields: name, type, token, flags, and a oneof's or block's arguments. */
static void args_reply(struct reply *out, const struct doc *d, int i)
{
	size_t n = 0;
	for (int j = i; j >= 0; j = d->a[j].next)
		n++;
	reply_array(out, n);
	for (; i >= 0; i = d->a[i].next) {
		const struct doc_arg *a = &d->a[i];
		int nflags = a->optional + a->multiple + a->multiple_token;
		int nested = strcmp(a->type, "oneof") == 0 || strcmp(a->type, "block") == 0;
		reply_map(out, (size_t)(2 + (a->token[0] != '\0') + (nflags > 0) + nested));
		reply_bulk_str(out, "name");
		reply_bulk_str(out, a->name);
		reply_bulk_str(out, "type");
		reply_bulk_str(out, a->type);
		if (a->token[0] != '\0') {
			reply_bulk_str(out, "token");
			reply_bulk_str(out, a->token);
		}
		if (nflags > 0) {
			reply_bulk_str(out, "flags");
			reply_set(out, (size_t)nflags);
			if (a->optional)
				reply_status(out, "optional");
			if (a->multiple)
				reply_status(out, "multiple");
			if (a->multiple_token)
				reply_status(out, "multiple_token");
		}
		if (nested) {
			reply_bulk_str(out, "arguments");
			args_reply(out, d, a->child);
		}
	}
}

void command_docs_reply(struct reply *out, const struct verb *v, size_t extra)
{
	static struct doc d; /* single-threaded, like the verb table's readers */
	const char *dot = strchr(v->name, '.');
	int module = dot != NULL;
	doc_parse(&d, v->syntax);
	reply_map(out, 4 + (size_t)module + extra);
	reply_bulk_str(out, "summary");
	reply_bulk_str(out, v->summary);
	reply_bulk_str(out, "since");
	reply_bulk_str(out, "1.0.0");
	reply_bulk_str(out, "group");
	reply_bulk_str(out, module ? "module" : v->group);
	if (module) { /* the family its name starts with: bf, cf or shmf */
		reply_bulk_str(out, "module");
		reply_bulk(out, v->name, (size_t)(dot - v->name));
	}
	reply_bulk_str(out, "arguments");
	args_reply(out, &d, d.first);
}

static void list_bounds(const struct doc *d, int i, int *lo, int *hi);

/* The fewest and most words argument @p i takes; *hi -1: no limit. */
static void arg_bounds(const struct doc *d, int i, int *lo, int *hi)
{
	const struct doc_arg *a = &d->a[i];
	int l = 1, h = 1;
	if (strcmp(a->type, "block") == 0) {
		list_bounds(d, a->child, &l, &h);
	} else if (strcmp(a->type, "oneof") == 0) {
		for (int c = a->child; c >= 0; c = d->a[c].next) {
			int cl, ch;
			arg_bounds(d, c, &cl, &ch);
			if (c == a->child || cl < l)
				l = cl;
			if (c == a->child || ch < 0 || (h >= 0 && ch > h))
				h = ch;
		}
	}
	if (a->token[0] != '\0' && strcmp(a->type, "pure-token") != 0) {
		l++;
		h = h < 0 ? h : h + 1;
	}
	*lo = a->optional ? 0 : l;
	*hi = a->multiple ? -1 : h;
}

/* The fewest and most words the arguments from @p i on take; *hi -1: no
 * limit. */
static void list_bounds(const struct doc *d, int i, int *lo, int *hi)
{
	*lo = *hi = 0;
	for (; i >= 0; i = d->a[i].next) {
		int l, h;
		arg_bounds(d, i, &l, &h);
		*lo += l;
		*hi = *hi < 0 || h < 0 ? -1 : *hi + h;
	}
}

int command_docs_arity(const struct verb *v, int *min_args, int *max_args)
{
	static struct doc d;
	int lo, hi;
	doc_parse(&d, v->syntax);
	list_bounds(&d, d.first, &lo, &hi);
	/* The verb's words: a subcommand's row ("client|kill") counts two. */
	int words = strchr(v->name, '|') != NULL ? 2 : 1;
	*min_args = words + lo;
	*max_args = hi < 0 ? -1 : words + hi;
	return d.err ? -1 : 0;
}
