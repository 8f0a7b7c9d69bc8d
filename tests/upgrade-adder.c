/*
 * upgrade-adder.c - the worker of tests/test-packages-install.sh, compiled
 * there against the installed shmf.h and libshmf (pkg-config shmf):
 *
 *   upgrade-adder add FILTER PREFIX COUNT-FILE STOP-FILE
 *       adds PREFIX0, PREFIX1, ... one every 100 us until STOP-FILE exists,
 *       keeping in COUNT-FILE how many adds returned (rewritten every 100
 *       adds and at the end): keys 0 to that count - 1 are in the filter.
 *   upgrade-adder check FILTER PREFIX N
 *       prints how many of PREFIX0 ... PREFIX(N-1) the filter holds.
 *
 * The filter is opened once, as a worker does, and kept through the
 * package upgrade and the restart of shmd. Exit 2 on any library error.
 */
#include <shmf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void write_count(const char *path, unsigned long n)
{
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (f == NULL || fprintf(f, "%lu\n", n) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
		perror(path);
		exit(2);
	}
}

static int add_until_stopped(shmf_t *f, const char *prefix, const char *count_file, const char *stop_file)
{
	unsigned long n = 0;
	char key[256];
	while (access(stop_file, F_OK) != 0) {
		int len = snprintf(key, sizeof(key), "%s%lu", prefix, n);
		int rc = shmf_add(f, key, (size_t)len);
		if (rc < 0) {
			fprintf(stderr, "upgrade-adder: add %s: %s\n", key, shmf_strerror(rc));
			write_count(count_file, n);
			return 2;
		}
		n++;
		if (n % 100 == 0)
			write_count(count_file, n);
		usleep(100);
	}
	write_count(count_file, n);
	return 0;
}

static int count_present(shmf_t *f, const char *prefix, unsigned long n)
{
	unsigned long present = 0;
	char key[256];
	for (unsigned long i = 0; i < n; i++) {
		int len = snprintf(key, sizeof(key), "%s%lu", prefix, i);
		int rc = shmf_check(f, key, (size_t)len);
		if (rc < 0) {
			fprintf(stderr, "upgrade-adder: check %s: %s\n", key, shmf_strerror(rc));
			return 2;
		}
		present += (unsigned long)rc;
	}
	printf("%lu\n", present);
	return 0;
}

int main(int argc, char **argv)
{
	int adding = argc == 6 && strcmp(argv[1], "add") == 0;
	if (!adding && !(argc == 5 && strcmp(argv[1], "check") == 0)) {
		fprintf(stderr,
			"usage: upgrade-adder add FILTER PREFIX COUNT-FILE STOP-FILE | check FILTER PREFIX N\n");
		return 2;
	}
	shmf_t *f;
	int rc = shmf_open(NULL, argv[2], adding ? SHMF_RDWR : SHMF_RDONLY, &f);
	if (rc < 0) {
		fprintf(stderr, "upgrade-adder: filter '%s': %s\n", argv[2], shmf_strerror(rc));
		return 2;
	}
	rc = adding ? add_until_stopped(f, argv[3], argv[4], argv[5])
		    : count_present(f, argv[3], strtoul(argv[4], NULL, 10));
	shmf_close(f);
	return rc;
}
