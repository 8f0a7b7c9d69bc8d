/*
 * engine.h - the fleet engine's insides, shared by its files and by
 * nothing else (the rest of shmd sees replication.h):
 *
 *   replication.c  the list of replicated filters and the registry's hooks,
 *                  the main loop's side (rotations asked for, stats), start
 *                  and stop
 *   redis-conn.c   the threads' Redis connections: connect, AUTH, backoff,
 *                  the connection state and its log; the engine's clocks
 *   sender.c       the sender thread: journals drained into signed XADDs
 *   confirm.c      when a batch counts as sent (XADD taken, WAIT N met); a
 *                  batch not confirmed sent again with its own sequence
 *   sentinel.c     the master found through Sentinel; the watcher thread,
 *                  which follows +switch-master
 *   follower.c     the follower thread: XREAD, apply, the cursor, XINFO
 *   entry.c        a stream entry read and judged: its fields, its tags,
 *                  its sender's sequence; what is refused, counted, logged
 *   peers.c        announcements: this node's listener published in Redis,
 *                  sealed with the fleet's key; the others' read, verified
 *   repair.c       the repair thread: a filter that lacks entries ORs a
 *                  peer's copy in (Bloom), or takes it (cuckoo, if pull)
 *
 * Lock: e->lock guards the list, every filter's fields marked "lock"
 * below, the connection states and the stop flag. Each thread owns the
 * fields marked with its name and touches them without the lock; a
 * filter is freed (its reader and handle closed) only once no thread
 * holds a reference on it.
 */
#ifndef SHMD_FLEET_ENGINE_H
#define SHMD_FLEET_ENGINE_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "common/fleet-auth.h"
#include "common/fleet.h"
#include "libclient/journal.h"
#include "shmd/config/config.h"
#include "shmd/fleet/repl-types.h"
#include "shmd/store/registry.h"

#define XREAD_COUNT         256     /* stream entries per stream per XREAD */
#define XREAD_BLOCK_MS      1000    /* how long an XREAD waits for news */
#define SEND_BUSY_NS        1000000 /* sender: next round after a round that sent something */
#define SEND_IDLE_NS        2000000 /* sender: next round after an idle one */
#define HOLD_PAUSE_NS       5000000 /* follower: between rounds while an entry waits for a rotation */
#define HOLD_MAX_MS         2000    /* an entry waits that long for its window at most */
#define BACKOFF_MIN_MS      100
#define BACKOFF_MAX_MS      5000
#define LOG_EVERY_MS        30000 /* the same complaint at most this often */
#define CHECK_EVERY_MS      1000  /* XINFO STREAM of each filter */
#define RECLAIM_EVERY_MS    1000  /* the drain asks whether ring owners live */
#define LAG_SAMPLES         8192  /* per filter: the newest samples, of which the last minute counts */
#define LAG_WINDOW_MS       60000
#define STREAM_RETRY_MS     1000  /* a stream Redis refuses: tried again this often, the others go on */
#define ANNOUNCE_EVERY_MS   10000 /* sender: this node's announcement written, the others' read */
#define NOTICE_EVERY_MS     1000  /* sender: a journal overflow told the others at most this often */
#define REPAIR_RETRY_MIN_MS 500   /* a repair that found no peer, or failed: tried again after */
#define REPAIR_RETRY_MAX_MS 30000
#define REPAIR_TRIES        5 /* dumps begun again when the peer's filter changed during one */
/* WAIT replicas_wait's timeout, then WAIT again: Redis 7.0 now and then
 * answers a WAIT only at the replica's next periodic ACK (up to 1 s: 1 of
 * 3,000 pipelined XADD + WAIT on loopback); asked again, it asks the
 * replicas again. Said (waiting-replicas, logged) once short this long. */
#define REPLICAS_WAIT_MS     100
#define REPLICAS_WAIT_SAY_MS 1000

/* The engine's threads; the first two have a connection state (up[], error[]). */
enum { T_SENDER, T_FOLLOWER, T_WATCHER, T_THREADS };
extern const char *const repl_thread_name[2];

struct node_seen {
	char name[FLEET_NODE_MAX + 1];
	uint64_t heard_ms; /* CLOCK_MONOTONIC */
	int foreign;
};

/* Another node's announcement, verified (peers.c). */
struct peer_addr {
	char node[FLEET_NODE_MAX + 1];
	char host[REPL_ADDRESS_MAX];
	int port;
	char user[128];
	char password[TCP_PASSWORD_MAX + 1];
	uint64_t at_ms; /* its wall clock when it announced */
};

struct lag_sample {
	uint64_t at_ms; /* CLOCK_MONOTONIC */
	uint64_t lag_ms;
};

