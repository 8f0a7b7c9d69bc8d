/*
 * verb-docs.h - what COMMAND DOCS and COMMAND INFO say of each verb
 * beyond its row of the verb table (verbs.c): its arguments, in a short
 * syntax, its group and its last key. A table keyed by verb name beside
 * the verb table; a test checks that every verb has its entry.
 *
 * The argument syntax, one word each, separated by spaces:
 *   name:type     an argument (type: key, string, integer, double, pattern,
 *                 unix-time; name "key" alone is type key)
 *   WORD          a fixed token (upper case)
 *   [ ... ]       optional; "[TOKEN name:type]" is one optional argument
 *                 introduced by TOKEN
 *   a|b|c         one of the tokens
 *   name:type...  repeated
 */
#ifndef SHMD_VERB_DOCS_H
#define SHMD_VERB_DOCS_H

#include "shmd/resp/reply.h"
#include "shmd/verbs/verbs.h"

struct verb_doc {
	const char *name;  /* the verb, as in its row */
	const char *group; /* Redis' groups: bf, cf, generic, connection, transactions, server, shmf */
	int last_key;      /* COMMAND's last key: 0 none, -1 every argument from the first key */
	const char *args;  /* the syntax above, the verb itself excluded */
};

/** The docs of verb @p name, or NULL. */
const struct verb_doc *verb_doc_find(const char *name);

/** COMMAND DOCS' entry for @p v: a map of summary, since, group and arguments. */
void verb_doc_reply(struct reply *out, const struct verb *v);

#endif
