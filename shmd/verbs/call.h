/*
 * call.h - what the handlers of the filter verbs share (docs/protocol.md):
 * the filter a call names, its handle, creating it on the fly, the
 * single- and multi-key operations, and libshmf's errors as replies. The
 * handlers live one file per family (verbs-bloom.c: BF.*, verbs-cuckoo.c:
 * CF.* and the capped add, verbs-admin.c: SHMF.* administration and file
 * verbs, ...), declared in handlers.h; the table in verbs.c names each.
 *
 * A handler is called with the arity checked; every error it finds is one
 * `-ERR ...` reply naming what was wrong, and a request that fails changes
 * nothing (but for the adds of a batch before a failure, which a Bloom
 * filter cannot undo).
 */
#ifndef SHMD_CALL_H
#define SHMD_CALL_H

#include "shmd/config/defaults.h"
#include "shmd/store/registry.h"
#include "shmd/resp/reply.h"
#include "shmd/resp/request.h"
#include "shmd/session/session.h"
#include "shmd/verbs/verb.h"

/** The filter name argv[1] is legal (the dispatcher checked it), or reply why not: 0 or SHMF_E_NAME. */
int call_name_ok(struct verb_call *c);

/** The slot of live filter argv[1], or a negative code (SHMF_E_NAME, SHMF_E_NOTFOUND) after replying. */
int call_slot(struct verb_call *c);

/**
 * The daemon's handle on the filter in @p slot if it has @p type (0: any),
 * or NULL after replying: RedisBloom's WRONGTYPE for a BF verb on a
 * cuckoo filter and the other way round.
 */
shmf_t *call_handle(struct verb_call *c, int slot, int type);

/** call_slot() then call_handle(): the handle of filter argv[1], or NULL after replying. */
shmf_t *call_filter(struct verb_call *c, int type);

/** Reply with libshmf's error @p rc on filter argv[1]. */
void call_lib_error(struct verb_call *c, int rc);

/** The slot of filter argv[1], or SHMF_E_NOTFOUND (also for a name no filter may have), without replying. */
int call_lookup(struct verb_call *c);

/** The filter an add creates on the fly: [defaults]' shape and expansion for @p type, named argv[1]. */
void call_auto_spec(struct verb_call *c, int type, struct filter_spec *spec);

/** Before an add to the filter in @p slot: if it grows, make or make
 * current its next layer when one is due (grow_filter()). */
void call_grow(struct verb_call *c, int slot);

/** A cuckoo expansion as RedisBloom keeps it: rounded up to a power of 2 (0 stays 0: never grow). */
uint32_t call_cuckoo_expansion(uint32_t e);

/** An integer as RedisBloom reads one (Redis' string2ll: an optional
 * minus, then digits with no leading zero, within a long long). 0 or
 * SHMF_E_INVAL. */
int call_rb_integer(const char *text, long long *out);

/** Redis' "wrong number of arguments" for this request's verb, as
 * RedisBloom answers an option without its value. */
void call_arity_error(struct verb_call *c);

/**
 * Create filter @p spec for an add that found none (the one way filters
 * are created on the fly): "ERR not found" when auto_create is off, or
 * when the connection may not create filters. The slot, or a negative
 * code after replying.
 */
int call_autocreate(struct verb_call *c, const struct filter_spec *spec);

/** The slot of filter argv[1] for an add, created from [defaults] when missing; or a negative code after replying. */
int call_add_target(struct verb_call *c, int type);

/**
 * The one-key verbs: key argv[2] of the filter in @p slot through @p op,
 * its result replied as a boolean (RESP3 true/false, RESP2 1/0) or an integer.
 */
void call_one_key(struct verb_call *c, int slot, int type, int (*op)(shmf_t *, const void *, size_t), int boolean);

/** A one-key read (BF.EXISTS, CF.EXISTS, CF.COUNT): a missing filter answers 0 (false), as in RedisBloom. */
void call_read_key(struct verb_call *c, int type, int (*op)(shmf_t *, const void *, size_t), int boolean);

/** BF.MEXISTS, CF.MEXISTS: one boolean per key argv[2..]; all false for a missing filter. */
void call_read_many(struct verb_call *c, int type);

/**
 * The batch calls (add or check) over the keys argv[first..] of the filter
 * in @p slot, one boolean reply per key.
 */
void call_many(struct verb_call *c, int slot, int type, int add, int first);

/**
 * WINDOW duration / GENERATIONS n at argv[*i] (the options of a time
 * window, BF.RESERVE and CF.RESERVE): 1 consumed (with its value), 0 not
 * a window option, or SHMF_E_INVAL after replying.
 */
int call_window_option(struct verb_call *c, int *i, struct filter_spec *spec);

/** The window options taken together: GENERATIONS needs WINDOW, WINDOW alone means 2. 0 or SHMF_E_INVAL after replying.
 */
int call_window_complete(struct verb_call *c, struct filter_spec *spec);

/** Create a filter, if the connection may (allow_create(): admin, or a
 * writer within its quotas); RedisBloom's "item exists" for a name in use.
 * The slot, or a negative code after replying (-EACCES: refused). */
int call_create(struct verb_call *c, const struct filter_spec *spec);

/**
 * The filter of a BF.INSERT or CF.INSERT, whose items start at argument
 * @p items (-1: no ITEMS): created from @p spec when missing, unless
 * @p nocreate. The slot, or a negative code after replying.
 */
int call_insert_target(struct verb_call *c, const struct filter_spec *spec, int items, int nocreate);

/** One field, value pair of an INFO reply (a map in RESP3, a flat array in RESP2). */
void reply_field_int(struct reply *out, const char *name, long long v);
void reply_field_str(struct reply *out, const char *name, const char *v);
void reply_field_double(struct reply *out, const char *name, double v);

#endif
