/*
 * verbs.h - the table of every verb shmd serves, as Redis keeps its
 * command table: one row per verb with its arity, its flags, where its
 * filter name is, its handler and its COMMAND DOCS summary.
 *
 * The dispatcher (verbs_dispatch) reads it to decide who may run a verb
 * (AUTH, TCP, the role the connection needs: roles.h) and with how many
 * arguments; COMMAND reads it to describe
 * the verbs to client libraries; the tests read it to check that every
 * verb is described. Adding a verb is adding a row and a handler.
 *
 * Single-threaded, like the registry: called from the server loop only.
 */
#ifndef SHMD_VERBS_H
#define SHMD_VERBS_H

#include <stddef.h>

#include "fscred.h"
#include "reply.h"
#include "request.h"
#include "roles-config.h"

struct registry;
struct session;

/* What a row says of its verb. Each row has exactly one of VERB_CONN,
 * VERB_READONLY and VERB_WRITES: they are what COMMAND reports. */
enum {
	VERB_CONN = 1 << 0,       /* acts on the connection, not on filters (COMMAND: loading, stale, fast) */
	VERB_READONLY = 1 << 1,   /* reads filters and changes nothing (COMMAND: readonly, fast) */
	VERB_WRITES = 1 << 2,     /* changes a filter or writes a file (COMMAND: write, denyoom) */
	VERB_NOAUTH = 1 << 3,     /* runs before a TCP client with a password has authenticated */
	VERB_TCP_OK = 1 << 4,     /* allowed over TCP */
	VERB_NAMES_FILE = 1 << 5, /* names a file on the daemon's host: never over TCP, whose peer has no
				   * identity the daemon could open files as */
	/* The role a connection needs (roles.h): exactly one of these per row. */
	VERB_ROLE_READER = 1 << 6, /* checks and descriptions: anyone who may connect (and read the filter's file) */
	VERB_ROLE_WRITER = 1 << 7, /* the data verbs: adds and deletes (and write permission on the filter's file) */
	VERB_ROLE_ADMIN = 1 << 8,  /* administration: create, drop, swap, restore, snapshot, rotate, chmod, ... */
	VERB_CREATES = 1 << 9,     /* creates a filter: a writer may too when [roles] writer_create = yes */
	VERB_LOCKS = 1 << 10,      /* reads under the filter's relocation lock: waits, as writes do, while a
				    * job of the file worker holds the filter (jobs.h) */
	VERB_TXN = 1 << 11,        /* runs at once inside MULTI, never queued (MULTI, EXEC, DISCARD, WATCH, UNWATCH,
				    * QUIT, RESET) */
	/* The most its reply can take, known from the request before it runs
	 * (verbs_reply_max()); none of these: a reply of fixed shape, at most
	 * VERB_REPLY_SMALL. A value in the top bits, one per row at most. */
	VERB_REPLY_ITEMS = 1u << 24,   /* an array of one small item per argument (":1", "#t", ":-1") */
	VERB_REPLY_ECHO = 2u << 24,    /* its arguments given back (ECHO, PING message) */
	VERB_REPLY_LIST = 3u << 24,    /* a line or name per filter, one filter's fields, CLIENT INFO */
	VERB_REPLY_CHUNK = 4u << 24,   /* a chunk of a dump (SHMF_CHUNK_BYTES) */
	VERB_REPLY_FLEET = 5u << 24,   /* every replicated filter with its nodes */
	VERB_REPLY_COMMAND = 6u << 24, /* COMMAND's entries: every verb's, or one per argument */
	VERB_REPLY_EXEC = 7u << 24,    /* EXEC: the replies of the queued requests (queue.h) */
	VERB_REPLY_MASK = 7u << 24,
};

/* What verbs_dispatch() did with a request. */
enum {
	VERB_DONE = 0,   /* replied */
	VERB_PARKED = 1, /* a job of the file worker runs for it; the reply comes when it ends */
	VERB_WAIT = 2,   /* not run, no reply: its filter is busy with a job; dispatch it again later */
};

