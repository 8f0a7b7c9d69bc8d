/*
 * fuse-build.h - a static filter (binary fuse, libclient/fuse.h) built
 * from its keys' hashes, offline (shmctl build, the bench, the tests).
 *
 * The construction (Graf and Lemire 2022, section 3): the keys' mixed
 * hashes sorted (radix passes over their top bits, then an insertion sort
 * within the small groups that share them; which also puts each key's first position
 * in order, so the next steps walk the arrays nearly in sequence) and
 * duplicates dropped; per fingerprint a count and the XOR of the mixed
 * hashes that map there; then "peeling": a fingerprint that one key alone
 * maps to takes that key off the others, until every key is taken (else
 * the construction fails and is tried again with another mix seed: rare
 * past a few thousand keys); last, the fingerprints assigned in the
 * reverse order of peeling, each so that its key's three XOR to the key's
 * fingerprint.
 *
 * Memory while it runs: 8 bytes a key for the hashes, 8 for the sort's
 * second array (then the peeling order), 9 for the XOR of hashes and 1.125
 * for the counts at 1.125 fingerprints a key (more below 10^6 keys), and
 * the filter itself (1.125, 2.25 or 4.5 bytes a key): 28.4 bytes a key
 * (8-bit fingerprints) to 31.8 (32-bit), about four 64-bit words, at most
 * FUSE_BUILD_BYTES_PER_KEY past 10^6 keys. fuse_build_bytes() says it for a set.
 */
#ifndef SHMF_COMMON_FUSE_BUILD_H
#define SHMF_COMMON_FUSE_BUILD_H

#include <stdint.h>

#include "libclient/fuse.h"

#define FUSE_BUILD_BYTES_PER_KEY 32u
#define FUSE_BUILD_ATTEMPTS      100u /* mix seeds tried before giving up */

/* The bytes a construction of @p keys keys at @p fpr needs at its peak
 * (the hash array the caller holds included); UINT64_MAX past any size. */
uint64_t fuse_build_bytes(uint64_t keys, double fpr);

/* The memory this machine has available now (/proc/meminfo's
 * MemAvailable), in bytes; 0 when unknown. */
uint64_t fuse_mem_available(void);

/* What a construction made. */
struct fuse_built {
	struct shmf_fuse_params p;
	uint64_t keys;     /* distinct keys */
	uint64_t mix;      /* the mix seed that worked */
	unsigned attempts; /* mix seeds tried */
	void *payload;     /* p.nblocks * 64 bytes: the table and the fingerprints; fuse_built_free() */
	uint64_t payload_bytes;
};

/**
 * Build a static filter at @p fpr from the @p n hashes @p h (shmf_hash of
 * each key with the filter's seed; duplicates allowed). @p h is reordered
 * and overwritten (it holds mixed hashes afterwards).
 * @return 0, SHMF_E_INVAL (no key, or a rate no width reaches), -ENOMEM,
 *         SHMF_E_TOOBIG, or SHMF_E_FULL (no mix seed of
 *         FUSE_BUILD_ATTEMPTS built it).
 */
int fuse_build(uint64_t *h, uint64_t n, double fpr, struct fuse_built *out);

void fuse_built_free(struct fuse_built *b);

#endif
