/* redisbloom.c - filters imported from RedisBloom: their table checked and
 * copied, and checks that answer as RedisBloom answers (redisbloom.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "libclient/redisbloom.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "RedisBloom reads its hash input in the host's byte order; dumps come from little-endian hosts");

/* The seeds of RedisBloom's hash pairs, and the constant of a cuckoo
 * fingerprint's second bucket (part of the format it dumps). */
#define RB_SEED64       UINT64_C(0xc6a4a7935bd1e995)
#define RB_SEED32       UINT32_C(0x9747b28c)
#define RB_CUCKOO_ALT   UINT64_C(0x5bd1e995)
#define RB_LN2          0.693147180559945   /* the ln 2 RedisBloom derives k with */
#define RB_OPTIONS      (1u | 2u | 4u | 8u) /* NOROUND, ENTS_IS_BITS, FORCE64, NO_SCALING */
#define RB_OPT_FORCE64  4u
#define RB_CUCKOO_BYTES (UINT64_C(1) << 32) /* a sub-filter's bytes, at most (RedisBloom's 32-bit index) */

uint64_t shmf_murmur64a(const void *key, size_t len, uint64_t seed)
{
	const uint64_t m = UINT64_C(0xc6a4a7935bd1e995);
	const unsigned char *p = key;
	uint64_t h = seed ^ ((uint64_t)len * m);
	for (size_t n = len / 8; n > 0; n--, p += 8) {
		uint64_t k;
		memcpy(&k, p, sizeof(k));
		k *= m;
		k ^= k >> 47;
		k *= m;
		h ^= k;
		h *= m;
	}
	/* The last len % 8 bytes, byte j at bits 8j; mixed once if any. */
	size_t rest = len & 7;
	for (size_t j = rest; j > 0; j--)
		h ^= (uint64_t)p[j - 1] << (8 * (j - 1));
	if (rest != 0)
		h *= m;
	h ^= h >> 47;
	h *= m;
	h ^= h >> 47;
	return h;
}

uint32_t shmf_murmur2(const void *key, size_t len, uint32_t seed)
{
	const uint32_t m = UINT32_C(0x5bd1e995);
	const unsigned char *p = key;
	uint32_t h = seed ^ (uint32_t)len;
	for (size_t n = len / 4; n > 0; n--, p += 4) {
		uint32_t k;
		memcpy(&k, p, sizeof(k));
		k *= m;
		k ^= k >> 24;
		k *= m;
		h *= m;
		h ^= k;
	}
	size_t rest = len & 3;
	for (size_t j = rest; j > 0; j--)
		h ^= (uint32_t)p[j - 1] << (8 * (j - 1));
	if (rest != 0)
		h *= m;
	h ^= h >> 13;
	h *= m;
	h ^= h >> 15;
	return h;
}

/* ---- The table ----------------------------------------------------------- */

static int zero(const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i] != 0)
			return 0;
	return 1;
}

/* A Bloom link as RedisBloom's bloom_validate_integrity() holds it, with
 * bounds of our own on k and the modulus. */
static int bloom_link_ok(const struct shmf_rb_link *l)
{
	double error, bpe;
	memcpy(&error, &l->error_bits, sizeof(error));
	memcpy(&bpe, &l->bpe_bits, sizeof(bpe));
	if (l->bytes == 0 || l->bits != l->bytes * 8 || l->n2 > 63 || (l->n2 != 0 && l->bits < (UINT64_C(1) << l->n2)))
		return 0;
	if (!(error > 0.0 && error < 1.0) || !(bpe >= 0.0 && RB_LN2 * bpe <= SHMF_RB_HASHES_MAX))
		return 0;
	return l->hashes == (uint32_t)ceil(RB_LN2 * bpe);
}

static int cuckoo_link_ok(const struct shmf_rb_link *l, uint32_t bucket_size)
{
	return l->bits != 0 && l->bits < RB_CUCKOO_BYTES && l->bytes == l->bits * bucket_size &&
	       l->bytes < RB_CUCKOO_BYTES && l->entries == 0 && l->size == 0 && l->error_bits == 0 &&
	       l->bpe_bits == 0 && l->hashes == 0 && l->n2 == 0;
}

