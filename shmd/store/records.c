/*
 * records.c - the record files of the instance directory (records.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "shmd/base/log.h"
#include "shmd/store/records.h"
#include "shmd/store/registry.h"

int records_load(struct registry *r, const char *file, const char *shape, int (*take)(char *line, void *arg), void *arg)
{
	/* O_NONBLOCK: a FIFO planted under the name is not waited on. */
	int fd = openat(r->dir.fd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return 0;
	struct stat st = { 0 };
	FILE *f = NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		log_msg(LOG_WARNING, "%s/%s is %s, not a record file: ignored", r->dir_path, file,
			errmsg_file_kind(st.st_mode));
	else
		f = fdopen(fd, "r");
	if (f == NULL) {
		close(fd);
		return 0;
	}
	char line[RECORDS_LINE_MAX];
	int dropped = 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		int rc = take(line, arg);
		if (rc < 0)
			log_msg(LOG_WARNING, "%s/%s: skipping a line that is not %s", r->dir_path, file, shape);
		else if (rc > 0)
			dropped++;
	}
	fclose(f);
	return dropped;
}

void records_save(struct registry *r, const char *file, const char *what, unsigned n,
		  void (*put)(FILE *f, unsigned i, void *arg), void *arg)
{
	char tmp[128];
	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	if (n == 0) {
		if (unlinkat(r->dir.fd, file, 0) < 0 && errno != ENOENT)
			log_msg(LOG_WARNING, "%s/%s: cannot remove: %s", r->dir_path, file, strerror(errno));
		return;
	}
	int fd = openat(r->dir.fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (f == NULL) {
		log_msg(LOG_WARNING, "%s/%s: cannot write: %s", r->dir_path, tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	for (unsigned i = 0; i < n; i++)
		put(f, i, arg);
	int bad = ferror(f);
	if (fclose(f) != 0 || bad || renameat(r->dir.fd, tmp, r->dir.fd, file) < 0) {
		log_msg(LOG_WARNING, "%s/%s: cannot save %s: %s", r->dir_path, file, what, strerror(errno));
		unlinkat(r->dir.fd, tmp, 0);
	}
}
