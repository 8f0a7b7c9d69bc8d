/*
 * registry.h - the daemon's filters: the instance directory, the control
 * segment it alone writes, and one data segment per filter generation.
 *
 * Single-threaded: every function is called from the daemon's main loop.
 * Errors are shmf error codes (include/shmf.h) or -errno; each failing
 * function also writes a sentence naming the object and the cause into
 * err[] (when err is not NULL) for the log or the client.
 */
#ifndef SHMD_REGISTRY_H
#define SHMD_REGISTRY_H

#include <stdint.h>
#include <sys/types.h>

#include "shmd/base/fscred.h"
#include "libclient/layers.h"
#include "libclient/segment.h"
#include <shmf.h>
#include "common/snapshot.h"
#include "common/spec.h"

#define REGISTRY_ERR_MAX 512

/* A snapshot of one filter, for LIST and INFO. */
struct filter_info {
	int slot;
	shmf_info_t info; /* as libshmf reports it */
	char data_file[SHMF_NAME_MAX + 32];
	mode_t mode;
	int huge_pages; /* 1 if the data segment is backed by huge pages */
	unsigned nlive; /* live generations, newest first: */
	uint64_t live_gen[SHMF_RING_MAX];
	uint64_t live_age[SHMF_RING_MAX]; /* seconds since it began */
	uint64_t live_items[SHMF_RING_MAX];
	/* How it grows: a growing filter's layers (docs/design.md, "Layers").
	 * For one, info.capacity and info.fpr_target are what it was created
	 * with, info.items and info.bytes sum its layers. */
	uint32_t expansion; /* 0: it does not grow */
	uint32_t rb_growth; /* an import from RedisBloom: its expansion rate there (BF.INFO, CF.INFO); else 0 */
	uint64_t buckets;   /* cuckoo: the first layer's (or imported sub-filter's) buckets, RedisBloom's count */
	int nonscaling;     /* a NONSCALING Bloom filter */
	unsigned nlayers;   /* layers that hold keys: a standby nobody opened is not one */
	unsigned nparts;    /* layer[] entries: the current layer, the older ones, a standby last */
	int standby;        /* 1: layer[nparts - 1] is the standby */
	struct shmf_layer_status layer[SHMF_RING_MAX];
	uint64_t capacity_total; /* the layers' capacities summed (RedisBloom's Capacity) */
	uint64_t deletes_total;  /* cuckoo: the layers' deletes summed */
	double fpr_total;        /* the chance that one of the layers answers a false positive now */
};

struct registry;
struct replication;
struct roles_config;

/* What replicated filters are made with ([replication] in the
 * configuration); shmd sets it after registry_open(), before any filter
 * is created. Without it (enabled 0), a filter cannot replicate. */
struct registry_fleet {
	int enabled;
	const char *secret; /* keys every replicated filter's seed (fleet_seed); "" : none */
	unsigned journal_rings, journal_entries;
};

/* The registry tells the replication engine (replication.h) which filters
 * replicate: published() after a slot's generations are published (a
 * create, rotation, swap, restore, or registry_replicate()), dropping()
 * before a slot is unpublished. Called from the main loop. */
struct registry_hooks {
	void (*published)(void *arg, struct registry *r, int slot);
	void (*dropping)(void *arg, struct registry *r, int slot);
	void *arg;
};

/* What happened to the filter in a slot while this shmd ran (since start,
 * or since the filter was made), for the metrics page: counted on the
 * loop, in the daemon's memory, never in anything mapped. Zeroed when the
 * filter is dropped. */
struct registry_counts {
	uint64_t rotations;         /* a window's new newest generation published (rotate()) */
	uint64_t swaps;             /* SHMF.SWAP's new generations published */
	uint64_t growths;           /* a growing filter's next layer made current (grow.c) */
	uint64_t snapshot_failures; /* its periodic snapshots (snapshot_every, and at shutdown) that failed */
	uint64_t snapshot_last;     /* time() of the last of them written; 0: none yet */
};