/* The table's header fields, for scheme @p scheme. */
static int table_ok(uint32_t scheme, const struct shmf_rb_table *t)
{
	if (t->magic != SHMF_RB_MAGIC || t->nlinks == 0 || t->nlinks > SHMF_RB_LINKS_MAX ||
	    !zero(t->pad, sizeof(t->pad)))
		return 0;
	if (scheme == SHMF_SCHEME_RB_BLOOM)
		return (t->options & ~RB_OPTIONS) == 0 &&
		       t->hash == ((t->options & RB_OPT_FORCE64) ? SHMF_RB_HASH_MURMUR64 : SHMF_RB_HASH_MURMUR32) &&
		       t->deletes == 0 && t->bucket_size == 0 && t->max_iterations == 0;
	return t->hash == SHMF_RB_HASH_CUCKOO && t->options == 0 && t->bucket_size >= 1 && t->bucket_size <= 255;
}

/* Each link's fields, and where it lies: every one where the layout puts
 * it, the last ending the payload (@p bytes). */
static int links_ok(uint32_t scheme, const struct shmf_rb_table *t, const struct shmf_rb_link *l, uint64_t bytes)
{
	uint64_t at = shmf_rb_align(shmf_rb_table_bytes(t->nlinks)), sizes = 0;
	for (uint32_t i = 0; i < t->nlinks; i++) {
		if (scheme == SHMF_SCHEME_RB_BLOOM ? !bloom_link_ok(&l[i]) : !cuckoo_link_ok(&l[i], t->bucket_size))
			return 0;
		if (l[i].offset != at || l[i].bytes > bytes || at > bytes - l[i].bytes)
			return 0;
		at = shmf_rb_align(at + l[i].bytes);
		if (l[i].size > UINT64_MAX - sizes)
			return 0;
		sizes += l[i].size;
	}
	/* A chain's size is its links' (RedisBloom's SB_ValidateIntegrity). */
	return at == bytes && (scheme != SHMF_SCHEME_RB_BLOOM || sizes == t->items);
}

static void part_fill(struct shmf_rb *rb, const struct shmf_rb_table *t, const struct shmf_rb_link *l,
		      const uint8_t *payload)
{
	for (uint32_t i = 0; i < t->nlinks; i++) {
		struct shmf_rb_part *p = &rb->part[i];
		p->bytes = payload + l[i].offset;
		if (rb->scheme == SHMF_SCHEME_RB_CUCKOO) {
			p->mod = l[i].bits;
			p->k = t->bucket_size;
			rb->capacity += l[i].bytes;
			rb->bits += l[i].bytes * 8;
			continue;
		}
		p->pow2 = l[i].n2 != 0;
		p->mod = p->pow2 ? UINT64_C(1) << l[i].n2 : l[i].bits;
		p->wrap = (UINT64_MAX % p->mod + 1) % p->mod;
		p->inv = p->pow2 ? 0 : ~(unsigned __int128)0 / p->mod + 1;
		p->k = l[i].hashes;
		p->size = l[i].size;
		rb->capacity = l[i].entries > UINT64_MAX - rb->capacity ? UINT64_MAX : rb->capacity + l[i].entries;
		rb->bits += l[i].bits;
	}
	if (rb->scheme == SHMF_SCHEME_RB_BLOOM)
		memcpy(&rb->error, &l[0].error_bits, sizeof(rb->error));
}

int shmf_rb_open(uint32_t scheme, const void *payload, uint64_t bytes, struct shmf_rb **out)
{
	struct shmf_rb_table t;
	if (scheme != SHMF_SCHEME_RB_BLOOM && scheme != SHMF_SCHEME_RB_CUCKOO)
		return SHMF_E_TYPE;
	if (bytes < sizeof(t))
		return SHMF_E_FORMAT;
	memcpy(&t, payload, sizeof(t));
	if (!table_ok(scheme, &t) || shmf_rb_table_bytes(t.nlinks) > bytes)
		return SHMF_E_FORMAT;
	/* A private copy of the links: the payload is shared memory. */
	struct shmf_rb_link *l = malloc(t.nlinks * sizeof(*l));
	if (l == NULL)
		return -ENOMEM;
	memcpy(l, (const char *)payload + sizeof(t), t.nlinks * sizeof(*l));
	int r = links_ok(scheme, &t, l, bytes) ? 0 : SHMF_E_FORMAT;
	struct shmf_rb *rb = NULL;
	if (r == 0 && out != NULL && (rb = calloc(1, sizeof(*rb) + t.nlinks * sizeof(rb->part[0]))) == NULL)
		r = -ENOMEM;
	if (rb != NULL) {
		*rb = (struct shmf_rb){ .scheme = scheme,
					.hash = t.hash,
					.nlinks = t.nlinks,
					.bucket_size = t.bucket_size,
					.max_iterations = t.max_iterations,
					.items = t.items,
					.deletes = t.deletes,
					.growth = t.growth,
					.options = t.options };
		part_fill(rb, &t, l, payload);
		*out = rb;
	}
	free(l);
	return r;
}

