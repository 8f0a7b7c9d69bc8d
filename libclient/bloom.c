/* bloom.c - sizing and estimates for the blocked Bloom filter. */
#include <math.h>

#include "libclient/bloom.h"

static double poisson_pmf(double lambda, uint64_t i)
{
	return exp(-lambda + (double)i * log(lambda) - lgamma((double)i + 1.0));
}

double shmf_bloom_fpr(uint64_t n, uint64_t nblocks, uint32_t k)
{
	if (nblocks == 0 || k == 0)
		return 1.0;
	if (n == 0)
		return 0.0;
	double lambda = (double)n / (double)nblocks;
	/* Past 65,536 keys a block, every term of the sum below is 1 to double
	 * precision (a block holding 62,000 keys or more has each bit set but
	 * with probability below e^-121). Answer at once: the sum would take
	 * about 24 sqrt(lambda) steps, billions for the item count that a
	 * writer scribbling over the shared counters can leave (shmf_info,
	 * and the daemon's INFO with it, would hang). */
	if (!(lambda <= 65536.0))
		return 1.0;
	double miss_one = log1p(-1.0 / SHMF_BLOCK_BITS);
	/* Sum the Poisson terms around the mean until they vanish. */
	uint64_t lo = lambda > 12.0 * sqrt(lambda) + 20.0 ? (uint64_t)(lambda - 12.0 * sqrt(lambda) - 20.0) : 0;
	uint64_t hi = (uint64_t)(lambda + 12.0 * sqrt(lambda) + 40.0);
	double sum = 0.0;

	for (uint64_t i = lo; i <= hi; i++) {
		double p_bit = -expm1((double)i * k * miss_one);
		sum += poisson_pmf(lambda, i) * pow(p_bit, k);
	}
	return sum > 1.0 ? 1.0 : sum;
}

double shmf_bloom_fpr_lines(uint64_t n, uint64_t nblocks, uint32_t k, uint32_t lines)
{
	if (lines <= 1)
		return shmf_bloom_fpr(n, nblocks, k);
	/* lines * n overflows only past any filter's capacity: saturate. */
	uint64_t patterns = n > UINT64_MAX / lines ? UINT64_MAX : n * lines;
	return pow(shmf_bloom_fpr(patterns, nblocks, k), (double)lines);
}

double shmf_bloom_fill(uint64_t n, uint64_t nblocks, uint32_t k, uint32_t lines)
{
	if (nblocks == 0)
		return 1.0;
	double m = (double)nblocks * SHMF_BLOCK_BITS;
	return -expm1((double)n * k * (lines ? lines : 1) * log1p(-1.0 / m));
}

double shmf_bloom_classic_bits(double fpr)
{
	return -log(fpr) / (M_LN2 * M_LN2);
}

/* The fewest blocks with which @p k bits per key reach @p fpr at
 * @p capacity keys, as the sizing has always searched it (a bisection on
 * bits per key, then up to the first block count that holds), or 0 if no
 * count up to 512 bits a key does. */
static uint64_t blocks_for_k(uint64_t capacity, double fpr, uint32_t k)
{
	/* Binary search on bits per key for this k. */
	double lo = 0.5, hi = 512.0;
	if (shmf_bloom_fpr(capacity, (uint64_t)ceil(capacity * hi / SHMF_BLOCK_BITS), k) > fpr)
		return 0;
	for (int it = 0; it < 50; it++) {
		double mid = (lo + hi) / 2;
		uint64_t nb = (uint64_t)ceil(capacity * mid / SHMF_BLOCK_BITS);
		if (shmf_bloom_fpr(capacity, nb, k) <= fpr)
			hi = mid;
		else
			lo = mid;
	}
	uint64_t nb = (uint64_t)ceil(capacity * hi / SHMF_BLOCK_BITS);
	/* ceil() of a double can land one short; step up until it holds. */
	while (shmf_bloom_fpr(capacity, nb, k) > fpr)
		nb++;
	return nb;
}

/* The one-line sizing: the fewest blocks over k = 1..SHMF_K_MAX for
 * @p capacity patterns at rate @p fpr. A layout of j lines is this sizing
 * of j * capacity patterns at fpr^(1/j) (shmf_bloom_fpr_lines()). */
