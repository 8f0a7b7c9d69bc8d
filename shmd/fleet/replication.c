/*
 * replication.c - the fleet engine (replication.h): the list of
 * replicated filters, the sender and follower threads, their Redis
 * connections, and what SHMF.REPLICATION reports.
 *
 * Lock: e->lock guards the list, every filter's fields marked "lock"
 * below, the connection states and the stop flag. Each thread owns the
 * fields marked with its name and touches them without the lock; a
 * filter is freed (its reader and handle closed) only once no thread
 * holds a reference on it.
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "libclient/journal.h"
#include "shmd/base/log.h"
#include "shmd/fleet/replication.h"

#define XREAD_COUNT      256     /* stream entries per stream per XREAD */
#define XREAD_BLOCK_MS   1000    /* how long an XREAD waits for news */
#define SEND_BUSY_NS     1000000 /* sender: next round after a round that sent something */
#define SEND_IDLE_NS     2000000 /* sender: next round after an idle one */
#define HOLD_PAUSE_NS    5000000 /* follower: between rounds while an entry waits for a rotation */
#define HOLD_MAX_MS      2000    /* an entry waits that long for its window at most */
#define BACKOFF_MIN_MS   100
#define BACKOFF_MAX_MS   5000
#define LOG_EVERY_MS     30000 /* the same complaint at most this often */
#define CHECK_EVERY_MS   1000  /* XINFO STREAM of each filter */
#define RECLAIM_EVERY_MS 1000  /* the drain asks whether ring owners live */
#define LAG_SAMPLES      8192  /* per filter: the newest samples, of which the last minute counts */
#define LAG_WINDOW_MS    60000

enum { T_SENDER, T_FOLLOWER };
static const char *const thread_name[] = { "sender", "follower" };

struct node_seen {
	char name[FLEET_NODE_MAX + 1];
	uint64_t heard_ms; /* CLOCK_MONOTONIC */
	int foreign;
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
	uint64_t want_window;   /* a rotation the follower asks the main loop for; 0: none */
	struct fleet_id stored; /* the cursor the follower stored last */
	uint64_t sent, applied, retired, foreign, malformed, own, failed;
	uint64_t ahead; /* entries dropped: their window begins past now + the skew tolerance */
	uint64_t depth, jfull, missed, lost;
	int diverged, catching_up;
	char why[REPL_ERROR_MAX]; /* what diverged means here and what to do */
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
	/* follower */
	shmf_t *apply;
	int apply_err;
	uint64_t hold_since_ms; /* an entry waits for its window's rotation since; 0: none */
	uint64_t hold_gave_up;  /* the window waited for in vain: not waited for again */
	uint64_t check_ms;      /* last XINFO STREAM */
	uint64_t foreign_log_ms;
	uint64_t ahead_from_log_ms; /* stream entries of a window ahead, last logged */
};

struct replication {
	struct repl_config cfg;
	struct registry *reg;
	char addr[REPL_ADDRESS_MAX + 16]; /* for messages */
	char retention[24];
	int wake_fd;
	pthread_t thread[2];
	int started[2];

	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC; signalled on stop and on list changes */
	/* lock */
	int stop;
	struct rfilter **list;
	size_t n, cap;
	int up[2];                      /* the thread's connection works */
	char error[2][REPL_ERROR_MAX];  /* why it does not */
	char logged[2][REPL_ERROR_MAX]; /* the failure logged last */
	uint64_t error_log_ms[2];       /* when */
	int said_down[2];               /* a failure was logged since the last "connected" */
};

/* ---- time ---------------------------------------------------------------- */

static uint64_t clock_ms(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

/* Stream ids are Redis' wall-clock milliseconds. */
static uint64_t wall_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

/* Wait on the condition for @p ns at most, or until stop. Under lock. 1 if stopping. */
static int nap_locked(struct replication *e, uint64_t ns)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t t = (uint64_t)ts.tv_nsec + ns;
	ts.tv_sec += (time_t)(t / 1000000000u);
	ts.tv_nsec = (long)(t % 1000000000u);
	if (!e->stop)
		pthread_cond_timedwait(&e->cond, &e->lock, &ts);
	return e->stop;
}

static int nap(struct replication *e, uint64_t ns)
{
	pthread_mutex_lock(&e->lock);
	int stop = nap_locked(e, ns);
	pthread_mutex_unlock(&e->lock);
	return stop;
}

/* ---- the list ------------------------------------------------------------ */

static void filter_free(struct rfilter *f)
{
	if (f->reader != NULL)
		shmf_journal_reader_close(f->reader);
	if (f->apply != NULL)
		shmf_close(f->apply);
	free(f);
}

/* Drop a reference; the caller frees what this returns (outside the lock). */
static struct rfilter *unref_locked(struct rfilter *f)
{
	return --f->refs == 0 ? f : NULL;
}

static struct rfilter *find_locked(struct replication *e, int slot)
{
	for (size_t i = 0; i < e->n; i++)
		if (e->list[i]->slot == slot)
			return e->list[i];
	return NULL;
}

/* Take the filter out of the list (it is no longer replicated or live). */
static struct rfilter *forget_locked(struct replication *e, int slot)
{
	for (size_t i = 0; i < e->n; i++) {
		if (e->list[i]->slot != slot)
			continue;
		struct rfilter *f = e->list[i];
		e->list[i] = e->list[--e->n];
		f->live = 0;
		return unref_locked(f);
	}
	return NULL;
}

/* A round's copy of the list, each filter referenced. */
struct round {
	struct rfilter *f[SHMF_SLOTS];
	size_t n;
};

static void round_take(struct replication *e, struct round *rd)
{
	pthread_mutex_lock(&e->lock);
	rd->n = e->n;
	for (size_t i = 0; i < e->n; i++) {
		rd->f[i] = e->list[i];
		rd->f[i]->refs++;
	}
	pthread_mutex_unlock(&e->lock);
}

static void round_release(struct replication *e, struct round *rd)
{
	struct rfilter *dead[SHMF_SLOTS];
	size_t nd = 0;
	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < rd->n; i++)
		if ((dead[nd] = unref_locked(rd->f[i])) != NULL)
			nd++;
	pthread_mutex_unlock(&e->lock);
	for (size_t i = 0; i < nd; i++)
		filter_free(dead[i]);
	rd->n = 0;
}

