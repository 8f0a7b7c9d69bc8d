/*
 * test-window.c - time-windowed filters: a key lives exactly as long as its
 * generation, was-new looks at every live generation, cuckoo counts and
 * caps add up over them, rotation by the clock, and 4 processes adding and
 * checking through 20 rotations never see a false negative for a key in a
 * live generation.
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
#include <time.h>
#include <unistd.h>

#include "tests/fixture.h"

static struct fixture fx;

static uint64_t present(shmf_t *f, unsigned family, uint64_t n)
{
	char key[32];
	uint64_t hits = 0;
	for (uint64_t i = 0; i < n; i++)
		hits += shmf_check(f, key, fixture_key(key, family, i)) == 1;
	return hits;
}

static uint64_t add_all(shmf_t *f, unsigned family, uint64_t n)
{
	char key[32];
	uint64_t fresh = 0;
	for (uint64_t i = 0; i < n; i++) {
		int r = shmf_add(f, key, fixture_key(key, family, i));
		assert_true(r >= 0);
		fresh += (uint64_t)r;
	}
	return fresh;
}

/* A key lives until its generation retires; was-new sees every live one. */
static void test_lifetime(void **state)
{
	(void)state;
	char err[REGISTRY_ERR_MAX];
	fixture_window(&fx, "w", SHMF_TYPE_BLOOM, 100000, 1e-6, 1, 3);
	shmf_t *f = fixture_open("w", SHMF_RDWR);
	assert_int_equal(add_all(f, 1, 200), 200); /* new */
	assert_int_equal(add_all(f, 1, 200), 0);   /* same generation */
	fixture_rotate(&fx, "w");
	assert_int_equal(present(f, 1, 200), 200);
	assert_int_equal(add_all(f, 1, 100), 0); /* held by an older live generation */
	fixture_rotate(&fx, "w");
	assert_int_equal(add_all(f, 2, 200), 200);
	assert_int_equal(present(f, 1, 200), 200); /* 3 live: family 1's still in */
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.live_generations, 3);
	assert_int_equal(info.window_generations, 3);
	assert_int_equal(info.window_secs, 1);
	fixture_rotate(&fx, "w");
	/* Family 1's first generation retired; its keys 0..99 were added
	 * again in the second (was-new 0, but the bits were set there). */
	assert_int_equal(present(f, 1, 100), 100);
	assert_int_equal(present(f, 1, 200) - 100, 0); /* 100..199 only in the retired one */
	assert_int_equal(present(f, 2, 200), 200);
	fixture_rotate(&fx, "w");
	assert_int_equal(present(f, 1, 200), 0); /* all its generations retired */
	assert_int_equal(present(f, 2, 200), 200);
	fixture_rotate(&fx, "w");
	assert_int_equal(present(f, 2, 200), 0);
	assert_int_equal(add_all(f, 1, 200), 200); /* new again */
	/* Rotating a plain filter is refused. */
	fixture_bloom(&fx, "plain", 1000, 0.01);
	assert_int_equal(registry_rotate(&fx.reg, "plain", err, sizeof(err)), SHMF_E_TYPE);
	assert_non_null(strstr(err, "has no time window"));
	/* The instance directory holds the 3 live generations' files, no more. */
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "test $(ls %s/%s | grep -c '^w\\.') -eq 3", fx.root, FIXTURE_INSTANCE);
	assert_int_equal(system(cmd), 0);
	shmf_close(f);
}

/* The clock: a 1-second window rotates about every second. */
static void test_clock(void **state)
{
	(void)state;
	fixture_window(&fx, "clock", SHMF_TYPE_BLOOM, 100000, 1e-6, 1, 3);
	shmf_t *f = fixture_open("clock", SHMF_RDWR);
	assert_int_equal(add_all(f, 3, 100), 100);
	time_t t0 = time(NULL);
	unsigned rotations = 0;
	uint64_t last = 0, first_absent = 0;
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	last = info.generation;
	while (time(NULL) < t0 + 6) {
		registry_rotate_due(&fx.reg, (uint64_t)time(NULL));
		assert_int_equal(shmf_info(f, &info), 0);
		if (info.generation != last) {
			rotations++;
			last = info.generation;
			uint64_t p = present(f, 3, 100);
			if (rotations < 3)
				assert_int_equal(p, 100);
			else if (first_absent == 0)
				first_absent = rotations, assert_int_equal(p, 0);
		}
		usleep(50000);
	}
	print_message("clock: %u rotations in 6 s; keys gone after rotation %llu\n", rotations,
		      (unsigned long long)first_absent);
	assert_true(rotations >= 4 && rotations <= 7);
	assert_int_equal(first_absent, 3);
	shmf_close(f);
}

/* Cuckoo: counts and caps add up over the live generations of filter
 * @p name at @p fpr (1e-9: 32-bit fingerprints in buckets of 2). */
