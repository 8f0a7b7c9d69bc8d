/*
 * tcp.h - the optional TCP listener ([tcp] in the configuration): its
 * socket, and the options of the connections it accepts. The protocol on
 * it is the unix socket's (docs/protocol.md), served by the same loop
 * (server.c); only who may run what differs (session.h).
 */
#ifndef SHMD_TCP_H
#define SHMD_TCP_H

#include <stddef.h>

/**
 * Listen on @p bind (an IPv4 or IPv6 literal, or a host name: its first
 * address that binds) port @p port, non-blocking, with SO_REUSEADDR so that
 * a restarted daemon binds at once.
 * @param name  set to the address bound, "127.0.0.1:6379" or "[::1]:6379"
 * @return the listening descriptor, or -errno (or -EINVAL for a name that
 *         does not resolve) with a sentence naming the address in @p err.
 */
int tcp_listen(const char *bind, int port, char *name, size_t namelen, char *err, size_t errlen);

/** 1 if listening descriptor @p fd is bound to a loopback address (127/8, ::1). */
int tcp_is_loopback(int fd);

/** Per connection: no Nagle delay (a reply goes out when written) and keepalive probes. */
void tcp_tune(int fd);

/** The peer of connection @p fd as "ip:port" ("?" if unknown). */
void tcp_peer_name(int fd, char *buf, size_t len);

/** Our end of connection @p fd as "ip:port" ("?" if unknown): CLIENT LIST's laddr. */
void tcp_local_name(int fd, char *buf, size_t len);

#endif
