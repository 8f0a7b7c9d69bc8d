/*
 * roles.c - the role of a connection, the verb table's role column
 * enforced, a filter's files judged against the peer, and the quotas of
 * writers that create filters (see roles.h).
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

#include "commands.h"
#include "geometry.h"
#include "log.h"
#include "quotas.h"
#include "filestat.h"
#include "roles.h"
#include "rundir.h"
#include "session.h"
#include "verbs.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

static const struct roles_config no_roles = {
	.client_gid = (gid_t)-1,
	.admin_gid = (gid_t)-1,
};

static const struct roles_config *config_of(const struct session *s)
{
	return s->srv != NULL && s->srv->roles != NULL ? s->srv->roles : &no_roles;
}

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

int roles_password_required(const struct session *s)
{
	return (s->srv != NULL && s->srv->requirepass != NULL && s->srv->requirepass[0] != '\0') ||
	       config_of(s)->nusers > 0;
}

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
	const struct roles_user *u = user_named(config_of(s), user);
	if (u == NULL || !same_secret(u->password, pass, passlen))
		return ROLE_NONE;
	snprintf(s->user, sizeof(s->user), "%s", u->name);
	return u->role;
}

int roles_connection(const struct session *s)
{
	const struct roles_config *rc = config_of(s);
	if (s->kind == SESSION_TCP) {
		/* No password anywhere: whoever reaches the listener gets the
		 * role the configuration names for that, in so many words
		 * ([tcp] unauthenticated_role; a listener without one is refused
		 * at start), and never admin by default as Redis' nopass user:
		 * any local user can reach a loopback port. */
		if (!roles_password_required(s))
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

/* The role of session @p s on filter @p filter: the connection's, but for
 * a TCP user limited to other filters (none), and for a filter that names
 * its writers (exactly those write it). */
