/*
 * verbs-admin.c - shmd's own SHMF.* verbs that administer filters
 * (list, describe, drop, rotate) and those that name files on the
 * daemon's host (snapshot, swap, restore), which open the file with the
 * identity of the client that asked (fscred.h) on the file worker
 * (filejobs.h), and SHMF.REPLICATION,
 * what the fleet engine says of each replicated filter. See call.h.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "shmd/verbs/handlers.h"
#include "shmd/verbs/call.h"
#include "shmd/store/expires.h"
#include "shmd/files/merge.h"
#include "shmd/files/reload.h"
#include "shmd/files/filejobs.h"
#include "shmd/fleet/replication.h"
#include "libclient/rundir.h"
#include "common/snapshot.h"
#include "common/spec.h"

void cmd_shmf_list(struct verb_call *c)
{
	int slots[SHMF_SLOTS];
	int n = registry_list(c->reg, slots);
	reply_array(c->out, (size_t)n);
	for (int i = 0; i < n; i++)
		reply_bulk_str(c->out, c->reg->ctl.slots[slots[i]].name);
}

/* "generation:age_s:items" of each live generation, newest first, space-separated. */
static void live_generations(const struct filter_info *fi, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < fi->nlive && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%llu:%llus:%llu", i ? " " : "",
				       (unsigned long long)fi->live_gen[i], (unsigned long long)fi->live_age[i],
				       (unsigned long long)fi->live_items[i]);
}

/* What each layer of a growing filter is, "layer:generation:capacity:items:bytes:state" (state: current,
 * full, standby, opened), the current one first, the older ones after it, a standby last. */
static void layer_list(const struct filter_info *fi, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < fi->nparts && at < len; i++) {
		const struct shmf_layer_status *l = &fi->layer[i];
		const char *state = l->standby ? ((l->state & SHMF_LAYER_OPENED) ? "opened" : "standby")
				    : (l->state & SHMF_LAYER_FULL) ? "full"
				    : i == 0                       ? "current"
								   : "older";
		at += (size_t)snprintf(buf + at, len - at, "%s%u:%llu:%llu:%llu:%llu:%s", i ? " " : "", l->layer,
				       (unsigned long long)l->generation, (unsigned long long)l->capacity,
				       (unsigned long long)l->items, (unsigned long long)l->bytes, state);
	}
}

/* SHMF.INFO key: what libshmf knows of the filter, plus the daemon's view:
 * data file, its mode, huge pages, and a cuckoo filter's, a window's or a
 * growing filter's own fields (of a growing one, capacity and error_rate
 * are what it was created with, items and bytes its layers' summed). */
