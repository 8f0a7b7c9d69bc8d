/*
 * bench-layouts.c - which Bloom layout reaches a low error rate in the
 * least memory, and what it costs a check and an add (issue 29's study).
 *
 *   bench-layouts [--keys N] [--reps R] [--sizes-only | --timing-only]
 *   bench-layouts --quick
 *
 * The layouts, all over one array of 64-byte lines, all from the one XXH3
 * of libclient/hash.h with libclient's position code (SHMF_FOR_EACH_POS)
 * inside a line:
 *   one     today's: k bits in one line;
 *   two     two independent lines, k bits in each (2k a key);
 *   three   three independent lines, k bits in each (3k a key);
 *   choice  two-choice blocked: k bits in the emptier (fewer bits set) of
 *           the key's two lines; a check tests both;
 *   two8    two lines sized with k <= 8 a line, so that the AVX-512 batch
 *           test takes both lines' 16 positions in one multiply and one
 *           two-source permute (two_lines_fused).
 * Line j > 0 of a key, and its positions, come from shmf_mix64(h + j * c):
 * a bijection of the key's hash, so no second hash of the key.
 *
 * Sizing (the model): for each layout the fewest lines, over k = 1..32 a
 * line, whose expected false-positive rate at N keys is at most the rate.
 * one/two/three: a line holds Poisson(j N / lines) keys' patterns and the
 * per-line rate is shmf_bloom_fpr()'s; the j lines of an absent key are
 * independent, so the rate is its j-th power. choice: the load of a line
 * is that of two-choice balls-into-bins, derived from its fluid limit
 * (Mitzenmacher: ds_i/dt = s_{i-1}^2 - s_i^2, s_i the fraction of lines
 * holding i keys or more, t = keys / lines), choosing by key count; the
 * prototype chooses by popcount, which the measured rate checks. An absent
 * key is a false positive if either line matches: 1 - (1 - f)^2.
 *
 * Then each layout is built with N keys (default 1M) at 1e-4 and 1e-6 and
 * its rate measured over 10M absent keys (1e-9 is the model only: it would
 * take 10^10 absent keys to see ten false positives). Timings at 1e-6,
 * with N and 10N keys, R times (default 5), every layout side by side in
 * each run: a single check (present and absent keys mixed, random order),
 * the same with an early exit (a k-line check stops at the first line
 * that lacks a bit), a batched check (32 keys hashed and all their lines
 * prefetched, the next chunk's while this one is tested, as
 * libclient/bloom-batch.c does) with the scalar test and with the AVX-512
 * one (each line tested as check_chunk_avx512 tests a block; on a CPU
 * without it that column times the scalar batch again), and an add (fill
 * from empty, one fetch-or per word that lacks a bit). Each is given as the median over
 * the runs of its ratio to the one-line filter of the same memory and to
 * the one-line filter at its own size.
 *
 * --sizes-only stops after the model's tables; --timing-only times N keys
 * only (the 100M-key row).
 *
 * --quick (the bench suite): the model's tables, then each layout sized
 * for 1e-3, built with 100k keys and checked with 1M absent keys; exits 1
 * if a present key is missed or a measured rate is above the declared
 * 1e-3 by more than four standard deviations of the count. Nothing is
 * timed.
 */
#include <immintrin.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench/clock.h"
#include "libclient/bloom.h"

enum layout { L_ONE, L_TWO, L_THREE, L_CHOICE, L_TWO8, L_COUNT };

static const char *const layout_name[L_COUNT] = { "one line", "two lines", "three lines", "two-choice",
						  "two lines k<=8" };
static const uint32_t layout_lines[L_COUNT] = { 1, 2, 3, 2, 2 };
static const uint32_t layout_kmax[L_COUNT] = { SHMF_K_MAX, SHMF_K_MAX, SHMF_K_MAX, SHMF_K_MAX, 8 };

struct filt {
	enum layout lay;
	uint32_t k; /* bits a line */
	uint64_t nblocks;
	uint64_t *blocks;
	uint64_t seed;
};