static void cuckoo_caps(const char *name, double fpr)
{
	fixture_window(&fx, name, SHMF_TYPE_CUCKOO, 100000, fpr, 86400, 2);
	shmf_t *f = fixture_open(name, SHMF_RDWR);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.fingerprint_bits, fpr < 1e-6 ? 32 : 16);
	const char *dev = "device-42";
	size_t len = strlen(dev);
	assert_int_equal(shmf_add_capped(f, dev, len, 4), 0);
	assert_int_equal(shmf_add_capped(f, dev, len, 4), 1);
	fixture_rotate(&fx, name);
	assert_int_equal(shmf_count(f, dev, len), 2);
	assert_int_equal(shmf_add_capped(f, dev, len, 4), 2);
	assert_int_equal(shmf_add_capped(f, dev, len, 4), 3);
	assert_int_equal(shmf_add_capped(f, dev, len, 4), 4); /* at the cap: not added */
	assert_int_equal(shmf_count(f, dev, len), 4);
	assert_int_equal(shmf_add_unique(f, dev, len), 0);
	fixture_rotate(&fx, name); /* the first generation's 2 copies retire */
	assert_int_equal(shmf_count(f, dev, len), 2);
	assert_int_equal(shmf_add_capped(f, dev, len, 4), 2);
	/* Delete takes the newest copy first. */
	assert_int_equal(shmf_del(f, dev, len), 1);
	assert_int_equal(shmf_count(f, dev, len), 2);
	fixture_rotate(&fx, name);
	assert_int_equal(shmf_count(f, dev, len), 0); /* the newest held none... */
	fixture_rotate(&fx, name);
	assert_int_equal(shmf_count(f, dev, len), 0);
	assert_int_equal(shmf_add_unique(f, dev, len), 1);
	shmf_close(f);
}

static void test_cuckoo_caps(void **state)
{
	(void)state;
	cuckoo_caps("cap", 0.01);
	cuckoo_caps("cap32", 1e-9);
}

/* ---- 4 processes through 20 rotations ------------------------------------ */

#define WORKERS 4
struct board {
	_Atomic int stop;
	_Atomic uint64_t misses[WORKERS];
	_Atomic uint64_t checks[WORKERS];
	_Atomic uint64_t errors[WORKERS];
};

/* Add keys and keep checking the ones whose generation is still live. A
 * key's generation is at least the one the handle saw just before adding
 * it (a rotation in between only puts it in a newer one); a generation g
 * is live while newest - live_generations < g (generations of this filter
 * are consecutive: nothing else in the instance makes any). */
static void worker(struct board *b, unsigned id)
{
	shmf_t *f;
	if (shmf_open(FIXTURE_INSTANCE, "mp", SHMF_RDWR, &f) < 0)
		_exit(3);
	enum { MAXK = 1 << 20 };
	uint64_t *gen_of = malloc(MAXK * sizeof(*gen_of));
	char key[32];
	uint64_t n = 0, lo = 0;
	shmf_info_t info;
	while (!atomic_load(&b->stop) && n < MAXK) {
		if (shmf_info(f, &info) < 0)
			atomic_fetch_add(&b->errors[id], 1);
		gen_of[n] = info.generation;
		if (shmf_add(f, key, fixture_key(key, 50 + id, n)) < 0)
			atomic_fetch_add(&b->errors[id], 1);
		n++;
		/* Check a few earlier keys, then learn which are still live. */
		for (int j = 0; j < 4 && lo < n; j++) {
			uint64_t i = lo + (uint64_t)rand() % (n - lo);
			int r = shmf_check(f, key, fixture_key(key, 50 + id, i));
			if (shmf_info(f, &info) < 0 || r < 0) {
				atomic_fetch_add(&b->errors[id], 1);
				continue;
			}
			int live = info.generation < info.live_generations ||
				   gen_of[i] > info.generation - info.live_generations;
			if (live && r == 0)
				atomic_fetch_add(&b->misses[id], 1);
			atomic_fetch_add(&b->checks[id], 1);
		}
		while (lo < n && gen_of[lo] + info.live_generations <= info.generation)
			lo++;
	}
	free(gen_of);
	shmf_close(f);
	_exit(0);
}

static void run_rotations(int type)
{
	fixture_window(&fx, "mp", type, 100000, type == SHMF_TYPE_BLOOM ? 1e-4 : 0.001, 3600, 3);
	struct board *b = fixture_shared_map(sizeof(*b));
	pid_t pids[WORKERS];
	for (unsigned i = 0; i < WORKERS; i++)
		if ((pids[i] = fork()) == 0)
			worker(b, i);
	for (int r = 0; r < 20; r++) {
		usleep(50000);
		fixture_rotate(&fx, "mp");
	}
	usleep(50000);
	atomic_store(&b->stop, 1);
	uint64_t checks = 0;
	for (unsigned i = 0; i < WORKERS; i++) {
		fixture_reap(pids[i]);
		assert_int_equal(atomic_load(&b->errors[i]), 0);
		assert_int_equal(atomic_load(&b->misses[i]), 0);
		checks += atomic_load(&b->checks[i]);
	}
	print_message("%s: 20 rotations, %llu checks of live keys, no miss\n",
		      type == SHMF_TYPE_BLOOM ? "bloom" : "cuckoo", (unsigned long long)checks);
	assert_true(checks > 1000);
	munmap(b, sizeof(*b));
	registry_drop(&fx.reg, "mp", NULL, 0);
}

static void test_rotations_mp(void **state)
{
	(void)state;
	run_rotations(SHMF_TYPE_BLOOM);
	run_rotations(SHMF_TYPE_CUCKOO);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		fixture_unit_test(test_lifetime, fx),
		fixture_unit_test(test_clock, fx),
		fixture_unit_test(test_cuckoo_caps, fx),
		fixture_unit_test(test_rotations_mp, fx),
	};
	static const char *const names[] = { "lifetime", "clock", "cuckoo_caps", "rotations" };
	return fixture_run(argc, argv, tests, names);
}
