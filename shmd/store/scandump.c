/*
 * scandump.c - dumping a live filter chunk by chunk, and loading such a
 * dump (see scandump.h; the chunk format is in snapshot-format.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "libclient/cuckoo.h"
#include "common/errmsg.h"
#include "common/redisbloom-dump.h"
#include "shmd/base/log.h"
#include "shmd/store/generations.h"
#include "shmd/store/scandump.h"
#include "common/snapshot.h"
#include "common/spec.h"

uint64_t scandump_idle_ms = 60000;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- What dumper and loader agree on ----------------------------------- */

/* The iterator that goes with chunk @p index of a dump tagged @p tag. */
static uint64_t iter_of(uint32_t tag, uint64_t index)
{
	return (uint64_t)tag << 32 | (index + 1);
}

/* A dump's tag: 31 bits of the XXH3 of the filter's seed, its generations
 * and their relocation counts, which change when the filter is rotated or
 * replaced, or (cuckoo) a fingerprint is moved. */
static uint32_t dump_tag(uint64_t seed, unsigned n, const uint64_t *gens, const uint64_t *moves)
{
	uint64_t v[1 + 2 * SHMF_SNAP_SECTIONS] = { seed };
	for (unsigned i = 0; i < n && i < SHMF_SNAP_SECTIONS; i++) {
		v[1 + 2 * i] = gens[i];
		v[2 + 2 * i] = moves[i];
	}
	return (uint32_t)(XXH3_64bits(v, (1 + 2 * (size_t)n) * sizeof(v[0])) & SHMF_CHUNK_TAG_MASK);
}

/* Where the payload chunks of a dump lie: each section's in turn, from
 * its first byte to its last, SHMF_CHUNK_BYTES each (the last of a
 * section shorter). A growing filter's sections (its layers) differ in
 * size; every other filter's are the same. */
struct plan {
	unsigned n;
	uint64_t bytes[SHMF_SNAP_SECTIONS];   /* section i's payload */
	uint64_t chunk0[SHMF_SNAP_SECTIONS];  /* the index of its first chunk, less 1 */
	uint64_t nchunks[SHMF_SNAP_SECTIONS]; /* its chunks */
	uint64_t total;                       /* payload chunks in all */
};

static void plan_make(struct plan *p, unsigned n, const uint64_t *bytes)
{
	memset(p, 0, sizeof(*p));
	p->n = n;
	for (unsigned i = 0; i < n && i < SHMF_SNAP_SECTIONS; i++) {
		p->bytes[i] = bytes[i];
		p->chunk0[i] = p->total;
		p->nchunks[i] = (bytes[i] + SHMF_CHUNK_BYTES - 1) / SHMF_CHUNK_BYTES;
		p->total += p->nchunks[i];
	}
}

/* Payload chunk @p index (1..total): its section, offset and length. */
static void plan_find(const struct plan *p, uint64_t index, unsigned *s, uint64_t *off, uint64_t *len)
{
	unsigned i = 0;
	while (i + 1 < p->n && index - 1 >= p->chunk0[i] + p->nchunks[i])
		i++;
	*s = i;
	*off = (index - 1 - p->chunk0[i]) * SHMF_CHUNK_BYTES;
	*len = p->bytes[i] - *off < SHMF_CHUNK_BYTES ? p->bytes[i] - *off : SHMF_CHUNK_BYTES;
}

/* The checksum of a chunk: the XXH3-64 of its data, seeded with the
 * XXH3-64 of its header's bytes 0-87. */
static uint64_t chunk_sum(const struct shmf_chunk_header *ch, const void *data)
{
	uint64_t head = XXH3_64bits(ch, offsetof(struct shmf_chunk_header, xxh3));
	return XXH3_64bits_withSeed(data, (size_t)ch->length, head);
}

/* ---- Dumping ----------------------------------------------------------- */

/* A chunk of @p len data bytes, header filled but for its checksum. */
static struct shmf_chunk_header *chunk_new(uint32_t kind, uint64_t index, uint64_t total, uint32_t tag, uint64_t seed,
					   size_t len)
{
	struct shmf_chunk_header *ch = malloc(sizeof(*ch) + len);
	if (ch == NULL)
		return NULL;
	*ch = (struct shmf_chunk_header){
		.version = SHMF_CHUNK_VERSION,
		.kind = kind,
		.index = index,
		.total = total,
		.tag = tag,
		.length = len,
		.seed = seed,
	};
	memcpy(ch->magic, SHMF_CHUNK_MAGIC, sizeof(ch->magic));
	return ch;
}

static void chunk_done(struct shmf_chunk_header *ch, struct scandump_chunk *out)
{
	ch->xxh3 = chunk_sum(ch, ch + 1);
	out->iter = iter_of(ch->tag, ch->index);
	out->data = ch;
	out->len = sizeof(*ch) + ch->length;
}

/* A filter as a dump sees it: its generations mapped, their relocation
 * counts, and the tag of a dump taken now. */