#define CHUNK     32u
#define MAX_LINES 3u
#define LINE_MUL  UINT64_C(0xd6e8feb86659fd93)

/* ---- the layouts ---- */

static inline uint64_t line_hash(uint64_t h, uint32_t j)
{
	return j == 0 ? h : shmf_mix64(h + j * LINE_MUL);
}

static inline uint64_t *line_of(const struct filt *f, uint64_t hj)
{
	return f->blocks + shmf_block_index(hj, f->nblocks) * SHMF_BLOCK_WORDS;
}

static inline uint64_t key_hash(const struct filt *f, const uint64_t key[2])
{
	return shmf_hash(key, 16, f->seed);
}

/* The key's lines and their hashes; prefetched (for writing if @p rw). */
static inline uint32_t lines_of(const struct filt *f, uint64_t h, uint64_t hj[MAX_LINES], uint64_t *line[MAX_LINES],
				int rw)
{
	uint32_t n = layout_lines[f->lay];
	for (uint32_t j = 0; j < n; j++) {
		hj[j] = line_hash(h, j);
		line[j] = line_of(f, hj[j]);
		if (rw)
			__builtin_prefetch(line[j], 1, 3);
		else
			__builtin_prefetch(line[j], 0, 3);
	}
	return n;
}

/* Branch-free over the lines: every line's load is issued before any is
 * tested, so their misses overlap. */
static inline int test_lines(const struct filt *f, const uint64_t hj[], uint64_t *const line[])
{
	switch (f->lay) {
	case L_ONE: return shmf_bloom_block_check_key(line[0], hj[0], f->k);
	case L_TWO:
	case L_TWO8:
		return shmf_bloom_block_check_key(line[0], hj[0], f->k) &
		       shmf_bloom_block_check_key(line[1], hj[1], f->k);
	case L_THREE:
		return shmf_bloom_block_check_key(line[0], hj[0], f->k) &
		       shmf_bloom_block_check_key(line[1], hj[1], f->k) &
		       shmf_bloom_block_check_key(line[2], hj[2], f->k);
	default:
		return shmf_bloom_block_check_key(line[0], hj[0], f->k) |
		       shmf_bloom_block_check_key(line[1], hj[1], f->k);
	}
}

__attribute__((noinline)) static int check_key(const struct filt *f, const uint64_t key[2])
{
	uint64_t hj[MAX_LINES], *line[MAX_LINES];
	lines_of(f, key_hash(f, key), hj, line, 0);
	return test_lines(f, hj, line);
}

/* The same answer, but a k-line check stops at the first line that lacks
 * a bit (a two-choice one at the first that has them all): an absent key
 * usually costs one line's test, at the price of a branch. */
__attribute__((noinline)) static int check_key_early(const struct filt *f, const uint64_t key[2])
{
	uint64_t hj[MAX_LINES], *line[MAX_LINES];
	uint32_t n = lines_of(f, key_hash(f, key), hj, line, 0);
	int want = f->lay != L_CHOICE;
	for (uint32_t j = 0; j < n; j++)
		if (shmf_bloom_block_check_key(line[j], hj[j], f->k) != want)
			return !want;
	return want;
}

static inline unsigned popcount_line(const uint64_t *line)
{
	unsigned c = 0;
	for (unsigned w = 0; w < SHMF_BLOCK_WORDS; w++)
		c += (unsigned)__builtin_popcountll(__atomic_load_n(&line[w], __ATOMIC_RELAXED));
	return c;
}

/*
 * 1 if this call set a bit of the key. k-line: one fetch-or per word that
 * lacks a bit, in every line (shmf_bloom_block_add). Two-choice: a key
 * whose pattern is whole in either line is present (nothing written);
 * otherwise its bits go to the line with fewer bits set, read relaxed, ties
 * to the first.
 */
