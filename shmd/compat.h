/*
 * compat.h - COMMAND and INFO: what shmd tells Redis client libraries and
 * tools about itself.
 */
#ifndef SHMD_COMPAT_H
#define SHMD_COMPAT_H

#include <stddef.h>

#include "verbs.h"

/** COMMAND [COUNT | LIST | INFO name... | DOCS [name...] | GETKEYS verb arg... | HELP]. */
verb_handler cmd_command;

/** The most COMMAND's reply to @p req can take: every entry, or one per argument, at the largest entry's size. */
size_t command_reply_max(const struct request *req);

/** INFO [section ...]: server, clients, stats, keyspace (default: all of them). */
verb_handler cmd_info;

#endif