static int size_one_line(uint64_t capacity, double fpr, struct shmf_bloom_params *out)
{
	/* The fewest blocks over k = 1..SHMF_K_MAX, the smallest k among
	 * equals. Searching each k takes about 50 evaluations of the FPR
	 * formula; so the search starts at the k a classic filter would use
	 * (-log2 fpr), and another k is searched only if one evaluation says
	 * it could do better: the FPR falls as blocks are added, so a k that
	 * misses the target with one block fewer than the best (or, for a
	 * smaller k, with as many) cannot beat it. Same answer as searching
	 * every k, in a few milliseconds less (every open of a grown filter
	 * sizes each of its layers). */
	double guess = -log2(fpr);
	uint32_t k0 = guess < 1.0 ? 1 : guess > SHMF_K_MAX ? SHMF_K_MAX : (uint32_t)lround(guess);
	uint64_t best_blocks = blocks_for_k(capacity, fpr, k0);
	uint32_t best_k = best_blocks != 0 ? k0 : 0;
	for (uint32_t k = 1; k <= SHMF_K_MAX; k++) {
		if (k == k0)
			continue;
		if (best_k != 0) {
			uint64_t probe = k < best_k ? best_blocks : best_blocks - 1;
			if (probe == 0 || shmf_bloom_fpr(capacity, probe, k) > fpr)
				continue;
		}
		uint64_t nb = blocks_for_k(capacity, fpr, k);
		if (nb != 0 && (best_k == 0 || nb < best_blocks || (nb == best_blocks && k < best_k))) {
			best_blocks = nb;
			best_k = k;
		}
	}
	if (best_k == 0)
		return SHMF_E_INVAL;
	if (best_blocks > (SHMF_DATA_MAX_BYTES - SHMF_DATA_BLOCKS_OFF) / SHMF_BLOCK_BYTES)
		return SHMF_E_TOOBIG;
	out->k = best_k;
	out->lines = 1;
	out->nblocks = best_blocks;
	out->bits = best_blocks * SHMF_BLOCK_BITS;
	return 0;
}

/* Layout @p lines (1..SHMF_BLOOM_LINES_MAX). */
static int size_lines(uint64_t capacity, double fpr, uint32_t lines, struct shmf_bloom_params *out)
{
	if (lines == 1)
		return size_one_line(capacity, fpr, out);
	int r = size_one_line(capacity * lines, pow(fpr, 1.0 / lines), out);
	if (r < 0)
		return r;
	/* The root's rounding may leave the power a hair above fpr. */
	while (shmf_bloom_fpr_lines(capacity, out->nblocks, out->k, lines) > fpr) {
		if (out->nblocks >= (SHMF_DATA_MAX_BYTES - SHMF_DATA_BLOCKS_OFF) / SHMF_BLOCK_BYTES)
			return SHMF_E_TOOBIG;
		out->nblocks++;
	}
	out->lines = lines;
	out->bits = out->nblocks * SHMF_BLOCK_BITS;
	return 0;
}

int shmf_bloom_size(uint64_t capacity, double fpr, uint32_t lines, struct shmf_bloom_params *out)
{
	if (capacity == 0 || !(fpr > 0.0 && fpr < 1.0) || lines > SHMF_BLOOM_LINES_MAX)
		return SHMF_E_INVAL;
	/* Refuse before any arithmetic can overflow: even one bit per key,
	 * in each of three lines. */
	if (capacity > SHMF_DATA_MAX_BYTES * 8 / SHMF_BLOOM_LINES_MAX)
		return SHMF_E_TOOBIG;
	if (lines != 0)
		return size_lines(capacity, fpr, lines, out);
	/* The fewest lines within SHMF_BLOOM_WITHIN of classic Bloom's
	 * memory; where none is, the least memory. */
	double limit = SHMF_BLOOM_WITHIN * shmf_bloom_classic_bits(fpr) * (double)capacity;
	struct shmf_bloom_params best = { 0 }, p;
	int r = SHMF_E_INVAL;
	for (uint32_t j = 1; j <= SHMF_BLOOM_LINES_MAX; j++) {
		int rj = size_lines(capacity, fpr, j, &p);
		if (rj < 0) {
			r = best.lines ? r : rj;
			continue;
		}
		if ((double)p.bits <= limit) {
			*out = p;
			return 0;
		}
		if (best.lines == 0 || p.nblocks < best.nblocks) {
			best = p;
			r = 0;
		}
	}
	if (r == 0)
		*out = best;
	return r;
}
