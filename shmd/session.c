/*
 * session.c - connection state and the connection verbs (see session.h).
 *
 * Replies and error texts follow Redis 7's where the meaning is the same,
 * so that client libraries recognise them: -NOAUTH, -WRONGPASS, -NOPROTO
 * and Redis' sentences for AUTH without a password, SELECT and CLIENT
 * SETNAME.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "session.h"

static const char NOAUTH[] = "NOAUTH Authentication required.";
static const char WRONGPASS[] = "WRONGPASS invalid username-password pair or user is disabled.";

struct verb {
	const char *name;
	int min_args, max_args; /* the verb included; -1: no limit */
	int noauth;             /* runs before AUTH */
	void (*run)(struct session *s, struct registry *reg, const struct request *req, struct reply *out);
};

void session_init(struct session *s, uint64_t id, int kind, const struct server_view *srv)
{
	memset(s, 0, sizeof(*s));
	s->id = id;
	s->kind = kind;
	s->srv = srv;
	s->authed = kind != SESSION_TCP || srv->requirepass == NULL || srv->requirepass[0] == '\0';
	snprintf(s->addr, sizeof(s->addr), "%s", kind == SESSION_TCP ? "?" : "unix");
	/* A peer whose identity is unknown names files as nobody; TCP peers
	 * are refused the file verbs before that matters. */
	s->peer = (struct fscred){ .set = 1, .uid = 65534, .gid = 65534 };
}

void session_free(struct session *s)
{
	free(s->name);
	s->name = NULL;
}

static int password_required(const struct session *s)
{
	return s->srv->requirepass != NULL && s->srv->requirepass[0] != '\0';
}

/* Compare a password in time that depends only on the configured one's
 * length, so that timing tells a network peer nothing about how much of
 * its guess was right. */
static int password_ok(const struct session *s, const char *given, size_t len)
{
	const char *want = s->srv->requirepass;
	size_t wlen = strlen(want);
	unsigned char diff = len != wlen;
	for (size_t i = 0; i < wlen; i++)
		diff |= (unsigned char)want[i] ^ (unsigned char)(i < len ? given[i] : 0);
	return diff == 0;
}

/* Authenticate as @p user (NULL: the one-argument AUTH form) with @p pass.
 * 0 with the session authenticated, or -1 after replying with the error. */
static int authenticate(struct session *s, const char *user, const char *pass, size_t passlen, struct reply *out)
{
	if (!password_required(s)) {
		/* Redis without requirepass: the default user has no password,
		 * so AUTH default <anything> passes and AUTH <password> is a
		 * configuration mistake worth saying so. */
		if (user == NULL) {
			reply_error(out, "ERR AUTH <password> called without any password configured for the default user. "
					 "Are you sure your configuration is correct?");
			return -1;
		}
		if (strcmp(user, "default") != 0) {
			reply_error(out, "%s", WRONGPASS);
			return -1;
		}
		return 0;
	}
	if ((user != NULL && strcmp(user, "default") != 0) || !password_ok(s, pass, passlen)) {
		reply_error(out, "%s", WRONGPASS);
		return -1;
	}
	if (!s->authed) {
		s->authed = 1;
		s->limits_changed = 1;
	}
	return 0;
}

