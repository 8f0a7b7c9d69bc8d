/*
 * test-connlimits.c - connections are a bounded resource per user: a local
 * user who opens connections by the thousand, leaves them idle, or floods
 * the backlog with connections that are refused, locks nobody else out.
 * Against a real shmd running as root, with clients that are forked
 * processes of two users created for the test (and removed after it):
 *
 *   per_user  - a user past its limit gets the error line and end-of-file;
 *               another user and root are served meanwhile, and the first
 *               user's count goes down as its connections close;
 *   lockout   - 1,100 idle connections of one user: with the default
 *               limits it holds 512 and the rest are refused; with no
 *               per-user limit it fills the table but for the slot kept
 *               for an administrator, and root's shmctl ping and list
 *               still work;
 *   idle      - with timeout = 1 (unix and TCP) idle connections are
 *               closed, while a client that PINGs every 100 ms is not;
 *   pending   - 200 connections of a user at its limit pile up in the
 *               backlog while shmd is stopped: every one reads the error,
 *               and shmctl exits 2 with the daemon's message (never of
 *               SIGPIPE, 141), also while 100 more refused ones are open;
 *   abrupt    - shmctl against a server that writes its error line and
 *               closes before shmctl wrote: exit 2 with the message, never
 *               SIGPIPE;
 *   tcp_addr  - the per-address limit of the TCP listener; a client on
 *               this host is told apart by its uid, whichever loopback
 *               address it connects from.
 *
 * The figures (connections opened, served and refused) are printed.
 * Usage: test-connlimits PATH-TO-SHMD PATH-TO-SHMCTL [TEST]
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/daemon-process.h"
#include "tests/users.h"
#include "tests/run-named.h"

#define INSTANCE "cl"
#define PING     "*1\r\n$4\r\nPING\r\n"

static const char *shmd_path, *shmctl_path;
static struct daemon_dir shmd; /* shmd's runtime directory and files */
static char group_name[32], user_name[2][32];
static gid_t group_gid;
static uid_t uid_a, uid_b;
static int tcp_port;
static pid_t daemon_pid;

/* ---- Users and the daemon ---------------------------------------------- */

/* The test group and two users in it, A and B. */
static int make_users(void)
{
	if (users_make_group("shmclg", group_name, sizeof(group_name), &group_gid) < 0 ||
	    users_make_user("shmcla", user_name[0], sizeof(user_name[0]), &uid_a, group_name, NULL) < 0 ||
	    users_make_user("shmclb", user_name[1], sizeof(user_name[1]), &uid_b, group_name, NULL) < 0)
		return -1;
	return 0;
}

/* Start shmd with @p instance_keys added to [instance] and @p tcp_keys to
 * a [tcp] section (NULL: none). */
static void start_shmd(const char *instance_keys, const char *tcp_keys)
{
	char tcp[256] = "";
	if (tcp_keys != NULL) {
		tcp_port = sock_free_port();
		/* No password: every TCP client is a reader (PINGs are all these tests send). */
		snprintf(tcp, sizeof(tcp), "[tcp]\nenabled = yes\nport = %d\nunauthenticated_role = reader\n%s\n",
			 tcp_port, tcp_keys);
	}
	assert_int_equal(daemon_write_conf(shmd.conf,
					   "[instance]\nname = " INSTANCE "\nsocket_mode = 0660\ngroup = %s\n%s\n"
					   "[filter f]\ncapacity = 1000\nfpr = 0.01\nmode = 0660\n%s",
					   group_name, instance_keys, tcp),
			 0);
	daemon_pid = daemon_start(shmd_path, shmd.conf, shmd.sock, shmd.log);
}

/* SIGTERM: a clean exit (status 0), connections and all. */
static void stop_shmd(void)
{
	if (daemon_pid <= 0)
		return;
	int st = daemon_stop(daemon_pid, SIGTERM);
	daemon_pid = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		daemon_log_tail(shmd.log, 20);
		fail_msg("shmd exited with status %d on SIGTERM", st);
	}
}

/* In a forked child: raise the open-file limit (as root), then become
 * @p uid with the test group. */
static void become(uid_t uid)
{
	struct rlimit rl = { 4096, 4096 };
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		_exit(120);
	if (uid == 0)
		return;
	if (setgroups(1, &group_gid) < 0 || setgid(group_gid) < 0 || setuid(uid) < 0)
		_exit(121);
}