/* registry hook: a slot was published (created, rotated, swapped, restored, made replicated). */
static void on_published(void *arg, struct registry *r, int slot)
{
	struct replication *e = arg;
	struct shmf_slot copy;
	uint64_t seed = 0;
	int replicated = shmf_slot_read(&r->ctl.slots[slot], &copy) == 0 && (copy.flags & SHMF_SLOT_REPLICATED) &&
			 registry_seed(r, slot, &seed) == 0;
	struct rfilter *dead = NULL;
	pthread_mutex_lock(&e->lock);
	struct rfilter *f = find_locked(e, slot);
	if (f != NULL && (!replicated || strcmp(f->name, copy.name) != 0)) {
		dead = forget_locked(e, slot);
		f = NULL;
	}
	if (replicated) {
		if (f == NULL && e->n < SHMF_SLOTS && (f = calloc(1, sizeof(*f))) != NULL) {
			f->refs = 1;
			f->live = 1;
			f->slot = slot;
			snprintf(f->name, sizeof(f->name), "%s", copy.name);
			snprintf(f->stream, sizeof(f->stream), "%s%s", e->cfg.stream_prefix, copy.name);
			registry_cursor_get(r, slot, &f->stored.ms, &f->stored.seq);
			e->list[e->n++] = f;
			log_msg(LOG_INFO, "filter '%s': replicating through stream %s (node %s)", f->name, f->stream,
				e->cfg.node);
		} else if (f == NULL) {
			log_msg(LOG_ERR, "filter '%s': out of memory; it does not replicate until shmd restarts",
				copy.name);
		}
		if (f != NULL) {
			uint64_t shape = fleet_shape(&copy, seed);
			/* A swap or restore from a file of another seed (made
			 * without the fleet's secret): say why the others refuse. */
			if (shape != f->shape && seed != fleet_seed(e->cfg.secret, copy.name))
				log_msg(LOG_WARNING,
					"filter '%s': its hash seed is not the fleet's (the filter or its snapshot was "
					"made without this secret): every other node will refuse its entries as a "
					"foreign shape",
					copy.name);
			f->epoch++;
			f->shape = shape;
		}
	}
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
	if (dead != NULL)
		filter_free(dead);
}

/* registry hook: the slot is about to be unpublished. Once this returns,
 * no thread stores a cursor into it. */
static void on_dropping(void *arg, struct registry *r, int slot)
{
	(void)r;
	struct replication *e = arg;
	pthread_mutex_lock(&e->lock);
	struct rfilter *dead = forget_locked(e, slot);
	pthread_mutex_unlock(&e->lock);
	if (dead != NULL)
		filter_free(dead);
}

/* ---- Redis ---------------------------------------------------------------- */

/* Record the state of thread @p t's connection; log changes, and the same
 * failure again at most every LOG_EVERY_MS. */
static void conn_state(struct replication *e, int t, int up, const char *why)
{
	pthread_mutex_lock(&e->lock);
	uint64_t now = mono_ms();
	e->up[t] = up;
	if (up) {
		/* Said once after each failure that was said: a connection that
		 * comes and goes does not fill the log. */
		if (e->said_down[t])
			log_msg(LOG_NOTICE, "replication: %s connected to Redis at %s", thread_name[t], e->addr);
		e->said_down[t] = 0;
	} else {
		if (strcmp(e->logged[t], why) != 0 || now - e->error_log_ms[t] >= LOG_EVERY_MS) {
			e->error_log_ms[t] = now;
			e->said_down[t] = 1;
			snprintf(e->logged[t], sizeof(e->logged[t]), "%s", why);
			log_msg(LOG_WARNING,
				"replication: %s: Redis at %s: %s; disconnected, retrying (adds go on locally and "
				"wait in the journals)",
				thread_name[t], e->addr, why);
		}
		snprintf(e->error[t], sizeof(e->error[t]), "%s", why);
	}
	pthread_mutex_unlock(&e->lock);
}

/* A connection with AUTH done, or NULL with the reason in @p why. */
static redisContext *redis_open(struct replication *e, char *why, size_t whylen)
{
	struct timeval tv = { .tv_sec = 2 };
	const struct repl_config *c = &e->cfg;
	redisContext *rc = c->port ? redisConnectWithTimeout(c->host, c->port, tv)
				   : redisConnectUnixWithTimeout(c->host, tv);
	if (rc == NULL || rc->err) {
		snprintf(why, whylen, "cannot connect: %s", rc ? rc->errstr : "out of memory");
		if (rc != NULL)
			redisFree(rc);
		return NULL;
	}
	/* Longer than an XREAD BLOCK, so that a stalled Redis is noticed. */
	struct timeval op = { .tv_sec = 5 };
	redisSetTimeout(rc, op);
	if (c->port != 0)
		redisEnableKeepAlive(rc);
	/* AUTH when configured, else PING: the connection is up once Redis
	 * has answered a command. */
	redisReply *r = c->password[0] == '\0' ? redisCommand(rc, "PING")
			: c->user[0]           ? redisCommand(rc, "AUTH %s %s", c->user, c->password)
					       : redisCommand(rc, "AUTH %s", c->password);
	if (r == NULL || r->type == REDIS_REPLY_ERROR) {
		if (c->password[0] != '\0' && r != NULL)
			snprintf(why, whylen, "AUTH refused: %s (check password and user in [replication])", r->str);
		else
			snprintf(why, whylen, "%s", r ? r->str : rc->errstr[0] ? rc->errstr : "no reply");
		if (r != NULL)
			freeReplyObject(r);
		redisFree(rc);
		return NULL;
	}
	freeReplyObject(r);
	return rc;
}

/* Connect, or wait the backoff out. The connection, or NULL (also when stopping). */
static redisContext *redis_connect(struct replication *e, int t, uint64_t *backoff)
{
	char why[REPL_ERROR_MAX];
	redisContext *c = redis_open(e, why, sizeof(why));
	if (c != NULL) {
		*backoff = 0;
		conn_state(e, t, 1, "");
		return c;
	}
	conn_state(e, t, 0, why);
	*backoff = *backoff == 0 ? BACKOFF_MIN_MS : *backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : *backoff * 2;
	nap(e, *backoff * 1000000);
	return NULL;
}

/* ---- the sender ----------------------------------------------------------- */

struct xadd {
	struct replication *e;
	struct rfilter *f;
	redisContext *c;
	char shape[17];
	struct shmf_jentry kept[FLEET_BATCH_MAX];
	unsigned char buf[FLEET_BATCH_MAX * FLEET_ENTRY_BYTES];
	char why[REPL_ERROR_MAX];
};

/* The window length of filter @p f's slot (0: no window, or the slot is
 * not f's any more: then nothing is judged by window). */
