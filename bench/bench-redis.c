/*
 * bench-redis.c - shmfilter against networked Redis, side by side.
 *
 *   bench-redis --shmd SOCKET --instance NAME --redis-tcp HOST:PORT
 *               --redis-unix PATH --csv FILE [--meta FILE] [--quick]
 *               [--shmd-tcp HOST:PORT] [--redisbloom | --redisbloom-standin]
 *
 * bench/bench-redis.sh starts the private Redis and shmd this talks to and
 * turns the CSV into the table and the plots; run-bench.sh is the one
 * command. docs/benchmarks.md says what is measured and how.
 *
 * For each filter of the plan, shmd creates it (BF.RESERVE / CF.RESERVE on
 * its socket), this process fills it through libshmf and copies its bits
 * into a Redis string; then, for 16- and 64-byte keys, about half of the
 * checked keys present, it times
 *   - shmfilter in this process: shmf_check / shmf_add one key per call,
 *     shmf_check_many / shmf_add_many 100 keys per call;
 *   - each baseline, one key and 100 keys per round trip: the classic Redis
 *     Bloom (k GETBITs or SETBITs in one pipeline, same k and m) over TCP
 *     loopback and over the unix socket; shmd's socket (BF.* / CF.*), and
 *     shmd's TCP listener when given its port; the RedisBloom module
 *     when Redis has it loaded; the servers that speak BF.* / CF.* also with
 *     100 one-key EXISTS in one pipeline ("check-pipelined");
 *   - on some filters, the throughput of 1, 2 and 4 worker processes.
 *
 * Every answer a baseline gives is checked: GETBIT's and shmd's against
 * shmf_check on the same keys (the same bits: they must agree exactly),
 * RedisBloom's against what was added (no false negatives, a plausible
 * false-positive rate); every key any system added must read as present
 * afterwards. A wrong answer ends the run with exit status 1, which is
 * what the quick mode's test is for. Timings are never asserted.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libclient/bloom.h"
#include "bench/die.h"
#include "bench/check-jobs.h"
#include "bench/keys.h"
#include "bench/latency.h"
#include "bench/remote.h"
#include "bench/results.h"
#include "bench/samples.h"
#include "bench/target.h"
#include "bench/ticks.h"
#include "bench/workers.h"

#define BATCH          100  /* keys per call in the batch rows */
#define ABSENT_SET     2u   /* + key length: the absent probes */
#define WARM_SET       100u /* keys the warm-ups check */
#define WARM_KEYS      20000
#define FRESH_SET      1000u /* and up: keys added by the add rows */
#define WARM_MS        50.0  /* untimed checks before each shmfilter row */
#define REMOTE_WARM_MS 20.0  /* untimed round trips before each baseline's rows */
#define MAX_REMOTES    6     /* shmd over unix and tcp, GETBIT over tcp and unix, RedisBloom over tcp and unix */

struct plan {
	const char *name;
	int type;
	uint64_t keys;
	int click;      /* m/n = 50, k = 16 instead of 1% */
	int throughput; /* measure 1, 2 and 4 worker processes on it */
};

// clang-format off
static const struct plan full_plan[] = {
	{ "bloom-1M", SHMF_TYPE_BLOOM, 1000000, 0, 1 },
	{ "bloom-10M", SHMF_TYPE_BLOOM, 10000000, 0, 0 },
	{ "bloom-100M", SHMF_TYPE_BLOOM, 100000000, 0, 1 },
	{ "bloom-click-10M", SHMF_TYPE_BLOOM, 10000000, 1, 0 },
	{ "cuckoo-1M", SHMF_TYPE_CUCKOO, 1000000, 0, 1 },
	{ "cuckoo-10M", SHMF_TYPE_CUCKOO, 10000000, 0, 0 },
	{ "cuckoo-100M", SHMF_TYPE_CUCKOO, 100000000, 0, 1 },
	{ NULL, 0, 0, 0, 0 },
};

