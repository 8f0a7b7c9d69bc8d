/*
 * verbs-clients.c - CLIENT LIST, CLIENT INFO and CLIENT KILL: the
 * server's connections described in Redis 7's line format and closed by
 * Redis' filters. The connections are the server loop's (server_view's
 * conns: it lists them and closes another one); without it (a test's
 * session) only the caller's own is known.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shmd/session/queue.h"
#include "shmd/session/session.h"
#include "shmd/verbs/handlers.h"

/* The most a line takes: its fields, a name of CLIENT_NAME_MAX bytes, two
 * addresses, the library's name and version. */
#define CLIENT_LINE_MAX (1024 + CLIENT_NAME_MAX)

/* Redis 7.2's line for connection @p cv, ended by a newline, to @p f. */
static void client_line(FILE *f, const struct client_view *cv)
{
	const struct session *s = cv->sess;
	fprintf(f,
		"id=%llu addr=%s laddr=%s fd=%d name=%s age=%llu idle=%llu flags=%s db=0 sub=0 psub=0 ssub=0 "
		"multi=%d qbuf=%zu qbuf-free=0 argv-mem=0 multi-mem=%zu rbs=0 rbp=0 obl=%zu oll=0 omem=%zu "
		"tot-mem=%zu events=%s cmd=%s user=%s redir=-1 resp=%d lib-name=%s lib-ver=%s\n",
		(unsigned long long)s->id, s->addr, s->laddr, cv->fd, s->name != NULL ? s->name : "",
		(unsigned long long)cv->age, (unsigned long long)cv->idle, s->in_multi ? "x" : "N",
		s->in_multi ? (int)queue_len(s->multi) : -1, cv->qbuf, queue_memory(s->multi), cv->obl, cv->omem,
		cv->tot_mem, cv->events, s->last_cmd != NULL ? s->last_cmd : "NULL",
		s->kind == SESSION_TCP && s->user[0] ? s->user : "default", s->proto, s->lib_name, s->lib_ver);
}

size_t client_list_reply_max(const struct session *s)
{
	size_t n = s->srv != NULL ? s->srv->clients[SESSION_UNIX] + s->srv->clients[SESSION_TCP] : 0;
	return 64 + (n + 1) * CLIENT_LINE_MAX;
}

/* Every connection (the server's, or only @p self's), to @p fn. */
static void each_client(const struct session *self, void (*fn)(const struct client_view *, void *), void *arg)
{
	const struct server_clients *sc = self->srv != NULL ? self->srv->conns : NULL;
	if (sc != NULL) {
		sc->each(sc->loop, fn, arg);
	} else {
		struct client_view cv = { .sess = self, .fd = -1, .events = "" };
		fn(&cv, arg);
	}
}

/* What CLIENT LIST's options keep: a type (only "normal" connections are
 * here) and ids. */
struct list_opts {
	FILE *f;
	int none;        /* TYPE other than normal: no connection */
	const char *ids; /* argv of the ids, or NULL: every id */
	const struct request *req;
	int first_id;
};

static void list_one(const struct client_view *cv, void *arg)
{
	struct list_opts *o = arg;
	int keep = !o->none && o->ids == NULL;
	for (int i = o->first_id; o->ids != NULL && i < o->req->argc && !keep; i++)
		keep = strtoull(o->req->argv[i], NULL, 10) == cv->sess->id;
	if (keep)
		client_line(o->f, cv);
}

/* A type Redis knows: 1 normal, 0 another one (master, replica, pubsub), -1 none. */
static int client_type(const char *t)
{
	if (!strcasecmp(t, "normal"))
		return 1;
	if (!strcasecmp(t, "master") || !strcasecmp(t, "replica") || !strcasecmp(t, "slave") ||
	    !strcasecmp(t, "pubsub"))
		return 0;
	return -1;
}

/* CLIENT LIST's options into @p o: 0, or -1 after replying with the error. */
static int list_options(struct verb_call *c, struct list_opts *o)
{
	const struct request *req = c->req;
	for (int i = 2; i < req->argc; i++) {
		if (!strcasecmp(req->argv[i], "TYPE") && i + 1 < req->argc) {
			int type = client_type(req->argv[++i]);
			if (type < 0) {
				reply_error(c->out, "ERR Unknown client type '%.64s'", req->argv[i]);
				return -1;
			}
			o->none |= type == 0;
		} else if (!strcasecmp(req->argv[i], "ID") && i + 1 < req->argc) {
			o->ids = req->argv[i + 1];
			o->first_id = i + 1;
			for (i++; i < req->argc; i++) {
				char *end;
				errno = 0;
				unsigned long long id = strtoull(req->argv[i], &end, 10);
				if (errno || end == req->argv[i] || *end != '\0' || id == 0) {
					reply_error(c->out, "ERR Invalid client ID");
					return -1;
				}
			}
		} else {
			reply_error(c->out, "ERR syntax error");
			return -1;
		}
	}
	return 0;
}

/* CLIENT LIST [TYPE type] [ID id...]: a bulk string, a line per connection. */
void cmd_client_list(struct verb_call *c)
{
	struct list_opts o = { .req = c->req };
	char *text = NULL;
	size_t len = 0;
	if (list_options(c, &o) < 0)
		return;
	if ((o.f = open_memstream(&text, &len)) == NULL) {
		reply_error(c->out, "ERR out of memory for CLIENT LIST");
		return;
	}
	each_client(c->sess, list_one, &o);
	if (fclose(o.f) != 0 || text == NULL)
		reply_error(c->out, "ERR out of memory for CLIENT LIST");
	else
		reply_bulk(c->out, text, len);
	free(text);
}

