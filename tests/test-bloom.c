/*
 * test-bloom.c - the Bloom filter's promises: no false negatives, the
 * measured false-positive rate meets the sizing target, filters past 2^32
 * bits work, and batch calls (in each implementation) agree with single
 * calls.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libclient/bloom.h"
#include "tests/fixture.h"

static struct fixture fx;

static void test_no_false_negatives(void **state)
{
	(void)state;
	char key[17];
	const uint64_t n = 1000000;
	fixture_bloom(&fx, "nofn", n, 0.01);
	shmf_t *f = fixture_open("nofn", SHMF_RDWR);
	uint64_t fresh = 0;
	for (uint64_t i = 0; i < n; i++) {
		int r = shmf_add(f, key, fixture_key(key, 1, i));
		assert_true(r == 0 || r == 1);
		fresh += (uint64_t)r;
	}
	uint64_t missing = 0;
	for (uint64_t i = 0; i < n; i++)
		if (shmf_check(f, key, fixture_key(key, 1, i)) != 1)
			missing++;
	assert_int_equal(missing, 0);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.items, fresh);
	/* Almost every distinct key is new at insertion (a few collide). */
	assert_true(fresh > n * 98 / 100);
	shmf_close(f);
}

static void measure_fpr(double target)
{
	char key[17], name[32];
	const uint64_t n = 1000000, probes = 1000000;
	snprintf(name, sizeof(name), "fpr-%g", target);
	fixture_bloom(&fx, name, n, target);
	shmf_t *f = fixture_open(name, SHMF_RDWR);
	for (uint64_t i = 0; i < n; i++)
		assert_true(shmf_add(f, key, fixture_key(key, 2, i)) >= 0);
	uint64_t fp = 0;
	for (uint64_t i = 0; i < probes; i++)
		fp += (uint64_t)shmf_check(f, key, fixture_key(key, 3, i));
	double measured = (double)fp / (double)probes;
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	printf("target %g: measured %g (%llu of %llu), formula at items %g, k %u, %.2f bits/key\n", target, measured,
	       (unsigned long long)fp, (unsigned long long)probes, info.fpr_estimate, info.k,
	       (double)info.bits / (double)n);
	assert_true(measured >= 0.5 * target);
	assert_true(measured <= 1.5 * target);
	shmf_close(f);
	assert_int_equal(registry_drop(&fx.reg, name, NULL, 0), 0);
}

static void test_fpr(void **state)
{
	(void)state;
	measure_fpr(1e-2);
	measure_fpr(1e-3);
	measure_fpr(1e-4);
}

static void test_sizing(void **state)
{
	(void)state;
	struct shmf_bloom_params p;
	/* The chosen size meets the target by the formula, and one block
	 * fewer would not (it is the smallest). */
	const double targets[] = { 0.1, 0.01, 1e-3, 1e-4, 1e-6 };
	for (unsigned i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		assert_int_equal(shmf_bloom_size(1000000, targets[i], 1, &p), 0);
		assert_true(shmf_bloom_fpr(1000000, p.nblocks, p.k) <= targets[i]);
		assert_true(shmf_bloom_fpr(1000000, p.nblocks - 1, p.k) > targets[i] * 0.999);
		assert_int_equal(p.bits, p.nblocks * 512);
	}
	/* Blocked filters need a little more than the classic 9.6 bits/key at 1%. */
	assert_int_equal(shmf_bloom_size(1000000, 0.01, 1, &p), 0);
	assert_true(p.bits / 1000000.0 > 9.6 && p.bits / 1000000.0 < 11.0);
	/* Bad parameters. */
	assert_int_equal(shmf_bloom_size(0, 0.01, 1, &p), SHMF_E_INVAL);
	assert_int_equal(shmf_bloom_size(1000, 0.0, 1, &p), SHMF_E_INVAL);
	assert_int_equal(shmf_bloom_size(1000, 1.0, 1, &p), SHMF_E_INVAL);
	assert_int_equal(shmf_bloom_size(1000, -0.5, 1, &p), SHMF_E_INVAL);
	assert_int_equal(shmf_bloom_size(1000, NAN, 1, &p), SHMF_E_INVAL);
	assert_int_equal(shmf_bloom_size(UINT64_C(1) << 62, 0.01, 1, &p), SHMF_E_TOOBIG);
	/* Fill and FPR estimates move the right way. */
	assert_true(shmf_bloom_fill(0, 100, 7, 1) == 0.0);
	assert_true(shmf_bloom_fill(1000, 100, 7, 1) > shmf_bloom_fill(100, 100, 7, 1));
	assert_true(shmf_bloom_fpr(2000, 100, 7) > shmf_bloom_fpr(1000, 100, 7));
}

