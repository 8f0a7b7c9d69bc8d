/*
 * errors.c - shmf_strerror: one sentence for every error code; and
 * shmf_error_detail: the thread's sentence about its last failure that
 * had more to say (a permission: which file, its owner, group and mode,
 * who asked, and what to change).
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <shmf.h>

#include "libclient/segment.h"

const char *shmf_strerror(int err)
{
	switch (err) {
	case 0: return "success";
	case SHMF_E_NOTFOUND: return "no such filter or instance";
	case SHMF_E_FORMAT: return "segment or file is malformed (bad magic, size or field)";
	case SHMF_E_VERSION: return "segment has another format version";
	case SHMF_E_LAYOUT: return "segment was built with another struct layout (layout fingerprint mismatch)";
	case SHMF_E_OWNER: return "file or directory has an untrusted owner or mode";
	case SHMF_E_READONLY: return "write through a read-only handle (opened with SHMF_RDONLY)";
	case SHMF_E_TYPE: return "the filter type does not support this operation";
	case SHMF_E_FULL: return "filter is full";
	case SHMF_E_INVAL: return "invalid argument";
	case SHMF_E_NAME: return "invalid name (1-63 characters of A-Z a-z 0-9 _ . : -, not starting with '.')";
	case SHMF_E_EXISTS: return "a filter of that name already exists";
	case SHMF_E_RUNDIR:
		return "runtime directory unknown (set SHMF_RUNTIME_DIR to an absolute path, or XDG_RUNTIME_DIR)";
	case SHMF_E_DROPPED: return "filter was dropped while the handle was open";
	case SHMF_E_TOOBIG: return "filter would be too large";
	case SHMF_E_PROTO: return "unexpected reply on the control socket";
	case SHMF_E_BUSY:
		return "the cuckoo filter's relocation lock stayed held past the filter's lock timeout (a writer "
		       "stopped or stuck holding it, or its bytes overwritten)";
	case SHMF_E_NONSCALING:
		return "non scaling filter is full (a NONSCALING Bloom filter holds its capacity and refuses new keys)";
	case SHMF_E_IMPORTED:
		return "the filter was imported from RedisBloom and is read-only: it answers checks (and cuckoo "
		       "counts) as RedisBloom did, and takes no add or delete";
	case SHMF_E_STATIC:
		return "the filter is static (a binary fuse filter built offline by shmctl build --type static): it "
		       "answers checks only; to change its keys, build it again and swap it in";
	default: break;
	}
	if (err < 0 && err > -4096)
		return strerror(-err);
	return "unknown error";
}

/* Per thread: a worker's threads each read their own (no lock, and the
 * hot path never touches it: only failures write it). */
static _Thread_local char detail[1024];

const char *shmf_error_detail(void)
{
	return detail;
}

void shmf_detail_clear(void)
{
	detail[0] = '\0';
}

/* The name of user @p uid, or its number; the reentrant call, since a
 * worker's threads may fail at once. */
static const char *user_name(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *res = NULL;
	char tmp[1024];
	if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) == 0 && res != NULL)
		snprintf(buf, len, "%s", pw.pw_name);
	else
		snprintf(buf, len, "%u", (unsigned)uid);
	return buf;
}

static const char *group_name(gid_t gid, char *buf, size_t len)
{
	struct group gr, *res = NULL;
	char tmp[4096];
	if (getgrgid_r(gid, &gr, tmp, sizeof(tmp), &res) == 0 && res != NULL)
		snprintf(buf, len, "%s", gr.gr_name);
	else
		snprintf(buf, len, "%u", (unsigned)gid);
	return buf;
}

/* Whether this process counts as a member of @p gid for file access. */
static int in_group(gid_t gid)
{
	gid_t groups[256];
	if (getegid() == gid)
		return 1;
	int n = getgroups(256, groups);
	for (int i = 0; i < n; i++)
		if (groups[i] == gid)
			return 1;
	return 0;
}

/* What to change, from the caller's place against the file's. */
static const char *access_advice(const struct stat *st, int writable, int is_dir, const char *group, const char *filter)
{
	static _Thread_local char advice[256];
	unsigned want = is_dir ? 050 : writable ? 060 : 040;
	if (geteuid() != st->st_uid && !in_group(st->st_gid))
		snprintf(advice, sizeof(advice), "run the worker as a member of group %s (shmd's [instance] group)",
			 group);
	else if (is_dir)
		snprintf(advice, sizeof(advice), "the directory needs mode 0750 for its group ([instance] dir_mode)");
	else if ((st->st_mode & want) != want && writable && (st->st_mode & 040))
		snprintf(advice, sizeof(advice),
			 "its group may only check: open it with SHMF_RDONLY, or give the filter mode 0660 "
			 "('shmctl chmod %s 0660', or mode = 0660 in its [filter] section)",
			 filter);
	else
		snprintf(advice, sizeof(advice),
			 "give the filter mode 0640 (its group may check) or 0660 (may add too): 'shmctl chmod %s "
			 "MODE', or mode = in its [filter] section",
			 filter);
	return advice;
}

void shmf_detail_access(const char *path, const char *filter, int writable, int is_dir, int err)
{
	struct stat st;
	char me[64], grp[64], owner[64], fgroup[64];
	if (err != -EACCES && err != -EPERM)
		return;
	user_name(geteuid(), me, sizeof(me));
	group_name(getegid(), grp, sizeof(grp));
	if (stat(path, &st) < 0) {
		snprintf(detail, sizeof(detail), "%s: %s for user %s (uid %u, gid %u %s); it cannot be seen: %s", path,
			 strerror(-err), me, (unsigned)geteuid(), (unsigned)getegid(), grp, strerror(errno));
		return;
	}
	user_name(st.st_uid, owner, sizeof(owner));
	group_name(st.st_gid, fgroup, sizeof(fgroup));
	snprintf(detail, sizeof(detail),
		 "%s: %s opening it %s for user %s (uid %u, gid %u %s%s%s): it is %s:%s, mode %04o; %s", path,
		 strerror(-err),
		 is_dir     ? "(the instance directory)"
		 : writable ? "to add (SHMF_RDWR)"
			    : "to check (SHMF_RDONLY)",
		 me, (unsigned)geteuid(), (unsigned)getegid(), grp,
		 in_group(st.st_gid) ? ", in group " : ", not in group ", fgroup, owner, fgroup,
		 (unsigned)(st.st_mode & 07777),
		 access_advice(&st, writable, is_dir, fgroup, filter ? filter : "FILTER"));
}

void shmf_detail_member(int dirfd, const char *name, int writable, int err)
{
	char link[64], dir[4096], path[4200];
	if (err != -EACCES && err != -EPERM)
		return;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
	ssize_t n = readlink(link, dir, sizeof(dir) - 1);
	if (n <= 0)
		snprintf(dir, sizeof(dir), "(the instance directory)");
	else
		dir[n] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	/* A data file is FILTER.GENERATION.data: the filter, for the advice. */
	char filter[128] = "FILTER";
	size_t len = strlen(name);
	if (len > 5 && len < sizeof(filter) && !strcmp(name + len - 5, ".data")) {
		char *dot;
		memcpy(filter, name, len - 5);
		filter[len - 5] = '\0';
		if ((dot = strrchr(filter, '.')) != NULL && dot != filter)
			*dot = '\0';
		else
			snprintf(filter, sizeof(filter), "FILTER");
	}
	shmf_detail_access(path, filter, writable, 0, err);
}