// clang-format off
static const struct plan quick_plan[] = {
	// clang-format on
	{ "bloom-100k", SHMF_TYPE_BLOOM, 100000, 0, 0 },      { "bloom-1M", SHMF_TYPE_BLOOM, 1000000, 0, 1 },
	{ "bloom-click-1M", SHMF_TYPE_BLOOM, 1000000, 1, 0 }, { "cuckoo-100k", SHMF_TYPE_CUCKOO, 100000, 0, 0 },
	{ "cuckoo-1M", SHMF_TYPE_CUCKOO, 1000000, 0, 1 },     { NULL, 0, 0, 0, 0 },
};
// clang-format on

/* How much of everything a mode measures. */
struct sizes {
	size_t probes;            /* keys checked by shmfilter, per filter and key length (half one
				     per call, half in batches; a multiple of 2 * rounds * 800) */
	size_t remote_one;        /* one-key round trips per baseline */
	size_t remote_many;       /* 100-key round trips per baseline */
	double seconds;           /* per throughput point and round */
	int rounds;               /* each row is measured in this many rounds, all systems in each */
	size_t throughput_probes; /* keys the workers cycle through */
};

static const struct sizes full_sizes = { 240000, 12000, 600, 1.0, 3, 2000000 };
static const struct sizes quick_sizes = { 25600, 1200, 60, 0.1, 2, 50000 };

static const int worker_counts[] = { 1, 2, 4 };

/* Keys each add row adds, per key length, and what they add up to. The
 * filter is filled with its keys less the budget, so that the checks run
 * near capacity and the adds end at or below it (a cuckoo filter past
 * capacity would refuse them). */
struct adds {
	size_t local;     /* shmf_add, and again shmf_add_many */
	size_t one, many; /* per baseline: one key, and 100 keys per round trip */
	uint64_t budget;
};

enum redisbloom_mode { RB_SKIPPED, RB_MODULE, RB_STANDIN };

struct bench {
	const char *instance;
	struct endpoint shmd_ep, redis_tcp, redis_unix;
	struct endpoint shmd_tcp; /* shmd's TCP listener, when have_shmd_tcp */
	int have_shmd_tcp;
	redisContext *redis; /* for uploads and DEL */
	enum redisbloom_mode rb;
	int quick;
	const struct sizes *sz;
	struct results out;
	int huge_yes, huge_no; /* filters on 2 MiB pages, and not */
};

static size_t clamp(uint64_t v, size_t lo, size_t hi)
{
	return v < lo ? lo : v > hi ? hi : (size_t)v;
}

/* @p shmd_remotes: how many shmd connections (unix socket, TCP) add into
 * the shmfilter filter itself. */
static struct adds adds_for(uint64_t keys, int shmd_remotes)
{
	struct adds a;
	/* Multiples of 800: whole groups of 32 and whole batches of 100. */
	a.local = clamp(keys / 400 / 800 * 800, 800, 48000);
	a.one = clamp(keys / 1000, 100, 2000);
	a.many = clamp(keys / 400 / BATCH * BATCH, 500, 10000);
	/* shmd adds into the shmfilter filter; GETBIT and RedisBloom (two
	 * transports each) into filters of their own. */
	uint64_t into_shmf = 2 * a.local + (uint64_t)shmd_remotes * (a.one + a.many), into_other = 2 * (a.one + a.many);
	a.budget = 2 * (into_shmf > into_other ? into_shmf : into_other);
	return a;
}

static void emit(struct bench *b, const struct facts *f, size_t len, const char *system, const char *transport,
		 const char *op, size_t per_call, struct samples *s, const char *sample)
{
	if (s->n == 0)
		die("%s %s %s: no samples (too few keys for a call of %zu)", f->filter, system, op, per_call);
	struct row w = {
		.f = f,
		.key_bytes = len,
		.system = system,
		.transport = transport,
		.op = op,
		.keys_per_call = per_call,
		.workers = 1,
		.samples = s->n,
		.sample = sample,
	};
	w.median_ns = samples_quantile(s, 0.5);
	w.p99_ns = samples_quantile(s, 0.99);
	results_row(&b->out, &w);
	samples_clear(s);
}

static int exact(const struct remote *r)
{
	/* Same bits (GETBIT) or the same filter (shmd): the same answers. */
	return !strcmp(r->system, "redis-getbit") || !strcmp(r->system, "shmd");
}

/* Highest false-positive rate a sound filter plausibly shows on the probes. */
static double fp_limit(const struct target *t)
{
	return 5 * t->facts.fpr_target + 0.005;
}

