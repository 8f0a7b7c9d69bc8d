/*
 * allow.h - may this request run: the verb table's role column against
 * the connection's role (roles.h), on the unix socket the filter's data
 * file against the peer, and for a writer creating a filter the quotas
 * (quotas.h). A refusal is one -NOPERM reply naming the role the
 * connection has and the one the verb needs (or the file and its mode),
 * and a log line, at most 20 a second.
 *
 * Single-threaded, like the registry: called from the server loop only.
 */
#ifndef SHMD_ALLOW_H
#define SHMD_ALLOW_H

#include "shmd/verbs/verbs.h"

struct filter_spec;

/**
 * May the request in @p c run verb @p v? The row's role against the
 * connection's (for a filter: its role on that filter), then, on the unix
 * socket, the filter's data file against the peer. 1, or 0 after replying
 * -NOPERM and logging the refusal.
 */
int allow_verb(struct verb_call *c, const struct verb *v);

/**
 * May the connection of @p c create filter @p spec: an admin always; a
 * writer when writer_create = yes and within the quotas. Checked before
 * any memory is taken. 1, or 0 after replying -NOPERM and logging.
 */
int allow_create(struct verb_call *c, const struct filter_spec *spec);

#endif
