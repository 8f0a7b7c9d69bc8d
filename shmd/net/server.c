/*
 * server.c - the event loop (see server.h): one epoll set holding the unix
 * socket, the TCP listener and every connection.
 *
 * A connection reads up to 1 MiB a turn, executes each request as soon as
 * it is complete (one at a time, so that AUTH changes the limits for the
 * very next request), and writes the replies of the turn at once: a
 * pipeline of N requests costs one read and one write, not N. A turn
 * makes at most 4 MiB of a connection's replies.
 *
 * Memory: before a request runs, the most its reply can take (the verb
 * table's VERB_REPLY_* kind) is added to the connection's unsent replies;
 * past 64 MiB the request waits until the client reads. What every
 * connection holds is counted (conn_mem()), and past maxmemory_clients the
 * largest is closed: its memory at once, its struct after the batch of
 * events (one of them may still point at it).
 *
 * Closing after an error: the error reply is sent, then our side is shut
 * down (the peer reads the reply and end-of-file) and what the peer still
 * sends is read and discarded, for at most DRAIN_MS and DRAIN_BYTES,
 * before the socket is closed. Closing at once would make TCP answer the
 * peer's unread bytes with a reset, which can destroy the error reply
 * before the client reads it; a client still writing an oversized request
 * would see "connection reset" and never the reason.
 *
 * Connections are a bounded resource per user (connlimits.h): a new one is
 * admitted, or accepted and turned away with an error line (never left in
 * the listen backlog, never reset without a word). One that moves no byte
 * for the idle timeout of its listener is closed by the sweep of the
 * loop's timer tick.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "shmd/verbs/dispatch.h"
#include "shmd/session/connlimits.h"
#include "libclient/cuckoo.h"
#include "common/errmsg.h"
#include "shmd/base/clock.h"
#include "shmd/files/grow.h"
#include "shmd/files/jobs.h"
#include "shmd/base/log.h"
#include "shmd/base/notify.h"
#include "shmd/session/queue.h"
#include "shmd/store/hints.h"
#include "shmd/resp/reply.h"
#include "shmd/resp/request.h"
#include "shmd/session/roles.h"
#include "shmd/net/metrics.h"
#include "shmd/net/server.h"
#include "shmd/session/session.h"
#include "shmd/net/tcp.h"
#include "shmd/verbs/slowlog.h"
#include "shmd/verbs/verbs.h"

/* Stop reading from a client whose replies pile up unread beyond this
 * (reply.h: no request runs whose reply could pass it). */
#define OUTPUT_HIGH_WATER REPLY_UNSENT_MAX
/* [instance] maxmemory_clients when server_opts leaves it 0 (config.h). */
#define MAXMEMORY_CLIENTS_DEFAULT ((size_t)256 << 20)
/* Bytes read from one client per turn, so that one cannot starve others. */
#define READ_PER_TURN (1u << 20)
/* Bytes of replies one client's requests make per turn, for the same
 * reason: a pipeline of dumps makes a chunk (4 MiB) a turn, then lets the
 * others' turns come (a PING waited 480 ms behind 3 x 64 MiB of them). */
#define OUTPUT_PER_TURN (4u << 20)
/* After an error reply: input discarded before closing, at most. */
#define DRAIN_BYTES     (64u << 20)
#define DRAIN_MS        2000
#define EVENTS_PER_WAIT 256
/* Refusals are logged at most this often (a flood must not flood the log). */
#define REFUSAL_LOG_MS 10000

/* Before AUTH a TCP client may send only small requests, as Redis allows
 * an unauthenticated client (since 6.2.6, CVE-2021-32675): enough for
 * AUTH, HELLO with AUTH and SETNAME, and QUIT, and no way to make the
 * daemon buffer megabytes for a stranger. */
static const struct request_limits preauth_limits = {
	.max_bytes = 64u << 10,
	.max_args = 10,
	.max_arg = 16u << 10,
	.why = " before AUTH",
};

/* An epoll event points at a listener or a connection. */
struct listener {
	int fd;   /* -1: none */
	int kind; /* SESSION_UNIX or SESSION_TCP */
};

enum conn_state {
	C_OPEN,     /* reading and answering requests */
	C_CLOSING,  /* the last reply is queued (an error, QUIT, a limit): send it, then drain */
	C_DRAINING, /* sent and our side shut down; the peer's bytes are discarded until it closes */
	C_DEAD,     /* closed for memory while the loop may still hold its address: freed after the batch */
};

struct conn {
	int fd;
	enum conn_state state;
	int eof;                 /* the peer closed its side: close once the replies are sent */
	int counted;             /* counts against its listener's clients (not a turned-away one) */
	int reserved;            /* admitted into the administrator's slot (connlimits.h) */
	struct peer_id peer;     /* whom the limits count it for */
	uint64_t created;        /* ms, CLOCK_MONOTONIC: accepted */
	uint64_t last_active;    /* ms, CLOCK_MONOTONIC: the last byte read or written */
	uint32_t events;         /* epoll interest registered now */
	uint64_t drain_deadline; /* ms, CLOCK_MONOTONIC */
	size_t drain_left;
	struct request_reader *rr;
	struct reply out;
	struct session sess;
	/* A connection waits, reading nothing more, while a job of the file
	 * worker runs for its request (parked) or its request's filter is busy
	 * with one (waiting: the request is held, and run again later). Bytes
	 * already read after that request wait in stash. */
	int parked, waiting;
	/* Or its unsent replies are too many for the held request's reply
	 * (need: at most that many bytes) to join them: it waits, reading and
	 * running nothing, until the client has read enough. */
	int full;
	size_t need;
	/* Or it made OUTPUT_PER_TURN of replies this turn (counted from
	 * turn_len, out.len when the turn began): it goes on next turn. */
	int yield;
	size_t turn_len;
	struct request held;
	char *stash;
	size_t stash_len;
	size_t mem; /* bytes it holds, as last counted in the server's total (conn_count()) */
	struct conn *prev, *next;
};

