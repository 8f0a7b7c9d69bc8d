/*
 * registry.c - the daemon's filters and the segments that hold them.
 *
 * Publication order (what lets clients trust a slot): the data segment is
 * created with O_EXCL, sized, filled with its header and fsynced-in-memory
 * before the slot names it; the slot is rewritten inside the seqlock and
 * its generation stored last. Dropping unpublishes first and unlinks after.
 */
#include <bsd/stdlib.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "libclient/bloom.h"
#include "libclient/cuckoo.h"
#include "common/errmsg.h"
#include "common/fleet.h"
#include "libclient/geometry.h"
#include "shmd/base/hugepages.h"
#include "libclient/journal.h"
#include "shmd/base/log.h"
#include "shmd/base/mkdirs.h"
#include "shmd/store/hints.h"
#include "shmd/store/generations.h"
#include "shmd/store/registry.h"
#include "libclient/rundir.h"
#include "common/spec.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

static uint64_t host_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	if (pages <= 0 || psize <= 0)
		return SHMF_DATA_MAX_BYTES;
	return (uint64_t)pages * (uint64_t)psize;
}

static void ctl_init_header(struct shmf_ctl_header *h)
{
	h->magic = SHMF_CTL_MAGIC;
	h->version = SHMF_FORMAT_VERSION;
	h->header_size = sizeof(*h);
	h->layout = shmf_layout_fingerprint();
	h->nslots = SHMF_SLOTS;
	h->slot_size = sizeof(struct shmf_slot);
	h->slots_offset = sizeof(*h);
}

