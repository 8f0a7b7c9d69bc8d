/*
 * registry-snapshot.c - a live filter to a snapshot file and back:
 * snapshot, swap and restore (registry.h, snapshot.h).
 *
 * A replacement never touches the live generation: the file is validated,
 * a new generation's data segment is filled from it (every chunk checked
 * against its checksum on the way), and only then is the slot pointed at
 * it; the old data file is unlinked at once (clients that still map it
 * keep their mapping until their next call moves them over).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cuckoo.h"
#include "errmsg.h"
#include "log.h"
#include "registry-internal.h"
#include "registry.h"
#include "rundir.h"
#include "snapshot.h"

static struct shmf_cuckoo_geom cuckoo_geom(const struct shmf_data_map *dm, struct shmf_cuckoo_lock *lock)
{
	return (struct shmf_cuckoo_geom){
		.buckets = (char *)dm->blocks + sizeof(struct shmf_cuckoo_meta),
		.nbuckets = dm->hdr.nbuckets,
		.seed = dm->hdr.seed,
		.fp_bits = dm->hdr.k,
		.max_kicks = dm->hdr.max_kicks,
		.meta = (struct shmf_cuckoo_meta *)dm->blocks,
		.lock = lock,
	};
}

/* The live generations of a filter, mapped read-write (the cuckoo writer
 * lock needs a writable descriptor), cuckoo ones locked. */
struct ring_maps {
	unsigned n;
	struct shmf_data_map dm[SHMF_WINDOW_MAX];
	struct shmf_cuckoo_lock lock[SHMF_WINDOW_MAX];
	struct shmf_cuckoo_geom g[SHMF_WINDOW_MAX];
};

static void ring_release(struct ring_maps *m)
{
	for (unsigned i = 0; i < m->n; i++) {
		if (m->dm[i].hdr.type == SHMF_TYPE_CUCKOO) {
			shmf_cuckoo_unlock(&m->g[i]);
			shmf_cuckoo_lock_fini(&m->lock[i]);
		}
		shmf_data_map_close(&m->dm[i]);
	}
	m->n = 0;
}

static int ring_take(struct registry *r, const struct shmf_slot *copy, struct ring_maps *m, char *err, size_t errlen)
{
	m->n = 0;
	for (unsigned i = 0; i < copy->nlive; i++) {
		struct shmf_data_map *dm = &m->dm[i];
		dm->fd = -1;
		int rc = shmf_data_map_open_gen(&r->dir, copy, copy->live[i], 1, dm);
		if (rc < 0) {
			ring_release(m);
			return errmsg(err, errlen, rc, "filter '%s': cannot map generation %" PRIu64 ": %s", copy->name,
				      copy->live[i], shmf_strerror(rc));
		}
		if (dm->hdr.type == SHMF_TYPE_CUCKOO) {
			shmf_cuckoo_lock_init(&m->lock[i], dm->fd);
			m->g[i] = cuckoo_geom(dm, &m->lock[i]);
			if ((rc = shmf_cuckoo_lock(&m->g[i])) < 0) {
				shmf_cuckoo_lock_fini(&m->lock[i]);
				shmf_data_map_close(dm);
				ring_release(m);
				return errmsg(err, errlen, rc, "filter '%s': cannot take the relocation lock: %s",
					      copy->name, strerror(-rc));
			}
		}
		m->n = i + 1;
	}
	return 0;
}