static void test_big(void **state)
{
	(void)state;
	char key[128]; /* XXH3 is inlined here: room for its long-key paths keeps -Warray-bounds quiet */
	/* 500 M keys at 1%: about 4.9e9 bits, past 2^32. */
	const uint64_t cap = 500000000;
	int slot = fixture_bloom(&fx, "big", cap, 0.01);
	shmf_t *f = fixture_open("big", SHMF_RDWR);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	assert_true(info.bits > (UINT64_C(1) << 32));
	/* Find keys whose block starts past bit 2^32, the way libshmf places
	 * them, and add them. */
	uint64_t seed = 0;
	struct shmf_data_map dm = { .fd = -1 };
	struct shmf_slot copy;
	assert_int_equal(shmf_slot_read(&fx.reg.ctl.slots[slot], &copy), 0);
	assert_int_equal(shmf_data_map_open(&fx.reg.dir, &copy, 0, &dm), 0);
	seed = dm.hdr.seed;
	const uint64_t first_high_block = (UINT64_C(1) << 32) / SHMF_BLOCK_BITS;
	uint64_t high[2000];
	unsigned nhigh = 0;
	for (uint64_t i = 0; nhigh < 2000; i++) {
		size_t len = fixture_key(key, 4, i);
		uint64_t b = shmf_block_index(shmf_hash(key, len, seed), info.bits / SHMF_BLOCK_BITS);
		if (b >= first_high_block)
			high[nhigh++] = i;
	}
	for (unsigned j = 0; j < nhigh; j++)
		assert_int_equal(shmf_add(f, key, fixture_key(key, 4, high[j])), 1);
	for (unsigned j = 0; j < nhigh; j++)
		assert_int_equal(shmf_check(f, key, fixture_key(key, 4, high[j])), 1);
	/* The bits really landed past bit 2^32 of the block area, not wrapped
	 * around into low blocks. */
	uint64_t set_low = 0, set_high = 0;
	for (uint64_t w = 0; w < first_high_block * SHMF_BLOCK_WORDS; w++)
		set_low |= dm.blocks[w];
	for (uint64_t b = first_high_block; b < info.bits / SHMF_BLOCK_BITS; b++)
		for (unsigned w = 0; w < SHMF_BLOCK_WORDS; w++)
			set_high += __builtin_popcountll(dm.blocks[b * SHMF_BLOCK_WORDS + w]);
	assert_int_equal(set_low, 0);
	assert_true(set_high >= nhigh);
	assert_true(set_high <= (uint64_t)nhigh * info.k);
	/* And other keys are still mostly absent. */
	unsigned fp = 0;
	for (uint64_t i = 0; i < 10000; i++)
		fp += (unsigned)shmf_check(f, key, fixture_key(key, 5, i));
	assert_true(fp < 10);
	shmf_data_map_close(&dm);
	shmf_close(f);
	assert_int_equal(registry_drop(&fx.reg, "big", NULL, 0), 0);
}

