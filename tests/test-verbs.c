/*
 * test-verbs.c - the verb table (shmd/verbs.c) and the dispatcher that
 * reads it: every row consistent with the rules of docs/design.md (which
 * verbs are administration, which name files and so never run over TCP),
 * and the dispatcher and COMMAND answering from the row, for every verb;
 * COMMAND DOCS' syntax column agreeing with the arity columns.
 *
 * The dispatcher's refusals (arity, AUTH, TCP, an invalid filter name)
 * must come before a handler touches a filter, so these requests run
 * with no registry at all.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shmd/verbs/command-docs.h"
#include "shmd/verbs/dispatch.h"
#include "shmd/resp/reply.h"
#include "shmd/session/roles.h"
#include "shmd/session/session.h"
#include "shmd/verbs/verbs.h"

#define MAX_ARGS 8

/* Run one request of @p argc words in session @p s; returns the reply
 * (caller frees). */
static char *run(struct session *s, int argc, const char *const *words)
{
	char *argv[MAX_ARGS];
	size_t lens[MAX_ARGS];
	struct reply out = { 0 };
	assert_true(argc <= MAX_ARGS);
	for (int i = 0; i < argc; i++) {
		argv[i] = (char *)words[i];
		lens[i] = strlen(words[i]);
	}
	struct request req = { .argc = argc, .argv = argv, .lens = lens };
	dispatch_request(s, NULL, &req, &out);
	char *r = calloc(1, out.len + 1);
	if (out.len > 0)
		memcpy(r, out.data, out.len);
	reply_free(&out);
	return r;
}

static void expect(char *got, const char *want, const char *verb)
{
	if (strcmp(got, want) != 0)
		fail_msg("%s: reply\n  got:  %s\n  want: %s", verb, got, want);
	free(got);
}

/* The verb's name, upper case, as a client sends it. */
static void upper(const char *name, char *buf, size_t len)
{
	size_t i;
	for (i = 0; name[i] != '\0' && i + 1 < len; i++)
		buf[i] = (char)toupper((unsigned char)name[i]);
	buf[i] = '\0';
}

/* The words a client sends for row @p v, upper case, into @p words (with
 * room in @p buf): its verb, and for a subcommand's row ("client|kill")
 * the subcommand too. How many: 1 or 2. */
static int row_words(const struct verb *v, char buf[64], const char **words)
{
	char *bar;
	upper(v->name, buf, 64);
	words[0] = buf;
	if ((bar = strchr(buf, '|')) == NULL)
		return 1;
	*bar = '\0';
	words[1] = bar + 1;
	return 2;
}

/* Whether row @p v is a subcommand's. */
static int is_sub(const struct verb *v)
{
	return strchr(v->name, '|') != NULL;
}

/* Every row: one of CONN, READONLY and WRITES; a lower-case name found in
 * any case and only at its own length; an arity that a request can meet;
 * a key inside it; a handler and a one-line summary. */
static void test_rows_are_well_formed(void **state)
{
	(void)state;
	const struct verb *v, *w;
	for (size_t i = 0; (v = verbs_at(i)) != NULL; i++) {
		char up[32], longer[40];
		unsigned kind = v->flags & (VERB_CONN | VERB_READONLY | VERB_WRITES);
		if (kind != VERB_CONN && kind != VERB_READONLY && kind != VERB_WRITES)
			fail_msg("%s: must be exactly one of CONN, READONLY, WRITES", v->name);
		for (const char *p = v->name; *p; p++)
			if (isupper((unsigned char)*p))
				fail_msg("%s: names are lower case, as COMMAND shows them", v->name);
		upper(v->name, up, sizeof(up));
		assert_ptr_equal(verbs_find(up, strlen(up)), v);
		assert_ptr_equal(verbs_find(v->name, strlen(v->name)), v);
		/* A NUL byte inside the verb makes it another verb. */
		snprintf(longer, sizeof(longer), "%s", v->name);
		assert_null(verbs_find(longer, strlen(longer) + 1));
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(verbs_at(j)->name, v->name);
		assert_true(v->min_args >= 1);
		assert_true(v->max_args == -1 || v->max_args >= v->min_args);
		assert_true(v->key >= 0 && (v->key == 0 || v->min_args > v->key));
		assert_non_null(v->run);
		assert_non_null(v->summary);
		assert_true(strlen(v->summary) > 10 && strchr(v->summary, '\n') == NULL);
		if ((v->flags & VERB_NOAUTH) && !(v->flags & VERB_CONN))
			fail_msg("%s: only connection verbs may run before AUTH", v->name);
		if (is_sub(v)) {
			const char *bar = strchr(v->name, '|');
			char parent[32];
			snprintf(parent, sizeof(parent), "%.*s", (int)(bar - v->name), v->name);
			if (verbs_find(parent, strlen(parent)) == NULL || v->min_args < 2 || (v->flags & VERB_NOAUTH))
				fail_msg("%s: a subcommand's row needs its verb's row, 2 words at least, and AUTH",
					 v->name);
		}
	}
	assert_true(dispatch_rows() <= 512);
	assert_null(verbs_find("BF", 2));
	assert_null(verbs_find("BF.ADDX", 7));
	assert_non_null(w = verbs_find("Bf.Add", 6));
	assert_string_equal(w->name, "bf.add");
}