struct dump_view {
	struct shmf_slot copy;
	int slot;
	struct ring_maps m;
	uint64_t moves[SHMF_SNAP_SECTIONS];
	uint64_t seed, total;
	struct plan plan;
	uint32_t tag;
};

static int view_take(struct registry *r, const char *name, int type, struct dump_view *v, char *err, size_t errlen)
{
	v->slot = registry_slot_copy(r, name, &v->copy, err, errlen);
	if (v->slot < 0)
		return v->slot;
	if (spec_family((int)v->copy.type) != type)
		return errmsg(err, errlen, SHMF_E_TYPE, "filter '%s' is a %s filter; use the %s commands", name,
			      spec_type_name((int)v->copy.type), v->copy.type == SHMF_TYPE_CUCKOO ? "CF.*" : "BF.*");
	int rc = registry_ring_take(r, &v->copy, &v->m, err, errlen);
	if (rc < 0)
		return rc;
	for (unsigned i = 0; i < v->m.n; i++)
		v->moves[i] = v->m.dm[i].hdr.type == SHMF_TYPE_CUCKOO && v->m.dm[i].hdr.scheme == SHMF_SCHEME_NATIVE
				      ? atomic_load_explicit(&((struct shmf_cuckoo_meta *)v->m.dm[i].blocks)->moves,
							     memory_order_relaxed)
				      : 0;
	v->seed = v->m.dm[0].hdr.seed;
	uint64_t bytes[SHMF_SNAP_SECTIONS];
	for (unsigned i = 0; i < v->m.n; i++)
		bytes[i] = v->m.dm[i].hdr.nblocks * SHMF_BLOCK_BYTES;
	plan_make(&v->plan, v->m.n, bytes);
	v->total = v->plan.total;
	/* The generations dumped (a standby nobody opened is not one). */
	v->tag = dump_tag(v->seed, v->m.n, v->copy.live + v->m.first, v->moves);
	return 0;
}

/* The header chunk: the snapshot header and section headers as a file of
 * the filter taken now would have them, then the relocation counts. */
static int head_chunk(struct registry *r, struct dump_view *v, struct scandump_chunk *out)
{
	struct snap_source src;
	registry_snap_source(r, v->slot, &v->copy, &v->m, &src);
	snapshot_seal(&src);
	unsigned n = src.nsections;
	size_t fleet = src.hdr.flags & SHMF_SNAP_F_FLEET ? sizeof(src.fleet) : 0;
	size_t len = sizeof(src.hdr) + n * (sizeof(src.sec[0]) + sizeof(uint64_t)) + fleet;
	struct shmf_chunk_header *ch = chunk_new(SHMF_CHUNK_KIND_HEAD, 0, v->total, v->tag, v->seed, len);
	if (ch == NULL)
		return -ENOMEM;
	char *p = (char *)(ch + 1);
	memcpy(p, &src.hdr, sizeof(src.hdr));
	memcpy(p + sizeof(src.hdr), src.sec, n * sizeof(src.sec[0]));
	memcpy(p + sizeof(src.hdr) + n * sizeof(src.sec[0]), v->moves, n * sizeof(uint64_t));
	memcpy(p + len - fleet, &src.fleet, fleet);
	chunk_done(ch, out);
	return 0;
}

/* Payload chunk @p index (1..total). */
static int data_chunk(struct dump_view *v, uint64_t index, struct scandump_chunk *out)
{
	unsigned s;
	uint64_t off, len64;
	plan_find(&v->plan, index, &s, &off, &len64);
	size_t len = (size_t)len64;
	struct shmf_chunk_header *ch = chunk_new(SHMF_CHUNK_KIND_DATA, index, v->total, v->tag, v->seed, len);
	if (ch == NULL)
		return -ENOMEM;
	const struct shmf_data_map *dm = &v->m.dm[s];
	ch->section = s;
	ch->offset = off;
	ch->generation = dm->hdr.generation;
	ch->moves = v->moves[s];
	const char *src = (const char *)dm->blocks + off;
	int rc = 0;
	if (v->m.copy[s] != NULL)
		/* A held dump's consistent copy (below): private, unchanging. */
		memcpy(ch + 1, (const char *)v->m.copy[s] + off, len);
	else
		/* Bloom bits only ever get set: any mix of old and new bytes
		 * holds every bit set before the copy began. */
		memcpy(ch + 1, src, len);
	if (rc < 0) {
		free(ch);
		return rc;
	}
	chunk_done(ch, out);
	return 0;
}

/* ---- Cuckoo dumps from a copy ------------------------------------------- */

/* A cuckoo dump in progress: the filter copied whole, consistently, when
 * it began (the snapshot's copy: writers go on and log their moves), so
 * that moves between two chunks cannot carry a key past the dump. */
struct held {
	int used; /* 0 free, 1 copying (a job), 2 serving chunks */
	uint64_t owner;
	uint64_t last_ms; /* CLOCK_MONOTONIC of its last chunk */
	char name[SHMF_NAME_MAX + 1];
	struct dump_view v;
};

static struct held held[SCANDUMP_DUMPS_MAX];

static void held_free(struct held *h)
{
	registry_ring_release(&h->v.m);
	h->used = 0;
}

