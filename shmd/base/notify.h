/*
 * notify.h - shmd's state told to the service manager, through
 * libsystemd's sd_notify(3), for a Type=notify unit (dist/systemd/).
 *
 * READY=1 once the control socket accepts clients and the loop serves
 * them (the loop's first tick), RELOADING=1 then READY=1 around each
 * reload (SIGHUP or SHMF.RELOAD, whether it applied anything or not),
 * STOPPING=1 as the loop stops; each with a STATUS= line. Without
 * NOTIFY_SOCKET in the environment (not under systemd, or a unit of
 * another type) every call does nothing. Main thread only.
 */
#ifndef SHMD_NOTIFY_H
#define SHMD_NOTIFY_H

/** READY=1, with STATUS= set to the text @p fmt makes ("3 filters"). */
void notify_ready(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** RELOADING=1 with MONOTONIC_USEC= (systemd 253 and later ask for it), STATUS=reloading. */
void notify_reloading(void);

/** STOPPING=1, STATUS=stopping. */
void notify_stopping(void);

#endif
