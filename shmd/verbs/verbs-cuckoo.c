/*
 * verbs-cuckoo.c - the CF.* verbs, RedisBloom's names, reply shapes,
 * defaults and error texts (the adds create a missing filter from
 * [defaults], the reads of a missing one answer 0), and SHMF.ADDCAPPED,
 * the capped add a cuckoo filter makes atomic (see call.h). CF.RESERVE
 * checks MAXITERATIONS, BUCKETSIZE, EXPANSION and the capacity as
 * RedisBloom does, in its order and with its texts, then refuses the
 * bucket sizes whose bucket is not one word (cuckoo.h: 1, 2, 4 and 8 are).
 * Filters grow as RedisBloom's do (EXPANSION, rounded up to a power of 2;
 * default [defaults]' cuckoo_expansion, 1; 0 never), every layer with the
 * first one's bucket and fingerprint sizes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shmd/verbs/handlers.h"
#include "shmd/verbs/call.h"
#include "libclient/cuckoo.h"
#include "shmd/resp/reply-errors.h"
#include "shmd/verbs/keyjob.h"
#include "common/spec.h"

/* RedisBloom's ranges for CF.RESERVE's numbers. */
#define RB_CF_BUCKETSIZE_MAX 255
#define RB_CF_MAXITER_MAX    65535
_Static_assert(RB_CF_MAXITER_MAX == SHMF_CUCKOO_KICKS_LIMIT,
	       "every MAXITERATIONS RedisBloom takes is a relocation bound");

/* CF.RESERVE's BUCKETSIZE and MAXITERATIONS as given: RedisBloom finds the
 * first of each wherever it is, and checks them after the capacity is
 * read, MAXITERATIONS first. NULL: not given. */
struct cf_numbers {
	const char *bucketsize, *maxiterations;
};

/* One CF.RESERVE option with its value @p val: BUCKETSIZE b, MAXITERATIONS
 * n (noted, checked by cf_checks()), ERROR rate, MODE octal. 0, or
 * SHMF_E_INVAL after replying. */
static int cf_option(struct verb_call *c, const char *opt, const char *val, struct filter_spec *spec,
		     struct cf_numbers *nums)
{
	if (!strcasecmp(opt, "BUCKETSIZE")) {
		if (nums->bucketsize == NULL)
			nums->bucketsize = val;
	} else if (!strcasecmp(opt, "MAXITERATIONS")) {
		if (nums->maxiterations == NULL)
			nums->maxiterations = val;
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
			    "ERR unknown option '%.*s' (BUCKETSIZE b, MAXITERATIONS n, EXPANSION e, ERROR rate, MODE octal, WINDOW d, GENERATIONS n, REPLICATE)",
			    40, opt);
		return SHMF_E_INVAL;
	}
	return 0;
}

/*
 * RedisBloom's checks of CF.RESERVE's numbers, in its order: MAXITERATIONS
 * (an integer, 1 to 65535; else [defaults]' cuckoo_max_iterations,
 * RedisBloom's 20), BUCKETSIZE (an integer, 1 to 255; else [defaults]'
 * cuckoo_bucket_size, RedisBloom's 2), EXPANSION (an integer, 0 to 32768),
 * then the capacity (at least twice the bucket size); then shmd's own: the
 * bucket sizes that are one word. @p capacity is the capacity argument, an
 * integer already; @p expansion the EXPANSION value, NULL if not given
 * (spec->expansion is set only if it was: rounded up to a power of 2, as
 * RedisBloom keeps it). 0, or SHMF_E_INVAL after replying.
 */
