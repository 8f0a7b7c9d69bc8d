/*
 * plan.c - shmctl plan: what a filter for N keys at rate P costs, per type
 * and layout, computed offline with the daemon's own sizing
 * (shmf_geometry_size(), shmf_geometry_layer()): memory per host, bits per
 * key, cache lines a check reads, what it supports, and which layout
 * BF.RESERVE, CF.RESERVE, shmctl create and shmctl build --type static
 * pick; a classic Bloom filter's bits per key (-ln P / ln^2 2) as the
 * yardstick. A static filter (binary fuse, built offline) gets a row per
 * fingerprint width whose rate reaches P, the narrowest the build's.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/offline.h"
#include "common/spec.h"
#include "libclient/bloom.h"
#include "libclient/cuckoo.h"
#include "libclient/fuse.h"
#include "libclient/geometry.h"
#include "libclient/segment.h"

/* shmd's defaults that decide what a reservation picks: common/spec.h's,
 * which shmd's configuration starts from too. */
#define PLAN_BLOOM_EXPANSION  SPEC_BLOOM_EXPANSION_DEFAULT    /* BF.RESERVE grows */
#define PLAN_CF_BUCKET_SIZE   SPEC_CUCKOO_BUCKET_SIZE_DEFAULT /* CF.RESERVE's */
#define PLAN_JOURNAL_RINGS    SPEC_JOURNAL_RINGS_DEFAULT
#define PLAN_JOURNAL_ENTRIES  SPEC_JOURNAL_ENTRIES_DEFAULT
#define PLAN_BUCKET_SIZE_STOP 64u /* bucket sizes tried: powers of 2 below it the layout accepts */

struct plan_args {
	uint64_t capacity, window_secs;
	double fpr;
	uint32_t gens; /* live generations: 1 without a window */
	int replicate;
};

/* One layout that reaches the rate, or (why set) one that does not. */
struct plan_row {
	struct shmf_geometry g;
	double sized_fpr;  /* the rate it is sized for (a growing Bloom filter's layer 0: less) */
	const char *grows; /* NULL, or how it grows */
	char picks[128];   /* who picks it, ", "-separated */
	char why[512];     /* not reached: why */
};

#define PLAN_ROWS_MAX 20

static void plan_parse(int argc, char **argv, struct plan_args *a, int *json)
{
	const char *cap = NULL, *fpr = NULL, *window = NULL, *gens = NULL;
	*a = (struct plan_args){ .gens = 1 };
	for (int i = 1; i < argc; i++) {
		const char **slot = !strcmp(argv[i], "--capacity")      ? &cap
				    : !strcmp(argv[i], "--fpr")         ? &fpr
				    : !strcmp(argv[i], "--window")      ? &window
				    : !strcmp(argv[i], "--generations") ? &gens
									: NULL;
		if (slot != NULL) {
			if (i + 1 >= argc)
				cli_usage_error("plan", "%s needs a value", argv[i]);
			*slot = argv[++i];
		} else if (!strcmp(argv[i], "--replicate")) {
			a->replicate = 1;
		} else if (!strcmp(argv[i], "--json")) {
			*json = 1;
		} else if (argv[i][0] == '-') {
			cli_usage_error("plan", "unknown option '%s'", argv[i]);
		} else {
			cli_usage_error("plan", "unexpected argument '%s' (plan takes options only)", argv[i]);
		}
	}
	if (cap == NULL)
		cli_usage_error("plan", "missing --capacity N, the keys to size for");
	if (fpr == NULL)
		cli_usage_error("plan", "missing --fpr P, the false-positive rate at capacity");
	if (spec_parse_capacity(cap, &a->capacity) < 0)
		cli_usage_error("plan", "bad --capacity '%s': a whole number of keys, at least 1", cap);
	if (spec_parse_fpr(fpr, &a->fpr) < 0)
		cli_usage_error("plan", "bad --fpr '%s': a number strictly between 0 and 1", fpr);
	if (window != NULL && spec_parse_duration(window, &a->window_secs) < 0)
		cli_usage_error("plan", "bad --window '%s': a duration such as 60s, 10m, 1h or 1d", window);
	if (gens != NULL && window == NULL)
		cli_usage_error("plan", "--generations needs --window (generations are a time window's)");
	if (window != NULL)
		a->gens = 2;
	uint64_t n;
	if (gens != NULL) {
		if (spec_parse_capacity(gens, &n) < 0 || n > SHMF_WINDOW_MAX)
			cli_usage_error("plan", "bad --generations '%s': an integer from 1 to %u", gens,
					SHMF_WINDOW_MAX);
		a->gens = (uint32_t)n;
	}
}

