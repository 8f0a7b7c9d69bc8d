/*
 * commands-cuckoo.c - the CF.* verbs, RedisBloom's names, reply shapes,
 * defaults and error texts (the adds create a missing filter from
 * [defaults], the reads of a missing one answer 0), and SHMF.ADDCAPPED, the capped add a cuckoo filter makes atomic
 * (see commands.h). Buckets hold 4 fingerprints: BUCKETSIZE other than 4 is refused. Filters grow as
 * RedisBloom's do (EXPANSION, rounded up to a power of 2; default [defaults]' cuckoo_expansion, 1; 0 never).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "commands.h"
#include "cuckoo.h"
#include "errors.h"
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

/* CF.RESERVE's EXPANSION value: 0 to SHMF_EXPANSION_MAX, rounded up to
 * a power of 2 as RedisBloom keeps it. 0, or SHMF_E_INVAL after replying
 * with RedisBloom's error (shmd's past its limit). */
static int cf_expansion(struct verb_call *c, const char *text, uint32_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0') {
		reply_rb_error(c->out, RB_CF_BAD_EXPANSION);
		return SHMF_E_INVAL;
	}
	if (v < 0) {
		reply_rb_error(c->out, RB_CF_EXPANSION_RANGE);
		return SHMF_E_INVAL;
	}
	if (v > SHMF_EXPANSION_MAX) {
		reply_error(c->out,
			    "ERR EXPANSION %lld is above shmd's limit of %u (each layer that many times the last)", v,
			    SHMF_EXPANSION_MAX);
		return SHMF_E_INVAL;
	}
	*out = cmd_cuckoo_expansion((uint32_t)v);
	return 0;
}

/* CF.RESERVE's options from argv[3]: the window's and cf_option()'s. 0, or
 * SHMF_E_INVAL after replying. */
