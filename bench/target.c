/* target.c - the filter under test: sizing, creation through shmd, fill, bits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libclient/bloom.h"
#include "bench/die.h"
#include "bench/keys.h"
#include "libclient/segment.h"
#include "bench/target.h"
#include "bench/ticks.h"

/* BF.RESERVE at this rate gives k = 16 (bloom.c picks the k that needs
 * the fewest blocks); the capacity then sets m. */
#define CLICK_RESERVE_FPR 1e-6

void target_plan(struct target *t, const char *name, int type, uint64_t keys, int click)
{
	*t = (struct target){ .name = name, .type = type, .keys = keys, .click = click, .capacity = keys, .fpr = 0.01 };
	if (!click)
		return;
	const uint64_t want_bits = keys * CLICK_BITS_PER_KEY;
	uint64_t lo = keys, hi = 4 * keys; /* the smallest capacity with bits >= want_bits */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		struct shmf_bloom_params p;
		if (shmf_bloom_size(mid, CLICK_RESERVE_FPR, 0, &p) < 0)
			die("%s: cannot size a filter of %llu keys", name, (unsigned long long)mid);
		if (p.bits >= want_bits)
			hi = mid;
		else
			lo = mid + 1;
	}
	struct shmf_bloom_params p;
	if (shmf_bloom_size(lo, CLICK_RESERVE_FPR, 0, &p) < 0 || p.k * p.lines < CLICK_K)
		die("%s: no BF.RESERVE at %g gives %d bits a key with at least k = %d (bloom.c's sizing changed?)",
		    name, CLICK_RESERVE_FPR, CLICK_BITS_PER_KEY, CLICK_K);
	t->capacity = lo;
	t->fpr = CLICK_RESERVE_FPR;
}

void target_create(struct target *t, struct remote *shmd, const char *instance)
{
	verbs_reserve(shmd, t->capacity, t->fpr);
	int rc = shmf_open(instance, t->name, SHMF_RDWR, &t->f);
	if (rc < 0)
		die("shmf_open %s/%s: %s", instance, t->name, shmf_strerror(rc));
	if ((rc = shmf_info(t->f, &t->info)) < 0)
		die("shmf_info %s: %s", t->name, shmf_strerror(rc));
	if (t->type == SHMF_TYPE_BLOOM) {
		/* The seed is not in shmf_info(): read the data header, as a
		 * client maps it (segment.h), and keep what GETBIT needs. */
		struct shmf_dir dir;
		struct shmf_ctl_map ctl;
		struct shmf_slot slot;
		struct shmf_data_map dm;
		if ((rc = shmf_dir_open(instance, &dir)) < 0 || (rc = shmf_ctl_map_open(&dir, 0, &ctl)) < 0)
			die("instance %s: %s", instance, shmf_strerror(rc));
		if ((rc = shmf_slot_find(&ctl, t->name, &slot)) < 0 ||
		    (rc = shmf_data_map_open(&dir, &slot, 0, &dm)) < 0)
			die("filter %s: %s", t->name, shmf_strerror(rc));
		t->g = (struct getbit_geom){
			.seed = dm.hdr.seed, .nblocks = dm.hdr.nblocks, .k = dm.hdr.k, .lines = dm.hdr.bucket_size
		};
		shmf_data_map_close(&dm);
		shmf_ctl_map_close(&ctl);
		shmf_dir_close(&dir);
	}
	t->facts = (struct facts){
		.filter = t->name,
		.type = t->type == SHMF_TYPE_BLOOM ? "bloom" : "cuckoo",
		.keys = t->keys,
		.fpr_target = t->type == SHMF_TYPE_BLOOM
				      ? shmf_bloom_fpr_lines(t->keys, t->g.nblocks, t->g.k, t->g.lines)
				      : t->info.fpr_target,
		.fpr_measured = -1,
		.k = t->info.k,
		.bits_per_key = (double)t->info.bits / (double)t->keys,
	};
}

void target_fill(struct target *t, uint64_t nfill)
{
	enum { BATCH = 1024 };
	char *buf = malloc((size_t)BATCH * KEYS_MAX_LEN);
	shmf_key_t *keys = malloc(BATCH * sizeof(*keys));
	if (buf == NULL || keys == NULL)
		die("out of memory for the fill of %s", t->name);
	uint64_t t0 = ticks_now();
	for (uint64_t at = 0; at < nfill; at += BATCH) {
		size_t n = nfill - at < BATCH ? (size_t)(nfill - at) : BATCH;
		keys_fill_batch(at, n, buf, keys);
		int rc = shmf_add_many(t->f, keys, n, NULL);
		if (rc < 0)
			die("filling %s: shmf_add_many at key %llu: %s", t->name, (unsigned long long)at,
			    shmf_strerror(rc));
	}
	free(buf);
	free(keys);
	t->nfill = nfill;
	t->facts.load = (double)nfill / (double)t->keys;
	shmf_info(t->f, &t->info);
	fprintf(stderr, "%s: filled with %llu keys (%.1f%% of %llu) in %.1f s; %.1f MiB, %s %.3f\n", t->name,
		(unsigned long long)nfill, 100.0 * t->facts.load, (unsigned long long)t->keys,
		ticks_ns(ticks_now() - t0) / 1e9, (double)t->info.bytes / 1048576.0,
		t->type == SHMF_TYPE_CUCKOO ? "load" : "bits set", t->info.fill_ratio);
}

void target_upload(struct target *t, const char *instance, redisContext *c, const struct endpoint *ep, const char *key)
{
	struct shmf_dir dir;
	struct shmf_ctl_map ctl;
	struct shmf_slot slot;
	struct shmf_data_map dm;
	int rc;
	if ((rc = shmf_dir_open(instance, &dir)) < 0 || (rc = shmf_ctl_map_open(&dir, 0, &ctl)) < 0 ||
	    (rc = shmf_slot_find(&ctl, t->name, &slot)) < 0 || (rc = shmf_data_map_open(&dir, &slot, 0, &dm)) < 0)
		die("mapping %s for the upload: %s", t->name, shmf_strerror(rc));
	uint64_t t0 = ticks_now();
	getbit_upload(c, ep, key, dm.blocks, dm.hdr.nblocks);
	fprintf(stderr, "%s: %.1f MiB of bits copied to Redis key %s in %.1f s\n", t->name,
		(double)dm.hdr.nblocks * SHMF_BLOCK_BYTES / 1048576.0, key, ticks_ns(ticks_now() - t0) / 1e9);
	shmf_data_map_close(&dm);
	shmf_ctl_map_close(&ctl);
	shmf_dir_close(&dir);
}

int target_huge_pages(struct target *t, struct remote *shmd)
{
	redisReply *r = resp_run(shmd->c, shmd->ep, "SHMF.INFO", t->name, (char *)NULL);
	int huge = -1;
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2)
		if (r->element[i]->type == REDIS_REPLY_STRING && !strcmp(r->element[i]->str, "huge_pages"))
			huge = r->element[i + 1]->type == REDIS_REPLY_INTEGER ? (int)r->element[i + 1]->integer : -1;
	freeReplyObject(r);
	if (huge < 0)
		die("%s: SHMF.INFO %s has no integer huge_pages field", endpoint_name(shmd->ep), t->name);
	return huge;
}

void target_destroy(struct target *t, struct remote *shmd)
{
	shmf_close(t->f);
	t->f = NULL;
	freeReplyObject(resp_run(shmd->c, shmd->ep, "SHMF.DROP", t->name, (char *)NULL));
}