static void add_pick(struct plan_row *r, const char *who)
{
	size_t at = strlen(r->picks);
	snprintf(r->picks + at, sizeof(r->picks) - at, "%s%s", at ? ", " : "", who);
}

/* Why a sizing of @p type refused, in @p r->why. */
static void refusal(struct plan_row *r, int err, const struct plan_args *a, const char *what)
{
	if (r->g.type == SHMF_TYPE_STATIC && err == SHMF_E_INVAL)
		snprintf(r->why, sizeof(r->why), "%s: does not reach %g (32-bit fingerprints: %.3g at best)", what,
			 a->fpr, shmf_fuse_fpr(32));
	else if (err == SHMF_E_TOOBIG)
		snprintf(r->why, sizeof(r->why), "%s: too big for the data segment format at %llu keys", what,
			 (unsigned long long)a->capacity);
	else
		snprintf(r->why, sizeof(r->why), "%s: does not reach %g%s", what, a->fpr,
			 r->g.type == SHMF_TYPE_BLOOM ? " (at most 32 bits of a key in each 512-bit line)" : "");
}

/* The Bloom rows: each layout fixed (1, 2 and 3 lines a key; shmctl create
 * and anything with a window take the sizing's choice) and, without a
 * window, growing by shmd's default expansion (BF.RESERVE), in the layout
 * its first layer's sizing chooses. */
static int bloom_rows(const struct plan_args *a, struct plan_row *rows)
{
	int n = 0;
	struct shmf_geometry chosen;
	int ce = shmf_geometry_size(SHMF_TYPE_BLOOM, a->capacity, a->fpr, 0, 0, &chosen);
	for (uint32_t lines = 1; lines <= SHMF_BLOOM_LINES_MAX; lines++) {
		struct plan_row *r = &rows[n++];
		*r = (struct plan_row){ .sized_fpr = a->fpr };
		int e = shmf_geometry_size(SHMF_TYPE_BLOOM, a->capacity, a->fpr, 0, lines, &r->g);
		r->g.type = SHMF_TYPE_BLOOM;
		r->g.bucket_size = lines;
		if (e < 0) {
			char what[64];
			snprintf(what, sizeof(what), "bloom, %s a key",
				 (const char *[]){ "one line", "two lines", "three lines" }[lines - 1]);
			refusal(r, e, a, what);
		}
		/* Where no layout reaches the rate, shmctl create's refusal is
		 * said under the last one. */
		if ((ce == 0 && e == 0 && chosen.bucket_size == lines) || (ce < 0 && lines == SHMF_BLOOM_LINES_MAX)) {
			add_pick(r, "shmctl create");
			if (a->window_secs != 0)
				add_pick(r, "BF.RESERVE");
		}
	}
	if (a->window_secs != 0)
		return n;
	struct shmf_layer l;
	struct plan_row *r = &rows[n++];
	*r = (struct plan_row){ .grows = "grows x2 (layer 0 at 0.45 P)" };
	int e = shmf_geometry_layer(SHMF_TYPE_BLOOM, a->capacity, a->fpr, 0, 0, PLAN_BLOOM_EXPANSION, 0, &l);
	if (e == 0)
		r->g = l.g, r->sized_fpr = l.fpr;
	r->g.type = SHMF_TYPE_BLOOM;
	if (e < 0)
		refusal(r, e, a, "bloom, growing");
	add_pick(r, "BF.RESERVE");
	return n;
}

/* The cuckoo rows: one per bucket size the layout knows, with the
 * fingerprint size the sizing chooses for it (whatever it is). */
static int cuckoo_rows(const struct plan_args *a, struct plan_row *rows)
{
	int n = 0;
	for (uint32_t b = 1; b < PLAN_BUCKET_SIZE_STOP && n < PLAN_ROWS_MAX / 2; b *= 2) {
		if (!shmf_cuckoo_layout_ok(b, 8))
			continue;
		struct plan_row *r = &rows[n++];
		*r = (struct plan_row){ .sized_fpr = a->fpr };
		int e = shmf_geometry_size(SHMF_TYPE_CUCKOO, a->capacity, a->fpr, 0, b, &r->g);
		r->g.type = SHMF_TYPE_CUCKOO;
		if (e == SHMF_E_INVAL) {
			char why[400];
			spec_bucket_fpr_why(a->capacity, b, a->fpr, why, sizeof(why));
			snprintf(r->why, sizeof(r->why), "cuckoo, buckets of %u: %s", b, why);
		} else if (e < 0) {
			char what[64];
			snprintf(what, sizeof(what), "cuckoo, buckets of %u", b);
			refusal(r, e, a, what);
		}
		r->g.bucket_size = b;
		if (b == PLAN_CF_BUCKET_SIZE)
			add_pick(r, "CF.RESERVE");
		if (b == shmf_geometry_bucket_size(a->capacity, a->fpr))
			add_pick(r, "shmctl create --type cuckoo");
	}
	return n;
}