struct registry {
	char instance[SHMF_NAME_MAX + 1];
	char dir_path[4096];
	struct shmf_dir dir;
	struct shmf_ctl_map ctl;
	gid_t gid;                   /* group of files, or (gid_t)-1 to keep ours */
	shmf_t *handles[SHMF_SLOTS]; /* the daemon's own read-write handles, opened lazily */
	uint64_t max_bytes;          /* largest filter the daemon accepts (memory of the host) */
	uint64_t last_publish_ns;    /* CLOCK_MONOTONIC of the last generation published */
	struct registry_fleet fleet;
	struct registry_hooks hooks;
	struct replication *repl; /* the engine, for SHMF.REPLICATION; NULL without [replication] */
	/* Growing filters (grow.c): per slot, the newest generation a next
	 * layer is being made after (0: none), and the one after which it
	 * could not be (logged once; tried again once the filter changes). */
	uint64_t grow_making[SHMF_SLOTS];
	uint64_t grow_stuck[SHMF_SLOTS];
	/* The writers' quotas that bind the filters writers made, for their
	 * whole life (quotas.h); shmd points it at its configuration's
	 * [roles] after registry_open(). NULL: no quotas. */
	const struct roles_config *quotas;
	struct registry_counts counts[SHMF_SLOTS];
};

/**
 * Create (first start) or re-attach (restart) the instance directory and its
 * control segment. On re-attach every live slot is validated; a slot left
 * mid-write by a crashed daemon is repaired, and data files no slot names
 * (left by a crash between publish and unlink) are removed.
 * @param dir_mode  mode of the instance directory (0750 by default)
 * @param ctl_mode  mode of the control segment (0640 by default)
 * @param gid       group for directory and files, or (gid_t)-1
 */
int registry_open(struct registry *r, const char *instance, mode_t dir_mode, mode_t ctl_mode, gid_t gid, char *err,
		  size_t errlen);

/** Record in the control file how shmd was started (@p command, a
 * command line, cut to fit), for shmctl's hint when it is not running. */
void registry_record_start(struct registry *r, const char *command);

/** Unmap everything. Segments stay on disk unless @p remove is set. */
void registry_close(struct registry *r, int remove);

/**
 * Create a filter and publish its first generation. A replicated one
 * (spec->replicate) hashes with fleet_seed(secret, name), gets its journal
 * (the filter's mode and group, the fleet's sizes) before its slot is
 * published with SHMF_SLOT_REPLICATED and cursor 0-0, and a windowed one
 * starts at the current wall-clock boundary.
 * @return the slot (>= 0), SHMF_E_NAME, SHMF_E_INVAL (capacity 0, fpr out
 *         of (0,1), mode with other-write bits, replicate without a
 *         configured fleet or secret), SHMF_E_TOOBIG (more memory than the
 *         host has), SHMF_E_EXISTS, SHMF_E_FULL (no free slot), -errno.
 */
int registry_create(struct registry *r, const struct filter_spec *spec, char *err, size_t errlen);

/** Drop a filter: unpublish its slot (clearing its replication flag and
 * cursor), then unlink its data files and journal, and forget who made
 * it (quotas.h). 0 or SHMF_E_NOTFOUND. */
int registry_drop(struct registry *r, const char *name, char *err, size_t errlen);

/**
 * Slot of the live filter @p name, or SHMF_E_NOTFOUND. The name is not
 * checked here: one that no filter may have is simply not found. Names
 * are checked where they enter the daemon (the verbs' dispatcher, once
 * per request; the configuration parser), and by the functions that
 * create a filter.
 */
int registry_find(struct registry *r, const char *name);

/**
 * Whether @p bytes more fit on this host: at most its memory and the space
 * free now on the file system of the instance directory (a tmpfs), so that
 * a layer or a resize larger than that is refused before any page is
 * allocated, not found out by the allocation. @p what names it in the
 * message ("filter 'x': layer 3"). 0, or SHMF_E_TOOBIG with @p err.
 */
int registry_room(const struct registry *r, const char *what, uint64_t bytes, char *err, size_t errlen);

/** The daemon's read-write handle on the filter in @p slot (opened on first use). */
int registry_handle(struct registry *r, int slot, shmf_t **out, char *err, size_t errlen);

/** Describe the filter in @p slot. */
int registry_info(struct registry *r, int slot, struct filter_info *out, char *err, size_t errlen);

struct snap_file;
struct ring_maps;

/* A snapshot between its steps: begun on the loop (the generations
 * mapped, the header filled), written anywhere (a worker thread: only
 * files and the mappings), ended on the loop. */