struct server {
	struct registry *reg;
	int ep;
	struct listener lis[2];          /* by SESSION_UNIX / SESSION_TCP */
	struct listener wake;            /* o->wake_fd: only wakes the loop, whose tick reads it */
	struct listener jobs;            /* jobs_fd(): jobs of the file worker have ended */
	struct listener mhd;             /* metrics_fd(): /metrics has work (metrics.h) */
	struct metrics *metrics;         /* NULL: none */
	struct request_limits limits[2]; /* once authenticated, by kind */
	struct conn *conns;              /* every connection, newest first */
	unsigned refusing;               /* turned-away connections still open */
	struct conn_limits admit;        /* connections per listener, user and address */
	uint64_t idle_ms[2];             /* close after this long without a byte; 0 never */
	int spare_fd;                    /* given up to accept (and refuse) when out of descriptors */
	uint64_t refused_logged;         /* ms: when a refusal was last logged */
	uint64_t next_id;
	size_t mem_total; /* every connection's mem */
	size_t mem_limit; /* [instance] maxmemory_clients */
	size_t mem_peak;  /* the most mem_total was since the heap was last trimmed */
	int dead;         /* connections in state C_DEAD wait to be freed */
	unsigned yielded; /* connections that go on next turn (struct conn, yield) */
	struct server_view view;
	struct server_stats stats;     /* view.stats: INFO stats and commandstats */
	struct server_clients clients; /* view.conns: CLIENT LIST and KILL */
};

static char scratch[64 * 1024];

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int server_listen(const char *path, mode_t mode, gid_t gid, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	if (strlen(path) >= sizeof(sa.sun_path))
		return errmsg(err, errlen, -ENAMETOOLONG, "socket path %s: longer than %zu bytes", path,
			      sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return errmsg(err, errlen, -EEXIST,
				      "socket path %s: exists and is not a socket; not replacing it", path);
		unlink(path);
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		int e = errno;
		return errmsg(err, errlen, -e, "socket: %s", strerror(e));
	}
	/* The file gets its mode at bind(): narrow the umask so that it is
	 * never wider than configured, even for an instant. */
	mode_t old = umask((mode_t)(~mode & 0777));
	int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	int e = errno;
	umask(old);
	if (rc < 0) {
		close(fd);
		char hint[320];
		return errmsg(err, errlen, -e, "socket %s: cannot bind: %s%s", path, strerror(e),
			      hint_perms(-e, HINT_DIR, hint, sizeof(hint)));
	}
	/* SOMAXCONN (the kernel's cap): a burst of connections waits for the
	 * loop to accept it rather than failing to connect. */
	if ((gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) < 0) || chmod(path, mode) < 0 ||
	    listen(fd, SOMAXCONN) < 0) {
		e = errno;
		close(fd);
		unlink(path);
		char hint[320];
		return errmsg(err, errlen, -e, "socket %s: cannot set group, mode or listen: %s%s", path, strerror(e),
			      hint_perms(-e, HINT_GROUP, hint, sizeof(hint)));
	}
	return fd;
}

/* 1 if the connection takes no request now: parked, waiting, full or yielded (struct conn). */
static int conn_held(const struct conn *c)
{
	return c->parked || c->waiting || c->full || c->yield;
}

/* Make the epoll interest match what the connection waits for. */
static void conn_watch(struct server *s, struct conn *c)
{
	uint32_t ev = 0;
	size_t pending = reply_pending(&c->out);
	if (c->state == C_OPEN && !c->eof && !conn_held(c) && pending <= OUTPUT_HIGH_WATER)
		ev |= EPOLLIN;
	if (c->state == C_DRAINING)
		ev |= EPOLLIN;
	if (pending > 0 && c->state != C_DRAINING)
		ev |= EPOLLOUT;
	if (ev == c->events)
		return;
	struct epoll_event e = { .events = ev, .data.ptr = c };
	if (epoll_ctl(s->ep, EPOLL_CTL_MOD, c->fd, &e) == 0)
		c->events = ev;
	else
		log_msg(LOG_WARNING, "epoll_ctl: %s", strerror(errno));
}

/* Close the connection and give back everything it holds but its struct. */
static void conn_release(struct server *s, struct conn *c)
{
	if (c->parked)
		jobs_disown(&c->sess); /* the job runs on; its reply goes nowhere */
	free(c->stash);
	c->stash = NULL;
	c->stash_len = 0;
	close(c->fd); /* also leaves the epoll set */
	c->fd = -1;
	request_reader_free(c->rr);
	c->rr = NULL;
	reply_free(&c->out);
	if (c->counted) {
		s->view.clients[c->sess.kind]--;
		conn_limits_release(&s->admit, &c->peer, c->reserved);
	} else
		s->refusing--;
	session_free(&c->sess);
	s->mem_total -= c->mem;
	c->mem = 0;
	if (c->yield)
		s->yielded--;
	c->parked = c->waiting = c->full = c->yield = 0;
}

static void conn_free(struct server *s, struct conn *c)
{
	if (c->state != C_DEAD)
		conn_release(s, c);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
}

