/*
 * fuzz.h - what every fuzz harness of tests/fuzz/ provides: the libFuzzer
 * entry point. With -Dfuzz=true (clang) each harness links libFuzzer's
 * main; in every build it also links replay-main.c, which feeds it the
 * files of its corpus and of its past crashes as an ordinary test.
 *
 * A harness checks what must hold for any input and calls fuzz_fail()
 * (abort: libFuzzer saves the input as a crash) when it does not.
 */
#ifndef SHMF_FUZZ_H
#define SHMF_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define fuzz_fail(...)                                                \
	do {                                                          \
		fprintf(stderr, "fuzz: %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__);                         \
		fputc('\n', stderr);                                  \
		abort();                                              \
	} while (0)

#endif
