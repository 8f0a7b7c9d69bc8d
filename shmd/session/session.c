/*
 * session.c - one client connection's state (see session.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shmd/session/queue.h"
#include "shmd/store/scandump.h"
#include "shmd/session/session.h"

void session_init(struct session *s, uint64_t id, int kind, const struct server_view *srv)
{
	memset(s, 0, sizeof(*s));
	s->id = id;
	s->kind = kind;
	s->srv = srv;
	s->proto = 2;
	s->authed = kind != SESSION_TCP || !session_password_required(s);
	snprintf(s->addr, sizeof(s->addr), "%s", kind == SESSION_TCP ? "?" : "unix");
	/* A peer whose identity is unknown names files as nobody; TCP peers
	 * are refused the file verbs before that matters. */
	s->peer = (struct fscred){ .set = 1, .uid = 65534, .gid = 65534 };
}

void session_free(struct session *s)
{
	free(s->name);
	s->name = NULL;
	session_multi_end(s);
	/* A load by chunks dies with the connection that began it. */
	scandump_owner_gone(s->id);
}

static const struct roles_config no_roles = {
	.client_gid = (gid_t)-1,
	.admin_gid = (gid_t)-1,
};

const struct roles_config *session_roles(const struct session *s)
{
	return s->srv != NULL && s->srv->roles != NULL ? s->srv->roles : &no_roles;
}

int session_password_required(const struct session *s)
{
	return (s->srv != NULL && s->srv->requirepass != NULL && s->srv->requirepass[0] != '\0') ||
	       session_roles(s)->nusers > 0;
}

void session_multi_end(struct session *s)
{
	queue_free(s->multi);
	s->multi = NULL;
	s->in_multi = 0;
	s->multi_dirty = 0;
}

const struct filter_defaults *session_defaults(const struct session *s)
{
	const struct server_view *v = s != NULL ? s->srv : NULL;
	return v != NULL && v->defaults != NULL ? v->defaults : &filter_defaults_builtin;
}
