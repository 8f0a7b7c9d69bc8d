/*
 * bench-filter.c - speed of the libshmf hot path, and what a new worker
 * pays to attach a large filter.
 *
 *   bench-filter [--quick | --demo] [--no-attach]
 *   bench-filter --snapshot-wait [GiB]
 *   bench-filter --layers [BASE]
 *   bench-filter --imported [KEYS...]
 *
 * Default: filters of 1M and 100M keys, then the attach test. --quick uses
 * 10M instead of 100M keys; --demo measures only the 1M-key filter and
 * skips the attach test (a few seconds, for run-demo.sh). --snapshot-wait
 * measures only how long a writer waits while the daemon's code snapshots
 * a cuckoo filter of 1 GiB (or GiB). --layers measures checks and adds on
 * a growing filter (1% declared, expansion 2, BASE keys first, 65,536 by
 * default) grown to 1, 2, 4 and 8 layers, its current layer half full,
 * beside a filter created with the right capacity for the same keys (one
 * layer): what a layer costs. --imported measures checks on filters
 * imported from RedisBloom (a chain of one link, and one grown to four)
 * beside a filter of shmfilter's own for the same keys at the same
 * declared rate (1%), for 1M and 10M keys or the counts given.
 *
 * Everything runs in one process, side by side, on filters it creates in
 * private runtime directories: under /dev/shm (4 KiB pages) and, when it
 * can mount one (root), on a tmpfs with huge=within_size (2 MiB pages), as
 * shmd uses. Each figure is the median of several runs; timing is never
 * asserted anywhere, only printed.
 *
 * The "floor" rows run the same per-key work (hash, block, bit tests)
 * inline on the mapping, without the handle (no generation check, no
 * RCU read lock, no call): the difference to the API rows is the cost of
 * the handle.
 *
 * The "cuckoo b=N" rows put cuckoo filters of each bucket size side by
 * side (run_cuckoo_sizes()); the "1e-9" rows a cuckoo filter (32-bit
 * fingerprints) beside a Bloom filter at 1e-9 (run_low_rate()).
 *
 * The "replicated" rows run the same adds and checks on a twin of each
 * filter that replicates (its adds journalled into the handle's ring of
 * <name>.journal, which is drained between runs, untimed: draining is the
 * daemon's work), alternating run by run with the plain filter.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libclient/bloom.h"
#include "libclient/redisbloom.h"
#include "common/redisbloom-dump.h"
#include "bench/clock.h"
#include "shmd/files/grow.h"
#include "libclient/journal.h"
#include "shmd/store/generations.h"
#include "shmd/store/registry.h"
#include "libclient/segment.h"

#define KEY_LEN 16
#define RUNS    7

/* n random 16-byte keys in one array (read sequentially: only the filter
 * blocks are random accesses). */
static char *make_keys(uint64_t n, uint64_t salt)
{
	char *k = malloc(n * KEY_LEN);
	if (k == NULL) {
		perror("malloc");
		exit(1);
	}
	uint64_t *w = (uint64_t *)k;
	for (uint64_t i = 0; i < n * 2; i++)
		w[i] = shmf_mix64(i * 2 + salt * UINT64_C(0x9e3779b97f4a7c15) + 1);
	return k;
}

static volatile int sink;

struct target {
	const char *label;
	uint64_t capacity;
	shmf_t *rw;
	struct shmf_data_map dm;
	char *present; /* keys added */
	uint64_t npresent;
	char *absent; /* keys never added */
	uint64_t nprobe;
};

static void fill(struct target *t)
{
	enum { B = 1024 };
	shmf_key_t ks[B];
	for (uint64_t i = 0; i < t->npresent; i += B) {
		uint64_t n = t->npresent - i < B ? t->npresent - i : B;
		for (uint64_t j = 0; j < n; j++)
			ks[j] = (shmf_key_t){ t->present + (i + j) * KEY_LEN, KEY_LEN };
		if (shmf_add_many(t->rw, ks, n, NULL) < 0) {
			fprintf(stderr, "add_many failed\n");
			exit(1);
		}
	}
}

/* Probe keys: half present, half absent, interleaved. */
static const char *probe_key(struct target *t, uint64_t i)
{
	return (i & 1) ? t->absent + (i >> 1) * KEY_LEN : t->present + ((i >> 1) % t->npresent) * KEY_LEN;
}

static double bench_check(struct target *t)
{
	int hits = 0;
	double t0 = bench_now_ns();
	for (uint64_t i = 0; i < t->nprobe; i++)
		hits += shmf_check(t->rw, probe_key(t, i), KEY_LEN);
	double dt = bench_now_ns() - t0;
	sink = hits;
	return dt / (double)t->nprobe;
}

static double bench_floor(struct target *t)
{
	const uint64_t seed = t->dm.hdr.seed, nb = t->dm.hdr.nblocks;
	const uint32_t k = t->dm.hdr.k;
	int hits = 0;
	double t0 = bench_now_ns();
	for (uint64_t i = 0; i < t->nprobe; i++) {
		uint64_t h = shmf_hash(probe_key(t, i), KEY_LEN, seed);
		const uint64_t *b = t->dm.blocks + shmf_block_index(h, nb) * SHMF_BLOCK_WORDS;
		hits += shmf_bloom_block_check_key(b, h, k);
	}
	double dt = bench_now_ns() - t0;
	sink = hits;
	return dt / (double)t->nprobe;
}

static double bench_check_many(struct target *t, size_t batch)
{
	shmf_key_t *ks = malloc(batch * sizeof(*ks));
	uint8_t *out = malloc(batch);
	int hits = 0;
	double spent = 0;
	for (uint64_t i = 0; i < t->nprobe; i += batch) {
		size_t n = t->nprobe - i < batch ? (size_t)(t->nprobe - i) : batch;
		for (size_t j = 0; j < n; j++)
			ks[j] = (shmf_key_t){ probe_key(t, i + j), KEY_LEN };
		double t0 = bench_now_ns();
		hits += shmf_check_many(t->rw, ks, n, out);
		spent += bench_now_ns() - t0;
	}
	sink = hits;
	free(ks);
	free(out);
	return spent / (double)t->nprobe;
}

/* Adds of new keys: a fresh key set per run so every add really sets bits. */
static double bench_add(struct target *t, uint64_t salt, int batched)
{
	const uint64_t n = t->nprobe / 4;
	char *keys = make_keys(n, salt);
	double t0 = bench_now_ns(), dt;
	if (!batched) {
		int fresh = 0;
		for (uint64_t i = 0; i < n; i++)
			fresh += shmf_add(t->rw, keys + i * KEY_LEN, KEY_LEN);
		sink = fresh;
		dt = bench_now_ns() - t0;
	} else {
		enum { B = 64 };
		shmf_key_t ks[B];
		dt = 0;
		for (uint64_t i = 0; i < n; i += B) {
			for (unsigned j = 0; j < B && i + j < n; j++)
				ks[j] = (shmf_key_t){ keys + (i + j) * KEY_LEN, KEY_LEN };
			uint64_t m = n - i < B ? n - i : B;
			double a = bench_now_ns();
			sink = shmf_add_many(t->rw, ks, m, NULL);
			dt += bench_now_ns() - a;
		}
	}
	free(keys);
	return dt / (double)n;
}

/* Adds of keys already present: the path that finds every bit set and
 * writes nothing (the common case of de-duplication). */
static double bench_add_present(struct target *t)
{
	const uint64_t n = t->nprobe / 4;
	int fresh = 0;
	double t0 = bench_now_ns();
	for (uint64_t i = 0; i < n; i++)
		fresh += shmf_add(t->rw, t->present + (i % t->npresent) * KEY_LEN, KEY_LEN);
	double dt = bench_now_ns() - t0;
	sink = fresh;
	return dt / (double)n;
}

static void setup_target(struct registry *reg, struct target *t, const char *name, uint64_t capacity, uint64_t nprobe)
{
	char err[REGISTRY_ERR_MAX];
	struct filter_spec spec = { .type = SHMF_TYPE_BLOOM, .capacity = capacity, .fpr = 0.01, .mode = 0640 };
	snprintf(spec.name, sizeof(spec.name), "%s", name);
	int slot = registry_create(reg, &spec, err, sizeof(err));
	if (slot < 0) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	int r = shmf_open(reg->instance, name, SHMF_RDWR, &t->rw);
	if (r < 0) {
		fprintf(stderr, "open %s: %s\n", name, shmf_strerror(r));
		exit(1);
	}
	struct shmf_slot copy;
	shmf_slot_read(&reg->ctl.slots[slot], &copy);
	t->dm.fd = -1;
	if (shmf_data_map_open(&reg->dir, &copy, 0, &t->dm) < 0)
		exit(1);
	t->label = name;
	t->capacity = capacity;
	t->npresent = capacity;
	t->nprobe = nprobe;
	t->present = make_keys(capacity, 1);
	t->absent = make_keys(nprobe / 2 + 1, 2);
	double t0 = bench_now_ns();
	fill(t);
	fprintf(stderr, "filled %s (%" PRIu64 " keys, %.1f MiB) in %.2f s\n", name, capacity,
		(double)copy.data_bytes / 1048576.0, (bench_now_ns() - t0) / 1e9);
}

