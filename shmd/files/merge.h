/*
 * merge.h - SHMF.MERGE: OR a Bloom snapshot file into a live Bloom filter
 * of the same shape, the union that two copies of a filter cut off from
 * each other need to become whole again (a fleet's nodes after a network
 * split, or a node whose journal overflowed).
 *
 * The whole file is checked (snapshot_open(), then every payload chunk
 * against its checksum) before the first bit is set: a damaged file is
 * refused with the filter untouched. Then each section is ORed, word by
 * word with atomic fetch-or (as adds set bits), into the live generation
 * of the same window: the newest for a filter without a window; for a
 * windowed one, the live generation whose window number (its start,
 * unix seconds / window_secs) is the section's. A section whose window
 * has no live generation here (retired, or not begun) is skipped and
 * counted. Checks and adds go on throughout; they see each word before or
 * after its OR, never a bit cleared.
 *
 * A replicated filter that was diverged is told repaired
 * (replication_repaired()). What a merge does not do: it leaves the item counters alone (a union's
 * count of distinct keys is not known: BF.CARD keeps counting this node's
 * adds), and it is not journalled (other nodes of a fleet merge the file
 * themselves if they need it). Cuckoo filters are refused: a union of two
 * cuckoo tables is not defined (a fingerprint's slot depends on the order
 * of inserts and relocations in its table, so slots cannot be combined,
 * and copies would be lost or counted twice).
 *
 * Called from the server loop only, but for merge_apply().
 */
#ifndef SHMD_MERGE_H
#define SHMD_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "shmd/store/registry.h"
#include "common/snapshot.h"

/* What a merge did. */
struct merge_report {
	unsigned merged;  /* sections ORed into a live generation */
	unsigned skipped; /* sections whose window has no live generation here */
	uint64_t bits;    /* bits that were 0 in the live filter and are 1 now */
};

/* A merge between its steps. */
struct merge_plan {
	int slot;
	struct shmf_slot copy;  /* the filter's slot, checked */
	struct ring_maps *maps; /* its live generations, mapped until merge_end() */
	struct merge_report rep;
};

/**
 * merge_snapshot() in the steps the file worker takes: begin on the loop
 * (types and shape checked, the live generations mapped; on error nothing
 * is held), apply anywhere (every payload chunk checked, then ORed: the
 * file and the mappings only), end on the loop (released; logged and the
 * replication told when @p rc is 0).
 */
int merge_begin(struct registry *r, const char *name, const struct snap_file *sf, struct merge_plan *p, char *err,
		size_t errlen);
int merge_apply(struct merge_plan *p, struct snap_file *sf, char *err, size_t errlen);
void merge_end(struct registry *r, struct merge_plan *p, const struct snap_file *sf, int rc);

/**
 * OR the snapshot @p sf (open; its payloads not yet checked) into live
 * filter @p name.
 * @return 0 with @p rep filled, or an error with the filter untouched:
 *         SHMF_E_NOTFOUND, SHMF_E_TYPE (a cuckoo filter or snapshot),
 *         SHMF_E_INVAL (another shape: @p err names what differs),
 *         SHMF_E_FORMAT (a damaged payload), -errno.
 */
int merge_snapshot(struct registry *r, const char *name, struct snap_file *sf, struct merge_report *rep, char *err,
		   size_t errlen);

#endif