static int ctl_create(struct registry *r, mode_t mode, char *err, size_t errlen)
{
	struct shmf_ctl_header h = { 0 };
	int fd = openat(r->dir.fd, SHMF_CTL_FILE, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return errmsg(err, errlen, -errno, "%s/%s: cannot create: %s", r->dir_path, SHMF_CTL_FILE,
			      strerror(errno));
	int rc = 0;
	if (fchmod(fd, mode) < 0 || (r->gid != (gid_t)-1 && fchown(fd, (uid_t)-1, r->gid) < 0))
		rc = -errno;
	if (rc == 0 && ftruncate(fd, (off_t)SHMF_CTL_BYTES) < 0)
		rc = -errno;
	ctl_init_header(&h);
	if (rc == 0 && pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		rc = -EIO;
	close(fd);
	if (rc < 0) {
		unlinkat(r->dir.fd, SHMF_CTL_FILE, 0);
		return errmsg(err, errlen, rc, "%s/%s: cannot initialise: %s", r->dir_path, SHMF_CTL_FILE,
			      strerror(-rc));
	}
	return 0;
}

/* Is fname a data file that a live slot names, or one that a slot refused
 * at this start named (@p refused[i]: the generation slot i had, 0 if none;
 * NULL: no slot refused)? Those are left for an operator. */
static int data_file_live(struct registry *r, const char *fname, const uint64_t *refused)
{
	char want[128], name[SHMF_NAME_MAX + 1];
	for (unsigned i = 0; i < SHMF_SLOTS; i++) {
		struct shmf_slot *s = &r->ctl.slots[i];
		uint64_t gen = atomic_load_explicit(&s->generation, memory_order_relaxed);
		if (gen == 0 && refused != NULL)
			gen = refused[i];
		if (gen == 0)
			continue;
		/* A refused slot's fields are not trusted: a terminated copy of its name. */
		memcpy(name, s->name, SHMF_NAME_MAX);
		name[SHMF_NAME_MAX] = '\0';
		for (unsigned j = 0; j < s->nlive && j < SHMF_RING_MAX; j++) {
			/* The newest by the generation word, or by live[0] (a
			 * growing filter's word is one past it once its standby
			 * is current). */
			uint64_t g = j == 0 ? gen : s->live[j];
			if (shmf_data_filename(name, g, want, sizeof(want)) == 0 && strcmp(want, fname) == 0)
				return 1;
			if (j == 0 && shmf_data_filename(name, s->live[0], want, sizeof(want)) == 0 &&
			    strcmp(want, fname) == 0)
				return 1;
		}
	}
	return 0;
}

/* Is fname the journal of a live replicated filter? */
static int journal_live(struct registry *r, const char *fname)
{
	char want[SHMF_NAME_MAX + sizeof(SHMF_JOURNAL_SUFFIX)];
	for (unsigned i = 0; i < SHMF_SLOTS; i++) {
		const struct shmf_slot *s = &r->ctl.slots[i];
		if (atomic_load_explicit(&s->generation, memory_order_relaxed) == 0 ||
		    !(s->flags & SHMF_SLOT_REPLICATED))
			continue;
		if (shmf_journal_filename(s->name, want, sizeof(want)) == 0 && strcmp(want, fname) == 0)
			return 1;
	}
	return 0;
}

/* Remove journals no live replicated filter names: left by a crash
 * between creating one and publishing its filter, or between dropping a
 * filter and unlinking its journal. A live filter's journal stays, with
 * the entries its adders wrote while no daemon ran. */
static void remove_stray_journals(struct registry *r)
{
	int fd = dup(r->dir.fd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	/* The dup shares its offset with the data-file sweep's, at the end. */
	rewinddir(d);
	struct dirent *e;
	size_t sl = strlen(SHMF_JOURNAL_SUFFIX);
	while ((e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		if (n <= sl || strcmp(e->d_name + n - sl, SHMF_JOURNAL_SUFFIX) != 0 || journal_live(r, e->d_name))
			continue;
		log_msg(LOG_WARNING, "%s/%s: no replicated filter names this journal; removing it", r->dir_path,
			e->d_name);
		unlinkat(r->dir.fd, e->d_name, 0);
	}
	closedir(d);
}

/* Re-attach after a restart: repair and validate every live slot. */
static void ctl_recover(struct registry *r)
{
	uint64_t refused[SHMF_SLOTS] = { 0 };
	for (unsigned i = 0; i < SHMF_SLOTS; i++) {
		struct shmf_slot *s = &r->ctl.slots[i];
		uint64_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
		if (seq & 1) {
			log_msg(LOG_WARNING, "slot %u: left mid-write by a previous daemon; repairing", i);
			shmf_slot_write_end(s);
		}
		uint64_t gen = atomic_load_explicit(&s->generation, memory_order_relaxed);
		if (gen == 0)
			continue;
		if (gen > r->ctl.hdr->last_generation)
			r->ctl.hdr->last_generation = gen;
		struct shmf_slot copy;
		struct shmf_data_map dm = { .fd = -1 };
		int rc = shmf_slot_read(s, &copy);
		if (rc == 0)
			rc = shmf_slot_check(&copy);
		for (unsigned j = 1; rc == 0 && j < copy.nlive; j++) {
			rc = shmf_data_map_open_gen(&r->dir, &copy, copy.live[j], 0, &dm);
			shmf_data_map_close(&dm);
		}
		if (rc == 0)
			rc = shmf_data_map_open(&r->dir, &copy, 0, &dm);
		if (rc < 0) {
			/* Unpublish, but leave any file in place for an operator. */
			log_msg(LOG_ERR,
				"slot %u (filter '%.*s', generation %" PRIu64 "): %s; slot cleared, files left in %s",
				i, SHMF_NAME_MAX, s->name, gen, shmf_strerror(rc), r->dir_path);
			shmf_slot_write_begin(s);
			atomic_store_explicit(&s->generation, 0, memory_order_release);
			shmf_slot_write_end(s);
			refused[i] = gen;
			continue;
		}
		log_msg(LOG_INFO, "filter '%s': attached generation %" PRIu64 " (%" PRIu64 " items)", copy.name, gen,
			shmf_data_items(&dm));
		shmf_data_map_close(&dm);
	}
	/* Remove data files no slot names: a crash between creating a
	 * generation and publishing it, or between unpublishing and unlinking. */
	int fd = dup(r->dir.fd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *e;
	size_t sl = strlen(SHMF_DATA_SUFFIX);
	while ((e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		if (n <= sl || strcmp(e->d_name + n - sl, SHMF_DATA_SUFFIX) != 0 ||
		    data_file_live(r, e->d_name, refused))
			continue;
		log_msg(LOG_WARNING, "%s/%s: no filter names this data file; removing it", r->dir_path, e->d_name);
		unlinkat(r->dir.fd, e->d_name, 0);
	}
	closedir(d);
	remove_stray_journals(r);
}

void registry_record_start(struct registry *r, const char *command)
{
	char *at = (char *)r->ctl.hdr + SHMF_CTL_STARTED_OFF;
	memset(at, 0, SHMF_CTL_STARTED_BYTES);
	snprintf(at, SHMF_CTL_STARTED_BYTES, "%s", command);
}

int registry_open(struct registry *r, const char *instance, mode_t dir_mode, mode_t ctl_mode, gid_t gid, char *err,
		  size_t errlen)
{
	char root[4096], hint[320];
	int rc;

	memset(r, 0, sizeof(*r));
	r->dir.fd = -1;
	r->ctl.fd = -1;
	r->gid = gid;
	r->max_bytes = host_memory();
	if (instance == NULL)
		instance = SHMF_DEFAULT_INSTANCE;
	if ((rc = shmf_name_check(instance)) < 0)
		return errmsg(err, errlen, rc, "instance '%s': %s", instance, shmf_strerror(rc));
	snprintf(r->instance, sizeof(r->instance), "%s", instance);
	if ((rc = shmf_runtime_dir(root, sizeof(root))) < 0)
		return errmsg(err, errlen, rc, "%s", shmf_strerror(rc));
	if ((rc = shmf_instance_path(instance, "", r->dir_path, sizeof(r->dir_path))) < 0)
		return errmsg(err, errlen, rc, "instance '%s': %s", instance, shmf_strerror(rc));
	if ((rc = mkdirs(root, 0755)) < 0)
		return errmsg(err, errlen, rc, "runtime directory %s: cannot create: %s%s", root, strerror(-rc),
			      hint_perms(rc, HINT_DIR, hint, sizeof(hint)));

	int created = 0;
	if (mkdir(r->dir_path, dir_mode) == 0)
		created = 1;
	else if ((rc = -errno) != -EEXIST)
		return errmsg(err, errlen, rc, "%s: cannot create: %s%s", r->dir_path, strerror(-rc),
			      hint_perms(rc, HINT_DIR, hint, sizeof(hint)));
	int fd = open(r->dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		rc = -errno;
		return errmsg(err, errlen, rc, "%s: cannot open: %s%s", r->dir_path, strerror(-rc),
			      hint_perms(rc, HINT_DIR, hint, sizeof(hint)));
	}
	if (created && (fchmod(fd, dir_mode) < 0 || (gid != (gid_t)-1 && fchown(fd, (uid_t)-1, gid) < 0))) {
		rc = -errno;
		close(fd);
		return errmsg(err, errlen, rc, "%s: cannot set mode or group: %s%s", r->dir_path, strerror(-rc),
			      hint_perms(rc, HINT_GROUP, hint, sizeof(hint)));
	}
	if ((rc = shmf_dir_check(fd, &r->dir)) < 0) {
		close(fd);
		return errmsg(err, errlen, rc,
			      "%s: %s (must be owned by us or root and not writable by group or others)", r->dir_path,
			      shmf_strerror(rc));
	}
	if (r->dir.owner != geteuid()) {
		shmf_dir_close(&r->dir);
		return errmsg(err, errlen, SHMF_E_OWNER, "%s: owned by uid %u, not by this daemon's uid %u",
			      r->dir_path, (unsigned)r->dir.owner, (unsigned)geteuid());
	}
	struct statfs sfs;
	if (fstatfs(r->dir.fd, &sfs) == 0 && (unsigned long)sfs.f_type != TMPFS_MAGIC)
		log_msg(LOG_WARNING, "%s is not on tmpfs: segments are backed by a disk file system", r->dir_path);

	rc = shmf_ctl_map_open(&r->dir, 1, &r->ctl);
	if (rc == SHMF_E_NOTFOUND) {
		if ((rc = ctl_create(r, ctl_mode, err, errlen)) < 0)
			goto out;
		rc = shmf_ctl_map_open(&r->dir, 1, &r->ctl);
	} else if (rc == 0) {
		ctl_recover(r);
	}
	if (rc < 0) {
		errmsg(err, errlen, rc, "%s/%s: %s (move it away to start afresh)", r->dir_path, SHMF_CTL_FILE,
		       shmf_strerror(rc));
		goto out;
	}
	r->ctl.hdr->daemon_pid = (uint64_t)getpid();
	r->ctl.hdr->start_epoch = (uint64_t)time(NULL);
	return 0;
out:
	shmf_ctl_map_close(&r->ctl);
	shmf_dir_close(&r->dir);
	return rc;
}

int registry_find(struct registry *r, const char *name)
{
	for (unsigned i = 0; i < SHMF_SLOTS; i++) {
		struct shmf_slot *s = &r->ctl.slots[i];
		if (atomic_load_explicit(&s->generation, memory_order_relaxed) != 0 &&
		    strncmp(s->name, name, sizeof(s->name)) == 0)
			return (int)i;
	}
	return SHMF_E_NOTFOUND;
}

/* Create and fill the data segment of one generation. */
int registry_data_create(struct registry *r, const struct filter_spec *spec, const struct shmf_geometry *p,
			 uint64_t gen, uint64_t seed, int fill_later, char *err, size_t errlen)
{
	char fname[128];
	struct shmf_data_header h = { 0 };
	int rc = shmf_data_filename(spec->name, gen, fname, sizeof(fname));
	if (rc < 0)
		return errmsg(err, errlen, rc, "filter '%s': data file name too long", spec->name);
	int fd = openat(r->dir.fd, fname, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, spec->mode);
	if (fd < 0)
		return errmsg(err, errlen, -errno, "%s/%s: cannot create: %s", r->dir_path, fname, strerror(errno));
	if (fchmod(fd, spec->mode) < 0 || (r->gid != (gid_t)-1 && fchown(fd, (uid_t)-1, r->gid) < 0)) {
		char hint[320];
		int e = -errno;
		rc = errmsg(err, errlen, e, "%s/%s: cannot set mode or group: %s%s", r->dir_path, fname, strerror(-e),
			    hint_perms(e, HINT_GROUP, hint, sizeof(hint)));
		goto bad;
	}
	/* Allocate every page now: a full tmpfs is an error here, not a
	 * SIGBUS in a worker later. A restore writes every payload byte
	 * itself (and allocates the pages as it goes), so it allocates only
	 * the header and counter pages here: one pass over the memory, not two. */
	off_t alloc = fill_later ? (off_t)SHMF_DATA_BLOCKS_OFF : (off_t)p->data_bytes;
	rc = ftruncate(fd, (off_t)p->data_bytes) < 0 ? errno : posix_fallocate(fd, 0, alloc);
	if (rc != 0) {
		rc = errmsg(err, errlen, -rc, "filter '%s': cannot allocate %" PRIu64 " bytes in %s: %s", spec->name,
			    p->data_bytes, r->dir_path, strerror(rc));
		goto bad;
	}
	h.magic = SHMF_DATA_MAGIC;
	h.version = SHMF_FORMAT_VERSION;
	h.header_size = sizeof(h);
	h.layout = shmf_layout_fingerprint();
	h.type = (uint32_t)spec->type;
	h.k = p->k;
	h.nblocks = p->nblocks;
	h.nbuckets = p->nbuckets;
	h.max_kicks = p->max_kicks;
	h.bucket_size = p->bucket_size;
	h.scheme = p->scheme;
	h.seed = seed;
	h.generation = gen;
	h.capacity = spec->capacity;
	memcpy(&h.fpr_bits, &spec->fpr, sizeof(double));
	h.blocks_offset = SHMF_DATA_BLOCKS_OFF;
	h.counters_offset = SHMF_DATA_COUNTERS_OFF;
	snprintf(h.name, sizeof(h.name), "%s", spec->name);
	if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		rc = errmsg(err, errlen, -EIO, "%s/%s: cannot write header", r->dir_path, fname);
		goto bad;
	}
	close(fd);
	return 0;
bad:
	close(fd);
	unlinkat(r->dir.fd, fname, 0);
	return rc;
}

/* Point @p slot at generation @p gen (its data file complete) of a filter
 * shaped @p p: the one store that makes a new filter, a swap or a restore
 * visible to every client at once. */
void registry_publish(struct registry *r, int slot, const struct filter_spec *spec, const struct shmf_geometry *p,
		      const struct live_ring *ring)
{
	struct shmf_slot *s = &r->ctl.slots[slot];
	/* A growing filter whose standby became current publishes the same
	 * ring under the next number, reserved when the standby was made:
	 * handles see a new word and map the layers in their new order. */
	uint64_t gen = ring->gen[0] + (ring->promoted ? 1 : 0);
	shmf_slot_write_begin(s);
	s->type = (uint32_t)spec->type;
	s->k = p->k;
	s->capacity = spec->capacity;
	memcpy(&s->fpr_bits, &spec->fpr, sizeof(double));
	s->nblocks = p->nblocks;
	s->nbuckets = p->nbuckets;
	s->bucket_size = p->bucket_size;
	s->lock_timeout_ms = spec->type == SHMF_TYPE_CUCKOO ? spec->lock_timeout_ms : 0;
	s->scheme = p->scheme;
	s->data_bytes = p->data_bytes;
	s->created_epoch = ring->created[ring->n - 1];
	memset(s->name, 0, sizeof(s->name));
	snprintf(s->name, sizeof(s->name), "%s", spec->name);
	s->window_secs = spec->window_secs;
	s->window_gens = spec->window_gens;
	s->nlive = ring->n;
	memset(s->live, 0, sizeof(s->live));
	memset(s->live_created, 0, sizeof(s->live_created));
	memcpy(s->live, ring->gen, ring->n * sizeof(s->live[0]));
	memcpy(s->live_created, ring->created, ring->n * sizeof(s->live_created[0]));
	/* How it grows (the replication flag is not publication's to change). */
	s->expansion = spec->expansion;
	s->flags = (s->flags & SHMF_SLOT_REPLICATED) | (spec->expansion ? SHMF_SLOT_LAYERED : 0) |
		   (spec->nonscaling ? SHMF_SLOT_NONSCALING : 0) | (ring->standby ? SHMF_SLOT_STANDBY : 0);
	/* release: the data segment and the fields above are complete before
	 * a client can see the generation (pairs with the acquire in enter()). */
	atomic_store_explicit(&s->generation, gen, memory_order_release);
	shmf_slot_write_end(s);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	r->last_publish_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (r->hooks.published != NULL)
		r->hooks.published(r->hooks.arg, r, slot);
}

/* May a filter replicate here? 0, or SHMF_E_INVAL with the reason. */
static int fleet_ready(struct registry *r, const char *name, char *err, size_t errlen)
{
	if (!r->fleet.enabled)
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "filter '%s': cannot replicate: shmd's configuration has no [replication] section", name);
	if (r->fleet.secret == NULL || r->fleet.secret[0] == '\0')
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "filter '%s': cannot replicate: [replication] has no secret (every node must share one)",
			      name);
	return 0;
}

/* Create the journal of filter @p name (@p mode: the filter's), replacing
 * a stale one: no live filter names it, or this would not be called. */
static int journal_make(struct registry *r, const char *name, mode_t mode, char *err, size_t errlen)
{
	int rc = shmf_journal_create(r->dir.fd, name, mode, r->gid, r->fleet.journal_rings, r->fleet.journal_entries);
	if (rc == SHMF_E_EXISTS) {
		char fname[SHMF_NAME_MAX + sizeof(SHMF_JOURNAL_SUFFIX)];
		shmf_journal_filename(name, fname, sizeof(fname));
		log_msg(LOG_WARNING, "%s/%s: a stale journal; replacing it", r->dir_path, fname);
		unlinkat(r->dir.fd, fname, 0);
		rc = shmf_journal_create(r->dir.fd, name, mode, r->gid, r->fleet.journal_rings,
					 r->fleet.journal_entries);
	}
	if (rc < 0)
		return errmsg(err, errlen, rc,
			      "filter '%s': cannot create its journal in %s (%u rings of %u entries): %s", name,
			      r->dir_path, r->fleet.journal_rings, r->fleet.journal_entries, shmf_strerror(rc));
	return 0;
}

static void journal_unlink(struct registry *r, const char *name)
{
	char fname[SHMF_NAME_MAX + sizeof(SHMF_JOURNAL_SUFFIX)];
	if (shmf_journal_filename(name, fname, sizeof(fname)) == 0 && unlinkat(r->dir.fd, fname, 0) < 0 &&
	    errno != ENOENT)
		log_msg(LOG_WARNING, "%s/%s: cannot unlink: %s", r->dir_path, fname, strerror(errno));
}

/* Is @p spec one a filter may be created with? 0, or an error with err set. */
static int spec_check(const struct filter_spec *spec, char *err, size_t errlen)
{
	int rc;
	if ((rc = shmf_name_check(spec->name)) < 0)
		return errmsg(err, errlen, rc, "invalid filter name '%s': %s", spec->name, shmf_strerror(rc));
	if (spec->type != SHMF_TYPE_BLOOM && spec->type != SHMF_TYPE_CUCKOO)
		return errmsg(err, errlen, SHMF_E_TYPE, "filter '%s': unknown type %d", spec->name, spec->type);
	if (spec->capacity == 0)
		return errmsg(err, errlen, SHMF_E_INVAL, "filter '%s': capacity must be a positive integer",
			      spec->name);
	if (!(spec->fpr > 0.0 && spec->fpr < 1.0))
		return errmsg(err, errlen, SHMF_E_INVAL, "filter '%s': error rate %g is not in (0, 1)", spec->name,
			      spec->fpr);
	if (spec->mode & ~(mode_t)0777 || spec->mode & S_IWOTH)
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "filter '%s': mode %04o is not allowed (no other-write, permission bits only)",
			      spec->name, (unsigned)spec->mode);
	if (spec->max_kicks != 0 && spec->type != SHMF_TYPE_CUCKOO)
		return errmsg(err, errlen, SHMF_E_INVAL, "filter '%s': max kicks applies to cuckoo filters only",
			      spec->name);
	if (spec->lock_timeout_ms != 0 && spec->type != SHMF_TYPE_CUCKOO)
		return errmsg(err, errlen, SHMF_E_INVAL, "filter '%s': lock timeout applies to cuckoo filters only",
			      spec->name);
	if (spec->lock_timeout_ms > SHMF_CUCKOO_LOCK_TIMEOUT_MAX)
		return errmsg(err, errlen, SHMF_E_INVAL, "filter '%s': lock timeout %u ms is above the limit of %u",
			      spec->name, spec->lock_timeout_ms, SHMF_CUCKOO_LOCK_TIMEOUT_MAX);
	if (spec->window_secs > SHMF_WINDOW_SECS_MAX)
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "filter '%s': a window of %" PRIu64 " s is longer than the longest, %" PRIu64
			      " s (ten years: window numbers are 32 bits)",
			      spec->name, spec->window_secs, SHMF_WINDOW_SECS_MAX);
	if ((spec->window_secs == 0) != (spec->window_gens == 0) || spec->window_gens > SHMF_WINDOW_MAX)
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "filter '%s': a time window needs a length and 1 to %u generations (got %" PRIu64
			      " s, %u)",
			      spec->name, SHMF_WINDOW_MAX, spec->window_secs, spec->window_gens);
	if (spec->max_kicks > SHMF_CUCKOO_KICKS_LIMIT)
		return errmsg(err, errlen, SHMF_E_INVAL, "filter '%s': max kicks %u is above the limit of %u",
			      spec->name, spec->max_kicks, SHMF_CUCKOO_KICKS_LIMIT);
	/* A Bloom filter's bucket size is its lines a key, which only a
	 * file's shape gives (a snapshot, a swap): users cannot ask for one. */
	if (spec->type == SHMF_TYPE_BLOOM && spec->bucket_size > SHMF_BLOOM_LINES_MAX)
		return errmsg(err, errlen, SHMF_E_INVAL, "filter '%s': %u lines a key: a Bloom filter has 1 to %u",
			      spec->name, spec->bucket_size, SHMF_BLOOM_LINES_MAX);
	if (spec->bucket_size != 0 && spec->type == SHMF_TYPE_CUCKOO && !shmf_cuckoo_layout_ok(spec->bucket_size, 8))
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "filter '%s': bucket size %u is not supported: " SPEC_BUCKET_SIZES, spec->name,
			      spec->bucket_size);
	if (spec->expansion > SHMF_EXPANSION_MAX)
		return errmsg(err, errlen, SHMF_E_INVAL, "filter '%s': expansion %u is above the limit of %u",
			      spec->name, spec->expansion, SHMF_EXPANSION_MAX);
	if (spec->expansion != 0 && spec->window_secs != 0)
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "filter '%s': a windowed filter does not grow (its generations rotate): no expansion "
			      "with a window",
			      spec->name);
	if (spec->nonscaling && (spec->type != SHMF_TYPE_BLOOM || spec->expansion != 0 || spec->window_secs != 0))
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "filter '%s': NONSCALING is for a Bloom filter without expansion or window", spec->name);
	return 0;
}