struct registry_snap {
	char name[SHMF_NAME_MAX + 1];
	char path[4096];
	struct fscred as;       /* whose file it is; unset: the daemon's */
	unsigned mode;          /* of the file: the data file's, less execute bits */
	struct ring_maps *maps; /* the generations copied, mapped until the end */
	struct snap_source src; /* options (force, checks, cancel) may be set before the write */
};

/**
 * The first step of a snapshot of filter @p name to @p path as @p as
 * (NULL: the daemon): the slot copied and checked, every live generation
 * mapped (so a rotation or a drop meanwhile changes nothing of the copy),
 * the header filled, the stream cursor read.
 * @return 0 (registry_snapshot_end() then releases @p s), SHMF_E_NOTFOUND, or an error.
 */
int registry_snapshot_begin(struct registry *r, const char *name, const char *path, const struct fscred *as,
			    struct registry_snap *s, char *err, size_t errlen);

/**
 * The file step, on any thread, touching no registry state: each cuckoo
 * generation copied consistently into private memory while writers go on
 * (registry_ring_copy()), then the copy written with snapshot_write() as
 * s->as.
 * @return 0 or the error of snapshot_write() (err says which step).
 */
int registry_snapshot_write(struct registry_snap *s, char *err, size_t errlen);

/** The last step (the loop): mappings released; the snapshot logged if @p rc is 0. */
void registry_snapshot_end(struct registry_snap *s, int rc);

/**
 * SHMF.SWAP's shape check: the file of header @p h may replace live filter
 * @p name if it has the same type, capacity, k, blocks, buckets and window
 * (or if there is no such filter: the swap then says so). 0, or
 * SHMF_E_INVAL with @p err saying what would change and how to ask for it
 * (RESHAPE).
 */
int registry_swap_shape(struct registry *r, const char *name, const struct shmf_snap_header *h, char *err,
			size_t errlen);

/**
 * Write a snapshot of filter @p name to @p path (snapshot.h: crash-safe),
 * the file opened with the identity @p as (NULL: the daemon's), all three
 * steps above at once on the caller's thread (tests, shutdown). A cuckoo
 * filter is copied under its relocation lock.
 * @return 0, SHMF_E_NOTFOUND, or -errno; err says what failed.
 */
int registry_snapshot(struct registry *r, const char *name, const char *path, const struct fscred *as, char *err,
		      size_t errlen);

enum { REGISTRY_SWAP, REGISTRY_RESTORE };

/**
 * Replace filter @p name with the contents of the validated snapshot
 * @p sf: fill a new generation (checking every payload checksum), publish
 * it, unlink the old one. REGISTRY_SWAP needs the filter to exist;
 * REGISTRY_RESTORE creates it if it does not. On any error the live
 * filter is untouched and the new generation's file is removed.
 * @return the slot, or an error (SHMF_E_NOTFOUND, SHMF_E_FORMAT for a
 *         damaged payload, SHMF_E_TOOBIG, SHMF_E_FULL, -errno).
 */
int registry_replace(struct registry *r, const char *name, struct snap_file *sf, int how, char *err, size_t errlen);

/**
 * Rotate the time-windowed filter @p name: publish a new, empty newest
 * generation (same shape and seed) and retire the oldest when the ring is
 * full (its file unlinked). Checks see the keys of every live generation
 * throughout.
 * @return 0, SHMF_E_NOTFOUND, SHMF_E_TYPE (not windowed), or -errno.
 */
int registry_rotate(struct registry *r, const char *name, char *err, size_t errlen);

/** Rotate every windowed filter whose newest generation is @p now -
 * window_secs old or older; a replicated one once @p now is past its
 * newest window (wall-clock boundaries, registry_rotate_to()). */
void registry_rotate_due(struct registry *r, uint64_t now);

/**
 * The newest generation of replicated windowed filter @p name becomes
 * window number @p window (its live_created = window * window_secs), if
 * that is later than its newest: every node numbers windows alike, so
 * their generations line up. Generations whose window has left the ring
 * by then (window + generations <= @p window) are retired with the oldest.
 * registry_rotate() of a replicated filter goes only to the current
 * wall-clock window (refused when the newest is that one already).
 * @return 0 (also when the newest is already at or past @p window),
 *         SHMF_E_NOTFOUND, SHMF_E_TYPE (not windowed, not replicated), -errno.
 */