/* ---- Clients ------------------------------------------------------------- */

/* What a batch of connections got. */
struct counts {
	int opened;     /* connect() succeeded */
	int served;     /* PING answered +PONG */
	int refused;    /* the expected error line, then end-of-file */
	int other;      /* anything else */
	char what[160]; /* the first "other" */
};

static void other(struct counts *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void other(struct counts *c, const char *fmt, ...)
{
	if (c->other++ == 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->what, sizeof(c->what), fmt, ap);
		va_end(ap);
	}
}

/* 1 if the peer closes (end-of-file or a reset after it) within 10 s. */
static int closes(int fd)
{
	char buf[256];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	while (poll(&p, 1, 10000) == 1) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			return 1;
	}
	return 0;
}

/* The reply to a PING sent already (or not: @p send_ping), counted; 1 if
 * served (the connection stays open), 0 if not (closed). */
static int probe(int fd, int send_ping, const char *refusal, struct counts *c)
{
	char line[512];
	if (send_ping) /* a refused connection may be closed already: its line is still there */
		(void)!send(fd, PING, strlen(PING), MSG_NOSIGNAL);
	resp_read_line(fd, line, sizeof(line), 10000);
	if (!strcmp(line, "+PONG\r\n")) {
		c->served++;
		return 1;
	}
	if (refusal != NULL && !strcmp(line, refusal)) {
		if (closes(fd))
			c->refused++;
		else
			other(c, "refused but not closed");
	} else {
		line[strcspn(line, "\r\n")] = '\0';
		other(c, "got '%s'", line);
	}
	close(fd);
	return 0;
}

/* A client process: as @p uid, @p n connections (unix, or TCP when
 * @p from is an address), each PINGed at once; the ones served stay open
 * until holder_stop(). */
struct holder {
	pid_t pid;
	int release; /* written by holder_stop(): the child lets go */
	struct counts c;
};

static int tcp_connect_from(const char *from)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in src = { .sin_family = AF_INET }, dst = { .sin_family = AF_INET };
	inet_pton(AF_INET, from, &src.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	dst.sin_port = htons((uint16_t)tcp_port);
	if (fd < 0 || bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
	    connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return -e;
	}
	return fd;
}

static void holder_start(struct holder *h, uid_t uid, int n, const char *from, const char *refusal)
{
	int res[2], rel[2];
	assert_int_equal(pipe2(res, O_CLOEXEC), 0);
	assert_int_equal(pipe2(rel, O_CLOEXEC), 0);
	h->pid = fork_child();
	if (h->pid == 0) {
		close(res[0]);
		close(rel[1]);
		become(uid);
		struct counts c = { 0 };
		for (int i = 0; i < n; i++) {
			int fd = from != NULL ? tcp_connect_from(from) : sock_unix_connect(shmd.sock);
			if (fd < 0) {
				other(&c, "connect: %s", strerror(-fd));
				continue;
			}
			c.opened++;
			probe(fd, 1, refusal, &c);
		}
		(void)!write(res[1], &c, sizeof(c));
		char x;
		(void)!read(rel[0], &x, 1);
		_exit(0);
	}
	close(res[1]);
	close(rel[0]);
	h->release = rel[1];
	assert_int_equal(read(res[0], &h->c, sizeof(h->c)), (ssize_t)sizeof(h->c));
	close(res[0]);
}