/* ---- Cuckoo rows ------------------------------------------------------ */

/* Add keys [from, to) of @p keys one by one; ns per add. */
static double timed_adds(shmf_t *f, const char *keys, uint64_t from, uint64_t to)
{
	double t0 = bench_now_ns();
	for (uint64_t i = from; i < to; i++) {
		int r = shmf_add(f, keys + i * KEY_LEN, KEY_LEN);
		if (r != 1) {
			shmf_info_t info;
			shmf_info(f, &info);
			fprintf(stderr,
				"cuckoo add of key %" PRIu64 " (of %" PRIu64 "..%" PRIu64
				") answered %d (%s) at load %.4f, buckets of %u, %u-bit fingerprints\n",
				i, from, to, r, r < 0 ? shmf_strerror(r) : "not new", info.fill_ratio, info.bucket_size,
				info.fingerprint_bits);
			exit(1);
		}
	}
	return (bench_now_ns() - t0) / (double)(to - from);
}

/* @p ncapped capped adds (cap 4) of @p keys' first ncapped / 4 keys, each
 * four times: ns per add. The copies they added are deleted again,
 * untimed: as many as were added (a key whose fingerprint another key
 * shares gets fewer, and deleting four would take the other key's). */
static double timed_capped(shmf_t *f, const char *keys, uint64_t ncapped)
{
	uint64_t nkeys = ncapped / 4;
	unsigned char *added = calloc(nkeys, 1);
	if (added == NULL) {
		perror("calloc");
		exit(1);
	}
	double a = bench_now_ns();
	for (uint64_t i = 0; i < ncapped; i++) {
		int r = shmf_add_capped(f, keys + (i % nkeys) * KEY_LEN, KEY_LEN, 4);
		added[i % nkeys] += r >= 0 && r < 4;
	}
	double ns = (bench_now_ns() - a) / (double)ncapped;
	for (uint64_t i = 0; i < nkeys; i++)
		for (unsigned c = 0; c < added[i]; c++)
			shmf_del(f, keys + i * KEY_LEN, KEY_LEN);
	free(added);
	return ns;
}

/* Capped adds in @p nproc processes at once on filter @p name, each its
 * own keys (salt @p salt + process): the median of their ns per add. */
static double capped_in_processes(const char *instance, const char *name, int nproc, uint64_t ncapped, uint64_t salt)
{
	int fds[2];
	if (pipe(fds) < 0)
		return -1;
	pid_t pid[8];
	char *keys[8];
	for (int p = 0; p < nproc; p++)
		keys[p] = make_keys(ncapped / 4, salt + (uint64_t)p);
	for (int p = 0; p < nproc; p++) {
		pid[p] = fork();
		if (pid[p] == 0) {
			shmf_t *f;
			double ns = -1;
			if (shmf_open(instance, name, SHMF_RDWR, &f) == 0) {
				timed_capped(f, keys[p], ncapped / 4); /* warm: pages and caches */
				ns = timed_capped(f, keys[p], ncapped);
				shmf_close(f);
			}
			_exit(write(fds[1], &ns, sizeof(ns)) == sizeof(ns) ? 0 : 1);
		}
	}
	double v[8];
	int got = 0;
	for (int p = 0; p < nproc; p++) {
		if (read(fds[0], &v[got], sizeof(v[got])) == sizeof(v[got]) && v[got] >= 0)
			got++;
		waitpid(pid[p], NULL, 0);
		free(keys[p]);
	}
	close(fds[0]);
	close(fds[1]);
	return got == nproc ? bench_median(v, got) : -1;
}

/*
 * A cuckoo filter beside Bloom target @p t, same capacity, same keys:
 * adds of new keys between 70% and 80% load and capped adds (cap 4, which
 * take the relocation lock) in this process, in one other and in two
 * others at once (contending for the lock), each run's keys deleted again
 * after it; then filled with the same keys as the Bloom filter (95% load)
 * and checked with the same probes, alternating with the Bloom check.
 */
static void run_cuckoo(struct registry *reg, struct target *t)
{
	char err[REGISTRY_ERR_MAX], name[32];
	snprintf(name, sizeof(name), "cf-%s", t->label);
	struct filter_spec spec = { .type = SHMF_TYPE_CUCKOO, .capacity = t->capacity, .fpr = 0.01, .mode = 0640 };
	snprintf(spec.name, sizeof(spec.name), "%s", name);
	struct target c = *t;
	if (registry_create(reg, &spec, err, sizeof(err)) < 0 || shmf_open(reg->instance, name, SHMF_RDWR, &c.rw) < 0) {
		fprintf(stderr, "cuckoo %s: %s\n", name, err);
		exit(1);
	}
	shmf_info_t info;
	shmf_info(c.rw, &info);
	uint64_t slots = info.buckets * info.bucket_size, at70 = slots * 70 / 100, step = (slots * 80 / 100 - at70);
	if (at70 > t->npresent)
		at70 = t->npresent;
	/* The first fill, 0% -> 80% load, timed as a whole (relocations
	 * grow with the load: most of them fall in the last tenth), then
	 * taken back to 70%. */
	double t0 = bench_now_ns();
	double fill = (timed_adds(c.rw, t->present, 0, at70) * (double)at70 +
		       timed_adds(c.rw, t->present, at70, at70 + step) * (double)step) /
		      (double)(at70 + step);
	for (uint64_t i = at70; i < at70 + step; i++)
		shmf_del(c.rw, t->present + i * KEY_LEN, KEY_LEN);
	double add[RUNS], check[RUNS], bloom[RUNS], capped[RUNS], many[RUNS], bmany[RUNS];
	for (int r = 0; r < RUNS; r++) {
		char *fresh = make_keys(step, 300 + (uint64_t)r);
		add[r] = timed_adds(c.rw, fresh, 0, step);
		for (uint64_t i = 0; i < step; i++)
			shmf_del(c.rw, fresh + i * KEY_LEN, KEY_LEN);
		free(fresh);
	}
	const uint64_t ncapped = 20000;
	double capped1[RUNS], capped2[RUNS], moves[RUNS];
	shmf_info(c.rw, &info);
	uint64_t items0 = info.items;
	for (int r = 0; r < RUNS; r++) {
		/* As in the processes below: a warming pass, then the timed one. */
		char *keys = make_keys(ncapped * 5 / 4, 400 + (uint64_t)r);
		timed_capped(c.rw, keys, ncapped / 4 * 5);
		shmf_info(c.rw, &info);
		uint64_t moves0 = info.relocations;
		capped[r] = timed_capped(c.rw, keys, ncapped * 5);
		shmf_info(c.rw, &info);
		moves[r] = (double)(info.relocations - moves0) / (double)(ncapped * 5);
		free(keys);
		capped1[r] = capped_in_processes(reg->instance, name, 1, ncapped * 5, 500 + 10 * (uint64_t)r);
		capped2[r] = capped_in_processes(reg->instance, name, 2, ncapped * 5, 600 + 10 * (uint64_t)r);
	}
	shmf_info(c.rw, &info);
	fprintf(stderr, "capped rows: %" PRIu64 " fingerprints before, %" PRIu64 " after\n", items0, info.items);
	timed_adds(c.rw, t->present, at70, t->npresent);
	shmf_info(c.rw, &info);
	fprintf(stderr, "filled %s (%" PRIu64 " keys, load %.3f, %.1f MiB) in %.2f s\n", name, t->npresent,
		info.fill_ratio, (double)info.bytes / 1048576.0, (bench_now_ns() - t0) / 1e9);
	for (int r = 0; r < RUNS; r++) {
		bloom[r] = bench_check(t);
		check[r] = bench_check(&c);
		bmany[r] = bench_check_many(t, 1024);
		many[r] = bench_check_many(&c, 1024);
	}
	double b = bench_median(bloom, RUNS), ch = bench_median(check, RUNS), ad = bench_median(add, RUNS);
	double bm = bench_median(bmany, RUNS), cm = bench_median(many, RUNS);
	printf("%-8s %-34s %7.1f ns  (%.2fx Bloom check %.1f ns, same run)\n", t->label,
	       "cuckoo shmf_check, loop (95% load)", ch, ch / b, b);
	printf("%-8s %-34s %7.1f ns/key  (%.2fx Bloom %.1f ns/key, same run)\n", t->label,
	       "cuckoo shmf_check_many, 1024 (95%)", cm, cm / bm, bm);
	printf("%-8s %-34s %7.1f ns  (%.2fx cuckoo check)\n", t->label, "cuckoo shmf_add, 0% -> 80% load", fill,
	       fill / ch);
	printf("%-8s %-34s %7.1f ns  (%.2fx cuckoo check)\n", t->label, "cuckoo shmf_add, 70% -> 80% load", ad,
	       ad / ch);
	double c1 = bench_median(capped1, RUNS), c2 = bench_median(capped2, RUNS);
	printf("%-8s %-34s %7.1f ns  (%.2f relocations an add)\n", t->label, "cuckoo shmf_add_capped, cap 4 (70%)",
	       bench_median(capped, RUNS), bench_median(moves, RUNS));
	printf("%-8s %-34s %7.1f ns\n", t->label, "  the same, in 1 other process", c1);
	printf("%-8s %-34s %7.1f ns  (%.2fx 1 process; each process's own adds)\n", t->label,
	       "  the same, 2 processes at once", c2, c2 / c1);
	shmf_close(c.rw);
	registry_drop(reg, name, NULL, 0);
}