static void test_batch(void **state)
{
	(void)state;
	enum { N = 5000 };
	static char keys[N][17];
	shmf_key_t k[N];
	uint8_t out[N];
	fixture_bloom(&fx, "batch", 100000, 0.001);
	shmf_t *f = fixture_open("batch", SHMF_RDWR);
	for (unsigned i = 0; i < N; i++) {
		k[i].ptr = keys[i];
		k[i].len = fixture_key(keys[i], 6, i);
	}
	/* Add the even keys one by one, then batch-check all. */
	for (unsigned i = 0; i < N; i += 2)
		assert_int_equal(shmf_add(f, k[i].ptr, k[i].len), 1);
	int present = shmf_check_many(f, k, N, out);
	assert_true(present >= N / 2);
	for (unsigned i = 0; i < N; i++) {
		assert_int_equal(out[i], shmf_check(f, k[i].ptr, k[i].len));
		if (i % 2 == 0)
			assert_int_equal(out[i], 1);
	}
	/* Batch-add everything: exactly the odd keys (less false positives)
	 * are new, and the count returned matches out[]. */
	int fresh = shmf_add_many(f, k, N, out);
	int sum = 0;
	for (unsigned i = 0; i < N; i++) {
		sum += out[i];
		if (i % 2 == 0)
			assert_int_equal(out[i], 0);
	}
	assert_int_equal(fresh, sum);
	assert_true(fresh > N / 2 - 20);
	/* A key repeated in one batch is new at most once. */
	shmf_key_t twice[2] = { { "repeat-me", 9 }, { "repeat-me", 9 } };
	assert_int_equal(shmf_add_many(f, twice, 2, out), 1);
	assert_int_equal(out[0] + out[1], 1);
	/* Empty batches and bad arguments. */
	assert_int_equal(shmf_check_many(f, k, 0, out), 0);
	assert_int_equal(shmf_check_many(f, k, 1, NULL), SHMF_E_INVAL);
	shmf_key_t bad[1] = { { NULL, 3 } };
	assert_int_equal(shmf_check_many(f, bad, 1, out), SHMF_E_INVAL);
	assert_int_equal(shmf_add_many(f, bad, 1, out), SHMF_E_INVAL);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.items, (uint64_t)(N / 2 + fresh + 1));
	shmf_close(f);
}

/* One k and layout of test_batch_impls: each bit set with probability
 * 2^(-1/(k lines)), so that a key's k bits in each of its lines are all
 * set with probability about one half. The expected answer is computed
 * here line by line from shmf_line_hash(), apart from the library's
 * check of several lines. */
static void batch_impls_agree(uint64_t *blocks, uint64_t nb, const shmf_key_t *k, unsigned n, uint32_t kk,
			      uint32_t lines, uint8_t *scalar, uint8_t *simd)
{
	double density = pow(0.5, 1.0 / (kk * lines));
	uint64_t threshold = (uint64_t)(density * 4294967296.0);
	for (uint64_t w = 0; w < nb * SHMF_BLOCK_WORDS; w++) {
		uint64_t word = 0;
		for (unsigned b = 0; b < 64; b++)
			if ((shmf_mix64(w * 64 + b + (kk + 40 * lines) * UINT64_C(1000003)) >> 32) < threshold)
				word |= UINT64_C(1) << b;
		blocks[w] = word;
	}
	struct shmf_bloom_geom g = { blocks, nb, 0x5eed0000 + kk, kk, lines };
	size_t n_scalar = shmf_bloom_check_batch(&g, k, n, scalar, SHMF_BLOOM_SCALAR);
	size_t n_simd = shmf_bloom_check_batch(&g, k, n, simd, SHMF_BLOOM_AVX512);
	size_t expect = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t h = shmf_hash(k[i].ptr, k[i].len, g.seed);
		int one = 1;
		for (uint32_t j = 0; j < lines; j++) {
			uint64_t hj = j == 0 ? h : shmf_mix64(h + j * SHMF_LINE_MUL);
			one &= shmf_bloom_block_check_key(blocks + shmf_block_index(hj, nb) * SHMF_BLOCK_WORDS, hj, kk);
		}
		int single = shmf_bloom_has(&g, h);
		if (scalar[i] != one || simd[i] != one || single != one)
			fail_msg("k %u, %u lines, key %u: expected %d, one-key check %d, scalar batch %d, AVX-512 batch %d",
				 kk, lines, i, one, single, scalar[i], simd[i]);
		expect += (size_t)one;
	}
	assert_int_equal(n_scalar, expect);
	assert_int_equal(n_simd, expect);
	/* Both answers occur often, so the comparison means something. */
	assert_true(expect > n / 5 && expect < n * 4 / 5);
}

