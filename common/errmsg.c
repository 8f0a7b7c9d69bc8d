/* errmsg.c - error sentences (errmsg.h). */
#include <stdarg.h>
#include <stdio.h>

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
