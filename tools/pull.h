/*
 * pull.h - shmctl pull: copy a live filter from a peer shmd over TCP into
 * the local one, chunk by chunk (BF.SCANDUMP there, BF.LOADCHUNK here, or
 * the CF pair), with the peer's stream cursor.
 */
#ifndef SHMCTL_PULL_H
#define SHMCTL_PULL_H

#include <hiredis/hiredis.h>

/**
 * shmctl pull FILTER --from HOST:PORT [--password P] [--user U] [--as NAME]
 * @p local gives the connection to the local daemon (exiting with a
 * message when there is none). @return shmctl's exit status: 0, or 2.
 */
int shmctl_pull(int argc, char **argv, redisContext *(*local)(void));

#endif
