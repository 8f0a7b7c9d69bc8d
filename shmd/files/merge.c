/*
 * merge.c - a Bloom snapshot ORed into a live filter (see merge.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errmsg.h"
#include "shmd/base/log.h"
#include "shmd/files/merge.h"
#include "shmd/store/generations.h"
#include "shmd/fleet/replication.h"

/* Where the words of one section go. */
struct merge_target {
	_Atomic uint64_t *words; /* the live generation's payload */
	uint64_t bits;           /* bits newly set */
};

static void or_chunk(void *arg, uint64_t off, const void *buf, size_t len)
{
	struct merge_target *t = arg;
	const uint64_t *src = buf;
	_Atomic uint64_t *dst = t->words + off / 8;
	for (size_t w = 0; w < len / 8; w++) {
		if (src[w] == 0)
			continue;
		/* relaxed, as an add's fetch-or: a bit set is never unset, so
		 * any order of ORs gives the same words. */
		uint64_t old = atomic_fetch_or_explicit(&dst[w], src[w], memory_order_relaxed);
		t->bits += (uint64_t)__builtin_popcountll(src[w] & ~old);
	}
}

/* Append ", <what> <here> here, <there> in the file" to @p buf when they differ. */
static void differ(char *buf, size_t len, const char *what, uint64_t here, uint64_t there)
{
	size_t n = strlen(buf);
	if (here != there && n < len)
		snprintf(buf + n, len - n, "%s%s %" PRIu64 " here, %" PRIu64 " in the file", n ? "; " : "", what, here,
			 there);
}

/* The same shape: what decides where a key's bits lie (k, blocks, seed)
 * and the window. */
static int same_shape(const struct shmf_slot *copy, const struct shmf_data_header *dh, const struct snap_file *sf,
		      char *err, size_t errlen)
{
	const struct shmf_snap_header *h = &sf->hdr;
	char diff[512] = "";
	differ(diff, sizeof(diff), "k", dh->k, h->k);
	differ(diff, sizeof(diff), "blocks", dh->nblocks, h->nblocks);
	differ(diff, sizeof(diff), "seed", dh->seed, h->seed);
	differ(diff, sizeof(diff), "window seconds", copy->window_secs, h->window_secs);
	differ(diff, sizeof(diff), "window generations", copy->window_gens, h->window_gens);
	if (diff[0] != '\0')
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "filter '%s' and snapshot %s differ in shape (%s): merge needs the same k, blocks, seed "
			      "and window",
			      copy->name, sf->path, diff);
	return 0;
}

/* The live generation that section @p i of @p sf goes into, or -1. */
static int target_of(const struct shmf_slot *copy, const struct snap_file *sf, unsigned i)
{
	if (copy->window_secs == 0)
		return 0;
	uint64_t w = sf->sec[i].created_epoch / copy->window_secs;
	for (unsigned j = 0; j < copy->nlive; j++)
		if (copy->live_created[j] / copy->window_secs == w)
			return (int)j;
	return -1;
}