static int filter_role(const struct session *s, const char *filter)
{
	const struct roles_config *rc = config_of(s);
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

/* ---- Refusals ----------------------------------------------------------- */

/* Refusals are logged, but a client that sends a million of them should
 * not write a million log lines: 20 a second, then one line saying how
 * many were left out. */
static void log_refusal(const char *what)
{
	static time_t second;
	static unsigned in_second, skipped;
	time_t now = time(NULL);
	if (now != second) {
		if (skipped > 0)
			log_msg(LOG_NOTICE, "refused: %u more refusals not logged", skipped);
		second = now;
		in_second = skipped = 0;
	}
	if (++in_second > 20) {
		skipped++;
		return;
	}
	log_msg(LOG_NOTICE, "refused: %s", what);
}

/* Reply -NOPERM @p text (its verb and connection named by the caller) and log it. */
static void refuse(struct verb_call *c, const char *text)
{
	reply_error(c->out, "NOPERM %s", text);
	log_refusal(text);
}

static void refuse_role(struct verb_call *c, const struct verb *v, int need, int have, const char *filter)
{
	char who[192], text[640], role[96];
	roles_describe(c->sess, who, sizeof(who));
	if (have == ROLE_NONE && filter != NULL && c->sess->kind == SESSION_TCP) {
		snprintf(text, sizeof(text),
			 "%s on filter '%s' is not allowed for this connection (%s): the user's filters = does not "
			 "name it",
			 v->name, filter, who);
		refuse(c, text);
		return;
	}
	if (have == ROLE_NONE)
		snprintf(role, sizeof(role), "has no role");
	else if (filter != NULL && have < roles_connection(c->sess))
		snprintf(role, sizeof(role), "is a %s of filter '%s' (its writers = does not name it)", role_name(have),
			 filter);
	else
		snprintf(role, sizeof(role), "is a%s %s", have == ROLE_ADMIN ? "n" : "", role_name(have));
	snprintf(text, sizeof(text), "%s needs the %s role; this connection (%s) %s%s", v->name, role_name(need), who,
		 role,
		 (v->flags & VERB_CREATES) && have == ROLE_WRITER
			 ? " ([roles] writer_create = no: writers may not create filters)"
			 : "");
	refuse(c, text);
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

/* The unix peer against filter @p slot's current data file: 1, or 0 after refusing. */
static int file_ok(struct verb_call *c, const struct verb *v, int slot, int write)
{
	const struct shmf_slot *sl = &c->reg->ctl.slots[slot];
	char fname[SHMF_NAME_MAX + 32], who[192], text[1200];
	struct stat st;
	uint64_t gen = sl->live[0];
	if (shmf_data_filename(sl->name, gen, fname, sizeof(fname)) < 0 ||
	    filestat_get(c->reg, slot, gen, fname, &st) < 0)
		return 1; /* gone meanwhile: the handler says so */
	if (roles_file_allows(c->sess, &st, write))
		return 1;
	struct group *gr = getgrgid(st.st_gid);
	char gname[64];
	snprintf(gname, sizeof(gname), "%s", gr ? gr->gr_name : "?");
	roles_describe(c->sess, who, sizeof(who));
	snprintf(text, sizeof(text),
		 "%s on filter '%s' needs %s permission on its data file %.200s/%s (mode %04o, group %s), which this "
		 "connection (%s) does not have; an admin can change it with `shmctl chmod %s %s` and `mode =` in "
		 "[filter %s]",
		 v->name, sl->name, write ? "write" : "read", c->reg->dir_path, fname, (unsigned)(st.st_mode & 07777),
		 gname, who, sl->name, write ? "0660" : "0640", sl->name);
	refuse(c, text);
	return 0;
}

/* The role verb @p v needs from this connection: its row's, lowered to
 * writer for a verb that creates when writers may create. */
static int role_needed(const struct session *s, const struct verb *v)
{
	int need = verb_role(v);
	if ((v->flags & VERB_CREATES) && config_of(s)->writer_create && need > ROLE_WRITER)
		need = ROLE_WRITER;
	return need;
}

int roles_allow(struct verb_call *c, const struct verb *v)
{
	/* AUTH, HELLO, QUIT and RESET: what a connection does to get a role. */
	if (v->flags & VERB_NOAUTH)
		return 1;
	const char *filter = v->key > 0 && c->key_rc == 0 ? c->req->argv[v->key] : NULL;
	int need = role_needed(c->sess, v);
	int have = filter != NULL ? filter_role(c->sess, filter) : roles_connection(c->sess);
	if (have < need) {
		refuse_role(c, v, need, have, filter);
		return 0;
	}
	/* Never more than the files allow: for a unix peer that is no admin,
	 * the data verbs need write permission on the filter's data file and
	 * the reading verbs read permission. */
	if (have == ROLE_ADMIN || c->sess->kind != SESSION_UNIX || filter == NULL || c->reg == NULL ||
	    (v->flags & VERB_CONN))
		return 1;
	int slot = registry_find(c->reg, filter);
	if (slot < 0)
		return 1;
	return file_ok(c, v, slot, need >= ROLE_WRITER);
}

/* ---- Writers creating filters ------------------------------------------- */

int roles_role_creates(const struct session *s)
{
	int have = roles_connection(s);
	return have == ROLE_ADMIN || (have == ROLE_WRITER && config_of(s)->writer_create);
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

int roles_may_create(struct verb_call *c, const struct filter_spec *spec)
{
	const struct roles_config *rc = config_of(c->sess);
	int have = roles_connection(c->sess);
	char who[192], text[640];
	if (have == ROLE_ADMIN)
		return 1;
	roles_describe(c->sess, who, sizeof(who));
	if (have < ROLE_WRITER || !rc->writer_create) {
		snprintf(text, sizeof(text),
			 "creating filter '%s' needs the admin role; this connection (%s) is a %s%s", spec->name, who,
			 role_name(have),
			 have == ROLE_WRITER ? " ([roles] writer_create = no: writers may not create filters)" : "");
		refuse(c, text);
		return 0;
	}
	/* The shape first, from the parameters alone: nothing is allocated
	 * before every quota has said yes. A growing filter: its first layer
	 * (the layers it grows later are the instance's, counted for the
	 * next filter a writer creates). */
	struct shmf_layer l;
	if (shmf_geometry_layer(spec->type, spec->capacity, spec->fpr, spec->max_kicks, spec->bucket_size,
				spec->expansion, 0, &l) < 0)
		return 1; /* registry_create() says what is wrong with it */
	const struct shmf_geometry g = l.g;
	uint64_t gens = spec->window_gens ? spec->window_gens : 1;
	uint64_t bytes = g.data_bytes * gens;
	unsigned count = 0;
	uint64_t total = c->reg != NULL ? quotas_instance_bytes(c->reg, &count) : 0;
	const char *quota = NULL;
	uint64_t limit = 0;
	if (rc->writer_max_filter_bytes && bytes > rc->writer_max_filter_bytes)
		quota = "writer_max_filter_bytes", limit = rc->writer_max_filter_bytes;
	else if (rc->writer_max_total_bytes && total + bytes > rc->writer_max_total_bytes)
		quota = "writer_max_total_bytes", limit = rc->writer_max_total_bytes;
	else if (rc->writer_max_filters && (uint64_t)count + 1 > rc->writer_max_filters)
		quota = "writer_max_filters", limit = rc->writer_max_filters;
	if (quota == NULL)
		return 1;
	snprintf(text, sizeof(text),
		 "creating filter '%s' (%" PRIu64 " bytes%s) is over the writers' quota %s = %" PRIu64
		 " (the instance holds %u filters, %" PRIu64 " bytes); this connection (%s) is a writer: ask an admin",
		 spec->name, bytes, gens > 1 ? " in all its generations" : "", quota, limit, count, total, who);
	refuse(c, text);
	return 0;
}
