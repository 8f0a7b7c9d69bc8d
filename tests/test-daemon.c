/*
 * test-daemon.c - the real shmd, started from its binary: it answers on
 * its socket (also to redis-cli), survives malformed, oversized and
 * abandoned requests, caps its clients, refuses a second daemon on the
 * same instance, and on SIGTERM exits cleanly leaving its segments for a
 * restart that finds every key again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
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

#include "tests/daemon-process.h"
#include <shmf.h>

static const char *shmd_path;
static char root[64], sock_path[100];
static pid_t daemon_pid;

static int connect_sock(void)
{
	return sock_unix_connect(sock_path);
}

/* Send a request and compare the whole reply. */
static void roundtrip(int fd, const char *req, const char *want)
{
	char buf[4096];
	assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	sock_read_some(fd, buf, sizeof(buf), strlen(want), 10000);
	assert_string_equal(buf, want);
}

/* After a protocol error the daemon replies and closes: read to EOF. */
static void expect_error_and_close(int fd, const char *req, size_t len, const char *want_prefix)
{
	char buf[4096];
	ssize_t sent = send(fd, req, len, MSG_NOSIGNAL);
	assert_true(sent > 0);
	sock_read_some(fd, buf, sizeof(buf), sizeof(buf), 10000);
	if (strncmp(buf, want_prefix, strlen(want_prefix)) != 0)
		fail_msg("got '%s', want '%s...'", buf, want_prefix);
	char extra;
	assert_int_equal(recv(fd, &extra, 1, 0), 0); /* closed */
}

static const char PING[] = "*1\r\n$4\r\nPING\r\n";

static int start(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/dev/shm/shmf-daemon-XXXXXX");
	if (mkdtemp(root) == NULL)
		return -1;
	setenv("SHMF_RUNTIME_DIR", root, 1);
	snprintf(sock_path, sizeof(sock_path), "%s/default.sock", root);
	struct rlimit rl = { 4096, 4096 };
	setrlimit(RLIMIT_NOFILE, &rl);
	int st = 0;
	daemon_pid = daemon_spawn(shmd_path, NULL, NULL);
	if (daemon_wait_listening(daemon_pid, sock_path, 10000, &st) == 0)
		return 0;
	fprintf(stderr, "shmd did not listen on %s within 10 s (wait status %d)\n", sock_path, st);
	return -1;
}