int scandump_copy_begin(struct registry *r, const char *name, uint64_t owner, struct held **out, char *err,
			size_t errlen)
{
	/* One dump a connection: its next one replaces it. */
	for (unsigned i = 0; i < SCANDUMP_DUMPS_MAX; i++)
		if (held[i].used == 2 && held[i].owner == owner)
			held_free(&held[i]);
	struct held *h = NULL;
	for (unsigned i = 0; i < SCANDUMP_DUMPS_MAX && h == NULL; i++)
		if (!held[i].used)
			h = &held[i];
	if (h == NULL)
		return errmsg(err, errlen, -EBUSY,
			      "filter '%s': %u cuckoo dumps are in progress, each holding a copy of its filter: start "
			      "again when one completes, or when one gets no chunk for %" PRIu64 " s",
			      name, SCANDUMP_DUMPS_MAX, scandump_idle_ms / 1000);
	int rc = view_take(r, name, SHMF_TYPE_CUCKOO, &h->v, err, errlen);
	if (rc < 0)
		return rc;
	h->used = 1;
	h->owner = owner;
	h->last_ms = now_ms();
	snprintf(h->name, sizeof(h->name), "%s", name);
	*out = h;
	return 0;
}

int scandump_copy_work(struct held *h, char *err, size_t errlen)
{
	for (unsigned i = 0; i < h->v.m.n; i++) {
		int rc = registry_ring_copy(&h->v.m, i, h->name, err, errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int scandump_copy_end(struct registry *r, struct held *h, int rc, struct scandump_chunk *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (rc == 0 && (registry_find(r, h->name) != h->v.slot))
		rc = errmsg(err, errlen, SHMF_E_NOTFOUND, "filter '%s' was dropped while the dump copied it", h->name);
	if (rc < 0) {
		held_free(h);
		return rc;
	}
	/* The relocation counts as the copies have them, and the tag they
	 * make (the loader checks it against the header chunk). Two dumps of
	 * a filter with no move between them share a tag: either's chunks
	 * hold every key stored before the earlier began. */
	for (unsigned i = 0; i < h->v.m.n; i++)
		h->v.moves[i] = h->v.m.dm[i].hdr.scheme == SHMF_SCHEME_NATIVE
					? ((const struct shmf_cuckoo_meta *)h->v.m.copy[i])->moves
					: 0;
	h->v.tag = dump_tag(h->v.seed, h->v.m.n, h->v.copy.live + h->v.m.first, h->v.moves);
	if ((rc = head_chunk(r, &h->v, out)) < 0) {
		held_free(h);
		return errmsg(err, errlen, rc, "filter '%s': out of memory for a chunk", h->name);
	}
	h->used = 2;
	h->last_ms = now_ms();
	return 0;
}

/* The held dump of filter @p name that iterator @p iter goes with: the
 * connection's own first, else the newest such; NULL if none. */
static struct held *held_find(const char *name, uint64_t iter, uint64_t owner)
{
	struct held *best = NULL;
	for (unsigned i = 0; i < SCANDUMP_DUMPS_MAX; i++) {
		struct held *h = &held[i];
		if (h->used != 2 || strcmp(h->name, name) != 0 || h->v.tag != (uint32_t)(iter >> 32))
			continue;
		if (h->owner == owner)
			return h;
		if (best == NULL || h->last_ms > best->last_ms)
			best = h;
	}
	return best;
}

/* A payload chunk of the held dump that iterator @p iter goes with, or
 * the end; -EAGAIN when no dump held is that iterator's. */
static int held_next(const char *name, uint64_t iter, uint64_t owner, struct scandump_chunk *out, char *err,
		     size_t errlen)
{
	uint64_t index = iter & 0xffffffffu;
	struct held *h = held_find(name, iter, owner);
	if (h != NULL) {
		h->last_ms = now_ms();
		if (index == h->v.total + 1) {
			held_free(h); /* past the last chunk: the dump is complete */
			return 0;
		}
		if (index > h->v.total + 1)
			return errmsg(err, errlen, SHMF_E_INVAL,
				      "iterator %" PRIu64 " is past the end of the dump of filter '%s' (%" PRIu64
				      " chunks)",
				      iter, name, h->v.total + 1);
		return data_chunk(&h->v, index, out);
	}
	return errmsg(err, errlen, -EAGAIN,
		      "no dump of filter '%s' goes with iterator %" PRIu64
		      " (it completed, its connection closed, it had no chunk for %" PRIu64
		      " s, or the filter was replaced): start the dump again from iterator 0",
		      name, iter, scandump_idle_ms / 1000);
}

int scandump_next(struct registry *r, const char *name, int type, uint64_t iter, uint64_t owner,
		  struct scandump_chunk *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (errlen > 0)
		err[0] = '\0';
	uint64_t index = iter & 0xffffffffu; /* the chunk asked for: the one after the iterator's */
	if (iter != 0 && index == 0)
		return errmsg(err, errlen, SHMF_E_INVAL, "iterator %" PRIu64 " is not one that SCANDUMP returned",
			      iter);
	int slot = registry_find(r, name);
	if (slot >= 0 && type == SHMF_TYPE_CUCKOO && r->ctl.slots[slot].type == SHMF_TYPE_CUCKOO && iter != 0) {
		int rc = held_next(name, iter, owner, out, err, errlen);
		if (rc == -ENOMEM)
			return errmsg(err, errlen, rc, "filter '%s': out of memory for a chunk", name);
		return rc;
	}
	struct dump_view v;
	int rc = view_take(r, name, type, &v, err, errlen);
	if (rc < 0)
		return rc;
	if (iter == 0)
		rc = head_chunk(r, &v, out);
	else if (index == v.total + 1)
		rc = 0; /* past the last chunk: the dump is complete */
	else if (index > v.total + 1)
		rc = errmsg(err, errlen, SHMF_E_INVAL,
			    "iterator %" PRIu64 " is past the end of the dump of filter '%s' (%" PRIu64 " chunks)",
			    iter, name, v.total + 1);
	else if (iter >> 32 != v.tag)
		rc = errmsg(err, errlen, -EAGAIN,
			    "filter '%s' was rotated or replaced since the dump of iterator %" PRIu64
			    " began, or that iterator is not one of its dump: start the dump again from iterator 0",
			    name, iter);
	else
		rc = data_chunk(&v, index, out);
	registry_ring_release(&v.m);
	if (rc == -ENOMEM)
		return errmsg(err, errlen, rc, "filter '%s': out of memory for a chunk", name);
	if (rc < 0 && err[0] == '\0')
		return errmsg(err, errlen, rc, "filter '%s': cannot copy chunk %" PRIu64 ": %s", name, index,
			      shmf_strerror(rc));
	return rc;
}

/* ---- Loading ----------------------------------------------------------- */

/* A load in progress: the new filter's data files, and what the next
 * chunk must be. */
struct load {
	int used;
	uint64_t owner;   /* the connection that began it */
	uint64_t last_ms; /* CLOCK_MONOTONIC of its last chunk */
	uint32_t tag;
	uint64_t next;  /* index of the chunk expected next */
	uint64_t total; /* payload chunks */
	struct plan plan;
	uint64_t moves[SHMF_SNAP_SECTIONS];
	struct registry *reg;
	struct registry_load ld;
	struct rb_dump *rb; /* a load of RedisBloom's chunks: its header, checked; NULL for shmd's own */
	uint64_t rb_next;   /* RedisBloom's: the dump byte expected next (counted from 0 over its links) */
};

static struct load loads[SCANDUMP_LOADS_MAX];

static void discard(struct load *l, const char *why)
{
	log_msg(LOG_WARNING, "filter '%s': load by chunks discarded after %" PRIu64 " of %" PRIu64 " chunks (%s)",
		l->ld.name, l->next, l->total + 1, why);
	registry_load_abort(l->reg, &l->ld);
	free(l->rb);
	l->rb = NULL;
	l->used = 0;
}

void scandump_expire(void)
{
	uint64_t now = now_ms();
	for (unsigned i = 0; i < SCANDUMP_DUMPS_MAX; i++)
		if (held[i].used == 2 && now - held[i].last_ms >= scandump_idle_ms) {
			log_msg(LOG_INFO, "filter '%s': dump by chunks dropped: no chunk came for %" PRIu64 " s",
				held[i].name, scandump_idle_ms / 1000);
			held_free(&held[i]);
		}
	for (unsigned i = 0; i < SCANDUMP_LOADS_MAX; i++)
		if (loads[i].used && now - loads[i].last_ms >= scandump_idle_ms)
			discard(&loads[i], "no chunk came for too long");
}

void scandump_owner_gone(uint64_t owner)
{
	for (unsigned i = 0; i < SCANDUMP_DUMPS_MAX; i++)
		if (held[i].used == 2 && held[i].owner == owner)
			held_free(&held[i]);
	for (unsigned i = 0; i < SCANDUMP_LOADS_MAX; i++)
		if (loads[i].used && loads[i].owner == owner)
			discard(&loads[i], "its connection closed");
}

unsigned scandump_dumps(void)
{
	unsigned n = 0;
	for (unsigned i = 0; i < SCANDUMP_DUMPS_MAX; i++)
		n += held[i].used != 0;
	return n;
}

unsigned scandump_loads(void)
{
	unsigned n = 0;
	for (unsigned i = 0; i < SCANDUMP_LOADS_MAX; i++)
		n += loads[i].used != 0;
	return n;
}

static struct load *load_of(const char *name)
{
	for (unsigned i = 0; i < SCANDUMP_LOADS_MAX; i++)
		if (loads[i].used && strcmp(loads[i].ld.name, name) == 0)
			return &loads[i];
	return NULL;
}

/* The chunk's header and checksum: a whole chunk of some dump of shmd's. */
static int chunk_parse(const char *what, const void *data, size_t len, struct shmf_chunk_header *ch, char *err,
		       size_t errlen)
{
	if (len < sizeof(*ch))
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: %zu bytes, shorter than a chunk header (%zu bytes): not a chunk of a shmd dump",
			      what, len, sizeof(*ch));
	memcpy(ch, data, sizeof(*ch));
	if (memcmp(ch->magic, SHMF_CHUNK_MAGIC, sizeof(ch->magic)) != 0)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: bytes 0-7 are not \"%s\": not a chunk of a shmd dump, nor RedisBloom's header chunk "
			      "(which comes with iterator 1; a load begins with the dump's first chunk)",
			      what, SHMF_CHUNK_MAGIC);
	if (ch->version != SHMF_CHUNK_VERSION)
		return errmsg(err, errlen, SHMF_E_FORMAT, "%s: chunk format version %u, this build reads version %u",
			      what, ch->version, SHMF_CHUNK_VERSION);
	if (ch->length != len - sizeof(*ch))
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: its header says %" PRIu64 " bytes of data, %zu came (truncated or padded)", what,
			      ch->length, len - sizeof(*ch));
	if (chunk_sum(ch, (const char *)data + sizeof(*ch)) != ch->xxh3)
		return errmsg(err, errlen, SHMF_E_FORMAT, "%s: checksum mismatch (the chunk is damaged)", what);
	if ((ch->kind != SHMF_CHUNK_KIND_HEAD && ch->kind != SHMF_CHUNK_KIND_DATA) || ch->reserved != 0 ||
	    ch->tag > SHMF_CHUNK_TAG_MASK)
		return errmsg(err, errlen, SHMF_E_FORMAT, "%s: kind %u, tag or reserved bytes are not a chunk's", what,
			      ch->kind);
	return 0;
}

