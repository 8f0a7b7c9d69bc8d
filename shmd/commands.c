/*
 * commands.c - the verbs of the control protocol (docs/protocol.md).
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "commands.h"
#include "cuckoo.h"
#include "rundir.h"
#include "snapshot.h"
#include "spec.h"

/* Keys per shmf_add_many/shmf_check_many call for BF.MADD and BF.MEXISTS. */
#define BATCH 256

struct command {
	const char *name;
	int min_args; /* including the command name */
	int max_args; /* -1: unlimited */
	void (*run)(struct registry *reg, const struct request *req, struct reply *out);
};

/* argv[i] is a legal filter name (and holds no NUL byte), or reply with the error. */
static int valid_name(const struct request *req, int i, struct reply *out)
{
	const char *name = req->argv[i];
	int rc = strlen(name) == req->lens[i] ? shmf_name_check(name) : SHMF_E_NAME;
	if (rc < 0) {
		reply_error(out, "ERR invalid filter name '%.*s': %s", 80, name, shmf_strerror(rc));
		return -1;
	}
	return 0;
}

/* Resolve argv[i] to a live filter's slot, or reply with the error. */
static int lookup(struct registry *reg, const struct request *req, int i, struct reply *out)
{
	const char *name = req->argv[i];
	if (valid_name(req, i, out) < 0)
		return -1;
	int slot = registry_find(reg, name);
	if (slot < 0) {
		reply_error(out, "ERR filter '%s' not found", name);
		return -1;
	}
	return slot;
}

/* The handle of filter argv[i] if it has @p type (0: any), or reply with
 * the error: RedisBloom's WRONGTYPE for a BF verb on a cuckoo filter and
 * the other way round. */
static shmf_t *typed_handle(struct registry *reg, const struct request *req, int i, int type, struct reply *out)
{
	char err[REGISTRY_ERR_MAX];
	shmf_t *h;
	int slot = lookup(reg, req, i, out);
	if (slot < 0)
		return NULL;
	if (type != 0 && (int)reg->ctl.slots[slot].type != type) {
		reply_error(out, "WRONGTYPE filter '%s' is a %s filter; use the %s commands", req->argv[i],
			    spec_type_name((int)reg->ctl.slots[slot].type),
			    reg->ctl.slots[slot].type == SHMF_TYPE_CUCKOO ? "CF.*" : "BF.*");
		return NULL;
	}
	if (registry_handle(reg, slot, &h, err, sizeof(err)) < 0) {
		reply_error(out, "ERR %s", err);
		return NULL;
	}
	return h;
}

static void cmd_ping(struct registry *reg, const struct request *req, struct reply *out)
{
	(void)reg;
	if (req->argc == 2)
		reply_bulk(out, req->argv[1], req->lens[1]);
	else
		reply_status(out, "PONG");
}

/* WINDOW duration / GENERATIONS n (shmfilter's time windows) at argv[*i]:
 * 1 consumed (with its value), 0 not a window option, -1 replied an error. */
static int window_option(const struct request *req, int *i, struct filter_spec *spec, struct reply *out)
{
	const char *opt = req->argv[*i];
	int is_window = !strcasecmp(opt, "WINDOW"), is_gens = !strcasecmp(opt, "GENERATIONS");
	if (!is_window && !is_gens)
		return 0;
	if (*i + 1 >= req->argc) {
		reply_error(out, "ERR %s needs a value", is_window ? "WINDOW" : "GENERATIONS");
		return -1;
	}
	const char *val = req->argv[++*i];
	uint64_t n;
	if (is_window && spec_parse_duration(val, &spec->window_secs) < 0) {
		reply_error(out, "ERR bad WINDOW '%.*s': a duration such as 60, 10m, 1h or 1d", 40, val);
		return -1;
	}
	if (is_gens) {
		if (spec_parse_capacity(val, &n) < 0 || n > SHMF_WINDOW_MAX) {
			reply_error(out, "ERR bad GENERATIONS '%.*s': an integer from 1 to %u", 40, val, SHMF_WINDOW_MAX);
			return -1;
		}
		spec->window_gens = (uint32_t)n;
	}
	return 1;
}

