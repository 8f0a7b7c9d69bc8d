/*
 * test-public-api.c - a user's program: includes only <shmf.h>, links only
 * libshmf.so, and works against a real shmd started with no configuration.
 * It also proves the library exports the API and nothing else.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <shmf.h>

static const char *shmd_path;
static char root[128];
static pid_t daemon_pid;

static int start_daemon(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/dev/shm/shmf-api-XXXXXX");
	if (mkdtemp(root) == NULL)
		return -1;
	setenv("SHMF_RUNTIME_DIR", root, 1);
	daemon_pid = fork();
	if (daemon_pid == 0) {
		execl(shmd_path, "shmd", "-f", (char *)NULL);
		_exit(127);
	}
	/* The daemon is ready when its default filter opens. */
	for (int i = 0; i < 1000; i++) {
		shmf_t *f;
		if (shmf_open(NULL, "default", SHMF_RDONLY, &f) == 0) {
			shmf_close(f);
			return 0;
		}
		usleep(10000);
	}
	fprintf(stderr, "shmd did not create its default filter within 10 s\n");
	return -1;
}

static int stop_daemon(void **state)
{
	(void)state;
	char cmd[256];
	int st = 0;
	if (daemon_pid > 0) {
		kill(daemon_pid, SIGTERM);
		waitpid(daemon_pid, &st, 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static void test_default_filter_round_trip(void **state)
{
	(void)state;
	shmf_t *rw, *ro;
	shmf_info_t info;
	assert_int_equal(shmf_open(NULL, "default", SHMF_RDWR, &rw), 0);
	assert_int_equal(shmf_open("default", "default", SHMF_RDONLY, &ro), 0);
	assert_int_equal(shmf_info(ro, &info), 0);
	assert_string_equal(info.name, "default");
	assert_int_equal(info.type, SHMF_TYPE_BLOOM);
	assert_int_equal(info.capacity, 1000000);
	assert_true(info.fpr_target == 0.01);
	assert_true(info.bits >= 9600000);
	assert_true(info.k >= 1 && info.k <= 32);

	assert_int_equal(shmf_check(ro, "user:42", 7), 0);
	assert_int_equal(shmf_add(rw, "user:42", 7), 1);
	assert_int_equal(shmf_add(rw, "user:42", 7), 0);
	assert_int_equal(shmf_check(ro, "user:42", 7), 1);
	assert_int_equal(shmf_add(ro, "user:43", 7), SHMF_E_READONLY);

	shmf_key_t keys[3] = { { "a", 1 }, { "b", 1 }, { "user:42", 7 } };
	uint8_t out[3];
	assert_int_equal(shmf_add_many(rw, keys, 2, out), 2);
	assert_int_equal(shmf_check_many(ro, keys, 3, out), 3);
	assert_int_equal(shmf_info(ro, &info), 0);
	assert_int_equal(info.items, 3);
	assert_true(info.fill_ratio > 0.0 && info.fill_ratio < 0.001);
	assert_non_null(strstr(shmf_strerror(SHMF_E_READONLY), "read"));
	shmf_close(rw);
	shmf_close(ro);
}

static void test_only_the_api_is_exported(void **state)
{
	(void)state;
	/* Public symbols resolve; internal ones of the same library do not. */
	assert_non_null(dlsym(RTLD_DEFAULT, "shmf_open"));
	assert_non_null(dlsym(RTLD_DEFAULT, "shmf_check_many"));
	assert_non_null(dlsym(RTLD_DEFAULT, "shmf_error_detail"));
	assert_null(dlsym(RTLD_DEFAULT, "shmf_detail_access"));
	assert_null(dlsym(RTLD_DEFAULT, "shmf_bloom_size"));
	assert_null(dlsym(RTLD_DEFAULT, "shmf_data_map_open"));
	assert_null(dlsym(RTLD_DEFAULT, "shmf_layout_fingerprint"));
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH-TO-SHMD\n", argv[0]);
		return 2;
	}
	shmd_path = argv[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_filter_round_trip),
		cmocka_unit_test(test_only_the_api_is_exported),
	};
	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