/* The design's rules: every row has exactly one role; administration is
 * creating, dropping, swapping, restoring, snapshotting, rotating,
 * loading, merging, changing modes and sizes of filters, reloading the
 * daemon, and the server's own administration (closing another's
 * connection, resetting statistics, CONFIG SET, reading and emptying the
 * slow log, which holds other clients' arguments); the data verbs are
 * for writers; the rest for readers. The verbs refused over TCP are
 * exactly those that name files on the daemon's host and the one that
 * reloads it; filter verbs name their filter first. */
static void test_flags_follow_the_design(void **state)
{
	(void)state;
	static const char *const admin[] = { "bf.reserve",       "cf.reserve",   "shmf.drop",    "shmf.snapshot",
					     "shmf.swap",        "shmf.restore", "shmf.rotate",  "bf.loadchunk",
					     "cf.loadchunk",     "shmf.merge",   "shmf.chmod",   "shmf.resize",
					     "shmf.reload",      "del",          "unlink",       "flushall",
					     "flushdb",          "expire",       "pexpire",      "expireat",
					     "pexpireat",        "persist",      "client|kill",  "config|set",
					     "config|resetstat", "slowlog|get",  "slowlog|reset" };
	/* Administration of the server, not of filters or files: connection rows. */
	static const char *const server_admin[] = { "client|kill", "config|set", "config|resetstat", "slowlog|get",
						    "slowlog|reset" };
	static const char *const writer[] = { "bf.add",    "bf.madd",     "bf.insert", "cf.add",     "cf.addnx",
					      "cf.insert", "cf.insertnx", "cf.del",    "cf.compact", "shmf.addcapped" };
	static const char *const creates[] = { "bf.reserve", "cf.reserve" };
	/* The keyspace verbs that name a filter first (Redis' keys). */
	static const char *const keyed[] = { "del",     "unlink",     "exists",      "type",        "expire",
					     "pexpire", "expireat",   "pexpireat",   "persist",     "ttl",
					     "pttl",    "expiretime", "pexpiretime", "memory|usage" };
	static const char *const files[] = { "shmf.snapshot", "shmf.swap", "shmf.restore", "shmf.merge" };
	const struct verb *v;
	for (size_t i = 0; (v = verbs_at(i)) != NULL; i++) {
		int is_admin = 0, is_writer = 0, names_file = 0, is_create = 0, is_server_admin = 0;
		for (size_t j = 0; j < sizeof(server_admin) / sizeof(server_admin[0]); j++)
			is_server_admin |= !strcmp(v->name, server_admin[j]);
		int daemon_admin = !strcmp(v->name, "shmf.reload");
		for (size_t j = 0; j < sizeof(admin) / sizeof(admin[0]); j++)
			is_admin |= !strcmp(v->name, admin[j]);
		for (size_t j = 0; j < sizeof(writer) / sizeof(writer[0]); j++)
			is_writer |= !strcmp(v->name, writer[j]);
		for (size_t j = 0; j < sizeof(creates) / sizeof(creates[0]); j++)
			is_create |= !strcmp(v->name, creates[j]);
		for (size_t j = 0; j < sizeof(files) / sizeof(files[0]); j++)
			names_file |= !strcmp(v->name, files[j]);
		unsigned roles = v->flags & (VERB_ROLE_READER | VERB_ROLE_WRITER | VERB_ROLE_ADMIN);
		if (roles != VERB_ROLE_READER && roles != VERB_ROLE_WRITER && roles != VERB_ROLE_ADMIN)
			fail_msg("%s: must have exactly one role (VERB_ROLE_READER, _WRITER or _ADMIN)", v->name);
		int want = is_admin ? ROLE_ADMIN : is_writer ? ROLE_WRITER : ROLE_READER;
		if (verb_role(v) != want)
			fail_msg("%s: role %s, the design says %s", v->name, role_name(verb_role(v)), role_name(want));
		if (!!(v->flags & VERB_CREATES) != is_create)
			fail_msg("%s: VERB_CREATES should be %s", v->name, is_create ? "set" : "clear");
		if (v->syntax == NULL || v->group == NULL || v->summary == NULL ||
		    (v->key != 0) != (v->syntax[0] == 'k' && !strncmp(v->syntax, "key", 3)))
			fail_msg("%s: no COMMAND DOCS syntax, group or summary, or its first argument is not its key",
				 v->name);
		if (v->key == 0 && v->last_key != 0)
			fail_msg("%s: a last key without a first", v->name);
		if (!!(v->flags & VERB_NAMES_FILE) != names_file)
			fail_msg("%s: VERB_NAMES_FILE should be %s", v->name, names_file ? "set" : "clear");
		if (((v->flags & VERB_TCP_OK) == 0) != (names_file || daemon_admin))
			fail_msg("%s: refused over TCP if and only if it names a file or reloads the daemon", v->name);
		if (verb_role(v) > ROLE_READER && !(v->flags & VERB_WRITES) && !is_server_admin)
			fail_msg("%s: writers and admins change filters or files", v->name);
		if (is_server_admin && !(v->flags & VERB_CONN))
			fail_msg("%s: the server's administration acts on no filter: a connection row", v->name);
		if ((v->flags & VERB_WRITES) && verb_role(v) == ROLE_READER)
			fail_msg("%s: a verb that writes is not for readers", v->name);
		int filter_verb = strchr(v->name, '.') != NULL;
		if (filter_verb && (v->flags & VERB_CONN))
			fail_msg("%s: a filter verb is not a connection verb", v->name);
		int is_keyed = 0;
		for (size_t j = 0; j < sizeof(keyed) / sizeof(keyed[0]); j++)
			is_keyed |= !strcmp(v->name, keyed[j]);
		/* shmf.replication names a filter optionally: no key. */
		int want_key = (filter_verb && strcmp(v->name, "shmf.list") != 0 &&
				strcmp(v->name, "shmf.replication") != 0 && !daemon_admin) ||
			       is_keyed;
		if (v->key != (want_key && is_sub(v) ? 2 : want_key)) /* a subcommand's key follows it */
			fail_msg("%s: key %d", v->name, v->key);
	}
}

