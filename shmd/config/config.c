/* config.c - the daemon's INI configuration (inih), and its embedded default. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "shmd/config/config.h"
#include "shmd/config/config-keys.h"
#include "common/errmsg.h"
#include "libclient/cuckoo.h"
#include "libclient/geometry.h"
#include "shmd/base/log.h"
#include "shmd/resp/request.h"
#include "libclient/rundir.h"
#include "common/spec.h"

const char config_default_text[] = "[instance]\n"
				   "name = default\n"
				   "dir_mode = 0750\n"
				   "socket_mode = 0660\n"
				   "remove_on_exit = false\n"
				   "huge_pages = auto\n"
				   "\n"
				   "[filter default]\n"
				   "type = bloom\n"
				   "capacity = 1000000\n"
				   "fpr = 0.01\n"
				   "mode = 0640\n";

struct parse_state {
	struct config *c;
	struct filter_spec *cur; /* filter of the current section, or NULL */
	char section[128];
	char *err;
	size_t errlen;
	int failed;
	const char *origin;
	char msg[384]; /* what bad() was told, before its place is added */
	int line;      /* the section walk's line when it failed (inih gives its own) */
};

/* The first error of the text, "ORIGIN: [section] what was wrong" in
 * ps->err. Returns 0, which stops inih. */
static int bad_at(struct parse_state *ps)
{
	if (!ps->failed)
		errmsg(ps->err, ps->errlen, SHMF_E_INVAL, "%s: [%s] %s", ps->origin, ps->section, ps->msg);
	ps->failed = 1;
	return 0;
}

/* bad(ps, fmt, ...): say what was wrong, printf-style; bad_at() adds where. */
#define bad(ps, ...) (errmsg((ps)->msg, sizeof((ps)->msg), 0, __VA_ARGS__), bad_at(ps))

/* A key the table (config-keys.c) gives but this section's code does not
 * parse: a bug, which test-config's every-row test finds. 0. */
static int no_parser(struct parse_state *ps, const char *name)
{
	return bad(ps, "key '%s' is in the table of keys (config-keys.c) but has no parser", name);
}

/* true, yes, 1, on / false, no, 0, off. 0 or SHMF_E_INVAL. */
static int parse_bool(const char *v, int *out)
{
	if (!strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcmp(v, "1") || !strcasecmp(v, "on"))
		*out = 1;
	else if (!strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcmp(v, "0") || !strcasecmp(v, "off"))
		*out = 0;
	else
		return SHMF_E_INVAL;
	return 0;
}

/* An idle timeout: 0 (never), seconds, or a duration (10m, 1h). 0 or SHMF_E_INVAL. */
static int parse_timeout(const char *v, unsigned *out)
{
	uint64_t secs = 0;
	if (strcmp(v, "0") != 0 && (spec_parse_duration(v, &secs) < 0 || secs > CONFIG_TIMEOUT_MAX))
		return SHMF_E_INVAL;
	*out = (unsigned)secs;
	return 0;
}

/* A count of connections from @p min to TCP_MAXCLIENTS_LIMIT. 0 or SHMF_E_INVAL. */
static int parse_clients(const char *v, unsigned min, unsigned *out)
{
	uint64_t n;
	if (spec_parse_capacity(v, &n) < 0 || n < min || n > TCP_MAXCLIENTS_LIMIT)
		return SHMF_E_INVAL;
	*out = (unsigned)n;
	return 0;
}

/* A group name or gid ("": none). 0 or SHMF_E_NOTFOUND. */
static int parse_group(const char *v, gid_t *out)
{
	if (*v == '\0') {
		*out = (gid_t)-1;
		return 0;
	}
	return roles_parse_gid(v, out);
}

/* snapshot_paths = DIR [DIR...]: absolute directories, separated by
 * spaces or commas. 1, or 0 after bad(). */
static int snapshot_paths(struct parse_state *ps, const char *value)
{
	struct config *c = ps->c;
	char buf[CONFIG_SNAPSHOT_PATHS_MAX * 256 + 64], *save = NULL;
	if (strlen(value) >= sizeof(buf))
		return bad(ps, "snapshot_paths: longer than %zu bytes", sizeof(buf) - 1);
	snprintf(buf, sizeof(buf), "%s", value);
	c->nsnapshot_paths = 0;
	for (char *d = strtok_r(buf, " ,\t", &save); d != NULL; d = strtok_r(NULL, " ,\t", &save)) {
		if (c->nsnapshot_paths == CONFIG_SNAPSHOT_PATHS_MAX)
			return bad(ps, "snapshot_paths: more than %d directories", CONFIG_SNAPSHOT_PATHS_MAX);
		if (d[0] != '/' || strlen(d) >= sizeof(c->snapshot_paths[0]))
			return bad(ps, "snapshot_paths '%s': each must be an absolute path of at most %zu bytes", d,
				   sizeof(c->snapshot_paths[0]) - 1);
		snprintf(c->snapshot_paths[c->nsnapshot_paths++], sizeof(c->snapshot_paths[0]), "%s", d);
	}
	return 1;
}

static int parse_size(const char *v, uint64_t *out);

/* [instance] slowlog_log_slower_than and slowlog_max_len. 1, or 0 after bad(). */
static int slowlog_key(struct parse_state *ps, const char *name, const char *value)
{
	struct slowlog_config *sc = &ps->c->slowlog;
	if (!strcmp(name, "slowlog_log_slower_than")) {
		char *end;
		errno = 0;
		long long us = strtoll(value, &end, 10);
		if (errno || end == value || *end != '\0' || us < -1 || us > INT_MAX)
			return bad(ps, "slowlog_log_slower_than '%s': microseconds from 0 to %d, or -1 (log nothing)",
				   value, INT_MAX);
		sc->log_slower_than = (int)us;
	} else if (!strcmp(name, "slowlog_max_len")) {
		uint64_t n;
		if (spec_parse_capacity(value, &n) < 0 || n > SLOWLOG_MAX_LEN_LIMIT)
			return bad(ps, "slowlog_max_len '%s': an integer from 1 to %u", value, SLOWLOG_MAX_LEN_LIMIT);
		sc->max_len = (unsigned)n;
	} else {
		return no_parser(ps, name);
	}
	return 1;
}