static uint64_t window_secs_of(struct replication *e, const struct rfilter *f, struct shmf_slot *copy)
{
	if (shmf_slot_read(&e->reg->ctl.slots[f->slot], copy) < 0 || strcmp(copy->name, f->name) != 0)
		return 0;
	return copy->window_secs;
}

/* Journal entries whose window begins past now + the skew tolerance were
 * written by no honest adder here (this node's newest window is at most
 * the next one, started early within the tolerance): a local writer
 * forged them. Logged at most every LOG_EVERY_MS. */
static void log_ahead_journal(struct rfilter *f, uint64_t n, uint64_t window, uint64_t secs)
{
	uint64_t now = mono_ms();
	if (f->ahead_log_ms != 0 && now - f->ahead_log_ms < LOG_EVERY_MS)
		return;
	f->ahead_log_ms = now;
	log_msg(LOG_WARNING,
		"filter '%s': dropped %" PRIu64 " journal entries of window %" PRIu64
		", which begins more than %" PRIu64 " ms (the skew tolerance) after this node's clock: written into "
		"the journal by a local writer, not by an add; not sent",
		f->name, n, window, fleet_skew_ms(secs));
}

/* Drain callback: XADD the entries (pipelined, FLEET_BATCH_MAX a stream
 * entry), except those of a window ahead of the clock (dropped, counted);
 * 0 only once Redis took every one of them. */
static int send_entries(void *arg, unsigned ring, const struct shmf_jentry *ent, size_t n)
{
	(void)ring;
	struct xadd *x = arg;
	struct replication *e = x->e;
	struct shmf_slot copy;
	uint64_t secs = window_secs_of(e, x->f, &copy), now = wall_ms(), ahead = 0, ahead_window = 0;
	size_t pending = 0, m = 0;
	for (size_t i = 0; i < n; i++) {
		if (fleet_window_ahead(ent[i].window, secs, now)) {
			ahead++;
			ahead_window = ent[i].window;
		} else {
			x->kept[m++] = ent[i];
		}
		if (m < FLEET_BATCH_MAX && !(i + 1 == n && m > 0))
			continue;
		size_t len = fleet_batch_encode(x->kept, m, x->buf);
		m = 0;
		const char *argv[] = {
			"XADD",          x->f->stream,         "MAXLEN",     "~",         e->retention,  "*",
			FLEET_F_VERSION, FLEET_STREAM_VERSION, FLEET_F_NODE, e->cfg.node, FLEET_F_SHAPE, x->shape,
			FLEET_F_BATCH,   (const char *)x->buf
		};
		size_t lens[14];
		for (int j = 0; j < 13; j++)
			lens[j] = strlen(argv[j]);
		lens[13] = len;
		if (redisAppendCommandArgv(x->c, 14, argv, lens) != REDIS_OK) {
			snprintf(x->why, sizeof(x->why), "XADD %s: %s", x->f->stream, x->c->errstr);
			return -EIO;
		}
		pending++;
	}
	int ok = 1;
	for (size_t i = 0; i < pending; i++) {
		void *p = NULL;
		if (redisGetReply(x->c, &p) != REDIS_OK || p == NULL) {
			snprintf(x->why, sizeof(x->why), "XADD %s: %s", x->f->stream,
				 x->c->errstr[0] ? x->c->errstr : "no reply");
			return -EIO;
		}
		redisReply *r = p;
		if (r->type == REDIS_REPLY_ERROR) {
			snprintf(x->why, sizeof(x->why), "XADD %s: %s", x->f->stream, r->str);
			ok = 0;
		}
		freeReplyObject(r);
	}
	if (!ok)
		return -EIO;
	pthread_mutex_lock(&e->lock);
	x->f->sent += n - ahead;
	x->f->ahead += ahead;
	pthread_mutex_unlock(&e->lock);
	if (ahead)
		log_ahead_journal(x->f, ahead, ahead_window, secs);
	return 0;
}

/* The journal's counters into the filter's stats; an overflow logged. */
static void journal_stats(struct replication *e, struct rfilter *f)
{
	struct shmf_journal_stats js;
	shmf_journal_stats(f->reader, &js, NULL, 0);
	uint64_t over = js.dropped + js.missed + js.lost, now = mono_ms();
	pthread_mutex_lock(&e->lock);
	f->depth = js.depth;
	f->jfull = js.dropped;
	f->missed = js.missed;
	f->lost = js.lost;
	pthread_mutex_unlock(&e->lock);
	if (over > f->overflow_seen && (f->overflow_log_ms == 0 || now - f->overflow_log_ms >= LOG_EVERY_MS)) {
		log_msg(LOG_WARNING,
			"filter '%s': %" PRIu64 " adds never reached the journal (ring full %" PRIu64
			", no ring %" PRIu64 ", lost %" PRIu64
			"): the other nodes lack them; repair with shmctl merge or shmctl pull",
			f->name, over, js.dropped, js.missed, js.lost);
		f->overflow_seen = over;
		f->overflow_log_ms = now;
	}
}

/* Open the filter's journal reader if it has none. 0, or an error (logged once). */
static int reader_ready(struct replication *e, struct rfilter *f)
{
	if (f->reader != NULL)
		return 0;
	int rc = shmf_journal_reader_open(&e->reg->dir, f->name, &f->reader);
	if (rc < 0 && rc != f->reader_err)
		log_msg(LOG_ERR, "filter '%s': cannot open its journal: %s", f->name, shmf_strerror(rc));
	f->reader_err = rc;
	return rc;
}