/* The dispatcher enforces the role column for every verb, before a
 * handler runs (there is no registry here): a reader (a peer in no
 * configured group) is refused every writer and admin verb, a writer (a
 * member of the client group) every admin verb, each -NOPERM naming the
 * verb, the role it needs and the one the connection has; with
 * writer_create = yes, a writer passes the role check of the verbs that
 * create. */
static void test_roles_from_the_row(void **state)
{
	(void)state;
	static struct roles_config rc;
	roles_config_defaults(&rc);
	rc.client_gid = 4242;
	struct server_view view = { .roles = &rc };
	struct session s;
	const struct verb *v;
	const char *words[MAX_ARGS];
	char up[64], want[256];
	for (int have = ROLE_READER; have <= ROLE_WRITER; have++) {
		session_init(&s, 1, SESSION_UNIX, &view);
		s.peer = (struct fscred){ .set = 1, .uid = 54321, .gid = have == ROLE_WRITER ? 4242 : 54321 };
		assert_int_equal(roles_connection(&s), have);
		for (size_t i = 0; (v = verbs_at(i)) != NULL; i++) {
			if (verb_role(v) <= have)
				continue;
			for (int j = row_words(v, up, words); j < MAX_ARGS; j++)
				words[j] = j == 2 && (v->flags & VERB_NAMES_FILE) ? "/tmp/x" : "f";
			snprintf(want, sizeof(want), "-NOPERM %s needs the %s role; this connection (uid 54321 ",
				 v->name, role_name(verb_role(v)));
			char *r = run(&s, v->min_args, words);
			if (strncmp(r, want, strlen(want)) != 0 || strstr(r, role_name(have)) == NULL)
				fail_msg("%s as a %s: %s", v->name, role_name(have), r);
			free(r);
		}
		session_free(&s);
	}
	/* writer_create: the creating verbs need only a writer (the quota is
	 * checked where the filter is made); the other admin verbs still admin. */
	rc.writer_create = 1;
	session_init(&s, 1, SESSION_UNIX, &view);
	s.peer = (struct fscred){ .set = 1, .uid = 54321, .gid = 4242 };
	for (size_t i = 0; (v = verbs_at(i)) != NULL; i++) {
		if (verb_role(v) != ROLE_ADMIN)
			continue;
		for (int j = row_words(v, up, words); j < MAX_ARGS; j++)
			words[j] = j == 1 ? "no/such name" : j == 2 && (v->flags & VERB_NAMES_FILE) ? "/tmp/x" : "1";
		char *r = run(&s, v->min_args, words);
		int refused = strncmp(r, "-NOPERM", 7) == 0;
		if (refused == !!(v->flags & VERB_CREATES))
			fail_msg("%s as a writer with writer_create = yes: %s", v->name, r);
		free(r);
	}
	session_free(&s);
}