/* The shape @p spec sizes to, if this host can hold it. */
static int spec_size(const struct registry *r, const struct filter_spec *spec, struct shmf_geometry *p, char *err,
		     size_t errlen)
{
	/* A growing filter's first layer; a fixed filter's one shape. */
	struct shmf_layer l;
	int rc = shmf_geometry_layer(spec->type, spec->capacity, spec->fpr, spec->max_kicks, spec->bucket_size,
				     spec->expansion, 0, &l);
	if (rc == 0)
		*p = l.g;
	if (rc == SHMF_E_TOOBIG || (rc == 0 && p->data_bytes > r->max_bytes))
		return errmsg(err, errlen, SHMF_E_TOOBIG,
			      "filter '%s': capacity %" PRIu64
			      " at error rate %g needs more memory than this host has (%" PRIu64 " MiB)",
			      spec->name, spec->capacity, spec->fpr, r->max_bytes >> 20);
	if (rc < 0 && spec->type == SHMF_TYPE_CUCKOO) {
		char why[320];
		spec_bucket_fpr_why(spec->capacity, spec->bucket_size ? spec->bucket_size : SHMF_CUCKOO_SLOTS_DEFAULT,
				    spec->fpr, why, sizeof(why));
		return errmsg(err, errlen, rc, "filter '%s': %s", spec->name, why);
	}
	if (rc < 0)
		return errmsg(err, errlen, rc, "filter '%s': error rate %g cannot be reached by a blocked Bloom filter",
			      spec->name, spec->fpr);
	return 0;
}