static void *sender_main(void *arg)
{
	struct replication *e = arg;
	redisContext *c = NULL;
	uint64_t backoff = 0, last_reclaim = 0;
	struct round rd;
	struct xadd *x = malloc(sizeof(*x));
	if (x == NULL) {
		log_msg(LOG_ERR, "replication: sender: out of memory; nothing is sent");
		return NULL;
	}
	for (;;) {
		pthread_mutex_lock(&e->lock);
		int stop = e->stop;
		pthread_mutex_unlock(&e->lock);
		if (stop)
			break;
		round_take(e, &rd);
		if (c == NULL && (c = redis_connect(e, T_SENDER, &backoff)) == NULL) {
			/* Still say how full the journals get. */
			for (size_t i = 0; i < rd.n; i++)
				if (reader_ready(e, rd.f[i]) == 0)
					journal_stats(e, rd.f[i]);
			round_release(e, &rd);
			continue;
		}
		uint64_t now = mono_ms();
		unsigned flags = 0;
		if (now - last_reclaim >= RECLAIM_EVERY_MS) {
			flags = SHMF_JDRAIN_RECLAIM;
			last_reclaim = now;
		}
		long sent = 0;
		int failed = 0;
		for (size_t i = 0; i < rd.n && !failed; i++) {
			struct rfilter *f = rd.f[i];
			if (reader_ready(e, f) < 0)
				continue;
			x->e = e;
			x->f = f;
			x->c = c;
			x->why[0] = '\0';
			pthread_mutex_lock(&e->lock);
			fleet_shape_text(f->shape, x->shape);
			pthread_mutex_unlock(&e->lock);
			int n = shmf_journal_drain(f->reader, send_entries, x, flags);
			journal_stats(e, f);
			if (n < 0)
				failed = 1;
			else
				sent += n;
		}
		round_release(e, &rd);
		if (failed) {
			/* Entries stay in the journal (at-least-once); a new
			 * connection after the backoff sends them. */
			redisFree(c);
			c = NULL;
			conn_state(e, T_SENDER, 0, x->why);
			backoff = backoff == 0                   ? BACKOFF_MIN_MS
				  : backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
								 : backoff * 2;
			nap(e, backoff * 1000000);
			continue;
		}
		nap(e, sent > 0 ? SEND_BUSY_NS : SEND_IDLE_NS);
	}
	if (c != NULL)
		redisFree(c);
	free(x);
	return NULL;
}

/* ---- the follower --------------------------------------------------------- */

static const redisReply *field(const redisReply *fields, const char *name)
{
	for (size_t i = 0; i + 1 < fields->elements; i += 2)
		if (fields->element[i]->type == REDIS_REPLY_STRING && !strcmp(fields->element[i]->str, name))
			return fields->element[i + 1];
	return NULL;
}

static void note_node_locked(struct rfilter *f, const char *node, size_t len, int foreign)
{
	struct node_seen *ns = NULL;
	for (unsigned i = 0; i < f->nnodes && ns == NULL; i++)
		if (strlen(f->nodes[i].name) == len && !memcmp(f->nodes[i].name, node, len))
			ns = &f->nodes[i];
	if (ns == NULL) {
		if (f->nnodes < REPL_NODES_MAX) {
			ns = &f->nodes[f->nnodes++];
		} else {
			/* Forget the one heard from longest ago. */
			ns = &f->nodes[0];
			for (unsigned i = 1; i < f->nnodes; i++)
				if (f->nodes[i].heard_ms < ns->heard_ms)
					ns = &f->nodes[i];
		}
		snprintf(ns->name, sizeof(ns->name), "%.*s", (int)len, node);
	}
	ns->heard_ms = mono_ms();
	ns->foreign = foreign;
}

static void lag_add_locked(struct rfilter *f, uint64_t lag)
{
	f->lag[f->lag_next] = (struct lag_sample){ .at_ms = mono_ms(), .lag_ms = lag };
	f->lag_next = (f->lag_next + 1) % LAG_SAMPLES;
	if (f->lag_n < LAG_SAMPLES)
		f->lag_n++;
}

/* The follower's view of one filter for one round. */
struct follow {
	struct rfilter *f;
	struct fleet_id cursor; /* the slot's when the round began */
	uint64_t epoch;
	int holding; /* an entry waits for a rotation */
};

/* Should the batch @p ent wait for this node to start its window? Only for
 * a windowed filter whose newest generation is older than the batch's
 * newest window, and only while that window begins within the skew
 * tolerance (fleet_skew_ms()) of this node's clock and the batch has not
 * waited HOLD_MAX_MS. The batch holds no entry of a window further ahead
 * (keep_in_window() dropped them), so the window waited for is at most
 * the next one. */
static int must_hold(struct replication *e, struct follow *fw, const struct shmf_jentry *ent, int n)
{
	struct rfilter *f = fw->f;
	struct shmf_slot copy;
	if (window_secs_of(e, f, &copy) == 0)
		return 0;
	uint64_t newest = fleet_window(copy.live_created[0], copy.window_secs), want = 0;
	for (int i = 0; i < n; i++)
		if (ent[i].window > want)
			want = ent[i].window;
	if (want <= newest || fleet_window_ahead(want, copy.window_secs, wall_ms()) || want == f->hold_gave_up) {
		f->hold_since_ms = 0;
		return 0;
	}
	uint64_t now = mono_ms();
	if (f->hold_since_ms == 0)
		f->hold_since_ms = now;
	if (now - f->hold_since_ms > HOLD_MAX_MS) {
		f->hold_gave_up = want;
		log_msg(LOG_WARNING,
			"filter '%s': entries of window %" PRIu64 " waited %d ms for this node to start it; applying "
			"them to window %" PRIu64 " (is this node's clock far behind?)",
			f->name, want, HOLD_MAX_MS, newest);
		f->hold_since_ms = 0;
		return 0;
	}
	pthread_mutex_lock(&e->lock);
	if (f->want_window < want)
		f->want_window = want;
	pthread_mutex_unlock(&e->lock);
	uint64_t one = 1;
	ssize_t ignored = write(e->wake_fd, &one, sizeof(one));
	(void)ignored;
	return 1;
}

/* What one round of follow_entries() counted, added to the filter's
 * counters at its end. */
struct follow_counts {
	uint64_t applied, retired, foreign, malformed, own, failed, ahead;
};

/* The handle the follower applies through: it never journals, so nothing
 * applied is sent back (no echo). Opened on first use. */
static int apply_handle(struct replication *e, struct rfilter *f)
{
	if (f->apply != NULL)
		return 0;
	int rc = shmf_open_internal(e->reg->instance, f->name, SHMF_RDWR | SHMF_OPEN_NOJOURNAL, &f->apply);
	if (rc < 0) {
		if (rc != f->apply_err)
			log_msg(LOG_ERR, "filter '%s': cannot open it to apply other nodes' entries: %s", f->name,
				shmf_strerror(rc));
		f->apply_err = rc;
		f->apply = NULL;
	}
	return rc;
}

/* The fields of a stream entry, or NULL where one is missing or not a string. */
struct entry_fields {
	const redisReply *version, *node, *shape, *batch;
};

/* @return 0 with @p ef and @p their_shape filled if the entry's fields are
 * well formed (this format's version, a node name, a shape, a batch). */
static int entry_fields(const redisReply *fields, struct entry_fields *ef, uint64_t *their_shape)
{
	if (fields->type != REDIS_REPLY_ARRAY)
		return -1;
	*ef = (struct entry_fields){ field(fields, FLEET_F_VERSION), field(fields, FLEET_F_NODE),
				     field(fields, FLEET_F_SHAPE), field(fields, FLEET_F_BATCH) };
	const redisReply *all[] = { ef->version, ef->node, ef->shape, ef->batch };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i] == NULL || all[i]->type != REDIS_REPLY_STRING)
			return -1;
	if (strcmp(ef->version->str, FLEET_STREAM_VERSION) != 0 ||
	    fleet_shape_parse(ef->shape->str, ef->shape->len, their_shape) < 0 || ef->node->len == 0 ||
	    ef->node->len > FLEET_NODE_MAX)
		return -1;
	return 0;
}

