/*
 * perms.h - the permissions of an instance's files follow the
 * configuration.
 *
 * shmd sets a file's mode and group when it creates it, so a change of
 * the configuration (a new `group =`, a filter's new `mode =`) would reach
 * only files made afterwards: the instance directory and control file of
 * an instance that already existed kept root:root, and workers of the new
 * group got a bare "Permission denied". perms_apply() brings everything
 * that exists to what the configuration says, at every start and reload,
 * and logs each change it makes.
 *
 * Owner: every file is the daemon's (shmd creates them; a file another
 * user owns is refused by the registry and by clients, never adopted).
 * Group: [instance] group, or the daemon's own group when none is set (so
 * that removing `group =` takes the group's access away again). Modes:
 * dir_mode for the instance directory, 0640 for the control file,
 * socket_mode for the socket, and for each filter in the configuration its
 * `mode =` on the data file of every live generation and on its journal;
 * a filter made over the socket keeps the mode it has (SHMF.CHMOD changes
 * it).
 *
 * Single-threaded, like the registry: called from the main loop only.
 */
#ifndef SHMD_PERMS_H
#define SHMD_PERMS_H

#include <stddef.h>
#include <sys/types.h>

#include "shmd/store/registry.h"

struct config;

/** Mode of the control file: shmd writes it, the group maps it read-only. */
#define PERMS_CONTROL_MODE 0640

/**
 * Bring the instance directory, its control file, the control socket at
 * @p sock_path (NULL: none yet) and the data and journal files of every
 * live filter of @p r to the owner, group and modes @p cfg says; each
 * change logged ("permissions: PATH: group root -> www-data"). New files
 * take the group from then on (r->gid). Keeps going after a failure.
 * @return the number of changes made, or the first error (-errno), each
 *         failure logged with the path and what to do.
 */
int perms_apply(struct registry *r, const struct config *cfg, const char *sock_path);

/**
 * Change filter @p name's mode to @p mode in place: the data file of every
 * live generation and its journal (fchmod), so that clients that have it
 * open keep their mappings, and the next generation (a rotation, a swap),
 * which takes the newest data file's mode, has it too.
 * @return the number of files changed, SHMF_E_NOTFOUND, SHMF_E_INVAL (a
 *         mode with other-write or non-permission bits), or -errno, with
 *         @p err naming the file.
 */
int perms_filter_mode(struct registry *r, const char *name, mode_t mode, char *err, size_t errlen);

#endif
