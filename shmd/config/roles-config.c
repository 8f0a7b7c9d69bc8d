/*
 * roles-config.c - the configuration of roles (roles.h): [roles],
 * [user NAME] and a filter's writers =. config.c hands these keys here.
 *
 *   [roles]
 *   admin_group =              ; group name or gid: its members are admins
 *   writer_create = no         ; writers may create filters (within the quotas)
 *   writer_max_filter_bytes =  ; a writer's filter, for its whole life (growth, resize,
 *                              ; swap: quotas.h): at most this (k, m, g); empty: no limit
 *   writer_max_total_bytes =   ; the instance's filters with it: at most this
 *   writer_max_filters =       ; filters in the instance with it: at most this many
 *
 *   [user NAME]                ; a TCP user: AUTH NAME password
 *   password = ...
 *   role = reader              ; reader | writer | admin
 *   filters = a, b             ; only these filters (empty: every filter)
 *
 *   [filter NAME]
 *   writers = alice, @team     ; who writes this filter instead of the client group
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/errmsg.h"
#include "shmd/config/roles-config.h"
#include "libclient/rundir.h"
#include "common/spec.h"

void roles_config_defaults(struct roles_config *rc)
{
	memset(rc, 0, sizeof(*rc));
	rc->client_gid = (gid_t)-1;
	rc->admin_gid = (gid_t)-1;
}

const char *role_name(int role)
{
	static const char *const names[] = { "none", "reader", "writer", "admin" };
	return role >= ROLE_NONE && role <= ROLE_ADMIN ? names[role] : "none";
}

int role_parse(const char *v)
{
	for (int r = ROLE_READER; r <= ROLE_ADMIN; r++)
		if (!strcmp(v, role_name(r)))
			return r;
	return ROLE_NONE;
}

/* A number of bytes: digits, then nothing, k, m or g (binary). 0 or SHMF_E_INVAL. */
static int parse_bytes(const char *v, uint64_t *out)
{
	char *end;
	errno = 0;
	if (v[0] < '0' || v[0] > '9')
		return SHMF_E_INVAL;
	unsigned long long n = strtoull(v, &end, 10);
	unsigned shift = 0;
	if (!strcasecmp(end, "k") || !strcasecmp(end, "kb"))
		shift = 10;
	else if (!strcasecmp(end, "m") || !strcasecmp(end, "mb"))
		shift = 20;
	else if (!strcasecmp(end, "g") || !strcasecmp(end, "gb"))
		shift = 30;
	else if (*end != '\0')
		return SHMF_E_INVAL;
	if (errno || n == 0 || n > (UINT64_MAX >> shift))
		return SHMF_E_INVAL;
	*out = (uint64_t)n << shift;
	return 0;
}

int roles_parse_gid(const char *v, gid_t *out)
{
	char *end;
	errno = 0;
	unsigned long g = strtoul(v, &end, 10);
	if (!errno && end != v && *end == '\0' && g < (unsigned long)(gid_t)-1) {
		*out = (gid_t)g;
		return 0;
	}
	struct group *gr = getgrnam(v);
	if (gr == NULL)
		return SHMF_E_NOTFOUND;
	*out = gr->gr_gid;
	return 0;
}

/* A user name or uid. 0 or SHMF_E_NOTFOUND. */
static int parse_uid(const char *v, uid_t *out)
{
	char *end;
	errno = 0;
	unsigned long u = strtoul(v, &end, 10);
	if (!errno && end != v && *end == '\0' && u < (unsigned long)(uid_t)-1) {
		*out = (uid_t)u;
		return 0;
	}
	struct passwd *pw = getpwnam(v);
	if (pw == NULL)
		return SHMF_E_NOTFOUND;
	*out = pw->pw_uid;
	return 0;
}

/* The next comma- or space-separated word of *p into @p buf: 1, or 0 at the end. */
static int next_word(const char **p, char *buf, size_t len)
{
	const char *s = *p;
	while (*s == ',' || *s == ' ' || *s == '\t')
		s++;
	if (*s == '\0')
		return 0;
	size_t n = strcspn(s, ", \t");
	snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), s);
	*p = s + n;
	return n < len ? 1 : -1;
}

