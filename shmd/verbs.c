/*
 * verbs.c - the verb table and the dispatcher that reads it (see verbs.h).
 *
 * The rows are in the order COMMAND lists them: the connection verbs,
 * then the filter verbs by family. The handlers live with their family:
 * session.c (the connection), commands-compat.c (COMMAND, INFO),
 * commands-bloom.c, commands-cuckoo.c and commands-admin.c.
 */
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "commands.h"
#include "compat.h"
#include "connection.h"
#include "keyspace.h"
#include "multi.h"
#include "queue.h"
#include "jobs.h"
#include "rundir.h"
#include "allow.h"
#include "session.h"
#include "snapshot-format.h"
#include "verbs.h"

/* Most verbs: allowed over TCP once authenticated. */
#define READS  (VERB_READONLY | VERB_TCP_OK)
#define WRITES (VERB_WRITES | VERB_TCP_OK)
#define CONN   (VERB_CONN | VERB_TCP_OK)
/* Administration that names a file on the daemon's host: never over TCP. */
#define FILE_VERB (VERB_WRITES | VERB_NAMES_FILE)
/* The role column (roles.h): who may run the verb. */
#define READER VERB_ROLE_READER
#define WRITER VERB_ROLE_WRITER
#define ADMIN  VERB_ROLE_ADMIN

/*
 * The role column: connection verbs, checks and descriptions are for
 * readers; adds and deletes for writers; everything that creates, drops,
 * replaces, rotates, reshapes or writes a filter to or from a file is for
 * admins. BF.RESERVE and CF.RESERVE create (VERB_CREATES: a writer may
 * when [roles] writer_create = yes, within its quotas). BF.INSERT,
 * CF.INSERT and CF.INSERTNX add, and create the filter they name when it
 * is missing (unless NOCREATE): writer, and the create is checked where it
 * happens (cmd_create() asks allow_create()).
 */
