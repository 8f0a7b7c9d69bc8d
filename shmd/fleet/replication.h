/*
 * replication.h - the fleet engine: keeps this node's replicated filters
 * in step with every other node's through one Redis Stream per filter
 * (docs/design.md, "The fleet").
 *
 * Two threads of its own, each with a blocking hiredis connection, so
 * that the event loop never waits on Redis:
 *   sender    drains every replicated filter's journal about every
 *             millisecond while there is work (a timed condition wait
 *             otherwise) and XADDs batches of up to FLEET_BATCH_MAX
 *             entries (MAXLEN ~ retention), each with a sequence and the
 *             tags of the fleet's key (common/fleet-auth.h); an entry leaves the journal
 *             only once its XADD succeeded.
 *   follower  XREAD BLOCK 1000 COUNT 256 over every replicated stream from
 *             each filter's cursor; refuses (and counts) entries whose
 *             tags do not verify with the fleet's key or whose sequence
 *             its sender passed already, skips this node's entries,
 *             refuses foreign shapes, applies the others' through a
 *             handle that never journals (no echo), then stores the cursor
 *             in the slot. Once a second it asks XINFO STREAM whether the
 *             stream was trimmed past the cursor or reset (diverged).
 * Redis unreachable, or refusing the password, is never fatal: both
 * threads retry with backoff and the filters' state says disconnected.
 *
 * The main loop owns the registry; it tells the engine which filters
 * replicate through the registry's hooks (registry.h), which update a
 * mutex-protected list that both threads copy (with a reference on each
 * filter) at the start of every round. A mutex rather than liburcu: the
 * list changes only on create, drop, swap, restore and rotation, each
 * thread takes it once a round (a millisecond at the most often) and
 * holds it for a copy of a few pointers, so there is nothing for RCU to
 * save; and the same lock orders the follower's cursor stores against a
 * drop (a dropped slot, maybe reused, never gets a stale cursor).
 */
#ifndef SHMD_REPLICATION_H
#define SHMD_REPLICATION_H

#include <stdint.h>

#include "libclient/segment-format.h"

#include "shmd/config/config.h"
#include "common/fleet.h"
#include "shmd/fleet/repl-types.h"
#include "shmd/store/registry.h"

struct repl_node_stats {
	char node[FLEET_NODE_MAX + 1];
	uint64_t last_heard_ms_ago;
	int foreign_shape; /* its last entry had another shape */
};

/* What SHMF.REPLICATION says of one replicated filter. */
struct repl_filter_stats {
	char name[SHMF_NAME_MAX + 1];
	char stream[REPL_PREFIX_MAX + SHMF_NAME_MAX + 1];
	const char *state; /* following, disconnected, catching-up, diverged, repairing, stream-error, waiting-replicas
			    */
	struct fleet_id cursor; /* the slot's */
	int64_t lag_p50_ms;     /* over the last minute; -1: no entry applied in it */
	int64_t lag_p99_ms;
	uint64_t journal_depth;                   /* entries waiting in the journal */
	uint64_t sent;                            /* journal entries XADDed */
	uint64_t applied;                         /* other nodes' entries applied (changed or not) */
	uint64_t dropped_journal_full;            /* adds that found their ring full (never journalled) */
	uint64_t dropped_retired_window;          /* entries whose window is retired here */
	uint64_t dropped_future_window;           /* journal or stream entries whose window begins past now + the skew
						     tolerance (fleet_skew_ms()): a clock that far ahead, or forged */
	uint64_t dropped_foreign_shape;           /* entries refused: another shape */
	uint64_t missed;                          /* adds journalled nowhere (no free ring) */
	uint64_t lost;                            /* entries the drain skipped (dead owner, damage) */
	uint64_t malformed;                       /* stream entries refused: unknown version, bad fields */
	uint64_t own;                             /* this node's stream entries skipped */
	uint64_t refused[REPL_REFUSED_KINDS];     /* stream entries refused, by kind (enum repl_refused) */
	uint64_t repairs;                         /* self-repairs done (docs/fleet.md, "Self-repair") */
	uint64_t repair_last_ms;                  /* the last one's time */
	uint64_t repair_last_bytes;               /* the bytes it moved */
	uint64_t repair_bytes;                    /* moved by every one */
	uint64_t repair_refused;                  /* peers refused: another shape or seed */
	uint64_t repair_notices;                  /* other nodes said they lost adds */
	uint64_t peers_unverified;                /* announcements that did not verify (the engine's) */
	char repair_peer[FLEET_NODE_MAX + 1];     /* the last repair's peer */
	char last_error[REPL_ERROR_MAX];          /* why it is disconnected or diverged; "" if nothing */
	char last_refused[REPL_ERROR_MAX];        /* why the last entry refused (refused_*) was; "" if none */
	char redis[REPL_ADDRESS_MAX + 16];        /* the Redis the sender connected to last ("" before) */
	char redis_found[REPL_ADDRESS_MAX + 160]; /* how: "redis =", or "sentinel HOST:PORT, master NAME" */
	unsigned nnodes;
	struct repl_node_stats nodes[REPL_NODES_MAX];
};

struct replication;

/**
 * Start the engine for registry @p r: installs the registry's hooks (and
 * r->repl), registers every live replicated filter, starts both threads.
 * Does not touch the network itself: a Redis that is down is the
 * threads' to retry. @return 0, or -errno (threads, memory) with @p err.
 */
int replication_start(struct replication **out, const struct repl_config *cfg, struct registry *r, char *err,
		      size_t errlen);

/** Stop both threads (within about a second: one XREAD BLOCK), remove the hooks, free. NULL is ignored. */
void replication_stop(struct replication *e);

/** A descriptor that becomes readable when the engine wants replication_tick() soon (read it to clear). */
int replication_wake_fd(const struct replication *e);

/**
 * From the main loop: the rotations the follower asked for. A node whose
 * clock is ahead sends entries of the next window first; within the skew
 * tolerance of that window's boundary (fleet_skew_ms(): min(30 s, a
 * quarter of the window)) this node then starts that window at once
 * (registry_rotate_to()), so that the entries land in the generation of
 * their window, not in the one before it. Entries of a window further
 * ahead are dropped and counted (dropped_future_window), never waited for.
 */
void replication_tick(struct replication *e, struct registry *r);

/**
 * Stats of the replicated filter in @p slot.
 * @return 0, or SHMF_E_NOTFOUND (it does not replicate).
 */
int replication_stats(struct replication *e, int slot, struct repl_filter_stats *out);

/**
 * The filter in @p slot was repaired (SHMF.MERGE, a pull): clear its
 * diverged state; the follower checks it against the stream again within
 * a second.
 */
void replication_repaired(struct replication *e, int slot);

#endif