/* A slot no filter uses, or SHMF_E_FULL with err set. */
static int empty_slot(const struct registry *r, const char *name, char *err, size_t errlen)
{
	for (unsigned i = 0; i < SHMF_SLOTS; i++)
		if (atomic_load_explicit(&r->ctl.slots[i].generation, memory_order_relaxed) == 0)
			return (int)i;
	return errmsg(err, errlen, SHMF_E_FULL, "filter '%s': all %u filter slots are in use", name, SHMF_SLOTS);
}

/* The first generation's data file (and, for a replicated filter, its
 * journal). *created gets when the generation begins: now, or for a
 * replicated window the wall-clock boundary, as on every other node. */
static int first_generation(struct registry *r, const struct filter_spec *spec, const struct shmf_geometry *p,
			    uint64_t gen, uint64_t *created, char *err, size_t errlen)
{
	uint64_t seed, now = (uint64_t)time(NULL);
	if (spec->replicate)
		seed = fleet_seed(r->fleet.secret, spec->name);
	else
		arc4random_buf(&seed, sizeof(seed));
	/* A growing filter's first layer carries its own capacity and rate. */
	struct filter_spec first = *spec;
	struct shmf_geometry g;
	int rc = registry_layer_spec(spec, 0, &first, &g);
	if (rc == 0)
		rc = registry_data_create(r, &first, p, gen, seed, 0, err, errlen);
	if (rc < 0)
		return rc;
	r->ctl.hdr->last_generation = gen;
	if (spec->replicate) {
		if ((rc = journal_make(r, spec->name, spec->mode, err, errlen)) < 0) {
			struct live_ring made = { .n = 1, .gen = { gen } };
			registry_unlink_ring(r, spec->name, &made);
			return rc;
		}
		if (spec->window_secs != 0)
			now = fleet_window(now, spec->window_secs) * spec->window_secs;
	}
	*created = now;
	return 0;
}