static struct roles_user *user_named(struct roles_config *rc, const char *name)
{
	for (unsigned i = 0; i < rc->nusers; i++)
		if (!strcmp(rc->users[i].name, name))
			return &rc->users[i];
	return NULL;
}

int roles_config_section(struct roles_config *rc, const char *section, char *msg, size_t msglen)
{
	if (!strcmp(section, "roles"))
		return 1;
	if (strncmp(section, "user ", 5) != 0)
		return 0;
	const char *name = section + 5;
	size_t n = strlen(name);
	if (n == 0 || n > ROLES_USER_NAME_MAX || strpbrk(name, " \t") != NULL)
		return errmsg(msg, msglen, SHMF_E_INVAL, "user name '%s': 1 to %d characters, no spaces", name,
			      ROLES_USER_NAME_MAX);
	if (!strcmp(name, "default"))
		return errmsg(msg, msglen, SHMF_E_INVAL,
			      "user 'default' is the requirepass of [tcp] (an admin); give other users other names");
	if (user_named(rc, name) != NULL)
		return errmsg(msg, msglen, SHMF_E_INVAL, "user '%s' declared twice", name);
	if (rc->nusers >= ROLES_USERS_MAX)
		return errmsg(msg, msglen, SHMF_E_INVAL, "too many users (at most %d)", ROLES_USERS_MAX);
	struct roles_user *u = &rc->users[rc->nusers++];
	memset(u, 0, sizeof(*u));
	snprintf(u->name, sizeof(u->name), "%s", name);
	return 1;
}

static int roles_section_key(struct roles_config *rc, const char *name, const char *value, char *msg, size_t msglen)
{
	if (!strcmp(name, "admin_group")) {
		if (value[0] == '\0')
			rc->admin_gid = (gid_t)-1;
		else if (roles_parse_gid(value, &rc->admin_gid) < 0)
			return errmsg(msg, msglen, SHMF_E_INVAL, "admin_group '%s': no such group", value);
	} else if (!strcmp(name, "writer_create")) {
		if (!strcasecmp(value, "yes") || !strcasecmp(value, "true") || !strcmp(value, "1"))
			rc->writer_create = 1;
		else if (!strcasecmp(value, "no") || !strcasecmp(value, "false") || !strcmp(value, "0"))
			rc->writer_create = 0;
		else
			return errmsg(msg, msglen, SHMF_E_INVAL, "writer_create '%s': expected yes or no", value);
	} else if (!strcmp(name, "writer_max_filter_bytes") || !strcmp(name, "writer_max_total_bytes")) {
		uint64_t *f = name[11] == 'f' ? &rc->writer_max_filter_bytes : &rc->writer_max_total_bytes;
		if (value[0] == '\0')
			*f = 0;
		else if (parse_bytes(value, f) < 0)
			return errmsg(msg, msglen, SHMF_E_INVAL,
				      "%s '%s': bytes, a positive number with an optional k, m or g", name, value);
	} else if (!strcmp(name, "writer_max_filters")) {
		if (value[0] == '\0')
			rc->writer_max_filters = 0;
		else if (spec_parse_capacity(value, &rc->writer_max_filters) < 0)
			return errmsg(msg, msglen, SHMF_E_INVAL, "writer_max_filters '%s': a positive integer", value);
	} else {
		/* config.c refuses the keys its table (config-keys.c) lacks first. */
		return errmsg(msg, msglen, SHMF_E_INVAL,
			      "key '%s' is in the table of keys (config-keys.c) but has no parser", name);
	}
	return 1;
}

