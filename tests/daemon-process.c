/*
 * daemon-process.c - a real shmd for tests, and the socket calls to talk to
 * it (see daemon-process.h).
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
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/daemon-process.h"

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int daemon_rundir_make(char *root, size_t size, const char *what)
{
	if ((size_t)snprintf(root, size, "/dev/shm/shmf-%s-XXXXXX", what) >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (mkdtemp(root) == NULL)
		return -1;
	return setenv("SHMF_RUNTIME_DIR", root, 1);
}

int daemon_rundir_remove(const char *root)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

int daemon_dir_make(struct daemon_dir *d, const char *what, const char *instance, mode_t mode)
{
	if (daemon_rundir_make(d->root, sizeof(d->root), what) < 0 || (mode != 0 && chmod(d->root, mode) < 0))
		return -1;
	if ((size_t)snprintf(d->conf, sizeof(d->conf), "%s/shmd.conf", d->root) >= sizeof(d->conf) ||
	    (size_t)snprintf(d->log, sizeof(d->log), "%s/shmd.log", d->root) >= sizeof(d->log) ||
	    (size_t)snprintf(d->sock, sizeof(d->sock), "%s/%s.sock", d->root, instance) >= sizeof(d->sock) ||
	    (size_t)snprintf(d->idir, sizeof(d->idir), "%s/%s", d->root, instance) >= sizeof(d->idir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int daemon_dir_make_as_root(struct daemon_dir *d, const char *test, int (*make_users)(void), const char *what,
			    const char *instance)
{
	if (geteuid() != 0) {
		fprintf(stderr, "%s needs root (it creates users and groups and runs shmd as root)\n", test);
		return -1;
	}
	if (make_users() < 0) {
		fprintf(stderr, "%s: cannot create the test users and groups\n", test);
		return -1;
	}
	return daemon_dir_make(d, what, instance, 0755);
}

int daemon_dir_remove(struct daemon_dir *d, pid_t *pid, int sig)
{
	if (*pid > 0)
		daemon_stop(*pid, sig);
	*pid = 0;
	return daemon_rundir_remove(d->root);
}

int daemon_write_conf(const char *path, const char *fmt, ...)
{
	FILE *fp = fopen(path, "w");
	if (fp == NULL)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	int n = vfprintf(fp, fmt, ap);
	va_end(ap);
	return fclose(fp) == 0 && n >= 0 ? 0 : -1;
}

int daemon_log_count(const char *log, const char *text)
{
	FILE *fp = fopen(log, "r");
	char line[2048];
	int n = 0;
	while (fp != NULL && fgets(line, sizeof(line), fp) != NULL)
		n += strstr(line, text) != NULL;
	if (fp != NULL)
		fclose(fp);
	return n;
}

int daemon_count_snapshots(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	size_t len = strlen(name);
	int n = 0;
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL)
		n += !strncmp(e->d_name, name, len) && e->d_name[len] == '.' && strstr(e->d_name, ".snap") != NULL;
	if (d != NULL)
		closedir(d);
	return n;
}

int daemon_log_tail(const char *log, int lines)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "tail -%d '%s' >&2", lines, log);
	return system(cmd) == 0 ? 0 : -1;
}

char *daemon_read_file(const char *path)
{
	static char buf[65536];
	FILE *fp = fopen(path, "r");
	size_t n = fp != NULL ? fread(buf, 1, sizeof(buf) - 1, fp) : 0;
	buf[n] = '\0';
	if (fp != NULL)
		fclose(fp);
	return buf;
}

pid_t fork_child(void)
{
	pid_t parent = getpid(), pid = fork();
	assert_true(pid >= 0);
	if (pid == 0 && (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent))
		_exit(126);
	return pid;
}

pid_t daemon_spawn(const char *shmd, const char *conf, const char *log)
{
	pid_t pid = fork_child();
	if (pid > 0)
		return pid;
	if (log != NULL) {
		int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		if (fd >= 0)
			dup2(fd, 2);
	}
	if (conf != NULL)
		execl(shmd, "shmd", "-f", "-c", conf, (char *)NULL);
	else
		execl(shmd, "shmd", "-f", (char *)NULL);
	_exit(127);
}

int daemon_wait_listening(pid_t pid, const char *sock, int timeout_ms, int *status)
{
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		int fd = sock_unix_connect(sock);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			if (status != NULL)
				*status = st;
			return -ECHILD;
		}
		if (now_ms() >= end)
			return -ETIMEDOUT;
		usleep(10000);
	}
}

pid_t daemon_start(const char *shmd, const char *conf, const char *sock, const char *log)
{
	unlink(sock);
	pid_t pid = daemon_spawn(shmd, conf, log);
	int st = 0, rc = daemon_wait_listening(pid, sock, 30000, &st);
	if (rc == -ECHILD)
		fail_msg("shmd exited at start (wait status %d); its log: %s", st, log ? log : "(stderr)");
	if (rc < 0) {
		daemon_stop(pid, SIGKILL);
		fail_msg("shmd did not listen on %s within 30 s; its log: %s", sock, log ? log : "(stderr)");
	}
	return pid;
}

int daemon_stop(pid_t pid, int sig)
{
	int st = 0;
	kill(pid, sig);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

static int connect_to(int domain, const struct sockaddr *sa, socklen_t len)
{
	int fd = socket(domain, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, sa, len) == 0)
		return fd;
	int e = -errno;
	close(fd);
	return e;
}

int sock_unix_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	return connect_to(AF_UNIX, (struct sockaddr *)&sa, sizeof(sa));
}

int sock_tcp_connect(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	return connect_to(AF_INET, (struct sockaddr *)&sa, sizeof(sa));
}

int sock_free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		abort();
	close(fd);
	return ntohs(sa.sin_port);
}

int sock_send_quiet(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EPIPE;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void sock_send_all(int fd, const void *buf, size_t len)
{
	if (sock_send_quiet(fd, buf, len) < 0)
		fail_msg("send: %s", strerror(errno));
}

size_t sock_read_some(int fd, char *buf, size_t cap, size_t want, int timeout_ms)
{
	size_t got = 0;
	while (got < want && got < cap - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, timeout_ms) <= 0)
			break;
		ssize_t n = read(fd, buf + got, cap - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return got;
}

void resp_send(int fd, int argc, const char *const *argv, const size_t *lens)
{
	size_t own[64];
	assert_true(argc > 0 && argc <= 64);
	if (lens == NULL) {
		for (int i = 0; i < argc; i++)
			own[i] = strlen(argv[i]);
		lens = own;
	}
	char *cmd = NULL;
	long long n = redisFormatCommandArgv(&cmd, argc, (const char **)argv, lens);
	assert_true(n > 0);
	sock_send_all(fd, cmd, (size_t)n);
	redisFreeCommand(cmd);
}

size_t resp_read_line(int fd, char *buf, size_t cap, int timeout_ms)
{
	size_t got = 0;
	buf[0] = '\0';
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	while (got < cap - 1 && strstr(buf, "\r\n") == NULL) {
		uint64_t now = now_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (now >= end || poll(&p, 1, (int)(end - now)) <= 0)
			break;
		ssize_t n = recv(fd, buf + got, cap - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = '\0';
	}
	if (strstr(buf, "\r\n") == NULL)
		buf[0] = '\0';
	return strlen(buf);
}
