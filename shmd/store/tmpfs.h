/*
 * tmpfs.h - the tmpfs under the runtime root: mounted by shmd only where
 * it is its to mount, and unmounted by the shmd that removes the last
 * instance in it.
 *
 * shmd (as root) mounts a tmpfs on the runtime root only
 * - with mount_tmpfs = auto (the default): on /run/shmd when shmd itself
 *   just created that directory;
 * - with mount_tmpfs = yes: on the runtime root, wherever it is, if it is
 *   empty and not a tmpfs already;
 * never with mount_tmpfs = no, and never on an existing directory
 * elsewhere (an empty one under /tmp is someone's). The mount's source is
 * "shmd", which is how a later shmd (after a restart) knows the mount is
 * shmd's to unmount.
 */
#ifndef SHMD_TMPFS_H
#define SHMD_TMPFS_H

/* What tmpfs_prepare() found and did, for tmpfs_release(). */
struct tmpfs_state {
	int created; /* the runtime root did not exist: shmd made it */
	int mounted; /* a tmpfs of shmd's is on the runtime root (this run's or an earlier one's) */
};

/**
 * Create the runtime root @p root (0755) and mount a tmpfs on it as above
 * (@p mount_tmpfs a MOUNT_TMPFS_* of config.h; @p huge: ask for
 * huge=within_size). Logs what it did and why not; never fails hard (the
 * segments then use the file system underneath).
 */
void tmpfs_prepare(const char *root, int mount_tmpfs, int huge, struct tmpfs_state *st);

/**
 * At a stop that removed the instance: unmount shmd's tmpfs from @p root
 * when nothing is left in it (no other instance, nothing mapped), and
 * remove @p root if shmd created it. Logs what it did.
 */
void tmpfs_release(const char *root, const struct tmpfs_state *st);

#endif
