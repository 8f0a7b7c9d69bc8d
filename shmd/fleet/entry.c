/*
 * entry.c - a stream entry read and judged (engine.h): its fields, its
 * tags against the fleet's key, its sender's sequence against the last
 * one applied; each refusal counted by kind and logged now and then.
 *
 * The order matters: nothing an entry says is believed before its header
 * tag verifies (its name, shape and sequence), nor its batch before the
 * entry tag does. A node's own entries are checked too: a forger writing
 * this node's name is an impersonator, not "our own entry".
 */
#include <inttypes.h>
#include <string.h>

#include "shmd/base/log.h"
#include "shmd/fleet/engine.h"

/* A string field, or NULL. */
static const redisReply *str_field(const redisReply *fields, const char *name)
{
	const redisReply *v = reply_field(fields, name);
	return v != NULL && v->type == REDIS_REPLY_STRING ? v : NULL;
}

/* 0 if the entry has this version's fields, well formed. */
static int parse_fields(const redisReply *fields, struct entry_fields *ef)
{
	ef->node = str_field(fields, FLEET_F_NODE);
	ef->shape = str_field(fields, FLEET_F_SHAPE);
	ef->seq = str_field(fields, FLEET_F_SEQ);
	ef->batch = str_field(fields, FLEET_F_BATCH);
	ef->mac = str_field(fields, FLEET_F_MAC);
	if (ef->node == NULL || ef->shape == NULL || ef->seq == NULL || ef->batch == NULL || ef->mac == NULL)
		return -1;
	if (ef->node->len == 0 || ef->node->len > FLEET_NODE_MAX ||
	    fleet_shape_parse(ef->shape->str, ef->shape->len, &ef->their_shape) < 0 ||
	    fleet_u64_parse(ef->seq->str, ef->seq->len, &ef->seqno) < 0 || ef->seqno == 0)
		return -1;
	return 0;
}

static int named(const struct entry_fields *ef, const char *node)
{
	size_t len = strlen(node);
	return ef->node->len == len && !memcmp(ef->node->str, node, len);
}

/* The entry of @p id in the filter's table of senders, or NULL. */
static struct shmf_fleet_peer *peer_of(struct rfilter *f, uint64_t id)
{
	for (unsigned i = 0; i < SHMF_FLEET_PEERS; i++)
		if (f->peers[i].node == id)
			return &f->peers[i];
	return NULL;
}

/* The last sequence applied (or skipped as this node's) from @p id: its
 * entry's, or the floor for a sender the table does not hold. */
static uint64_t last_seq(struct rfilter *f, uint64_t id)
{
	const struct shmf_fleet_peer *p = peer_of(f, id);
	return p != NULL ? p->seq : f->floor;
}

/* Say why the entry is refused: in the filter's last_refused always, in
 * the log at most every LOG_EVERY_MS per kind. */
static void say_refused(struct replication *e, struct rfilter *f, const struct entry_fields *ef, int kind,
			uint64_t shape)
{
	static const char *const why[REPL_REFUSED_KINDS] = {
		[REPL_FORGED] = "its tags do not verify with this node's key: forged by someone who may write to "
				"Redis, or sent by a node whose [replication] secret is not this node's",
		[REPL_ALTERED] = "its header verifies but its batch does not: a member's entry changed in Redis",
		[REPL_REPLAYED] = "its sequence is not above the last one applied from that node: a copy of an "
				  "entry already applied",
		[REPL_IMPERSONATING] = "it names a member of the fleet but its tags do not verify with this node's "
				       "key: forged, or that node's [replication] secret is not this node's",
		[REPL_UNSIGNED] = "it has no tags (stream entry version 1): that node runs a shmd older than "
				  "authenticated entries, or a client wrote it; every node needs a shmd that signs "
				  "with the [replication] secret's key",
	};
	char msg[REPL_ERROR_MAX];
	snprintf(msg, sizeof(msg), "refusing a stream entry from node %.*s (%s: %s)%s",
		 ef->node != NULL ? (int)ef->node->len : 6, ef->node != NULL ? ef->node->str : "(none)",
		 repl_refused_name[kind], why[kind],
		 ef->node != NULL && ef->their_shape != shape && kind != REPL_UNSIGNED
			 ? "; its shape is not this filter's either"
			 : "");
	pthread_mutex_lock(&e->lock);
	snprintf(f->last_refused, sizeof(f->last_refused), "%s", msg);
	pthread_mutex_unlock(&e->lock);
	uint64_t now = mono_ms();
	if (f->refused_log_ms[kind] != 0 && now - f->refused_log_ms[kind] < LOG_EVERY_MS)
		return;
	f->refused_log_ms[kind] = now;
	log_msg(LOG_WARNING,
		"filter '%s': %s; further ones are counted in refused_%s (SHMF.REPLICATION's "
		"last_refused says the latest)",
		f->name, msg, repl_refused_name[kind]);
}