/* What a header chunk holds, checked as a snapshot file's header is. */
struct head {
	struct shmf_snap_header hdr;
	struct shmf_snap_section sec[SHMF_SNAP_SECTIONS];
	uint64_t moves[SHMF_SNAP_SECTIONS];
	struct shmf_snap_fleet fleet; /* with hdr.flags' FLEET; else zero */
	struct plan plan;
};

static int head_parse(const char *what, const struct shmf_chunk_header *ch, const char *body, uint64_t iter, int type,
		      struct head *hd, char *err, size_t errlen)
{
	struct shmf_snap_header *h = &hd->hdr;
	if (ch->index != 0 || ch->section != 0 || ch->offset != 0 || ch->generation != 0 || ch->moves != 0 ||
	    iter != iter_of(ch->tag, 0))
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: a header chunk goes with the first iterator of its dump, and has no offset, section "
			      "or generation",
			      what);
	if (ch->length < sizeof(*h))
		return errmsg(err, errlen, SHMF_E_FORMAT, "%s: a header chunk of %" PRIu64 " bytes is too short", what,
			      ch->length);
	memcpy(h, body, sizeof(*h));
	int rc = snapshot_header_check(h, what, err, errlen);
	if (rc < 0)
		return rc;
	unsigned n = h->nsections;
	size_t fleet = h->flags & SHMF_SNAP_F_FLEET ? sizeof(hd->fleet) : 0;
	if (ch->length != sizeof(*h) + n * (sizeof(hd->sec[0]) + sizeof(uint64_t)) + fleet)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: a header chunk of %u sections%s is not %" PRIu64 " bytes long", what, n,
			      fleet ? " and a fleet block" : "", ch->length);
	memcpy(hd->sec, body + sizeof(*h), n * sizeof(hd->sec[0]));
	memcpy(hd->moves, body + sizeof(*h) + n * sizeof(hd->sec[0]), n * sizeof(uint64_t));
	memset(&hd->fleet, 0, sizeof(hd->fleet));
	memcpy(&hd->fleet, body + ch->length - fleet, fleet);
	if ((rc = snapshot_sections_check(h, hd->sec, what, err, errlen)) < 0 ||
	    (fleet && (rc = snapshot_fleet_check(&hd->fleet, what, err, errlen)) < 0))
		return rc;
	struct snap_layout lay;
	if ((rc = snapshot_layout(h, &lay, NULL)) < 0)
		return errmsg(err, errlen, SHMF_E_FORMAT, "%s: the layers of the filter cannot be sized", what);
	plan_make(&hd->plan, n, lay.bytes);
	uint64_t gens[SHMF_SNAP_SECTIONS];
	int moves_ok = 1;
	for (unsigned i = 0; i < n; i++) {
		gens[i] = hd->sec[i].generation;
		moves_ok &= h->type == SHMF_TYPE_CUCKOO || hd->moves[i] == 0;
	}
	if (ch->seed != h->seed || ch->total != hd->plan.total || !moves_ok ||
	    ch->tag != dump_tag(h->seed, n, gens, hd->moves))
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: the chunk header does not agree with the snapshot header it carries (seed, chunks, "
			      "tag)",
			      what);
	if (spec_family((int)h->type) != type)
		return errmsg(err, errlen, SHMF_E_INVAL, "%s: the dump holds a %s filter; load it with %s.LOADCHUNK",
			      what, spec_type_name((int)h->type), h->type == SHMF_TYPE_CUCKOO ? "CF" : "BF");
	return 0;
}