#define PLAN_STATIC_PICK "shmctl build --type static"

/* The static rows: one per fingerprint width (8, 16, 32) whose 2^-bits
 * reaches the rate, sized at that rate, the narrowest picked by shmctl
 * build --type static (shmf_fuse_bits_for); one refusal where none does,
 * or where a window is asked for (a window rotates into an empty
 * generation, which a static filter cannot be). */
static int static_rows(const struct plan_args *a, struct plan_row *rows)
{
	static const uint32_t widths[] = { 8, 16, 32 };
	uint32_t pick = shmf_fuse_bits_for(a->fpr);
	int n = 0;
	if (a->window_secs != 0) {
		rows[0] = (struct plan_row){ .g.type = SHMF_TYPE_STATIC };
		snprintf(rows[0].why, sizeof(rows[0].why),
			 "static: no time window (a window rotates into an empty generation, and a static filter is "
			 "built whole: build the next set and swap it in)");
		return 1;
	}
	for (unsigned i = 0; i < 3; i++) {
		double rate = shmf_fuse_fpr(widths[i]);
		if (pick == 0 || widths[i] < pick)
			continue;
		struct plan_row *r = &rows[n++];
		*r = (struct plan_row){ .sized_fpr = rate };
		int e = shmf_geometry_size(SHMF_TYPE_STATIC, a->capacity, rate, 0, 0, &r->g);
		r->g.type = SHMF_TYPE_STATIC;
		if (e < 0) {
			char what[64];
			snprintf(what, sizeof(what), "static, %u-bit fingerprints", widths[i]);
			refusal(r, e, a, what);
		}
		if (widths[i] == pick)
			add_pick(r, PLAN_STATIC_PICK);
	}
	if (n == 0) {
		rows[0] = (struct plan_row){ .g.type = SHMF_TYPE_STATIC };
		refusal(&rows[0], SHMF_E_INVAL, a, "static");
		add_pick(&rows[0], PLAN_STATIC_PICK);
		n = 1;
	}
	return n;
}

/* Bits of the table (as SHMF.INFO's bits): Bloom's blocks, cuckoo's slots. */
static uint64_t table_bits(const struct shmf_geometry *g)
{
	if (g->type == SHMF_TYPE_CUCKOO)
		return g->nbuckets * g->bucket_size * g->k;
	if (g->type == SHMF_TYPE_STATIC)
		return g->nbuckets * g->k; /* fingerprints */
	return g->nblocks * SHMF_BLOCK_BITS;
}

static uint64_t journal_bytes(const struct plan_args *a)
{
	return a->replicate ? shmf_journal_bytes(PLAN_JOURNAL_RINGS, PLAN_JOURNAL_ENTRIES) : 0;
}

/* Memory per host: every live generation's data segment, and the journal
 * (a static filter has neither window nor journal: it takes no add). */
static uint64_t host_bytes(const struct plan_args *a, const struct shmf_geometry *g)
{
	if (g->type == SHMF_TYPE_STATIC)
		return g->data_bytes;
	return g->data_bytes * a->gens + journal_bytes(a);
}

static double classic_bits_per_key(double fpr)
{
	return -log(fpr) / (M_LN2 * M_LN2);
}

/* @p bytes for people: B, KiB, MiB, GiB or TiB, 3 significant figures. */
static const char *human(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	unsigned u = 0;
	while (v >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0]))
		v /= 1024, u++;
	snprintf(buf, len, u == 0 ? "%.0f %s" : "%.3g %s", v, unit[u]);
	return buf;
}

static const char *supports(const struct shmf_geometry *g)
{
	return g->type == SHMF_TYPE_CUCKOO   ? "add, check, delete, count, caps"
	       : g->type == SHMF_TYPE_STATIC ? "check (built offline, swap to change)"
					     : "add, check";
}

/* A check reads the key's 1, 2 or 3 64-byte lines (Bloom), both candidate
 * buckets, one word each, in two lines (cuckoo), or three fingerprints in
 * three consecutive segments (static). */
