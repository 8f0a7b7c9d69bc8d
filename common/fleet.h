/*
 * fleet.h - what every node of a fleet must agree on, in one place: the
 * hash seed of a replicated filter, its shape fingerprint, and the Redis
 * stream entry that carries a batch of journal entries (its version, its
 * fields, the binary batch and the entry id).
 *
 * A stream entry, one per batch (at most FLEET_BATCH_MAX journal entries):
 *
 *   XADD <prefix><filter> MAXLEN ~ <retention> *
 *        v 2  n <node>  s <shape, 16 hex digits>  q <sequence>  e <batch>  m <tags>
 *
 * <batch> is a binary string of 16-byte entries laid out exactly as the
 * journal's (struct shmf_journal_entry: hash u64, op u32, window u32, each
 * little-endian). <sequence> is the sender's, in decimal: above every one
 * it sent before for the filter (the wall clock in microseconds, or one
 * more than the last). <tags> are FLEET_MAC_BYTES binary bytes
 * (fleet-auth.h): the header tag and the entry tag. Version 1 had neither
 * q nor m: a node counts such an entry as unsigned and refuses it. Bump
 * FLEET_STREAM_VERSION on any change: a node skips (and counts) entries of
 * a version it does not know.
 */
#ifndef SHMF_COMMON_FLEET_H
#define SHMF_COMMON_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "libclient/journal.h"
#include "libclient/segment-format.h"

#define FLEET_STREAM_VERSION          "2"
#define FLEET_STREAM_VERSION_UNSIGNED "1"   /* before entries were authenticated */
#define FLEET_BATCH_MAX               4096u /* journal entries per stream entry */
#define FLEET_ENTRY_BYTES             16u   /* one entry in a batch */
#define FLEET_NODE_MAX                64u   /* bytes of a node name, without the NUL */

/* Field names of a stream entry, in the order XADD writes them. */
#define FLEET_F_VERSION "v"
#define FLEET_F_NODE    "n"
#define FLEET_F_SHAPE   "s"
#define FLEET_F_SEQ     "q"
#define FLEET_F_BATCH   "e"
#define FLEET_F_MAC     "m"

_Static_assert(FLEET_ENTRY_BYTES == sizeof(struct shmf_journal_entry), "a batch entry is a journal entry");

/**
 * The hash seed of replicated filter @p name: XXH3_64bits_withSeed(name,
 * strlen(name), XXH3_64bits(secret, strlen(secret))). Every node with the
 * same secret hashes a key of the filter alike; the stream carries keyed
 * hashes, never keys.
 */
uint64_t fleet_seed(const char *secret, const char *name);

/**
 * The shape fingerprint of the filter in slot copy @p s hashing with
 * @p seed: XXH3 over type, k, capacity, fpr_bits, nblocks, nbuckets,
 * window_secs, window_gens, the seed and (cuckoo, when it is not 4) the
 * bucket size, each as 8 little-endian bytes. Two nodes apply each
 * other's entries only when theirs are equal.
 */
uint64_t fleet_shape(const struct shmf_slot *s, uint64_t seed);

/** The shape as the stream writes it: 16 lower-case hex digits and a NUL. */
void fleet_shape_text(uint64_t shape, char out[17]);

/** 16 hex digits (any case) to a shape. 0 or SHMF_E_INVAL. */
int fleet_shape_parse(const char *text, size_t len, uint64_t *out);

/**
 * Encode @p n entries (at most FLEET_BATCH_MAX) into @p out, which holds
 * n * FLEET_ENTRY_BYTES bytes. @return the bytes written.
 */
size_t fleet_batch_encode(const struct shmf_jentry *e, size_t n, unsigned char *out);

/**
 * Decode a batch of @p len bytes into @p out (room for FLEET_BATCH_MAX).
 * @return the entries, or SHMF_E_FORMAT: a length that is not a multiple
 *         of FLEET_ENTRY_BYTES, more than FLEET_BATCH_MAX entries, or an
 *         entry whose op is not SHMF_JOP_ADD..SHMF_JOP_MAX (the whole
 *         batch is refused: a sender never writes one).
 */
int fleet_batch_decode(const void *buf, size_t len, struct shmf_jentry *out);

/* A stream entry id, <ms>-<seq>. */
struct fleet_id {
	uint64_t ms, seq;
};

/** Decimal digits (@p len bytes, no NUL needed, at most 64 bits) to a number. 0 or SHMF_E_INVAL. */
int fleet_u64_parse(const char *text, size_t len, uint64_t *out);

/** "<ms>-<seq>" (@p len bytes, no NUL needed) to an id. 0 or SHMF_E_INVAL. */
int fleet_id_parse(const char *text, size_t len, struct fleet_id *out);

/** An id as text into @p buf (at least 42 bytes). @return @p buf. */
char *fleet_id_text(struct fleet_id id, char *buf, size_t size);

/** <0, 0, >0 as @p a is before, equal to, after @p b. */
static inline int fleet_id_cmp(struct fleet_id a, struct fleet_id b)
{
	if (a.ms != b.ms)
		return a.ms < b.ms ? -1 : 1;
	return a.seq < b.seq ? -1 : a.seq > b.seq;
}

/** The window number of unix time @p now for windows of @p secs seconds
 * (wall-clock boundaries: every node numbers windows alike). */
static inline uint64_t fleet_window(uint64_t now, uint64_t secs)
{
	return secs ? now / secs : 0;
}

/* The skew tolerance: how far ahead of this node's clock an entry's window
 * may begin and still be taken (and this node start that window early):
 * min(FLEET_SKEW_MAX_MS, a quarter of the window). Below one window, so an
 * entry can only ever start the next window early, never skip one; a
 * quarter, so that a key's life is shortened by a quarter window at most
 * (docs/design.md, section 11). */
#define FLEET_SKEW_MAX_MS  30000u
#define FLEET_SKEW_DIVISOR 4u

/** The skew tolerance in milliseconds for windows of @p secs seconds. */
static inline uint64_t fleet_skew_ms(uint64_t secs)
{
	if (secs >= FLEET_SKEW_MAX_MS * FLEET_SKEW_DIVISOR / 1000)
		return FLEET_SKEW_MAX_MS;
	return secs * 1000 / FLEET_SKEW_DIVISOR;
}

/**
 * Does window @p w of windows of @p secs seconds begin more than the skew
 * tolerance after wall-clock time @p now_ms (unix milliseconds)? Such an
 * entry comes from a clock further ahead than the tolerance, or is forged:
 * it is dropped and counted, never acted on. Exact for every window number
 * and every length up to SHMF_WINDOW_SECS_MAX (a longer one, or a window
 * number past SHMF_WINDOW_NUM_MAX, is always ahead); 0 without a window.
 */
static inline int fleet_window_ahead(uint64_t w, uint64_t secs, uint64_t now_ms)
{
	if (secs == 0)
		return 0;
	if (secs > SHMF_WINDOW_SECS_MAX || w > SHMF_WINDOW_NUM_MAX)
		return 1;
	/* In seconds: w * secs fits 64 bits (segment-format.h); w * secs *
	 * 1000 would not for windows longer than 49.7 days. start * 1000 >
	 * x exactly when start > floor(x / 1000). */
	uint64_t skew = fleet_skew_ms(secs), until = now_ms > UINT64_MAX - skew ? UINT64_MAX : now_ms + skew;
	return w * secs > until / 1000;
}

#endif
