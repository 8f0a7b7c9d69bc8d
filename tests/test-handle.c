/*
 * test-handle.c - what a handle promises: names and flags are checked,
 * a read-only handle never writes, a dropped filter is reported, a new
 * generation is picked up on the next call, and threads sharing a handle
 * survive remaps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/fixture.h"

static struct fixture fx;

/* Each test starts with Bloom filter "main". */
static int setup(void **state)
{
	fixture_up(state);
	fixture_bloom(&fx, "main", 100000, 0.01);
	return 0;
}

static void test_bad_names_and_flags(void **state)
{
	(void)state;
	shmf_t *f = NULL;
	char longname[80];
	memset(longname, 'a', 64);
	longname[64] = '\0';
	const char *bad[] = { "", longname, "a/b", "..", ".", "../test", ".hidden", "sp ace", "t\xc3\xa9" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(shmf_open(FIXTURE_INSTANCE, bad[i], SHMF_RDONLY, &f), SHMF_E_NAME);
		assert_int_equal(shmf_open(bad[i], "main", SHMF_RDONLY, &f), SHMF_E_NAME);
	}
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, NULL, SHMF_RDONLY, &f), SHMF_E_NAME);
	/* 63 characters is the longest legal name: not found, not invalid. */
	longname[63] = '\0';
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, longname, SHMF_RDONLY, &f), SHMF_E_NOTFOUND);
	longname[63] = 'a';
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, "nosuch", SHMF_RDONLY, &f), SHMF_E_NOTFOUND);
	assert_int_equal(shmf_open("nosuchinstance", "main", SHMF_RDONLY, &f), SHMF_E_NOTFOUND);
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, "main", 0x10, &f), SHMF_E_INVAL);
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, "main", SHMF_RDONLY, NULL), SHMF_E_INVAL);
	assert_null(f);
	/* Registry rejects the same names, and bad sizes, creating nothing. */
	struct filter_spec spec = { .type = SHMF_TYPE_BLOOM, .capacity = 1000, .fpr = 0.01, .mode = 0640 };
	int before_slots[SHMF_SLOTS];
	int before = registry_list(&fx.reg, before_slots);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (strlen(bad[i]) >= sizeof(spec.name))
			continue; /* cannot even be expressed in a filter_spec */
		snprintf(spec.name, sizeof(spec.name), "%s", bad[i]);
		assert_int_equal(registry_create(&fx.reg, &spec, NULL, 0), SHMF_E_NAME);
	}
	snprintf(spec.name, sizeof(spec.name), "ok");
	char err[REGISTRY_ERR_MAX];
	spec.capacity = 0;
	assert_int_equal(registry_create(&fx.reg, &spec, err, sizeof(err)), SHMF_E_INVAL);
	assert_non_null(strstr(err, "capacity"));
	spec.capacity = UINT64_C(1000000000000000);
	assert_int_equal(registry_create(&fx.reg, &spec, err, sizeof(err)), SHMF_E_TOOBIG);
	assert_non_null(strstr(err, "memory"));
	spec.capacity = 1000;
	const double fprs[] = { 0.0, -0.1, 1.0, 1.5 };
	for (unsigned i = 0; i < 4; i++) {
		spec.fpr = fprs[i];
		assert_int_equal(registry_create(&fx.reg, &spec, err, sizeof(err)), SHMF_E_INVAL);
		assert_non_null(strstr(err, "error rate"));
	}
	spec.fpr = 0.01;
	spec.mode = 0666;
	assert_int_equal(registry_create(&fx.reg, &spec, err, sizeof(err)), SHMF_E_INVAL);
	snprintf(spec.name, sizeof(spec.name), "main");
	spec.mode = 0640;
	assert_int_equal(registry_create(&fx.reg, &spec, err, sizeof(err)), SHMF_E_EXISTS);
	int after_slots[SHMF_SLOTS];
	assert_int_equal(registry_list(&fx.reg, after_slots), before);
}

static void test_readonly_never_writes(void **state)
{
	(void)state;
	shmf_t *ro, *rw;
	uint8_t out[2];
	shmf_key_t keys[2] = { { "k1", 2 }, { "k2", 2 } };
	shmf_info_t before, after;
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, "main", SHMF_RDONLY, &ro), 0);
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, "main", SHMF_RDWR, &rw), 0);
	assert_int_equal(shmf_info(ro, &before), 0);
	assert_int_equal(shmf_add(ro, "k1", 2), SHMF_E_READONLY);
	assert_int_equal(shmf_add_many(ro, keys, 2, out), SHMF_E_READONLY);
	assert_int_equal(shmf_check(ro, "k1", 2), 0);
	assert_int_equal(shmf_info(ro, &after), 0);
	assert_int_equal(after.items, before.items);
	/* The same key through a read-write handle is new, and then visible
	 * through the read-only one. */
	assert_int_equal(shmf_add(rw, "k1", 2), 1);
	assert_int_equal(shmf_add(rw, "k1", 2), 0);
	assert_int_equal(shmf_check(ro, "k1", 2), 1);
	assert_int_equal(shmf_check(ro, NULL, 3), SHMF_E_INVAL);
	assert_int_equal(shmf_add(rw, NULL, 3), SHMF_E_INVAL);
	/* The empty key is a key like any other. */
	assert_int_equal(shmf_add(rw, NULL, 0), 1);
	assert_int_equal(shmf_check(ro, "", 0), 1);
	shmf_close(ro);
	shmf_close(rw);
}