struct rfilter {
	/* lock */
	int refs;               /* the list's, and each thread's for its round */
	int live;               /* 0 once dropped or no longer replicated: its slot is not ours */
	uint64_t epoch;         /* bumped by every publication of the slot (a swap or restore may set a cursor) */
	uint64_t shape;         /* fleet_shape() of the slot's filter */
	int type;               /* the slot's filter's SHMF_TYPE_* */
	uint64_t want_window;   /* a rotation the follower asks the main loop for; 0: none */
	struct fleet_id stored; /* the cursor the follower stored last */
	uint64_t sent, applied, retired, foreign, malformed, own, failed;
	uint64_t ahead; /* entries dropped: their window begins past now + the skew tolerance */
	uint64_t refused[REPL_REFUSED_KINDS];
	uint64_t depth, jfull, missed, lost;
	int diverged, catching_up;
	/* self-repair (lock) */
	int repair_want;                      /* this filter lacks entries: repair it */
	char repair_from[FLEET_NODE_MAX + 1]; /* from that node (it told us it lost adds); "": any peer */
	int repairing;                        /* the repair thread is at it */
	uint64_t repairs;                     /* repairs done */
	uint64_t repair_last_ms;              /* how long the last one took */
	uint64_t repair_last_bytes;           /* what it moved */
	uint64_t repair_bytes;                /* moved by every repair */
	uint64_t repair_refused;              /* peers refused: another shape or seed */
	uint64_t notices;                     /* other nodes said they lost adds */
	char repair_peer[FLEET_NODE_MAX + 1]; /* the last repair's peer */
	char repair_error[REPL_ERROR_MAX];    /* why the last try failed; "" if it did not */
	char why[REPL_ERROR_MAX];             /* what diverged means here and what to do */
	char last_refused[REPL_ERROR_MAX];    /* why the last refused entry was; "" if none */
	char send_error[REPL_ERROR_MAX];      /* why Redis refuses this stream's XADDs; "" if it takes them */
	char follow_error[REPL_ERROR_MAX];    /* why this stream cannot be read (not a stream); "" if it can */
	struct lag_sample lag[LAG_SAMPLES];
	unsigned lag_next, lag_n;
	struct node_seen nodes[REPL_NODES_MAX];
	unsigned nnodes;

	/* set at registration, then read-only */
	int slot;
	char name[SHMF_NAME_MAX + 1];
	char stream[REPL_PREFIX_MAX + SHMF_NAME_MAX + 1];

	/* sender */
	struct shmf_journal_reader *reader;
	int reader_err;         /* the last open's error, logged once */
	uint64_t overflow_seen; /* jfull + missed + lost when last logged */
	uint64_t overflow_log_ms;
	uint64_t ahead_log_ms; /* journal entries of a window ahead, last logged */
	uint64_t sent_seq;     /* the last sequence used (loaded from the slot once) */
	int sent_loaded;
	uint64_t send_retry_ms; /* Redis refused this stream's XADDs: not before then again */
	uint64_t send_err_log_ms;
	uint64_t notice_sent; /* jfull + missed + lost when the others were last told */
	uint64_t notice_ms;
	/* repair thread */
	uint64_t repair_next_ms; /* not before then (CLOCK_MONOTONIC) */
	uint64_t repair_backoff_ms;
	struct unconfirmed *pend; /* a batch sent but not confirmed: sent again first (confirm.c); NULL: none */
	uint32_t *confirmed;      /* per ring: entries at its head confirmed, to be consumed unsent */
	uint32_t nconfirmed;      /* rings in confirmed[] */
	/* follower */
	shmf_t *apply;
	int apply_err;
	uint64_t hold_since_ms; /* an entry waits for its window's rotation since; 0: none */
	uint64_t hold_gave_up;  /* the window waited for in vain: not waited for again */
	uint64_t check_ms;      /* last XINFO STREAM */
	uint64_t foreign_log_ms;
	uint64_t ahead_from_log_ms;                     /* stream entries of a window ahead, last logged */
	uint64_t refused_log_ms[REPL_REFUSED_KINDS];    /* each kind of refusal, last logged */
	struct shmf_fleet_peer peers[SHMF_FLEET_PEERS]; /* the senders' last sequences, as of what was applied */
	uint64_t floor;                                 /* a sender not in peers[] must be above this */
	int peers_loaded;                               /* peers[] and floor are the slot's (as of the cursor) */
	int unreadable;                                 /* left out of XREAD: its key is not a stream */
	char run_id[48];                                /* Redis' run_id when the stream was last checked */
};