void cmd_shmf_info(struct verb_call *c)
{
	char err[REGISTRY_ERR_MAX], mode[8], gens[SHMF_RING_MAX * 64], layers[SHMF_RING_MAX * 96];
	struct filter_info fi;
	int slot = call_slot(c);
	if (slot < 0)
		return;
	if (registry_info(c->reg, slot, &fi, err, sizeof(err)) < 0) {
		reply_error(c->out, "ERR %s", err);
		return;
	}
	snprintf(mode, sizeof(mode), "%04o", (unsigned)fi.mode);
	int cuckoo = fi.info.type == SHMF_TYPE_CUCKOO, window = fi.info.window_generations != 0;
	int grows = fi.expansion != 0, fuse = fi.info.type == SHMF_TYPE_STATIC;
	/* A Bloom filter of shmfilter's own (not an import): its layout. */
	int layout = fi.info.type == SHMF_TYPE_BLOOM && fi.info.lines != 0;
	struct reply *out = c->out;
	/* the field_* calls below */
	reply_map(out, 14 + (cuckoo ? 6 : 0) + (fuse ? 4 : 0) + (layout ? 2 : 0) + (window ? 5 : 0) + (grows ? 4 : 0) +
			       (fi.nonscaling ? 1 : 0));
	reply_field_str(out, "name", fi.info.name);
	reply_field_str(out, "type", spec_type_name(fi.info.type));
	reply_field_int(out, "capacity", (long long)fi.info.capacity);
	reply_field_double(out, "error_rate", fi.info.fpr_target);
	reply_field_int(out, "bits", (long long)fi.info.bits);
	reply_field_int(out, "k", fi.info.k);
	if (layout) {
		/* Lines a key: each check reads that many cache lines. */
		reply_field_int(out, "lines", fi.info.lines);
		reply_field_double(out, "bits_per_key", (double)fi.info.bits / (double)fi.info.capacity);
	}
	reply_field_int(out, "bytes", (long long)fi.info.bytes);
	reply_field_int(out, "items", (long long)fi.info.items);
	reply_field_double(out, "fill_ratio", fi.info.fill_ratio);
	reply_field_double(out, "fpr_estimate", fi.info.fpr_estimate);
	reply_field_int(out, "generation", (long long)fi.info.generation);
	reply_field_str(out, "data_file", fi.data_file);
	reply_field_str(out, "mode", mode);
	reply_field_int(out, "huge_pages", fi.huge_pages);
	if (cuckoo) {
		reply_field_int(out, "buckets", (long long)fi.info.buckets);
		reply_field_int(out, "bucket_size", fi.info.bucket_size);
		reply_field_int(out, "fingerprint_bits", fi.info.fingerprint_bits);
		reply_field_int(out, "max_kicks", fi.info.max_kicks);
		reply_field_int(out, "relocations", (long long)fi.info.relocations);
		reply_field_int(out, "deletes", (long long)fi.info.deletes);
	}
	if (fuse) {
		/* A static filter: fingerprints (in segments of bucket_size). */
		reply_field_int(out, "fingerprints", (long long)fi.info.buckets);
		reply_field_int(out, "segment_length", fi.info.bucket_size);
		reply_field_int(out, "fingerprint_bits", fi.info.fingerprint_bits);
		reply_field_double(out, "bits_per_key", (double)fi.info.bits / (double)fi.info.capacity);
	}
	if (window) {
		live_generations(&fi, gens, sizeof(gens));
		reply_field_int(out, "window_secs", (long long)fi.info.window_secs);
		reply_field_int(out, "window_generations", fi.info.window_generations);
		reply_field_int(out, "live_generations", fi.info.live_generations);
		reply_field_int(out, "items_live", (long long)fi.info.items_live);
		reply_field_str(out, "generations", gens);
	}
	if (grows) {
		layer_list(&fi, layers, sizeof(layers));
		reply_field_int(out, "expansion", fi.expansion);
		reply_field_int(out, "layer_count", fi.nlayers);
		reply_field_int(out, "capacity_total", (long long)fi.capacity_total);
		reply_field_str(out, "layers", layers);
	}
	if (fi.nonscaling)
		reply_field_int(out, "nonscaling", 1);
}

/* The reply of a registry call that says only OK or why not. */
static void reply_done(struct verb_call *c, int rc, const char *err)
{
	if (rc < 0)
		reply_error(c->out, "ERR %s", err);
	else
		reply_status(c->out, "OK");
}

void cmd_shmf_drop(struct verb_call *c)
{
	char err[REGISTRY_ERR_MAX];
	if (call_slot(c) < 0)
		return;
	reply_done(c, expires_drop(c->reg, c->req->argv[1], err, sizeof(err)), err);
}

void cmd_shmf_rotate(struct verb_call *c)
{
	char err[REGISTRY_ERR_MAX];
	if (call_slot(c) >= 0)
		reply_done(c, registry_rotate(c->reg, c->req->argv[1], err, sizeof(err)), err);
}

/* File path argument argv[2]: absolute (the daemon's working directory is
 * nobody's business), no NUL byte. NULL after replying. */
static const char *path_arg(struct verb_call *c)
{
	const char *p = c->req->argv[2];
	if (strlen(p) != c->req->lens[2] || p[0] != '/' || c->req->lens[2] >= 4096) {
		reply_error(c->out, "ERR path must be absolute, at most 4095 bytes, without NUL bytes");
		return NULL;
	}
	return p;
}