static void holder_stop(struct holder *h)
{
	int st;
	/* A byte, not a close: children forked since hold the pipe too. */
	assert_int_equal(write(h->release, "x", 1), 1);
	close(h->release);
	assert_int_equal(waitpid(h->pid, &st, 0), h->pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void expect_counts(const char *who, const struct counts *c, int opened, int served, int refused)
{
	printf("connlimits: %s: %d opened, %d served, %d refused with the error line, %d other%s%s\n", who, c->opened,
	       c->served, c->refused, c->other, c->other ? ": " : "", c->other ? c->what : "");
	if (c->opened != opened || c->served != served || c->refused != refused || c->other != 0)
		fail_msg("%s: want %d opened, %d served, %d refused, 0 other", who, opened, served, refused);
}

/* The per-user error line for @p uid at @p limit. */
static const char *per_user(uid_t uid, int limit)
{
	static char buf[2][128];
	static int k;
	k ^= 1;
	snprintf(buf[k], sizeof(buf[k]), "-ERR max connections per user (%d) reached for uid %u\r\n", limit,
		 (unsigned)uid);
	return buf[k];
}

/* Root (an administrator) connects and PINGs. */
static void root_ping(void)
{
	int fd = sock_unix_connect(shmd.sock);
	assert_true(fd >= 0);
	struct counts c = { 0 };
	if (!probe(fd, 1, NULL, &c))
		fail_msg("root was not served: %s", c.what);
	close(fd);
}

/* Run shmctl -s SOCK @p args... as @p uid; its exit status in *status (a
 * wait status), what it wrote to stderr in @p err. */
static void shmctl_as(uid_t uid, int *status, char *err, size_t errlen, const char *verb, const char *arg)
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork_child();
	if (pid == 0) {
		become(uid);
		signal(SIGPIPE, SIG_DFL); /* as from a shell: the test ignores it */
		dup2(p[1], 2);
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		execl(shmctl_path, "shmctl", "-s", shmd.sock, verb, arg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	size_t got = 0;
	ssize_t n;
	while (got < errlen - 1 && (n = read(p[0], err + got, errlen - 1 - got)) > 0)
		got += (size_t)n;
	err[got] = '\0';
	close(p[0]);
	assert_int_equal(waitpid(pid, status, 0), pid);
}

/* Unix-socket clients connected now, as INFO says (this one included). */
static long unix_clients(void)
{
	int fd = sock_unix_connect(shmd.sock);
	assert_true(fd >= 0);
	static const char info[] = "*2\r\n$4\r\nINFO\r\n$7\r\nclients\r\n";
	sock_send_all(fd, info, strlen(info));
	char buf[2048];
	sock_read_some(fd, buf, sizeof(buf), sizeof(buf), 300);
	close(fd);
	const char *p = strstr(buf, "unix_clients:");
	assert_non_null(p);
	return strtol(p + strlen("unix_clients:"), NULL, 10);
}

/* Wait (10 s at most) until shmd counts @p n unix clients besides the asker. */
static void wait_unix_clients(long n)
{
	for (int i = 0; i < 100 && unix_clients() != n + 1; i++)
		usleep(100000);
	assert_int_equal(unix_clients(), n + 1);
}

/* ---- The tests ----------------------------------------------------------- */

static void test_per_user(void **state)
{
	(void)state;
	start_shmd("maxclients_per_user = 20", NULL);
	struct holder a, b, a2;
	holder_start(&a, uid_a, 30, NULL, per_user(uid_a, 20));
	expect_counts("per_user: user A, limit 20", &a.c, 30, 20, 10);
	/* A at its limit keeps neither user B nor root out. */
	holder_start(&b, uid_b, 21, NULL, per_user(uid_b, 20));
	expect_counts("per_user: user B meanwhile, limit 20", &b.c, 21, 20, 1);
	root_ping();
	/* A's count goes down as its connections close. */
	holder_stop(&a);
	wait_unix_clients(20);
	holder_start(&a2, uid_a, 21, NULL, per_user(uid_a, 20));
	expect_counts("per_user: user A again, after closing its 20", &a2.c, 21, 20, 1);
	holder_stop(&a2);
	holder_stop(&b);
	assert_true(daemon_log_count(shmd.log, "refused: max connections per user (20) reached for uid") >= 1);
	stop_shmd();
}

/* Root's shmctl ping and list exit 0. */
static void root_shmctl(void)
{
	char err[512];
	int st;
	const char *verbs[] = { "ping", "list" };
	for (int i = 0; i < 2; i++) {
		usleep(300000); /* the reserved slot a previous run held is free again */
		shmctl_as(0, &st, err, sizeof(err), verbs[i], NULL);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fail_msg("root's shmctl %s: wait status %d, stderr '%s'", verbs[i], st, err);
	}
	printf("connlimits: lockout: root's shmctl ping and shmctl list exit 0\n");
}

static void test_lockout(void **state)
{
	(void)state;
	struct holder a, b;
	/* The defaults: 1024 at once, 512 a user. */
	start_shmd("", NULL);
	holder_start(&a, uid_a, 1100, NULL, per_user(uid_a, 512));
	expect_counts("lockout, default limits: user A", &a.c, 1100, 512, 588);
	holder_start(&b, uid_b, 10, NULL, NULL);
	expect_counts("lockout, default limits: user B meanwhile", &b.c, 10, 10, 0);
	root_ping();
	root_shmctl();
	holder_stop(&b);
	holder_stop(&a);
	stop_shmd();

	/* No per-user limit to speak of, as before it existed: one user
	 * fills the table but for the administrator's slot. */
	start_shmd("maxclients_per_user = 65536", NULL);
	holder_start(&a, uid_a, 1100, NULL, "-ERR max number of clients reached\r\n");
	expect_counts("lockout, no per-user limit: user A", &a.c, 1100, 1023, 77);
	holder_start(&b, uid_b, 3, NULL, "-ERR max number of clients reached\r\n");
	expect_counts("lockout, no per-user limit: user B meanwhile", &b.c, 3, 0, 3);
	root_shmctl();
	usleep(300000); /* shmctl's reserved slot is free again */
	root_ping();
	holder_stop(&b);
	holder_stop(&a);
	stop_shmd();
}

/* An idle connection: closed within 10 s (1 when closed). */
static int closed_when_idle(int fd, const char *what)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int closed = closes(fd);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("connlimits: idle: the idle %s connection %s after %.1f s\n", what, closed ? "was closed" : "was open",
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	close(fd);
	return closed;
}

static void test_idle(void **state)
{
	(void)state;
	start_shmd("timeout = 1", "timeout = 1");
	/* The busy client: a PING every 100 ms for 4 s, as user A. */
	int res[2];
	assert_int_equal(pipe2(res, O_CLOEXEC), 0);
	pid_t busy = fork_child();
	if (busy == 0) {
		become(uid_a);
		struct counts c = { 0 };
		int fd = sock_unix_connect(shmd.sock);
		c.opened = fd >= 0;
		for (int i = 0; i < 40 && fd >= 0; i++) {
			(void)!send(fd, PING, strlen(PING), MSG_NOSIGNAL);
			char line[64];
			resp_read_line(fd, line, sizeof(line), 10000);
			if (!strcmp(line, "+PONG\r\n"))
				c.served++;
			else
				other(&c, "PING %d got '%s'", i, line);
			usleep(100000);
		}
		(void)!write(res[1], &c, sizeof(c));
		_exit(0);
	}
	close(res[1]);
	int idle_unix = sock_unix_connect(shmd.sock), idle_tcp = sock_tcp_connect(tcp_port);
	assert_true(idle_unix >= 0 && idle_tcp >= 0);
	/* A served request, then nothing. */
	struct counts c = { 0 };
	assert_true(probe(idle_unix, 1, NULL, &c));
	assert_true(probe(idle_tcp, 1, NULL, &c));
	assert_true(closed_when_idle(idle_unix, "unix"));
	assert_true(closed_when_idle(idle_tcp, "TCP"));
	struct counts b;
	assert_int_equal(read(res[0], &b, sizeof(b)), (ssize_t)sizeof(b));
	close(res[0]);
	waitpid(busy, NULL, 0);
	b.opened = 1;
	expect_counts("idle: the busy client, 40 PINGs 100 ms apart", &b, 1, 40, 0);
	stop_shmd();
}

/* A process that opens @p n connections as @p uid, each sending a PING,
 * and reads none of the replies until told (then counts them). */
struct flood {
	pid_t pid;
	int go, res;
};

static void flood_start(struct flood *f, uid_t uid, int n, const char *refusal)
{
	int go[2], res[2], ready[2];
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	assert_int_equal(pipe2(res, O_CLOEXEC), 0);
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	f->pid = fork_child();
	if (f->pid == 0) {
		close(go[1]);
		close(res[0]);
		close(ready[0]);
		become(uid);
		struct counts c = { 0 };
		int *fds = calloc((size_t)n, sizeof(int));
		for (int i = 0; i < n; i++) {
			fds[i] = sock_unix_connect(shmd.sock);
			if (fds[i] < 0) {
				other(&c, "connect: %s", strerror(-fds[i]));
				continue;
			}
			c.opened++;
			(void)!send(fds[i], PING, strlen(PING), MSG_NOSIGNAL);
		}
		(void)!write(ready[1], "r", 1);
		char x;
		(void)!read(go[0], &x, 1);
		for (int i = 0; i < n; i++)
			if (fds[i] >= 0)
				probe(fds[i], 0, refusal, &c);
		(void)!write(res[1], &c, sizeof(c));
		_exit(0);
	}
	close(go[0]);
	close(res[1]);
	close(ready[1]);
	char x;
	assert_int_equal(read(ready[0], &x, 1), 1);
	close(ready[0]);
	f->go = go[1];
	f->res = res[0];
}

static void flood_count(struct flood *f, struct counts *c)
{
	assert_int_equal(write(f->go, "x", 1), 1);
	close(f->go);
	assert_int_equal(read(f->res, c, sizeof(*c)), (ssize_t)sizeof(*c));
	close(f->res);
	waitpid(f->pid, NULL, 0);
}

/* shmctl ping as A, at its limit: exit 2 with the daemon's message. */
static int shmctl_refused(int *st, char *err, size_t errlen)
{
	shmctl_as(uid_a, st, err, errlen, "ping", NULL);
	return WIFEXITED(*st) && WEXITSTATUS(*st) == 2 && strstr(err, "max connections per user (5) reached") != NULL;
}

static void test_pending(void **state)
{
	(void)state;
	start_shmd("maxclients_per_user = 5", NULL);
	struct holder a;
	holder_start(&a, uid_a, 5, NULL, NULL);
	expect_counts("pending: user A fills its 5", &a.c, 5, 5, 0);

	/* 200 connections and a shmctl wait in the backlog of a stopped shmd. */
	struct flood f;
	kill(daemon_pid, SIGSTOP);
	flood_start(&f, uid_a, 200, per_user(uid_a, 5));
	pid_t ctl = fork_child();
	if (ctl == 0) {
		int st;
		char err[512];
		int ok = shmctl_refused(&st, err, sizeof(err));
		if (!ok)
			fprintf(stderr, "shmctl in the backlog: wait status %d, stderr '%s'\n", st, err);
		_exit(ok ? 0 : 1);
	}
	usleep(300000);
	kill(daemon_pid, SIGCONT);
	struct counts c;
	flood_count(&f, &c);
	expect_counts("pending: 200 in the backlog of a stopped shmd, user A at its limit", &c, 200, 0, 200);
	int st;
	assert_int_equal(waitpid(ctl, &st, 0), ctl);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	printf("connlimits: pending: shmctl ping in the same backlog exits 2 with the daemon's message\n");

	/* Again with 100 refused connections open that read nothing (more
	 * than shmd keeps to drain, so the rest are answered and closed at
	 * once): 20 runs of shmctl, each refused with the message. */
	flood_start(&f, uid_a, 100, per_user(uid_a, 5));
	int ok = 0, sigpipe = 0;
	char err[512] = "", bad[512] = "";
	for (int i = 0; i < 20; i++) {
		if (shmctl_refused(&st, err, sizeof(err)))
			ok++;
		else if (bad[0] == '\0')
			snprintf(bad, sizeof(bad), "wait status %d, stderr '%s'", st, err);
		sigpipe += WIFSIGNALED(st) && WTERMSIG(st) == SIGPIPE;
	}
	err[strcspn(err, "\n")] = '\0';
	printf("connlimits: pending: 20 shmctl runs past the limit with 100 refused open: %d exit 2 with the "
	       "message (\"%s\"), %d SIGPIPE\n",
	       ok, err, sigpipe);
	flood_count(&f, &c);
	expect_counts("pending: the 100 refused ones", &c, 100, 0, 100);
	if (ok != 20)
		fail_msg("shmctl refused: %s", bad);
	root_ping();
	holder_stop(&a);
	stop_shmd();
}

/* A server that writes its error line and closes at once, before the
 * client has written its request (as shmd did past 64 refused clients, and
 * as any server may): 50 runs of shmctl ping, each must exit 2 with the
 * message, however the close and its write cross (the shmctl before this
 * change died of SIGPIPE in 27 and 46 of 50 runs, no word said). */
static void test_abrupt(void **state)
{
	(void)state;
	static const char line[] = "-ERR max connections per user (5) reached for uid 33\r\n";
	char path[96];
	snprintf(path, sizeof(path), "%s/abrupt.sock", shmd.root);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 64), 0);
	pid_t srv = fork_child();
	if (srv == 0) {
		for (;;) {
			int fd = accept(lfd, NULL, NULL);
			if (fd >= 0) {
				(void)!send(fd, line, strlen(line), MSG_NOSIGNAL);
				close(fd);
			}
		}
	}
	close(lfd);
	char saved[sizeof(shmd.sock)];
	memcpy(saved, shmd.sock, sizeof(saved));
	snprintf(shmd.sock, sizeof(shmd.sock), "%s", path);
	int ok = 0, after_close = 0, sigpipe = 0;
	char err[512], bad[600] = "";
	for (int i = 0; i < 50; i++) {
		int st;
		shmctl_as(0, &st, err, sizeof(err), "ping", NULL);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 2 &&
		    strstr(err, "max connections per user (5) reached for uid 33"))
			ok++;
		else if (bad[0] == '\0')
			snprintf(bad, sizeof(bad), "wait status %d, stderr '%s'", st, err);
		after_close += strstr(err, "connection refused by shmd: ") != NULL;
		sigpipe += WIFSIGNALED(st) && WTERMSIG(st) == SIGPIPE;
	}
	memcpy(shmd.sock, saved, sizeof(saved));
	kill(srv, SIGKILL);
	waitpid(srv, NULL, 0);
	unlink(path);
	printf("connlimits: abrupt: 50 shmctl runs against a server that answers and closes at once: %d exit 2 with "
	       "the message (%d of them read it after their write failed), %d SIGPIPE\n",
	       ok, after_close, sigpipe);
	if (ok != 50)
		fail_msg("shmctl against an abrupt close: %s", bad);
}