static const struct verb verbs[] = {
	{ "auth", 2, -1, CONN | VERB_NOAUTH | READER, 0, cmd_auth, "Authenticates the connection." },
	{ "hello", 1, -1, CONN | VERB_NOAUTH | READER, 0, cmd_hello,
	  "Handshakes with the server in RESP2 or RESP3, optionally authenticating and naming the connection." },
	{ "quit", 1, -1, CONN | VERB_TXN | VERB_NOAUTH | READER, 0, cmd_quit, "Closes the connection." },
	{ "reset", 1, 1, CONN | VERB_TXN | VERB_NOAUTH | READER, 0, cmd_reset,
	  "Resets the connection: its name, its library and, over TCP with a password, its authentication." },
	{ "client", 2, -1, CONN | READER | VERB_REPLY_LIST, 0, cmd_client, "Names and describes the connection." },
	{ "select", 2, 2, CONN | READER, 0, cmd_select, "Selects database 0, the only one." },
	{ "echo", 2, 2, CONN | READER | VERB_REPLY_ECHO, 0, cmd_echo, "Returns the given string." },
	{ "command", 1, -1, CONN | READER | VERB_REPLY_COMMAND, 0, cmd_command, "Describes the verbs shmd serves." },
	{ "info", 1, -1, CONN | READER | VERB_REPLY_LIST, 0, cmd_info,
	  "Describes the server: server, clients, stats and keyspace." },
	{ "ping", 1, 2, READS | READER | VERB_REPLY_ECHO, 0, cmd_ping, "Returns PONG, or the given string." },
	{ "time", 1, 1, CONN | READER, 0, cmd_time, "Returns the server's time: unix seconds and microseconds." },
	/* Transactions (multi.h): MULTI queues, EXEC runs the queue in one go. */
	{ "multi", 1, 1, CONN | VERB_TXN | READER, 0, cmd_multi, "Starts a transaction." },
	{ "exec", 1, 1, CONN | VERB_TXN | READER | VERB_REPLY_EXEC, 0, cmd_exec,
	  "Executes the commands queued since MULTI, with no other client's between." },
	{ "discard", 1, 1, CONN | VERB_TXN | READER, 0, cmd_discard, "Discards the commands queued since MULTI." },
	{ "watch", 2, -1, CONN | VERB_TXN | READER, 0, cmd_watch,
	  "Accepted and ignored: EXEC never aborts for a watched filter." },
	{ "unwatch", 1, 1, CONN | VERB_TXN | READER, 0, cmd_unwatch, "Accepted and ignored." },

	/* The keyspace (keyspace.h): the filters' names are its keys.
	 * Dropping a filter, or setting the time it will be dropped, is
	 * administration, as SHMF.DROP is. */
	{ "del", 2, -1, WRITES | ADMIN, 1, cmd_del, "Drops filters: how many there were." },
	{ "unlink", 2, -1, WRITES | ADMIN, 1, cmd_del, "Drops filters: how many there were (as DEL)." },
	{ "exists", 2, -1, READS | READER, 1, cmd_exists, "Returns how many of the names are filters." },
	{ "type", 2, 2, READS | READER, 1, cmd_type,
	  "Returns a filter's type: MBbloom-- (Bloom), MBbloomCF (cuckoo) or none." },
	{ "scan", 2, -1, READS | READER | VERB_REPLY_LIST, 0, cmd_scan, "Iterates over the filters' names." },
	{ "keys", 2, 2, READS | READER | VERB_REPLY_LIST, 0, cmd_keys,
	  "Returns the filters' names matching a glob pattern." },
	{ "dbsize", 1, 1, READS | READER, 0, cmd_dbsize, "Returns the number of filters." },
	{ "flushall", 1, 2, WRITES | ADMIN, 0, cmd_flushall,
	  "Drops every filter (only with flushall = yes in [defaults])." },
	{ "flushdb", 1, 2, WRITES | ADMIN, 0, cmd_flushall,
	  "Drops every filter (only with flushall = yes in [defaults])." },
	{ "expire", 3, 4, WRITES | ADMIN, 1, cmd_expire, "Drops a filter after a number of seconds." },
	{ "pexpire", 3, 4, WRITES | ADMIN, 1, cmd_expire, "Drops a filter after a number of milliseconds." },
	{ "expireat", 3, 4, WRITES | ADMIN, 1, cmd_expire, "Drops a filter at a unix time in seconds." },
	{ "pexpireat", 3, 4, WRITES | ADMIN, 1, cmd_expire, "Drops a filter at a unix time in milliseconds." },
	{ "persist", 2, 2, WRITES | ADMIN, 1, cmd_persist, "Removes a filter's expiry." },
	{ "ttl", 2, 2, READS | READER, 1, cmd_ttl,
	  "Returns a filter's time to live in seconds (-1 none, -2 no filter)." },
	{ "pttl", 2, 2, READS | READER, 1, cmd_ttl,
	  "Returns a filter's time to live in milliseconds (-1 none, -2 no filter)." },
	{ "expiretime", 2, 2, READS | READER, 1, cmd_ttl, "Returns the unix time in seconds a filter expires at." },
	{ "pexpiretime", 2, 2, READS | READER, 1, cmd_ttl,
	  "Returns the unix time in milliseconds a filter expires at." },

	{ "bf.reserve", 4, -1, WRITES | ADMIN | VERB_CREATES, 1, cmd_bf_reserve,
	  "Creates a Bloom filter for a capacity and an error rate." },
	{ "bf.add", 3, 3, WRITES | WRITER, 1, cmd_bf_add, "Adds an item to a Bloom filter: 1 if it was new." },
	{ "bf.madd", 3, -1, WRITES | WRITER | VERB_REPLY_ITEMS, 1, cmd_bf_madd,
	  "Adds items to a Bloom filter: 1 for each that was new." },
	{ "bf.exists", 3, 3, READS | READER, 1, cmd_bf_exists, "Checks whether an item may be in a Bloom filter." },
	{ "bf.mexists", 3, -1, READS | READER | VERB_REPLY_ITEMS, 1, cmd_bf_mexists,
	  "Checks whether each item may be in a Bloom filter." },
	{ "bf.info", 2, 3, READS | READER | VERB_REPLY_LIST, 1, cmd_bf_info,
	  "Returns a Bloom filter's capacity, size and items." },
	{ "bf.card", 2, 2, READS | READER, 1, cmd_bf_card, "Returns how many items were added to a Bloom filter." },
	{ "bf.insert", 4, -1, WRITES | WRITER | VERB_REPLY_ITEMS, 1, cmd_bf_insert,
	  "Adds items to a Bloom filter, creating it when missing." },

	{ "cf.reserve", 3, -1, WRITES | ADMIN | VERB_CREATES, 1, cmd_cf_reserve,
	  "Creates a cuckoo filter for a capacity." },
	{ "cf.add", 3, 3, WRITES | WRITER, 1, cmd_cf_add, "Adds a copy of an item to a cuckoo filter." },
	{ "cf.addnx", 3, 3, WRITES | WRITER, 1, cmd_cf_addnx,
	  "Adds an item to a cuckoo filter unless it may be there." },
	{ "cf.insert", 4, -1, WRITES | WRITER | VERB_REPLY_ITEMS, 1, cmd_cf_insert,
	  "Adds items to a cuckoo filter, creating it when missing." },
	{ "cf.insertnx", 4, -1, WRITES | WRITER | VERB_REPLY_ITEMS, 1, cmd_cf_insertnx,
	  "Adds the items that may not be there to a cuckoo filter, creating it when missing." },
	{ "cf.exists", 3, 3, READS | READER, 1, cmd_cf_exists, "Checks whether an item may be in a cuckoo filter." },
	{ "cf.mexists", 3, -1, READS | READER | VERB_REPLY_ITEMS, 1, cmd_cf_mexists,
	  "Checks whether each item may be in a cuckoo filter." },
	{ "cf.del", 3, 3, WRITES | WRITER, 1, cmd_cf_del, "Deletes one copy of an item from a cuckoo filter." },
	{ "cf.count", 3, 3, READS | READER, 1, cmd_cf_count,
	  "Returns how many copies of an item a cuckoo filter may hold." },
	{ "cf.info", 2, 2, READS | READER | VERB_REPLY_LIST, 1, cmd_cf_info,
	  "Returns a cuckoo filter's size, buckets and items." },
	{ "cf.compact", 2, 2, WRITES | WRITER, 1, cmd_cf_compact,
	  "Does nothing: a cuckoo filter here is one table, with nothing to compact." },
	{ "shmf.addcapped", 4, 4, WRITES | WRITER, 1, cmd_shmf_addcapped,
	  "Adds a copy of an item to a cuckoo filter only while it holds fewer than a cap." },

	{ "shmf.list", 1, 1, READS | READER | VERB_REPLY_LIST, 0, cmd_shmf_list, "Returns the names of the filters." },
	{ "shmf.info", 2, 2, READS | READER | VERB_REPLY_LIST, 1, cmd_shmf_info,
	  "Describes a filter: its shape, items, data file, mode and time window." },
	{ "shmf.drop", 2, 2, WRITES | ADMIN, 1, cmd_shmf_drop, "Drops a filter and removes its data files." },
	{ "shmf.snapshot", 3, 4, FILE_VERB | ADMIN | VERB_REPLY_LIST, 1, cmd_shmf_snapshot,
	  "Writes a snapshot of a filter to a file on the daemon's host (FORCE: over a file that is not a snapshot)." },
	{ "shmf.swap", 3, 4, FILE_VERB | ADMIN | VERB_REPLY_LIST, 1, cmd_shmf_swap,
	  "Replaces a filter with the one in a snapshot file on the daemon's host (RESHAPE: also of another shape)." },
	{ "shmf.restore", 3, 3, FILE_VERB | ADMIN | VERB_REPLY_LIST, 1, cmd_shmf_restore,
	  "Creates or replaces a filter from a snapshot file on the daemon's host." },
	{ "shmf.rotate", 2, 2, WRITES | ADMIN, 1, cmd_shmf_rotate,
	  "Starts a new generation of a time-windowed filter, retiring the oldest." },
	/* Key 0: the filter is optional (none: every replicated filter). */
	{ "shmf.replication", 1, 2, READS | READER | VERB_REPLY_FLEET, 0, cmd_shmf_replication,
	  "Describes the replication of one or every replicated filter: state, cursor, lag, counters, nodes." },
	{ "shmf.chmod", 3, 3, WRITES | ADMIN, 1, cmd_shmf_chmod,
	  "Changes the mode of a filter's data files, every live generation's, in place." },
	{ "shmf.resize", 3, 4, WRITES | ADMIN, 1, cmd_shmf_resize,
	  "Gives a filter a new capacity (and error rate) where that can be done without its keys." },

	/* Fleets: a filter chunk by chunk (shmd's chunks, which
	 * RedisBloom does not load; dumps are reads, a load creates or
	 * replaces a filter), and a Bloom snapshot merged into a live filter. */
	{ "bf.scandump", 3, 3, READS | READER | VERB_LOCKS | VERB_REPLY_CHUNK, 1, cmd_bf_scandump,
	  "Returns the next chunk of a Bloom filter's dump, from iterator 0 until the iterator is 0." },
	{ "bf.loadchunk", 4, 4, WRITES | ADMIN, 1, cmd_bf_loadchunk,
	  "Loads a chunk of a Bloom filter's dump; the last one publishes the filter, new or replaced." },
	{ "cf.scandump", 3, 3, READS | READER | VERB_LOCKS | VERB_REPLY_CHUNK, 1, cmd_cf_scandump,
	  "Returns the next chunk of a cuckoo filter's dump, from iterator 0 until the iterator is 0." },
	{ "cf.loadchunk", 4, 4, WRITES | ADMIN, 1, cmd_cf_loadchunk,
	  "Loads a chunk of a cuckoo filter's dump; the last one publishes the filter, new or replaced." },
	{ "shmf.merge", 3, 3, FILE_VERB | ADMIN | VERB_REPLY_LIST, 1, cmd_shmf_merge,
	  "ORs a Bloom snapshot file on the daemon's host into the live filter of the same shape." },

	/* The daemon itself: never over TCP, like the file verbs. */
	{ "shmf.reload", 1, 1, VERB_WRITES | VERB_ROLE_ADMIN | VERB_REPLY_LIST, 0, cmd_shmf_reload,
	  "Reloads shmd's configuration file: creates new filters, applies what changes live, refuses shape "
	  "changes; returns what it did." },
};

