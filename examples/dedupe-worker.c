/*
 * dedupe-worker.c - a worker process using libshmf: for each key on the
 * command line, say whether it is seen for the first time (click
 * de-duplication). Run it from several processes at once: they share the
 * filter through shared memory, with no socket and no lock.
 *
 *   cc dedupe-worker.c $(pkg-config --cflags --libs shmf) -o dedupe-worker
 *   ./dedupe-worker [-i INSTANCE] [-f FILTER] KEY...
 */
#include <shmf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *instance = NULL, *filter = "default";
	int opt;
	while ((opt = getopt(argc, argv, "i:f:")) != -1) {
		if (opt == 'i')
			instance = optarg;
		else if (opt == 'f')
			filter = optarg;
		else
			return 2;
	}

	shmf_t *f;
	int rc = shmf_open(instance, filter, SHMF_RDWR, &f); /* once per process */
	if (rc < 0) {
		/* A permission error has more to say: which file, its group and mode. */
		const char *detail = shmf_error_detail();
		fprintf(stderr, "dedupe-worker: filter '%s': %s%s%s\n", filter, shmf_strerror(rc), *detail ? ": " : "",
			detail);
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		rc = shmf_add(f, argv[i], strlen(argv[i])); /* 1: first time, 0: seen before */
		if (rc < 0) {
			fprintf(stderr, "dedupe-worker: %s: %s\n", argv[i], shmf_strerror(rc));
			shmf_close(f);
			return 2;
		}
		printf("%-24s %s\n", argv[i], rc ? "first time" : "seen before");
	}

	shmf_info_t info;
	if (shmf_info(f, &info) == 0)
		printf("filter '%s': %llu keys in %llu bytes, k=%u, estimated FPR now %.2g (target %.2g at %llu keys)\n",
		       info.name, (unsigned long long)info.items, (unsigned long long)info.bytes, info.k,
		       info.fpr_estimate, info.fpr_target, (unsigned long long)info.capacity);
	shmf_close(f);
	return 0;
}
