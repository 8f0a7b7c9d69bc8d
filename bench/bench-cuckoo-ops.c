/*
 * bench-cuckoo-ops.c - the cuckoo hot path alone, on one filter of the
 * default bucket size: the first fill from 0% to 70% of the capacity,
 * adds of new keys from 70% to 80% (deleted again after each run), then,
 * filled to 95%, the check loop (half the probes present) and batch checks
 * of 1024. Each figure is the median of 9 runs.
 *
 *   bench-cuckoo-ops [FPR] [CAPACITY]
 *
 * FPR 0.01 (16-bit fingerprints) and CAPACITY 1,000,000 by default; 0.05
 * gives 8-bit ones. A few seconds, so that runs of two builds can alternate
 * many times on a noisy machine, and small enough to run under callgrind
 * (valgrind --tool=callgrind), whose instruction counts do not depend on
 * the machine's load. It uses only the registry and the public calls, so
 * the same file builds against another commit's libraries to compare.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/clock.h"
#include "libclient/hash.h"
#include "shmd/store/registry.h"

#define KEY_LEN 16
#define RUNS    9

/* @p n random 16-byte keys of family @p salt, in one array. */
static char *make_keys(uint64_t n, uint64_t salt)
{
	char *k = malloc(n * KEY_LEN);
	if (k == NULL) {
		perror("malloc");
		exit(1);
	}
	uint64_t *w = (uint64_t *)k;
	for (uint64_t i = 0; i < 2 * n; i++)
		w[i] = shmf_mix64(i * 2 + salt * UINT64_C(0x9e3779b97f4a7c15) + 1);
	return k;
}

int main(int argc, char **argv)
{
	double fpr = argc > 1 ? strtod(argv[1], NULL) : 0.01;
	uint64_t capacity = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
	if (!(fpr > 0 && fpr < 1) || capacity < 1000) {
		fprintf(stderr, "usage: %s [FPR] [CAPACITY]\n", argv[0]);
		return 2;
	}
	char dir[64], err[REGISTRY_ERR_MAX];
	snprintf(dir, sizeof(dir), "/dev/shm/shmf-bench-ops.%d", (int)getpid());
	if (mkdir(dir, 0700) < 0) {
		perror(dir);
		return 1;
	}
	setenv("SHMF_RUNTIME_DIR", dir, 1);
	struct registry reg;
	struct filter_spec spec = { .type = SHMF_TYPE_CUCKOO, .capacity = capacity, .fpr = fpr, .mode = 0640 };
	snprintf(spec.name, sizeof(spec.name), "ops");
	shmf_t *f;
	if (registry_open(&reg, "bench", 0750, 0640, (gid_t)-1, err, sizeof(err)) < 0 ||
	    registry_create(&reg, &spec, err, sizeof(err)) < 0 || shmf_open("bench", "ops", SHMF_RDWR, &f) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	shmf_info_t info;
	shmf_info(f, &info);
	uint64_t at70 = capacity * 70 / 100, step = capacity / 10, at95 = capacity * 95 / 100;
	char *keys = make_keys(at95, 1), *absent = make_keys(1000000, 2);
	double t0 = bench_now_ns();
	for (uint64_t i = 0; i < at70; i++)
		shmf_add(f, keys + i * KEY_LEN, KEY_LEN);
	double fill = (bench_now_ns() - t0) / (double)at70;

	double add[RUNS], check[RUNS], many[RUNS];
	for (int r = 0; r < RUNS; r++) {
		char *fresh = make_keys(step, 100 + (uint64_t)r);
		t0 = bench_now_ns();
		for (uint64_t i = 0; i < step; i++)
			if (shmf_add(f, fresh + i * KEY_LEN, KEY_LEN) != 1) {
				fprintf(stderr, "an add failed\n");
				return 1;
			}
		add[r] = (bench_now_ns() - t0) / (double)step;
		for (uint64_t i = 0; i < step; i++)
			shmf_del(f, fresh + i * KEY_LEN, KEY_LEN);
		free(fresh);
	}
	for (uint64_t i = at70; i < at95; i++)
		shmf_add(f, keys + i * KEY_LEN, KEY_LEN);
	const uint64_t probes = 2000000;
	volatile int sink = 0;
	for (int r = 0; r < RUNS; r++) {
		t0 = bench_now_ns();
		for (uint64_t i = 0; i < probes; i++) {
			const char *k = (i & 1) ? absent + (i >> 1) % 1000000 * KEY_LEN
						: keys + (i >> 1) % at95 * KEY_LEN;
			sink += shmf_check(f, k, KEY_LEN);
		}
		check[r] = (bench_now_ns() - t0) / (double)probes;
		shmf_key_t ks[1024];
		uint8_t out[1024];
		double spent = 0;
		for (uint64_t i = 0; i < probes; i += 1024) {
			for (uint64_t j = 0; j < 1024; j++) {
				uint64_t x = i + j;
				ks[j] = (shmf_key_t){ (x & 1) ? absent + (x >> 1) % 1000000 * KEY_LEN
							      : keys + (x >> 1) % at95 * KEY_LEN,
						      KEY_LEN };
			}
			t0 = bench_now_ns();
			sink += shmf_check_many(f, ks, 1024, out);
			spent += bench_now_ns() - t0;
		}
		many[r] = spent / (double)probes;
	}
	printf("cuckoo, %llu keys, fpr %g, %u-bit fingerprints: fill 0-70%% %.1f ns, add 70-80%% %.1f ns, "
	       "check %.1f ns, check_many 1024 %.1f ns/key\n",
	       (unsigned long long)capacity, fpr, info.fingerprint_bits, fill, bench_median(add, RUNS),
	       bench_median(check, RUNS), bench_median(many, RUNS));
	shmf_close(f);
	free(keys);
	free(absent);
	registry_close(&reg, 1);
	rmdir(dir);
	return sink == -1;
}
