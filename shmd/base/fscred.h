/*
 * fscred.h - file operations on behalf of a client of the control socket.
 *
 * Snapshot, swap and restore name files by path. shmd (often root) opens
 * them with the file-system identity of the client that asked (its
 * SO_PEERCRED uid and gid, through setfsuid/setfsgid), so the socket grants
 * no file access the client does not have itself.
 */
#ifndef SHMD_FSCRED_H
#define SHMD_FSCRED_H

#include <stddef.h>
#include <sys/types.h>

struct fscred {
	int set; /* 0: act as the daemon itself (configuration, periodic snapshots) */
	uid_t uid;
	gid_t gid;
};

/**
 * Take the file-system identity @p as until fscred_restore(@p saved).
 * A daemon that is not root can act only for clients of its own uid.
 * @return 0, or -EPERM with a sentence in @p err.
 */
int fscred_become(const struct fscred *as, struct fscred *saved, char *err, size_t errlen);

/** Return to the identity fscred_become() saved. */
void fscred_restore(const struct fscred *saved);

#endif