/* ---- What a reply can take at most (the VERB_REPLY_* kinds) ----------- */

size_t verb_reply_max(const struct verb *v, const struct request *req)
{
	size_t n = 64;
	switch (v->flags & VERB_REPLY_MASK) {
	case VERB_REPLY_ITEMS:
		/* An item per argument (those before the items too), or an
		 * error in the place of one. */
		return VERB_REPLY_SMALL + 5 * (size_t)req->argc;
	case VERB_REPLY_ECHO:
		for (int i = 1; i < req->argc; i++)
			n += req->lens[i] + 16;
		return n;
	case VERB_REPLY_LIST:
		/* At most a line or a name (63 bytes) for each of the
		 * SHMF_SLOTS filters (INFO, KEYS, SCAN, SHMF.LIST, SHMF.RELOAD's
		 * report of RELOAD_LINES lines), one filter's fields with its
		 * generations and layers, CLIENT INFO with a 4 KiB name. */
		return (size_t)SHMF_SLOTS * 1024;
	case VERB_REPLY_CHUNK: return SHMF_CHUNK_BYTES + VERB_REPLY_SMALL;
	case VERB_REPLY_FLEET:
		/* Each replicated filter's fields and up to 32 nodes. */
		return (size_t)SHMF_SLOTS * (8u << 10);
	case VERB_REPLY_COMMAND: return command_reply_max(req);
	default: return VERB_REPLY_SMALL;
	}
}