/* A window needs both; GENERATIONS alone is an error, WINDOW alone means 2. */
static int window_complete(struct filter_spec *spec, struct reply *out)
{
	if (spec->window_gens != 0 && spec->window_secs == 0) {
		reply_error(out, "ERR GENERATIONS needs WINDOW duration");
		return -1;
	}
	if (spec->window_secs != 0 && spec->window_gens == 0)
		spec->window_gens = 2;
	return 0;
}

static void cmd_reserve(struct registry *reg, const struct request *req, struct reply *out)
{
	struct filter_spec spec;
	char err[REGISTRY_ERR_MAX];
	if (valid_name(req, 1, out) < 0)
		return;
	spec_defaults(&spec, req->argv[1]);
	if (spec_parse_fpr(req->argv[2], &spec.fpr) < 0) {
		reply_error(out, "ERR bad error rate '%.*s': must be a number in (0, 1)", 40, req->argv[2]);
		return;
	}
	if (spec_parse_capacity(req->argv[3], &spec.capacity) < 0) {
		reply_error(out, "ERR bad capacity '%.*s': must be a positive integer", 40, req->argv[3]);
		return;
	}
	for (int i = 4; i < req->argc; i++) {
		if (!strcasecmp(req->argv[i], "NONSCALING"))
			continue;
		int w = window_option(req, &i, &spec, out);
		if (w < 0)
			return;
		if (w > 0)
			continue;
		if (!strcasecmp(req->argv[i], "EXPANSION")) {
			reply_error(out, "ERR EXPANSION is not supported: shmfilter filters never grow; "
					 "size the filter for its whole lifetime (NONSCALING is the only behaviour)");
			return;
		}
		if (!strcasecmp(req->argv[i], "MODE") && i + 1 < req->argc) {
			const char *m = req->argv[++i];
			if (spec_parse_mode(m, 02, &spec.mode) < 0) {
				reply_error(out, "ERR bad MODE '%.*s': an octal mode like 0640, without the other-write bit",
					    40, m);
				return;
			}
			continue;
		}
		reply_error(out, "ERR unknown option '%.*s' for 'bf.reserve' (NONSCALING, MODE octal, WINDOW d, GENERATIONS n)",
			    40, req->argv[i]);
		return;
	}
	if (window_complete(&spec, out) < 0)
		return;
	int rc = registry_create(reg, &spec, err, sizeof(err));
	if (rc == SHMF_E_EXISTS)
		reply_error(out, "ERR item exists");
	else if (rc < 0)
		reply_error(out, "ERR %s", err);
	else
		reply_status(out, "OK");
}

/* One field, value pair of a flat INFO reply. */
static void field_int(struct reply *out, const char *name, long long v)
{
	reply_bulk_str(out, name);
	reply_int(out, v);
}

static void field_str(struct reply *out, const char *name, const char *v)
{
	reply_bulk_str(out, name);
	reply_bulk_str(out, v);
}

static void field_double(struct reply *out, const char *name, double v)
{
	char text[40];
	snprintf(text, sizeof(text), "%.17g", v);
	field_str(out, name, text);
}

static void reply_lib_error(struct reply *out, const struct request *req, int rc)
{
	reply_error(out, "ERR filter '%s': %s", req->argv[1], shmf_strerror(rc));
}

/* BF.ADD, BF.EXISTS and the one-key CF verbs: one key through @p op. */
static void single(struct registry *reg, const struct request *req, struct reply *out, int type,
		   int (*op)(shmf_t *, const void *, size_t))
{
	shmf_t *h = typed_handle(reg, req, 1, type, out);
	if (h == NULL)
		return;
	int rc = op(h, req->argv[2], req->lens[2]);
	if (rc < 0)
		reply_lib_error(out, req, rc);
	else
		reply_int(out, rc);
}

static void cmd_add(struct registry *reg, const struct request *req, struct reply *out)
{
	single(reg, req, out, SHMF_TYPE_BLOOM, shmf_add);
}

static void cmd_exists(struct registry *reg, const struct request *req, struct reply *out)
{
	single(reg, req, out, SHMF_TYPE_BLOOM, shmf_check);
}

/* BF.MADD, BF.MEXISTS, CF.MEXISTS, BF.INSERT: the batch calls over
 * argv[first..], in chunks. */
