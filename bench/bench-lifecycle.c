/*
 * bench-lifecycle - what the daemon's lifecycle work costs, measured on a
 * private registry (no daemon process):
 *
 *   snapshot of a 1 GiB Bloom filter to a tmpfs file (the page cache: the
 *     fsync finds nothing to write) and restore of it (validated, copied into
 *     a new generation, published), in GB/s;
 *   the time from publishing a swap until each of 4 checking processes
 *     uses the new generation (each notes when its call first sees it);
 *   the offline build rate of `shmctl build` from a key file (run by
 *     bench-lifecycle.sh, not here).
 *
 *   bench-lifecycle [--quick]    (--quick: 64 MiB filter, 5 swaps)
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/clock.h"
#include "shmd/store/registry.h"
#include "common/snapshot.h"

#define RUNS     5
#define CHECKERS 4

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, const char *err)
{
	fprintf(stderr, "bench-lifecycle: %s: %s\n", what, err);
	exit(1);
}

static int replace(struct registry *r, const char *name, const char *path, int how)
{
	char err[SNAPSHOT_ERR_MAX];
	struct snap_file sf;
	if (snapshot_open(&sf, path, err, sizeof(err)) < 0)
		die("open", err);
	int rc = registry_replace(r, name, &sf, how, err, sizeof(err));
	snapshot_close(&sf);
	if (rc < 0)
		die("replace", err);
	return rc;
}

/* Shared with the checkers. */
struct board {
	_Atomic int stop;
	_Atomic uint64_t want_gen;          /* the generation being published */
	_Atomic uint64_t seen_ns[CHECKERS]; /* when checker i's call first used it */
	_Atomic int ready[CHECKERS];
};

static void checker(struct board *b, const char *instance, unsigned id)
{
	shmf_t *f;
	if (shmf_open(instance, "sw", SHMF_RDONLY, &f) < 0)
		_exit(3);
	shmf_info_t info;
	uint64_t key = id, last = 0;
	atomic_store(&b->ready[id], 1);
	while (!atomic_load(&b->stop)) {
		/* One check, then the handle's generation (shmf_info reads the
		 * view the check just used: no remap of its own). */
		key = key * 6364136223846793005u + 1;
		(void)shmf_check(f, &key, sizeof(key));
		uint64_t t = now_ns();
		if (shmf_info(f, &info) == 0 && info.generation != last) {
			last = info.generation;
			if (last == atomic_load(&b->want_gen))
				atomic_store(&b->seen_ns[id], t);
		}
	}
	shmf_close(f);
	_exit(0);
}

/* 1. Snapshot and restore of a big Bloom filter (866M keys at 1%: 1 GiB;
 * 54M with @p quick) in runtime directory @p root: each timed RUNS times,
 * the medians printed. */
static void bench_snapshot_restore(struct registry *reg, const char *root, int quick)
{
	char err[REGISTRY_ERR_MAX], path[256];
	uint64_t cap = quick ? 54000000 : 866000000;
	struct filter_spec spec = { .name = "big", .type = SHMF_TYPE_BLOOM, .capacity = cap, .fpr = 0.01, .mode = 0640 };
	if (registry_create(reg, &spec, err, sizeof(err)) < 0)
		die("create", err);
	shmf_t *f;
	if (shmf_open("lc", "big", SHMF_RDWR, &f) < 0)
		die("open", "big");
	shmf_info_t info;
	shmf_info(f, &info);
	/* Touch every page: a filter in use, not holes. */
	for (uint64_t i = 0; i < info.bytes / 256; i++) {
		uint64_t k = i;
		shmf_add(f, &k, sizeof(k));
	}
	snprintf(path, sizeof(path), "%s/big.snap", root);
	double snap[RUNS], rest[RUNS];
	for (int r = 0; r < RUNS; r++) {
		uint64_t t0 = now_ns();
		if (registry_snapshot(reg, "big", path, NULL, err, sizeof(err)) < 0)
			die("snapshot", err);
		uint64_t t1 = now_ns();
		replace(reg, "big", path, REGISTRY_SWAP);
		uint64_t t2 = now_ns();
		snap[r] = (double)info.bytes / (double)(t1 - t0); /* bytes per ns = GB/s */
		rest[r] = (double)info.bytes / (double)(t2 - t1);
	}
	shmf_close(f);
	printf("%-44s %8.2f GB/s  (%.0f MiB, tmpfs file, median of %d)\n", "snapshot of a Bloom filter",
	       bench_median(snap, RUNS), (double)info.bytes / 1048576.0, RUNS);
	printf("%-44s %8.2f GB/s  (validated, new generation, published)\n", "restore (swap) of that snapshot",
	       bench_median(rest, RUNS));
	registry_drop(reg, "big", NULL, 0);
	unlink(path);
}

