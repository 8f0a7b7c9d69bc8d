/*
 * quotas.h - the writers' quotas for a filter's whole life (docs/design.md,
 * "Roles"). With [roles] writer_create = yes a writer may create filters
 * within writer_max_filter_bytes (the filter) and writer_max_total_bytes
 * (the instance's filters with it); those quotas then bind the filter for
 * as long as it lives, whoever acts on it: the layers it grows, a resize
 * and a swap, restore or load that replaces it are refused past them,
 * before anything is allocated.
 *
 * For that the filter remembers who made it. The record is shmd's own
 * state, never anything a client can write (not the control segment's
 * format, which clients read, nor a data file, which writers map, nor a
 * snapshot file, which anyone with the file can edit): a table by filter
 * name in the file shmd-owners of the instance directory (mode 0600,
 * owned by shmd, replaced whole by rename on every change), read back at
 * start, so a record survives a restart as the filter does and vanishes
 * with it when the runtime directory is emptied. A record is made before
 * the filter (a crash between leaves a record for no filter, which the
 * next start drops), and ends with expires_drop(), the one way a filter
 * goes. A snapshot does not carry it: a filter restored under a new name
 * is the admin's who restored it; one restored or swapped over a
 * writer's filter keeps that filter's record.
 *
 * Single-threaded, like the registry: called from the server loop only.
 */
#ifndef SHMD_QUOTAS_H
#define SHMD_QUOTAS_H

#include <stddef.h>
#include <stdint.h>

#include "shmd/config/roles-config.h"

struct registry;

/** The record file's name in the instance directory. */
#define QUOTAS_FILE "shmd-owners"

/** Who made a filter: a unix writer (its uid) or a TCP user (its name). */
struct quota_owner {
	int tcp;                            /* 1: made over TCP by user @p user */
	uint32_t uid;                       /* unix: the writer's uid */
	char user[ROLES_USER_NAME_MAX + 1]; /* tcp: the user's name */
};

/** Read the records of @p r's instance, dropping those of filters that are
 * not there (a crash between a record and its filter). At start, before
 * the configured filters are made; otherwise on first use. */
void quotas_load(struct registry *r);

/** 1 if a writer made filter @p name (its record in @p o, when not NULL), else 0. */
int quotas_owner(struct registry *r, const char *name, struct quota_owner *o);

/** Record that writer @p o makes filter @p name (saved at once). */
void quotas_record(struct registry *r, const char *name, const struct quota_owner *o);

/** Forget filter @p name's record, if it has one (saved at once). */
void quotas_forget(struct registry *r, const char *name);

/** "uid 1001 (alice)" or "TCP user bob", for messages. */
void quotas_owner_text(const struct quota_owner *o, char *buf, size_t len);

/** Bytes the instance's filters hold (every live generation, a growing
 * filter's layers each of its own size), and how many filters, in @p count. */
uint64_t quotas_instance_bytes(struct registry *r, unsigned *count);

/** Bytes the filter in @p slot holds (every live generation or layer). */
uint64_t quotas_filter_bytes(struct registry *r, int slot);

/**
 * May the filter in @p slot go from the bytes it holds now to @p after
 * bytes, by @p what ("growing a layer of 82565312 bytes", "a resize", ...)?
 * Always for a filter no writer made, or without quotas (r->quotas NULL);
 * for a writer's, within writer_max_filter_bytes and with the instance
 * within writer_max_total_bytes (a change that does not make it larger
 * always may). @return 0, or SHMF_E_FULL with @p why naming the quota,
 * its value, the sizes and the writer.
 */
int quotas_may_change(struct registry *r, int slot, uint64_t after, const char *what, char *why, size_t len);

#endif
