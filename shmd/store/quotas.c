/*
 * quotas.c - who made each filter, and the writers' quotas that bind the
 * filters writers made for their whole life (see quotas.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "shmd/base/log.h"
#include "shmd/store/quotas.h"
#include "shmd/store/records.h"
#include "shmd/store/registry.h"
#include "libclient/rundir.h"

struct record {
	char name[SHMF_NAME_MAX + 1];
	struct quota_owner o;
};

/* The table, for the one registry a daemon has (tests open several in
 * turn: another registry reads its own). */
static struct {
	const struct registry *reg;
	unsigned n;
	struct record e[SHMF_SLOTS];
} tab;

static struct record *find(const char *name)
{
	for (unsigned i = 0; i < tab.n; i++)
		if (strcmp(tab.e[i].name, name) == 0)
			return &tab.e[i];
	return NULL;
}

static void put_record(FILE *f, unsigned i, void *arg)
{
	(void)arg;
	const struct record *x = &tab.e[i];
	if (x->o.tcp)
		fprintf(f, "%s user %s\n", x->name, x->o.user);
	else
		fprintf(f, "%s uid %" PRIu32 "\n", x->name, x->o.uid);
}

/* Replace the file with the table (records.h). */
static void save(struct registry *r)
{
	records_save(r, QUOTAS_FILE, "who made the writers' filters", tab.n, put_record, NULL);
}

/* One line "<filter> uid <n>" or "<filter> user <name>" into @p x: 0, or -1. */
static int parse_line(char *line, struct record *x)
{
	char *save = NULL, *name = strtok_r(line, " ", &save), *kind = strtok_r(NULL, " ", &save),
	     *who = strtok_r(NULL, " ", &save);
	if (name == NULL || kind == NULL || who == NULL || strtok_r(NULL, " ", &save) != NULL ||
	    shmf_name_check(name) < 0)
		return -1;
	memset(x, 0, sizeof(*x));
	snprintf(x->name, sizeof(x->name), "%s", name);
	if (!strcmp(kind, "user") && strlen(who) <= ROLES_USER_NAME_MAX) {
		x->o.tcp = 1;
		snprintf(x->o.user, sizeof(x->o.user), "%s", who);
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long long u = strtoull(who, &end, 10);
	if (strcmp(kind, "uid") != 0 || errno != 0 || *end != '\0' || end == who || u >= UINT32_MAX)
		return -1;
	x->o.uid = (uint32_t)u;
	return 0;
}

/* A line of the file into the table: 0, 1 (a filter that is gone, or
 * named twice) or -1 (records.h). */
static int take_record(char *line, void *arg)
{
	struct registry *r = arg;
	struct record *x = &tab.e[tab.n];
	if (tab.n == SHMF_SLOTS)
		return 1;
	if (parse_line(line, x) < 0)
		return -1;
	if (registry_find(r, x->name) < 0 || find(x->name) != NULL)
		return 1;
	tab.n++;
	return 0;
}

void quotas_load(struct registry *r)
{
	tab.reg = r;
	tab.n = 0;
	if (records_load(r, QUOTAS_FILE, "'<filter> uid <n>' or '<filter> user <name>'", take_record, r) > 0)
		save(r);
}

static void ensure_loaded(struct registry *r)
{
	if (tab.reg != r)
		quotas_load(r);
}

int quotas_owner(struct registry *r, const char *name, struct quota_owner *o)
{
	ensure_loaded(r);
	const struct record *x = find(name);
	if (x != NULL && o != NULL)
		*o = x->o;
	return x != NULL;
}

void quotas_record(struct registry *r, const char *name, const struct quota_owner *o)
{
	ensure_loaded(r);
	struct record *x = find(name);
	if (x == NULL && tab.n < SHMF_SLOTS) {
		x = &tab.e[tab.n++];
		memset(x, 0, sizeof(*x));
		snprintf(x->name, sizeof(x->name), "%s", name);
	}
	if (x != NULL)
		x->o = *o;
	save(r);
}

void quotas_forget(struct registry *r, const char *name)
{
	ensure_loaded(r);
	struct record *x = find(name);
	if (x == NULL)
		return;
	*x = tab.e[--tab.n];
	save(r);
}

void quotas_owner_text(const struct quota_owner *o, char *buf, size_t len)
{
	if (o->tcp) {
		snprintf(buf, len, "TCP user %s", o->user);
		return;
	}
	/* Only in messages of refusals, which are rare. */
	struct passwd *pw = getpwuid((uid_t)o->uid);
	snprintf(buf, len, "uid %" PRIu32 " (%s)", o->uid, pw != NULL ? pw->pw_name : "?");
}

/* Bytes the live filter @p s holds: its generations, or a growing
 * filter's layers, each of its own size. */
static uint64_t slot_bytes(const struct shmf_slot *s)
{
	struct shmf_slot copy;
	struct shmf_layer l;
	if (shmf_slot_read(s, &copy) < 0 || shmf_slot_check(&copy) < 0)
		return s->data_bytes;
	uint64_t total = 0;
	for (unsigned j = 0; j < copy.nlive; j++)
		total += shmf_slot_layer(&copy, j, &l) == 0 ? l.g.data_bytes : copy.data_bytes;
	return total;
}

uint64_t quotas_instance_bytes(struct registry *r, unsigned *count)
{
	int slots[SHMF_SLOTS];
	int n = registry_list(r, slots);
	uint64_t total = 0;
	for (int i = 0; i < n; i++)
		total += slot_bytes(&r->ctl.slots[slots[i]]);
	*count = (unsigned)n;
	return total;
}

uint64_t quotas_filter_bytes(struct registry *r, int slot)
{
	return slot_bytes(&r->ctl.slots[slot]);
}

int quotas_may_change(struct registry *r, int slot, uint64_t after, const char *what, char *why, size_t len)
{
	const struct roles_config *rc = r->quotas;
	const struct shmf_slot *s = &r->ctl.slots[slot];
	struct quota_owner o;
	if (rc == NULL || !quotas_owner(r, s->name, &o))
		return 0;
	unsigned count;
	uint64_t now = quotas_filter_bytes(r, slot), total = quotas_instance_bytes(r, &count);
	if (after <= now)
		return 0;
	uint64_t total_after = total - (now < total ? now : total) + after;
	const char *quota = NULL;
	uint64_t limit = 0;
	if (rc->writer_max_filter_bytes && after > rc->writer_max_filter_bytes)
		quota = "writer_max_filter_bytes", limit = rc->writer_max_filter_bytes;
	else if (rc->writer_max_total_bytes && total_after > rc->writer_max_total_bytes)
		quota = "writer_max_total_bytes", limit = rc->writer_max_total_bytes;
	if (quota == NULL)
		return 0;
	char who[ROLES_USER_NAME_MAX + 64];
	quotas_owner_text(&o, who, sizeof(who));
	return errmsg(why, len, SHMF_E_FULL,
		      "filter '%s' was made by a writer (%s), and [roles] %s = %" PRIu64
		      " binds it for its whole life: %s would make it %" PRIu64 " bytes (it holds %" PRIu64
		      "; the instance's filters %" PRIu64 " would be %" PRIu64 ")",
		      s->name, who, quota, limit, what, after, now, total, total_after);
}