/* One argument too few and one too many answer Redis' arity error, for
 * every verb, whatever its handler would do. */
static void test_arity_from_the_row(void **state)
{
	(void)state;
	struct server_view view = { 0 };
	struct session s;
	const struct verb *v;
	const char *words[MAX_ARGS];
	char want[128], up[64];
	session_init(&s, 1, SESSION_UNIX, &view);
	for (size_t i = 0; (v = verbs_at(i)) != NULL; i++) {
		int nw = row_words(v, up, words);
		for (int j = nw; j < MAX_ARGS; j++)
			words[j] = "x";
		snprintf(want, sizeof(want), "-ERR wrong number of arguments for '%s' command\r\n", v->name);
		/* One word fewer than a subcommand's row: its verb's own arity error. */
		if (v->min_args > nw)
			expect(run(&s, v->min_args - 1, words), want, v->name);
		if (v->max_args >= 0 && v->max_args < MAX_ARGS)
			expect(run(&s, v->max_args + 1, words), want, v->name);
	}
	expect(run(&s, 1, (const char *[]){ "NOSUCH" }), "-ERR unknown command 'NOSUCH'\r\n", "NOSUCH");
	session_free(&s);
}

/* A TCP client with a password: before AUTH only the NOAUTH verbs run
 * (the others, and unknown verbs, answer -NOAUTH); after it, the verbs
 * that name files are refused, before their arity is looked at. */
static void test_tcp_rules_from_the_row(void **state)
{
	(void)state;
	struct server_view view = { .requirepass = "pw" };
	struct session s;
	const struct verb *v;
	char up[32], want[256];
	session_init(&s, 1, SESSION_TCP, &view);
	assert_false(s.authed);
	for (size_t i = 0; (v = verbs_at(i)) != NULL; i++) {
		if (v->flags & VERB_NOAUTH)
			continue;
		upper(v->name, up, sizeof(up));
		expect(run(&s, 1, (const char *[]){ up }), "-NOAUTH Authentication required.\r\n", v->name);
	}
	expect(run(&s, 1, (const char *[]){ "NOSUCH" }), "-NOAUTH Authentication required.\r\n", "NOSUCH");
	expect(run(&s, 2, (const char *[]){ "AUTH", "pw" }), "+OK\r\n", "AUTH");
	for (size_t i = 0; (v = verbs_at(i)) != NULL; i++) {
		if (v->flags & VERB_TCP_OK)
			continue;
		upper(v->name, up, sizeof(up));
		snprintf(want, sizeof(want),
			 "-ERR %s is refused over TCP: it %s, which a network client may not (use the unix socket)\r\n",
			 up,
			 v->flags & VERB_NAMES_FILE ? "names a file on the daemon's host"
						    : "administers the daemon itself");
		expect(run(&s, 1, (const char *[]){ up }), want, v->name);
	}
	session_free(&s);
}

/* The verbs that read a filter answer for an invalid name what they answer
 * for a missing filter, as RedisBloom and Redis do for a key that is not
 * there: no filter can have that name. */
static const char *const reads_as_missing[] = { "bf.exists",  "bf.mexists", "bf.card",     "bf.info",     "cf.exists",
						"cf.mexists", "cf.count",   "cf.info",     "cf.del",      "cf.compact",
						"del",        "unlink",     "exists",      "type",        "expire",
						"pexpire",    "expireat",   "pexpireat",   "persist",     "ttl",
						"pttl",       "expiretime", "pexpiretime", "memory|usage" };