/* Check a baseline's answers to probes ks against shmf_check's @p ref. */
static void verify_checks(const struct target *t, const struct remote *r, const struct keyset *ks, const uint8_t *got,
			  const uint8_t *ref, size_t per_call)
{
	size_t n = ks->n / per_call * per_call, absent = 0, fp = 0;
	for (size_t i = 0; i < n; i++) {
		if (exact(r) && got[i] != ref[i])
			die("%s: %s over %s answered %d for probe %zu (%s key, %zu bytes), shmf_check answered %d: "
			    "the same bits must give the same answer",
			    t->name, r->system, r->ep->transport, got[i], i, ks->present[i] ? "a stored" : "an absent",
			    ks->len, ref[i]);
		if (ks->present[i] && !got[i])
			die("%s: %s over %s says stored key %zu is absent (a false negative)", t->name, r->system,
			    r->ep->transport, i);
		if (!ks->present[i]) {
			absent++;
			fp += got[i];
		}
	}
	if (absent >= 200 && (double)fp / (double)absent > fp_limit(t))
		die("%s: %s over %s: %zu of %zu absent keys read as present, far above the expected %.3g", t->name,
		    r->system, r->ep->transport, fp, absent, t->facts.fpr_target);
}

/* Every key @p ks that @p r added must read as present through @p r (and
 * through libshmf when @p r is shmd: the same shared memory). Most keys of
 * a fresh set must have been reported new. */
static void verify_added(const struct target *t, struct remote *r, const struct keyset *ks, const uint8_t *was_new)
{
	uint8_t *got = malloc(ks->n);
	size_t fresh = 0;
	if (got == NULL)
		die("out of memory");
	for (size_t i = 0; i < ks->n; i++)
		fresh += was_new[i];
	if (fresh * 2 < ks->n)
		die("%s: %s over %s reported only %zu of %zu fresh keys as new", t->name, r->system, r->ep->transport,
		    fresh, ks->n);
	for (size_t i = 0; i < ks->n; i += BATCH) {
		size_t n = ks->n - i < BATCH ? ks->n - i : BATCH;
		if (r->check(r, ks->keys + i, n, got + i) != n)
			die("%s: a key just added through %s over %s reads as absent there", t->name, r->system,
			    r->ep->transport);
	}
	if (!strcmp(r->system, "shmd")) {
		local_answers(t->f, ks, got);
		for (size_t i = 0; i < ks->n; i++)
			if (!got[i])
				die("%s: key %zu added through shmd's socket is absent for shmf_check", t->name, i);
	}
	free(got);
}

/*
 * Part @p round of @p rounds of ks[0, n): equal parts, each a whole number
 * of @p unit keys (groups or batches). Each row is measured in rounds, every
 * system once per round, so that a burst of other work on the machine falls
 * on all of them rather than on whichever ran at that moment.
 */
static struct keyset round_part(const struct keyset *ks, size_t n, int round, int rounds, size_t unit)
{
	size_t part = n / (size_t)rounds / unit * unit;
	return keyset_slice(ks, (size_t)round * part, part);
}

static size_t round_used(size_t n, int rounds, size_t unit)
{
	return n / (size_t)rounds / unit * unit * (size_t)rounds;
}

/*
 * The check rows of one key length. The probes are laid out so that no
 * timed shmfilter call finds its block in the cache because an earlier
 * pass touched it (on a filter larger than the cache that would time the
 * cache, not the filter): the first half of the local region is checked
 * one key per call, the second half in batches, each key once; warm-ups
 * use other keys; shmf_check's reference answers for the local region are
 * taken after the timing. The baselines get a region of their own, whose
 * reference answers are taken first (their timing happens in the server).
 */
