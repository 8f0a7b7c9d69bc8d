/*
 * verbs-connection.c - the verbs that act on the connection rather than on
 * filters: AUTH, HELLO, CLIENT, SELECT, QUIT, RESET, ECHO and PING, which
 * Redis client libraries send when they connect (session.h holds the
 * connection's state).
 *
 * Replies and error texts follow Redis 7's where the meaning is the same,
 * so that client libraries recognise them: -NOAUTH, -WRONGPASS, -NOPROTO
 * and Redis' sentences for AUTH without a password, SELECT and CLIENT
 * SETNAME.

 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shmd/verbs/handlers.h"
#include "shmd/session/roles.h"
#include "shmd/session/session.h"

static const char WRONGPASS[] = "WRONGPASS invalid username-password pair or user is disabled.";

/* Authenticate as @p user (NULL: the one-argument AUTH form) with @p pass.
 * 0 with the session authenticated, or after replying with the error
 * SHMF_E_INVAL (no password to give) or -EACCES (a wrong user or password). */
static int authenticate(struct session *s, const char *user, const char *pass, size_t passlen, struct reply *out)
{
	if (!session_password_required(s)) {
		/* Redis without requirepass: the default user has no password,
		 * so AUTH default <anything> passes and AUTH <password> is a
		 * configuration mistake worth saying so. */
		if (user == NULL) {
			reply_error(out,
				    "ERR AUTH <password> called without any password configured for the default user. "
				    "Are you sure your configuration is correct?");
			return SHMF_E_INVAL;
		}
		if (strcmp(user, "default") != 0) {
			reply_error(out, "%s", WRONGPASS);
			return -EACCES;
		}
		return 0;
	}
	if (roles_authenticate(s, user, pass, passlen) == ROLE_NONE) {
		reply_error(out, "%s", WRONGPASS);
		return -EACCES;
	}
	if (!s->authed) {
		s->authed = 1;
		s->limits_changed = 1;
	}
	return 0;
}

void cmd_auth(struct verb_call *c)
{
	const struct request *req = c->req;
	if (req->argc > 3) {
		reply_error(c->out, "ERR syntax error");
		return;
	}
	const char *user = req->argc == 3 ? req->argv[1] : NULL;
	int i = req->argc - 1;
	if (authenticate(c->sess, user, req->argv[i], req->lens[i], c->out) == 0)
		reply_status(c->out, "OK");
}

/* CLIENT SETNAME's rule (Redis'): printable ASCII without spaces. */
static int name_ok(const char *name, size_t len)
{
	if (strlen(name) != len)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (name[i] < '!' || name[i] > '~')
			return 0;
	return 1;
}

/* Set the connection's name (empty: none): 0, or after replying with the
 * error SHMF_E_NAME (a character Redis refuses), SHMF_E_INVAL (too long)
 * or -ENOMEM. */
static int set_name(struct session *s, const char *name, size_t len, struct reply *out)
{
	if (!name_ok(name, len)) {
		reply_error(out, "ERR Client names cannot contain spaces, newlines or special characters.");
		return SHMF_E_NAME;
	}
	if (len > CLIENT_NAME_MAX) {
		reply_error(out, "ERR Client names are limited to %d bytes in shmd", CLIENT_NAME_MAX);
		return SHMF_E_INVAL;
	}
	char *copy = NULL;
	if (len > 0 && (copy = strdup(name)) == NULL) {
		reply_error(out, "ERR out of memory for the client name");
		return -ENOMEM;
	}
	free(s->name);
	s->name = copy;
	return 0;
}

/* HELLO's reply: the server's description, a map (a flat array of field,
 * value in RESP2). */
static void hello_reply(const struct session *s, struct reply *out)
{
	reply_map(out, 7);
	reply_bulk_str(out, "server");
	reply_bulk_str(out, "redis");
	reply_bulk_str(out, "version");
	reply_bulk_str(out, COMPAT_REDIS_VERSION);
	reply_bulk_str(out, "proto");
	reply_int(out, s->proto);
	reply_bulk_str(out, "id");
	reply_int(out, (long long)s->id);
	reply_bulk_str(out, "mode");
	reply_bulk_str(out, "standalone");
	reply_bulk_str(out, "role");
	reply_bulk_str(out, "master");
	reply_bulk_str(out, "modules");
	reply_array(out, 0);
}

