/*
 * run-named.h - the main() of a test program whose tests are run by name,
 * shared by every test program (fixture_run() is it with argv[1]).
 */
#ifndef SHMF_TEST_RUN_NAMED_H
#define SHMF_TEST_RUN_NAMED_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/**
 * Run the test of @p tests whose name (same index of @p names) is
 * @p which, or every one when @p which is NULL or "all", in group
 * @p group with @p setup and @p teardown (NULL: none) around the group.
 * @return the cmocka result, or 2 for an unknown name or arrays of
 * different lengths.
 */
int run_named_tests(const char *group, const char *which, const struct CMUnitTest *tests, size_t n,
		    const char *const *names, size_t nnames, CMFixtureFunction setup, CMFixtureFunction teardown);

/** run_named_tests() with the arrays' lengths counted. */
#define RUN_NAMED(group, which, tests, names, setup, teardown)                          \
	run_named_tests(group, which, tests, sizeof(tests) / sizeof((tests)[0]), names, \
			sizeof(names) / sizeof((names)[0]), setup, teardown)

#endif
