/*
 * replay-main.c - the main() of a fuzz harness in an ordinary build: runs
 * LLVMFuzzerTestOneInput() once on each file named, or on each file of
 * each directory named (in name order), and says how many it replayed. A
 * harness that finds a property broken aborts, which fails the test.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"

static int replay_file(const char *path)
{
	FILE *fp = fopen(path, "rb");
	if (fp == NULL) {
		perror(path);
		return -1;
	}
	size_t cap = 1 << 16, len = 0;
	unsigned char *buf = malloc(cap);
	for (size_t n; buf != NULL && (n = fread(buf + len, 1, cap - len, fp)) > 0;) {
		len += n;
		if (len == cap) {
			unsigned char *b = realloc(buf, cap *= 2);
			if (b == NULL)
				free(buf);
			buf = b;
		}
	}
	fclose(fp);
	if (buf == NULL) {
		fprintf(stderr, "%s: out of memory\n", path);
		return -1;
	}
	/* A copy of exactly the input's size, so that ASan sees any read past it. */
	unsigned char *in = malloc(len ? len : 1);
	memcpy(in, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(in, len);
	free(in);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long n = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (replay_file(argv[i]) < 0)
				return 1;
			n++;
			continue;
		}
		struct dirent **v;
		int k = scandir(argv[i], &v, NULL, alphasort);
		if (k < 0) {
			perror(argv[i]);
			return 1;
		}
		for (int j = 0; j < k; j++) {
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], v[j]->d_name);
			if (v[j]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
				if (replay_file(path) < 0)
					return 1;
				n++;
			}
			free(v[j]);
		}
		free(v);
	}
	printf("replayed %lu inputs\n", n);
	return n == 0; /* an empty corpus is a mistake */
}
