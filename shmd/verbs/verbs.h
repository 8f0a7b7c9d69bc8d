/*
 * verbs.h - the table of every verb shmd serves, as Redis keeps its
 * command table: one row per verb (verb.h), everything about it: its
 * arity, its flags, its first and last key, its handler, and its group,
 * argument syntax and summary for COMMAND DOCS.
 *
 * The dispatcher (dispatch.h) reads it to decide who may run a verb
 * (AUTH, TCP, the role the connection needs: allow.h) and with how many
 * arguments; COMMAND reads it to describe the verbs to client libraries;
 * the tests read it to check that every verb is described. Adding a verb
 * is adding a row and a handler.
 *
 * Single-threaded, like the registry: called from the server loop only.
 */
#ifndef SHMD_VERBS_H
#define SHMD_VERBS_H

#include <stddef.h>

#include "shmd/verbs/verb.h"

/** Row @p i of the table, or NULL past the end (COMMAND lists them in this order). */
const struct verb *verbs_at(size_t i);

/** The row of verb @p name (@p len bytes, any case), or NULL. */
const struct verb *verbs_find(const char *name, size_t len);

/** The row of @p req's verb (argv[0]), or NULL (none, or an empty request). */
const struct verb *verbs_of(const struct request *req);

#endif
