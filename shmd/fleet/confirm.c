/*
 * confirm.c - when a batch of stream entries counts as sent (engine.h):
 * Redis took its XADD and, with replicas_wait = N, WAIT N says N replicas
 * have it. Only then may its entries leave the journal. A batch not
 * confirmed (the connection failed after its XADD went out, or WAIT fell
 * short) stays in the journal and is kept here as it was sent, its bytes
 * and its sequence, and goes out again exactly so, before anything else
 * of its filter: a copy that Redis carried out already is then refused as
 * a replay by every node that applied it, never applied twice (a cuckoo
 * filter would store the key twice).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmd/base/log.h"
#include "shmd/fleet/engine.h"

struct unconfirmed {
	unsigned ring;        /* the journal ring its entries are in */
	size_t n;             /* journal entries it covers, after the ring's confirmed ones */
	uint64_t sent, ahead; /* its share of the counters, once confirmed */
	uint64_t seq, shape;  /* as sent: the tags cover them */
	uint64_t serial;      /* the sender's connection its XADD went out on; 0: none */
	size_t len;
	unsigned char buf[FLEET_BATCH_MAX * FLEET_ENTRY_BYTES];
};

int xadd_queue(struct replication *e, redisContext *c, const char *stream, uint64_t shape, uint64_t seq,
	       const unsigned char *buf, size_t len, char *why, size_t wl)
{
	char shape_text[17], seq_text[24];
	unsigned char mac[FLEET_MAC_BYTES];
	fleet_shape_text(shape, shape_text);
	snprintf(seq_text, sizeof(seq_text), "%" PRIu64, seq);
	fleet_mac(&e->key, e->cfg.node, strlen(e->cfg.node), shape, seq, buf, len, mac);
	const char *argv[] = { "XADD",          stream,
			       "MAXLEN",        "~",
			       e->retention,    "*",
			       FLEET_F_VERSION, FLEET_STREAM_VERSION,
			       FLEET_F_NODE,    e->cfg.node,
			       FLEET_F_SHAPE,   shape_text,
			       FLEET_F_SEQ,     seq_text,
			       FLEET_F_BATCH,   (const char *)buf,
			       FLEET_F_MAC,     (const char *)mac };
	size_t lens[18];
	for (int j = 0; j < 15; j++)
		lens[j] = strlen(argv[j]);
	lens[15] = len;
	lens[16] = strlen(FLEET_F_MAC);
	lens[17] = FLEET_MAC_BYTES;
	if (redisAppendCommandArgv(c, 18, argv, lens) != REDIS_OK) {
		snprintf(why, wl, "XADD %s: %s", stream, c->errstr);
		return -EIO;
	}
	return 0;
}

int wait_queue(struct replication *e, redisContext *c)
{
	if (e->cfg.replicas_wait == 0)
		return 0;
	char n[24], ms[24];
	snprintf(n, sizeof(n), "%" PRIu64, e->cfg.replicas_wait);
	snprintf(ms, sizeof(ms), "%d", REPLICAS_WAIT_MS);
	const char *argv[] = { "WAIT", n, ms };
	return redisAppendCommandArgv(c, 3, argv, NULL) == REDIS_OK ? 1 : -EIO;
}

/* WAIT answered @p got replicas: said in the state (and the log, when it
 * changes and every LOG_EVERY_MS) while below replicas_wait. */
static int wait_answered(struct replication *e, long long got)
{
	uint64_t want = e->cfg.replicas_wait, now = mono_ms();
	char why[REPL_ERROR_MAX] = "";
	int short_ = got < 0 || (uint64_t)got < want;
	e->wait_short_ms = !short_ ? 0 : e->wait_short_ms ? e->wait_short_ms : now;
	if (short_ && now - e->wait_short_ms < REPLICAS_WAIT_SAY_MS)
		return -EAGAIN; /* asked again; said only if it lasts */
	if (short_)
		snprintf(why, sizeof(why),
			 "WAIT %" PRIu64 ": %lld of %" PRIu64 " replicas acknowledged, for %" PRIu64
			 " ms now; entries stay in the journals and are sent again until they do (replicas_wait)",
			 want, got, want, now - e->wait_short_ms);
	pthread_mutex_lock(&e->lock);
	int was = e->wait_why[0] != '\0';
	snprintf(e->wait_why, sizeof(e->wait_why), "%s", why);
	int say = why[0] && (!was || now - e->wait_log_ms >= LOG_EVERY_MS);
	if (say)
		e->wait_log_ms = now;
	pthread_mutex_unlock(&e->lock);
	if (say)
		log_msg(LOG_WARNING, "replication: sender: %s", why);
	else if (was && !why[0])
		log_msg(LOG_NOTICE, "replication: sender: %" PRIu64 " replicas acknowledge again", want);
	return why[0] ? -EAGAIN : 0;
}

