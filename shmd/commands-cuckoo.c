/*
 * commands-cuckoo.c - the CF.* verbs, RedisBloom's names and reply shapes,
 * and SHMF.ADDCAPPED, the capped add a cuckoo filter makes atomic (see
 * commands.h). Buckets hold 4 fingerprints and filters never grow:
 * BUCKETSIZE other than 4 and EXPANSION are refused.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "commands.h"
#include "cuckoo.h"
#include "spec.h"

/* One CF.RESERVE option with its value @p val: BUCKETSIZE 4,
 * MAXITERATIONS n, ERROR rate, MODE octal. 0, or SHMF_E_INVAL after
 * replying. */
static int cf_option(struct verb_call *c, const char *opt, const char *val, struct filter_spec *spec)
{
	if (!strcasecmp(opt, "BUCKETSIZE")) {
		if (strcmp(val, "4") != 0) {
			reply_error(c->out, "ERR BUCKETSIZE '%.*s' is not supported: buckets hold 4 fingerprints", 40,
				    val);
			return SHMF_E_INVAL;
		}
	} else if (!strcasecmp(opt, "MAXITERATIONS")) {
		if (spec_parse_kicks(val, &spec->max_kicks) < 0) {
			reply_error(c->out, "ERR bad MAXITERATIONS '%.*s': an integer from 1 to %u", 40, val,
				    SHMF_CUCKOO_KICKS_LIMIT);
			return SHMF_E_INVAL;
		}
	} else if (!strcasecmp(opt, "ERROR")) {
		if (spec_parse_fpr(val, &spec->fpr) < 0) {
			reply_error(c->out, "ERR bad ERROR '%.*s': must be a number in (0, 1)", 40, val);
			return SHMF_E_INVAL;
		}
	} else if (!strcasecmp(opt, "MODE")) {
		if (spec_parse_mode(val, 02, &spec->mode) < 0) {
			reply_error(c->out, "ERR bad MODE '%.*s': an octal mode like 0640, without the other-write bit",
				    40, val);
			return SHMF_E_INVAL;
		}
	} else {
		reply_error(c->out,
			    "ERR unknown option '%.*s' (BUCKETSIZE 4, MAXITERATIONS n, ERROR rate, MODE octal, WINDOW d, GENERATIONS n, REPLICATE)",
			    40, opt);
		return SHMF_E_INVAL;
	}
	return 0;
}

/* CF.RESERVE's options from argv[3]: the window's and cf_option()'s. 0, or
 * SHMF_E_INVAL after replying. */
static int cf_options(struct verb_call *c, struct filter_spec *spec)
{
	const struct request *req = c->req;
	for (int i = 3; i < req->argc; i++) {
		int w = cmd_window_option(c, &i, spec);
		if (w < 0)
			return SHMF_E_INVAL;
		if (w > 0)
			continue;
		const char *opt = req->argv[i];
		if (!strcasecmp(opt, "REPLICATE")) {
			spec->replicate = 1;
			continue;
		}
		if (!strcasecmp(opt, "EXPANSION")) {
			reply_error(c->out, "ERR EXPANSION is not supported: shmfilter filters never grow; "
					    "size the filter for its whole lifetime");
			return SHMF_E_INVAL;
		}
		if (i + 1 >= req->argc) {
			reply_error(c->out,
				    "ERR option '%.*s' needs a value, or is unknown (BUCKETSIZE 4, MAXITERATIONS n, ERROR rate, MODE octal, REPLICATE)",
				    40, opt);
			return SHMF_E_INVAL;
		}
		if (cf_option(c, opt, req->argv[++i], spec) < 0)
			return SHMF_E_INVAL;
	}
	return cmd_window_complete(c, spec);
}

/* CF.RESERVE key capacity [BUCKETSIZE 4] [MAXITERATIONS n] [ERROR rate]
 * [MODE octal] [WINDOW d] [GENERATIONS n] [REPLICATE] */
void cmd_cf_reserve(struct verb_call *c)
{
	struct filter_spec spec;
	if (cmd_name_ok(c) < 0)
		return;
	spec_defaults(&spec, c->req->argv[1]);
	spec.type = SHMF_TYPE_CUCKOO;
	if (spec_parse_capacity(c->req->argv[2], &spec.capacity) < 0) {
		reply_error(c->out, "ERR bad capacity '%.*s': must be a positive integer", 40, c->req->argv[2]);
		return;
	}
	if (cf_options(c, &spec) == 0 && cmd_create(c, &spec) >= 0)
		reply_status(c->out, "OK");
}

void cmd_cf_add(struct verb_call *c)
{
	cmd_one_key(c, SHMF_TYPE_CUCKOO, shmf_add);
}

void cmd_cf_addnx(struct verb_call *c)
{
	cmd_one_key(c, SHMF_TYPE_CUCKOO, shmf_add_unique);
}

void cmd_cf_exists(struct verb_call *c)
{
	cmd_one_key(c, SHMF_TYPE_CUCKOO, shmf_check);
}

void cmd_cf_mexists(struct verb_call *c)
{
	cmd_many(c, -1, SHMF_TYPE_CUCKOO, 0, 2);
}

void cmd_cf_del(struct verb_call *c)
{
	cmd_one_key(c, SHMF_TYPE_CUCKOO, shmf_del);
}