/* Drop from @p ent (@p n entries of node @p ef->node) those whose window
 * begins past now + the skew tolerance: a clock further ahead than that,
 * or forged entries (anyone who may XADD to the stream). Acting on one
 * would start a window early (retiring the generations it pushes out of
 * the ring, keys just added with them) or put its key in a generation of
 * another window. @return the entries kept, moved to the front; *ahead
 * the entries dropped, which the caller counts once it moves past the
 * stream entry (a held entry is judged again). */
static int keep_in_window(struct replication *e, struct rfilter *f, const struct entry_fields *ef,
			  struct shmf_jentry *ent, int n, uint64_t *ahead)
{
	struct shmf_slot copy;
	uint64_t secs = window_secs_of(e, f, &copy), now = wall_ms(), window = 0;
	int m = 0;
	*ahead = 0;
	for (int i = 0; i < n; i++) {
		if (fleet_window_ahead(ent[i].window, secs, now)) {
			(*ahead)++;
			window = ent[i].window;
		} else {
			ent[m++] = ent[i];
		}
	}
	uint64_t mono = mono_ms();
	if (*ahead && (f->ahead_from_log_ms == 0 || mono - f->ahead_from_log_ms >= LOG_EVERY_MS)) {
		f->ahead_from_log_ms = mono;
		log_msg(LOG_WARNING,
			"filter '%s': node %.*s sends entries of window %" PRIu64 ", which begins more than %" PRIu64
			" ms (the skew tolerance) after this node's clock: its clock is that far ahead, or the entries "
			"are forged; dropping them (dropped_future_window)",
			f->name, (int)ef->node->len, ef->node->str, window, fleet_skew_ms(secs));
	}
	return m;
}

/* Entries of another shape: counted, never applied, logged at most every
 * LOG_EVERY_MS. */
static void refuse_foreign(struct rfilter *f, const struct entry_fields *ef, uint64_t shape, struct follow_counts *c)
{
	c->foreign += ef->batch->len / FLEET_ENTRY_BYTES;
	uint64_t now = mono_ms();
	if (f->foreign_log_ms != 0 && now - f->foreign_log_ms < LOG_EVERY_MS)
		return;
	f->foreign_log_ms = now;
	char ours[17];
	fleet_shape_text(shape, ours);
	log_msg(LOG_WARNING,
		"filter '%s': node %.*s sends entries of another shape (%s, ours %s: type, size, error rate, window "
		"or secret differ); refusing them",
		f->name, (int)ef->node->len, ef->node->str, ef->shape->str, ours);
}

/* Apply the decoded batch of entry @p id from node @p ef->node.
 * @return 0, or the error that stops this round (the filter was dropped
 * or swapped away under us: the next round sees). */
static int apply_batch(struct replication *e, struct rfilter *f, const struct entry_fields *ef, struct fleet_id id,
		       const struct shmf_jentry *batch, int m, struct follow_counts *c)
{
	struct shmf_japply_counts cnt = { 0 };
	int rc = shmf_journal_apply_many(f->apply, batch, (size_t)m, &cnt);
	if (rc < 0) {
		if (rc != f->apply_err)
			log_msg(LOG_ERR, "filter '%s': cannot apply entries: %s", f->name, shmf_strerror(rc));
		f->apply_err = rc;
		return rc;
	}
	f->apply_err = 0;
	if (cnt.failed && c->failed == 0)
		log_msg(LOG_ERR, "filter '%s': %" PRIu64 " entries of node %.*s not applied: %s", f->name, cnt.failed,
			(int)ef->node->len, ef->node->str, shmf_strerror(cnt.error));
	c->applied += cnt.changed + cnt.unchanged;
	c->retired += cnt.retired;
	c->failed += cnt.failed;
	uint64_t now = wall_ms();
	pthread_mutex_lock(&e->lock);
	lag_add_locked(f, now > id.ms ? now - id.ms : 0);
	pthread_mutex_unlock(&e->lock);
	return 0;
}

enum { FOLLOW_NEXT, FOLLOW_STOP };

/* Deal with one stream entry: skip our own, refuse a foreign shape or a
 * malformed entry (counted), apply the rest. *done moves past it unless
 * it has to wait (FOLLOW_STOP). */
static int follow_one(struct replication *e, struct follow *fw, const redisReply *ent, uint64_t shape,
		      struct shmf_jentry *batch, struct follow_counts *c, struct fleet_id *done)
{
	struct rfilter *f = fw->f;
	struct fleet_id id;
	if (ent->type != REDIS_REPLY_ARRAY || ent->elements != 2 || ent->element[0]->type != REDIS_REPLY_STRING ||
	    fleet_id_parse(ent->element[0]->str, ent->element[0]->len, &id) < 0)
		return FOLLOW_STOP; /* not a stream entry: nothing after it can be trusted either */
	struct entry_fields ef;
	uint64_t their_shape;
	if (entry_fields(ent->element[1], &ef, &their_shape) < 0) {
		c->malformed++;
		*done = id;
		return FOLLOW_NEXT;
	}
	size_t nodelen = strlen(e->cfg.node);
	if (ef.node->len == nodelen && !memcmp(ef.node->str, e->cfg.node, nodelen)) {
		c->own++;
		*done = id;
		return FOLLOW_NEXT;
	}
	pthread_mutex_lock(&e->lock);
	note_node_locked(f, ef.node->str, ef.node->len, their_shape != shape);
	pthread_mutex_unlock(&e->lock);
	if (their_shape != shape) {
		refuse_foreign(f, &ef, shape, c);
		*done = id;
		return FOLLOW_NEXT;
	}
	int m = fleet_batch_decode(ef.batch->str, ef.batch->len, batch);
	if (m < 0) {
		c->malformed++;
		*done = id;
		return FOLLOW_NEXT;
	}
	uint64_t ahead;
	m = keep_in_window(e, f, &ef, batch, m, &ahead);
	if (m > 0 && must_hold(e, fw, batch, m)) {
		fw->holding = 1;
		return FOLLOW_STOP;
	}
	if (m > 0 && apply_batch(e, f, &ef, id, batch, m, c) < 0)
		return FOLLOW_STOP;
	c->ahead += ahead;
	*done = id;
	return FOLLOW_NEXT;
}

