/*
 * redisbloom-dump.c - RedisBloom's dump format read into a filter imported
 * from RedisBloom (redisbloom-dump.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/errmsg.h"
#include "common/redisbloom-dump.h"
#include "common/snapshot.h"
#include "libclient/redisbloom.h"

/* Little-endian fields of a packed header (snapshot-format.h refuses to
 * build on another byte order). */
static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint16_t rd16(const unsigned char *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

/* Lay the links out after the table: each at the next multiple of 64. */
static void layout(struct rb_dump *d)
{
	d->table_bytes = shmf_rb_table_bytes(d->t.nlinks);
	uint64_t at = shmf_rb_align(d->table_bytes);
	d->dump_bytes = 0;
	for (uint32_t i = 0; i < d->t.nlinks; i++) {
		d->link[i].offset = at;
		at = shmf_rb_align(at + d->link[i].bytes);
		d->dump_bytes += d->link[i].bytes;
	}
	d->payload = at;
}

static struct rb_dump *dump_new(uint32_t nlinks)
{
	return calloc(1, sizeof(struct rb_dump) + nlinks * sizeof(struct shmf_rb_link));
}

static int bloom_parse(const unsigned char *p, size_t len, struct rb_dump **out, char *err, size_t errlen)
{
	if (len < RB_DUMP_BLOOM_HEAD)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "RedisBloom's header chunk is %zu bytes, shorter than a chain's header (%u bytes): "
			      "truncated, or not BF.SCANDUMP's first chunk",
			      len, RB_DUMP_BLOOM_HEAD);
	uint32_t n = rd32(p + 8);
	if (n == 0 || n > SHMF_RB_LINKS_MAX)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "RedisBloom's header chunk says %" PRIu32 " links (bytes 8-11); an import holds 1 to %u",
			      n, SHMF_RB_LINKS_MAX);
	size_t want = RB_DUMP_BLOOM_HEAD + (size_t)n * RB_DUMP_BLOOM_LINK;
	if (len == want + RB_DUMP_HASH_CONFIG)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "RedisBloom's chain carries a hash configuration (bf-hash-seed: its keys are hashed with "
			      "XXH3 and a secret seed), which shmd does not import");
	if (len != want)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "RedisBloom's header chunk of %" PRIu32 " links is %zu bytes, not %zu (truncated or "
			      "padded)",
			      n, len, want);
	struct rb_dump *d = dump_new(n);
	if (d == NULL)
		return -ENOMEM;
	d->type = SHMF_TYPE_BLOOM;
	d->scheme = SHMF_SCHEME_RB_BLOOM;
	uint32_t options = rd32(p + 12);
	d->t = (struct shmf_rb_table){ .magic = SHMF_RB_MAGIC,
				       .nlinks = n,
				       .hash = (options & 4u) ? SHMF_RB_HASH_MURMUR64 : SHMF_RB_HASH_MURMUR32,
				       .items = rd64(p),
				       .options = options,
				       .growth = rd32(p + 16) };
	for (uint32_t i = 0; i < n; i++) {
		const unsigned char *q = p + RB_DUMP_BLOOM_HEAD + (size_t)i * RB_DUMP_BLOOM_LINK;
		d->link[i] = (struct shmf_rb_link){ .bytes = rd64(q),
						    .bits = rd64(q + 8),
						    .size = rd64(q + 16),
						    .error_bits = rd64(q + 24),
						    .bpe_bits = rd64(q + 32),
						    .hashes = rd32(q + 40),
						    .entries = rd64(q + 44),
						    .n2 = q[52] };
		if (d->link[i].bytes > SHMF_DATA_MAX_BYTES) {
			uint64_t bytes = d->link[i].bytes;
			free(d);
			return errmsg(err, errlen, SHMF_E_TOOBIG,
				      "RedisBloom's header chunk gives link %" PRIu32 " %" PRIu64
				      " bytes, more than a filter may have (%" PRIu64 ")",
				      i, bytes, (uint64_t)SHMF_DATA_MAX_BYTES);
		}
		d->capacity = d->link[i].entries > UINT64_MAX - d->capacity ? UINT64_MAX
									    : d->capacity + d->link[i].entries;
	}
	memcpy(&d->fpr, &d->link[0].error_bits, sizeof(d->fpr));
	/* A chain that scales made its first link at half the asked rate. */
	if (!(options & 8u) && d->fpr < 0.5)
		d->fpr *= 2;
	*out = d;
	return 0;
}