void cmd_cf_count(struct verb_call *c)
{
	cmd_one_key(c, SHMF_TYPE_CUCKOO, shmf_count);
}

/* The items argv[items..] into cuckoo filter @p h, one at a time: per item
 * 1 added, 0 present (@p nx), -1 full. */
static void insert_items(struct verb_call *c, shmf_t *h, int items, int nx)
{
	const struct request *req = c->req;
	int n = req->argc - items;
	long long *res = malloc((size_t)n * sizeof(*res));
	if (res == NULL) {
		reply_error(c->out, "ERR out of memory for %d items", n);
		return;
	}
	for (int i = 0; i < n; i++) {
		const char *key = req->argv[items + i];
		int rc = nx ? shmf_add_unique(h, key, req->lens[items + i]) : shmf_add(h, key, req->lens[items + i]);
		if (rc == SHMF_E_FULL) {
			res[i] = -1;
		} else if (rc < 0) {
			free(res);
			cmd_lib_error(c, rc);
			return;
		} else {
			res[i] = rc;
		}
	}
	reply_array(c->out, (size_t)n);
	for (int i = 0; i < n; i++)
		reply_int(c->out, res[i]);
	free(res);
}

/* CF.INSERT / CF.INSERTNX key [CAPACITY c] [NOCREATE] ITEMS item...: creates
 * the filter unless NOCREATE; per item 1 added, 0 present (NX), -1 full. */
static void insert(struct verb_call *c, int nx)
{
	const struct request *req = c->req;
	struct filter_spec spec;
	int nocreate = 0, items = -1;
	if (cmd_name_ok(c) < 0)
		return;
	spec_defaults(&spec, req->argv[1]);
	spec.type = SHMF_TYPE_CUCKOO;
	for (int i = 2; i < req->argc && items < 0; i++) {
		if (!strcasecmp(req->argv[i], "NOCREATE")) {
			nocreate = 1;
		} else if (!strcasecmp(req->argv[i], "ITEMS")) {
			items = i + 1;
		} else if (!strcasecmp(req->argv[i], "CAPACITY") && i + 1 < req->argc) {
			if (spec_parse_capacity(req->argv[++i], &spec.capacity) < 0) {
				reply_error(c->out, "ERR bad CAPACITY '%.*s': must be a positive integer", 40,
					    req->argv[i]);
				return;
			}
		} else {
			reply_error(c->out, "ERR unknown option '%.*s' (CAPACITY c, NOCREATE, ITEMS item...)", 40,
				    req->argv[i]);
			return;
		}
	}
	int slot = cmd_insert_target(c, &spec, items, nocreate);
	shmf_t *h = slot < 0 ? NULL : cmd_handle(c, slot, SHMF_TYPE_CUCKOO);
	if (h != NULL)
		insert_items(c, h, items, nx);
}

void cmd_cf_insert(struct verb_call *c)
{
	insert(c, 0);
}

void cmd_cf_insertnx(struct verb_call *c)
{
	insert(c, 1);
}

void cmd_cf_info(struct verb_call *c)
{
	shmf_info_t info;
	shmf_t *h = cmd_filter(c, SHMF_TYPE_CUCKOO);
	if (h == NULL)
		return;
	int rc = shmf_info(h, &info);
	if (rc < 0) {
		cmd_lib_error(c, rc);
		return;
	}
	reply_array(c->out, 16);
	field_int(c->out, "Size", (long long)info.bytes);
	field_int(c->out, "Number of buckets", (long long)info.buckets);
	field_int(c->out, "Number of filters", 1);
	field_int(c->out, "Number of items inserted", (long long)(info.items + info.deletes));
	field_int(c->out, "Number of items deleted", (long long)info.deletes);
	field_int(c->out, "Bucket size", 4);
	reply_bulk_str(c->out, "Expansion rate");
	reply_nil(c->out);
	field_int(c->out, "Max iterations", info.max_kicks);
}

/* CF.COMPACT key: RedisBloom's defragmentation of a filter's sub-filters.
 * A shmfilter cuckoo filter is one table, with nothing to compact. */
void cmd_cf_compact(struct verb_call *c)
{
	if (cmd_filter(c, SHMF_TYPE_CUCKOO) != NULL)
		reply_status(c->out, "OK");
}

/* SHMF.ADDCAPPED key item cap: add a copy only below cap copies, atomically;
 * replies with the count before (the add happened iff it is below cap). */
void cmd_shmf_addcapped(struct verb_call *c)
{
	const struct request *req = c->req;
	uint64_t cap;
	if (req->argv[3][0] == '0' && req->argv[3][1] == '\0')
		cap = 0;
	else if (spec_parse_capacity(req->argv[3], &cap) < 0 || cap > 1000000) {
		reply_error(c->out, "ERR bad cap '%.*s': an integer from 0 to 1000000", 40, req->argv[3]);
		return;
	}
	shmf_t *h = cmd_filter(c, SHMF_TYPE_CUCKOO);
	if (h == NULL)
		return;
	int rc = shmf_add_capped(h, req->argv[2], req->lens[2], (unsigned)cap);
	if (rc < 0)
		cmd_lib_error(c, rc);
	else
		reply_int(c->out, rc);
}