/*
 * The batch check's implementations (scalar, AVX-512 with 8 and with 16
 * lanes) answer exactly what the one-key check answers, for every k from
 * 1 to SHMF_K_MAX, in every layout (1, 2 and 3 lines a key), and keys of
 * every length: blocks are filled so densely
 * that about half of the answers are 1, so a wrong bit in either direction
 * shows. Without AVX-512 on this CPU the comparison is skipped, not passed.
 */
static void test_batch_impls(void **state)
{
	(void)state;
	enum { NB = 4096, N = 20000 };
	static char keys[N][40];
	static shmf_key_t k[N];
	static uint8_t scalar[N], simd[N];
	uint64_t *blocks = aligned_alloc(SHMF_BLOCK_BYTES, (size_t)NB * SHMF_BLOCK_BYTES);
	assert_non_null(blocks);
	if (!shmf_bloom_have_avx512()) {
		free(blocks);
		skip();
	}
	for (unsigned i = 0; i < N; i++) {
		size_t len = i % sizeof(keys[i]);
		for (size_t b = 0; b < len; b++)
			keys[i][b] = (char)shmf_mix64(i * 64 + b);
		k[i] = (shmf_key_t){ len ? keys[i] : NULL, len };
	}
	for (uint32_t lines = 1; lines <= SHMF_BLOOM_LINES_MAX; lines++)
		for (uint32_t kk = 1; kk <= SHMF_K_MAX; kk++)
			batch_impls_agree(blocks, NB, k, N, kk, lines, scalar, simd);
	free(blocks);
}

/* The sizing as it searched before it skipped the k that cannot win:
 * every k from 1 to 32, each by bisection on bits per key. Filters and
 * snapshot files carry the shape it chose, so the faster search must
 * choose the same one. */
static int reference_size(uint64_t capacity, double fpr, uint32_t *k_out, uint64_t *blocks_out)
{
	uint64_t best_blocks = 0;
	uint32_t best_k = 0;
	for (uint32_t k = 1; k <= SHMF_K_MAX; k++) {
		double lo = 0.5, hi = 512.0;
		if (shmf_bloom_fpr(capacity, (uint64_t)ceil(capacity * hi / SHMF_BLOCK_BITS), k) > fpr)
			continue;
		for (int it = 0; it < 50; it++) {
			double mid = (lo + hi) / 2;
			uint64_t nb = (uint64_t)ceil(capacity * mid / SHMF_BLOCK_BITS);
			if (shmf_bloom_fpr(capacity, nb, k) <= fpr)
				hi = mid;
			else
				lo = mid;
		}
		uint64_t nb = (uint64_t)ceil(capacity * hi / SHMF_BLOCK_BITS);
		while (shmf_bloom_fpr(capacity, nb, k) > fpr)
			nb++;
		if (best_k == 0 || nb < best_blocks) {
			best_blocks = nb;
			best_k = k;
		}
	}
	*k_out = best_k;
	*blocks_out = best_blocks;
	return best_k ? 0 : SHMF_E_INVAL;
}

/* The sizing's search, pruned, chooses what the full search chose: for
 * capacities from 1 to 10^12 and rates from 0.9 to 1e-9, the layers of a
 * growing filter (rates halved 16 times) among them. */
