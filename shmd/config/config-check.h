/*
 * config-check.h - where shmd's configuration comes from, and what of it
 * can be checked against this host before shmd starts: the directories it
 * names and the ports it listens on (shmd --check-config, the start, and
 * a reload, which refuse what would only fail later).
 */
#ifndef SHMD_CONFIG_CHECK_H
#define SHMD_CONFIG_CHECK_H

#include <stddef.h>

#include "shmd/config/config.h"

/* The directory of configuration files without -c: $SHMD_CONFIG_DIR, else
 * this (meson option config_dir). */
#ifndef SHMD_CONFIG_DIR_DEFAULT
#define SHMD_CONFIG_DIR_DEFAULT "/etc/shmd"
#endif

/**
 * The file shmd reads without -c: DIR/NAME.conf, DIR $SHMD_CONFIG_DIR or
 * SHMD_CONFIG_DIR_DEFAULT, NAME @p instance (-i) or "shmd" without one.
 * Its path into @p path.
 * @return 1 when something is at that path (shmd reads it, and refuses
 *         it if it is no regular file), 0 when nothing is (the embedded
 *         default), SHMF_E_TOOBIG for a path past @p len.
 */
int config_default_path(const char *instance, char *path, size_t len);

/**
 * @p path made absolute against the working directory now (shmd changes
 * to / once it runs, and reads the file again at each reload), without
 * resolving links. 0 or SHMF_E_TOOBIG, -errno.
 */
int config_absolute_path(const char *path, char *out, size_t len);

/**
 * The line of key @p key in section @p section of the file @p path (the
 * section's header line for @p key NULL), or 0 when it cannot say.
 */
int config_line_of(const char *path, const char *section, const char *key);

/**
 * The directories @p c names: snapshot_dir of [instance] and of each
 * filter, and log_file's directory, each an existing directory shmd can
 * write and search. A missing snapshot_dir is made (0750, with its
 * parents) when @p create is 1 (create_dirs = yes), taken as one that
 * will be when it is -1 (--check-config), else a problem. One line per
 * problem, "FILE:LINE: [section] key '...': what", appended to @p out.
 * @return the number of problems.
 */
unsigned config_check_dirs(const struct config *c, int create, char *out, size_t outlen);

/**
 * The listeners @p c opens ([tcp] when enabled, [metrics] when set) can
 * bind now: their addresses are this host's and their ports free. Lines
 * appended to @p out as config_check_dirs() does. @return the problems.
 */
unsigned config_check_ports(const struct config *c, char *out, size_t outlen);

#endif
