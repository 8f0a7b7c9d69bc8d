/*
 * server.c - the control socket's poll loop (see server.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "commands.h"
#include "log.h"
#include "reply.h"
#include "request.h"
#include "server.h"

/* Stop reading from a client whose replies pile up unread beyond this. */
#define OUTPUT_HIGH_WATER (64u << 20)
/* Bytes read from one client per turn, so that one cannot starve others. */
#define READ_PER_TURN (1u << 20)

struct conn {
	int fd;
	int closing;  /* protocol error: flush the error reply, then close */
	struct request_reader *rr;
	struct reply out;
	struct fscred peer; /* the client's uid and gid, for the files it names */
};

int server_listen(const char *path, mode_t mode, gid_t gid, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket path %s: longer than %zu bytes", path, sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "socket path %s: exists and is not a socket; not replacing it", path);
			return -EEXIST;
		}
		unlink(path);
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -errno;
	}
	/* The file gets its mode at bind(): narrow the umask so that it is
	 * never wider than configured, even for an instant. */
	mode_t old = umask((mode_t)(~mode & 0777));
	int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	int e = errno;
	umask(old);
	if (rc < 0) {
		snprintf(err, errlen, "socket %s: cannot bind: %s", path, strerror(e));
		close(fd);
		return -e;
	}
	if ((gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) < 0) || chmod(path, mode) < 0 || listen(fd, 128) < 0) {
		e = errno;
		snprintf(err, errlen, "socket %s: cannot set group, mode or listen: %s", path, strerror(e));
		close(fd);
		unlink(path);
		return -e;
	}
	return fd;
}

static void conn_close(struct conn *c)
{
	close(c->fd);
	request_reader_free(c->rr);
	reply_free(&c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* Write what is pending; -1 if the peer is gone. */
static int conn_flush(struct conn *c)
{
	while (reply_pending(&c->out) > 0) {
		ssize_t n = send(c->fd, c->out.data + c->out.sent, reply_pending(&c->out), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		}
		c->out.sent += (size_t)n;
	}
	c->out.sent = c->out.len = 0;
	return 0;
}

/* Read and execute what the client sent; -1 if the connection must go now. */
static int conn_read(struct registry *reg, struct conn *c)
{
	static char buf[64 * 1024];
	size_t total = 0;
	while (total < READ_PER_TURN && !c->closing) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0) {
			/* End of input: answer what came complete, drop a partial
			 * request, then close. */
			c->closing = 1;
			break;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -1;
		}
		total += (size_t)n;
		request_reader_feed(c->rr, buf, (size_t)n);
		struct request req;
		int rc;
		while ((rc = request_reader_next(c->rr, &req)) == 1) {
			req.peer = c->peer;
			commands_dispatch(reg, &req, &c->out);
		}
		if (rc < 0) {
			reply_error(&c->out, "ERR %s", request_reader_error(c->rr));
			c->closing = 1;
		}
		if (c->out.oom)
			return -1;
		if (reply_pending(&c->out) > OUTPUT_HIGH_WATER)
			break;
	}
	reply_compact(&c->out);
	return 0;
}

static void accept_clients(int listen_fd, struct conn *conns, int *nconns)
{
	for (;;) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				log_msg(LOG_WARNING, "accept: %s", strerror(errno));
			return;
		}
		if (*nconns >= SERVER_MAX_CLIENTS) {
			static const char msg[] = "-ERR max number of clients reached (1024)\r\n";
			ssize_t ignored = send(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			(void)ignored;
			close(fd);
			continue;
		}
		struct conn *c = &conns[*nconns];
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		struct ucred uc;
		socklen_t ul = sizeof(uc);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &ul) == 0)
			c->peer = (struct fscred){ .set = 1, .uid = uc.uid, .gid = uc.gid };
		else /* no identity: file verbs act as nobody */
			c->peer = (struct fscred){ .set = 1, .uid = 65534, .gid = 65534 };
		c->rr = request_reader_new();
		if (c->rr == NULL) {
			log_msg(LOG_WARNING, "out of memory for a new client");
			close(fd);
			continue;
		}
		(*nconns)++;
	}
}

int server_run(struct registry *reg, int listen_fd, const char *path, volatile sig_atomic_t *stop,
	       void (*tick)(struct registry *reg, void *arg), void *tick_arg)
{
	struct conn *conns = calloc(SERVER_MAX_CLIENTS, sizeof(*conns));
	struct pollfd *pfds = calloc(SERVER_MAX_CLIENTS + 1, sizeof(*pfds));
	int nconns = 0;
	if (conns == NULL || pfds == NULL) {
		log_msg(LOG_ERR, "out of memory for the client table");
		free(conns);
		free(pfds);
		close(listen_fd);
		unlink(path);
		return -ENOMEM;
	}
	log_msg(LOG_INFO, "listening on %s", path);
	while (!*stop) {
		pfds[0] = (struct pollfd){ .fd = listen_fd, .events = POLLIN };
		for (int i = 0; i < nconns; i++) {
			struct conn *c = &conns[i];
			short ev = 0;
			if (!c->closing && reply_pending(&c->out) <= OUTPUT_HIGH_WATER)
				ev |= POLLIN;
			if (reply_pending(&c->out) > 0)
				ev |= POLLOUT;
			pfds[i + 1] = (struct pollfd){ .fd = c->fd, .events = ev };
		}
		if (tick != NULL)
			tick(reg, tick_arg);
		int n = poll(pfds, (nfds_t)nconns + 1, 1000);
		if (n < 0) {
			if (errno != EINTR)
				log_msg(LOG_WARNING, "poll: %s", strerror(errno));
			continue;
		}
		int polled = nconns;
		for (int i = 0; i < polled; i++) {
			struct conn *c = &conns[i];
			short re = pfds[i + 1].revents;
			int drop = 0;
			if (re & POLLIN)
				drop = conn_read(reg, c) < 0;
			else if (re & (POLLHUP | POLLERR | POLLNVAL))
				drop = 1;
			if (!drop && reply_pending(&c->out) > 0)
				drop = conn_flush(c) < 0;
			if (!drop && c->closing && reply_pending(&c->out) == 0)
				drop = 1;
			if (drop)
				conn_close(c);
		}
		/* Compact the table, keeping order. */
		int kept = 0;
		for (int i = 0; i < nconns; i++)
			if (conns[i].rr != NULL)
				conns[kept++] = conns[i];
		nconns = kept;
		if (pfds[0].revents & POLLIN)
			accept_clients(listen_fd, conns, &nconns);
	}
	for (int i = 0; i < nconns; i++) {
		conn_flush(&conns[i]);
		conn_close(&conns[i]);
	}
	free(conns);
	free(pfds);
	close(listen_fd);
	unlink(path);
	return 0;
}
