/*
 * sentinel.c - the master found through Redis Sentinel (engine.h): the
 * sentinels asked for the master's address (SENTINEL
 * get-master-addr-by-name), the master checked (ROLE), and the watcher
 * thread, subscribed to +switch-master on one sentinel, which cuts the
 * sender's and the follower's connections to a master that is no longer
 * the master, so that they ask the sentinels again at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "shmd/base/log.h"
#include "shmd/fleet/engine.h"

#define SENTINEL_CONNECT_MS 1000 /* each sentinel: connect, and each command */
#define WATCH_POLL_MS       500  /* the watcher looks at the stop flag this often */

/* A connection to sentinel @p i with its AUTH done, or NULL with why. */
static redisContext *sentinel_connect(struct replication *e, unsigned i, char *why, size_t len)
{
	const struct repl_host *s = &e->cfg.sentinels[i];
	struct timeval tv = { .tv_sec = SENTINEL_CONNECT_MS / 1000, .tv_usec = SENTINEL_CONNECT_MS % 1000 * 1000 };
	redisContext *c = redisConnectWithTimeout(s->host, s->port, tv);
	if (c == NULL || c->err) {
		snprintf(why, len, "%s", c ? c->errstr : "out of memory");
		if (c != NULL)
			redisFree(c);
		return NULL;
	}
	redisSetTimeout(c, tv);
	redisEnableKeepAlive(c);
	redisReply *r = e->cfg.sentinel_password[0] ? redisCommand(c, "AUTH %s", e->cfg.sentinel_password)
						    : redisCommand(c, "PING");
	if (r == NULL || r->type == REDIS_REPLY_ERROR) {
		if (r != NULL && e->cfg.sentinel_password[0])
			snprintf(why, len, "AUTH refused: %s (check sentinel_password)", r->str);
		else if (r != NULL)
			snprintf(why, len, "%s%s", r->str, strstr(r->str, "NOAUTH") ? " (set sentinel_password)" : "");
		else
			snprintf(why, len, "%s", c->errstr[0] ? c->errstr : "no reply");
		if (r != NULL)
			freeReplyObject(r);
		redisFree(c);
		return NULL;
	}
	freeReplyObject(r);
	return c;
}

/* SENTINEL get-master-addr-by-name on @p c: "host:port" into @p addr,
 * host and port apart. 0, or -ENOENT (the sentinel does not know the
 * master) or -EIO, with why. */
static int master_addr(struct replication *e, redisContext *c, char *host, size_t hlen, int *port, char *why,
		       size_t len)
{
	redisReply *r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", e->cfg.master);
	int rc = 0;
	if (r == NULL) {
		snprintf(why, len, "%s", c->errstr[0] ? c->errstr : "no reply");
		rc = -EIO;
	} else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[0]->type == REDIS_REPLY_STRING &&
		   r->element[1]->type == REDIS_REPLY_STRING) {
		snprintf(host, hlen, "%s", r->element[0]->str);
		*port = atoi(r->element[1]->str);
	} else {
		snprintf(why, len, "knows no master '%s'%s%s (check master =)", e->cfg.master,
			 r->type == REDIS_REPLY_ERROR ? ": " : "", r->type == REDIS_REPLY_ERROR ? r->str : "");
		rc = -ENOENT;
	}
	if (r != NULL)
		freeReplyObject(r);
	return rc;
}

/* ROLE on @p c says master. 1, or 0 with what it says in why. */
static int is_master(redisContext *c, char *why, size_t len)
{
	redisReply *r = redisCommand(c, "ROLE");
	int ok = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
		 r->element[0]->type == REDIS_REPLY_STRING && !strcmp(r->element[0]->str, "master");
	if (!ok)
		snprintf(why, len, "ROLE says %s, not master (a failover under way?)",
			 r == NULL                      ? "nothing"
			 : r->type == REDIS_REPLY_ERROR ? r->str
			 : r->type == REDIS_REPLY_ARRAY && r->elements > 0 && r->element[0]->type == REDIS_REPLY_STRING
				 ? r->element[0]->str
				 : "something else");
	if (r != NULL)
		freeReplyObject(r);
	return ok;
}