/* One request on its way to a handler, with what the dispatcher found. */
struct verb_call {
	const struct request *req; /* argv[0] the verb; argc within the row's arity */
	struct reply *out;         /* the handler appends exactly one reply */
	struct registry *reg;
	struct session *sess;      /* the connection it came on */
	const struct fscred *peer; /* who names files (SO_PEERCRED); unset: the daemon itself */
	int key_rc;                /* the filter name at the row's key position: 0 legal, SHMF_E_NAME not
				    * (checked once, by the dispatcher; the handler says so when it needs it) */
	int parked;                /* set by the handler: a job of the file worker replies later */
	int wait;                  /* set by the handler: it did nothing and replied nothing (a job holds
				    * its filter); dispatch the request again once a job ended */
};

typedef void verb_handler(struct verb_call *c);

/* A reply of fixed shape (OK, an integer, a short status, an error, which
 * reply_error() cuts at 512 bytes): a row without a VERB_REPLY_* kind
 * answers at most this. Small, because MULTI counts it for every request
 * it queues. */
#define VERB_REPLY_SMALL 1024u

struct verb {
	const char *name; /* lower case, as COMMAND names it; matched in any case */
	int min_args;     /* arguments, the verb included */
	int max_args;     /* -1: no limit */
	unsigned flags;   /* VERB_* */
	int key;          /* argument that names a filter (COMMAND's first key), 0: none */
	verb_handler *run;
	const char *summary; /* COMMAND DOCS: one line */
};

/**
 * The most bytes the reply of verb @p v to @p req can take, from its
 * VERB_REPLY_* kind (the server holds or refuses a request whose reply
 * could overflow the connection's unsent replies: reply.h).
 */
size_t verb_reply_max(const struct verb *v, const struct request *req);

/** The role (ROLE_READER, ROLE_WRITER, ROLE_ADMIN of roles-config.h) verb @p v needs; ROLE_NONE for a row without one.
 */
static inline int verb_role(const struct verb *v)
{
	return v->flags & VERB_ROLE_ADMIN    ? ROLE_ADMIN
	       : v->flags & VERB_ROLE_WRITER ? ROLE_WRITER
	       : v->flags & VERB_ROLE_READER ? ROLE_READER
					     : ROLE_NONE;
}

/** Row @p i of the table, or NULL past the end (COMMAND lists them in this order). */
const struct verb *verbs_at(size_t i);

/** The row of verb @p name (@p len bytes, any case), or NULL. */
const struct verb *verbs_find(const char *name, size_t len);

/** Whether @p argc arguments (the verb included) are what verb @p v takes. */
static inline int verb_arity_ok(const struct verb *v, int argc)
{
	return argc >= v->min_args && (v->max_args < 0 || argc <= v->max_args);
}

/** The row of @p req's verb (argv[0]), or NULL (none, or an empty request). */
const struct verb *verbs_of(const struct request *req);

/**
 * The most bytes the reply to @p req (verb @p v, verbs_of(req)) can take
 * in session @p s: the row's reply_max, a small bound for a request that
 * is refused or queued (inside MULTI), and for EXEC the sum of what it
 * queued (multi.h).
 */
size_t verbs_reply_max(const struct session *s, const struct verb *v, const struct request *req);

/**
 * Execute @p req for session @p s and append exactly one reply to @p out:
 * -NOAUTH before AUTH where a password is set (unless the verb runs
 * before AUTH), -ERR for an unknown verb, for a verb refused over TCP and
 * for a wrong number of arguments, -NOPERM for a role or file permission
 * the connection lacks (allow_verb()); else the verb's handler, which may
 * change the session (s->quit, s->limits_changed) and the registry.
 * A verb that writes (or VERB_LOCKS) on a filter that a job of the file
 * worker holds is not run: commands on one filter keep their order.
 * @return VERB_DONE, VERB_PARKED (the reply is appended to @p out when
 *         the job ends: send nothing else meanwhile) or VERB_WAIT (nothing
 *         appended: call again with the same request once a job ended).
 */
int verbs_dispatch(struct session *s, struct registry *reg, const struct request *req, struct reply *out);

/** verbs_dispatch() of a request whose row the caller looked up: @p v is verbs_of(@p req). */
int verbs_dispatch_row(struct session *s, struct registry *reg, const struct verb *v, const struct request *req,
		       struct reply *out);

#endif
