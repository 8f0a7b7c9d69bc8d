/*
 * repair.c - the fleet engine's repair thread (engine.h): a replicated
 * filter that knows it lacks entries repairs itself from a peer, with no
 * operator.
 *
 * A filter lacks entries when its stream lost some it had not applied
 * (trimmed past its cursor, deleted, reset by a Redis restart without its
 * data: stream-check.c), or when another node says it lost adds (its
 * journal overflowed: it sends a signed entry with an empty batch, and
 * its adds are in its own copy only). Then:
 *
 *   Bloom   the peer's copy is ORed into this node's, chunk by chunk, as
 *           shmctl pull copies one (BF.SCANDUMP over the peer's TCP
 *           listener, each chunk checked as BF.LOADCHUNK checks it), each
 *           section into the live generation of its window, word by word
 *           with fetch-or as adds set bits (merge.c does the same with a
 *           file). A union: nothing this node has is lost, checks and adds
 *           go on throughout.
 *   cuckoo  counts cannot be merged; with auto_repair = pull the peer's
 *           copy replaces this node's (CF.SCANDUMP from the peer,
 *           CF.LOADCHUNK into this shmd over its own socket, as shmctl
 *           pull does), cursor and senders' sequences and all. It loses
 *           the adds made here that were still in the journal. Without
 *           pull, it stays diverged (a peer's overflow notice makes it
 *           so: follower.c), saying what to do.
 *
 * Peers come from their announcements (peers.c), which verify with the
 * fleet's key; a peer whose filter has another shape or seed (the shape
 * fingerprint of its dump's header is not ours) is refused and counted.
 * The thread talks to peers' listeners and to this shmd only, never to
 * Redis; the follower goes on meanwhile.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errmsg.h"
#include "libclient/rundir.h"
#include "shmd/base/log.h"
#include "shmd/fleet/engine.h"
#include "shmd/store/generations.h"
#include "shmd/store/scandump.h"

int repair_want_locked(struct replication *e, struct rfilter *f, const char *from, size_t fromlen)
{
	if (e->cfg.auto_repair == REPL_REPAIR_OFF ||
	    (f->type == SHMF_TYPE_CUCKOO && e->cfg.auto_repair != REPL_REPAIR_PULL))
		return 0;
	f->repair_want = 1;
	if (from != NULL && fromlen <= FLEET_NODE_MAX)
		snprintf(f->repair_from, sizeof(f->repair_from), "%.*s", (int)fromlen, from);
	else
		f->repair_from[0] = '\0';
	f->repair_next_ms = 0;
	pthread_cond_broadcast(&e->cond);
	return 1;
}

/* One repair from one peer. */
struct rjob {
	struct replication *e;
	struct rfilter *f;
	const struct peer_addr *p;
	redisContext *peer, *local;
	struct shmf_slot copy;  /* the local filter's slot */
	struct ring_maps *maps; /* Bloom: its live generations, mapped */
	struct shmf_snap_header hdr;
	struct shmf_snap_section sec[SHMF_SNAP_SECTIONS];
	uint64_t bytes, chunks, total;
	int shape_refused;
	char err[REPL_ERROR_MAX];
};

static int fail(struct rjob *j, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct rjob *j, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(j->err, sizeof(j->err), fmt, ap);
	va_end(ap);
	return rc;
}

/* Connect to the peer's listener and AUTH. 0, or -EIO with j->err. */
static int peer_connect(struct rjob *j)
{
	const struct peer_addr *p = j->p;
	struct timeval tv = { .tv_sec = 5 };
	j->peer = redisConnectWithTimeout(p->host, p->port, tv);
	if (j->peer == NULL || j->peer->err)
		return fail(j, -EIO, "cannot connect to node %s at %s:%d: %s", p->node, p->host, p->port,
			    j->peer ? j->peer->errstr : "out of memory");
	struct timeval op = { .tv_sec = 60 };
	redisSetTimeout(j->peer, op);
	if (p->password[0] == '\0')
		return 0;
	const char *argv[] = { "AUTH", p->user[0] ? p->user : p->password, p->password };
	redisReply *r = redisCommandArgv(j->peer, p->user[0] ? 3 : 2, argv, NULL);
	int rc = r == NULL ? fail(j, -EIO, "node %s: AUTH: %s", p->node, j->peer->errstr)
		 : r->type == REDIS_REPLY_ERROR
			 ? fail(j, -EIO, "node %s refused the credentials it announced: %s", p->node, r->str)
			 : 0;
	if (r != NULL)
		freeReplyObject(r);
	return rc;
}

