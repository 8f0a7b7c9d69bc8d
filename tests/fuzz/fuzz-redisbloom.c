/*
 * fuzz-redisbloom.c - RedisBloom's dump format read (common/redisbloom-dump.c:
 * rb_dump_parse, rb_dump_locate) and an import's table checked and used
 * by a client (libclient/redisbloom.c: shmf_rb_open, shmf_rb_check,
 * shmf_rb_count, shmf_rb_check_many), on any bytes.
 *
 * The first byte picks the family (even: a Bloom chain, odd: a cuckoo
 * filter); the rest is a header chunk as LOADCHUNK would get it. A header
 * accepted is laid out as shmd lays it out, its links filled with the
 * input's bytes over and over, and keys are checked on it. The same bytes
 * are also taken as a payload whose table a client must check.
 *
 * What must hold: no crash or out-of-bounds access (the sanitizers run the
 * corpus); a refusal says why; an accepted header makes a table the
 * client's check accepts, places every dump byte inside the payload, and
 * a batch check answers as the one-key checks.
 */
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "common/redisbloom-dump.h"
#include "libclient/redisbloom.h"

#define PAYLOAD_MAX (16u << 20) /* accepted headers of more are not filled */

static void use(const struct shmf_rb *rb, const uint8_t *data, size_t size)
{
	shmf_key_t keys[16];
	uint8_t out[16];
	int one[16];
	for (int i = 0; i < 16; i++) {
		size_t len = size ? (size_t)i * 7 % (size + 1) : 0;
		keys[i] = (shmf_key_t){ data, len };
		one[i] = shmf_rb_check(rb, data, len);
		if (one[i] != 0 && one[i] != 1)
			fuzz_fail("a check answered %d", one[i]);
		int n = shmf_rb_count(rb, data, len);
		if (rb->scheme == SHMF_SCHEME_RB_CUCKOO ? n < 0 || (n > 0) != one[i] : n != SHMF_E_TYPE)
			fuzz_fail("a count of %d beside a check of %d", n, one[i]);
	}
	size_t present = shmf_rb_check_many(rb, keys, 16, out), want = 0;
	for (int i = 0; i < 16; i++) {
		if (out[i] != one[i])
			fuzz_fail("batch and one-key checks disagree on key %d", i);
		want += (size_t)one[i];
	}
	if (present != want)
		fuzz_fail("batch counted %zu present of %zu", present, want);
}

/* An accepted header, laid out and filled, then used as a client would. */
static void import(const struct rb_dump *d, const uint8_t *data, size_t size)
{
	uint64_t off, left;
	if (d->table_bytes < sizeof(struct shmf_rb_table) || d->payload < d->table_bytes || d->dump_bytes == 0 ||
	    rb_dump_locate(d, 0, &off, &left) < 0 || off < d->table_bytes || off + left > d->payload ||
	    rb_dump_locate(d, d->dump_bytes - 1, &off, &left) < 0 || left != 1 || off >= d->payload ||
	    rb_dump_locate(d, d->dump_bytes, &off, &left) == 0)
		fuzz_fail("an accepted header places its bytes outside its payload");
	if (d->payload > PAYLOAD_MAX)
		return;
	uint8_t *p = calloc(1, d->payload);
	if (p == NULL)
		fuzz_fail("no memory for %llu bytes", (unsigned long long)d->payload);
	rb_dump_table(d, p);
	for (uint64_t i = d->table_bytes; size > 0 && i < d->payload; i++)
		p[i] = data[i % size];
	struct shmf_rb *rb;
	if (shmf_rb_open(d->scheme, p, d->payload, &rb) < 0)
		fuzz_fail("an accepted header makes a table the client refuses");
	use(rb, data, size);
	shmf_rb_free(rb);
	free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	int type = data[0] & 1 ? SHMF_TYPE_CUCKOO : SHMF_TYPE_BLOOM;
	char err[512] = "";
	struct rb_dump *d = NULL;
	int rc = rb_dump_parse(type, data + 1, size - 1, &d, err, sizeof(err));
	if (rc < 0 && (err[0] == '\0' || strstr(err, "RedisBloom") == NULL))
		fuzz_fail("a refusal that does not say why: '%s'", err);
	if (rc == 0) {
		import(d, data + 1, size - 1);
		free(d);
	}
	/* The bytes as a payload whose table a client checks. */
	size_t n = (size - 1 + 63) / 64 * 64;
	uint8_t *p = calloc(1, n ? n : 64);
	if (p == NULL)
		return 0;
	memcpy(p, data + 1, size - 1);
	struct shmf_rb *rb;
	for (uint32_t scheme = SHMF_SCHEME_RB_BLOOM; scheme <= SHMF_SCHEME_RB_CUCKOO; scheme++)
		if (shmf_rb_open(scheme, p, n, &rb) == 0) {
			use(rb, data, size);
			shmf_rb_free(rb);
		}
	free(p);
	return 0;
}
