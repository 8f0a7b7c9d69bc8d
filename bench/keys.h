/*
 * keys.h - the keys the bench adds and checks, made from numbers so that
 * the 100M keys of a fill never sit in memory at once.
 *
 * The fill set: key i is 16 bytes when i is even and 64 bytes when i is
 * odd, so that one filter holds keys of both lengths and each length is
 * checked against keys really stored. Every other set (absent probes,
 * fresh keys to add) has its own number and shares no key with the fill
 * set (but for a 2^-64 chance per pair).
 */
#ifndef BENCH_KEYS_H
#define BENCH_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include <shmf.h>

#define KEYS_FILL    1u /* the set a filter is filled with */
#define KEYS_MAX_LEN 64u

/** Key @p i of set @p set, @p len bytes (a multiple of 8, at most 64). */
void key_make(void *out, uint32_t set, uint64_t i, size_t len);

/** Length of fill key @p i: 16 or 64 bytes. */
static inline size_t key_fill_len(uint64_t i)
{
	return (i & 1) ? 64 : 16;
}

/** Fill keys [from, from + n) into @p buf (n * KEYS_MAX_LEN bytes) and @p keys. */
void keys_fill_batch(uint64_t from, size_t n, char *buf, shmf_key_t *keys);

struct keyset {
	size_t len; /* bytes per key: 16 or 64 */
	size_t n;
	char *buf;        /* n * len bytes, read in order */
	shmf_key_t *keys; /* n views into buf */
	uint8_t *present; /* probes: 1 if the key is one of the fill set; else NULL */
};

/**
 * @p n probes of @p len bytes: each, by a coin toss, one of the first
 * @p nfill keys of the fill set that have this length (drawn at random,
 * so the filter is read at random places), or key i of set @p absent_set.
 */
void keyset_probes(struct keyset *ks, size_t len, size_t n, uint64_t nfill, uint32_t absent_set, uint64_t seed);

/** Keys [0, n) of set @p set, @p len bytes each: keys never added before. */
void keyset_fresh(struct keyset *ks, size_t len, size_t n, uint32_t set);

/** The keys [from, from + n) of @p ks as a keyset of their own (no copy; do not free). */
struct keyset keyset_slice(const struct keyset *ks, size_t from, size_t n);

void keyset_free(struct keyset *ks);

#endif