static void check_rows(struct bench *b, struct target *t, struct remote *rs, int nr, size_t len,
		       const struct keyset *warm)
{
	const int rounds = b->sz->rounds;
	const size_t n_local = b->sz->probes; /* a multiple of 2 * rounds * 800 */
	const size_t n1 = b->sz->remote_one, nm = b->sz->remote_many * BATCH, n_remote = n1 > nm ? n1 : nm;
	struct keyset pr;
	keyset_probes(&pr, len, n_local + n_remote, t->nfill, ABSENT_SET + (uint32_t)len, 42 + len);
	struct keyset one_keys = keyset_slice(&pr, 0, n_local / 2),
		      many_keys = keyset_slice(&pr, n_local / 2, n_local / 2);
	struct keyset remote_keys = keyset_slice(&pr, n_local, n_remote);
	uint8_t *ref = malloc(pr.n), *got = malloc(pr.n);
	if (ref == NULL || got == NULL)
		die("out of memory");
	local_answers(t->f, &remote_keys, ref + n_local);

	struct samples one = { 0 }, many = { 0 }, r_one[MAX_REMOTES] = { 0 }, r_many[MAX_REMOTES] = { 0 };
	struct samples r_pipe[MAX_REMOTES] = { 0 };
	for (int round = 0; round < rounds; round++) {
		/* 800: whole groups of 32 and whole batches of 100 */
		struct keyset p1 = round_part(&one_keys, one_keys.n, round, rounds, 800);
		struct keyset pm = round_part(&many_keys, many_keys.n, round, rounds, 800);
		local_warm(t->f, warm, WARM_MS);
		local_check_one(t->f, &p1, &one, got + (p1.keys - pr.keys));
		local_check_many(t->f, &pm, BATCH, &many, got + (pm.keys - pr.keys));
		for (int i = 0; i < nr; i++) {
			struct keyset q1 = round_part(&remote_keys, n1, round, rounds, 1);
			struct keyset qm = round_part(&remote_keys, nm, round, rounds, BATCH);
			const size_t at1 = (size_t)(q1.keys - pr.keys), atm = (size_t)(qm.keys - pr.keys);
			remote_warm(&rs[i], warm, REMOTE_WARM_MS);
			remote_calls(&rs[i], 0, &q1, 1, &r_one[i], got + at1);
			verify_checks(t, &rs[i], &q1, got + at1, ref + at1, 1);
			remote_calls(&rs[i], 0, &qm, BATCH, &r_many[i], got + atm);
			verify_checks(t, &rs[i], &qm, got + atm, ref + atm, BATCH);
			if (rs[i].check_pipelined != NULL) {
				memset(got + atm, 0xff, qm.n); /* answers must come again */
				remote_calls_pipelined(&rs[i], &qm, BATCH, &r_pipe[i], got + atm);
				verify_checks(t, &rs[i], &qm, got + atm, ref + atm, BATCH);
			}
		}
	}

	/* The local region's reference, now that its timing is done. */
	struct keyset local_keys = keyset_slice(&pr, 0, n_local);
	local_answers(t->f, &local_keys, ref);
	size_t absent = 0, fp = 0;
	for (size_t i = 0; i < pr.n; i++) {
		if (pr.present[i] && !ref[i])
			die("%s: shmf_check says stored key %zu (%zu bytes) is absent (a false negative)", t->name, i,
			    len);
		absent += !pr.present[i];
		fp += !pr.present[i] && ref[i];
	}
	for (int round = 0; round < rounds; round++) {
		struct keyset p[2] = { round_part(&one_keys, one_keys.n, round, rounds, 800),
				       round_part(&many_keys, many_keys.n, round, rounds, 800) };
		for (int j = 0; j < 2; j++) {
			size_t at = (size_t)(p[j].keys - pr.keys);
			if (memcmp(got + at, ref + at, p[j].n) != 0)
				die("%s: %s and a later shmf_check disagree on some of probes %zu to %zu", t->name,
				    j ? "shmf_check_many" : "shmf_check", at, at + p[j].n);
		}
	}
	t->facts.fpr_measured = absent ? (double)fp / (double)absent : -1;
	if (absent >= 200 && t->facts.fpr_measured > fp_limit(t))
		die("%s: %zu of %zu absent keys read as present, far above the expected %.3g", t->name, fp, absent,
		    t->facts.fpr_target);

	char group[32];
	snprintf(group, sizeof(group), "group of %d calls", LOCAL_GROUP);
	emit(b, &t->facts, len, "shmfilter", "in-process", "check", 1, &one, group);
	emit(b, &t->facts, len, "shmfilter", "in-process", "check", BATCH, &many, "call");
	for (int i = 0; i < nr; i++) {
		emit(b, &t->facts, len, rs[i].system, rs[i].ep->transport, "check", 1, &r_one[i], "call");
		emit(b, &t->facts, len, rs[i].system, rs[i].ep->transport, "check", BATCH, &r_many[i], "call");
		if (rs[i].check_pipelined != NULL)
			emit(b, &t->facts, len, rs[i].system, rs[i].ep->transport, "check-pipelined", BATCH, &r_pipe[i],
			     "round trip");
		samples_free(&r_one[i]);
		samples_free(&r_many[i]);
		samples_free(&r_pipe[i]);
	}
	samples_free(&one);
	samples_free(&many);
	free(ref);
	free(got);
	keyset_free(&pr);
}