static void many_from(struct registry *reg, const struct request *req, struct reply *out, int type, int add,
		      int first)
{
	shmf_t *h = typed_handle(reg, req, 1, type, out);
	if (h == NULL)
		return;
	size_t n = (size_t)(req->argc - first);
	uint8_t *res = malloc(n);
	if (res == NULL) {
		reply_error(out, "ERR out of memory for %zu items", n);
		return;
	}
	shmf_key_t keys[BATCH];
	for (size_t done = 0; done < n;) {
		size_t m = n - done < BATCH ? n - done : BATCH;
		for (size_t i = 0; i < m; i++) {
			keys[i].ptr = req->argv[(size_t)first + done + i];
			keys[i].len = req->lens[(size_t)first + done + i];
		}
		int rc = add ? shmf_add_many(h, keys, m, res + done) : shmf_check_many(h, keys, m, res + done);
		if (rc < 0) {
			/* Adds before the failure stay: a Bloom add cannot be undone.
			 * The only failures are a filter dropped mid-request and a
			 * read-only handle, which the daemon never has. */
			free(res);
			reply_lib_error(out, req, rc);
			return;
		}
		done += m;
	}
	reply_array(out, n);
	for (size_t i = 0; i < n; i++)
		reply_int(out, res[i]);
	free(res);
}

static void many(struct registry *reg, const struct request *req, struct reply *out, int type, int add)
{
	many_from(reg, req, out, type, add, 2);
}

static void cmd_madd(struct registry *reg, const struct request *req, struct reply *out)
{
	many(reg, req, out, SHMF_TYPE_BLOOM, 1);
}

static void cmd_mexists(struct registry *reg, const struct request *req, struct reply *out)
{
	many(reg, req, out, SHMF_TYPE_BLOOM, 0);
}

/* What libshmf knows of the filter argv[1] of @p type: no file system calls (BF.*, CF.*). */
static int lib_info(struct registry *reg, const struct request *req, struct reply *out, int type, shmf_info_t *info)
{
	shmf_t *h = typed_handle(reg, req, 1, type, out);
	if (h == NULL)
		return -1;
	int rc = shmf_info(h, info);
	if (rc < 0) {
		reply_lib_error(out, req, rc);
		return -1;
	}
	return 0;
}

/* That plus the daemon's view: data file, its mode, huge pages (SHMF.INFO). */
static int get_info(struct registry *reg, const struct request *req, struct reply *out, struct filter_info *fi)
{
	char err[REGISTRY_ERR_MAX];
	int slot = lookup(reg, req, 1, out);
	if (slot < 0)
		return -1;
	if (registry_info(reg, slot, fi, err, sizeof(err)) < 0) {
		reply_error(out, "ERR %s", err);
		return -1;
	}
	return 0;
}

static void cmd_bf_info(struct registry *reg, const struct request *req, struct reply *out)
{
	static const char *const fields[] = { "Capacity", "Size", "Number of filters", "Number of items inserted",
					      "Expansion rate" };
	static const char *const keywords[] = { "CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION" };
	shmf_info_t info;
	int only = -1;
	if (req->argc == 3) {
		for (int i = 0; i < 5; i++)
			if (!strcasecmp(req->argv[2], keywords[i]))
				only = i;
		if (only < 0) {
			reply_error(out, "ERR unknown BF.INFO field '%.*s' (CAPACITY, SIZE, FILTERS, ITEMS or EXPANSION)",
				    40, req->argv[2]);
			return;
		}
	}
	if (lib_info(reg, req, out, SHMF_TYPE_BLOOM, &info) < 0)
		return;
	long long values[4] = { (long long)info.capacity, (long long)info.bytes, 1, (long long)info.items };
	reply_array(out, only < 0 ? 10 : 1);
	for (int i = 0; i < 5; i++) {
		if (only >= 0 && i != only)
			continue;
		if (only < 0)
			reply_bulk_str(out, fields[i]);
		if (i == 4)
			reply_nil(out);
		else
			reply_int(out, values[i]);
	}
}

static void cmd_card(struct registry *reg, const struct request *req, struct reply *out)
{
	shmf_info_t info;
	if (lib_info(reg, req, out, SHMF_TYPE_BLOOM, &info) == 0)
		reply_int(out, (long long)info.items);
}

/* ---- CF.* and the capped add ------------------------------------------ */

/* CF.RESERVE key capacity [BUCKETSIZE 4] [MAXITERATIONS n] [ERROR rate] [MODE m]
 * (options from argv[first]; EXPANSION refused as for BF.RESERVE). 0 or
 * -1 after replying with the error. */
