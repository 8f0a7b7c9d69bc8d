/*
 * fuzz-request.c - the RESP request reader of the control socket and the
 * TCP listener (shmd/request.c: the guard in front of hiredis' reader) on
 * any bytes, fed as a socket would deliver them: whole, in pieces of a
 * size the first byte chooses, and a request at a time
 * (request_reader_feed_some) under the largest limits and under narrow
 * ones that the last byte chooses (as before AUTH on TCP).
 *
 * What must hold: no crash, no read or write out of bounds; every request
 * handed out has at least one argument, each NUL-terminated at its length,
 * and keeps within the limits in force; after a protocol error the reader
 * says "Protocol error: ..." and hands out nothing more; however the
 * stream is cut, the same requests and the same failure; narrower limits
 * only ever end the stream sooner (their requests are a prefix); the
 * reader never holds more than a few times the bytes it was fed (its
 * vectors grow with the arguments that came, not the count announced).
 */
#include <string.h>

#include <xxhash.h>

#include "tests/fuzz/fuzz.h"
#include "shmd/resp/request.h"

#define MAX_REQS 4096

struct outcome {
	int failed;
	unsigned n;
	uint64_t digest[MAX_REQS]; /* one per request, the first MAX_REQS */
};

static void take(struct request_reader *rr, const struct request_limits *l, struct outcome *o, int fed)
{
	struct request req;
	int r;
	while ((r = request_reader_next(rr, &req)) == 1) {
		if (req.argc < 1 || (unsigned long)req.argc > l->max_args)
			fuzz_fail("request with %d arguments (limit %lu)", req.argc, l->max_args);
		uint64_t d = (uint64_t)req.argc, total = 0;
		for (int i = 0; i < req.argc; i++) {
			if (req.lens[i] > l->max_arg || req.argv[i][req.lens[i]] != '\0')
				fuzz_fail("argument %d of %zu bytes (limit %zu), or not terminated", i, req.lens[i],
					  l->max_arg);
			d = XXH3_64bits_withSeed(req.argv[i], req.lens[i], d);
			total += req.lens[i];
		}
		if (total > l->max_bytes)
			fuzz_fail("request of %llu bytes of arguments (limit %zu)", (unsigned long long)total,
				  l->max_bytes);
		if (o->n < MAX_REQS)
			o->digest[o->n] = d;
		o->n++;
	}
	if (r < 0 || fed < 0) {
		if (strncmp(request_reader_error(rr), "Protocol error: ", 16) != 0)
			fuzz_fail("protocol error without a message: '%s'", request_reader_error(rr));
		if (request_reader_next(rr, &req) == 1)
			fuzz_fail("a request handed out after a protocol error");
		o->failed = 1;
	}
}

/* What the reader holds after @p fed bytes: its buffer (at most twice
 * them), the argument vectors (32 bytes for an argument of at least 6),
 * the copies of the arguments, and one request's fixed part. */
static void held_within(const struct request_reader *rr, size_t base, size_t fed)
{
	size_t held = request_reader_memory(rr);
	if (held > base + 10 * fed + 4096)
		fuzz_fail("the reader holds %zu bytes after %zu fed (%zu when new)", held, fed, base);
}

/* Feed @p data in pieces of @p piece bytes, with request_reader_feed(),
 * or (@p some) a request at a time under @p l. */
static void run(const uint8_t *data, size_t size, size_t piece, int some, const struct request_limits *l,
		struct outcome *o)
{
	struct request_reader *rr = request_reader_new();
	if (rr == NULL)
		fuzz_fail("out of memory");
	memset(o, 0, sizeof(*o));
	size_t base = request_reader_memory(rr);
	for (size_t at = 0; at < size && !o->failed;) {
		size_t n = size - at < piece ? size - at : piece;
		if (!some) {
			int fed = request_reader_feed(rr, (const char *)data + at, n);
			take(rr, l, o, fed);
			at += n;
			held_within(rr, base, at);
			continue;
		}
		/* Limits may change only between requests: set them each time. */
		request_reader_set_limits(rr, l);
		size_t used = 0;
		int fed = request_reader_feed_some(rr, (const char *)data + at, n, &used);
		if (used > n || (used == 0 && fed == 0 && n > 0))
			fuzz_fail("feed_some took %zu of %zu bytes", used, n);
		take(rr, l, o, fed);
		at += used;
		held_within(rr, base, at);
	}
	if (!o->failed && request_reader_error(rr)[0] != '\0')
		fuzz_fail("an error message without a failure");
	request_reader_free(rr);
}

static int same(const struct outcome *a, const struct outcome *b)
{
	unsigned n = a->n < MAX_REQS ? a->n : MAX_REQS;
	return a->failed == b->failed && a->n == b->n && memcmp(a->digest, b->digest, n * sizeof(a->digest[0])) == 0;
}

static struct outcome whole, cut, some, narrow;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t piece = data[0] % 64 + 1;
	uint8_t lb = data[size - 1];
	const struct request_limits *max = &request_limits_max;
	struct request_limits l = { .max_bytes = 32 + (size_t)lb * 4,
				    .max_args = lb % 8 + 1,
				    .max_arg = (size_t)(lb / 8) * 4,
				    .why = " before AUTH" };
	data++, size--;
	run(data, size, size, 0, max, &whole);
	run(data, size, piece, 0, max, &cut);
	run(data, size, piece, 1, max, &some);
	run(data, size, piece, 1, &l, &narrow);
	if (!same(&whole, &cut) || !same(&whole, &some))
		fuzz_fail("whole: %u requests (failed %d); in pieces of %zu: %u (failed %d); one at a time: %u (failed %d)",
			  whole.n, whole.failed, piece, cut.n, cut.failed, some.n, some.failed);
	unsigned n = narrow.n < MAX_REQS ? narrow.n : MAX_REQS;
	if (narrow.n > whole.n || memcmp(narrow.digest, whole.digest, n * sizeof(narrow.digest[0])) != 0 ||
	    (!narrow.failed && whole.failed))
		fuzz_fail("narrow limits handed out %u requests that are not a prefix of the %u without them", narrow.n,
			  whole.n);
	return 0;
}