static int user_key(struct roles_user *u, const char *name, const char *value, char *msg, size_t msglen)
{
	if (!strcmp(name, "password")) {
		if (value[0] == '\0' || strlen(value) > ROLES_PASSWORD_MAX)
			return errmsg(msg, msglen, SHMF_E_INVAL, "password: 1 to %d bytes", ROLES_PASSWORD_MAX);
		snprintf(u->password, sizeof(u->password), "%s", value);
	} else if (!strcmp(name, "role")) {
		if ((u->role = role_parse(value)) == ROLE_NONE)
			return errmsg(msg, msglen, SHMF_E_INVAL, "role '%s': expected reader, writer or admin", value);
	} else if (!strcmp(name, "filters")) {
		char word[SHMF_NAME_MAX + 1];
		const char *p = value;
		int w;
		u->nfilters = 0;
		while ((w = next_word(&p, word, sizeof(word))) != 0) {
			if (w < 0 || shmf_name_check(word) < 0)
				return errmsg(msg, msglen, SHMF_E_INVAL, "filters: '%s' is not a filter name", word);
			if (u->nfilters >= ROLES_USER_FILTERS_MAX)
				return errmsg(msg, msglen, SHMF_E_INVAL, "filters: at most %d names",
					      ROLES_USER_FILTERS_MAX);
			snprintf(u->filters[u->nfilters++], SHMF_NAME_MAX + 1, "%s", word);
		}
	} else {
		return errmsg(msg, msglen, SHMF_E_INVAL,
			      "key '%s' is in the table of keys (config-keys.c) but has no parser", name);
	}
	return 1;
}

/* writers = alice, @team, 1001, @2000 of filter @p filter. */
static int writers_key(struct roles_config *rc, const char *filter, const char *value, char *msg, size_t msglen)
{
	struct roles_writers *w = NULL;
	for (unsigned i = 0; i < rc->nwriters; i++)
		if (!strcmp(rc->writers[i].filter, filter))
			w = &rc->writers[i];
	if (w == NULL) {
		if (rc->nwriters >= ROLES_FILTERS_MAX)
			return errmsg(msg, msglen, SHMF_E_INVAL, "writers: too many filters name writers");
		w = &rc->writers[rc->nwriters++];
		snprintf(w->filter, sizeof(w->filter), "%s", filter);
	}
	w->n = 0;
	char word[128];
	const char *p = value;
	int got;
	while ((got = next_word(&p, word, sizeof(word))) != 0) {
		struct roles_principal pr = { .is_group = word[0] == '@' };
		const char *id = word + pr.is_group;
		uid_t uid = 0;
		gid_t gid = 0;
		int found = got > 0 && (pr.is_group ? roles_parse_gid(id, &gid) : parse_uid(id, &uid)) == 0;
		if (!found)
			return errmsg(msg, msglen, SHMF_E_INVAL,
				      "writers: no such %s '%s' (users by name or uid, groups as @name or @gid)",
				      pr.is_group ? "group" : "user", id);
		pr.id = pr.is_group ? (uint32_t)gid : (uint32_t)uid;
		if (w->n >= ROLES_WRITERS_MAX)
			return errmsg(msg, msglen, SHMF_E_INVAL, "writers: at most %d users and groups",
				      ROLES_WRITERS_MAX);
		w->who[w->n++] = pr;
	}
	if (w->n == 0)
		return errmsg(msg, msglen, SHMF_E_INVAL,
			      "writers: empty (name users and @groups, or leave the key out for the client group)");
	return 1;
}

int roles_config_key(struct roles_config *rc, const char *section, const char *name, const char *value, char *msg,
		     size_t msglen)
{
	if (!strcmp(section, "roles"))
		return roles_section_key(rc, name, value, msg, msglen);
	if (!strncmp(section, "user ", 5)) {
		struct roles_user *u = user_named(rc, section + 5);
		return u == NULL ? 0 : user_key(u, name, value, msg, msglen);
	}
	if (!strncmp(section, "filter ", 7) && !strcmp(name, "writers"))
		return writers_key(rc, section + 7, value, msg, msglen);
	return 0;
}

int roles_config_complete(struct roles_config *rc, gid_t client_gid, char *msg, size_t msglen)
{
	rc->client_gid = client_gid;
	for (unsigned i = 0; i < rc->nusers; i++) {
		const struct roles_user *u = &rc->users[i];
		if (u->password[0] == '\0')
			return errmsg(msg, msglen, SHMF_E_INVAL, "[user %s] needs a password", u->name);
		if (u->role == ROLE_NONE)
			return errmsg(msg, msglen, SHMF_E_INVAL, "[user %s] needs a role (reader, writer or admin)",
				      u->name);
	}
	return 0;
}