int scandump_chunk_check(const char *what, const void *data, size_t len, struct shmf_chunk_header *ch, char *err,
			 size_t errlen)
{
	return chunk_parse(what, data, len, ch, err, errlen);
}

int scandump_head_check(const char *what, const struct shmf_chunk_header *ch, const void *body, uint64_t iter, int type,
			struct shmf_snap_header *h, struct shmf_snap_section *sec, char *err, size_t errlen)
{
	struct head *hd = malloc(sizeof(*hd));
	if (hd == NULL)
		return errmsg(err, errlen, -ENOMEM, "%s: out of memory", what);
	int rc = head_parse(what, ch, body, iter, type, hd, err, errlen);
	if (rc == 0) {
		*h = hd->hdr;
		memcpy(sec, hd->sec, h->nsections * sizeof(sec[0]));
	}
	free(hd);
	return rc;
}

/* The filter a load would replace must have the dump's type, as
 * RedisBloom's LOADCHUNK refuses a key of another type. */
static int target_type_ok(struct registry *r, const char *name, uint32_t type, char *err, size_t errlen)
{
	int slot = registry_find(r, name);
	if (slot >= 0 && spec_family((int)r->ctl.slots[slot].type) != spec_family((int)type))
		return errmsg(err, errlen, SHMF_E_TYPE, "filter '%s' is a %s filter; use the %s commands", name,
			      spec_type_name((int)r->ctl.slots[slot].type),
			      r->ctl.slots[slot].type == SHMF_TYPE_CUCKOO ? "CF.*" : "BF.*");
	return 0;
}

