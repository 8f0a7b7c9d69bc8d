/*
 * allow.c - the verb table's role column enforced, a filter's data file
 * judged against the peer, and the quotas of writers that create filters
 * (see allow.h).
 */
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "shmd/verbs/allow.h"
#include "shmd/store/filestat.h"
#include "libclient/geometry.h"
#include "shmd/base/log.h"
#include "shmd/store/quotas.h"
#include "shmd/store/registry.h"
#include "shmd/session/roles.h"
#include "libclient/rundir.h"
#include "shmd/session/session.h"

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
	if ((v->flags & VERB_CREATES) && session_roles(s)->writer_create && need > ROLE_WRITER)
		need = ROLE_WRITER;
	return need;
}

int allow_verb(struct verb_call *c, const struct verb *v)
{
	/* AUTH, HELLO, QUIT and RESET: what a connection does to get a role. */
	if (v->flags & VERB_NOAUTH)
		return 1;
	const char *filter = v->key > 0 && c->key_rc == 0 ? c->req->argv[v->key] : NULL;
	int need = role_needed(c->sess, v);
	int have = filter != NULL ? roles_filter_role(c->sess, filter) : roles_connection(c->sess);
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

int allow_create(struct verb_call *c, const struct filter_spec *spec)
{
	const struct roles_config *rc = session_roles(c->sess);
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
