/*
 * follower.c - the fleet engine's follower thread (engine.h): XREAD over
 * every replicated stream from each filter's cursor, each entry judged
 * (entry.c) and applied or refused, then the senders' sequences and the
 * cursor stored; XINFO STREAM now and then for a stream that lost entries.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "shmd/base/log.h"
#include "shmd/fleet/engine.h"

/* Node @p node lost adds (its journal overflowed) that its copy alone
 * holds, and auto_repair leaves the repair to an operator (a cuckoo
 * filter without pull, or off): diverged, saying so and what to do.
 * @return 1 if that is news (to log), 0 if it was diverged already. */
static int lacks_locked(struct replication *e, struct rfilter *f, const redisReply *node)
{
	if (f->diverged)
		return 0;
	f->diverged = 1;
	snprintf(f->why, sizeof(f->why),
		 "node %.*s's journal overflowed: this node lacks adds that node %.*s's copy alone holds, and %s; "
		 "repair with shmctl pull %s --from %.*s%s",
		 (int)node->len, node->str, (int)node->len, node->str,
		 e->cfg.auto_repair == REPL_REPAIR_OFF
			 ? "auto_repair = off leaves the repair to an operator"
			 : "a cuckoo filter cannot be merged (it counts copies): set [replication] auto_repair = pull "
			   "to take the peer's copy by itself",
		 f->name, (int)node->len, node->str,
		 f->type == SHMF_TYPE_CUCKOO ? "" : " (or shmctl merge with a snapshot of that node's filter)");
	return 1;
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
	uint64_t refused[REPL_REFUSED_KINDS];
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

/* Deal with one stream entry: refuse one whose tags or sequence do not
 * hold (entry.c), skip our own, refuse a foreign shape or a malformed
 * entry (counted), apply the rest, and remember its sender's sequence.
 * *done moves past it unless it has to wait (FOLLOW_STOP). */
static int follow_one(struct replication *e, struct follow *fw, const redisReply *ent, uint64_t shape,
		      struct shmf_jentry *batch, struct follow_counts *c, struct fleet_id *done)
{
	struct rfilter *f = fw->f;
	struct fleet_id id;
	if (ent->type != REDIS_REPLY_ARRAY || ent->elements != 2 || ent->element[0]->type != REDIS_REPLY_STRING ||
	    fleet_id_parse(ent->element[0]->str, ent->element[0]->len, &id) < 0)
		return FOLLOW_STOP; /* not a stream entry: nothing after it can be trusted either */
	struct entry_fields ef;
	int kind = 0, m = 0;
	enum entry_verdict v = entry_judge(e, f, ent->element[1], shape, &ef, &kind);
	if (v == ENTRY_APPLY && (m = fleet_batch_decode(ef.batch->str, ef.batch->len, batch)) < 0)
		v = ENTRY_MALFORMED; /* signed, yet no batch this version reads */
	if (v == ENTRY_REFUSED || v == ENTRY_MALFORMED) {
		c->refused[kind] += v == ENTRY_REFUSED;
		c->malformed += v == ENTRY_MALFORMED;
		*done = id;
		return FOLLOW_NEXT;
	}
	if (v == ENTRY_OWN) {
		c->own++;
		entry_seen(e, f, &ef);
		*done = id;
		return FOLLOW_NEXT;
	}
	pthread_mutex_lock(&e->lock);
	note_node_locked(f, ef.node->str, ef.node->len, v == ENTRY_FOREIGN);
	pthread_mutex_unlock(&e->lock);
	if (v == ENTRY_FOREIGN) {
		refuse_foreign(f, &ef, shape, c);
		entry_seen(e, f, &ef);
		*done = id;
		return FOLLOW_NEXT;
	}
	if (m == 0) {
		/* An empty batch: the sender lost adds (its journal overflowed),
		 * which its copy alone holds: repair from it. */
		pthread_mutex_lock(&e->lock);
		f->notices++;
		int said = !repair_want_locked(e, f, ef.node->str, ef.node->len) && lacks_locked(e, f, ef.node);
		pthread_mutex_unlock(&e->lock);
		if (said)
			log_msg(LOG_ERR, "filter '%s': diverged: %s; it keeps serving and following", f->name, f->why);
		entry_seen(e, f, &ef);
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
	entry_seen(e, f, &ef);
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
	for (int k = 0; k < REPL_REFUSED_KINDS; k++)
		f->refused[k] += c->refused[k];
	f->catching_up = nentries >= XREAD_COUNT;
	struct fleet_id now;
	registry_cursor_get(e->reg, f->slot, &now.ms, &now.seq);
	if (fleet_id_cmp(done, fw->cursor) == 0) {
		/* Nothing dealt with: the senders' sequences did not move either. */
	} else if (f->live && f->epoch == fw->epoch && fleet_id_cmp(now, fw->cursor) == 0) {
		/* The sequences first: a node killed between the two stores
		 * reads these entries again and refuses them as replays, but
		 * it applied them already; the other order would let a replay
		 * of them through. */
		registry_fleet_peers_set(e->reg, f->slot, f->peers, f->floor);
		registry_cursor_set(e->reg, f->slot, done.ms, done.seq);
		f->stored = done;
	} else {
		/* Not stored: the entries are read again from the cursor, and
		 * the sequences must be the ones that go with it. */
		f->peers_loaded = 0;
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
			f->peers_loaded = 0;
		}
		/* The senders' sequences that go with the cursor. */
		if (!f->peers_loaded && f->live) {
			registry_fleet_peers_get(e->reg, f->slot, f->peers, &f->floor);
			f->peers_loaded = 1;
		}
		if (!f->unreadable) /* its key is not a stream: left out, the others read */
			argv[argc++] = f->stream;
	}
	pthread_mutex_unlock(&e->lock);
	for (size_t i = 0; i < rd->n; i++)
		if (!rd->f[i]->unreadable)
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
		/* One key of another type fails the whole XREAD: find it and
		 * leave it out; the other filters are read next round. */
		int found = 0;
		for (size_t i = 0; i < rd->n && strncmp(r->str, "WRONGTYPE", 9) == 0; i++) {
			int bad = rd->f[i]->unreadable ? 0 : stream_unreadable(e, c, rd->f[i]);
			if (bad < 0)
				return 1;
			found |= bad;
		}
		if (found)
			return 0;
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

/* XINFO STREAM of every filter not checked for CHECK_EVERY_MS (TYPE of
 * one whose key was not a stream). @return 1 if the connection is broken. */
static int check_streams(struct replication *e, redisContext *c, const struct round *rd, struct follower_bufs *fb)
{
	uint64_t now = mono_ms();
	for (size_t i = 0; i < rd->n; i++) {
		if (now - rd->f[i]->check_ms < CHECK_EVERY_MS)
			continue;
		rd->f[i]->check_ms = now;
		struct rfilter *f = rd->f[i];
		if ((f->unreadable ? stream_unreadable(e, c, f)
				   : stream_check(e, c, f, fb->fw[i].cursor, fb->fw[i].epoch)) < 0) {
			char why[REPL_ERROR_MAX];
			snprintf(why, sizeof(why), "XINFO: %s", c->errstr[0] ? c->errstr : "no reply");
			conn_state(e, T_FOLLOWER, 0, why);
			return 1;
		}
	}
	return 0;
}

/* One round: XREAD every replicated stream from its cursor, apply, check
 * the streams now and then (with *recheck, only check every stream, and
 * clear it). @return 1 if the connection is broken, with *holding set
 * when an entry waits for a rotation. */
static int follow_round(struct replication *e, redisContext *c, struct follower_bufs *fb, int *holding, int *recheck)
{
	struct round rd;
	round_take(e, &rd);
	int argc = xread_args(e, &rd, fb), broken = 0;
	if (*recheck) {
		for (size_t i = 0; i < rd.n; i++)
			rd.f[i]->check_ms = 0;
		broken = check_streams(e, c, &rd, fb);
		*recheck = broken;
		round_release(e, &rd);
		return broken;
	}
	if (argc > 6) {
		redisReply *r = redisCommandArgv(c, argc, fb->argv, NULL);
		broken = xread_reply(e, c, r, &rd, fb, holding);
		if (r != NULL)
			freeReplyObject(r);
	} else {
		nap(e, (uint64_t)XREAD_BLOCK_MS * 1000000); /* no stream to read: as long as an XREAD would wait */
	}
	if (!broken)
		broken = check_streams(e, c, &rd, fb);
	round_release(e, &rd);
	return broken;
}

void *follower_main(void *arg)
{
	struct replication *e = arg;
	redisContext *c = NULL;
	uint64_t backoff = 0;
	int recheck = 0;
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
		if (c == NULL) {
			if ((c = redis_connect(e, T_FOLLOWER, &backoff)) == NULL)
				continue;
			char was[sizeof(e->run_id)];
			snprintf(was, sizeof(was), "%s", e->run_id);
			redis_run_id(c, e->run_id, sizeof(e->run_id));
			/* Another Redis, or one restarted: every stream is
			 * checked before anything is read from it, so that one
			 * made anew is seen before the cursor moves into it. */
			recheck = was[0] != '\0' && strcmp(was, e->run_id) != 0;
		}
		int holding = 0;
		if (follow_round(e, c, &fb, &holding, &recheck)) {
			redisFree(c);
			c = NULL;
			backoff = backoff_next(backoff);
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