/* Size with a unit, for people: "63.9 MiB", "512 KiB", "100 bytes". */
static const char *size_text(size_t n, char buf[32])
{
	if (n >= (1u << 20))
		snprintf(buf, 32, "%.2f MiB", (double)n / (1u << 20));
	else if (n >= 1024)
		snprintf(buf, 32, "%.1f KiB", (double)n / 1024);
	else
		snprintf(buf, 32, "%zu bytes", n);
	return buf;
}

/* ---- What clients hold, in all ([instance] maxmemory_clients) ---------- */

/* A connection holding no more than this is idle, as far as memory goes:
 * the admin's reserved connection is closed for memory only when no other
 * holds more. */
#define IDLE_MEM (64u << 10)

/* Bytes connection @p c holds: its request being read and the last one
 * parsed, its unsent replies, what waits in its stash, its MULTI queue and
 * its name. */
static size_t conn_mem(const struct conn *c)
{
	return sizeof(*c) + request_reader_memory(c->rr) + reply_memory(&c->out) + c->stash_len +
	       queue_memory(c->sess.multi) + (c->sess.name != NULL ? strlen(c->sess.name) + 1 : 0);
}

/* Count what @p c holds now into the total. */
static void conn_count(struct server *s, struct conn *c)
{
	if (c->state == C_DEAD)
		return;
	size_t m = conn_mem(c);
	s->mem_total = s->mem_total - c->mem + m;
	c->mem = m;
	if (s->mem_total > s->mem_peak)
		s->mem_peak = s->mem_total;
	s->view.clients_memory = s->mem_total;
}

/* The connection to close for memory: the largest, but the admin's
 * reserved one only when no other holds more than IDLE_MEM. */
static struct conn *largest(struct server *s)
{
	struct conn *best = NULL, *any = NULL;
	for (struct conn *c = s->conns; c != NULL; c = c->next) {
		if (c->state == C_DEAD)
			continue;
		if (!c->reserved && c->mem > IDLE_MEM && (best == NULL || c->mem > best->mem))
			best = c;
		if (any == NULL || c->mem > any->mem)
			any = c;
	}
	return best != NULL ? best : any;
}

/* Close @p c for memory, now (a reply of up to @p more bytes was about to
 * be made): everything it holds is given back at once; its struct waits
 * for the end of the loop's batch (an event of this batch may still point
 * at it), in state C_DEAD. */
static void conn_evict(struct server *s, struct conn *c, size_t more)
{
	char all[32], in[32], out[32], multi[32], total[32], limit[32], next[64] = "";
	size_t held = c->mem;
	int kept = 0; /* the admin's reserved connection holds more, and is spared */
	for (const struct conn *o = s->conns; o != NULL; o = o->next)
		kept |= o->reserved && o->state != C_DEAD && o->mem > held;
	if (more > 0)
		snprintf(next, sizeof(next), " with a reply of up to %s to come", size_text(more, all));
	log_msg(LOG_WARNING,
		"client id=%llu (%s%s%s%s) closed: it held %s (request %s, unsent replies %s, MULTI queue %s), "
		"the most of any client%s, and the clients held %s%s, past maxmemory_clients %s",
		(unsigned long long)c->sess.id, c->counted ? c->peer.name : "turned away",
		c->sess.kind == SESSION_TCP ? " over TCP" : "", c->sess.name != NULL ? ", name " : "",
		c->sess.name != NULL ? c->sess.name : "", size_text(held, all),
		size_text(request_reader_memory(c->rr), in), size_text(reply_memory(&c->out), out),
		size_text(queue_memory(c->sess.multi), multi),
		kept ? " but the administrator's reserved connection" : "", size_text(s->mem_total, total), next,
		size_text(s->mem_limit, limit));
	conn_release(s, c);
	c->state = C_DEAD;
	s->dead = 1;
	s->stats.evicted_clients++;
	s->view.clients_memory = s->mem_total;
}

/* Count what @p c holds; then, while the clients' total and @p more bytes
 * about to come (a reply's most) pass the limit, close the largest client.
 * 0, or -1 when @p c itself was closed. */
static int make_room(struct server *s, struct conn *c, size_t more)
{
	conn_count(s, c);
	while (s->mem_total + more > s->mem_limit) {
		struct conn *v = largest(s);
		if (v == NULL)
			return 0;
		conn_evict(s, v, more);
		if (v == c)
			return -1;
	}
	return 0;
}

/* Free the structs of the connections closed for memory. */
static void reap(struct server *s)
{
	if (!s->dead)
		return;
	s->dead = 0;
	for (struct conn *c = s->conns, *next; c != NULL; c = next) {
		next = c->next;
		if (c->state == C_DEAD)
			conn_free(s, c);
	}
}

/* Write what is pending: 0, or -errno if the peer is gone. */
static int conn_flush(struct conn *c)
{
	while (reply_pending(&c->out) > 0) {
		ssize_t n = send(c->fd, c->out.data + c->out.sent, reply_pending(&c->out), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
		}
		c->out.sent += (size_t)n;
		c->last_active = now_ms(); /* the peer reads its replies: not idle */
	}
	c->out.sent = c->out.len = 0;
	return 0;
}

/* Execute one request: 1 if the connection must now take no more (parked
 * on its job, waiting for a busy filter, held until its client reads or
 * until its next turn, or closed for memory), else 0. */
