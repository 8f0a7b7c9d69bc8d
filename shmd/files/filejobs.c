/*
 * filejobs.c - the file verbs as jobs of the file worker, and where their
 * files may be (see filejobs.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "shmd/files/filejobs.h"
#include "shmd/files/jobs.h"
#include "shmd/base/log.h"
#include "shmd/files/merge.h"
#include "shmd/store/generations.h"
#include "common/snapshot.h"

/* Set once at start, before the worker threads; read-only afterwards. */
static struct {
	char runtime[PATH_MAX]; /* real path; "" none */
	char paths[FILEJOBS_PATHS_MAX][PATH_MAX];
	unsigned npaths;
} policy;

int filejobs_configure(const char *runtime_root, const char (*paths)[256], unsigned npaths, char *err, size_t errlen)
{
	policy.runtime[0] = '\0';
	policy.npaths = 0;
	if (runtime_root != NULL && realpath(runtime_root, policy.runtime) == NULL)
		return errmsg(err, errlen, -errno, "runtime directory %s: %s", runtime_root, strerror(errno));
	for (unsigned i = 0; i < npaths && i < FILEJOBS_PATHS_MAX; i++) {
		if (realpath(paths[i], policy.paths[i]) == NULL)
			return errmsg(err, errlen, -errno, "snapshot_paths: %s: %s", paths[i], strerror(errno));
		policy.npaths = i + 1;
	}
	return 0;
}

/* 1 if real path @p p is @p dir or inside it. */
static int within(const char *p, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return 1;
	return strncmp(p, dir, n) == 0 && (p[n] == '/' || p[n] == '\0');
}

/* The real path of open descriptor @p fd (what the kernel resolved when
 * it was opened, links and all). 0 or -errno. */
static int real_path_of(int fd, char *buf, size_t len)
{
	char link[64];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/* Within snapshot_paths when it is configured: 0, or an error naming @p what. */
static int allowed_dir(const char *real, const char *what, const char *path, char *err, size_t errlen)
{
	if (policy.npaths == 0)
		return 0;
	for (unsigned i = 0; i < policy.npaths; i++)
		if (within(real, policy.paths[i]))
			return 0;
	char list[512] = "";
	for (unsigned i = 0, at = 0; i < policy.npaths && at < sizeof(list); i++)
		at += (unsigned)snprintf(list + at, sizeof(list) - at, "%s%s", i ? ", " : "", policy.paths[i]);
	return errmsg(err, errlen, -EACCES, "%s %s: %s is outside snapshot_paths (%s)", what, path, real, list);
}

/* Why a snapshot may not go to @p path, whose directory's real path @p dir
 * is the runtime directory or below it, written to @p why (NULL when it may):
 * in the runtime directory itself, an instance's socket or pidfile; below it,
 * an instance directory (one holding a control file) or anything inside one. */
static const char *runtime_refusal(const char *dir, const char *path, char *why, size_t len)
{
	static const char *const owned[][2] = { { ".sock", "socket" }, { ".pid", "pidfile" } };
	size_t rn = strlen(policy.runtime);
	if (dir[rn] == '/') {
		char inst[PATH_MAX];
		const char *end = strchr(dir + rn + 1, '/');
		size_t n = end != NULL ? (size_t)(end - dir) : strlen(dir);
		struct stat st;
		snprintf(inst, sizeof(inst), "%.*s/control", (int)n, dir);
		if (lstat(inst, &st) < 0 && errno == ENOENT)
			return NULL;
		snprintf(why, len,
			 "%.*s is an instance directory in shmd's runtime directory %s (it holds a control file)",
			 (int)n, dir, policy.runtime);
		return why;
	}
	const char *base = strrchr(path, '/');
	base = base != NULL ? base + 1 : path;
	size_t n = strlen(base);
	for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) {
		size_t k = strlen(owned[i][0]);
		if (n >= k && strcmp(base + n - k, owned[i][0]) == 0) {
			snprintf(why, len, "%s in shmd's runtime directory %s is the name of an instance's %s", base,
				 policy.runtime, owned[i][1]);
			return why;
		}
	}
	return NULL;
}