/* Add a round's counts to the filter's and store the cursor past @p done:
 * after the entries it covers are applied (at-least-once), and only if
 * nobody moved the cursor meanwhile (a restore or a pull sets it; a drop
 * takes the filter out of the list first). */
static void follow_commit(struct replication *e, struct follow *fw, const struct follow_counts *c, struct fleet_id done,
			  size_t nentries)
{
	struct rfilter *f = fw->f;
	pthread_mutex_lock(&e->lock);
	f->applied += c->applied;
	f->retired += c->retired;
	f->foreign += c->foreign;
	f->malformed += c->malformed;
	f->own += c->own;
	f->failed += c->failed;
	f->ahead += c->ahead;
	f->catching_up = nentries >= XREAD_COUNT;
	struct fleet_id now;
	registry_cursor_get(e->reg, f->slot, &now.ms, &now.seq);
	if (f->live && f->epoch == fw->epoch && fleet_id_cmp(now, fw->cursor) == 0 &&
	    fleet_id_cmp(done, fw->cursor) != 0) {
		registry_cursor_set(e->reg, f->slot, done.ms, done.seq);
		f->stored = done;
	}
	pthread_mutex_unlock(&e->lock);
}

/* Apply the stream entries @p entries (an XREAD reply's, of this filter's
 * stream), then store the cursor past the last one dealt with. */
static void follow_entries(struct replication *e, struct follow *fw, const redisReply *entries,
			   struct shmf_jentry *batch)
{
	struct rfilter *f = fw->f;
	struct fleet_id done = fw->cursor;
	struct follow_counts c = { 0 };
	pthread_mutex_lock(&e->lock);
	uint64_t shape = f->shape;
	pthread_mutex_unlock(&e->lock);
	if (apply_handle(e, f) < 0)
		return;
	for (size_t i = 0; i < entries->elements; i++)
		if (follow_one(e, fw, entries->element[i], shape, batch, &c, &done) == FOLLOW_STOP)
			break;
	follow_commit(e, fw, &c, done, entries->elements);
}

/* XINFO STREAM: diverged when the stream lost entries this node has not
 * applied: trimmed past the cursor, reset, or gone. */
static int check_stream(struct replication *e, redisContext *c, struct follow *fw)
{
	struct rfilter *f = fw->f;
	const char *argv[] = { "XINFO", "STREAM", f->stream };
	redisReply *r = redisCommandArgv(c, 3, argv, NULL);
	if (r == NULL)
		return -EIO;
	struct fleet_id cur = fw->cursor, last = { 0 }, first = { 0 }, maxdel = { 0 };
	int have_maxdel = 0, have_first = 0;
	char why[REPL_ERROR_MAX] = "", a[48], b[48];
	if (r->type == REDIS_REPLY_ERROR) {
		if (strcasestr(r->str, "no such key") != NULL && (cur.ms | cur.seq) != 0)
			snprintf(why, sizeof(why),
				 "stream %s is gone though this node applied entries up to %s (Redis lost its data: "
				 "restarted without appendonly?)",
				 f->stream, fleet_id_text(cur, a, sizeof(a)));
	} else if (r->type == REDIS_REPLY_ARRAY) {
		const redisReply *x;
		if ((x = field(r, "last-generated-id")) != NULL && x->type == REDIS_REPLY_STRING)
			fleet_id_parse(x->str, x->len, &last);
		if ((x = field(r, "max-deleted-entry-id")) != NULL && x->type == REDIS_REPLY_STRING)
			have_maxdel = fleet_id_parse(x->str, x->len, &maxdel) == 0;
		if ((x = field(r, "first-entry")) != NULL && x->type == REDIS_REPLY_ARRAY && x->elements >= 1 &&
		    x->element[0]->type == REDIS_REPLY_STRING)
			have_first = fleet_id_parse(x->element[0]->str, x->element[0]->len, &first) == 0;
		if (fleet_id_cmp(last, cur) < 0)
			snprintf(why, sizeof(why),
				 "stream %s ends at %s, before this node's cursor %s (the stream was reset: Redis lost "
				 "its data)",
				 f->stream, fleet_id_text(last, a, sizeof(a)), fleet_id_text(cur, b, sizeof(b)));
		/* Trimmed (MAXLEN) past the cursor: the oldest entry left is
		 * after it; deleted (XDEL) past it: max-deleted-entry-id. A
		 * trim that stopped exactly at the cursor looks the same as one
		 * past it; that needs a node behind by the whole retention. */
		else if ((cur.ms | cur.seq) != 0 && ((have_first && fleet_id_cmp(first, cur) > 0) ||
						     (have_maxdel && fleet_id_cmp(maxdel, cur) > 0)))
			snprintf(why, sizeof(why),
				 "stream %s was trimmed past this node's cursor %s (entries before %s are gone: "
				 "raise retention)",
				 f->stream, fleet_id_text(cur, a, sizeof(a)),
				 fleet_id_text(have_maxdel && fleet_id_cmp(maxdel, cur) > 0 ? maxdel : first, b,
					       sizeof(b)));
	}
	freeReplyObject(r);
	if (why[0] == '\0')
		return 0;
	pthread_mutex_lock(&e->lock);
	int was = f->diverged;
	if (f->live && f->epoch == fw->epoch) {
		f->diverged = 1;
		snprintf(f->why, sizeof(f->why),
			 "%s; this node lacks entries: repair with shmctl pull %s --from PEER "
			 "or shmctl merge %s SNAPSHOT",
			 why, f->name, f->name);
	}
	pthread_mutex_unlock(&e->lock);
	if (!was)
		log_msg(LOG_ERR,
			"filter '%s': diverged: %s; it keeps serving and following; repair with shmctl pull "
			"%s --from PEER or shmctl merge %s SNAPSHOT",
			f->name, why, f->name, f->name);
	return 0;
}

/* The follower's buffers, allocated once. */
struct follower_bufs {
	struct follow *fw;         /* one per filter of the round */
	struct shmf_jentry *batch; /* one decoded stream entry */
	const char **argv;         /* XREAD's arguments */
	char (*ids)[48];           /* the cursors, as text */
};

/* XREAD COUNT .. BLOCK .. STREAMS <every stream of the round> <their
 * cursors>, with the follow state of each filter set up for the round.
 * @return argc. */