/* Ask sentinel @p i for the master and connect to it. The connection, or
 * NULL with why. */
static redisContext *master_from(struct replication *e, int t, unsigned i, char *why, size_t len)
{
	char host[REPL_SENTINEL_HOST_MAX], sub[REPL_ERROR_MAX];
	int port = 0;
	redisContext *s = sentinel_connect(e, i, sub, sizeof(sub));
	if (s == NULL) {
		snprintf(why, len, "%s", sub);
		return NULL;
	}
	int rc = master_addr(e, s, host, sizeof(host), &port, sub, sizeof(sub));
	redisFree(s);
	if (rc < 0) {
		snprintf(why, len, "%s", sub);
		return NULL;
	}
	redisContext *m = redis_open_at(e, host, port, sub, sizeof(sub));
	if (m == NULL || !is_master(m, sub, sizeof(sub))) {
		snprintf(why, len, "master %s:%d: %.300s", host, port, sub);
		if (m != NULL)
			redisFree(m);
		return NULL;
	}
	char found[sizeof(e->found[t])];
	snprintf(found, sizeof(found), "sentinel %s:%d, master %s", e->cfg.sentinels[i].host, e->cfg.sentinels[i].port,
		 e->cfg.master);
	pthread_mutex_lock(&e->lock);
	e->sentinel_next = i;
	snprintf(e->addr[t], sizeof(e->addr[t]), "%s:%d", host, port);
	memcpy(e->found[t], found, sizeof(found));
	pthread_mutex_unlock(&e->lock);
	return m;
}

redisContext *sentinel_open(struct replication *e, int t, char *why, size_t len)
{
	char sub[REPL_ERROR_MAX];
	size_t at = 0;
	pthread_mutex_lock(&e->lock);
	unsigned first = e->sentinel_next;
	pthread_mutex_unlock(&e->lock);
	at += (size_t)snprintf(why, len, "no sentinel gave a master '%s' that answers:", e->cfg.master);
	/* The one that answered last first; then the others, in order. */
	for (unsigned k = 0; k < e->cfg.nsentinels; k++) {
		unsigned i = (first + k) % e->cfg.nsentinels;
		redisContext *m = master_from(e, t, i, sub, sizeof(sub));
		if (m != NULL)
			return m;
		if (at < len)
			at += (size_t)snprintf(why + at, len - at, "%s sentinel %s:%d: %s", k ? ";" : "",
					       e->cfg.sentinels[i].host, e->cfg.sentinels[i].port, sub);
	}
	return NULL;
}

/* ---- the kicks ------------------------------------------------------------ */

void sentinel_hold(struct replication *e, int t, const redisContext *c)
{
	pthread_mutex_lock(&e->lock);
	if (e->kick_fd[t] >= 0)
		close(e->kick_fd[t]);
	/* A descriptor of our own on the thread's socket: shutdown() through
	 * it reaches that socket even after the thread closed its own, and it
	 * is never another socket (a number closed and reused would be). */
	e->kick_fd[t] = c != NULL ? fcntl(c->fd, F_DUPFD_CLOEXEC, 0) : -1;
	pthread_mutex_unlock(&e->lock);
}

/* Cut every thread's connection to a Redis other than @p master
 * ("host:port"): it fails its next (or current) command and asks the
 * sentinels again. */