int confirm_replies(struct replication *e, redisContext *c, const char *stream, size_t pending, int waited, char *why,
		    size_t wl)
{
	int rc = 0;
	for (size_t i = 0; i < pending + (waited > 0); i++) {
		void *p = NULL;
		if (redisGetReply(c, &p) != REDIS_OK || p == NULL) {
			snprintf(why, wl, "%s %s: %s", i < pending ? "XADD" : "WAIT", stream,
				 c->errstr[0] ? c->errstr : "no reply");
			return -EIO;
		}
		redisReply *r = p;
		if (i < pending && r->type == REDIS_REPLY_ERROR && rc == 0) {
			if (strncmp(r->str, "READONLY", 8) == 0) {
				/* A master demoted to a replica: ask again. */
				snprintf(why, wl, "XADD %s: %s (a replica now: asking for the master again)", stream,
					 r->str);
				rc = -EIO;
			} else {
				stream_refusal(stream, r->str, why, wl);
				rc = -EPROTO;
			}
		} else if (i == pending && rc == 0) {
			rc = wait_answered(e, r->type == REDIS_REPLY_INTEGER ? r->integer : -1);
			if (rc < 0)
				snprintf(why, wl, "WAIT %" PRIu64 " fell short", e->cfg.replicas_wait);
		}
		freeReplyObject(r);
	}
	return rc;
}

/* ---- a batch not confirmed ------------------------------------------------ */

size_t confirm_skip(struct rfilter *f, unsigned ring, size_t n)
{
	if (ring >= f->nconfirmed || f->confirmed[ring] == 0)
		return 0;
	/* Fewer than confirmed: the ring was reset (damage); none are. */
	if (f->confirmed[ring] > n) {
		f->confirmed[ring] = 0;
		return 0;
	}
	return f->confirmed[ring];
}

void confirm_done(struct rfilter *f, unsigned ring)
{
	if (ring < f->nconfirmed)
		f->confirmed[ring] = 0;
}

void confirm_keep(struct rfilter *f, unsigned ring, size_t n, uint64_t sent, uint64_t ahead, uint64_t seq,
		  uint64_t shape, const unsigned char *buf, size_t len, uint64_t serial)
{
	struct unconfirmed *u = f->pend != NULL ? f->pend : malloc(sizeof(*u));
	if (u == NULL)
		return; /* sent again with a new sequence: at least once, as before */
	*u = (struct unconfirmed){ .ring = ring,
				   .n = n,
				   .sent = sent,
				   .ahead = ahead,
				   .seq = seq,
				   .shape = shape,
				   .serial = serial,
				   .len = len };
	memcpy(u->buf, buf, len);
	f->pend = u;
}

void confirm_free(struct rfilter *f)
{
	free(f->pend);
	free(f->confirmed);
	f->pend = NULL;
	f->confirmed = NULL;
	f->nconfirmed = 0;
}

/* The batch is confirmed: its entries, at the ring's head, are skipped
 * by the drain (consumed, never sent again). 0 or -ENOMEM. */
static int confirmed(struct replication *e, struct rfilter *f, struct unconfirmed *u)
{
	if (u->ring >= f->nconfirmed) {
		uint32_t *a = realloc(f->confirmed, (u->ring + 1) * sizeof(*a));
		if (a == NULL)
			return -ENOMEM;
		memset(a + f->nconfirmed, 0, (u->ring + 1 - f->nconfirmed) * sizeof(*a));
		f->confirmed = a;
		f->nconfirmed = u->ring + 1;
	}
	f->confirmed[u->ring] += (uint32_t)u->n;
	pthread_mutex_lock(&e->lock);
	f->sent += u->sent;
	f->ahead += u->ahead;
	pthread_mutex_unlock(&e->lock);
	free(u);
	f->pend = NULL;
	return 0;
}

int confirm_settle(struct replication *e, redisContext *c, uint64_t serial, struct rfilter *f, char *why, size_t wl)
{
	struct unconfirmed *u = f->pend;
	if (u == NULL)
		return 0;
	size_t pending = 0;
	if (u->serial != serial) {
		/* Not on this connection (another master, maybe): sent again,
		 * the same bytes and sequence. */
		if (xadd_queue(e, c, f->stream, u->shape, u->seq, u->buf, u->len, why, wl) < 0)
			return -EIO;
		pending = 1;
	}
	int waited = wait_queue(e, c);
	if (waited < 0) {
		snprintf(why, wl, "WAIT: %s", c->errstr);
		return -EIO;
	}
	int rc = confirm_replies(e, c, f->stream, pending, waited, why, wl);
	u->serial = rc == -EAGAIN ? serial : 0;
	if (rc < 0)
		return rc;
	if (confirmed(e, f, u) < 0) {
		/* No memory to remember it by: it goes again, a new sequence. */
		free(u);
		f->pend = NULL;
	}
	return 0;
}
