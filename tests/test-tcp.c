/*
 * test-tcp.c - shmd's TCP listener, from the real binary: off unless
 * configured and on loopback unless told otherwise; AUTH required,
 * accepted and refused (and the small pre-AUTH requests); the unix
 * socket's command set over TCP, byte for byte; BF.INSERT; the connection
 * verbs client libraries send; pipelining, split anywhere; many clients
 * at once; the client limit and the request size limit with their errors
 * (read by the client, not lost to a reset); the [tcp] configuration.
 *
 *   test-tcp PATH-TO-SHMD [TEST]
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
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
#include <unistd.h>

#include "shmd/config/config.h"
#include "tests/daemon-process.h"

#define PASSWORD    "tcp-test-pw"
#define MAXCLIENTS  64
#define MAX_REQUEST (64 * 1024)

static const char *shmd_path;
static char root[64];

struct daemon {
	pid_t pid;
	int port;
	char instance[32];
	char sock[128];
	char log[128];
};

static struct daemon main_d; /* started for every test */

/* Every daemon started, so that teardown kills those a failed test left. */
static pid_t spawned[32];
static int nspawned;

/*
 * Start shmd for instance @p inst with @p tcp_section (the [tcp] lines;
 * "%d" in it becomes a free port). Waits until the TCP port (when there
 * is one) and the unix socket accept. Returns 0, or the exit status of a
 * daemon that did not start (its log in d->log).
 */
static int start_daemon(struct daemon *d, const char *inst, const char *tcp_section, int fixed_port)
{
	for (int attempt = 0; attempt < 10; attempt++) {
		memset(d, 0, sizeof(*d));
		snprintf(d->instance, sizeof(d->instance), "%s", inst);
		snprintf(d->sock, sizeof(d->sock), "%s/%s.sock", root, inst);
		snprintf(d->log, sizeof(d->log), "%s/%s.log", root, inst);
		d->port = fixed_port ? fixed_port : sock_free_port();
		char ini[160], text[2048], section[1024];
		snprintf(ini, sizeof(ini), "%s/%s.ini", root, inst);
		snprintf(section, sizeof(section), tcp_section, d->port);
		snprintf(text, sizeof(text), "[instance]\nname = %s\n\n[filter f]\ncapacity = 100000\nfpr = 0.01\n\n%s",
			 inst, section);
		FILE *f = fopen(ini, "w");
		assert_non_null(f);
		fputs(text, f);
		fclose(f);
		unlink(d->log);
		d->pid = daemon_spawn(shmd_path, ini, d->log);
		if (nspawned < 32)
			spawned[nspawned++] = d->pid;
		int tcp = strstr(tcp_section, "enabled = yes") != NULL;
		for (int i = 0; i < 1000; i++) {
			int st;
			if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
				d->pid = 0;
				if (strstr(daemon_read_file(d->log), "Address already in use") && !fixed_port)
					break; /* lost the port to someone: another one */
				return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			}
			int fd = sock_unix_connect(d->sock);
			if (fd >= 0) {
				close(fd);
				if (!tcp)
					return 0;
				fd = sock_tcp_connect(d->port);
				if (fd >= 0) {
					close(fd);
					return 0;
				}
			}
			usleep(10000);
		}
		if (d->pid > 0) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, NULL, 0);
			d->pid = 0;
		}
	}
	fail_msg("shmd did not start; its log: %s", daemon_read_file(d->log));
	return -1;
}

/* SIGTERM: the daemon must exit 0 (under ASan, a leak would make it fail). */
static void stop_daemon(struct daemon *d)
{
	if (d->pid <= 0)
		return;
	int st;
	kill(d->pid, SIGTERM);
	assert_int_equal(waitpid(d->pid, &st, 0), d->pid);
	d->pid = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("shmd exited with status %d on SIGTERM; its log: %s", st, daemon_read_file(d->log));
}

static const char TCP_MAIN[] = "[tcp]\nenabled = yes\nport = %d\nrequirepass = " PASSWORD
			       "\nmaxclients = 64\nmax_request = 64k\n";

static int setup(void **state)
{
	(void)state;
	if (daemon_rundir_make(root, sizeof(root), "tcp") < 0)
		return -1;
	struct rlimit rl = { 4096, 4096 };
	setrlimit(RLIMIT_NOFILE, &rl);
	signal(SIGPIPE, SIG_IGN);
	return start_daemon(&main_d, "tcpmain", TCP_MAIN, 0) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < nspawned; i++)
		if (waitpid(spawned[i], NULL, WNOHANG) == 0) {
			kill(spawned[i], SIGKILL);
			waitpid(spawned[i], NULL, 0);
		}
	return daemon_rundir_remove(root);
}

/* ---- talking RESP ------------------------------------------------------ */

static int tcp_connect(void)
{
	int fd = sock_tcp_connect(main_d.port);
	assert_true(fd >= 0);
	return fd;
}

/* Encode the arguments from @p arg0 on, up to a NULL, as RESP (caller frees). */
static char *vencode(size_t *len, const char *arg0, va_list ap)
{
	const char *argv[64];
	size_t lens[64];
	int argc = 0;
	for (const char *a = arg0; a != NULL && argc < 64; a = va_arg(ap, const char *)) {
		argv[argc] = a;
		lens[argc++] = strlen(a);
	}
	char *cmd = NULL;
	long long n = redisFormatCommandArgv(&cmd, argc, argv, lens);
	assert_true(n > 0);
	*len = (size_t)n;
	return cmd;
}

static char *encode(size_t *len, const char *arg0, ...)
{
	va_list ap;
	va_start(ap, arg0);
	char *cmd = vencode(len, arg0, ap);
	va_end(ap);
	return cmd;
}

/* Send a command and compare the whole reply (@p want exactly). */
#define RT(fd, want, ...) roundtrip(fd, want, __VA_ARGS__, (char *)NULL)
static void roundtrip(int fd, const char *want, const char *arg0, ...)
{
	size_t len;
	va_list ap;
	va_start(ap, arg0);
	char *cmd = vencode(&len, arg0, ap);
	va_end(ap);
	sock_send_all(fd, cmd, len);
	free(cmd);
	char buf[8192];
	sock_read_some(fd, buf, sizeof(buf), strlen(want), 10000);
	if (strcmp(buf, want) != 0)
		fail_msg("%s: got '%s', want '%s'", arg0, buf, want);
}

/* Read one whole reply (hiredis' reader says where it ends): its raw
 * bytes, NUL-terminated (caller frees), and parsed in *parsed if asked. */