static int xread_args(struct replication *e, const struct round *rd, struct follower_bufs *fb)
{
	int argc = 0;
	const char **argv = fb->argv;
	argv[argc++] = "XREAD";
	argv[argc++] = "COUNT";
	argv[argc++] = "256";
	argv[argc++] = "BLOCK";
	argv[argc++] = "1000";
	argv[argc++] = "STREAMS";
	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < rd->n; i++) {
		struct rfilter *f = rd->f[i];
		struct follow *fw = &fb->fw[i];
		*fw = (struct follow){ .f = f, .epoch = f->epoch };
		registry_cursor_get(e->reg, f->slot, &fw->cursor.ms, &fw->cursor.seq);
		/* Moved by someone else (a restore, a pull): a new start. */
		if (fleet_id_cmp(fw->cursor, f->stored) != 0) {
			f->stored = fw->cursor;
			f->diverged = 0;
			f->why[0] = '\0';
		}
		argv[argc++] = f->stream;
	}
	pthread_mutex_unlock(&e->lock);
	for (size_t i = 0; i < rd->n; i++)
		argv[argc++] = fleet_id_text(fb->fw[i].cursor, fb->ids[i], sizeof(fb->ids[i]));
	return argc;
}

/* Deal with XREAD's reply @p r (NULL: the connection failed). Sets
 * *holding when an entry waits for a rotation. @return 1 if the
 * connection is broken. */
static int xread_reply(struct replication *e, redisContext *c, redisReply *r, const struct round *rd,
		       struct follower_bufs *fb, int *holding)
{
	char why[REPL_ERROR_MAX];
	if (r == NULL) {
		snprintf(why, sizeof(why), "XREAD: %s", c->errstr[0] ? c->errstr : "no reply");
		conn_state(e, T_FOLLOWER, 0, why);
		return 1;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		snprintf(why, sizeof(why), "XREAD: %s", r->str);
		conn_state(e, T_FOLLOWER, 0, why);
		return 1;
	}
	conn_state(e, T_FOLLOWER, 1, "");
	if (r->type != REDIS_REPLY_ARRAY) {
		/* nil: nothing new within the block time */
		pthread_mutex_lock(&e->lock);
		for (size_t i = 0; i < rd->n; i++)
			rd->f[i]->catching_up = 0;
		pthread_mutex_unlock(&e->lock);
		return 0;
	}
	for (size_t s = 0; s < r->elements; s++) {
		const redisReply *st = r->element[s];
		if (st->type != REDIS_REPLY_ARRAY || st->elements != 2 || st->element[0]->type != REDIS_REPLY_STRING ||
		    st->element[1]->type != REDIS_REPLY_ARRAY)
			continue;
		for (size_t i = 0; i < rd->n; i++)
			if (!strcmp(rd->f[i]->stream, st->element[0]->str)) {
				follow_entries(e, &fb->fw[i], st->element[1], fb->batch);
				*holding |= fb->fw[i].holding;
			}
	}
	return 0;
}

/* XINFO STREAM of every filter not checked for CHECK_EVERY_MS.
 * @return 1 if the connection is broken. */
static int check_streams(struct replication *e, redisContext *c, const struct round *rd, struct follower_bufs *fb)
{
	uint64_t now = mono_ms();
	for (size_t i = 0; i < rd->n; i++) {
		if (now - rd->f[i]->check_ms < CHECK_EVERY_MS)
			continue;
		rd->f[i]->check_ms = now;
		if (check_stream(e, c, &fb->fw[i]) < 0) {
			char why[REPL_ERROR_MAX];
			snprintf(why, sizeof(why), "XINFO: %s", c->errstr[0] ? c->errstr : "no reply");
			conn_state(e, T_FOLLOWER, 0, why);
			return 1;
		}
	}
	return 0;
}

/* One round: XREAD every replicated stream from its cursor, apply, check
 * the streams now and then. @return 1 if the connection is broken, with
 * *holding set when an entry waits for a rotation. */
static int follow_round(struct replication *e, redisContext *c, struct follower_bufs *fb, int *holding)
{
	struct round rd;
	round_take(e, &rd);
	int argc = xread_args(e, &rd, fb);
	redisReply *r = redisCommandArgv(c, argc, fb->argv, NULL);
	int broken = xread_reply(e, c, r, &rd, fb, holding);
	if (r != NULL)
		freeReplyObject(r);
	if (!broken)
		broken = check_streams(e, c, &rd, fb);
	round_release(e, &rd);
	return broken;
}

static void *follower_main(void *arg)
{
	struct replication *e = arg;
	redisContext *c = NULL;
	uint64_t backoff = 0;
	struct follower_bufs fb = { calloc(SHMF_SLOTS, sizeof(*fb.fw)), calloc(FLEET_BATCH_MAX, sizeof(*fb.batch)),
				    calloc(6 + 2 * SHMF_SLOTS, sizeof(*fb.argv)), calloc(SHMF_SLOTS, sizeof(*fb.ids)) };
	if (fb.fw == NULL || fb.batch == NULL || fb.argv == NULL || fb.ids == NULL) {
		log_msg(LOG_ERR, "replication: follower: out of memory; nothing is applied");
		goto out;
	}
	for (;;) {
		pthread_mutex_lock(&e->lock);
		while (!e->stop && e->n == 0)
			nap_locked(e, 1000000000u);
		int stop = e->stop;
		pthread_mutex_unlock(&e->lock);
		if (stop)
			break;
		if (c == NULL && (c = redis_connect(e, T_FOLLOWER, &backoff)) == NULL)
			continue;
		int holding = 0;
		if (follow_round(e, c, &fb, &holding)) {
			redisFree(c);
			c = NULL;
			backoff = backoff == 0                   ? BACKOFF_MIN_MS
				  : backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
								 : backoff * 2;
			nap(e, backoff * 1000000);
		} else if (holding) {
			nap(e, HOLD_PAUSE_NS);
		}
	}
out:
	if (c != NULL)
		redisFree(c);
	free(fb.fw);
	free(fb.batch);
	free(fb.argv);
	free(fb.ids);
	return NULL;
}

/* ---- the main loop's side ------------------------------------------------- */

int replication_wake_fd(const struct replication *e)
{
	return e->wake_fd;
}