static void kick(struct replication *e, const char *master)
{
	pthread_mutex_lock(&e->lock);
	for (int t = 0; t < 2; t++)
		if (e->kick_fd[t] >= 0 && strcmp(e->addr[t], master) != 0) {
			log_msg(LOG_NOTICE, "replication: %s: leaving %s for the master the sentinels name, %s",
				repl_thread_name[t], e->addr[t], master);
			shutdown(e->kick_fd[t], SHUT_RDWR);
			close(e->kick_fd[t]);
			e->kick_fd[t] = -1;
		}
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

/* ---- the watcher ---------------------------------------------------------- */

/* One message of the subscription: +switch-master "name oldip oldport
 * newip newport" of our master kicks the threads off the old one. */
static void on_message(struct replication *e, const redisReply *r)
{
	char name[REPL_MASTER_MAX], oldip[REPL_SENTINEL_HOST_MAX], newip[REPL_SENTINEL_HOST_MAX], to[320];
	int oldport, newport;
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 || r->element[0]->type != REDIS_REPLY_STRING ||
	    strcmp(r->element[0]->str, "message") != 0 || r->element[2]->type != REDIS_REPLY_STRING)
		return;
	if (sscanf(r->element[2]->str, "%127s %127s %d %127s %d", name, oldip, &oldport, newip, &newport) != 5 ||
	    strcmp(name, e->cfg.master) != 0)
		return;
	snprintf(to, sizeof(to), "%s:%d", newip, newport);
	log_msg(LOG_NOTICE, "replication: the sentinels moved master %s from %s:%d to %s", name, oldip, oldport, to);
	kick(e, to);
}

/* Follow +switch-master on @p c until the connection fails or stop. */
static void watch(struct replication *e, redisContext *c)
{
	redisReply *r = redisCommand(c, "SUBSCRIBE +switch-master");
	if (r == NULL)
		return;
	freeReplyObject(r);
	struct timeval op = { .tv_sec = 5 };
	redisSetTimeout(c, op); /* a message begun arrives whole */
	for (;;) {
		pthread_mutex_lock(&e->lock);
		int stop = e->stop;
		pthread_mutex_unlock(&e->lock);
		if (stop)
			return;
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		int n = poll(&p, 1, WATCH_POLL_MS);
		if (n < 0 && errno != EINTR)
			return;
		if (n <= 0)
			continue;
		void *m = NULL;
		if (redisGetReply(c, &m) != REDIS_OK || m == NULL)
			return;
		do {
			on_message(e, m);
			freeReplyObject(m);
			m = NULL;
		} while (redisGetReplyFromReader(c, &m) == REDIS_OK && m != NULL);
	}
}

void *watcher_main(void *arg)
{
	struct replication *e = arg;
	uint64_t backoff = 0, logged_ms = 0;
	char why[REPL_ERROR_MAX], host[REPL_SENTINEL_HOST_MAX], master[320];
	for (unsigned i = 0;; i = (i + 1) % e->cfg.nsentinels) {
		pthread_mutex_lock(&e->lock);
		int stop = e->stop;
		pthread_mutex_unlock(&e->lock);
		if (stop)
			break;
		redisContext *c = sentinel_connect(e, i, why, sizeof(why));
		int port;
		if (c != NULL && master_addr(e, c, host, sizeof(host), &port, why, sizeof(why)) == 0) {
			/* What moved while no sentinel was watched. */
			snprintf(master, sizeof(master), "%s:%d", host, port);
			kick(e, master);
			backoff = 0;
			watch(e, c);
			snprintf(why, sizeof(why), "%s", c->errstr[0] ? c->errstr : "connection closed");
		}
		if (c != NULL)
			redisFree(c);
		pthread_mutex_lock(&e->lock);
		stop = e->stop;
		pthread_mutex_unlock(&e->lock);
		if (stop)
			break;
		if (mono_ms() - logged_ms >= LOG_EVERY_MS || logged_ms == 0) {
			logged_ms = mono_ms();
			log_msg(LOG_WARNING,
				"replication: sentinel %s:%d: %s; watching the next one for +switch-master (the threads "
				"still ask every sentinel when they reconnect)",
				e->cfg.sentinels[i].host, e->cfg.sentinels[i].port, why);
		}
		backoff = backoff_next(backoff);
		nap(e, backoff * 1000000);
	}
	return NULL;
}
