/*
 * periodic.h - the daemon's timed work on its configured filters: periodic
 * snapshots into a directory (the newest N kept), a last snapshot at
 * shutdown, and at start the restore of a missing filter from its newest
 * valid snapshot (falling back to older ones when it is damaged).
 *
 * Snapshot files are named FILTER.YYYYMMDDTHHMMSSZ.snap (UTC), so that
 * their names sort in time order.
 */
#ifndef SHMD_PERIODIC_H
#define SHMD_PERIODIC_H

#include <stdint.h>

#include "shmd/config/config.h"
#include "shmd/store/registry.h"

struct periodic {
	const struct config *cfg;
	uint64_t next_snapshot[CONFIG_FILTERS_MAX]; /* unix seconds; 0: none configured */
};

/** Start the clocks: each filter's first snapshot is one interval from @p now. */
void periodic_init(struct periodic *p, const struct config *cfg, uint64_t now);

/**
 * The configuration p->cfg points to was reloaded (@p old: a copy of what
 * it held): a filter whose snapshot_every is unchanged keeps its next
 * snapshot time; a new or changed one starts its clock at @p now.
 */
void periodic_reschedule(struct periodic *p, const struct config *old, uint64_t now);

/** Do what is due at @p now (called about once a second by the server loop). */
void periodic_tick(struct periodic *p, struct registry *r, uint64_t now);

/** Snapshot every filter that has periodic snapshots (clean shutdown). */
void periodic_final(struct periodic *p, struct registry *r);

/**
 * Restore filter @p f (missing from the registry) from the newest snapshot
 * in its snapshot directory that validates completely, logging each file
 * refused and the one used.
 * @return the slot, or SHMF_E_NOTFOUND when no file could be used.
 */
int periodic_restore_newest(struct registry *r, const struct filter_spec *f);

/** Write a snapshot of @p f now and prune old ones, as a job of the file
 * worker. 0 (queued; a failure is logged when it ends), or an error
 * (logged); without worker threads, the snapshot's outcome. */
int periodic_snapshot(struct registry *r, const struct filter_spec *f, uint64_t now);

#endif