static int cuckoo_parse(const unsigned char *p, size_t len, struct rb_dump **out, char *err, size_t errlen)
{
	if (len != RB_DUMP_CUCKOO_HEAD)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "RedisBloom's cuckoo header chunk is %zu bytes, not %u (truncated, padded, or not "
			      "CF.SCANDUMP's first chunk)",
			      len, RB_DUMP_CUCKOO_HEAD);
	uint64_t nb = rd64(p + 8), nf = rd64(p + 24);
	uint32_t bs = rd16(p + 32), exp = rd16(p + 36);
	if (nf == 0 || nf > SHMF_RB_LINKS_MAX || bs == 0 || bs > 255 || nb == 0 || (nf > 1 && exp == 0))
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "RedisBloom's cuckoo header chunk says %" PRIu64 " sub-filters of %" PRIu64
			      " buckets of %" PRIu32 " growing by %" PRIu32
			      ": an import holds 1 to %u sub-filters of at least one bucket of 1 to 255 fingerprints",
			      nf, nb, bs, exp, SHMF_RB_LINKS_MAX);
	struct rb_dump *d = dump_new((uint32_t)nf);
	if (d == NULL)
		return -ENOMEM;
	d->type = SHMF_TYPE_CUCKOO;
	d->scheme = SHMF_SCHEME_RB_CUCKOO;
	d->t = (struct shmf_rb_table){ .magic = SHMF_RB_MAGIC,
				       .nlinks = (uint32_t)nf,
				       .hash = SHMF_RB_HASH_CUCKOO,
				       .items = rd64(p),
				       .deletes = rd64(p + 16),
				       .growth = exp,
				       .bucket_size = bs,
				       .max_iterations = rd16(p + 34) };
	/* Sub-filter i: numBuckets * expansion^i buckets, as RedisBloom
	 * sizes them when it loads a header; its index is 32 bits wide. */
	for (uint32_t i = 0; i < nf; i++, nb *= exp) {
		if (nb >= (UINT64_C(1) << 32) / bs) {
			free(d);
			return errmsg(err, errlen, SHMF_E_FORMAT,
				      "RedisBloom's cuckoo header chunk gives sub-filter %" PRIu32 " %" PRIu64
				      " buckets of %" PRIu32 " bytes: 4 GiB or more, past what RedisBloom indexes",
				      i, nb, bs);
		}
		d->link[i] = (struct shmf_rb_link){ .bytes = nb * bs, .bits = nb };
		d->capacity += nb * bs;
	}
	d->fpr = 2.0 * bs / 255.0;
	*out = d;
	return 0;
}

int rb_dump_parse(int type, const void *data, size_t len, struct rb_dump **out, char *err, size_t errlen)
{
	struct rb_dump *d = NULL;
	int rc = type == SHMF_TYPE_BLOOM ? bloom_parse(data, len, &d, err, errlen)
					 : cuckoo_parse(data, len, &d, err, errlen);
	if (rc < 0)
		return rc == -ENOMEM ? errmsg(err, errlen, rc, "out of memory for RedisBloom's header") : rc;
	layout(d);
	if (d->payload > SHMF_DATA_MAX_BYTES - SHMF_DATA_BLOCKS_OFF) {
		free(d);
		return errmsg(err, errlen, SHMF_E_TOOBIG, "RedisBloom's filter would take more than %" PRIu64 " bytes",
			      (uint64_t)SHMF_DATA_MAX_BYTES);
	}
	/* The table as every client will check it (the payload's length is
	 * all it reads past the table). */
	void *table = malloc(d->table_bytes);
	if (table == NULL) {
		free(d);
		return errmsg(err, errlen, -ENOMEM, "out of memory for RedisBloom's header");
	}
	rb_dump_table(d, table);
	rc = shmf_rb_open(d->scheme, table, d->payload, NULL);
	free(table);
	if (rc < 0) {
		free(d);
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "RedisBloom's header chunk does not describe a filter RedisBloom would load: a link's "
			      "bits are not its bytes x 8, its n2 or k does not fit its bits and bits per entry, its "
			      "error rate is not in (0, 1), its k passes %u, or the links' sizes do not sum to the "
			      "chain's",
			      SHMF_RB_HASHES_MAX);
	}
	*out = d;
	return 0;
}

int rb_dump_locate(const struct rb_dump *d, uint64_t pos, uint64_t *payload_off, uint64_t *left)
{
	for (uint32_t i = 0; i < d->t.nlinks; i++) {
		if (pos < d->link[i].bytes) {
			*payload_off = d->link[i].offset + pos;
			*left = d->link[i].bytes - pos;
			return 0;
		}
		pos -= d->link[i].bytes;
	}
	return SHMF_E_INVAL;
}

void rb_dump_table(const struct rb_dump *d, void *out)
{
	memcpy(out, &d->t, sizeof(d->t));
	memcpy((char *)out + sizeof(d->t), d->link, d->t.nlinks * sizeof(d->link[0]));
}

void rb_dump_snapshot(const struct rb_dump *d, const char *name, uint64_t now, struct shmf_snap_header *h,
		      struct shmf_snap_section *sec)
{
	struct snap_source src = { .nsections = 1 };
	struct filter_spec spec;
	spec_defaults(&spec, name);
	spec.type = (int)d->type;
	spec.capacity = d->capacity ? d->capacity : 1;
	spec.fpr = d->fpr;
	struct shmf_geometry g = { .type = d->type, .scheme = d->scheme, .nblocks = d->payload / SHMF_BLOCK_BYTES };
	snapshot_header_fill(&src.hdr, &spec, &g, 0, now, now);
	src.sec[0] = (struct shmf_snap_section){
		.generation = 1, .created_epoch = now, .items = d->t.items, .deletes = d->t.deletes
	};
	snapshot_seal(&src);
	*h = src.hdr;
	*sec = src.sec[0];
}