static int cf_checks(struct verb_call *c, const struct cf_numbers *nums, const char *expansion, long long capacity,
		     struct filter_spec *spec)
{
	long long v;
	if (nums->maxiterations != NULL) {
		if (call_rb_integer(nums->maxiterations, &v) < 0) {
			reply_rb_error(c->out, RB_CF_BAD_MAXITER);
			return SHMF_E_INVAL;
		}
		if (v < 1 || v > RB_CF_MAXITER_MAX) {
			reply_rb_error(c->out, RB_CF_MAXITER_RANGE);
			return SHMF_E_INVAL;
		}
		spec->max_kicks = (uint32_t)v;
	} else {
		/* [defaults]' (RedisBloom's 20), as its cf-max-iterations. */
		spec->max_kicks = session_defaults(c->sess)->cuckoo_max_iterations;
	}
	long long bucket = session_defaults(c->sess)->cuckoo_bucket_size;
	if (nums->bucketsize != NULL) {
		if (call_rb_integer(nums->bucketsize, &bucket) < 0) {
			reply_rb_error(c->out, RB_CF_BAD_BUCKETSIZE);
			return SHMF_E_INVAL;
		}
		if (bucket < 1 || bucket > RB_CF_BUCKETSIZE_MAX) {
			reply_rb_error(c->out, RB_CF_BUCKETSIZE_RANGE);
			return SHMF_E_INVAL;
		}
	}
	long long e = 0;
	if (expansion != NULL) {
		if (call_rb_integer(expansion, &e) < 0) {
			reply_rb_error(c->out, RB_CF_BAD_EXPANSION);
			return SHMF_E_INVAL;
		}
		if (e < 0) {
			reply_rb_error(c->out, RB_CF_EXPANSION_RANGE);
			return SHMF_E_INVAL;
		}
	}
	if (expansion != NULL && e > SHMF_EXPANSION_MAX) {
		reply_rb_error(c->out, RB_CF_EXPANSION_RANGE);
		return SHMF_E_INVAL;
	}
	if (capacity < 2 * bucket) {
		reply_rb_error(c->out, RB_CF_CAPACITY_RANGE);
		return SHMF_E_INVAL;
	}
	spec->capacity = (uint64_t)capacity;
	if (nums->bucketsize != NULL) {
		if (!shmf_cuckoo_layout_ok((uint32_t)bucket, 8)) {
			reply_error(c->out,
				    "ERR BUCKETSIZE %lld is not supported: a bucket holds " SPEC_BUCKET_SIZES_LIST
				    " fingerprints here " SPEC_BUCKET_SIZES_WHY,
				    bucket);
			return SHMF_E_INVAL;
		}
	}
	/* Without BUCKETSIZE, [defaults]' (RedisBloom's 2), as RedisBloom's
	 * cf-bucket-size gives it; shmd's own doors make buckets of 4. */
	spec->bucket_size = (uint32_t)bucket;
	if (expansion != NULL)
		spec->expansion = call_cuckoo_expansion((uint32_t)e);
	return 0;
}

/* CF.RESERVE's options from argv[3]: the window's and cf_option()'s, then
 * cf_checks(). 0, or SHMF_E_INVAL after replying. */
static int cf_options(struct verb_call *c, long long capacity, struct filter_spec *spec)
{
	const struct request *req = c->req;
	struct cf_numbers nums = { 0 };
	const char *expansion = NULL;
	for (int i = 3; i < req->argc; i++) {
		int w = call_window_option(c, &i, spec);
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
			/* The first, as RedisBloom finds it. */
			if (expansion == NULL)
				expansion = req->argv[i + 1];
			i++;
			continue;
		}
		if (i + 1 >= req->argc && (!strcasecmp(opt, "EXPANSION") || !strcasecmp(opt, "BUCKETSIZE") ||
					   !strcasecmp(opt, "MAXITERATIONS"))) {
			call_arity_error(c); /* RedisBloom's answer to an option without its value */
			return SHMF_E_INVAL;
		}
		if (i + 1 >= req->argc) {
			reply_error(c->out,
				    "ERR option '%.*s' needs a value, or is unknown (BUCKETSIZE b, MAXITERATIONS n, EXPANSION e, ERROR rate, MODE octal, REPLICATE)",
				    40, opt);
			return SHMF_E_INVAL;
		}
		if (cf_option(c, opt, req->argv[++i], spec, &nums) < 0)
			return SHMF_E_INVAL;
	}
	spec->expansion = call_cuckoo_expansion(session_defaults(c->sess)->cuckoo_expansion);
	if (cf_checks(c, &nums, expansion, capacity, spec) < 0 || call_window_complete(c, spec) < 0)
		return SHMF_E_INVAL;
	/* A windowed filter rotates instead of growing. */
	if (spec->window_secs != 0) {
		if (expansion != NULL && spec->expansion != 0) {
			reply_error(c->out, "ERR EXPANSION cannot be combined with WINDOW: a windowed filter does not "
					    "grow, its generations rotate (EXPANSION 0 is what it does)");
			return SHMF_E_INVAL;
		}
		spec->expansion = 0;
	}
	return 0;
}

/* CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS n] [EXPANSION e]
 * [ERROR rate] [MODE octal] [WINDOW d] [GENERATIONS n] [REPLICATE]:
 * without BUCKETSIZE, MAXITERATIONS and EXPANSION, [defaults]'
 * cuckoo_bucket_size, cuckoo_max_iterations and cuckoo_expansion
 * (RedisBloom's 2, 20 and 1, as its cf-* configuration gives them);
 * shmd's own doors (shmctl create, the configuration) make 4 and 500. */
void cmd_cf_reserve(struct verb_call *c)
{
	struct filter_spec spec;
	long long capacity;
	if (call_name_ok(c) < 0)
		return;
	spec_defaults(&spec, c->req->argv[1]);
	spec.type = SHMF_TYPE_CUCKOO;
	if (call_rb_integer(c->req->argv[2], &capacity) < 0) {
		reply_rb_error(c->out, RB_CF_BAD_CAPACITY);
		return;
	}
	if (cf_options(c, capacity, &spec) == 0 && call_create(c, &spec) >= 0)
		reply_status(c->out, "OK");
}

/* CF.ADD key item: creates the filter from [defaults] when missing; true,
 * or RedisBloom's "Filter is full" ("Maximum expansions reached" past
 * the last layer of a growing filter). */
void cmd_cf_add(struct verb_call *c)
{
	int slot = call_add_target(c, SHMF_TYPE_CUCKOO);
	if (slot >= 0)
		call_one_key(c, slot, SHMF_TYPE_CUCKOO, shmf_add, 1);
}

void cmd_cf_addnx(struct verb_call *c)
{
	int slot = call_add_target(c, SHMF_TYPE_CUCKOO);
	if (slot >= 0)
		call_one_key(c, slot, SHMF_TYPE_CUCKOO, shmf_add_unique, 1);
}

/* CF.EXISTS, CF.MEXISTS, CF.COUNT: 0 for a missing filter. */
void cmd_cf_exists(struct verb_call *c)
{
	call_read_key(c, SHMF_TYPE_CUCKOO, shmf_check, 1);
}

void cmd_cf_mexists(struct verb_call *c)
{
	call_read_many(c, SHMF_TYPE_CUCKOO);
}

/* CF.DEL key item: "Not found" for a missing filter, as in RedisBloom. */
void cmd_cf_del(struct verb_call *c)
{
	int slot = call_lookup(c);
	if (slot < 0)
		reply_rb_error(c->out, RB_CF_DEL_NOT_FOUND);
	else
		call_one_key(c, slot, SHMF_TYPE_CUCKOO, shmf_del, 1);
}

void cmd_cf_count(struct verb_call *c)
{
	call_read_key(c, SHMF_TYPE_CUCKOO, shmf_count, 0);
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
		call_grow(c, slot);
		int rc = nx ? shmf_add_unique(h, key, req->lens[items + i]) : shmf_add(h, key, req->lens[items + i]);
		if (rc == SHMF_E_FULL) {
			res[i] = -1;
		} else if (rc == SHMF_E_BUSY) {
			/* This item would wait: it and the rest on the file worker. */
			keyjob_defer(c, nx ? KEYJOB_ADD_UNIQUE : KEYJOB_ADD, 0, items, (size_t)i, res,
				     nx ? KEYJOB_INSERT : KEYJOB_INSERT_ADD);
			free(res);
			return;
		} else if (rc < 0) {
			free(res);
			call_lib_error(c, rc);
			return;
		} else {
			res[i] = rc;
		}
	}
	reply_array(c->out, (size_t)n);
	for (int i = 0; i < n; i++) {
		/* As RedisBloom's: CF.INSERT's added item is true in RESP3 (a
		 * refused one stays -1); CF.INSERTNX answers integers. */
		if (!nx && res[i] == 1)
			reply_bool(c->out, 1);
		else
			reply_int(c->out, res[i]);
	}
	free(res);
}

