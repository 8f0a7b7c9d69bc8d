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
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "libclient/fuse.h"
#include "libclient/cuckoo.h"
#include "libclient/redisbloom.h"
#include "common/errmsg.h"
#include "common/fleet.h"
#include "shmd/base/log.h"
#include "shmd/store/quotas.h"
#include "shmd/store/generations.h"
#include "shmd/store/registry.h"
#include "libclient/rundir.h"
#include "common/snapshot.h"
#include "common/spec.h"

struct shmf_cuckoo_geom registry_cuckoo_geom(const struct shmf_data_map *dm, struct shmf_cuckoo_lock *lock)
{
	struct shmf_cuckoo_geom g = {
		.buckets = (char *)dm->blocks + sizeof(struct shmf_cuckoo_meta),
		.nbuckets = dm->hdr.nbuckets,
		.seed = dm->hdr.seed,
		.fp_bits = dm->hdr.k,
		.slots = dm->hdr.bucket_size,
		.max_kicks = dm->hdr.max_kicks,
		.meta = (struct shmf_cuckoo_meta *)dm->blocks,
		.lock = lock,
		.cow = (struct shmf_cuckoo_cow *)((char *)dm->base + SHMF_DATA_COW_OFF),
	};
	/* The mapping checked the header's shape (shmf_geometry_check): its
	 * layout exists. */
	(void)shmf_cuckoo_geom_layout(&g);
	return g;
}

void registry_ring_release(struct ring_maps *m)
{
	for (unsigned i = 0; i < m->n; i++) {
		if (m->copy[i] != NULL)
			munmap(m->copy[i], (size_t)(m->dm[i].hdr.nblocks * SHMF_BLOCK_BYTES));
		shmf_data_map_close(&m->dm[i]);
	}
	m->n = 0;
}

int registry_ring_take(struct registry *r, const struct shmf_slot *copy, struct ring_maps *m, char *err, size_t errlen)
{
	m->n = 0;
	m->first = 0;
	m->lock_timeout_ms = copy->lock_timeout_ms;
	for (unsigned j = 0; j < copy->nlive; j++) {
		struct shmf_data_map *dm = &m->dm[m->n];
		dm->fd = -1;
		m->copy[m->n] = NULL;
		int rc = shmf_data_map_open_gen(&r->dir, copy, copy->live[j], 1, dm);
		if (rc < 0) {
			registry_ring_release(m);
			return errmsg(err, errlen, rc, "filter '%s': cannot map generation %" PRIu64 ": %s", copy->name,
				      copy->live[j], shmf_strerror(rc));
		}
		/* A standby nobody opened holds no key: left out. acquire:
		 * pairs with the adder's release of OPENED, before its add. */
		if (j == 0 && (copy->flags & SHMF_SLOT_STANDBY) &&
		    !(atomic_load_explicit(&dm->state->bits, memory_order_acquire) & SHMF_LAYER_OPENED)) {
			shmf_data_map_close(dm);
			m->first = 1;
			continue;
		}
		m->n++;
	}
	return 0;
}

/* Generation @p i of a cuckoo filter, copied into private memory as a
 * consistent image (every fingerprint stored before the copy began is in
 * one of its buckets) while writers go on: shmf_cuckoo_copy() holds the
 * relocation lock only at its start and end, and writers log what their
 * moves change meanwhile. A copy that writers cancelled (they relocated
 * faster than it read their log) is tried again, a few times. */