/* ---- Bucket sizes ------------------------------------------------------ */

/*
 * Cuckoo filters of buckets of 1, 2, 4 and 8 beside each other (same
 * capacity and keys as Bloom target @p t, error rate 0.07, so that 8-bit
 * fingerprints serve every size that sizing gives them: buckets of 2 up to
 * 2^20 buckets, 4 and 8; buckets of 1 always have 16-bit ones): adds of
 * new keys between 70% and 80% of the capacity (deleted again after each
 * run), then, filled to the capacity, the check loop and batch checks of
 * 1024 with the same probes; the sizes alternate run by run.
 */
static void run_cuckoo_sizes(struct registry *reg, struct target *t)
{
	static const uint32_t sizes[] = { 1, 2, 4, 8 };
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	char err[REGISTRY_ERR_MAX];
	struct target c[N];
	shmf_info_t info[N];
	uint64_t at70 = t->capacity * 70 / 100, step = t->capacity / 10;
	for (unsigned b = 0; b < N; b++) {
		char name[32];
		snprintf(name, sizeof(name), "cb%u-%s", sizes[b], t->label);
		struct filter_spec spec = { .type = SHMF_TYPE_CUCKOO,
					    .capacity = t->capacity,
					    .fpr = 0.07,
					    .mode = 0640,
					    .bucket_size = sizes[b] };
		snprintf(spec.name, sizeof(spec.name), "%s", name);
		c[b] = *t;
		if (registry_create(reg, &spec, err, sizeof(err)) < 0 ||
		    shmf_open(reg->instance, name, SHMF_RDWR, &c[b].rw) < 0) {
			fprintf(stderr, "cuckoo %s: %s\n", name, err);
			exit(1);
		}
		timed_adds(c[b].rw, t->present, 0, at70);
		shmf_info(c[b].rw, &info[b]);
	}
	double add[N][RUNS], check[N][RUNS], many[N][RUNS];
	for (int r = 0; r < RUNS; r++) {
		char *fresh = make_keys(step, 700 + (uint64_t)r);
		for (unsigned b = 0; b < N; b++) {
			add[b][r] = timed_adds(c[b].rw, fresh, 0, step);
			for (uint64_t i = 0; i < step; i++)
				shmf_del(c[b].rw, fresh + i * KEY_LEN, KEY_LEN);
		}
		free(fresh);
	}
	for (unsigned b = 0; b < N; b++)
		timed_adds(c[b].rw, t->present, at70, t->npresent);
	for (int r = 0; r < RUNS; r++)
		for (unsigned b = 0; b < N; b++) {
			check[b][r] = bench_check(&c[b]);
			many[b][r] = bench_check_many(&c[b], 1024);
		}
	for (unsigned b = 0; b < N; b++) {
		char what[64];
		double ch = bench_median(check[b], RUNS);
		snprintf(what, sizeof(what), "cuckoo b=%u (%u-bit), check", sizes[b], info[b].fingerprint_bits);
		printf("%-8s %-34s %7.1f ns  (%.1f MiB, %.2fx b=4)\n", t->label, what, ch,
		       (double)info[b].bytes / 1048576.0, ch / bench_median(check[2], RUNS));
		snprintf(what, sizeof(what), "cuckoo b=%u, check_many 1024", sizes[b]);
		printf("%-8s %-34s %7.1f ns/key\n", t->label, what, bench_median(many[b], RUNS));
		snprintf(what, sizeof(what), "cuckoo b=%u, add 70%% -> 80%%", sizes[b]);
		printf("%-8s %-34s %7.1f ns\n", t->label, what, bench_median(add[b], RUNS));
	}
	for (unsigned b = 0; b < N; b++) {
		char name[32];
		snprintf(name, sizeof(name), "cb%u-%s", sizes[b], t->label);
		shmf_close(c[b].rw);
		registry_drop(reg, name, NULL, 0);
	}
}

/* ---- Replicated rows --------------------------------------------------- */

/* Entries per ring of the twins' journals, and how many adds the timed
 * loops make between two drains (untimed: the daemon drains the journals
 * as they fill; a ring a few hundred KiB long stays in the caches). */
#define JOURNAL_RING_ENTRIES (1u << 16)
#define DRAIN_EVERY          16384u

/* A replicated filter of @p spec: created, filled with @p keys[0, n)
 * through a handle that does not journal yet (the fill is not what is
 * measured), then its journal made and its slot marked replicated (as shmd
 * will once the registry supports replication), and a read-write handle
 * opened that journals. */
static shmf_t *make_replicated(struct registry *reg, const struct filter_spec *spec, const char *keys, uint64_t n,
			       struct shmf_journal_reader **jr)
{
	char err[REGISTRY_ERR_MAX];
	shmf_t *f;
	int slot = registry_create(reg, spec, err, sizeof(err)), r;
	if (slot < 0) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	if ((r = shmf_open(reg->instance, spec->name, SHMF_RDWR, &f)) < 0)
		goto fail;
	enum { B = 1024 };
	shmf_key_t ks[B];
	for (uint64_t i = 0; i < n; i += B) {
		uint64_t m = n - i < B ? n - i : B;
		for (uint64_t j = 0; j < m; j++)
			ks[j] = (shmf_key_t){ keys + (i + j) * KEY_LEN, KEY_LEN };
		if ((r = shmf_add_many(f, ks, m, NULL)) < 0)
			goto fail;
	}
	shmf_close(f);
	if ((r = shmf_journal_create(reg->dir.fd, spec->name, spec->mode, (gid_t)-1, 2, JOURNAL_RING_ENTRIES)) < 0)
		goto fail;
	struct shmf_slot *s = &reg->ctl.slots[slot];
	shmf_slot_write_begin(s);
	s->flags |= SHMF_SLOT_REPLICATED;
	shmf_slot_write_end(s);
	if ((r = shmf_open(reg->instance, spec->name, SHMF_RDWR, &f)) < 0 ||
	    (r = shmf_journal_reader_open(&reg->dir, spec->name, jr)) < 0)
		goto fail;
	return f;
fail:
	fprintf(stderr, "replicated %s: %s\n", spec->name, shmf_strerror(r));
	exit(1);
}

static int count_entries(void *arg, unsigned ring, const struct shmf_jentry *e, size_t n)
{
	(void)ring;
	(void)e;
	*(uint64_t *)arg += n;
	return 0;
}

/* Empty the journal (the daemon's work, untimed); entries drained. */
static uint64_t drain(struct shmf_journal_reader *jr)
{
	uint64_t n = 0;
	while (shmf_journal_drain(jr, count_entries, &n, 0) > 0)
		;
	return n;
}

/* Nothing lost on the way: every journalled add drained, none dropped or missed. */
static void journal_whole(const char *what, struct shmf_journal_reader *jr, shmf_t *f)
{
	struct shmf_journal_stats s;
	struct shmf_journal_writer_stats w;
	shmf_journal_stats(jr, &s, NULL, 0);
	shmf_journal_handle_stats(f, &w);
	if (s.dropped || s.lost || w.missed || w.ring < 0) {
		fprintf(stderr, "%s: journal dropped %" PRIu64 ", lost %" PRIu64 ", missed %" PRIu64 "\n", what,
			s.dropped, s.lost, w.missed);
		exit(1);
	}
}

/* Adds of keys[0, n) one by one, the journal (if any) drained every
 * DRAIN_EVERY adds outside the clock; ns per add. */