/* 2. Publish-to-use latency of swaps of filter sw from snapshot @p path
 * under 1 checking process (the machine has a core to spare for it) and
 * under CHECKERS (more than cores: a checker that is not running sees the
 * swap when it runs next); the medians printed. Leaves @p path. */
static void bench_swap_latency(struct registry *reg, const char *path, int quick)
{
	char err[REGISTRY_ERR_MAX];
	struct filter_spec small = {
		.name = "sw", .type = SHMF_TYPE_BLOOM, .capacity = 1000000, .fpr = 0.01, .mode = 0640
	};
	if (registry_create(reg, &small, err, sizeof(err)) < 0)
		die("create", err);
	if (registry_snapshot(reg, "sw", path, NULL, err, sizeof(err)) < 0)
		die("snapshot", err);
	struct board *b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	const unsigned counts[2] = { 1, CHECKERS };
	for (int c = 0; c < 2; c++) {
		unsigned nck = counts[c];
		memset(b, 0, sizeof(*b));
		pid_t pids[CHECKERS];
		for (unsigned i = 0; i < nck; i++)
			if ((pids[i] = fork()) == 0)
				checker(b, "lc", i);
		for (unsigned i = 0; i < nck; i++)
			while (!atomic_load(&b->ready[i]))
				usleep(1000);
		int nswaps = quick ? 5 : 41;
		double worst[64], all[64 * CHECKERS];
		int nall = 0;
		for (int s = 0; s < nswaps; s++) {
			for (unsigned i = 0; i < nck; i++)
				atomic_store(&b->seen_ns[i], 0);
			atomic_store(&b->want_gen, reg->ctl.hdr->last_generation + 1);
			replace(reg, "sw", path, REGISTRY_SWAP);
			uint64_t pub = reg->last_publish_ns;
			double w = 0;
			for (unsigned i = 0; i < nck; i++) {
				uint64_t seen;
				while ((seen = atomic_load(&b->seen_ns[i])) == 0)
					usleep(50);
				double us = seen > pub ? (double)(seen - pub) / 1000.0 : 0.0;
				all[nall++] = us;
				w = us > w ? us : w;
			}
			worst[s] = w;
			usleep(5000);
		}
		atomic_store(&b->stop, 1);
		for (unsigned i = 0; i < nck; i++)
			waitpid(pids[i], NULL, 0);
		char what[64];
		snprintf(what, sizeof(what), "swap: publish until %u client%s use%s it", nck, nck > 1 ? "s" : "",
			 nck > 1 ? "" : "s");
		printf("%-44s %8.1f us  (median of %d swaps of the slowest client; median client %.1f us)\n", what,
		       bench_median(worst, nswaps), nswaps, bench_median(all, nall));
	}
	munmap(b, sizeof(*b));
}

int main(int argc, char **argv)
{
	int quick = argc > 1 && !strcmp(argv[1], "--quick");
	char root[] = "/dev/shm/shmf-bench-lc-XXXXXX", err[REGISTRY_ERR_MAX], path[256];
	if (mkdtemp(root) == NULL)
		return 1;
	setenv("SHMF_RUNTIME_DIR", root, 1);
	struct registry reg;
	if (registry_open(&reg, "lc", 0750, 0640, (gid_t)-1, err, sizeof(err)) < 0)
		die("registry", err);
	bench_snapshot_restore(&reg, root, quick);
	snprintf(path, sizeof(path), "%s/sw.snap", root);
	bench_swap_latency(&reg, path, quick);
	registry_close(&reg, 1);
	unlink(path); /* sw.snap: the directory goes only empty */
	rmdir(root);
	return 0;
}