static int instance_key(struct parse_state *ps, const char *name, const char *value)
{
	struct config *c = ps->c;
	if (!strcmp(name, "name")) {
		if (shmf_name_check(value) < 0)
			return bad(ps, "invalid instance name '%s'", value);
		snprintf(c->instance, sizeof(c->instance), "%s", value);
	} else if (!strcmp(name, "dir_mode")) {
		if (spec_parse_mode(value, 022, &c->dir_mode) < 0)
			return bad(ps, "dir_mode '%s': octal mode without group or other write bits", value);
	} else if (!strcmp(name, "socket_mode")) {
		if (spec_parse_mode(value, 02, &c->socket_mode) < 0)
			return bad(ps, "socket_mode '%s': octal mode without other-write bit", value);
	} else if (!strcmp(name, "group")) {
		if (parse_group(value, &c->gid) < 0)
			return bad(ps, "group '%s': no such group", value);
	} else if (!strcmp(name, "create_dirs")) {
		if (parse_bool(value, &c->create_dirs) < 0)
			return bad(ps, "create_dirs '%s': expected yes or no", value);
	} else if (!strcmp(name, "remove_on_exit")) {
		if (parse_bool(value, &c->remove_on_exit) < 0)
			return bad(ps, "remove_on_exit '%s': expected true or false", value);
	} else if (!strcmp(name, "huge_pages")) {
		if (!strcmp(value, "auto"))
			c->huge_pages = 1;
		else if (!strcmp(value, "off"))
			c->huge_pages = 0;
		else
			return bad(ps, "huge_pages '%s': expected auto or off", value);
	} else if (!strcmp(name, "mount_tmpfs")) {
		int yes;
		if (!strcmp(value, "auto"))
			c->mount_tmpfs = MOUNT_TMPFS_AUTO;
		else if (parse_bool(value, &yes) == 0)
			c->mount_tmpfs = yes ? MOUNT_TMPFS_YES : MOUNT_TMPFS_NO;
		else
			return bad(ps, "mount_tmpfs '%s': expected auto, yes or no", value);
	} else if (!strcmp(name, "snapshot_dir")) {
		if (value[0] != '/' || strlen(value) >= sizeof(c->snapshot_dir))
			return bad(ps, "snapshot_dir '%s': must be an absolute path of at most %zu bytes", value,
				   sizeof(c->snapshot_dir) - 1);
		snprintf(c->snapshot_dir, sizeof(c->snapshot_dir), "%s", value);
	} else if (!strcmp(name, "log_level")) {
		if (log_parse_level(value, &c->log_level) < 0)
			return bad(ps, "log_level '%s': expected %s", value, LOG_LEVEL_NAMES);
	} else if (!strcmp(name, "log_file")) {
		if (value[0] != '\0' && (value[0] != '/' || strlen(value) >= sizeof(c->log_file)))
			return bad(ps, "log_file '%s': must be an absolute path of at most %zu bytes", value,
				   sizeof(c->log_file) - 1);
		snprintf(c->log_file, sizeof(c->log_file), "%s", value);
	} else if (!strcmp(name, "maxclients")) {
		/* At least 2: the last slot is an administrator's. */
		if (parse_clients(value, 2, &c->maxclients) < 0)
			return bad(ps, "maxclients '%s': an integer from 2 to %d", value, TCP_MAXCLIENTS_LIMIT);
	} else if (!strcmp(name, "maxclients_per_user")) {
		if (parse_clients(value, 1, &c->maxclients_per_user) < 0)
			return bad(ps, "maxclients_per_user '%s': an integer from 1 to %d", value,
				   TCP_MAXCLIENTS_LIMIT);
	} else if (!strcmp(name, "timeout")) {
		if (parse_timeout(value, &c->timeout) < 0)
			return bad(ps,
				   "timeout '%s': 0 (never), seconds, or a duration such as 10m or 1h (at most a year)",
				   value);
	} else if (!strcmp(name, "snapshot_paths")) {
		return snapshot_paths(ps, value);
	} else if (!strcmp(name, "maxmemory_clients")) {
		uint64_t n;
		if (parse_size(value, &n) < 0 || n < CONFIG_MAXMEMORY_CLIENTS_MIN || n > CONFIG_MAXMEMORY_CLIENTS_MAX)
			return bad(ps, "maxmemory_clients '%s': bytes from 16m to 1024g (a number, or with k, m or g)",
				   value);
		c->maxmemory_clients = (size_t)n;
	} else if (!strncmp(name, "slowlog_", 8)) {
		return slowlog_key(ps, name, value);
	} else {
		return no_parser(ps, name);
	}
	return 1;
}

/* Bytes: decimal digits, then nothing, b, k, kb, kib, m, mb or mib (any
 * case; k and m are binary, 1024 and 1048576). 0 or SHMF_E_INVAL. */
static int parse_size(const char *v, uint64_t *out)
{
	uint64_t n = 0;
	const char *p = v;
	if (*p < '0' || *p > '9')
		return SHMF_E_INVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (n > (UINT64_MAX - 9) / 10)
			return SHMF_E_INVAL;
		n = n * 10 + (uint64_t)(*p - '0');
	}
	uint64_t unit;
	if (*p == '\0' || !strcasecmp(p, "b"))
		unit = 1;
	else if (!strcasecmp(p, "k") || !strcasecmp(p, "kb") || !strcasecmp(p, "kib"))
		unit = 1024;
	else if (!strcasecmp(p, "m") || !strcasecmp(p, "mb") || !strcasecmp(p, "mib"))
		unit = 1024 * 1024;
	else if (!strcasecmp(p, "g") || !strcasecmp(p, "gb") || !strcasecmp(p, "gib"))
		unit = 1024 * 1024 * 1024;
	else
		return SHMF_E_INVAL;
	if (n > UINT64_MAX / unit)
		return SHMF_E_INVAL;
	*out = n * unit;
	return 0;
}

