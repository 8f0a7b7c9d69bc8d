/*
 * perms.c - files brought to the configured owner, group and modes
 * (perms.h). Every change goes through a descriptor opened with
 * O_NOFOLLOW inside the instance directory, and only on files the daemon
 * owns, so a planted symlink or another user's file is never changed.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shmd/config/config.h"
#include "common/errmsg.h"
#include "shmd/store/filestat.h"
#include "shmd/store/hints.h"
#include "libclient/journal.h"
#include "shmd/base/log.h"
#include "shmd/store/perms.h"
#include "shmd/store/generations.h"
#include "libclient/rundir.h"

/* What one file should be. */
struct want {
	gid_t gid;
	mode_t mode;
};

/* Bring open file @p fd (@p what names it in the log) to @p w. The count
 * of changes made, or -errno after logging the failure. */
static int fix_fd(int fd, const char *what, const struct want *w)
{
	struct stat st;
	char from[64], to[64], me[128];
	int changes = 0;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_uid != geteuid()) {
		log_msg(LOG_WARNING, "permissions: %s: owned by uid %u, not by shmd; left as it is", what,
			(unsigned)st.st_uid);
		return 0;
	}
	if (st.st_gid != w->gid) {
		if (fchown(fd, (uid_t)-1, w->gid) < 0) {
			int e = errno;
			hint_whoami(me, sizeof(me));
			log_msg(LOG_ERR,
				"permissions: %s: cannot set group %s: %s (shmd runs as %s; a daemon that is not "
				"root can give its files only a group it is a member of: change `group =`)",
				what, hint_group_name(w->gid, to, sizeof(to)), strerror(e), me);
			return -e;
		}
		log_msg(LOG_INFO, "permissions: %s: group %s -> %s", what,
			hint_group_name(st.st_gid, from, sizeof(from)), hint_group_name(w->gid, to, sizeof(to)));
		changes++;
	}
	if ((st.st_mode & 07777) != w->mode) {
		if (fchmod(fd, w->mode) < 0) {
			int e = errno;
			log_msg(LOG_ERR, "permissions: %s: cannot set mode %04o: %s", what, (unsigned)w->mode,
				strerror(e));
			return -e;
		}
		log_msg(LOG_INFO, "permissions: %s: mode %04o -> %04o", what, (unsigned)(st.st_mode & 07777),
			(unsigned)w->mode);
		changes++;
	}
	return changes;
}

