/*
 * hints.c - who shmd runs as, and what to change, for a message about a
 * refused file operation (hints.h).
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <unistd.h>

#include "shmd/store/hints.h"

const char *hint_group_name(gid_t g, char *buf, size_t len)
{
	struct group *gr = getgrgid(g);
	if (gr != NULL)
		snprintf(buf, len, "%s", gr->gr_name);
	else
		snprintf(buf, len, "%u", (unsigned)g);
	return buf;
}

void hint_whoami(char *buf, size_t len)
{
	struct passwd *pw = getpwuid(geteuid());
	char g[64];
	snprintf(buf, len, "uid %u (%s), gid %u (%s)", (unsigned)geteuid(), pw ? pw->pw_name : "?", (unsigned)getegid(),
		 hint_group_name(getegid(), g, sizeof(g)));
}

const char *hint_perms(int err, int what, char *buf, size_t len)
{
	char me[160];
	buf[0] = '\0';
	if (err != -EACCES && err != -EPERM)
		return buf;
	hint_whoami(me, len < sizeof(me) ? len : sizeof(me));
	if (what == HINT_GROUP)
		snprintf(buf, len,
			 " (shmd runs as %s: a daemon that is not root can give its files only a group it is a "
			 "member of: change `group =` in [instance], or run shmd as root)",
			 me);
	else
		snprintf(buf, len,
			 " (shmd runs as %s: run it as root, or point SHMF_RUNTIME_DIR at a directory this user may "
			 "write)",
			 me);
	return buf;
}
