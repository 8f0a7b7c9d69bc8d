/*
 * replication.c - the fleet engine (replication.h): the list of
 * replicated filters and the registry's hooks, what the main loop asks
 * (rotations, stats, a repair), start and stop. The threads are in
 * sender.c and follower.c, their connections in redis-conn.c, the
 * stream entry's judge in entry.c (engine.h says who owns what).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "shmd/base/log.h"
#include "shmd/fleet/engine.h"
#include "shmd/fleet/replication.h"

const char *const repl_refused_name[REPL_REFUSED_KINDS] = {
	[REPL_FORGED] = "forged",     [REPL_ALTERED] = "altered",
	[REPL_REPLAYED] = "replayed", [REPL_IMPERSONATING] = "impersonating",
	[REPL_UNSIGNED] = "unsigned",
};

/* ---- the list ------------------------------------------------------------ */

static void filter_free(struct rfilter *f)
{
	if (f->reader != NULL)
		shmf_journal_reader_close(f->reader);
	if (f->apply != NULL)
		shmf_close(f->apply);
	confirm_free(f);
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

static void round_take_locked(struct replication *e, struct round *rd)
{
	rd->n = e->n;
	for (size_t i = 0; i < e->n; i++) {
		rd->f[i] = e->list[i];
		rd->f[i]->refs++;
	}
}

void round_take(struct replication *e, struct round *rd)
{
	pthread_mutex_lock(&e->lock);
	round_take_locked(e, rd);
	pthread_mutex_unlock(&e->lock);
}

int round_next(struct replication *e, struct round *rd)
{
	pthread_mutex_lock(&e->lock);
	int stop = e->stop;
	if (!stop)
		round_take_locked(e, rd);
	pthread_mutex_unlock(&e->lock);
	return !stop;
}

void round_release(struct replication *e, struct round *rd)
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
			f->type = (int)copy.type;
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
		snprintf(out->last_error, sizeof(out->last_error), "%s: %s", repl_thread_name[down],
			 e->error[down][0] ? e->error[down] : "connecting");
	} else if (f->send_error[0] != '\0' || f->follow_error[0] != '\0') {
		/* This stream alone: Redis refuses it, or its key is not a stream. */
		out->state = "stream-error";
		snprintf(out->last_error, sizeof(out->last_error), "%s: %.480s",
			 f->send_error[0] ? "sender" : "follower", f->send_error[0] ? f->send_error : f->follow_error);
	} else if (f->repairing) {
		out->state = "repairing";
		snprintf(out->last_error, sizeof(out->last_error), "%s", f->why);
	} else if (e->wait_why[0] != '\0') {
		/* The replicas are behind the master: nothing leaves the journals. */
		out->state = "waiting-replicas";
		snprintf(out->last_error, sizeof(out->last_error), "sender: %.480s", e->wait_why);
	} else if (f->diverged) {
		out->state = "diverged";
		snprintf(out->last_error, sizeof(out->last_error), "%.280s%s%.200s", f->why,
			 f->repair_error[0] ? "; self-repair: " : "", f->repair_error);
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
	memcpy(out->refused, f->refused, sizeof(out->refused));
	out->repairs = f->repairs;
	out->repair_last_ms = f->repair_last_ms;
	out->repair_last_bytes = f->repair_last_bytes;
	out->repair_bytes = f->repair_bytes;
	out->repair_refused = f->repair_refused;
	out->repair_notices = f->notices;
	out->peers_unverified = e->announce_refused;
	snprintf(out->repair_peer, sizeof(out->repair_peer), "%s", f->repair_peer);
	snprintf(out->last_refused, sizeof(out->last_refused), "%s", f->last_refused);
	snprintf(out->redis, sizeof(out->redis), "%s", e->addr[T_SENDER]);
	snprintf(out->redis_found, sizeof(out->redis_found), "%s", e->found[T_SENDER]);
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
	e->self_id = fleet_node_id(cfg->node, strlen(cfg->node));
	if (fleet_key_derive(cfg->secret, &e->key) < 0) {
		free(e->list);
		free(e);
		return errmsg(err, errlen, -ENOMEM,
			      "replication: cannot derive the fleet's key from the secret "
			      "(libsodium: out of memory)");
	}
	e->reg = r;
	e->cap = SHMF_SLOTS;
	for (int t = 0; t < 2; t++) {
		e->kick_fd[t] = -1;
		if (cfg->nsentinels == 0) {
			snprintf(e->addr[t], sizeof(e->addr[t]), "%s", cfg->redis);
			snprintf(e->found[t], sizeof(e->found[t]), "redis =");
		}
	}
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
	void *(*mains[T_THREADS])(void *) = { sender_main, follower_main, watcher_main };
	/* The watcher follows +switch-master: only with Sentinel. */
	for (int t = 0; t < (cfg->nsentinels > 0 ? T_THREADS : T_WATCHER); t++) {
		int rc = pthread_create(&e->thread[t], NULL, mains[t], e);
		if (rc != 0) {
			replication_stop(e);
			return errmsg(err, errlen, -rc, "replication: cannot start the %s thread: %s",
				      t == T_WATCHER ? "sentinel watcher" : repl_thread_name[t], strerror(rc));
		}
		e->started[t] = 1;
	}
	int rc = pthread_create(&e->repair_thread, NULL, repair_main, e);
	if (rc != 0) {
		replication_stop(e);
		return errmsg(err, errlen, -rc, "replication: cannot start the repair thread: %s", strerror(rc));
	}
	e->repair_started = 1;
	if (cfg->nsentinels > 0)
		log_msg(LOG_INFO,
			"replication: node %s, Redis master '%s' found through %u sentinels (%s), streams %s*, %zu "
			"replicated filters%s",
			cfg->node, cfg->master, cfg->nsentinels, cfg->sentinel, cfg->stream_prefix, e->n,
			cfg->replicas_wait ? ", entries leave the journals once replicas have them (replicas_wait)"
					   : "");
	else
		log_msg(LOG_INFO, "replication: node %s, Redis at %s, streams %s*, %zu replicated filters%s", cfg->node,
			cfg->redis, cfg->stream_prefix, e->n,
			cfg->replicas_wait ? ", entries leave the journals once replicas have them (replicas_wait)"
					   : "");
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
	for (int t = 0; t < T_THREADS; t++)
		if (e->started[t])
			pthread_join(e->thread[t], NULL);
	if (e->repair_started)
		pthread_join(e->repair_thread, NULL);
	for (int t = 0; t < 2; t++)
		if (e->kick_fd[t] >= 0)
			close(e->kick_fd[t]);
	if (e->reg != NULL && e->reg->repl == e) {
		e->reg->hooks = (struct registry_hooks){ 0 };
		e->reg->repl = NULL;
	}
	for (size_t i = 0; i < e->n; i++)
		filter_free(e->list[i]);
	free(e->list);
	explicit_bzero(&e->key, sizeof(e->key));
	if (e->wake_fd >= 0)
		close(e->wake_fd);
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
