/*
 * cli-conn.c - shmctl's connection to shmd (cli.h): made on the first
 * request, so that argument errors are found whether a daemon runs or
 * not; a failure says which socket, why, and what to do about it.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "tools/cli.h"
#include "libclient/rundir.h"
#include "libclient/segment-format.h"
#include <shmf.h>

static const char *instance_name = "default", *socket_given;
static redisContext *conn;

void cli_conn_target(const char *instance, const char *socket_path)
{
	instance_name = instance;
	socket_given = socket_path;
}

void cli_conn_close(void)
{
	if (conn != NULL)
		redisFree(conn);
	conn = NULL;
}

/* "user NAME (uid N, gid G)": who is asking, for a permission error. */
static void whoami(char *buf, size_t len)
{
	struct passwd *pw = getpwuid(geteuid());
	snprintf(buf, len, "user %s (uid %u, gid %u)", pw != NULL ? pw->pw_name : "?", (unsigned)geteuid(),
		 (unsigned)getegid());
}

/* "owner:group mode" of @p path, or why it cannot be seen. */
static void describe(const char *path, char *buf, size_t len)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		snprintf(buf, len, "%s: %s", path, strerror(errno));
		return;
	}
	struct passwd *pw = getpwuid(st.st_uid);
	struct group *gr = getgrgid(st.st_gid);
	char u[32], g[32];
	snprintf(u, sizeof(u), "%u", (unsigned)st.st_uid);
	snprintf(g, sizeof(g), "%u", (unsigned)st.st_gid);
	snprintf(buf, len, "%s is %s:%s, mode %04o", path, pw ? pw->pw_name : u, gr ? gr->gr_name : g,
		 (unsigned)(st.st_mode & 07777));
}

/* How shmd last started for instance @p instance, as its control file
 * records it ("shmd -c /etc/shmd/x.conf -i x"), into @p buf: 1. Else how
 * to start it with the configuration directory's NAME.conf: 0. */
static int start_command(const char *instance, char *buf, size_t len)
{
	char path[4096];
	snprintf(buf, len, "shmd -i %s", instance);
	if (shmf_instance_path(instance, "/" SHMF_CTL_FILE, path, sizeof(path)) < 0)
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return 0;
	char rec[SHMF_CTL_STARTED_BYTES];
	ssize_t n = pread(fd, rec, sizeof(rec) - 1, (off_t)SHMF_CTL_STARTED_OFF);
	close(fd);
	if (n < 4)
		return 0;
	rec[n] = '\0';
	/* Only what shmd writes there: "shmd" and printable text. */
	for (const char *p = rec; *p != '\0'; p++)
		if (*p < 0x20 || *p == 0x7f)
			return 0;
	if (strncmp(rec, "shmd", 4) != 0 || (rec[4] != '\0' && rec[4] != ' '))
		return 0;
	snprintf(buf, len, "%s", rec);
	return 1;
}

/* Say why connecting to @p path failed with @p e, and what to do; exit. */
static void connect_failed(const char *path, int e) __attribute__((noreturn));
static void connect_failed(const char *path, int e)
{
	char who[128], what[4200], dir[4096];
	if (e == ENOENT || e == ECONNREFUSED) {
		if (socket_given != NULL)
			fprintf(stderr, "shmctl: cannot connect to %s: %s (is shmd listening on %s?)\n", path,
				strerror(e), path);
		else {
			char cmd[SHMF_CTL_STARTED_BYTES];
			int last = start_command(instance_name, cmd, sizeof(cmd));
			fprintf(stderr,
				"shmctl: cannot connect to %s: %s (is shmd running for instance '%s'? start it with "
				"'%s'%s, or name another with --instance or --socket)\n",
				path, strerror(e), instance_name, cmd, last ? " as it last ran" : "");
		}
	} else if (e == EACCES || e == EPERM) {
		whoami(who, sizeof(who));
		snprintf(dir, sizeof(dir), "%s", path);
		char *slash = strrchr(dir, '/');
		if (slash != NULL && slash != dir)
			*slash = '\0';
		struct stat st;
		describe(stat(path, &st) == 0 ? path : dir, what, sizeof(what));
		fprintf(stderr,
			"shmctl: cannot connect to %s: permission denied for %s (%s): connecting needs write permission "
			"on the socket and search permission on %s; join the socket's group, or change socket_mode and "
			"group in [instance] of shmd's configuration (then shmctl reload)\n",
			path, who, what, dir);
	} else if (e == EAGAIN) {
		/* A unix socket whose backlog is full: the daemon is not
		 * accepting (stopped, or swamped). */
		fprintf(stderr,
			"shmctl: cannot connect to %s: %s (shmd is not accepting connections: stopped or swamped; "
			"try again)\n",
			path, strerror(e));
	} else {
		fprintf(stderr, "shmctl: cannot connect to %s: %s\n", path, strerror(e));
	}
	exit(EXIT_ERROR);
}