static int read_as_missing(const char *verb)
{
	for (size_t j = 0; j < sizeof(reads_as_missing) / sizeof(reads_as_missing[0]); j++)
		if (!strcmp(verb, reads_as_missing[j]))
			return 1;
	return 0;
}

/* Every other verb that names a filter refuses an invalid name, checked
 * once by the dispatcher, before its handler reaches the registry (there
 * is none). */
static void test_invalid_names_refused_before_the_registry(void **state)
{
	(void)state;
	struct server_view view = { 0 };
	struct session s;
	const struct verb *v;
	const char *words[MAX_ARGS];
	char up[64];
	session_init(&s, 1, SESSION_UNIX, &view);
	s.peer.uid = geteuid(); /* shmd's own uid: an admin */
	for (size_t i = 0; (v = verbs_at(i)) != NULL; i++) {
		if (v->key == 0)
			continue;
		for (int j = row_words(v, up, words); j < MAX_ARGS; j++)
			words[j] = j == v->key ? "no/such name" : "1";
		if (v->flags & VERB_NAMES_FILE)
			words[2] = "/tmp/x";
		char *r = run(&s, v->min_args, words);
		if (read_as_missing(v->name)) {
			if (strcmp(r, ":0\r\n") != 0 && strcmp(r, ":-2\r\n") != 0 && strcmp(r, "+none\r\n") != 0 &&
			    strcmp(r, "$-1\r\n") != 0 && strcmp(r, "-ERR not found\r\n") != 0 &&
			    strcmp(r, "-Not found\r\n") != 0 && strncmp(r, "*1\r\n:0\r\n", 8) != 0)
				fail_msg("%s: %s (want what a missing filter gets)", v->name, r);
		} else if (strncmp(r, "-ERR invalid filter name 'no/such name': ", 41) != 0) {
			fail_msg("%s: %s", v->name, r);
		}
		free(r);
	}
	session_free(&s);
}

/* COMMAND describes each verb from its row: name, arity (Redis style:
 * negative for at least), flags and key; a verb with subcommand rows has
 * their entries as its last element, and COMMAND COUNT counts the verbs,
 * not the subcommands. */
static void test_command_reads_the_table(void **state)
{
	(void)state;
	struct server_view view = { 0 };
	struct session s;
	const struct verb *v;
	size_t n = 0;
	char want[512];
	session_init(&s, 1, SESSION_UNIX, &view);
	for (size_t i = 0; (v = verbs_at(i)) != NULL; i++) {
		int arity = v->max_args == v->min_args ? v->min_args : -v->min_args;
		const char *flags = v->flags & VERB_CONN
					    ? (v->flags & VERB_NOAUTH
						       ? "*4\r\n+loading\r\n+stale\r\n+fast\r\n+no_auth\r\n"
						       : "*3\r\n+loading\r\n+stale\r\n+fast\r\n")
				    : v->flags & VERB_READONLY ? "*2\r\n+readonly\r\n+fast\r\n"
							       : "*2\r\n+write\r\n+denyoom\r\n";
		/* The last element: its subcommands' entries (Redis 7's nesting). */
		size_t subs = 0, len = strlen(v->name);
		for (size_t j = 0; verbs_at(j) != NULL; j++)
			subs += !strncmp(verbs_at(j)->name, v->name, len) && verbs_at(j)->name[len] == '|';
		snprintf(want, sizeof(want),
			 "*1\r\n*10\r\n$%zu\r\n%s\r\n:%d\r\n%s:%d\r\n:%d\r\n:%d\r\n*0\r\n*0\r\n*0\r\n*%zu\r\n",
			 strlen(v->name), v->name, arity, flags, v->key, v->key != 0 && v->last_key < 0 ? -1 : v->key,
			 v->key != 0, subs);
		char *r = run(&s, 3, (const char *[]){ "COMMAND", "INFO", v->name });
		if (subs == 0)
			expect(r, want, v->name);
		else if (strncmp(r, want, strlen(want)) != 0 || strstr(r, "\r\n*10\r\n$") == NULL)
			fail_msg("%s: got %.300s, want %s and its subcommands' entries", v->name, r, want);
		if (subs != 0)
			free(r);
		n += !is_sub(v);
	}
	snprintf(want, sizeof(want), ":%zu\r\n", n);
	expect(run(&s, 2, (const char *[]){ "COMMAND", "COUNT" }), want, "COMMAND COUNT");
	session_free(&s);
}