__attribute__((noinline)) static int add_key(const struct filt *f, const uint64_t key[2])
{
	uint64_t hj[MAX_LINES], *line[MAX_LINES], mask[SHMF_BLOCK_WORDS];
	uint32_t n = lines_of(f, key_hash(f, key), hj, line, 1);
	int fresh = 0;

	if (f->lay == L_CHOICE) {
		if (test_lines(f, hj, line))
			return 0;
		uint32_t j = popcount_line(line[1]) < popcount_line(line[0]);
		shmf_block_masks(hj[j], f->k, mask);
		return shmf_bloom_block_add(line[j], mask);
	}
	for (uint32_t j = 0; j < n; j++) {
		shmf_block_masks(hj[j], f->k, mask);
		fresh |= shmf_bloom_block_add(line[j], mask);
	}
	return fresh;
}

/* The batched check: chunk c + 1 hashed and prefetched while chunk c is
 * tested, as libclient/bloom-batch.c's run() does. */
__attribute__((noinline)) static size_t check_batch(const struct filt *f, const uint64_t (*keys)[2], size_t n)
{
	uint64_t hj[2][CHUNK][MAX_LINES], *line[2][CHUNK][MAX_LINES];
	size_t present = 0;

	for (size_t j = 0; j < CHUNK && j < n; j++)
		lines_of(f, key_hash(f, keys[j]), hj[0][j], line[0][j], 0);
	for (size_t c = 0, cur = 0; c < n; c += CHUNK, cur ^= 1) {
		size_t m = n - c < CHUNK ? n - c : CHUNK;
		for (size_t j = 0; c + CHUNK + j < n && j < CHUNK; j++)
			lines_of(f, key_hash(f, keys[c + CHUNK + j]), hj[cur ^ 1][j], line[cur ^ 1][j], 0);
		for (size_t j = 0; j < m; j++)
			present += (size_t)test_lines(f, hj[cur][j], line[cur][j]);
	}
	return present;
}

/* A line's test as libclient/bloom-batch.c's check_chunk_avx512 makes it:
 * 16 positions in one multiply, their words fetched by one permute. */
__attribute__((target("avx512f"))) static inline __mmask16 lanes_set(__m512i x, __m512i salt, __m512i block,
								     __mmask16 live)
{
	__m512i p = _mm512_mullo_epi32(x, salt);
	__m512i word = _mm512_permutexvar_epi32(_mm512_srli_epi32(p, 28), block);
	word = _mm512_rorv_epi32(word, _mm512_srli_epi32(p, SHMF_POS_SHIFT));
	return _mm512_mask_test_epi32_mask(live, word, _mm512_set1_epi32(1));
}

__attribute__((target("avx512f"))) static inline int line_avx(const uint64_t *line, uint64_t hj, uint32_t k)
{
	const __mmask16 live_lo = (__mmask16)(k >= 16 ? 0xffffu : (1u << k) - 1);
	const __mmask16 live_hi = (__mmask16)(k <= 16 ? 0u : k >= 32 ? 0xffffu : (1u << (k - 16)) - 1);
	__m512i x = _mm512_set1_epi64((long long)(hj * SHMF_POS_MUL));
	__m512i block = _mm512_load_si512((const void *)line);
	int ok = lanes_set(x, _mm512_loadu_si512((const void *)shmf_pos_salt), block, live_lo) == live_lo;
	if (k > 16)
		ok &= lanes_set(x, _mm512_loadu_si512((const void *)(shmf_pos_salt + 16)), block, live_hi) == live_hi;
	return ok;
}

/* Two lines of k <= 8 in one 16-lane test: lanes 0-7 take line 0's hash,
 * lanes 8-15 line 1's (each 64-bit broadcast keeps shmf_pos's word parity),
 * both with salts 0-7; one two-source permute fetches each lane's word from
 * the 32 words of the two lines. */