static char *raw_reply(int fd, redisReply **parsed)
{
	redisReader *r = redisReaderCreate();
	void *reply = NULL;
	char *raw = NULL;
	size_t len = 0;
	char buf[16384];
	for (;;) {
		assert_int_equal(redisReaderGetReply(r, &reply), REDIS_OK);
		if (reply != NULL)
			break;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		assert_true(poll(&p, 1, 10000) > 0);
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			fail_msg("connection closed before a whole reply");
		redisReaderFeed(r, buf, (size_t)n);
		raw = realloc(raw, len + (size_t)n + 1);
		memcpy(raw + len, buf, (size_t)n);
		len += (size_t)n;
		raw[len] = '\0';
	}
	assert_int_equal(r->len - r->pos, 0); /* nothing after it */
	redisReaderFree(r);
	if (parsed)
		*parsed = reply;
	else
		freeReplyObject(reply);
	return raw;
}

static redisReply *get_reply(int fd)
{
	redisReply *r;
	free(raw_reply(fd, &r));
	return r;
}

static redisReply *command(int fd, const char *arg0, ...)
{
	size_t len;
	va_list ap;
	va_start(ap, arg0);
	char *cmd = vencode(&len, arg0, ap);
	va_end(ap);
	sock_send_all(fd, cmd, len);
	free(cmd);
	return get_reply(fd);
}
#define CMD(fd, ...) command(fd, __VA_ARGS__, (char *)NULL)

/* The peer closed: reads end-of-file (not a reset) once what it sent is read. */
static void expect_eof(int fd)
{
	char buf[256];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	assert_true(poll(&p, 1, 10000) > 0);
	ssize_t n = recv(fd, buf, sizeof(buf), 0);
	if (n != 0)
		fail_msg("expected end-of-file, got %zd (%s)", n, n < 0 ? strerror(errno) : "bytes");
}

static int authed(void)
{
	int fd = tcp_connect();
	RT(fd, "+OK\r\n", "AUTH", PASSWORD);
	return fd;
}

/* ---- the listener's configuration --------------------------------------- */

/* Local addresses of the TCP sockets process @p pid listens on, "ip:port" ... */
static void listening(pid_t pid, char *out, size_t len)
{
	char path[64], link[64];
	unsigned long inodes[64];
	int n = 0;
	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%ld/fd", (long)pid);
	DIR *d = opendir(path);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d)) != NULL && n < 64) {
		char fdp[384];
		snprintf(fdp, sizeof(fdp), "%s/%s", path, e->d_name);
		ssize_t k = readlink(fdp, link, sizeof(link) - 1);
		if (k > 0) {
			link[k] = '\0';
			if (sscanf(link, "socket:[%lu]", &inodes[n]) == 1)
				n++;
		}
	}
	closedir(d);
	const char *tables[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	for (int t = 0; t < 2; t++) {
		FILE *f = fopen(tables[t], "r");
		char line[512];
		if (f == NULL)
			continue;
		while (fgets(line, sizeof(line), f)) {
			char local[64];
			unsigned st;
			unsigned long inode;
			if (sscanf(line, " %*d: %63s %*s %x %*s %*s %*s %*s %*s %lu", local, &st, &inode) != 3 ||
			    st != 0x0A)
				continue;
			for (int i = 0; i < n; i++)
				if (inodes[i] == inode) {
					strncat(out, local, len - strlen(out) - 2);
					strncat(out, " ", len - strlen(out) - 1);
				}
		}
		fclose(f);
	}
}

static void test_off_by_default_and_loopback(void **state)
{
	(void)state;
	char socks[512], want[64];
	struct daemon d;
	/* No [tcp] section: no TCP socket at all. */
	assert_int_equal(start_daemon(&d, "notcp", "", 0), 0);
	listening(d.pid, socks, sizeof(socks));
	assert_string_equal(socks, "");
	stop_daemon(&d);
	/* enabled = no: none either. */
	assert_int_equal(start_daemon(&d, "tcpoff", "[tcp]\nenabled = no\nport = %d\n", 0), 0);
	listening(d.pid, socks, sizeof(socks));
	assert_string_equal(socks, "");
	stop_daemon(&d);
	/* enabled without bind: 127.0.0.1 only (/proc/net/tcp: hex address, port). */
	assert_int_equal(start_daemon(&d, "tcplo", "[tcp]\nenabled = yes\nport = %d\nunauthenticated_role = reader\n",
				      0),
			 0);
	listening(d.pid, socks, sizeof(socks));
	snprintf(want, sizeof(want), "0100007F:%04X ", d.port);
	assert_string_equal(socks, want);
	/* Without requirepass a TCP client needs no AUTH. */
	int fd = sock_tcp_connect(d.port);
	RT(fd, "+PONG\r\n", "PING");
	RT(fd, ":0\r\n", "BF.EXISTS", "f", "k");
	close(fd);
	stop_daemon(&d);
	/* The main daemon too. */
	listening(main_d.pid, socks, sizeof(socks));
	snprintf(want, sizeof(want), "0100007F:%04X ", main_d.port);
	assert_string_equal(socks, want);
}

static void test_port_in_use_is_named(void **state)
{
	(void)state;
	struct daemon d;
	int st = start_daemon(&d, "clash", "[tcp]\nenabled = yes\nport = %d\nunauthenticated_role = reader\n",
			      main_d.port);
	assert_int_equal(st, 1);
	char want[128];
	snprintf(want, sizeof(want), "shmd: tcp listener 127.0.0.1:%d: cannot listen: Address already in use",
		 main_d.port);
	if (strstr(daemon_read_file(d.log), want) == NULL)
		fail_msg("log '%s' lacks '%s'", daemon_read_file(d.log), want);
	/* It took nothing with it: its unix socket is gone, the main one serves. */
	assert_true(access(d.sock, F_OK) < 0);
	int fd = authed();
	RT(fd, "+PONG\r\n", "PING");
	close(fd);
}