int registry_rotate_to(struct registry *r, const char *name, uint64_t window, char *err, size_t errlen);

/**
 * Make the filter in @p slot replicated, if it is not: its journal is
 * created (the filter's mode, the fleet's sizes; a stale one is replaced)
 * and its slot republished with SHMF_SLOT_REPLICATED. For a filter
 * restored or pulled from a replicated node (its seed the fleet's).
 * @return 0, SHMF_E_INVAL (no fleet configured), or the journal's error.
 */
int registry_replicate(struct registry *r, int slot, char *err, size_t errlen);

/**
 * At start, once r->fleet is set: every live replicated filter has its
 * journal (one lost with the runtime directory is made again). A filter
 * that replicates when no fleet is configured is an error.
 * @return 0, or SHMF_E_INVAL / the journal's error with @p err naming the filter.
 */
int registry_fleet_attach(struct registry *r, char *err, size_t errlen);

/** The hash seed of the filter in @p slot (its newest generation's). 0 or an error. */
int registry_seed(struct registry *r, int slot, uint64_t *seed);

/* A replicated filter's stream cursor: the id <ms>-<seq> of the last
 * stream entry applied to it, kept in its slot (control segment, tmpfs),
 * so that it survives a SIGKILL of shmd. Written by shmd only; clients
 * never read it. Unlike the rest of the registry, these two may be called
 * from the replication thread: each field is stored and loaded atomically. */

/**
 * Store the cursor of the filter in @p slot. Never moves it ahead of the
 * truth, even if the daemon dies between the two stores: when ms changes,
 * seq is first set to 0, so a torn cursor is at or behind <ms>-<seq> (a
 * replay, never a skip).
 */
void registry_cursor_set(struct registry *r, int slot, uint64_t ms, uint64_t seq);

/** Load the cursor of the filter in @p slot (0-0: none yet). */
void registry_cursor_get(const struct registry *r, int slot, uint64_t *ms, uint64_t *seq);

/* A replicated filter's fleet sequences, kept in its slot beside the
 * cursor and stored and loaded like it (atomically, from the replication
 * threads too): the last sequence applied per sender (fleet_peers) and
 * the floor a sender it does not list must be above, stored by the
 * follower before the cursor they go with; and the last sequence this
 * node's sender used for the filter (fleet_sent_seq). */

/** Load the senders' sequences and the floor of the filter in @p slot. */
void registry_fleet_peers_get(const struct registry *r, int slot, struct shmf_fleet_peer out[SHMF_FLEET_PEERS],
			      uint64_t *floor);

/**
 * Store them. An entry whose sender changes is freed (node 0) before its
 * sequence is stored, so that a daemon killed between the stores leaves
 * a free entry, never a sender with another's sequence.
 */
void registry_fleet_peers_set(struct registry *r, int slot, const struct shmf_fleet_peer in[SHMF_FLEET_PEERS],
			      uint64_t floor);

/** Forget every sender's sequence and the floor (a new filter, a restored or pulled copy). */
void registry_fleet_peers_reset(struct registry *r, int slot);

/** The last sequence this node sent for the filter in @p slot (0: none). */
uint64_t registry_fleet_sent_get(const struct registry *r, int slot);

/** Store it. */
void registry_fleet_sent_set(struct registry *r, int slot, uint64_t seq);

/**
 * Give filter @p name capacity @p capacity at error rate @p fpr (0: its
 * own): possible only while it holds no key (registry-resize.c says why),
 * by publishing an empty generation of the new shape in place of its ring.
 * @return 0, SHMF_E_NOTFOUND, SHMF_E_EXISTS (that shape already),
 *         SHMF_E_TYPE (it holds keys, or replicates: err says what to do
 *         instead), SHMF_E_INVAL, SHMF_E_TOOBIG, or -errno.
 */
int registry_resize(struct registry *r, const char *name, uint64_t capacity, double fpr, char *err, size_t errlen);

/** Fill @p slots with the live slots in slot order; returns how many. */
int registry_list(struct registry *r, int slots[SHMF_SLOTS]);

#endif