void shmf_rb_estimates(const struct shmf_rb *rb, double *fill, double *fpr)
{
	if (rb->scheme == SHMF_SCHEME_RB_CUCKOO) {
		double load = rb->capacity ? (double)rb->items / (double)rb->capacity : 1.0;
		*fill = load > 1.0 ? 1.0 : load;
		double f = rb->nlinks * 2.0 * rb->bucket_size * *fill / 255.0;
		*fpr = f > 1.0 ? 1.0 : f;
		return;
	}
	double set = 0.0, none = 1.0;
	for (uint32_t i = 0; i < rb->nlinks; i++) {
		const struct shmf_rb_part *p = &rb->part[i];
		double bits = (double)p->mod, one = -expm1(-(double)p->k * (double)p->size / bits);
		set += one * bits;
		none *= 1.0 - pow(one, p->k);
	}
	*fill = rb->bits ? set / (double)rb->bits : 0.0;
	*fpr = 1.0 - none;
}

void shmf_rb_free(struct shmf_rb *rb)
{
	free(rb);
}

/* ---- Checks -------------------------------------------------------------- */

/* Bit @p x of a link (RedisBloom's order: bit x % 8 of byte x / 8). Relaxed
 * loads: nobody writes an imported payload, but it is shared memory. */
static inline unsigned bit_at(const uint8_t *bytes, uint64_t x)
{
	return (unsigned)(__atomic_load_n(&bytes[x >> 3], __ATOMIC_RELAXED) >> (x & 7)) & 1u;
}

/* @p a mod @p p->mod without a division (Lemire, Kaser and Kurz, "Faster
 * remainder by direct computation", 2019): with M = ceil(2^128 / m), the
 * remainder is the top 64 bits of ((M a) mod 2^128) x m, exact for every
 * 64-bit a and m from 2 on. Three multiplications: 2.6 ns where a 64-bit
 * division took 3.3 on the project's VM, and a chain's check takes two a
 * link. */
static inline uint64_t rb_mod(const struct shmf_rb_part *p, uint64_t a)
{
	unsigned __int128 low = p->inv * a;
	unsigned __int128 bottom = ((low & UINT64_MAX) * p->mod) >> 64, top = (low >> 64) * p->mod;
	return (uint64_t)((bottom + top) >> 64);
}

/* Does link @p p hold every bit of the key of hash pair (a, b)? Bit i is
 * (a + i b) mod 2^64 mod m. A power-of-2 modulus is a mask; another is
 * kept as a running remainder, two remainders a link instead of k: each
 * step adds b mod m, and when a + i b passes 2^64 the sum loses 2^64, so
 * its remainder loses 2^64 mod m (p->wrap). */
static int link_has(const struct shmf_rb_part *p, uint64_t a, uint64_t b)
{
	if (p->pow2) {
		uint64_t mask = p->mod - 1, x = a;
		for (uint32_t i = 0; i < p->k; i++, x += b)
			if (!bit_at(p->bytes, x & mask))
				return 0;
		return 1;
	}
	uint64_t raw = a, x = rb_mod(p, a), step = rb_mod(p, b);
	for (uint32_t i = 0; i < p->k; i++) {
		if (!bit_at(p->bytes, x))
			return 0;
		uint64_t next = raw + b;
		x += step; /* both below m < 2^50: no overflow */
		if (x >= p->mod)
			x -= p->mod;
		if (next < raw)
			x = x >= p->wrap ? x - p->wrap : x + p->mod - p->wrap;
		raw = next;
	}
	return 1;
}

/* A key's hash pair, as its chain's hash makes it. */
static void bloom_pair(const struct shmf_rb *rb, const void *key, size_t len, uint64_t *a, uint64_t *b)
{
	if (rb->hash == SHMF_RB_HASH_MURMUR64) {
		*a = shmf_murmur64a(key, len, RB_SEED64);
		*b = shmf_murmur64a(key, len, *a);
	} else {
		*a = shmf_murmur2(key, len, RB_SEED32);
		*b = shmf_murmur2(key, len, (uint32_t)*a);
	}
}

