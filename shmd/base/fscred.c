/* fscred.c - file operations with a client's identity (fscred.h). */
#include <errno.h>
#include <sys/fsuid.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "shmd/base/fscred.h"

int fscred_become(const struct fscred *as, struct fscred *saved, char *err, size_t errlen)
{
	saved->set = 0;
	if (as == NULL || !as->set)
		return 0;
	if (geteuid() != 0) {
		if (as->uid == geteuid())
			return 0;
		return errmsg(err, errlen, -EPERM,
			      "uid %u may not name files for this daemon (it runs as uid %u, not root)",
			      (unsigned)as->uid, (unsigned)geteuid());
	}
	saved->set = 1;
	saved->gid = (gid_t)setfsgid(as->gid);
	saved->uid = (uid_t)setfsuid(as->uid);
	/* setfsuid() reports the previous value even when it fails: ask again. */
	if ((uid_t)setfsuid((uid_t)-1) != as->uid || (gid_t)setfsgid((gid_t)-1) != as->gid) {
		fscred_restore(saved);
		saved->set = 0;
		return errmsg(err, errlen, -EPERM, "cannot take the file identity of uid %u", (unsigned)as->uid);
	}
	return 0;
}

void fscred_restore(const struct fscred *saved)
{
	if (!saved->set)
		return;
	setfsuid(saved->uid);
	setfsgid(saved->gid);
}
