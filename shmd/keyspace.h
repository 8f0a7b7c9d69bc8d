/*
 * keyspace.h - the Redis keyspace commands over shmd's filters, whose
 * names are the keys (DEL, UNLINK, EXISTS, TYPE, SCAN, KEYS, DBSIZE,
 * FLUSHALL, FLUSHDB, TIME, and the expiry commands over expires.h).
 */
#ifndef SHMD_KEYSPACE_H
#define SHMD_KEYSPACE_H

#include <stddef.h>
#include "verbs.h"

/** 1 if @p name (@p len bytes, any case) is a Redis data command shmd does not serve (SET, GET, HSET...). */
int keyspace_foreign_verb(const char *name, size_t len);

verb_handler cmd_del, cmd_exists, cmd_type, cmd_scan, cmd_keys, cmd_dbsize, cmd_flushall, cmd_time, cmd_expire, cmd_ttl,
	cmd_persist;

#endif
