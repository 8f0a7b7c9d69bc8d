/* fuse-build.c - a binary fuse filter built from its keys' hashes
 * (fuse-build.h). Written from the paper's description. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/fuse-build.h"
#include "libclient/segment-format.h"

/* The sort's histograms: SORT_PASSES (6) of 4096 counts. */
#define FUSE_SORT_BYTES (6u * 4096u * 8u)

uint64_t fuse_build_bytes(uint64_t keys, double fpr)
{
	struct shmf_fuse_params p;
	if (shmf_fuse_size(keys, fpr, &p) < 0)
		return UINT64_MAX;
	/* hashes and order (16 a key); the XOR of hashes (8 a fingerprint),
	 * the counts (1) and the filter (1, 2 or 4). */
	uint64_t per_fp = 9 + p.fp_bits / 8;
	if (p.array_len > (UINT64_MAX - 16 * keys) / per_fp)
		return UINT64_MAX;
	return 16 * keys + per_fp * p.array_len + SHMF_BLOCK_BYTES + FUSE_SORT_BYTES;
}

uint64_t fuse_mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[256];
	uint64_t kb = 0;
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "MemAvailable: %" SCNu64 " kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

/* Large arrays from mmap: zero pages for free, and given back whole. */
static void *big_alloc(uint64_t bytes)
{
	void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	(void)madvise(p, bytes, MADV_HUGEPAGE);
	return p;
}

static void big_free(void *p, uint64_t bytes)
{
	if (p != NULL)
		munmap(p, bytes ? bytes : 1);
}

/* The sort orders values by their top bits only, with LSD radix passes
 * of at most SORT_DIGIT_MAX bits (4096 buckets a pass: their write heads
 * stay within the caches and the TLB), enough bits that about SORT_GROUP
 * values share them; an insertion sort then finishes the order, moving
 * each value only within its group. Two passes up to 2^27 keys, three to
 * 2^40: the eight byte passes a full sort takes were most of the build. */
#define SORT_DIGIT_MAX 12u
#define SORT_GROUP     16u
#define SORT_PASSES    6u /* 64 bits / SORT_DIGIT_MAX, rounded up */
_Static_assert(SORT_PASSES *(1u << SORT_DIGIT_MAX) * 8u == FUSE_SORT_BYTES, "fuse_build_bytes counts the sort");

struct sort_plan {
	unsigned passes, digit, low;             /* passes of digit bits each, above bit low */
	uint64_t (*count)[1u << SORT_DIGIT_MAX]; /* per pass, per bucket */
};

static int sort_plan(struct sort_plan *sp, uint64_t n)
{
	unsigned bits = 0;
	while (bits < 64 && (n >> bits) > SORT_GROUP)
		bits++;
	sp->passes = (bits + SORT_DIGIT_MAX - 1) / SORT_DIGIT_MAX;
	sp->digit = sp->passes ? (bits + sp->passes - 1) / sp->passes : 0;
	sp->low = 64 - sp->digit * sp->passes;
	sp->count = calloc(SORT_PASSES, sizeof(*sp->count));
	return sp->count == NULL ? -ENOMEM : 0;
}

/* Count value @p v into each pass's histogram. */
static inline void sort_count(struct sort_plan *sp, uint64_t v)
{
	if (sp->passes == 0)
		return;
	const uint64_t mask = (UINT64_C(1) << sp->digit) - 1;
	v >>= sp->low;
	for (unsigned d = 0; d < sp->passes; d++, v >>= sp->digit)
		sp->count[d][v & mask]++;
}

/* Sort @p n values counted by sort_count(), @p tmp as large; the result is
 * in @p a. A pass whose digit every value shares is skipped. */
