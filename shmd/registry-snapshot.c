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

/* The data map of the live generation in @p slot, read-write (the cuckoo
 * writer lock needs a writable descriptor). */
static int map_live(struct registry *r, int slot, struct shmf_slot *copy, struct shmf_data_map *dm, char *err,
		    size_t errlen)
{
	dm->fd = -1;
	int rc = shmf_slot_read(&r->ctl.slots[slot], copy);
	if (rc == 0)
		rc = shmf_data_map_open(&r->dir, copy, 1, dm);
	if (rc < 0)
		return errmsg(err, errlen, rc, "filter '%s': cannot map its data: %s", r->ctl.slots[slot].name,
			    shmf_strerror(rc));
	return 0;
}

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

int registry_snapshot(struct registry *r, const char *name, const char *path, const struct fscred *as,
		      char *err, size_t errlen)
{
	int slot = registry_find(r, name);
	if (slot < 0)
		return errmsg(err, errlen, slot, slot == SHMF_E_NAME ? "invalid filter name '%s'" : "filter '%s' not found", name);
	struct shmf_slot copy;
	struct shmf_data_map dm;
	int rc = map_live(r, slot, &copy, &dm, err, errlen);
	if (rc < 0)
		return rc;

	struct snap_source src = { .nsections = 1 };
	struct shmf_snap_header *h = &src.hdr;
	h->type = dm.hdr.type;
	h->k = dm.hdr.k;
	h->capacity = dm.hdr.capacity;
	h->fpr_bits = dm.hdr.fpr_bits;
	h->nblocks = dm.hdr.nblocks;
	h->nbuckets = dm.hdr.nbuckets;
	h->max_kicks = dm.hdr.max_kicks;
	h->seed = dm.hdr.seed;
	h->created_epoch = copy.created_epoch;
	h->snapshot_epoch = (uint64_t)time(NULL);
	memcpy(h->name, copy.name, sizeof(h->name));
	src.payload[0] = dm.blocks;

	/* Cuckoo: no fingerprint moves while the copy is taken, so every key
	 * stored before it began is in one of its buckets in the copy. Bloom
	 * bits only ever get set, so a copy taken while adds go on holds every
	 * key whose add returned before it began. */
	struct shmf_cuckoo_lock lock;
	struct shmf_cuckoo_geom g;
	if (dm.hdr.type == SHMF_TYPE_CUCKOO) {
		shmf_cuckoo_lock_init(&lock, dm.fd);
		g = cuckoo_geom(&dm, &lock);
		if ((rc = shmf_cuckoo_lock(&g)) < 0) {
			shmf_cuckoo_lock_fini(&lock);
			shmf_data_map_close(&dm);
			return errmsg(err, errlen, rc, "filter '%s': cannot take the relocation lock: %s", name, strerror(-rc));
		}
	}
	src.sec[0] = (struct shmf_snap_section){
		.generation = dm.hdr.generation,
		.created_epoch = copy.created_epoch,
		.items = shmf_data_items(&dm),
		.deletes = shmf_data_deletes(&dm),
	};
	struct fscred saved;
	rc = fscred_become(as, &saved, err, errlen);
	if (rc == 0) {
		struct stat st;
		/* The file gets the data file's mode less execute bits: who may
		 * read the filter may read its snapshot. */
		unsigned mode = fstat(dm.fd, &st) == 0 ? (unsigned)(st.st_mode & 0666) : 0640;
		rc = snapshot_write(path, &src, mode, err, errlen);
		fscred_restore(&saved);
	}
	if (dm.hdr.type == SHMF_TYPE_CUCKOO) {
		shmf_cuckoo_unlock(&g);
		shmf_cuckoo_lock_fini(&lock);
	}
	shmf_data_map_close(&dm);
	if (rc == 0)
		log_msg(LOG_INFO, "filter '%s': snapshot of generation %" PRIu64 " written to %s", name, src.sec[0].generation,
			path);
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
static int fill_from(struct snap_file *sf, struct shmf_data_map *dm, char *err, size_t errlen)
{
	/* Through the descriptor: a kernel copy, no page fault per page of
	 * the new mapping. */
	int rc = snapshot_copy_section(sf, 0, dm->fd, SHMF_DATA_BLOCKS_OFF, err, errlen);
	if (rc < 0)
		return rc;
	atomic_store_explicit(&dm->counters[0].items, sf->sec[0].items, memory_order_relaxed);
	atomic_store_explicit(&dm->counters[0].deletes, sf->sec[0].deletes, memory_order_relaxed);
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

int registry_replace(struct registry *r, const char *name, struct snap_file *sf, int how, char *err, size_t errlen)
{
	const struct shmf_snap_header *h = &sf->hdr;
	int rc = shmf_name_check(name);
	if (rc < 0)
		return errmsg(err, errlen, rc, "invalid filter name '%s'", name);
	int slot = registry_find(r, name);
	if (slot < 0 && how == REGISTRY_SWAP)
		return errmsg(err, errlen, SHMF_E_NOTFOUND, "filter '%s' not found (swap replaces a live filter; restore creates one)",
			    name);
	if (h->nsections != 1 || h->window_gens != 0)
		return errmsg(err, errlen, SHMF_E_INVAL, "snapshot %s: holds a windowed filter (%u generations); not supported yet",
			    sf->path, h->nsections);
	struct filter_spec spec = { .type = (int)h->type, .capacity = h->capacity, .mode = 0640,
				    .max_kicks = h->type == SHMF_TYPE_CUCKOO ? h->max_kicks : 0 };
	memcpy(&spec.fpr, &h->fpr_bits, sizeof(double));
	snprintf(spec.name, sizeof(spec.name), "%s", name);
	char oldfile[128] = "";
	uint64_t oldgen = 0;
	if (slot >= 0) {
		struct stat st;
		oldgen = atomic_load_explicit(&r->ctl.slots[slot].generation, memory_order_relaxed);
		shmf_data_filename(name, oldgen, oldfile, sizeof(oldfile));
		if (fstatat(r->dir.fd, oldfile, &st, AT_SYMLINK_NOFOLLOW) == 0)
			spec.mode = st.st_mode & 0777;
	} else if ((slot = free_slot(r)) < 0) {
		return errmsg(err, errlen, slot, "filter '%s': all %u filter slots are in use", name, SHMF_SLOTS);
	}
	struct shmf_geometry g;
	if ((rc = shmf_geometry_size(spec.type, spec.capacity, spec.fpr, spec.max_kicks, &g)) < 0)
		return errmsg(err, errlen, rc, "snapshot %s: its parameters do not size a filter: %s", sf->path, shmf_strerror(rc));
	if (g.data_bytes > r->max_bytes)
		return errmsg(err, errlen, SHMF_E_TOOBIG, "snapshot %s: a filter of %" PRIu64 " bytes is more than this host has",
			    sf->path, g.data_bytes);

	uint64_t gen = r->ctl.hdr->last_generation + 1;
	if ((rc = registry_data_create(r, &spec, &g, gen, h->seed, err, errlen)) < 0)
		return rc;
	r->ctl.hdr->last_generation = gen;
	char newfile[128];
	shmf_data_filename(name, gen, newfile, sizeof(newfile));
	struct shmf_slot copy = { .type = h->type, .k = g.k, .capacity = h->capacity, .fpr_bits = h->fpr_bits,
				  .nblocks = g.nblocks, .nbuckets = g.nbuckets, .data_bytes = g.data_bytes };
	atomic_store_explicit(&copy.generation, gen, memory_order_relaxed);
	snprintf(copy.name, sizeof(copy.name), "%s", name);
	struct shmf_data_map dm = { .fd = -1 };
	rc = shmf_data_map_open(&r->dir, &copy, 1, &dm);
	if (rc < 0)
		errmsg(err, errlen, rc, "filter '%s': cannot map the new generation: %s", name, shmf_strerror(rc));
	else
		rc = fill_from(sf, &dm, err, errlen);
	shmf_data_map_close(&dm);
	if (rc < 0) {
		unlinkat(r->dir.fd, newfile, 0);
		return rc;
	}
	registry_publish(r, slot, &spec, &g, gen, sf->sec[0].created_epoch);
	if (oldfile[0] != '\0' && unlinkat(r->dir.fd, oldfile, 0) < 0)
		log_msg(LOG_WARNING, "%s/%s: cannot unlink: %s", r->dir_path, oldfile, strerror(errno));
	log_msg(LOG_INFO, "filter '%s': %s from %s as generation %" PRIu64 " (%" PRIu64 " items)%s", name,
		how == REGISTRY_SWAP ? "swapped in" : "restored", sf->path, gen, sf->sec[0].items,
		oldgen ? "; the previous generation is unlinked" : "");
	return slot;
}
