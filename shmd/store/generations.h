/*
 * generations.h - a filter's generations, one floor below registry.h:
 * making a data file and publishing it, the live ring mapped and copied,
 * and a replacement built in steps. Implemented by registry.c,
 * registry-snapshot.c and registry-resize.c; used by the store's own
 * files and by the file worker's jobs (shmd/files/: grow.c, filejobs.c,
 * merge.c), which make layers, snapshots, restores and merges. The rest
 * of the daemon goes through registry.h.
 */
#ifndef SHMD_GENERATIONS_H
#define SHMD_GENERATIONS_H

#include "libclient/geometry.h"
#include "libclient/segment.h"
#include "common/spec.h"
#include "libclient/cuckoo.h"
#include "common/snapshot.h"

struct registry;

/* Create generation @p gen's data file for @p spec, shaped @p p, with hash
 * seed @p seed: allocated, header written, not yet named by any slot.
 * @p fill_later: the caller writes every payload byte through the file
 * (a restore), so only the header and counter pages are allocated here. */
int registry_data_create(struct registry *r, const struct filter_spec *spec, const struct shmf_geometry *p,
			 uint64_t gen, uint64_t seed, int fill_later, char *err, size_t errlen);

/* The live generations of a filter, newest first (a growing filter's
 * layers, the newest first: its standby, when standby is set). */
struct live_ring {
	unsigned n;
	uint64_t gen[SHMF_RING_MAX];
	uint64_t created[SHMF_RING_MAX];
	int standby;  /* gen[0] is a growing filter's standby layer (SHMF_SLOT_STANDBY) */
	int promoted; /* gen[0], a standby made current: the generation word is gen[0] + 1 */
};

/* Layer @p i of the growing filter @p spec describes (its first layer's
 * capacity and rate, its expansion): @p out the spec of that layer's data
 * file (capacity and rate its own), @p g its shape. For a filter that does
 * not grow, layer 0 is the filter. @return 0 or shmf_geometry_layer()'s error. */
int registry_layer_spec(const struct filter_spec *spec, unsigned i, struct filter_spec *out, struct shmf_geometry *g);

/* Point @p slot at the generations of @p ring (ring->gen[0] the newest,
 * the one adds go to): one store that every client sees on its next call.
 * Window length and ring size come from @p spec. */
void registry_publish(struct registry *r, int slot, const struct filter_spec *spec, const struct shmf_geometry *p,
		      const struct live_ring *ring);

/* The spec (mode from the newest data file) and shape of the filter in a
 * slot copy. */
/* Filter @p name's slot, copied into @p copy and checked (its ring is in
 * range): the control file is shared memory that a writer other than shmd
 * may have scribbled on, and callers walk the ring. @return the slot
 * index, or a negative code with @p err naming the filter. */
int registry_slot_copy(struct registry *r, const char *name, struct shmf_slot *copy, char *err, size_t errlen);

void registry_spec_of(struct registry *r, const struct shmf_slot *s, struct filter_spec *spec, struct shmf_geometry *g);

/* Unlink the data files of @p ring's generations of filter @p name. */
void registry_unlink_ring(struct registry *r, const char *name, const struct live_ring *ring);

/* The live generations of a filter, mapped read-write (a cuckoo copy
 * takes the relocation lock and reads the snapshot log), and the private
 * copy of each cuckoo generation (registry_ring_copy). */
struct ring_maps {
	unsigned n;
	unsigned first; /* live[first] is dm[0]: 1 when a growing filter's standby, empty and not
			   opened, is left out (a copy has nothing to take from it) */
	struct shmf_data_map dm[SHMF_RING_MAX];
	void *copy[SHMF_RING_MAX]; /* cuckoo: a consistent image; NULL until made */
	uint32_t lock_timeout_ms;  /* cuckoo: the slot's relocation lock timeout (0: the default) */
};

/* Map every live generation of the filter @p copy describes (a checked
 * slot copy) into @p m (a growing filter's layers; its standby only once
 * an adder opened it). Nothing is locked: writers go on. @return 0, or
 * an error with nothing held. */
int registry_ring_take(struct registry *r, const struct shmf_slot *copy, struct ring_maps *m, char *err, size_t errlen);

/* Copy cuckoo generation @p i of @p m into private memory (m->copy[i]) as
 * a consistent image while writers go on (shmf_cuckoo_copy). @return 0,
 * or an error naming filter @p name. */
