/* tmpfs.c - the runtime root's tmpfs: mounted only where it is shmd's (tmpfs.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "shmd/config/config.h"
#include "shmd/base/log.h"
#include "shmd/base/mkdirs.h"
#include "shmd/store/tmpfs.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

/* The source every tmpfs shmd mounts carries (mount(8), df and
 * /proc/self/mountinfo show it). */
#define MOUNT_SOURCE "shmd"
/* Where mount_tmpfs = auto may mount: root's default runtime root. */
#define DEFAULT_ROOT "/run/shmd"

static int is_tmpfs(const char *path)
{
	struct statfs s;
	return statfs(path, &s) == 0 && (unsigned long)s.f_type == TMPFS_MAGIC;
}

static int dir_empty(const char *path)
{
	DIR *d = opendir(path);
	if (d == NULL)
		return 0;
	struct dirent *e;
	int empty = 1;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = 0;
	closedir(d);
	return empty;
}

/* mountinfo's octal escapes (\040 for a space) undone in place. */
static void unescape(char *s)
{
	char *o = s;
	for (; *s; s++, o++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
		    s[3] <= '7') {
			*o = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o = *s;
		}
	}
	*o = '\0';
}

/* 1 if the topmost mount on @p path is a tmpfs whose source is shmd's. */
static int shmd_mount_on(const char *path)
{
	FILE *fp = fopen("/proc/self/mountinfo", "re");
	if (fp == NULL)
		return 0;
	char line[4096];
	int ours = 0;
	while (fgets(line, sizeof(line), fp)) {
		char point[4096], fstype[64], source[256];
		const char *sep = strstr(line, " - ");
		if (sep == NULL || sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1 ||
		    sscanf(sep + 3, "%63s %255s", fstype, source) != 2)
			continue;
		unescape(point);
		if (!strcmp(point, path)) /* later lines are mounted over earlier ones */
			ours = !strcmp(fstype, "tmpfs") && !strcmp(source, MOUNT_SOURCE);
	}
	fclose(fp);
	return ours;
}

/* Why shmd may not mount on @p root, or NULL if it may. */
static const char *refusal(const char *root, int mount_tmpfs, int created)
{
	if (mount_tmpfs == MOUNT_TMPFS_NO)
		return "mount_tmpfs = no";
	if (mount_tmpfs == MOUNT_TMPFS_AUTO && strcmp(root, DEFAULT_ROOT) != 0)
		return "mount_tmpfs = auto mounts only on " DEFAULT_ROOT "; set mount_tmpfs = yes to mount here";
	if (mount_tmpfs == MOUNT_TMPFS_AUTO && !created)
		return "it existed before shmd started (mount_tmpfs = auto mounts only on a " DEFAULT_ROOT
		       " shmd creates; set mount_tmpfs = yes to mount on it)";
	if (geteuid() != 0)
		return "only root may mount one";
	if (!dir_empty(root))
		return "it is not empty (shmd never mounts over files)";
	return NULL;
}

void tmpfs_prepare(const char *root, int mount_tmpfs, int huge, struct tmpfs_state *st)
{
	struct stat sb;
	*st = (struct tmpfs_state){ .created = stat(root, &sb) < 0 && errno == ENOENT };
	(void)mkdirs(root, 0755); /* failures show at the mount or later, named */
	if (is_tmpfs(root)) {
		st->mounted = shmd_mount_on(root);
		return;
	}
	const char *why = refusal(root, mount_tmpfs, st->created);
	if (why != NULL) {
		log_msg(LOG_WARNING,
			"%s is not a tmpfs and shmd does not mount one on it: %s; segments use the file system underneath",
			root, why);
		return;
	}
	const char *opts = huge ? "mode=0755,huge=within_size" : "mode=0755";
	if (mount(MOUNT_SOURCE, root, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) == 0) {
		log_msg(LOG_INFO, "mounted a tmpfs (%s) on %s", opts, root);
		st->mounted = 1;
		return;
	}
	if (huge && mount(MOUNT_SOURCE, root, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755") == 0) {
		log_msg(LOG_INFO, "mounted a tmpfs on %s (the kernel refused huge pages for it)", root);
		st->mounted = 1;
		return;
	}
	log_msg(LOG_WARNING, "cannot mount a tmpfs on %s: %s; segments use the file system underneath", root,
		strerror(errno));
}

void tmpfs_release(const char *root, const struct tmpfs_state *st)
{
	if (!st->mounted || !shmd_mount_on(root))
		return;
	if (!dir_empty(root)) {
		log_msg(LOG_INFO, "%s: other instances' files are in it; leaving its tmpfs mounted", root);
		return;
	}
	if (umount2(root, UMOUNT_NOFOLLOW) < 0) {
		log_msg(LOG_WARNING, "%s: cannot unmount shmd's tmpfs: %s (a process may still have a filter mapped)",
			root, strerror(errno));
		return;
	}
	log_msg(LOG_INFO, "unmounted shmd's tmpfs from %s", root);
	if (st->created && rmdir(root) == 0)
		log_msg(LOG_INFO, "removed %s, which shmd had created", root);
}
