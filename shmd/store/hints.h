/*
 * hints.h - what a message about a refused file operation adds: who shmd
 * runs as and what to change. The registry, perms.c and the loop's
 * listener word their permission errors with it; it knows nothing of the
 * configuration or the filters.
 */
#ifndef SHMD_HINTS_H
#define SHMD_HINTS_H

#include <stddef.h>
#include <sys/types.h>

/** The name of group @p g, or its number when it has none. @return @p buf. */
const char *hint_group_name(gid_t g, char *buf, size_t len);

/**
 * Describe the identity of this process for a permission error:
 * "uid 0 (root), gid 0 (root)".
 */
void hint_whoami(char *buf, size_t len);

enum { HINT_DIR, HINT_GROUP };

/**
 * What to add to a message about error @p err (-errno): for EACCES and
 * EPERM, who shmd runs as and what to change (HINT_DIR: where it may
 * create its files; HINT_GROUP: a `group =` it may give its files); ""
 * for any other error. @return @p buf.
 */
const char *hint_perms(int err, int what, char *buf, size_t len);

#endif