static int tcp_key(struct parse_state *ps, const char *name, const char *value)
{
	struct tcp_config *t = &ps->c->tcp;
	if (!strcmp(name, "enabled")) {
		if (parse_bool(value, &t->enabled) < 0)
			return bad(ps, "enabled '%s': expected yes or no", value);
	} else if (!strcmp(name, "bind")) {
		if (value[0] == '\0' || strlen(value) >= sizeof(t->bind) || strpbrk(value, " \t") != NULL)
			return bad(ps, "bind '%s': one address, such as 127.0.0.1, ::1 or 0.0.0.0", value);
		snprintf(t->bind, sizeof(t->bind), "%s", value);
	} else if (!strcmp(name, "port")) {
		uint64_t port;
		if (spec_parse_capacity(value, &port) < 0 || port > 65535)
			return bad(ps, "port '%s': an integer from 1 to 65535", value);
		t->port = (int)port;
	} else if (!strcmp(name, "requirepass")) {
		if (strlen(value) > TCP_PASSWORD_MAX)
			return bad(ps, "requirepass: longer than %d bytes", TCP_PASSWORD_MAX);
		snprintf(t->requirepass, sizeof(t->requirepass), "%s", value);
	} else if (!strcmp(name, "unauthenticated_role")) {
		int role = ROLE_NONE;
		if (value[0] != '\0' && (role = role_parse(value)) == ROLE_NONE)
			return bad(ps,
				   "unauthenticated_role '%s': reader, writer or admin (the role of every client of a "
				   "listener without requirepass and [user NAME] sections), or empty",
				   value);
		ps->c->roles.tcp_unauthenticated_role = role;
	} else if (!strcmp(name, "maxclients")) {
		if (parse_clients(value, 1, &t->maxclients) < 0)
			return bad(ps, "maxclients '%s': an integer from 1 to %d", value, TCP_MAXCLIENTS_LIMIT);
	} else if (!strcmp(name, "maxclients_per_addr")) {
		if (parse_clients(value, 1, &t->maxclients_per_addr) < 0)
			return bad(ps, "maxclients_per_addr '%s': an integer from 1 to %d", value,
				   TCP_MAXCLIENTS_LIMIT);
	} else if (!strcmp(name, "timeout")) {
		if (parse_timeout(value, &t->timeout) < 0)
			return bad(ps,
				   "timeout '%s': 0 (never), seconds, or a duration such as 10m or 1h (at most a year)",
				   value);
	} else if (!strcmp(name, "max_request")) {
		uint64_t n;
		if (parse_size(value, &n) < 0 || n < TCP_MAX_REQUEST_MIN || n > REQUEST_MAX_BYTES)
			return bad(ps, "max_request '%s': bytes from 1k to 64m (a number, or with k, kb, m or mb)",
				   value);
		t->max_request = (size_t)n;
	} else {
		return no_parser(ps, name);
	}
	return 1;
}

/* [metrics] listen = ADDRESS:PORT: an IPv4 literal, or an IPv6 one in
 * brackets, and a port; empty: off. 1, or 0 after bad(). */
static int metrics_key(struct parse_state *ps, const char *name, const char *value)
{
	struct metrics_config *m = &ps->c->metrics;
	if (strcmp(name, "listen") != 0)
		return bad(ps, "unknown key '%s' in [metrics] (listen)", name);
	char host[sizeof(m->host)];
	const char *colon = strrchr(value, ':');
	size_t hlen = colon != NULL ? (size_t)(colon - value) : 0;
	unsigned char addr[sizeof(struct in6_addr)];
	uint64_t port = 0;
	int ok = value[0] == '\0';
	if (!ok && colon != NULL && hlen < sizeof(host) && strlen(value) < sizeof(m->listen)) {
		int v6 = hlen >= 2 && value[0] == '[' && value[hlen - 1] == ']';
		snprintf(host, sizeof(host), "%.*s", (int)(v6 ? hlen - 2 : hlen), v6 ? value + 1 : value);
		ok = inet_pton(v6 ? AF_INET6 : AF_INET, host, addr) == 1 &&
		     spec_parse_capacity(colon + 1, &port) == 0 && port <= 65535;
	}
	if (!ok)
		return bad(ps,
			   "listen '%s': an IP address and a port, such as 127.0.0.1:9353 or [::1]:9353 (empty: no "
			   "metrics)",
			   value);
	snprintf(m->listen, sizeof(m->listen), "%s", value);
	snprintf(m->host, sizeof(m->host), "%s", value[0] ? host : "");
	m->port = (int)port;
	return 1;
}

static int filter_key(struct parse_state *ps, const char *name, const char *value)
{
	struct filter_spec *f = ps->cur;
	if (!strcmp(name, "type")) {
		if (spec_parse_type(value, &f->type) < 0)
			return bad(ps, "type '%s': expected bloom or cuckoo", value);
	} else if (!strcmp(name, "max_kicks")) {
		if (spec_parse_kicks(value, &f->max_kicks) < 0)
			return bad(ps, "max_kicks '%s': must be an integer from 1 to %u", value,
				   SHMF_CUCKOO_KICKS_LIMIT);
	} else if (!strcmp(name, "bucket_size")) {
		if (spec_parse_bucket_size(value, &f->bucket_size) < 0)
			return bad(ps, "bucket_size '%s': fingerprints per bucket, " SPEC_BUCKET_SIZES, value);
	} else if (!strcmp(name, "lock_timeout_ms")) {
		uint64_t ms;
		if (spec_parse_capacity(value, &ms) < 0 || ms > SHMF_CUCKOO_LOCK_TIMEOUT_MAX)
			return bad(ps, "lock_timeout_ms '%s': must be an integer from 1 to %u", value,
				   SHMF_CUCKOO_LOCK_TIMEOUT_MAX);
		f->lock_timeout_ms = (uint32_t)ms;
	} else if (!strcmp(name, "capacity")) {
		if (spec_parse_capacity(value, &f->capacity) < 0)
			return bad(ps, "capacity '%s': must be a positive integer", value);
	} else if (!strcmp(name, "fpr")) {
		if (spec_parse_fpr(value, &f->fpr) < 0)
			return bad(ps, "fpr '%s': must be a number strictly between 0 and 1", value);
	} else if (!strcmp(name, "mode")) {
		if (spec_parse_mode(value, 02, &f->mode) < 0)
			return bad(ps, "mode '%s': octal mode without other-write bit", value);
	} else if (!strcmp(name, "window")) {
		if (spec_parse_duration(value, &f->window_secs) < 0)
			return bad(ps, "window '%s': a duration such as 60s, 10m, 1h or 1d", value);
	} else if (!strcmp(name, "generations")) {
		uint64_t n;
		if (spec_parse_capacity(value, &n) < 0 || n > SHMF_WINDOW_MAX)
			return bad(ps, "generations '%s': an integer from 1 to %u", value, SHMF_WINDOW_MAX);
		f->window_gens = (uint32_t)n;
	} else if (!strcmp(name, "snapshot_every")) {
		if (spec_parse_duration(value, &f->snapshot_every) < 0)
			return bad(ps, "snapshot_every '%s': a duration such as 30s, 5m, 1h or 1d", value);
	} else if (!strcmp(name, "snapshot_keep")) {
		uint64_t keep;
		if (spec_parse_capacity(value, &keep) < 0 || keep > 1000)
			return bad(ps, "snapshot_keep '%s': an integer from 1 to 1000", value);
		f->snapshot_keep = (uint32_t)keep;
	} else if (!strcmp(name, "snapshot_dir")) {
		if (value[0] != '/' || strlen(value) >= sizeof(f->snapshot_dir))
			return bad(ps, "snapshot_dir '%s': must be an absolute path of at most %zu bytes", value,
				   sizeof(f->snapshot_dir) - 1);
		snprintf(f->snapshot_dir, sizeof(f->snapshot_dir), "%s", value);
	} else if (!strcmp(name, "replicate")) {
		if (parse_bool(value, &f->replicate) < 0)
			return bad(ps, "replicate '%s': expected yes or no", value);
	} else if (!strcmp(name, "expansion")) {
		uint64_t n;
		if (strcmp(value, "0") == 0)
			n = 0;
		else if (spec_parse_capacity(value, &n) < 0 || n > SHMF_EXPANSION_MAX)
			return bad(ps, "expansion '%s': an integer from 0 (the filter does not grow) to %u", value,
				   SHMF_EXPANSION_MAX);
		f->expansion = (uint32_t)n;
	} else if (!strcmp(name, "nonscaling")) {
		if (parse_bool(value, &f->nonscaling) < 0)
			return bad(ps, "nonscaling '%s': expected yes or no", value);
	} else {
		return no_parser(ps, name);
	}
	return 1;
}

