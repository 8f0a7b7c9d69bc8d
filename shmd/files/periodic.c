/* periodic.c - periodic snapshots, as jobs of the file worker (jobs.h),
 * and restore at start (periodic.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "shmd/files/filejobs.h"
#include "shmd/files/jobs.h"
#include "shmd/base/log.h"
#include "shmd/files/periodic.h"
#include "common/snapshot.h"

#define SNAP_SUFFIX ".snap"
#define LIST_MAX    1024

void periodic_init(struct periodic *p, const struct config *cfg, uint64_t now)
{
	p->cfg = cfg;
	for (unsigned i = 0; i < cfg->nfilters; i++)
		p->next_snapshot[i] = cfg->filters[i].snapshot_every ? now + cfg->filters[i].snapshot_every : 0;
}

void periodic_reschedule(struct periodic *p, const struct config *old, uint64_t now)
{
	uint64_t before[CONFIG_FILTERS_MAX];
	memcpy(before, p->next_snapshot, sizeof(before));
	for (unsigned i = 0; i < p->cfg->nfilters; i++) {
		const struct filter_spec *f = &p->cfg->filters[i];
		p->next_snapshot[i] = f->snapshot_every ? now + f->snapshot_every : 0;
		for (unsigned j = 0; j < old->nfilters; j++)
			if (!strcmp(old->filters[j].name, f->name) &&
			    old->filters[j].snapshot_every == f->snapshot_every)
				p->next_snapshot[i] = before[j];
	}
}

static int by_name_desc(const void *a, const void *b)
{
	return strcmp(*(char *const *)b, *(char *const *)a);
}

/* The snapshot files of filter @p name in @p dir, newest first (names
 * FILTER.<20 chars of UTC time>.snap). The caller frees each and the array. */
static int list_snapshots(const char *dir, const char *name, char ***out)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return -errno;
	char **v = calloc(LIST_MAX, sizeof(*v));
	int n = 0;
	size_t nl = strlen(name), sl = strlen(SNAP_SUFFIX);
	struct dirent *e;
	while (v != NULL && n < LIST_MAX && (e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		if (len == nl + 1 + 16 + sl && !strncmp(e->d_name, name, nl) && e->d_name[nl] == '.' &&
		    !strcmp(e->d_name + len - sl, SNAP_SUFFIX) && (v[n] = strdup(e->d_name)) != NULL)
			n++;
	}
	closedir(d);
	if (v == NULL)
		return -ENOMEM;
	qsort(v, (size_t)n, sizeof(*v), by_name_desc);
	*out = v;
	return n;
}