/* The shape the dump's header describes, as fleet_shape() of a slot. */
static uint64_t dump_shape(const struct shmf_snap_header *h)
{
	struct shmf_slot s;
	memset(&s, 0, sizeof(s));
	s.type = h->type;
	s.k = h->k;
	s.capacity = h->capacity;
	s.fpr_bits = h->fpr_bits;
	s.nblocks = h->nblocks;
	s.nbuckets = h->nbuckets;
	s.window_secs = h->window_secs;
	s.window_gens = h->window_gens;
	s.expansion = h->expansion;
	s.flags = (h->flags & SHMF_SNAP_F_NONSCALING) ? SHMF_SLOT_NONSCALING : 0;
	s.bucket_size = h->bucket_size;
	return fleet_shape(&s, h->seed);
}

/* The header chunk: checked, and of our shape (type, size, rate, window,
 * seed), else refused. 0, or an error with j->err. */
static int take_head(struct rjob *j, const redisReply *data, uint64_t iter, uint64_t shape)
{
	struct shmf_chunk_header ch;
	char what[FLEET_NODE_MAX + 64], err[REPL_ERROR_MAX];
	snprintf(what, sizeof(what), "node %s's dump", j->p->node);
	int rc = scandump_chunk_check(what, data->str, data->len, &ch, err, sizeof(err));
	if (rc == 0)
		rc = scandump_head_check(what, &ch, data->str + sizeof(ch), iter, j->f->type, &j->hdr, j->sec, err,
					 sizeof(err));
	if (rc < 0)
		return fail(j, rc, "%s", err);
	j->total = ch.total;
	if (dump_shape(&j->hdr) != shape || j->hdr.scheme != SHMF_SCHEME_NATIVE ||
	    (j->hdr.flags & SHMF_SNAP_F_LAYERED)) {
		char theirs[17], ours[17];
		fleet_shape_text(dump_shape(&j->hdr), theirs);
		fleet_shape_text(shape, ours);
		j->shape_refused = 1;
		return fail(j, SHMF_E_INVAL,
			    "node %s's filter '%s' has another shape (%s, ours %s: type, size, error rate, window, "
			    "layers or secret differ): never repaired from",
			    j->p->node, j->f->name, theirs, ours);
	}
	return 0;
}

/* A Bloom payload chunk ORed into the live generation of its section's
 * window. 0, or an error with j->err. */
static int or_chunk(struct rjob *j, const redisReply *data)
{
	struct shmf_chunk_header ch;
	char err[REPL_ERROR_MAX];
	int rc = scandump_chunk_check("a payload chunk", data->str, data->len, &ch, err, sizeof(err));
	if (rc < 0)
		return fail(j, rc, "node %s: %s", j->p->node, err);
	if (ch.kind != SHMF_CHUNK_KIND_DATA || ch.section >= j->hdr.nsections || ch.offset % 8 != 0 ||
	    ch.length % 8 != 0)
		return fail(j, SHMF_E_FORMAT, "node %s: a payload chunk out of place", j->p->node);
	const struct shmf_slot *c = &j->copy;
	int t = c->window_secs == 0 ? 0 : -1;
	for (unsigned g = 0; t < 0 && g < j->maps->n; g++)
		if (c->live_created[g] / c->window_secs == j->sec[ch.section].created_epoch / c->window_secs)
			t = (int)g;
	if (t < 0)
		return 0; /* its window has no live generation here: retired, or not begun */
	const struct shmf_data_map *dm = &j->maps->dm[t];
	if (ch.offset + ch.length > dm->hdr.nblocks * SHMF_BLOCK_BYTES)
		return fail(j, SHMF_E_FORMAT, "node %s: a payload chunk past the filter's end", j->p->node);
	const uint64_t *src = (const uint64_t *)(const void *)(data->str + sizeof(ch));
	_Atomic uint64_t *dst = (_Atomic uint64_t *)(dm->blocks + ch.offset / 8);
	for (size_t w = 0; w < ch.length / 8; w++) {
		uint64_t v;
		memcpy(&v, &src[w], sizeof(v)); /* the reply's bytes need not be aligned */
		/* relaxed, as an add's fetch-or: bits are only ever set */
		if (v != 0)
			atomic_fetch_or_explicit(&dst[w], v, memory_order_relaxed);
	}
	return 0;
}

