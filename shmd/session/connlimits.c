/* connlimits.c - connections counted per user and per address (connlimits.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "shmd/session/connlimits.h"
#include "shmd/session/session.h"

/* Redis' words exactly for the table being full: redis-py, for one, turns
 * this text (and only this) into a ConnectionError. */
#define MAXCLIENTS_ERROR "ERR max number of clients reached"

/* The first byte of a key says what the rest is. */
enum { K_UID = 'u', K_V4 = '4', K_V6 = '6', K_LOCAL_UID = 'l', K_LOOPBACK = 'L', K_UNKNOWN = '?' };

struct peer_count {
	struct peer_count *next;
	int kind;
	uint8_t key[sizeof(((struct peer_id *)0)->key)];
	unsigned n;
};

static void identify_unix(int fd, struct peer_id *p)
{
	struct ucred uc;
	socklen_t ul = sizeof(uc);
	/* Unknown (it does not happen on Linux): nobody, never an administrator. */
	p->cred = (struct fscred){ .set = 1, .uid = 65534, .gid = 65534 };
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &ul) == 0)
		p->cred = (struct fscred){ .set = 1, .uid = uc.uid, .gid = uc.gid };
	p->key[0] = K_UID;
	memcpy(p->key + 1, &p->cred.uid, sizeof(p->cred.uid));
	snprintf(p->name, sizeof(p->name), "uid %u", (unsigned)p->cred.uid);
}

/* An address as the client socket's side of the connection sees it:
 * IPv4 for a v4-mapped IPv6 one (a dual-stack listener's view of an IPv4
 * client). */
static void diag_addr(const struct sockaddr_storage *ss, uint8_t *family, __be16 *port, __be32 addr[4])
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		*family = AF_INET, *port = a->sin_port;
		memcpy(addr, &a->sin_addr, 4);
		return;
	}
	const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
	*port = a->sin6_port;
	if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
		*family = AF_INET;
		memcpy(addr, a->sin6_addr.s6_addr + 12, 4);
	} else {
		*family = AF_INET6;
		memcpy(addr, a->sin6_addr.s6_addr, 16);
	}
}

/* The uid that owns the client's end of loopback TCP connection @p fd:
 * that socket is on this host, and the kernel's socket table (sock_diag,
 * what ss -e reads) says whose it is. A local user may connect from any
 * loopback address, so the address alone would let one user take the
 * quota of every local client. 0, or -errno. */
static int loopback_uid(int fd, uid_t *uid)
{
	struct sockaddr_storage self, peer;
	socklen_t sl = sizeof(self), pl = sizeof(peer);
	if (getsockname(fd, (struct sockaddr *)&self, &sl) < 0 || getpeername(fd, (struct sockaddr *)&peer, &pl) < 0)
		return -errno;
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} req = {
		.nh = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST },
		.r = { .sdiag_protocol = IPPROTO_TCP,
		       .idiag_states = ~0u,
		       .id.idiag_cookie = { INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE } },
	};
	uint8_t fam_self;
	/* The client's socket: its source is our peer, its destination us. */
	diag_addr(&peer, &req.r.sdiag_family, &req.r.id.idiag_sport, req.r.id.idiag_src);
	diag_addr(&self, &fam_self, &req.r.id.idiag_dport, req.r.id.idiag_dst);
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return -errno;
	struct timeval tv = { .tv_sec = 1 }; /* the kernel answers at once; never hang the loop */
	setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	union {
		struct nlmsghdr nh;
		char buf[1024];
	} ans;
	int rc = -ENOENT;
	ssize_t n = sendto(nl, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel));
	if (n >= 0)
		n = recv(nl, &ans, sizeof(ans), 0);
	if (n < 0)
		rc = -errno;
	else if (NLMSG_OK(&ans.nh, (size_t)n) && ans.nh.nlmsg_type == SOCK_DIAG_BY_FAMILY &&
		 ans.nh.nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg)) && fam_self == req.r.sdiag_family) {
		*uid = ((const struct inet_diag_msg *)NLMSG_DATA(&ans.nh))->idiag_uid;
		rc = 0;
	}
	close(nl);
	return rc;
}

/* A TCP client on this host: its uid, or (the kernel would not say) every
 * loopback client as one. */
static void identify_loopback(int fd, struct peer_id *p)
{
	uid_t uid;
	if (loopback_uid(fd, &uid) == 0) {
		p->key[0] = K_LOCAL_UID;
		memcpy(p->key + 1, &uid, sizeof(uid));
		snprintf(p->name, sizeof(p->name), "uid %u (a TCP client on this host)", (unsigned)uid);
	} else {
		p->key[0] = K_LOOPBACK;
		snprintf(p->name, sizeof(p->name), "loopback");
	}
}