static int load_begin(struct registry *r, uint64_t owner, const char *name, const char *what,
		      const struct shmf_chunk_header *ch, const char *body, uint64_t iter, int type, char *err,
		      size_t errlen)
{
	struct head hd;
	int rc = head_parse(what, ch, body, iter, type, &hd, err, errlen);
	if (rc < 0 || (rc = target_type_ok(r, name, hd.hdr.type, err, errlen)) < 0)
		return rc;
	struct load *l = NULL;
	for (unsigned i = 0; i < SCANDUMP_LOADS_MAX && l == NULL; i++)
		if (!loads[i].used)
			l = &loads[i];
	if (l == NULL)
		return errmsg(err, errlen, -EBUSY,
			      "%s: %u loads by chunks are in progress already, the most there may be", what,
			      SCANDUMP_LOADS_MAX);
	if ((rc = registry_load_begin(r, name, &hd.hdr, hd.sec, REGISTRY_RESTORE, &l->ld, err, errlen)) < 0)
		return rc;
	l->ld.fleet = hd.fleet;
	l->used = 1;
	l->owner = owner;
	l->last_ms = now_ms();
	l->tag = ch->tag;
	l->next = 1;
	l->total = ch->total;
	l->plan = hd.plan;
	l->reg = r;
	memcpy(l->moves, hd.moves, sizeof(l->moves));
	log_msg(LOG_INFO,
		"filter '%s': load by chunks begun: %u generation%s of %" PRIu64 " bytes in %" PRIu64
		" chunks, from filter '%s', stream cursor %" PRIu64 "-%" PRIu64,
		name, hd.hdr.nsections, hd.hdr.nsections > 1 ? "s" : "", hd.hdr.section_bytes, ch->total, hd.hdr.name,
		hd.hdr.cursor_ms, hd.hdr.cursor_seq);
	return 0;
}

/* Payload chunk @p ch for load @p l: what the order and the header say it
 * must be, then its bytes into the new generation. */
static int load_data(struct load *l, const char *what, const struct shmf_chunk_header *ch, const char *body,
		     uint64_t iter, char *err, size_t errlen)
{
	const struct registry_load *ld = &l->ld;
	if (ch->index != l->next)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: chunk %" PRIu64 " came where chunk %" PRIu64
			      " was expected (chunks load once each, in the order SCANDUMP gave them)",
			      what, ch->index, l->next);
	if (ch->tag != l->tag || iter != iter_of(ch->tag, ch->index) || ch->total != l->total ||
	    ch->seed != ld->hdr.seed)
		return errmsg(err, errlen, SHMF_E_FORMAT, "%s: the chunk is of another dump than the header chunk",
			      what);
	unsigned s;
	uint64_t off, len;
	plan_find(&l->plan, ch->index, &s, &off, &len);
	if (ch->section != s || ch->offset != off || ch->length != len)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: chunk %" PRIu64 " holds bytes %" PRIu64 "+%" PRIu64 " of section %u, not %" PRIu64
			      "+%" PRIu64 " of section %u",
			      what, ch->index, ch->offset, ch->length, ch->section, off, len, s);
	if (ch->generation != ld->sec[s].generation || ch->moves != l->moves[s])
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: chunk %" PRIu64 " was read from generation %" PRIu64 " after %" PRIu64
			      " relocations, the header chunk from generation %" PRIu64 " after %" PRIu64
			      ": the filter changed during the dump; dump it again",
			      what, ch->index, ch->generation, ch->moves, ld->sec[s].generation, l->moves[s]);
	return registry_load_fill(&l->ld, s, off, body, (size_t)len, err, errlen);
}