static int stop(void **state)
{
	(void)state;
	char cmd[256];
	if (daemon_pid > 0)
		daemon_stop(daemon_pid, SIGKILL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_socket_mode_and_ping(void **state)
{
	(void)state;
	struct stat st;
	assert_int_equal(stat(sock_path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0660);
	int fd = connect_sock();
	roundtrip(fd, PING, "+PONG\r\n");
	roundtrip(fd, "*2\r\n$7\r\nBF.CARD\r\n$7\r\ndefault\r\n", ":0\r\n");
	close(fd);
}

static void test_redis_cli_works(void **state)
{
	(void)state;
	char cmd[1024], out[256] = "";
	snprintf(cmd, sizeof(cmd),
		 "redis-cli -s '%s' BF.ADD default from-redis-cli 2>&1 && "
		 "redis-cli -s '%s' BF.EXISTS default from-redis-cli 2>&1 && "
		 "redis-cli -s '%s' PING 2>&1",
		 sock_path, sock_path, sock_path);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	int st = pclose(p);
	if (st != 0)
		fail_msg("redis-cli failed (exit %d): %s -- run-tests.sh installs redis-tools", st, out);
	assert_string_equal(out, "1\n1\nPONG\n");
}

/* Wrong arity and unknown verbs keep the connection; protocol errors
 * close it; none of them changes a filter. */
static void test_bad_requests(void **state)
{
	(void)state;
	int fd = connect_sock();
	roundtrip(fd, "*2\r\n$6\r\nBF.ADD\r\n$7\r\ndefault\r\n",
		  "-ERR wrong number of arguments for 'bf.add' command\r\n");
	roundtrip(fd, "*1\r\n$3\r\nXYZ\r\n", "-ERR unknown command 'XYZ'\r\n");
	roundtrip(fd, "*2\r\n$7\r\nBF.INFO\r\n$5\r\nnosuc\r\n", "-ERR not found\r\n");
	roundtrip(fd, PING, "+PONG\r\n");
	close(fd);

	fd = connect_sock();
	expect_error_and_close(fd, "GET x\r\n", 7, "-ERR Protocol error: expected '*'");
	close(fd);
	fd = connect_sock();
	expect_error_and_close(fd, "*2000000\r\n", 10, "-ERR Protocol error: 2000000 arguments");
	close(fd);
	fd = connect_sock();
	const char big[] = "*2\r\n$9\r\nBF.EXISTS\r\n$20000000\r\n";
	expect_error_and_close(fd, big, sizeof(big) - 1, "-ERR Protocol error: argument of 20000000 bytes");
	close(fd);

	/* Over 64 MiB in one request: five 16 MiB arguments. */
	fd = connect_sock();
	size_t arg = 16u << 20;
	char *body = malloc(arg + 64);
	memset(body, 'z', arg);
	int rc = 0;
	char hdr[64];
	int n = sprintf(hdr, "*5\r\n");
	send(fd, hdr, (size_t)n, MSG_NOSIGNAL);
	for (int i = 0; i < 5 && rc >= 0; i++) {
		n = sprintf(hdr, "$%zu\r\n", arg);
		rc = (int)send(fd, hdr, (size_t)n, MSG_NOSIGNAL);
		for (size_t off = 0; off < arg && rc >= 0; off += (size_t)rc)
			rc = (int)send(fd, body + off, arg - off, MSG_NOSIGNAL);
		if (rc >= 0)
			rc = (int)send(fd, "\r\n", 2, MSG_NOSIGNAL);
	}
	char buf[256];
	sock_read_some(fd, buf, sizeof(buf), sizeof(buf), 10000);
	assert_non_null(strstr(buf, "-ERR Protocol error: request larger than 64 MiB"));
	free(body);
	close(fd);

	fd = connect_sock();
	roundtrip(fd, "*2\r\n$7\r\nBF.CARD\r\n$7\r\ndefault\r\n", ":1\r\n"); /* the redis-cli key only */
	close(fd);
}

/* A client that disconnects mid-request: nothing it half-sent happens. */
static void test_disconnect_mid_request(void **state)
{
	(void)state;
	const char partial[] = "*3\r\n$6\r\nBF.ADD\r\n$7\r\ndefault\r\n$10\r\nhalf-se";
	for (size_t cut = 1; cut < sizeof(partial); cut += 5) {
		int fd = connect_sock();
		assert_int_equal(send(fd, partial, cut, MSG_NOSIGNAL), (ssize_t)cut);
		close(fd);
	}
	int fd = connect_sock();
	roundtrip(fd, "*3\r\n$9\r\nBF.EXISTS\r\n$7\r\ndefault\r\n$10\r\nhalf-sent!\r\n", ":0\r\n");
	roundtrip(fd, "*2\r\n$7\r\nBF.CARD\r\n$7\r\ndefault\r\n", ":1\r\n");
	close(fd);
}

/* 1,000 malformed requests of many kinds, then PING still works. */
static void test_survives_1000_malformed(void **state)
{
	(void)state;
	static const char *const junk[] = {
		"HELLO\r\n",
		"*1\r\n$-5\r\n",
		"*1\r\n:7\r\n",
		"*x\r\n",
		"*1\r\n$3\r\nabcdef\r\n",
		"\x00\xff\xfe",
		"*3\r\n$6\r\nBF.ADD\r\n*1\r\n",
		"*99999999\r\n",
		"$5\r\nhello\r\n",
		"*1\r\n$99999999\r\n",
	};
	srandom(7);
	for (int i = 0; i < 1000; i++) {
		int fd = connect_sock();
		assert_true(fd >= 0);
		char buf[512];
		size_t len;
		if (i % 3 == 2) {
			len = 1 + (size_t)(random() % 200);
			for (size_t j = 0; j < len; j++)
				buf[j] = (char)random();
			buf[0] = (char)('A' + i % 20); /* never a valid '*' start */
		} else {
			const char *j = junk[i % 10];
			len = i % 10 == 5 ? 3 : strlen(j);
			memcpy(buf, j, len);
		}
		send(fd, buf, len, MSG_NOSIGNAL);
		char reply[512];
		sock_read_some(fd, reply, sizeof(reply), sizeof(reply), 10000);
		if (strncmp(reply, "-ERR Protocol error", 19) != 0)
			fail_msg("malformed request %d got '%s'", i, reply);
		close(fd);
	}
	int fd = connect_sock();
	roundtrip(fd, PING, "+PONG\r\n");
	close(fd);
	assert_int_equal(waitpid(daemon_pid, NULL, WNOHANG), 0); /* still running */
}

/* A connection past a limit is turned away with an error; the others
 * keep working. The test runs as root, an administrator: its 512 a user
 * (the default), then the slot kept for an administrator, then the
 * per-user error. (test-connlimits.c tries the limits from other users,
 * the global one and the idle timeout.) */
static void test_client_limit(void **state)
{
	(void)state;
	enum { N = 512 + 1 };
	static int fds[N];
	for (int i = 0; i < N; i++) {
		fds[i] = connect_sock();
		assert_true(fds[i] >= 0);
	}
	/* The daemon accepts lazily: make sure all of them are registered. */
	roundtrip(fds[N - 1], PING, "+PONG\r\n");
	roundtrip(fds[0], PING, "+PONG\r\n");
	int extra = connect_sock();
	char buf[256], want[128];
	snprintf(want, sizeof(want), "-ERR max connections per user (512) reached for uid %u\r\n", (unsigned)getuid());
	sock_read_some(extra, buf, sizeof(buf), sizeof(buf), 10000);
	assert_string_equal(buf, want);
	close(extra);
	for (int i = 0; i < N; i++)
		close(fds[i]);
	usleep(200000);
	extra = connect_sock();
	roundtrip(extra, PING, "+PONG\r\n");
	close(extra);
}

/* A client that pipelines requests and never reads its replies: past
 * 64 MiB of unread replies shmd stops reading from it (so its memory stays
 * bounded and the client's sends block), keeps serving others, and loses
 * no reply once the client reads. */
static void test_unread_replies_stop_reading(void **state)
{
	(void)state;
	const size_t arg = 16u << 20;
	const int max_requests = 40; /* 640 MiB if shmd kept reading */
	char hdr[64];
	int hlen = snprintf(hdr, sizeof(hdr), "*2\r\n$4\r\nPING\r\n$%zu\r\n", arg);
	char *body = malloc(arg + 2);
	assert_non_null(body);
	memset(body, 'p', arg);
	memcpy(body + arg, "\r\n", 2);

	int fd = connect_sock();
	assert_true(fd >= 0);
	size_t accepted = 0;
	int complete = 0, stalled = 0;
	for (int r = 0; r < max_requests && !stalled; r++) {
		const char *parts[2] = { hdr, body };
		size_t lens[2] = { (size_t)hlen, arg + 2 };
		for (int p = 0; p < 2 && !stalled; p++) {
			for (size_t off = 0; off < lens[p] && !stalled;) {
				struct pollfd pw = { .fd = fd, .events = POLLOUT };
				if (poll(&pw, 1, 1000) <= 0) {
					stalled = 1; /* shmd stopped reading from us */
					break;
				}
				ssize_t n = send(fd, parts[p] + off, lens[p] - off, MSG_NOSIGNAL | MSG_DONTWAIT);
				if (n > 0) {
					off += (size_t)n;
					accepted += (size_t)n;
				}
			}
		}
		if (!stalled)
			complete++;
	}
	assert_true(stalled);
	if (accepted >= (size_t)256 << 20)
		fail_msg("shmd took %zu MiB from a client that reads nothing", accepted >> 20);

	/* Others are still served meanwhile. */
	int other = connect_sock();
	roundtrip(other, PING, "+PONG\r\n");
	close(other);

	/* Every complete request is answered, byte for byte. */
	int rlen = snprintf(hdr, sizeof(hdr), "$%zu\r\n", arg);
	size_t per = (size_t)rlen + arg + 2, want = per * (size_t)complete, got = 0;
	char *buf = malloc(1 << 20);
	while (got < want) {
		struct pollfd pr = { .fd = fd, .events = POLLIN };
		assert_true(poll(&pr, 1, 10000) > 0);
		ssize_t n = recv(fd, buf, want - got < (1u << 20) ? want - got : (1u << 20), 0);
		assert_true(n > 0);
		for (ssize_t i = 0; i < n; i++) {
			size_t at = (got + (size_t)i) % per;
			char expect = at < (size_t)rlen         ? hdr[at]
				      : at < (size_t)rlen + arg ? 'p'
								: "\r\n"[at - rlen - arg];
			if (buf[i] != expect)
				fail_msg("reply byte %zu is 0x%02x, want 0x%02x", got + (size_t)i,
					 (unsigned char)buf[i], (unsigned char)expect);
		}
		got += (size_t)n;
	}
	free(buf);
	free(body);
	close(fd);
	printf("a client that never read: shmd took %zu MiB (%d requests) and then stopped reading\n", accepted >> 20,
	       complete);
}

static void test_second_daemon_refuses(void **state)
{
	(void)state;
	char log[128];
	snprintf(log, sizeof(log), "%s/second.log", root);
	pid_t pid = daemon_spawn(shmd_path, NULL, log);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 1);
	char buf[512] = "";
	FILE *lf = fopen(log, "r");
	assert_non_null(lf);
	buf[fread(buf, 1, sizeof(buf) - 1, lf)] = '\0';
	fclose(lf);
	char want[128];
	snprintf(want, sizeof(want), "instance 'default' is already running (pid %ld)", (long)daemon_pid);
	if (strstr(buf, want) == NULL)
		fail_msg("stderr '%s' lacks '%s'", buf, want);
	int fd = connect_sock();
	roundtrip(fd, PING, "+PONG\r\n"); /* the first one is unharmed */
	close(fd);
}

/* SIGTERM: exit 0, socket gone, segments kept; a restarted daemon serves
 * the keys added before. */
static void test_sigterm_keeps_segments_for_restart(void **state)
{
	(void)state;
	shmf_t *f;
	assert_int_equal(shmf_open(NULL, "default", SHMF_RDWR, &f), 0);
	for (int i = 0; i < 1000; i++) {
		char key[32];
		int n = snprintf(key, sizeof(key), "before-restart-%d", i);
		assert_true(shmf_add(f, key, (size_t)n) >= 0);
	}
	shmf_close(f);
	int st = daemon_stop(daemon_pid, SIGTERM);
	daemon_pid = 0;
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	struct stat sb;
	char path[300];
	assert_int_equal(lstat(sock_path, &sb), -1);
	snprintf(path, sizeof(path), "%s/default/control", root);
	assert_int_equal(stat(path, &sb), 0);
	snprintf(path, sizeof(path), "%s/default/default.1.data", root);
	assert_int_equal(stat(path, &sb), 0);

	/* Segments outlive the daemon: clients keep working without it. */
	assert_int_equal(shmf_open(NULL, "default", SHMF_RDONLY, &f), 0);
	assert_int_equal(shmf_check(f, "before-restart-7", 16), 1);
	shmf_close(f);

	daemon_pid = daemon_start(shmd_path, NULL, sock_path, NULL);
	int fd = connect_sock();
	assert_true(fd >= 0);
	roundtrip(fd, "*2\r\n$7\r\nBF.CARD\r\n$7\r\ndefault\r\n", ":1001\r\n");
	for (int i = 0; i < 1000; i++) {
		char req[128], key[32];
		int n = snprintf(key, sizeof(key), "before-restart-%d", i);
		snprintf(req, sizeof(req), "*3\r\n$9\r\nBF.EXISTS\r\n$7\r\ndefault\r\n$%d\r\n%s\r\n", n, key);
		roundtrip(fd, req, ":1\r\n");
	}
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s PATH-TO-SHMD\n", argv[0]);
		return 2;
	}
	shmd_path = argv[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_socket_mode_and_ping),
		cmocka_unit_test(test_redis_cli_works),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_disconnect_mid_request),
		cmocka_unit_test(test_survives_1000_malformed),
		cmocka_unit_test(test_client_limit),
		cmocka_unit_test(test_unread_replies_stop_reading),
		cmocka_unit_test(test_second_daemon_refuses),
		cmocka_unit_test(test_sigterm_keeps_segments_for_restart),
	};
	return cmocka_run_group_tests(tests, start, stop);
}
