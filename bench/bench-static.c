/*
 * bench-static.c - static filters (binary fuse, libclient/fuse.h) beside a
 * one-line Bloom filter of the same set at the same rate, in one run.
 *
 *   bench-static [--quick] [--widths 8,16,32] [KEYS...]
 *
 * For each KEYS (default 1,000,000 and 100,000,000; --quick 1,000,000)
 * and each fingerprint width (rates 0.004, 2e-5 and 1e-9, the widths'
 * narrowest reach), in private memory: the build (keys hashed from 16-byte
 * keys, sorted, duplicates dropped, constructed: fuse_build(), as shmctl
 * build does after reading) in keys a second; bits a key beside the
 * paper's 9.0, 18.1 and 36.2 (their ratio); the false-positive rate on
 * 4M absent keys; then 5 rounds of a single check (a loop over 4M probes,
 * half present, half absent) and a batch check (batches of 1,024), the
 * static filter and the Bloom filter alternately; medians, and the ratios
 * static / Bloom. Nothing is asserted: the test suite runs --quick once
 * only to prove the program works.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench/clock.h"
#include "common/fuse-build.h"
#include "libclient/bloom.h"
#include "libclient/fuse.h"

#define KEY_LEN 16
#define NPROBE  4000000u
#define ROUNDS  5
#define BATCH   1024

static volatile uint64_t sink;

static void key_of(char *k, unsigned family, uint64_t i)
{
	uint64_t a = i * UINT64_C(0x9e3779b97f4a7c15) + family, b = i ^ ((uint64_t)family << 56);
	memcpy(k, &a, 8);
	memcpy(k + 8, &b, 8);
}

struct pair {
	struct shmf_fuse_geom fuse;
	struct shmf_bloom_geom bloom;
	char *probes; /* NPROBE keys, half present */
	shmf_key_t *pk;
};

static double single_fuse(const struct pair *p)
{
	double t = bench_now_ns();
	uint64_t s = 0;
	for (uint32_t i = 0; i < NPROBE; i++)
		s += (uint64_t)shmf_fuse_has(&p->fuse, shmf_hash(p->pk[i].ptr, KEY_LEN, p->fuse.seed));
	sink = s;
	return (bench_now_ns() - t) / NPROBE;
}

static double single_bloom(const struct pair *p)
{
	double t = bench_now_ns();
	uint64_t s = 0;
	for (uint32_t i = 0; i < NPROBE; i++)
		s += (uint64_t)shmf_bloom_has(&p->bloom, shmf_hash(p->pk[i].ptr, KEY_LEN, p->bloom.seed));
	sink = s;
	return (bench_now_ns() - t) / NPROBE;
}

static double batch_of(const struct pair *p, int fuse)
{
	static uint8_t out[BATCH];
	double t = bench_now_ns();
	uint64_t s = 0;
	for (uint32_t i = 0; i < NPROBE; i += BATCH) {
		size_t m = NPROBE - i < BATCH ? NPROBE - i : BATCH;
		s += fuse ? shmf_fuse_check_many(&p->fuse, p->pk + i, m, out)
			  : shmf_bloom_check_batch(&p->bloom, p->pk + i, m, out, SHMF_BLOOM_AUTO);
	}
	sink = s;
	return (bench_now_ns() - t) / NPROBE;
}