void replication_tick(struct replication *e, struct registry *r)
{
	char names[SHMF_SLOTS][SHMF_NAME_MAX + 1], err[REGISTRY_ERR_MAX];
	uint64_t want[SHMF_SLOTS], v;
	size_t n = 0;
	while (read(e->wake_fd, &v, sizeof(v)) > 0)
		;
	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < e->n; i++) {
		struct rfilter *f = e->list[i];
		if (f->want_window == 0)
			continue;
		snprintf(names[n], sizeof(names[n]), "%s", f->name);
		want[n++] = f->want_window;
		f->want_window = 0;
	}
	pthread_mutex_unlock(&e->lock);
	/* Outside the lock: the rotation's publication calls on_published(). */
	for (size_t i = 0; i < n; i++) {
		/* The follower asks only for a window within the skew tolerance;
		 * never start one further ahead, whoever asks. */
		int slot = registry_find(r, names[i]);
		uint64_t secs = slot >= 0 ? r->ctl.slots[slot].window_secs : 0;
		if (fleet_window_ahead(want[i], secs, wall_ms()))
			log_msg(LOG_ERR,
				"filter '%s': not starting window %" PRIu64 ": it begins more than %" PRIu64
				" ms after this node's clock",
				names[i], want[i], fleet_skew_ms(secs));
		else if (registry_rotate_to(r, names[i], want[i], err, sizeof(err)) < 0)
			log_msg(LOG_ERR, "%s", err);
		else
			log_msg(LOG_INFO, "filter '%s': another node started window %" PRIu64 " first; started it here",
				names[i], want[i]);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int replication_stats(struct replication *e, int slot, struct repl_filter_stats *out)
{
	static uint64_t lags[LAG_SAMPLES]; /* the main loop's alone */
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&e->lock);
	struct rfilter *f = find_locked(e, slot);
	if (f == NULL) {
		pthread_mutex_unlock(&e->lock);
		return SHMF_E_NOTFOUND;
	}
	uint64_t now = mono_ms();
	snprintf(out->name, sizeof(out->name), "%s", f->name);
	snprintf(out->stream, sizeof(out->stream), "%s", f->stream);
	registry_cursor_get(e->reg, slot, &out->cursor.ms, &out->cursor.seq);
	int down = !e->up[T_SENDER] ? T_SENDER : !e->up[T_FOLLOWER] ? T_FOLLOWER : -1;
	if (down >= 0) {
		out->state = "disconnected";
		snprintf(out->last_error, sizeof(out->last_error), "%s: %s", thread_name[down],
			 e->error[down][0] ? e->error[down] : "connecting");
	} else if (f->diverged) {
		out->state = "diverged";
		snprintf(out->last_error, sizeof(out->last_error), "%s", f->why);
	} else {
		out->state = f->catching_up ? "catching-up" : "following";
	}
	size_t n = 0;
	for (unsigned i = 0; i < f->lag_n; i++)
		if (now - f->lag[i].at_ms <= LAG_WINDOW_MS)
			lags[n++] = f->lag[i].lag_ms;
	out->journal_depth = f->depth;
	out->sent = f->sent;
	out->applied = f->applied;
	out->dropped_journal_full = f->jfull;
	out->dropped_retired_window = f->retired;
	out->dropped_future_window = f->ahead;
	out->dropped_foreign_shape = f->foreign;
	out->missed = f->missed;
	out->lost = f->lost;
	out->malformed = f->malformed;
	out->own = f->own;
	out->nnodes = f->nnodes;
	for (unsigned i = 0; i < f->nnodes; i++) {
		snprintf(out->nodes[i].node, sizeof(out->nodes[i].node), "%s", f->nodes[i].name);
		out->nodes[i].last_heard_ms_ago = now - f->nodes[i].heard_ms;
		out->nodes[i].foreign_shape = f->nodes[i].foreign;
	}
	pthread_mutex_unlock(&e->lock);
	out->lag_p50_ms = out->lag_p99_ms = -1;
	if (n > 0) {
		qsort(lags, n, sizeof(lags[0]), cmp_u64);
		out->lag_p50_ms = (int64_t)lags[(n - 1) / 2];
		out->lag_p99_ms = (int64_t)lags[(n - 1) * 99 / 100];
	}
	return 0;
}

void replication_repaired(struct replication *e, int slot)
{
	pthread_mutex_lock(&e->lock);
	struct rfilter *f = find_locked(e, slot);
	if (f != NULL) {
		f->diverged = 0;
		f->why[0] = '\0';
	}
	pthread_mutex_unlock(&e->lock);
}

/* ---- start and stop ------------------------------------------------------- */

int replication_start(struct replication **out, const struct repl_config *cfg, struct registry *r, char *err,
		      size_t errlen)
{
	struct replication *e = calloc(1, sizeof(*e));
	if (e == NULL || (e->list = calloc(SHMF_SLOTS, sizeof(*e->list))) == NULL) {
		free(e);
		return errmsg(err, errlen, -ENOMEM, "replication: out of memory");
	}
	e->cfg = *cfg;
	e->reg = r;
	e->cap = SHMF_SLOTS;
	snprintf(e->addr, sizeof(e->addr), "%s", cfg->redis);
	snprintf(e->retention, sizeof(e->retention), "%" PRIu64, cfg->retention);
	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cond, &ca);
	pthread_condattr_destroy(&ca);
	e->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e->wake_fd < 0) {
		int rc = -errno;
		replication_stop(e);
		return errmsg(err, errlen, rc, "replication: eventfd: %s", strerror(-rc));
	}
	r->hooks = (struct registry_hooks){ .published = on_published, .dropping = on_dropping, .arg = e };
	r->repl = e;
	int slots[SHMF_SLOTS];
	int n = registry_list(r, slots);
	for (int i = 0; i < n; i++)
		on_published(e, r, slots[i]);
	void *(*mains[2])(void *) = { sender_main, follower_main };
	for (int t = 0; t < 2; t++) {
		int rc = pthread_create(&e->thread[t], NULL, mains[t], e);
		if (rc != 0) {
			replication_stop(e);
			return errmsg(err, errlen, -rc, "replication: cannot start the %s thread: %s", thread_name[t],
				      strerror(rc));
		}
		e->started[t] = 1;
	}
	log_msg(LOG_INFO, "replication: node %s, Redis at %s, streams %s*, %zu replicated filters", cfg->node,
		cfg->redis, cfg->stream_prefix, e->n);
	*out = e;
	return 0;
}

void replication_stop(struct replication *e)
{
	if (e == NULL)
		return;
	pthread_mutex_lock(&e->lock);
	e->stop = 1;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
	for (int t = 0; t < 2; t++)
		if (e->started[t])
			pthread_join(e->thread[t], NULL);
	if (e->reg != NULL && e->reg->repl == e) {
		e->reg->hooks = (struct registry_hooks){ 0 };
		e->reg->repl = NULL;
	}
	for (size_t i = 0; i < e->n; i++)
		filter_free(e->list[i]);
	free(e->list);
	if (e->wake_fd >= 0)
		close(e->wake_fd);
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