/* [replication]: one row per key. The parser, the defaults and the
 * message for a bad value all read the row. */
enum repl_kind {
	R_TEXT,    /* a string of at most size - 1 bytes (empty allowed unless min is 1) */
	R_ADDRESS, /* host:port, or an absolute unix socket path */
	R_NODE,    /* a name: printable, no spaces */
	R_COUNT,   /* an integer from min to max */
	R_POW2,    /* a power of 2 from min to max */
	R_HOSTS,   /* host:port,host:port,...: the sentinels */
};

static const struct repl_key {
	const char *name;
	enum repl_kind kind;
	size_t off, size; /* the field in struct repl_config */
	uint64_t min, max;
	const char *help; /* what a good value is, for the message */
} repl_keys[] = {
#define RFIELD(f) offsetof(struct repl_config, f), sizeof(((struct repl_config *)0)->f)
	{ "redis", R_ADDRESS, RFIELD(redis), 1, 0,
	  "host:port (port 1 to 65535), or a unix socket path starting with /" },
	{ "password", R_TEXT, RFIELD(password), 0, 0, "the AUTH password" },
	{ "user", R_TEXT, RFIELD(user), 0, 0, "the AUTH user (ACL)" },
	{ "node", R_NODE, RFIELD(node), 1, 0, "this host's name in the fleet: printable, no spaces" },
	{ "secret", R_TEXT, RFIELD(secret), 0, 0, "a string every node shares" },
	{ "stream_prefix", R_TEXT, RFIELD(stream_prefix), 0, 0, "the start of every stream key" },
	{ "retention", R_COUNT, RFIELD(retention), 1, UINT64_C(1) << 40, "stream entries kept (XADD MAXLEN ~)" },
	{ "journal_rings", R_COUNT, RFIELD(journal_rings), 1, SHMF_JOURNAL_RINGS_MAX,
	  "rings per journal (handles journalling at once)" },
	{ "journal_entries", R_POW2, RFIELD(journal_entries), SHMF_JOURNAL_ENTRIES_MIN, SHMF_JOURNAL_ENTRIES_MAX,
	  "entries per ring, a power of 2" },
	{ "announce", R_TEXT, RFIELD(announce), 0, 0, "HOST:PORT of this node's TCP listener, as the others reach it" },
	{ "announce_user", R_TEXT, RFIELD(announce_user), 0, 0, "the user the others AUTH as on this node's listener" },
	{ "announce_password", R_TEXT, RFIELD(announce_password), 0, 0,
	  "the password the others AUTH with on this node's listener" },
	{ "auto_repair", R_TEXT, RFIELD(auto_repair_text), 1, 0, "merge, pull or off" },
	/* Sentinel and WAIT: repl_complete() checks them together */
	{ "sentinel", R_HOSTS, RFIELD(sentinel), 1, REPL_SENTINELS_MAX,
	  "host:port of each sentinel (port 1 to 65535), separated by commas" },
	{ "master", R_NODE, RFIELD(master), 1, 0,
	  "the name the sentinels monitor the master by: printable, no spaces" },
	{ "sentinel_password", R_TEXT, RFIELD(sentinel_password), 0, 0, "the sentinels' AUTH password" },
	{ "replicas_wait", R_COUNT, RFIELD(replicas_wait), 0, REPL_REPLICAS_WAIT_MAX,
	  "replicas that must acknowledge (WAIT) before entries leave the journal" },
#undef RFIELD
};

/* "host:port" or "[v6]:port" of @p len bytes into @p host (of @p size)
 * and @p port. 0 or SHMF_E_INVAL. */
static int parse_hostport(const char *v, size_t len, char *host, size_t size, int *port)
{
	const char *colon = memrchr(v, ':', len);
	uint64_t p;
	char digits[8];
	size_t dl = colon ? len - (size_t)(colon + 1 - v) : 0;
	if (colon == NULL || colon == v || dl == 0 || dl >= sizeof(digits) || memchr(v, ' ', len) != NULL ||
	    memchr(v, '\t', len) != NULL)
		return SHMF_E_INVAL;
	memcpy(digits, colon + 1, dl);
	digits[dl] = '\0';
	if (spec_parse_capacity(digits, &p) < 0 || p == 0 || p > 65535)
		return SHMF_E_INVAL;
	const char *h = v;
	size_t hl = (size_t)(colon - v);
	if (h[0] == '[') {
		if (hl < 3 || h[hl - 1] != ']')
			return SHMF_E_INVAL;
		h++, hl -= 2;
	}
	if (hl >= size)
		return SHMF_E_INVAL;
	snprintf(host, size, "%.*s", (int)hl, h);
	*port = (int)p;
	return 0;
}

