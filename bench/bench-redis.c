/*
 * bench-redis.c - shmfilter against networked Redis, side by side.
 *
 *   bench-redis --shmd SOCKET --instance NAME --redis-tcp HOST:PORT
 *               --redis-unix PATH --csv FILE [--meta FILE] [--quick]
 *               [--redisbloom | --redisbloom-standin]
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
 *     loopback and over the unix socket; shmd's socket (BF.* / CF.*); the
 *     RedisBloom module when Redis has it loaded;
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

#include "bloom.h"
#include "die.h"
#include "jobs.h"
#include "keys.h"
#include "latency.h"
#include "remote.h"
#include "results.h"
#include "samples.h"
#include "target.h"
#include "ticks.h"
#include "workers.h"

#define BATCH 100          /* keys per call in the batch rows */
#define ABSENT_SET 2u      /* + key length: the absent probes */
#define FRESH_SET 1000u    /* and up: keys added by the add rows */
#define WARM_MS 50.0       /* untimed checks before each shmfilter row */
#define MAX_REMOTES 5 /* shmd, GETBIT over tcp and unix, RedisBloom over tcp and unix */

struct plan {
	const char *name;
	int type;
	uint64_t keys;
	int click;       /* m/n = 50, k = 16 instead of 1% */
	int throughput;  /* measure 1, 2 and 4 worker processes on it */
};

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

static const struct plan quick_plan[] = {
	{ "bloom-100k", SHMF_TYPE_BLOOM, 100000, 0, 0 },
	{ "bloom-1M", SHMF_TYPE_BLOOM, 1000000, 0, 1 },
	{ "bloom-click-1M", SHMF_TYPE_BLOOM, 1000000, 1, 0 },
	{ "cuckoo-100k", SHMF_TYPE_CUCKOO, 100000, 0, 0 },
	{ "cuckoo-1M", SHMF_TYPE_CUCKOO, 1000000, 0, 1 },
	{ NULL, 0, 0, 0, 0 },
};

/* How much of everything a mode measures. */
struct sizes {
	size_t probes;      /* keys checked by shmfilter, per filter and key length */
	size_t remote_one;  /* one-key round trips per baseline */
	size_t remote_many; /* 100-key round trips per baseline */
	double seconds;     /* per throughput point */
};

static const struct sizes full_sizes = { 200000, 10000, 500, 1.0 };
static const struct sizes quick_sizes = { 20000, 1000, 50, 0.2 };

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
	redisContext *redis;     /* for uploads and DEL */
	enum redisbloom_mode rb;
	int quick;
	const struct sizes *sz;
	struct results out;
	int huge_yes, huge_no;   /* filters on 2 MiB pages, and not */
};

static size_t clamp(uint64_t v, size_t lo, size_t hi)
{
	return v < lo ? lo : v > hi ? hi : (size_t)v;
}

static struct adds adds_for(uint64_t keys)
{
	struct adds a;
	/* Multiples of 800: whole groups of 32 and whole batches of 100. */
	a.local = clamp(keys / 400 / 800 * 800, 800, 48000);
	a.one = clamp(keys / 1000, 100, 2000);
	a.many = clamp(keys / 400 / BATCH * BATCH, 500, 10000);
	/* shmd adds into the shmfilter filter; GETBIT and RedisBloom (two
	 * transports each) into filters of their own. */
	uint64_t into_shmf = 2 * a.local + a.one + a.many, into_other = 2 * (a.one + a.many);
	a.budget = 2 * (into_shmf > into_other ? into_shmf : into_other);
	return a;
}

