/* tcp.c - the TCP listener's socket and its connections' options (see tcp.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "shmd/net/tcp.h"

/* "1.2.3.4:6379" or "[::1]:6379" for a socket address. */
static void addr_text(const struct sockaddr *sa, socklen_t len, char *buf, size_t size)
{
	char host[NI_MAXHOST], serv[NI_MAXSERV];
	if (getnameinfo(sa, len, host, sizeof(host), serv, sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		snprintf(buf, size, "?");
		return;
	}
	snprintf(buf, size, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
}

int tcp_listen(const char *bind_addr, int port, char *name, size_t namelen, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV | AI_ADDRCONFIG };
	struct addrinfo *res = NULL;
	char serv[16];
	snprintf(serv, sizeof(serv), "%d", port);
	int gai = getaddrinfo(bind_addr, serv, &hints, &res);
	if (gai == EAI_ADDRFAMILY || gai == EAI_NONAME) {
		/* AI_ADDRCONFIG hides ::1 on a host whose only IPv6 is loopback. */
		hints.ai_flags &= ~AI_ADDRCONFIG;
		gai = getaddrinfo(bind_addr, serv, &hints, &res);
	}
	if (gai != 0) {
		return errmsg(err, errlen, -EINVAL, "tcp listener: bind address '%s': %s", bind_addr,
			      gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
	}
	int e = EADDRNOTAVAIL;
	for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
		addr_text(ai->ai_addr, ai->ai_addrlen, name, namelen);
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		/* SOMAXCONN, the kernel's cap (Redis' tcp-backlog is 511): the
		 * loop accepts a burst and turns away what is over a limit. */
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) {
			freeaddrinfo(res);
			return fd;
		}
		e = errno;
		close(fd);
	}
	freeaddrinfo(res);
	return errmsg(err, errlen, -e, "tcp listener %s: cannot listen: %s", name, strerror(e));
}

int tcp_is_loopback(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return 0;
	if (ss.ss_family == AF_INET)
		return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss.ss_family == AF_INET6) {
		const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
		if (IN6_IS_ADDR_LOOPBACK(a))
			return 1;
		if (IN6_IS_ADDR_V4MAPPED(a))
			return a->s6_addr[12] == 127;
	}
	return 0;
}

void tcp_tune(int fd)
{
	int one = 1, idle = 300, intvl = 100, cnt = 3;
	/* Replies are written once per batch of requests: Nagle's delay would
	 * only hold back the tail of a pipeline's answers. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* A peer that vanished (host down, cable pulled) frees its slot after
	 * about 10 minutes, as Redis' tcp-keepalive 300 does. */
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

void tcp_peer_name(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0) {
		snprintf(buf, len, "?");
		return;
	}
	addr_text((struct sockaddr *)&ss, sl, buf, len);
}

void tcp_local_name(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		snprintf(buf, len, "?");
		return;
	}
	addr_text((struct sockaddr *)&ss, sl, buf, len);
}