/* "host:port", "[v6]:port" or "/path" (port 0). 0 or SHMF_E_INVAL. */
static int parse_address(const char *v, struct repl_config *r)
{
	if (v[0] == '/') {
		if (strlen(v) >= sizeof(r->host) || strlen(v) >= 108) /* sun_path */
			return SHMF_E_INVAL;
		snprintf(r->host, sizeof(r->host), "%s", v);
		r->port = 0;
		return 0;
	}
	return parse_hostport(v, strlen(v), r->host, sizeof(r->host), &r->port);
}

/* "host:port,host:port,..." (spaces after a comma allowed) into
 * r->sentinels: 1 to @p max of them. 0 or SHMF_E_INVAL. */
static int parse_hosts(const char *v, struct repl_config *r, uint64_t max)
{
	r->nsentinels = 0;
	for (const char *p = v;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		size_t len = strcspn(p, ",");
		if (r->nsentinels == max)
			return SHMF_E_INVAL;
		struct repl_host *h = &r->sentinels[r->nsentinels];
		if (parse_hostport(p, len, h->host, sizeof(h->host), &h->port) < 0)
			return SHMF_E_INVAL;
		r->nsentinels++;
		if (p[len] == '\0')
			return 0;
		p += len + 1;
	}
}

static int repl_key(struct parse_state *ps, const char *name, const char *value)
{
	struct repl_config *r = &ps->c->repl;
	const struct repl_key *k = NULL;
	for (size_t i = 0; i < sizeof(repl_keys) / sizeof(repl_keys[0]); i++)
		if (!strcmp(repl_keys[i].name, name))
			k = &repl_keys[i];
	if (k == NULL)
		return no_parser(ps, name);
	char *field = (char *)r + k->off;
	uint64_t n = 0;
	int ok = 1;
	switch (k->kind) {
	case R_ADDRESS:
		ok = strlen(value) < k->size && parse_address(value, r) == 0;
		r->redis_given = 1;
		break;
	case R_HOSTS: ok = strlen(value) < k->size && parse_hosts(value, r, k->max) == 0; break;
	case R_NODE:
		ok = value[0] != '\0' && strlen(value) < k->size;
		for (const char *p = value; ok && *p; p++)
			ok = *p > ' ' && *p < 0x7f;
		break;
	case R_TEXT: ok = strlen(value) < k->size && (k->min == 0 || value[0] != '\0'); break;
	case R_COUNT:
	case R_POW2:
		ok = spec_parse_capacity(value, &n) == 0 && n >= k->min && n <= k->max &&
		     (k->kind != R_POW2 || (n & (n - 1)) == 0);
		break;
	}
	if (!ok) {
		if (k->kind == R_COUNT || k->kind == R_POW2)
			return bad(ps, "%s '%s': %s, from %" PRIu64 " to %" PRIu64, name, value, k->help, k->min,
				   k->max);
		if (k->kind == R_TEXT || k->kind == R_NODE)
			return bad(ps, "%s: %s, at most %zu bytes", name, k->help, k->size - 1);
		return bad(ps, "%s '%s': %s", name, value, k->help);
	}
	if (k->kind == R_COUNT || k->kind == R_POW2)
		memcpy(field, &n, sizeof(n));
	else
		snprintf(field, k->size, "%s", value);
	return 1;
}

static int on_entry(void *user, const char *section, const char *name, const char *value)
{
	struct parse_state *ps = user;
	if (ps->failed)
		return 0;
	if (strcmp(section, ps->section) != 0) {
		snprintf(ps->section, sizeof(ps->section), "%s", section);
		ps->cur = NULL;
		if (!strncmp(section, "filter ", 7)) {
			/* declared by declare_sections() */
			for (unsigned i = 0; i < ps->c->nfilters; i++)
				if (!strcmp(ps->c->filters[i].name, section + 7))
					ps->cur = &ps->c->filters[i];
		}
	}
	/* The table first: a key it lacks is refused, whatever code might take
	 * it. Keys before any section header are [instance]'s. */
	const char *tsection = section[0] != '\0' ? section : "instance";
	if (config_key_find(tsection, name) == NULL) {
		config_key_unknown(tsection, name, ps->msg, sizeof(ps->msg));
		return bad_at(ps);
	}
	int taken = roles_config_key(&ps->c->roles, section, name, value, ps->msg, sizeof(ps->msg));
	if (taken != 0)
		return taken < 0 ? bad_at(ps) : 1;
	if (ps->cur != NULL)
		return filter_key(ps, name, value);
	if (!strcmp(section, "tcp"))
		return tcp_key(ps, name, value);
	if (!strcmp(section, "replication"))
		return repl_key(ps, name, value);
	if (!strcmp(section, "metrics"))
		return metrics_key(ps, name, value);
	if (!strcmp(section, "defaults"))
		return defaults_set(&ps->c->defaults, name, value, ps->msg, sizeof(ps->msg)) < 0 ? bad_at(ps) : 1;
	return instance_key(ps, name, value);
}

/* Walk the section headers first, so that every [filter NAME] declares a
 * filter (with the defaults, even when the section is empty) and a section
 * given twice is an error rather than a silent merge. */
static int declare_sections(struct parse_state *ps, const char *text)
{
	int ours;
	ps->line = 0;
	for (const char *line = text; line != NULL && *line != '\0';) {
		const char *next = strchr(line, '\n');
		ps->line++;
		size_t len = next ? (size_t)(next - line) : strlen(line);
		while (len > 0 && (*line == ' ' || *line == '\t'))
			line++, len--;
		const char *close = len > 0 && *line == '[' ? memchr(line, ']', len) : NULL;
		if (close != NULL) {
			snprintf(ps->section, sizeof(ps->section), "%.*s", (int)(close - line - 1), line + 1);
			const char *section = ps->section;
			if (!strncmp(section, "filter ", 7)) {
				const char *fname = section + 7;
				if (shmf_name_check(fname) < 0)
					return bad(ps, "invalid filter name '%s'", fname);
				for (unsigned i = 0; i < ps->c->nfilters; i++)
					if (!strcmp(ps->c->filters[i].name, fname))
						return bad(ps, "filter '%s' declared twice", fname);
				if (ps->c->nfilters >= CONFIG_FILTERS_MAX)
					return bad(ps, "too many filters (at most %u)", CONFIG_FILTERS_MAX);
				spec_defaults(&ps->c->filters[ps->c->nfilters++], fname);
			} else if (!strcmp(section, "replication")) {
				if (ps->c->repl.enabled)
					return bad(ps, "[replication] given twice");
				ps->c->repl.enabled = 1;
			} else if ((ours = roles_config_section(&ps->c->roles, section, ps->msg, sizeof(ps->msg))) !=
				   0) {
				if (ours < 0)
					return bad_at(ps);
			} else if (!config_section_known(section)) {
				return bad(ps, "unknown section [%s]", section);
			}
		}
		line = next ? next + 1 : NULL;
	}
	ps->section[0] = '\0';
	return 1;
}