/* COMMAND DOCS' syntax column, for every row: it parses, and the words it
 * allows are those the arity columns allow (a syntax with no limit only
 * where the row has none). A few syntaxes outside the table: the malformed
 * ones refused, nested and repeated groups counted, and one entry replied
 * byte for byte in the shape Redis documents (a oneof with its pure-tokens
 * under "arguments", a repeated token-introduced argument). */
static void test_docs_syntax_from_the_row(void **state)
{
	(void)state;
	const struct verb *v;
	int lo, hi;
	for (size_t i = 0; (v = verbs_at(i)) != NULL; i++) {
		if (command_docs_arity(v, &lo, &hi) != 0)
			fail_msg("%s: syntax \"%s\" is malformed", v->name, v->syntax);
		if (lo != v->min_args || (v->max_args >= 0 && hi != v->max_args) || (hi < 0 && v->max_args >= 0))
			fail_msg("%s: syntax \"%s\" takes %d to %d words, the row %d to %d", v->name, v->syntax, lo, hi,
				 v->min_args, v->max_args);
	}
	static const char *const bad[] = { "key [UNCLOSED", "key name:enum", "key []",        "key ]",
					   "key [A|lower]", "key :string",   "[[[[[deep]]]]]" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct verb b = { .name = "x.bad", .syntax = bad[i] };
		if (command_docs_arity(&b, &lo, &hi) == 0)
			fail_msg("syntax \"%s\" accepted", bad[i]);
	}
	static const struct {
		const char *syntax;
		int lo, hi;
	} counted[] = {
		{ "", 1, 1 },
		{ "key [A|B|C]", 2, 3 },
		{ "[protover:integer [AUTH u:string p:string] [SETNAME n:string]]", 1, 7 },
		{ "key [GET pattern:pattern]...", 2, -1 },
		{ "key ITEMS item:string...", 4, -1 },
		{ "[a:integer b:integer]", 1, 3 },
	};
	for (size_t i = 0; i < sizeof(counted) / sizeof(counted[0]); i++) {
		struct verb c = { .name = "x.count", .syntax = counted[i].syntax };
		assert_int_equal(command_docs_arity(&c, &lo, &hi), 0);
		if (lo != counted[i].lo || hi != counted[i].hi)
			fail_msg("syntax \"%s\": %d to %d words, want %d to %d", counted[i].syntax, lo, hi,
				 counted[i].lo, counted[i].hi);
	}
	struct verb x = { .name = "x.y", .group = "x", .summary = "S.", .syntax = "key [A|B] [GET p:pattern]..." };
	struct reply r = { .proto = 3 };
	command_docs_reply(&r, &x, 0);
	const char *want =
		"%5\r\n$7\r\nsummary\r\n$2\r\nS.\r\n$5\r\nsince\r\n$5\r\n1.0.0\r\n"
		"$5\r\ngroup\r\n$6\r\nmodule\r\n$6\r\nmodule\r\n$1\r\nx\r\n$9\r\narguments\r\n*3\r\n"
		"%2\r\n$4\r\nname\r\n$3\r\nkey\r\n$4\r\ntype\r\n$3\r\nkey\r\n"
		"%4\r\n$4\r\nname\r\n$3\r\na-b\r\n$4\r\ntype\r\n$5\r\noneof\r\n"
		"$5\r\nflags\r\n~1\r\n+optional\r\n$9\r\narguments\r\n*2\r\n"
		"%3\r\n$4\r\nname\r\n$1\r\na\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$1\r\nA\r\n"
		"%3\r\n$4\r\nname\r\n$1\r\nb\r\n$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$1\r\nB\r\n"
		"%4\r\n$4\r\nname\r\n$1\r\np\r\n$4\r\ntype\r\n$7\r\npattern\r\n$5\r\ntoken\r\n$3\r\nGET\r\n"
		"$5\r\nflags\r\n~3\r\n+optional\r\n+multiple\r\n+multiple_token\r\n";
	char *got = calloc(1, r.len + 1);
	memcpy(got, r.data, r.len);
	reply_free(&r);
	expect(got, want, "COMMAND DOCS of \"key [A|B] [GET p:pattern]...\"");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_are_well_formed),
		cmocka_unit_test(test_flags_follow_the_design),
		cmocka_unit_test(test_roles_from_the_row),
		cmocka_unit_test(test_arity_from_the_row),
		cmocka_unit_test(test_tcp_rules_from_the_row),
		cmocka_unit_test(test_invalid_names_refused_before_the_registry),
		cmocka_unit_test(test_command_reads_the_table),
		cmocka_unit_test(test_docs_syntax_from_the_row),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
