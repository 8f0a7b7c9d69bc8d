/*
 * filejobs.h - the verbs that name files on the daemon's host, run as jobs
 * of the file worker (jobs.h): SHMF.SNAPSHOT, SHMF.SWAP, SHMF.RESTORE and
 * SHMF.MERGE, and where their files may be.
 *
 * Where: a snapshot is never written inside the runtime directory (the
 * control file, data files, sockets and pidfiles of every instance), and
 * when snapshot_paths is configured, client-named files (written or read)
 * must lie in one of its directories, after symbolic links are resolved
 * (the real path of the opened directory or file, so a link swapped in
 * later cannot change the answer). Files are opened with the client's
 * identity (fscred.h) on the worker thread, whose file-system identity is
 * its own.
 *
 * Each call prepares its job on the loop and submits it. @return 1: the
 * reply goes to @p out when the job ends (the caller's connection waits
 * for it); 0: the reply is in @p out already (an error found at once, or
 * no worker threads: the job ran inline).
 */
#ifndef SHMD_FILEJOBS_H
#define SHMD_FILEJOBS_H

#include "shmd/base/fscred.h"
#include "shmd/store/registry.h"
#include "shmd/resp/reply.h"

#define FILEJOBS_PATHS_MAX 8

/**
 * Where files may be: @p runtime_root, the runtime directory (snapshots
 * are never written inside it), and @p paths, @p npaths directories
 * (0: any directory the client may use). Each is resolved to its real
 * path now. @return 0, or -errno with @p err naming the directory.
 */
int filejobs_configure(const char *runtime_root, const char (*paths)[256], unsigned npaths, char *err, size_t errlen);

/** The check a snapshot writer makes of its target's directory (snapshot.h's dir_check); @p arg: 1 a client's
 * path, held to snapshot_paths too, 0 the daemon's own (periodic). */
int filejobs_dir_check(void *arg, int dfd, const char *path, char *err, size_t errlen);

/** SHMF.SNAPSHOT: filter @p name to @p path, as @p as; @p force replaces a file that is not a snapshot. */
int filejob_snapshot(struct registry *r, const char *name, const char *path, const struct fscred *as, int force,
		     struct reply *out, const void *owner);

/** SHMF.SWAP and SHMF.RESTORE (@p how: REGISTRY_SWAP or REGISTRY_RESTORE) from @p path, opened as @p as;
 *  a swap without @p reshape refuses a file of another shape (registry_swap_shape()). */
int filejob_replace(struct registry *r, const char *name, const char *path, const struct fscred *as, int how,
		    int reshape, struct reply *out, const void *owner);

/** SHMF.MERGE: the Bloom snapshot @p path, opened as @p as, ORed into filter @p name (merge.h). */
int filejob_merge(struct registry *r, const char *name, const char *path, const struct fscred *as, struct reply *out,
		  const void *owner);

#endif