static void config_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->instance, sizeof(c->instance), "%s", SHMF_DEFAULT_INSTANCE);
	c->dir_mode = 0750;
	c->socket_mode = 0660;
	c->gid = (gid_t)-1;
	c->remove_on_exit = 0;
	c->huge_pages = 1;
	c->mount_tmpfs = MOUNT_TMPFS_AUTO;
	c->log_level = LOG_INFO;
	c->maxclients = UNIX_DEFAULT_MAXCLIENTS;
	c->maxclients_per_user = CONFIG_MAXCLIENTS_PER_PEER;
	c->timeout = 0;
	c->slowlog = (struct slowlog_config){ SLOWLOG_SLOWER_THAN_DEFAULT, SLOWLOG_MAX_LEN_DEFAULT };
	c->maxmemory_clients = CONFIG_MAXMEMORY_CLIENTS;
	snprintf(c->tcp.bind, sizeof(c->tcp.bind), "127.0.0.1");
	c->tcp.port = TCP_DEFAULT_PORT;
	c->tcp.maxclients = TCP_DEFAULT_MAXCLIENTS;
	c->tcp.maxclients_per_addr = CONFIG_MAXCLIENTS_PER_PEER;
	c->tcp.timeout = TCP_DEFAULT_TIMEOUT;
	c->tcp.max_request = REQUEST_MAX_BYTES;
	snprintf(c->repl.redis, sizeof(c->repl.redis), "127.0.0.1:6379");
	snprintf(c->repl.host, sizeof(c->repl.host), "127.0.0.1");
	c->repl.port = 6379;
	snprintf(c->repl.stream_prefix, sizeof(c->repl.stream_prefix), "shmf:");
	c->repl.retention = REPL_RETENTION_DEFAULT;
	c->repl.journal_rings = REPL_RINGS_DEFAULT;
	c->repl.journal_entries = REPL_ENTRIES_DEFAULT;
	roles_config_defaults(&c->roles);
	c->defaults = filter_defaults_builtin;
}

/* Self-repair's keys: auto_repair's word; announce a HOST:PORT, by
 * default [tcp]'s when it listens on one address (not a wildcard), with
 * its requirepass as the credentials. 0 or SHMF_E_INVAL. */
static int repl_repair_complete(struct config *c, const char *origin, char *err, size_t errlen)
{
	struct repl_config *r = &c->repl;
	const char *a = r->auto_repair_text;
	if (a[0] == '\0' || !strcmp(a, "merge"))
		r->auto_repair = REPL_REPAIR_MERGE;
	else if (!strcmp(a, "pull"))
		r->auto_repair = REPL_REPAIR_PULL;
	else if (!strcmp(a, "off") || !strcmp(a, "no"))
		r->auto_repair = REPL_REPAIR_OFF;
	else
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "%s: [replication] auto_repair '%s': merge (the default: Bloom filters OR a peer's copy "
			      "in), pull (cuckoo filters too, by a copy) or off",
			      origin, a);
	int wildcard = !strcmp(c->tcp.bind, "0.0.0.0") || !strcmp(c->tcp.bind, "::") || !strcmp(c->tcp.bind, "*");
	int v6 = strchr(c->tcp.bind, ':') != NULL;
	if (r->announce[0] == '\0' && c->tcp.enabled && !wildcard && strlen(c->tcp.bind) + 10 < sizeof(r->announce))
		snprintf(r->announce, sizeof(r->announce), "%s%.200s%s:%d", v6 ? "[" : "", c->tcp.bind, v6 ? "]" : "",
			 c->tcp.port);
	if (r->announce_password[0] == '\0' && r->announce_user[0] == '\0')
		snprintf(r->announce_password, sizeof(r->announce_password), "%s", c->tcp.requirepass);
	struct repl_config probe;
	if (r->announce[0] != '\0' && (parse_address(r->announce, &probe) < 0 || probe.port == 0))
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "%s: [replication] announce '%s': HOST:PORT of this node's TCP listener as the other "
			      "nodes reach it, such as 10.0.0.7:6380",
			      origin, r->announce);
	if (r->announce_user[0] != '\0' && r->announce_password[0] == '\0')
		return errmsg(err, errlen, SHMF_E_INVAL, "%s: [replication] announce_user '%s' needs announce_password",
			      origin, r->announce_user);
	return 0;
}

/* Sentinel's keys go together: sentinel with master, not with redis;
 * sentinel_password only with sentinel. 0 or SHMF_E_INVAL. */
static int repl_sentinel_complete(const struct repl_config *r, const char *origin, char *err, size_t errlen)
{
	if (r->nsentinels > 0 && r->redis_given)
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "%s: [replication] redis and sentinel are both set: give redis (one Redis) or sentinel "
			      "with master (the master found through Sentinel), not both",
			      origin);
	if (r->nsentinels > 0 && r->master[0] == '\0')
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "%s: [replication] sentinel needs master = NAME (the name the sentinels monitor the "
			      "master by)",
			      origin);
	if (r->nsentinels == 0 && r->master[0] != '\0')
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "%s: [replication] master '%s' needs sentinel = HOST:PORT,... (the sentinels to ask)",
			      origin, r->master);
	if (r->nsentinels == 0 && r->sentinel_password[0] != '\0')
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "%s: [replication] sentinel_password needs sentinel = HOST:PORT,... (the master's own "
			      "password is password)",
			      origin);
	return 0;
}

/* What [replication] must hold once the whole text is read: a secret if
 * any filter replicates, a user only with a password, a node name (the
 * host's by default). 0 or SHMF_E_INVAL with the message in err. */