int registry_create(struct registry *r, const struct filter_spec *spec, char *err, size_t errlen)
{
	struct shmf_geometry p;
	int rc, slot;

	if ((rc = spec_check(spec, err, errlen)) < 0 || (rc = spec_size(r, spec, &p, err, errlen)) < 0)
		return rc;
	if (registry_find(r, spec->name) >= 0)
		return errmsg(err, errlen, SHMF_E_EXISTS, "filter '%s' already exists", spec->name);
	if ((slot = empty_slot(r, spec->name, err, errlen)) < 0)
		return slot;
	if (spec->replicate && (rc = fleet_ready(r, spec->name, err, errlen)) < 0)
		return rc;
	uint64_t gen = r->ctl.hdr->last_generation + 1, created;
	if ((rc = first_generation(r, spec, &p, gen, &created, err, errlen)) < 0)
		return rc;
	/* The slot is free (generation 0: no client reads the rest of it);
	 * the flag and a fresh cursor go in before the publication. */
	struct shmf_slot *s = &r->ctl.slots[slot];
	shmf_slot_write_begin(s);
	s->flags = spec->replicate ? SHMF_SLOT_REPLICATED : 0;
	shmf_slot_write_end(s);
	registry_cursor_set(r, slot, 0, 0);
	registry_fleet_peers_reset(r, slot);
	struct live_ring ring = { .n = 1, .gen = { gen }, .created = { created } };
	registry_publish(r, slot, spec, &p, &ring);
	log_msg(LOG_INFO,
		"filter '%s': created (%s, capacity %" PRIu64 ", fpr %g, %s %u, %" PRIu64 " bytes, generation %" PRIu64
		")%s",
		spec->name, spec_type_name(spec->type), spec->capacity, spec->fpr,
		spec->type == SHMF_TYPE_CUCKOO ? "fingerprint bits" : "k", p.k, p.data_bytes, gen,
		spec->replicate ? ", replicated" : "");
	return slot;
}

int registry_drop(struct registry *r, const char *name, char *err, size_t errlen)
{
	int slot = registry_find(r, name);
	if (slot < 0)
		return errmsg(err, errlen, slot, "filter '%s' not found", name);
	struct shmf_slot *s = &r->ctl.slots[slot];
	char dropped[SHMF_NAME_MAX + 1];
	snprintf(dropped, sizeof(dropped), "%s", s->name);
	struct live_ring ring = { .n = s->nlive };
	memcpy(ring.gen, s->live, sizeof(ring.gen));

	int replicated = (s->flags & SHMF_SLOT_REPLICATED) != 0;

	/* The engine first: once this returns it stores no cursor here. */
	if (r->hooks.dropping != NULL)
		r->hooks.dropping(r->hooks.arg, r, slot);
	if (r->handles[slot] != NULL) {
		shmf_close(r->handles[slot]);
		r->handles[slot] = NULL;
	}
	memset(&r->counts[slot], 0, sizeof(r->counts[slot]));
	shmf_slot_write_begin(s);
	/* release: pairs with the acquire in enter(); handles then see the
	 * mismatch and answer SHMF_E_DROPPED. */
	atomic_store_explicit(&s->generation, 0, memory_order_release);
	memset(s->name, 0, sizeof(s->name));
	s->flags = 0;
	shmf_slot_write_end(s);
	registry_cursor_set(r, slot, 0, 0);
	registry_fleet_peers_reset(r, slot);
	registry_unlink_ring(r, dropped, &ring);
	if (replicated)
		journal_unlink(r, dropped);
	log_msg(LOG_INFO, "filter '%s': dropped", dropped);
	return 0;
}

int registry_room(const struct registry *r, const char *what, uint64_t bytes, char *err, size_t errlen)
{
	if (bytes > r->max_bytes)
		return errmsg(err, errlen, SHMF_E_TOOBIG,
			      "%s needs %" PRIu64 " bytes, more memory than this host has (%" PRIu64 " MiB)", what,
			      bytes, r->max_bytes >> 20);
	struct statvfs fs;
	if (fstatvfs(r->dir.fd, &fs) == 0 && fs.f_blocks != 0) {
		uint64_t avail = (uint64_t)fs.f_bavail * (uint64_t)fs.f_frsize;
		if (bytes > avail)
			return errmsg(err, errlen, SHMF_E_TOOBIG,
				      "%s needs %" PRIu64 " bytes, more than %s has free (%" PRIu64 " MiB)", what,
				      bytes, r->dir_path, avail >> 20);
	}
	return 0;
}

int registry_handle(struct registry *r, int slot, shmf_t **out, char *err, size_t errlen)
{
	if (slot < 0 || slot >= (int)SHMF_SLOTS)
		return errmsg(err, errlen, SHMF_E_INVAL, "slot %d out of range", slot);
	if (r->handles[slot] == NULL) {
		int rc = shmf_open(r->instance, r->ctl.slots[slot].name, SHMF_RDWR, &r->handles[slot]);
		if (rc < 0)
			return errmsg(err, errlen, rc, "filter '%s': %s", r->ctl.slots[slot].name, shmf_strerror(rc));
	}
	*out = r->handles[slot];
	return 0;
}

