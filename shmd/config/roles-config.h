/*
 * roles-config.h - who may do what on the control socket (docs/design.md,
 * "Roles"). Every connection has a role, and every verb needs one (the
 * verb table's role column, verbs.h):
 *
 *   admin  - everything: create, drop, swap, restore, snapshot, rotate,
 *            chmod, resize, loads and merges. On the unix socket: root,
 *            shmd's own uid, and members of [roles] admin_group; over TCP:
 *            the user "default" (requirepass) and [user NAME] role = admin.
 *            A TCP listener without any password gives every client the
 *            role [tcp] unauthenticated_role names, and is refused at
 *            start unless it names one.
 *   writer - the data verbs (BF.ADD, CF.DEL, ...) and what a reader may.
 *            Unix: members of the client group ([instance] group =), or for
 *            a filter whose section says `writers = alice, @team`, exactly
 *            the users and groups named there. TCP: role = writer.
 *   reader - checks and INFO. Anyone else who can connect.
 *
 * Supplementary groups count. They are the peer process's own, read from
 * the socket with SO_PEERGROUPS at accept (exact for the process that
 * connected, taken by the kernel at connect(), no race with a pid that is
 * reused and no NSS lookup in the event loop); on a kernel without it,
 * getgrouplist() of the uid's passwd entry.
 *
 * On the unix socket a verb on a filter never does more than the peer's
 * uid and groups may do to that filter's current data file: the data
 * verbs need write permission on it, the reading verbs read permission,
 * judged from its owner, group and mode as the kernel would. Admins are
 * exempt (they own the files). A refusal is one -NOPERM reply naming the
 * role the connection has and the one the verb needs (or the file and
 * its mode), and a log line.
 *
 * Creating a filter (BF.RESERVE, CF.RESERVE, an INSERT that creates) needs
 * admin, or a writer when [roles] writer_create = yes, within the quotas
 * (writer_max_filter_bytes, writer_max_total_bytes, writer_max_filters),
 * checked before any memory is taken. The byte quotas then bind the
 * writer's filter for its whole life (quotas.h).
 *
 * Single-threaded, like the registry: called from the server loop only.
 */
#ifndef SHMD_ROLES_CONFIG_H
#define SHMD_ROLES_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <shmf.h>

enum role { ROLE_NONE = 0, ROLE_READER = 1, ROLE_WRITER = 2, ROLE_ADMIN = 3 };

#define ROLES_USERS_MAX        64 /* [user NAME] sections */
#define ROLES_USER_NAME_MAX    63
#define ROLES_PASSWORD_MAX     512
#define ROLES_USER_FILTERS_MAX 32 /* names in a user's filters = */
#define ROLES_WRITERS_MAX      16 /* names in a filter's writers = */
#define ROLES_FILTERS_MAX      256
#define ROLES_PEER_GROUPS_MAX  256 /* supplementary groups of a peer that count */

/* A user or a group named in a filter's writers = ("alice", "@team"). */
struct roles_principal {
	int is_group;
	uint32_t id; /* uid or gid, resolved when the configuration is read */
};

struct roles_writers {
	char filter[SHMF_NAME_MAX + 1];
	unsigned n; /* 0: the filter names none; the client group writes it */
	struct roles_principal who[ROLES_WRITERS_MAX];
};

/* [user NAME]: a TCP user (AUTH NAME password). */
struct roles_user {
	char name[ROLES_USER_NAME_MAX + 1];
	char password[ROLES_PASSWORD_MAX + 1];
	int role;          /* ROLE_READER, ROLE_WRITER or ROLE_ADMIN */
	unsigned nfilters; /* 0: every filter */
	char filters[ROLES_USER_FILTERS_MAX][SHMF_NAME_MAX + 1];
};

struct roles_config {
	gid_t client_gid;                 /* [instance] group: its members are writers; (gid_t)-1 none */
	gid_t admin_gid;                  /* [roles] admin_group: its members are admins; (gid_t)-1 none */
	int writer_create;                /* [roles] writer_create: writers may create filters */
	uint64_t writer_max_filter_bytes; /* a writer's new filter, all its generations: at most (0: no limit) */
	uint64_t writer_max_total_bytes;  /* the instance's filters with a writer's new one: at most (0: none) */
	uint64_t writer_max_filters;      /* filters in the instance with a writer's new one: at most (0: none) */
	/* [tcp] unauthenticated_role: the role of a TCP client on a listener
	 * without requirepass and [user NAME] sections; ROLE_NONE when not
	 * said (config.c then refuses such a listener at start). */
	int tcp_unauthenticated_role;
	unsigned nusers;
	struct roles_user users[ROLES_USERS_MAX];
	unsigned nwriters;
	struct roles_writers writers[ROLES_FILTERS_MAX];
};

/** Group @p v, a name or a gid, into @p out. @return 0 or SHMF_E_NOTFOUND. */
int roles_parse_gid(const char *v, gid_t *out);

/** "admin", "writer", "reader" or "none". */
const char *role_name(int role);

/** ROLE_READER, ROLE_WRITER or ROLE_ADMIN for "reader", "writer" or "admin"; ROLE_NONE otherwise. */
int role_parse(const char *name);

/** Defaults: no admin group, writers may not create, no quotas, no users. */
void roles_config_defaults(struct roles_config *rc);

/**
 * A section header of the configuration: [roles] and [user NAME] are ours
 * (1; a user is declared), others not (0). A bad or repeated user is
 * SHMF_E_INVAL with @p msg saying why.
 */
int roles_config_section(struct roles_config *rc, const char *section, char *msg, size_t msglen);

/**
 * One key: of [roles], of a [user NAME], or `writers` of [filter NAME]
 * (@p section as written). @return 1 taken, 0 not ours, SHMF_E_INVAL with
 * @p msg naming what was wrong.
 */
int roles_config_key(struct roles_config *rc, const char *section, const char *name, const char *value, char *msg,
		     size_t msglen);

/** Once the whole text is read: every user has a password and a role;
 * the client group is noted. 0 or SHMF_E_INVAL with @p msg. */
int roles_config_complete(struct roles_config *rc, gid_t client_gid, char *msg, size_t msglen);

#endif