/* One key: link by link, each stopping at its first bit unset (half a
 * link's bits are set at capacity, so an absent key reads about two);
 * computing and fetching every position first costs more than the misses
 * it overlaps, for one key. */
static int bloom_check(const struct shmf_rb *rb, const void *key, size_t len)
{
	uint64_t a, b;
	bloom_pair(rb, key, len, &a, &b);
	for (uint32_t i = rb->nlinks; i > 0; i--)
		if (link_has(&rb->part[i - 1], a, b))
			return 1;
	return 0;
}

/* A cuckoo key: its fingerprint and its two bucket hashes. */
struct rb_ckey {
	uint64_t h1, h2;
	uint8_t fp;
};

static struct rb_ckey cuckoo_key(const void *key, size_t len)
{
	uint64_t h = shmf_murmur64a(key, len, 0);
	uint8_t fp = (uint8_t)(h % 255 + 1);
	return (struct rb_ckey){ h, h ^ ((uint64_t)fp * RB_CUCKOO_ALT), fp };
}

/* Matching fingerprints in the bucket of hash @p h in sub-filter @p p. */
static unsigned bucket_count(const struct shmf_rb_part *p, uint64_t h, uint8_t fp)
{
	const uint8_t *b = p->bytes + (h % p->mod) * p->k;
	unsigned n = 0;
	for (uint32_t i = 0; i < p->k; i++)
		n += __atomic_load_n(&b[i], __ATOMIC_RELAXED) == fp;
	return n;
}

int shmf_rb_check(const struct shmf_rb *rb, const void *key, size_t len)
{
	if (rb->scheme == SHMF_SCHEME_RB_BLOOM)
		return bloom_check(rb, key, len);
	struct rb_ckey k = cuckoo_key(key, len);
	for (uint32_t i = 0; i < rb->nlinks; i++)
		if (bucket_count(&rb->part[i], k.h1, k.fp) != 0 || bucket_count(&rb->part[i], k.h2, k.fp) != 0)
			return 1;
	return 0;
}

/* Keys hashed this many ahead of the one checked. */
#define RB_AHEAD 8

/* A chain's batch: each key's hash pair computed RB_AHEAD keys ahead and
 * the byte of its first position in every link asked of memory, so that
 * those misses (the one that answers most absent keys) overlap; then the
 * key is checked link by link as one key is. */
static size_t bloom_check_many(const struct shmf_rb *rb, const shmf_key_t *keys, size_t n, uint8_t *out)
{
	uint64_t a[RB_AHEAD], b[RB_AHEAD];
	size_t present = 0;
	for (size_t i = 0; i < n + RB_AHEAD; i++) {
		if (i >= RB_AHEAD) {
			size_t j = i - RB_AHEAD, at = j % RB_AHEAD;
			unsigned has = 0;
			for (uint32_t l = rb->nlinks; l > 0 && !has; l--)
				has = (unsigned)link_has(&rb->part[l - 1], a[at], b[at]);
			present += out[j] = (uint8_t)has;
		}
		if (i < n) {
			size_t at = i % RB_AHEAD;
			bloom_pair(rb, keys[i].ptr, keys[i].len, &a[at], &b[at]);
			for (uint32_t l = 0; l < rb->nlinks; l++) {
				const struct shmf_rb_part *p = &rb->part[l];
				__builtin_prefetch(&p->bytes[(p->pow2 ? a[at] & (p->mod - 1) : rb_mod(p, a[at])) >> 3]);
			}
		}
	}
	return present;
}

size_t shmf_rb_check_many(const struct shmf_rb *rb, const shmf_key_t *keys, size_t n, uint8_t *out)
{
	if (rb->scheme == SHMF_SCHEME_RB_BLOOM)
		return bloom_check_many(rb, keys, n, out);
	size_t present = 0;
	for (size_t i = 0; i < n; i++)
		present += out[i] = (uint8_t)shmf_rb_check(rb, keys[i].ptr, keys[i].len);
	return present;
}

int shmf_rb_count(const struct shmf_rb *rb, const void *key, size_t len)
{
	if (rb->scheme != SHMF_SCHEME_RB_CUCKOO)
		return SHMF_E_TYPE;
	struct rb_ckey k = cuckoo_key(key, len);
	int n = 0;
	for (uint32_t i = 0; i < rb->nlinks; i++)
		n += (int)(bucket_count(&rb->part[i], k.h1, k.fp) + bucket_count(&rb->part[i], k.h2, k.fp));
	return n;
}
