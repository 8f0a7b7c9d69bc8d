/*
 * test-threads.c - threads sharing handles while the filter under them
 * changes: 4 threads add and check through one handle (and 2 more through
 * handles of their own) while the main thread rotates a time window 12
 * times, for a Bloom and a cuckoo filter (where every other add is a
 * capped one, so that the threads contend for the relocation lock), then
 * while it swaps a filter in 30 times. No key whose add returned is ever
 * missing from the handle that added it, no call fails, and the old
 * mappings are unmapped only after every thread has left them.
 *
 * This is the threaded code of the project (shmd is single-threaded):
 * the ThreadSanitizer build (run-tests.sh --long, or the tsan step of
 * run-tests.sh) runs it with the other tests of suite "threads".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fixture.h"
#include "common/snapshot.h"

static struct fixture fx;

#define SHARED 4
#define OWN    2

struct worker {
	pthread_t t;
	shmf_t *f; /* shared, or NULL: open one of its own */
	const char *name;
	unsigned family;
	int capped;     /* cuckoo: every other add a capped one */
	int check_only; /* swaps: the keys are the file's, not this thread's */
	atomic_int *stop;
	uint64_t adds, checks;
	int bad; /* first unexpected answer */
	char what[128];
};

static void *work(void *p)
{
	struct worker *w = p;
	shmf_t *f = w->f;
	if (f == NULL && shmf_open(FIXTURE_INSTANCE, w->name, w->check_only ? SHMF_RDONLY : SHMF_RDWR, &f) < 0) {
		w->bad = 1;
		snprintf(w->what, sizeof(w->what), "open");
		return NULL;
	}
	char key[32];
	for (uint64_t i = 0; !atomic_load(w->stop); i++) {
		if (w->check_only) {
			int r = shmf_check(f, key, fixture_key(key, 0x40, i % 2000));
			if (r != 1 && !w->bad) {
				w->bad = 1;
				snprintf(w->what, sizeof(w->what), "check of a key every swapped-in file holds: %d", r);
			}
			w->checks++;
			continue;
		}
		size_t len = fixture_key(key, w->family, i);
		int r = w->capped && i % 2 ? shmf_add_capped(f, key, len, 1) : shmf_add(f, key, len);
		if (r < 0) {
			if (!w->bad) {
				w->bad = 1;
				snprintf(w->what, sizeof(w->what), "add %llu: %s", (unsigned long long)i,
					 shmf_strerror(r));
			}
			break;
		}
		w->adds++;
		/* Every key this thread added so far, a few of them each time. */
		uint64_t j = (i * 7919) % (i + 1);
		r = shmf_check(f, key, fixture_key(key, w->family, j));
		w->checks++;
		if (r != 1 && !w->bad) {
			w->bad = 1;
			snprintf(w->what, sizeof(w->what), "key %llu, added before, reads %d", (unsigned long long)j,
				 r);
		}
	}
	if (w->f == NULL)
		shmf_close(f);
	return NULL;
}

static void run_workers(const char *name, int type, int check_only, void (*change)(const char *name, int round),
			int rounds)
{
	atomic_int stop = 0;
	struct worker w[SHARED + OWN];
	shmf_t *shared = fixture_open(name, check_only ? SHMF_RDONLY : SHMF_RDWR);
	for (unsigned i = 0; i < SHARED + OWN; i++) {
		w[i] = (struct worker){ .f = i < SHARED ? shared : NULL,
					.name = name,
					.family = 0x50 + i,
					.capped = type == SHMF_TYPE_CUCKOO,
					.check_only = check_only,
					.stop = &stop };
		assert_int_equal(pthread_create(&w[i].t, NULL, work, &w[i]), 0);
	}
	for (int r = 0; r < rounds; r++) {
		usleep(20000);
		change(name, r);
	}
	usleep(20000);
	atomic_store(&stop, 1);
	uint64_t adds = 0, checks = 0;
	for (unsigned i = 0; i < SHARED + OWN; i++) {
		pthread_join(w[i].t, NULL);
		if (w[i].bad)
			fail_msg("thread %u on %s: %s", i, name, w[i].what);
		adds += w[i].adds;
		checks += w[i].checks;
	}
	/* After the last change, through the shared handle: every key added. */
	if (!check_only) {
		char key[32];
		for (unsigned i = 0; i < SHARED + OWN; i++)
			for (uint64_t k = 0; k < w[i].adds; k++)
				if (shmf_check(shared, key, fixture_key(key, w[i].family, k)) != 1)
					fail_msg("%s: key %llu of thread %u missing at the end", name,
						 (unsigned long long)k, i);
	}
	shmf_info_t info;
	assert_int_equal(shmf_info(shared, &info), 0);
	shmf_close(shared);
	print_message("%s: %d %s under %u threads (%u sharing a handle): %llu adds, %llu checks, no miss, no error\n",
		      name, rounds, check_only ? "swaps" : "rotations", SHARED + OWN, SHARED, (unsigned long long)adds,
		      (unsigned long long)checks);
}

static void rotate(const char *name, int round)
{
	(void)round;
	fixture_rotate(&fx, name);
}

static void window(const char *name, int type, uint64_t capacity)
{
	fixture_window(&fx, name, type, capacity, 0.01, 3600, SHMF_WINDOW_MAX);
}

static void test_rotations(void **state)
{
	(void)state;
	/* 12 rotations of a 16-generation ring: no generation retires, so
	 * every key added stays. */
	window("tb", SHMF_TYPE_BLOOM, 4000000);
	run_workers("tb", SHMF_TYPE_BLOOM, 0, rotate, 12);
	/* Cuckoo: capped adds take the relocation lock, through the shared
	 * handle's one descriptor and its mutex. */
	window("tc", SHMF_TYPE_CUCKOO, 2000000);
	run_workers("tc", SHMF_TYPE_CUCKOO, 0, rotate, 12);
}

static char files[2][512];

static void swap(const char *name, int round)
{
	char err[SNAPSHOT_ERR_MAX];
	if (fixture_replace(&fx, name, files[round % 2], REGISTRY_SWAP, err, sizeof(err)) < 0)
		fail_msg("%s", err);
}

static void test_swaps(void **state)
{
	(void)state;
	char err[SNAPSHOT_ERR_MAX], key[32];
	for (int i = 0; i < 2; i++) {
		char name[8];
		snprintf(name, sizeof(name), "src%d", i);
		fixture_filter(&fx, name, i ? SHMF_TYPE_CUCKOO : SHMF_TYPE_BLOOM, 100000, 0.01);
		shmf_t *f = fixture_open(name, SHMF_RDWR);
		for (uint64_t k = 0; k < 2000; k++)
			assert_true(shmf_add(f, key, fixture_key(key, 0x40, k)) >= 0);
		shmf_close(f);
		snprintf(files[i], sizeof(files[i]), "%s/%s.snap", fx.root, name);
		assert_int_equal(registry_snapshot(&fx.reg, name, files[i], NULL, err, sizeof(err)), 0);
	}
	/* A Bloom and a cuckoo filter in turn under the same name: the
	 * handles follow across types. */
	fixture_bloom(&fx, "ts", 100000, 0.01);
	swap("ts", 0);
	run_workers("ts", SHMF_TYPE_BLOOM, 1, swap, 30);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		fixture_unit_test(test_rotations, fx),
		fixture_unit_test(test_swaps, fx),
	};
	static const char *const names[] = { "rotations", "swaps" };
	return fixture_run(argc, argv, tests, names);
}