static double timed_journalled_adds(shmf_t *f, const char *keys, uint64_t n, struct shmf_journal_reader *jr,
				    uint64_t *journalled)
{
	double spent = 0;
	int fresh = 0;
	for (uint64_t i = 0; i < n; i += DRAIN_EVERY) {
		uint64_t end = n - i < DRAIN_EVERY ? n : i + DRAIN_EVERY;
		double t0 = bench_now_ns();
		for (uint64_t k = i; k < end; k++)
			fresh += shmf_add(f, keys + k * KEY_LEN, KEY_LEN);
		spent += bench_now_ns() - t0;
		if (jr != NULL)
			*journalled += drain(jr);
	}
	sink = fresh;
	return spent / (double)n;
}

/*
 * Two twins of Bloom target @p t, a plain one and a replicated one, of its
 * capacity and holding its keys: adds of the same new keys into each (an
 * eighth of the capacity a run, 1M at most, so that most set bits and are
 * journalled; both filters take the same keys, so they stay bit for bit
 * alike) and checks with the same probes, alternating run by run.
 */
static void run_replicated_bloom(struct registry *reg, struct target *t)
{
	char err[REGISTRY_ERR_MAX];
	struct filter_spec spec = { .type = SHMF_TYPE_BLOOM, .capacity = t->capacity, .fpr = 0.01, .mode = 0640 };
	struct shmf_journal_reader *jr;
	struct target p = *t, r = *t;
	double t0 = bench_now_ns();
	snprintf(spec.name, sizeof(spec.name), "bp-%s", t->label);
	if (registry_create(reg, &spec, err, sizeof(err)) < 0 ||
	    shmf_open(reg->instance, spec.name, SHMF_RDWR, &p.rw) < 0) {
		fprintf(stderr, "bloom %s: %s\n", spec.name, err);
		exit(1);
	}
	fill(&p);
	snprintf(spec.name, sizeof(spec.name), "br-%s", t->label);
	r.rw = make_replicated(reg, &spec, t->present, t->npresent, &jr);
	fprintf(stderr, "filled bp-%s and br-%s (%" PRIu64 " keys each) in %.2f s\n", t->label, t->label, t->npresent,
		(bench_now_ns() - t0) / 1e9);
	uint64_t n = t->capacity / 8 < 1000000 ? t->capacity / 8 : 1000000, journalled = 0, ignored = 0;
	double add[RUNS], radd[RUNS], check[RUNS], rcheck[RUNS];
	for (int i = 0; i < RUNS; i++) {
		char *keys = make_keys(n, 600 + (uint64_t)i);
		add[i] = timed_journalled_adds(p.rw, keys, n, NULL, &ignored);
		radd[i] = timed_journalled_adds(r.rw, keys, n, jr, &journalled);
		free(keys);
		check[i] = bench_check(&p);
		rcheck[i] = bench_check(&r);
	}
	journal_whole(spec.name, jr, r.rw);
	double a = bench_median(add, RUNS), ra = bench_median(radd, RUNS), c = bench_median(check, RUNS),
	       rc = bench_median(rcheck, RUNS);
	printf("%-8s %-34s %7.1f ns  (%.2fx plain add %.1f ns, same run; %" PRIu64 " of %" PRIu64 " adds journalled)\n",
	       t->label, "replicated: shmf_add of new keys", ra, ra / a, a, journalled, n * RUNS);
	printf("%-8s %-34s %7.1f ns  (%.2fx plain check %.1f ns, same run)\n", t->label, "replicated: shmf_check, loop",
	       rc, rc / c, c);
	shmf_close(p.rw);
	shmf_close(r.rw);
	shmf_journal_reader_close(jr);
	registry_drop(reg, spec.name, NULL, 0);
	snprintf(spec.name, sizeof(spec.name), "bp-%s", t->label);
	registry_drop(reg, spec.name, NULL, 0);
}

/*
 * Cuckoo: a plain and a replicated filter of @p t's capacity, both filled
 * to 70% load with @p t's keys; then, alternating, adds of the same new
 * keys into each (a tenth of the slots, 1M at most), each run's keys
 * deleted again after it (the deletes are journalled too, and drained,
 * untimed), and checks with @p t's probes.
 */
static void run_replicated_cuckoo(struct registry *reg, struct target *t)
{
	char err[REGISTRY_ERR_MAX], pname[32], rname[32];
	struct filter_spec spec = { .type = SHMF_TYPE_CUCKOO, .capacity = t->capacity, .fpr = 0.01, .mode = 0640 };
	struct target p = *t, r = *t;
	struct shmf_journal_reader *jr;
	double t0 = bench_now_ns();
	snprintf(pname, sizeof(pname), "cp-%s", t->label);
	snprintf(rname, sizeof(rname), "cr-%s", t->label);
	snprintf(spec.name, sizeof(spec.name), "%s", pname);
	if (registry_create(reg, &spec, err, sizeof(err)) < 0 ||
	    shmf_open(reg->instance, pname, SHMF_RDWR, &p.rw) < 0) {
		fprintf(stderr, "cuckoo %s: %s\n", pname, err);
		exit(1);
	}
	shmf_info_t info;
	shmf_info(p.rw, &info);
	uint64_t at70 = info.buckets * info.bucket_size * 70 / 100, step = info.buckets * info.bucket_size / 10;
	if (at70 > t->npresent)
		at70 = t->npresent;
	if (step > 1000000)
		step = 1000000;
	timed_adds(p.rw, t->present, 0, at70);
	snprintf(spec.name, sizeof(spec.name), "%s", rname);
	r.rw = make_replicated(reg, &spec, t->present, at70, &jr);
	fprintf(stderr, "filled %s and %s to 70%% load (%" PRIu64 " keys each) in %.2f s\n", pname, rname, at70,
		(bench_now_ns() - t0) / 1e9);
	double add[RUNS], radd[RUNS], check[RUNS], rcheck[RUNS];
	uint64_t journalled = 0;
	for (int i = 0; i < RUNS; i++) {
		char *fresh = make_keys(step, 500 + (uint64_t)i);
		uint64_t ignored = 0;
		add[i] = timed_journalled_adds(p.rw, fresh, step, NULL, &ignored);
		radd[i] = timed_journalled_adds(r.rw, fresh, step, jr, &journalled);
		for (uint64_t k = 0; k < step; k++) {
			shmf_del(p.rw, fresh + k * KEY_LEN, KEY_LEN);
			shmf_del(r.rw, fresh + k * KEY_LEN, KEY_LEN);
			if (k % DRAIN_EVERY == DRAIN_EVERY - 1)
				journalled += drain(jr);
		}
		free(fresh);
		journalled += drain(jr);
		check[i] = bench_check(&p);
		rcheck[i] = bench_check(&r);
	}
	journal_whole(rname, jr, r.rw);
	double a = bench_median(add, RUNS), ra = bench_median(radd, RUNS), c = bench_median(check, RUNS),
	       rc = bench_median(rcheck, RUNS);
	printf("%-8s %-34s %7.1f ns  (%.2fx plain cuckoo add %.1f ns, same run; %" PRIu64 " adds a run)\n", t->label,
	       "replicated: cuckoo shmf_add, 70%", ra, ra / a, a, step);
	printf("%-8s %-34s %7.1f ns  (%.2fx plain cuckoo check %.1f ns, same run; %" PRIu64 " entries journalled)\n",
	       t->label, "replicated: cuckoo shmf_check, 70%", rc, rc / c, c, journalled);
	shmf_close(p.rw);
	shmf_close(r.rw);
	shmf_journal_reader_close(jr);
	registry_drop(reg, rname, NULL, 0);
	registry_drop(reg, pname, NULL, 0);
}

/*
 * At 1e-9: a cuckoo filter (no bucket size asked: buckets of 2, 32-bit
 * fingerprints) beside a Bloom filter of the same declared rate, both
 * filled to the capacity with the same keys: bits a key (the data
 * segment over the capacity), the check loop and batch checks of 1024 on
 * the same probes, alternating run by run, and the false positives of the
 * absent probes (none expected of either).
 */