int registry_snapshot(struct registry *r, const char *name, const char *path, const struct fscred *as, char *err,
		      size_t errlen)
{
	struct shmf_slot copy;
	int rc = registry_slot_copy(r, name, &copy, err, errlen);
	if (rc < 0)
		return rc;
	/* Cuckoo: no fingerprint moves while the copy is taken (the writer
	 * lock of every generation is held), so every key stored before it
	 * began is in one of its buckets in the copy. Bloom bits only ever get
	 * set, so a copy taken while adds go on holds every key whose add
	 * returned before it began. */
	struct ring_maps m;
	if ((rc = ring_take(r, &copy, &m, err, errlen)) < 0)
		return rc;

	/* The shape and seed as the newest generation's data header has them,
	 * the name and window as the slot does. */
	const struct shmf_data_header *dh = &m.dm[0].hdr;
	struct filter_spec spec = { .capacity = dh->capacity,
				    .window_secs = copy.window_secs,
				    .window_gens = copy.window_gens };
	memcpy(&spec.fpr, &dh->fpr_bits, sizeof(spec.fpr));
	memcpy(spec.name, copy.name, sizeof(spec.name));
	struct shmf_geometry g = { .type = dh->type,
				   .k = dh->k,
				   .nblocks = dh->nblocks,
				   .nbuckets = dh->nbuckets,
				   .max_kicks = dh->max_kicks };
	struct snap_source src = { .nsections = m.n };
	snapshot_header_fill(&src.hdr, &spec, &g, dh->seed, copy.created_epoch, (uint64_t)time(NULL));
	for (unsigned i = 0; i < m.n; i++) {
		src.payload[i] = m.dm[i].blocks;
		src.sec[i] = (struct shmf_snap_section){
			.generation = m.dm[i].hdr.generation,
			.created_epoch = copy.live_created[i],
			.items = shmf_data_items(&m.dm[i]),
			.deletes = shmf_data_deletes(&m.dm[i]),
		};
	}
	struct fscred saved;
	rc = fscred_become(as, &saved, err, errlen);
	if (rc == 0) {
		struct stat st;
		/* The file gets the data file's mode less execute bits: who may
		 * read the filter may read its snapshot. */
		unsigned mode = fstat(m.dm[0].fd, &st) == 0 ? (unsigned)(st.st_mode & 0666) : 0640;
		rc = snapshot_write(path, &src, mode, err, errlen);
		fscred_restore(&saved);
	}
	ring_release(&m);
	if (rc == 0)
		log_msg(LOG_INFO, "filter '%s': snapshot of generation %" PRIu64 "%s written to %s", name,
			src.sec[0].generation, src.nsections > 1 ? " and older live ones" : "", path);
	return rc;
}

/* A free slot, or SHMF_E_FULL. */
static int free_slot(struct registry *r)
{
	for (unsigned i = 0; i < SHMF_SLOTS; i++)
		if (atomic_load_explicit(&r->ctl.slots[i].generation, memory_order_relaxed) == 0)
			return (int)i;
	return SHMF_E_FULL;
}

/* Fill the new generation's mapping from the file; @return 0 or an error. */
static int fill_from(struct snap_file *sf, unsigned sec, struct shmf_data_map *dm, char *err, size_t errlen)
{
	/* Through the descriptor: a kernel copy, no page fault per page of
	 * the new mapping. */
	int rc = snapshot_copy_section(sf, sec, dm->fd, SHMF_DATA_BLOCKS_OFF, err, errlen);
	if (rc < 0)
		return rc;
	atomic_store_explicit(&dm->counters[0].items, sf->sec[sec].items, memory_order_relaxed);
	atomic_store_explicit(&dm->counters[0].deletes, sf->sec[sec].deletes, memory_order_relaxed);
	if (dm->hdr.type == SHMF_TYPE_CUCKOO) {
		/* The copy was taken under the writer lock, so no move was open;
		 * make sure of it rather than trust the file (an odd version
		 * would send every reader to the locked fallback). */
		struct shmf_cuckoo_meta *m = (struct shmf_cuckoo_meta *)dm->blocks;
		atomic_store_explicit(&m->moving, 0, memory_order_relaxed);
		for (unsigned i = 0; i < SHMF_CUCKOO_STRIPES; i++)
			atomic_store_explicit(&m->version[i], 0, memory_order_relaxed);
	}
	return 0;
}

/* The spec a snapshot's header describes, under the name @p name: the file
 * decides the shape and the window (a plain snapshot swapped into a
 * windowed filter makes it plain). */
static void spec_from_header(const struct shmf_snap_header *h, const char *name, struct filter_spec *spec)
{
	*spec = (struct filter_spec){ .type = (int)h->type,
				      .capacity = h->capacity,
				      .mode = 0640,
				      .max_kicks = h->type == SHMF_TYPE_CUCKOO ? h->max_kicks : 0,
				      .window_secs = h->window_secs,
				      .window_gens = h->window_gens };
	memcpy(&spec->fpr, &h->fpr_bits, sizeof(double));
	snprintf(spec->name, sizeof(spec->name), "%s", name);
}

/* Map the new generation @p gen (created, not published) and fill it from
 * section @p i of @p sf. */