const struct verb *verbs_of(const struct request *req)
{
	return req->argc > 0 ? verbs_find(req->argv[0], req->lens[0]) : NULL;
}

size_t verbs_reply_max(const struct session *s, const struct verb *v, const struct request *req)
{
	if (v == NULL || !verb_arity_ok(v, req->argc) || (s->in_multi && !(v->flags & VERB_TXN)))
		return VERB_REPLY_SMALL; /* an error, or +QUEUED */
	if ((v->flags & VERB_REPLY_MASK) == VERB_REPLY_EXEC)
		return 64 + queue_reply_max(s->multi);
	return verb_reply_max(v, req);
}

/* Inside MULTI, take request @p req (verb @p v) for the queue: reply
 * +QUEUED, or the error that makes EXEC abort. */
static void queue_request(struct session *s, const struct verb *v, const struct request *req, struct reply *out)
{
	int rc;
	if (v->flags & VERB_NAMES_FILE) {
		reply_error(out, "ERR Command not allowed inside a transaction: %s names a file on the daemon's host",
			    v->name);
		s->multi_dirty = 1;
		return;
	}
	rc = queue_push(&s->multi, req, verb_reply_max(v, req));
	if (rc == SHMF_E_TOOBIG) {
		reply_error(out, "ERR transaction too large: at most %d commands and %u MiB queued", QUEUE_MAX_REQUESTS,
			    QUEUE_MAX_BYTES >> 20);
		s->multi_dirty = 1;
	} else if (rc == -ERANGE) {
		reply_error(out,
			    "ERR transaction too large: EXEC's replies could pass %u MiB, the most a connection's "
			    "unread replies may hold (docs/protocol.md, Limits)",
			    REPLY_UNSENT_MAX >> 20);
		s->multi_dirty = 1;
	} else if (rc < 0) {
		reply_error(out, "ERR out of memory queueing the command");
		s->multi_dirty = 1;
	} else {
		reply_status(out, "QUEUED");
	}
}