static int repl_complete(struct config *c, const char *origin, char *err, size_t errlen)
{
	struct repl_config *r = &c->repl;
	int rc;
	for (unsigned i = 0; i < c->nfilters; i++) {
		const struct filter_spec *f = &c->filters[i];
		if (f->replicate && !r->enabled)
			return errmsg(err, errlen, SHMF_E_INVAL,
				      "%s: [filter %s] replicate = yes needs a [replication] section (redis, secret)",
				      origin, f->name);
		if (f->replicate && r->secret[0] == '\0')
			return errmsg(err, errlen, SHMF_E_INVAL,
				      "%s: [filter %s] replicates but [replication] has no secret (every node must "
				      "share one: it keys the filter's hash seed)",
				      origin, f->name);
	}
	if (!r->enabled)
		return 0;
	if (r->user[0] != '\0' && r->password[0] == '\0')
		return errmsg(err, errlen, SHMF_E_INVAL, "%s: [replication] user '%s' needs a password", origin,
			      r->user);
	if ((rc = repl_repair_complete(c, origin, err, errlen)) < 0)
		return rc;
	if ((rc = repl_sentinel_complete(r, origin, err, errlen)) < 0)
		return rc;
	if (r->node[0] == '\0') {
		char host[256] = "";
		if (gethostname(host, sizeof(host) - 1) < 0 || host[0] == '\0' || strlen(host) > FLEET_NODE_MAX)
			return errmsg(err, errlen, SHMF_E_INVAL,
				      "%s: [replication] no node name given and the host name cannot serve (set node =)",
				      origin);
		snprintf(r->node, sizeof(r->node), "%s", host);
	}
	return 0;
}

int config_tcp_check(const struct config *c, const char *origin, char *err, size_t errlen)
{
	int passwords = c->tcp.requirepass[0] != '\0' || c->roles.nusers > 0;
	int role = c->roles.tcp_unauthenticated_role;
	if (role != ROLE_NONE && passwords)
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "%s: [tcp] unauthenticated_role = %s with %s: a listener with passwords gives each client "
			      "the role of the user it authenticates as; remove one or the other",
			      origin, role_name(role), c->tcp.requirepass[0] ? "requirepass" : "[user NAME] sections");
	if (c->tcp.enabled && role == ROLE_NONE && !passwords)
		return errmsg(err, errlen, SHMF_E_INVAL,
			      "%s: [tcp] enabled = yes with no requirepass and no [user NAME] sections: any user of this "
			      "host (and of any host that reaches %s) could connect without a password; set "
			      "requirepass, add [user NAME] sections, or say what such clients are with "
			      "unauthenticated_role = reader, writer or admin",
			      origin, c->tcp.bind);
	return 0;
}

int config_tcp_warning(const struct config *c, const char *listener, char *buf, size_t len)
{
	int role = c->roles.tcp_unauthenticated_role;
	if (!c->tcp.enabled || role == ROLE_NONE)
		return 0;
	snprintf(buf, len,
		 "tcp listener %s: no password; [tcp] unauthenticated_role = %s makes every client that connects a%s %s "
		 "(any user of this host%s)",
		 listener, role_name(role), role == ROLE_ADMIN ? "n" : "", role_name(role),
		 role == ROLE_ADMIN    ? ", who may create, drop and replace every filter"
		 : role == ROLE_WRITER ? ", who may add to and delete from every filter"
				       : ", who may check every filter");
	return 1;
}

/* The line of section @p name's header in @p text, or 0. */
static int section_line(const char *text, const char *name, size_t n)
{
	int no = 0;
	for (const char *line = text; line != NULL && *line != '\0';) {
		const char *next = strchr(line, '\n');
		no++;
		while (*line == ' ' || *line == '\t')
			line++;
		if (*line == '[' && !strncmp(line + 1, name, n) && line[1 + n] == ']')
			return no;
		line = next ? next + 1 : NULL;
	}
	return 0;
}

/* An error "ORIGIN: [SECTION] what" as "ORIGIN:LINE: [SECTION] what", so
 * that editors and people find it: @p line where the parse failed, else
 * (what is judged once the whole text is read) the section's header. */
static void place_error(char *err, size_t errlen, const char *origin, const char *text, int line)
{
	size_t olen = strlen(origin);
	if (errlen == 0 || strncmp(err, origin, olen) != 0 || strncmp(err + olen, ": [", 3) != 0)
		return;
	const char *name = err + olen + 3, *close = strchr(name, ']');
	if (line <= 0 && close != NULL)
		line = section_line(text, name, (size_t)(close - name));
	if (line <= 0)
		return;
	char rest[512];
	snprintf(rest, sizeof(rest), "%s", err + olen + 2);
	snprintf(err, errlen, "%s:%d: %s", origin, line, rest);
}

static int config_parse_text(struct config *c, const char *text, const char *origin, char *err, size_t errlen);

int config_parse(struct config *c, const char *text, const char *origin, char *err, size_t errlen)
{
	int rc = config_parse_text(c, text, origin, err, errlen);
	if (rc < 0)
		place_error(err, errlen, origin, text, 0);
	return rc;
}

