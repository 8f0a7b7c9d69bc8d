/*
 * session.h - one client connection's state, and the verbs that act on
 * the connection rather than on filters: AUTH, HELLO, CLIENT, SELECT,
 * QUIT, RESET, ECHO and PING, and COMMAND and INFO (verbs-compat.c),
 * which Redis client libraries send when they connect. dispatch_request()
 * (verbs.h) runs every request, connection verb or filter verb, as the
 * verb table says.
 *
 * Who may run what: every connection has a role (roles.h): on the unix
 * socket from its peer's uid and groups, over TCP from the user it
 * authenticated as. A TCP client must first AUTH when the [tcp] section
 * sets requirepass or [user NAME] sections exist (until then every verb
 * but those the table marks VERB_NOAUTH - AUTH, HELLO with AUTH, QUIT and
 * RESET - answers -NOAUTH), and may never run the verbs that name files
 * on the daemon's host (VERB_NAMES_FILE: SHMF.SNAPSHOT, SHMF.SWAP,
 * SHMF.RESTORE, SHMF.MERGE): the daemon cannot tell whose files a network
 * peer may touch. AUTH on the unix socket changes no role: there the
 * peer's identity decides.
 *
 * A connection speaks RESP2 until HELLO 3 switches it to RESP3 (HELLO 2
 * or RESET switch it back); reply.h turns each RESP3 type into RESP2's.
 *
 * Single-threaded, like the registry: called from the server loop only.
 */
#ifndef SHMD_SESSION_H
#define SHMD_SESSION_H

#include <stdint.h>

#include "shmd/base/fscred.h"
#include "shmd/config/config.h"
#include "shmd/config/defaults.h"
#include "shmd/config/roles-config.h"
#include "shmd/store/registry.h"

/* The Redis version shmd answers to HELLO and INFO: the command set and
 * replies of that Redis (RESP2, AUTH with a user name, HELLO, CLIENT
 * SETINFO accepted) that client libraries look for. */
#define COMPAT_REDIS_VERSION "7.0.0"

enum { SESSION_UNIX, SESSION_TCP };

/* A connection's name (CLIENT SETNAME): Redis bounds one only by its
 * characters; a bound in bytes keeps a table of connections' names small
 * (1,024 of them: 4 MiB at most) and is far above what names are (a host,
 * a pid, a pool: tens of bytes). The name counts in the connection's
 * memory (maxmemory_clients). */
#define CLIENT_NAME_MAX 4096

struct session;
struct slowlog;

/* A row of the verb table as INFO commandstats counts it (Redis' fields). */
struct verb_stats {
	uint64_t calls;    /* its handler ran */
	uint64_t ticks;    /* in its handler, in all, in clock.h's ticks (a job's time on the file worker is
			    * not counted) */
	uint64_t rejected; /* refused before its handler: arity, TCP, AUTH, the role, inside MULTI */
	uint64_t failed;   /* its handler answered an error */
};

/* Why a connection was turned away (server_stats' rejected_by), as the
 * metrics page names the reasons. */
enum reject_reason {
	REJECT_MAXCLIENTS, /* its listener's maxclients */
	REJECT_PER_PEER,   /* maxclients_per_user (unix) or maxclients_per_addr (TCP) */
	REJECT_FDS,        /* shmd was out of file descriptors */
	REJECT_MEMORY,     /* out of memory for it */
	REJECT_REASONS
};

/* What INFO stats and commandstats count, and CONFIG RESETSTAT zeroes:
 * the server loop counts connections and requests, the dispatcher each
 * row's calls (dispatch.c). */
struct server_stats {
	uint64_t connections_received;
	uint64_t commands_processed;
	uint64_t rejected_connections;
	uint64_t rejected_by[REJECT_REASONS]; /* rejected_connections by reason */
	uint64_t evicted_clients;             /* connections closed for maxmemory_clients */
	struct verb_stats *verbs;             /* one per row of the verb table, by its place; NULL: not counted */
	size_t nverbs;
};

/* One connection as CLIENT LIST shows it: its session, and what the
 * server loop knows of it (server.c). */
struct client_view {
	const struct session *sess;
	int fd;
	uint64_t age, idle; /* seconds since it connected, since it last read or wrote a byte */
	size_t qbuf;        /* its request being read and the last one parsed */
	size_t obl, omem;   /* its unsent replies; the memory they hold */
	size_t tot_mem;     /* all it holds (maxmemory_clients counts it) */
	const char *events; /* "r", "w", "rw" or "": what the loop waits for from it */
};