int registry_ring_copy(struct ring_maps *m, unsigned i, const char *name, char *err, size_t errlen)
{
	const struct shmf_data_map *dm = &m->dm[i];
	size_t bytes = (size_t)(dm->hdr.nblocks * SHMF_BLOCK_BYTES);
	void *dst = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (dst == MAP_FAILED)
		return errmsg(err, errlen, -errno, "filter '%s': no memory for a copy of %zu bytes: %s", name, bytes,
			      strerror(errno));
	m->copy[i] = dst;
	if (dm->hdr.scheme != SHMF_SCHEME_NATIVE) {
		/* An import is never written after publication: a plain copy. */
		memcpy(dst, dm->blocks, bytes);
		return 0;
	}
	struct shmf_cuckoo_lock lock;
	shmf_cuckoo_lock_init(&lock, m->lock_timeout_ms);
	struct shmf_cuckoo_geom g = registry_cuckoo_geom(dm, &lock);
	int rc = shmf_cuckoo_copy(&g, dst, bytes);
	for (int tries = 1; tries < 10 && rc == -EAGAIN; tries++) {
		log_msg(LOG_INFO,
			"filter '%s': copy of generation %" PRIu64 " for a snapshot cancelled by writers "
			"that found no room in the snapshot log; copying again",
			name, dm->hdr.generation);
		rc = shmf_cuckoo_copy(&g, dst, bytes);
	}
	if (rc < 0)
		return errmsg(err, errlen, rc, "filter '%s': cannot copy generation %" PRIu64 ": %s", name,
			      dm->hdr.generation,
			      rc == -EAGAIN ? "writers kept relocating faster than the copy read their log"
					    : shmf_strerror(rc));
	return 0;
}

/* The senders' sequences of replicated filter @p slot, into fleet block
 * @p f, flagged in @p h: read after the cursor, so that they cover at
 * least what it does (a replay of an entry the copy holds is refused; an
 * entry after the cursor applied since is applied again only if its
 * sequence is above, which it is not: it holds no key the copy lacks). */
static void snap_fleet(struct registry *r, int slot, struct shmf_snap_header *h, struct shmf_snap_fleet *f)
{
	struct shmf_fleet_peer peers[SHMF_FLEET_PEERS];
	registry_fleet_peers_get(r, slot, peers, &f->floor);
	for (unsigned i = 0; i < SHMF_FLEET_PEERS; i++) {
		f->peers[i].node = peers[i].node;
		f->peers[i].seq = peers[i].seq;
	}
	f->sent_seq = registry_fleet_sent_get(r, slot);
	h->flags |= SHMF_SNAP_F_FLEET;
}

void registry_snap_source(struct registry *r, int slot, const struct shmf_slot *copy, const struct ring_maps *m,
			  struct snap_source *src)
{
	/* The shape and seed as the newest generation's data header has them,
	 * the name and window as the slot does; a growing filter's capacity,
	 * rate and shape as it was created (its first layer's, the slot's). */
	const struct shmf_data_header *dh = &m->dm[0].hdr;
	struct filter_spec spec = { .capacity = dh->capacity,
				    .window_secs = copy->window_secs,
				    .window_gens = copy->window_gens,
				    .expansion = (copy->flags & SHMF_SLOT_LAYERED) ? copy->expansion : 0,
				    .nonscaling = (copy->flags & SHMF_SLOT_NONSCALING) != 0 };
	memcpy(&spec.fpr, &dh->fpr_bits, sizeof(spec.fpr));
	memcpy(spec.name, copy->name, sizeof(spec.name));
	struct shmf_geometry g = { .type = dh->type,
				   .k = dh->k,
				   .nblocks = dh->nblocks,
				   .nbuckets = dh->nbuckets,
				   .max_kicks = dh->max_kicks,
				   .bucket_size = dh->bucket_size,
				   .scheme = dh->scheme };
	if (spec.expansion != 0) {
		spec.capacity = copy->capacity;
		memcpy(&spec.fpr, &copy->fpr_bits, sizeof(spec.fpr));
		g.k = copy->k;
		g.nblocks = copy->nblocks;
		g.nbuckets = copy->nbuckets;
	}
	memset(src, 0, sizeof(*src));
	src->nsections = m->n;
	src->hdr.flags = copy->flags & SHMF_SLOT_REPLICATED ? SHMF_SNAP_F_REPLICATED : 0;
	snapshot_header_fill(&src->hdr, &spec, &g, dh->seed, copy->created_epoch, (uint64_t)time(NULL));
	registry_cursor_get(r, slot, &src->hdr.cursor_ms, &src->hdr.cursor_seq);
	if (src->hdr.flags & SHMF_SNAP_F_REPLICATED)
		snap_fleet(r, slot, &src->hdr, &src->fleet);
	for (unsigned i = 0; i < m->n; i++) {
		src->payload[i] = m->dm[i].blocks;
		src->sec[i] = (struct shmf_snap_section){
			.generation = m->dm[i].hdr.generation,
			.created_epoch = copy->live_created[i + m->first],
			.items = shmf_data_items(&m->dm[i]),
			.deletes = shmf_data_deletes(&m->dm[i]),
		};
	}
}

