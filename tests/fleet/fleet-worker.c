/*
 * fleet-worker.c - the worker process of the fleet tests (tests/fleet/):
 * adds and checks keys through libshmf on the nodes of a fleet that runs on
 * one machine, each node a shmd with its own runtime directory, and prints
 * what it measured as one line of JSON on stdout.
 *
 *   fleet-worker MODE --dir DIR --filter NAME [options]
 *
 * Modes (the table `modes` below):
 *   add        adds keys PREFIX<FROM> .. PREFIX<FROM+COUNT-1> at RATE per
 *              second (0: as fast as it can), checks each right after its
 *              add, and reports the slowest add and check and how many
 *              took over 50 ms: a worker must never stall or fail,
 *              whatever happens to Redis or shmd;
 *   check      how many of those keys the filter has (and the first missing);
 *   count      cuckoo: a histogram of the keys' copy counts;
 *   lag        adds at RATE on --dir and polls --to (another node's
 *              directory) until each key is visible there: lag p50/p99/max;
 *   capped     the same KEYS keys, cap CAP, ATTEMPTS capped adds per key
 *              every INTERVAL microseconds, rounds starting at --start-ns
 *              (CLOCK_REALTIME) so that workers on several nodes race;
 *   speed      ns per add of new keys in a loop, and the same on --plain
 *              (a filter of the same node that does not replicate);
 *   slot       the filter's slot: flags, cursor, window and the live
 *              generations with the unix second each began;
 *   set-cursor writes --cursor MS-SEQ into the slot and forgets the
 *              senders' sequences stored with the cursor (shmd must be
 *              stopped: the test's way of moving a node's cursor back, as
 *              a crash between applying entries and storing both leaves);
 *   digest     XXH3 of the newest generation's bits (Bloom filters of the
 *              same shape and seed holding the same keys are equal).
 *
 * A directory is a node's SHMF_RUNTIME_DIR: the worker sets the variable
 * before each shmf_open (a handle keeps its directory open, so one process
 * can hold handles on several nodes). Exit status 0 when it did its work
 * (what it measured is for the harness to judge), 2 on bad arguments or a
 * filter it cannot open.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "libclient/segment.h"
#include <shmf.h>

struct opts {
	const char *dir, *to, *filter, *plain, *prefix, *cursor, *op;
	uint64_t from, count, rate, keys, cap, attempts, interval_us, start_ns, timeout_ms;
};

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sleep until monotonic time @p t (seconds), if it is still ahead. */
static void sleep_until(double t)
{
	struct timespec ts = { .tv_sec = (time_t)t, .tv_nsec = (long)((t - (double)(time_t)t) * 1e9) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	fputs("fleet-worker: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* Open filter @p filter of the node whose runtime directory is @p dir. */
static shmf_t *open_on(const char *dir, const char *filter, int flags)
{
	shmf_t *f;
	setenv("SHMF_RUNTIME_DIR", dir, 1);
	int r = shmf_open(NULL, filter, flags, &f);
	if (r < 0)
		die("filter '%s' in %s: %s", filter, dir, shmf_strerror(r));
	return f;
}

static int key_of(char *buf, size_t size, const char *prefix, uint64_t i)
{
	return snprintf(buf, size, "%s%" PRIu64, prefix, i);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The @p q quantile (0..1) of @p v[0, n), sorted in place; 0 when n is 0. */
static double quantile(double *v, uint64_t n, double q)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	uint64_t i = (uint64_t)(q * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

/* ---- add --------------------------------------------------------------- */

/* An add or check slower than this is counted (slow_adds, slow_checks):
 * the 50 ms the fleet's issue allows a worker's call. */
#define SLOW_S 0.050

/* One operation of --op on key @p k: >= 0 as the call returns, or an error. */
static int do_op(shmf_t *f, const char *op, unsigned cap, const char *k, size_t len)
{
	if (!strcmp(op, "add"))
		return shmf_add(f, k, len);
	if (!strcmp(op, "unique"))
		return shmf_add_unique(f, k, len);
	if (!strcmp(op, "capped"))
		return shmf_add_capped(f, k, len, cap);
	if (!strcmp(op, "del"))
		return shmf_del(f, k, len);
	die("unknown --op '%s' (add, unique, capped or del)", op);
}

static int mode_add(const struct opts *o)
{
	shmf_t *f = open_on(o->dir, o->filter, SHMF_RDWR);
	double *add_s = malloc((o->count + 1) * sizeof(double)), max_check = 0;
	uint64_t positive = 0, errors = 0, failed_checks = 0, slow_adds = 0, slow_checks = 0;
	int first_error = 0, checks = strcmp(o->op, "del") != 0;
	if (add_s == NULL)
		die("out of memory");
	double period = o->rate ? 1.0 / (double)o->rate : 0, t0 = mono_s();
	for (uint64_t i = 0; i < o->count; i++) {
		char k[128];
		int len = key_of(k, sizeof(k), o->prefix, o->from + i);
		if (period > 0)
			sleep_until(t0 + (double)i * period);
		double a = mono_s();
		int r = do_op(f, o->op, (unsigned)o->cap, k, (size_t)len);
		double b = mono_s();
		add_s[i] = b - a;
		slow_adds += add_s[i] > SLOW_S;
		if (r < 0) {
			errors++;
			if (!first_error)
				first_error = r;
		} else if (r > 0) {
			positive++;
		}
		if (checks && r >= 0) {
			int c = shmf_check(f, k, (size_t)len);
			double e = mono_s();
			if (e - b > max_check)
				max_check = e - b;
			slow_checks += e - b > SLOW_S;
			if (c != 1)
				failed_checks++;
		}
	}
	double elapsed = mono_s() - t0;
	double p99 = quantile(add_s, o->count, 0.99), max = o->count ? add_s[o->count - 1] : 0;
	printf("{\"op\": \"%s\", \"count\": %" PRIu64 ", \"positive\": %" PRIu64 ", \"errors\": %" PRIu64
	       ", \"first_error\": \"%s\", \"failed_checks\": %" PRIu64
	       ", \"p99_add_us\": %.1f, \"max_add_us\": %.1f, \"max_check_us\": %.1f, \"slow_adds\": %" PRIu64
	       ", \"slow_checks\": %" PRIu64 ", \"slow_ms\": %.0f, \"elapsed_s\": %.3f}\n",
	       o->op, o->count, positive, errors, first_error ? shmf_strerror(first_error) : "", failed_checks,
	       p99 * 1e6, max * 1e6, max_check * 1e6, slow_adds, slow_checks, SLOW_S * 1e3, elapsed);
	free(add_s);
	shmf_close(f);
	return 0;
}

/* ---- check, count -------------------------------------------------------- */

static int mode_check(const struct opts *o)
{
	shmf_t *f = open_on(o->dir, o->filter, SHMF_RDONLY);
	uint64_t present = 0, missing = 0, errors = 0;
	char first_missing[128] = "";
	for (uint64_t i = 0; i < o->count; i++) {
		char k[128];
		int len = key_of(k, sizeof(k), o->prefix, o->from + i);
		int r = shmf_check(f, k, (size_t)len);
		if (r == 1) {
			present++;
		} else if (r == 0) {
			if (missing++ == 0)
				snprintf(first_missing, sizeof(first_missing), "%s", k);
		} else {
			errors++;
		}
	}
	printf("{\"present\": %" PRIu64 ", \"missing\": %" PRIu64 ", \"errors\": %" PRIu64
	       ", \"first_missing\": \"%s\"}\n",
	       present, missing, errors, first_missing);
	shmf_close(f);
	return 0;
}

#define COUNT_EACH_MAX 1000

static int mode_count(const struct opts *o)
{
	shmf_t *f = open_on(o->dir, o->filter, SHMF_RDONLY);
	uint64_t hist[9] = { 0 }, errors = 0; /* counts 0..8 */
	int *each = calloc(o->count + 1, sizeof(int));
	if (each == NULL)
		die("out of memory");
	for (uint64_t i = 0; i < o->count; i++) {
		char k[128];
		int len = key_of(k, sizeof(k), o->prefix, o->from + i);
		int r = each[i] = shmf_count(f, k, (size_t)len);
		if (r >= 0 && r <= 8)
			hist[r]++;
		else
			errors++;
	}
	printf("{\"counts\": [");
	for (int c = 0; c <= 8; c++)
		printf("%s%" PRIu64, c ? ", " : "", hist[c]);
	/* Each key's count too, for the few keys of the capped test. */
	printf("], \"each\": [");
	for (uint64_t i = 0; i < o->count && o->count <= COUNT_EACH_MAX; i++)
		printf("%s%d", i ? ", " : "", each[i]);
	printf("], \"errors\": %" PRIu64 "}\n", errors);
	free(each);
	shmf_close(f);
	return 0;
}

/* ---- lag ---------------------------------------------------------------- */

/* Poll interval: short against a lag of milliseconds, long enough that the
 * poller leaves the CPU to shmd and Redis on a machine of two cores. */
#define LAG_POLL_S 0.0001

static int mode_lag(const struct opts *o)
{
	if (o->to == NULL)
		die("lag needs --to DIR (the node that must see the keys)");
	shmf_t *a = open_on(o->dir, o->filter, SHMF_RDWR), *b = open_on(o->to, o->filter, SHMF_RDONLY);
	double *added = calloc(o->count + 1, sizeof(double)), *lag = calloc(o->count + 1, sizeof(double));
	if (added == NULL || lag == NULL)
		die("out of memory");
	double period = o->rate ? 1.0 / (double)o->rate : 0, timeout = (double)o->timeout_ms / 1000.0;
	double t0 = mono_s();
	uint64_t next = 0, oldest = 0, seen = 0, lost = 0, nlag = 0;
	char *done = calloc(o->count + 1, 1);
	if (done == NULL)
		die("out of memory");
	while (oldest < o->count) {
		double now = mono_s();
		if (next < o->count && now >= t0 + (double)next * period) {
			char k[128];
			int len = key_of(k, sizeof(k), o->prefix, o->from + next);
			if (shmf_add(a, k, (size_t)len) < 0)
				die("add of %s failed", k);
			added[next++] = mono_s();
		}
		now = mono_s();
		for (uint64_t i = oldest; i < next; i++) {
			if (done[i])
				continue;
			char k[128];
			int len = key_of(k, sizeof(k), o->prefix, o->from + i);
			if (shmf_check(b, k, (size_t)len) == 1) {
				done[i] = 1;
				lag[nlag++] = now - added[i];
				seen++;
			} else if (now - added[i] > timeout) {
				done[i] = 1;
				lost++;
			}
		}
		while (oldest < next && done[oldest])
			oldest++;
		sleep_until(mono_s() + LAG_POLL_S);
	}
	double p50 = quantile(lag, nlag, 0.5), p99 = quantile(lag, nlag, 0.99);
	double max = nlag ? lag[nlag - 1] : 0;
	printf("{\"count\": %" PRIu64 ", \"seen\": %" PRIu64 ", \"lost\": %" PRIu64
	       ", \"p50_ms\": %.2f, \"p99_ms\": %.2f, \"max_ms\": %.2f, \"elapsed_s\": %.3f}\n",
	       o->count, seen, lost, p50 * 1e3, p99 * 1e3, max * 1e3, mono_s() - t0);
	free(added);
	free(lag);
	free(done);
	shmf_close(a);
	shmf_close(b);
	return 0;
}

/* ---- capped --------------------------------------------------------------- */

/* Rounds: key r's attempts start at start_ns + r * CAPPED_ROUND_NS, so that
 * every node's worker races on the same key at the same moment, and a round
 * ends before the next begins. */
#define CAPPED_ROUND_NS 200000000u

static int mode_capped(const struct opts *o)
{
	shmf_t *f = open_on(o->dir, o->filter, SHMF_RDWR);
	uint64_t start = o->start_ns ? o->start_ns : real_ns();
	printf("{\"cap\": %" PRIu64 ", \"stored\": [", o->cap);
	uint64_t errors = 0;
	int over_local = 0;
	for (uint64_t r = 0; r < o->keys; r++) {
		uint64_t at = start + r * CAPPED_ROUND_NS;
		uint64_t now = real_ns();
		if (at > now)
			sleep_until(mono_s() + (double)(at - now) / 1e9);
		char k[128];
		int len = key_of(k, sizeof(k), o->prefix, o->from + r);
		uint64_t stored = 0;
		double t = mono_s();
		for (uint64_t i = 0; i < o->attempts; i++) {
			if (o->interval_us)
				sleep_until(t + (double)(i * o->interval_us) / 1e6);
			int before = shmf_add_capped(f, k, (size_t)len, (unsigned)o->cap);
			if (before < 0)
				errors++;
			else if ((uint64_t)before < o->cap)
				stored++;
		}
		/* This node's own adds never pass the cap: what it stored itself
		 * is at most cap. */
		if (stored > o->cap)
			over_local = 1;
		printf("%s%" PRIu64, r ? ", " : "", stored);
		fflush(stdout);
	}
	printf("], \"errors\": %" PRIu64 ", \"over_local_cap\": %d}\n", errors, over_local);
	shmf_close(f);
	return 0;
}

/* ---- speed -------------------------------------------------------------- */

/* ns per add of @p n new keys in a loop on @p f. */
static double add_loop_ns(shmf_t *f, const char *prefix, uint64_t from, uint64_t n)
{
	double t0 = mono_s();
	for (uint64_t i = 0; i < n; i++) {
		char k[128];
		int len = key_of(k, sizeof(k), prefix, from + i);
		if (shmf_add(f, k, (size_t)len) < 0)
			die("add of %s failed", k);
	}
	return (mono_s() - t0) * 1e9 / (double)(n ? n : 1);
}

static int mode_speed(const struct opts *o)
{
	if (o->plain == NULL)
		die("speed needs --plain NAME (a filter of the node that does not replicate)");
	shmf_t *r = open_on(o->dir, o->filter, SHMF_RDWR), *p = open_on(o->dir, o->plain, SHMF_RDWR);
	/* Alternate, 5 runs each, median: the two share the machine's state.
	 * A pause after each replicated run lets shmd drain the journal, so
	 * that a run measures adds into a ring with room (as at any rate shmd
	 * keeps up with), not the overflow path. */
	double vr[5], vp[5];
	uint64_t step = o->count / 5;
	for (int run = 0; run < 5; run++) {
		vp[run] = add_loop_ns(p, o->prefix, o->from + (uint64_t)run * step, step);
		vr[run] = add_loop_ns(r, o->prefix, o->from + (uint64_t)run * step, step);
		sleep_until(mono_s() + 0.2);
	}
	double mr = quantile(vr, 5, 0.5), mp = quantile(vp, 5, 0.5);
	printf("{\"replicated_ns\": %.1f, \"plain_ns\": %.1f, \"ratio\": %.2f, \"keys\": %" PRIu64 "}\n", mr, mp,
	       mp > 0 ? mr / mp : 0, 5 * step);
	shmf_close(r);
	shmf_close(p);
	return 0;
}

/* ---- slot, set-cursor, digest ---------------------------------------------- */

struct slot_view {
	struct shmf_dir dir;
	struct shmf_ctl_map ctl;
	struct shmf_slot copy;
	int index;
};

static void slot_open(const struct opts *o, int writable, struct slot_view *v)
{
	setenv("SHMF_RUNTIME_DIR", o->dir, 1);
	int r = shmf_dir_open(NULL, &v->dir);
	if (r < 0)
		die("%s: %s", o->dir, shmf_strerror(r));
	if ((r = shmf_ctl_map_open(&v->dir, writable, &v->ctl)) < 0)
		die("%s: control file: %s", o->dir, shmf_strerror(r));
	if ((v->index = shmf_slot_find(&v->ctl, o->filter, &v->copy)) < 0)
		die("filter '%s' in %s: %s", o->filter, o->dir, shmf_strerror(v->index));
}

static void slot_close(struct slot_view *v)
{
	shmf_ctl_map_close(&v->ctl);
	shmf_dir_close(&v->dir);
}

static int mode_slot(const struct opts *o)
{
	struct slot_view v;
	slot_open(o, 0, &v);
	const struct shmf_slot *s = &v.copy;
	printf("{\"generation\": %" PRIu64 ", \"flags\": %" PRIu32 ", \"cursor\": \"%" PRIu64 "-%" PRIu64
	       "\", \"window_secs\": %" PRIu64 ", \"live\": [",
	       s->generation, s->flags, s->cursor_ms, s->cursor_seq, s->window_secs);
	for (uint32_t i = 0; i < s->nlive && i < SHMF_RING_MAX; i++)
		printf("%s[%" PRIu64 ", %" PRIu64 "]", i ? ", " : "", s->live[i], s->live_created[i]);
	printf("], \"now\": %.3f}\n", (double)real_ns() / 1e9);
	slot_close(&v);
	return 0;
}

static int mode_set_cursor(const struct opts *o)
{
	uint64_t ms, seq;
	if (o->cursor == NULL || sscanf(o->cursor, "%" SCNu64 "-%" SCNu64, &ms, &seq) != 2)
		die("set-cursor needs --cursor MS-SEQ");
	struct slot_view v;
	slot_open(o, 1, &v);
	struct shmf_slot *s = &v.ctl.slots[v.index];
	shmf_slot_write_begin(s);
	s->cursor_ms = ms;
	s->cursor_seq = seq;
	s->fleet_floor = 0;
	memset(s->fleet_peers, 0, sizeof(s->fleet_peers));
	shmf_slot_write_end(s);
	printf("{\"cursor\": \"%" PRIu64 "-%" PRIu64 "\"}\n", ms, seq);
	slot_close(&v);
	return 0;
}

static int mode_digest(const struct opts *o)
{
	struct slot_view v;
	slot_open(o, 0, &v);
	struct shmf_data_map dm;
	int r = shmf_data_map_open(&v.dir, &v.copy, 0, &dm);
	if (r < 0)
		die("filter '%s' in %s: data: %s", o->filter, o->dir, shmf_strerror(r));
	uint64_t h = XXH3_64bits(dm.blocks, dm.hdr.nblocks * 64);
	uint64_t ones = 0;
	for (uint64_t i = 0; i < dm.hdr.nblocks * 8; i++)
		ones += (uint64_t)__builtin_popcountll(dm.blocks[i]);
	printf("{\"digest\": \"%016" PRIx64 "\", \"bits_set\": %" PRIu64 ", \"items\": %" PRIu64 "}\n", h, ones,
	       shmf_data_items(&dm));
	shmf_data_map_close(&dm);
	slot_close(&v);
	return 0;
}

/* ---- Arguments ------------------------------------------------------------- */

static const struct mode {
	const char *name;
	int (*run)(const struct opts *o);
} modes[] = {
	{ "add", mode_add },   { "check", mode_check },           { "count", mode_count },
	{ "lag", mode_lag },   { "capped", mode_capped },         { "speed", mode_speed },
	{ "slot", mode_slot }, { "set-cursor", mode_set_cursor }, { "digest", mode_digest },
};

static uint64_t number(const char *name, const char *v)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno || end == v || *end != '\0')
		die("--%s '%s': expected a non-negative integer", name, v);
	return n;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "to", required_argument, NULL, 't' },
		{ "filter", required_argument, NULL, 'f' },
		{ "plain", required_argument, NULL, 'P' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "from", required_argument, NULL, 'F' },
		{ "count", required_argument, NULL, 'n' },
		{ "rate", required_argument, NULL, 'r' },
		{ "keys", required_argument, NULL, 'k' },
		{ "cap", required_argument, NULL, 'c' },
		{ "attempts", required_argument, NULL, 'a' },
		{ "interval-us", required_argument, NULL, 'i' },
		{ "start-ns", required_argument, NULL, 's' },
		{ "timeout-ms", required_argument, NULL, 'T' },
		{ "cursor", required_argument, NULL, 'C' },
		{ "op", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = {
		.prefix = "k", .op = "add", .count = 1000, .keys = 1, .cap = 4, .attempts = 1, .timeout_ms = 10000
	};
	if (argc < 2)
		die("usage: fleet-worker MODE --dir DIR --filter NAME [options] (see the comment at the top)");
	const char *mode = argv[1];
	int c;
	optind = 2;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		const char *name = longopts[0].name;
		for (const struct option *lo = longopts; lo->name; lo++)
			if (lo->val == c)
				name = lo->name;
		switch (c) {
		case 'd': o.dir = optarg; break;
		case 't': o.to = optarg; break;
		case 'f': o.filter = optarg; break;
		case 'P': o.plain = optarg; break;
		case 'p': o.prefix = optarg; break;
		case 'C': o.cursor = optarg; break;
		case 'o': o.op = optarg; break;
		case 'F': o.from = number(name, optarg); break;
		case 'n': o.count = number(name, optarg); break;
		case 'r': o.rate = number(name, optarg); break;
		case 'k': o.keys = number(name, optarg); break;
		case 'c': o.cap = number(name, optarg); break;
		case 'a': o.attempts = number(name, optarg); break;
		case 'i': o.interval_us = number(name, optarg); break;
		case 's': o.start_ns = number(name, optarg); break;
		case 'T': o.timeout_ms = number(name, optarg); break;
		default: die("bad option (see the comment at the top of fleet-worker.c)");
		}
	}
	if (optind != argc)
		die("unexpected argument '%s'", argv[optind]);
	if (o.dir == NULL || o.filter == NULL)
		die("%s needs --dir DIR and --filter NAME", mode);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(modes[i].name, mode))
			return modes[i].run(&o);
	die("unknown mode '%s'", mode);
}