/* File @p fname of the instance directory to @p w (a missing one is not an error). */
static int fix_file(struct registry *r, const char *fname, const struct want *w)
{
	char what[4200];
	snprintf(what, sizeof(what), "%s/%s", r->dir_path, fname);
	int fd = openat(r->dir.fd, fname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	struct stat st;
	int rc = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fix_fd(fd, what, w) : 0;
	close(fd);
	return rc;
}

/* The socket (a path: a socket cannot be opened) to @p w. */
static int fix_socket(const char *path, const struct want *w)
{
	struct stat st;
	char from[64], to[64];
	int changes = 0;
	if (path == NULL || lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid())
		return 0;
	if (st.st_gid != w->gid) {
		if (lchown(path, (uid_t)-1, w->gid) < 0)
			return -errno;
		log_msg(LOG_INFO, "permissions: %s: group %s -> %s", path,
			hint_group_name(st.st_gid, from, sizeof(from)), hint_group_name(w->gid, to, sizeof(to)));
		changes++;
	}
	/* lstat() said it is our socket, in a directory only we write. */
	if ((st.st_mode & 07777) != w->mode) {
		if (chmod(path, w->mode) < 0)
			return -errno;
		log_msg(LOG_INFO, "permissions: %s: mode %04o -> %04o", path, (unsigned)(st.st_mode & 07777),
			(unsigned)w->mode);
		changes++;
	}
	return changes;
}

/* The data file of every live generation of the filter in @p slot, and its journal, to @p w. */
static int fix_filter(struct registry *r, const struct shmf_slot *copy, const struct want *w)
{
	int total = 0, first_err = 0;
	char fname[SHMF_NAME_MAX + 32];
	for (unsigned j = 0; j < copy->nlive && j < SHMF_RING_MAX; j++) {
		uint64_t gen = copy->live[j];
		if (shmf_data_filename(copy->name, gen, fname, sizeof(fname)) < 0)
			continue;
		int rc = fix_file(r, fname, w);
		if (rc < 0 && first_err == 0)
			first_err = rc;
		total += rc > 0 ? rc : 0;
	}
	if ((copy->flags & SHMF_SLOT_REPLICATED) && shmf_journal_filename(copy->name, fname, sizeof(fname)) == 0) {
		int rc = fix_file(r, fname, w);
		if (rc < 0 && first_err == 0)
			first_err = rc;
		total += rc > 0 ? rc : 0;
	}
	return first_err < 0 ? first_err : total;
}

/* The mode the configuration gives filter @p name, or its newest data file's. */
static mode_t filter_mode(struct registry *r, const struct config *cfg, const struct shmf_slot *copy)
{
	for (unsigned i = 0; i < cfg->nfilters; i++)
		if (!strcmp(cfg->filters[i].name, copy->name))
			return cfg->filters[i].mode;
	struct filter_spec spec;
	struct shmf_geometry g;
	registry_spec_of(r, copy, &spec, &g);
	return spec.mode;
}

static void tally(int rc, int *total, int *first_err)
{
	if (rc < 0 && *first_err == 0)
		*first_err = rc;
	*total += rc > 0 ? rc : 0;
}

int perms_apply(struct registry *r, const struct config *cfg, const char *sock_path)
{
	gid_t gid = cfg->gid != (gid_t)-1 ? cfg->gid : getegid();
	int total = 0, first_err = 0;
	r->gid = cfg->gid;
	const struct want dir = { gid, cfg->dir_mode }, ctl = { gid, PERMS_CONTROL_MODE },
			  sock = { gid, cfg->socket_mode };
	tally(fix_fd(r->dir.fd, r->dir_path, &dir), &total, &first_err);
	tally(fix_file(r, SHMF_CTL_FILE, &ctl), &total, &first_err);
	tally(fix_socket(sock_path, &sock), &total, &first_err);
	int slots[SHMF_SLOTS];
	int n = registry_list(r, slots);
	for (int i = 0; i < n; i++) {
		struct shmf_slot copy;
		if (shmf_slot_read(&r->ctl.slots[slots[i]], &copy) < 0 || shmf_slot_check(&copy) < 0)
			continue;
		const struct want w = { gid, filter_mode(r, cfg, &copy) };
		tally(fix_filter(r, &copy, &w), &total, &first_err);
	}
	/* The runtime root must let the group through to the instance. */
	char root[4096];
	struct stat st;
	if (cfg->gid != (gid_t)-1 && shmf_runtime_dir(root, sizeof(root)) == 0 && stat(root, &st) == 0 &&
	    (st.st_mode & 0011) == 0)
		log_msg(LOG_WARNING,
			"permissions: %s is mode %04o: members of group %u cannot reach the instance in it (it needs "
			"at least 0711)",
			root, (unsigned)(st.st_mode & 07777), (unsigned)cfg->gid);
	filestat_forget();
	if (total > 0)
		log_msg(LOG_INFO, "permissions: %d change%s made to follow the configuration", total,
			total == 1 ? "" : "s");
	return first_err < 0 ? first_err : total;
}

int perms_filter_mode(struct registry *r, const char *name, mode_t mode, char *err, size_t errlen)
{
	struct shmf_slot copy;
	if (mode & ~(mode_t)0777 || mode & S_IWOTH)
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "filter '%s': mode %04o is not allowed (permission bits only, no other-write)", name,
			      (unsigned)mode);
	int slot = registry_slot_copy(r, name, &copy, err, errlen);
	if (slot < 0)
		return slot;
	struct stat st;
	if (fstat(r->dir.fd, &st) < 0)
		return errmsg(err, errlen, -errno, "%s: %s", r->dir_path, strerror(errno));
	/* The group stays what it is (perms_apply() and `group =` decide it). */
	char fname[SHMF_NAME_MAX + 32];
	gid_t gid = r->gid != (gid_t)-1 ? r->gid : getegid();
	if (shmf_data_filename(copy.name, copy.live[0], fname, sizeof(fname)) == 0) {
		int fd = openat(r->dir.fd, fname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && fstat(fd, &st) == 0)
			gid = st.st_gid;
		if (fd >= 0)
			close(fd);
	}
	const struct want w = { gid, mode };
	int rc = fix_filter(r, &copy, &w);
	filestat_forget();
	if (rc < 0)
		return errmsg(err, errlen, rc, "filter '%s': cannot change the mode of its files in %s: %s", name,
			      r->dir_path, strerror(-rc));
	return rc;
}