static int cf_options(const struct request *req, int first, struct filter_spec *spec, struct reply *out)
{
	for (int i = first; i < req->argc; i++) {
		int w = window_option(req, &i, spec, out);
		if (w < 0)
			return -1;
		if (w > 0)
			continue;
		const char *opt = req->argv[i];
		const char *val = i + 1 < req->argc ? req->argv[i + 1] : NULL;
		if (!strcasecmp(opt, "EXPANSION")) {
			reply_error(out, "ERR EXPANSION is not supported: shmfilter filters never grow; "
					 "size the filter for its whole lifetime");
			return -1;
		}
		if (val == NULL) {
			reply_error(out, "ERR option '%.*s' needs a value, or is unknown (BUCKETSIZE 4, MAXITERATIONS n, ERROR rate, MODE octal)",
				    40, opt);
			return -1;
		}
		i++;
		if (!strcasecmp(opt, "BUCKETSIZE")) {
			if (strcmp(val, "4") != 0) {
				reply_error(out, "ERR BUCKETSIZE '%.*s' is not supported: buckets hold 4 fingerprints", 40, val);
				return -1;
			}
		} else if (!strcasecmp(opt, "MAXITERATIONS")) {
			if (spec_parse_kicks(val, &spec->max_kicks) < 0) {
				reply_error(out, "ERR bad MAXITERATIONS '%.*s': an integer from 1 to %u", 40, val,
					    SHMF_CUCKOO_KICKS_LIMIT);
				return -1;
			}
		} else if (!strcasecmp(opt, "ERROR")) {
			if (spec_parse_fpr(val, &spec->fpr) < 0) {
				reply_error(out, "ERR bad ERROR '%.*s': must be a number in (0, 1)", 40, val);
				return -1;
			}
		} else if (!strcasecmp(opt, "MODE")) {
			if (spec_parse_mode(val, 02, &spec->mode) < 0) {
				reply_error(out, "ERR bad MODE '%.*s': an octal mode like 0640, without the other-write bit",
					    40, val);
				return -1;
			}
		} else {
			reply_error(out, "ERR unknown option '%.*s' (BUCKETSIZE 4, MAXITERATIONS n, ERROR rate, MODE octal, WINDOW d, GENERATIONS n)",
				    40, opt);
			return -1;
		}
	}
	return window_complete(spec, out);
}

/* Create a filter of any type; an error is replied (RedisBloom's "item
 * exists" for a name in use). @return 0, or a negative code. */
static int create_filter(struct registry *reg, struct filter_spec *spec, struct reply *out)
{
	char err[REGISTRY_ERR_MAX];
	int rc = registry_create(reg, spec, err, sizeof(err));
	if (rc == SHMF_E_EXISTS)
		reply_error(out, "ERR item exists");
	else if (rc < 0)
		reply_error(out, "ERR %s", err);
	return rc;
}

/* The filter of a BF.INSERT or CF.INSERT, whose items start at argument
 * @p items (-1: no ITEMS): created from @p spec when missing, unless
 * NOCREATE. @return 0, or -1 with the error replied. */
static int insert_target(struct registry *reg, const struct request *req, struct filter_spec *spec, int items,
			 int nocreate, struct reply *out)
{
	if (items < 0 || items >= req->argc) {
		reply_error(out, "ERR ITEMS and at least one item are required");
		return -1;
	}
	if (registry_find(reg, req->argv[1]) >= 0)
		return 0;
	if (nocreate) {
		reply_error(out, "ERR not found");
		return -1;
	}
	return create_filter(reg, spec, out) < 0 ? -1 : 0;
}

static void cmd_cf_reserve(struct registry *reg, const struct request *req, struct reply *out)
{
	struct filter_spec spec;
	if (valid_name(req, 1, out) < 0)
		return;
	spec_defaults(&spec, req->argv[1]);
	spec.type = SHMF_TYPE_CUCKOO;
	if (spec_parse_capacity(req->argv[2], &spec.capacity) < 0) {
		reply_error(out, "ERR bad capacity '%.*s': must be a positive integer", 40, req->argv[2]);
		return;
	}
	if (cf_options(req, 3, &spec, out) < 0)
		return;
	if (create_filter(reg, &spec, out) >= 0)
		reply_status(out, "OK");
}

