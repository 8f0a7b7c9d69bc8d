/*
 * command-docs.h - COMMAND DOCS' entry of a verb: its summary, group and
 * arguments, the arguments parsed from the syntax in its row of the verb
 * table (verb.h), one word each, separated by spaces:
 *   name:type     an argument (type: key, string, integer, double, pattern,
 *                 unix-time; name "key" alone is type key)
 *   WORD          a fixed token (upper case)
 *   [ ... ]       optional; "[TOKEN name:type]" is one optional argument
 *                 introduced by TOKEN
 *   a|b|c         one of the tokens
 *   name:type...  repeated
 */
#ifndef SHMD_COMMAND_DOCS_H
#define SHMD_COMMAND_DOCS_H

#include "shmd/resp/reply.h"
#include "shmd/verbs/verb.h"

/** COMMAND DOCS' entry for @p v: a map of summary, since, group and arguments. */
void command_docs_reply(struct reply *out, const struct verb *v);

#endif