/* SHMF.SNAPSHOT key path [FORCE]: a job of the file worker; the reply
 * comes when the file is written (filejobs.h). */
void cmd_shmf_snapshot(struct verb_call *c)
{
	const char *path;
	int force = c->req->argc == 4;
	if (force && strcasecmp(c->req->argv[3], "force") != 0) {
		reply_error(c->out,
			    "ERR unknown option '%.*s' for SHMF.SNAPSHOT (FORCE replaces a file that is not a snapshot)",
			    40, c->req->argv[3]);
		return;
	}
	if (call_slot(c) < 0 || (path = path_arg(c)) == NULL)
		return;
	c->parked = filejob_snapshot(c->reg, c->req->argv[1], path, c->peer, force, c->out, c->sess);
}

/* SWAP and RESTORE: the whole file validated (opened as the client), then
 * the filter replaced, as a job of the file worker. */
static void replace(struct verb_call *c, int how)
{
	const char *path;
	if (call_name_ok(c) < 0 || (path = path_arg(c)) == NULL)
		return;
	int reshape = 0;
	if (c->req->argc == 4) {
		if (how != REGISTRY_SWAP || strcasecmp(c->req->argv[3], "RESHAPE") != 0) {
			reply_error(c->out, "ERR unknown option '%.*s' for '%s' (RESHAPE, for shmf.swap)", 40,
				    c->req->argv[3], how == REGISTRY_SWAP ? "shmf.swap" : "shmf.restore");
			return;
		}
		reshape = 1;
	}
	c->parked = filejob_replace(c->reg, c->req->argv[1], path, c->peer, how, reshape, c->out, c->sess);
}

void cmd_shmf_swap(struct verb_call *c)
{
	replace(c, REGISTRY_SWAP);
}

void cmd_shmf_restore(struct verb_call *c)
{
	replace(c, REGISTRY_RESTORE);
}

/* One replicated filter as a flat name/value array; nodes is an array of
 * [node, last_heard_ms_ago, foreign_shape]. */
static void reply_replication(struct reply *out, const struct repl_filter_stats *st)
{
	char cursor[48];
	reply_map(out, 30 + REPL_REFUSED_KINDS); /* the field_* calls below, and nodes */
	reply_field_str(out, "name", st->name);
	reply_field_str(out, "stream", st->stream);
	reply_field_str(out, "state", st->state);
	reply_field_str(out, "cursor", fleet_id_text(st->cursor, cursor, sizeof(cursor)));
	reply_field_int(out, "lag_p50_ms", st->lag_p50_ms);
	reply_field_int(out, "lag_p99_ms", st->lag_p99_ms);
	reply_field_int(out, "journal_depth", (long long)st->journal_depth);
	reply_field_int(out, "sent", (long long)st->sent);
	reply_field_int(out, "applied", (long long)st->applied);
	reply_field_int(out, "dropped_journal_full", (long long)st->dropped_journal_full);
	reply_field_int(out, "dropped_retired_window", (long long)st->dropped_retired_window);
	reply_field_int(out, "dropped_future_window", (long long)st->dropped_future_window);
	reply_field_int(out, "dropped_foreign_shape", (long long)st->dropped_foreign_shape);
	reply_field_int(out, "missed", (long long)st->missed);
	reply_field_int(out, "lost", (long long)st->lost);
	reply_field_int(out, "malformed", (long long)st->malformed);
	reply_field_int(out, "own_skipped", (long long)st->own);
	for (int k = 0; k < REPL_REFUSED_KINDS; k++) {
		char name[32];
		snprintf(name, sizeof(name), "refused_%s", repl_refused_name[k]);
		reply_field_int(out, name, (long long)st->refused[k]);
	}
	reply_field_int(out, "repairs", (long long)st->repairs);
	reply_field_int(out, "repair_last_ms", (long long)st->repair_last_ms);
	reply_field_int(out, "repair_last_bytes", (long long)st->repair_last_bytes);
	reply_field_int(out, "repair_bytes", (long long)st->repair_bytes);
	reply_field_str(out, "repair_peer", st->repair_peer);
	reply_field_int(out, "repair_refused", (long long)st->repair_refused);
	reply_field_int(out, "repair_notices", (long long)st->repair_notices);
	reply_field_int(out, "peers_unverified", (long long)st->peers_unverified);
	reply_field_str(out, "last_error", st->last_error);
	reply_field_str(out, "last_refused", st->last_refused);
	reply_field_str(out, "redis", st->redis);
	reply_field_str(out, "redis_found", st->redis_found);
	reply_bulk_str(out, "nodes");
	reply_array(out, st->nnodes);
	for (unsigned i = 0; i < st->nnodes; i++) {
		reply_array(out, 3);
		reply_bulk_str(out, st->nodes[i].node);
		reply_int(out, (long long)st->nodes[i].last_heard_ms_ago);
		reply_int(out, st->nodes[i].foreign_shape);
	}
}