int registry_info(struct registry *r, int slot, struct filter_info *out, char *err, size_t errlen)
{
	shmf_t *h;
	int rc = registry_handle(r, slot, &h, err, errlen);
	if (rc < 0)
		return rc;
	memset(out, 0, sizeof(*out));
	out->slot = slot;
	if ((rc = shmf_info(h, &out->info)) < 0)
		return errmsg(err, errlen, rc, "filter '%s': %s", r->ctl.slots[slot].name, shmf_strerror(rc));
	shmf_data_filename(out->info.name, out->info.generation, out->data_file, sizeof(out->data_file));
	struct stat st;
	if (fstatat(r->dir.fd, out->data_file, &st, AT_SYMLINK_NOFOLLOW) == 0)
		out->mode = st.st_mode & 07777;
	out->huge_pages = hugepages_dir_is_huge(r->dir.fd);
	struct shmf_slot copy;
	uint64_t now = (uint64_t)time(NULL);
	if (shmf_slot_read(&r->ctl.slots[slot], &copy) == 0) {
		out->nlive = copy.nlive <= SHMF_RING_MAX ? copy.nlive : 0;
		for (unsigned i = 0; i < out->nlive; i++) {
			struct shmf_data_map dm = { .fd = -1 };
			out->live_gen[i] = copy.live[i];
			out->live_age[i] = now > copy.live_created[i] ? now - copy.live_created[i] : 0;
			if (shmf_data_map_open_gen(&r->dir, &copy, copy.live[i], 0, &dm) == 0) {
				out->live_items[i] = shmf_data_items(&dm);
				shmf_data_map_close(&dm);
			}
		}
		out->expansion = (copy.flags & SHMF_SLOT_LAYERED) ? copy.expansion : 0;
		out->nonscaling = (copy.flags & SHMF_SLOT_NONSCALING) != 0;
	}
	/* The layers, as the handle maps them (a plain filter: one). */
	if ((rc = shmf_layers(h, out->layer, SHMF_RING_MAX)) < 0)
		return errmsg(err, errlen, rc, "filter '%s': %s", r->ctl.slots[slot].name, shmf_strerror(rc));
	out->nparts = (unsigned)rc;
	out->standby = out->nparts > 0 && out->layer[out->nparts - 1].standby;
	double none = 1.0;
	uint64_t items = 0, bytes = 0;
	for (unsigned i = 0; i < out->nparts; i++) {
		const struct shmf_layer_status *l = &out->layer[i];
		if (l->standby && !(l->state & SHMF_LAYER_OPENED))
			continue;
		out->nlayers++;
		out->capacity_total += l->capacity;
		out->deletes_total += l->deletes;
		items += l->items;
		bytes += l->bytes;
		none *= 1.0 - (out->info.type == SHMF_TYPE_CUCKOO
				       ? shmf_cuckoo_fpr(l->items, l->nbuckets, l->k, l->bucket_size)
				       : shmf_bloom_fpr_lines(l->items, l->nblocks, l->k, l->bucket_size));
	}
	out->fpr_total = 1.0 - none;
	out->buckets = out->nparts > 0 ? out->layer[out->nparts - 1 - (unsigned)out->standby].nbuckets : 0;
	if (out->expansion == 0) {
		/* A filter that does not grow: one filter (a window's
		 * generations are not RedisBloom's sub-filters), as before. */
		/* An import from RedisBloom: its links, as RedisBloom counts its filters. */
		out->nlayers = out->nparts == 1 && out->layer[0].links != 0 ? out->layer[0].links : 1;
		out->rb_growth = out->nparts == 1 ? out->layer[0].growth : 0;
		out->capacity_total = out->info.capacity;
		out->deletes_total = out->info.deletes;
		out->fpr_total = out->info.fpr_estimate;
	} else {
		/* What it was created with; what its layers hold and take. */
		out->info.capacity = r->ctl.slots[slot].capacity;
		memcpy(&out->info.fpr_target, &r->ctl.slots[slot].fpr_bits, sizeof(double));
		out->info.items = items;
		out->info.bytes = bytes;
		out->info.fpr_estimate = out->fpr_total;
	}
	return 0;
}

int registry_list(struct registry *r, int slots[SHMF_SLOTS])
{
	int n = 0;
	for (unsigned i = 0; i < SHMF_SLOTS; i++)
		if (atomic_load_explicit(&r->ctl.slots[i].generation, memory_order_relaxed) != 0)
			slots[n++] = (int)i;
	return n;
}

void registry_close(struct registry *r, int remove)
{
	for (unsigned i = 0; i < SHMF_SLOTS; i++) {
		if (r->handles[i] != NULL)
			shmf_close(r->handles[i]);
		r->handles[i] = NULL;
	}
	if (remove && r->ctl.slots != NULL) {
		int slots[SHMF_SLOTS];
		int n = registry_list(r, slots);
		for (int i = 0; i < n; i++)
			registry_drop(r, r->ctl.slots[slots[i]].name, NULL, 0);
		unlinkat(r->dir.fd, SHMF_CTL_FILE, 0);
		shmf_ctl_map_close(&r->ctl);
		shmf_dir_close(&r->dir);
		rmdir(r->dir_path);
		return;
	}
	shmf_ctl_map_close(&r->ctl);
	shmf_dir_close(&r->dir);
}

void registry_unlink_ring(struct registry *r, const char *name, const struct live_ring *ring)
{
	for (unsigned i = 0; i < ring->n && i < SHMF_RING_MAX; i++) {
		char fname[128];
		if (shmf_data_filename(name, ring->gen[i], fname, sizeof(fname)) == 0 &&
		    unlinkat(r->dir.fd, fname, 0) < 0)
			log_msg(LOG_WARNING, "%s/%s: cannot unlink: %s", r->dir_path, fname, strerror(errno));
	}
}

int registry_layer_spec(const struct filter_spec *spec, unsigned i, struct filter_spec *out, struct shmf_geometry *g)
{
	struct shmf_layer l;
	int rc = shmf_geometry_layer(spec->type, spec->capacity, spec->fpr, spec->max_kicks, spec->bucket_size,
				     spec->expansion, i, &l);
	if (rc < 0)
		return rc;
	*out = *spec;
	out->capacity = l.capacity;
	out->fpr = l.fpr;
	*g = l.g;
	return 0;
}

void registry_spec_of(struct registry *r, const struct shmf_slot *s, struct filter_spec *spec, struct shmf_geometry *g)
{
	memset(spec, 0, sizeof(*spec));
	snprintf(spec->name, sizeof(spec->name), "%s", s->name);
	spec->type = (int)s->type;
	spec->capacity = s->capacity;
	memcpy(&spec->fpr, &s->fpr_bits, sizeof(double));
	spec->window_secs = s->window_secs;
	spec->window_gens = s->window_gens;
	spec->bucket_size = s->bucket_size;
	spec->expansion = (s->flags & SHMF_SLOT_LAYERED) ? s->expansion : 0;
	spec->nonscaling = (s->flags & SHMF_SLOT_NONSCALING) != 0;
	spec->mode = 0640;
	char fname[128];
	struct stat st;
	if (shmf_data_filename(s->name, s->live[0], fname, sizeof(fname)) == 0 &&
	    fstatat(r->dir.fd, fname, &st, AT_SYMLINK_NOFOLLOW) == 0)
		spec->mode = st.st_mode & 0777;
	/* The relocation lock's timeout, as the slot has it (never a data
	 * file's word: writers can change those). */
	spec->lock_timeout_ms = s->type == SHMF_TYPE_CUCKOO && s->lock_timeout_ms <= SHMF_CUCKOO_LOCK_TIMEOUT_MAX
					? s->lock_timeout_ms
					: 0;
	*g = (struct shmf_geometry){ .type = s->type,
				     .k = s->k,
				     .nblocks = s->nblocks,
				     .nbuckets = s->nbuckets,
				     .bucket_size = s->bucket_size,
				     .scheme = s->scheme,
				     .data_bytes = s->data_bytes };
}