static void identify_v4(int fd, const struct in_addr *a, struct peer_id *p)
{
	if ((ntohl(a->s_addr) >> 24) == 127) {
		identify_loopback(fd, p);
		return;
	}
	p->key[0] = K_V4;
	memcpy(p->key + 1, a, 4);
	inet_ntop(AF_INET, a, p->name, sizeof(p->name));
}

static void identify_tcp(int fd, struct peer_id *p)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	p->key[0] = K_UNKNOWN;
	snprintf(p->name, sizeof(p->name), "an unknown address");
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0)
		return;
	if (ss.ss_family == AF_INET) {
		identify_v4(fd, &((struct sockaddr_in *)&ss)->sin_addr, p);
	} else if (ss.ss_family == AF_INET6) {
		struct in6_addr a = ((struct sockaddr_in6 *)&ss)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(&a)) {
			struct in_addr v4;
			memcpy(&v4, a.s6_addr + 12, 4);
			identify_v4(fd, &v4, p);
		} else if (IN6_IS_ADDR_LOOPBACK(&a)) {
			identify_loopback(fd, p);
		} else {
			/* One /64: a host or a customer gets a whole one. */
			memset(a.s6_addr + 8, 0, 8);
			p->key[0] = K_V6;
			memcpy(p->key + 1, a.s6_addr, 8);
			char text[INET6_ADDRSTRLEN];
			inet_ntop(AF_INET6, &a, text, sizeof(text));
			snprintf(p->name, sizeof(p->name), "%s/64", text);
		}
	}
}

void peer_identify(int fd, int kind, struct peer_id *p)
{
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	if (kind == SESSION_UNIX)
		identify_unix(fd, p);
	else
		identify_tcp(fd, p);
}

static size_t bucket_of(const struct peer_id *p)
{
	uint64_t h = 1469598103934665603u ^ (uint64_t)p->kind; /* FNV-1a */
	for (size_t i = 0; i < sizeof(p->key); i++)
		h = (h ^ p->key[i]) * 1099511628211u;
	return (size_t)(h % CONN_BUCKETS);
}

static struct peer_count **find(struct conn_limits *l, const struct peer_id *p)
{
	struct peer_count **e = &l->buckets[bucket_of(p)];
	while (*e != NULL && ((*e)->kind != p->kind || memcmp((*e)->key, p->key, sizeof(p->key)) != 0))
		e = &(*e)->next;
	return e;
}

unsigned conn_limits_count(const struct conn_limits *l, const struct peer_id *p)
{
	struct peer_count **e = find((struct conn_limits *)l, p);
	return *e != NULL ? (*e)->n : 0;
}

/* Why @p p may not have one more connection (the reply's text in @p why),
 * or NULL if it may. */
static const char *over_limit(const struct conn_limits *l, const struct peer_id *p, unsigned open, int reserve,
			      char *why, size_t whylen)
{
	if (open + (unsigned)reserve >= l->max[p->kind]) {
		snprintf(why, whylen, "%s", MAXCLIENTS_ERROR);
		return why;
	}
	unsigned mine = conn_limits_count(l, p), most = l->per_peer[p->kind];
	if (mine >= most) {
		snprintf(why, whylen, "ERR max connections per %s (%u) reached for %s",
			 p->kind == SESSION_UNIX ? "user" : "address", most, p->name);
		return why;
	}
	return NULL;
}

int conn_limits_admit(struct conn_limits *l, const struct peer_id *p, unsigned open, char *why, size_t whylen)
{
	int reserve = p->kind == SESSION_UNIX ? CONN_ADMIN_RESERVED : 0;
	int reserved = 0;
	if (over_limit(l, p, open, reserve, why, whylen) != NULL) {
		/* An administrator past a limit takes a reserved slot while
		 * one is free (and the table has room at all). */
		if (reserve == 0 || !p->admin || l->reserved >= (unsigned)reserve || open >= l->max[p->kind])
			return -EUSERS;
		reserved = 1;
	}
	struct peer_count **e = find(l, p);
	if (*e == NULL) {
		if ((*e = calloc(1, sizeof(**e))) == NULL) {
			snprintf(why, whylen, "ERR out of memory for a new connection");
			return -ENOMEM;
		}
		(*e)->kind = p->kind;
		memcpy((*e)->key, p->key, sizeof(p->key));
	}
	(*e)->n++;
	l->reserved += (unsigned)reserved;
	return reserved;
}

void conn_limits_release(struct conn_limits *l, const struct peer_id *p, int reserved)
{
	struct peer_count **e = find(l, p), *gone = *e;
	if (reserved && l->reserved > 0)
		l->reserved--;
	if (gone == NULL)
		return;
	if (--gone->n == 0) {
		*e = gone->next;
		free(gone);
	}
}

void conn_limits_free(struct conn_limits *l)
{
	for (size_t i = 0; i < CONN_BUCKETS; i++) {
		while (l->buckets[i] != NULL) {
			struct peer_count *next = l->buckets[i]->next;
			free(l->buckets[i]);
			l->buckets[i] = next;
		}
	}
	l->reserved = 0;
}