static void cmd_cf_add(struct registry *reg, const struct request *req, struct reply *out)
{
	single(reg, req, out, SHMF_TYPE_CUCKOO, shmf_add);
}

static void cmd_cf_addnx(struct registry *reg, const struct request *req, struct reply *out)
{
	single(reg, req, out, SHMF_TYPE_CUCKOO, shmf_add_unique);
}

static void cmd_cf_exists(struct registry *reg, const struct request *req, struct reply *out)
{
	single(reg, req, out, SHMF_TYPE_CUCKOO, shmf_check);
}

static void cmd_cf_mexists(struct registry *reg, const struct request *req, struct reply *out)
{
	many(reg, req, out, SHMF_TYPE_CUCKOO, 0);
}

static void cmd_cf_del(struct registry *reg, const struct request *req, struct reply *out)
{
	single(reg, req, out, SHMF_TYPE_CUCKOO, shmf_del);
}

static void cmd_cf_count(struct registry *reg, const struct request *req, struct reply *out)
{
	single(reg, req, out, SHMF_TYPE_CUCKOO, shmf_count);
}

/* CF.INSERT / CF.INSERTNX key [CAPACITY c] [NOCREATE] ITEMS item...: creates
 * the filter unless NOCREATE; per item 1 added, 0 present (NX), -1 full. */
static void insert(struct registry *reg, const struct request *req, struct reply *out, int nx)
{
	struct filter_spec spec;
	int nocreate = 0, items = -1;
	if (valid_name(req, 1, out) < 0)
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
				reply_error(out, "ERR bad CAPACITY '%.*s': must be a positive integer", 40, req->argv[i]);
				return;
			}
		} else {
			reply_error(out, "ERR unknown option '%.*s' (CAPACITY c, NOCREATE, ITEMS item...)", 40,
				    req->argv[i]);
			return;
		}
	}
	if (insert_target(reg, req, &spec, items, nocreate, out) < 0)
		return;
	shmf_t *h = typed_handle(reg, req, 1, SHMF_TYPE_CUCKOO, out);
	if (h == NULL)
		return;
	int n = req->argc - items;
	long long *res = malloc((size_t)n * sizeof(*res));
	if (res == NULL) {
		reply_error(out, "ERR out of memory for %d items", n);
		return;
	}
	for (int i = 0; i < n; i++) {
		const char *key = req->argv[items + i];
		int rc = nx ? shmf_add_unique(h, key, req->lens[items + i]) : shmf_add(h, key, req->lens[items + i]);
		if (rc == SHMF_E_FULL) {
			res[i] = -1;
		} else if (rc < 0) {
			free(res);
			reply_lib_error(out, req, rc);
			return;
		} else {
			res[i] = rc;
		}
	}
	reply_array(out, (size_t)n);
	for (int i = 0; i < n; i++)
		reply_int(out, res[i]);
	free(res);
}

static void cmd_cf_insert(struct registry *reg, const struct request *req, struct reply *out)
{
	insert(reg, req, out, 0);
}

static void cmd_cf_insertnx(struct registry *reg, const struct request *req, struct reply *out)
{
	insert(reg, req, out, 1);
}

static void cmd_cf_info(struct registry *reg, const struct request *req, struct reply *out)
{
	shmf_info_t info;
	if (lib_info(reg, req, out, SHMF_TYPE_CUCKOO, &info) < 0)
		return;
	reply_array(out, 16);
	field_int(out, "Size", (long long)info.bytes);
	field_int(out, "Number of buckets", (long long)info.buckets);
	field_int(out, "Number of filters", 1);
	field_int(out, "Number of items inserted", (long long)(info.items + info.deletes));
	field_int(out, "Number of items deleted", (long long)info.deletes);
	field_int(out, "Bucket size", 4);
	reply_bulk_str(out, "Expansion rate");
	reply_nil(out);
	field_int(out, "Max iterations", info.max_kicks);
}

/* SHMF.ADDCAPPED key item cap: add a copy only below cap copies, atomically;
 * replies with the count before (the add happened iff it is below cap). */