int registry_slot_copy(struct registry *r, const char *name, struct shmf_slot *copy, char *err, size_t errlen)
{
	int slot = registry_find(r, name);
	if (slot < 0)
		return errmsg(err, errlen, slot, "filter '%s' not found", name);
	int rc = shmf_slot_read(&r->ctl.slots[slot], copy);
	if (rc == 0)
		rc = shmf_slot_check(copy);
	if (rc < 0)
		return errmsg(err, errlen, rc, "filter '%s': %s", name, shmf_strerror(rc));
	return slot;
}

/* Rotate filter @p name (slot copy @p copy, windowed): a new newest
 * generation begun at @p created. A replicated filter's ring is cut by
 * window number too: a generation whose window has left the ring by
 * @p created's window is retired even when the ring is not full (this
 * node slept through rotations the others made). */
static int rotate(struct registry *r, int slot, const struct shmf_slot *copy, uint64_t created, char *err,
		  size_t errlen);

int registry_rotate(struct registry *r, const char *name, char *err, size_t errlen)
{
	struct shmf_slot copy;
	int slot = registry_slot_copy(r, name, &copy, err, errlen);
	if (slot < 0)
		return slot;
	if (copy.window_gens == 0)
		return errmsg(err, errlen, SHMF_E_TYPE, "filter '%s' has no time window to rotate", name);
	uint64_t now = (uint64_t)time(NULL);
	if (copy.flags & SHMF_SLOT_REPLICATED) {
		/* Only to the current wall-clock window: a generation of its own
		 * would not line up with the other nodes'. */
		uint64_t w = fleet_window(now, copy.window_secs);
		if (w <= fleet_window(copy.live_created[0], copy.window_secs))
			return errmsg(err, errlen, SHMF_E_TYPE,
				      "filter '%s' replicates: its newest generation is the current wall-clock window "
				      "already (its windows turn in step with every node's)",
				      name);
		return rotate(r, slot, &copy, w * copy.window_secs, err, errlen);
	}
	return rotate(r, slot, &copy, now, err, errlen);
}

int registry_rotate_to(struct registry *r, const char *name, uint64_t window, char *err, size_t errlen)
{
	struct shmf_slot copy;
	int slot = registry_slot_copy(r, name, &copy, err, errlen);
	if (slot < 0)
		return slot;
	if (copy.window_gens == 0 || !(copy.flags & SHMF_SLOT_REPLICATED))
		return errmsg(err, errlen, SHMF_E_TYPE, "filter '%s' is not a replicated windowed filter", name);
	if (window <= fleet_window(copy.live_created[0], copy.window_secs))
		return 0;
	/* Window numbers are 32 bits in the journal and the stream; below
	 * that bound window * window_secs fits 64 bits (segment-format.h). */
	if (window > SHMF_WINDOW_NUM_MAX)
		return errmsg(err, errlen, SHMF_E_INVAL, "filter '%s': window %" PRIu64 " does not fit 32 bits", name,
			      window);
	return rotate(r, slot, &copy, window * copy.window_secs, err, errlen);
}

static int rotate(struct registry *r, int slot, const struct shmf_slot *cp, uint64_t created, char *err, size_t errlen)
{
	const struct shmf_slot copy = *cp;
	const char *name = copy.name;
	int rc;
	/* The newest generation's seed and relocation bound: every generation
	 * of a window hashes keys the same way. */
	struct shmf_data_map dm = { .fd = -1 };
	if ((rc = shmf_data_map_open(&r->dir, &copy, 0, &dm)) < 0)
		return errmsg(err, errlen, rc, "filter '%s': cannot map its newest generation: %s", name,
			      shmf_strerror(rc));
	uint64_t seed = dm.hdr.seed;
	uint32_t kicks = dm.hdr.max_kicks;
	shmf_data_map_close(&dm);
	struct filter_spec spec;
	struct shmf_geometry g;
	registry_spec_of(r, &copy, &spec, &g);
	g.max_kicks = kicks;
	uint64_t gen = r->ctl.hdr->last_generation + 1;
	if ((rc = registry_data_create(r, &spec, &g, gen, seed, 0, err, errlen)) < 0)
		return rc;
	r->ctl.hdr->last_generation = gen;
	struct live_ring ring = { .n = 1, .gen = { gen }, .created = { created } }, retired = { 0 };
	int replicated = (copy.flags & SHMF_SLOT_REPLICATED) != 0;
	uint64_t window = fleet_window(created, copy.window_secs);
	for (unsigned i = 0; i < copy.nlive; i++) {
		int left = replicated &&
			   fleet_window(copy.live_created[i], copy.window_secs) + copy.window_gens <= window;
		if (ring.n < copy.window_gens && !left) {
			ring.gen[ring.n] = copy.live[i];
			ring.created[ring.n++] = copy.live_created[i];
		} else {
			retired.gen[retired.n++] = copy.live[i];
		}
	}
	registry_publish(r, slot, &spec, &g, &ring);
	registry_unlink_ring(r, name, &retired);
	r->counts[slot].rotations++;
	log_msg(LOG_INFO, "filter '%s': rotated; generation %" PRIu64 " is the newest of %u%s", name, gen, ring.n,
		retired.n ? ", the oldest retired" : "");
	return 0;
}

void registry_rotate_due(struct registry *r, uint64_t now)
{
	char err[REGISTRY_ERR_MAX];
	for (unsigned i = 0; i < SHMF_SLOTS; i++) {
		struct shmf_slot *s = &r->ctl.slots[i];
		if (atomic_load_explicit(&s->generation, memory_order_relaxed) == 0 || s->window_gens == 0)
			continue;
		char name[SHMF_NAME_MAX + 1];
		snprintf(name, sizeof(name), "%s", s->name);
		if (s->flags & SHMF_SLOT_REPLICATED) {
			/* Wall-clock boundaries: due once now is in a later window. */
			uint64_t w = fleet_window(now, s->window_secs);
			if (w > fleet_window(s->live_created[0], s->window_secs) &&
			    registry_rotate_to(r, name, w, err, sizeof(err)) < 0)
				log_msg(LOG_ERR, "%s", err);
			continue;
		}
		/* A difference, not a sum: nothing to overflow, whatever the window. */
		if (now < s->live_created[0] || now - s->live_created[0] < s->window_secs)
			continue;
		if (registry_rotate(r, name, err, sizeof(err)) < 0)
			log_msg(LOG_ERR, "%s", err);
	}
}