int filejobs_dir_check(void *arg, int dfd, const char *path, char *err, size_t errlen)
{
	char real[PATH_MAX], why[PATH_MAX + 128];
	int rc = real_path_of(dfd, real, sizeof(real));
	if (rc < 0)
		return errmsg(err, errlen, rc, "snapshot %s: cannot resolve its directory: %s", path, strerror(-rc));
	if (policy.runtime[0] != '\0' && within(real, policy.runtime) &&
	    runtime_refusal(real, path, why, sizeof(why)) != NULL)
		return errmsg(err, errlen, -EACCES, "snapshot %s: %s; not writing there", path, why);
	return arg != NULL ? allowed_dir(real, "snapshot", path, err, errlen) : 0;
}

/* A snapshot file a client named for reading, within snapshot_paths. */
static int read_check(const struct snap_file *sf, char *err, size_t errlen)
{
	char real[PATH_MAX];
	if (policy.npaths == 0)
		return 0;
	int rc = real_path_of(sf->fd, real, sizeof(real));
	if (rc < 0)
		return errmsg(err, errlen, rc, "snapshot %s: cannot resolve its path: %s", sf->path, strerror(-rc));
	char *slash = strrchr(real, '/');
	if (slash != NULL && slash != real)
		*slash = '\0';
	return allowed_dir(real, "snapshot", sf->path, err, errlen);
}

/* Open and check snapshot @p path as @p as (on a worker thread). */
static int open_as(struct snap_file *sf, const char *path, const struct fscred *as, char *err, size_t errlen)
{
	struct fscred saved;
	int rc = fscred_become(as, &saved, err, errlen);
	if (rc < 0)
		return rc;
	rc = snapshot_open(sf, path, err, errlen);
	fscred_restore(&saved);
	if (rc == 0 && (rc = read_check(sf, err, errlen)) < 0)
		snapshot_close(sf);
	return rc;
}

static void reply_done(struct job *j, const char *ok)
{
	if (j->out == NULL)
		return;
	if (j->rc < 0)
		reply_error(j->out, "ERR %s", j->err);
	else
		reply_status(j->out, ok);
}

static void job_init(struct job *j, const char *name, struct reply *out, const void *owner)
{
	snprintf(j->filter, sizeof(j->filter), "%s", name);
	j->out = out;
	j->owner = owner;
}

/* ---- SHMF.SNAPSHOT ------------------------------------------------------- */

struct snap_job {
	struct job j;
	struct registry_snap s;
};

static void snap_work(struct job *j)
{
	struct snap_job *sj = (struct snap_job *)j;
	sj->s.src.cancel = &j->cancel;
	j->rc = registry_snapshot_write(&sj->s, j->err, sizeof(j->err));
}

static void snap_done(struct job *j, struct registry *r)
{
	(void)r;
	struct snap_job *sj = (struct snap_job *)j;
	registry_snapshot_end(&sj->s, j->rc);
	reply_done(j, "OK");
	free(sj);
}

int filejob_snapshot(struct registry *r, const char *name, const char *path, const struct fscred *as, int force,
		     struct reply *out, const void *owner)
{
	char err[SNAPSHOT_ERR_MAX];
	struct snap_job *sj = calloc(1, sizeof(*sj));
	int rc = sj != NULL ? registry_snapshot_begin(r, name, path, as, &sj->s, err, sizeof(err))
			    : errmsg(err, sizeof(err), -ENOMEM, "filter '%s': out of memory for a snapshot", name);
	if (rc < 0) {
		free(sj);
		reply_error(out, "ERR %s", err);
		return 0;
	}
	sj->s.src.force = force;
	sj->s.src.dir_check = filejobs_dir_check;
	sj->s.src.dir_arg = sj; /* not NULL: a client's path */
	job_init(&sj->j, name, out, owner);
	sj->j.work = snap_work;
	sj->j.done = snap_done;
	return jobs_submit(&sj->j, r);
}

/* ---- SHMF.SWAP and SHMF.RESTORE ------------------------------------------ */

struct replace_job {
	struct job j;
	int how;
	int reshape; /* SWAP: the file may have another shape */
	char path[4096];
	struct fscred as;
	struct snap_file sf; /* open from the first step's end to the last */
	struct registry_load ld;
};

static void replace_open(struct job *j)
{
	struct replace_job *rj = (struct replace_job *)j;
	j->rc = open_as(&rj->sf, rj->path, &rj->as, j->err, sizeof(j->err));
}

static void replace_fill(struct job *j)
{
	struct replace_job *rj = (struct replace_job *)j;
	j->rc = registry_replace_fill(&rj->sf, &rj->ld, j->err, sizeof(j->err));
}

