/*
 * bench-named-check.c - what one shmf_check costs from C on a filter shmd
 * made, with the keys another bench checks through a binding, so that the
 * two are measured side by side in one run (bindings/lua/bench-resty.sh).
 *
 *   bench-named-check FILTER PRESENT ABSENT [ROUNDS]
 *
 * Checks "key:1" .. "key:PRESENT" then "miss:1" .. "miss:ABSENT", the keys
 * formatted before the clock starts, ROUNDS times (default 5), and prints
 * "c check: median N ns, best N ns" (per key) and the hits. Only the
 * public API: <shmf.h> and libshmf.so. Nothing is asserted.
 */
#include <shmf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/clock.h"

#define MAX_ROUNDS 50

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: bench-named-check FILTER PRESENT ABSENT [ROUNDS]\n");
		return 2;
	}
	size_t present = strtoull(argv[2], NULL, 10), absent = strtoull(argv[3], NULL, 10);
	int rounds = argc > 4 ? atoi(argv[4]) : 5;
	size_t n = present + absent;
	if (n == 0 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "bench-named-check: need at least one key and 1 to %d rounds\n", MAX_ROUNDS);
		return 2;
	}
	shmf_t *f;
	int rc = shmf_open(NULL, argv[1], SHMF_RDONLY, &f);
	if (rc < 0) {
		fprintf(stderr, "bench-named-check: %s: %s\n", argv[1], shmf_strerror(rc));
		return 1;
	}
	/* 24 bytes a key: "miss:" and 10 digits fit. */
	char *text = malloc(n * 24);
	shmf_key_t *keys = malloc(n * sizeof(*keys));
	if (text == NULL || keys == NULL)
		return 1;
	for (size_t i = 0; i < n; i++) {
		char *k = text + i * 24;
		int len = i < present ? snprintf(k, 24, "key:%zu", i + 1)
				      : snprintf(k, 24, "miss:%zu", i - present + 1);
		keys[i] = (shmf_key_t){ k, (size_t)len };
	}
	double per_key[MAX_ROUNDS];
	size_t hits = 0;
	for (int r = 0; r < rounds; r++) {
		hits = 0;
		double t0 = bench_now_ns();
		for (size_t i = 0; i < n; i++)
			hits += shmf_check(f, keys[i].ptr, keys[i].len) == 1;
		per_key[r] = (bench_now_ns() - t0) / (double)n;
	}
	double median = bench_median(per_key, rounds); /* sorts per_key: [0] is the best */
	printf("c check: median %.1f ns, best %.1f ns (%d rounds of %zu keys; %zu hits)\n", median, per_key[0], rounds,
	       n, hits);
	shmf_close(f);
	free(keys);
	free(text);
	return 0;
}
