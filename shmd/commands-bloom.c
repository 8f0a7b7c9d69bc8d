/*
 * commands-bloom.c - the BF.* verbs, RedisBloom's names, reply shapes,
 * defaults and error texts (see commands.h, errors.h): the adds create a
 * missing filter from [defaults], the reads of a missing one answer 0.
 * shmfilter's Bloom filters never grow: EXPANSION is refused and
 * NONSCALING accepted, as the only behaviour.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "commands.h"
#include "errors.h"
#include "spec.h"

#define NO_EXPANSION                                                     \
	"ERR EXPANSION is not supported: shmfilter filters never grow; " \
	"size the filter for its whole lifetime (NONSCALING is the only behaviour)"

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

/* The same for a refused capacity: an integer (0, negative) or not one. */
static enum rb_error capacity_error(const char *text)
{
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	return errno == 0 && end != text && *end == '\0' && v <= 0 ? RB_CAPACITY_RANGE : RB_BAD_CAPACITY;
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

/* BF.RESERVE key error_rate capacity [NONSCALING] [MODE octal] [WINDOW d] [GENERATIONS n] [REPLICATE] */
void cmd_bf_reserve(struct verb_call *c)
{
	const struct request *req = c->req;
	struct filter_spec spec;
	if (cmd_name_ok(c) < 0)
		return;
	spec_defaults(&spec, req->argv[1]);
	if (spec_parse_fpr(req->argv[2], &spec.fpr) < 0) {
		reply_rb_error(c->out, rate_error(req->argv[2]));
		return;
	}
	if (spec_parse_capacity(req->argv[3], &spec.capacity) < 0) {
		reply_rb_error(c->out, capacity_error(req->argv[3]));
		return;
	}
	for (int i = 4; i < req->argc; i++) {
		if (!strcasecmp(req->argv[i], "NONSCALING"))
			continue;
		if (!strcasecmp(req->argv[i], "REPLICATE")) {
			spec.replicate = 1;
			continue;
		}
		int w = cmd_window_option(c, &i, &spec);
		if (w < 0)
			return;
		if (w > 0)
			continue;
		if (!strcasecmp(req->argv[i], "EXPANSION")) {
			reply_error(c->out, NO_EXPANSION);
			return;
		}
		if (!strcasecmp(req->argv[i], "MODE") && (w = mode_option(c, &i, &spec)) != 0) {
			if (w < 0)
				return;
			continue;
		}
		reply_error(c->out,
			    "ERR unknown option '%.*s' for 'bf.reserve' (NONSCALING, MODE octal, WINDOW d, GENERATIONS n, "
			    "REPLICATE)",
			    40, req->argv[i]);
		return;
	}
	if (cmd_window_complete(c, &spec) == 0 && cmd_create(c, &spec) >= 0)
		reply_status(c->out, "OK");
}

/* BF.ADD key item: creates the filter from [defaults] when missing. */
void cmd_bf_add(struct verb_call *c)
{
	int slot = cmd_add_target(c, SHMF_TYPE_BLOOM);
	if (slot >= 0)
		cmd_one_key(c, slot, SHMF_TYPE_BLOOM, shmf_add, 1);
}

/* BF.EXISTS key item: 0 for a missing filter. */
void cmd_bf_exists(struct verb_call *c)
{
	cmd_read_key(c, SHMF_TYPE_BLOOM, shmf_check, 1);
}

void cmd_bf_madd(struct verb_call *c)
{
	int slot = cmd_add_target(c, SHMF_TYPE_BLOOM);
	if (slot >= 0)
		cmd_many(c, slot, SHMF_TYPE_BLOOM, 1, 2);
}

void cmd_bf_mexists(struct verb_call *c)
{
	cmd_read_many(c, SHMF_TYPE_BLOOM);
}

/* What libshmf knows of the Bloom filter in @p slot: no file system
 * calls. 0, or a negative code after replying. */
static int bloom_info(struct verb_call *c, int slot, shmf_info_t *info)
{
	shmf_t *h = cmd_handle(c, slot, SHMF_TYPE_BLOOM);
	if (h == NULL)
		return SHMF_E_TYPE;
	int rc = shmf_info(h, info);
	if (rc < 0)
		cmd_lib_error(c, rc);
	return rc;
}

/* The filter's expansion rate. Filters do not grow yet: the rate a
 * growing filter would use, [defaults]' bloom_expansion (RedisBloom's 2),
 * until the filter's own is kept with it. */
static long long bloom_expansion(struct verb_call *c, const shmf_info_t *info)
{
	(void)info;
	return cmd_defaults(c)->bloom_expansion;
}

/* BF.INFO's fields: RedisBloom's five, in its order and types (names as
 * simple strings, values integers), then shmd's own. */
static const char *const bf_fields[] = { "Capacity", "Size", "Number of filters", "Number of items inserted",
					 "Expansion rate" };
static const char *const bf_keywords[] = { "CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION" };
#define BF_EXTRA_FIELDS 5

static void bf_value(struct verb_call *c, const shmf_info_t *info, int i)
{
	long long values[] = { (long long)info->capacity, (long long)info->bytes, 1, (long long)info->items,
			       bloom_expansion(c, info) };
	reply_int(c->out, values[i]);
}

/* BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION]: "ERR not
 * found" for a missing filter, as in RedisBloom. */
void cmd_bf_info(struct verb_call *c)
{
	const struct request *req = c->req;
	shmf_info_t info;
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
	int slot = cmd_lookup(c);
	if (slot < 0) {
		reply_rb_error(c->out, RB_NOT_FOUND);
		return;
	}
	if (bloom_info(c, slot, &info) < 0)
		return;
	if (only >= 0) {
		reply_array(c->out, 1);
		bf_value(c, &info, only);
		return;
	}
	reply_map(c->out, 5 + BF_EXTRA_FIELDS);
	for (int i = 0; i < 5; i++) {
		reply_status(c->out, bf_fields[i]);
		bf_value(c, &info, i);
	}
	field_double(c->out, "Error rate", info.fpr_target);
	field_int(c->out, "Hash functions", info.k);
	field_double(c->out, "Fill ratio", info.fill_ratio);
	field_double(c->out, "Estimated error rate", info.fpr_estimate);
	field_int(c->out, "Live generations", info.live_generations);
}

/* BF.CARD key: 0 for a missing filter. */
void cmd_bf_card(struct verb_call *c)
{
	shmf_info_t info;
	int slot = cmd_lookup(c);
	if (slot < 0)
		reply_int(c->out, 0);
	else if (bloom_info(c, slot, &info) == 0)
		reply_int(c->out, (long long)info.items);
}

/* BF.INSERT's options before ITEMS: the filter to create in @p spec;
 * *items the first item's argument (-1: no ITEMS). 0, or SHMF_E_INVAL
 * after replying. */
static int insert_options(struct verb_call *c, struct filter_spec *spec, int *items, int *nocreate)
{
	const struct request *req = c->req;
	int sized = 0;
	for (int i = 2; i < req->argc && *items < 0; i++) {
		const char *opt = req->argv[i];
		const char *val = i + 1 < req->argc ? req->argv[i + 1] : NULL;
		if (!strcasecmp(opt, "ITEMS")) {
			*items = i + 1;
		} else if (!strcasecmp(opt, "NOCREATE")) {
			*nocreate = 1;
		} else if (!strcasecmp(opt, "NONSCALING")) {
			continue; /* the only behaviour */
		} else if (!strcasecmp(opt, "EXPANSION")) {
			reply_error(c->out, NO_EXPANSION);
			return SHMF_E_INVAL;
		} else if (val == NULL) {
			reply_error(c->out,
				    "ERR option '%.*s' needs a value, or is unknown "
				    "(CAPACITY c, ERROR rate, NOCREATE, NONSCALING, MODE octal, ITEMS item...)",
				    40, opt);
			return SHMF_E_INVAL;
		} else if (!strcasecmp(opt, "CAPACITY")) {
			if (spec_parse_capacity(val, &spec->capacity) < 0) {
				reply_rb_error(c->out, capacity_error(val) == RB_CAPACITY_RANGE
							       ? RB_INSERT_BAD_ARGUMENT
							       : RB_INSERT_BAD_CAPACITY);
				return SHMF_E_INVAL;
			}
			sized = 1;
			i++;
		} else if (!strcasecmp(opt, "ERROR")) {
			if (spec_parse_fpr(val, &spec->fpr) < 0) {
				reply_rb_error(c->out, rate_error(val) == RB_ERROR_RATE_RANGE ? RB_INSERT_BAD_ARGUMENT
											      : RB_INSERT_BAD_RATE);
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
	return 0;
}

/*
 * BF.INSERT key [CAPACITY c] [ERROR rate] [NOCREATE] [NONSCALING] [MODE octal]
 * ITEMS item...: BF.RESERVE (unless the filter exists, or NOCREATE) and
 * BF.MADD in one request, as in RedisBloom. A filter it creates gets
 * [defaults]' shape (RedisBloom's 100 keys at 0.01) unless CAPACITY or
 * ERROR say otherwise; on an existing filter they are ignored, as RedisBloom
 * ignores them. EXPANSION is refused (filters never grow), and so is
 * NOCREATE with CAPACITY or ERROR, which RedisBloom documents as an error.
 * Every option is checked before anything is created or added.
 */
void cmd_bf_insert(struct verb_call *c)
{
	struct filter_spec spec;
	int nocreate = 0, items = -1;
	if (cmd_name_ok(c) < 0)
		return;
	cmd_auto_spec(c, SHMF_TYPE_BLOOM, &spec);
	if (insert_options(c, &spec, &items, &nocreate) < 0)
		return;
	int slot = cmd_insert_target(c, &spec, items, nocreate);
	if (slot >= 0)
		cmd_many(c, slot, SHMF_TYPE_BLOOM, 1, items);
}
