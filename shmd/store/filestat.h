/*
 * filestat.h - the owner, group and mode of each filter's newest data
 * file, looked up at most once a second per generation, for the checks of
 * a client's file permissions on every add and check over the socket.
 * Single-threaded: the daemon's loop.
 */
#ifndef SHMD_FILESTAT_H
#define SHMD_FILESTAT_H

#include <stdint.h>
#include <sys/stat.h>

struct registry;

/**
 * The stat of data file @p fname (generation @p gen) of filter slot
 * @p slot of @p r, from the cache when it was looked up this second.
 * @return 0, or -1: the file is gone.
 */
int filestat_get(struct registry *r, int slot, uint64_t gen, const char *fname, struct stat *st);

/** Forget every entry: shmd changed files' modes or groups itself. */
void filestat_forget(void);

#endif