static int config_parse_text(struct config *c, const char *text, const char *origin, char *err, size_t errlen)
{
	struct parse_state ps = { .c = c, .err = err, .errlen = errlen, .origin = origin };
	config_defaults(c);
	snprintf(c->origin, sizeof(c->origin), "%s", origin);
	declare_sections(&ps, text);
	int rc = ps.failed ? 0 : ini_parse_string(text, on_entry, &ps);
	if (ps.failed) {
		place_error(err, errlen, origin, text, rc > 0 ? rc : ps.line);
		return SHMF_E_INVAL;
	}
	if (rc > 0)
		return errmsg(err, errlen, SHMF_E_INVAL, "%s:%d: syntax error (expected [section] or key = value)",
			      origin, rc);
	if (rc < 0)
		return errmsg(err, errlen, -ENOMEM, "%s: cannot parse (out of memory)", origin);
	if ((rc = repl_complete(c, origin, err, errlen)) < 0)
		return rc;
	char msg[384];
	if (roles_config_complete(&c->roles, c->gid, msg, sizeof(msg)) < 0)
		return errmsg(err, errlen, SHMF_E_INVAL, "%s: %s", origin, msg);
	if ((rc = config_tcp_check(c, origin, err, errlen)) < 0)
		return rc;
	if (defaults_check(&c->defaults, msg, sizeof(msg)) < 0)
		return errmsg(err, errlen, SHMF_E_INVAL, "%s: [defaults] %s", origin, msg);
	/* Periodic snapshots: each filter's directory, its own or the instance's. */
	for (unsigned i = 0; i < c->nfilters; i++) {
		struct filter_spec *f = &c->filters[i];
		if (f->snapshot_keep == 0)
			f->snapshot_keep = 3;
		if (f->window_gens != 0 && f->window_secs == 0)
			return errmsg(err, errlen, SHMF_E_INVAL,
				      "%s: [filter %s] generations needs a window length (window = 10m)", origin,
				      f->name);
		if (f->window_secs != 0 && f->window_gens == 0)
			f->window_gens = 2;
		if (f->bucket_size != 0 && f->type != SHMF_TYPE_CUCKOO)
			return errmsg(err, errlen, SHMF_E_INVAL,
				      "%s: [filter %s] bucket_size applies to type = cuckoo only", origin, f->name);
		struct shmf_geometry g;
		if (f->bucket_size != 0 && shmf_geometry_size(f->type, f->capacity, f->fpr, f->max_kicks,
							      f->bucket_size, &g) == SHMF_E_INVAL) {
			char why[320];
			spec_bucket_fpr_why(f->capacity, f->bucket_size, f->fpr, why, sizeof(why));
			return errmsg(err, errlen, SHMF_E_INVAL, "%s: [filter %s] bucket_size %u: %s", origin, f->name,
				      f->bucket_size, why);
		}
		if (f->expansion != 0 && f->window_secs != 0)
			return errmsg(err, errlen, SHMF_E_INVAL,
				      "%s: [filter %s] expansion with a window: a windowed filter does not grow (its "
				      "generations rotate instead)",
				      origin, f->name);
		if (f->nonscaling && (f->expansion != 0 || f->type != SHMF_TYPE_BLOOM || f->window_secs != 0))
			return errmsg(err, errlen, SHMF_E_INVAL,
				      "%s: [filter %s] nonscaling applies to a Bloom filter without expansion or window (a "
				      "cuckoo filter with expansion 0 never grows)",
				      origin, f->name);
		if (f->snapshot_dir[0] == '\0')
			memcpy(f->snapshot_dir, c->snapshot_dir, sizeof(f->snapshot_dir));
		if (f->snapshot_every != 0 && f->snapshot_dir[0] == '\0')
			return errmsg(err, errlen, SHMF_E_INVAL,
				      "%s: [filter %s] snapshot_every needs a snapshot_dir (in the filter or in [instance])",
				      origin, f->name);
	}
	return 0;
}

/*
 * Open @p path for reading only if it is a regular file, without opening
 * anything else even for a moment: a path-only descriptor first (O_PATH
 * opens nothing: no FIFO wait, no device driver's open), judged by its
 * fstat, then the same inode opened for reading through /proc/self/fd
 * (O_NONBLOCK, in case /proc is not there and the path is opened again:
 * then the inode is compared, so a file swapped in between is refused).
 * A symbolic link at the path is followed (configuration managers and
 * container mounts install files so); what it points to is judged.
 * @return the descriptor, or a negative code with a message naming the
 * path and what it is.
 */
static int open_regular(const char *path, struct stat *st, char *err, size_t errlen)
{
	int pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		int e = errno;
		return errmsg(err, errlen, -e, "%s: %s", path, strerror(e));
	}
	if (fstat(pfd, st) < 0) {
		int e = errno;
		close(pfd);
		return errmsg(err, errlen, -e, "%s: cannot stat: %s", path, strerror(e));
	}
	if (!S_ISREG(st->st_mode)) {
		close(pfd);
		return errmsg(err, errlen, SHMF_E_INVAL, "%s is %s, not a configuration file (a regular file)", path,
			      errmsg_file_kind(st->st_mode));
	}
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	int fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	int e = errno;
	close(pfd);
	if (fd < 0)
		return errmsg(err, errlen, -e, "%s: %s", path, strerror(e));
	struct stat again;
	if (fstat(fd, &again) < 0 || again.st_dev != st->st_dev || again.st_ino != st->st_ino) {
		close(fd);
		return errmsg(err, errlen, SHMF_E_INVAL, "%s: replaced while it was opened; not read", path);
	}
	return fd;
}

/* The whole of regular file @p path, NUL-terminated, into *text (the
 * caller frees it): at most CONFIG_FILE_MAX bytes, counted as they are
 * read (a file that grows while it is read is refused too). 0, or a
 * negative code with a message in err, and nothing in *text. */
static int read_text(const char *path, char **text, char *err, size_t errlen)
{
	struct stat st;
	*text = NULL;
	int fd = open_regular(path, &st, err, errlen);
	if (fd < 0)
		return fd;
	int rc = 0;
	size_t len = 0, cap = 0;
	if ((uint64_t)st.st_size > CONFIG_FILE_MAX) {
		rc = errmsg(err, errlen, SHMF_E_TOOBIG,
			    "%s: %" PRIu64 " bytes, larger than the %u MiB a configuration file may have", path,
			    (uint64_t)st.st_size, CONFIG_FILE_MAX >> 20);
		goto out;
	}
	for (;;) {
		/* Room for CONFIG_FILE_MAX + 1 bytes at most: one byte past the
		 * limit is enough to know the file is too large. */
		if (len == cap) {
			size_t want = cap ? cap * 2 : 8192;
			if (want > (size_t)CONFIG_FILE_MAX + 1)
				want = (size_t)CONFIG_FILE_MAX + 1;
			char *t = realloc(*text, want + 1);
			if (t == NULL) {
				rc = errmsg(err, errlen, -ENOMEM, "%s: out of memory reading it", path);
				goto out;
			}
			*text = t;
			cap = want;
		}
		ssize_t n = read(fd, *text + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			rc = errmsg(err, errlen, -e, "%s: cannot read: %s", path, strerror(e));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > CONFIG_FILE_MAX) {
			rc = errmsg(err, errlen, SHMF_E_TOOBIG,
				    "%s: larger than the %u MiB a configuration file may have (it grew while read)",
				    path, CONFIG_FILE_MAX >> 20);
			goto out;
		}
	}
	if (*text == NULL && (*text = malloc(1)) == NULL) {
		rc = errmsg(err, errlen, -ENOMEM, "%s: out of memory reading it", path);
		goto out;
	}
	(*text)[len] = '\0';
	if (memchr(*text, '\0', len) != NULL)
		rc = errmsg(err, errlen, SHMF_E_INVAL, "%s: contains a NUL byte (not a text file)", path);
out:
	close(fd);
	if (rc < 0) {
		free(*text);
		*text = NULL;
	}
	return rc;
}

int config_load(struct config *c, const char *path, char *err, size_t errlen)
{
	char *text = NULL;
	int rc = read_text(path, &text, err, errlen);
	if (rc == 0)
		rc = config_parse(c, text, path, err, errlen);
	free(text);
	return rc;
}