int registry_snapshot_begin(struct registry *r, const char *name, const char *path, const struct fscred *as,
			    struct registry_snap *s, char *err, size_t errlen)
{
	struct shmf_slot copy;
	memset(s, 0, sizeof(*s));
	int slot = registry_slot_copy(r, name, &copy, err, errlen), rc;
	if (slot < 0)
		return slot;
	if (strlen(path) >= sizeof(s->path))
		return errmsg(err, errlen, -ENAMETOOLONG, "snapshot path is longer than %zu bytes",
			      sizeof(s->path) - 1);
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->path, sizeof(s->path), "%s", path);
	if (as != NULL)
		s->as = *as;
	if ((s->maps = malloc(sizeof(*s->maps))) == NULL)
		return errmsg(err, errlen, -ENOMEM, "filter '%s': out of memory for a snapshot", name);
	/* The mappings keep every generation copied valid until the end,
	 * whatever a rotation or a drop unlinks meanwhile. */
	if ((rc = registry_ring_take(r, &copy, s->maps, err, errlen)) < 0) {
		free(s->maps);
		s->maps = NULL;
		return rc;
	}
	/* The stream cursor is read before the payload is copied: the copy
	 * holds at least what the cursor covers, so a replay from it misses
	 * nothing (and may apply again what the copy already holds). */
	registry_snap_source(r, slot, &copy, s->maps, &s->src);
	/* The file gets the data file's mode less execute bits: who may read
	 * the filter may read its snapshot. */
	struct stat st;
	s->mode = fstat(s->maps->dm[0].fd, &st) == 0 ? (unsigned)(st.st_mode & 0666) : 0640;
	return 0;
}

int registry_snapshot_write(struct registry_snap *s, char *err, size_t errlen)
{
	/* Cuckoo: each generation copied consistently first, here on the
	 * file worker (registry_ring_copy), so every key stored before the
	 * snapshot began is in one of its buckets in the file. Bloom bits
	 * only ever get set, so a copy taken while adds go on holds every key
	 * whose add returned before it began. */
	struct ring_maps *m = s->maps;
	for (unsigned i = 0; i < m->n; i++) {
		if (m->dm[i].hdr.type != SHMF_TYPE_CUCKOO)
			continue;
		int rc = registry_ring_copy(m, i, s->name, err, errlen);
		if (rc < 0)
			return rc;
		s->src.payload[i] = m->copy[i];
	}
	struct fscred saved;
	int rc = fscred_become(&s->as, &saved, err, errlen);
	if (rc == 0) {
		rc = snapshot_write(s->path, &s->src, s->mode, err, errlen);
		fscred_restore(&saved);
	}
	return rc;
}

void registry_snapshot_end(struct registry_snap *s, int rc)
{
	if (s->maps != NULL) {
		registry_ring_release(s->maps);
		free(s->maps);
		s->maps = NULL;
	}
	if (rc == 0)
		log_msg(LOG_INFO, "filter '%s': snapshot of generation %" PRIu64 "%s written to %s", s->name,
			s->src.sec[0].generation, s->src.nsections > 1 ? " and older live ones" : "", s->path);
}

int registry_snapshot(struct registry *r, const char *name, const char *path, const struct fscred *as, char *err,
		      size_t errlen)
{
	struct registry_snap *s = malloc(sizeof(*s));
	if (s == NULL)
		return errmsg(err, errlen, -ENOMEM, "filter '%s': out of memory for a snapshot", name);
	int rc = registry_snapshot_begin(r, name, path, as, s, err, errlen);
	if (rc == 0) {
		rc = registry_snapshot_write(s, err, errlen);
		registry_snapshot_end(s, rc);
	}
	free(s);
	return rc;
}

/* "bloom 1000000 keys (k 7, 19440 blocks, window 10m x 2)",
 * "cuckoo 1000 keys (16-bit fingerprints, 296 buckets of 4)" */