/* Append to @p err that the load was discarded. */
static void say_discarded(char *err, size_t errlen, const char *name)
{
	size_t n = strlen(err);
	if (n < errlen)
		snprintf(err + n, errlen - n, "; the load of filter '%s' is discarded, nothing of it published", name);
}

/* The last chunk of load @p l came: publish, as a restore would. 1, or an
 * error (the load is gone either way). */
static int load_publish(struct registry *r, struct load *l, const char *name, char *err, size_t errlen)
{
	uint64_t gen = l->ld.ring.gen[0];
	int rc = target_type_ok(r, name, l->ld.hdr.type, err, errlen);
	if (rc < 0) {
		discard(l, "the filter it would replace has another type now");
		return rc;
	}
	l->used = 0;
	const char *from = l->rb != NULL ? " of RedisBloom's dump" : "";
	free(l->rb);
	l->rb = NULL;
	if ((rc = registry_load_commit(r, &l->ld, REGISTRY_RESTORE, err, errlen)) < 0) {
		log_msg(LOG_WARNING, "filter '%s': load by chunks not published: %s", name, err);
		return rc;
	}
	log_msg(LOG_INFO,
		"filter '%s': loaded from %" PRIu64 " chunks%s as generation %" PRIu64 " (%" PRIu64
		" items), stream cursor %" PRIu64 "-%" PRIu64,
		name, l->next, from, gen, l->ld.sec[0].items, l->ld.hdr.cursor_ms, l->ld.hdr.cursor_seq);
	return 1;
}

/* ---- RedisBloom's own chunks ------------------------------------------- */

/* A free load, or NULL with @p err said. */
static struct load *load_slot(const char *what, char *err, size_t errlen)
{
	for (unsigned i = 0; i < SCANDUMP_LOADS_MAX; i++)
		if (!loads[i].used)
			return &loads[i];
	errmsg(err, errlen, -EBUSY, "%s: %u loads by chunks are in progress already, the most there may be", what,
	       SCANDUMP_LOADS_MAX);
	return NULL;
}

/* RedisBloom's header chunk @p data: the new filter's files made and its
 * table written (redisbloom-dump.h). */
static int rb_load_begin(struct registry *r, uint64_t owner, const char *name, const char *what, int type,
			 const void *data, size_t len, char *err, size_t errlen)
{
	char why[SNAPSHOT_ERR_MAX];
	struct rb_dump *d;
	int rc = rb_dump_parse(type, data, len, &d, why, sizeof(why));
	if (rc < 0)
		return errmsg(err, errlen, rc, "%s: %s", what, why);
	struct load *l = NULL;
	if ((rc = target_type_ok(r, name, d->type, err, errlen)) < 0 || (l = load_slot(what, err, errlen)) == NULL) {
		free(d);
		return rc < 0 ? rc : -EBUSY;
	}
	struct shmf_snap_header h;
	struct shmf_snap_section sec;
	rb_dump_snapshot(d, name, (uint64_t)time(NULL), &h, &sec);
	void *table = malloc(d->table_bytes);
	if (table == NULL || (rc = snapshot_header_check(&h, what, err, errlen)) < 0 ||
	    (rc = registry_load_begin(r, name, &h, &sec, REGISTRY_RESTORE, &l->ld, err, errlen)) < 0) {
		free(table);
		free(d);
		return table == NULL ? errmsg(err, errlen, -ENOMEM, "%s: out of memory", what) : rc;
	}
	rb_dump_table(d, table);
	rc = registry_load_fill(&l->ld, 0, 0, table, (size_t)d->table_bytes, err, errlen);
	free(table);
	*l = (struct load){ .used = 1, .owner = owner, .last_ms = now_ms(), .next = 1, .reg = r, .ld = l->ld, .rb = d };
	if (rc < 0) {
		discard(l, "its table could not be written");
		return rc;
	}
	log_msg(LOG_INFO,
		"filter '%s': load of RedisBloom's chunks begun: a %s filter of %" PRIu32 " %s, %" PRIu64
		" bytes of them, %" PRIu64 " items",
		name, spec_type_name((int)d->type), d->t.nlinks, d->type == SHMF_TYPE_CUCKOO ? "sub-filters" : "links",
		d->dump_bytes, d->t.items);
	return 0;
}

/* A data chunk of RedisBloom's for load @p l: the next bytes of the dump,
 * within one link. 0, 1 when the dump is complete, or an error. */