int merge_begin(struct registry *r, const char *name, const struct snap_file *sf, struct merge_plan *p, char *err,
		size_t errlen)
{
	static const char undefined[] =
		"a union of cuckoo tables is not defined (a fingerprint's slot depends on the order of inserts and "
		"relocations in its table); copy a cuckoo filter whole with restore or shmctl pull";
	memset(p, 0, sizeof(*p));
	int slot = registry_slot_copy(r, name, &p->copy, err, errlen), rc;
	if (slot < 0)
		return slot;
	p->slot = slot;
	if (p->copy.type == SHMF_TYPE_CUCKOO)
		return errmsg(err, errlen, SHMF_E_TYPE, "filter '%s' is a cuckoo filter: %s", name, undefined);
	if (sf->hdr.type == SHMF_TYPE_CUCKOO)
		return errmsg(err, errlen, SHMF_E_TYPE, "snapshot %s holds a cuckoo filter: %s", sf->path, undefined);
	if (p->copy.type == SHMF_TYPE_STATIC || sf->hdr.type == SHMF_TYPE_STATIC)
		return errmsg(err, errlen, SHMF_E_TYPE,
			      "%s %s is a static filter (binary fuse, built offline): it merges with nothing; build "
			      "the union of the keys with shmctl build --type static and swap it in",
			      p->copy.type == SHMF_TYPE_STATIC ? "filter" : "snapshot",
			      p->copy.type == SHMF_TYPE_STATIC ? name : sf->path);
	/* An import is read-only, and its bits are RedisBloom's, laid out
	 * unlike a filter of shmfilter's own. */
	if (p->copy.scheme != SHMF_SCHEME_NATIVE || sf->hdr.scheme != SHMF_SCHEME_NATIVE)
		return errmsg(err, errlen, SHMF_E_TYPE,
			      "%s %s was imported from RedisBloom: an import is read-only and merges with nothing; "
			      "restore or pull it whole instead",
			      p->copy.scheme != SHMF_SCHEME_NATIVE ? "filter" : "snapshot",
			      p->copy.scheme != SHMF_SCHEME_NATIVE ? name : sf->path);
	/* Layers of different shapes do not line up bit for bit. */
	if ((p->copy.flags & SHMF_SLOT_LAYERED) || (sf->hdr.flags & SHMF_SNAP_F_LAYERED))
		return errmsg(err, errlen, SHMF_E_TYPE,
			      "%s %s grows in layers: merge ORs filters of one shape bit by bit, and layers of growing "
			      "filters need not line up; restore or pull the filter whole instead",
			      (p->copy.flags & SHMF_SLOT_LAYERED) ? "filter" : "snapshot",
			      (p->copy.flags & SHMF_SLOT_LAYERED) ? name : sf->path);
	if ((p->maps = malloc(sizeof(*p->maps))) == NULL)
		return errmsg(err, errlen, -ENOMEM, "filter '%s': out of memory for a merge", name);
	if ((rc = registry_ring_take(r, &p->copy, p->maps, err, errlen)) == 0)
		rc = same_shape(&p->copy, &p->maps->dm[0].hdr, sf, err, errlen);
	if (rc < 0)
		merge_end(r, p, sf, rc);
	return rc;
}

int merge_apply(struct merge_plan *p, struct snap_file *sf, char *err, size_t errlen)
{
	int rc = 0;
	/* Every payload chunk checked before the first OR. */
	for (unsigned i = 0; i < sf->hdr.nsections; i++)
		if ((rc = snapshot_read_section(sf, i, NULL, err, errlen)) < 0)
			return rc;
	for (unsigned i = 0; i < sf->hdr.nsections && rc == 0; i++) {
		int j = target_of(&p->copy, sf, i);
		if (j < 0) {
			p->rep.skipped++;
			continue;
		}
		struct merge_target t = { .words = (_Atomic uint64_t *)p->maps->dm[j].blocks };
		/* Checked again on the way: were the file changed since, the
		 * chunks ORed before the damage are the file's as checked. */
		rc = snapshot_scan_section(sf, i, or_chunk, &t, err, errlen);
		p->rep.bits += t.bits;
		p->rep.merged += rc == 0;
	}
	return rc;
}

void merge_end(struct registry *r, struct merge_plan *p, const struct snap_file *sf, int rc)
{
	if (p->maps != NULL) {
		registry_ring_release(p->maps);
		free(p->maps);
		p->maps = NULL;
	}
	if (rc < 0)
		return;
	log_msg(LOG_INFO, "filter '%s': merged %s (%u of %u generations, %" PRIu64 " bits newly set)", p->copy.name,
		sf->path, p->rep.merged, sf->hdr.nsections, p->rep.bits);
	/* A merge is how a diverged replicated filter is repaired. */
	if (r->repl != NULL && (p->copy.flags & SHMF_SLOT_REPLICATED))
		replication_repaired(r->repl, p->slot);
}

int merge_snapshot(struct registry *r, const char *name, struct snap_file *sf, struct merge_report *rep, char *err,
		   size_t errlen)
{
	struct merge_plan p;
	memset(rep, 0, sizeof(*rep));
	int rc = merge_begin(r, name, sf, &p, err, errlen);
	if (rc < 0)
		return rc;
	rc = merge_apply(&p, sf, err, errlen);
	merge_end(r, &p, sf, rc);
	*rep = p.rep;
	return rc;
}
