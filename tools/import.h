/*
 * import.h - shmctl import: copy a Bloom or cuckoo filter from a running
 * Redis with RedisBloom into the local shmd, by RedisBloom's own
 * BF.SCANDUMP / CF.SCANDUMP there and BF.LOADCHUNK / CF.LOADCHUNK here
 * (docs/design.md, section 13). pull.h's sibling: the same chunk loop,
 * RedisBloom's chunks instead of shmd's.
 */
#ifndef SHMCTL_IMPORT_H
#define SHMCTL_IMPORT_H

#include <hiredis/hiredis.h>

/**
 * shmctl import [--password P] [--user U] [--db N] REDIS KEY [AS NAME | --as NAME]
 * REDIS is HOST:PORT ([V6ADDR]:PORT), redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]
 * or the path of Redis' unix socket. @p local gives the connection to the
 * local daemon (exiting with a message when there is none). @return
 * shmctl's exit status: 0, or 2.
 */
int shmctl_import(int argc, char **argv, redisContext *(*local)(void));

#endif