/* Fresh keys for each add row (they never met the filter), and the
 * answers the calls gave. */
struct add_set {
	struct keyset ks;
	uint8_t *was_new;
	struct samples s;
};

static void add_set_init(struct add_set *a, size_t len, size_t n, uint32_t set)
{
	keyset_fresh(&a->ks, len, n, set);
	a->was_new = calloc(n ? n : 1, 1);
	a->s = (struct samples){ 0 };
	if (a->was_new == NULL)
		die("out of memory");
}

static void add_set_free(struct add_set *a)
{
	keyset_free(&a->ks);
	free(a->was_new);
	samples_free(&a->s);
}

static void add_rows(struct bench *b, struct target *t, struct remote *rs, int nr, size_t len, const struct adds *ad,
		     uint32_t *set, const struct keyset *warm)
{
	const int rounds = b->sz->rounds;
	struct add_set one, many, r_one[MAX_REMOTES], r_many[MAX_REMOTES];
	add_set_init(&one, len, ad->local, (*set)++);
	add_set_init(&many, len, ad->local, (*set)++);
	for (int i = 0; i < nr; i++) {
		add_set_init(&r_one[i], len, ad->one, (*set)++);
		add_set_init(&r_many[i], len, ad->many, (*set)++);
	}
	for (int round = 0; round < rounds; round++) {
		struct keyset p1 = round_part(&one.ks, one.ks.n, round, rounds, LOCAL_GROUP);
		struct keyset pm = round_part(&many.ks, many.ks.n, round, rounds, BATCH);
		local_warm(t->f, warm, WARM_MS);
		local_add_one(t->f, &p1, &one.s);
		local_add_many(t->f, &pm, BATCH, &many.s);
		for (int i = 0; i < nr; i++) {
			struct add_set *a1 = &r_one[i], *am = &r_many[i];
			struct keyset q1 = round_part(&a1->ks, a1->ks.n, round, rounds, 1);
			struct keyset qm = round_part(&am->ks, am->ks.n, round, rounds, BATCH);
			remote_warm(&rs[i], warm, REMOTE_WARM_MS);
			remote_calls(&rs[i], 1, &q1, 1, &a1->s, a1->was_new + (q1.keys - a1->ks.keys));
			remote_calls(&rs[i], 1, &qm, BATCH, &am->s, am->was_new + (qm.keys - am->ks.keys));
		}
	}
	char group[32];
	snprintf(group, sizeof(group), "group of %d calls", LOCAL_GROUP);
	emit(b, &t->facts, len, "shmfilter", "in-process", "add", 1, &one.s, group);
	emit(b, &t->facts, len, "shmfilter", "in-process", "add", BATCH, &many.s, "call");
	struct add_set *local[2] = { &one, &many };
	for (int j = 0; j < 2; j++) {
		struct keyset done = keyset_slice(&local[j]->ks, 0,
						  round_used(local[j]->ks.n, rounds, j ? BATCH : LOCAL_GROUP));
		uint8_t *got = malloc(done.n ? done.n : 1);
		if (got == NULL)
			die("out of memory");
		local_answers(t->f, &done, got);
		if (memchr(got, 0, done.n) != NULL)
			die("%s: a key added with %s reads as absent", t->name, j ? "shmf_add_many" : "shmf_add");
		free(got);
	}
	for (int i = 0; i < nr; i++) {
		struct add_set *sets[2] = { &r_one[i], &r_many[i] };
		for (int j = 0; j < 2; j++) {
			emit(b, &t->facts, len, rs[i].system, rs[i].ep->transport, "add", j ? BATCH : 1, &sets[j]->s,
			     "call");
			struct keyset done = keyset_slice(&sets[j]->ks, 0,
							  round_used(sets[j]->ks.n, rounds, j ? BATCH : 1));
			verify_added(t, &rs[i], &done, sets[j]->was_new);
			add_set_free(sets[j]);
		}
	}
	add_set_free(&one);
	add_set_free(&many);
}

