/*
 * sender.c - the fleet engine's sender thread (engine.h): every
 * replicated filter's journal drained into pipelined XADDs, each stream
 * entry with the sender's next sequence and the tags of the fleet's key.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmd/base/log.h"
#include "shmd/fleet/engine.h"

struct xadd {
	struct replication *e;
	struct rfilter *f;
	redisContext *c;
	uint64_t shape;
	uint64_t serial; /* the connection's (confirm.c) */
	uint64_t seq;    /* the last XADD's */
	struct shmf_jentry kept[FLEET_BATCH_MAX];
	unsigned char buf[FLEET_BATCH_MAX * FLEET_ENTRY_BYTES];
	size_t len; /* the last XADD's bytes in buf */
	char why[REPL_ERROR_MAX];
};

uint64_t window_secs_of(struct replication *e, const struct rfilter *f, struct shmf_slot *copy)
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

/* The next sequence of filter @p f: above every one sent before for it
 * (the slot keeps the last across restarts), and the wall clock in
 * microseconds where that is higher, so that a node whose runtime
 * directory was lost still sends above what it sent before. */
static uint64_t next_seq(struct replication *e, struct rfilter *f)
{
	if (!f->sent_loaded) {
		pthread_mutex_lock(&e->lock);
		if (f->live)
			f->sent_seq = registry_fleet_sent_get(e->reg, f->slot);
		pthread_mutex_unlock(&e->lock);
		f->sent_loaded = 1;
	}
	uint64_t now = wall_us();
	f->sent_seq = now > f->sent_seq ? now : f->sent_seq + 1;
	return f->sent_seq;
}

/* Queue one XADD of the @p m entries in x->kept. 0, or -EIO. */
static int xadd_append(struct xadd *x, size_t m)
{
	x->len = fleet_batch_encode(x->kept, m, x->buf);
	x->seq = next_seq(x->e, x->f);
	return xadd_queue(x->e, x->c, x->f->stream, x->shape, x->seq, x->buf, x->len, x->why, sizeof(x->why));
}

void stream_refusal(const char *stream, const char *err, char *out, size_t len)
{
	if (strstr(err, "exhausted the last possible ID") != NULL)
		snprintf(out, len,
			 "stream %s holds an entry of the largest id 18446744073709551615-18446744073709551615, after "
			 "which no entry can be added (shmd never writes one: a client did); delete the stream "
			 "(DEL %s): the nodes then follow it anew (%s)",
			 stream, stream, err);
	else if (strncmp(err, "WRONGTYPE", 9) == 0)
		snprintf(out, len,
			 "key %s holds a value of another type, not a stream (another application uses the name?): "
			 "delete or rename it, or change stream_prefix (%s)",
			 stream, err);
	else
		snprintf(out, len, "Redis refuses stream %s: %s", stream, err);
}

/* Drain callback: XADD the entries (pipelined, FLEET_BATCH_MAX a stream
 * entry), except those of a window ahead of the clock (dropped, counted)
 * and those confirmed already (confirm.c); 0 only once Redis took every
 * one of them and, with replicas_wait, WAIT says the replicas have them. */
static int send_entries(void *arg, unsigned ring, const struct shmf_jentry *ent, size_t n)
{
	struct xadd *x = arg;
	struct replication *e = x->e;
	size_t skip = confirm_skip(x->f, ring, n);
	ent += skip;
	n -= skip;
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
		if (xadd_append(x, m) < 0)
			return -EIO;
		m = 0;
		pending++;
	}
	/* The sequences used are stored before Redis has them: a node killed
	 * now never sends one of them again. */
	pthread_mutex_lock(&e->lock);
	if (pending && x->f->live)
		registry_fleet_sent_set(e->reg, x->f->slot, x->f->sent_seq);
	pthread_mutex_unlock(&e->lock);
	int waited = pending ? wait_queue(e, x->c) : 0;
	int rc = waited < 0 ? -EIO : confirm_replies(e, x->c, x->f->stream, pending, waited, x->why, sizeof(x->why));
	if ((rc == -EAGAIN || rc == -EIO) && pending == 1)
		confirm_keep(x->f, ring, n, n - ahead, ahead, x->seq, x->shape, x->buf, x->len, x->serial);
	if (rc < 0)
		return rc;
	confirm_done(x->f, ring);
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

/* Adds of @p f never reached the journal since the others were last told
 * (@p over: dropped + missed + lost): tell them, with a signed entry of
 * an empty batch, that this node's copy holds adds they lack, so that
 * they repair from it (repair.c). At most every NOTICE_EVERY_MS.
 * @return 0, -EPROTO (Redis refused the stream) or -EIO. */