static int cf_options(struct verb_call *c, struct filter_spec *spec)
{
	const struct request *req = c->req;
	const char *expansion = NULL;
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
		if (!strcasecmp(opt, "EXPANSION") && i + 1 < req->argc) {
			expansion = req->argv[++i];
			continue;
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
	if (cmd_window_complete(c, spec) < 0)
		return SHMF_E_INVAL;
	/* A windowed filter rotates instead of growing. */
	spec->expansion = spec->window_secs ? 0 : cmd_cuckoo_expansion(cmd_defaults(c)->cuckoo_expansion);
	if (expansion != NULL && cf_expansion(c, expansion, &spec->expansion) < 0)
		return SHMF_E_INVAL;
	if (expansion != NULL && spec->expansion != 0 && spec->window_secs != 0) {
		reply_error(c->out, "ERR EXPANSION cannot be combined with WINDOW: a windowed filter does not grow, "
				    "its generations rotate (EXPANSION 0 is what it does)");
		return SHMF_E_INVAL;
	}
	return 0;
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

/* CF.ADD key item: creates the filter from [defaults] when missing; true,
 * or RedisBloom's "ERR Filter is full". */
void cmd_cf_add(struct verb_call *c)
{
	int slot = cmd_add_target(c, SHMF_TYPE_CUCKOO);
	if (slot >= 0)
		cmd_one_key(c, slot, SHMF_TYPE_CUCKOO, shmf_add, 1);
}

void cmd_cf_addnx(struct verb_call *c)
{
	int slot = cmd_add_target(c, SHMF_TYPE_CUCKOO);
	if (slot >= 0)
		cmd_one_key(c, slot, SHMF_TYPE_CUCKOO, shmf_add_unique, 1);
}

/* CF.EXISTS, CF.MEXISTS, CF.COUNT: 0 for a missing filter. */
void cmd_cf_exists(struct verb_call *c)
{
	cmd_read_key(c, SHMF_TYPE_CUCKOO, shmf_check, 1);
}

void cmd_cf_mexists(struct verb_call *c)
{
	cmd_read_many(c, SHMF_TYPE_CUCKOO);
}

/* CF.DEL key item: "ERR not found" for a missing filter, as in RedisBloom. */
void cmd_cf_del(struct verb_call *c)
{
	int slot = cmd_lookup(c);
	if (slot < 0)
		reply_rb_error(c->out, RB_NOT_FOUND);
	else
		cmd_one_key(c, slot, SHMF_TYPE_CUCKOO, shmf_del, 1);
}

void cmd_cf_count(struct verb_call *c)
{
	cmd_read_key(c, SHMF_TYPE_CUCKOO, shmf_count, 0);
}

/* The items argv[items..] into cuckoo filter @p h, one at a time: per item
 * 1 added, 0 present (@p nx), -1 full. */
static void insert_items(struct verb_call *c, int slot, shmf_t *h, int items, int nx)
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
		cmd_grow(c, slot);
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
	cmd_auto_spec(c, SHMF_TYPE_CUCKOO, &spec);
	for (int i = 2; i < req->argc && items < 0; i++) {
		if (!strcasecmp(req->argv[i], "NOCREATE")) {
			nocreate = 1;
		} else if (!strcasecmp(req->argv[i], "ITEMS")) {
			items = i + 1;
		} else if (!strcasecmp(req->argv[i], "CAPACITY") && i + 1 < req->argc) {
			if (spec_parse_capacity(req->argv[++i], &spec.capacity) < 0) {
				reply_rb_error(c->out, RB_CF_BAD_CAPACITY);
				return;
			}
			if (spec.capacity < 2 * (uint64_t)cmd_defaults(c)->cuckoo_bucket_size) {
				reply_rb_error(c->out, RB_CF_CAPACITY_SMALL);
				return;
			}
		} else {
			reply_rb_error(c->out, RB_UNKNOWN_ARGUMENT);
			return;
		}
	}
	int slot = cmd_insert_target(c, &spec, items, nocreate);
	shmf_t *h = slot < 0 ? NULL : cmd_handle(c, slot, SHMF_TYPE_CUCKOO);
	if (h != NULL)
		insert_items(c, slot, h, items, nx);
}

void cmd_cf_insert(struct verb_call *c)
{
	insert(c, 0);
}

void cmd_cf_insertnx(struct verb_call *c)
{
	insert(c, 1);
}

/* CF.INFO key: RedisBloom's eight fields in its order (names as simple
 * strings, values integers; a map in RESP3), then shmd's own. Buckets
 * here hold 4 fingerprints. As RedisBloom's, the size, items and deletes
 * are summed over the layers, and the buckets are the first layer's. */
void cmd_cf_info(struct verb_call *c)
{
	char err[REGISTRY_ERR_MAX];
	struct filter_info fi;
	int slot = cmd_lookup(c);
	if (slot < 0) {
		reply_rb_error(c->out, RB_NOT_FOUND);
		return;
	}
	if (cmd_handle(c, slot, SHMF_TYPE_CUCKOO) == NULL)
		return;
	if (registry_info(c->reg, slot, &fi, err, sizeof(err)) < 0) {
		reply_error(c->out, "ERR %s", err);
		return;
	}
	const shmf_info_t info = fi.info;
	const struct {
		const char *name;
		long long v;
	} fields[] = {
		{ "Size", (long long)info.bytes },
		{ "Number of buckets", (long long)c->reg->ctl.slots[slot].nbuckets },
		{ "Number of filters", (long long)fi.nlayers },
		{ "Number of items inserted", (long long)info.items },
		{ "Number of items deleted", (long long)(fi.expansion ? fi.deletes_total : info.deletes) },
		{ "Bucket size", 4 },
		{ "Expansion rate", fi.expansion },
		{ "Max iterations", info.max_kicks },
	};
	reply_map(c->out, 8 + 4);
	for (size_t i = 0; i < 8; i++) {
		reply_status(c->out, fields[i].name);
		reply_int(c->out, fields[i].v);
	}
	field_int(c->out, "Fingerprint bits", info.fingerprint_bits);
	field_double(c->out, "Fill ratio", info.fill_ratio);
	field_double(c->out, "Estimated error rate", info.fpr_estimate);
	field_int(c->out, "Relocations", (long long)info.relocations);
}

/* CF.COMPACT key: RedisBloom's defragmentation of a filter's sub-filters,
 * moving fingerprints into older layers and freeing an emptied newest one.
 * shmd's layers live in shared memory that workers map and add to without
 * a lock, so a layer is never taken away: OK, and nothing moves. */
void cmd_cf_compact(struct verb_call *c)
{
	int slot = cmd_lookup(c);
	if (slot < 0)
		reply_rb_error(c->out, RB_NOT_FOUND);
	else if (cmd_handle(c, slot, SHMF_TYPE_CUCKOO) != NULL)
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
	int slot = cmd_slot(c);
	shmf_t *h = slot < 0 ? NULL : cmd_handle(c, slot, SHMF_TYPE_CUCKOO);
	if (h == NULL)
		return;
	cmd_grow(c, slot);
	int rc = shmf_add_capped(h, req->argv[2], req->lens[2], (unsigned)cap);
	if (rc < 0)
		cmd_lib_error(c, rc);
	else
		reply_int(c->out, rc);
}