/* Median of the rounds' rates. */
static double median_rate(double *v, int n)
{
	struct samples s = { v, (size_t)n, (size_t)n };
	return samples_quantile(&s, 0.5);
}

static void throughput_rows(struct bench *b, struct target *t, struct remote *rs, int nr)
{
	enum { NW = sizeof(worker_counts) / sizeof(worker_counts[0]), NJOBS = 3 * (1 + MAX_REMOTES), MAX_ROUNDS = 9 };
	const size_t len = 16;
	const int rounds = b->sz->rounds < MAX_ROUNDS ? b->sz->rounds : MAX_ROUNDS;
	struct keyset pr;
	/* Enough probes that their blocks do not all fit in the cache: on a
	 * large filter the workers' checks miss it, as real ones do. */
	keyset_probes(&pr, len, b->sz->throughput_probes, t->nfill, ABSENT_SET + (uint32_t)len, 4242);
	struct job_args args[NJOBS];
	int njobs = 0;
	for (int j = -1; j < nr; j++)
		for (int m = 0; m < 3; m++) {
			/* m 2: 100 one-key requests in one pipeline, for the servers
			 * compared with Redis over TCP (shmd, RedisBloom). */
			if (m == 2 &&
			    (j < 0 || rs[j].check_pipelined == NULL || strcmp(rs[j].ep->transport, "tcp") != 0))
				continue;
			args[njobs++] = (struct job_args){ .instance = b->instance,
							   .filter = t->name,
							   .probes = &pr,
							   .per_call = m ? BATCH : 1,
							   .remote = j >= 0 ? &rs[j] : NULL,
							   .pipelined = m == 2 };
		}
	double rate[NJOBS][NW][MAX_ROUNDS];
	struct workers_cpu cpu[NJOBS][NW] = { { { 0, 0 } } }; /* means over the rounds */
	for (int round = 0; round < rounds; round++)
		for (int j = 0; j < njobs; j++) {
			struct worker_job job = args[j].remote ? job_remote_check(&args[j]) : job_local_check(&args[j]);
			for (int w = 0; w < NW; w++) {
				struct workers_cpu c;
				rate[j][w][round] = workers_throughput(&job, worker_counts[w], b->sz->seconds, &c);
				cpu[j][w].workers += c.workers / rounds;
				cpu[j][w].others += c.others / rounds;
			}
		}
	char sample[48];
	snprintf(sample, sizeof(sample), "median of %d runs of %.1f s", rounds, b->sz->seconds);
	for (int j = 0; j < njobs; j++)
		for (int w = 0; w < NW; w++) {
			const struct remote *r = args[j].remote;
			struct row row = {
				.f = &t->facts,
				.key_bytes = len,
				.op = args[j].pipelined ? "check-pipelined" : "check",
				.keys_per_call = args[j].per_call,
				.system = r ? r->system : "shmfilter",
				.transport = r ? r->ep->transport : "in-process",
				.workers = worker_counts[w],
				.samples = (size_t)rounds,
				.sample = sample,
				.keys_per_s = median_rate(rate[j][w], rounds),
				.workers_cpus = cpu[j][w].workers,
				.others_cpus = cpu[j][w].others,
			};
			results_row(&b->out, &row);
		}
	keyset_free(&pr);
}