struct find_self {
	const struct session *self;
	FILE *f;
};

static void info_one(const struct client_view *cv, void *arg)
{
	struct find_self *o = arg;
	if (cv->sess == o->self)
		client_line(o->f, cv);
}

/* CLIENT INFO: the caller's own line. */
void cmd_client_info(struct verb_call *c)
{
	struct find_self o = { .self = c->sess };
	char *text = NULL;
	size_t len = 0;
	if ((o.f = open_memstream(&text, &len)) == NULL) {
		reply_error(c->out, "ERR out of memory for CLIENT INFO");
		return;
	}
	each_client(c->sess, info_one, &o);
	if (fclose(o.f) != 0 || text == NULL)
		reply_error(c->out, "ERR out of memory for CLIENT INFO");
	else
		reply_bulk(c->out, text, len);
	free(text);
}

/* CLIENT KILL's filters (Redis'); every one given must match. */
struct kill_filter {
	const struct session *self;
	unsigned long long id; /* 0: any */
	const char *addr, *laddr, *user;
	int skipme;
	int none;          /* TYPE other than normal */
	long long maxage;  /* 0: any */
	uint64_t *victims; /* the ids to close */
	size_t n, cap;
	int oom;
};

static void kill_match(const struct client_view *cv, void *arg)
{
	struct kill_filter *k = arg;
	const struct session *s = cv->sess;
	const char *user = s->kind == SESSION_TCP && s->user[0] ? s->user : "default";
	if (k->none || (k->id && s->id != k->id) || (k->addr && strcmp(s->addr, k->addr) != 0) ||
	    (k->laddr && strcmp(s->laddr, k->laddr) != 0) || (k->user && strcmp(user, k->user) != 0) ||
	    (k->skipme && s == k->self) || (k->maxage && cv->age < (unsigned long long)k->maxage))
		return;
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 16;
		uint64_t *v = realloc(k->victims, cap * sizeof(*v));
		if (v == NULL) {
			k->oom = 1;
			return;
		}
		k->victims = v;
		k->cap = cap;
	}
	k->victims[k->n++] = s->id;
}

/* One filter of CLIENT KILL's new form into @p k: 0, or -1 after replying with the error. */
static int kill_option(struct verb_call *c, const char *opt, const char *val, struct kill_filter *k)
{
	char *end;
	errno = 0;
	if (!strcasecmp(opt, "ID")) {
		long long id = strtoll(val, &end, 10);
		if (errno || end == val || *end != '\0' || id <= 0) {
			reply_error(c->out, "ERR client-id should be greater than 0");
			return -1;
		}
		k->id = (unsigned long long)id;
	} else if (!strcasecmp(opt, "TYPE")) {
		int type = client_type(val);
		if (type < 0) {
			reply_error(c->out, "ERR Unknown client type '%.64s'", val);
			return -1;
		}
		k->none |= type == 0;
	} else if (!strcasecmp(opt, "ADDR")) {
		k->addr = val;
	} else if (!strcasecmp(opt, "LADDR")) {
		k->laddr = val;
	} else if (!strcasecmp(opt, "USER")) {
		k->user = val;
	} else if (!strcasecmp(opt, "SKIPME") && (!strcasecmp(val, "yes") || !strcasecmp(val, "no"))) {
		k->skipme = !strcasecmp(val, "yes");
	} else if (!strcasecmp(opt, "MAXAGE")) {
		long long age = strtoll(val, &end, 10);
		if (errno || end == val || *end != '\0') {
			reply_error(c->out, "ERR value is not an integer or out of range");
			return -1;
		}
		k->maxage = age;
	} else {
		reply_error(c->out, "ERR syntax error");
		return -1;
	}
	return 0;
}

/* Close what @p k matched: another connection at once (the server logs
 * it), the caller's own once this reply is sent. How many. */
static long long kill_victims(struct verb_call *c, const struct kill_filter *k)
{
	const struct server_clients *sc = c->sess->srv != NULL ? c->sess->srv->conns : NULL;
	long long killed = 0;
	for (size_t i = 0; i < k->n; i++) {
		if (k->victims[i] == c->sess->id) {
			c->sess->quit = 1;
			killed++;
		} else if (sc != NULL) {
			killed += sc->kill(sc->loop, k->victims[i], c->sess);
		}
	}
	return killed;
}

/*
 * CLIENT KILL ip:port (the old form: +OK, or "No such client"; the caller
 * itself too) or CLIENT KILL filter value [filter value ...] (how many
 * were closed; the caller not unless SKIPME no). Administration: the row
 * needs the admin role.
 */
void cmd_client_kill(struct verb_call *c)
{
	const struct request *req = c->req;
	struct kill_filter k = { .self = c->sess, .skipme = 1 };
	int old_form = req->argc == 3;
	if (old_form) {
		k.addr = req->argv[2];
		k.skipme = 0;
	} else if (req->argc % 2 != 0) {
		reply_error(c->out, "ERR syntax error");
		return;
	}
	for (int i = 2; !old_form && i + 1 < req->argc; i += 2)
		if (kill_option(c, req->argv[i], req->argv[i + 1], &k) < 0)
			return;
	each_client(c->sess, kill_match, &k);
	if (k.oom) {
		free(k.victims);
		reply_error(c->out, "ERR out of memory for CLIENT KILL");
		return;
	}
	long long killed = kill_victims(c, &k);
	free(k.victims);
	if (!old_form)
		reply_int(c->out, killed);
	else if (killed == 0)
		reply_error(c->out, "ERR No such client");
	else
		reply_status(c->out, "OK");
}