static void sort_finish(struct sort_plan *sp, uint64_t *a, uint64_t *tmp, uint64_t n)
{
	const uint64_t mask = (UINT64_C(1) << sp->digit) - 1;
	uint64_t *src = a, *dst = tmp;
	for (unsigned d = 0; d < sp->passes; d++) {
		const unsigned shift = sp->low + d * sp->digit;
		uint64_t *count = sp->count[d];
		if (count[(a[0] >> shift) & mask] == n)
			continue;
		uint64_t at = 0;
		for (uint64_t b = 0; b <= mask; b++) {
			uint64_t c = count[b];
			count[b] = at;
			at += c;
		}
		for (uint64_t i = 0; i < n; i++) {
			uint64_t v = src[i];
			dst[count[(v >> shift) & mask]++] = v;
		}
		uint64_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
	for (uint64_t i = 1; i < n; i++) {
		uint64_t v = a[i], j = i;
		for (; j > 0 && a[j - 1] > v; j--)
			a[j] = a[j - 1];
		a[j] = v;
	}
	memset(sp->count, 0, SORT_PASSES * sizeof(*sp->count));
}

/* The inverse of shmf_mix64: each step undone in reverse order. */
static uint64_t inv_mul(uint64_t c)
{
	uint64_t x = c; /* Newton's iteration: 3 correct bits, doubling */
	for (int i = 0; i < 5; i++)
		x *= 2 - c * x;
	return x;
}

static uint64_t unxorshift(uint64_t x, unsigned s)
{
	uint64_t y = x;
	for (unsigned i = s; i < 64; i += s)
		y = x ^ (y >> s);
	return y;
}

static uint64_t unmix64(uint64_t x)
{
	x = unxorshift(x, 31);
	x *= inv_mul(UINT64_C(0x94d049bb133111eb));
	x = unxorshift(x, 27);
	x *= inv_mul(UINT64_C(0xbf58476d1ce4e5b9));
	return unxorshift(x, 30);
}

/* The arrays of one attempt. */
struct work {
	const struct shmf_fuse_params *p;
	uint64_t count_len, mask;
	uint64_t *m; /* the keys' mixed hashes, sorted and distinct */
	uint64_t n;
	uint64_t *order; /* peeled fingerprints, in peeling order */
	uint64_t *xors;  /* per fingerprint: the XOR of the mixed hashes mapping there */
	uint8_t *count;  /* per fingerprint: how many do (a count that would pass 255 fails the attempt) */
	uint64_t *stack; /* fingerprints below the scan that came down to one key */
	uint64_t stack_len, stack_cap;
	struct sort_plan sort;
};

static inline __attribute__((always_inline)) struct shmf_fuse_pos locate(const struct work *w, uint64_t m)
{
	return shmf_fuse_locate(m, w->count_len, w->p->segment_len, w->mask, w->p->fp_bits);
}

/* Every key counted and XORed into its three fingerprints. @return 0, or
 * -1 when a count would overflow. */
static int fill(struct work *w)
{
	uint8_t over = 0;
	for (uint64_t i = 0; i < w->n; i++) {
		struct shmf_fuse_pos q = locate(w, w->m[i]);
		over |= (uint8_t)(w->count[q.p0] == 255) | (uint8_t)(w->count[q.p1] == 255) |
			(uint8_t)(w->count[q.p2] == 255);
		w->count[q.p0]++, w->count[q.p1]++, w->count[q.p2]++;
		w->xors[q.p0] ^= w->m[i], w->xors[q.p1] ^= w->m[i], w->xors[q.p2] ^= w->m[i];
	}
	return over ? -1 : 0;
}

static int push(struct work *w, uint64_t i)
{
	if (w->stack_len == w->stack_cap) {
		uint64_t cap = w->stack_cap ? w->stack_cap * 2 : 4096;
		uint64_t *s = realloc(w->stack, cap * sizeof(*s));
		if (s == NULL)
			return -ENOMEM;
		w->stack = s;
		w->stack_cap = cap;
	}
	w->stack[w->stack_len++] = i;
	return 0;
}

/* Take the key fingerprint @p i holds alone off its other two; those that
 * come down to one key below @p scan go on the stack (the scan finds the
 * others). @return the number peeled so far, or -ENOMEM. */
static int peel_one(struct work *w, uint64_t i, uint64_t scan, uint64_t *peeled)
{
	uint64_t x = w->xors[i];
	struct shmf_fuse_pos q = locate(w, x);
	uint64_t at[3] = { q.p0, q.p1, q.p2 };
	w->order[(*peeled)++] = i;
	w->count[i] = 0;
	for (unsigned j = 0; j < 3; j++) {
		if (at[j] == i)
			continue;
		w->xors[at[j]] ^= x;
		if (--w->count[at[j]] == 1 && at[j] < scan && push(w, at[j]) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* How far ahead of the scan peel() prefetches. */
#define PEEL_AHEAD 32u

/* Peel every fingerprint: @return the keys peeled, or -ENOMEM. The lines
 * of the key a fingerprint PEEL_AHEAD ahead holds alone are fetched before
 * the scan reaches it (the key may change by then: only a guess). */
static int64_t peel(struct work *w)
{
	uint64_t peeled = 0;
	const uint64_t len = w->p->array_len;
	for (uint64_t i = 0; i < len; i++) {
		uint64_t a = i + PEEL_AHEAD;
		if (a < len && w->count[a] == 1) {
			struct shmf_fuse_pos q = locate(w, w->xors[a]);
			__builtin_prefetch(&w->xors[q.p0], 1), __builtin_prefetch(&w->count[q.p0], 1);
			__builtin_prefetch(&w->xors[q.p1], 1), __builtin_prefetch(&w->count[q.p1], 1);
			__builtin_prefetch(&w->xors[q.p2], 1), __builtin_prefetch(&w->count[q.p2], 1);
		}
		if (w->count[i] != 1)
			continue;
		if (peel_one(w, i, i, &peeled) < 0)
			return -ENOMEM;
		while (w->stack_len > 0) {
			uint64_t j = w->stack[--w->stack_len];
			if (w->count[j] == 1 && peel_one(w, j, i, &peeled) < 0)
				return -ENOMEM;
		}
	}
	return (int64_t)peeled;
}

static void store_fp(void *a, uint32_t bits, uint64_t i, uint32_t v)
{
	switch (bits) {
	case 8: ((uint8_t *)a)[i] = (uint8_t)v; break;
	case 16: ((uint16_t *)a)[i] = (uint16_t)v; break;
	default: ((uint32_t *)a)[i] = v; break;
	}
}

/* The fingerprints, in the reverse order of peeling: each key's last
 * fingerprint set makes its three XOR to its fingerprint. */
static void assign(const struct work *w, void *fp)
{
	const uint32_t bits = w->p->fp_bits;
	for (uint64_t k = w->n; k-- > 0;) {
		uint64_t i = w->order[k];
		struct shmf_fuse_pos q = locate(w, w->xors[i]);
		uint32_t v = q.fp ^ shmf_fuse_load(fp, bits, q.p0) ^ shmf_fuse_load(fp, bits, q.p1) ^
			     shmf_fuse_load(fp, bits, q.p2);
		store_fp(fp, bits, i, v);
	}
}

/* Mix @p n hashes with @p mix (undoing @p old first, when not 0), sort
 * them and drop duplicates: @return the distinct count. */
static uint64_t remix(struct sort_plan *sp, uint64_t *m, uint64_t *tmp, uint64_t n, uint64_t old, int first,
		      uint64_t mix)
{
	for (uint64_t i = 0; i < n; i++) {
		m[i] = shmf_fuse_mix(first ? m[i] : unmix64(m[i]) - old, mix);
		sort_count(sp, m[i]);
	}
	sort_finish(sp, m, tmp, n);
	uint64_t d = 0;
	for (uint64_t i = 0; i < n; i++)
		if (d == 0 || m[i] != m[d - 1])
			m[d++] = m[i];
	return d;
}

/* One attempt with the hashes mixed as they are: @return 1 built (the
 * fingerprints in @p fp), 0 failed, or -ENOMEM. */
static int attempt(struct work *w, void *fp)
{
	uint64_t a = w->p->array_len;
	w->count = big_alloc(a);
	w->xors = big_alloc(a * 8);
	int r = -ENOMEM;
	if (w->count != NULL && w->xors != NULL) {
		int64_t got = fill(w) < 0 ? 0 : peel(w);
		r = got < 0 ? -ENOMEM : (uint64_t)got == w->n;
		big_free(w->count, a);
		w->count = NULL;
		if (r == 1)
			assign(w, fp);
	}
	big_free(w->count, a);
	big_free(w->xors, a * 8);
	w->count = NULL;
	w->xors = NULL;
	return r;
}

static int build_loop(struct work *w, uint64_t n_in, double fpr, struct fuse_built *out)
{
	uint64_t mix = 0, old = 0;
	for (unsigned t = 0; t < FUSE_BUILD_ATTEMPTS; t++) {
		arc4random_buf(&mix, sizeof(mix));
		w->n = remix(&w->sort, w->m, w->order, t == 0 ? n_in : w->n, old, t == 0, mix);
		old = mix;
		if (t == 0) {
			int r = shmf_fuse_size(w->n, fpr, &out->p);
			if (r < 0)
				return r;
			out->payload_bytes = out->p.nblocks * SHMF_BLOCK_BYTES;
			if ((out->payload = big_alloc(out->payload_bytes)) == NULL)
				return -ENOMEM;
			w->p = &out->p;
			w->count_len = out->p.segment_count * out->p.segment_len;
			w->mask = out->p.segment_len - 1u;
		}
		char *fp = (char *)out->payload + SHMF_FUSE_TABLE_BYTES;
		memset(fp, 0, out->payload_bytes - SHMF_FUSE_TABLE_BYTES);
		int r = attempt(w, fp);
		out->attempts = t + 1;
		if (r < 0)
			return r;
		if (r == 1) {
			out->keys = w->n;
			out->mix = mix;
			return 0;
		}
	}
	return SHMF_E_FULL;
}

int fuse_build(uint64_t *h, uint64_t n, double fpr, struct fuse_built *out)
{
	*out = (struct fuse_built){ 0 };
	if (n == 0 || shmf_fuse_bits_for(fpr) == 0)
		return SHMF_E_INVAL;
	struct work w = { .m = h, .n = n, .order = big_alloc(n * 8) };
	if (w.order == NULL || sort_plan(&w.sort, n) < 0) {
		big_free(w.order, n * 8);
		return -ENOMEM;
	}
	int r = build_loop(&w, n, fpr, out);
	big_free(w.order, n * 8);
	free(w.stack);
	free(w.sort.count);
	if (r < 0) {
		fuse_built_free(out);
		return r;
	}
	struct shmf_fuse_table t = {
		.magic = SHMF_FUSE_MAGIC,
		.mix = out->mix,
		.keys = out->keys,
		.array_len = out->p.array_len,
		.segment_len = out->p.segment_len,
		.fp_bits = out->p.fp_bits,
	};
	memcpy(out->payload, &t, sizeof(t));
	return 0;
}

void fuse_built_free(struct fuse_built *b)
{
	big_free(b->payload, b->payload_bytes);
	b->payload = NULL;
}