static void run_filter(struct bench *b, const struct plan *p)
{
	struct target t;
	struct remote rs[MAX_REMOTES];
	int nr = 0;
	char rkey[96], rbname[80];
	snprintf(rkey, sizeof(rkey), "shmfbench:%s", p->name);
	snprintf(rbname, sizeof(rbname), "rb-%s", p->name);

	target_plan(&t, p->name, p->type, p->keys, p->click);
	/* shmd first: it creates the filter that everything else copies. */
	struct remote *shmd = &rs[nr++];
	verbs_remote(shmd, "shmd", &b->shmd_ep, t.name, t.type);
	target_create(&t, shmd, b->instance);
	if (target_huge_pages(&t, shmd))
		b->huge_yes++;
	else
		b->huge_no++;
	if (b->have_shmd_tcp) /* the same filter, through shmd's TCP listener */
		verbs_remote(&rs[nr++], "shmd", &b->shmd_tcp, t.name, t.type);
	struct adds ad = adds_for(t.keys, nr);
	target_fill(&t, t.keys - ad.budget);

	if (t.type == SHMF_TYPE_BLOOM) {
		target_upload(&t, b->instance, b->redis, &b->redis_unix, rkey);
		getbit_remote(&rs[nr++], &b->redis_tcp, rkey, &t.g);
		getbit_remote(&rs[nr++], &b->redis_unix, rkey, &t.g);
	}
	int rb_first = nr;
	/* RedisBloom gets the same capacity and error rate (for the
	 * click-dedupe filter: 1e-9, which it sizes as a classic Bloom). */
	double rb_fpr = p->click ? 1e-9 : 0.01;
	if (b->rb == RB_MODULE) {
		verbs_remote(&rs[nr++], "redisbloom", &b->redis_tcp, rbname, t.type);
		verbs_remote(&rs[nr++], "redisbloom", &b->redis_unix, rbname, t.type);
	} else if (b->rb == RB_STANDIN) {
		verbs_remote(&rs[nr++], "redisbloom-standin", &b->shmd_ep, rbname, t.type);
	}
	if (nr > rb_first) {
		uint64_t t0 = ticks_now();
		verbs_reserve(&rs[nr - 1], t.keys, rb_fpr);
		verbs_fill(&rs[nr - 1], t.nfill);
		fprintf(stderr, "%s: %s filter %s filled in %.1f s\n", t.name, rs[nr - 1].system, rbname,
			ticks_ns(ticks_now() - t0) / 1e9);
	}

	/* Warm-ups check keys never added and never timed. */
	struct keyset warm[2];
	keyset_fresh(&warm[0], 16, WARM_KEYS, WARM_SET);
	keyset_fresh(&warm[1], 64, WARM_KEYS, WARM_SET);
	for (int l = 0; l < 2; l++)
		check_rows(b, &t, rs, nr, warm[l].len, &warm[l]);
	uint32_t set = FRESH_SET;
	for (int l = 0; l < 2; l++)
		add_rows(b, &t, rs, nr, warm[l].len, &ad, &set, &warm[l]);
	keyset_free(&warm[0]);
	keyset_free(&warm[1]);
	if (p->throughput)
		throughput_rows(b, &t, rs, nr);

	if (nr > rb_first)
		verbs_drop(&rs[nr - 1]);
	if (t.type == SHMF_TYPE_BLOOM)
		freeReplyObject(resp_run(b->redis, &b->redis_unix, "DEL", rkey, (char *)NULL));
	target_destroy(&t, shmd);
	for (int i = 0; i < nr; i++)
		remote_close(&rs[i]);
}

