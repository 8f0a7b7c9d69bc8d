/*
 * roles.h - the role of a connection (roles-config.h says who has which):
 * the peer's identity read at accept, AUTH over TCP, the connection's role
 * and its role on one filter, and the data file's modes against the peer.
 * What the verbs then allow is verbs/allow.h.
 *
 * Single-threaded, like the registry: called from the server loop only.
 */
#ifndef SHMD_ROLES_H
#define SHMD_ROLES_H

#include <stddef.h>
#include <sys/stat.h>

#include "shmd/config/roles-config.h"

struct session;
struct quota_owner;

/** Read a unix peer's uid, gid and supplementary groups into @p s (SO_PEERCRED, SO_PEERGROUPS). 0 or -errno. */
int roles_peer_read(struct session *s, int fd);

/**
 * Check AUTH [@p user] @p pass over TCP against requirepass (the user
 * "default") and the [user NAME] sections. @return the role, with the user
 * named in s->user, or ROLE_NONE (wrong user or password).
 */
int roles_authenticate(struct session *s, const char *user, const char *pass, size_t passlen);

/**
 * The role of session @p s on filter @p filter: the connection's, but for
 * a TCP user limited to other filters (none), and for a filter that names
 * its writers (exactly those write it).
 */
int roles_filter_role(const struct session *s, const char *filter);

/** The role of the connection (TCP: of its user, or without passwords [tcp]
 * unauthenticated_role; unix: of its peer's uid and groups). */
int roles_connection(const struct session *s);

/** "uid 1001 (alice)", or "user alice" over TCP, for messages. */
void roles_describe(const struct session *s, char *buf, size_t len);

/** Who creates a filter over session @p s: 1 with a writer (a unix uid,
 * or a TCP user) in @p o, whose quotas then bind the filter for its whole
 * life (quotas.h); 0 for an admin, whom no quota binds. */
int roles_creator(const struct session *s, struct quota_owner *o);

/** Whether the connection's role may create filters at all (admin, or a
 * writer with writer_create = yes), quotas aside; replies nothing. */
int roles_role_creates(const struct session *s);

/** Whether uid/groups of session @p s may read (@p write 0) or write the file @p st, as the kernel judges modes. */
int roles_file_allows(const struct session *s, const struct stat *st, int write);

#endif