static void describe_shape(char *buf, size_t len, uint32_t type, uint64_t capacity, uint32_t k, uint32_t bucket_size,
			   uint64_t nblocks, uint64_t nbuckets, uint64_t window_secs, uint32_t window_gens,
			   uint32_t expansion)
{
	int at = snprintf(buf, len, "%s %" PRIu64 " keys (", spec_type_name((int)type), capacity);
	if (type == SHMF_TYPE_CUCKOO)
		at += snprintf(buf + at, len - (size_t)at, "%u-bit fingerprints, %" PRIu64 " buckets of %u", k,
			       nbuckets, bucket_size);
	else
		at += snprintf(buf + at, len - (size_t)at, "k %u, %" PRIu64 " blocks", k, nblocks);
	if (window_gens)
		at += snprintf(buf + at, len - (size_t)at, ", window %" PRIu64 "s x %u", window_secs, window_gens);
	if (expansion)
		at += snprintf(buf + at, len - (size_t)at, ", growing by %u", expansion);
	snprintf(buf + at, len - (size_t)at, ")");
}

int registry_swap_shape(struct registry *r, const char *name, const struct shmf_snap_header *h, char *err,
			size_t errlen)
{
	int slot = registry_find(r, name);
	if (slot < 0)
		return 0; /* the swap says "not found" */
	const struct shmf_slot *s = &r->ctl.slots[slot];
	struct shmf_geometry g;
	snapshot_geometry(h, &g); /* the file's bucket size: 4 before version 3 */
	uint32_t expansion = (h->flags & SHMF_SNAP_F_LAYERED) ? h->expansion : 0;
	if (s->type == h->type && s->capacity == h->capacity && s->k == h->k && s->nblocks == h->nblocks &&
	    s->nbuckets == h->nbuckets && s->bucket_size == g.bucket_size && s->window_secs == h->window_secs &&
	    s->window_gens == h->window_gens && ((s->flags & SHMF_SLOT_LAYERED) ? s->expansion : 0) == expansion)
		return 0;
	char from[160], to[160];
	describe_shape(from, sizeof(from), s->type, s->capacity, s->k, s->bucket_size, s->nblocks, s->nbuckets,
		       s->window_secs, s->window_gens, (s->flags & SHMF_SLOT_LAYERED) ? s->expansion : 0);
	describe_shape(to, sizeof(to), h->type, h->capacity, h->k, g.bucket_size, h->nblocks, h->nbuckets,
		       h->window_secs, h->window_gens, expansion);
	return errmsg(err, errlen, SHMF_E_INVAL,
		      "swap would change %s from %s to %s; add --reshape (SHMF.SWAP %s FILE RESHAPE) if that is meant",
		      s->name, from, to, s->name);
}

/* A free slot, or SHMF_E_FULL. */
static int free_slot(struct registry *r)
{
	for (unsigned i = 0; i < SHMF_SLOTS; i++)
		if (atomic_load_explicit(&r->ctl.slots[i].generation, memory_order_relaxed) == 0)
			return (int)i;
	return SHMF_E_FULL;
}

/* A window's generations begin no later than now plus the skew
 * tolerance (fleet.h): one that began later would keep the window from
 * turning until then (its age, or for a replicated window the clock,
 * decides). A snapshot of a host whose clock is ahead by more is refused,
 * as its entries would be. 0, or SHMF_E_FORMAT with @p err. */
static int load_window_check(const char *name, const struct shmf_snap_header *h, const struct shmf_snap_section *sec,
			     char *err, size_t errlen)
{
	if (h->window_secs == 0)
		return 0;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t now_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000,
		 skew = fleet_skew_ms(h->window_secs);
	for (unsigned i = 0; i < h->nsections; i++)
		if (sec[i].created_epoch > (now_ms + skew) / 1000)
			return errmsg(err, errlen, SHMF_E_FORMAT,
				      "filter '%s': generation %u of the snapshot began at %" PRIu64 ", %" PRIu64
				      " s after this host's clock (more than the skew tolerance, %" PRIu64
				      " ms): its window would not turn until then; is the clock of the host "
				      "that wrote it ahead?",
				      name, i, sec[i].created_epoch, sec[i].created_epoch - now_ms / 1000, skew);
	return 0;
}

/* The data files of @p ld's new generations, numbered so that the newest
 * (section 0) is the highest, made and opened read-write. 0, or a
 * negative code with @p err (the caller aborts the load). */