static redisContext *connect_daemon(void)
{
	char path[4096];
	if (socket_given == NULL) {
		int rc = shmf_instance_path(instance_name, ".sock", path, sizeof(path));
		if (rc < 0) {
			fprintf(stderr, "shmctl: instance '%s': %s (set SHMF_RUNTIME_DIR, or use --socket PATH)\n",
				instance_name, shmf_strerror(rc));
			exit(EXIT_ERROR);
		}
	} else {
		snprintf(path, sizeof(path), "%s", socket_given);
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "shmctl: socket path %s: longer than %zu bytes\n", path, sizeof(sa.sun_path) - 1);
		exit(EXIT_ERROR);
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* Connected here rather than by hiredis: its error is a string, and
	 * the advice depends on the errno. */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { .tv_sec = 5 };
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		connect_failed(path, errno);
	redisContext *c = redisConnectFd(fd);
	if (c == NULL || c->err) {
		fprintf(stderr, "shmctl: %s: %s\n", path, c ? c->errstr : "out of memory");
		exit(EXIT_ERROR);
	}
	struct timeval op = { .tv_sec = 120 };
	redisSetTimeout(c, op);
	return c;
}

redisContext *cli_conn(void)
{
	if (conn == NULL)
		conn = connect_daemon();
	return conn;
}

const char *cli_error_text(const redisReply *r)
{
	return strncmp(r->str, "ERR ", 4) == 0 ? r->str + 4 : r->str;
}

/* The connection broke: shmd may have said why before closing (a limit,
 * a refusal), which is worth more than our errno. Exits. */
static void transport_failed(const char *what, redisContext *c) __attribute__((noreturn));
static void transport_failed(const char *what, redisContext *c)
{
	char said[512];
	ssize_t n = 0;
	/* A write that failed may have raced the line shmd wrote before
	 * closing: give it a moment to arrive. */
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	if (poll(&p, 1, 200) == 1)
		n = recv(c->fd, said, sizeof(said) - 1, MSG_DONTWAIT);
	if (n > 1 && said[0] == '-') {
		said[n] = '\0';
		said[strcspn(said, "\r\n")] = '\0';
		const char *msg = strncmp(said + 1, "ERR ", 4) == 0 ? said + 5 : said + 1;
		fprintf(stderr, "shmctl: %s: connection refused by shmd: %s\n", what, msg);
	} else if (c->err == REDIS_ERR_EOF || strstr(c->errstr, "Broken pipe") != NULL ||
		   strstr(c->errstr, "reset by peer") != NULL) {
		fprintf(stderr, "shmctl: %s: shmd closed the connection without a reply (%s; its log may say why)\n",
			what, c->errstr[0] ? c->errstr : "end of file");
	} else if (strstr(c->errstr, "temporarily unavailable") != NULL || strstr(c->errstr, "timed out") != NULL) {
		fprintf(stderr,
			"shmctl: %s: no reply from shmd within 120 s (is it stuck on a long snapshot or swap?)\n",
			what);
	} else {
		fprintf(stderr, "shmctl: %s: %s\n", what, c->errstr[0] ? c->errstr : "no reply from shmd");
	}
	exit(EXIT_ERROR);
}

void cli_send(const char *what, int argc, const char **argv, const size_t *lens)
{
	redisContext *c = cli_conn();
	if (redisAppendCommandArgv(c, argc, argv, lens) != REDIS_OK)
		transport_failed(what, c);
}

redisReply *cli_take_any(const char *what)
{
	redisContext *c = cli_conn();
	void *p = NULL;
	if (redisGetReply(c, &p) != REDIS_OK || p == NULL)
		transport_failed(what, c);
	return p;
}

redisReply *cli_take(const char *what)
{
	redisReply *r = cli_take_any(what);
	if (r->type == REDIS_REPLY_ERROR) {
		const char *msg = cli_error_text(r);
		size_t n = strlen(msg);
		/* shmd's "filter 'x' not found" names the filter; say where the names are. */
		int missing = !strncmp(msg, "filter '", 8) && n > 10 && !strcmp(msg + n - 10, " not found");
		fprintf(stderr, "shmctl: %s: %s%s\n", what, msg,
			missing ? " ('shmctl list' shows the filters there are)" : "");
		freeReplyObject(r);
		exit(EXIT_ERROR);
	}
	return r;
}

redisReply *cli_call(const char *what, int argc, const char **argv, const size_t *lens)
{
	cli_send(what, argc, argv, lens);
	return cli_take(what);
}
