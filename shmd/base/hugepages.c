/* hugepages.c - whether the segments get huge pages, for the log and SHMF.INFO. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "shmd/base/hugepages.h"
#include "shmd/base/log.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

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
