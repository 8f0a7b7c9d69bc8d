/* log.c - the daemon's log (log.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "shmd/base/log.h"

enum dest { TO_STDERR, TO_JOURNAL, TO_SYSLOG, TO_FILE };

/* Written by the main thread only; read by every thread that logs. */
static _Atomic int dest = TO_STDERR;
static _Atomic int level = LOG_INFO;
static int file_fd = -1; /* TO_FILE: the descriptor, kept across reopens */
/* TO_STDERR: where stderr lines go. A copy of the stderr shmd was started
 * with, taken before daemonising (which points fd 2 at /dev/null), so
 * that a daemon with no syslog to talk to can log there instead. */
static int err_fd = STDERR_FILENO;
static int saved_stderr = -1;

/* The socket syslog(3) writes to: glibc's _PATH_LOG. */
#define SYSLOG_SOCKET "/dev/log"

static const struct {
	const char *name;
	int prio;
} levels[] = {
	{ "debug", LOG_DEBUG },     { "info", LOG_INFO }, { "notice", LOG_NOTICE },
	{ "warning", LOG_WARNING }, { "error", LOG_ERR },
};

int log_parse_level(const char *text, int *prio)
{
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		if (!strcmp(text, levels[i].name)) {
			*prio = levels[i].prio;
			return 0;
		}
	return -1;
}

const char *log_level_name(int prio)
{
	static const char *names[] = { "emerg", "alert", "crit", "error", "warning", "notice", "info", "debug" };
	return names[prio & 7];
}

void log_set_level(int prio)
{
	level = prio;
}

int log_level(void)
{
	return level;
}

/* Whether stderr is the stream JOURNAL_STREAM ("DEV:INODE") names: set by
 * systemd for a service whose output goes to the journal. */
static int stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	return js != NULL && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
	       (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* Whether a syslog daemon listens on SYSLOG_SOCKET (as syslog(3) tries
 * it: datagram, then stream). 0, or -errno with why not. */
static int syslog_reachable(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = SYSLOG_SOCKET };
	int e = 0;
	for (int i = 0; i < 2; i++) {
		int fd = socket(AF_UNIX, (i == 0 ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		e = rc < 0 ? errno : 0;
		close(fd);
		if (rc == 0)
			return 0;
	}
	return -e;
}

void log_keep_stderr(void)
{
	if (saved_stderr < 0)
		saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
}

int log_use_syslog(void)
{
	int rc = syslog_reachable();
	if (rc == 0) {
		openlog("shmd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
		dest = TO_SYSLOG;
		/* Not needed: a daemon that held the terminal's stderr would
		 * keep an ssh session that started it from closing. */
		if (saved_stderr >= 0 && err_fd != saved_stderr) {
			close(saved_stderr);
			saved_stderr = -1;
		}
		return 0;
	}
	/* Nobody would read syslog(3)'s datagrams: every message would
	 * vanish. The stderr shmd was started with (a terminal, or a
	 * container's log) gets them, and says so first. */
	if (saved_stderr >= 0 && dest == TO_STDERR && err_fd == saved_stderr)
		return rc; /* a reload: said at start already */
	if (saved_stderr >= 0) {
		err_fd = saved_stderr;
		dest = TO_STDERR;
		log_msg(LOG_WARNING,
			"no syslog to log to (%s: %s) and no log_file: the log goes to the stderr shmd was started "
			"with; set log_file in [instance], or run shmd -f under a supervisor",
			SYSLOG_SOCKET, strerror(-rc));
	} else {
		log_msg(LOG_WARNING, "no syslog to log to (%s: %s): the log stays where it was", SYSLOG_SOCKET,
			strerror(-rc));
	}
	return rc;
}

void log_use_default(int daemonised)
{
	if (daemonised) {
		log_use_syslog();
		return;
	}
	log_keep_stderr();
	err_fd = STDERR_FILENO;
	dest = stderr_is_journal() ? TO_JOURNAL : TO_STDERR;
}

int log_use_file(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0640);
	if (fd < 0) {
		int e = errno;
		return errmsg(err, errlen, -e, "log_file %s: cannot open it for appending: %s", path, strerror(e));
	}
	if (file_fd < 0) {
		file_fd = fd;
	} else {
		/* The same descriptor number, now on the new file: a thread
		 * writing at this instant writes whole to one or the other. */
		dup3(fd, file_fd, O_CLOEXEC);
		close(fd);
	}
	dest = TO_FILE;
	return 0;
}

/* Write all of @p len bytes of @p buf to @p fd (a short write of a log line is retried). */
static void write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

void log_msg(int prio, const char *fmt, ...)
{
	if ((prio & 7) > level)
		return;
	int d = dest;
	va_list ap;
	va_start(ap, fmt);
	if (d == TO_SYSLOG) {
		vsyslog(prio, fmt, ap);
		va_end(ap);
		return;
	}
	char line[2048];
	int at;
	if (d == TO_JOURNAL) {
		at = snprintf(line, sizeof(line), "<%d>", prio & 7);
	} else {
		char stamp[32];
		time_t now = time(NULL);
		struct tm tm;
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", gmtime_r(&now, &tm));
		at = snprintf(line, sizeof(line), "%s shmd[%s]: ", stamp, log_level_name(prio));
	}
	int n = vsnprintf(line + at, sizeof(line) - (size_t)at - 1, fmt, ap);
	va_end(ap);
	size_t len = (size_t)at + (n < 0 ? 0 : (size_t)n);
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2; /* truncated: still one line */
	line[len++] = '\n';
	/* One line, one write(): lines of several threads never interleave. */
	write_all(d == TO_FILE ? file_fd : err_fd, line, len);
}