int registry_seed(struct registry *r, int slot, uint64_t *seed)
{
	struct shmf_slot copy;
	struct shmf_data_map dm = { .fd = -1 };
	int rc = shmf_slot_read(&r->ctl.slots[slot], &copy);
	if (rc == 0)
		rc = shmf_slot_check(&copy);
	if (rc == 0)
		rc = shmf_data_map_open(&r->dir, &copy, 0, &dm);
	if (rc < 0)
		return rc;
	*seed = dm.hdr.seed;
	shmf_data_map_close(&dm);
	return 0;
}

int registry_replicate(struct registry *r, int slot, char *err, size_t errlen)
{
	struct shmf_slot *s = &r->ctl.slots[slot];
	char name[SHMF_NAME_MAX + 1];
	snprintf(name, sizeof(name), "%s", s->name);
	if (s->flags & SHMF_SLOT_REPLICATED)
		return 0;
	if (s->scheme != SHMF_SCHEME_NATIVE)
		return errmsg(err, errlen, SHMF_E_TYPE,
			      "filter '%s' was imported from RedisBloom and is read-only: it has no adds to replicate",
			      name);
	int rc = fleet_ready(r, name, err, errlen);
	if (rc < 0)
		return rc;
	struct filter_spec spec;
	struct shmf_geometry g;
	registry_spec_of(r, s, &spec, &g);
	if ((rc = journal_make(r, name, spec.mode, err, errlen)) < 0)
		return rc;
	uint64_t seed;
	if (registry_seed(r, slot, &seed) == 0 && seed != fleet_seed(r->fleet.secret, name))
		log_msg(LOG_WARNING,
			"filter '%s': replicates now, but its hash seed is not the fleet's (made without the fleet's "
			"secret): the other nodes will refuse its entries as a foreign shape",
			name);
	shmf_slot_write_begin(s);
	s->flags |= SHMF_SLOT_REPLICATED;
	shmf_slot_write_end(s);
	log_msg(LOG_INFO, "filter '%s': replicates", name);
	if (r->hooks.published != NULL)
		r->hooks.published(r->hooks.arg, r, slot);
	return 0;
}

int registry_fleet_attach(struct registry *r, char *err, size_t errlen)
{
	char fname[SHMF_NAME_MAX + sizeof(SHMF_JOURNAL_SUFFIX)];
	for (unsigned i = 0; i < SHMF_SLOTS; i++) {
		struct shmf_slot *s = &r->ctl.slots[i];
		if (atomic_load_explicit(&s->generation, memory_order_relaxed) == 0 ||
		    !(s->flags & SHMF_SLOT_REPLICATED))
			continue;
		int rc = fleet_ready(r, s->name, err, errlen);
		if (rc < 0)
			return errmsg(err, errlen, rc,
				      "filter '%s' replicates (it has a journal in %s), but shmd's configuration has "
				      "no [replication] section with a secret: add one, or drop the filter",
				      s->name, r->dir_path);
		struct stat st;
		if (shmf_journal_filename(s->name, fname, sizeof(fname)) == 0 &&
		    fstatat(r->dir.fd, fname, &st, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		struct filter_spec spec;
		struct shmf_geometry g;
		registry_spec_of(r, s, &spec, &g);
		log_msg(LOG_WARNING, "filter '%s': replicates but its journal is missing; making a new one", s->name);
		if ((rc = journal_make(r, s->name, spec.mode, err, errlen)) < 0)
			return rc;
	}
	return 0;
}

void registry_cursor_set(struct registry *r, int slot, uint64_t ms, uint64_t seq)
{
	struct shmf_slot *s = &r->ctl.slots[slot];
	/* release: the stores stay in this order (and after the entries they
	 * cover were applied); a reader after a crash sees a prefix of them. */
	if (__atomic_load_n(&s->cursor_ms, __ATOMIC_RELAXED) != ms) {
		__atomic_store_n(&s->cursor_seq, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&s->cursor_ms, ms, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&s->cursor_seq, seq, __ATOMIC_RELEASE);
}

void registry_cursor_get(const struct registry *r, int slot, uint64_t *ms, uint64_t *seq)
{
	const struct shmf_slot *s = &r->ctl.slots[slot];
	/* acquire: pairs with the release stores in registry_cursor_set(). */
	*ms = __atomic_load_n(&s->cursor_ms, __ATOMIC_ACQUIRE);
	*seq = __atomic_load_n(&s->cursor_seq, __ATOMIC_ACQUIRE);
}

void registry_fleet_peers_get(const struct registry *r, int slot, struct shmf_fleet_peer out[SHMF_FLEET_PEERS],
			      uint64_t *floor)
{
	const struct shmf_slot *s = &r->ctl.slots[slot];
	for (unsigned i = 0; i < SHMF_FLEET_PEERS; i++) {
		out[i].node = __atomic_load_n(&s->fleet_peers[i].node, __ATOMIC_ACQUIRE);
		out[i].seq = __atomic_load_n(&s->fleet_peers[i].seq, __ATOMIC_ACQUIRE);
	}
	*floor = __atomic_load_n(&s->fleet_floor, __ATOMIC_ACQUIRE);
}

void registry_fleet_peers_set(struct registry *r, int slot, const struct shmf_fleet_peer in[SHMF_FLEET_PEERS],
			      uint64_t floor)
{
	struct shmf_slot *s = &r->ctl.slots[slot];
	/* release: each store after the entries it covers were applied, and
	 * in this order, as the cursor's (registry_cursor_set()). */
	__atomic_store_n(&s->fleet_floor, floor, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < SHMF_FLEET_PEERS; i++) {
		struct shmf_fleet_peer *p = &s->fleet_peers[i];
		if (__atomic_load_n(&p->node, __ATOMIC_RELAXED) != in[i].node) {
			__atomic_store_n(&p->node, 0, __ATOMIC_RELEASE);
			__atomic_store_n(&p->seq, in[i].seq, __ATOMIC_RELEASE);
			__atomic_store_n(&p->node, in[i].node, __ATOMIC_RELEASE);
		} else {
			__atomic_store_n(&p->seq, in[i].seq, __ATOMIC_RELEASE);
		}
	}
}

void registry_fleet_peers_reset(struct registry *r, int slot)
{
	static const struct shmf_fleet_peer none[SHMF_FLEET_PEERS];
	registry_fleet_peers_set(r, slot, none, 0);
}

uint64_t registry_fleet_sent_get(const struct registry *r, int slot)
{
	return __atomic_load_n(&r->ctl.slots[slot].fleet_sent_seq, __ATOMIC_ACQUIRE);
}

void registry_fleet_sent_set(struct registry *r, int slot, uint64_t seq)
{
	__atomic_store_n(&r->ctl.slots[slot].fleet_sent_seq, seq, __ATOMIC_RELEASE);
}