static int fill_generation(struct registry *r, const struct filter_spec *spec, const struct shmf_geometry *g,
			   struct snap_file *sf, unsigned i, uint64_t gen, char *err, size_t errlen)
{
	const struct shmf_snap_header *h = &sf->hdr;
	struct shmf_slot copy = { .type = h->type,
				  .k = g->k,
				  .capacity = h->capacity,
				  .fpr_bits = h->fpr_bits,
				  .nblocks = g->nblocks,
				  .nbuckets = g->nbuckets,
				  .data_bytes = g->data_bytes };
	atomic_store_explicit(&copy.generation, gen, memory_order_relaxed);
	snprintf(copy.name, sizeof(copy.name), "%s", spec->name);
	struct shmf_data_map dm = { .fd = -1 };
	int rc = shmf_data_map_open(&r->dir, &copy, 1, &dm);
	if (rc < 0)
		errmsg(err, errlen, rc, "filter '%s': cannot map the new generation: %s", spec->name,
		       shmf_strerror(rc));
	else
		rc = fill_from(sf, i, &dm, err, errlen);
	shmf_data_map_close(&dm);
	return rc;
}

/* New generations for every section of @p sf, numbered so that the newest
 * (section 0) is the highest, each filled and checked before anything is
 * published. On an error every file made is unlinked again. */
static int fill_generations(struct registry *r, const struct filter_spec *spec, const struct shmf_geometry *g,
			    struct snap_file *sf, struct live_ring *ring, char *err, size_t errlen)
{
	unsigned n = sf->hdr.nsections;
	uint64_t base = r->ctl.hdr->last_generation + 1;
	*ring = (struct live_ring){ .n = n };
	for (unsigned i = 0; i < n; i++) {
		ring->gen[i] = base + (n - 1 - i);
		ring->created[i] = sf->sec[i].created_epoch;
	}
	struct live_ring made = { 0 };
	int rc = 0;
	for (unsigned i = 0; i < n && rc == 0; i++) {
		if ((rc = registry_data_create(r, spec, g, ring->gen[i], sf->hdr.seed, 1, err, errlen)) < 0)
			break;
		made.gen[made.n++] = ring->gen[i];
		rc = fill_generation(r, spec, g, sf, i, ring->gen[i], err, errlen);
	}
	r->ctl.hdr->last_generation = base + n - 1;
	if (rc < 0)
		registry_unlink_ring(r, spec->name, &made);
	return rc;
}

int registry_replace(struct registry *r, const char *name, struct snap_file *sf, int how, char *err, size_t errlen)
{
	const struct shmf_snap_header *h = &sf->hdr;
	int rc = shmf_name_check(name);
	if (rc < 0)
		return errmsg(err, errlen, rc, "invalid filter name '%s'", name);
	int slot = registry_find(r, name);
	if (slot < 0 && how == REGISTRY_SWAP)
		return errmsg(err, errlen, SHMF_E_NOTFOUND,
			      "filter '%s' not found (swap replaces a live filter; restore creates one)", name);
	struct filter_spec spec;
	spec_from_header(h, name, &spec);
	struct live_ring old = { 0 };
	if (slot >= 0) {
		struct shmf_slot *s = &r->ctl.slots[slot];
		struct filter_spec cur;
		struct shmf_geometry cg;
		registry_spec_of(r, s, &cur, &cg);
		spec.mode = cur.mode;
		old.n = s->nlive;
		memcpy(old.gen, s->live, sizeof(old.gen));
	} else if ((slot = free_slot(r)) < 0) {
		return errmsg(err, errlen, slot, "filter '%s': all %u filter slots are in use", name, SHMF_SLOTS);
	}
	/* The stored shape, which snapshot_open() checked against the sizing:
	 * a filter sized by an older rule keeps its shape. */
	struct shmf_geometry g;
	snapshot_geometry(h, &g);
	if (g.data_bytes * h->nsections > r->max_bytes)
		return errmsg(err, errlen, SHMF_E_TOOBIG,
			      "snapshot %s: %u generations of %" PRIu64 " bytes are more than this host has", sf->path,
			      h->nsections, g.data_bytes);
	struct live_ring ring;
	if ((rc = fill_generations(r, &spec, &g, sf, &ring, err, errlen)) < 0)
		return rc;
	registry_publish(r, slot, &spec, &g, &ring);
	registry_unlink_ring(r, name, &old);
	log_msg(LOG_INFO, "filter '%s': %s from %s as generation %" PRIu64 "%s (%" PRIu64 " items)%s", name,
		how == REGISTRY_SWAP ? "swapped in" : "restored", sf->path, ring.gen[0],
		h->nsections > 1 ? " and older live ones" : "", sf->sec[0].items,
		old.n ? "; the previous generations are unlinked" : "");
	return slot;
}