static int load_files_make(struct registry *r, struct registry_load *ld, const char *name,
			   const struct shmf_snap_header *h, const struct shmf_snap_section *sec, char *err,
			   size_t errlen)
{
	int rc = 0;
	unsigned n = h->nsections;
	uint64_t base = r->ctl.hdr->last_generation + 1;
	ld->ring.n = n;
	for (unsigned i = 0; i < n; i++) {
		ld->ring.gen[i] = base + (n - 1 - i);
		ld->ring.created[i] = sec[i].created_epoch;
	}
	r->ctl.hdr->last_generation = base + n - 1;
	for (unsigned i = 0; i < n; i++) {
		char fname[128];
		/* A growing filter's layer carries its own capacity and rate. */
		struct filter_spec ls;
		struct shmf_geometry lg;
		if (registry_layer_spec(&ld->spec, ld->spec.expansion ? n - 1 - i : 0, &ls, &lg) < 0)
			ls = ld->spec;
		if ((rc = registry_data_create(r, &ls, &ld->gs[i], ld->ring.gen[i], h->seed, 1, err, errlen)) < 0)
			break;
		ld->made = i + 1;
		shmf_data_filename(name, ld->ring.gen[i], fname, sizeof(fname));
		ld->fd[i] = openat(r->dir.fd, fname, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (ld->fd[i] < 0) {
			rc = errmsg(err, errlen, -errno, "%s/%s: cannot open the new generation: %s", r->dir_path,
				    fname, strerror(errno));
			break;
		}
	}
	return rc;
}

int registry_load_begin(struct registry *r, const char *name, const struct shmf_snap_header *h,
			const struct shmf_snap_section *sec, int how, struct registry_load *ld, char *err,
			size_t errlen)
{
	memset(ld, 0, sizeof(*ld));
	for (unsigned i = 0; i < SHMF_SNAP_SECTIONS; i++)
		ld->fd[i] = -1;
	int rc = shmf_name_check(name);
	if (rc < 0)
		return errmsg(err, errlen, rc, "invalid filter name '%s'", name);
	int slot = registry_find(r, name);
	if (slot < 0 && how == REGISTRY_SWAP)
		return errmsg(err, errlen, SHMF_E_NOTFOUND,
			      "filter '%s' not found (swap replaces a live filter; restore creates one)", name);
	snprintf(ld->name, sizeof(ld->name), "%s", name);
	ld->hdr = *h;
	memcpy(ld->sec, sec, h->nsections * sizeof(sec[0]));
	/* The snapshot decides the shape, the window and how it grows (a
	 * plain snapshot swapped into a windowed filter makes it plain). */
	snapshot_spec(h, &ld->spec);
	ld->spec.max_kicks = h->type == SHMF_TYPE_CUCKOO ? h->max_kicks : 0;
	snprintf(ld->spec.name, sizeof(ld->spec.name), "%s", name);
	if (slot >= 0) {
		struct filter_spec cur;
		struct shmf_geometry cg;
		registry_spec_of(r, &r->ctl.slots[slot], &cur, &cg);
		ld->spec.mode = cur.mode;
		ld->spec.lock_timeout_ms = ld->spec.type == SHMF_TYPE_CUCKOO ? cur.lock_timeout_ms : 0;
	}
	/* The stored shape, which the header check held against the sizing:
	 * a filter sized by an older rule keeps its shape. */
	snapshot_geometry(h, &ld->g);
	ld->spec.bucket_size = ld->g.bucket_size;
	struct snap_layout lay;
	if ((rc = snapshot_layout(h, &lay, ld->gs)) < 0)
		return errmsg(err, errlen, rc, "filter '%s': the layers of the snapshot cannot be sized", name);
	uint64_t total = 0;
	for (unsigned i = 0; i < h->nsections; i++)
		total += ld->gs[i].data_bytes;
	if (total > r->max_bytes)
		return errmsg(err, errlen, SHMF_E_TOOBIG,
			      "filter '%s': %u generations of %" PRIu64 " bytes in all are more than this host has",
			      name, h->nsections, total);
	/* Replacing a writer's filter (a swap, a restore or a load over it):
	 * its quotas hold, whoever replaces it. */
	if (slot >= 0 &&
	    (rc = quotas_may_change(r, slot, total, how == REGISTRY_SWAP ? "a swap" : "replacing it", err, errlen)) < 0)
		return rc;

	if ((rc = load_window_check(name, h, sec, err, errlen)) < 0)
		return rc;
	rc = load_files_make(r, ld, name, h, sec, err, errlen);
	if (rc < 0)
		registry_load_abort(r, ld);
	return rc;
}

int registry_load_fill(struct registry_load *ld, unsigned sec, uint64_t off, const void *buf, size_t len, char *err,
		       size_t errlen)
{
	const char *p = buf;
	uint64_t bytes = sec < SHMF_SNAP_SECTIONS ? ld->gs[sec].nblocks * SHMF_BLOCK_BYTES : 0;
	if (sec >= ld->made || off > bytes || len > bytes - off)
		return errmsg(err, errlen, -EINVAL, "filter '%s': bytes %" PRIu64 "+%zu of section %u are out of range",
			      ld->name, off, len, sec);
	off += SHMF_DATA_BLOCKS_OFF;
	while (len > 0) {
		ssize_t k = pwrite(ld->fd[sec], p, len, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return errmsg(err, errlen, k < 0 ? -errno : -EIO,
				      "filter '%s': cannot write the new generation: %s", ld->name,
				      k < 0 ? strerror(errno) : "short write");
		p += k;
		len -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

static void load_close(struct registry_load *ld)
{
	for (unsigned i = 0; i < SHMF_SNAP_SECTIONS; i++) {
		if (ld->fd[i] >= 0)
			close(ld->fd[i]);
		ld->fd[i] = -1;
	}
}

void registry_load_abort(struct registry *r, struct registry_load *ld)
{
	load_close(ld);
	struct live_ring made = { .n = ld->made };
	memcpy(made.gen, ld->ring.gen, sizeof(made.gen));
	registry_unlink_ring(r, ld->name, &made);
	ld->made = 0;
}

/* The item counters of section @p i, and a cuckoo table's relocation
 * state cleared, in the new generation's mapping. */
static int load_finish_section(struct registry *r, struct registry_load *ld, unsigned i, char *err, size_t errlen)
{
	struct shmf_slot copy = { .type = ld->hdr.type,
				  .k = ld->gs[i].k,
				  .capacity = ld->hdr.capacity,
				  .fpr_bits = ld->hdr.fpr_bits,
				  .nblocks = ld->gs[i].nblocks,
				  .nbuckets = ld->gs[i].nbuckets,
				  .data_bytes = ld->gs[i].data_bytes,
				  .bucket_size = ld->gs[i].bucket_size,
				  .scheme = ld->gs[i].scheme };
	atomic_store_explicit(&copy.generation, ld->ring.gen[i], memory_order_relaxed);
	snprintf(copy.name, sizeof(copy.name), "%s", ld->name);
	struct shmf_data_map dm = { .fd = -1 };
	int rc = shmf_data_map_open(&r->dir, &copy, 1, &dm);
	if (rc < 0)
		return errmsg(err, errlen, rc, "filter '%s': cannot map the new generation: %s", ld->name,
			      shmf_strerror(rc));
	atomic_store_explicit(&dm.counters[0].items, ld->sec[i].items, memory_order_relaxed);
	atomic_store_explicit(&dm.counters[0].deletes, ld->sec[i].deletes, memory_order_relaxed);
	if (dm.hdr.scheme != SHMF_SCHEME_NATIVE) {
		/* An import's table, as every client will check it: refused here,
		 * before anything is published, rather than by each client. */
		rc = shmf_rb_open(dm.hdr.scheme, dm.blocks, dm.hdr.nblocks * SHMF_BLOCK_BYTES, NULL);
		shmf_data_map_close(&dm);
		return rc < 0 ? errmsg(err, errlen, SHMF_E_FORMAT,
				       "filter '%s': the table of the RedisBloom filter it holds does not hold "
				       "together (a damaged or forged copy); nothing published",
				       ld->name)
			      : 0;
	}
	if (dm.hdr.type == SHMF_TYPE_STATIC) {
		/* A static filter's table, as every client will check it. */
		struct shmf_fuse_geom fg;
		rc = shmf_fuse_open(dm.blocks, dm.hdr.nblocks * SHMF_BLOCK_BYTES, dm.hdr.k, dm.hdr.bucket_size,
				    dm.hdr.nbuckets, dm.hdr.capacity, dm.hdr.seed, &fg);
		shmf_data_map_close(&dm);
		return rc < 0 ? errmsg(err, errlen, SHMF_E_FORMAT,
				       "filter '%s': the static filter's table (payload bytes 0-63 of section %u) "
				       "does not match its header (a damaged or forged copy); nothing published",
				       ld->name, i)
			      : 0;
	}
	if (dm.hdr.type == SHMF_TYPE_CUCKOO) {
		/* A copy has no move open and its lock free; make sure of it
		 * rather than trust the file (an odd version would send readers
		 * to their slow read, a held lock word every writer to its
		 * timeout). */
		struct shmf_cuckoo_meta *m = (struct shmf_cuckoo_meta *)dm.blocks;
		memset(&m->lock, 0, sizeof(m->lock));
		atomic_store_explicit(&m->moving, 0, memory_order_relaxed);
		for (unsigned j = 0; j < SHMF_CUCKOO_STRIPES; j++)
			atomic_store_explicit(&m->version[j], 0, memory_order_relaxed);
	}
	shmf_data_map_close(&dm);
	return 0;
}

/* A snapshot of a replicated filter whose seed is this fleet's for the
 * name it is loaded under (a pull or restore from another node of the
 * fleet) makes the filter replicate here, and follow the stream from the
 * snapshot's cursor. Otherwise it stays as it was: a seed of another
 * secret or name would be a foreign shape to every other node. */
static void load_replicate(struct registry *r, int slot, const struct registry_load *ld)
{
	char err[REGISTRY_ERR_MAX];
	if (!(ld->hdr.flags & SHMF_SNAP_F_REPLICATED) || (r->ctl.slots[slot].flags & SHMF_SLOT_REPLICATED))
		return;
	if (!r->fleet.enabled || ld->hdr.seed != fleet_seed(r->fleet.secret, ld->name)) {
		log_msg(LOG_INFO, "filter '%s': its snapshot comes from a replicated filter, but %s; it stays local",
			ld->name,
			r->fleet.enabled ? "its hash seed is not this fleet's for that name (another secret or name)"
					 : "this shmd has no [replication] section");
		return;
	}
	if (registry_replicate(r, slot, err, sizeof(err)) < 0)
		log_msg(LOG_ERR, "%s", err);
}

/* The senders' sequences of the copy @p ld loads into @p slot: its fleet
 * block's, so that a replay of an entry older than the copy stays refused;
 * none for a file without one (older, or not replicated): the entries
 * after its cursor are applied again. The sequence this node sends never
 * goes back (the peers would refuse what it sends next as replays). */
static void load_fleet(struct registry *r, int slot, const struct registry_load *ld)
{
	if (!(ld->hdr.flags & SHMF_SNAP_F_FLEET)) {
		registry_fleet_peers_reset(r, slot);
		return;
	}
	struct shmf_fleet_peer peers[SHMF_FLEET_PEERS];
	for (unsigned i = 0; i < SHMF_FLEET_PEERS; i++)
		peers[i] = (struct shmf_fleet_peer){ .node = ld->fleet.peers[i].node, .seq = ld->fleet.peers[i].seq };
	registry_fleet_peers_set(r, slot, peers, ld->fleet.floor);
	if (ld->fleet.sent_seq > registry_fleet_sent_get(r, slot))
		registry_fleet_sent_set(r, slot, ld->fleet.sent_seq);
}

int registry_load_commit(struct registry *r, struct registry_load *ld, int how, char *err, size_t errlen)
{
	const char *name = ld->name;
	int rc = 0;
	load_close(ld);
	for (unsigned i = 0; i < ld->ring.n && rc == 0; i++)
		rc = load_finish_section(r, ld, i, err, errlen);
	/* The filter may have come or gone since begin (a load by chunks
	 * spans requests): look again. */
	int slot = rc < 0 ? rc : registry_find(r, name);
	if (rc == 0 && slot < 0 && how == REGISTRY_SWAP)
		rc = errmsg(err, errlen, SHMF_E_NOTFOUND, "filter '%s' was dropped meanwhile; nothing swapped in",
			    name);
	if (rc == 0 && slot < 0 && (slot = free_slot(r)) < 0)
		rc = errmsg(err, errlen, slot, "filter '%s': all %u filter slots are in use", name, SHMF_SLOTS);
	if (rc < 0) {
		registry_load_abort(r, ld);
		return rc;
	}
	struct live_ring old = { 0 };
	struct shmf_slot *s = &r->ctl.slots[slot];
	if (atomic_load_explicit(&s->generation, memory_order_relaxed) != 0) {
		old.n = s->nlive;
		memcpy(old.gen, s->live, sizeof(old.gen));
	} else {
		/* A free slot (generation 0: no client reads the rest of it)
		 * starts plain; whether it replicates is decided below. */
		shmf_slot_write_begin(s);
		s->flags = 0;
		shmf_slot_write_end(s);
	}
	/* The stream position the copy was taken at (0-0 when the snapshot
	 * carries none), stored before the publication, as registry_create()
	 * does: the replication engine, told of it by the publication, reads
	 * it from there, and never stores over a cursor it did not read. The
	 * senders' sequences with it (load_fleet()). */
	registry_cursor_set(r, slot, ld->hdr.cursor_ms, ld->hdr.cursor_seq);
	load_fleet(r, slot, ld);
	registry_publish(r, slot, &ld->spec, &ld->g, &ld->ring);
	registry_unlink_ring(r, name, &old);
	ld->made = 0;
	load_replicate(r, slot, ld);
	return slot;
}

int registry_replace_begin(struct registry *r, const char *name, const struct snap_file *sf, int how,
			   struct registry_load *ld, char *err, size_t errlen)
{
	int rc = registry_load_begin(r, name, &sf->hdr, sf->sec, how, ld, err, errlen);
	if (rc == 0)
		ld->fleet = sf->fleet;
	return rc;
}

int registry_replace_fill(struct snap_file *sf, struct registry_load *ld, char *err, size_t errlen)
{
	/* Each payload checked chunk by chunk on its way in, through the
	 * descriptor: a kernel copy, no page fault per page of the new
	 * mapping. */
	int rc = 0;
	for (unsigned i = 0; i < sf->hdr.nsections && rc == 0; i++)
		rc = snapshot_copy_section(sf, i, ld->fd[i], SHMF_DATA_BLOCKS_OFF, err, errlen);
	return rc;
}

int registry_replace_end(struct registry *r, const struct snap_file *sf, struct registry_load *ld, int how, int rc,
			 char *err, size_t errlen)
{
	const struct shmf_snap_header *h = &sf->hdr;
	char name[SHMF_NAME_MAX + 1];
	snprintf(name, sizeof(name), "%s", ld->name);
	if (rc < 0) {
		registry_load_abort(r, ld);
		return rc;
	}
	int existed = registry_find(r, name) >= 0;
	uint64_t gen = ld->ring.gen[0];
	int slot = registry_load_commit(r, ld, how, err, errlen);
	if (slot < 0)
		return slot;
	if (how == REGISTRY_SWAP)
		r->counts[slot].swaps++;
	log_msg(LOG_INFO, "filter '%s': %s from %s as generation %" PRIu64 "%s (%" PRIu64 " items)%s%s", name,
		how == REGISTRY_SWAP ? "swapped in" : "restored", sf->path, gen,
		h->nsections > 1 ? " and older live ones" : "", sf->sec[0].items,
		existed ? "; the previous generations are unlinked" : "",
		h->flags & SHMF_SNAP_F_REPLICATED ? "; stream cursor set from the snapshot" : "");
	return slot;
}

int registry_replace(struct registry *r, const char *name, struct snap_file *sf, int how, char *err, size_t errlen)
{
	struct registry_load ld;
	int rc = registry_replace_begin(r, name, sf, how, &ld, err, errlen);
	if (rc < 0)
		return rc;
	rc = registry_replace_fill(sf, &ld, err, errlen);
	return registry_replace_end(r, sf, &ld, how, rc, err, errlen);
}