__attribute__((target("avx512f"))) static inline int two_lines_fused(uint64_t *const line[], const uint64_t hj[],
								     uint32_t k)
{
	const __m512i salt = _mm512_permutexvar_epi32(_mm512_set_epi32(7, 6, 5, 4, 3, 2, 1, 0, 7, 6, 5, 4, 3, 2, 1, 0),
						      _mm512_loadu_si512((const void *)shmf_pos_salt));
	const __m512i half = _mm512_set_epi32(16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0);
	const __mmask16 live = (__mmask16)(((1u << k) - 1) | (((1u << k) - 1) << 8));
	__m512i x = _mm512_mask_blend_epi64(0xf0, _mm512_set1_epi64((long long)(hj[0] * SHMF_POS_MUL)),
					    _mm512_set1_epi64((long long)(hj[1] * SHMF_POS_MUL)));
	__m512i p = _mm512_mullo_epi32(x, salt);
	__m512i idx = _mm512_or_si512(_mm512_srli_epi32(p, 28), half);
	__m512i word = _mm512_permutex2var_epi32(_mm512_load_si512((const void *)line[0]), idx,
						 _mm512_load_si512((const void *)line[1]));
	word = _mm512_rorv_epi32(word, _mm512_srli_epi32(p, SHMF_POS_SHIFT));
	return _mm512_mask_test_epi32_mask(live, word, _mm512_set1_epi32(1)) == live;
}

__attribute__((target("avx512f"))) static inline int test_lines_avx(const struct filt *f, const uint64_t hj[],
								    uint64_t *const line[])
{
	switch (f->lay) {
	case L_ONE: return line_avx(line[0], hj[0], f->k);
	case L_TWO: return line_avx(line[0], hj[0], f->k) & line_avx(line[1], hj[1], f->k);
	case L_THREE:
		return line_avx(line[0], hj[0], f->k) & line_avx(line[1], hj[1], f->k) & line_avx(line[2], hj[2], f->k);
	case L_TWO8: return two_lines_fused(line, hj, f->k);
	default: return line_avx(line[0], hj[0], f->k) | line_avx(line[1], hj[1], f->k);
	}
}

/* check_batch with the AVX-512 test, which today's batch check runs on a
 * CPU that has it. */
__attribute__((target("avx512f"), noinline)) static size_t check_batch_avx(const struct filt *f,
									   const uint64_t (*keys)[2], size_t n)
{
	uint64_t hj[2][CHUNK][MAX_LINES], *line[2][CHUNK][MAX_LINES];
	size_t present = 0;

	for (size_t j = 0; j < CHUNK && j < n; j++)
		lines_of(f, key_hash(f, keys[j]), hj[0][j], line[0][j], 0);
	for (size_t c = 0, cur = 0; c < n; c += CHUNK, cur ^= 1) {
		size_t m = n - c < CHUNK ? n - c : CHUNK;
		for (size_t j = 0; c + CHUNK + j < n && j < CHUNK; j++)
			lines_of(f, key_hash(f, keys[c + CHUNK + j]), hj[cur ^ 1][j], line[cur ^ 1][j], 0);
		for (size_t j = 0; j < m; j++)
			present += (size_t)test_lines_avx(f, hj[cur][j], line[cur][j]);
	}
	return present;
}

static int have_avx512(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f");
}

/* ---- keys: 16 bytes, made from a set number and an index ---- */

enum { SET_FILL = 1, SET_ABSENT = 2 };

static inline void key_make(uint64_t out[2], uint32_t set, uint64_t i)
{
	out[0] = shmf_mix64(i ^ ((uint64_t)set << 56));
	out[1] = ((uint64_t)set << 56) ^ i;
}

/* ---- the model ---- */

static double classic_bits(double p)
{
	return -log(p) / (M_LN2 * M_LN2);
}

/* q[i] = fraction of lines holding i keys after two-choice inserts of
 * t = keys / lines, from the fluid limit by RK4; returns the levels kept. */