/* A cuckoo chunk loaded into this shmd (its own socket), as shmctl pull
 * does. 0, or an error with j->err. */
static int load_chunk(struct rjob *j, const char *iter, const redisReply *data)
{
	const char *argv[] = { "CF.LOADCHUNK", j->f->name, iter, data->str };
	size_t lens[] = { 12, strlen(j->f->name), strlen(iter), data->len };
	redisReply *r = redisCommandArgv(j->local, 4, argv, lens);
	int rc = r == NULL ? fail(j, -EIO, "this shmd's socket: %s", j->local->errstr)
		 : r->type == REDIS_REPLY_ERROR
			 ? fail(j, -EIO, "this shmd refused node %s's chunk: %s", j->p->node, r->str)
			 : 0;
	if (r != NULL)
		freeReplyObject(r);
	return rc;
}

enum { DUMP_DONE, DUMP_AGAIN };

/* One chunk of the dump; *next its iterator (0: the end). */
static int dump_step(struct rjob *j, char *iter, size_t iterlen, uint64_t shape, long long *next)
{
	const char *verb = j->f->type == SHMF_TYPE_CUCKOO ? "CF.SCANDUMP" : "BF.SCANDUMP";
	const char *argv[] = { verb, j->f->name, iter };
	redisReply *r = redisCommandArgv(j->peer, 3, argv, NULL);
	if (r == NULL)
		return fail(j, -EIO, "node %s: %s: %s", j->p->node, verb, j->peer->errstr);
	int rc = 0;
	if (r->type == REDIS_REPLY_ERROR)
		rc = strstr(r->str, "start the dump again")
			     ? DUMP_AGAIN
			     : fail(j, -EIO, "node %s: %s: %s", j->p->node, verb, r->str);
	else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_INTEGER ||
		 (r->element[0]->integer != 0 && r->element[1]->type != REDIS_REPLY_STRING))
		rc = fail(j, -EIO, "node %s: an unexpected reply to %s", j->p->node, verb);
	else if ((*next = r->element[0]->integer) != 0) {
		uint64_t it = (uint64_t)*next;
		snprintf(iter, iterlen, "%lld", *next);
		if (j->chunks == 0)
			rc = take_head(j, r->element[1], it, shape);
		if (rc == 0 && j->f->type == SHMF_TYPE_CUCKOO)
			rc = load_chunk(j, iter, r->element[1]);
		else if (rc == 0 && j->chunks > 0)
			rc = or_chunk(j, r->element[1]);
		j->chunks++;
		j->bytes += r->element[1]->len;
	}
	freeReplyObject(r);
	return rc;
}

/* The whole dump, taken again when the peer's filter changed during it.
 * 0, or an error with j->err. */
static int dump_all(struct rjob *j, uint64_t shape)
{
	for (int tries = 0; tries < REPAIR_TRIES; tries++) {
		char iter[32] = "0";
		long long next = 1;
		j->chunks = j->total = 0;
		int rc = 0;
		while (rc == 0 && next != 0)
			rc = dump_step(j, iter, sizeof(iter), shape, &next);
		if (rc < 0)
			return rc;
		if (rc == 0 && j->chunks == 0)
			return fail(j, -EAGAIN, "node %s's dump of '%s' is empty (an empty cuckoo filter)", j->p->node,
				    j->f->name);
		if (rc == 0 && j->chunks == j->total + 1)
			return 0;
	}
	return fail(j, -EAGAIN, "node %s's filter '%s' changed during each of %d dumps", j->p->node, j->f->name,
		    REPAIR_TRIES);
}