static void test_config_section(void **state)
{
	(void)state;
	struct config c;
	char err[256];
	assert_int_equal(config_parse(&c, "[instance]\nname = x\n", "t", err, sizeof(err)), 0);
	assert_int_equal(c.tcp.enabled, 0);
	assert_string_equal(c.tcp.bind, "127.0.0.1");
	assert_int_equal(c.tcp.port, 6479);
	assert_string_equal(c.tcp.requirepass, "");
	assert_int_equal(c.tcp.maxclients, 1024);
	assert_int_equal(c.tcp.maxclients_per_addr, 512);
	assert_int_equal(c.tcp.timeout, 300);
	assert_int_equal(c.tcp.max_request, 64u << 20);
	const char full[] = "[tcp]\nenabled = yes\nbind = ::1\nport = 7000\nrequirepass = p@ss:word\n"
			    "maxclients = 10\nmaxclients_per_addr = 4\ntimeout = 0\nmax_request = 2MB\n";
	assert_int_equal(config_parse(&c, full, "t", err, sizeof(err)), 0);
	assert_int_equal(c.tcp.enabled, 1);
	assert_string_equal(c.tcp.bind, "::1");
	assert_int_equal(c.tcp.port, 7000);
	assert_string_equal(c.tcp.requirepass, "p@ss:word");
	assert_int_equal(c.tcp.maxclients, 10);
	assert_int_equal(c.tcp.maxclients_per_addr, 4);
	assert_int_equal(c.tcp.timeout, 0);
	assert_int_equal(c.tcp.max_request, 2u << 20);
	assert_int_equal(config_parse(&c, "[tcp]\nmax_request = 1000000\n", "t", err, sizeof(err)), 0);
	assert_int_equal(c.tcp.max_request, 1000000);
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "[tcp]\nport = 0\n", "t:2: [tcp] port '0': an integer from 1 to 65535" },
		{ "[tcp]\nport = 65536\n", "t:2: [tcp] port '65536'" },
		{ "[tcp]\nport = http\n", "t:2: [tcp] port 'http'" },
		{ "[tcp]\nenabled = maybe\n", "t:2: [tcp] enabled 'maybe': expected yes or no" },
		{ "[tcp]\nbind = 1.2.3.4 5.6.7.8\n", "t:2: [tcp] bind '1.2.3.4 5.6.7.8': one address" },
		{ "[tcp]\nmaxclients = 0\n", "t:2: [tcp] maxclients '0': an integer from 1 to 65536" },
		{ "[tcp]\nmaxclients = 70000\n", "t:2: [tcp] maxclients '70000'" },
		{ "[tcp]\nmax_request = 100\n", "t:2: [tcp] max_request '100': bytes from 1k to 64m" },
		{ "[tcp]\nmax_request = 65m\n", "t:2: [tcp] max_request '65m'" },
		{ "[tcp]\nmax_request = 5x\n", "t:2: [tcp] max_request '5x'" },
		{ "[tcp]\ncolor = red\n", "t:2: [tcp] unknown key 'color' in [tcp]" },
		{ "[tcp]\nmaxclients_per_addr = 0\n",
		  "t:2: [tcp] maxclients_per_addr '0': an integer from 1 to 65536" },
		{ "[tcp]\ntimeout = 5w\n", "t:2: [tcp] timeout '5w': 0 (never), seconds, or a duration" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(config_parse(&c, bad[i].text, "t", err, sizeof(err)), SHMF_E_INVAL);
		if (strncmp(err, bad[i].want, strlen(bad[i].want)) != 0)
			fail_msg("'%s': got '%s', want '%s...'", bad[i].text, err, bad[i].want);
	}
}

/* ---- AUTH ---------------------------------------------------------------- */

/* Replies before AUTH, and a wrong password's. */
static const char NOAUTH[] = "-NOAUTH Authentication required.\r\n";
static const char WRONG[] = "-WRONGPASS invalid username-password pair or user is disabled.\r\n";

/* Before AUTH: nothing but AUTH, HELLO with AUTH, QUIT and RESET; no
 * wrong password gets in, the right one does, and a wrong one later does
 * not log the client out. */
static void check_nothing_but_auth_before_auth(void)
{
	int fd = tcp_connect();
	RT(fd, NOAUTH, "PING");
	RT(fd, NOAUTH, "BF.EXISTS", "f", "k");
	RT(fd, NOAUTH, "BF.ADD", "f", "sneaky");
	RT(fd, NOAUTH, "SHMF.DROP", "f");
	RT(fd, NOAUTH, "NOSUCHVERB");
	RT(fd, NOAUTH, "CLIENT", "SETNAME", "x");
	RT(fd, NOAUTH, "INFO");
	RT(fd,
	   "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> "
	   "AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol "
	   "version at the same time\r\n",
	   "HELLO", "2");
	RT(fd, WRONG, "AUTH", "wrong");
	RT(fd, WRONG, "AUTH", PASSWORD "x");
	RT(fd, WRONG, "AUTH", "tcp-test-p"); /* a prefix */
	RT(fd, WRONG, "AUTH", "");
	RT(fd, WRONG, "AUTH", "admin", PASSWORD); /* only the default user */
	RT(fd, WRONG, "HELLO", "2", "AUTH", "default", "wrong");
	RT(fd, "-ERR syntax error\r\n", "AUTH", "a", "b", "c");
	RT(fd, NOAUTH, "PING");
	RT(fd, "+OK\r\n", "AUTH", PASSWORD);
	RT(fd, "+PONG\r\n", "PING");
	RT(fd, ":0\r\n", "BF.EXISTS", "f", "sneaky"); /* the refused add changed nothing */
	/* A wrong password later does not log an authenticated client out. */
	RT(fd, WRONG, "AUTH", "wrong");
	RT(fd, "+PONG\r\n", "PING");
	/* RESET does, when a password is set. */
	RT(fd, "+RESET\r\n", "RESET");
	RT(fd, NOAUTH, "PING");
	RT(fd, "+OK\r\n", "AUTH", "default", PASSWORD);
	RT(fd, "+PONG\r\n", "PING");
	close(fd);
}

/* HELLO 2 AUTH ... SETNAME: authenticated, named, Redis' reply. HELLO 3
 * switches to RESP3 (its own reply a map), HELLO 2 back; other versions:
 * -NOPROTO. */
static void check_hello_authenticates_and_switches_protocol(void)
{
	int fd = tcp_connect();
	redisReply *r = CMD(fd, "HELLO", "2", "AUTH", "default", PASSWORD, "SETNAME", "hello-client");
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, 14);
	const char *keys[] = { "server", "version", "proto", "id", "mode", "role", "modules" };
	for (int i = 0; i < 7; i++)
		assert_string_equal(r->element[2 * i]->str, keys[i]);
	assert_string_equal(r->element[1]->str, "redis");
	assert_string_equal(r->element[3]->str, "7.0.0");
	assert_int_equal(r->element[5]->integer, 2);
	long long id = r->element[7]->integer;
	assert_true(id > 0);
	assert_int_equal(r->element[13]->type, REDIS_REPLY_ARRAY);
	freeReplyObject(r);
	RT(fd, "$12\r\nhello-client\r\n", "CLIENT", "GETNAME");
	r = CMD(fd, "CLIENT", "ID");
	assert_int_equal(r->integer, id);
	freeReplyObject(r);
	/* HELLO 3 switches to RESP3 (its own reply a map), HELLO 2 back; other versions: -NOPROTO. */
	RT(fd, "-NOPROTO unsupported protocol version\r\n", "HELLO", "1");
	RT(fd, "-NOPROTO unsupported protocol version\r\n", "HELLO", "4");
	char hello3[512];
	snprintf(hello3, sizeof(hello3),
		 "%%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.0.0\r\n$5\r\nproto\r\n:3\r\n"
		 "$2\r\nid\r\n:%lld\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n"
		 "$7\r\nmodules\r\n*0\r\n",
		 id);
	RT(fd, hello3, "HELLO", "3");
	RT(fd, "#f\r\n", "BF.EXISTS", "no-such-filter", "x");
	RT(fd, "$12\r\nhello-client\r\n", "CLIENT", "GETNAME");
	snprintf(hello3, sizeof(hello3),
		 "*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.0.0\r\n$5\r\nproto\r\n:2\r\n"
		 "$2\r\nid\r\n:%lld\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n"
		 "$7\r\nmodules\r\n*0\r\n",
		 id);
	RT(fd, hello3, "HELLO", "2");
	RT(fd, ":0\r\n", "BF.EXISTS", "no-such-filter", "x");

	RT(fd, "-ERR Protocol version is not an integer or out of range\r\n", "HELLO", "two");
	RT(fd, "-ERR Syntax error in HELLO option 'COLOR'\r\n", "HELLO", "2", "COLOR");
	close(fd);
}

