/*
 * verbs-bloom.c - the BF.* verbs, RedisBloom's names, reply shapes,
 * defaults and error texts (see call.h, reply-errors.h): the adds create a
 * missing filter from [defaults], the reads of a missing one answer 0.
 * Filters grow as RedisBloom's do (EXPANSION, default [defaults]'
 * bloom_expansion, 2); NONSCALING ones refuse new keys past their
 * capacity; shmd's own FIXED makes one that neither grows nor refuses.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shmd/verbs/handlers.h"
#include "shmd/verbs/call.h"
#include "shmd/resp/reply-errors.h"
#include "common/spec.h"

/* How a filter grows, from BF.RESERVE's or BF.INSERT's options. */
struct growth {
	const char *expansion; /* EXPANSION's value, NULL: not given */
	int nonscaling;        /* NONSCALING */
	int fixed;             /* FIXED (shmd's): neither grows nor refuses */
};

/* EXPANSION's value, as RedisBloom reads it: an integer from 0 to
 * SHMF_EXPANSION_MAX (RedisBloom's 32768), 0 meaning NONSCALING, into
 * *out; else RedisBloom's error for it (@p insert: BF.INSERT's text),
 * after replying. */
static int expansion_value(struct verb_call *c, const char *text, int insert, uint32_t *out)
{
	long long v;
	if (call_rb_integer(text, &v) < 0) {
		reply_rb_error(c->out, insert ? RB_INSERT_BAD_EXPANSION : RB_BAD_EXPANSION);
		return SHMF_E_INVAL;
	}
	if (v < 0 || v > SHMF_EXPANSION_MAX) {
		reply_rb_error(c->out, insert ? RB_INSERT_BAD_EXPANSION : RB_EXPANSION_RANGE);
		return SHMF_E_INVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

/* @p spec's growth from @p g and [defaults]: EXPANSION (0 is NONSCALING,
 * as in RedisBloom), else the default expansion unless NONSCALING, FIXED
 * or a WINDOW (a windowed filter rotates instead). RedisBloom's order: the
 * value first, then NONSCALING with an expansion (BF.RESERVE only: in
 * BF.INSERT NONSCALING wins). 0, or SHMF_E_INVAL after replying. */
static int growth_apply(struct verb_call *c, const struct growth *g, int insert, struct filter_spec *spec)
{
	spec->expansion = 0;
	spec->nonscaling = g->nonscaling;
	if (g->expansion != NULL && expansion_value(c, g->expansion, insert, &spec->expansion) < 0)
		return SHMF_E_INVAL;
	if (g->expansion != NULL && spec->expansion == 0)
		spec->nonscaling = 1;
	else if (g->expansion != NULL && g->nonscaling && !insert) {
		reply_rb_error(c->out, RB_NONSCALING_EXPAND);
		return SHMF_E_INVAL;
	}
	if (spec->nonscaling) {
		/* BF.INSERT: as RedisBloom, NONSCALING wins over EXPANSION. */
		spec->expansion = 0;
	} else if (g->expansion == NULL && !g->fixed && spec->window_secs == 0) {
		spec->expansion = session_defaults(c->sess)->bloom_expansion;
	}
	if (g->fixed && (g->expansion != NULL || g->nonscaling)) {
		reply_error(c->out, "ERR FIXED cannot be combined with EXPANSION or NONSCALING (a FIXED filter neither "
				    "grows nor refuses adds)");
		return SHMF_E_INVAL;
	}
	if (spec->window_secs != 0 && (g->expansion != NULL || g->nonscaling)) {
		reply_error(c->out,
			    "ERR %s cannot be combined with WINDOW: a windowed filter does not grow, its "
			    "generations rotate",
			    g->nonscaling ? "NONSCALING" : "EXPANSION");
		return SHMF_E_INVAL;
	}
	return 0;
}

/* A capacity as RedisBloom reads one through BF.*: an integer, 1 or more
 * (RedisBloom's range text says up to 2^30; shmd takes larger ones, bound
 * by the host's memory). 0, RB_BAD_CAPACITY (no integer) or
 * RB_CAPACITY_RANGE. */
static int rb_capacity(const char *text, uint64_t *out)
{
	long long v;
	if (call_rb_integer(text, &v) < 0)
		return RB_BAD_CAPACITY;
	if (v < 1)
		return RB_CAPACITY_RANGE;
	*out = (uint64_t)v;
	return 0;
}

/* Which of RedisBloom's two errors a refused error rate gets: "bad error
 * rate" when it is no number, the range's when it is one outside (0, 1). */
static enum rb_error rate_error(const char *text)
{
	char *end;
	errno = 0;
	double v = strtod(text, &end);
	(void)v;
	return errno == 0 && end != text && *end == '\0' ? RB_ERROR_RATE_RANGE : RB_BAD_ERROR_RATE;
}

/* MODE octal at argv[*i] (its value next): 1 consumed, 0 no value, or
 * SHMF_E_INVAL after replying. */
static int mode_option(struct verb_call *c, int *i, struct filter_spec *spec)
{
	if (*i + 1 >= c->req->argc)
		return 0;
	const char *m = c->req->argv[++*i];
	if (spec_parse_mode(m, 02, &spec->mode) < 0) {
		reply_error(c->out, "ERR bad MODE '%.*s': an octal mode like 0640, without the other-write bit", 40, m);
		return SHMF_E_INVAL;
	}
	return 1;
}

/* BF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING] [FIXED] [MODE octal] [WINDOW d]
 * [GENERATIONS n] [REPLICATE] */
void cmd_bf_reserve(struct verb_call *c)
{
	const struct request *req = c->req;
	struct filter_spec spec;
	struct growth g = { 0 };
	if (call_name_ok(c) < 0)
		return;
	spec_defaults(&spec, req->argv[1]);
	if (spec_parse_fpr(req->argv[2], &spec.fpr) < 0) {
		reply_rb_error(c->out, rate_error(req->argv[2]));
		return;
	}
	int cap = rb_capacity(req->argv[3], &spec.capacity);
	if (cap != 0) {
		reply_rb_error(c->out, (enum rb_error)cap);
		return;
	}
	for (int i = 4; i < req->argc; i++) {
		if (!strcasecmp(req->argv[i], "NONSCALING")) {
			g.nonscaling = 1;
			continue;
		}
		if (!strcasecmp(req->argv[i], "FIXED")) {
			g.fixed = 1;
			continue;
		}
		if (!strcasecmp(req->argv[i], "EXPANSION")) {
			if (i + 1 >= req->argc) {
				reply_rb_error(c->out, RB_NO_EXPANSION);
				return;
			}
			g.expansion = req->argv[++i];
			continue;
		}
		if (!strcasecmp(req->argv[i], "REPLICATE")) {
			spec.replicate = 1;
			continue;
		}
		int w = call_window_option(c, &i, &spec);
		if (w < 0)
			return;
		if (w > 0)
			continue;
		if (!strcasecmp(req->argv[i], "MODE") && (w = mode_option(c, &i, &spec)) != 0) {
			if (w < 0)
				return;
			continue;
		}
		reply_error(c->out,
			    "ERR unknown option '%.*s' for 'bf.reserve' (EXPANSION n, NONSCALING, FIXED, MODE octal, "
			    "WINDOW d, GENERATIONS n, REPLICATE)",
			    40, req->argv[i]);
		return;
	}
	if (call_window_complete(c, &spec) == 0 && growth_apply(c, &g, 0, &spec) == 0 && call_create(c, &spec) >= 0)
		reply_status(c->out, "OK");
}

/* BF.ADD key item: creates the filter from [defaults] when missing. */
void cmd_bf_add(struct verb_call *c)
{
	int slot = call_add_target(c, SHMF_TYPE_BLOOM);
	if (slot >= 0)
		call_one_key(c, slot, SHMF_TYPE_BLOOM, shmf_add, 1);
}

/* BF.EXISTS key item: 0 for a missing filter. */
void cmd_bf_exists(struct verb_call *c)
{
	call_read_key(c, SHMF_TYPE_BLOOM, shmf_check, 1);
}

void cmd_bf_madd(struct verb_call *c)
{
	int slot = call_add_target(c, SHMF_TYPE_BLOOM);
	if (slot >= 0)
		call_many(c, slot, SHMF_TYPE_BLOOM, 1, 2);
}

void cmd_bf_mexists(struct verb_call *c)
{
	call_read_many(c, SHMF_TYPE_BLOOM);
}

/* What the daemon knows of the Bloom filter in @p slot, its layers
 * summed. 0, or a negative code after replying. */
static int bloom_info(struct verb_call *c, int slot, struct filter_info *fi)
{
	char err[REGISTRY_ERR_MAX];
	if (call_handle(c, slot, SHMF_TYPE_BLOOM) == NULL)
		return SHMF_E_TYPE;
	int rc = registry_info(c->reg, slot, fi, err, sizeof(err));
	if (rc < 0)
		reply_error(c->out, "ERR %s", err);
	return rc;
}

/* BF.INFO's fields: RedisBloom's five, in its order and types (names as
 * simple strings, values integers; a filter that does not grow has no
 * expansion rate, nil, as RedisBloom's NONSCALING ones), and nothing
 * else: what only shmd knows of a filter is in SHMF.INFO. */
static const char *const bf_fields[] = { "Capacity", "Size", "Number of filters", "Number of items inserted",
					 "Expansion rate" };
static const char *const bf_keywords[] = { "CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION" };

static void bf_value(struct verb_call *c, const struct filter_info *fi, int i)
{
	/* An import answers the expansion rate it had in RedisBloom. */
	uint32_t expansion = fi->expansion ? fi->expansion : fi->rb_growth;
	long long values[] = { (long long)fi->capacity_total, (long long)fi->info.bytes, (long long)fi->nlayers,
			       (long long)fi->info.items, (long long)expansion };
	if (i == 4 && expansion == 0)
		reply_nil(c->out);
	else
		reply_int(c->out, values[i]);
}

/* BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION]: "ERR not
 * found" for a missing filter, as in RedisBloom. Capacity, size and items
 * are summed over the layers (a standby made ahead counts once an add
 * went there); Size is the bytes of the filter's data segments, its
 * memory. One field answers as RedisBloom's: a map of that one field in
 * RESP3, an array of its value in RESP2. */
void cmd_bf_info(struct verb_call *c)
{
	const struct request *req = c->req;
	struct filter_info fi;
	int only = -1;
	if (req->argc == 3) {
		for (int i = 0; i < 5; i++)
			if (!strcasecmp(req->argv[2], bf_keywords[i]))
				only = i;
		if (only < 0) {
			reply_rb_error(c->out, RB_INFO_FIELD);
			return;
		}
	}
	int slot = call_lookup(c);
	if (slot < 0) {
		reply_rb_error(c->out, RB_NOT_FOUND);
		return;
	}
	if (bloom_info(c, slot, &fi) < 0)
		return;
	if (only >= 0 && !reply_resp3(c->out)) {
		reply_array(c->out, 1);
		bf_value(c, &fi, only);
		return;
	}
	reply_map(c->out, only >= 0 ? 1 : 5);
	for (int i = 0; i < 5; i++) {
		if (only >= 0 && i != only)
			continue;
		reply_status(c->out, bf_fields[i]);
		bf_value(c, &fi, i);
	}
}

/* BF.CARD key: 0 for a missing filter; every layer's items. */
void cmd_bf_card(struct verb_call *c)
{
	struct filter_info fi;
	int slot = call_lookup(c);
	if (slot < 0)
		reply_int(c->out, 0);
	else if (bloom_info(c, slot, &fi) == 0)
		reply_int(c->out, (long long)fi.info.items);
}

/* BF.INSERT's options before ITEMS: the filter to create in @p spec;
 * *items the first item's argument (-1: no ITEMS). 0, or SHMF_E_INVAL
 * after replying. */
static int insert_options(struct verb_call *c, struct filter_spec *spec, int *items, int *nocreate)
{
	const struct request *req = c->req;
	struct growth g = { 0 };
	int sized = 0;
	for (int i = 2; i < req->argc && *items < 0; i++) {
		const char *opt = req->argv[i];
		const char *val = i + 1 < req->argc ? req->argv[i + 1] : NULL;
		if (!strcasecmp(opt, "ITEMS")) {
			*items = i + 1;
		} else if (!strcasecmp(opt, "NOCREATE")) {
			*nocreate = 1;
		} else if (!strcasecmp(opt, "NONSCALING")) {
			g.nonscaling = 1;
		} else if (val == NULL && (!strcasecmp(opt, "EXPANSION") || !strcasecmp(opt, "CAPACITY") ||
					   !strcasecmp(opt, "ERROR") || !strcasecmp(opt, "MODE"))) {
			call_arity_error(c); /* RedisBloom's answer to an option without its value */
			return SHMF_E_INVAL;
		} else if (!strcasecmp(opt, "EXPANSION")) {
			g.expansion = val;
			i++;
		} else if (!strcasecmp(opt, "CAPACITY")) {
			if (rb_capacity(val, &spec->capacity) != 0) {
				reply_rb_error(c->out, RB_INSERT_BAD_CAPACITY);
				return SHMF_E_INVAL;
			}
			sized = 1;
			i++;
		} else if (!strcasecmp(opt, "ERROR")) {
			if (spec_parse_fpr(val, &spec->fpr) < 0) {
				reply_rb_error(c->out, RB_INSERT_BAD_RATE);
				return SHMF_E_INVAL;
			}
			sized = 1;
			i++;
		} else if (!strcasecmp(opt, "MODE")) {
			if (mode_option(c, &i, spec) < 0)
				return SHMF_E_INVAL;
		} else {
			reply_rb_error(c->out, RB_UNKNOWN_ARGUMENT);
			return SHMF_E_INVAL;
		}
	}
	if (*nocreate && sized) {
		reply_error(c->out,
			    "ERR NOCREATE cannot be combined with CAPACITY or ERROR (they size a filter to create)");
		return SHMF_E_INVAL;
	}
	return growth_apply(c, &g, 1, spec);
}

/*
 * BF.INSERT key [CAPACITY c] [ERROR rate] [EXPANSION n] [NOCREATE] [NONSCALING]
 * [MODE octal] ITEMS item...: BF.RESERVE (unless the filter exists, or
 * NOCREATE) and BF.MADD in one request, as in RedisBloom. A filter it
 * creates gets [defaults]' shape and expansion (RedisBloom's 100 keys at
 * 0.01, growing by 2) unless CAPACITY, ERROR, EXPANSION or NONSCALING say
 * otherwise; on an existing filter they are ignored, as RedisBloom ignores
 * them. NOCREATE with CAPACITY or ERROR is refused, as RedisBloom documents.
 * Every option is checked before anything is created or added.
 */
void cmd_bf_insert(struct verb_call *c)
{
	struct filter_spec spec;
	int nocreate = 0, items = -1;
	if (call_name_ok(c) < 0)
		return;
	call_auto_spec(c, SHMF_TYPE_BLOOM, &spec);
	if (insert_options(c, &spec, &items, &nocreate) < 0)
		return;
	int slot = call_insert_target(c, &spec, items, nocreate);
	if (slot >= 0)
		call_many(c, slot, SHMF_TYPE_BLOOM, 1, items);
}
