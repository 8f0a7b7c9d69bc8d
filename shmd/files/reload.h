/*
 * reload.h - the configuration applied at start and again on SIGHUP or
 * SHMF.RELOAD, without a restart.
 *
 * A reload reads the file shmd was started with. If it does not parse,
 * nothing changes (the error is logged, and SHMF.RELOAD answers it).
 * Otherwise, key by key (the tables in reload.c say which does what):
 *
 * - applied at once: new [filter] sections (created, or restored from
 *   their newest snapshot, as at start; so is a configured filter dropped
 *   since), snapshot_every / snapshot_keep / snapshot_dir, remove_on_exit,
 *   log_level, log_file (reopened on every reload, for logrotate), and
 *   [tcp] requirepass (for the next AUTH; authenticated connections stay);
 * - modes and groups (dir_mode, socket_mode, group, a filter's mode):
 *   kept in the configuration for the permissions pass (one call point in
 *   reload_apply_settings());
 * - refused, one log line each, the filter kept as it is: a change of an
 *   existing filter's shape (type, capacity, fpr, max_kicks, bucket_size,
 *   window, generations) or of replicate. A reload never rebuilds or drops a
 *   filter; a section removed from the file leaves its filter live;
 * - needing a restart (logged): the instance name, huge_pages,
 *   mount_tmpfs, maxclients, maxclients_per_user, timeout,
 *   maxmemory_clients, snapshot_paths, [defaults], the rest of [tcp] and
 *   all of [replication].
 *
 * A key the file leaves as it is in force gets no line. What is not
 * applied (refused, failed, or waiting for a restart) is counted in the
 * summary, the last line, whose shape shmctl reload reads.
 *
 * Single-threaded: the server loop's tick and the SHMF.RELOAD handler run
 * it; the SIGHUP handler only sets a flag.
 */
#ifndef SHMD_RELOAD_H
#define SHMD_RELOAD_H

#include <stdarg.h>

#include "shmd/config/config.h"
#include "shmd/files/periodic.h"
#include "shmd/store/registry.h"

#define RELOAD_LINES    64
#define RELOAD_LINE_MAX 320

/* What a reload did, line by line (each also logged). */
struct reload_report {
	unsigned n;    /* lines kept */
	unsigned more; /* lines past RELOAD_LINES, logged only */
	unsigned created, refused, restart, applied;
	char line[RELOAD_LINES][RELOAD_LINE_MAX];
	char error[512]; /* the reason a reload changed nothing */
};

/* The daemon's state a reload changes. */
struct reload_ctx {
	struct config *cfg;   /* in force; changed field by field */
	const char *path;     /* the file shmd was started with; NULL: the embedded default */
	const char *instance; /* -i, which wins over the file; NULL: none */
	int log_level;        /* --log-level, which wins over the file; -1: none */
	int daemonised;       /* the log's default: syslog (1) or stderr (0) */
	struct registry *reg;
	struct periodic *periodic; /* NULL until the loop runs */
	const char *sock_path;     /* the control socket, for the permissions pass; NULL: none yet */
};

/**
 * Each filter of @p cfg: created when the instance lacks it (restored from
 * its newest valid snapshot when it has snapshot_every), else compared
 * with its configuration, every shape difference logged (and reported in
 * @p rep, when not NULL) and left as it is.
 * @return 0, or the first creation error when @p stop_on_error (start);
 *         a reload reports it and goes on.
 */
int reload_filters(struct registry *reg, const struct config *cfg, struct reload_report *rep, int stop_on_error);

/** Log level and destination from @p cfg, the command line's level over it. 0 or -errno with @p err. */
int reload_log(const struct reload_ctx *ctx, const struct config *cfg, char *err, size_t errlen);

/**
 * Reload: parse ctx->path, then apply, refuse and report as above; the
 * service manager told RELOADING=1 before and READY=1 after (notify.h).
 * @return 0 (what happened in @p rep), or a negative code when the file
 *         cannot be read or parsed (rep->error says why; nothing changed).
 */
int reload_run(struct reload_ctx *ctx, struct reload_report *rep);

/**
 * READY=1 for the service manager (notify.h), its status the instance and
 * its filter count, then @p note when not NULL: at start, and after each
 * reload.
 */
void reload_notify_ready(struct registry *reg, const char *note);

/** The context SHMF.RELOAD reloads (main() registers it; NULL: none, as in tests). */
void reload_register(struct reload_ctx *ctx);
struct reload_ctx *reload_registered(void);

#endif