/* This filter's live generations, mapped for the OR (Bloom), or a
 * connection to this shmd for the loads (cuckoo). 0, or an error. */
static int local_open(struct rjob *j)
{
	struct replication *e = j->e;
	char err[REPL_ERROR_MAX];
	if (shmf_slot_read(&e->reg->ctl.slots[j->f->slot], &j->copy) < 0 || strcmp(j->copy.name, j->f->name) != 0 ||
	    j->copy.nlive == 0 || j->copy.nlive > SHMF_RING_MAX)
		return fail(j, SHMF_E_NOTFOUND, "filter '%s' changed under the repair", j->f->name);
	if (j->f->type == SHMF_TYPE_CUCKOO) {
		char path[512];
		int rc = shmf_instance_path(e->reg->instance, ".sock", path, sizeof(path));
		if (rc < 0)
			return fail(j, rc, "this shmd's socket: %s", shmf_strerror(rc));
		struct timeval tv = { .tv_sec = 60 };
		j->local = redisConnectUnixWithTimeout(path, tv);
		if (j->local == NULL || j->local->err)
			return fail(j, -EIO, "cannot connect to this shmd's socket %s: %s", path,
				    j->local ? j->local->errstr : "out of memory");
		redisSetTimeout(j->local, tv);
		return 0;
	}
	if ((j->maps = calloc(1, sizeof(*j->maps))) == NULL)
		return fail(j, -ENOMEM, "out of memory");
	int rc = registry_ring_take(e->reg, &j->copy, j->maps, err, sizeof(err));
	if (rc < 0) {
		free(j->maps);
		j->maps = NULL;
		return fail(j, rc, "%s", err);
	}
	return 0;
}

static void job_close(struct rjob *j)
{
	if (j->peer != NULL)
		redisFree(j->peer);
	if (j->local != NULL)
		redisFree(j->local);
	if (j->maps != NULL) {
		registry_ring_release(j->maps);
		free(j->maps);
	}
	j->peer = j->local = NULL;
	j->maps = NULL;
}

/* Repair filter @p f from peer @p p. 0, or an error with j->err. */
static int repair_from(struct replication *e, struct rjob *j, struct rfilter *f, const struct peer_addr *p,
		       uint64_t shape)
{
	memset(j, 0, sizeof(*j));
	j->e = e;
	j->f = f;
	j->p = p;
	int rc = peer_connect(j);
	if (rc == 0)
		rc = local_open(j);
	if (rc == 0)
		rc = dump_all(j, shape);
	job_close(j);
	return rc;
}

/* The peers to try: the node that lost adds (@p from), which alone holds
 * them; else every announced one, the newest announcement first.
 * @return how many. */
static unsigned candidates(struct replication *e, const char *from, struct peer_addr *out)
{
	unsigned n = 0;
	pthread_mutex_lock(&e->lock);
	for (unsigned i = 0; i < e->npeers; i++) {
		if (from[0] != '\0' && strcmp(e->peers[i].node, from) != 0)
			continue;
		unsigned k = n++;
		for (; k > 0 && out[k - 1].at_ms < e->peers[i].at_ms; k--)
			out[k] = out[k - 1];
		out[k] = e->peers[i];
	}
	pthread_mutex_unlock(&e->lock);
	return n;
}

/* The outcome of a repair of @p f: done (rc 0, from @p peer, @p ms and
 * @p bytes), or failed (tried again after a backoff). Logged. */
