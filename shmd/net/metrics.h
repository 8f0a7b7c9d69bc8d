/*
 * metrics.h - /metrics over HTTP ([metrics] listen), served by
 * libmicrohttpd inside shmd's own loop: no thread of its own (the registry
 * and the loop's counters are read on the loop's thread, as the RESP
 * verbs read them), its epoll descriptor in the loop's epoll set and
 * metrics_run() called when it is readable and on the loop's timer.
 *
 * Bounded: METRICS_MAX_CONNECTIONS at once (more wait in the listen
 * backlog, or are refused by the kernel), each closed after
 * METRICS_TIMEOUT seconds without a byte, a request of at most
 * METRICS_REQUEST_MAX bytes of headers; only GET (and HEAD) of /metrics
 * (404 for another path, 405 for another method). The page is
 * metrics-page.c's.
 */
#ifndef SHMD_METRICS_H
#define SHMD_METRICS_H

#include <stddef.h>

#include "shmd/session/session.h"
#include "shmd/store/registry.h"

#define METRICS_MAX_CONNECTIONS 16
#define METRICS_TIMEOUT         10          /* seconds */
#define METRICS_REQUEST_MAX     (16u << 10) /* bytes MHD may hold for one connection's request */

struct metrics;

/**
 * Serve /metrics on listening socket @p fd (tcp_listen()'s; taken over:
 * metrics_stop() closes it), @p name its address for the log. Call after
 * daemonising; nothing is served until metrics_attach().
 * @return the server, or NULL with a sentence in @p err (the socket is then closed).
 */
struct metrics *metrics_start(int fd, const char *name, char *err, size_t errlen);

/** What the page describes: the loop's registry and server view (both outlive the server's use of them). */
void metrics_attach(struct metrics *m, struct registry *reg, const struct server_view *v);

/** The descriptor the loop watches for readability (MHD's epoll set). */
int metrics_fd(const struct metrics *m);

/** Serve what is ready, and close timed-out connections; never waits. */
void metrics_run(struct metrics *m);

/** Close every connection and the listening socket, and free. NULL is ignored. */
void metrics_stop(struct metrics *m);

#endif