static void test_sizing_search(void **state)
{
	(void)state;
	uint64_t seed = 20261126;
	unsigned n = 0;
	const double rates[] = { 0.9, 0.5, 0.1, 0.05, 0.01, 0.005, 0.001, 1e-4, 1e-5, 1e-6, 1e-9 };
	const uint64_t caps[] = { 1, 2, 7, 100, 1000, 4096, 100000, 1000000, 123456789, 1000000000000 };
	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++)
		for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
			for (unsigned layer = 0; layer < 16; layer += 5) {
				double fpr = rates[r] * pow(0.5, layer);
				struct shmf_bloom_params p;
				uint32_t k;
				uint64_t blocks;
				int want = reference_size(caps[c], fpr, &k, &blocks);
				int got = shmf_bloom_size(caps[c], fpr, 1, &p);
				if (want == 0 && got == 0 && (p.k != k || p.nblocks != blocks))
					fail_msg("capacity %llu fpr %g: k %u, %llu blocks; the full search chose k %u, %llu",
						 (unsigned long long)caps[c], fpr, p.k, (unsigned long long)p.nblocks,
						 k, (unsigned long long)blocks);
				assert_int_equal(got == 0, want == 0);
				n++;
			}
		}
	for (int i = 0; i < 300; i++) {
		uint64_t cap = 1 + fixture_random(&seed) % 100000000;
		double fpr = exp(-(double)(fixture_random(&seed) % 20000) / 1000.0) * 0.99;
		struct shmf_bloom_params p;
		uint32_t k;
		uint64_t blocks;
		int want = reference_size(cap, fpr, &k, &blocks);
		int got = shmf_bloom_size(cap, fpr, 1, &p);
		assert_int_equal(got == 0, want == 0);
		if (got == 0 && (p.k != k || p.nblocks != blocks))
			fail_msg("capacity %llu fpr %.17g: k %u, %llu blocks; the full search chose k %u, %llu",
				 (unsigned long long)cap, fpr, p.k, (unsigned long long)p.nblocks, k,
				 (unsigned long long)blocks);
		n++;
	}
	print_message("%u sizings agree with the full search\n", n);
}

/* The layout the sizing picks at each rate, its memory against a classic
 * Bloom filter's (within SHMF_BLOOM_WITHIN from 1e-4 to 1e-10: at 1e-6
 * and 1e-9 one line takes 1.34x and 1.84x), at a million and at 100
 * million keys. */
static void test_layouts_sizing(void **state)
{
	(void)state;
	const struct {
		double fpr;
		uint32_t lines;
	} want[] = { { 1e-1, 1 }, { 1e-2, 1 }, { 1e-3, 1 }, { 6e-4, 1 }, { 1e-4, 2 },
		     { 1e-5, 2 }, { 1e-6, 2 }, { 1e-7, 3 }, { 1e-9, 3 }, { 1e-12, 3 } };
	const uint64_t caps[] = { 1000000, 100000000 };
	for (unsigned c = 0; c < 2; c++)
		for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			struct shmf_bloom_params p, one;
			double fpr = want[i].fpr, classic = shmf_bloom_classic_bits(fpr);
			assert_int_equal(shmf_bloom_size(caps[c], fpr, 0, &p), 0);
			assert_int_equal(shmf_bloom_size(caps[c], fpr, 1, &one), 0);
			double bpk = (double)p.bits / (double)caps[c], bpk1 = (double)one.bits / (double)caps[c];
			print_message("%g, %" PRIu64
				      " keys: %u lines of k %u, %.1f bits a key (%.3fx classic %.1f; one "
				      "line %.1f, %.3fx)\n",
				      fpr, caps[c], p.lines, p.k, bpk, bpk / classic, classic, bpk1, bpk1 / classic);
			if (p.lines != want[i].lines)
				fail_msg("%g: %u lines a key, expected %u", fpr, p.lines, want[i].lines);
			assert_true(shmf_bloom_fpr_lines(caps[c], p.nblocks, p.k, p.lines) <= fpr);
			assert_true(bpk <= bpk1);
			/* Three lines stay within it down to about 1e-10. */
			if (fpr <= 1e-4 && fpr >= 1e-10)
				assert_true(bpk <= SHMF_BLOOM_WITHIN * classic);
		}
	/* One line at 1e-9 is far from classic: what the layouts are for. */
	struct shmf_bloom_params one;
	assert_int_equal(shmf_bloom_size(1000000, 1e-9, 1, &one), 0);
	assert_true((double)one.bits / 1e6 > 1.8 * shmf_bloom_classic_bits(1e-9));
	/* Four lines do not exist. */
	assert_int_equal(shmf_bloom_size(1000000, 1e-6, 4, &one), SHMF_E_INVAL);
}

