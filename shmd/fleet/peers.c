/*
 * peers.c - announcements (engine.h): where the other nodes can reach
 * this node's TCP listener to copy a filter from it, and with what
 * credentials, published in Redis; and theirs read back and verified.
 *
 * One hash, <stream_prefix>@nodes ('@' is in no filter name, so no
 * stream has its name), one field per node: its announcement sealed with
 * the fleet's key (fleet_announce_seal(): XChaCha20-Poly1305, the node
 * name bound in). Whoever may write to Redis can write a field, but
 * without the secret cannot make one that opens, nor move one node's to
 * another's name, nor read the credentials. A field that does not open is
 * counted, logged and never used.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmd/base/log.h"
#include "shmd/fleet/engine.h"

#define ANNOUNCE_VERSION "shmf-peer 1"

/* HSET this node's announcement, if it has an address. 0, or -EIO. */
static int announce(struct replication *e, redisContext *c, const char *key)
{
	const struct repl_config *cfg = &e->cfg;
	if (cfg->announce[0] == '\0')
		return 0;
	char text[FLEET_ANNOUNCE_MAX + 1];
	int n = snprintf(text, sizeof(text), "%s\n%s\n%s\n%s\n%" PRIu64, ANNOUNCE_VERSION, cfg->announce,
			 cfg->announce_user, cfg->announce_password, wall_ms());
	if (n < 0 || (size_t)n >= sizeof(text))
		return 0; /* config.c bounds every field: cannot happen */
	unsigned char sealed[FLEET_ANNOUNCE_MAX + FLEET_ANNOUNCE_OVER];
	size_t len = fleet_announce_seal(&e->key, cfg->node, text, (size_t)n, sealed);
	const char *argv[] = { "HSET", key, cfg->node, (const char *)sealed };
	size_t lens[] = { 4, strlen(key), strlen(cfg->node), len };
	redisReply *r = redisCommandArgv(c, 4, argv, lens);
	if (r == NULL)
		return -EIO;
	if (r->type == REDIS_REPLY_ERROR && strcmp(e->announce_log, r->str) != 0) {
		snprintf(e->announce_log, sizeof(e->announce_log), "%s", r->str);
		log_msg(LOG_ERR, "replication: cannot announce this node in %s: %s; the others cannot repair from it",
			key, r->str);
	}
	freeReplyObject(r);
	return 0;
}

/* "HOST:PORT" (the host maybe in brackets) into @p p. 0, or -1. */
static int split_address(const char *v, size_t len, struct peer_addr *p)
{
	const char *colon = memrchr(v, ':', len);
	if (colon == NULL || colon == v)
		return -1;
	uint64_t port;
	if (fleet_u64_parse(colon + 1, len - (size_t)(colon + 1 - v), &port) < 0 || port == 0 || port > 65535)
		return -1;
	size_t hl = (size_t)(colon - v);
	if (v[0] == '[' && hl >= 3 && v[hl - 1] == ']')
		v++, hl -= 2;
	if (hl >= sizeof(p->host))
		return -1;
	memcpy(p->host, v, hl);
	p->host[hl] = '\0';
	p->port = (int)port;
	return 0;
}

/* The text of an announcement into @p p: version, address, user,
 * password, time, one a line (user and password may be empty). 0, or -1. */
static int parse_text(char *text, struct peer_addr *p)
{
	char *f[5];
	int n = 0;
	for (char *at = text; at != NULL && n < 5; n++) {
		f[n] = at;
		char *nl = strchr(at, '\n');
		if (nl != NULL)
			*nl++ = '\0';
		at = nl;
	}
	if (n != 5 || strcmp(f[0], ANNOUNCE_VERSION) != 0 || split_address(f[1], strlen(f[1]), p) < 0 ||
	    strlen(f[2]) >= sizeof(p->user) || strlen(f[3]) >= sizeof(p->password) ||
	    fleet_u64_parse(f[4], strlen(f[4]), &p->at_ms) < 0)
		return -1;
	snprintf(p->user, sizeof(p->user), "%s", f[2]);
	snprintf(p->password, sizeof(p->password), "%s", f[3]);
	return 0;
}

/* Open one field of the hash: node name @p name, sealed @p v. 0 with
 * @p p filled, or -1 (counted and logged by the caller). */
static int peer_open(struct replication *e, const redisReply *name, const redisReply *v, struct peer_addr *p)
{
	char text[FLEET_ANNOUNCE_MAX + 1];
	if (name->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING || name->len == 0 ||
	    name->len > FLEET_NODE_MAX || memchr(name->str, '\0', name->len) != NULL)
		return -1;
	memset(p, 0, sizeof(*p));
	memcpy(p->node, name->str, name->len);
	if (fleet_announce_open(&e->key, p->node, (const unsigned char *)v->str, v->len, text) < 0)
		return -1;
	return parse_text(text, p);
}

/* HGETALL the announcements; the ones that verify, but this node's,
 * become e->peers. 0, or -EIO. */
static int read_peers(struct replication *e, redisContext *c, const char *key)
{
	redisReply *r = redisCommand(c, "HGETALL %s", key);
	if (r == NULL)
		return -EIO;
	struct peer_addr got[REPL_NODES_MAX];
	unsigned n = 0;
	uint64_t bad = 0;
	char bad_name[FLEET_NODE_MAX + 1] = "";
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
		const redisReply *name = r->element[i];
		if (peer_open(e, name, r->element[i + 1], &got[n]) < 0) {
			bad++;
			if (name->type == REDIS_REPLY_STRING)
				snprintf(bad_name, sizeof(bad_name), "%.*s", (int)(name->len > 64 ? 64 : name->len),
					 name->str);
			continue;
		}
		if (strcmp(got[n].node, e->cfg.node) != 0 && n + 1 < REPL_NODES_MAX)
			n++;
	}
	freeReplyObject(r);
	pthread_mutex_lock(&e->lock);
	memcpy(e->peers, got, n * sizeof(got[0]));
	e->npeers = n;
	int first = bad && e->announce_refused == 0;
	e->announce_refused += bad;
	pthread_mutex_unlock(&e->lock);
	if (first)
		log_msg(LOG_WARNING,
			"replication: %" PRIu64 " announcements in %s do not verify (node '%s'): written by someone "
			"without the fleet's secret, or a node of another secret; never repaired from",
			bad, key, bad_name);
	return 0;
}

int peers_refresh(struct replication *e, redisContext *c)
{
	uint64_t now = mono_ms();
	pthread_mutex_lock(&e->lock);
	int due = e->peers_wanted || e->announce_ms == 0 || now - e->announce_ms >= ANNOUNCE_EVERY_MS;
	e->peers_wanted = 0;
	pthread_mutex_unlock(&e->lock);
	if (!due)
		return 0;
	e->announce_ms = now;
	char key[REPL_PREFIX_MAX + 8];
	snprintf(key, sizeof(key), "%s@nodes", e->cfg.stream_prefix);
	if (announce(e, c, key) < 0 || read_peers(e, c, key) < 0)
		return -EIO;
	return 0;
}