struct replication {
	struct repl_config cfg;
	char run_id[48];      /* follower: Redis' run_id (INFO server) on its connection */
	struct fleet_key key; /* the MAC key, derived from cfg.secret */
	uint64_t self_id;     /* fleet_node_id(cfg.node) */
	struct registry *reg;
	char retention[24];
	int wake_fd;
	pthread_t thread[T_THREADS];
	int started[T_THREADS];
	uint64_t serial[2]; /* each thread's: bumped by every connection it makes */

	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC; signalled on stop and on list changes */
	/* lock */
	int stop;
	struct rfilter **list;
	size_t n, cap;
	int up[2];                             /* the thread's connection works */
	char error[2][REPL_ERROR_MAX];         /* why it does not */
	char logged[2][REPL_ERROR_MAX];        /* the failure logged last */
	uint64_t error_log_ms[2];              /* when */
	int said_down[2];                      /* a failure was logged since the last "connected" */
	char addr[2][REPL_ADDRESS_MAX + 16];   /* the Redis each thread connected to last */
	char found[2][REPL_ADDRESS_MAX + 160]; /* how: "redis =", or the sentinel and master name */
	int kick_fd[2];                        /* Sentinel: the thread's socket, for kick() (sentinel.c); -1 */
	unsigned sentinel_next;                /* the sentinel asked first: the one that answered last */
	char wait_why[REPL_ERROR_MAX];         /* sender: why WAIT fell short; "": it did not */
	uint64_t wait_log_ms;
	uint64_t wait_short_ms;                 /* sender: WAIT short since (mono); 0: it is met */
	struct peer_addr peers[REPL_NODES_MAX]; /* the others' verified announcements */
	unsigned npeers;
	uint64_t announce_refused; /* announcements that did not verify */
	int peers_wanted;          /* the repair thread wants them read again */

	/* sender */
	uint64_t announce_ms; /* last announced (CLOCK_MONOTONIC) */
	char announce_log[REPL_ERROR_MAX];
	/* the repair thread */
	pthread_t repair_thread;
	int repair_started;
};

/* A round's copy of the list, each filter referenced. */
struct round {
	struct rfilter *f[SHMF_SLOTS];
	size_t n;
};

/* ---- replication.c ---- */
void round_take(struct replication *e, struct round *rd);
/* A thread's next round: 0 when the engine is stopping (nothing taken),
 * else 1 with the filters taken as round_take() takes them. */
int round_next(struct replication *e, struct round *rd);
void round_release(struct replication *e, struct round *rd);

/* ---- redis-conn.c ---- */
uint64_t mono_ms(void);
uint64_t wall_ms(void); /* Redis' stream ids are wall-clock milliseconds */
uint64_t wall_us(void);
/* Wait on the condition for @p ns at most, or until stop. Under lock. 1 if stopping. */
int nap_locked(struct replication *e, uint64_t ns);
int nap(struct replication *e, uint64_t ns);
/* The next backoff after @p backoff (0: none yet), milliseconds. */
uint64_t backoff_next(uint64_t backoff);
/* Record the state of thread @p t's connection; log changes, and the same
 * failure again at most every LOG_EVERY_MS. */
void conn_state(struct replication *e, int t, int up, const char *why);
/* Connect, or wait the backoff out. The connection, or NULL (also when stopping). */
redisContext *redis_connect(struct replication *e, int t, uint64_t *backoff);
/* A connection to the Redis at @p host, @p port (0: a unix socket) with
 * AUTH done, or NULL with the reason in @p why. */
redisContext *redis_open_at(struct replication *e, const char *host, int port, char *why, size_t whylen);

/* ---- sentinel.c ---- */
/* Ask the sentinels for the master, connect to it and check its ROLE; the
 * address and how it was found into e->addr[t], e->found[t]. The
 * connection, or NULL with every sentinel's answer in @p why. */
redisContext *sentinel_open(struct replication *e, int t, char *why, size_t len);
/* Thread @p t's connection is @p c now (NULL: none): the watcher may cut it. */
void sentinel_hold(struct replication *e, int t, const redisContext *c);
void *watcher_main(void *arg);

/* ---- confirm.c ---- */
/* Queue an XADD of batch @p buf (@p len bytes) with sequence @p seq and
 * the tags. 0, or -EIO with why. */
int xadd_queue(struct replication *e, redisContext *c, const char *stream, uint64_t shape, uint64_t seq,
	       const unsigned char *buf, size_t len, char *why, size_t wl);
/* Queue WAIT replicas_wait REPLICAS_WAIT_MS when replicas_wait is set: 1
 * queued, 0 not set, -EIO. */
int wait_queue(struct replication *e, redisContext *c);
/* Read the replies of @p pending XADDs and of the WAIT after them
 * (@p waited). 0: taken and confirmed; -EPROTO: Redis refused the stream
 * (why says why); -EAGAIN: taken, WAIT fell short (e->wait_why); -EIO:
 * the connection failed, or the master is a replica now. */