static void usage(FILE *to)
{
	fprintf(to, "usage: bench-redis --shmd SOCKET --instance NAME --redis-tcp HOST:PORT --redis-unix PATH\n"
		    "                   --csv FILE [--meta FILE] [--quick] [--shmd-tcp HOST:PORT]\n"
		    "                   [--redisbloom | --redisbloom-standin]\n"
		    "  --shmd-tcp            shmd's TCP listener: measure BF.* / CF.* over TCP too\n"
		    "  --redisbloom          Redis has the RedisBloom module loaded: measure BF.* / CF.* on it\n"
		    "  --redisbloom-standin  (tests) run the RedisBloom code against shmd's socket instead\n"
		    "Normally run through bench/bench-redis.sh or ./run-bench.sh, which start Redis and shmd.\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "shmd", required_argument, NULL, 's' },
		{ "instance", required_argument, NULL, 'i' },
		{ "redis-tcp", required_argument, NULL, 't' },
		{ "redis-unix", required_argument, NULL, 'u' },
		{ "shmd-tcp", required_argument, NULL, 'T' },
		{ "csv", required_argument, NULL, 'c' },
		{ "meta", required_argument, NULL, 'm' },
		{ "quick", no_argument, NULL, 'q' },
		{ "redisbloom", no_argument, NULL, 'R' },
		{ "redisbloom-standin", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bench b = { .rb = RB_SKIPPED };
	const char *shmd = NULL, *tcp = NULL, *unix_path = NULL, *csv = NULL, *meta = NULL, *shmd_tcp = NULL;
	char err[256];
	int opt;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 's': shmd = optarg; break;
		case 'i': b.instance = optarg; break;
		case 't': tcp = optarg; break;
		case 'u': unix_path = optarg; break;
		case 'T': shmd_tcp = optarg; break;
		case 'c': csv = optarg; break;
		case 'm': meta = optarg; break;
		case 'q': b.quick = 1; break;
		case 'R': b.rb = RB_MODULE; break;
		case 'S': b.rb = RB_STANDIN; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bench-redis: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	const char *missing = !shmd         ? "--shmd"
			      : !b.instance ? "--instance"
			      : !tcp        ? "--redis-tcp"
			      : !unix_path  ? "--redis-unix"
			      : !csv        ? "--csv"
					    : NULL;
	if (missing != NULL) {
		fprintf(stderr, "bench-redis: %s is required\n", missing);
		usage(stderr);
		return 2;
	}
	if (endpoint_parse(&b.shmd_ep, "shmd", "unix", shmd, err, sizeof(err)) < 0 ||
	    endpoint_parse(&b.redis_tcp, "redis", "tcp", tcp, err, sizeof(err)) < 0 ||
	    endpoint_parse(&b.redis_unix, "redis", "unix", unix_path, err, sizeof(err)) < 0 ||
	    (shmd_tcp != NULL && endpoint_parse(&b.shmd_tcp, "shmd", "tcp", shmd_tcp, err, sizeof(err)) < 0)) {
		fprintf(stderr, "bench-redis: %s\n", err);
		return 2;
	}
	b.have_shmd_tcp = shmd_tcp != NULL;
	if (results_open(&b.out, csv) < 0) {
		fprintf(stderr, "bench-redis: cannot create %s: %m\n", csv);
		return 2;
	}
	b.sz = b.quick ? &quick_sizes : &full_sizes;
	ticks_init();
	b.redis = resp_connect(&b.redis_unix);
	/* The TCP port must be this Redis, not another one on the machine. */
	redisContext *c = resp_connect(&b.redis_tcp);
	redisReply *r1 = resp_run(c, &b.redis_tcp, "CONFIG", "GET", "unixsocket", (char *)NULL);
	if (r1->type != REDIS_REPLY_ARRAY || r1->elements != 2 || r1->element[1]->type != REDIS_REPLY_STRING ||
	    strcmp(r1->element[1]->str, unix_path) != 0)
		die("%s is not the Redis of unix socket %s", endpoint_name(&b.redis_tcp), unix_path);
	freeReplyObject(r1);
	redisFree(c);

	const struct plan *plan = b.quick ? quick_plan : full_plan;
	for (const struct plan *p = plan; p->name != NULL; p++)
		run_filter(&b, p);

	if (meta != NULL) {
		FILE *fp = fopen(meta, "ae");
		if (fp == NULL)
			die("cannot append to %s: %m", meta);
		fprintf(fp, "mode=%s\n", b.quick ? "quick" : "full");
		fprintf(fp, "timing=%s\n", ticks_method());
		fprintf(fp, "local_group=%d\n", LOCAL_GROUP);
		fprintf(fp, "batch=%d\n", BATCH);
		fprintf(fp, "throughput_seconds=%.1f\n", b.sz->seconds);
		fprintf(fp, "huge_pages=%s\n", b.huge_no == 0 ? "yes" : b.huge_yes == 0 ? "no" : "some");
		fprintf(fp, "avx512=%s\n", shmf_bloom_have_avx512() ? "yes" : "no");
		fprintf(fp, "redisbloom=%s\n",
			b.rb == RB_MODULE    ? "module"
			: b.rb == RB_STANDIN ? "standin"
					     : "skipped");
		fprintf(fp, "shmd_tcp=%s\n", b.have_shmd_tcp ? endpoint_name(&b.shmd_tcp) : "none");
		if (fclose(fp) != 0)
			die("writing %s: %m", meta);
	}
	redisFree(b.redis);
	if (results_close(&b.out) < 0)
		die("writing %s failed", csv);
	return 0;
}