/* CF.INSERT / CF.INSERTNX key [CAPACITY c] [NOCREATE] ITEMS item...: creates
 * the filter unless NOCREATE; per item 1 added, 0 present (NX), -1 full. */
static void insert(struct verb_call *c, int nx)
{
	const struct request *req = c->req;
	struct filter_spec spec;
	int nocreate = 0, items = -1;
	if (call_name_ok(c) < 0)
		return;
	call_auto_spec(c, SHMF_TYPE_CUCKOO, &spec);
	for (int i = 2; i < req->argc && items < 0; i++) {
		if (!strcasecmp(req->argv[i], "NOCREATE")) {
			nocreate = 1;
		} else if (!strcasecmp(req->argv[i], "ITEMS")) {
			items = i + 1;
		} else if (!strcasecmp(req->argv[i], "CAPACITY") && i + 1 < req->argc) {
			/* As RedisBloom: an integer, at least twice the bucket size
			 * of the filter it would create ([defaults]). */
			long long cap;
			if (call_rb_integer(req->argv[++i], &cap) < 0) {
				reply_rb_error(c->out, RB_CF_BAD_CAPACITY);
				return;
			}
			if (cap < 2 * (long long)session_defaults(c->sess)->cuckoo_bucket_size) {
				reply_rb_error(c->out, RB_CF_INSERT_CAPACITY_RANGE);
				return;
			}
			spec.capacity = (uint64_t)cap;
		} else {
			reply_rb_error(c->out, RB_UNKNOWN_ARGUMENT);
			return;
		}
	}
	int slot = call_insert_target(c, &spec, items, nocreate);
	shmf_t *h = slot < 0 ? NULL : call_handle(c, slot, SHMF_TYPE_CUCKOO);
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
 * strings, values integers; a map in RESP3) and nothing else: what only
 * shmd knows is in SHMF.INFO. As RedisBloom's, the size, items and
 * deletes are summed over the layers, and the buckets are the first
 * layer's; every layer has its bucket size. */
void cmd_cf_info(struct verb_call *c)
{
	char err[REGISTRY_ERR_MAX];
	struct filter_info fi;
	int slot = call_lookup(c);
	if (slot < 0) {
		reply_rb_error(c->out, RB_NOT_FOUND);
		return;
	}
	if (call_handle(c, slot, SHMF_TYPE_CUCKOO) == NULL)
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
		{ "Number of buckets", (long long)fi.buckets },
		{ "Number of filters", (long long)fi.nlayers },
		{ "Number of items inserted", (long long)info.items },
		{ "Number of items deleted", (long long)(fi.expansion ? fi.deletes_total : info.deletes) },
		{ "Bucket size", info.bucket_size },
		{ "Expansion rate", fi.expansion ? fi.expansion : fi.rb_growth },
		{ "Max iterations", info.max_kicks },
	};
	reply_map(c->out, 8);
	for (size_t i = 0; i < 8; i++) {
		reply_status(c->out, fields[i].name);
		reply_int(c->out, fields[i].v);
	}
}

/* CF.COMPACT key: RedisBloom's defragmentation of a filter's sub-filters,
 * moving fingerprints into older layers and freeing an emptied newest one.
 * shmd's layers live in shared memory that workers map and add to without
 * a lock, so a layer is never taken away: OK, and nothing moves. */
void cmd_cf_compact(struct verb_call *c)
{
	int slot = call_lookup(c);
	if (slot < 0)
		reply_rb_error(c->out, RB_NOT_FOUND);
	else if (call_handle(c, slot, SHMF_TYPE_CUCKOO) != NULL)
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
	int slot = call_slot(c);
	shmf_t *h = slot < 0 ? NULL : call_handle(c, slot, SHMF_TYPE_CUCKOO);
	if (h == NULL)
		return;
	call_grow(c, slot);
	int rc = shmf_add_capped(h, req->argv[2], req->lens[2], (unsigned)cap);
	if (rc == SHMF_E_BUSY)
		keyjob_defer(c, KEYJOB_CAPPED, (unsigned)cap, 2, 0, NULL, KEYJOB_INT);
	else if (rc < 0)
		call_lib_error(c, rc);
	else
		reply_int(c->out, rc);
}
