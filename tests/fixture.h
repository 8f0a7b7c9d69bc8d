/*
 * fixture.h - a private runtime directory and registry for one test program.
 *
 * fixture_setup() makes a fresh directory under /dev/shm (a tmpfs), points
 * SHMF_RUNTIME_DIR at it, and opens the registry of instance "test";
 * fixture_teardown() closes and removes everything.
 */
#ifndef SHMF_TEST_FIXTURE_H
#define SHMF_TEST_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "registry.h"

#define FIXTURE_INSTANCE "test"

struct fixture {
	char root[256];
	struct registry reg;
};

/** Create the runtime dir and registry; aborts the test program on failure. */
void fixture_setup(struct fixture *fx);

/** Close the registry and remove the runtime dir. */
void fixture_teardown(struct fixture *fx);

/** Create a Bloom filter; aborts on failure. Returns the slot. */
int fixture_bloom(struct fixture *fx, const char *name, uint64_t capacity, double fpr);

/** Create a filter of SHMF_TYPE_* @p type; aborts on failure. Returns the slot. */
int fixture_filter(struct fixture *fx, const char *name, int type, uint64_t capacity, double fpr);

/** Write key number i of a key family into buf (16 bytes, as the bench uses). */
size_t fixture_key(char *buf, unsigned family, uint64_t i);

/** Open filter @p name of the fixture's instance; fails the test on error. */
shmf_t *fixture_open(const char *name, int flags);

/**
 * The main() of a test program whose tests are run by name: argv[1] names
 * one of @p names (the test at the same index of @p tests runs alone), or
 * is "all" or absent (every test runs). @return the cmocka result, or 2
 * for an unknown name.
 */
int fixture_run(int argc, char **argv, const struct CMUnitTest *tests, const char *const *names, size_t n,
		CMFixtureFunction setup, CMFixtureFunction teardown);

/** Path of a file in the instance directory. */
void fixture_path(const struct fixture *fx, const char *file, char *buf, size_t size);

#endif
