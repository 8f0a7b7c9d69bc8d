/* log.c - the daemon's log. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "log.h"

static int use_syslog;

void log_use_syslog(int on)
{
	use_syslog = on;
	if (on)
		openlog("shmd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_msg(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (use_syslog) {
		vsyslog(prio, fmt, ap);
	} else {
		static const char *names[] = { "emerg", "alert", "crit", "error", "warning", "notice", "info", "debug" };
		char stamp[32];
		time_t now = time(NULL);
		struct tm tm;
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", gmtime_r(&now, &tm));
		/* One line at a time: the replication threads log too. */
		flockfile(stderr);
		fprintf(stderr, "%s shmd[%s]: ", stamp, names[prio & 7]);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		funlockfile(stderr);
	}
	va_end(ap);
}
