/* log.h - the daemon's log: stderr in the foreground, syslog when daemonized. */
#ifndef SHMD_LOG_H
#define SHMD_LOG_H

#include <syslog.h>

/** Send logs to syslog (1) or stderr (0, the default). */
void log_use_syslog(int on);

/** Log one line at priority LOG_ERR, LOG_WARNING, LOG_INFO or LOG_DEBUG. */
void log_msg(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