static int choice_loads(double t, double *q, int levels)
{
	double *s = calloc((size_t)levels + 1, sizeof(double)), *d[4],
	       *tmp = calloc((size_t)levels + 1, sizeof(double));
	for (int r = 0; r < 4; r++)
		d[r] = calloc((size_t)levels + 1, sizeof(double));
	int steps = (int)ceil(t / 0.01);
	double dt = t / steps;
	s[0] = 1.0;
	for (int st = 0; st < steps; st++) {
		for (int r = 0; r < 4; r++) {
			double c = r == 0 ? 0.0 : r == 3 ? dt : dt / 2;
			for (int i = 0; i <= levels; i++)
				tmp[i] = s[i] + (r == 0 ? 0.0 : c * d[r - 1][i]);
			d[r][0] = 0.0;
			for (int i = 1; i <= levels; i++)
				d[r][i] = tmp[i - 1] * tmp[i - 1] - tmp[i] * tmp[i];
		}
		for (int i = 1; i <= levels; i++)
			s[i] += dt / 6 * (d[0][i] + 2 * d[1][i] + 2 * d[2][i] + d[3][i]);
	}
	for (int i = 0; i < levels; i++)
		q[i] = s[i] - s[i + 1];
	free(s);
	free(tmp);
	for (int r = 0; r < 4; r++)
		free(d[r]);
	return levels;
}

/* Per-line false-positive rate of a line holding i patterns of k bits. */
static double line_fpr(double i, uint32_t k)
{
	return pow(-expm1(i * k * log1p(-1.0 / SHMF_BLOCK_BITS)), k);
}

/* The best (least) model rate over k for @p nb lines; its k in *k_out. */
static double model_best(enum layout lay, uint64_t n, uint64_t nb, uint32_t *k_out)
{
	double best = 2.0, q[256];
	int levels = 0;
	if (lay == L_CHOICE) {
		double t = (double)n / (double)nb;
		levels = (int)(t + 10 * sqrt(t) + 30) < 256 ? (int)(t + 10 * sqrt(t) + 30) : 256;
		choice_loads(t, q, levels);
	}
	for (uint32_t k = 1; k <= layout_kmax[lay]; k++) {
		double r;
		if (lay == L_CHOICE) {
			double f = 0.0;
			for (int i = 0; i < levels; i++)
				f += q[i] * line_fpr(i, k);
			r = -expm1(2 * log1p(-f));
		} else {
			uint32_t j = layout_lines[lay];
			r = pow(shmf_bloom_fpr(j * n, nb, k), j);
		}
		if (r < best) {
			best = r;
			*k_out = k;
		}
	}
	return best;
}

/* The fewest lines whose best k reaches @p p at @p n keys (the model). */
static void size_layout(enum layout lay, uint64_t n, double p, struct filt *f)
{
	uint64_t lo = 1, hi = n; /* 512 bits a key always reaches 1e-9 */
	uint32_t k = 1;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (model_best(lay, n, mid, &k) <= p)
			hi = mid;
		else
			lo = mid + 1;
	}
	model_best(lay, n, lo, &k);
	f->lay = lay;
	f->k = k;
	f->nblocks = lo;
	f->seed = UINT64_C(0x5eed) + (uint64_t)lay;
}

static double bits_per_key(const struct filt *f, uint64_t n)
{
	return (double)f->nblocks * SHMF_BLOCK_BITS / (double)n;
}

/* ---- building and measuring ---- */

static void filt_alloc(struct filt *f)
{
	size_t bytes = f->nblocks * SHMF_BLOCK_BYTES;
	f->blocks = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (f->blocks == MAP_FAILED) {
		perror("bench-layouts: mmap");
		exit(2);
	}
}

static void filt_free(struct filt *f)
{
	munmap(f->blocks, f->nblocks * SHMF_BLOCK_BYTES);
	f->blocks = NULL;
}

