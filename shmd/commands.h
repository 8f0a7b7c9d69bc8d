/*
 * commands.h - the filter verbs of the control protocol (docs/protocol.md):
 * their handlers, one file per family (commands-bloom.c: BF.*,
 * commands-cuckoo.c: CF.* and the capped add, commands-admin.c: SHMF.*
 * administration and file verbs), and what the families share
 * (commands.c). The table in verbs.c names each handler.
 *
 * A handler is called with the arity checked; every error it finds is one
 * `-ERR ...` reply naming what was wrong, and a request that fails changes
 * nothing (but for the adds of a batch before a failure, which a Bloom
 * filter cannot undo).
 */
#ifndef SHMD_COMMANDS_H
#define SHMD_COMMANDS_H

#include "defaults.h"
#include "registry.h"
#include "reply.h"
#include "request.h"
#include "session.h"
#include "verbs.h"

/* ---- commands.c: what the families share ---- */

/** The filter name argv[1] is legal (the dispatcher checked it), or reply why not: 0 or SHMF_E_NAME. */
int cmd_name_ok(struct verb_call *c);

/** The slot of live filter argv[1], or a negative code (SHMF_E_NAME, SHMF_E_NOTFOUND) after replying. */
int cmd_slot(struct verb_call *c);

/**
 * The daemon's handle on the filter in @p slot if it has @p type (0: any),
 * or NULL after replying: RedisBloom's WRONGTYPE for a BF verb on a
 * cuckoo filter and the other way round.
 */
shmf_t *cmd_handle(struct verb_call *c, int slot, int type);

/** cmd_slot() then cmd_handle(): the handle of filter argv[1], or NULL after replying. */
shmf_t *cmd_filter(struct verb_call *c, int type);

/** Reply with libshmf's error @p rc on filter argv[1]. */
void cmd_lib_error(struct verb_call *c, int rc);

/** The slot of filter argv[1], or SHMF_E_NOTFOUND (also for a name no filter may have), without replying. */
int cmd_lookup(struct verb_call *c);

/** The filter an add creates on the fly: [defaults]' shape and expansion for @p type, named argv[1]. */
void cmd_auto_spec(struct verb_call *c, int type, struct filter_spec *spec);

/** Before an add to the filter in @p slot: if it grows, make or make
 * current its next layer when one is due (grow_filter()). */
void cmd_grow(struct verb_call *c, int slot);

/** A cuckoo expansion as RedisBloom keeps it: rounded up to a power of 2 (0 stays 0: never grow). */
uint32_t cmd_cuckoo_expansion(uint32_t e);

/**
 * Create filter @p spec for an add that found none (the one way filters
 * are created on the fly): "ERR not found" when auto_create is off, or
 * when the connection may not create filters. The slot, or a negative
 * code after replying.
 */
int commands_autocreate(struct verb_call *c, const struct filter_spec *spec);

/** The slot of filter argv[1] for an add, created from [defaults] when missing; or a negative code after replying. */
int cmd_add_target(struct verb_call *c, int type);

/**
 * The one-key verbs: key argv[2] of the filter in @p slot through @p op,
 * its result replied as a boolean (RESP3 true/false, RESP2 1/0) or an integer.
 */
void cmd_one_key(struct verb_call *c, int slot, int type, int (*op)(shmf_t *, const void *, size_t), int boolean);

/** A one-key read (BF.EXISTS, CF.EXISTS, CF.COUNT): a missing filter answers 0 (false), as in RedisBloom. */
void cmd_read_key(struct verb_call *c, int type, int (*op)(shmf_t *, const void *, size_t), int boolean);

/** BF.MEXISTS, CF.MEXISTS: one boolean per key argv[2..]; all false for a missing filter. */
void cmd_read_many(struct verb_call *c, int type);

/**
 * The batch calls (add or check) over the keys argv[first..] of the filter
 * in @p slot, one boolean reply per key.
 */
void cmd_many(struct verb_call *c, int slot, int type, int add, int first);

/**
 * WINDOW duration / GENERATIONS n at argv[*i] (the options of a time
 * window, BF.RESERVE and CF.RESERVE): 1 consumed (with its value), 0 not
 * a window option, or SHMF_E_INVAL after replying.
 */
int cmd_window_option(struct verb_call *c, int *i, struct filter_spec *spec);

/** The window options taken together: GENERATIONS needs WINDOW, WINDOW alone means 2. 0 or SHMF_E_INVAL after replying.
 */
int cmd_window_complete(struct verb_call *c, struct filter_spec *spec);

/** Create a filter, if the connection may (allow_create(): admin, or a
 * writer within its quotas); RedisBloom's "item exists" for a name in use.
 * The slot, or a negative code after replying (-EACCES: refused). */
int cmd_create(struct verb_call *c, const struct filter_spec *spec);

/**
 * The filter of a BF.INSERT or CF.INSERT, whose items start at argument
 * @p items (-1: no ITEMS): created from @p spec when missing, unless
 * @p nocreate. The slot, or a negative code after replying.
 */
int cmd_insert_target(struct verb_call *c, const struct filter_spec *spec, int items, int nocreate);

/** One field, value pair of an INFO reply (a map in RESP3, a flat array in RESP2). */
void field_int(struct reply *out, const char *name, long long v);
void field_str(struct reply *out, const char *name, const char *v);
void field_double(struct reply *out, const char *name, double v);

/* ---- commands-bloom.c ---- */
verb_handler cmd_bf_reserve, cmd_bf_add, cmd_bf_madd, cmd_bf_exists, cmd_bf_mexists, cmd_bf_info, cmd_bf_card,
	cmd_bf_insert;

/* ---- commands-cuckoo.c ---- */
verb_handler cmd_cf_reserve, cmd_cf_add, cmd_cf_addnx, cmd_cf_insert, cmd_cf_insertnx, cmd_cf_exists, cmd_cf_mexists,
	cmd_cf_del, cmd_cf_count, cmd_cf_info, cmd_cf_compact, cmd_shmf_addcapped;

/* ---- commands-admin.c ---- */
verb_handler cmd_shmf_list, cmd_shmf_info, cmd_shmf_drop, cmd_shmf_snapshot, cmd_shmf_swap, cmd_shmf_restore,
	cmd_shmf_rotate, cmd_shmf_replication;

/* ---- commands-scandump.c: a filter chunk by chunk ---- */
verb_handler cmd_bf_scandump, cmd_bf_loadchunk, cmd_cf_scandump, cmd_cf_loadchunk;

/* ---- commands-admin.c: SHMF.MERGE, SHMF.RELOAD ---- */
verb_handler cmd_shmf_merge, cmd_shmf_reload;

/* ---- commands-perms.c: SHMF.CHMOD and SHMF.RESIZE ---- */
verb_handler cmd_shmf_chmod, cmd_shmf_resize;

#endif