static void emit(struct bench *b, const struct facts *f, size_t len, const char *system, const char *transport,
		 const char *op, size_t per_call, struct samples *s, const char *sample)
{
	if (s->n == 0)
		die("%s %s %s: no samples (too few keys for a call of %zu)", f->filter, system, op, per_call);
	struct row w = {
		.f = f, .key_bytes = len, .system = system, .transport = transport, .op = op,
		.keys_per_call = per_call, .workers = 1, .samples = s->n, .sample = sample,
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

static void check_rows(struct bench *b, struct target *t, struct remote *rs, int nr, size_t len)
{
	struct keyset pr;
	keyset_probes(&pr, len, b->sz->probes, t->nfill, ABSENT_SET + (uint32_t)len, 42 + len);
	uint8_t *ref = malloc(pr.n), *got = malloc(pr.n);
	if (ref == NULL || got == NULL)
		die("out of memory");
	local_answers(t->f, &pr, ref);
	size_t absent = 0, fp = 0;
	for (size_t i = 0; i < pr.n; i++) {
		if (pr.present[i] && !ref[i])
			die("%s: shmf_check says stored key %zu (%zu bytes) is absent (a false negative)", t->name, i, len);
		absent += !pr.present[i];
		fp += !pr.present[i] && ref[i];
	}
	t->facts.fpr_measured = absent ? (double)fp / (double)absent : -1;
	if (absent >= 200 && t->facts.fpr_measured > fp_limit(t))
		die("%s: %zu of %zu absent keys read as present, far above the expected %.3g", t->name, fp, absent,
		    t->facts.fpr_target);

	struct samples s = { 0 };
	char group[32];
	snprintf(group, sizeof(group), "group of %d calls", LOCAL_GROUP);
	local_warm(t->f, &pr, WARM_MS);
	local_check_one(t->f, &pr, &s);
	emit(b, &t->facts, len, "shmfilter", "in-process", "check", 1, &s, group);
	local_warm(t->f, &pr, WARM_MS);
	local_check_many(t->f, &pr, BATCH, &s, got);
	for (size_t i = 0; i < pr.n / BATCH * BATCH; i++)
		if (got[i] != ref[i])
			die("%s: shmf_check_many and shmf_check disagree on probe %zu", t->name, i);
	emit(b, &t->facts, len, "shmfilter", "in-process", "check", BATCH, &s, "call");

	for (int i = 0; i < nr; i++) {
		struct keyset one = keyset_slice(&pr, 0, b->sz->remote_one < pr.n ? b->sz->remote_one : pr.n);
		remote_warm(&rs[i], &pr, WARM_MS);
		remote_calls(&rs[i], 0, &one, 1, &s, got);
		verify_checks(t, &rs[i], &one, got, ref, 1);
		emit(b, &t->facts, len, rs[i].system, rs[i].ep->transport, "check", 1, &s, "call");
		size_t nmany = b->sz->remote_many * BATCH < pr.n ? b->sz->remote_many * BATCH : pr.n;
		struct keyset many = keyset_slice(&pr, 0, nmany);
		remote_calls(&rs[i], 0, &many, BATCH, &s, got);
		verify_checks(t, &rs[i], &many, got, ref, BATCH);
		emit(b, &t->facts, len, rs[i].system, rs[i].ep->transport, "check", BATCH, &s, "call");
	}
	samples_free(&s);
	free(ref);
	free(got);
	keyset_free(&pr);
}

static void add_rows(struct bench *b, struct target *t, struct remote *rs, int nr, size_t len, const struct adds *ad,
		     uint32_t *set)
{
	struct samples s = { 0 };
	struct keyset ks;
	char group[32];
	snprintf(group, sizeof(group), "group of %d calls", LOCAL_GROUP);

	keyset_fresh(&ks, len, ad->local, (*set)++);
	local_warm(t->f, &ks, WARM_MS);
	local_add_one(t->f, &ks, &s);
	emit(b, &t->facts, len, "shmfilter", "in-process", "add", 1, &s, group);
	uint8_t *got = malloc(ks.n);
	if (got == NULL)
		die("out of memory");
	local_answers(t->f, &ks, got);
	if (memchr(got, 0, ks.n) != NULL)
		die("%s: a key added with shmf_add reads as absent", t->name);
	keyset_free(&ks);
	free(got);
	keyset_fresh(&ks, len, ad->local, (*set)++);
	local_warm(t->f, &ks, WARM_MS);
	local_add_many(t->f, &ks, BATCH, &s);
	emit(b, &t->facts, len, "shmfilter", "in-process", "add", BATCH, &s, "call");
	keyset_free(&ks);

	for (int i = 0; i < nr; i++) {
		const size_t counts[2] = { ad->one, ad->many }, per_call[2] = { 1, BATCH };
		for (int j = 0; j < 2; j++) {
			keyset_fresh(&ks, len, counts[j], (*set)++);
			if (j == 0) /* checks of keys not added yet: they change nothing */
				remote_warm(&rs[i], &ks, WARM_MS);
			uint8_t *was_new = malloc(ks.n);
			if (was_new == NULL)
				die("out of memory");
			remote_calls(&rs[i], 1, &ks, per_call[j], &s, was_new);
			emit(b, &t->facts, len, rs[i].system, rs[i].ep->transport, "add", per_call[j], &s, "call");
			verify_added(t, &rs[i], &ks, was_new);
			free(was_new);
			keyset_free(&ks);
		}
	}
	samples_free(&s);
}

static void throughput_rows(struct bench *b, struct target *t, struct remote *rs, int nr)
{
	const size_t len = 16;
	struct keyset pr;
	keyset_probes(&pr, len, b->sz->probes, t->nfill, ABSENT_SET + (uint32_t)len, 4242);
	char sample[32];
	snprintf(sample, sizeof(sample), "%.1f s per worker", b->sz->seconds);
	for (int j = -1; j < nr; j++) {
		for (int m = 0; m < 2; m++) {
			const size_t per_call = m == 0 ? 1 : BATCH;
			struct job_args a = { .instance = b->instance, .filter = t->name, .probes = &pr,
					      .per_call = per_call, .remote = j >= 0 ? &rs[j] : NULL };
			struct worker_job job = j < 0 ? job_local_check(&a) : job_remote_check(&a);
			for (size_t w = 0; w < sizeof(worker_counts) / sizeof(worker_counts[0]); w++) {
				struct row r = {
					.f = &t->facts, .key_bytes = len, .op = "check", .keys_per_call = per_call,
					.system = j < 0 ? "shmfilter" : rs[j].system,
					.transport = j < 0 ? "in-process" : rs[j].ep->transport,
					.workers = worker_counts[w], .samples = (size_t)worker_counts[w], .sample = sample,
				};
				r.keys_per_s = workers_throughput(&job, worker_counts[w], b->sz->seconds);
				results_row(&b->out, &r);
			}
		}
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
	struct adds ad = adds_for(t.keys);
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

	for (size_t len = 16; len <= 64; len += 48)
		check_rows(b, &t, rs, nr, len);
	uint32_t set = FRESH_SET;
	for (size_t len = 16; len <= 64; len += 48)
		add_rows(b, &t, rs, nr, len, &ad, &set);
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
		    "                   --csv FILE [--meta FILE] [--quick] [--redisbloom | --redisbloom-standin]\n"
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
		{ "csv", required_argument, NULL, 'c' },
		{ "meta", required_argument, NULL, 'm' },
		{ "quick", no_argument, NULL, 'q' },
		{ "redisbloom", no_argument, NULL, 'R' },
		{ "redisbloom-standin", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bench b = { .rb = RB_SKIPPED };
	const char *shmd = NULL, *tcp = NULL, *unix_path = NULL, *csv = NULL, *meta = NULL;
	char err[256];
	int opt;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 's': shmd = optarg; break;
		case 'i': b.instance = optarg; break;
		case 't': tcp = optarg; break;
		case 'u': unix_path = optarg; break;
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
	const char *missing = !shmd ? "--shmd" : !b.instance ? "--instance" : !tcp ? "--redis-tcp"
			      : !unix_path ? "--redis-unix" : !csv ? "--csv" : NULL;
	if (missing != NULL) {
		fprintf(stderr, "bench-redis: %s is required\n", missing);
		usage(stderr);
		return 2;
	}
	if (endpoint_parse(&b.shmd_ep, "shmd", "unix", shmd, err, sizeof(err)) < 0 ||
	    endpoint_parse(&b.redis_tcp, "redis", "tcp", tcp, err, sizeof(err)) < 0 ||
	    endpoint_parse(&b.redis_unix, "redis", "unix", unix_path, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench-redis: %s\n", err);
		return 2;
	}
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
	if (r1->type != REDIS_REPLY_ARRAY || r1->elements != 2 || strcmp(r1->element[1]->str, unix_path) != 0)
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
		fprintf(fp, "redisbloom=%s\n", b.rb == RB_MODULE ? "module" : b.rb == RB_STANDIN ? "standin" : "skipped");
		if (fclose(fp) != 0)
			die("writing %s: %m", meta);
	}
	redisFree(b.redis);
	if (results_close(&b.out) < 0)
		die("writing %s failed", csv);
	return 0;
}
