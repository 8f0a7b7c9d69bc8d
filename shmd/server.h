/*
 * server.h - the control socket: a unix stream socket speaking RESP (the
 * Redis protocol), requests parsed with hiredis' reader. See
 * docs/protocol.md for the verbs.
 */
#ifndef SHMD_SERVER_H
#define SHMD_SERVER_H

#include <signal.h>
#include <sys/types.h>

#include "registry.h"

/**
 * Listen on @p path (replacing a stale socket file; the pidfile lock
 * guarantees no live daemon owns it), with @p mode and group @p gid
 * ((gid_t)-1 to keep ours), and serve requests until *stop becomes
 * non-zero. Single-threaded poll loop; a slow or hostile client can stall
 * only itself.
 * @return 0 on a clean stop, -errno if the socket could not be set up
 *         (with a log line naming the path and the cause).
 */
int server_run(struct registry *reg, const char *path, mode_t mode, gid_t gid, volatile sig_atomic_t *stop);

#endif
