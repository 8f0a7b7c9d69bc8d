/* connlimits.c - connections counted per user and per address (connlimits.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "connlimits.h"
#include "session.h"

/* Redis' words exactly for the table being full: redis-py, for one, turns
 * this text (and only this) into a ConnectionError. */
#define MAXCLIENTS_ERROR "ERR max number of clients reached"

/* The first byte of a key says what the rest is. */
enum { K_UID = 'u', K_V4 = '4', K_V6 = '6', K_LOOPBACK = 'L', K_UNKNOWN = '?' };

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

static void identify_v4(const struct in_addr *a, struct peer_id *p)
{
	if ((ntohl(a->s_addr) >> 24) == 127) {
		p->key[0] = K_LOOPBACK;
		snprintf(p->name, sizeof(p->name), "loopback");
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
		identify_v4(&((struct sockaddr_in *)&ss)->sin_addr, p);
	} else if (ss.ss_family == AF_INET6) {
		struct in6_addr a = ((struct sockaddr_in6 *)&ss)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(&a)) {
			struct in_addr v4;
			memcpy(&v4, a.s6_addr + 12, 4);
			identify_v4(&v4, p);
		} else if (IN6_IS_ADDR_LOOPBACK(&a)) {
			p->key[0] = K_LOOPBACK;
			snprintf(p->name, sizeof(p->name), "loopback");
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
		if (reserve == 0 || !peer_is_admin(&p->cred) || l->reserved >= (unsigned)reserve ||
		    open >= l->max[p->kind])
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
