/* errmsg.c - error sentences (errmsg.h). */
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>

#include "common/errmsg.h"

int errmsg(char *err, size_t errlen, int code, const char *fmt, ...)
{
	if (err != NULL && errlen > 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

const char *errmsg_file_kind(mode_t m)
{
	static const struct {
		mode_t type;
		const char *name;
	} kinds[] = {
		{ S_IFREG, "a regular file" },     { S_IFDIR, "a directory" },    { S_IFIFO, "a FIFO" },
		{ S_IFCHR, "a character device" }, { S_IFBLK, "a block device" }, { S_IFSOCK, "a socket" },
		{ S_IFLNK, "a symbolic link" },
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if ((m & S_IFMT) == kinds[i].type)
			return kinds[i].name;
	return "not a regular file";
}