int confirm_replies(struct replication *e, redisContext *c, const char *stream, size_t pending, int waited, char *why,
		    size_t wl);
/* Entries at the head of ring @p ring (of the @p n drained) confirmed already: to skip. */
size_t confirm_skip(struct rfilter *f, unsigned ring, size_t n);
/* Ring @p ring's drained entries are consumed now. */
void confirm_done(struct rfilter *f, unsigned ring);
/* The batch just queued (from ring @p ring's @p n entries, after the
 * skipped ones) was not confirmed: kept, to go again as it is. */
void confirm_keep(struct rfilter *f, unsigned ring, size_t n, uint64_t sent, uint64_t ahead, uint64_t seq,
		  uint64_t shape, const unsigned char *buf, size_t len, uint64_t serial);
/* Before filter @p f's drain: its batch not confirmed, sent again on a
 * new connection (connection @p serial), or waited for again on the same.
 * 0: none left; -EAGAIN: WAIT still short; -EPROTO, -EIO as confirm_replies(). */
int confirm_settle(struct replication *e, redisContext *c, uint64_t serial, struct rfilter *f, char *why, size_t wl);
void confirm_free(struct rfilter *f);
/* The value of field @p name in a flat array of field, value; NULL if absent. */
const redisReply *reply_field(const redisReply *fields, const char *name);

/* ---- sender.c, follower.c ---- */
/* Why Redis refused stream @p stream (error reply @p err), with what to do,
 * into @p out: the largest id, another type at its name, or @p err. */
void stream_refusal(const char *stream, const char *err, char *out, size_t len);
void *sender_main(void *arg);
void *follower_main(void *arg);
/* The window length of filter @p f's slot (0: no window, or the slot is
 * not f's any more: then nothing is judged by window). */
uint64_t window_secs_of(struct replication *e, const struct rfilter *f, struct shmf_slot *copy);

/* ---- stream-check.c ---- */
/* Redis' run_id (INFO server) into @p out. 0, or -EIO (the connection failed). */
int redis_run_id(redisContext *c, char *out, size_t len);
/* TYPE of filter @p f's stream: 1 if the key is something else than a
 * stream (f->unreadable and follow_error set, logged), 0 if a stream or
 * none (cleared), -EIO if the connection failed. */
int stream_unreadable(struct replication *e, redisContext *c, struct rfilter *f);
/* XINFO STREAM of filter @p f against cursor @p cur (read at epoch @p
 * epoch): diverged, with the cause, when the stream lost entries this
 * node has not applied; a stream gone or made anew is read again from
 * 0-0. 0, or -EIO (the connection failed). */
int stream_check(struct replication *e, redisContext *c, struct rfilter *f, struct fleet_id cur, uint64_t epoch);

/* ---- peers.c ---- */
/* Announce this node and read the others' announcements, every
 * ANNOUNCE_EVERY_MS or when the repair thread wants them (sender). -EIO if
 * the connection failed, else 0. */
int peers_refresh(struct replication *e, redisContext *c);

/* ---- repair.c ---- */
/* Filter @p f lacks entries: repair it from node @p from (NULL: any
 * peer), if auto_repair says so for its type. Under lock. @return 1 if a
 * repair is wanted, 0 if auto_repair leaves it to an operator. */
int repair_want_locked(struct replication *e, struct rfilter *f, const char *from, size_t fromlen);
void *repair_main(void *arg);

/* ---- entry.c ---- */

/* The fields of a stream entry, or NULL where one is missing or not a string. */
struct entry_fields {
	const redisReply *version, *node, *shape, *seq, *batch, *mac;
	uint64_t their_shape, seqno;
};

/* What the follower does with a stream entry. */
enum entry_verdict {
	ENTRY_APPLY,     /* a member's, of our shape, not seen before: apply its batch */
	ENTRY_OWN,       /* this node's own: skip */
	ENTRY_FOREIGN,   /* a member's, of another shape: refuse (dropped_foreign_shape) */
	ENTRY_MALFORMED, /* unknown version, a field missing or bad: skip (malformed) */
	ENTRY_REFUSED,   /* forged, altered, replayed, impersonating or unsigned: refused[kind] */
};

/**
 * Read and judge stream entry @p fields of filter @p f against @p shape
 * (ours): its version and fields, its tags, its sender's sequence. A
 * refusal is logged (at most every LOG_EVERY_MS per kind and filter) and
 * its kind stored in *kind. Changes nothing.
 */
enum entry_verdict entry_judge(struct replication *e, struct rfilter *f, const redisReply *fields, uint64_t shape,
			       struct entry_fields *ef, int *kind);

/** The sender of @p ef has been dealt with up to its sequence: remember it (follower). */
void entry_seen(struct replication *e, struct rfilter *f, const struct entry_fields *ef);

#endif