/* SHMF.REPLICATION [filter]: that filter's replication (a flat array), or
 * every replicated filter's (an array of them; empty without [replication]). */
void cmd_shmf_replication(struct verb_call *c)
{
	static struct repl_filter_stats st; /* large; the main loop's alone */
	struct replication *e = c->reg->repl;
	if (c->req->argc == 2) {
		const char *name = c->req->argv[1];
		int rc = strlen(name) == c->req->lens[1] ? shmf_name_check(name) : SHMF_E_NAME;
		if (rc < 0) {
			reply_error(c->out, "ERR invalid filter name '%.*s': %s", 80, name, shmf_strerror(rc));
			return;
		}
		int slot = registry_find(c->reg, name);
		if (slot < 0)
			reply_error(c->out, "ERR filter '%s' not found", name);
		else if (e == NULL || replication_stats(e, slot, &st) < 0)
			reply_error(c->out, "ERR filter '%s' does not replicate%s", name,
				    e == NULL ? " (shmd's configuration has no [replication] section)" : "");
		else
			reply_replication(c->out, &st);
		return;
	}
	int slots[SHMF_SLOTS], n = registry_list(c->reg, slots), m = 0;
	for (int i = 0; i < n && e != NULL; i++)
		if (c->reg->ctl.slots[slots[i]].flags & SHMF_SLOT_REPLICATED)
			slots[m++] = slots[i];
	/* Counted first: a filter the engine does not know is left out (the
	 * engine's list changes only in this thread, so it stays known). */
	int k = 0;
	for (int i = 0; i < m; i++)
		if (replication_stats(e, slots[i], &st) == 0)
			slots[k++] = slots[i];
	reply_array(c->out, (size_t)k);
	for (int i = 0; i < k; i++) {
		replication_stats(e, slots[i], &st);
		reply_replication(c->out, &st);
	}
}

/* ---- SHMF.MERGE ------------------------------------------------------- */

/* SHMF.MERGE key path: OR a Bloom snapshot file (opened as the client,
 * checked whole first) into the live filter (merge.h), as a job of the
 * file worker. OK, or OK saying how many generations had no live window
 * to go into. */
void cmd_shmf_merge(struct verb_call *c)
{
	const char *path;
	if (call_slot(c) < 0 || (path = path_arg(c)) == NULL)
		return;
	c->parked = filejob_merge(c->reg, c->req->argv[1], path, c->peer, c->out, c->sess);
}

/* ---- SHMF.RELOAD ------------------------------------------------------ */

/* SHMF.RELOAD: what SIGHUP does (reload.h), answered: an array of the
 * lines the log got, the last one the summary; or the parse error, with
 * nothing changed. */
void cmd_shmf_reload(struct verb_call *c)
{
	static struct reload_report rep; /* large; the main loop's alone */
	struct reload_ctx *ctx = reload_registered();
	if (ctx == NULL) {
		reply_error(c->out, "ERR this shmd has no configuration to reload");
		return;
	}
	if (reload_run(ctx, &rep) < 0) {
		reply_error(c->out, "ERR reload: %s", rep.error);
		return;
	}
	reply_array(c->out, rep.n);
	for (unsigned i = 0; i < rep.n; i++)
		reply_bulk_str(c->out, rep.line[i]);
}
