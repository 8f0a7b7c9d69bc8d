/*
 * roles.c - the role of a connection and its role on a filter (see
 * roles.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "shmd/base/log.h"
#include "shmd/store/quotas.h"
#include "shmd/session/roles.h"
#include "shmd/session/session.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

/* ---- Who is on the other end -------------------------------------------- */

/* The supplementary groups of a uid from its passwd entry: the fallback
 * for kernels without SO_PEERGROUPS (before 4.13). */
static void groups_of_uid(struct session *s)
{
	struct passwd *pw = getpwuid(s->peer.uid);
	int n = ROLES_PEER_GROUPS_MAX;
	if (pw == NULL || getgrouplist(pw->pw_name, s->peer.gid, s->groups, &n) < 0)
		n = 0;
	s->ngroups = n;
}

int roles_peer_read(struct session *s, int fd)
{
	struct ucred uc;
	socklen_t ul = sizeof(uc);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &ul) < 0)
		return -errno;
	s->peer = (struct fscred){ .set = 1, .uid = uc.uid, .gid = uc.gid };
	socklen_t gl = sizeof(s->groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, s->groups, &gl) == 0) {
		s->ngroups = (int)(gl / sizeof(gid_t));
	} else if (errno == ERANGE) {
		/* More groups than we keep: the first ones count, as many as fit
		 * (a peer in over 256 groups loses only membership we do not see). */
		gid_t *all = malloc(gl);
		if (all != NULL && getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, all, &gl) == 0) {
			memcpy(s->groups, all, sizeof(s->groups));
			s->ngroups = ROLES_PEER_GROUPS_MAX;
		}
		free(all);
	} else {
		groups_of_uid(s);
	}
	return 0;
}

static int in_group(const struct session *s, gid_t g)
{
	if (g == (gid_t)-1)
		return 0;
	if (s->peer.gid == g)
		return 1;
	for (int i = 0; i < s->ngroups; i++)
		if (s->groups[i] == g)
			return 1;
	return 0;
}

void roles_describe(const struct session *s, char *buf, size_t len)
{
	if (s->kind == SESSION_TCP) {
		snprintf(buf, len, "user %s from %s", s->user[0] ? s->user : "default", s->addr);
		return;
	}
	/* Only on a refusal: the name lookup may ask NSS, but refusals are rare
	 * and a refused client waits for its answer anyway. */
	struct passwd *pw = getpwuid(s->peer.uid);
	struct group *gr = getgrgid(s->peer.gid);
	char gname[64];
	snprintf(gname, sizeof(gname), "%s", gr ? gr->gr_name : "?");
	snprintf(buf, len, "uid %u %s, gid %u %s", (unsigned)s->peer.uid, pw ? pw->pw_name : "?", (unsigned)s->peer.gid,
		 gname);
}

/* ---- Roles -------------------------------------------------------------- */

/* Equal in time that depends only on the configured password's length, so
 * that timing tells a network peer nothing of how much of a guess was right. */
static int same_secret(const char *want, const char *given, size_t len)
{
	size_t wlen = strlen(want);
	unsigned char diff = len != wlen;
	for (size_t i = 0; i < wlen; i++)
		diff |= (unsigned char)want[i] ^ (unsigned char)(i < len ? given[i] : 0);
	return diff == 0;
}

static const struct roles_user *user_named(const struct roles_config *rc, const char *name)
{
	for (unsigned i = 0; i < rc->nusers; i++)
		if (!strcmp(rc->users[i].name, name))
			return &rc->users[i];
	return NULL;
}

int roles_authenticate(struct session *s, const char *user, const char *pass, size_t passlen)
{
	const char *requirepass = s->srv != NULL && s->srv->requirepass != NULL ? s->srv->requirepass : "";
	if (user == NULL || !strcmp(user, "default")) {
		if (requirepass[0] == '\0' || !same_secret(requirepass, pass, passlen))
			return ROLE_NONE;
		snprintf(s->user, sizeof(s->user), "default");
		return ROLE_ADMIN;
	}
	const struct roles_user *u = user_named(session_roles(s), user);
	if (u == NULL || !same_secret(u->password, pass, passlen))
		return ROLE_NONE;
	snprintf(s->user, sizeof(s->user), "%s", u->name);
	return u->role;
}

int roles_connection(const struct session *s)
{
	const struct roles_config *rc = session_roles(s);
	if (s->kind == SESSION_TCP) {
		/* No password anywhere: whoever reaches the listener gets the
		 * role the configuration names for that, in so many words
		 * ([tcp] unauthenticated_role; a listener without one is refused
		 * at start), and never admin by default as Redis' nopass user:
		 * any local user can reach a loopback port. */
		if (!session_password_required(s))
			return s->authed ? rc->tcp_unauthenticated_role : ROLE_NONE;
		if (!strcmp(s->user, "default"))
			return s->authed ? ROLE_ADMIN : ROLE_NONE;
		const struct roles_user *u = user_named(rc, s->user);
		return s->authed && u != NULL ? u->role : ROLE_NONE;
	}
	if (!s->peer.set)
		return ROLE_NONE;
	if (s->peer.uid == 0 || s->peer.uid == geteuid() || in_group(s, rc->admin_gid))
		return ROLE_ADMIN;
	if (in_group(s, rc->client_gid))
		return ROLE_WRITER;
	return ROLE_READER;
}

static const struct roles_writers *writers_of(const struct roles_config *rc, const char *filter)
{
	for (unsigned i = 0; i < rc->nwriters; i++)
		if (!strcmp(rc->writers[i].filter, filter))
			return &rc->writers[i];
	return NULL;
}

int roles_filter_role(const struct session *s, const char *filter)
{
	const struct roles_config *rc = session_roles(s);
	int role = roles_connection(s);
	if (role == ROLE_ADMIN || role == ROLE_NONE)
		return role;
	if (s->kind == SESSION_TCP) {
		const struct roles_user *u = user_named(rc, s->user);
		if (u == NULL || u->nfilters == 0)
			return role;
		for (unsigned i = 0; i < u->nfilters; i++)
			if (!strcmp(u->filters[i], filter))
				return role;
		return ROLE_NONE;
	}
	const struct roles_writers *w = writers_of(rc, filter);
	if (w == NULL)
		return role;
	for (unsigned i = 0; i < w->n; i++)
		if (w->who[i].is_group ? in_group(s, (gid_t)w->who[i].id) : s->peer.uid == (uid_t)w->who[i].id)
			return ROLE_WRITER;
	return ROLE_READER;
}

int roles_file_allows(const struct session *s, const struct stat *st, int write)
{
	unsigned bits;
	if (s->peer.uid == st->st_uid)
		bits = (st->st_mode >> 6) & 7;
	else if (in_group(s, st->st_gid))
		bits = (st->st_mode >> 3) & 7;
	else
		bits = st->st_mode & 7;
	return (bits & (write ? 2u : 4u)) != 0;
}

/* ---- Writers creating filters ------------------------------------------- */

int roles_role_creates(const struct session *s)
{
	int have = roles_connection(s);
	return have == ROLE_ADMIN || (have == ROLE_WRITER && session_roles(s)->writer_create);
}

int roles_creator(const struct session *s, struct quota_owner *o)
{
	if (roles_connection(s) == ROLE_ADMIN)
		return 0;
	memset(o, 0, sizeof(*o));
	if (s->kind == SESSION_TCP) {
		o->tcp = 1;
		snprintf(o->user, sizeof(o->user), "%s", s->user[0] ? s->user : "default");
	} else {
		o->uid = (uint32_t)s->peer.uid;
	}
	return 1;
}
