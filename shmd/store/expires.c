/*
 * expires.c - the filters' expiries, kept in shmd-expires (expires.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "shmd/store/expires.h"
#include "shmd/base/log.h"
#include "shmd/store/quotas.h"
#include "shmd/store/records.h"
#include "shmd/store/registry.h"
#include "libclient/rundir.h"

struct expiry {
	char name[SHMF_NAME_MAX + 1];
	uint64_t at_ms; /* unix milliseconds */
};

/* The table, for the one registry a daemon has (tests open several in
 * turn: a different registry reloads it). */
static struct {
	const struct registry *reg;
	unsigned n;
	struct expiry e[SHMF_SLOTS];
} tab;

uint64_t expires_now_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

/* A line "<ms> <name>" into the table: 0, or -1 (records.h). */
static int take_line(char *line, void *arg)
{
	(void)arg;
	struct expiry *x = &tab.e[tab.n];
	if (tab.n == SHMF_SLOTS)
		return 1;
	char *sp = strchr(line, ' ');
	char *end;
	errno = 0;
	x->at_ms = strtoull(line, &end, 10);
	if (sp == NULL || end != sp || errno != 0 || shmf_name_check(sp + 1) < 0)
		return -1;
	snprintf(x->name, sizeof(x->name), "%s", sp + 1);
	tab.n++;
	return 0;
}

/* Read the table from the instance directory: a line "<ms> <name>" per
 * expiry; lines that do not parse are skipped, with a warning. */
static void load(struct registry *r)
{
	tab.reg = r;
	tab.n = 0;
	records_load(r, EXPIRES_FILE, "'<ms> <filter>'", take_line, NULL);
}

static void ensure_loaded(struct registry *r)
{
	if (tab.reg != r)
		load(r);
}

static void put_line(FILE *f, unsigned i, void *arg)
{
	(void)arg;
	fprintf(f, "%" PRIu64 " %s\n", tab.e[i].at_ms, tab.e[i].name);
}

/* Replace the file with the table (records.h). A failure is logged: the
 * expiries still hold until shmd restarts. */
static void save(struct registry *r)
{
	records_save(r, EXPIRES_FILE, "the expiries", tab.n, put_line, NULL);
}

static struct expiry *find(const char *name)
{
	for (unsigned i = 0; i < tab.n; i++)
		if (strcmp(tab.e[i].name, name) == 0)
			return &tab.e[i];
	return NULL;
}

/* Remove entry @p x from the table (not saved). */
static void remove_entry(struct expiry *x)
{
	*x = tab.e[--tab.n];
}

void expires_forget(struct registry *r, const char *name)
{
	ensure_loaded(r);
	struct expiry *x = find(name);
	if (x != NULL) {
		remove_entry(x);
		save(r);
	}
}

void expires_set(struct registry *r, const char *name, uint64_t at_ms)
{
	ensure_loaded(r);
	struct expiry *x = find(name);
	if (x == NULL && tab.n < SHMF_SLOTS) {
		x = &tab.e[tab.n++];
		snprintf(x->name, sizeof(x->name), "%s", name);
	}
	if (x != NULL)
		x->at_ms = at_ms;
	save(r);
}

int expires_drop(struct registry *r, const char *name, char *err, size_t errlen)
{
	int rc = registry_drop(r, name, err, errlen);
	/* Gone, now or before: nothing kept of it may outlive it. */
	if (rc == 0 || rc == SHMF_E_NOTFOUND) {
		expires_forget(r, name);
		quotas_forget(r, name);
	}
	return rc;
}

int expires_drop_logged(struct registry *r, const char *name)
{
	char err[REGISTRY_ERR_MAX];
	int rc = expires_drop(r, name, err, sizeof(err));
	if (rc < 0 && rc != SHMF_E_NOTFOUND)
		log_msg(LOG_WARNING, "dropping filter '%s': %s", name, err);
	return rc == 0;
}

void expires_tick(struct registry *r, uint64_t now_ms)
{
	ensure_loaded(r);
	for (unsigned i = 0; i < tab.n;) {
		struct expiry *x = &tab.e[i];
		if (x->at_ms > now_ms) {
			i++;
			continue;
		}
		char name[SHMF_NAME_MAX + 1];
		snprintf(name, sizeof(name), "%s", x->name);
		if (registry_find(r, name) >= 0)
			log_msg(LOG_INFO, "filter '%s' expired: dropping it", name);
		expires_drop_logged(r, name); /* removes the entry: look at slot i again */
	}
}

int expires_get(struct registry *r, const char *name, uint64_t *at_ms)
{
	ensure_loaded(r);
	const struct expiry *x = find(name);
	if (x != NULL && at_ms != NULL)
		*at_ms = x->at_ms;
	return x != NULL;
}