static int send_notice(struct replication *e, struct xadd *x, uint64_t over)
{
	struct rfilter *f = x->f;
	uint64_t now = mono_ms();
	if (over <= f->notice_sent || (f->notice_ms != 0 && now - f->notice_ms < NOTICE_EVERY_MS))
		return 0;
	if (xadd_append(x, 0) < 0)
		return -EIO;
	pthread_mutex_lock(&e->lock);
	if (f->live)
		registry_fleet_sent_set(e->reg, f->slot, f->sent_seq);
	pthread_mutex_unlock(&e->lock);
	int rc = confirm_replies(e, x->c, f->stream, 1, 0, x->why, sizeof(x->why));
	if (rc == 0) {
		f->notice_sent = over;
		f->notice_ms = now;
		log_msg(LOG_NOTICE,
			"filter '%s': told the other nodes that %" PRIu64 " adds here never reached the "
			"stream: they repair from this node",
			f->name, over);
	}
	return rc;
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

/* Redis refused filter @p f's XADDs (@p why): its entries stay in its
 * journal, the others' go on; said in its state, logged now and then,
 * tried again in STREAM_RETRY_MS. NULL: it took them. */
static void stream_refused(struct replication *e, struct rfilter *f, const char *why)
{
	uint64_t now = mono_ms();
	pthread_mutex_lock(&e->lock);
	int changed = strcmp(f->send_error, why ? why : "") != 0;
	snprintf(f->send_error, sizeof(f->send_error), "%s", why ? why : "");
	pthread_mutex_unlock(&e->lock);
	f->send_retry_ms = why ? now + STREAM_RETRY_MS : 0;
	if (why != NULL && (changed || now - f->send_err_log_ms >= LOG_EVERY_MS)) {
		f->send_err_log_ms = now;
		log_msg(LOG_ERR,
			"filter '%s': cannot send: %s; its adds wait in its journal, the other filters' are sent",
			f->name, why);
	} else if (why == NULL && changed) {
		log_msg(LOG_NOTICE, "filter '%s': Redis takes its entries again", f->name);
	}
}

/* One round: drain every filter's journal into @p c. @return the entries
 * sent, -EAGAIN (WAIT fell short: the round ends, the connection stays)
 * or -EIO (the connection is to be dropped, x->why says why). A stream
 * Redis refuses stops only its own filter. */
static long send_round(struct replication *e, redisContext *c, struct round *rd, struct xadd *x, unsigned flags)
{
	long sent = 0;
	for (size_t i = 0; i < rd->n; i++) {
		struct rfilter *f = rd->f[i];
		if (reader_ready(e, f) < 0 || (f->send_retry_ms != 0 && mono_ms() < f->send_retry_ms))
			continue;
		x->e = e;
		x->f = f;
		x->c = c;
		x->serial = e->serial[T_SENDER];
		x->why[0] = '\0';
		pthread_mutex_lock(&e->lock);
		x->shape = f->shape;
		pthread_mutex_unlock(&e->lock);
		/* A batch not confirmed goes first, as it was (confirm.c). */
		int n = confirm_settle(e, c, x->serial, f, x->why, sizeof(x->why));
		if (n == 0)
			n = shmf_journal_drain(f->reader, send_entries, x, flags);
		journal_stats(e, f);
		if (n >= 0 && e->cfg.auto_repair != REPL_REPAIR_OFF) {
			pthread_mutex_lock(&e->lock);
			uint64_t over = f->jfull + f->missed + f->lost;
			pthread_mutex_unlock(&e->lock);
			int rc = send_notice(e, x, over);
			n = rc < 0 ? rc : n;
		}
		if (n == -EPROTO) {
			stream_refused(e, f, x->why);
			continue;
		}
		if (n == -EAGAIN)
			return -EAGAIN;
		if (n < 0)
			return -EIO;
		if (f->send_retry_ms != 0 || f->send_error[0] != '\0')
			stream_refused(e, f, NULL);
		sent += n;
	}
	return sent;
}

void *sender_main(void *arg)
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
		if (!round_next(e, &rd))
			break;
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
		long sent = send_round(e, c, &rd, x, flags);
		if (sent >= 0 && peers_refresh(e, c) < 0) {
			snprintf(x->why, sizeof(x->why), "announcements: %s", c->errstr[0] ? c->errstr : "no reply");
			sent = -EIO;
		}
		round_release(e, &rd);
		if (sent == -EAGAIN) {
			/* WAIT fell short (it waited REPLICAS_WAIT_MS): the
			 * connection is fine, the replicas are behind. */
			nap(e, SEND_IDLE_NS);
			continue;
		}
		if (sent < 0) {
			/* Entries stay in the journal (at-least-once); a new
			 * connection after the backoff sends them. */
			redisFree(c);
			c = NULL;
			conn_state(e, T_SENDER, 0, x->why);
			backoff = backoff_next(backoff);
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
