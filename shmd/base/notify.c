/* notify.c - sd_notify(3) for a Type=notify unit (notify.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "shmd/base/log.h"
#include "shmd/base/notify.h"

/* One line per failure kind is enough: the manager is gone or the socket
 * is not one, and every later message would fail the same way. */
static void send_state(const char *state)
{
	static int warned;
	if (getenv("NOTIFY_SOCKET") == NULL)
		return;
	int rc = sd_notify(0, state);
	if (rc < 0 && !warned) {
		warned = 1;
		log_msg(LOG_WARNING, "cannot tell the service manager (NOTIFY_SOCKET %s): %s", getenv("NOTIFY_SOCKET"),
			strerror(-rc));
	}
}

void notify_ready(const char *fmt, ...)
{
	char status[256], msg[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(status, sizeof(status), fmt, ap);
	va_end(ap);
	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%s", status);
	send_state(msg);
}

void notify_reloading(void)
{
	struct timespec ts;
	char msg[128];
	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading",
		 (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000);
	send_state(msg);
}

void notify_stopping(void)
{
	send_state("STOPPING=1\nSTATUS=stopping");
}