/* Empty the filter and add fill keys 0..n; nanoseconds an add. */
static double fill(struct filt *f, uint64_t n)
{
	uint64_t key[2];
	memset(f->blocks, 0, f->nblocks * SHMF_BLOCK_BYTES);
	double t0 = bench_now_ns();
	for (uint64_t i = 0; i < n; i++) {
		key_make(key, SET_FILL, i);
		add_key(f, key);
	}
	return (bench_now_ns() - t0) / (double)n;
}

struct measured {
	uint64_t missed; /* present keys answered absent */
	uint64_t fp;     /* absent keys answered present */
	uint64_t absent;
};

static struct measured measure_fpr(struct filt *f, uint64_t n, uint64_t absent)
{
	struct measured m = { 0, 0, absent };
	uint64_t key[2];
	fill(f, n);
	for (uint64_t i = 0; i < n; i++) {
		key_make(key, SET_FILL, i);
		m.missed += !check_key(f, key);
	}
	for (uint64_t i = 0; i < absent; i++) {
		key_make(key, SET_ABSENT, i);
		m.fp += (uint64_t)check_key(f, key);
	}
	return m;
}

/* ---- the reports ---- */

static void print_sizes(uint64_t n)
{
	static const double rates[] = { 1e-3, 1e-4, 1e-6, 1e-9 };
	printf("Bits per key, sized by the model at %" PRIu64 " keys (k = bits a line; x = against classic):\n", n);
	printf("%-8s %-9s", "rate", "classic");
	for (int l = 0; l < L_COUNT; l++)
		printf(" | %-22s", layout_name[l]);
	printf("\n");
	for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
		double c = classic_bits(rates[r]);
		printf("%-8.0e %-9.1f", rates[r], c);
		for (int l = 0; l < L_COUNT; l++) {
			struct filt f;
			size_layout((enum layout)l, n, rates[r], &f);
			double b = bits_per_key(&f, n);
			printf(" | %5.1f k=%-2" PRIu32 " %5.3fx    ", b, f.k, b / c);
		}
		printf("\n");
	}
}

/* For each layout, the rates (on a grid of ten steps a decade) at which
 * its bits per key are within 1.10x of classic: where the
 * one-line layout must stay the choice, and where each other one meets
 * issue 29's memory target. */
static void print_within(uint64_t n)
{
	printf("\nRates (10 steps a decade, 1e-1 to 1e-10) at which bits per key are within 1.10x of classic:\n");
	for (int l = 0; l < L_COUNT; l++) {
		double hi = 0.0, lo = 0.0;
		for (int e = 10; e <= 100; e++) {
			double p = pow(10.0, -e / 10.0);
			struct filt f;
			size_layout((enum layout)l, n, p, &f);
			if (bits_per_key(&f, n) <= 1.10 * classic_bits(p)) {
				hi = hi == 0.0 ? p : hi;
				lo = p;
			}
		}
		printf("  %-12s from %.2e down to %.2e\n", layout_name[l], hi, lo);
	}
}

/* Build every layout at @p p with @p n keys; 1 if each is within bounds
 * (no present key missed; the count of false positives no more than four
 * standard deviations above what the declared rate allows). */
static int print_measured(uint64_t n, double p, uint64_t absent)
{
	int ok = 1;
	printf("\nMeasured at %.0e: %" PRIu64 " keys, %" PRIu64 " absent keys checked\n", p, n, absent);
	printf("%-12s %7s %4s %12s %12s %8s %s\n", "layout", "bits/key", "k", "model FPR", "measured", "fp", "missed");
	for (int l = 0; l < L_COUNT; l++) {
		struct filt f;
		size_layout((enum layout)l, n, p, &f);
		uint32_t k;
		double model = model_best(f.lay, n, f.nblocks, &k);
		filt_alloc(&f);
		struct measured m = measure_fpr(&f, n, absent);
		filt_free(&f);
		double expect = p * (double)absent;
		int good = m.missed == 0 && (double)m.fp <= expect + 4 * sqrt(expect);
		ok &= good;
		printf("%-12s %7.2f %4" PRIu32 " %12.3e %12.3e %8" PRIu64 " %" PRIu64 "%s\n", layout_name[l],
		       bits_per_key(&f, n), f.k, model, (double)m.fp / (double)m.absent, m.fp, m.missed,
		       good ? "" : "   <- OUT OF BOUNDS");
	}
	return ok;
}

