/*
 * connlimits.h - connections are a bounded resource per user: how many the
 * unix socket and the TCP listener hold at once, how many of them one user
 * (unix socket: the SO_PEERCRED uid) or one address (TCP) may hold, and the
 * slot kept for an administrator (peer_id.admin: the admin role of roles.h) so that an
 * operator's shmctl gets in while the table is full.
 *
 * The server loop asks conn_limits_admit() before it serves a new
 * connection and calls conn_limits_release() when an admitted one goes.
 * Single-threaded: the server loop's.
 */
#ifndef SHMD_CONNLIMITS_H
#define SHMD_CONNLIMITS_H

#include <stddef.h>
#include <stdint.h>

#include "shmd/base/fscred.h"

/* Slots of the unix socket's table that only an administrator may take. */
#define CONN_ADMIN_RESERVED 1
#define CONN_BUCKETS        1024

/* Who is at the other end of a connection, as the limits count it. */
struct peer_id {
	int kind;           /* SESSION_UNIX or SESSION_TCP */
	uint8_t key[17];    /* what is counted: the uid, or the address (see peer_identify()) */
	struct fscred cred; /* unix: SO_PEERCRED (nobody when unknown); TCP: unset */
	int admin;          /* unix: the peer has the admin role (roles_connection()), set by the caller */
	char name[80];      /* for messages: "uid 33", "10.0.0.5", "2001:db8:1:2::/64", "loopback" */
};

struct conn_limits {
	unsigned max[2];      /* connections at once, by SESSION_UNIX / SESSION_TCP */
	unsigned per_peer[2]; /* of them from one uid (unix) / one address (TCP) */
	unsigned reserved;    /* admitted into the administrator's slots, now */
	struct peer_count *buckets[CONN_BUCKETS];
};

/**
 * Identify the peer of accepted connection @p fd of @p kind. A unix peer
 * is its uid (an unknown one counts as nobody). A TCP peer is its address:
 * IPv4 whole, IPv6 by its /64 (what one host or customer is given); a
 * loopback peer (127/8, ::1) is a user of this host, told apart by the uid
 * that owns its socket (sock_diag), since a local user may connect from
 * any loopback address; if the kernel does not say, every loopback peer
 * is one.
 */
void peer_identify(int fd, int kind, struct peer_id *p);

/**
 * May @p p open one more connection, @p open of its kind being open now?
 * A unix peer that is not an administrator gets at most max - 1 (the
 * reserve); an administrator past either limit gets the reserved slot if
 * it is free.
 * @return 0: admitted; 1: admitted into the reserved slot (tell
 *         conn_limits_release()); or, refused, -EUSERS (a limit) or -ENOMEM,
 *         with the error reply for the client in @p why ("ERR max ...").
 */
int conn_limits_admit(struct conn_limits *l, const struct peer_id *p, unsigned open, char *why, size_t whylen);

/** An admitted connection of @p p went; @p reserved: what conn_limits_admit() returned. */
void conn_limits_release(struct conn_limits *l, const struct peer_id *p, int reserved);

/** Connections of @p p counted now. */
unsigned conn_limits_count(const struct conn_limits *l, const struct peer_id *p);

/** Free the counts. */
void conn_limits_free(struct conn_limits *l);

#endif