/* The server loop's connections, for CLIENT LIST and CLIENT KILL (server.c). */
struct server_clients {
	void *loop;
	/** Call @p fn for each admitted connection that is open, newest first. */
	void (*each)(void *loop, void (*fn)(const struct client_view *cv, void *arg), void *arg);
	/** Close connection @p id (never the caller's own), logging that @p by did: 1, or 0 if none is open. */
	int (*kill)(void *loop, uint64_t id, const struct session *by);
};

/* The server as the compatibility and operators' verbs describe it
 * (HELLO, INFO, CONFIG GET, CLIENT LIST, SLOWLOG). Owned and updated by
 * the server loop; what the dispatcher and CONFIG RESETSTAT change is
 * behind the pointers stats and slowlog. */
struct server_view {
	uint64_t started;                 /* time() when the loop started */
	const char *requirepass;          /* TCP clients must AUTH with it; "" none */
	const struct roles_config *roles; /* NULL: the defaults (roles.h): no admin group, no users */
	const char *tcp_name;             /* "127.0.0.1:6379", or NULL without a listener */
	const char *tcp_bind;             /* [tcp] bind, or NULL without a listener */
	int tcp_port;                     /* 0 without a listener */
	const char *unix_path;            /* the unix socket, or NULL (a test's session) */
	unsigned clients[2];              /* connected now, by SESSION_UNIX / SESSION_TCP */
	unsigned maxclients[2];
	unsigned timeout[2];                      /* idle timeout in seconds, by kind; 0 never */
	const struct filter_defaults *defaults;   /* [defaults]: auto-create, FLUSHALL (never NULL once serving) */
	size_t clients_memory;                    /* bytes every connection holds now (server.c) */
	size_t maxmemory_clients;                 /* [instance] maxmemory_clients */
	const struct slowlog_config *slowlog_cfg; /* [instance] slowlog_* in force (a reload changes them);
						   * NULL: the defaults */
	struct server_stats *stats;               /* NULL: nothing counted (a test's session) */
	struct slowlog *slowlog;                  /* NULL: nothing logged */
	const struct server_clients *conns;       /* NULL: only the caller's connection is known */
};

struct session {
	uint64_t id;                    /* CLIENT ID, HELLO's id: unique while the daemon runs */
	int kind;                       /* SESSION_UNIX or SESSION_TCP */
	int authed;                     /* may run the filter verbs */
	int quit;                       /* QUIT: close once this reply is sent */
	int limits_changed;             /* AUTH or RESET changed authed: the reader's limits follow */
	char *name;                     /* CLIENT SETNAME, or NULL */
	char lib_name[64], lib_ver[32]; /* CLIENT SETINFO: longer values are refused (a library's name and
					 * version: "redis-py", "5.0.1"; Redis' own have no bound) */
	char addr[128];                 /* the peer: "127.0.0.1:51234", or the socket's path and ":0", as Redis */
	char laddr[128];                /* our end: "127.0.0.1:6379", or the socket's path and ":0" */
	const char *last_cmd;           /* the last verb run, its row's name ("client|list"); NULL none yet */
	struct fscred peer;             /* unix: SO_PEERCRED; tcp: nobody (never used: file verbs are refused) */
	int ngroups;                    /* unix: the peer's supplementary groups (roles_peer_read) */
	gid_t groups[ROLES_PEER_GROUPS_MAX];
	char user[ROLES_USER_NAME_MAX + 1]; /* tcp: the user AUTH named ("default": requirepass), "" none */
	const struct server_view *srv;
	int proto;                 /* 2 or 3: HELLO's protocol, that replies are written in */
	int in_multi;              /* between MULTI and EXEC or DISCARD (verbs-multi.c) */
	int multi_dirty;           /* a request was refused while queueing: EXEC aborts */
	int in_exec;               /* EXEC runs its queue: nothing may park or wait (keyjob.h) */
	struct multi_queue *multi; /* the queued requests (queue.h), or NULL */
};

/** A new connection's session: authenticated unless it is TCP and a password is set. */
void session_init(struct session *s, uint64_t id, int kind, const struct server_view *srv);

/** Free what the session holds (its name, its transaction). */
void session_free(struct session *s);

/** Forget the transaction, if any (EXEC, DISCARD, RESET, the connection's end). */
void session_multi_end(struct session *s);

/**
 * The [defaults] the server of session @p s (NULL: none, a test's call)
 * was started with (defaults.h), or the built-in ones.
 */
const struct filter_defaults *session_defaults(const struct session *s);

/** The [roles] of the server of session @p s, or the defaults (no admin group, no users). */
const struct roles_config *session_roles(const struct session *s);

/** Whether a TCP client must AUTH: requirepass or [user NAME] sections are configured. */
int session_password_required(const struct session *s);

#endif
