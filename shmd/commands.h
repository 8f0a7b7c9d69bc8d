/*
 * commands.h - the verbs of the control protocol (docs/protocol.md):
 * PING, the RedisBloom BF.* subset and shmd's own SHMF.* verbs.
 */
#ifndef SHMD_COMMANDS_H
#define SHMD_COMMANDS_H

#include <stddef.h>

#include "registry.h"
#include "reply.h"
#include "request.h"

/**
 * Execute @p req against @p reg and append exactly one reply to @p out.
 * Every error is a `-ERR ...` reply naming what was wrong; a request that
 * fails changes nothing.
 */
void commands_dispatch(struct registry *reg, const struct request *req, struct reply *out);

/**
 * The verbs commands_dispatch() serves, for COMMAND: entry @p i's name and
 * its argument counts (the verb included; max -1 for no limit), or NULL
 * past the end.
 */
const char *commands_verb(size_t i, int *min_args, int *max_args);

#endif
