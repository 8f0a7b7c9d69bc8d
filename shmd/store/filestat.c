/*
 * filestat.c - the owner, group and mode of each filter's newest data
 * file, cached (filestat.h).
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "shmd/store/filestat.h"
#include "shmd/store/registry.h"

/*
 * The owner, group and mode of each filter's newest data file, looked up
 * at most once a second per generation: a writer's adds over the socket
 * paid a path lookup each (a third of the throughput of a pipelined
 * BF.ADD). A new generation is a new entry (generation numbers are never
 * reused in an instance); shmd's own changes (SHMF.CHMOD, perms_apply())
 * forget the lot at once (filestat_forget()), an operator's chmod is
 * seen within a second.
 */
static struct {
	uint64_t gen;
	time_t at;
	struct stat st;
} file_cache[SHMF_SLOTS];

void filestat_forget(void)
{
	memset(file_cache, 0, sizeof(file_cache));
}

int filestat_get(struct registry *r, int slot, uint64_t gen, const char *fname, struct stat *st)
{
	time_t now = time(NULL);
	if (file_cache[slot].gen == gen && file_cache[slot].at == now) {
		*st = file_cache[slot].st;
		return 0;
	}
	if (fstatat(r->dir.fd, fname, st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	file_cache[slot].gen = gen;
	file_cache[slot].at = now;
	file_cache[slot].st = *st;
	return 0;
}
