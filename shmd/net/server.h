/*
 * server.h - the daemon's event loop: the control socket (a unix stream
 * socket) and the optional TCP listener, both speaking RESP (the Redis
 * protocol), served by one single-threaded epoll loop. See
 * docs/protocol.md for the verbs and limits.
 */
#ifndef SHMD_SERVER_H
#define SHMD_SERVER_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "shmd/config/config.h"
#include "shmd/config/defaults.h"
#include "shmd/store/registry.h"

/* Clients of the unix socket at once by default ([instance] maxclients);
 * the TCP listener has its own ([tcp] maxclients). */
#define SERVER_MAX_CLIENTS 1024
/* Connections turned away at a limit that are kept a moment so that they
 * read the error (see server.c); beyond this many they are closed at once. */
#define SERVER_MAX_REFUSING 64

/**
 * Create the listening socket at @p path with @p mode and group @p gid
 * ((gid_t)-1 to keep ours). A stale socket file is replaced (the pidfile
 * lock guarantees no live daemon owns it); any other kind of file there is
 * refused.
 * @return the listening descriptor, or -errno with a sentence in @p err.
 */
int server_listen(const char *path, mode_t mode, gid_t gid, char *err, size_t errlen);

struct metrics;

/* What server_run() serves. */
struct server_opts {
	int unix_fd;           /* from server_listen() */
	const char *unix_path; /* unlinked at the end */
	int tcp_fd;            /* from tcp_listen(), or -1 for none */
	const char *tcp_name;  /* its address, "127.0.0.1:6379", for the log and INFO */
	const char *tcp_bind;  /* [tcp] bind, for CONFIG GET */
	int tcp_port;
	const char *requirepass;                /* TCP clients must AUTH with it first; NULL or "": no password */
	unsigned unix_maxclients;               /* unix-socket connections at once (0: SERVER_MAX_CLIENTS) */
	unsigned unix_maxclients_per_user;      /* of them from one uid (0: no limit of its own) */
	unsigned unix_timeout;                  /* seconds without a byte before a connection is closed; 0 never */
	unsigned tcp_maxclients;                /* TCP connections at once */
	unsigned tcp_maxclients_per_addr;       /* of them from one address (connlimits.h; 0: no limit of its own) */
	unsigned tcp_timeout;                   /* as unix_timeout */
	size_t tcp_max_request;                 /* bytes in one request over TCP (at most REQUEST_MAX_BYTES) */
	size_t maxmemory_clients;               /* bytes every connection holds in all; past it the largest is
						 * closed (0: CONFIG_MAXMEMORY_CLIENTS' 256 MiB) */
	int wake_fd;                            /* readable: run tick now (the replication engine's); -1: none */
	struct metrics *metrics;                /* /metrics (metrics.h), served on the loop; NULL: none */
	const struct roles_config *roles;       /* who may do what (roles.h); NULL: the defaults */
	const struct filter_defaults *defaults; /* [defaults] (defaults.h); NULL: the built-in ones */
	const struct slowlog_config *slowlog;   /* [instance] slowlog_* in force, read for every request (a
						 * reload changes them); NULL: the defaults */
};

/**
 * Serve requests on the listeners of @p o until *stop becomes non-zero,
 * then close every connection and the listening sockets, and unlink the
 * unix socket.
 * Single-threaded epoll loop (the registry is single-threaded too); a slow
 * or hostile client, or a slow file, stalls only itself.
 * @p tick (if not NULL) runs between waits, at least once a second (and at
 * once when o->wake_fd becomes readable; tick must read it): the daemon's
 * timed work (periodic.h, replication.h).
 * A request whose file work runs on the file worker (jobs.h) parks its
 * connection until the reply; a request on a filter such a job holds waits
 * with its connection. On the way out the file worker is stopped
 * (jobs_stop()) before the connections are closed.
 * A request whose reply could take a client's unread replies past 64 MiB
 * waits (and nothing more is read from that client) until it reads them;
 * one whose reply alone could pass 64 MiB is refused. When what all
 * clients hold passes o->maxmemory_clients, the largest is closed and
 * logged. Connections past a limit of @p o (at once, per user, per
 * address; one unix slot kept for an administrator) are accepted, told
 * why and closed; one idle for its timeout is closed. A request that breaks the protocol or a limit is answered
 * with an error, after which the connection is closed (once the client
 * had the chance to read it).
 * @return 0, or -errno if the loop cannot be set up (the listening
 *         sockets are then closed and the unix socket unlinked too).
 */
int server_run(struct registry *reg, const struct server_opts *o, volatile sig_atomic_t *stop,
	       void (*tick)(struct registry *reg, void *arg), void *tick_arg);

#endif
