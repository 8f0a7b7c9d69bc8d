/* hugepages.c - tmpfs with huge pages for the runtime root, and reporting. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "hugepages.h"
#include "mkdirs.h"
#include "log.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

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

void hugepages_prepare(const char *root, int want)
{
	(void)mkdirs(root, 0755); /* failures show at the mount or later, named */
	if (is_tmpfs(root))
		return;
	if (geteuid() != 0) {
		log_msg(LOG_WARNING,
			"%s is not a tmpfs and only root may mount one: segments use the file system underneath", root);
		return;
	}
	if (!dir_empty(root)) {
		log_msg(LOG_WARNING, "%s is not a tmpfs and not empty: not mounting over it", root);
		return;
	}
	const char *opts = want ? "mode=0755,huge=within_size" : "mode=0755";
	if (mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) == 0) {
		log_msg(LOG_INFO, "mounted a tmpfs (%s) on %s", opts, root);
		return;
	}
	if (want && mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755") == 0) {
		log_msg(LOG_INFO, "mounted a tmpfs on %s (the kernel refused huge pages for it)", root);
		return;
	}
	log_msg(LOG_WARNING, "cannot mount a tmpfs on %s: %s; segments use the file system underneath", root,
		strerror(errno));
}

/* The "huge=" option of the mount holding the directory, or "" if none. */
static void mount_huge_option(int dirfd, char *out, size_t size)
{
	struct stat st;
	out[0] = '\0';
	if (fstat(dirfd, &st) < 0)
		return;
	FILE *fp = fopen("/proc/self/mountinfo", "re");
	if (fp == NULL)
		return;
	char line[4096];
	char want[32];
	snprintf(want, sizeof(want), "%u:%u", major(st.st_dev), minor(st.st_dev));
	while (fgets(line, sizeof(line), fp)) {
		char id[32];
		if (sscanf(line, "%*s %*s %31s", id) != 1 || strcmp(id, want) != 0)
			continue;
		const char *h = strstr(line, " - ");
		h = h ? strstr(h, "huge=") : NULL;
		if (h != NULL) {
			size_t n = strcspn(h + 5, ", \n");
			snprintf(out, size, "%.*s", (int)n, h + 5);
		}
	}
	fclose(fp);
}

static void shmem_enabled(char *out, size_t size)
{
	out[0] = '\0';
	FILE *fp = fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled", "re");
	if (fp == NULL)
		return;
	char line[256];
	if (fgets(line, sizeof(line), fp)) {
		char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
		if (a && b)
			snprintf(out, size, "%.*s", (int)(b - a - 1), a + 1);
	}
	fclose(fp);
}

int hugepages_dir_is_huge(int dirfd)
{
	struct statfs s;
	char opt[32], global[32];
	if (fstatfs(dirfd, &s) < 0 || (unsigned long)s.f_type != TMPFS_MAGIC)
		return 0;
	shmem_enabled(global, sizeof(global));
	if (!strcmp(global, "deny"))
		return 0;
	if (!strcmp(global, "force"))
		return 1;
	mount_huge_option(dirfd, opt, sizeof(opt));
	/* libshmf madvises every data mapping, so "advise" counts too. */
	return !strcmp(opt, "always") || !strcmp(opt, "within_size") || !strcmp(opt, "advise");
}

void hugepages_report(int dirfd, const char *path)
{
	if (hugepages_dir_is_huge(dirfd))
		log_msg(LOG_INFO, "%s: segments on 2 MiB huge pages (tmpfs huge=)", path);
	else
		log_msg(LOG_INFO, "%s: segments on 4 KiB pages (no huge-page tmpfs here)", path);
}