/* ---- timings ---- */

enum { OP_CHECK, OP_EARLY, OP_BATCH, OP_AVX, OP_ADD, OP_COUNT };
static const char *const op_name[OP_COUNT] = { "check", "early", "batch", "avx", "add" };

/* The timed filters: the four layouts at their own sizes, then the one-line
 * filter with the memory of each of two, three and two-choice. */
#define NTIMED  (L_COUNT + L_COUNT - 1)
#define MAXREPS 31

struct timed {
	struct filt f[NTIMED];
	double ns[NTIMED][OP_COUNT][MAXREPS];
	uint64_t (*probes)[2];
	size_t nprobes;
};

static void timed_setup(struct timed *t, uint64_t n, double p)
{
	for (int l = 0; l < L_COUNT; l++)
		size_layout((enum layout)l, n, p, &t->f[l]);
	for (int l = 1; l < L_COUNT; l++) {
		struct filt *g = &t->f[L_COUNT + l - 1];
		*g = t->f[L_ONE];
		g->nblocks = t->f[l].nblocks;
		model_best(L_ONE, n, g->nblocks, &g->k);
	}
	for (int i = 0; i < NTIMED; i++)
		filt_alloc(&t->f[i]);
	/* Half present, half absent, in random order. */
	t->nprobes = 2000000;
	t->probes = malloc(t->nprobes * sizeof(*t->probes));
	for (size_t j = 0; j < t->nprobes; j++) {
		uint64_t r = shmf_mix64(j + UINT64_C(0x9b0be));
		if (r & 1)
			key_make(t->probes[j], SET_FILL, (r >> 1) % n);
		else
			key_make(t->probes[j], SET_ABSENT, r >> 1);
	}
}

static void timed_run(struct timed *t, uint64_t n, int rep)
{
	volatile size_t sink = 0;
	for (int o = 0; o < NTIMED; o++) {
		int i = (o + rep) % NTIMED; /* a different filter first each run */
		struct filt *f = &t->f[i];
		t->ns[i][OP_ADD][rep] = fill(f, n);
		double at[OP_COUNT + 1];
		size_t found[OP_COUNT] = { 0 };
		at[0] = bench_now_ns();
		for (size_t j = 0; j < t->nprobes; j++)
			found[OP_CHECK] += (size_t)check_key(f, t->probes[j]);
		at[1] = bench_now_ns();
		for (size_t j = 0; j < t->nprobes; j++)
			found[OP_EARLY] += (size_t)check_key_early(f, t->probes[j]);
		at[2] = bench_now_ns();
		found[OP_BATCH] = check_batch(f, (const uint64_t(*)[2])t->probes, t->nprobes);
		at[3] = bench_now_ns();
		found[OP_AVX] = have_avx512() ? check_batch_avx(f, (const uint64_t(*)[2])t->probes, t->nprobes)
					      : check_batch(f, (const uint64_t(*)[2])t->probes, t->nprobes);
		at[4] = bench_now_ns();
		for (int op = OP_EARLY; op <= OP_AVX; op++)
			if (found[op] != found[OP_CHECK]) {
				fprintf(stderr, "bench-layouts: %s: check found %zu, %s %zu\n", layout_name[f->lay],
					found[OP_CHECK], op_name[op], found[op]);
				exit(2);
			}
		sink += found[OP_CHECK];
		for (int op = OP_CHECK; op <= OP_AVX; op++)
			t->ns[i][op][rep] = (at[op + 1] - at[op]) / (double)t->nprobes;
	}
	(void)sink;
}

/* Median over the runs of filter a's time for @p op over filter b's. */
static double ratio(struct timed *t, int a, int b, int op, int reps)
{
	double r[MAXREPS];
	for (int i = 0; i < reps; i++)
		r[i] = t->ns[a][op][i] / t->ns[b][op][i];
	return bench_median(r, reps);
}