static void test_drop_and_new_generation(void **state)
{
	(void)state;
	shmf_t *f;
	shmf_info_t info;
	char err[REGISTRY_ERR_MAX];
	fixture_bloom(&fx, "gen", 1000, 0.01);
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, "gen", SHMF_RDWR, &f), 0);
	assert_int_equal(shmf_add(f, "old", 3), 1);
	assert_int_equal(shmf_info(f, &info), 0);
	uint64_t gen1 = info.generation;

	assert_int_equal(registry_drop(&fx.reg, "gen", err, sizeof(err)), 0);
	assert_int_equal(shmf_check(f, "old", 3), SHMF_E_DROPPED);
	assert_int_equal(shmf_add(f, "x", 1), SHMF_E_DROPPED);
	assert_int_equal(shmf_info(f, &info), SHMF_E_DROPPED);
	assert_int_equal(registry_drop(&fx.reg, "gen", err, sizeof(err)), SHMF_E_NOTFOUND);

	/* A new generation under the same name: the handle follows it on its
	 * next call, and sees the new (empty) filter. */
	fixture_bloom(&fx, "gen", 1000, 0.01);
	assert_int_equal(shmf_check(f, "old", 3), 0);
	assert_int_equal(shmf_info(f, &info), 0);
	assert_true(info.generation > gen1);
	assert_int_equal(info.items, 0);
	shmf_close(f);
}

struct reader_arg {
	shmf_t *f;
	atomic_int *stop;
	long calls;
	int bad;
};

static void *reader(void *p)
{
	struct reader_arg *a = p;
	char key[17];
	while (!atomic_load(a->stop)) {
		int r = shmf_check(a->f, key, fixture_key(key, 9, (uint64_t)a->calls));
		if (r != 0 && r != 1 && r != SHMF_E_DROPPED && r != SHMF_E_NOTFOUND)
			a->bad++;
		a->calls++;
	}
	return NULL;
}

static void test_threads_survive_remaps(void **state)
{
	(void)state;
	shmf_t *f;
	atomic_int stop = 0;
	pthread_t t[4];
	struct reader_arg args[4];
	fixture_bloom(&fx, "swapme", 50000, 0.01);
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, "swapme", SHMF_RDONLY, &f), 0);
	for (int i = 0; i < 4; i++) {
		args[i] = (struct reader_arg){ .f = f, .stop = &stop };
		assert_int_equal(pthread_create(&t[i], NULL, reader, &args[i]), 0);
	}
	/* Replace the filter 50 times while the threads read; each old mapping
	 * is unmapped under them only after a grace period. */
	for (int i = 0; i < 50; i++) {
		assert_int_equal(registry_drop(&fx.reg, "swapme", NULL, 0), 0);
		fixture_bloom(&fx, "swapme", 50000, 0.01);
		usleep(2000);
	}
	atomic_store(&stop, 1);
	long calls = 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(args[i].bad, 0);
		calls += args[i].calls;
	}
	assert_true(calls > 1000);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	shmf_close(f);
}

static void test_strerror(void **state)
{
	(void)state;
	const int codes[] = { SHMF_E_NOTFOUND, SHMF_E_FORMAT,   SHMF_E_VERSION, SHMF_E_LAYOUT,
			      SHMF_E_OWNER,    SHMF_E_READONLY, SHMF_E_TYPE,    SHMF_E_FULL,
			      SHMF_E_INVAL,    SHMF_E_NAME,     SHMF_E_EXISTS,  SHMF_E_RUNDIR,
			      SHMF_E_DROPPED,  SHMF_E_TOOBIG,   SHMF_E_PROTO,   SHMF_E_BUSY };
	const unsigned n = sizeof(codes) / sizeof(codes[0]);
	for (unsigned i = 0; i < n; i++) {
		assert_true(codes[i] >= SHMF_E_FIRST && codes[i] <= SHMF_E_LAST);
		const char *s = shmf_strerror(codes[i]);
		assert_non_null(s);
		assert_string_not_equal(s, "unknown error");
		for (unsigned j = 0; j < i; j++)
			assert_string_not_equal(s, shmf_strerror(codes[j]));
	}
	assert_string_equal(shmf_strerror(-ENOENT), strerror(ENOENT));
	assert_string_equal(shmf_strerror(-5098), "unknown error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate_setup_teardown(test_bad_names_and_flags, setup, fixture_down, &fx),
		cmocka_unit_test_prestate_setup_teardown(test_readonly_never_writes, setup, fixture_down, &fx),
		cmocka_unit_test_prestate_setup_teardown(test_drop_and_new_generation, setup, fixture_down, &fx),
		cmocka_unit_test_prestate_setup_teardown(test_threads_survive_remaps, setup, fixture_down, &fx),
		cmocka_unit_test_prestate_setup_teardown(test_strerror, setup, fixture_down, &fx),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