/* HELLO 3 before AUTH with a wrong password: refused, still
 * unauthenticated. QUIT before AUTH: +OK and end-of-file. */
static void check_hello_wrong_password_then_quit(void)
{
	int fd = tcp_connect();
	RT(fd, WRONG, "HELLO", "3", "AUTH", "default", "wrong");
	RT(fd, NOAUTH, "PING");
	RT(fd, "+OK\r\n", "QUIT");
	expect_eof(fd);
	close(fd);
}

/* The unix socket needs no AUTH; AUTH there checks the password all the
 * same. */
static void check_unix_socket_needs_no_auth(void)
{
	int fd = sock_unix_connect(main_d.sock);
	RT(fd, "+PONG\r\n", "PING");
	RT(fd, WRONG, "AUTH", "wrong");
	RT(fd, "+PONG\r\n", "PING");
	RT(fd, "+OK\r\n", "AUTH", PASSWORD);
	close(fd);
}

/* Without requirepass, AUTH <password> says the configuration is wrong. */
static void check_auth_without_requirepass(void)
{
	struct daemon d;
	assert_int_equal(start_daemon(&d, "nopass", "[tcp]\nenabled = yes\nport = %d\nunauthenticated_role = reader\n",
				      0),
			 0);
	int fd = sock_tcp_connect(d.port);
	RT(fd,
	   "-ERR AUTH <password> called without any password configured for the default user. Are you sure "
	   "your configuration is correct?\r\n",
	   "AUTH", "pw");
	RT(fd, "+OK\r\n", "AUTH", "default", "anything");
	close(fd);
	stop_daemon(&d);
}

static void test_auth_required_accepted_refused(void **state)
{
	(void)state;
	check_nothing_but_auth_before_auth();
	check_hello_authenticates_and_switches_protocol();
	check_hello_wrong_password_then_quit();
	check_unix_socket_needs_no_auth();
	check_auth_without_requirepass();
}

/* Before AUTH only small requests; AUTH lifts the limit for the very next
 * request, even in the same packet. */