static void cmd_addcapped(struct registry *reg, const struct request *req, struct reply *out)
{
	uint64_t cap;
	if (req->argv[3][0] == '0' && req->argv[3][1] == '\0')
		cap = 0;
	else if (spec_parse_capacity(req->argv[3], &cap) < 0 || cap > 1000000) {
		reply_error(out, "ERR bad cap '%.*s': an integer from 0 to 1000000", 40, req->argv[3]);
		return;
	}
	shmf_t *h = typed_handle(reg, req, 1, SHMF_TYPE_CUCKOO, out);
	if (h == NULL)
		return;
	int rc = shmf_add_capped(h, req->argv[2], req->lens[2], (unsigned)cap);
	if (rc < 0)
		reply_lib_error(out, req, rc);
	else
		reply_int(out, rc);
}

static void cmd_list(struct registry *reg, const struct request *req, struct reply *out)
{
	(void)req;
	int slots[SHMF_SLOTS];
	int n = registry_list(reg, slots);
	reply_array(out, (size_t)n);
	for (int i = 0; i < n; i++)
		reply_bulk_str(out, reg->ctl.slots[slots[i]].name);
}

static void cmd_shmf_info(struct registry *reg, const struct request *req, struct reply *out)
{
	struct filter_info fi;
	char mode[8];
	if (get_info(reg, req, out, &fi) < 0)
		return;
	snprintf(mode, sizeof(mode), "%04o", (unsigned)fi.mode);
	int cuckoo = fi.info.type == SHMF_TYPE_CUCKOO, window = fi.info.window_generations != 0;
	reply_array(out, 2 * (14 + (cuckoo ? 5 : 0) + (window ? 5 : 0))); /* the field_* calls below */
	field_str(out, "name", fi.info.name);
	field_str(out, "type", spec_type_name(fi.info.type));
	field_int(out, "capacity", (long long)fi.info.capacity);
	field_double(out, "error_rate", fi.info.fpr_target);
	field_int(out, "bits", (long long)fi.info.bits);
	field_int(out, "k", fi.info.k);
	field_int(out, "bytes", (long long)fi.info.bytes);
	field_int(out, "items", (long long)fi.info.items);
	field_double(out, "fill_ratio", fi.info.fill_ratio);
	field_double(out, "fpr_estimate", fi.info.fpr_estimate);
	field_int(out, "generation", (long long)fi.info.generation);
	field_str(out, "data_file", fi.data_file);
	field_str(out, "mode", mode);
	field_int(out, "huge_pages", fi.huge_pages);
	if (cuckoo) {
		field_int(out, "buckets", (long long)fi.info.buckets);
		field_int(out, "fingerprint_bits", fi.info.fingerprint_bits);
		field_int(out, "max_kicks", fi.info.max_kicks);
		field_int(out, "relocations", (long long)fi.info.relocations);
		field_int(out, "deletes", (long long)fi.info.deletes);
	}
	if (window) {
		/* Each live generation, newest first: "generation:age_s:items". */
		char gens[SHMF_WINDOW_MAX * 64] = "";
		size_t at = 0;
		for (unsigned i = 0; i < fi.nlive && at < sizeof(gens); i++)
			at += (size_t)snprintf(gens + at, sizeof(gens) - at, "%s%llu:%llus:%llu", i ? " " : "",
					       (unsigned long long)fi.live_gen[i], (unsigned long long)fi.live_age[i],
					       (unsigned long long)fi.live_items[i]);
		field_int(out, "window_secs", (long long)fi.info.window_secs);
		field_int(out, "window_generations", fi.info.window_generations);
		field_int(out, "live_generations", fi.info.live_generations);
		field_int(out, "items_live", (long long)fi.info.items_live);
		field_str(out, "generations", gens);
	}
}

static void cmd_drop(struct registry *reg, const struct request *req, struct reply *out)
{
	char err[REGISTRY_ERR_MAX];
	if (lookup(reg, req, 1, out) < 0)
		return;
	if (registry_drop(reg, req->argv[1], err, sizeof(err)) < 0)
		reply_error(out, "ERR %s", err);
	else
		reply_status(out, "OK");
}

/* A file path argument: absolute (the daemon's working directory is
 * nobody's business), no NUL byte. */
static const char *path_arg(const struct request *req, int i, struct reply *out)
{
	const char *p = req->argv[i];
	if (strlen(p) != req->lens[i] || p[0] != '/' || req->lens[i] >= 4096) {
		reply_error(out, "ERR path must be absolute, at most 4095 bytes, without NUL bytes");
		return NULL;
	}
	return p;
}

