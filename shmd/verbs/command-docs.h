/*
 * command-docs.h - COMMAND DOCS' entry of a verb: its summary, group and
 * arguments, the arguments parsed from the syntax in its row of the verb
 * table (verb.h), one word each, separated by spaces:
 *   name:type     an argument (type: key, string, integer, double, pattern,
 *                 unix-time; name "key" alone is type key, a name alone a
 *                 string)
 *   WORD          a fixed token (upper case): a pure-token
 *   A|B|C         one of the tokens: a oneof of pure-tokens
 *   [ ... ]       optional: one entry alone; "[TOKEN name:type]" one
 *                 argument introduced by TOKEN; "[TOKEN a b ...]" a block
 *                 introduced by TOKEN; several other entries a block.
 *                 Brackets nest.
 *   name:type...  repeated ("multiple"); "[TOKEN name:type]..." repeats
 *                 the token too ("multiple_token")
 * The reply has the shape Redis documents for COMMAND DOCS (and redis-cli
 * 7 reads at start): every argument a map of name and type (Redis' types),
 * then token and flags (optional, multiple, multiple_token) where they
 * apply; a oneof or block carries its nested "arguments".
 */
#ifndef SHMD_COMMAND_DOCS_H
#define SHMD_COMMAND_DOCS_H

#include "shmd/resp/reply.h"
#include "shmd/verbs/verb.h"

/** COMMAND DOCS' entry for @p v: a map of summary, since, group, module (a
 * module's verb, one whose name has a dot: bf, cf or shmf) and arguments,
 * sized for @p extra more fields, which the caller then appends (a verb's
 * "subcommands"). */
void command_docs_reply(struct reply *out, const struct verb *v, size_t extra);

/** The fewest and most words, the verb (and a subcommand) included, that @p v's syntax allows
 * in *min_args and *max_args (-1: no limit), for the tests that hold the
 * syntax column to the arity columns. Returns 0, or -1 if the syntax is
 * malformed (an unknown type, an unbalanced bracket, an empty group, too
 * many arguments). */
int command_docs_arity(const struct verb *v, int *min_args, int *max_args);

#endif