static unsigned lines_per_check(const struct shmf_geometry *g)
{
	return g->type == SHMF_TYPE_CUCKOO ? 2 : g->type == SHMF_TYPE_STATIC ? SHMF_FUSE_ARITY : g->bucket_size;
}

static void layout_name(const struct plan_row *r, char *buf, size_t len)
{
	if (r->g.type == SHMF_TYPE_CUCKOO)
		snprintf(buf, len, "%u-bit fingerprints, buckets of %u", r->g.k, r->g.bucket_size);
	else if (r->g.type == SHMF_TYPE_STATIC)
		snprintf(buf, len, "%u-bit fingerprints (rate %.3g), segments of %u", r->g.k, shmf_fuse_fpr(r->g.k),
			 r->g.bucket_size);
	else
		snprintf(buf, len, "%s 64-byte line%s, k=%u%s%s%s",
			 r->g.bucket_size == 3   ? "three"
			 : r->g.bucket_size == 2 ? "two"
						 : "one",
			 r->g.bucket_size > 1 ? "s" : "", r->g.k, r->g.bucket_size > 1 ? " each" : "",
			 r->grows ? ", " : "", r->grows ? r->grows : "");
}

/* The types no row of reaches the rate, one line each ("bloom: no layout
 * reaches P"), then every row that does not, with why. */
static void print_unreached(const struct plan_args *a, const struct plan_row *rows, int n, int any)
{
	static const char *const how[] = { "no layout", "no fingerprint size in any bucket size",
					   "no fingerprint width" };
	int reached[3] = { 0, 0, 0 }, missing = 0;
	for (int i = 0; i < n; i++)
		if (!rows[i].why[0])
			reached[rows[i].g.type - SHMF_TYPE_BLOOM] = 1;
	for (int t = 0; t < 3; t++) {
		/* A window refuses static whatever the rate: its row says so. */
		if (reached[t] || (t == SHMF_TYPE_STATIC - SHMF_TYPE_BLOOM && a->window_secs != 0))
			continue;
		printf("%s%s: %s reaches %g", any++ ? "\n" : "", spec_type_name(t + SHMF_TYPE_BLOOM), how[t], a->fpr);
		missing = 1;
	}
	if (missing)
		putchar('\n');
	int said = 0;
	for (int i = 0; i < n; i++)
		if (rows[i].why[0]) {
			printf("%s  %s\n", said++ ? "" : "\nnot reached:\n", rows[i].why);
			if (rows[i].picks[0])
				printf("    so %s refuses these arguments\n", rows[i].picks);
		}
}

static void print_text(const struct plan_args *a, const struct plan_row *rows, int n)
{
	char h[32], name[96];
	double classic = classic_bits_per_key(a->fpr);
	printf("plan for %llu keys at %g, per host", (unsigned long long)a->capacity, a->fpr);
	if (a->window_secs)
		printf(": a window of %u live generations (memory x %u)", a->gens, a->gens);
	if (a->replicate)
		printf("%s the fleet journal, %s (%u rings x %u entries x 16 bytes + header)",
		       a->window_secs ? ", plus" : ": plus", human(journal_bytes(a), h, sizeof(h)), PLAN_JOURNAL_RINGS,
		       PLAN_JOURNAL_ENTRIES);
	printf("\nclassic Bloom filter (-ln p / ln^2 2): %.2f bits per key, %s of bits\n\n", classic,
	       human((uint64_t)ceil(classic * (double)a->capacity / 8) * a->gens, h, sizeof(h)));
	int any = 0;
	for (int i = 0; i < n; i++)
		any |= rows[i].why[0] == '\0';
	if (any)
		printf("%-7s %-64s %10s %9s %6s  %-37s %s\n", "type", "layout", "memory", "bits/key", "lines",
		       "supports", "picked by");
	for (int i = 0; i < n; i++) {
		const struct plan_row *r = &rows[i];
		if (r->why[0])
			continue;
		layout_name(r, name, sizeof(name));
		printf("%-7s %-64s %10s %9.2f %6u  %-37s %s\n", spec_type_name((int)r->g.type), name,
		       human(host_bytes(a, &r->g), h, sizeof(h)), (double)table_bits(&r->g) / (double)a->capacity,
		       lines_per_check(&r->g), supports(&r->g), r->picks[0] ? r->picks : "-");
	}
	print_unreached(a, rows, n, any);
}

static void json_double(struct json *j, double v)
{
	char buf[40];
	snprintf(buf, sizeof(buf), "%.17g", v);
	json_number_text(j, buf);
}

