/*
 * server.h - the control socket: a unix stream socket speaking RESP (the
 * Redis protocol). See docs/protocol.md for the verbs and limits.
 */
#ifndef SHMD_SERVER_H
#define SHMD_SERVER_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "registry.h"

#define SERVER_MAX_CLIENTS 1024

/**
 * Create the listening socket at @p path with @p mode and group @p gid
 * ((gid_t)-1 to keep ours). A stale socket file is replaced (the pidfile
 * lock guarantees no live daemon owns it); any other kind of file there is
 * refused.
 * @return the listening descriptor, or -errno with a sentence in @p err.
 */
int server_listen(const char *path, mode_t mode, gid_t gid, char *err, size_t errlen);

/**
 * Serve requests on @p listen_fd until *stop becomes non-zero, then close
 * every connection and the listening socket, and unlink @p path.
 * Single-threaded poll loop; a slow or hostile client stalls only itself.
 * @p tick (if not NULL) runs between polls, at least once a second: the
 * daemon's timed work (periodic.h).
 * A client whose replies pile up unread past 64 MiB is not read from until
 * it reads them.
 * @return 0, or -ENOMEM if the client table cannot be allocated (the
 *         listening socket is then closed and unlinked too).
 */
int server_run(struct registry *reg, int listen_fd, const char *path, volatile sig_atomic_t *stop,
	       void (*tick)(struct registry *reg, void *arg), void *tick_arg);

#endif
