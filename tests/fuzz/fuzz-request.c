/*
 * fuzz-request.c - the RESP request reader of the control socket
 * (shmd/request.c: the guard in front of hiredis' reader) on any bytes,
 * fed in pieces of a size the first byte chooses, as a socket would
 * deliver them.
 *
 * What must hold: no crash, no read or write out of bounds; every request
 * handed out has 1 to REQUEST_MAX_ARGS arguments, each NUL-terminated at
 * its length and at most REQUEST_MAX_ARG long; after a protocol error the
 * reader says "Protocol error: ..." and hands out nothing more; the same
 * bytes fed whole or in pieces give the same requests.
 */
#include <string.h>

#include <xxhash.h>

#include "fuzz.h"
#include "request.h"

/* Feed @p data in pieces of @p piece bytes; @return a digest of every
 * request handed out, and *failed. */
static uint64_t run(const uint8_t *data, size_t size, size_t piece, int *failed, unsigned *nreq)
{
	struct request_reader *rr = request_reader_new();
	if (rr == NULL)
		fuzz_fail("out of memory");
	uint64_t digest = 0;
	*failed = 0;
	*nreq = 0;
	for (size_t at = 0; at < size && !*failed; at += piece) {
		size_t n = size - at < piece ? size - at : piece;
		int fed = request_reader_feed(rr, (const char *)data + at, n);
		struct request req;
		int r;
		while ((r = request_reader_next(rr, &req)) == 1) {
			if (req.argc < 1 || (unsigned)req.argc > REQUEST_MAX_ARGS)
				fuzz_fail("request with %d arguments", req.argc);
			for (int i = 0; i < req.argc; i++) {
				if (req.lens[i] > REQUEST_MAX_ARG || req.argv[i][req.lens[i]] != '\0')
					fuzz_fail("argument %d of %zu bytes, or not terminated", i, req.lens[i]);
				digest = XXH3_64bits_withSeed(req.argv[i], req.lens[i], digest + (uint64_t)i);
			}
			digest ^= (uint64_t)req.argc << 48;
			(*nreq)++;
		}
		if (r < 0 || fed < 0) {
			if (strncmp(request_reader_error(rr), "Protocol error: ", 16) != 0)
				fuzz_fail("protocol error without a message: '%s'", request_reader_error(rr));
			if (request_reader_next(rr, &req) == 1)
				fuzz_fail("a request handed out after a protocol error");
			*failed = 1;
		}
	}
	if (!*failed && request_reader_error(rr)[0] != '\0')
		fuzz_fail("an error message without a failure");
	request_reader_free(rr);
	return digest;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	size_t piece = data[0] % 64 + 1;
	int f1, f2;
	unsigned n1, n2;
	uint64_t d1 = run(data + 1, size - 1, size, &f1, &n1);
	uint64_t d2 = run(data + 1, size - 1, piece, &f2, &n2);
	/* However the stream is cut: the same requests, and the same failure. */
	if (f1 != f2 || d1 != d2 || n1 != n2)
		fuzz_fail("whole: %d requests (failed %d); in pieces of %zu: %d requests (failed %d)", n1, f1, piece, n2, f2);
	return 0;
}
