/*
 * commands-bloom.c - the BF.* verbs, RedisBloom's names and reply shapes
 * (see commands.h). shmfilter's Bloom filters never grow: EXPANSION is
 * refused and NONSCALING accepted, as the only behaviour.
 */
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "commands.h"
#include "spec.h"

#define NO_EXPANSION                                                     \
	"ERR EXPANSION is not supported: shmfilter filters never grow; " \
	"size the filter for its whole lifetime (NONSCALING is the only behaviour)"

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
		reply_error(c->out, "ERR bad error rate '%.*s': must be a number in (0, 1)", 40, req->argv[2]);
		return;
	}
	if (spec_parse_capacity(req->argv[3], &spec.capacity) < 0) {
		reply_error(c->out, "ERR bad capacity '%.*s': must be a positive integer", 40, req->argv[3]);
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

void cmd_bf_add(struct verb_call *c)
{
	cmd_one_key(c, SHMF_TYPE_BLOOM, shmf_add);
}

void cmd_bf_exists(struct verb_call *c)
{
	cmd_one_key(c, SHMF_TYPE_BLOOM, shmf_check);
}

void cmd_bf_madd(struct verb_call *c)
{
	cmd_many(c, -1, SHMF_TYPE_BLOOM, 1, 2);
}

void cmd_bf_mexists(struct verb_call *c)
{
	cmd_many(c, -1, SHMF_TYPE_BLOOM, 0, 2);
}

/* What libshmf knows of the Bloom filter argv[1]: no file system calls. 0,
 * or a negative code after replying. */
static int bloom_info(struct verb_call *c, shmf_info_t *info)
{
	shmf_t *h = cmd_filter(c, SHMF_TYPE_BLOOM);
	if (h == NULL)
		return SHMF_E_NOTFOUND;
	int rc = shmf_info(h, info);
	if (rc < 0)
		cmd_lib_error(c, rc);
	return rc;
}

/* BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION] */
void cmd_bf_info(struct verb_call *c)
{
	static const char *const fields[] = { "Capacity", "Size", "Number of filters", "Number of items inserted",
					      "Expansion rate" };
	static const char *const keywords[] = { "CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION" };
	const struct request *req = c->req;
	shmf_info_t info;
	int only = -1;
	if (req->argc == 3) {
		for (int i = 0; i < 5; i++)
			if (!strcasecmp(req->argv[2], keywords[i]))
				only = i;
		if (only < 0) {
			reply_error(c->out,
				    "ERR unknown BF.INFO field '%.*s' (CAPACITY, SIZE, FILTERS, ITEMS or EXPANSION)",
				    40, req->argv[2]);
			return;
		}
	}
	if (bloom_info(c, &info) < 0)
		return;
	long long values[4] = { (long long)info.capacity, (long long)info.bytes, 1, (long long)info.items };
	reply_array(c->out, only < 0 ? 10 : 1);
	for (int i = 0; i < 5; i++) {
		if (only >= 0 && i != only)
			continue;
		if (only < 0)
			reply_bulk_str(c->out, fields[i]);
		if (i == 4)
			reply_nil(c->out);
		else
			reply_int(c->out, values[i]);
	}
}

void cmd_bf_card(struct verb_call *c)
{
	shmf_info_t info;
	if (bloom_info(c, &info) == 0)
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
				reply_error(c->out, "ERR bad CAPACITY '%.*s': must be a positive integer", 40, val);
				return SHMF_E_INVAL;
			}
			sized = 1;
			i++;
		} else if (!strcasecmp(opt, "ERROR")) {
			if (spec_parse_fpr(val, &spec->fpr) < 0) {
				reply_error(c->out, "ERR bad ERROR '%.*s': must be a number in (0, 1)", 40, val);
				return SHMF_E_INVAL;
			}
			sized = 1;
			i++;
		} else if (!strcasecmp(opt, "MODE")) {
			if (mode_option(c, &i, spec) < 0)
				return SHMF_E_INVAL;
		} else {
			reply_error(c->out,
				    "ERR unknown option '%.*s' for 'bf.insert' "
				    "(CAPACITY c, ERROR rate, NOCREATE, NONSCALING, MODE octal, ITEMS item...)",
				    40, opt);
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
 * CF.INSERT's defaults (1,000,000 keys, 0.01) unless CAPACITY or ERROR
 * say otherwise; on an existing filter they are ignored, as RedisBloom
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
	spec_defaults(&spec, c->req->argv[1]);
	if (insert_options(c, &spec, &items, &nocreate) < 0)
		return;
	int slot = cmd_insert_target(c, &spec, items, nocreate);
	if (slot >= 0)
		cmd_many(c, slot, SHMF_TYPE_BLOOM, 1, items);
}
