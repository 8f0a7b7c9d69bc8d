/*
 * target.h - one filter under test: created by shmd through its socket (as
 * an operator would), filled by this process through libshmf, and read
 * back as bits for the Redis string of the GETBIT baseline.
 */
#ifndef BENCH_TARGET_H
#define BENCH_TARGET_H

#include <stdint.h>

#include "bench/remote.h"
#include "bench/results.h"
#include <shmf.h>

/* The click-dedupe configuration: m/n = 50 bits per key, k = 16. */
#define CLICK_BITS_PER_KEY 50
#define CLICK_K            16

struct target {
	const char *name;  /* shmd's filter name, also the row label */
	int type;          /* SHMF_TYPE_BLOOM or SHMF_TYPE_CUCKOO */
	uint64_t keys;     /* keys it is meant for */
	int click;         /* sized to m/n = 50, k = 16 instead of 1% */
	uint64_t capacity; /* asked of BF.RESERVE / CF.RESERVE */
	double fpr;        /* asked of BF.RESERVE / CF.RESERVE */
	uint64_t nfill;    /* keys added before the checks */
	shmf_t *f;         /* read-write handle */
	shmf_info_t info;
	struct getbit_geom g; /* Bloom: where a key's bits lie */
	struct facts facts;
};

/**
 * Work out what to ask shmd for: 1% at @p keys, or for the click-dedupe
 * configuration the capacity at FPR 1e-6 that shmd sizes to k = 16 and
 * at least 50 bits per key of @p keys (a blocked filter reaches those
 * k and m through no other request). Exits if none does.
 */
void target_plan(struct target *t, const char *name, int type, uint64_t keys, int click);

/** Create it in shmd (@p shmd: a verbs remote on shmd's socket), open it
 *  in @p instance, and read its geometry. Exits on failure. */
void target_create(struct target *t, struct remote *shmd, const char *instance);

/** Add fill keys [0, nfill) with shmf_add_many; sets t->nfill and the facts. */
void target_fill(struct target *t, uint64_t nfill);

/** Copy the filter's bits into Redis string @p key (Bloom only). */
void target_upload(struct target *t, const char *instance, redisContext *c, const struct endpoint *ep, const char *key);

/** 1 if shmd reports the filter's segment on huge pages (SHMF.INFO). */
int target_huge_pages(struct target *t, struct remote *shmd);

/** Close the handle and drop the filter in shmd. */
void target_destroy(struct target *t, struct remote *shmd);

#endif