static int conn_run(struct server *s, struct conn *c, const struct request *req)
{
	/* Judge the reply before the request runs: one that could pass the
	 * limit on unsent replies waits until the client has read enough;
	 * one that could pass it alone is refused. */
	const struct verb *v = verbs_of(req); /* looked up once, for the bound and the dispatch */
	size_t need = dispatch_reply_max(&c->sess, v, req), pending = reply_pending(&c->out);
	if (pending > 0 && pending + need > OUTPUT_HIGH_WATER) {
		c->held = *req; /* valid until the reader's next request */
		c->full = 1;
		c->need = need;
		return 1;
	}
	if (c->out.len - c->turn_len >= OUTPUT_PER_TURN) {
		c->held = *req;
		c->yield = 1;
		s->yielded++;
		return 1;
	}
	if (need > OUTPUT_HIGH_WATER) {
		char a[32];
		reply_error(&c->out,
			    "ERR reply too large: '%.32s' with %d arguments could answer %s, more than the %u MiB of "
			    "unread replies a connection may have (docs/protocol.md, Limits)",
			    req->argv[0], req->argc, size_text(need, a), OUTPUT_HIGH_WATER >> 20);
		s->stats.commands_processed++;
		return 0;
	}
	/* Room in the clients' total for the reply: the largest clients are
	 * closed first, this one too if it is the largest. */
	if (make_room(s, c, need) < 0)
		return 1;
	int r = dispatch_row(&c->sess, s->reg, v, req, &c->out);
	if (r == VERB_WAIT) {
		c->held = *req; /* valid until the reader's next request */
		c->waiting = 1;
		return 1;
	}
	s->stats.commands_processed++;
	if (c->sess.limits_changed) {
		c->sess.limits_changed = 0;
		request_reader_set_limits(c->rr, c->sess.authed ? &s->limits[c->sess.kind] : &preauth_limits);
	}
	if (c->sess.quit)
		c->state = C_CLOSING;
	c->parked = r == VERB_PARKED;
	return c->parked;
}

/* Execute the complete requests the reader holds until one holds the
 * connection; a protocol error (@p rc, or the reader's) is answered and
 * closes it. */
static void conn_requests(struct server *s, struct conn *c, int rc)
{
	struct request req;
	int next = 0;
	while (c->state == C_OPEN && !conn_held(c) && (next = request_reader_next(c->rr, &req)) == 1) {
		int stop = conn_run(s, c, &req);
		if (c->state == C_DEAD || make_room(s, c, 0) < 0)
			return;
		if (stop)
			break;
	}
	if (c->state == C_OPEN && !conn_held(c) && (rc < 0 || next < 0)) {
		reply_error(&c->out, "ERR %s", request_reader_error(c->rr));
		c->state = C_CLOSING;
	}
}

/* Execute the requests in @p buf (n bytes, all of it consumed: what a
 * held connection cannot take yet goes to its stash). */
static void conn_input(struct server *s, struct conn *c, const char *buf, size_t n)
{
	size_t off = 0;
	while (off < n && c->state == C_OPEN && !conn_held(c)) {
		size_t used;
		int rc = request_reader_feed_some(c->rr, buf + off, n - off, &used);
		off += used;
		conn_requests(s, c, rc);
	}
	if (off < n && c->state == C_OPEN && conn_held(c)) {
		char *keep = malloc(n - off);
		if (keep == NULL) {
			c->out.oom = 1;
			return;
		}
		memcpy(keep, buf + off, n - off);
		c->stash = keep;
		c->stash_len = n - off;
	}
}

/* Read and execute what the client sent: 0, or a negative code (-errno,
 * -ENOMEM for the replies) if the connection must go now. */
static int conn_read(struct server *s, struct conn *c)
{
	size_t total = 0;
	while (total < READ_PER_TURN && c->state == C_OPEN && !c->eof && !conn_held(c)) {
		ssize_t n = recv(c->fd, scratch, sizeof(scratch), MSG_DONTWAIT);
		if (n == 0) {
			/* End of input: answer what came complete, drop a partial
			 * request, then close. */
			c->eof = 1;
			break;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -errno;
		}
		total += (size_t)n;
		c->last_active = now_ms();
		conn_input(s, c, scratch, (size_t)n);
		if (c->state == C_DEAD || make_room(s, c, 0) < 0)
			return 0;
		if (c->out.oom)
			return -ENOMEM;
		if (reply_pending(&c->out) > OUTPUT_HIGH_WATER)
			break;
		/* A short read almost always emptied the socket: skip the
		 * read that would only say EAGAIN (level-triggered epoll calls
		 * again if more is there). */
		if ((size_t)n < sizeof(scratch))
			break;
	}
	return 0;
}

/* Discard what a closing peer still sends: 1 once it is time to close
 * (end of file, an error, or the drain's allowance used up), else 0. */
static int conn_drained(struct conn *c)
{
	for (;;) {
		ssize_t n = recv(c->fd, scratch, sizeof(scratch), MSG_DONTWAIT);
		if (n == 0)
			return 1;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno != EAGAIN && errno != EWOULDBLOCK;
		}
		if ((size_t)n >= c->drain_left)
			return 1;
		c->drain_left -= (size_t)n;
	}
}

/* After reading or writing: send, close or start draining as the state
 * says, and watch for what comes next. */
static int conn_settle(struct server *s, struct conn *c)
{
	if (c->state == C_DEAD)
		return 0;
	if (reply_pending(&c->out) > 0 && c->state != C_DRAINING && conn_flush(c) < 0) {
		conn_free(s, c);
		return 0;
	}
	reply_compact(&c->out);
	conn_count(s, c);
	if (reply_pending(&c->out) == 0) {
		if (c->eof && !c->full && !c->yield) {
			conn_free(s, c);
			return 0;
		}
		if (c->state == C_CLOSING) {
			shutdown(c->fd, SHUT_WR);
			c->state = C_DRAINING;
			c->drain_deadline = now_ms() + DRAIN_MS;
			c->drain_left = DRAIN_BYTES;
		}
	}
	conn_watch(s, c);
	return 1;
}

