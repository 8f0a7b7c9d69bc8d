/*
 * fixture.h - what the unit tests share: a private runtime directory and
 * registry for each test, and the few things every test program does
 * around it (filters, keys, snapshot files, forked processes, running a
 * test by name).
 *
 * fixture_setup() makes a fresh directory under /dev/shm (a tmpfs), points
 * SHMF_RUNTIME_DIR at it, and opens the registry of instance "test";
 * fixture_teardown() closes and removes everything. A test program keeps
 * one `static struct fixture fx` and lists its tests as
 * fixture_unit_test(test_x, fx), so that each test starts in a fresh one.
 */
#ifndef SHMF_TEST_FIXTURE_H
#define SHMF_TEST_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sys/types.h>

#include "shmd/store/registry.h"

#define FIXTURE_INSTANCE "test"

/* ---- The fixture ------------------------------------------------------- */

struct fixture {
	char root[256];  /* the runtime directory (SHMF_RUNTIME_DIR) */
	char files[272]; /* root/files, for the files a test writes (snapshots) */
	struct registry reg;
};

/**
 * Create the runtime dir, its files directory and the registry; aborts the
 * test program on failure.
 */
void fixture_setup(struct fixture *fx);

/** Close the registry and remove the runtime dir with all it holds. */
void fixture_teardown(struct fixture *fx);

/**
 * cmocka set-up: fixture_setup() on the struct fixture that *state points
 * at (the test's initial state, as fixture_unit_test() passes it). A test
 * program whose tests need more (a filter, a path) writes a set-up that
 * calls it first, and lists its tests with
 * cmocka_unit_test_prestate_setup_teardown(test_x, setup, fixture_down, &fx).
 * @return 0.
 */
int fixture_up(void **state);

/** cmocka tear-down: fixture_teardown() on the struct fixture *state points at. @return 0. */
int fixture_down(void **state);

/** A cmocka test run in a fresh fixture @p fx: fixture_up() before it, fixture_down() after. */
#define fixture_unit_test(test, fx) cmocka_unit_test_prestate_setup_teardown(test, fixture_up, fixture_down, &(fx))

/** Path of a file in the instance directory. */
void fixture_path(const struct fixture *fx, const char *file, char *buf, size_t size);

/**
 * Path of the data file of filter @p name's newest generation, as the
 * fixture's registry has it; fails the test when the registry has no
 * filter @p name.
 */
void fixture_data_path(struct fixture *fx, const char *name, char *buf, size_t size);

/* ---- Filters in it ----------------------------------------------------- */

/** Create a Bloom filter; aborts on failure. Returns the slot. */
int fixture_bloom(struct fixture *fx, const char *name, uint64_t capacity, double fpr);

/** Create a filter of SHMF_TYPE_* @p type; aborts on failure. Returns the slot. */
int fixture_filter(struct fixture *fx, const char *name, int type, uint64_t capacity, double fpr);

/**
 * Create a growing filter (@p expansion >= 1: each new layer that many
 * times the last) or, with @p nonscaling, a NONSCALING Bloom filter;
 * aborts on failure. Returns the slot. shmd's grow tick is the test's to
 * call (grow_filter()).
 */
int fixture_growing(struct fixture *fx, const char *name, int type, uint64_t capacity, double fpr, uint32_t expansion,
		    int nonscaling);

/**
 * Create a time-windowed filter: @p gens generations of @p secs seconds
 * each (fixture_rotate() turns them at once); aborts on failure. Returns
 * the slot.
 */
int fixture_window(struct fixture *fx, const char *name, int type, uint64_t capacity, double fpr, uint64_t secs,
		   uint32_t gens);

/** Create a cuckoo filter of buckets of @p bucket_size fingerprints (0: the default, 4); fails the test on error.
 * Returns the slot. */
int fixture_cuckoo(struct fixture *fx, const char *name, uint64_t capacity, double fpr, uint32_t bucket_size);

/** The same, growing by @p expansion (0: fixed); fails the test on error. Returns the slot. */
int fixture_cuckoo_growing(struct fixture *fx, const char *name, uint64_t capacity, double fpr, uint32_t bucket_size,
			   uint32_t expansion);

/** Rotate windowed filter @p name (a new newest generation); fails the test with the registry's message. */
void fixture_rotate(struct fixture *fx, const char *name);

/** Open filter @p name of the fixture's instance; fails the test on error. */
shmf_t *fixture_open(const char *name, int flags);

/**
 * Path of the data file of filter @p name's current generation in
 * instance @p instance, as a client finds it (shmf_open, shmf_info): for
 * the tests whose filters a running shmd made. Fails the test when the
 * filter cannot be opened.
 */
void fixture_client_data_path(const char *instance, const char *name, char *buf, size_t size);

/* ---- Keys and random numbers ------------------------------------------- */

/** Write key number i of a key family into buf (16 bytes, as the bench uses). */
size_t fixture_key(char *buf, unsigned family, uint64_t i);

/**
 * The next number of the SplitMix64 sequence whose state *state holds: the
 * same seed gives the same numbers, so a test that prints its seed can be
 * replayed.
 */
uint64_t fixture_random(uint64_t *state);

/* ---- Snapshot files ---------------------------------------------------- */

/**
 * Swap (@p how REGISTRY_SWAP) or restore (REGISTRY_RESTORE) filter @p name
 * of the fixture's registry from the snapshot file @p path, as SHMF.SWAP and
 * SHMF.RESTORE do. @return what registry_replace() returns, or
 * snapshot_open()'s error when the file is refused; the message in @p err.
 */
int fixture_replace(struct fixture *fx, const char *name, const char *path, int how, char *err, size_t errlen);

/**
 * Read the snapshot file @p path whole (every section, checksums included);
 * fails the test with the reader's message when it is not. @return the
 * items of its newest section.
 */
uint64_t fixture_snapshot_items(const char *path);

/* ---- Processes the test forks ------------------------------------------ */

/**
 * A zeroed mapping of @p len bytes that the processes the test forks share
 * (the board they report their progress on); fails the test if mmap fails.
 * Release it with munmap().
 */
void *fixture_shared_map(size_t len);

/** Wait for child process @p pid; fails the test, saying how it ended, unless it exited with status 0. */
void fixture_reap(pid_t pid);

/* ---- Running the tests ------------------------------------------------- */

/**
 * The main() of a test program whose tests are run by name: argv[1] names
 * one of @p names (the test at the same index of the array @p tests runs
 * alone), or is "all" or absent (every test runs). Both are arrays, so
 * that their lengths are counted here. @return the cmocka result, or 2
 * for an unknown name or arrays of different lengths.
 */
#define fixture_run(argc, argv, tests, names)                                           \
	fixture_run_tests(argc, argv, tests, sizeof(tests) / sizeof((tests)[0]), names, \
			  sizeof(names) / sizeof((names)[0]))

/** fixture_run() with the lengths given: @p n tests, @p nnames names. */
int fixture_run_tests(int argc, char **argv, const struct CMUnitTest *tests, size_t n, const char *const *names,
		      size_t nnames);

/** 1 in the long mode (SHMF_LONG set, and not to 0: run-tests.sh --long), else 0. */
int fixture_long_mode(void);

#endif
