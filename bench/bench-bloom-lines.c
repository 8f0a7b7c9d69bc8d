/*
 * bench-bloom-lines.c - Bloom filters at low error rates: the layout the
 * sizing chooses (one, two or three lines a key, libclient/bloom.h) beside
 * the one-line layout every filter had before, side by side in one run.
 *
 *   bench-bloom-lines [--quick] [--runs N] [--rate P] [KEYS...]
 *
 * For each KEYS (default 1,000,000 and 100,000,000; --quick 1,000,000
 * only) and each rate of 1e-3, 1e-6 and 1e-9 (or --rate P alone), up to three filters made by
 * shmd's own registry in a private runtime directory (a tmpfs with 2 MiB
 * pages when this process may mount one, as shmd as root makes, else
 * /dev/shm):
 *
 *   chosen    what BF.RESERVE and shmctl create make now
 *   one line  the one-line filter for the same keys and rate (before)
 *   same mem  a one-line filter of the chosen filter's memory (its
 *             capacity found by bisection), filled to its capacity
 *
 * Each is filled with its keys through shmf_add, the fills interleaved in
 * tenths so that the machine's noise falls on all of them alike (the add
 * figure is the fill's time per key, from empty to capacity). Then the
 * measured false-positive rate (absent keys through shmf_check_many), and
 * RUNS rounds of shmf_check (a loop over 4M probes, half present, half
 * absent) and shmf_check_many (batches of 1,024), filter after filter in
 * each round; medians and the ratios of the chosen filter to the two
 * others. Bits per key are beside a classic Bloom filter's formula,
 * -ln p / ln^2 2. Nothing is asserted; the test suite runs --quick once
 * only to prove the program works.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "bench/clock.h"
#include "libclient/bloom.h"
#include "shmd/store/registry.h"

#define KEY_LEN 16
#define NPROBE  4000000u
#define FILTERS 3

static volatile int sink;

struct filt {
	const char *what;
	char name[32];
	uint64_t capacity; /* keys it is sized for, and filled with */
	uint32_t lines;    /* 0: the sizing's choice */
	shmf_t *f;
	shmf_info_t info;
	double add_ns, fpr;
	uint64_t fp, absent;
	double check[31], batch[31];
};

/* Key @p i of set @p set, 16 bytes. */
static void key_of(char out[KEY_LEN], uint64_t set, uint64_t i)
{
	uint64_t w[2] = { shmf_mix64(i * 2 + set * UINT64_C(0x9e3779b97f4a7c15) + 1),
			  shmf_mix64(i * 2 + set * UINT64_C(0x9e3779b97f4a7c15) + 2) };
	memcpy(out, w, KEY_LEN);
}

/* The one-line capacity at @p fpr whose filter has @p nblocks blocks (the
 * largest that has at most that many). */