int registry_ring_copy(struct ring_maps *m, unsigned i, const char *name, char *err, size_t errlen);

/* A cuckoo generation's table as libclient's cuckoo code takes it, its
 * writer lock @p lock (initialised by the caller). */
struct shmf_cuckoo_geom registry_cuckoo_geom(const struct shmf_data_map *dm, struct shmf_cuckoo_lock *lock);

/* Unmap what registry_ring_take() took, and free the copies. */
void registry_ring_release(struct ring_maps *m);

/* What a snapshot of the filter in @p slot (@p copy, its generations
 * taken in @p m) says: header fields (its stream cursor read now), one
 * section header and payload pointer per generation. Not sealed. */
void registry_snap_source(struct registry *r, int slot, const struct shmf_slot *copy, const struct ring_maps *m,
			  struct snap_source *src);

/*
 * A replacement of a filter by the contents of a snapshot (a file, or the
 * chunks of a SCANDUMP), built in steps: begin makes a new data file per
 * section (numbered above every generation so far, named by no slot, so
 * nothing is visible and a restart removes them), fill writes payload
 * bytes into them, commit publishes them all at once and sets the stream
 * cursor the snapshot carries; abort removes them. Nothing of the live
 * filter changes before commit.
 */
struct registry_load {
	char name[SHMF_NAME_MAX + 1]; /* the filter it replaces or creates */
	struct shmf_snap_header hdr;  /* the snapshot's, checked */
	struct shmf_snap_section sec[SHMF_SNAP_SECTIONS];
	struct filter_spec spec;                     /* from the header, the mode from the live filter */
	struct shmf_geometry g;                      /* the stored shape (a growing filter's first layer's) */
	struct shmf_geometry gs[SHMF_SNAP_SECTIONS]; /* each section's (a growing filter's layers differ) */
	struct live_ring ring;                       /* the generations it will publish, newest first */
	unsigned made;                               /* data files made so far: ring.gen[0..made) */
	int fd[SHMF_SNAP_SECTIONS];                  /* each made file, read-write */
	struct shmf_snap_fleet fleet;                /* the senders' sequences, with hdr.flags' FLEET: the
							caller sets it after begin */
};

/**
 * Begin replacing (REGISTRY_SWAP: the filter must exist) or creating
 * (REGISTRY_RESTORE) filter @p name with the snapshot of header @p h and
 * sections @p sec (both checked by the caller: snapshot_header_check(),
 * snapshot_sections_check()). @return 0, or an error (SHMF_E_NAME,
 * SHMF_E_NOTFOUND, SHMF_E_TOOBIG, -errno) with nothing left behind.
 */
int registry_load_begin(struct registry *r, const char *name, const struct shmf_snap_header *h,
			const struct shmf_snap_section *sec, int how, struct registry_load *ld, char *err,
			size_t errlen);

/** Write @p len payload bytes of section @p sec at payload offset @p off. 0 or -errno. */
int registry_load_fill(struct registry_load *ld, unsigned sec, uint64_t off, const void *buf, size_t len, char *err,
		       size_t errlen);

/**
 * Publish what @p ld holds (every payload byte written): the item
 * counters of the sections, a cuckoo table's relocation state cleared,
 * then one store makes the new generations the filter's, the old ones are
 * unlinked and the stream cursor of the snapshot is stored in the slot.
 * @p ld is released either way. @return the slot, or an error
 * (SHMF_E_NOTFOUND for a swap whose filter went, SHMF_E_FULL, -errno)
 * with the files removed and the live filter untouched.
 */
int registry_load_commit(struct registry *r, struct registry_load *ld, int how, char *err, size_t errlen);

/** Give up @p ld: close and remove its files. */
void registry_load_abort(struct registry *r, struct registry_load *ld);

/* registry_replace() in the steps the file worker takes: begin on the loop
 * (the new data files made), fill anywhere (the payloads copied from the
 * file and checked: files only), end on the loop (published when @p rc
 * is 0, else removed; logged). end returns the slot or an error. */
int registry_replace_begin(struct registry *r, const char *name, const struct snap_file *sf, int how,
			   struct registry_load *ld, char *err, size_t errlen);
int registry_replace_fill(struct snap_file *sf, struct registry_load *ld, char *err, size_t errlen);
int registry_replace_end(struct registry *r, const struct snap_file *sf, struct registry_load *ld, int how, int rc,
			 char *err, size_t errlen);

#endif
