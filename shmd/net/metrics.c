/*
 * metrics.c - /metrics through libmicrohttpd, on shmd's loop (see
 * metrics.h). MHD runs with MHD_USE_EPOLL and no thread: its epoll
 * descriptor sits in the loop's epoll set, and MHD_run() (which never
 * waits) serves what is ready. The page is built on the loop's thread,
 * the only one that may read the registry.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "common/errmsg.h"
#include "shmd/base/log.h"
#include "shmd/net/metrics.h"
#include "shmd/verbs/metrics-page.h"

/* MHD's own messages (a connection refused at the limit, a timeout) go to
 * the log at most once every this many seconds: a flood of connections
 * must not flood the log. */
#define METRICS_LOG_EVERY 10

struct metrics {
	struct MHD_Daemon *d;
	int listen_fd;
	char name[128];
	struct registry *reg;
	const struct server_view *view;
	time_t logged;       /* when MHD's last message was logged */
	unsigned suppressed; /* its messages not logged since */
};

static void mhd_log(void *arg, const char *fmt, va_list ap)
{
	struct metrics *m = arg;
	time_t now = time(NULL);
	if (m->logged != 0 && now - m->logged < METRICS_LOG_EVERY) {
		m->suppressed++;
		return;
	}
	char line[512];
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\r\n")] = '\0';
	log_msg(LOG_WARNING, "metrics %s: %s%s", m->name, line,
		m->suppressed ? " (and other messages of the metrics listener, not logged)" : "");
	m->logged = now;
	m->suppressed = 0;
}

/* A short text reply with @p status (and an Allow header for 405). */
static enum MHD_Result answer_text(struct MHD_Connection *conn, unsigned status, const char *text)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	enum MHD_Result rc = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rc;
}

/* The page, built now. */
static enum MHD_Result answer_page(struct metrics *m, struct MHD_Connection *conn)
{
	char *page;
	size_t len;
	int rc = m->reg != NULL && m->view != NULL ? metrics_page_build(m->reg, m->view, &page, &len) : -EAGAIN;
	if (rc < 0) {
		log_msg(LOG_WARNING, "metrics %s: page not built: %s", m->name,
			rc == SHMF_E_TOOBIG ? "larger than its limit" : strerror(-rc));
		return answer_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				   rc == SHMF_E_TOOBIG ? "the metrics page is larger than its limit\n"
						       : "the metrics page could not be built (see shmd's log)\n");
	}
	struct MHD_Response *r = MHD_create_response_from_buffer(len, page, MHD_RESPMEM_MUST_FREE);
	if (r == NULL) {
		free(page);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, METRICS_PAGE_TYPE);
	enum MHD_Result ok = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ok;
}

/* Every request: answered on its first call, once its headers are in (a
 * body, which no request here has a use for, is not waited for). */
static enum MHD_Result on_request(void *arg, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_size, void **state)
{
	(void)version;
	(void)upload_data;
	(void)upload_size;
	(void)state;
	if (strcmp(url, "/metrics") != 0)
		return answer_text(conn, MHD_HTTP_NOT_FOUND, "not found: shmd serves /metrics only\n");
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return answer_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed: GET /metrics\n");
	return answer_page(arg, conn);
}

struct metrics *metrics_start(int fd, const char *name, char *err, size_t errlen)
{
	struct metrics *m = calloc(1, sizeof(*m));
	if (m == NULL) {
		close(fd);
		errmsg(err, errlen, -ENOMEM, "metrics %s: out of memory", name);
		return NULL;
	}
	m->listen_fd = fd;
	snprintf(m->name, sizeof(m->name), "%s", name);
	/* No thread, no locks (MHD is called from the loop alone), epoll. */
	m->d = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, m,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, m, MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_MAX_CONNECTIONS,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)METRICS_TIMEOUT,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)METRICS_REQUEST_MAX, MHD_OPTION_END);
	if (m->d == NULL || metrics_fd(m) < 0) {
		errmsg(err, errlen, -EINVAL, "metrics %s: libmicrohttpd could not start on it", name);
		if (m->d != NULL)
			MHD_stop_daemon(m->d);
		close(fd);
		free(m);
		return NULL;
	}
	log_msg(LOG_INFO, "serving metrics on http://%s/metrics (at most %u connections, idle timeout %us)", name,
		METRICS_MAX_CONNECTIONS, METRICS_TIMEOUT);
	return m;
}

void metrics_attach(struct metrics *m, struct registry *reg, const struct server_view *v)
{
	m->reg = reg;
	m->view = v;
}

int metrics_fd(const struct metrics *m)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_EPOLL_FD);
	return i != NULL ? i->epoll_fd : -1;
}

void metrics_run(struct metrics *m)
{
	if (MHD_run(m->d) != MHD_YES)
		log_msg(LOG_DEBUG, "metrics %s: MHD_run failed", m->name);
}

void metrics_stop(struct metrics *m)
{
	if (m == NULL)
		return;
	MHD_stop_daemon(m->d);
	/* MHD does not close a socket it was given. */
	close(m->listen_fd);
	free(m);
}