static void cmd_snapshot(struct registry *reg, const struct request *req, struct reply *out)
{
	char err[SNAPSHOT_ERR_MAX];
	const char *path;
	if (lookup(reg, req, 1, out) < 0 || (path = path_arg(req, 2, out)) == NULL)
		return;
	if (registry_snapshot(reg, req->argv[1], path, &req->peer, err, sizeof(err)) < 0)
		reply_error(out, "ERR %s", err);
	else
		reply_status(out, "OK");
}

/* SWAP and RESTORE: validate the whole file (opened as the client), then
 * replace. */
static void replace(struct registry *reg, const struct request *req, struct reply *out, int how)
{
	char err[SNAPSHOT_ERR_MAX];
	const char *path;
	if (valid_name(req, 1, out) < 0 || (path = path_arg(req, 2, out)) == NULL)
		return;
	struct snap_file sf;
	struct fscred saved;
	int rc = fscred_become(&req->peer, &saved, err, sizeof(err));
	if (rc == 0) {
		rc = snapshot_open(&sf, path, err, sizeof(err));
		fscred_restore(&saved);
	}
	if (rc == 0) {
		rc = registry_replace(reg, req->argv[1], &sf, how, err, sizeof(err));
		snapshot_close(&sf);
	}
	if (rc < 0)
		reply_error(out, "ERR %s", err);
	else
		reply_status(out, "OK");
}

static void cmd_rotate(struct registry *reg, const struct request *req, struct reply *out)
{
	char err[REGISTRY_ERR_MAX];
	if (lookup(reg, req, 1, out) < 0)
		return;
	if (registry_rotate(reg, req->argv[1], err, sizeof(err)) < 0)
		reply_error(out, "ERR %s", err);
	else
		reply_status(out, "OK");
}

static void cmd_swap(struct registry *reg, const struct request *req, struct reply *out)
{
	replace(reg, req, out, REGISTRY_SWAP);
}

static void cmd_restore(struct registry *reg, const struct request *req, struct reply *out)
{
	replace(reg, req, out, REGISTRY_RESTORE);
}

/* ---- Verbs added for RedisBloom clients over TCP (issue 8) ------------- */

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
static void cmd_bf_insert(struct registry *reg, const struct request *req, struct reply *out)
{
	struct filter_spec spec;
	int nocreate = 0, sized = 0, items = -1;
	if (valid_name(req, 1, out) < 0)
		return;
	spec_defaults(&spec, req->argv[1]);
	for (int i = 2; i < req->argc && items < 0; i++) {
		const char *opt = req->argv[i];
		const char *val = i + 1 < req->argc ? req->argv[i + 1] : NULL;
		if (!strcasecmp(opt, "ITEMS")) {
			items = i + 1;
		} else if (!strcasecmp(opt, "NOCREATE")) {
			nocreate = 1;
		} else if (!strcasecmp(opt, "NONSCALING")) {
			continue; /* the only behaviour */
		} else if (!strcasecmp(opt, "EXPANSION")) {
			reply_error(out, "ERR EXPANSION is not supported: shmfilter filters never grow; "
					 "size the filter for its whole lifetime (NONSCALING is the only behaviour)");
			return;
		} else if (val == NULL) {
			reply_error(out, "ERR option '%.*s' needs a value, or is unknown "
					 "(CAPACITY c, ERROR rate, NOCREATE, NONSCALING, MODE octal, ITEMS item...)", 40, opt);
			return;
		} else if (!strcasecmp(opt, "CAPACITY")) {
			if (spec_parse_capacity(val, &spec.capacity) < 0) {
				reply_error(out, "ERR bad CAPACITY '%.*s': must be a positive integer", 40, val);
				return;
			}
			sized = 1;
			i++;
		} else if (!strcasecmp(opt, "ERROR")) {
			if (spec_parse_fpr(val, &spec.fpr) < 0) {
				reply_error(out, "ERR bad ERROR '%.*s': must be a number in (0, 1)", 40, val);
				return;
			}
			sized = 1;
			i++;
		} else if (!strcasecmp(opt, "MODE")) {
			if (spec_parse_mode(val, 02, &spec.mode) < 0) {
				reply_error(out, "ERR bad MODE '%.*s': an octal mode like 0640, without the other-write bit",
					    40, val);
				return;
			}
			i++;
		} else {
			reply_error(out, "ERR unknown option '%.*s' for 'bf.insert' "
					 "(CAPACITY c, ERROR rate, NOCREATE, NONSCALING, MODE octal, ITEMS item...)", 40, opt);
			return;
		}
	}
	if (nocreate && sized) {
		reply_error(out, "ERR NOCREATE cannot be combined with CAPACITY or ERROR (they size a filter to create)");
		return;
	}
	if (insert_target(reg, req, &spec, items, nocreate, out) < 0)
		return;
	many_from(reg, req, out, SHMF_TYPE_BLOOM, 1, items);
}