static void json_row(struct json *j, const struct plan_args *a, const struct plan_row *r)
{
	char name[96];
	json_open(j, '{');
	json_key(j, "type");
	json_str(j, spec_type_name((int)r->g.type));
	json_key(j, "reached");
	json_bool(j, r->why[0] == '\0');
	if (r->why[0]) {
		json_key(j, "bucket_size");
		json_uint(j, r->g.bucket_size);
		json_key(j, "why");
		json_str(j, r->why);
	} else {
		layout_name(r, name, sizeof(name));
		json_key(j, "layout");
		json_str(j, name);
		/* Bloom: k as SHMF.INFO says it, the bits of all the lines. */
		int fp = r->g.type != SHMF_TYPE_BLOOM;
		json_key(j, fp ? "fingerprint_bits" : "k");
		json_uint(j, fp ? r->g.k : r->g.k * r->g.bucket_size);
		if (r->g.type == SHMF_TYPE_STATIC) {
			json_key(j, "fingerprints");
			json_uint(j, r->g.nbuckets);
			json_key(j, "segment_length");
			json_uint(j, r->g.bucket_size);
		}
		if (r->g.type == SHMF_TYPE_CUCKOO) {
			json_key(j, "bucket_size");
			json_uint(j, r->g.bucket_size);
			json_key(j, "buckets");
			json_uint(j, r->g.nbuckets);
		}
		json_key(j, "grows");
		r->grows ? json_uint(j, PLAN_BLOOM_EXPANSION) : json_uint(j, 0);
		json_key(j, "sized_fpr");
		json_double(j, r->sized_fpr);
		json_key(j, "bytes");
		json_uint(j, r->g.data_bytes);
		json_key(j, "bits");
		json_uint(j, table_bits(&r->g));
		json_key(j, "bits_per_key");
		json_double(j, (double)table_bits(&r->g) / (double)a->capacity);
		json_key(j, "memory_bytes");
		json_uint(j, host_bytes(a, &r->g));
		json_key(j, "lines_per_check");
		json_uint(j, lines_per_check(&r->g));
		json_key(j, "add");
		json_bool(j, r->g.type != SHMF_TYPE_STATIC);
		json_key(j, "delete");
		json_bool(j, r->g.type == SHMF_TYPE_CUCKOO);
		json_key(j, "count");
		json_bool(j, r->g.type == SHMF_TYPE_CUCKOO);
		json_key(j, "caps");
		json_bool(j, r->g.type == SHMF_TYPE_CUCKOO);
	}
	json_key(j, "picked_by");
	json_open(j, '[');
	for (const char *p = r->picks; *p;) {
		size_t len = strcspn(p, ",");
		char who[64];
		snprintf(who, sizeof(who), "%.*s", (int)len, p);
		json_str(j, who);
		p += len;
		p += strspn(p, ", ");
	}
	json_close(j, ']');
	json_close(j, '}');
}

static void print_json(const struct plan_args *a, const struct plan_row *rows, int n)
{
	struct json j = { 0 };
	double classic = classic_bits_per_key(a->fpr);
	json_open(&j, '{');
	json_key(&j, "capacity");
	json_uint(&j, a->capacity);
	json_key(&j, "fpr");
	json_double(&j, a->fpr);
	json_key(&j, "window_secs");
	json_uint(&j, a->window_secs);
	json_key(&j, "generations");
	json_uint(&j, a->gens);
	json_key(&j, "replicate");
	json_bool(&j, a->replicate);
	json_key(&j, "journal_rings");
	json_uint(&j, PLAN_JOURNAL_RINGS);
	json_key(&j, "journal_entries");
	json_uint(&j, PLAN_JOURNAL_ENTRIES);
	json_key(&j, "journal_bytes");
	json_uint(&j, journal_bytes(a));
	json_key(&j, "classic_bloom_bits_per_key");
	json_double(&j, classic);
	json_key(&j, "classic_bloom_memory_bytes");
	json_uint(&j, (uint64_t)ceil(classic * (double)a->capacity / 8) * a->gens);
	json_key(&j, "layouts");
	json_open(&j, '[');
	for (int i = 0; i < n; i++)
		json_row(&j, a, &rows[i]);
	json_close(&j, ']');
	json_close(&j, '}');
	putchar('\n');
}

int shmctl_plan(int argc, char **argv, int json)
{
	struct plan_args a;
	struct plan_row rows[PLAN_ROWS_MAX];
	plan_parse(argc, argv, &a, &json);
	int n = bloom_rows(&a, rows);
	n += cuckoo_rows(&a, rows + n);
	n += static_rows(&a, rows + n);
	if (json)
		print_json(&a, rows, n);
	else
		print_text(&a, rows, n);
	return 0;
}
