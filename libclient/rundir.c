/* rundir.c - runtime directory, instance paths and name rules. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libclient/rundir.h"
#include "libclient/segment-format.h"
#include <shmf.h>

int shmf_name_check(const char *name)
{
	if (name == NULL || name[0] == '\0' || name[0] == '.')
		return SHMF_E_NAME;
	size_t n = 0;
	for (const char *p = name; *p; p++, n++) {
		char c = *p;
		if (n >= SHMF_NAME_MAX)
			return SHMF_E_NAME;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '.' || c == ':' || c == '-'))
			return SHMF_E_NAME;
	}
	return 0;
}

static int copy_path(char *buf, size_t size, const char *a, const char *b, const char *c)
{
	int n = snprintf(buf, size, "%s%s%s", a, b, c);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

int shmf_runtime_dir(char *buf, size_t size)
{
	const char *env = getenv("SHMF_RUNTIME_DIR");
	if (env != NULL && env[0] != '\0') {
		if (env[0] != '/')
			return SHMF_E_RUNDIR;
		return copy_path(buf, size, env, "", "");
	}
	if (geteuid() == 0)
		return copy_path(buf, size, "/run/shmd", "", "");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	if (xdg == NULL || xdg[0] != '/')
		return SHMF_E_RUNDIR;
	return copy_path(buf, size, xdg, "/shmd", "");
}

int shmf_instance_path(const char *instance, const char *suffix, char *buf, size_t size)
{
	char dir[4096];
	int r;

	if (instance == NULL)
		instance = SHMF_DEFAULT_INSTANCE;
	if ((r = shmf_name_check(instance)) < 0)
		return r;
	if ((r = shmf_runtime_dir(dir, sizeof(dir))) < 0)
		return r;
	int n = snprintf(buf, size, "%s/%s%s", dir, instance, suffix);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

int shmf_data_filename(const char *name, uint64_t generation, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s.%" PRIu64 SHMF_DATA_SUFFIX, name, generation);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}