/* CF.COMPACT key: RedisBloom's defragmentation of a filter's sub-filters.
 * A shmfilter cuckoo filter is one table, with nothing to compact. */
static void cmd_cf_compact(struct registry *reg, const struct request *req, struct reply *out)
{
	if (typed_handle(reg, req, 1, SHMF_TYPE_CUCKOO, out) != NULL)
		reply_status(out, "OK");
}

static const struct command commands[] = {
	{ "PING", 1, 2, cmd_ping },
	{ "BF.RESERVE", 4, -1, cmd_reserve },
	{ "BF.ADD", 3, 3, cmd_add },
	{ "BF.MADD", 3, -1, cmd_madd },
	{ "BF.EXISTS", 3, 3, cmd_exists },
	{ "BF.MEXISTS", 3, -1, cmd_mexists },
	{ "BF.INFO", 2, 3, cmd_bf_info },
	{ "BF.CARD", 2, 2, cmd_card },
	{ "BF.INSERT", 4, -1, cmd_bf_insert },
	{ "CF.RESERVE", 3, -1, cmd_cf_reserve },
	{ "CF.ADD", 3, 3, cmd_cf_add },
	{ "CF.ADDNX", 3, 3, cmd_cf_addnx },
	{ "CF.INSERT", 4, -1, cmd_cf_insert },
	{ "CF.INSERTNX", 4, -1, cmd_cf_insertnx },
	{ "CF.EXISTS", 3, 3, cmd_cf_exists },
	{ "CF.MEXISTS", 3, -1, cmd_cf_mexists },
	{ "CF.DEL", 3, 3, cmd_cf_del },
	{ "CF.COUNT", 3, 3, cmd_cf_count },
	{ "CF.INFO", 2, 2, cmd_cf_info },
	{ "CF.COMPACT", 2, 2, cmd_cf_compact },
	{ "SHMF.ADDCAPPED", 4, 4, cmd_addcapped },
	{ "SHMF.LIST", 1, 1, cmd_list },
	{ "SHMF.INFO", 2, 2, cmd_shmf_info },
	{ "SHMF.DROP", 2, 2, cmd_drop },
	{ "SHMF.SNAPSHOT", 3, 3, cmd_snapshot },
	{ "SHMF.SWAP", 3, 3, cmd_swap },
	{ "SHMF.RESTORE", 3, 3, cmd_restore },
	{ "SHMF.ROTATE", 2, 2, cmd_rotate },
};

void commands_dispatch(struct registry *reg, const struct request *req, struct reply *out)
{
	if (req->argc < 1) {
		reply_error(out, "ERR empty request");
		return;
	}
	const char *verb = req->argv[0];
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const struct command *c = &commands[i];
		if (strcasecmp(verb, c->name) != 0 || strlen(verb) != req->lens[0])
			continue;
		if (req->argc < c->min_args || (c->max_args >= 0 && req->argc > c->max_args)) {
			char lower[16];
			size_t n = strlen(c->name);
			for (size_t j = 0; j <= n; j++)
				lower[j] = (char)tolower((unsigned char)c->name[j]);
			reply_error(out, "ERR wrong number of arguments for '%s' command", lower);
			return;
		}
		c->run(reg, req, out);
		return;
	}
	reply_error(out, "ERR unknown command '%.*s'", 64, verb);
}

const char *commands_verb(size_t i, int *min_args, int *max_args)
{
	if (i >= sizeof(commands) / sizeof(commands[0]))
		return NULL;
	*min_args = commands[i].min_args;
	*max_args = commands[i].max_args;
	return commands[i].name;
}