/* Whether a connection held for its unsent replies can go on: they and
 * its held request's reply fit now. */
static int conn_unfull(const struct conn *c)
{
	size_t pending = reply_pending(&c->out);
	return c->full && (pending == 0 || pending + c->need <= OUTPUT_HIGH_WATER);
}

/* Go on with a held connection: its held request again, then what the
 * reader and the stash hold, until something holds it again. */
static void conn_resume(struct server *s, struct conn *c)
{
	/* A held request (a busy filter, a full output, the turn's share
	 * used) runs first, then what the reader and the stash hold. */
	int held = 0, again = c->waiting || c->full || c->yield;
	c->turn_len = c->out.len;
	if (c->yield)
		s->yielded--;
	c->waiting = c->full = c->yield = 0;
	if (again)
		held = conn_run(s, c, &c->held);
	if (!held && !c->parked) {
		conn_requests(s, c, 0);
		if (!conn_held(c) && c->stash != NULL) {
			char *buf = c->stash;
			size_t n = c->stash_len;
			c->stash = NULL;
			c->stash_len = 0;
			conn_input(s, c, buf, n);
			free(buf);
		}
	}
	if (c->state == C_DEAD)
		return;
	if (c->out.oom) {
		conn_free(s, c);
		return;
	}
	/* Held for its unsent replies, and the settle sent them all at once
	 * (a client that reads fast): no event will come for it now (nothing
	 * to write, no reading while held), so it goes on next turn. */
	if (conn_settle(s, c) && conn_unfull(c)) {
		c->full = 0;
		c->yield = 1;
		s->yielded++;
	}
}

/* The job of connection (session) @p owner has ended: its reply is in its
 * output; it takes requests again. */
static void job_finished(void *arg, const void *owner)
{
	struct server *s = arg;
	for (struct conn *c = s->conns; c != NULL; c = c->next)
		if (&c->sess == owner && c->parked) {
			c->parked = 0;
			conn_resume(s, c);
			return;
		}
}

/* Jobs of the file worker have ended: their replies, then the requests
 * that waited for their filters, tried again. */
static void jobs_ended(struct server *s)
{
	if (jobs_reap(s->reg, job_finished, s) == 0)
		return;
	for (struct conn *c = s->conns, *next; c != NULL; c = next) {
		next = c->next;
		if (c->waiting)
			conn_resume(s, c);
	}
}

static void conn_event(struct server *s, struct conn *c, uint32_t ev)
{
	if (c->state == C_DEAD)
		return;
	if (c->state == C_DRAINING) {
		if (conn_drained(c))
			conn_free(s, c);
		return;
	}
	if (ev & EPOLLIN) {
		c->turn_len = c->out.len;
		if (conn_read(s, c) < 0) {
			conn_free(s, c);
			return;
		}
	} else if (ev & (EPOLLERR | EPOLLHUP)) {
		conn_free(s, c); /* gone while we were not reading */
		return;
	}
	/* The client read replies: a request held for them may go on. */
	if (conn_settle(s, c) && conn_unfull(c))
		conn_resume(s, c);
}

/* A connection for accepted @p fd: admitted (@p peer not NULL: counted
 * for it, @p reserved as conn_limits_admit() said) or, with @p peer NULL,
 * only kept to be turned away. NULL when out of memory. */
static struct conn *conn_new(struct server *s, int fd, int kind, const struct peer_id *peer, int reserved)
{
	struct conn *c = calloc(1, sizeof(*c));
	if (c == NULL || (c->rr = request_reader_new()) == NULL) {
		free(c);
		return NULL;
	}
	c->fd = fd;
	c->counted = peer != NULL;
	c->events = EPOLLIN;
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = c };
	if (epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &e) < 0) {
		log_msg(LOG_WARNING, "epoll_ctl: %s", strerror(errno));
		request_reader_free(c->rr);
		free(c);
		return NULL;
	}
	session_init(&c->sess, ++s->next_id, kind, &s->view);
	request_reader_set_limits(c->rr, c->sess.authed ? &s->limits[kind] : &preauth_limits);
	c->last_active = c->created = now_ms();
	if (peer != NULL) {
		c->peer = *peer;
		c->reserved = reserved;
		s->view.clients[kind]++;
		if (kind == SESSION_UNIX) {
			/* Redis' address of a unix-socket client: the socket's path and ":0". */
			c->sess.peer = peer->cred;
			snprintf(c->sess.addr, sizeof(c->sess.addr), "%s:0", s->view.unix_path);
			snprintf(c->sess.laddr, sizeof(c->sess.laddr), "%s:0", s->view.unix_path);
		} else {
			tcp_peer_name(fd, c->sess.addr, sizeof(c->sess.addr));
			tcp_local_name(fd, c->sess.laddr, sizeof(c->sess.laddr));
		}
	} else {
		s->refusing++;
	}
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	return c;
}

/* ---- The connections as CLIENT LIST and CLIENT KILL see them -------------- */

