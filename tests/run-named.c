/* run-named.c - a test program's tests run by name (run-named.h). */
#include <stdio.h>
#include <string.h>

#include "tests/run-named.h"

int run_named_tests(const char *group, const char *which, const struct CMUnitTest *tests, size_t n,
		    const char *const *names, size_t nnames, CMFixtureFunction setup, CMFixtureFunction teardown)
{
	if (n != nnames) {
		fprintf(stderr, "%s: %zu tests but %zu names\n", group, n, nnames);
		return 2;
	}
	if (which == NULL || !strcmp(which, "all"))
		return _cmocka_run_group_tests(group, tests, n, setup, teardown);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(which, names[i]))
			return _cmocka_run_group_tests(names[i], &tests[i], 1, setup, teardown);
	fprintf(stderr, "%s: unknown test '%s'\n", group, which);
	return 2;
}