/* Refuse the entry as @p kind. */
static enum entry_verdict refuse(struct replication *e, struct rfilter *f, const struct entry_fields *ef, int kind,
				 uint64_t shape, int *out)
{
	*out = kind;
	say_refused(e, f, ef, kind, shape);
	return ENTRY_REFUSED;
}

enum entry_verdict entry_judge(struct replication *e, struct rfilter *f, const redisReply *fields, uint64_t shape,
			       struct entry_fields *ef, int *kind)
{
	*ef = (struct entry_fields){ 0 };
	if (fields->type != REDIS_REPLY_ARRAY)
		return ENTRY_MALFORMED;
	ef->version = str_field(fields, FLEET_F_VERSION);
	if (ef->version != NULL && !strcmp(ef->version->str, FLEET_STREAM_VERSION_UNSIGNED) &&
	    (ef->node = str_field(fields, FLEET_F_NODE)) != NULL && ef->node->len > 0 &&
	    ef->node->len <= FLEET_NODE_MAX)
		return refuse(e, f, ef, REPL_UNSIGNED, shape, kind);
	ef->node = NULL;
	if (ef->version == NULL || strcmp(ef->version->str, FLEET_STREAM_VERSION) != 0 || parse_fields(fields, ef) < 0)
		return ENTRY_MALFORMED;
	uint64_t id = fleet_node_id(ef->node->str, ef->node->len);
	int mac = fleet_mac_verify(&e->key, ef->node->str, ef->node->len, ef->their_shape, ef->seqno, ef->batch->str,
				   ef->batch->len, (const unsigned char *)ef->mac->str, ef->mac->len);
	if (mac == FLEET_MAC_HEADER)
		return refuse(e, f, ef, id == e->self_id || peer_of(f, id) != NULL ? REPL_IMPERSONATING : REPL_FORGED,
			      shape, kind);
	if (mac == FLEET_MAC_BATCH)
		return refuse(e, f, ef, REPL_ALTERED, shape, kind);
	if (ef->seqno <= last_seq(f, id))
		return refuse(e, f, ef, REPL_REPLAYED, shape, kind);
	if (named(ef, e->cfg.node))
		return ENTRY_OWN;
	return ef->their_shape != shape ? ENTRY_FOREIGN : ENTRY_APPLY;
}

void entry_seen(struct replication *e, struct rfilter *f, const struct entry_fields *ef)
{
	(void)e;
	uint64_t id = fleet_node_id(ef->node->str, ef->node->len);
	struct shmf_fleet_peer *p = peer_of(f, id);
	if (p == NULL)
		p = peer_of(f, 0);
	if (p == NULL) {
		/* Full: forget the sender heard from longest ago (sequences
		 * are wall-clock microseconds: the lowest), and raise the
		 * floor to its sequence, so that its old entries stay refused. */
		p = &f->peers[0];
		for (unsigned i = 1; i < SHMF_FLEET_PEERS; i++)
			if (f->peers[i].seq < p->seq)
				p = &f->peers[i];
		if (p->seq > f->floor)
			f->floor = p->seq;
	}
	p->node = id;
	p->seq = ef->seqno;
}