static void run_low_rate(struct registry *reg, struct target *t)
{
	static const int types[] = { SHMF_TYPE_BLOOM, SHMF_TYPE_CUCKOO };
	static const char *const what[] = { "bloom", "cuckoo" };
	char err[REGISTRY_ERR_MAX];
	struct target c[2];
	shmf_info_t info[2];
	for (unsigned f = 0; f < 2; f++) {
		char name[32];
		snprintf(name, sizeof(name), "low-%s-%s", what[f], t->label);
		struct filter_spec spec = { .type = types[f], .capacity = t->capacity, .fpr = 1e-9, .mode = 0640 };
		snprintf(spec.name, sizeof(spec.name), "%s", name);
		c[f] = *t;
		if (registry_create(reg, &spec, err, sizeof(err)) < 0 ||
		    shmf_open(reg->instance, name, SHMF_RDWR, &c[f].rw) < 0) {
			fprintf(stderr, "%s: %s\n", name, err);
			exit(1);
		}
		timed_adds(c[f].rw, t->present, 0, t->npresent);
		shmf_info(c[f].rw, &info[f]);
	}
	double check[2][RUNS], many[2][RUNS];
	for (int r = 0; r < RUNS; r++)
		for (unsigned f = 0; f < 2; f++) {
			check[f][r] = bench_check(&c[f]);
			many[f][r] = bench_check_many(&c[f], 1024);
		}
	double bpk[2], ch[2], mn[2];
	uint64_t fp[2] = { 0, 0 };
	for (unsigned f = 0; f < 2; f++) {
		bpk[f] = (double)info[f].bytes * 8.0 / (double)t->capacity;
		ch[f] = bench_median(check[f], RUNS);
		mn[f] = bench_median(many[f], RUNS);
		for (uint64_t i = 0; i < t->nprobe / 2; i++)
			fp[f] += shmf_check(c[f].rw, t->absent + i * KEY_LEN, KEY_LEN) == 1;
	}
	for (unsigned f = 0; f < 2; f++) {
		char w[64];
		snprintf(w, sizeof(w), "1e-9 %s (%s %u), check", what[f], f ? "fp bits" : "k", info[f].k);
		printf("%-8s %-34s %7.1f ns  (%.2fx bloom; %.1f bits/key, %.2fx bloom; %llu fp of %llu)\n", t->label, w,
		       ch[f], ch[f] / ch[0], bpk[f], bpk[f] / bpk[0], (unsigned long long)fp[f],
		       (unsigned long long)(t->nprobe / 2));
		snprintf(w, sizeof(w), "1e-9 %s, check_many 1024", what[f]);
		printf("%-8s %-34s %7.1f ns/key  (%.2fx bloom)\n", t->label, w, mn[f], mn[f] / mn[0]);
	}
	for (unsigned f = 0; f < 2; f++) {
		char name[32];
		snprintf(name, sizeof(name), "low-%s-%s", what[f], t->label);
		shmf_close(c[f].rw);
		registry_drop(reg, name, NULL, 0);
	}
}

static void run_speed(struct registry *reg, uint64_t big);