static void test_preauth_limits(void **state)
{
	(void)state;
	char buf[512];
	int fd = tcp_connect();
	size_t len;
	char *req = encode(&len, "AUTH", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", NULL);
	sock_send_all(fd, req, len);
	free(req);
	sock_read_some(fd, buf, sizeof(buf), sizeof(buf), 10000);
	assert_string_equal(buf, "-ERR Protocol error: 11 arguments, more than 10 in one request before AUTH\r\n");
	close(fd);

	char *big = malloc(20001);
	memset(big, 'p', 20000);
	big[20000] = '\0';
	fd = tcp_connect();
	req = encode(&len, "AUTH", big, NULL);
	sock_send_all(fd, req, len);
	free(req);
	sock_read_some(fd, buf, sizeof(buf), sizeof(buf), 10000);
	assert_string_equal(buf, "-ERR Protocol error: argument of 20000 bytes, larger than 16 KiB before AUTH\r\n");
	close(fd);

	/* AUTH and a 20,000-byte key and 11 arguments in one write: all served. */
	fd = tcp_connect();
	size_t l1, l2, l3;
	char *a = encode(&l1, "AUTH", PASSWORD, NULL);
	char *b = encode(&l2, "BF.EXISTS", "f", big, NULL);
	char *c = encode(&l3, "BF.MEXISTS", "f", "1", "2", "3", "4", "5", "6", "7", "8", "9", NULL);
	char *all = malloc(l1 + l2 + l3);
	memcpy(all, a, l1);
	memcpy(all + l1, b, l2);
	memcpy(all + l1 + l2, c, l3);
	sock_send_all(fd, all, l1 + l2 + l3);
	const char want[] = "+OK\r\n:0\r\n*9\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n";
	sock_read_some(fd, buf, sizeof(buf), strlen(want), 10000);
	assert_string_equal(buf, want);
	free(a);
	free(b);
	free(c);
	free(all);
	free(big);
	close(fd);
}

/* ---- the same verbs as the unix socket ----------------------------------- */

static void test_same_replies_as_unix_socket(void **state)
{
	(void)state;
	/* Each request on filters "tcpX" over TCP and "uniX" over the unix
	 * socket: the replies must be the same bytes once the names are. */
	static const char *const script[][8] = {
		{ "BF.RESERVE", "@b", "0.01", "1000" },
		{ "BF.RESERVE", "@b", "0.01", "1000" },
		{ "BF.ADD", "@b", "apple" },
		{ "BF.MADD", "@b", "apple", "banana", "cherry" },
		{ "BF.EXISTS", "@b", "banana" },
		{ "BF.MEXISTS", "@b", "apple", "durian" },
		{ "BF.CARD", "@b" },
		{ "BF.INFO", "@b" },
		{ "BF.INFO", "@b", "ITEMS" },
		{ "BF.INSERT", "@b", "ITEMS", "elder", "apple" },
		{ "BF.INSERT", "@i", "CAPACITY", "500", "ERROR", "0.001", "ITEMS", "x" },
		{ "BF.INFO", "@i", "CAPACITY" },
		{ "CF.RESERVE", "@c", "1000", "MAXITERATIONS", "50" },
		{ "CF.ADD", "@c", "k" },
		{ "CF.ADDNX", "@c", "k" },
		{ "CF.INSERT", "@c", "ITEMS", "k", "m" },
		{ "CF.INSERTNX", "@c", "ITEMS", "k", "n" },
		{ "CF.COUNT", "@c", "k" },
		{ "CF.DEL", "@c", "k" },
		{ "CF.EXISTS", "@c", "m" },
		{ "CF.MEXISTS", "@c", "m", "zz" },
		{ "CF.INFO", "@c" },
		{ "CF.COMPACT", "@c" },
		{ "SHMF.ADDCAPPED", "@c", "dev", "1" },
		{ "SHMF.ADDCAPPED", "@c", "dev", "1" },
		{ "BF.ADD", "@c", "x" },
		{ "CF.ADD", "@b", "x" },
		{ "BF.INFO", "@none" },
		{ "BF.EXISTS", "@none", "x" },
		{ "BF.RESERVE", "@e", "0.01", "100", "EXPANSION", "-1" },
		{ "NOSUCH", "@b" },
		{ "PING", "@b" },
		{ "SHMF.DROP", "@i" },
		{ "BF.EXISTS", "@i", "x" },
	};
	int tfd = authed(), ufd = sock_unix_connect(main_d.sock);
	for (size_t i = 0; i < sizeof(script) / sizeof(script[0]); i++) {
		char *got[2];
		for (int side = 0; side < 2; side++) {
			const char *argv[8];
			size_t lens[8];
			char names[8][32];
			int argc = 0;
			for (; argc < 8 && script[i][argc] != NULL; argc++) {
				const char *a = script[i][argc];
				if (a[0] == '@') {
					snprintf(names[argc], sizeof(names[argc]), "%s%s", side ? "UNIX" : "TCPX",
						 a + 1);
					a = names[argc];
				}
				argv[argc] = a;
				lens[argc] = strlen(a);
			}
			char *cmd;
			long long n = redisFormatCommandArgv(&cmd, argc, argv, lens);
			int fd = side ? ufd : tfd;
			sock_send_all(fd, cmd, (size_t)n);
			free(cmd);
			got[side] = raw_reply(fd, NULL);
		}
		for (char *p = got[1]; (p = strstr(p, "UNIX")) != NULL; p += 4)
			memcpy(p, "TCPX", 4);
		if (strcmp(got[0], got[1]) != 0)
			fail_msg("%s: over TCP '%s', over the unix socket '%s'", script[i][0], got[0], got[1]);
		free(got[0]);
		free(got[1]);
	}
	/* Except the verbs that name files on the daemon's host (as nobody,
	 * shmd could still write to /tmp). */
	char never[64];
	snprintf(never, sizeof(never), "/tmp/shmf-tcp-never-%ld.snap", (long)getpid());
	unlink(never);
	RT(tfd,
	   "-ERR SHMF.SNAPSHOT is refused over TCP: it names a file on the daemon's host, which a network client "
	   "may not (use the unix socket)\r\n",
	   "SHMF.SNAPSHOT", "f", never);
	RT(tfd,
	   "-ERR shmf.restore is refused over TCP: it names a file on the daemon's host, which a network client "
	   "may not (use the unix socket)\r\n",
	   "shmf.restore", "g", "/etc/passwd");
	RT(tfd,
	   "-ERR SHMF.SWAP is refused over TCP: it names a file on the daemon's host, which a network client "
	   "may not (use the unix socket)\r\n",
	   "SHMF.SWAP", "f", "/etc/passwd");
	int written = access(never, F_OK) == 0;
	unlink(never);
	assert_false(written);
	RT(tfd, "*5\r\n$1\r\nf\r\n$5\r\nTCPXb\r\n$5\r\nUNIXb\r\n$5\r\nTCPXc\r\n$5\r\nUNIXc\r\n", "SHMF.LIST");
	close(tfd);
	close(ufd);
}

/* ---- the connection verbs client libraries send ------------------------ */

static void test_connection_verbs(void **state)
{
	(void)state;
	int fd = authed();
	RT(fd, "$-1\r\n", "CLIENT", "GETNAME");
	RT(fd, "+OK\r\n", "CLIENT", "SETNAME", "worker-7");
	RT(fd, "$8\r\nworker-7\r\n", "CLIENT", "GETNAME");
	RT(fd, "-ERR Client names cannot contain spaces, newlines or special characters.\r\n", "CLIENT", "SETNAME",
	   "two words");
	RT(fd, "$8\r\nworker-7\r\n", "CLIENT", "GETNAME"); /* unchanged */
	RT(fd, "+OK\r\n", "CLIENT", "SETINFO", "LIB-NAME", "redis-py");
	RT(fd, "+OK\r\n", "CLIENT", "SETINFO", "lib-ver", "5.0.1");
	RT(fd, "-ERR Unrecognized option 'COLOR'\r\n", "CLIENT", "SETINFO", "COLOR", "red");
	RT(fd, "+OK\r\n", "CLIENT", "NO-EVICT", "on");
	RT(fd, "+OK\r\n", "CLIENT", "REPLY", "ON");
	RT(fd, "-ERR unknown subcommand 'FROB'. Try CLIENT HELP.\r\n", "CLIENT", "FROB", "x");
	RT(fd, "-ERR No such client\r\n", "CLIENT", "KILL", "x");
	RT(fd, "-ERR wrong number of arguments for 'client|setname' command\r\n", "CLIENT", "SETNAME");
	redisReply *r = CMD(fd, "CLIENT", "INFO");
	assert_int_equal(r->type, REDIS_REPLY_STRING);
	assert_non_null(strstr(r->str, " addr=127.0.0.1:"));
	assert_non_null(strstr(r->str, " name=worker-7 "));
	assert_non_null(strstr(r->str, " lib-name=redis-py lib-ver=5.0.1\n"));
	freeReplyObject(r);
	r = CMD(fd, "CLIENT", "ID");
	long long id = r->integer;
	freeReplyObject(r);
	int other = authed();
	r = CMD(other, "CLIENT", "ID");
	assert_true(r->integer > id);
	freeReplyObject(r);
	close(other);

	RT(fd, "+OK\r\n", "SELECT", "0");
	RT(fd, "-ERR DB index is out of range\r\n", "SELECT", "1");
	RT(fd, "-ERR value is not an integer or out of range\r\n", "SELECT", "zero");
	RT(fd, "$5\r\nhello\r\n", "ECHO", "hello");
	RT(fd, "+PONG\r\n", "PING");

	/* COMMAND: COUNT agrees with the entries, and with LIST but for the
	 * subcommands LIST names too ("client|kill", as Redis 7); INFO of one. */
	r = CMD(fd, "COMMAND", "COUNT");
	long long count = r->integer;
	freeReplyObject(r);
	assert_true(count >= 36);
	r = CMD(fd, "COMMAND", "LIST");
	int saw_insert = 0, saw_auth = 0, saw_kill = 0, subs = 0;
	for (size_t i = 0; i < r->elements; i++) {
		saw_insert += !strcmp(r->element[i]->str, "bf.insert");
		saw_auth += !strcmp(r->element[i]->str, "auth");
		saw_kill += !strcmp(r->element[i]->str, "client|kill");
		subs += strchr(r->element[i]->str, '|') != NULL;
	}
	assert_int_equal(saw_insert + saw_auth + saw_kill, 3);
	assert_int_equal(r->elements - subs, count);
	freeReplyObject(r);
	r = CMD(fd, "COMMAND");
	assert_int_equal(r->elements, count);
	freeReplyObject(r);
	RT(fd,
	   "*1\r\n*10\r\n$6\r\nbf.add\r\n:3\r\n*2\r\n+write\r\n+denyoom\r\n:1\r\n:1\r\n:1\r\n*0\r\n*0\r\n*0\r\n*0\r\n",
	   "COMMAND", "INFO", "BF.ADD");
	RT(fd,
	   "*2\r\n*10\r\n$10\r\nbf.mexists\r\n:-3\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n*0\r\n*0\r\n*0\r\n*0\r\n"
	   "$-1\r\n",
	   "COMMAND", "INFO", "bf.mexists", "nosuch");
	/* COMMAND DOCS: every verb (a flat map in RESP2); one verb's, Redis 7's shape (a module's verb
	 * names its module). */
	r = CMD(fd, "COMMAND", "DOCS");
	assert_int_equal(r->elements, 2 * count);
	freeReplyObject(r);
	RT(fd,
	   "*2\r\n$6\r\nbf.add\r\n*10\r\n$7\r\nsummary\r\n$48\r\nAdds an item to a Bloom filter: 1 if it was new.\r\n"
	   "$5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\ngroup\r\n$6\r\nmodule\r\n$6\r\nmodule\r\n$2\r\nbf\r\n"
	   "$9\r\narguments\r\n*2\r\n"
	   "*4\r\n$4\r\nname\r\n$3\r\nkey\r\n$4\r\ntype\r\n$3\r\nkey\r\n"
	   "*4\r\n$4\r\nname\r\n$4\r\nitem\r\n$4\r\ntype\r\n$6\r\nstring\r\n",
	   "COMMAND", "DOCS", "BF.ADD", "NOSUCH");
	RT(fd, "*1\r\n$6\r\nclicks\r\n", "COMMAND", "GETKEYS", "BF.ADD", "clicks", "k");
	RT(fd, "-ERR The command has no key arguments\r\n", "COMMAND", "GETKEYS", "SHMF.LIST");
	RT(fd, "-ERR Invalid command specified\r\n", "COMMAND", "GETKEYS", "NOSUCH", "x");

	/* INFO: a bulk string with the sections and fields tools read. */
	r = CMD(fd, "INFO");
	assert_int_equal(r->type, REDIS_REPLY_STRING);
	assert_true(strncmp(r->str, "# Server\r\nredis_version:7.0.0\r\n", 31) == 0);
	char want[64];
	snprintf(want, sizeof(want), "\r\ntcp_port:%d\r\n", main_d.port);
	assert_non_null(strstr(r->str, want));
	assert_non_null(strstr(r->str, "\r\n# Clients\r\nconnected_clients:"));
	assert_non_null(strstr(r->str, "\r\nmaxclients:64\r\n"));
	assert_non_null(strstr(r->str, "\r\n# Stats\r\ntotal_connections_received:"));
	assert_non_null(strstr(r->str, "\r\n# Keyspace\r\ndb0:keys="));
	freeReplyObject(r);
	r = CMD(fd, "INFO", "server");
	assert_null(strstr(r->str, "# Clients"));
	assert_non_null(strstr(r->str, "redis_version:7.0.0\r\n"));
	freeReplyObject(r);
	RT(fd, "$0\r\n\r\n", "INFO", "nosuchsection");
	close(fd);
}

/* ---- pipelining and many clients ---------------------------------------- */

/* Send all of @p req while reading the replies (a pipeline larger than the
 * socket buffers would deadlock otherwise); returns the replies. */
static char *pipeline(int fd, const char *req, size_t len, size_t want, size_t chunk)
{
	char *got = malloc(want + 1);
	size_t sent = 0, read_ = 0;
	while (read_ < want) {
		struct pollfd p = { .fd = fd, .events = POLLIN | (sent < len ? POLLOUT : 0) };
		assert_true(poll(&p, 1, 10000) > 0);
		if ((p.revents & POLLOUT) && sent < len) {
			size_t n = len - sent < chunk ? len - sent : chunk;
			ssize_t k = send(fd, req + sent, n, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (k > 0)
				sent += (size_t)k;
		}
		if (p.revents & POLLIN) {
			ssize_t k = recv(fd, got + read_, want - read_, MSG_DONTWAIT);
			if (k == 0)
				fail_msg("closed after %zu of %zu reply bytes", read_, want);
			if (k > 0)
				read_ += (size_t)k;
		}
	}
	got[want] = '\0';
	return got;
}

static void test_pipelining(void **state)
{
	(void)state;
	enum { N = 20000 };
	/* 20,000 requests in one stream: adds of new keys, checks of keys
	 * added just before in the same stream, and checks of absent ones. */
	char *req = malloc((size_t)N * 64), *want = malloc((size_t)N * 8);
	size_t len = 0, wlen = 0;
	for (int i = 0; i < N; i++) {
		char key[24];
		int k = snprintf(key, sizeof(key), "pipe-%d", i / 3);
		if (i % 3 == 0) {
			len += (size_t)sprintf(req + len, "*3\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n$%d\r\n%s\r\n", k, key);
			wlen += (size_t)sprintf(want + wlen, ":1\r\n");
		} else if (i % 3 == 1) {
			len += (size_t)sprintf(req + len, "*3\r\n$9\r\nBF.EXISTS\r\n$1\r\nf\r\n$%d\r\n%s\r\n", k, key);
			wlen += (size_t)sprintf(want + wlen, ":1\r\n");
		} else {
			len += (size_t)sprintf(req + len,
					       "*4\r\n$10\r\nBF.MEXISTS\r\n$1\r\nf\r\n$%d\r\n%s\r\n$4\r\nnope\r\n", k,
					       key);
			wlen += (size_t)sprintf(want + wlen, "*2\r\n:1\r\n:0\r\n");
		}
	}
	int fd = authed();
	char *got = pipeline(fd, req, len, wlen, len);
	if (memcmp(got, want, wlen) != 0) {
		size_t at = 0;
		while (got[at] == want[at])
			at++;
		fail_msg("pipelined replies differ at byte %zu of %zu", at, wlen);
	}
	free(got);
	close(fd);

	/* The same checks in pieces of every size from 1 to 97 bytes: same
	 * replies (no add this time: the keys are there). */
	size_t clen = 0, cw = 0;
	for (int i = 0; i < 300; i++) {
		char key[24];
		int k = snprintf(key, sizeof(key), "pipe-%d", i);
		clen += (size_t)sprintf(req + clen, "*3\r\n$9\r\nBF.EXISTS\r\n$1\r\nf\r\n$%d\r\n%s\r\n", k, key);
		cw += (size_t)sprintf(want + cw, ":1\r\n");
	}
	for (size_t piece = 1; piece < 98; piece += 8) {
		fd = authed();
		got = pipeline(fd, req, clen, cw, piece);
		assert_memory_equal(got, want, cw);
		free(got);
		close(fd);
	}
	free(req);
	free(want);
}

static void test_many_clients(void **state)
{
	(void)state;
	enum { C = MAXCLIENTS - 4, ROUNDS = 20 };
	int fds[C];
	for (int c = 0; c < C; c++)
		fds[c] = authed();
	/* Each round every client adds its own key and checks its
	 * neighbour's from the round before, all requests sent before any
	 * reply is read. */
	for (int round = 0; round < ROUNDS; round++) {
		for (int c = 0; c < C; c++) {
			char req[256], key[32], prev[32];
			snprintf(key, sizeof(key), "many-%d-%d", c, round);
			snprintf(prev, sizeof(prev), "many-%d-%d", (c + 1) % C, round - 1);
			size_t n = (size_t)sprintf(req,
						   "*3\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n$%zu\r\n%s\r\n"
						   "*3\r\n$9\r\nBF.EXISTS\r\n$1\r\nf\r\n$%zu\r\n%s\r\n",
						   strlen(key), key, strlen(prev), prev);
			sock_send_all(fds[c], req, n);
		}
		for (int c = 0; c < C; c++) {
			char buf[64];
			const char *want = round == 0 ? ":1\r\n:0\r\n" : ":1\r\n:1\r\n";
			sock_read_some(fds[c], buf, sizeof(buf), 8, 10000);
			if (strcmp(buf, want) != 0)
				fail_msg("client %d round %d: '%s'", c, round, buf);
		}
	}
	for (int c = 0; c < C; c++)
		close(fds[c]);
}

/* ---- limits ---------------------------------------------------------------- */

static long long info_field(int fd, const char *field)
{
	redisReply *r = CMD(fd, "INFO");
	const char *p = strstr(r->str, field);
	assert_non_null(p);
	long long v = atoll(p + strlen(field) + 1);
	freeReplyObject(r);
	return v;
}

static void test_client_limit(void **state)
{
	(void)state;
	int fds[MAXCLIENTS];
	int probe = authed();
	long long rejected = info_field(probe, "rejected_connections");
	/* Unauthenticated connections count too: 63 more fill the 64. */
	fds[0] = probe;
	for (int i = 1; i < MAXCLIENTS; i++)
		fds[i] = tcp_connect();
	RT(fds[MAXCLIENTS - 1], "-NOAUTH Authentication required.\r\n", "PING"); /* it was accepted */
	/* The 65th gets Redis' error and end-of-file, also when its first
	 * request is already there when shmd accepts it (a client library
	 * sends AUTH at once; shmd is stopped meanwhile to make sure): closing
	 * over unread bytes would reset the connection instead. */
	for (int k = 0; k < 3; k++) {
		if (k > 0)
			kill(main_d.pid, SIGSTOP);
		int extra = tcp_connect();
		if (k > 0) {
			size_t len;
			char *req = encode(&len, "AUTH", PASSWORD, NULL);
			sock_send_all(extra, req, len);
			free(req);
			usleep(20000);
			kill(main_d.pid, SIGCONT);
		}
		char buf[256];
		sock_read_some(extra, buf, sizeof(buf), strlen("-ERR max number of clients reached\r\n"), 10000);
		assert_string_equal(buf, "-ERR max number of clients reached\r\n");
		expect_eof(extra);
		close(extra);
	}
	/* Meanwhile the connected ones and the unix socket are served. */
	RT(fds[0], "+PONG\r\n", "PING");
	int u = sock_unix_connect(main_d.sock);
	RT(u, "+PONG\r\n", "PING");
	close(u);
	assert_int_equal(info_field(fds[0], "rejected_connections"), rejected + 3);
	assert_int_equal(info_field(fds[0], "tcp_clients"), MAXCLIENTS);
	/* One leaves, one more may come. */
	close(fds[1]);
	int again = -1;
	for (int i = 0; i < 100 && again < 0; i++) {
		usleep(10000);
		int fd = tcp_connect();
		char buf[64];
		size_t len;
		char *req = encode(&len, "AUTH", PASSWORD, NULL);
		sock_send_all(fd, req, len);
		free(req);
		sock_read_some(fd, buf, sizeof(buf), 5, 10000);
		if (!strcmp(buf, "+OK\r\n"))
			again = fd;
		else
			close(fd);
	}
	assert_true(again >= 0);
	RT(again, "+PONG\r\n", "PING");
	close(again);
	for (int i = 0; i < MAXCLIENTS; i++)
		if (i != 1)
			close(fds[i]);
}

/* A request over max_request (64k here): an error the client reads, even
 * while it is still sending megabytes, then end-of-file; nothing changes. */
static void test_request_size_limit(void **state)
{
	(void)state;
	int fd = authed();
	redisReply *r = CMD(fd, "BF.CARD", "f");
	long long card = r->integer;
	freeReplyObject(r);
	close(fd);

	/* A request of exactly 64 KiB is served; one byte more is not. */
	char *big = malloc(MAX_REQUEST + 64);
	for (int extra = 0; extra < 2; extra++) {
		const size_t hdr = strlen("*3\r\n$7\r\nBF.MADD\r\n$1\r\nf\r\n$65502\r\n");
		size_t keylen = MAX_REQUEST - hdr - 2 + (size_t)extra;
		size_t len = (size_t)sprintf(big, "*3\r\n$7\r\nBF.MADD\r\n$1\r\nf\r\n$%zu\r\n", keylen);
		assert_int_equal(len, hdr);
		memset(big + len, 'x', keylen);
		memcpy(big + len + keylen, "\r\n", 2);
		len += keylen + 2;
		assert_int_equal(len, MAX_REQUEST + (size_t)extra);
		fd = authed();
		sock_send_all(fd, big, len);
		char buf[256];
		const char *want = extra ? "-ERR Protocol error: request larger than 64 KiB\r\n" : "*1\r\n:1\r\n";
		sock_read_some(fd, buf, sizeof(buf), strlen(want), 10000);
		if (strcmp(buf, want) != 0)
			fail_msg("a request of %zu bytes: got '%s'", len, buf);
		if (extra)
			expect_eof(fd);
		close(fd);
	}
	fd = authed();
	r = CMD(fd, "BF.CARD", "f");
	assert_int_equal(r->integer, card + 1);
	card = r->integer;
	freeReplyObject(r);
	close(fd);

	/* 8 MiB, sent whole with a blocking send: shmd must read (and drop)
	 * what follows its error, or the send would fail with a reset. */
	size_t total = 8u << 20;
	char *req = malloc(total + 64);
	size_t n = (size_t)sprintf(req, "*3\r\n$7\r\nBF.MADD\r\n$1\r\nf\r\n$%zu\r\n", total);
	memset(req + n, 'z', total);
	memcpy(req + n + total, "\r\n", 2);
	n += total + 2;
	fd = authed();
	sock_send_all(fd, req, n);
	char buf[256];
	sock_read_some(fd, buf, sizeof(buf), sizeof(buf), 10000);
	assert_string_equal(buf, "-ERR Protocol error: request larger than 64 KiB\r\n");
	expect_eof(fd);
	close(fd);
	free(req);
	free(big);
	fd = authed();
	r = CMD(fd, "BF.CARD", "f");
	assert_int_equal(r->integer, card);
	freeReplyObject(r);
	close(fd);
}

/* ---- A listener without a password --------------------------------------- */

/* Send a command; its reply must begin with @p prefix. */
#define STARTS(fd, prefix, ...) starts_with(fd, prefix, __VA_ARGS__, (char *)NULL)
static void starts_with(int fd, const char *prefix, const char *arg0, ...)
{
	size_t len;
	va_list ap;
	va_start(ap, arg0);
	char *cmd = vencode(&len, arg0, ap);
	va_end(ap);
	sock_send_all(fd, cmd, len);
	free(cmd);
	char *got = raw_reply(fd, NULL);
	if (strncmp(got, prefix, strlen(prefix)) != 0)
		fail_msg("%s: got '%s', want '%s...'", arg0, got, prefix);
	free(got);
}

/*
 * No requirepass and no [user NAME]: refused at start naming the settings
 * (exit 2), unless unauthenticated_role names the role such clients get;
 * then the warning is logged and a client gets exactly that role (a
 * reader neither adds, creates nor drops; a writer adds but neither
 * creates nor drops). A reload that would take the password away from the
 * open listener changes nothing; the role beside a password is refused.
 */
static void test_unauthenticated_role(void **state)
{
	(void)state;
	struct daemon d;
	int st = start_daemon(&d, "openport", "[tcp]\nenabled = yes\nport = %d\n", 0);
	assert_int_equal(st, 2);
	const char *log = daemon_read_file(d.log);
	if (strstr(log, "[tcp] enabled = yes with no requirepass and no [user NAME] sections") == NULL ||
	    strstr(log, "unauthenticated_role = reader, writer or admin") == NULL)
		fail_msg("the refusal does not name the settings: %s", log);
	assert_true(access(d.sock, F_OK) < 0); /* nothing served */

	/* A reader: checks, and nothing more. */
	assert_int_equal(start_daemon(&d, "rdonly", "[tcp]\nenabled = yes\nport = %d\nunauthenticated_role = reader\n",
				      0),
			 0);
	if (strstr(daemon_read_file(d.log), "[tcp] unauthenticated_role = reader makes every client that connects a "
					    "reader") == NULL)
		fail_msg("no warning logged at start: %s", daemon_read_file(d.log));
	int fd = sock_tcp_connect(d.port);
	RT(fd, "+PONG\r\n", "PING");
	RT(fd, ":0\r\n", "BF.EXISTS", "f", "k");
	STARTS(fd, "-NOPERM bf.add needs the writer role; this connection (user default from 127.0.0.1:", "BF.ADD", "f",
	       "k");
	STARTS(fd, "-NOPERM bf.reserve needs the admin role", "BF.RESERVE", "big", "0.01", "1000000000");
	STARTS(fd, "-NOPERM shmf.drop needs the admin role", "SHMF.DROP", "f");
	STARTS(fd, "-NOPERM", "DEL", "f");
	RT(fd, ":1\r\n", "EXISTS", "f");
	RT(fd, ":0\r\n", "EXISTS", "big");
	close(fd);
	stop_daemon(&d);

	/* A writer: adds, but neither creates nor drops. */
	assert_int_equal(start_daemon(&d, "wronly", "[tcp]\nenabled = yes\nport = %d\nunauthenticated_role = writer\n",
				      0),
			 0);
	fd = sock_tcp_connect(d.port);
	RT(fd, ":1\r\n", "BF.ADD", "f", "k");
	STARTS(fd, "-NOPERM bf.reserve needs the admin role", "BF.RESERVE", "big", "0.01", "1000000000");
	STARTS(fd, "-NOPERM shmf.drop needs the admin role", "SHMF.DROP", "f");
	RT(fd, ":1\r\n", "EXISTS", "f");
	close(fd);
	stop_daemon(&d);

	/* With a password, then a reload of a file without one: refused, the
	 * listener still wants AUTH. */
	assert_int_equal(start_daemon(&d, "reloadpw", "[tcp]\nenabled = yes\nport = %d\nrequirepass = pw\n", 0), 0);
	char ini[160];
	snprintf(ini, sizeof(ini), "%s/reloadpw.ini", root);
	FILE *f = fopen(ini, "w");
	assert_non_null(f);
	fprintf(f, "[instance]\nname = reloadpw\n\n[filter f]\ncapacity = 100000\nfpr = 0.01\n\n[tcp]\nenabled = no\n");
	fclose(f);
	fd = sock_unix_connect(d.sock);
	STARTS(fd, "-ERR", "SHMF.RELOAD");
	close(fd);
	if (strstr(daemon_read_file(d.log), "no requirepass and no [user NAME] sections") == NULL ||
	    strstr(daemon_read_file(d.log), "nothing changed") == NULL)
		fail_msg("the refused reload is not logged: %s", daemon_read_file(d.log));
	fd = sock_tcp_connect(d.port);
	RT(fd, "-NOAUTH Authentication required.\r\n", "PING");
	RT(fd, "+OK\r\n", "AUTH", "pw");
	close(fd);
	stop_daemon(&d);

	/* The role beside a password, or a role that is none. */
	struct config c;
	char err[512];
	assert_int_equal(config_parse(&c, "[tcp]\nrequirepass = pw\nunauthenticated_role = reader\n", "t", err,
				      sizeof(err)),
			 SHMF_E_INVAL);
	assert_non_null(strstr(err, "t:1: [tcp] unauthenticated_role = reader with requirepass"));
	assert_int_equal(config_parse(&c, "[tcp]\nunauthenticated_role = root\n", "t", err, sizeof(err)), SHMF_E_INVAL);
	assert_non_null(strstr(err, "unauthenticated_role 'root': reader, writer or admin"));
	assert_int_equal(config_parse(&c, "[tcp]\nenabled = yes\nunauthenticated_role = admin\n", "t", err,
				      sizeof(err)),
			 0);
	assert_int_equal(c.roles.tcp_unauthenticated_role, ROLE_ADMIN);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH-TO-SHMD [TEST]\n", argv[0]);
		return 2;
	}
	shmd_path = argv[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off_by_default_and_loopback),
		cmocka_unit_test(test_port_in_use_is_named),
		cmocka_unit_test(test_config_section),
		cmocka_unit_test(test_auth_required_accepted_refused),
		cmocka_unit_test(test_preauth_limits),
		cmocka_unit_test(test_same_replies_as_unix_socket),
		cmocka_unit_test(test_connection_verbs),
		cmocka_unit_test(test_pipelining),
		cmocka_unit_test(test_many_clients),
		cmocka_unit_test(test_client_limit),
		cmocka_unit_test(test_request_size_limit),
		cmocka_unit_test(test_unauthenticated_role),
	};
	static const char *const names[] = {
		"listener",         "port_in_use", "config",       "auth",         "preauth_limits", "same_replies",
		"connection_verbs", "pipelining",  "many_clients", "client_limit", "request_size",   "unauthenticated",
	};
	const size_t n = sizeof(tests) / sizeof(tests[0]);
	const char *which = argc > 2 ? argv[2] : "all";
	if (!strcmp(which, "all"))
		return _cmocka_run_group_tests("tcp", tests, n, setup, teardown);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(which, names[i]))
			return _cmocka_run_group_tests(names[i], &tests[i], 1, setup, teardown);
	fprintf(stderr, "unknown test '%s'\n", which);
	return 2;
}