static void test_tcp_addr(void **state)
{
	(void)state;
	start_shmd("", "maxclients = 100\nmaxclients_per_addr = 10");
	char refusal[160];
	snprintf(refusal, sizeof(refusal),
		 "-ERR max connections per address (10) reached for uid %u (a TCP client on this host)\r\n",
		 (unsigned)uid_a);
	struct holder a, a2, b, u;
	holder_start(&a, uid_a, 15, "127.0.0.1", refusal);
	expect_counts("tcp_addr: user A from 127.0.0.1, limit 10", &a.c, 15, 10, 5);
	/* Another loopback address is the same user of this host... */
	holder_start(&a2, uid_a, 3, "127.0.0.2", refusal);
	expect_counts("tcp_addr: user A from 127.0.0.2 meanwhile", &a2.c, 3, 0, 3);
	/* ...and another user of this host is another peer. */
	holder_start(&b, uid_b, 10, "127.0.0.2", NULL);
	expect_counts("tcp_addr: user B from 127.0.0.2 meanwhile", &b.c, 10, 10, 0);
	/* The unix socket's table is another. */
	holder_start(&u, uid_a, 3, NULL, NULL);
	expect_counts("tcp_addr: user A on the unix socket meanwhile", &u.c, 3, 3, 0);
	holder_stop(&u);
	holder_stop(&b);
	holder_stop(&a2);
	holder_stop(&a);
	stop_shmd();
}

static int setup(void **state)
{
	(void)state;
	if (daemon_dir_make_as_root(&shmd, "test-connlimits", make_users, "connlim", INSTANCE) < 0)
		return -1;
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	int rc = daemon_dir_remove(&shmd, &daemon_pid, SIGKILL);
	users_remove();
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s PATH-TO-SHMD PATH-TO-SHMCTL [TEST]\n", argv[0]);
		return 2;
	}
	shmd_path = argv[1];
	shmctl_path = argv[2];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_per_user), cmocka_unit_test(test_lockout), cmocka_unit_test(test_idle),
		cmocka_unit_test(test_pending),  cmocka_unit_test(test_abrupt),  cmocka_unit_test(test_tcp_addr),
	};
	static const char *const names[] = { "per_user", "lockout", "idle", "pending", "abrupt", "tcp_addr" };
	return RUN_NAMED("connlimits", argc > 3 ? argv[3] : NULL, tests, names, setup, teardown);
}