static double median_ns(struct timed *t, int a, int op, int reps)
{
	double r[MAXREPS];
	memcpy(r, t->ns[a][op], (size_t)reps * sizeof(double));
	return bench_median(r, reps);
}

static void print_timings(uint64_t n, double p, int reps)
{
	struct timed *t = calloc(1, sizeof(*t));
	timed_setup(t, n, p);
	for (int rep = 0; rep < reps; rep++)
		timed_run(t, n, rep);
	printf("\nTimes at %.0e, %" PRIu64 " keys, %zu probes (half present), medians of %d runs side by side\n", p, n,
	       t->nprobes, reps);
	printf("%-22s %8s %6s", "filter", "bits/key", "MB");
	for (int op = 0; op < OP_COUNT; op++)
		printf(" %8s ns", op_name[op]);
	printf("\n");
	for (int i = 0; i < NTIMED; i++) {
		const struct filt *f = &t->f[i];
		char name[40];
		snprintf(name, sizeof(name), "%s%s", layout_name[f->lay], i >= L_COUNT ? " (same mem)" : "");
		printf("%-22s %8.2f %6.1f", name, bits_per_key(f, n), (double)f->nblocks * SHMF_BLOCK_BYTES / 1e6);
		for (int op = 0; op < OP_COUNT; op++)
			printf(" %11.1f", median_ns(t, i, op, reps));
		printf("\n");
	}
	printf("Ratios (median of the %d runs' ratios): against the one-line filter of the same memory / "
	       "against the one-line filter at its own size\n%-12s",
	       reps, "layout");
	for (int op = 0; op < OP_COUNT; op++)
		printf(" %13s", op_name[op]);
	printf("\n");
	for (int l = 1; l < L_COUNT; l++) {
		printf("%-12s", layout_name[l]);
		for (int op = 0; op < OP_COUNT; op++)
			printf("   %5.2f/%5.2f", ratio(t, l, L_COUNT + l - 1, op, reps), ratio(t, l, L_ONE, op, reps));
		printf("\n");
	}
	for (int i = 0; i < NTIMED; i++)
		filt_free(&t->f[i]);
	free(t->probes);
	free(t);
}

static uint64_t parse_u64(const char *s, const char *what)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v == 0) {
		fprintf(stderr, "bench-layouts: %s must be a positive integer, not '%s'\n", what, s);
		exit(2);
	}
	return (uint64_t)v;
}

int main(int argc, char **argv)
{
	uint64_t n = 1000000;
	int reps = 5, quick = 0, sizes_only = 0, timing_only = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0)
			quick = 1;
		else if (strcmp(argv[i], "--sizes-only") == 0)
			sizes_only = 1;
		else if (strcmp(argv[i], "--timing-only") == 0)
			timing_only = 1;
		else if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc)
			n = parse_u64(argv[++i], "--keys");
		else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
			reps = (int)parse_u64(argv[++i], "--reps");
		else {
			fprintf(stderr,
				"usage: bench-layouts [--keys N] [--reps R (at most %d)] [--sizes-only | --timing-only] | --quick\n",
				MAXREPS);
			return 2;
		}
	}
	if (reps > MAXREPS) {
		fprintf(stderr, "bench-layouts: --reps is at most %d\n", MAXREPS);
		return 2;
	}
	if (quick) {
		print_sizes(1000000);
		return print_measured(100000, 1e-3, 1000000) ? 0 : 1;
	}
	if (timing_only) {
		print_timings(n, 1e-6, reps);
		return 0;
	}
	print_sizes(n);
	print_within(n);
	if (sizes_only)
		return 0;
	print_measured(n, 1e-4, 10000000);
	print_measured(n, 1e-6, 10000000);
	print_timings(n, 1e-6, reps);
	print_timings(n * 10, 1e-6, reps);
	return 0;
}
