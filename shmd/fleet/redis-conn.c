/*
 * redis-conn.c - the fleet threads' Redis connections (engine.h): connect
 * and AUTH (to redis =, or to the master the sentinels name: sentinel.c),
 * the backoff, the connection state and what is logged of it; and the
 * engine's clocks and naps.
 */
#include <string.h>

#include "shmd/base/log.h"
#include "shmd/fleet/engine.h"

const char *const repl_thread_name[2] = { "sender", "follower" };

static uint64_t clock_ms(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

uint64_t wall_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

uint64_t wall_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int nap_locked(struct replication *e, uint64_t ns)
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

int nap(struct replication *e, uint64_t ns)
{
	pthread_mutex_lock(&e->lock);
	int stop = nap_locked(e, ns);
	pthread_mutex_unlock(&e->lock);
	return stop;
}

uint64_t backoff_next(uint64_t backoff)
{
	return backoff == 0 ? BACKOFF_MIN_MS : backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
}

const redisReply *reply_field(const redisReply *fields, const char *name)
{
	for (size_t i = 0; i + 1 < fields->elements; i += 2)
		if (fields->element[i]->type == REDIS_REPLY_STRING && !strcmp(fields->element[i]->str, name))
			return fields->element[i + 1];
	return NULL;
}

void conn_state(struct replication *e, int t, int up, const char *why)
{
	pthread_mutex_lock(&e->lock);
	uint64_t now = mono_ms();
	e->up[t] = up;
	if (up) {
		/* Said once after each failure that was said: a connection that
		 * comes and goes does not fill the log. */
		if (e->said_down[t])
			log_msg(LOG_NOTICE, "replication: %s connected to Redis at %s (%s)", repl_thread_name[t],
				e->addr[t], e->found[t]);
		e->said_down[t] = 0;
	} else {
		if (strcmp(e->logged[t], why) != 0 || now - e->error_log_ms[t] >= LOG_EVERY_MS) {
			e->error_log_ms[t] = now;
			e->said_down[t] = 1;
			snprintf(e->logged[t], sizeof(e->logged[t]), "%s", why);
			char where[REPL_MASTER_MAX + REPL_ADDRESS_MAX + 32];
			if (e->cfg.nsentinels > 0)
				snprintf(where, sizeof(where), "Redis master '%s' (Sentinel)", e->cfg.master);
			else
				snprintf(where, sizeof(where), "Redis at %s", e->addr[t]);
			log_msg(LOG_WARNING,
				"replication: %s: %s: %s; disconnected, retrying (adds go on locally and wait in the "
				"journals)",
				repl_thread_name[t], where, why);
		}
		snprintf(e->error[t], sizeof(e->error[t]), "%s", why);
	}
	pthread_mutex_unlock(&e->lock);
}

redisContext *redis_open_at(struct replication *e, const char *host, int port, char *why, size_t whylen)
{
	struct timeval tv = { .tv_sec = 2 };
	const struct repl_config *c = &e->cfg;
	redisContext *rc = port ? redisConnectWithTimeout(host, port, tv) : redisConnectUnixWithTimeout(host, tv);
	if (rc == NULL || rc->err) {
		snprintf(why, whylen, "cannot connect: %s", rc ? rc->errstr : "out of memory");
		if (rc != NULL)
			redisFree(rc);
		return NULL;
	}
	/* Longer than an XREAD BLOCK, so that a stalled Redis is noticed. */
	struct timeval op = { .tv_sec = 5 };
	redisSetTimeout(rc, op);
	if (port != 0)
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

redisContext *redis_connect(struct replication *e, int t, uint64_t *backoff)
{
	char why[REPL_ERROR_MAX];
	redisContext *c;
	if (e->cfg.nsentinels > 0) {
		/* Asked again at every connect: the master may have moved. */
		sentinel_hold(e, t, NULL);
		c = sentinel_open(e, t, why, sizeof(why));
		if (c != NULL)
			sentinel_hold(e, t, c);
	} else {
		c = redis_open_at(e, e->cfg.host, e->cfg.port, why, sizeof(why));
	}
	if (c != NULL) {
		*backoff = 0;
		e->serial[t]++; /* the thread's own */
		conn_state(e, t, 1, "");
		return c;
	}
	conn_state(e, t, 0, why);
	*backoff = backoff_next(*backoff);
	nap(e, *backoff * 1000000);
	return NULL;
}