/*
 * HELLO [protover [AUTH user pass] [SETNAME name]]: protover 2 or 3
 * switches the connection's protocol (its reply already in the new one);
 * another answers -NOPROTO, Redis' error for a version it does not serve.
 * Nothing changes unless the whole request is valid.
 */
void cmd_hello(struct verb_call *c)
{
	const struct request *req = c->req;
	struct session *s = c->sess;
	struct reply *out = c->out;
	const char *user = NULL, *pass = NULL, *name = NULL;
	size_t passlen = 0, namelen = 0;
	long ver = s->proto;
	if (req->argc >= 2) {
		const char *v = req->argv[1];
		char *end;
		ver = strtol(v, &end, 10);
		if (v[0] == '\0' || *end != '\0' || !isdigit((unsigned char)v[0])) {
			reply_error(out, "ERR Protocol version is not an integer or out of range");
			return;
		}
		if (ver != 2 && ver != 3) {
			reply_error(out, "NOPROTO unsupported protocol version");
			return;
		}
	}
	for (int i = 2; i < req->argc; i++) {
		if (!strcasecmp(req->argv[i], "AUTH") && i + 2 < req->argc) {
			user = req->argv[i + 1];
			pass = req->argv[i + 2];
			passlen = req->lens[i + 2];
			i += 2;
		} else if (!strcasecmp(req->argv[i], "SETNAME") && i + 1 < req->argc) {
			name = req->argv[i + 1];
			namelen = req->lens[i + 1];
			i++;
		} else {
			reply_error(out, "ERR Syntax error in HELLO option '%.*s'", 64, req->argv[i]);
			return;
		}
	}
	if (name != NULL && (!name_ok(name, namelen) || namelen > CLIENT_NAME_MAX)) {
		set_name(s, name, namelen, out); /* replies with the error */
		return;
	}
	if (user != NULL) {
		if (authenticate(s, user, pass, passlen, out) < 0)
			return;
	} else if (!s->authed) {
		reply_error(out, "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
				 "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and "
				 "select the RESP protocol version at the same time");
		return;
	}
	if (name != NULL && set_name(s, name, namelen, out) < 0)
		return;
	s->proto = (int)ver;
	out->proto = s->proto;
	hello_reply(s, out);
}

static const char *const client_help[] = {
	"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"GETNAME",
	"    Return the name of the current connection.",
	"ID",
	"    Return the ID of the current connection.",
	"INFO",
	"    Return information about the current client connection.",
	"KILL <ip:port>",
	"    Kill connection made from <ip:port>.",
	"KILL <option> <value> [<option> <value> [...]]",
	"    Kill connections. Options are:",
	"    * ADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made from the specified address",
	"    * LADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made to specified local address",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Kill connections by type.",
	"    * USER <username>",
	"      Kill connections authenticated by <username>.",
	"    * SKIPME (YES|NO)",
	"      Skip killing current connection (default: yes).",
	"    * ID <client-id>",
	"      Kill connections by client id.",
	"    * MAXAGE <maxage>",
	"      Kill connections older than the specified age.",
	"LIST [options ...]",
	"    Return information about client connections. Options:",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Return clients of specified type.",
	"    * ID <client-id> [<client-id> ...]",
	"      Return clients of specified IDs only.",
	"SETNAME <connection-name>",
	"    Assign the name <connection-name> to the current connection.",
	"SETINFO <LIB-NAME|LIB-VER> <value>",
	"    Set client meta attr. Options are:",
	"    * LIB-NAME: the client lib name.",
	"    * LIB-VER: the client lib version.",
	"NO-EVICT (ON|OFF), NO-TOUCH (ON|OFF), REPLY ON",
	"    Accepted and ignored: shmd neither evicts nor tracks access.",
	"HELP",
	"    Print this help.",
};

/* CLIENT with a subcommand that has no row (verbs.c has one per subcommand). */
void cmd_client(struct verb_call *c)
{
	cmd_subcommand_unknown(c);
}

