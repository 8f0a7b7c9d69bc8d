/*
 * keyspace.h - the Redis keyspace commands over shmd's filters, whose
 * names are the keys (DEL, UNLINK, EXISTS, TYPE, SCAN, KEYS, DBSIZE,
 * FLUSHALL, FLUSHDB, TIME, and the expiry commands), and the expiries
 * themselves: a filter given a time to live is dropped when its time
 * comes, as Redis drops an expired key (the per-period reset that daily
 * caps and unique counts rely on).
 *
 * Expiries are shmd's own state, not the control segment's (whose format
 * clients read): a table by filter name, kept in the file shmd-expires in
 * the instance directory (mode 0600, replaced whole by rename on every
 * change), so that they survive a restart of shmd as the filters do, and
 * vanish with them when the runtime directory is emptied. A name's expiry
 * ends when the filter is dropped (DEL, SHMF.DROP, FLUSHALL, its expiry)
 * or created anew through the protocol; a filter replaced in place
 * (SHMF.SWAP, SHMF.RESTORE, LOADCHUNK) keeps it.
 *
 * Single-threaded, like the registry: called from the server loop only.
 */
#ifndef SHMD_KEYSPACE_H
#define SHMD_KEYSPACE_H

#include <stddef.h>
#include <stdint.h>

#include "registry.h"
#include "verbs.h"

/** The expiry file's name in the instance directory. */
#define KEYSPACE_EXPIRES_FILE "shmd-expires"

/** Forget filter @p name's expiry, if it has one (and save the table). */
void keyspace_forget(struct registry *r, const char *name);

/**
 * Drop every filter whose expiry is at or before @p now_ms (unix
 * milliseconds), logging each. Called by the server loop's tick, about
 * once a second; loads the table from the instance directory on first use.
 */
void keyspace_tick(struct registry *r, uint64_t now_ms);

/** 1 if @p name (@p len bytes, any case) is a Redis data command shmd does not serve (SET, GET, HSET...). */
int keyspace_foreign_verb(const char *name, size_t len);

verb_handler cmd_del, cmd_exists, cmd_type, cmd_scan, cmd_keys, cmd_dbsize, cmd_flushall, cmd_time, cmd_expire, cmd_ttl,
	cmd_persist;

#endif