static void clients_each(void *loop, void (*fn)(const struct client_view *cv, void *arg), void *arg)
{
	struct server *s = loop;
	uint64_t now = now_ms();
	for (struct conn *c = s->conns; c != NULL; c = c->next) {
		if (c->state == C_DEAD || !c->counted)
			continue;
		struct client_view cv = {
			.sess = &c->sess,
			.fd = c->fd,
			.age = (now - c->created) / 1000,
			.idle = (now - c->last_active) / 1000,
			.qbuf = request_reader_memory(c->rr),
			.obl = reply_pending(&c->out),
			.omem = reply_memory(&c->out),
			.tot_mem = conn_mem(c),
			.events = (c->events & EPOLLIN) && (c->events & EPOLLOUT) ? "rw"
				  : c->events & EPOLLIN                           ? "r"
				  : c->events & EPOLLOUT                          ? "w"
										  : "",
		};
		fn(&cv, arg);
	}
}

/* CLIENT KILL of another connection: closed at once, as for memory (its
 * struct freed after the batch of events, which may still point at it). */
static int clients_kill(void *loop, uint64_t id, const struct session *by)
{
	struct server *s = loop;
	for (struct conn *c = s->conns; c != NULL; c = c->next) {
		if (c->state == C_DEAD || !c->counted || c->sess.id != id || &c->sess == by)
			continue;
		log_msg(LOG_NOTICE, "client id=%llu (%s%s) closed by CLIENT KILL from client id=%llu (%s)",
			(unsigned long long)id, c->peer.name, c->sess.kind == SESSION_TCP ? " over TCP" : "",
			(unsigned long long)by->id, by->addr);
		conn_release(s, c);
		c->state = C_DEAD;
		s->dead = 1;
		s->view.clients_memory = s->mem_total;
		return 1;
	}
	return 0;
}

/* Whether the unix peer on @p fd has the admin role (root, shmd's uid, a
 * member of [roles] admin_group): it may take the slot kept for one. */
static int peer_admin(struct server *s, int fd)
{
	struct session probe;
	session_init(&probe, 0, SESSION_UNIX, &s->view);
	int admin = roles_peer_read(&probe, fd) == 0 && roles_connection(&probe) == ROLE_ADMIN;
	session_free(&probe);
	return admin;
}

/* Say why, at most once every REFUSAL_LOG_MS. */
static void log_refusal(struct server *s, const struct peer_id *p, const char *why)
{
	uint64_t now = now_ms();
	if (s->refused_logged != 0 && now - s->refused_logged < REFUSAL_LOG_MS)
		return;
	s->refused_logged = now;
	log_msg(LOG_WARNING, "connection from %s refused: %s (%llu refused since start; limits: docs/operations.md)",
		p != NULL ? p->name : "a client", why, (unsigned long long)s->stats.rejected_connections);
}

/* Turn connection @p fd away with the error reply @p why (Redis' "ERR
 * ..."), which the client reads before end-of-file: kept and drained like
 * any closing connection while fewer than SERVER_MAX_REFUSING are, else
 * answered and closed at once, after reading what the client already sent
 * (so that the close is an end-of-file, not a reset that could destroy the
 * reply). */
static void refuse(struct server *s, int fd, int kind, const char *why)
{
	s->stats.rejected_connections++;
	struct conn *c = s->refusing < SERVER_MAX_REFUSING ? conn_new(s, fd, kind, NULL, 0) : NULL;
	if (c != NULL) {
		reply_error(&c->out, "%s", why);
		c->state = C_CLOSING;
		conn_settle(s, c);
		return;
	}
	char line[256];
	int n = snprintf(line, sizeof(line), "-%s\r\n", why);
	ssize_t ignored = send(fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	(void)ignored;
	shutdown(fd, SHUT_WR);
	for (int i = 0; i < 16 && recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT) > 0; i++)
		;
	close(fd);
}

/* accept() failed for want of a descriptor: the listener stays readable,
 * and the clients in its backlog would wait for nothing. Give up the spare
 * descriptor to accept one and tell it why, as Redis' maxclients does. */
static int accept_without_fds(struct server *s, struct listener *l)
{
	if (s->spare_fd < 0)
		return -1;
	close(s->spare_fd);
	int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd >= 0) {
		static const char msg[] = "-ERR max number of clients reached (shmd is out of file descriptors)\r\n";
		ssize_t ignored = send(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)ignored;
		close(fd);
		s->stats.rejected_connections++;
		s->stats.rejected_by[REJECT_FDS]++;
		log_refusal(s, NULL, "out of file descriptors (raise the open-file limit)");
	}
	s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? 0 : -1;
}

/* Accept every pending client: admitted within the limits, or turned away
 * with the reason. None is left in the backlog. */
static void accept_clients(struct server *s, struct listener *l)
{
	for (;;) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR)
				continue;
			if ((errno == EMFILE || errno == ENFILE) && accept_without_fds(s, l) == 0)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				log_msg(LOG_WARNING, "accept: %s", strerror(errno));
			return;
		}
		s->stats.connections_received++;
		if (l->kind == SESSION_TCP)
			tcp_tune(fd);
		struct peer_id peer;
		char why[192];
		peer_identify(fd, l->kind, &peer);
		peer.admin = l->kind == SESSION_UNIX && peer_admin(s, fd);
		int slot = conn_limits_admit(&s->admit, &peer, s->view.clients[l->kind], why, sizeof(why));
		if (slot < 0) {
			s->stats.rejected_by[slot == -ENOMEM                                ? REJECT_MEMORY
					     : !strncmp(why, "ERR max connections per", 23) ? REJECT_PER_PEER
											    : REJECT_MAXCLIENTS]++;
			refuse(s, fd, l->kind, why);
			log_refusal(s, &peer, why + 4);
			continue;
		}
		struct conn *c = conn_new(s, fd, l->kind, &peer, slot);
		if (c == NULL) {
			conn_limits_release(&s->admit, &peer, slot);
			log_msg(LOG_WARNING, "out of memory for a new client");
			close(fd);
		} else if (l->kind == SESSION_UNIX) {
			/* On failure the peer stays as SO_PEERCRED said, in no
			 * supplementary group. */
			(void)roles_peer_read(&c->sess, fd);
		}
	}
}