/* The one-line Bloom filter of the first @p n keys at @p fpr. */
static int bloom_make(struct shmf_bloom_geom *g, uint64_t n, double fpr)
{
	struct shmf_bloom_params bp;
	if (shmf_bloom_size(n, fpr, 1, &bp) < 0)
		return -1;
	void *m = mmap(NULL, bp.nblocks * 64, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	*g = (struct shmf_bloom_geom){ m, bp.nblocks, 0x1234, bp.k, 1 };
	char *keys = malloc((size_t)BATCH * KEY_LEN);
	shmf_key_t ks[BATCH];
	for (uint64_t i = 0; i < n; i += BATCH) {
		size_t m2 = n - i < BATCH ? (size_t)(n - i) : BATCH;
		for (size_t j = 0; j < m2; j++) {
			key_of(keys + j * KEY_LEN, 1, i + j);
			ks[j] = (shmf_key_t){ keys + j * KEY_LEN, KEY_LEN };
		}
		shmf_bloom_add_batch(g, ks, m2, NULL);
	}
	free(keys);
	return 0;
}

/* Build the static filter of keys 0..n-1 (family 1): @return keys a second. */
static double fuse_make(struct fuse_built *b, struct shmf_fuse_geom *g, uint64_t n, double fpr)
{
	const uint64_t seed = 0xabcdef;
	double t = bench_now_ns();
	uint64_t *h = mmap(NULL, n * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char k[KEY_LEN];
	for (uint64_t i = 0; i < n; i++) {
		key_of(k, 1, i);
		h[i] = shmf_hash(k, KEY_LEN, seed);
	}
	if (fuse_build(h, n, fpr, b) < 0) {
		fprintf(stderr, "bench-static: the build of %" PRIu64 " keys failed\n", n);
		exit(1);
	}
	double secs = (bench_now_ns() - t) / 1e9;
	munmap(h, n * 8);
	shmf_fuse_open(b->payload, b->payload_bytes, b->p.fp_bits, b->p.segment_len, b->p.array_len, b->keys, seed, g);
	return (double)n / secs;
}

static void one(uint64_t n, uint32_t bits)
{
	const double fpr = bits == 8 ? 0.004 : bits == 16 ? 2e-5 : 1e-9;
	const double paper = bits == 8 ? 9.0 : bits == 16 ? 18.1 : 36.2;
	struct pair p;
	struct fuse_built b;
	double kps = fuse_make(&b, &p.fuse, n, fpr);
	if (bloom_make(&p.bloom, n, fpr) < 0)
		exit(1);
	p.probes = malloc((size_t)NPROBE * KEY_LEN);
	p.pk = malloc(NPROBE * sizeof(*p.pk));
	uint64_t st = 7;
	for (uint32_t i = 0; i < NPROBE; i++) {
		st = st * UINT64_C(6364136223846793005) + 1442695040888963407u;
		key_of(p.probes + (size_t)i * KEY_LEN, (i & 1) ? 2 : 1, (i & 1) ? i : (st >> 11) % n);
		p.pk[i] = (shmf_key_t){ p.probes + (size_t)i * KEY_LEN, KEY_LEN };
	}
	/* The rate on 4M absent keys (family 3). */
	uint64_t fp = 0;
	char k[KEY_LEN];
	for (uint32_t i = 0; i < NPROBE; i++) {
		key_of(k, 3, i);
		fp += (uint64_t)shmf_fuse_has(&p.fuse, shmf_hash(k, KEY_LEN, p.fuse.seed));
	}
	double s1[ROUNDS], s2[ROUNDS], b1[ROUNDS], b2[ROUNDS];
	for (int r = 0; r < ROUNDS; r++) {
		s1[r] = single_fuse(&p);
		s2[r] = single_bloom(&p);
		b1[r] = batch_of(&p, 1);
		b2[r] = batch_of(&p, 0);
	}
	double bpk = (double)b.p.array_len * bits / (double)b.keys;
	double sf = bench_median(s1, ROUNDS), sb = bench_median(s2, ROUNDS);
	double bf = bench_median(b1, ROUNDS), bb = bench_median(b2, ROUNDS);
	printf("%11" PRIu64 " %3u-bit  %6.2f bits/key (%.3fx paper)  fpr %.3g (2^-%u = %.3g)  build %.2f M keys/s  "
	       "check %.1f ns vs bloom %.1f ns (%.2fx, bloom %.2f bits/key)  batch %.1f vs %.1f ns (%.2fx)\n",
	       n, bits, bpk, bpk / paper, (double)fp / NPROBE, bits, shmf_fuse_fpr(bits), kps / 1e6, sf, sb, sf / sb,
	       (double)p.bloom.nblocks * 512 / (double)n, bf, bb, bf / bb);
	fflush(stdout);
	fuse_built_free(&b);
	munmap(p.bloom.blocks, p.bloom.nblocks * 64);
	free(p.probes);
	free(p.pk);
}

int main(int argc, char **argv)
{
	uint64_t sizes[8];
	int nsizes = 0, quick = 0;
	uint32_t widths[3] = { 8, 16, 32 };
	int nwidths = 3;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0)
			quick = 1;
		else if (strcmp(argv[i], "--widths") == 0 && i + 1 < argc) {
			nwidths = 0;
			for (char *s = strtok(argv[++i], ","); s && nwidths < 3; s = strtok(NULL, ","))
				widths[nwidths++] = (uint32_t)atoi(s);
		} else if (nsizes < 8)
			sizes[nsizes++] = strtoull(argv[i], NULL, 10);
	}
	if (nsizes == 0) {
		sizes[nsizes++] = 1000000;
		if (!quick)
			sizes[nsizes++] = 100000000;
	}
	for (int s = 0; s < nsizes; s++)
		for (int w = 0; w < nwidths; w++)
			one(sizes[s], widths[w]);
	return 0;
}