/* Whether a request EXEC would run waits: a file job holds a filter it
 * would change or lock. */
static int queue_waits(const struct session *s)
{
	for (size_t i = 0; i < queue_len(s->multi); i++) {
		const struct request *req = queue_at(s->multi, i);
		const struct verb *v = verbs_find(req->argv[0], req->lens[0]);
		if (v != NULL && v->key > 0 && v->key < req->argc && (v->flags & (VERB_WRITES | VERB_LOCKS)) &&
		    jobs_busy(req->argv[v->key]))
			return 1;
	}
	return 0;
}

static const char NOAUTH[] = "NOAUTH Authentication required.";

const struct verb *verbs_at(size_t i)
{
	return i < sizeof(verbs) / sizeof(verbs[0]) ? &verbs[i] : NULL;
}

const struct verb *verbs_find(const char *name, size_t len)
{
	/* The first letter first: most rows differ there, and a check over
	 * TCP should not pay for a string comparison with every verb. */
	const int first = tolower((unsigned char)name[0]);
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (verbs[i].name[0] == first && strcasecmp(name, verbs[i].name) == 0 && strlen(name) == len)
			return &verbs[i];
	return NULL;
}

/* 1 if session @p s may run verb @p v (NULL: unknown) with these
 * arguments; else 0, and the reply says why. */
static int may_run(const struct session *s, const struct verb *v, const struct request *req, struct reply *out)
{
	if (!s->authed && (v == NULL || !(v->flags & VERB_NOAUTH)))
		reply_error(out, "%s", NOAUTH);
	else if (v == NULL && keyspace_foreign_verb(req->argv[0], req->lens[0]))
		reply_error(out,
			    "ERR shmd serves only Bloom and cuckoo filters: '%.*s' is a Redis data command it does "
			    "not have (BF.*, CF.* and the keyspace commands are served)",
			    32, req->argv[0]);
	else if (v == NULL)
		reply_error(out, "ERR unknown command '%.*s'", 64, req->argv[0]);
	else if (s->kind == SESSION_TCP && !(v->flags & VERB_TCP_OK))
		reply_error(out, "ERR %.*s is refused over TCP: %s (use the unix socket)", 16, req->argv[0],
			    v->flags & VERB_NAMES_FILE
				    ? "it names a file on the daemon's host, which a network client may not"
				    : "it administers the daemon itself, which a network client may not");
	else if (!verb_arity_ok(v, req->argc))
		reply_error(out, "ERR wrong number of arguments for '%s' command", v->name);
	else
		return 1;
	return 0;
}

int verbs_dispatch(struct session *s, struct registry *reg, const struct request *req, struct reply *out)
{
	return verbs_dispatch_row(s, reg, verbs_of(req), req, out);
}

int verbs_dispatch_row(struct session *s, struct registry *reg, const struct verb *v, const struct request *req,
		       struct reply *out)
{
	out->proto = s->proto;
	if (req->argc < 1) {
		reply_error(out, "ERR empty request");
		return VERB_DONE;
	}
	if (!may_run(s, v, req, out)) {
		s->multi_dirty |= s->in_multi; /* Redis: EXEC then answers -EXECABORT */
		return VERB_DONE;
	}
	if (s->in_multi && !(v->flags & VERB_TXN)) {
		queue_request(s, v, req, out);
		return VERB_DONE;
	}
	/* EXEC runs its queue in one go: it waits while a file job holds a
	 * filter one of them would change. */
	if ((v->flags & VERB_REPLY_MASK) == VERB_REPLY_EXEC && s->in_multi && queue_waits(s))
		return VERB_WAIT;
	struct verb_call c = { .req = req, .out = out, .reg = reg, .sess = s, .peer = &s->peer };
	if (v->key > 0) {
		const char *name = req->argv[v->key];
		c.key_rc = strlen(name) == req->lens[v->key] ? shmf_name_check(name) : SHMF_E_NAME;
	}
	if (!allow_verb(&c, v))
		return VERB_DONE;
	/* A file job holds the filter: what would change it, or wait on its
	 * relocation lock, comes after, in order. Reads go on. */
	if (c.key_rc == 0 && v->key > 0 && (v->flags & (VERB_WRITES | VERB_LOCKS)) && jobs_busy(req->argv[v->key]))
		return VERB_WAIT;
	v->run(&c);
	return c.parked ? VERB_PARKED : c.wait ? VERB_WAIT : VERB_DONE;
}