/* Run the speed table with the runtime directory @p dir. */
static int run_speed_in(const char *dir, const char *pages, uint64_t big)
{
	char err[REGISTRY_ERR_MAX];
	struct registry reg;
	setenv("SHMF_RUNTIME_DIR", dir, 1);
	if (registry_open(&reg, "bench", 0750, 0640, (gid_t)-1, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	printf("\n%s\n", pages);
	run_speed(&reg, big);
	registry_close(&reg, 1);
	fflush(stdout);
	return 0;
}

static void run_speed(struct registry *reg, uint64_t big)
{
	struct target t[2] = { 0 };
	int nt = big ? 2 : 1; /* big == 0: only the 1M-key filter (--demo) */
	setup_target(reg, &t[0], "1M", 1000000, 4000000);
	if (big)
		setup_target(reg, &t[1], big == 100000000 ? "100M" : "big", big, 4000000);
	printf("%-8s %-34s %10s\n", "filter", "operation (16-byte keys)", "median");
	for (int i = 0; i < nt; i++) {
		double v[7][RUNS];
		for (int r = 0; r < RUNS; r++) {
			v[0][r] = bench_check(&t[i]);
			v[1][r] = bench_floor(&t[i]);
			v[2][r] = bench_check_many(&t[i], 64);
			v[3][r] = bench_check_many(&t[i], 1024);
			v[4][r] = bench_add(&t[i], 100 + (uint64_t)r + 10 * (uint64_t)i, 0);
			v[5][r] = bench_add(&t[i], 200 + (uint64_t)r + 10 * (uint64_t)i, 1);
			v[6][r] = bench_add_present(&t[i]);
		}
		double check = bench_median(v[0], RUNS), fl = bench_median(v[1], RUNS);
		double add = bench_median(v[4], RUNS);
		printf("%-8s %-34s %7.1f ns\n", t[i].label, "shmf_check, loop", check);
		printf("%-8s %-34s %7.1f ns\n", t[i].label, "floor: same work inline, no handle", fl);
		printf("%-8s %-34s %7.1f ns/key\n", t[i].label, "shmf_check_many, batches of 64",
		       bench_median(v[2], RUNS));
		printf("%-8s %-34s %7.1f ns/key\n", t[i].label, "shmf_check_many, batches of 1024",
		       bench_median(v[3], RUNS));
		printf("%-8s %-34s %7.1f ns  (%.2fx check)\n", t[i].label, "shmf_add of new keys, loop", add,
		       add / check);
		printf("%-8s %-34s %7.1f ns/key\n", t[i].label, "shmf_add_many, batches of 64",
		       bench_median(v[5], RUNS));
		printf("%-8s %-34s %7.1f ns  (%.2fx check)\n", t[i].label, "shmf_add of present keys, loop",
		       bench_median(v[6], RUNS), bench_median(v[6], RUNS) / check);
		printf("%-8s %-34s %7.1f ns  (%.2fx floor)\n", t[i].label, "handle overhead per check", check - fl,
		       check / fl);
		run_cuckoo(reg, &t[i]);
		run_cuckoo_sizes(reg, &t[i]);
		run_low_rate(reg, &t[i]);
		run_replicated_bloom(reg, &t[i]);
		run_replicated_cuckoo(reg, &t[i]);
	}
	for (int i = 0; i < nt; i++) {
		shmf_close(t[i].rw);
		shmf_data_map_close(&t[i].dm);
		free(t[i].present);
		free(t[i].absent);
		registry_drop(reg, t[i].label, NULL, 0);
	}
}

/* Child: a newly started worker. Open, then 100,000 random checks. */
static int attach_child(const char *instance)
{
	double t0 = bench_now_ns();
	shmf_t *f;
	int r = shmf_open(instance, "attach", SHMF_RDONLY, &f);
	if (r < 0) {
		fprintf(stderr, "attach: %s\n", shmf_strerror(r));
		return 1;
	}
	double t1 = bench_now_ns();
	int hits = 0;
	for (uint64_t i = 0; i < 100000; i++) {
		uint64_t key[2] = { shmf_mix64(i + 12345), i };
		hits += shmf_check(f, key, sizeof(key));
	}
	double t2 = bench_now_ns();
	sink = hits;
	printf("%.3f %.3f\n", (t1 - t0) / 1e6, (t2 - t0) / 1e6);
	shmf_close(f);
	return 0;
}

static double run_attach_once(const char *self, const char *instance, double *open_ms)
{
	int pfd[2];
	if (pipe(pfd) < 0)
		return -1;
	pid_t p = fork();
	if (p == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		execl(self, self, "--attach-child", instance, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	char buf[128] = { 0 };
	ssize_t n = read(pfd[0], buf, sizeof(buf) - 1);
	close(pfd[0]);
	waitpid(p, NULL, 0);
	double a = -1, b = -1;
	if (n > 0)
		sscanf(buf, "%lf %lf", &a, &b);
	*open_ms = a;
	return b;
}

static void run_attach(const char *self, const char *label, const char *root)
{
	char err[REGISTRY_ERR_MAX];
	struct registry reg;
	setenv("SHMF_RUNTIME_DIR", root, 1);
	if (registry_open(&reg, "bench", 0750, 0640, (gid_t)-1, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return;
	}
	/* About 1 GiB of filter. */
	struct filter_spec spec = {
		.name = "attach", .type = SHMF_TYPE_BLOOM, .capacity = 866000000, .fpr = 0.01, .mode = 0640
	};
	double t0 = bench_now_ns();
	if (registry_create(&reg, &spec, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		registry_close(&reg, 1);
		return;
	}
	double create_ms = (bench_now_ns() - t0) / 1e6;
	double v[RUNS], o[RUNS];
	for (int r = 0; r < RUNS; r++)
		v[r] = run_attach_once(self, "bench", &o[r]);
	printf("%-8s %-34s %7.1f ms  (open alone %.2f ms; daemon created it in %.0f ms; %s)\n", "1 GiB",
	       "new worker: open + 100k checks", bench_median(v, RUNS), bench_median(o, RUNS), create_ms, label);
	registry_close(&reg, 1);
}

/* ---- Writers during a snapshot ------------------------------------------ */

/* What the writer process saw, per phase (0: before the snapshot, 1: during
 * it, 2: after it); the parent sets the phase. */
struct wait_board {
	_Atomic int phase;
	_Atomic int stop;
	uint64_t adds[3], worst_ns[3], over_1ms[3];
};

/* Capped adds (cap 4, each key four times, so that most relocate at 70%
 * load) one after another, each timed, until told to stop. */
static void snapshot_writer(const char *instance, const char *name, struct wait_board *b)
{
	shmf_t *f;
	if (shmf_open(instance, name, SHMF_RDWR, &f) < 0)
		_exit(1);
	for (uint64_t i = 0; !atomic_load(&b->stop); i++) {
		uint64_t key[2] = { (i / 4) * UINT64_C(0x9e3779b97f4a7c15), 77 };
		int p = atomic_load(&b->phase);
		double a = bench_now_ns();
		int r = shmf_add_capped(f, key, sizeof(key), 4);
		uint64_t ns = (uint64_t)(bench_now_ns() - a);
		if (r < 0) {
			fprintf(stderr, "capped add: %s\n", shmf_strerror(r));
			_exit(2);
		}
		b->adds[p]++;
		b->over_1ms[p] += ns > 1000000;
		if (ns > b->worst_ns[p])
			b->worst_ns[p] = ns;
	}
	shmf_close(f);
	_exit(0);
}

/*
 * A cuckoo filter of @p gib GiB (16-bit fingerprints) filled to 70%, a
 * writer process doing capped adds all the time, and the daemon's snapshot
 * of the filter (registry_snapshot, to a file beside the filter): the worst
 * wait of one capped add during the snapshot against the second before it.
 */
static int run_snapshot_wait(const char *root, double gib)
{
	char err[REGISTRY_ERR_MAX], path[600];
	struct registry reg;
	setenv("SHMF_RUNTIME_DIR", root, 1);
	if (registry_open(&reg, "bench", 0750, 0640, (gid_t)-1, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	/* 8-byte buckets of 4 slots, loaded 95% at capacity. */
	uint64_t capacity = (uint64_t)(gib * 1073741824.0 / 8 * 4 * 0.95);
	struct filter_spec spec = { .type = SHMF_TYPE_CUCKOO, .capacity = capacity, .fpr = 0.01, .mode = 0640 };
	snprintf(spec.name, sizeof(spec.name), "snapwait");
	shmf_t *f;
	if (registry_create(&reg, &spec, err, sizeof(err)) < 0 ||
	    shmf_open(reg.instance, "snapwait", SHMF_RDWR, &f) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	shmf_info_t info;
	shmf_info(f, &info);
	uint64_t n = info.buckets * info.bucket_size * 70 / 100;
	double t0 = bench_now_ns();
	enum { B = 1024 };
	uint64_t kb[B][2];
	shmf_key_t ks[B];
	for (uint64_t i = 0; i < n; i += B) {
		uint64_t m = n - i < B ? n - i : B;
		for (uint64_t j = 0; j < m; j++) {
			kb[j][0] = i + j;
			kb[j][1] = 1;
			ks[j] = (shmf_key_t){ kb[j], sizeof(kb[j]) };
		}
		if (shmf_add_many(f, ks, m, NULL) < 0) {
			fprintf(stderr, "fill failed\n");
			return 1;
		}
	}
	fprintf(stderr, "filled snapwait (%.2f GiB, %" PRIu64 " keys, load 0.70) in %.1f s\n",
		(double)info.bytes / 1073741824.0, n, (bench_now_ns() - t0) / 1e9);
	shmf_close(f);

	struct wait_board *b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED)
		return 1;
	memset(b, 0, sizeof(*b));
	pid_t pid = fork();
	if (pid == 0)
		snapshot_writer(reg.instance, "snapwait", b);
	usleep(1000000);
	snprintf(path, sizeof(path), "%s/snapwait.snap", root);
	atomic_store(&b->phase, 1);
	t0 = bench_now_ns();
	int rc = registry_snapshot(&reg, "snapwait", path, NULL, err, sizeof(err));
	double snap_ms = (bench_now_ns() - t0) / 1e6;
	atomic_store(&b->phase, 2);
	usleep(200000);
	atomic_store(&b->stop, 1);
	int st;
	waitpid(pid, &st, 0);
	if (rc < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "snapshot: %s (writer status %#x)\n", rc < 0 ? err : "ok", st);
		return 1;
	}
	unlink(path);
	char label[32];
	snprintf(label, sizeof(label), "%g GiB", gib);
	printf("%-8s %-34s %7.2f ms  (during a %.0f ms snapshot, %" PRIu64 " capped adds, %" PRIu64
	       " over 1 ms; the second before: worst %.2f ms, %" PRIu64 " adds)\n",
	       label, "cuckoo capped add, worst wait", (double)b->worst_ns[1] / 1e6, snap_ms, b->adds[1],
	       b->over_1ms[1], (double)b->worst_ns[0] / 1e6, b->adds[0]);
	munmap(b, sizeof(*b));
	registry_close(&reg, 1);
	return 0;
}

/* ---- Grown filters (--layers) ------------------------------------------ */

/* A growing Bloom filter @p name of @p capacity keys at 1%, expansion 2,
 * filled with the @p n keys of @p t->present, shmd's grow tick run every
 * capacity / 16 keys as the daemon's would (every 10 ms) keep the next
 * layer ahead of a steady load. @return its slot. */
static int grown(struct registry *reg, struct target *t, const char *name, uint64_t capacity, uint64_t n)
{
	char err[REGISTRY_ERR_MAX];
	struct filter_spec spec = {
		.type = SHMF_TYPE_BLOOM, .capacity = capacity, .fpr = 0.01, .mode = 0640, .expansion = 2
	};
	snprintf(spec.name, sizeof(spec.name), "%s", name);
	int slot = registry_create(reg, &spec, err, sizeof(err));
	if (slot < 0 || shmf_open(reg->instance, name, SHMF_RDWR, &t->rw) < 0) {
		fprintf(stderr, "%s: %s\n", name, err);
		exit(1);
	}
	uint64_t step = capacity / 16 ? capacity / 16 : 1;
	for (uint64_t i = 0; i < n; i++) {
		if (shmf_add(t->rw, t->present + i * KEY_LEN, KEY_LEN) < 0)
			exit(1);
		if (i % step == 0)
			grow_filter(reg, slot);
	}
	grow_filter(reg, slot);
	t->label = name;
	t->npresent = n;
	return slot;
}

/* @p n adds of new keys to @p t, one by one (no grow tick between them:
 * a grown filter's standby is there already); ns per add. */
static double new_adds(struct target *t, uint64_t salt, uint64_t n)
{
	char *keys = make_keys(n, salt);
	int fresh = 0;
	double t0 = bench_now_ns();
	for (uint64_t i = 0; i < n; i++)
		fresh += shmf_add(t->rw, keys + i * KEY_LEN, KEY_LEN);
	double dt = bench_now_ns() - t0;
	sink = fresh;
	free(keys);
	return dt / (double)n;
}

/* One row group of --layers: a growing filter of first layer @p base grown
 * to @p L layers (its current layer half full) beside one created with the
 * right capacity for the same keys, checks of @p absent (@p nprobe probes)
 * and adds timed on both, alternating run by run. */
static void compare_grown_layers(struct registry *reg, uint64_t base, unsigned L, char *absent, uint64_t nprobe)
{
	/* Layers 0..L-2 full, layer L-1 half: base (2^(L-1) - 1 + 2^(L-2)). */
	uint64_t n = L == 1 ? base / 2 : base * ((UINT64_C(1) << (L - 1)) - 1) + (base << (L - 1)) / 2;
	struct target g = { .nprobe = nprobe, .absent = absent }, one = { .nprobe = nprobe, .absent = absent };
	g.present = one.present = make_keys(n, 100 + L);
	char gname[32], oname[32];
	snprintf(gname, sizeof(gname), "grown%u", L);
	snprintf(oname, sizeof(oname), "one%u", L);
	/* The adds measured below: a 64th of the keys a run, so that the
	 * grown filter's current layer stays short of full and the other
	 * one, sized for the keys it ends with, has one layer throughout. */
	uint64_t nadd = n / 64 ? n / 64 : 1;
	int gs = grown(reg, &g, gname, base, n);
	grown(reg, &one, oname, n + RUNS * nadd, n);
	struct shmf_layer_status st[SHMF_LAYERS_MAX];
	int got = shmf_layers(g.rw, st, SHMF_LAYERS_MAX);
	int nl = 0;
	for (int i = 0; i < got; i++)
		nl += !st[i].standby || (st[i].state & SHMF_LAYER_OPENED);
	if (nl != (int)L || reg->ctl.slots[gs].nlive < L)
		fprintf(stderr, "%s: %d layers, want %u\n", gname, nl, L);
	double v[2][5][RUNS];
	for (int r = 0; r < RUNS; r++)
		for (int w = 0; w < 2; w++) {
			/* Alternating, run by run: the same conditions for both. */
			struct target *t = w ? &one : &g;
			v[w][0][r] = bench_check(t);
			v[w][1][r] = bench_check_many(t, 64);
			v[w][2][r] = new_adds(t, 1000 + (uint64_t)r * 10 + L, nadd);
			v[w][3][r] = bench_add_present(t);
		}
	const char *ops[] = { "shmf_check, loop", "shmf_check_many, 64", "shmf_add of new keys",
			      "shmf_add of present keys" };
	for (int o = 0; o < 4; o++) {
		double a = bench_median(v[0][o], RUNS), b = bench_median(v[1][o], RUNS);
		printf("%-7u %9" PRIu64 " %-24s %7.1f ns %7.1f ns %7.2fx\n", L, n, ops[o], a, b, a / b);
	}
	got = shmf_layers(one.rw, st, SHMF_LAYERS_MAX);
	if (got > 2 || (got == 2 && !st[1].standby))
		fprintf(stderr, "%s: more than one layer\n", oname);
	shmf_close(g.rw);
	shmf_close(one.rw);
	free(g.present);
	registry_drop(reg, gname, NULL, 0);
	registry_drop(reg, oname, NULL, 0);
}

/* What a standby costs a one-layer filter: made at half its capacity, it
 * is looked at (one load of its state word) by every check that the
 * current layer answers "absent", until an add opens it. Beside a fixed
 * filter (expansion 0, no standby ever) of the same keys (4 @p base).
 * @return 0, or 1 if the fixed filter could not be made. */
static int compare_standby(struct registry *reg, uint64_t base, char *absent, uint64_t nprobe)
{
	char err[REGISTRY_ERR_MAX];
	uint64_t n = base * 4;
	struct target sb = { .nprobe = nprobe, .absent = absent }, fx = { .nprobe = nprobe, .absent = absent };
	sb.present = fx.present = make_keys(n, 77);
	int ss = grown(reg, &sb, "standby", n + n / 8, n);
	struct filter_spec spec = { .type = SHMF_TYPE_BLOOM, .capacity = n + n / 8, .fpr = 0.005, .mode = 0640 };
	snprintf(spec.name, sizeof(spec.name), "fixed");
	if (registry_create(reg, &spec, err, sizeof(err)) < 0 || shmf_open("bench", "fixed", SHMF_RDWR, &fx.rw) < 0)
		return 1;
	fx.npresent = n;
	fill(&fx);
	if (!(reg->ctl.slots[ss].flags & SHMF_SLOT_STANDBY))
		fprintf(stderr, "standby: none made\n");
	double v[2][2][RUNS];
	for (int r = 0; r < RUNS; r++)
		for (int w = 0; w < 2; w++) {
			struct target *t = w ? &fx : &sb;
			v[w][0][r] = bench_check(t);
			v[w][1][r] = bench_check_many(t, 64);
		}
	printf("\none layer with its standby made beside a fixed filter (same shape, same keys, never a standby)\n");
	printf("%-7s %9s %-24s %10s %10s %8s\n", "layers", "keys", "operation (16-byte keys)", "standby", "fixed",
	       "ratio");
	const char *ops[] = { "shmf_check, loop", "shmf_check_many, 64" };
	for (int o = 0; o < 2; o++) {
		double a = bench_median(v[0][o], RUNS), b = bench_median(v[1][o], RUNS);
		printf("%-7u %9" PRIu64 " %-24s %7.1f ns %7.1f ns %7.2fx\n", 1, n, ops[o], a, b, a / b);
	}
	shmf_close(sb.rw);
	shmf_close(fx.rw);
	free(sb.present);
	return 0;
}

/* What making a layer costs shmd: its sizing (the first time a shape is
 * asked for; cached after) and its data file, allocated whole, for layers
 * 4 to 12 of a filter of 4,096 keys at 1%, expansion 2. @return 0, or 1
 * on an error. */
static int time_layer_making(struct registry *reg)
{
	char err[REGISTRY_ERR_MAX];
	printf("\nmaking a layer (1%% declared, expansion 2): sizing the first time, and the data file\n");
	printf("%-7s %11s %10s %12s %12s\n", "layer", "keys", "MiB", "sizing", "file");
	struct filter_spec made = {
		.name = "made", .type = SHMF_TYPE_BLOOM, .capacity = 4096, .fpr = 0.01, .mode = 0640, .expansion = 2
	};
	for (unsigned layer = 4; layer <= 12; layer += 2) {
		struct filter_spec ls;
		struct shmf_geometry g;
		double t0 = bench_now_ns();
		if (registry_layer_spec(&made, layer, &ls, &g) < 0)
			return 1;
		double sized = bench_now_ns() - t0;
		uint64_t gen = reg->ctl.hdr->last_generation + 1;
		reg->ctl.hdr->last_generation = gen;
		t0 = bench_now_ns();
		if (registry_data_create(reg, &ls, &g, gen, 1, 0, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		double file = bench_now_ns() - t0;
		struct live_ring one = { .n = 1, .gen = { gen } };
		registry_unlink_ring(reg, "made", &one);
		printf("%-7u %11" PRIu64 " %10.1f %9.2f ms %9.2f ms\n", layer, ls.capacity,
		       (double)g.data_bytes / 1048576.0, sized / 1e6, file / 1e6);
	}
	return 0;
}

static int run_layers(const char *root, uint64_t base)
{
	char err[REGISTRY_ERR_MAX];
	struct registry reg;
	setenv("SHMF_RUNTIME_DIR", root, 1);
	if (registry_open(&reg, "bench", 0750, 0640, (gid_t)-1, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	const uint64_t nprobe = 4000000;
	char *absent = make_keys(nprobe / 2 + 1, 2);
	printf("growing Bloom filters (1%% declared, expansion 2, first layer %" PRIu64
	       " keys, the current layer half full) beside one created with the right capacity; 4 KiB pages\n",
	       base);
	printf("%-7s %9s %-24s %10s %10s %8s\n", "layers", "keys", "operation (16-byte keys)", "grown", "one layer",
	       "ratio");
	const unsigned layers[] = { 1, 2, 4, 8 };
	for (size_t li = 0; li < sizeof(layers) / sizeof(layers[0]); li++)
		compare_grown_layers(&reg, base, layers[li], absent, nprobe);
	if (compare_standby(&reg, base, absent, nprobe) != 0)
		return 1;
	free(absent);
	if (time_layer_making(&reg) != 0)
		return 1;
	registry_close(&reg, 1);
	return 0;
}

/* ---- Filters imported from RedisBloom (--imported) --------------------- */

/* One link of a RedisBloom chain, as its bloom_init() sizes one
 * (NOROUND | FORCE64, RedisBloom's default) for @p entries at @p error,
 * and its bits. */
struct rb_link {
	uint64_t entries, bytes, bits, size;
	double error, bpe;
	uint32_t k;
	uint8_t *data;
};

static void rb_link_make(struct rb_link *l, uint64_t entries, double error)
{
	l->entries = entries;
	l->error = error;
	l->bpe = -(log(error) / 0.480453013918201);
	uint64_t bits = (uint64_t)((double)entries * l->bpe);
	l->bytes = (bits + 63) / 64 * 8;
	l->bits = l->bytes * 8;
	l->k = (uint32_t)ceil(0.693147180559945 * l->bpe);
	l->size = 0;
	l->data = calloc(1, l->bytes);
}

/* Add a key as RedisBloom does: bits (a + i b) mod 2^64 mod bits. */
static void rb_link_add(struct rb_link *l, const void *key, size_t len)
{
	uint64_t a = shmf_murmur64a(key, len, UINT64_C(0xc6a4a7935bd1e995)), b = shmf_murmur64a(key, len, a);
	for (uint32_t i = 0; i < l->k; i++) {
		uint64_t x = (a + i * b) % l->bits;
		l->data[x / 8] |= (uint8_t)(1u << (x % 8));
	}
	l->size++;
}

/* RedisBloom's BF.RESERVE name 0.01 CAPACITY (its first link at 0.5%),
 * grown to @p nlinks links (each twice the keys at half the rate), holding
 * @p t's keys as RedisBloom would place them, loaded into @p reg as its
 * header and chunks would be (redisbloom-dump.h). */
static int rb_import(struct registry *reg, struct target *t, const char *name, uint64_t capacity, unsigned nlinks)
{
	struct rb_link l[8];
	unsigned char hdr[RB_DUMP_BLOOM_HEAD + 8 * RB_DUMP_BLOOM_LINK], *q = hdr + RB_DUMP_BLOOM_HEAD;
	uint64_t at = 0, items = 0;
	for (unsigned i = 0; i < nlinks; i++) {
		rb_link_make(&l[i], capacity << i, 0.005 / (double)(1u << i));
		for (uint64_t j = 0; j < l[i].entries && at < t->npresent; j++)
			rb_link_add(&l[i], t->present + at++ * KEY_LEN, KEY_LEN);
		items += l[i].size;
		uint32_t n2 = 0;
		memcpy(q, &l[i].bytes, 8), memcpy(q + 8, &l[i].bits, 8), memcpy(q + 16, &l[i].size, 8);
		memcpy(q + 24, &l[i].error, 8), memcpy(q + 32, &l[i].bpe, 8), memcpy(q + 40, &l[i].k, 4);
		memcpy(q + 44, &l[i].entries, 8), memcpy(q + 52, &n2, 1);
		q += RB_DUMP_BLOOM_LINK;
	}
	uint32_t head[3] = { nlinks, 1u | 4u, 2 };
	memcpy(hdr, &items, 8);
	memcpy(hdr + 8, head, 12);
	char err[SNAPSHOT_ERR_MAX];
	struct rb_dump *d;
	struct registry_load ld;
	struct shmf_snap_header h;
	struct shmf_snap_section sec;
	if (rb_dump_parse(SHMF_TYPE_BLOOM, hdr, (size_t)(q - hdr), &d, err, sizeof(err)) < 0)
		goto bad;
	rb_dump_snapshot(d, name, (uint64_t)time(NULL), &h, &sec);
	void *table = malloc(d->table_bytes);
	rb_dump_table(d, table);
	int rc = registry_load_begin(reg, name, &h, &sec, REGISTRY_RESTORE, &ld, err, sizeof(err));
	if (rc == 0)
		rc = registry_load_fill(&ld, 0, 0, table, (size_t)d->table_bytes, err, sizeof(err));
	for (unsigned i = 0; i < nlinks; i++) {
		if (rc == 0)
			rc = registry_load_fill(&ld, 0, d->link[i].offset, l[i].data, l[i].bytes, err, sizeof(err));
		free(l[i].data);
	}
	free(table);
	free(d);
	if (rc < 0 || registry_load_commit(reg, &ld, REGISTRY_RESTORE, err, sizeof(err)) < 0 ||
	    shmf_open(reg->instance, name, SHMF_RDONLY, &t->rw) < 0)
		goto bad;
	t->label = name;
	return 0;
bad:
	fprintf(stderr, "%s: %s\n", name, err);
	return -1;
}

/* Checks of imports beside a filter of our own, @p n keys each. */
static int run_imported_n(struct registry *reg, uint64_t n)
{
	const uint64_t nprobe = 4000000;
	struct target own = { .nprobe = nprobe }, one = { .nprobe = nprobe }, four = { .nprobe = nprobe };
	char *present = make_keys(n, 31), *absent = make_keys(nprobe / 2 + 1, 32);
	struct target *ts[] = { &own, &one, &four };
	for (int i = 0; i < 3; i++)
		ts[i]->present = present, ts[i]->absent = absent, ts[i]->npresent = n;
	char err[REGISTRY_ERR_MAX];
	struct filter_spec spec = { .name = "own", .type = SHMF_TYPE_BLOOM, .capacity = n, .fpr = 0.01, .mode = 0640 };
	if (registry_create(reg, &spec, err, sizeof(err)) < 0 ||
	    shmf_open(reg->instance, "own", SHMF_RDWR, &own.rw) < 0)
		return -1;
	own.label = "own";
	fill(&own);
	/* A chain reserved with the right capacity: one link; one reserved
	 * for a fifteenth of the keys: four links (1 + 2 + 4 + 8). */
	if (rb_import(reg, &one, "rb1", n, 1) < 0 || rb_import(reg, &four, "rb4", n / 15 + 1, 4) < 0)
		return -1;
	double v[3][2][RUNS];
	for (int r = 0; r < RUNS; r++)
		for (int w = 0; w < 3; w++) {
			v[w][0][r] = bench_check(ts[w]);
			v[w][1][r] = bench_check_many(ts[w], 64);
		}
	shmf_info_t info[3];
	for (int w = 0; w < 3; w++)
		shmf_info(ts[w]->rw, &info[w]);
	const char *ops[] = { "shmf_check, loop", "shmf_check_many, 64" };
	for (int o = 0; o < 2; o++) {
		double a = bench_median(v[0][o], RUNS), b = bench_median(v[1][o], RUNS),
		       c = bench_median(v[2][o], RUNS);
		printf("%9" PRIu64 " %-20s %7.1f ns %7.1f ns %7.1f ns %7.2fx %7.2fx\n", n, ops[o], a, b, c, b / a,
		       c / a);
	}
	printf("%9s %-20s %7.1f MB %7.1f MB %7.1f MB\n", "", "data file", info[0].bytes / 1e6, info[1].bytes / 1e6,
	       info[2].bytes / 1e6);
	for (int w = 0; w < 3; w++) {
		shmf_close(ts[w]->rw);
		registry_drop(reg, ts[w]->label, NULL, 0);
	}
	free(present);
	free(absent);
	return 0;
}

static int run_imported(const char *root, int argc, char **argv)
{
	char err[REGISTRY_ERR_MAX];
	struct registry reg;
	setenv("SHMF_RUNTIME_DIR", root, 1);
	if (registry_open(&reg, "bench", 0750, 0640, (gid_t)-1, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	printf("checks of filters imported from RedisBloom (BF.RESERVE at 1%%: one link, or grown to four) beside "
	       "a filter of shmfilter's own at 1%%, the same keys; half the keys checked present, half absent; 4 KiB "
	       "pages\n");
	printf("%9s %-20s %10s %10s %10s %8s %8s\n", "keys", "operation", "own", "RB 1 link", "RB 4 links", "1 link",
	       "4 links");
	uint64_t counts[8] = { 1000000, 10000000 };
	int nc = 2;
	for (int i = 0; i < argc && i < 8; i++, nc = i)
		counts[i] = strtoull(argv[i], NULL, 10);
	int rc = 0;
	for (int i = 0; i < nc && rc == 0; i++)
		rc = run_imported_n(&reg, counts[i]);
	registry_close(&reg, 1);
	return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "--snapshot-wait")) {
		char root[] = "/dev/shm/shmf-bench-XXXXXX";
		if (mkdtemp(root) == NULL)
			return 1;
		int rc = run_snapshot_wait(root, argc >= 3 ? atof(argv[2]) : 1.0);
		rmdir(root);
		return rc;
	}
	if (argc == 3 && !strcmp(argv[1], "--attach-child"))
		return attach_child(argv[2]);
	if (argc >= 2 && !strcmp(argv[1], "--imported")) {
		char root[] = "/dev/shm/shmf-bench-XXXXXX";
		if (mkdtemp(root) == NULL)
			return 1;
		int rc = run_imported(root, argc - 2, argv + 2);
		rmdir(root);
		return rc;
	}
	if (argc >= 2 && !strcmp(argv[1], "--layers")) {
		char root[] = "/dev/shm/shmf-bench-XXXXXX";
		if (mkdtemp(root) == NULL)
			return 1;
		int rc = run_layers(root, argc >= 3 ? strtoull(argv[2], NULL, 10) : 65536);
		rmdir(root);
		return rc;
	}
	int quick = 0, attach = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "--demo"))
			quick = 2, attach = 0;
		else if (!strcmp(argv[i], "--no-attach"))
			attach = 0;
		else {
			fprintf(stderr,
				"usage: %s [--quick | --demo] [--no-attach] | --layers [BASE] | --imported [KEYS...] | "
				"--snapshot-wait [GiB]\n",
				argv[0]);
			return 2;
		}
	}
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return 1;
	self[n] = '\0';

	char root[] = "/dev/shm/shmf-bench-XXXXXX";
	if (mkdtemp(root) == NULL)
		return 1;
	uint64_t big = quick == 2 ? 0 : quick ? 10000000 : 100000000;
	/* 2 MiB pages: a tmpfs mounted huge=within_size, as shmd sets one up
	 * as root. 4 KiB pages: /dev/shm, as the kernel's default shmem policy
	 * (shmem_enabled) gives it. Every table is measured on both, side by
	 * side, when the mount is possible. */
	char hroot[] = "/tmp/shmf-bench-huge-XXXXXX";
	int huge = 0;
	if (quick != 2 || attach) {
		if (mkdtemp(hroot) == NULL)
			return 1;
		huge = mount("tmpfs", hroot, "tmpfs", 0, "mode=0755,huge=within_size") == 0;
		if (!huge)
			printf("2 MiB pages: cannot mount a tmpfs (%s); measured on 4 KiB pages only\n",
			       strerror(errno));
	}
	if (run_speed_in(root, "4 KiB pages (tmpfs /dev/shm)", big) < 0)
		return 1;
	if (huge && quick != 2)
		run_speed_in(hroot, "2 MiB pages (tmpfs huge=within_size)", big);
	if (attach) {
		printf("\n");
		run_attach(self, "tmpfs without huge pages (4 KiB)", root);
		if (huge)
			run_attach(self, "tmpfs huge=within_size (2 MiB)", hroot);
	}
	if (huge)
		umount2(hroot, MNT_DETACH);
	if (quick != 2 || attach)
		rmdir(hroot);
	rmdir(root);
	return 0;
}