/* Fill a filter of @p lines lines a key sized for @p n keys at @p fpr
 * through the batch add, and count the absent keys (of @p probes) it
 * answers present, half through the batch check and half one by one;
 * every added key must be found. */
static void layout_fpr(uint64_t n, double fpr, uint32_t lines, uint64_t probes)
{
	enum { B = 4096 };
	static char keys[B][17];
	static shmf_key_t k[B];
	static uint8_t out[B];
	struct shmf_bloom_params p;
	assert_int_equal(shmf_bloom_size(n, fpr, lines, &p), 0);
	uint64_t *blocks = aligned_alloc(SHMF_BLOCK_BYTES, (size_t)p.nblocks * SHMF_BLOCK_BYTES);
	assert_non_null(blocks);
	memset(blocks, 0, (size_t)p.nblocks * SHMF_BLOCK_BYTES);
	struct shmf_bloom_geom g = { blocks, p.nblocks, 0x1a7e5 + lines, p.k, lines };
	for (int pass = 0; pass < 2; pass++)
		for (uint64_t i = 0; i < n; i += B) {
			unsigned m = n - i < B ? (unsigned)(n - i) : B;
			for (unsigned j = 0; j < m; j++)
				k[j] = (shmf_key_t){ keys[j], fixture_key(keys[j], 40, i + j) };
			if (pass == 0)
				shmf_bloom_add_batch(&g, k, m, NULL);
			else if (shmf_bloom_check_batch(&g, k, m, out, SHMF_BLOOM_AUTO) != m)
				fail_msg("%u lines: an added key is missing", lines);
		}
	uint64_t fp = 0;
	for (uint64_t i = 0; i < probes; i += B) {
		unsigned m = probes - i < B ? (unsigned)(probes - i) : B;
		for (unsigned j = 0; j < m; j++)
			k[j] = (shmf_key_t){ keys[j], fixture_key(keys[j], 41, i + j) };
		if ((i / B) % 2 == 0)
			fp += shmf_bloom_check_batch(&g, k, m, out, SHMF_BLOOM_AUTO);
		else
			for (unsigned j = 0; j < m; j++)
				fp += (uint64_t)shmf_bloom_has(&g, shmf_hash(k[j].ptr, k[j].len, g.seed));
	}
	double expect = fpr * (double)probes, bound = expect + 4.0 * sqrt(expect) + 1.0;
	print_message("%u lines at %g: k %u, %.1f bits a key; %" PRIu64 " of %" PRIu64
		      " absent keys present (%.3g; at most %.0f allowed)\n",
		      lines, fpr, p.k, (double)p.bits / (double)n, fp, probes, (double)fp / (double)probes, bound);
	/* Within the declared rate, up to four standard deviations of counting
	 * noise; and not far below it, so the count means something. */
	assert_true((double)fp <= bound);
	assert_true((double)fp >= expect / 3.0);
	free(blocks);
}

/* Each layout's rate, measured at 1e-3 and 1e-6 (the sizing's own choice
 * at those rates is one line and two lines; the others are forced). */
static void test_layouts_fpr(void **state)
{
	(void)state;
	for (uint32_t lines = 1; lines <= SHMF_BLOOM_LINES_MAX; lines++) {
		layout_fpr(200000, 1e-3, lines, 2000000);
		layout_fpr(1000000, 1e-6, lines, 30000000);
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest all[] = {
		fixture_unit_test(test_no_false_negatives, fx),
		fixture_unit_test(test_fpr, fx),
		fixture_unit_test(test_sizing, fx),
		fixture_unit_test(test_big, fx),
		fixture_unit_test(test_batch, fx),
		fixture_unit_test(test_batch_impls, fx),
		fixture_unit_test(test_sizing_search, fx),
		fixture_unit_test(test_layouts_sizing, fx),
		fixture_unit_test(test_layouts_fpr, fx),
	};
	const char *const names[] = { "no_false_negatives", "fpr",           "sizing",         "big",        "batch",
				      "batch_impls",        "sizing_search", "layouts_sizing", "layouts_fpr" };
	return fixture_run(argc, argv, all, names);
}
