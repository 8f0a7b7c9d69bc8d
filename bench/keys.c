/* keys.c - keys made from numbers: fill sets, probes, fresh keys. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libclient/hash.h"
#include "bench/keys.h"

#define GOLDEN UINT64_C(0x9e3779b97f4a7c15)

void key_make(void *out, uint32_t set, uint64_t i, size_t len)
{
	uint64_t base = shmf_mix64(shmf_mix64((uint64_t)set * GOLDEN) ^ i);
	uint64_t w[KEYS_MAX_LEN / 8];
	for (size_t j = 0; j < len / 8; j++)
		w[j] = shmf_mix64(base + (j + 1) * GOLDEN);
	memcpy(out, w, len);
}

void keys_fill_batch(uint64_t from, size_t n, char *buf, shmf_key_t *keys)
{
	for (size_t j = 0; j < n; j++) {
		size_t len = key_fill_len(from + j);
		key_make(buf + j * KEYS_MAX_LEN, KEYS_FILL, from + j, len);
		keys[j] = (shmf_key_t){ buf + j * KEYS_MAX_LEN, len };
	}
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL) {
		fprintf(stderr, "bench-redis: out of memory (%zu bytes of keys)\n", n);
		exit(1);
	}
	return p;
}

static void keyset_alloc(struct keyset *ks, size_t len, size_t n, int probes)
{
	ks->len = len;
	ks->n = n;
	ks->buf = xmalloc(n * len);
	ks->keys = xmalloc(n * sizeof(*ks->keys));
	ks->present = probes ? xmalloc(n) : NULL;
	for (size_t i = 0; i < n; i++)
		ks->keys[i] = (shmf_key_t){ ks->buf + i * len, len };
}

void keyset_probes(struct keyset *ks, size_t len, size_t n, uint64_t nfill, uint32_t absent_set, uint64_t seed)
{
	/* Fill keys of this length: the even indexes for 16 bytes, the odd for 64. */
	uint64_t parity = len == 64, have = (nfill + 1 - parity) / 2;
	keyset_alloc(ks, len, n, 1);
	uint64_t state = seed;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = shmf_mix64(state += GOLDEN);
		ks->present[i] = have > 0 && (r & 1);
		if (ks->present[i])
			key_make(ks->buf + i * len, KEYS_FILL, 2 * shmf_block_index(r, have) + parity, len);
		else
			key_make(ks->buf + i * len, absent_set, i, len);
	}
}

void keyset_fresh(struct keyset *ks, size_t len, size_t n, uint32_t set)
{
	keyset_alloc(ks, len, n, 0);
	for (size_t i = 0; i < n; i++)
		key_make(ks->buf + i * len, set, i, len);
}

struct keyset keyset_slice(const struct keyset *ks, size_t from, size_t n)
{
	return (struct keyset){
		.len = ks->len,
		.n = n,
		.buf = ks->buf + from * ks->len,
		.keys = ks->keys + from,
		.present = ks->present ? ks->present + from : NULL,
	};
}

void keyset_free(struct keyset *ks)
{
	free(ks->buf);
	free(ks->keys);
	free(ks->present);
	*ks = (struct keyset){ 0 };
}
