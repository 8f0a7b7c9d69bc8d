/*
 * log.h - the daemon's log: one line per message, to one destination.
 *
 * - stderr (the default, and shmd -f): "TIME shmd[LEVEL]: message"; when
 *   stderr is the stream systemd's JOURNAL_STREAM names, journald's own
 *   "<N>message" (the priority as a prefix; journald adds the time and the
 *   SYSLOG_IDENTIFIER of the unit);
 * - syslog (daemonised without log_file), facility daemon;
 * - a file (log_file =), opened for appending and reopened on reload, so
 *   that logrotate's move-then-HUP works.
 *
 * Messages below the level (log_level =, --log-level) are dropped. Safe
 * from several threads (the fleet engine logs too): a line is one write().
 */
#ifndef SHMD_LOG_H
#define SHMD_LOG_H

#include <stddef.h>
#include <syslog.h>

/** The level names log_level and --log-level take: debug, info, notice, warning, error. */
#define LOG_LEVEL_NAMES "debug, info, notice, warning or error"

/** @p text (a name of LOG_LEVEL_NAMES) into LOG_DEBUG..LOG_ERR. 0 or -1 (unknown name, *prio untouched). */
int log_parse_level(const char *text, int *prio);

/** The name of level @p prio ("info"). */
const char *log_level_name(int prio);

/** Log messages of priority @p prio (LOG_ERR..LOG_DEBUG) and more urgent ones; LOG_INFO by default. */
void log_set_level(int prio);

/** The level in force. */
int log_level(void);

/**
 * Send the log to syslog (daemonised without a log file), when a syslog
 * daemon listens on /dev/log. When none does, the log goes to the stderr
 * shmd was started with (kept by log_keep_stderr() before daemonising),
 * and its first line says so and why.
 * @return 0 (syslog), or -errno: why /dev/log could not be reached.
 */
int log_use_syslog(void);

/** Keep a copy of stderr for log_use_syslog()'s fallback (log_use_default() takes it too). */
void log_keep_stderr(void);

/**
 * Send the log to file @p path (absolute), opened O_APPEND and created
 * 0640; called again (reload), the file is opened anew under the same
 * descriptor, so that a rotated-away file is let go.
 * @return 0, or -errno with "log_file PATH: cause" in @p err (the
 *         destination unchanged).
 */
int log_use_file(const char *path, char *err, size_t errlen);

/** Back to stderr (log_file removed from the configuration): syslog when daemonised. */
void log_use_default(int daemonised);

/** Log one line at priority LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO or LOG_DEBUG. */
void log_msg(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