static void repair_done(struct replication *e, struct rfilter *f, int rc, const char *peer, uint64_t ms, uint64_t bytes,
			const char *why)
{
	pthread_mutex_lock(&e->lock);
	f->repairing = 0;
	if (rc == 0) {
		f->repairs++;
		f->repair_last_ms = ms;
		f->repair_last_bytes = bytes;
		f->repair_bytes += bytes;
		snprintf(f->repair_peer, sizeof(f->repair_peer), "%s", peer);
		f->repair_error[0] = '\0';
		f->repair_backoff_ms = 0;
		f->diverged = 0;
		f->why[0] = '\0';
	} else {
		f->repair_want = 1;
		f->repair_backoff_ms = f->repair_backoff_ms ? f->repair_backoff_ms * 2 : REPAIR_RETRY_MIN_MS;
		if (f->repair_backoff_ms > REPAIR_RETRY_MAX_MS)
			f->repair_backoff_ms = REPAIR_RETRY_MAX_MS;
		f->repair_next_ms = mono_ms() + f->repair_backoff_ms;
		e->peers_wanted = 1;
	}
	int changed = rc < 0 && strcmp(f->repair_error, why) != 0;
	if (rc < 0)
		snprintf(f->repair_error, sizeof(f->repair_error), "%s", why);
	pthread_mutex_unlock(&e->lock);
	if (rc == 0)
		log_msg(LOG_NOTICE, "filter '%s': repaired from node %s in %" PRIu64 " ms (%" PRIu64 " bytes)", f->name,
			peer, ms, bytes);
	else if (changed)
		log_msg(LOG_ERR, "filter '%s': cannot repair it yet: %s; trying again", f->name, why);
}

/* Repair @p f from the first peer that will do. */
static void repair_filter(struct replication *e, struct rfilter *f, struct rjob *j)
{
	struct peer_addr *peers = malloc(REPL_NODES_MAX * sizeof(*peers));
	char from[FLEET_NODE_MAX + 1];
	pthread_mutex_lock(&e->lock);
	uint64_t shape = f->shape;
	snprintf(from, sizeof(from), "%s", f->repair_from);
	f->repair_want = 0;
	f->repairing = 1;
	pthread_mutex_unlock(&e->lock);
	unsigned n = peers != NULL ? candidates(e, from, peers) : 0;
	char why[REPL_ERROR_MAX];
	snprintf(why, sizeof(why), "no %s has announced a listener to repair from (announce, [tcp])",
		 from[0] ? from : "other node");
	uint64_t t0 = mono_ms();
	int rc = -ENOENT;
	for (unsigned i = 0; i < n && rc < 0; i++) {
		rc = repair_from(e, j, f, &peers[i], shape);
		if (rc < 0) {
			snprintf(why, sizeof(why), "%s", j->err);
			pthread_mutex_lock(&e->lock);
			f->repair_refused += j->shape_refused;
			pthread_mutex_unlock(&e->lock);
		}
	}
	if (rc == 0) {
		pthread_mutex_lock(&e->lock);
		if (!strcmp(f->repair_from, from)) /* no other node's notice meanwhile */
			f->repair_from[0] = '\0';
		pthread_mutex_unlock(&e->lock);
	}
	repair_done(e, f, rc, rc == 0 ? j->p->node : "", mono_ms() - t0, j->bytes, why);
	free(peers);
}

void *repair_main(void *arg)
{
	struct replication *e = arg;
	struct rjob *j = calloc(1, sizeof(*j));
	struct round rd;
	if (j == NULL) {
		log_msg(LOG_ERR, "replication: repair: out of memory; nothing repairs itself");
		return NULL;
	}
	for (;;) {
		if (!round_next(e, &rd))
			break;
		uint64_t now = mono_ms();
		for (size_t i = 0; i < rd.n; i++) {
			struct rfilter *f = rd.f[i];
			pthread_mutex_lock(&e->lock);
			int due = f->live && f->repair_want && now >= f->repair_next_ms;
			pthread_mutex_unlock(&e->lock);
			if (due)
				repair_filter(e, f, j);
		}
		round_release(e, &rd);
		nap(e, 100000000); /* 100 ms, or a want signalled */
	}
	free(j);
	return NULL;
}
