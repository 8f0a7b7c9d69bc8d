/*
 * expires.h - the filters' expiries: a filter given a time to live is
 * dropped when its time comes, as Redis drops an expired key (the
 * per-period reset that daily caps and unique counts rely on).
 *
 * Expiries are shmd's own state, not the control segment's (whose format
 * clients read): a table by filter name, kept in the file shmd-expires in
 * the instance directory (records.h: mode 0600, replaced whole on every
 * change), so that they survive a restart of shmd as the filters do, and
 * vanish with them when the runtime directory is emptied. A name's expiry
 * ends when the filter is dropped (DEL, SHMF.DROP, FLUSHALL, its expiry)
 * or created anew through the protocol; a filter replaced in place
 * (SHMF.SWAP, SHMF.RESTORE, LOADCHUNK) keeps it.
 *
 * Single-threaded, like the registry: called from the server loop only.
 * Each call loads the table from the instance directory on first use.
 */
#ifndef SHMD_EXPIRES_H
#define SHMD_EXPIRES_H

#include <stddef.h>
#include <stdint.h>

struct registry;

/** The expiry file's name in the instance directory. */
#define EXPIRES_FILE "shmd-expires"

/** Now, in unix milliseconds: the clock expiries are in. */
uint64_t expires_now_ms(void);

/** 1 if filter @p name has an expiry (its time into @p at_ms, unless NULL), else 0. */
int expires_get(struct registry *r, const char *name, uint64_t *at_ms);

/** Give filter @p name the expiry @p at_ms (unix milliseconds), and save the table. */
void expires_set(struct registry *r, const char *name, uint64_t at_ms);

/** Forget filter @p name's expiry, if it has one (and save the table). */
void expires_forget(struct registry *r, const char *name);

/**
 * Drop filter @p name now (SHMF.DROP, DEL, an expiry, FLUSHALL) with what
 * shmd keeps about it: its expiry and its writer's record (quotas.h),
 * forgotten too when no such filter was left. @return 0, or
 * registry_drop()'s error, said in @p err.
 */
int expires_drop(struct registry *r, const char *name, char *err, size_t errlen);

/** expires_drop(), a failure logged: 1 dropped, 0 there was none (or it failed). */
int expires_drop_logged(struct registry *r, const char *name);

/**
 * Drop every filter whose expiry is at or before @p now_ms (unix
 * milliseconds), logging each. Called by the server loop's tick, about
 * once a second.
 */
void expires_tick(struct registry *r, uint64_t now_ms);

#endif
