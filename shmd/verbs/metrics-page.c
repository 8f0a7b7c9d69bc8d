/*
 * metrics-page.c - the Prometheus page (see metrics-page.h). The figures
 * of every filter are gathered first, one registry_info() each, then
 * written family by family: the format wants a metric's samples together,
 * after its HELP and TYPE lines.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shmd/base/clock.h"
#include "shmd/base/memstat.h"
#include "shmd/fleet/replication.h"
#include "shmd/store/quotas.h"
#include "shmd/verbs/metrics-page.h"
#include "shmd/verbs/verbs.h"

/* The page as it grows; full once it would pass METRICS_PAGE_MAX. */
struct page {
	char *p;
	size_t len, cap;
	int err; /* 0, -ENOMEM or SHMF_E_TOOBIG: the first failure, nothing written after it */
};

static void put(struct page *pg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct page *pg, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || pg->err != 0)
		return;
	size_t len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
	if (pg->len + len + 1 > METRICS_PAGE_MAX) {
		pg->err = SHMF_E_TOOBIG;
		return;
	}
	if (pg->len + len + 1 > pg->cap) {
		size_t cap = pg->cap ? 2 * pg->cap : 16384;
		while (cap < pg->len + len + 1)
			cap *= 2;
		char *p = realloc(pg->p, cap);
		if (p == NULL) {
			pg->err = -ENOMEM;
			return;
		}
		pg->p = p;
		pg->cap = cap;
	}
	memcpy(pg->p + pg->len, line, len + 1);
	pg->len += len;
}

