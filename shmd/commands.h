/*
 * commands.h - the verbs of the control protocol (docs/protocol.md):
 * PING, the RedisBloom BF.* subset and shmd's own SHMF.* verbs.
 */
#ifndef SHMD_COMMANDS_H
#define SHMD_COMMANDS_H

#include <stddef.h>

#include "fscred.h"
#include "registry.h"
#include "reply.h"

/* One request: argc arguments, each NUL-terminated with its true length in
 * lens[] (an argument may contain NUL bytes; names that do are refused). */
struct request {
	int argc;
	char **argv;
	size_t *lens;
	struct fscred peer; /* who sent it (SO_PEERCRED); unset: the daemon itself */
};

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