static void replace_end(struct job *j, struct registry *r)
{
	struct replace_job *rj = (struct replace_job *)j;
	int rc = registry_replace_end(r, &rj->sf, &rj->ld, rj->how, j->rc, j->err, sizeof(j->err));
	j->rc = rc < 0 ? rc : 0;
	snapshot_close(&rj->sf);
	reply_done(j, "OK");
	free(rj);
}

/* The file is open and checked: make the new generations (the registry,
 * on the loop), then fill them on the worker. */
static void replace_opened(struct job *j, struct registry *r)
{
	struct replace_job *rj = (struct replace_job *)j;
	if (j->rc == 0 && rj->how == REGISTRY_SWAP && !rj->reshape)
		j->rc = registry_swap_shape(r, j->filter, &rj->sf.hdr, j->err, sizeof(j->err));
	if (j->rc == 0)
		j->rc = registry_replace_begin(r, j->filter, &rj->sf, rj->how, &rj->ld, j->err, sizeof(j->err));
	if (j->rc == 0) {
		jobs_again(j, replace_fill, replace_end);
		return;
	}
	snapshot_close(&rj->sf);
	reply_done(j, "OK");
	free(rj);
}

int filejob_replace(struct registry *r, const char *name, const char *path, const struct fscred *as, int how,
		    int reshape, struct reply *out, const void *owner)
{
	struct replace_job *rj = calloc(1, sizeof(*rj));
	if (rj == NULL) {
		reply_error(out, "ERR filter '%s': out of memory for a restore", name);
		return 0;
	}
	rj->sf.fd = -1;
	rj->how = how;
	rj->reshape = reshape;
	snprintf(rj->path, sizeof(rj->path), "%s", path);
	if (as != NULL)
		rj->as = *as;
	job_init(&rj->j, name, out, owner);
	rj->j.work = replace_open;
	rj->j.done = replace_opened;
	return jobs_submit(&rj->j, r);
}

/* ---- SHMF.MERGE ------------------------------------------------------------ */

struct merge_job {
	struct job j;
	char path[4096];
	struct fscred as;
	struct snap_file sf;
	struct merge_plan plan;
};

static void merge_open(struct job *j)
{
	struct merge_job *mj = (struct merge_job *)j;
	j->rc = open_as(&mj->sf, mj->path, &mj->as, j->err, sizeof(j->err));
}

static void merge_work(struct job *j)
{
	struct merge_job *mj = (struct merge_job *)j;
	j->rc = merge_apply(&mj->plan, &mj->sf, j->err, sizeof(j->err));
}

static void merge_finish(struct job *j)
{
	struct merge_job *mj = (struct merge_job *)j;
	snapshot_close(&mj->sf);
	if (j->out != NULL && j->rc == 0 && mj->plan.rep.skipped != 0) {
		char msg[160];
		snprintf(msg, sizeof(msg),
			 "OK merged %u of %u generations; %u had no live generation of their window here (retired or not "
			 "begun)",
			 mj->plan.rep.merged, mj->plan.rep.merged + mj->plan.rep.skipped, mj->plan.rep.skipped);
		reply_status(j->out, msg);
	} else {
		reply_done(j, "OK");
	}
	free(mj);
}

static void merge_done(struct job *j, struct registry *r)
{
	struct merge_job *mj = (struct merge_job *)j;
	merge_end(r, &mj->plan, &mj->sf, j->rc);
	merge_finish(j);
}

static void merge_opened(struct job *j, struct registry *r)
{
	struct merge_job *mj = (struct merge_job *)j;
	if (j->rc == 0)
		j->rc = merge_begin(r, j->filter, &mj->sf, &mj->plan, j->err, sizeof(j->err));
	if (j->rc == 0) {
		jobs_again(j, merge_work, merge_done);
		return;
	}
	merge_finish(j);
}

int filejob_merge(struct registry *r, const char *name, const char *path, const struct fscred *as, struct reply *out,
		  const void *owner)
{
	struct merge_job *mj = calloc(1, sizeof(*mj));
	if (mj == NULL) {
		reply_error(out, "ERR filter '%s': out of memory for a merge", name);
		return 0;
	}
	mj->sf.fd = -1;
	snprintf(mj->path, sizeof(mj->path), "%s", path);
	if (as != NULL)
		mj->as = *as;
	job_init(&mj->j, name, out, owner);
	mj->j.work = merge_open;
	mj->j.done = merge_opened;
	return jobs_submit(&mj->j, r);
}
