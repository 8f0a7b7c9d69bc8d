/* mkdirs.c - mkdir -p with exact modes (mkdirs.h). */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "shmd/base/mkdirs.h"

/* One directory: created with @p mode (chmod: the umask does not apply). */
static int one(const char *path, mode_t mode)
{
	if (mkdir(path, mode) == 0)
		return chmod(path, mode) < 0 ? -errno : 0;
	return errno == EEXIST ? 0 : -errno;
}

int mkdirs(const char *path, mode_t mode)
{
	char buf[4096];
	size_t n = strlen(path);
	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		int rc = one(buf, mode);
		if (rc < 0)
			return rc;
		*p = '/';
	}
	return one(buf, mode);
}