static void cmd_auth(struct session *s, struct registry *reg, const struct request *req, struct reply *out)
{
	(void)reg;
	if (req->argc > 3) {
		reply_error(out, "ERR syntax error");
		return;
	}
	const char *user = req->argc == 3 ? req->argv[1] : NULL;
	int i = req->argc - 1;
	if (authenticate(s, user, req->argv[i], req->lens[i], out) == 0)
		reply_status(out, "OK");
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

#define CLIENT_NAME_MAX 4096

/* Set the connection's name (empty: none), or reply with the error. 0 or -1. */
static int set_name(struct session *s, const char *name, size_t len, struct reply *out)
{
	if (!name_ok(name, len)) {
		reply_error(out, "ERR Client names cannot contain spaces, newlines or special characters.");
		return -1;
	}
	if (len > CLIENT_NAME_MAX) {
		reply_error(out, "ERR Client names are limited to %d bytes in shmd", CLIENT_NAME_MAX);
		return -1;
	}
	char *copy = NULL;
	if (len > 0 && (copy = strdup(name)) == NULL) {
		reply_error(out, "ERR out of memory for the client name");
		return -1;
	}
	free(s->name);
	s->name = copy;
	return 0;
}

/* HELLO's reply: the server's description, a flat array of field, value. */
static void hello_reply(const struct session *s, struct reply *out)
{
	reply_array(out, 14);
	reply_bulk_str(out, "server");
	reply_bulk_str(out, "redis");
	reply_bulk_str(out, "version");
	reply_bulk_str(out, COMPAT_REDIS_VERSION);
	reply_bulk_str(out, "proto");
	reply_int(out, 2);
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
 * HELLO [protover [AUTH user pass] [SETNAME name]]. shmd speaks RESP2
 * only: HELLO 3 answers -NOPROTO, Redis' error for a version it does not
 * serve, after which clients that can (redis-py, go-redis, Lettuce)
 * continue in RESP2. Nothing changes unless the whole request is valid.
 */
static void cmd_hello(struct session *s, struct registry *reg, const struct request *req, struct reply *out)
{
	(void)reg;
	const char *user = NULL, *pass = NULL, *name = NULL;
	size_t passlen = 0, namelen = 0;
	if (req->argc >= 2) {
		const char *v = req->argv[1];
		char *end;
		long ver = strtol(v, &end, 10);
		if (v[0] == '\0' || *end != '\0' || !isdigit((unsigned char)v[0])) {
			reply_error(out, "ERR Protocol version is not an integer or out of range");
			return;
		}
		if (ver != 2) {
			reply_error(out, "NOPROTO unsupported protocol version (shmd speaks RESP2 only)");
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
	hello_reply(s, out);
}

static void client_info_line(const struct session *s, char *buf, size_t len)
{
	snprintf(buf, len, "id=%llu addr=%s name=%s db=0 resp=2 lib-name=%s lib-ver=%s\n", (unsigned long long)s->id,
		 s->addr, s->name ? s->name : "", s->lib_name, s->lib_ver);
}

static const char *const client_help[] = {
	"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"GETNAME",
	"    Return the name of the current connection.",
	"ID",
	"    Return the ID of the current connection.",
	"INFO",
	"    Return information about the current client connection.",
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

static void reply_lines(struct reply *out, const char *const *lines, size_t n)
{
	reply_array(out, n);
	for (size_t i = 0; i < n; i++)
		reply_status(out, lines[i]);
}

static void client_arity(const char *sub, struct reply *out)
{
	char lower[32];
	size_t n = strlen(sub) < sizeof(lower) - 1 ? strlen(sub) : sizeof(lower) - 1;
	for (size_t i = 0; i < n; i++)
		lower[i] = (char)tolower((unsigned char)sub[i]);
	lower[n] = '\0';
	reply_error(out, "ERR wrong number of arguments for 'client|%s' command", lower);
}

static void cmd_client(struct session *s, struct registry *reg, const struct request *req, struct reply *out)
{
	(void)reg;
	const char *sub = req->argv[1];
	int argc = req->argc;
	char line[512];
	if (!strcasecmp(sub, "ID") || !strcasecmp(sub, "GETNAME") || !strcasecmp(sub, "INFO") ||
	    !strcasecmp(sub, "HELP")) {
		if (argc != 2) {
			client_arity(sub, out);
		} else if (!strcasecmp(sub, "ID")) {
			reply_int(out, (long long)s->id);
		} else if (!strcasecmp(sub, "GETNAME")) {
			if (s->name)
				reply_bulk_str(out, s->name);
			else
				reply_nil(out);
		} else if (!strcasecmp(sub, "INFO")) {
			client_info_line(s, line, sizeof(line));
			reply_bulk_str(out, line);
		} else {
			reply_lines(out, client_help, sizeof(client_help) / sizeof(client_help[0]));
		}
	} else if (!strcasecmp(sub, "SETNAME")) {
		if (argc != 3)
			client_arity(sub, out);
		else if (set_name(s, req->argv[2], req->lens[2], out) == 0)
			reply_status(out, "OK");
	} else if (!strcasecmp(sub, "SETINFO")) {
		if (argc != 4) {
			client_arity(sub, out);
			return;
		}
		const char *attr = req->argv[2], *val = req->argv[3];
		char *dst;
		size_t cap;
		if (!strcasecmp(attr, "LIB-NAME")) {
			dst = s->lib_name;
			cap = sizeof(s->lib_name);
		} else if (!strcasecmp(attr, "LIB-VER")) {
			dst = s->lib_ver;
			cap = sizeof(s->lib_ver);
		} else {
			reply_error(out, "ERR Unrecognized option '%.*s'", 64, attr);
			return;
		}
		if (!name_ok(val, req->lens[3])) {
			reply_error(out, "ERR %s cannot contain spaces, newlines or special characters.", attr);
			return;
		}
		snprintf(dst, cap, "%s", val);
		reply_status(out, "OK");
	} else if (!strcasecmp(sub, "NO-EVICT") || !strcasecmp(sub, "NO-TOUCH") || !strcasecmp(sub, "REPLY")) {
		const int reply_cmd = !strcasecmp(sub, "REPLY");
		if (argc != 3)
			client_arity(sub, out);
		else if (!strcasecmp(req->argv[2], "ON") || (!reply_cmd && !strcasecmp(req->argv[2], "OFF")))
			reply_status(out, "OK");
		else if (reply_cmd)
			reply_error(out, "ERR CLIENT REPLY %.*s is not supported by shmd (every request gets its reply)", 16,
				    req->argv[2]);
		else
			reply_error(out, "ERR syntax error");
	} else {
		reply_error(out, "ERR unknown subcommand '%.*s'. Try CLIENT HELP.", 64, sub);
	}
}

/* SELECT 0: there is one database; its keys are the filters. */
static void cmd_select(struct session *s, struct registry *reg, const struct request *req, struct reply *out)
{
	(void)s;
	(void)reg;
	const char *v = req->argv[1];
	char *end;
	long long db = strtoll(v, &end, 10);
	if (v[0] == '\0' || *end != '\0' || isspace((unsigned char)v[0]))
		reply_error(out, "ERR value is not an integer or out of range");
	else if (db != 0)
		reply_error(out, "ERR DB index is out of range");
	else
		reply_status(out, "OK");
}

static void cmd_quit(struct session *s, struct registry *reg, const struct request *req, struct reply *out)
{
	(void)reg;
	(void)req;
	s->quit = 1;
	reply_status(out, "OK");
}

/* RESET: back to a new connection's state (name, library, and for a TCP
 * client with a password, the need to AUTH again). */
static void cmd_reset(struct session *s, struct registry *reg, const struct request *req, struct reply *out)
{
	(void)reg;
	(void)req;
	free(s->name);
	s->name = NULL;
	s->lib_name[0] = s->lib_ver[0] = '\0';
	if (s->kind == SESSION_TCP && password_required(s) && s->authed) {
		s->authed = 0;
		s->limits_changed = 1;
	}
	reply_status(out, "RESET");
}

static void cmd_echo(struct session *s, struct registry *reg, const struct request *req, struct reply *out)
{
	(void)s;
	(void)reg;
	reply_bulk(out, req->argv[1], req->lens[1]);
}

static void cmd_command(struct session *s, struct registry *reg, const struct request *req, struct reply *out)
{
	(void)reg;
	compat_command(s, req, out);
}

static void cmd_info(struct session *s, struct registry *reg, const struct request *req, struct reply *out)
{
	compat_info(s, reg, req, out);
}

static const struct verb verbs[] = {
	{ "AUTH", 2, -1, 1, cmd_auth },
	{ "HELLO", 1, -1, 1, cmd_hello },
	{ "QUIT", 1, -1, 1, cmd_quit },
	{ "RESET", 1, 1, 1, cmd_reset },
	{ "CLIENT", 2, -1, 0, cmd_client },
	{ "SELECT", 2, 2, 0, cmd_select },
	{ "ECHO", 2, 2, 0, cmd_echo },
	{ "COMMAND", 1, -1, 0, cmd_command },
	{ "INFO", 1, -1, 0, cmd_info },
};

const char *session_verb(size_t i, int *min_args, int *max_args, int *noauth)
{
	if (i >= sizeof(verbs) / sizeof(verbs[0]))
		return NULL;
	*min_args = verbs[i].min_args;
	*max_args = verbs[i].max_args;
	*noauth = verbs[i].noauth;
	return verbs[i].name;
}

/* Verbs that name files on the daemon's host. */
static int file_verb(const char *verb)
{
	return !strcasecmp(verb, "SHMF.SNAPSHOT") || !strcasecmp(verb, "SHMF.SWAP") || !strcasecmp(verb, "SHMF.RESTORE");
}

void session_dispatch(struct session *s, struct registry *reg, const struct request *req, struct reply *out)
{
	const char *name = req->argv[0];
	/* Filter verbs (BF.*, CF.*, SHMF.*) have a dot and connection verbs
	 * none: the hot path skips this table. */
	const int dotted = memchr(name, '.', req->lens[0]) != NULL;
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]) && !dotted; i++) {
		const struct verb *v = &verbs[i];
		if (strcasecmp(name, v->name) != 0 || strlen(name) != req->lens[0])
			continue;
		if (!s->authed && !v->noauth) {
			reply_error(out, "%s", NOAUTH);
			return;
		}
		if (req->argc < v->min_args || (v->max_args >= 0 && req->argc > v->max_args)) {
			char lower[16];
			size_t n = strlen(v->name);
			for (size_t j = 0; j <= n; j++)
				lower[j] = (char)tolower((unsigned char)v->name[j]);
			reply_error(out, "ERR wrong number of arguments for '%s' command", lower);
			return;
		}
		v->run(s, reg, req, out);
		return;
	}
	if (!s->authed) {
		reply_error(out, "%s", NOAUTH);
		return;
	}
	if (s->kind == SESSION_TCP && (name[0] == 'S' || name[0] == 's') && file_verb(name)) {
		reply_error(out, "ERR %.*s is refused over TCP: it names a file on the daemon's host, which a network "
				 "client may not (use the unix socket)", 16, name);
		return;
	}
	struct request r = *req;
	r.peer = s->peer;
	commands_dispatch(reg, &r, out);
}
