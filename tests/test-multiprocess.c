/*
 * test-multiprocess.c - real processes share one filter: 4 forked adders
 * insert disjoint sets of 250,000 keys while 2 forked checkers keep
 * checking keys the adders have already reported added. No check may miss
 * such a key; afterwards every key is found from every process, and the
 * sum of "was new" results equals the filter's items count. Run with an
 * error rate as argument (default 0.01), and the lines a key that rate
 * gives (1, 2 or 3: the Bloom layouts of bloom.h), for every layout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/fixture.h"

#define ADDERS    4
#define CHECKERS  2
#define PER_ADDER 250000

/* Shared between the processes through an anonymous shared mapping. */
struct board {
	_Atomic uint64_t progress[ADDERS]; /* adder i has returned from keys [0, progress) */
	_Atomic uint64_t fresh[ADDERS];    /* adds that reported new */
	_Atomic uint64_t checked[CHECKERS];
	_Atomic uint64_t misses[CHECKERS + ADDERS];
	_Atomic int go;
	_Atomic int adders_done;
};

static struct fixture fx;
static double rate = 0.01;      /* the filter's error rate */
static uint32_t want_lines = 1; /* the lines a key it must have */

static shmf_t *open_or_die(int flags)
{
	shmf_t *f;
	int r = shmf_open(FIXTURE_INSTANCE, "shared", flags, &f);
	if (r < 0) {
		fprintf(stderr, "child %d: shmf_open: %s\n", getpid(), shmf_strerror(r));
		_exit(3);
	}
	return f;
}

static void adder(struct board *b, unsigned id)
{
	char key[17];
	shmf_t *f = open_or_die(SHMF_RDWR);
	while (!atomic_load(&b->go))
		;
	uint64_t fresh = 0;
	for (uint64_t i = 0; i < PER_ADDER; i++) {
		int r = shmf_add(f, key, fixture_key(key, 10 + id, i));
		if (r < 0)
			_exit(4);
		fresh += (uint64_t)r;
		/* release: the add has returned before the checkers may test it. */
		atomic_store_explicit(&b->progress[id], i + 1, memory_order_release);
	}
	atomic_store(&b->fresh[id], fresh);
	atomic_fetch_add(&b->adders_done, 1);
	shmf_close(f);
	_exit(0);
}

static void checker(struct board *b, unsigned id)
{
	char key[17];
	shmf_t *f = open_or_die(SHMF_RDONLY);
	uint64_t n = 0, misses = 0, x = id * 7919 + 1;
	while (!atomic_load(&b->go))
		;
	while (atomic_load(&b->adders_done) < ADDERS) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		unsigned a = (unsigned)(x >> 60) % ADDERS;
		uint64_t done = atomic_load_explicit(&b->progress[a], memory_order_acquire);
		if (done == 0)
			continue;
		uint64_t i = (x >> 16) % done;
		if (shmf_check(f, key, fixture_key(key, 10 + a, i)) != 1)
			misses++;
		n++;
	}
	atomic_store(&b->checked[id], n);
	atomic_store(&b->misses[id], misses);
	shmf_close(f);
	_exit(0);
}

/* After the adds: every key, checked from a fresh process. */
static void verifier(struct board *b, unsigned slot, int batch)
{
	char key[17];
	shmf_t *f = open_or_die(SHMF_RDONLY);
	uint64_t misses = 0;
	if (batch) {
		static char keys[1000][17];
		shmf_key_t k[1000];
		uint8_t out[1000];
		for (unsigned a = 0; a < ADDERS; a++)
			for (uint64_t i = 0; i < PER_ADDER; i += 1000) {
				for (unsigned j = 0; j < 1000; j++) {
					k[j].ptr = keys[j];
					k[j].len = fixture_key(keys[j], 10 + a, i + j);
				}
				misses += 1000 - (uint64_t)shmf_check_many(f, k, 1000, out);
			}
	} else {
		for (unsigned a = 0; a < ADDERS; a++)
			for (uint64_t i = 0; i < PER_ADDER; i++)
				misses += shmf_check(f, key, fixture_key(key, 10 + a, i)) != 1;
	}
	atomic_store(&b->misses[slot], misses);
	shmf_close(f);
	_exit(0);
}

static void wait_all(pid_t *pids, int n)
{
	for (int i = 0; i < n; i++)
		fixture_reap(pids[i]);
}

static void test_concurrent_adders_and_checkers(void **state)
{
	(void)state;
	struct board *b = fixture_shared_map(sizeof(*b));
	fixture_bloom(&fx, "shared", ADDERS * PER_ADDER, rate);

	pid_t pids[ADDERS + CHECKERS];
	for (unsigned i = 0; i < ADDERS + CHECKERS; i++) {
		pid_t p = fork();
		assert_true(p >= 0);
		if (p == 0) {
			if (i < ADDERS)
				adder(b, i);
			checker(b, i - ADDERS);
		}
		pids[i] = p;
	}
	atomic_store(&b->go, 1);
	wait_all(pids, ADDERS + CHECKERS);

	uint64_t fresh = 0, checked = 0;
	for (unsigned i = 0; i < ADDERS; i++) {
		assert_int_equal(atomic_load(&b->progress[i]), PER_ADDER);
		fresh += atomic_load(&b->fresh[i]);
	}
	for (unsigned i = 0; i < CHECKERS; i++) {
		assert_int_equal(atomic_load(&b->misses[i]), 0);
		checked += atomic_load(&b->checked[i]);
	}
	printf("checkers made %llu checks during the adds, none missed\n", (unsigned long long)checked);
	assert_true(checked > 1000);

	/* Every key from every process: four processes, two batch, two single. */
	pid_t v[ADDERS];
	for (unsigned i = 0; i < ADDERS; i++) {
		pid_t p = fork();
		assert_true(p >= 0);
		if (p == 0)
			verifier(b, CHECKERS + i, i % 2);
		v[i] = p;
	}
	wait_all(v, ADDERS);
	for (unsigned i = 0; i < ADDERS; i++)
		assert_int_equal(atomic_load(&b->misses[CHECKERS + i]), 0);

	shmf_t *f;
	shmf_info_t info;
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, "shared", SHMF_RDONLY, &f), 0);
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.lines, want_lines);
	printf("%u lines a key, %u bits a line, %.1f bits a key\n", info.lines, info.k / info.lines,
	       (double)info.bits / (ADDERS * PER_ADDER));
	assert_int_equal(info.items, fresh);
	assert_true(fresh > (uint64_t)ADDERS * PER_ADDER * 98 / 100);
	shmf_close(f);
	munmap(b, sizeof(*b));
}

int main(int argc, char **argv)
{
	if (argc == 3) {
		rate = strtod(argv[1], NULL);
		want_lines = (uint32_t)strtoul(argv[2], NULL, 10);
	}
	const struct CMUnitTest tests[] = {
		fixture_unit_test(test_concurrent_adders_and_checkers, fx),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
