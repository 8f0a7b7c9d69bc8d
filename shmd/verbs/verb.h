/*
 * verb.h - what a row of the verb table (verbs.c) is and what a handler
 * gets: the row's flags, the call a handler answers, and what dispatching
 * a request can come to. Every verb's handler, the dispatcher and the
 * connection layer read it; it knows no verb.
 *
 * Single-threaded, like the registry: called from the server loop only.
 */
#ifndef SHMD_VERB_H
#define SHMD_VERB_H

#include <stddef.h>

#include "shmd/base/fscred.h"
#include "shmd/config/roles-config.h"
#include "shmd/resp/reply.h"
#include "shmd/resp/request.h"

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
	 * (dispatch_reply_max()); none of these: a reply of fixed shape, at most
	 * VERB_REPLY_SMALL. A value in the top bits, one per row at most. */
	VERB_REPLY_ITEMS = 1u << 24,   /* an array of one small item per argument (":1", "#t", ":-1") */
	VERB_REPLY_ECHO = 2u << 24,    /* its arguments given back (ECHO, PING message) */
	VERB_REPLY_LIST = 3u << 24,    /* a line or name per filter, one filter's fields, CLIENT INFO */
	VERB_REPLY_CHUNK = 4u << 24,   /* a chunk of a dump (SHMF_CHUNK_BYTES) */
	VERB_REPLY_FLEET = 5u << 24,   /* every replicated filter with its nodes */
	VERB_REPLY_COMMAND = 6u << 24, /* COMMAND's entries: every verb's, or one per argument */
	VERB_REPLY_EXEC = 7u << 24,    /* EXEC: the replies of the queued requests (queue.h) */
	VERB_REPLY_CLIENTS = 8u << 24, /* a line per connection (CLIENT LIST) */
	VERB_REPLY_SLOWLOG = 9u << 24, /* the slow log's entries asked for (SLOWLOG GET) */
	VERB_REPLY_MASK = 15u << 24,
};

/* What dispatch_request() did with a request. */
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
	const char *name; /* lower case, as COMMAND names it; matched in any case. A subcommand has a row of
			   * its own, "client|kill", as in Redis: the dispatcher runs it for CLIENT KILL, and
			   * the verb's row ("client") answers the subcommands that have none (dispatch.h) */
	int min_args;     /* arguments, the verb included */
	int max_args;     /* -1: no limit */
	unsigned flags;   /* VERB_* */
	int key;          /* argument that names a filter (COMMAND's first key), 0: none */
	int last_key;     /* COMMAND's last key: 0 none, -1 every argument from the first key, else key */
	verb_handler *run;
	const char *group;   /* COMMAND DOCS: Redis' groups (connection, server, generic, transactions), or
			      * the family of a module's verb (bf, cf, shmf), reported as "module" */
	const char *syntax;  /* COMMAND DOCS' arguments, written as the docs write them, the verb excluded:
			      * "key item:string...", "[EXPANSION expansion:integer]", "[ASYNC|SYNC]"
			      * (command-docs.c) */
	const char *summary; /* COMMAND DOCS: one line */
};

/** The role (ROLE_READER, ROLE_WRITER, ROLE_ADMIN of roles-config.h) verb @p v needs; ROLE_NONE for a row without one.
 */
static inline int verb_role(const struct verb *v)
{
	return v->flags & VERB_ROLE_ADMIN    ? ROLE_ADMIN
	       : v->flags & VERB_ROLE_WRITER ? ROLE_WRITER
	       : v->flags & VERB_ROLE_READER ? ROLE_READER
					     : ROLE_NONE;
}

/** Whether @p argc arguments (the verb included) are what verb @p v takes. */
static inline int verb_arity_ok(const struct verb *v, int argc)
{
	return argc >= v->min_args && (v->max_args < 0 || argc <= v->max_args);
}

#endif