static int rb_load_data(struct load *l, const char *what, int type, uint64_t iter, const void *data, size_t len,
			char *err, size_t errlen)
{
	const struct rb_dump *d = l->rb;
	if ((int)d->type != type)
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "%s: the load in progress is of a %s filter; its chunks go to %s", what,
			      spec_type_name((int)d->type),
			      d->type == SHMF_TYPE_CUCKOO ? "CF.LOADCHUNK" : "BF.LOADCHUNK");
	if (len == 0 || iter <= len || iter - 1 - len != l->rb_next)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: %zu bytes ending before dump byte %" PRIu64 ", where byte %" PRIu64 " of %" PRIu64
			      " was expected next (RedisBloom's chunks load once each, in the order SCANDUMP gave them)",
			      what, len, iter > 0 ? iter - 1 : 0, l->rb_next, d->dump_bytes);
	uint64_t off, left;
	if (rb_dump_locate(d, l->rb_next, &off, &left) < 0 || len > left)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: %zu bytes from dump byte %" PRIu64 " run past the end of %s (%" PRIu64
			      " bytes of it left)",
			      what, len, l->rb_next, l->rb_next >= d->dump_bytes ? "the dump" : "their link",
			      l->rb_next >= d->dump_bytes ? 0 : left);
	int rc = registry_load_fill(&l->ld, 0, off, data, len, err, errlen);
	if (rc < 0)
		return rc;
	l->rb_next += len;
	l->next++;
	return l->rb_next == d->dump_bytes;
}

/* A load of @p name about to begin: this connection's own load in
 * progress (@p mine) is discarded, another connection's (@p l) refuses
 * it. 0, or -EBUSY with @p err. */
static int load_restart(struct load *l, struct load *mine, const char *what, const char *name, char *err, size_t errlen)
{
	if (mine != NULL)
		discard(mine, "its connection began it again");
	else if (l != NULL)
		return errmsg(err, errlen, -EBUSY,
			      "%s: another connection is loading filter '%s' (until its last chunk, its connection "
			      "closes or %" PRIu64 " s pass without a chunk)",
			      what, name, scandump_idle_ms / 1000);
	return 0;
}

/* A chunk of RedisBloom's dump (iterator 1: its header chunk) for filter
 * @p name; @p l is the load of @p name in progress, @p mine the same if it
 * is this connection's. */
static int rb_load(struct registry *r, uint64_t owner, const char *name, int type, uint64_t iter, const void *data,
		   size_t len, struct load *l, struct load *mine, const char *what, char *err, size_t errlen)
{
	if (iter == 1) {
		int rc = load_restart(l, mine, what, name, err, errlen);
		return rc < 0 ? rc : rb_load_begin(r, owner, name, what, type, data, len, err, errlen);
	}
	int rc = rb_load_data(mine, what, type, iter, data, len, err, errlen);
	if (rc < 0) {
		discard(mine, "a chunk was refused");
		say_discarded(err, errlen, name);
		return rc;
	}
	mine->last_ms = now_ms();
	return rc == 0 ? 0 : load_publish(r, mine, name, err, errlen);
}

int scandump_load(struct registry *r, uint64_t owner, const char *name, int type, uint64_t iter, const void *data,
		  size_t len, char *err, size_t errlen)
{
	char what[SHMF_NAME_MAX + 80];
	snprintf(what, sizeof(what), "filter '%s', chunk of iterator %" PRIu64, name, iter);
	scandump_expire();
	struct load *l = load_of(name), *mine = l != NULL && l->owner == owner ? l : NULL;
	/* RedisBloom's own chunks: its header chunk (iterator 1, without
	 * shmd's magic) begins a load of them, and the chunks that follow on
	 * the connection loading them are theirs, whatever their bytes. */
	int ours = len >= sizeof(struct shmf_chunk_header) && memcmp(data, SHMF_CHUNK_MAGIC, 8) == 0;
	if ((mine != NULL && mine->rb != NULL && !(iter == 1 && ours)) || (!ours && iter == 1))
		return rb_load(r, owner, name, type, iter, data, len, l, mine, what, err, errlen);
	if (!ours && mine == NULL)
		return errmsg(err, errlen, SHMF_E_NOTFOUND,
			      "%s: no load of filter '%s' in progress on this connection, and this is not a chunk of a "
			      "shmd dump (a load begins with the dump's first chunk; RedisBloom's header chunk comes "
			      "with iterator 1)",
			      what, name);
	struct shmf_chunk_header ch;
	const char *body = (const char *)data + sizeof(ch);
	int rc = chunk_parse(what, data, len, &ch, err, errlen);
	if (rc == 0 && ch.kind == SHMF_CHUNK_KIND_HEAD) {
		/* A header chunk begins the load again (a retry). */
		rc = load_restart(l, mine, what, name, err, errlen);
		return rc < 0 ? rc : load_begin(r, owner, name, what, &ch, body, iter, type, err, errlen);
	}
	if (rc == 0 && mine == NULL)
		return errmsg(err, errlen, SHMF_E_NOTFOUND,
			      "%s: no load of filter '%s' in progress on this connection (a load begins with the "
			      "header chunk, the first of the dump)",
			      what, name);
	if (rc == 0)
		rc = load_data(mine, what, &ch, body, iter, err, errlen);
	if (rc < 0) {
		if (mine != NULL) {
			discard(mine, "a chunk was refused");
			say_discarded(err, errlen, name);
		}
		return rc;
	}
	mine->next++;
	mine->last_ms = now_ms();
	if (ch.index < mine->total)
		return 0;
	return load_publish(r, mine, name, err, errlen);
}