static uint64_t same_memory_capacity(uint64_t nblocks, double fpr, uint64_t hi)
{
	uint64_t lo = 1;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;
		struct shmf_bloom_params p;
		if (shmf_bloom_size(mid, fpr, 1, &p) == 0 && p.nblocks <= nblocks)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

static void make(struct registry *reg, struct filt *x, double fpr)
{
	char err[REGISTRY_ERR_MAX];
	struct filter_spec spec = {
		.type = SHMF_TYPE_BLOOM, .capacity = x->capacity, .fpr = fpr, .mode = 0640, .bucket_size = x->lines
	};
	snprintf(spec.name, sizeof(spec.name), "%s", x->name);
	if (registry_create(reg, &spec, err, sizeof(err)) < 0 ||
	    shmf_open(reg->instance, x->name, SHMF_RDWR, &x->f) < 0) {
		fprintf(stderr, "%s: %s\n", x->name, err);
		exit(1);
	}
	shmf_info(x->f, &x->info);
}

/* Fill every filter in tenths, round robin, each add timed in its tenth. */
static void fill_all(struct filt *x, int nf)
{
	char key[KEY_LEN];
	double spent[FILTERS] = { 0 };
	for (int tenth = 0; tenth < 10; tenth++)
		for (int j = 0; j < nf; j++) {
			uint64_t from = x[j].capacity * (uint64_t)tenth / 10,
				 to = x[j].capacity * (uint64_t)(tenth + 1) / 10;
			double t0 = bench_now_ns();
			for (uint64_t i = from; i < to; i++) {
				key_of(key, 1, i);
				sink += shmf_add(x[j].f, key, KEY_LEN);
			}
			spent[j] += bench_now_ns() - t0;
		}
	for (int j = 0; j < nf; j++)
		x[j].add_ns = spent[j] / (double)x[j].capacity;
}

/* Absent keys the filter answers present, over @p probes of them. */
static void measure_fpr(struct filt *x, uint64_t probes)
{
	enum { B = 1024 };
	static char keys[B][KEY_LEN];
	shmf_key_t ks[B];
	uint8_t out[B];
	uint64_t fp = 0;
	for (uint64_t i = 0; i < probes; i += B) {
		unsigned m = probes - i < B ? (unsigned)(probes - i) : B;
		for (unsigned j = 0; j < m; j++) {
			key_of(keys[j], 2, i + j);
			ks[j] = (shmf_key_t){ keys[j], KEY_LEN };
		}
		fp += (uint64_t)shmf_check_many(x->f, ks, m, out);
	}
	x->fp = fp;
	x->absent = probes;
	x->fpr = (double)fp / (double)probes;
}

/* Probe @p i: even ones a key of the filter's own set, odd ones absent. */
static const char *probe(const char *keys, uint64_t i)
{
	return keys + i * KEY_LEN;
}

static char *make_probes(uint64_t present)
{
	char *k = malloc((size_t)NPROBE * KEY_LEN);
	if (k == NULL)
		exit(1);
	for (uint64_t i = 0; i < NPROBE; i++)
		key_of(k + i * KEY_LEN, (i & 1) ? 3 : 1, (i & 1) ? i : shmf_mix64(i) % present);
	return k;
}

static double time_check(shmf_t *f, const char *keys)
{
	int hits = 0;
	double t0 = bench_now_ns();
	for (uint64_t i = 0; i < NPROBE; i++)
		hits += shmf_check(f, probe(keys, i), KEY_LEN);
	sink += hits;
	return (bench_now_ns() - t0) / NPROBE;
}

static double time_batch(shmf_t *f, const char *keys)
{
	enum { B = 1024 };
	shmf_key_t ks[B];
	uint8_t out[B];
	int hits = 0;
	double t0 = bench_now_ns();
	for (uint64_t i = 0; i < NPROBE; i += B) {
		unsigned m = NPROBE - i < B ? (unsigned)(NPROBE - i) : B;
		for (unsigned j = 0; j < m; j++)
			ks[j] = (shmf_key_t){ probe(keys, i + j), KEY_LEN };
		hits += shmf_check_many(f, ks, m, out);
	}
	sink += hits;
	return (bench_now_ns() - t0) / NPROBE;
}

static void print_row(uint64_t n, double fpr, const struct filt *x, const struct filt *base, int runs)
{
	double bpk = (double)x->info.bits / (double)x->capacity, classic = shmf_bloom_classic_bits(fpr);
	double check[31], batch[31], bcheck[31], bbatch[31];
	memcpy(check, x->check, sizeof(check));
	memcpy(batch, x->batch, sizeof(batch));
	memcpy(bcheck, base->check, sizeof(bcheck));
	memcpy(bbatch, base->batch, sizeof(bbatch));
	double c = bench_median(check, runs), b = bench_median(batch, runs);
	double cb = bench_median(bcheck, runs), bb = bench_median(bbatch, runs);
	printf("%-10" PRIu64 " %-6g %-9s %5u %3u %9.2f %6.3fx %9" PRIu64 " %9.3g %8.1f %8.1f %8.1f", n, fpr, x->what,
	       x->info.lines, x->info.k, bpk, bpk / classic, x->fp, x->fpr, c, b, x->add_ns);
	if (x != base)
		printf("   %5.2fx %5.2fx %5.2fx", c / cb, b / bb, x->add_ns / base->add_ns);
	printf("\n");
}

static void run_rate(struct registry *reg, uint64_t n, double fpr, int runs, uint64_t absent)
{
	struct filt x[FILTERS] = { { .what = "chosen", .capacity = n },
				   { .what = "one line", .capacity = n, .lines = 1 },
				   { .what = "same mem", .lines = 1 } };
	snprintf(x[0].name, sizeof(x[0].name), "chosen-%g", fpr);
	make(reg, &x[0], fpr);
	int nf = x[0].info.lines > 1 ? 3 : 1;
	for (int j = 1; j < nf; j++) {
		snprintf(x[j].name, sizeof(x[j].name), "%s-%g", j == 1 ? "one" : "same", fpr);
		if (j == 2)
			x[2].capacity = same_memory_capacity(x[0].info.bits / SHMF_BLOCK_BITS, fpr, n);
		make(reg, &x[j], fpr);
	}
	fill_all(x, nf);
	for (int j = 0; j < nf; j++)
		measure_fpr(&x[j], absent);
	char *probes[FILTERS];
	for (int j = 0; j < nf; j++)
		probes[j] = make_probes(x[j].capacity);
	for (int r = 0; r < runs; r++)
		for (int j = 0; j < nf; j++) {
			x[j].check[r] = time_check(x[j].f, probes[j]);
			x[j].batch[r] = time_batch(x[j].f, probes[j]);
		}
	for (int j = 0; j < nf; j++)
		print_row(n, fpr, &x[j], &x[nf > 1 ? 1 : 0], runs);
	if (nf > 1)
		printf("%-10s %-6s %-9s chosen against the one-line filter of the same memory: check %.2fx, batch "
		       "%.2fx, add %.2fx\n",
		       "", "", "", bench_median(x[0].check, runs) / bench_median(x[2].check, runs),
		       bench_median(x[0].batch, runs) / bench_median(x[2].batch, runs), x[0].add_ns / x[2].add_ns);
	for (int j = 0; j < nf; j++) {
		free(probes[j]);
		shmf_close(x[j].f);
		registry_drop(reg, x[j].name, NULL, 0);
	}
	fflush(stdout);
}

static int run_in(const char *dir, const char *pages, const uint64_t *keys, int nkeys, int runs, double only)
{
	char err[REGISTRY_ERR_MAX];
	struct registry reg;
	setenv("SHMF_RUNTIME_DIR", dir, 1);
	if (registry_open(&reg, "bench", 0750, 0640, (gid_t)-1, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	printf("%s; %d runs, medians; 16-byte keys; check and batch over %u probes, half present\n\n", pages, runs,
	       NPROBE);
	printf("%-10s %-6s %-9s %5s %3s %9s %7s %9s %9s %8s %8s %8s   %s\n", "keys", "rate", "filter", "lines", "k",
	       "bits/key", "classic", "fp", "fp rate", "check", "batch", "add", "against one line: check batch add");
	double rates[3] = { 1e-3, 1e-6, 1e-9 };
	unsigned nrates = 3;
	if (only > 0)
		rates[0] = only, nrates = 1;
	for (int i = 0; i < nkeys; i++)
		for (unsigned r = 0; r < nrates; r++) {
			/* Absent keys: 10M, or 2M for a filter of 100M keys and
			 * more (where each costs a miss); 1e-9 shows none either way. */
			run_rate(&reg, keys[i], rates[r], runs, keys[i] >= 100000000 ? 2000000 : 10000000);
		}
	registry_close(&reg, 1);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t keys[8] = { 1000000, 100000000 };
	int nkeys = 2, given = 0, runs = 5;
	double only = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			nkeys = 1, runs = 3;
		} else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
			runs = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--rate") && i + 1 < argc) {
			only = atof(argv[++i]);
		} else if (argv[i][0] >= '1' && argv[i][0] <= '9' && given < 8) {
			keys[given++] = strtoull(argv[i], NULL, 10);
			nkeys = given;
		} else {
			fprintf(stderr, "usage: %s [--quick] [--runs N] [--rate P] [KEYS...]\n", argv[0]);
			return 2;
		}
	}
	if (runs < 1 || runs > 31)
		runs = 5;
	char root[] = "/tmp/shmf-bench-lines-XXXXXX";
	if (mkdtemp(root) == NULL)
		return 1;
	int huge = mount("tmpfs", root, "tmpfs", 0, "mode=0755,huge=within_size") == 0;
	int rc = run_in(root,
			huge ? "tmpfs huge=within_size (2 MiB pages, as shmd mounts one as root)"
			     : "no tmpfs mounted (not root?): 4 KiB pages of /tmp",
			keys, nkeys, runs, only);
	if (huge)
		umount2(root, MNT_DETACH);
	rmdir(root);
	return rc < 0 ? 1 : 0;
}
