/*
 * verbs.c - the verb table (see verbs.h).
 *
 * The rows are in the order COMMAND lists them: the connection verbs,
 * then the filter verbs by family. The handlers live in a file per
 * family (handlers.h): verbs-connection.c, verbs-compat.c (COMMAND,
 * INFO), verbs-multi.c, verbs-keyspace.c, verbs-bloom.c, verbs-cuckoo.c,
 * verbs-admin.c, verbs-perms.c and verbs-scandump.c.
 */
#include <ctype.h>
#include <string.h>

#include "common/snapshot-format.h"
#include "shmd/verbs/handlers.h"
#include "shmd/verbs/verbs.h"

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
 * happens (call_create() asks allow_create()).
 */
static const struct verb verbs[] = {
	{ "auth", 2, -1, CONN | VERB_NOAUTH | READER, 0, 0, cmd_auth, "connection", "[username:string] password:string",
	  "Authenticates the connection." },
	{ "hello", 1, -1, CONN | VERB_NOAUTH | READER, 0, 0, cmd_hello, "connection",
	  "[protover:integer] [AUTH username:string password:string] [SETNAME clientname:string]",
	  "Handshakes with the server in RESP2 or RESP3, optionally authenticating and naming the connection." },
	{ "quit", 1, -1, CONN | VERB_TXN | VERB_NOAUTH | READER, 0, 0, cmd_quit, "connection", "",
	  "Closes the connection." },
	{ "reset", 1, 1, CONN | VERB_TXN | VERB_NOAUTH | READER, 0, 0, cmd_reset, "connection", "",
	  "Resets the connection: its name, its library and, over TCP with a password, its authentication." },
	{ "client", 2, -1, CONN | READER | VERB_REPLY_LIST, 0, 0, cmd_client, "connection",
	  "subcommand:string [arg:string...]", "Names and describes the connection." },
	{ "select", 2, 2, CONN | READER, 0, 0, cmd_select, "connection", "index:integer",
	  "Selects database 0, the only one." },
	{ "echo", 2, 2, CONN | READER | VERB_REPLY_ECHO, 0, 0, cmd_echo, "connection", "message:string",
	  "Returns the given string." },
	{ "command", 1, -1, CONN | READER | VERB_REPLY_COMMAND, 0, 0, cmd_command, "server",
	  "[subcommand:string] [arg:string...]", "Describes the verbs shmd serves." },
	{ "info", 1, -1, CONN | READER | VERB_REPLY_LIST, 0, 0, cmd_info, "server", "[section:string...]",
	  "Describes the server: server, clients, stats and keyspace." },
	{ "ping", 1, 2, READS | READER | VERB_REPLY_ECHO, 0, 0, cmd_ping, "connection", "[message:string]",
	  "Returns PONG, or the given string." },
	{ "time", 1, 1, CONN | READER, 0, 0, cmd_time, "server", "",
	  "Returns the server's time: unix seconds and microseconds." },
	/* Transactions (verbs-multi.c): MULTI queues, EXEC runs the queue in one go. */
	{ "multi", 1, 1, CONN | VERB_TXN | READER, 0, 0, cmd_multi, "transactions", "", "Starts a transaction." },
	{ "exec", 1, 1, CONN | VERB_TXN | READER | VERB_REPLY_EXEC, 0, 0, cmd_exec, "transactions", "",
	  "Executes the commands queued since MULTI, with no other client's between." },
	{ "discard", 1, 1, CONN | VERB_TXN | READER, 0, 0, cmd_discard, "transactions", "",
	  "Discards the commands queued since MULTI." },
	{ "watch", 2, -1, CONN | VERB_TXN | READER, 0, 0, cmd_watch, "transactions", "filter:string...",
	  "Accepted and ignored: EXEC never aborts for a watched filter." },
	{ "unwatch", 1, 1, CONN | VERB_TXN | READER, 0, 0, cmd_unwatch, "transactions", "", "Accepted and ignored." },

	/* The keyspace (verbs-keyspace.c): the filters' names are its keys.
	 * Dropping a filter, or setting the time it will be dropped, is
	 * administration, as SHMF.DROP is. */
	{ "del", 2, -1, WRITES | ADMIN, 1, -1, cmd_del, "generic", "key...", "Drops filters: how many there were." },
	{ "unlink", 2, -1, WRITES | ADMIN, 1, -1, cmd_del, "generic", "key...",
	  "Drops filters: how many there were (as DEL)." },
	{ "exists", 2, -1, READS | READER, 1, -1, cmd_exists, "generic", "key...",
	  "Returns how many of the names are filters." },
	{ "type", 2, 2, READS | READER, 1, 1, cmd_type, "generic", "key",
	  "Returns a filter's type: MBbloom-- (Bloom), MBbloomCF (cuckoo) or none." },
	{ "scan", 2, -1, READS | READER | VERB_REPLY_LIST, 0, 0, cmd_scan, "generic",
	  "cursor:integer [MATCH pattern:pattern] [COUNT count:integer] [TYPE type:string]",
	  "Iterates over the filters' names." },
	{ "keys", 2, 2, READS | READER | VERB_REPLY_LIST, 0, 0, cmd_keys, "generic", "pattern:pattern",
	  "Returns the filters' names matching a glob pattern." },
	{ "dbsize", 1, 1, READS | READER, 0, 0, cmd_dbsize, "server", "", "Returns the number of filters." },
	{ "flushall", 1, 2, WRITES | ADMIN, 0, 0, cmd_flushall, "server", "[ASYNC|SYNC]",
	  "Drops every filter (only with flushall = yes in [defaults])." },
	{ "flushdb", 1, 2, WRITES | ADMIN, 0, 0, cmd_flushall, "server", "[ASYNC|SYNC]",
	  "Drops every filter (only with flushall = yes in [defaults])." },
	{ "expire", 3, 4, WRITES | ADMIN, 1, 1, cmd_expire, "generic", "key seconds:integer [NX|XX|GT|LT]",
	  "Drops a filter after a number of seconds." },
	{ "pexpire", 3, 4, WRITES | ADMIN, 1, 1, cmd_expire, "generic", "key milliseconds:integer [NX|XX|GT|LT]",
	  "Drops a filter after a number of milliseconds." },
	{ "expireat", 3, 4, WRITES | ADMIN, 1, 1, cmd_expire, "generic",
	  "key unix-time-seconds:unix-time [NX|XX|GT|LT]", "Drops a filter at a unix time in seconds." },
	{ "pexpireat", 3, 4, WRITES | ADMIN, 1, 1, cmd_expire, "generic",
	  "key unix-time-milliseconds:unix-time [NX|XX|GT|LT]", "Drops a filter at a unix time in milliseconds." },
	{ "persist", 2, 2, WRITES | ADMIN, 1, 1, cmd_persist, "generic", "key", "Removes a filter's expiry." },
	{ "ttl", 2, 2, READS | READER, 1, 1, cmd_ttl, "generic", "key",
	  "Returns a filter's time to live in seconds (-1 none, -2 no filter)." },
	{ "pttl", 2, 2, READS | READER, 1, 1, cmd_ttl, "generic", "key",
	  "Returns a filter's time to live in milliseconds (-1 none, -2 no filter)." },
	{ "expiretime", 2, 2, READS | READER, 1, 1, cmd_ttl, "generic", "key",
	  "Returns the unix time in seconds a filter expires at." },
	{ "pexpiretime", 2, 2, READS | READER, 1, 1, cmd_ttl, "generic", "key",
	  "Returns the unix time in milliseconds a filter expires at." },

	{ "bf.reserve", 4, -1, WRITES | ADMIN | VERB_CREATES, 1, 1, cmd_bf_reserve, "bf",
	  "key error_rate:double capacity:integer [EXPANSION expansion:integer] [NONSCALING] [FIXED] "
	  "[MODE mode:string] [WINDOW duration:string] [GENERATIONS generations:integer] [REPLICATE]",
	  "Creates a Bloom filter for a capacity and an error rate." },
	{ "bf.add", 3, 3, WRITES | WRITER, 1, 1, cmd_bf_add, "bf", "key item:string",
	  "Adds an item to a Bloom filter: 1 if it was new." },
	{ "bf.madd", 3, -1, WRITES | WRITER | VERB_REPLY_ITEMS, 1, 1, cmd_bf_madd, "bf", "key item:string...",
	  "Adds items to a Bloom filter: 1 for each that was new." },
	{ "bf.exists", 3, 3, READS | READER, 1, 1, cmd_bf_exists, "bf", "key item:string",
	  "Checks whether an item may be in a Bloom filter." },
	{ "bf.mexists", 3, -1, READS | READER | VERB_REPLY_ITEMS, 1, 1, cmd_bf_mexists, "bf", "key item:string...",
	  "Checks whether each item may be in a Bloom filter." },
	{ "bf.info", 2, 3, READS | READER | VERB_REPLY_LIST, 1, 1, cmd_bf_info, "bf",
	  "key [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION]", "Returns a Bloom filter's capacity, size and items." },
	{ "bf.card", 2, 2, READS | READER, 1, 1, cmd_bf_card, "bf", "key",
	  "Returns how many items were added to a Bloom filter." },
	{ "bf.insert", 4, -1, WRITES | WRITER | VERB_REPLY_ITEMS, 1, 1, cmd_bf_insert, "bf",
	  "key [CAPACITY capacity:integer] [ERROR error:double] [EXPANSION expansion:integer] "
	  "[NOCREATE] [NONSCALING] [MODE mode:string] ITEMS item:string...",
	  "Adds items to a Bloom filter, creating it when missing." },

	{ "cf.reserve", 3, -1, WRITES | ADMIN | VERB_CREATES, 1, 1, cmd_cf_reserve, "cf",
	  "key capacity:integer [BUCKETSIZE bucketsize:integer] [MAXITERATIONS "
	  "maxiterations:integer] [EXPANSION expansion:integer] [ERROR error:double] [MODE "
	  "mode:string] [WINDOW duration:string] [GENERATIONS generations:integer] [REPLICATE]",
	  "Creates a cuckoo filter for a capacity." },
	{ "cf.add", 3, 3, WRITES | WRITER, 1, 1, cmd_cf_add, "cf", "key item:string",
	  "Adds a copy of an item to a cuckoo filter." },
	{ "cf.addnx", 3, 3, WRITES | WRITER, 1, 1, cmd_cf_addnx, "cf", "key item:string",
	  "Adds an item to a cuckoo filter unless it may be there." },
	{ "cf.insert", 4, -1, WRITES | WRITER | VERB_REPLY_ITEMS, 1, 1, cmd_cf_insert, "cf",
	  "key [CAPACITY capacity:integer] [NOCREATE] ITEMS item:string...",
	  "Adds items to a cuckoo filter, creating it when missing." },
	{ "cf.insertnx", 4, -1, WRITES | WRITER | VERB_REPLY_ITEMS, 1, 1, cmd_cf_insertnx, "cf",
	  "key [CAPACITY capacity:integer] [NOCREATE] ITEMS item:string...",
	  "Adds the items that may not be there to a cuckoo filter, creating it when missing." },
	{ "cf.exists", 3, 3, READS | READER, 1, 1, cmd_cf_exists, "cf", "key item:string",
	  "Checks whether an item may be in a cuckoo filter." },
	{ "cf.mexists", 3, -1, READS | READER | VERB_REPLY_ITEMS, 1, 1, cmd_cf_mexists, "cf", "key item:string...",
	  "Checks whether each item may be in a cuckoo filter." },
	{ "cf.del", 3, 3, WRITES | WRITER, 1, 1, cmd_cf_del, "cf", "key item:string",
	  "Deletes one copy of an item from a cuckoo filter." },
	{ "cf.count", 3, 3, READS | READER, 1, 1, cmd_cf_count, "cf", "key item:string",
	  "Returns how many copies of an item a cuckoo filter may hold." },
	{ "cf.info", 2, 2, READS | READER | VERB_REPLY_LIST, 1, 1, cmd_cf_info, "cf", "key",
	  "Returns a cuckoo filter's size, buckets and items." },
	{ "cf.compact", 2, 2, WRITES | WRITER, 1, 1, cmd_cf_compact, "cf", "key",
	  "Does nothing: a cuckoo filter here is one table, with nothing to compact." },
	{ "shmf.addcapped", 4, 4, WRITES | WRITER, 1, 1, cmd_shmf_addcapped, "shmf", "key item:string cap:integer",
	  "Adds a copy of an item to a cuckoo filter only while it holds fewer than a cap." },

	{ "shmf.list", 1, 1, READS | READER | VERB_REPLY_LIST, 0, 0, cmd_shmf_list, "shmf", "",
	  "Returns the names of the filters." },
	{ "shmf.info", 2, 2, READS | READER | VERB_REPLY_LIST, 1, 1, cmd_shmf_info, "shmf", "key",
	  "Describes a filter: its shape, items, data file, mode and time window." },
	{ "shmf.drop", 2, 2, WRITES | ADMIN, 1, 1, cmd_shmf_drop, "shmf", "key",
	  "Drops a filter and removes its data files." },
	{ "shmf.snapshot", 3, 4, FILE_VERB | ADMIN | VERB_REPLY_LIST, 1, 1, cmd_shmf_snapshot, "shmf",
	  "key path:string [FORCE]",
	  "Writes a snapshot of a filter to a file on the daemon's host (FORCE: over a file that is not a snapshot)." },
	{ "shmf.swap", 3, 4, FILE_VERB | ADMIN | VERB_REPLY_LIST, 1, 1, cmd_shmf_swap, "shmf",
	  "key path:string [RESHAPE]",
	  "Replaces a filter with the one in a snapshot file on the daemon's host (RESHAPE: also of another shape)." },
	{ "shmf.restore", 3, 3, FILE_VERB | ADMIN | VERB_REPLY_LIST, 1, 1, cmd_shmf_restore, "shmf", "key path:string",
	  "Creates or replaces a filter from a snapshot file on the daemon's host." },
	{ "shmf.rotate", 2, 2, WRITES | ADMIN, 1, 1, cmd_shmf_rotate, "shmf", "key",
	  "Starts a new generation of a time-windowed filter, retiring the oldest." },
	/* Key 0: the filter is optional (none: every replicated filter). */
	{ "shmf.replication", 1, 2, READS | READER | VERB_REPLY_FLEET, 0, 0, cmd_shmf_replication, "shmf",
	  "[filter:string]",
	  "Describes the replication of one or every replicated filter: state, cursor, lag, counters, nodes." },
	{ "shmf.chmod", 3, 3, WRITES | ADMIN, 1, 1, cmd_shmf_chmod, "shmf", "key mode:string",
	  "Changes the mode of a filter's data files, every live generation's, in place." },
	{ "shmf.resize", 3, 4, WRITES | ADMIN, 1, 1, cmd_shmf_resize, "shmf",
	  "key capacity:integer [error_rate:double]",
	  "Gives a filter a new capacity (and error rate) where that can be done without its keys." },

	/* Fleets: a filter chunk by chunk (shmd's chunks, which
	 * RedisBloom does not load; dumps are reads, a load creates or
	 * replaces a filter), and a Bloom snapshot merged into a live filter. */
	{ "bf.scandump", 3, 3, READS | READER | VERB_LOCKS | VERB_REPLY_CHUNK, 1, 1, cmd_bf_scandump, "bf",
	  "key iterator:integer",
	  "Returns the next chunk of a Bloom filter's dump, from iterator 0 until the iterator is 0." },
	{ "bf.loadchunk", 4, 4, WRITES | ADMIN, 1, 1, cmd_bf_loadchunk, "bf", "key iterator:integer data:string",
	  "Loads a chunk of a Bloom filter's dump; the last one publishes the filter, new or replaced." },
	{ "cf.scandump", 3, 3, READS | READER | VERB_LOCKS | VERB_REPLY_CHUNK, 1, 1, cmd_cf_scandump, "cf",
	  "key iterator:integer",
	  "Returns the next chunk of a cuckoo filter's dump, from iterator 0 until the iterator is 0." },
	{ "cf.loadchunk", 4, 4, WRITES | ADMIN, 1, 1, cmd_cf_loadchunk, "cf", "key iterator:integer data:string",
	  "Loads a chunk of a cuckoo filter's dump; the last one publishes the filter, new or replaced." },
	{ "shmf.merge", 3, 3, FILE_VERB | ADMIN | VERB_REPLY_LIST, 1, 1, cmd_shmf_merge, "shmf", "key path:string",
	  "ORs a Bloom snapshot file on the daemon's host into the live filter of the same shape." },

	/* The daemon itself: never over TCP, like the file verbs. */
	{ "shmf.reload", 1, 1, VERB_WRITES | VERB_ROLE_ADMIN | VERB_REPLY_LIST, 0, 0, cmd_shmf_reload, "server", "",
	  "Reloads shmd's configuration file: creates new filters, applies what changes live, "
	  "refuses shape changes; returns what it did." },

	/* What operators and monitoring tools send (verbs-ops.c). CONFIG,
	 * SLOWLOG and MEMORY answer only a subcommand they have no row for. */
	{ "config", 2, -1, CONN | READER, 0, 0, cmd_subcommand_unknown, "server", "subcommand:string [arg:string...]",
	  "Reads shmd's configuration in Redis' parameter names; resets the statistics." },
	{ "slowlog", 2, -1, CONN | READER, 0, 0, cmd_subcommand_unknown, "server", "subcommand:string [arg:string...]",
	  "Reads and resets the log of slow commands." },
	{ "memory", 2, -1, CONN | READER, 0, 0, cmd_subcommand_unknown, "server", "subcommand:string [arg:string...]",
	  "Describes the memory of the server and of a filter." },

	/* Subcommands, a row each as in Redis ("client|kill" runs CLIENT
	 * KILL; the dispatcher finds it): listed inside their verb's COMMAND
	 * entry. Describing connections, the configuration and memory is for
	 * readers; closing another's connection, resetting statistics, and
	 * reading the slow log (it holds other clients' arguments: items and
	 * filter names a reader of some filters may not see) are for admins. */
	{ "client|id", 2, 2, CONN | READER, 0, 0, cmd_client_id, "connection", "",
	  "Returns the unique id of the connection." },
	{ "client|getname", 2, 2, CONN | READER | VERB_REPLY_LIST, 0, 0, cmd_client_getname, "connection", "",
	  "Returns the name of the connection, or nil." },
	{ "client|setname", 3, 3, CONN | READER, 0, 0, cmd_client_setname, "connection", "connection-name:string",
	  "Names the connection." },
	{ "client|setinfo", 4, 4, CONN | READER, 0, 0, cmd_client_setinfo, "connection",
	  "LIB-NAME|LIB-VER value:string", "Sets the name or version of the client library on the connection." },
	{ "client|info", 2, 2, CONN | READER | VERB_REPLY_LIST, 0, 0, cmd_client_info, "connection", "",
	  "Describes the connection, as a line of CLIENT LIST." },
	{ "client|list", 2, -1, CONN | READER | VERB_REPLY_CLIENTS, 0, 0, cmd_client_list, "connection",
	  "[TYPE type:string] [ID client-id:integer...]", "Describes every connection, a line each." },
	{ "client|kill", 3, -1, CONN | ADMIN, 0, 0, cmd_client_kill, "connection", "filter:string [value:string...]",
	  "Closes connections by id, address, user or age (the old form: by address)." },
	{ "client|no-evict", 3, 3, CONN | READER, 0, 0, cmd_client_onoff, "connection", "ON|OFF",
	  "Accepted and ignored: shmd evicts no connection for keys' memory." },
	{ "client|no-touch", 3, 3, CONN | READER, 0, 0, cmd_client_onoff, "connection", "ON|OFF",
	  "Accepted and ignored: shmd tracks no access time." },
	{ "client|reply", 3, 3, CONN | READER, 0, 0, cmd_client_reply, "connection", "ON|OFF|SKIP",
	  "Accepts ON only: every request gets its reply." },
	{ "client|help", 2, 2, CONN | READER | VERB_REPLY_LIST, 0, 0, cmd_client_help, "connection", "",
	  "Describes CLIENT's subcommands." },
	{ "config|get", 3, -1, CONN | READER | VERB_REPLY_LIST, 0, 0, cmd_config_get, "server", "parameter:pattern...",
	  "Returns the parameters matching glob patterns, in Redis' names, with shmd's values." },
	{ "config|set", 4, -1, CONN | ADMIN, 0, 0, cmd_config_set, "server", "parameter:string value:string",
	  "Refused: shmd's configuration is its file, applied by a reload." },
	{ "config|resetstat", 2, 2, CONN | ADMIN, 0, 0, cmd_config_resetstat, "server", "",
	  "Resets the statistics INFO reports: commandstats and the counts of stats." },
	{ "config|help", 2, 2, CONN | READER | VERB_REPLY_LIST, 0, 0, cmd_config_help, "server", "",
	  "Describes CONFIG's subcommands." },
	{ "slowlog|get", 2, 3, CONN | ADMIN | VERB_REPLY_SLOWLOG, 0, 0, cmd_slowlog_get, "server", "[count:integer]",
	  "Returns the newest entries of the slow log (10; -1: all)." },
	{ "slowlog|len", 2, 2, CONN | READER, 0, 0, cmd_slowlog_len, "server", "",
	  "Returns the number of entries in the slow log." },
	{ "slowlog|reset", 2, 2, CONN | ADMIN, 0, 0, cmd_slowlog_reset, "server", "", "Empties the slow log." },
	{ "slowlog|help", 2, 2, CONN | READER | VERB_REPLY_LIST, 0, 0, cmd_slowlog_help, "server", "",
	  "Describes SLOWLOG's subcommands." },
	{ "memory|usage", 3, 5, READS | READER, 2, 2, cmd_memory_usage, "server", "key [SAMPLES count:integer]",
	  "Returns the bytes of a filter's data segments, every generation and layer." },
	{ "memory|stats", 2, 2, CONN | READER | VERB_REPLY_LIST, 0, 0, cmd_memory_stats, "server", "",
	  "Describes the memory of the server: its heap, clients and filters." },
	{ "memory|help", 2, 2, CONN | READER | VERB_REPLY_LIST, 0, 0, cmd_memory_help, "server", "",
	  "Describes MEMORY's subcommands." },
};

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

const struct verb *verbs_of(const struct request *req)
{
	return req->argc > 0 ? verbs_find(req->argv[0], req->lens[0]) : NULL;
}