/* Idle: no byte read or written for its listener's timeout (or, once its
 * last reply is queued, for DRAIN_MS: a client that does not read why it
 * is closed keeps no slot). A request being executed is never idle: the
 * loop runs it to the end before the sweep looks (a request handed to a
 * worker thread must keep its connection from being idle while it is out). */
static int conn_idle(const struct server *s, const struct conn *c, uint64_t now)
{
	/* A connection with a request in progress (parked on a file job, or
	 * waiting for a busy filter) is not idle, however long the job. */
	if (c->parked || c->waiting)
		return 0;
	uint64_t limit = c->state == C_CLOSING ? DRAIN_MS : s->idle_ms[c->sess.kind];
	return limit != 0 && c->state != C_DRAINING && now - c->last_active >= limit;
}

/* Close the draining connections whose time is up, and the idle ones:
 * shut down (the client reads end-of-file) and drained, or closed at once
 * if replies it does not read are still queued. */
static void sweep(struct server *s, uint64_t now)
{
	for (struct conn *c = s->conns, *next; c != NULL; c = next) {
		next = c->next;
		if (c->state == C_DRAINING && now >= c->drain_deadline) {
			conn_free(s, c);
		} else if (conn_idle(s, c, now)) {
			if (reply_pending(&c->out) > 0) {
				conn_free(s, c);
			} else {
				c->state = C_CLOSING;
				conn_settle(s, c);
			}
		}
	}
}

static int watch_listener(struct server *s, struct listener *l)
{
	if (l->fd < 0)
		return 0;
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = l };
	return epoll_ctl(s->ep, EPOLL_CTL_ADD, l->fd, &e);
}

/* The server's state from the options @p o. */
static void server_init(struct server *s, struct registry *reg, const struct server_opts *o)
{
	*s = (struct server){
		.reg = reg,
		.lis = { { o->unix_fd, SESSION_UNIX }, { o->tcp_fd, SESSION_TCP } },
		.wake = { o->wake_fd, -1 },
		.jobs = { jobs_fd(), -1 },
		.mhd = { o->metrics != NULL ? metrics_fd(o->metrics) : -1, -1 },
		.metrics = o->metrics,
		.limits = { request_limits_max, request_limits_max },
	};
	s->limits[SESSION_TCP].max_bytes = o->tcp_max_request ? o->tcp_max_request : REQUEST_MAX_BYTES;
	s->admit.max[SESSION_UNIX] = o->unix_maxclients ? o->unix_maxclients : SERVER_MAX_CLIENTS;
	s->admit.max[SESSION_TCP] = o->tcp_maxclients;
	s->admit.per_peer[SESSION_UNIX] = o->unix_maxclients_per_user ? o->unix_maxclients_per_user : UINT32_MAX;
	s->admit.per_peer[SESSION_TCP] = o->tcp_maxclients_per_addr ? o->tcp_maxclients_per_addr : UINT32_MAX;
	s->idle_ms[SESSION_UNIX] = (uint64_t)o->unix_timeout * 1000;
	s->idle_ms[SESSION_TCP] = (uint64_t)o->tcp_timeout * 1000;
	s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	s->mem_limit = o->maxmemory_clients ? o->maxmemory_clients : MAXMEMORY_CLIENTS_DEFAULT;
	clock_init(); /* the clock the dispatcher times requests with */
	s->stats.nverbs = dispatch_rows();
	s->stats.verbs = calloc(s->stats.nverbs, sizeof(struct verb_stats)); /* NULL: not counted */
	s->clients = (struct server_clients){ .loop = s, .each = clients_each, .kill = clients_kill };
	s->view = (struct server_view){
		.started = (uint64_t)time(NULL),
		.requirepass = o->requirepass ? o->requirepass : "",
		.roles = o->roles,
		.tcp_name = o->tcp_fd >= 0 ? o->tcp_name : NULL,
		.tcp_bind = o->tcp_fd >= 0 ? o->tcp_bind : NULL,
		.tcp_port = o->tcp_fd >= 0 ? o->tcp_port : 0,
		.unix_path = o->unix_path,
		.maxclients = { s->admit.max[SESSION_UNIX], o->tcp_maxclients },
		.timeout = { o->unix_timeout, o->tcp_timeout },
		.defaults = o->defaults ? o->defaults : &filter_defaults_builtin,
		.maxmemory_clients = s->mem_limit,
		.slowlog_cfg = o->slowlog,
		.stats = &s->stats,
		.slowlog = slowlog_new(), /* NULL: nothing logged */
		.conns = &s->clients,
	};
	if (s->metrics != NULL)
		metrics_attach(s->metrics, reg, &s->view);
}

/* Watch the listeners, the wake and the jobs' descriptors, and say where
 * the server listens. 0, or -errno after logging. */