void cmd_client_id(struct verb_call *c)
{
	reply_int(c->out, (long long)c->sess->id);
}

void cmd_client_getname(struct verb_call *c)
{
	if (c->sess->name)
		reply_bulk_str(c->out, c->sess->name);
	else
		reply_nil(c->out);
}

void cmd_client_help(struct verb_call *c)
{
	size_t n = sizeof(client_help) / sizeof(client_help[0]);
	reply_array(c->out, n);
	for (size_t i = 0; i < n; i++)
		reply_status(c->out, client_help[i]);
}

void cmd_client_setname(struct verb_call *c)
{
	if (set_name(c->sess, c->req->argv[2], c->req->lens[2], c->out) == 0)
		reply_status(c->out, "OK");
}

void cmd_client_setinfo(struct verb_call *c)
{
	struct session *s = c->sess;
	const char *attr = c->req->argv[2], *val = c->req->argv[3];
	char *dst;
	size_t cap;
	if (!strcasecmp(attr, "LIB-NAME")) {
		dst = s->lib_name;
		cap = sizeof(s->lib_name);
	} else if (!strcasecmp(attr, "LIB-VER")) {
		dst = s->lib_ver;
		cap = sizeof(s->lib_ver);
	} else {
		reply_error(c->out, "ERR Unrecognized option '%.64s'", attr);
		return;
	}
	if (!name_ok(val, c->req->lens[3])) {
		reply_error(c->out, "ERR %s cannot contain spaces, newlines or special characters.", attr);
		return;
	}
	/* Refused rather than cut: what CLIENT INFO shows is what was set. */
	if (c->req->lens[3] >= cap) {
		reply_error(c->out, "ERR %s is limited to %zu bytes in shmd",
			    dst == s->lib_name ? "lib-name" : "lib-ver", cap - 1);
		return;
	}
	snprintf(dst, cap, "%s", val);
	reply_status(c->out, "OK");
}

/* NO-EVICT and NO-TOUCH: ON or OFF, both meaningless here. */
void cmd_client_onoff(struct verb_call *c)
{
	if (!strcasecmp(c->req->argv[2], "ON") || !strcasecmp(c->req->argv[2], "OFF"))
		reply_status(c->out, "OK");
	else
		reply_error(c->out, "ERR syntax error");
}

void cmd_client_reply(struct verb_call *c)
{
	if (!strcasecmp(c->req->argv[2], "ON"))
		reply_status(c->out, "OK");
	else
		reply_error(c->out, "ERR CLIENT REPLY %.*s is not supported by shmd (every request gets its reply)", 16,
			    c->req->argv[2]);
}

/* SELECT 0: there is one database; its keys are the filters. */
void cmd_select(struct verb_call *c)
{
	const char *v = c->req->argv[1];
	char *end;
	long long db = strtoll(v, &end, 10);
	if (v[0] == '\0' || *end != '\0' || isspace((unsigned char)v[0]))
		reply_error(c->out, "ERR value is not an integer or out of range");
	else if (db != 0)
		reply_error(c->out, "ERR DB index is out of range");
	else
		reply_status(c->out, "OK");
}

void cmd_quit(struct verb_call *c)
{
	c->sess->quit = 1;
	reply_status(c->out, "OK");
}

/* RESET: back to a new connection's state (name, library, and for a TCP
 * client with a password, the need to AUTH again). */
void cmd_reset(struct verb_call *c)
{
	struct session *s = c->sess;
	free(s->name);
	s->name = NULL;
	s->lib_name[0] = s->lib_ver[0] = '\0';
	session_multi_end(s);
	s->proto = 2;
	c->out->proto = 2;
	if (s->kind == SESSION_TCP && session_password_required(s) && s->authed) {
		s->authed = 0;
		s->limits_changed = 1;
		s->user[0] = '\0';
	}
	reply_status(c->out, "RESET");
}

void cmd_echo(struct verb_call *c)
{
	reply_bulk(c->out, c->req->argv[1], c->req->lens[1]);
}

void cmd_ping(struct verb_call *c)
{
	if (c->req->argc == 2)
		reply_bulk(c->out, c->req->argv[1], c->req->lens[1]);
	else
		reply_status(c->out, "PONG");
}
