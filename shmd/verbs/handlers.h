/*
 * handlers.h - every verb's handler, the table's handler column
 * (verbs.c), by the file that holds it; and the two things the table and
 * the dispatcher need of those files.
 */
#ifndef SHMD_HANDLERS_H
#define SHMD_HANDLERS_H

#include <stddef.h>

#include "shmd/verbs/verb.h"

/* verbs-connection.c: the CLIENT subcommands of the caller's own connection too */
verb_handler cmd_auth, cmd_hello, cmd_quit, cmd_reset, cmd_client, cmd_select, cmd_echo, cmd_ping;
verb_handler cmd_client_id, cmd_client_getname, cmd_client_setname, cmd_client_setinfo, cmd_client_onoff,
	cmd_client_reply, cmd_client_help;

/* verbs-clients.c: every connection */
verb_handler cmd_client_list, cmd_client_info, cmd_client_kill;

/** The most CLIENT LIST's reply can take in session @p s: a line for each connection open now, and one more. */
size_t client_list_reply_max(const struct session *s);

/* verbs-compat.c */
verb_handler cmd_command;

/* verbs-info.c */
verb_handler cmd_info;

/* verbs-ops.c: CONFIG, SLOWLOG, MEMORY; and a verb's answer to a subcommand it has no row for */
verb_handler cmd_subcommand_unknown, cmd_config_get, cmd_config_set, cmd_config_resetstat, cmd_config_help,
	cmd_slowlog_get, cmd_slowlog_len, cmd_slowlog_reset, cmd_slowlog_help, cmd_memory_usage, cmd_memory_stats,
	cmd_memory_help;

/** The most COMMAND's reply to @p req can take: every entry, or one per argument, at the largest entry's size. */
size_t command_reply_max(const struct request *req);

/* verbs-multi.c */
verb_handler cmd_multi, cmd_exec, cmd_discard, cmd_watch, cmd_unwatch;

/* verbs-keyspace.c */
verb_handler cmd_del, cmd_exists, cmd_type, cmd_scan, cmd_keys, cmd_dbsize, cmd_flushall, cmd_time, cmd_expire, cmd_ttl,
	cmd_persist;

/** 1 if @p name (@p len bytes, any case) is a Redis data command shmd does not serve (SET, GET, HSET...). */
int keyspace_foreign_verb(const char *name, size_t len);

/* verbs-bloom.c */
verb_handler cmd_bf_reserve, cmd_bf_add, cmd_bf_madd, cmd_bf_exists, cmd_bf_mexists, cmd_bf_info, cmd_bf_card,
	cmd_bf_insert;

/* verbs-cuckoo.c */
verb_handler cmd_cf_reserve, cmd_cf_add, cmd_cf_addnx, cmd_cf_insert, cmd_cf_insertnx, cmd_cf_exists, cmd_cf_mexists,
	cmd_cf_del, cmd_cf_count, cmd_cf_info, cmd_cf_compact, cmd_shmf_addcapped;

/* verbs-admin.c */
verb_handler cmd_shmf_list, cmd_shmf_info, cmd_shmf_drop, cmd_shmf_snapshot, cmd_shmf_swap, cmd_shmf_restore,
	cmd_shmf_rotate, cmd_shmf_replication, cmd_shmf_merge, cmd_shmf_reload;

/* verbs-perms.c */
verb_handler cmd_shmf_chmod, cmd_shmf_resize;

/* verbs-scandump.c: a filter chunk by chunk */
verb_handler cmd_bf_scandump, cmd_bf_loadchunk, cmd_cf_scandump, cmd_cf_loadchunk;

#endif