/* A metric family's HELP and TYPE lines. */
static void family(struct page *pg, const char *name, const char *type, const char *help)
{
	put(pg, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A sample's value as the format writes numbers (integers exactly). */
static const char *num(double v, char buf[40])
{
	if (v == floor(v) && fabs(v) < 9007199254740992.0)
		snprintf(buf, 40, "%.0f", v);
	else
		snprintf(buf, 40, "%.9g", v);
	return buf;
}

/* ---- Per filter --------------------------------------------------------- */

/* The figures of one filter, by enum fig; NAN: the filter has none. */
enum fig {
	F_ITEMS,
	F_CAPACITY,
	F_BYTES,
	F_FILL,
	F_FPR,
	F_FPR_TARGET,
	F_GENERATIONS,
	F_LAYERS,
	F_ROTATIONS,
	F_SWAPS,
	F_GROWTHS,
	F_SNAPSHOT_AGE,
	F_SNAPSHOT_FAILURES,
	F_REPL_FOLLOWING,
	F_REPL_CATCHING_UP,
	F_REPL_DISCONNECTED,
	F_REPL_DIVERGED,
	F_REPL_STREAM_ERROR,
	F_REPL_WAITING_REPLICAS,
	F_REPL_LAG_P50,
	F_REPL_LAG_P99,
	F_REPL_JOURNAL,
	F_REPL_SENT,
	F_REPL_APPLIED,
	F_REPL_DROP_JOURNAL_FULL,
	F_REPL_DROP_NO_RING,
	F_REPL_DROP_LOST,
	F_REPL_DROP_RETIRED,
	F_REPL_DROP_FUTURE,
	F_REPL_DROP_FOREIGN,
	F_REPL_DROP_MALFORMED,
	F_REPL_REFUSED_FORGED, /* then one per enum repl_refused, in its order */
	F_REPL_REFUSED_ALTERED,
	F_REPL_REFUSED_REPLAYED,
	F_REPL_REFUSED_IMPERSONATING,
	F_REPL_REFUSED_UNSIGNED,
	F_REPL_REPAIRING,
	F_REPL_REPAIRS,
	F_REPL_REPAIR_LAST,
	F_REPL_REPAIR_BYTES,
	F_REPL_REPAIR_REFUSED,
	F_COUNT
};

_Static_assert(F_REPL_REFUSED_UNSIGNED - F_REPL_REFUSED_FORGED == REPL_UNSIGNED - REPL_FORGED &&
		       REPL_UNSIGNED + 1 == REPL_REFUSED_KINDS,
	       "a metric per kind of refusal, in enum repl_refused's order");

struct filter_figs {
	char name[SHMF_NAME_MAX + 1]; /* [A-Za-z0-9_.:-]: nothing to escape in a label */
	const char *type;
	double v[F_COUNT];
};

/* A family of the filters' page: rows of one name in a row of the table
 * are one family, told apart by their extra label. */
static const struct filter_row {
	enum fig fig;
	const char *name, *type, *label, *help;
} filter_rows[] = {
	{ F_ITEMS, "shmd_filter_items", "gauge", NULL,
	  "Keys the filter holds (a window: every live generation's; a growing filter: every layer's)." },
	{ F_CAPACITY, "shmd_filter_capacity", "gauge", NULL,
	  "Keys the filter was sized for (a growing filter: its layers' capacities summed)." },
	{ F_BYTES, "shmd_filter_bytes", "gauge", NULL,
	  "Bytes of the filter's data segments in shared memory, every generation and layer." },
	{ F_FILL, "shmd_filter_fill_ratio", "gauge", NULL,
	  "Bloom: expected fraction of bits set; cuckoo: fraction of slots in use (the generation or layer adds go "
	  "to)." },
	{ F_FPR, "shmd_filter_false_positive_rate", "gauge", NULL,
	  "Estimated chance that a check of an absent key answers present, from the items now." },
	{ F_FPR_TARGET, "shmd_filter_false_positive_rate_target", "gauge", NULL,
	  "False-positive rate the filter was sized for, at capacity." },
	{ F_GENERATIONS, "shmd_filter_generations", "gauge", NULL,
	  "Live generations checked (a time window's; 1 for other filters)." },
	{ F_LAYERS, "shmd_filter_layers", "gauge", NULL, "Layers that hold keys (a growing filter's; 1 otherwise)." },
	{ F_ROTATIONS, "shmd_filter_rotations_total", "counter", NULL,
	  "Rotations of a time window (a new newest generation) since shmd started." },
	{ F_SWAPS, "shmd_filter_swaps_total", "counter", NULL, "Snapshots swapped in (SHMF.SWAP) since shmd started." },
	{ F_GROWTHS, "shmd_filter_growths_total", "counter", NULL,
	  "Layers a growing filter made current since shmd started." },
	{ F_SNAPSHOT_AGE, "shmd_filter_snapshot_age_seconds", "gauge", NULL,
	  "Seconds since the filter's last periodic snapshot was written (absent before the first one)." },
	{ F_SNAPSHOT_FAILURES, "shmd_filter_snapshot_failures_total", "counter", NULL,
	  "Periodic snapshots of the filter that failed since shmd started." },
	{ F_REPL_FOLLOWING, "shmd_filter_replication_state", "gauge", "state=\"following\"",
	  "1 for the replicated filter's state (following, catching-up, disconnected, diverged, stream-error, "
	  "waiting-replicas), 0 for the others." },
	{ F_REPL_CATCHING_UP, "shmd_filter_replication_state", "gauge", "state=\"catching-up\"", NULL },
	{ F_REPL_DISCONNECTED, "shmd_filter_replication_state", "gauge", "state=\"disconnected\"", NULL },
	{ F_REPL_DIVERGED, "shmd_filter_replication_state", "gauge", "state=\"diverged\"", NULL },
	{ F_REPL_STREAM_ERROR, "shmd_filter_replication_state", "gauge", "state=\"stream-error\"", NULL },
	{ F_REPL_REPAIRING, "shmd_filter_replication_state", "gauge", "state=\"repairing\"", NULL },
	{ F_REPL_WAITING_REPLICAS, "shmd_filter_replication_state", "gauge", "state=\"waiting-replicas\"", NULL },
	{ F_REPL_LAG_P50, "shmd_filter_replication_lag_p50_seconds", "gauge", NULL,
	  "Median lag of other nodes' entries applied in the last minute (absent when none was)." },
	{ F_REPL_LAG_P99, "shmd_filter_replication_lag_p99_seconds", "gauge", NULL,
	  "99th percentile lag of other nodes' entries applied in the last minute (absent when none was)." },
	{ F_REPL_JOURNAL, "shmd_filter_replication_journal_entries", "gauge", NULL,
	  "Entries waiting in the filter's journal to be sent." },
	{ F_REPL_SENT, "shmd_filter_replication_sent_total", "counter", NULL,
	  "Journal entries sent to the stream (XADD) since shmd started." },
	{ F_REPL_APPLIED, "shmd_filter_replication_applied_total", "counter", NULL,
	  "Other nodes' entries applied since shmd started." },
	{ F_REPL_DROP_JOURNAL_FULL, "shmd_filter_replication_dropped_total", "counter", "reason=\"journal_full\"",
	  "Entries not replicated or not applied, by reason (SHMF.REPLICATION's counters)." },
	{ F_REPL_DROP_NO_RING, "shmd_filter_replication_dropped_total", "counter", "reason=\"no_ring\"", NULL },
	{ F_REPL_DROP_LOST, "shmd_filter_replication_dropped_total", "counter", "reason=\"lost\"", NULL },
	{ F_REPL_DROP_RETIRED, "shmd_filter_replication_dropped_total", "counter", "reason=\"retired_window\"", NULL },
	{ F_REPL_DROP_FUTURE, "shmd_filter_replication_dropped_total", "counter", "reason=\"future_window\"", NULL },
	{ F_REPL_DROP_FOREIGN, "shmd_filter_replication_dropped_total", "counter", "reason=\"foreign_shape\"", NULL },
	{ F_REPL_DROP_MALFORMED, "shmd_filter_replication_dropped_total", "counter", "reason=\"malformed\"", NULL },
	{ F_REPL_REFUSED_FORGED, "shmd_filter_replication_refused_total", "counter", "kind=\"forged\"",
	  "Stream entries refused for their tags or sequence, by kind (SHMF.REPLICATION's refused_*)." },
	{ F_REPL_REFUSED_ALTERED, "shmd_filter_replication_refused_total", "counter", "kind=\"altered\"", NULL },
	{ F_REPL_REFUSED_REPLAYED, "shmd_filter_replication_refused_total", "counter", "kind=\"replayed\"", NULL },
	{ F_REPL_REFUSED_IMPERSONATING, "shmd_filter_replication_refused_total", "counter", "kind=\"impersonating\"",
	  NULL },
	{ F_REPL_REFUSED_UNSIGNED, "shmd_filter_replication_refused_total", "counter", "kind=\"unsigned\"", NULL },
	{ F_REPL_REPAIRS, "shmd_filter_replication_repairs_total", "counter", NULL,
	  "Self-repairs done: a peer's copy ORed in (Bloom) or pulled (cuckoo)." },
	{ F_REPL_REPAIR_LAST, "shmd_filter_replication_repair_last_seconds", "gauge", NULL,
	  "How long the last self-repair took." },
	{ F_REPL_REPAIR_BYTES, "shmd_filter_replication_repair_bytes_total", "counter", NULL,
	  "Bytes moved from peers by self-repairs." },
	{ F_REPL_REPAIR_REFUSED, "shmd_filter_replication_repair_refused_total", "counter", NULL,
	  "Peers refused for a repair: their filter has another shape or seed." },
};

#define NFILTER_ROWS (sizeof(filter_rows) / sizeof(filter_rows[0]))

/* The replication figures of the filter in @p slot, if it replicates. */
static void repl_figs(struct registry *reg, int slot, struct filter_figs *f)
{
	static struct repl_filter_stats st; /* large; the loop's alone */
	if (reg->repl == NULL || !(reg->ctl.slots[slot].flags & SHMF_SLOT_REPLICATED) ||
	    replication_stats(reg->repl, slot, &st) < 0)
		return;
	f->v[F_REPL_FOLLOWING] = !strcmp(st.state, "following");
	f->v[F_REPL_CATCHING_UP] = !strcmp(st.state, "catching-up");
	f->v[F_REPL_DISCONNECTED] = !strcmp(st.state, "disconnected");
	f->v[F_REPL_DIVERGED] = !strcmp(st.state, "diverged");
	f->v[F_REPL_STREAM_ERROR] = !strcmp(st.state, "stream-error");
	f->v[F_REPL_WAITING_REPLICAS] = !strcmp(st.state, "waiting-replicas");
	f->v[F_REPL_LAG_P50] = st.lag_p50_ms >= 0 ? (double)st.lag_p50_ms / 1000 : NAN;
	f->v[F_REPL_LAG_P99] = st.lag_p99_ms >= 0 ? (double)st.lag_p99_ms / 1000 : NAN;
	f->v[F_REPL_JOURNAL] = (double)st.journal_depth;
	f->v[F_REPL_SENT] = (double)st.sent;
	f->v[F_REPL_APPLIED] = (double)st.applied;
	f->v[F_REPL_DROP_JOURNAL_FULL] = (double)st.dropped_journal_full;
	f->v[F_REPL_DROP_NO_RING] = (double)st.missed;
	f->v[F_REPL_DROP_LOST] = (double)st.lost;
	f->v[F_REPL_DROP_RETIRED] = (double)st.dropped_retired_window;
	f->v[F_REPL_DROP_FUTURE] = (double)st.dropped_future_window;
	f->v[F_REPL_DROP_FOREIGN] = (double)st.dropped_foreign_shape;
	f->v[F_REPL_DROP_MALFORMED] = (double)st.malformed;
	for (int k = 0; k < REPL_REFUSED_KINDS; k++)
		f->v[F_REPL_REFUSED_FORGED + k] = (double)st.refused[k];
	f->v[F_REPL_REPAIRING] = !strcmp(st.state, "repairing");
	f->v[F_REPL_REPAIRS] = (double)st.repairs;
	f->v[F_REPL_REPAIR_LAST] = st.repairs ? (double)st.repair_last_ms / 1000 : NAN;
	f->v[F_REPL_REPAIR_BYTES] = (double)st.repair_bytes;
	f->v[F_REPL_REPAIR_REFUSED] = (double)st.repair_refused;
}

/* The figures of the filter in @p slot. 0, or -1 if it cannot be described now. */
static int filter_figs(struct registry *reg, int slot, uint64_t now, struct filter_figs *f)
{
	struct filter_info fi;
	char err[REGISTRY_ERR_MAX];
	if (registry_info(reg, slot, &fi, err, sizeof(err)) < 0)
		return -1;
	const struct registry_counts *c = &reg->counts[slot];
	for (int i = 0; i < F_COUNT; i++)
		f->v[i] = NAN;
	snprintf(f->name, sizeof(f->name), "%s", reg->ctl.slots[slot].name);
	f->type = spec_type_name(fi.info.type);
	f->v[F_ITEMS] = (double)(fi.info.window_generations ? fi.info.items_live : fi.info.items);
	f->v[F_CAPACITY] = (double)fi.capacity_total;
	f->v[F_BYTES] = (double)quotas_filter_bytes(reg, slot);
	f->v[F_FILL] = fi.info.fill_ratio;
	f->v[F_FPR] = fi.fpr_total;
	f->v[F_FPR_TARGET] = fi.info.fpr_target;
	f->v[F_GENERATIONS] = fi.nlive > 0 && fi.info.window_generations ? fi.nlive : 1;
	f->v[F_LAYERS] = fi.nlayers;
	f->v[F_ROTATIONS] = (double)c->rotations;
	f->v[F_SWAPS] = (double)c->swaps;
	f->v[F_GROWTHS] = (double)c->growths;
	if (c->snapshot_last != 0)
		f->v[F_SNAPSHOT_AGE] = now > c->snapshot_last ? (double)(now - c->snapshot_last) : 0;
	f->v[F_SNAPSHOT_FAILURES] = (double)c->snapshot_failures;
	repl_figs(reg, slot, f);
	return 0;
}

/* Every family of the filters in @p figs (@p n of them). */
static void put_filters(struct page *pg, const struct filter_figs *figs, int n)
{
	char b[40];
	for (size_t r = 0; r < NFILTER_ROWS; r++) {
		const struct filter_row *row = &filter_rows[r];
		int first = r == 0 || strcmp(filter_rows[r - 1].name, row->name) != 0, any = 0;
		/* A family none of whose rows has a sample is left out whole. */
		for (size_t s = r; s < NFILTER_ROWS && !strcmp(filter_rows[s].name, row->name) && !any; s++)
			for (int i = 0; i < n && !any; i++)
				any = !isnan(figs[i].v[filter_rows[s].fig]);
		if (!any)
			continue;
		if (first)
			family(pg, row->name, row->type, row->help);
		for (int i = 0; i < n; i++) {
			double v = figs[i].v[row->fig];
			if (!isnan(v))
				put(pg, "%s{filter=\"%s\",type=\"%s\"%s%s} %s\n", row->name, figs[i].name, figs[i].type,
				    row->label ? "," : "", row->label ? row->label : "", num(v, b));
		}
	}
}

/* ---- Per instance ------------------------------------------------------- */

static void put_one(struct page *pg, const char *name, const char *type, const char *help, double v)
{
	char b[40];
	family(pg, name, type, help);
	put(pg, "%s %s\n", name, num(v, b));
}

static void put_server(struct page *pg, struct registry *reg, const struct server_view *v, uint64_t now)
{
	static const char *const transport[2] = { "unix", "tcp" };
	static const char *const reason[REJECT_REASONS] = { "maxclients", "per_peer", "file_descriptors", "memory" };
	const struct server_stats *st = v->stats;
	char b[40];
	family(pg, "shmd_build_info", "gauge", "shmd's version, and the Redis version it answers as; always 1.");
	put(pg, "shmd_build_info{version=\"%s\",redis_version=\"%s\"} 1\n", SHMF_VERSION_STRING, COMPAT_REDIS_VERSION);
	put_one(pg, "shmd_start_time_seconds", "gauge", "When shmd started serving, in seconds since the epoch.",
		(double)v->started);
	put_one(pg, "shmd_uptime_seconds", "gauge", "Seconds since shmd started serving.",
		(double)(now > v->started ? now - v->started : 0));
	family(pg, "shmd_clients", "gauge", "Client connections open now, by transport.");
	for (int k = 0; k < 2; k++)
		put(pg, "shmd_clients{transport=\"%s\"} %u\n", transport[k], v->clients[k]);
	family(pg, "shmd_clients_max", "gauge", "Client connections allowed at once, by transport (0: no listener).");
	for (int k = 0; k < 2; k++)
		put(pg, "shmd_clients_max{transport=\"%s\"} %u\n", transport[k],
		    k == SESSION_TCP && v->tcp_port == 0 ? 0 : v->maxclients[k]);
	put_one(pg, "shmd_clients_memory_bytes", "gauge", "Bytes every client connection holds now, in all.",
		(double)v->clients_memory);
	unsigned nfilters = 0;
	uint64_t fbytes = quotas_instance_bytes(reg, &nfilters);
	put_one(pg, "shmd_filters", "gauge", "Filters the instance holds.", nfilters);
	put_one(pg, "shmd_filters_bytes", "gauge", "Bytes of every filter's data segments in shared memory.",
		(double)fbytes);
	put_one(pg, "shmd_memory_heap_bytes", "gauge", "Bytes shmd's allocator handed out (INFO used_memory's heap).",
		(double)memstat_heap());
	put_one(pg, "shmd_memory_rss_bytes", "gauge", "Resident bytes of the shmd process.", (double)memstat_rss());
	if (st == NULL)
		return;
	put_one(pg, "shmd_connections_received_total", "counter", "Client connections accepted.",
		(double)st->connections_received);
	family(pg, "shmd_connections_rejected_total", "counter", "Client connections turned away, by reason.");
	for (int r = 0; r < REJECT_REASONS; r++)
		put(pg, "shmd_connections_rejected_total{reason=\"%s\"} %s\n", reason[r],
		    num((double)st->rejected_by[r], b));
	put_one(pg, "shmd_clients_evicted_total", "counter", "Client connections closed for maxmemory_clients.",
		(double)st->evicted_clients);
	put_one(pg, "shmd_commands_processed_total", "counter", "Requests run, every verb.",
		(double)st->commands_processed);
}

/* A verb's figure for the commands' families. */
enum verb_fig { V_CALLS, V_REJECTED, V_FAILED, V_SECONDS };

static double verb_value(const struct verb_stats *c, enum verb_fig which)
{
	switch (which) {
	case V_CALLS: return (double)c->calls;
	case V_REJECTED: return (double)c->rejected;
	case V_FAILED: return (double)c->failed;
	case V_SECONDS: return (double)c->ticks / clock_rate.per_us / 1e6;
	}
	return 0;
}

/* Every verb called, refused or failed (INFO commandstats' rows), a line each. */
static void put_verbs(struct page *pg, const struct server_stats *st, const char *name, enum verb_fig which,
		      const char *label)
{
	char b[40];
	const struct verb *vb;
	for (size_t i = 0; st->verbs != NULL && i < st->nverbs && (vb = verbs_at(i)) != NULL; i++) {
		const struct verb_stats *c = &st->verbs[i];
		if (c->calls == 0 && c->rejected == 0 && c->failed == 0)
			continue;
		put(pg, "%s{verb=\"%s\"%s} %s\n", name, vb->name, label, num(verb_value(c, which), b));
	}
}

static void put_commands(struct page *pg, const struct server_stats *st)
{
	if (st == NULL)
		return;
	family(pg, "shmd_commands_total", "counter", "Requests whose handler ran, by verb (INFO commandstats' calls).");
	put_verbs(pg, st, "shmd_commands_total", V_CALLS, "");
	family(pg, "shmd_command_errors_total", "counter",
	       "Requests that failed, by verb: rejected before the handler (arity, role, AUTH), or failed in it.");
	put_verbs(pg, st, "shmd_command_errors_total", V_REJECTED, ",kind=\"rejected\"");
	put_verbs(pg, st, "shmd_command_errors_total", V_FAILED, ",kind=\"failed\"");
	family(pg, "shmd_command_seconds_total", "counter", "Seconds spent in each verb's handler, on shmd's loop.");
	put_verbs(pg, st, "shmd_command_seconds_total", V_SECONDS, "");
}

int metrics_page_build(struct registry *reg, const struct server_view *v, char **out, size_t *len)
{
	struct page pg = { 0 };
	int slots[SHMF_SLOTS], n = registry_list(reg, slots), m = 0;
	struct filter_figs *figs = calloc(n > 0 ? (size_t)n : 1, sizeof(*figs));
	uint64_t now = (uint64_t)time(NULL);
	*out = NULL;
	*len = 0;
	if (figs == NULL)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		if (filter_figs(reg, slots[i], now, &figs[m]) == 0)
			m++;
	put_server(&pg, reg, v, now);
	put_commands(&pg, v->stats);
	put_filters(&pg, figs, m);
	free(figs);
	if (pg.err != 0) {
		free(pg.p);
		return pg.err;
	}
	*out = pg.p;
	*len = pg.len;
	return 0;
}