static void free_list(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Keep the newest snapshot_keep files of @p f (files only: the worker's). */
static void prune(const struct filter_spec *f)
{
	char **v;
	int n = list_snapshots(f->snapshot_dir, f->name, &v);
	for (int i = (int)f->snapshot_keep; i < n; i++) {
		char old[512];
		snprintf(old, sizeof(old), "%s/%s", f->snapshot_dir, v[i]);
		if (unlink(old) == 0)
			log_msg(LOG_INFO, "filter '%s': removed old snapshot %s (keeping %u)", f->name, old,
				f->snapshot_keep);
	}
	if (n > 0)
		free_list(v, n);
	else if (n == 0)
		free(v);
}

/* The path of @p f's snapshot taken at @p now. 0 or -ENAMETOOLONG (logged). */
static int snapshot_path(const struct filter_spec *f, uint64_t now, char *path, size_t len)
{
	char stamp[32];
	time_t t = (time_t)now;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	if ((size_t)snprintf(path, len, "%s/%s.%s%s", f->snapshot_dir, f->name, stamp, SNAP_SUFFIX) >= len) {
		log_msg(LOG_ERR, "filter '%s': snapshot path in %s is too long", f->name, f->snapshot_dir);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* A periodic snapshot as a job of the file worker: written and pruned
 * there; a failing one prunes nothing. */
struct periodic_job {
	struct job j;
	struct registry_snap s;
	const struct filter_spec *f;
	int *result; /* the outcome, while periodic_snapshot() waits for it (no worker threads) */
};

static void periodic_work(struct job *j)
{
	struct periodic_job *pj = (struct periodic_job *)j;
	pj->s.src.cancel = &j->cancel;
	j->rc = registry_snapshot_write(&pj->s, j->err, sizeof(j->err));
	if (j->rc == 0)
		prune(pj->f);
}

/* The outcome of filter @p name's periodic snapshot, for the metrics page. */
static void count(struct registry *r, const char *name, int rc)
{
	int slot = registry_find(r, name);
	if (slot >= 0 && rc == 0)
		r->counts[slot].snapshot_last = (uint64_t)time(NULL);
	else if (slot >= 0)
		r->counts[slot].snapshot_failures++;
}

static void periodic_done(struct job *j, struct registry *r)
{
	struct periodic_job *pj = (struct periodic_job *)j;
	registry_snapshot_end(&pj->s, j->rc);
	count(r, pj->f->name, j->rc);
	if (j->rc < 0)
		log_msg(LOG_ERR, "filter '%s': periodic snapshot failed: %s", pj->f->name, j->err);
	if (pj->result != NULL)
		*pj->result = j->rc;
	free(pj);
}

int periodic_snapshot(struct registry *r, const struct filter_spec *f, uint64_t now)
{
	char path[512], err[SNAPSHOT_ERR_MAX];
	int rc = snapshot_path(f, now, path, sizeof(path));
	struct periodic_job *pj = rc == 0 ? calloc(1, sizeof(*pj)) : NULL;
	if (rc == 0 && pj == NULL)
		rc = errmsg(err, sizeof(err), -ENOMEM, "out of memory");
	else if (rc == 0)
		rc = registry_snapshot_begin(r, f->name, path, NULL, &pj->s, err, sizeof(err));
	if (rc < 0) {
		if (rc != -ENAMETOOLONG)
			log_msg(LOG_ERR, "filter '%s': periodic snapshot failed: %s", f->name, err);
		count(r, f->name, rc);
		free(pj);
		return rc;
	}
	/* The daemon's own directory: only never inside the runtime directory. */
	pj->s.src.dir_check = filejobs_dir_check;
	pj->f = f;
	snprintf(pj->j.filter, sizeof(pj->j.filter), "%s", f->name);
	pj->j.work = periodic_work;
	pj->j.done = periodic_done;
	int result = 0;
	pj->result = &result;
	if (jobs_submit(&pj->j, r) == 0)
		return result; /* ran inline, and pj is gone */
	pj->result = NULL;     /* done() runs later, on this thread */
	return 0;
}

void periodic_tick(struct periodic *p, struct registry *r, uint64_t now)
{
	for (unsigned i = 0; i < p->cfg->nfilters; i++) {
		const struct filter_spec *f = &p->cfg->filters[i];
		if (p->next_snapshot[i] == 0 || now < p->next_snapshot[i])
			continue;
		/* A job of the file worker holds the filter (a client's snapshot
		 * or restore): due still, taken on a later tick. */
		if (jobs_busy(f->name))
			continue;
		if (registry_find(r, f->name) >= 0)
			periodic_snapshot(r, f, now);
		/* The next one an interval after this one, not after when it was due. */
		p->next_snapshot[i] = now + f->snapshot_every;
	}
}

void periodic_final(struct periodic *p, struct registry *r)
{
	uint64_t now = (uint64_t)time(NULL);
	for (unsigned i = 0; i < p->cfg->nfilters; i++) {
		const struct filter_spec *f = &p->cfg->filters[i];
		char path[512], err[SNAPSHOT_ERR_MAX];
		if (p->next_snapshot[i] == 0 || registry_find(r, f->name) < 0 ||
		    snapshot_path(f, now, path, sizeof(path)) < 0)
			continue;
		if (registry_snapshot(r, f->name, path, NULL, err, sizeof(err)) < 0)
			log_msg(LOG_ERR, "filter '%s': periodic snapshot failed: %s", f->name, err);
		else
			prune(f);
	}
}

int periodic_restore_newest(struct registry *r, const struct filter_spec *f)
{
	char **v;
	if (f->snapshot_dir[0] == '\0')
		return SHMF_E_NOTFOUND;
	int n = list_snapshots(f->snapshot_dir, f->name, &v);
	if (n < 0) {
		log_msg(LOG_WARNING, "filter '%s': snapshot directory %s: %s", f->name, f->snapshot_dir, strerror(-n));
		return SHMF_E_NOTFOUND;
	}
	int slot = SHMF_E_NOTFOUND;
	for (int i = 0; i < n && slot < 0; i++) {
		char path[512], err[SNAPSHOT_ERR_MAX];
		struct snap_file sf;
		snprintf(path, sizeof(path), "%s/%s", f->snapshot_dir, v[i]);
		int rc = snapshot_open(&sf, path, err, sizeof(err));
		if (rc == 0) {
			rc = registry_replace(r, f->name, &sf, REGISTRY_RESTORE, err, sizeof(err));
			snapshot_close(&sf);
		}
		if (rc < 0) {
			log_msg(LOG_WARNING, "filter '%s': not restoring from %s: %s%s", f->name, path, err,
				i + 1 < n ? "; trying an older snapshot" : "");
			continue;
		}
		slot = rc;
		log_msg(LOG_NOTICE, "filter '%s': missing at start; restored from snapshot %s", f->name, path);
	}
	if (slot < 0)
		log_msg(LOG_WARNING, "filter '%s': missing at start and no usable snapshot in %s", f->name,
			f->snapshot_dir);
	if (n > 0)
		free_list(v, n);
	else
		free(v);
	return slot;
}
