/*
 * mkdirs.h - mkdir -p for the runtime root. Every directory it creates
 * gets exactly the mode asked for: shmd runs with umask 077, which would
 * otherwise leave /run/shmd 0700 and shut out workers of other users.
 */
#ifndef SHMD_MKDIRS_H
#define SHMD_MKDIRS_H

#include <sys/types.h>

/** Create @p path and its missing parents with @p mode. 0 or -errno. */
int mkdirs(const char *path, mode_t mode);

#endif