static int server_listen_all(struct server *s, const struct server_opts *o)
{
	s->ep = epoll_create1(EPOLL_CLOEXEC);
	if (s->ep < 0 || watch_listener(s, &s->lis[0]) < 0 || watch_listener(s, &s->lis[1]) < 0 ||
	    watch_listener(s, &s->wake) < 0 || watch_listener(s, &s->jobs) < 0 || watch_listener(s, &s->mhd) < 0) {
		int rc = -errno;
		log_msg(LOG_ERR, "epoll: %s", strerror(errno));
		return rc;
	}
	log_msg(LOG_INFO,
		"listening on %s (at most %u clients, %u per user, idle timeout %us; clients hold at most %zu "
		"MiB in all)",
		o->unix_path, s->admit.max[SESSION_UNIX], s->admit.per_peer[SESSION_UNIX], o->unix_timeout,
		s->mem_limit >> 20);
	if (o->tcp_fd >= 0)
		log_msg(LOG_INFO,
			"listening on tcp %s (%s, at most %u clients, %u per address, idle timeout %us, requests "
			"up to %zu bytes)",
			o->tcp_name, s->view.requirepass[0] ? "AUTH required" : "no password", o->tcp_maxclients,
			s->admit.per_peer[SESSION_TCP], o->tcp_timeout, s->limits[SESSION_TCP].max_bytes);
	return 0;
}

/* One batch of @p n events: connections first, listeners last, so that a
 * connection freed in this batch (only ever while its own event is
 * handled) cannot share its address with one accepted for a later event.
 * A listener is told by its address, never by reading through an event's
 * pointer, which may be a freed connection's by then. */
static void server_events(struct server *s, struct epoll_event *evs, int n)
{
	for (int i = 0; i < n; i++)
		if (evs[i].data.ptr != &s->lis[0] && evs[i].data.ptr != &s->lis[1] && evs[i].data.ptr != &s->wake &&
		    evs[i].data.ptr != &s->jobs && evs[i].data.ptr != &s->mhd)
			conn_event(s, evs[i].data.ptr, evs[i].events);
	for (int i = 0; i < n; i++)
		if (evs[i].data.ptr == &s->mhd)
			metrics_run(s->metrics);
	for (int i = 0; i < n; i++)
		if (evs[i].data.ptr == &s->jobs)
			jobs_ended(s);
	for (int i = 0; i < n; i++)
		if (evs[i].data.ptr == &s->lis[0] || evs[i].data.ptr == &s->lis[1])
			accept_clients(s, evs[i].data.ptr);
	/* The connections whose turn ended at OUTPUT_PER_TURN go on. */
	for (struct conn *c = s->conns, *next; c != NULL && s->yielded > 0; c = next) {
		next = c->next; /* c may be freed; others only become C_DEAD */
		if (c->yield)
			conn_resume(s, c);
	}
	reap(s); /* no event of this batch is left to point at them */
}

/* Every 250 ms: idle connections closed (the metrics listener's too), and
 * the heap trimmed when clients gave back 16 MiB or more. */
static void server_sweep(struct server *s, uint64_t *last_sweep)
{
	uint64_t now = now_ms();
	if (now - *last_sweep < 250)
		return;
	sweep(s, now);
	if (s->metrics != NULL)
		metrics_run(s->metrics);
	*last_sweep = now;
	/* Buffers under the mapping threshold (main.c) came from the heap:
	 * give back what clients gave back. */
	if (s->mem_peak - s->mem_total >= (16u << 20)) {
		malloc_trim(0);
		s->mem_peak = s->mem_total;
	}
}

/* The end: jobs of the file worker end (cancelled where they can be)
 * before the connections waiting for them get their last replies. */
static void server_close(struct server *s, struct registry *reg, const struct server_opts *o)
{
	jobs_stop(reg);
	if (s->metrics != NULL)
		metrics_attach(s->metrics, NULL, NULL);
	while (s->conns != NULL) {
		conn_flush(s->conns);
		conn_free(s, s->conns);
	}
	conn_limits_free(&s->admit);
	free(s->stats.verbs);
	slowlog_free(s->view.slowlog);
	if (s->spare_fd >= 0)
		close(s->spare_fd);
	if (s->ep >= 0)
		close(s->ep);
	close(o->unix_fd);
	if (o->tcp_fd >= 0)
		close(o->tcp_fd);
	unlink(o->unix_path);
}

int server_run(struct registry *reg, const struct server_opts *o, volatile sig_atomic_t *stop,
	       void (*tick)(struct registry *reg, void *arg), void *tick_arg)
{
	struct server s;
	server_init(&s, reg, o);
	int rc = server_listen_all(&s, o);
	struct epoll_event evs[EVENTS_PER_WAIT];
	uint64_t last_sweep = now_ms();
	/* The loop never waits on a cuckoo filter's lock or racing reads: a
	 * call that would answers SHMF_E_BUSY, and the request goes on on the
	 * file worker (keyjob.h). */
	uint64_t saved_deadline = shmf_cuckoo_wait_deadline(0);
	while (rc == 0 && !*stop) {
		if (tick != NULL)
			tick(reg, tick_arg);
		/* A growing filter's next layer is made and made current from
		 * the tick: then it comes every GROW_TICK_MS. */
		int n = epoll_wait(s.ep, evs, EVENTS_PER_WAIT, s.yielded > 0 ? 0 : grow_any(reg) ? GROW_TICK_MS : 1000);
		if (n < 0) {
			if (errno != EINTR)
				log_msg(LOG_WARNING, "epoll_wait: %s", strerror(errno));
			continue;
		}
		server_events(&s, evs, n);
		server_sweep(&s, &last_sweep);
	}
	shmf_cuckoo_wait_deadline(saved_deadline);
	if (rc == 0)
		notify_stopping(); /* before the file worker's last jobs and the last snapshots */
	server_close(&s, reg, o);
	return rc;
}
