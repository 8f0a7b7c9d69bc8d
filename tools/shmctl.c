/*
 * shmctl - the command-line tool of shmfilter: talks to shmd over its
 * control socket (docs/protocol.md).
 *
 * Exit status: 0 success (for check: every key present), 1 check found a
 * key absent, 2 any error (bad arguments, no daemon, an error reply).
 */
#include <errno.h>
#include <getopt.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "offline.h"
#include "pull.h"
#include "rundir.h"
#include "shmf.h"

#define EXIT_ABSENT 1
#define EXIT_ERROR  2
/* Keys per batch (one BF.MADD / BF.MEXISTS / CF.INSERT / CF.MEXISTS request,
 * or one pipeline of single-key requests). */
#define CHUNK 10000

static const char *prog = "shmctl";
/* The connection, closed at exit (also on the error paths that exit). */
static redisContext *conn;

static const char *instance_name = "default", *socket_given;
static redisContext *connect_daemon(const char *instance, const char *socket_path);

/* The connection, made on the first request: argument errors are found
 * before, whether a daemon runs or not. */
static redisContext *daemon_conn(void)
{
	if (conn == NULL)
		conn = connect_daemon(instance_name, socket_given);
	return conn;
}

static void close_conn(void)
{
	if (conn != NULL)
		redisFree(conn);
	conn = NULL;
}

static void usage(FILE *to)
{
	fprintf(to,
		"usage: shmctl [--instance NAME | --socket PATH] VERB [ARGS]\n"
		"  create FILTER --capacity N --fpr P [--type bloom|cuckoo] [--max-kicks N] [--mode OCTAL]\n"
		"         [--window 10m [--generations N]]                 a time window of N generations (default 2)\n"
		"         [--replicate]                                 keep it in step with the fleet ([replication])\n"
		"                                                      create a filter (Bloom unless --type)\n"
		"  list [--json]                                       list the filters\n"
		"  info FILTER [--json]                                describe a filter\n"
		"  add FILTER KEY... | add FILTER -                   add keys (stdin: one per line)\n"
		"  check [-q] FILTER KEY... | check [-q] FILTER -     check keys; exit 0 all present, 1 some absent\n"
		"  del [-q] FILTER KEY... | -                         cuckoo: remove one copy of each key;\n"
		"                                                      exit 0 all found, 1 some not found\n"
		"  count FILTER KEY... | -                             cuckoo: copies of each key\n"
		"  add-capped [-q] --cap N FILTER KEY... | -          cuckoo: add a copy of each key below N copies;\n"
		"                                                      exit 0 all added, 1 some at the cap\n"
		"  drop FILTER                                         delete a filter and its segment\n"
		"  rotate FILTER                                       time window: start a new generation now\n"
		"  snapshot [--force] FILTER FILE                      write a crash-safe snapshot file (--force: over\n"
		"                                                      a file that is not a snapshot)\n"
		"  swap FILTER FILE                                    replace a live filter with a snapshot file\n"
		"  restore FILTER FILE                                 the same, creating the filter if it is missing\n"
		"  inspect FILE [--json]                               a snapshot's header and checksum verdict (offline)\n"
		"  build --capacity N --fpr P --from FILE|- -o OUT [--type bloom|cuckoo] [--max-kicks N] [--name NAME]\n"
		"                                                      train a filter from a key list into a snapshot\n"
		"                                                      file (offline; progress bar on a terminal)\n"
		"  replication [--json] [FILTER]                       fleet: state, cursor, lag, counters and nodes\n"
		"                                                      of the replicated filters\n"
		"  ping                                                is the daemon answering?\n"
		"  pull FILTER --from HOST:PORT [--password P] [--user U] [--as NAME]\n"
		"                                                      copy a live filter from a peer shmd's TCP\n"
		"                                                      listener, with its stream cursor\n"
		"  merge FILTER FILE                                   OR a Bloom snapshot of the same shape into a filter\n"
		"Options:\n"
		"  -i, --instance NAME  instance (default 'default'): socket <runtime dir>/NAME.sock\n"
		"  -s, --socket PATH    control socket path (overrides --instance)\n"
		"Blank lines on stdin are skipped; a trailing CR is removed. Errors: exit 2.\n");
}

static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die_usage(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	usage(stderr);
	exit(EXIT_ERROR);
}

static redisContext *connect_daemon(const char *instance, const char *socket_path)
{
	char path[4096];
	if (socket_path == NULL) {
		int rc = shmf_instance_path(instance, ".sock", path, sizeof(path));
		if (rc < 0) {
			fprintf(stderr, "%s: instance '%s': %s\n", prog, instance, shmf_strerror(rc));
			exit(EXIT_ERROR);
		}
		socket_path = path;
	}
	struct timeval tv = { .tv_sec = 5 };
	redisContext *c = redisConnectUnixWithTimeout(socket_path, tv);
	if (c == NULL || c->err) {
		fprintf(stderr, "%s: cannot connect to %s: %s (is shmd running for instance '%s'?)\n", prog,
			socket_path, c ? c->errstr : "out of memory", instance);
		if (c != NULL)
			redisFree(c);
		exit(EXIT_ERROR);
	}
	struct timeval op = { .tv_sec = 120 };
	redisSetTimeout(c, op);
	return c;
}

/* The next reply; exits on transport errors and on error replies (naming
 * the verb). */
static redisReply *take_reply(const char *what)
{
	redisContext *c = daemon_conn();
	void *p = NULL;
	if (redisGetReply(c, &p) != REDIS_OK || p == NULL) {
		fprintf(stderr, "%s: %s: %s\n", prog, what, c->errstr[0] ? c->errstr : "no reply");
		exit(EXIT_ERROR);
	}
	redisReply *r = p;
	if (r->type == REDIS_REPLY_ERROR) {
		const char *msg = r->str;
		if (!strncmp(msg, "ERR ", 4))
			msg += 4;
		fprintf(stderr, "%s: %s: %s\n", prog, what, msg);
		freeReplyObject(r);
		exit(EXIT_ERROR);
	}
	return r;
}

/* Queue one request (sent with the next take_reply()). */
static void send_request(const char *what, int argc, const char **argv, const size_t *lens)
{
	redisContext *c = daemon_conn();
	if (redisAppendCommandArgv(c, argc, argv, lens) != REDIS_OK) {
		fprintf(stderr, "%s: %s: %s\n", prog, what, c->errstr[0] ? c->errstr : "out of memory");
		exit(EXIT_ERROR);
	}
}

/* One request, one reply. */
static redisReply *call(const char *what, int argc, const char **argv, const size_t *lens)
{
	send_request(what, argc, argv, lens);
	return take_reply(what);
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static int is_text_field(const char *field)
{
	return !strcmp(field, "name") || !strcmp(field, "type") || !strcmp(field, "data_file") ||
	       !strcmp(field, "mode");
}

/* Print a SHMF.INFO reply (field, value, ...) as text or as a JSON object. */
static void print_info(const redisReply *r, int json)
{
	if (json)
		putchar('{');
	for (size_t i = 0; i + 1 < r->elements; i += 2) {
		const redisReply *f = r->element[i], *v = r->element[i + 1];
		char value[128];
		if (v->type == REDIS_REPLY_INTEGER)
			snprintf(value, sizeof(value), "%lld", v->integer);
		else if (v->type == REDIS_REPLY_STRING || v->type == REDIS_REPLY_STATUS)
			snprintf(value, sizeof(value), "%s", v->str);
		else
			snprintf(value, sizeof(value), "null");
		if (json) {
			printf("%s", i ? ", " : "");
			json_string(f->str);
			printf(": ");
			if (is_text_field(f->str))
				json_string(value);
			else
				printf("%s", value);
		} else {
			printf("%-14s %s\n", f->str, value);
		}
	}
	if (json)
		printf("}");
}

static int verb_info(int argc, char **argv, int json)
{
	if (argc != 2)
		die_usage("info takes one filter name");
	const char *req[] = { "SHMF.INFO", argv[1] };
	redisReply *r = call("info", 2, req, NULL);
	print_info(r, json);
	if (json)
		printf("\n");
	freeReplyObject(r);
	return 0;
}

static int verb_list(int argc, char **argv, int json)
{
	(void)argv;
	if (argc != 1)
		die_usage("list takes no arguments");
	const char *req[] = { "SHMF.LIST" };
	redisReply *r = call("list", 1, req, NULL);
	if (json) {
		/* All the SHMF.INFO requests in one round trip. */
		for (size_t i = 0; i < r->elements; i++) {
			const char *ireq[] = { "SHMF.INFO", r->element[i]->str };
			send_request("list", 2, ireq, NULL);
		}
		printf("[");
		for (size_t i = 0; i < r->elements; i++) {
			redisReply *info = take_reply("list");
			printf("%s", i ? ", " : "");
			print_info(info, 1);
			freeReplyObject(info);
		}
		printf("]\n");
	} else {
		for (size_t i = 0; i < r->elements; i++)
			printf("%s\n", r->element[i]->str);
	}
	freeReplyObject(r);
	return 0;
}

static int verb_create(int argc, char **argv, int json)
{
	(void)json;
	const char *capacity = NULL, *fpr = NULL, *mode = NULL, *type = "bloom", *name = NULL, *kicks = NULL;
	const char *window = NULL, *gens = NULL;
	int replicate = 0;
	for (int i = 1; i < argc; i++) {
		const char **slot = NULL;
		if (!strcmp(argv[i], "--replicate")) {
			replicate = 1;
			continue;
		}
		if (!strcmp(argv[i], "--capacity"))
			slot = &capacity;
		else if (!strcmp(argv[i], "--fpr"))
			slot = &fpr;
		else if (!strcmp(argv[i], "--mode"))
			slot = &mode;
		else if (!strcmp(argv[i], "--type"))
			slot = &type;
		else if (!strcmp(argv[i], "--max-kicks"))
			slot = &kicks;
		else if (!strcmp(argv[i], "--window"))
			slot = &window;
		else if (!strcmp(argv[i], "--generations"))
			slot = &gens;
		if (slot != NULL) {
			if (i + 1 >= argc)
				die_usage("create: %s needs a value", argv[i]);
			*slot = argv[++i];
		} else if (argv[i][0] == '-' && argv[i][1] == '-') {
			die_usage("create: unknown option '%s'", argv[i]);
		} else if (name == NULL) {
			name = argv[i];
		} else {
			die_usage("create: unexpected argument '%s'", argv[i]);
		}
	}
	if (name == NULL || capacity == NULL || fpr == NULL)
		die_usage("create needs FILTER, --capacity N and --fpr P");
	const char *req[16];
	int n = 0;
	if (!strcmp(type, "bloom")) {
		if (kicks != NULL)
			die_usage("create: --max-kicks applies to --type cuckoo only");
		req[n++] = "BF.RESERVE";
		req[n++] = name;
		req[n++] = fpr;
		req[n++] = capacity;
	} else if (!strcmp(type, "cuckoo")) {
		req[n++] = "CF.RESERVE";
		req[n++] = name;
		req[n++] = capacity;
		req[n++] = "ERROR";
		req[n++] = fpr;
		if (kicks != NULL) {
			req[n++] = "MAXITERATIONS";
			req[n++] = kicks;
		}
	} else {
		die_usage("create: unknown --type '%s' (bloom or cuckoo)", type);
	}
	if (mode != NULL) {
		req[n++] = "MODE";
		req[n++] = mode;
	}
	if (window != NULL) {
		req[n++] = "WINDOW";
		req[n++] = window;
	}
	if (gens != NULL) {
		req[n++] = "GENERATIONS";
		req[n++] = gens;
	}
	if (replicate)
		req[n++] = "REPLICATE";
	redisReply *r = call("create", n, req, NULL);
	freeReplyObject(r);
	return 0;
}

/* What a key verb does with each key. */
enum key_op { OP_ADD, OP_CHECK, OP_DEL, OP_COUNT, OP_CAPPED };

/* A key verb's state: the request prefix, the batch of keys, the tallies. */
struct keys {
	enum key_op op;
	int quiet;
	int cuckoo;        /* the filter's type decides BF.* or CF.* */
	const char *what;  /* the verb, for messages */
	const char *cap;   /* OP_CAPPED: the cap, as text */
	const char **argv; /* argv[0..head) the request prefix, then the keys */
	size_t *lens;
	int head;
	size_t n;           /* keys in this batch */
	size_t total, ones; /* keys seen, and keys whose answer was "yes" */
	int full;           /* cuckoo add: the filter filled up */
};

/* SHMF.INFO's "type" of the filter: 1 if cuckoo, 0 if Bloom. */
static int filter_is_cuckoo(const char *what, const char *filter)
{
	const char *req[] = { "SHMF.INFO", filter };
	redisReply *r = call(what, 2, req, NULL);
	int cuckoo = 0;
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2)
		if (r->element[i]->type == REDIS_REPLY_STRING && !strcmp(r->element[i]->str, "type"))
			cuckoo = r->element[i + 1]->type == REDIS_REPLY_STRING &&
				 !strcmp(r->element[i + 1]->str, "cuckoo");
	freeReplyObject(r);
	return cuckoo;
}

static void bad_reply(const struct keys *k)
{
	fprintf(stderr, "%s: %s: unexpected reply from shmd\n", prog, k->what);
	exit(EXIT_ERROR);
}

/* One key's answer: tally it and print what the verb prints. */
static void answer(struct keys *k, size_t i, const redisReply *e)
{
	if (e->type != REDIS_REPLY_INTEGER)
		bad_reply(k);
	int len = (int)k->lens[k->head + i];
	const char *key = k->argv[k->head + i];
	long long v = e->integer;
	switch (k->op) {
	case OP_ADD:
		if (v < 0)
			k->full = 1;
		else if (!k->full)
			k->ones += (size_t)(v == 1);
		break;
	case OP_CHECK:
	case OP_DEL:
		k->ones += (size_t)(v == 1);
		if (!k->quiet)
			printf("%s\t%.*s\n",
			       v == 1 ? (k->op == OP_CHECK ? "present" : "deleted")
				      : (k->op == OP_CHECK ? "absent" : "not found"),
			       len, key);
		break;
	case OP_COUNT: printf("%lld\t%.*s\n", v, len, key); break;
	case OP_CAPPED:
		k->ones += (size_t)(v < atoll(k->cap));
		if (!k->quiet)
			printf("%s\t%.*s\t%lld before\n", v < atoll(k->cap) ? "added" : "at cap", len, key, v);
		break;
	}
}

/* Send the batch: one multi-key request where the protocol has one (BF.MADD,
 * BF.MEXISTS, CF.INSERT, CF.MEXISTS), else one request per key, pipelined. */
static void run_batch(struct keys *k)
{
	if (k->n == 0)
		return;
	if (k->op == OP_ADD || k->op == OP_CHECK) {
		redisReply *r = call(k->what, k->head + (int)k->n, k->argv, k->lens);
		if (r->type != REDIS_REPLY_ARRAY || r->elements != k->n)
			bad_reply(k);
		for (size_t i = 0; i < k->n; i++)
			answer(k, i, r->element[i]);
		freeReplyObject(r);
	} else {
		for (size_t i = 0; i < k->n; i++) {
			const char *req[4] = { k->argv[0], k->argv[1], k->argv[k->head + i], k->cap };
			size_t lens[4] = { strlen(req[0]), strlen(req[1]), k->lens[k->head + i],
					   k->cap ? strlen(k->cap) : 0 };
			send_request(k->what, k->op == OP_CAPPED ? 4 : 3, req, lens);
		}
		for (size_t i = 0; i < k->n; i++) {
			redisReply *r = take_reply(k->what);
			answer(k, i, r);
			freeReplyObject(r);
		}
	}
	k->total += k->n;
	k->n = 0;
}

static void push_key(struct keys *k, const char *key, size_t len)
{
	k->argv[k->head + k->n] = key;
	k->lens[k->head + k->n] = len;
	if (++k->n == CHUNK)
		run_batch(k);
}

/* Read the keys of argv[first+1..] or, for "-", of stdin, in batches. */
static int feed_keys(struct keys *k, int argc, char **argv, int first)
{
	if (argc - first == 2 && !strcmp(argv[first + 1], "-")) {
		char **lines = calloc(CHUNK, sizeof(*lines));
		size_t *caps = calloc(CHUNK, sizeof(*caps));
		if (lines == NULL || caps == NULL) {
			fprintf(stderr, "%s: out of memory\n", prog);
			return EXIT_ERROR;
		}
		for (;;) {
			ssize_t len = getline(&lines[k->n], &caps[k->n], stdin);
			if (len < 0)
				break;
			if (len > 0 && lines[k->n][len - 1] == '\n')
				lines[k->n][--len] = '\0';
			if (len > 0 && lines[k->n][len - 1] == '\r')
				lines[k->n][--len] = '\0';
			if (len > 0)
				push_key(k, lines[k->n], (size_t)len);
		}
		if (ferror(stdin)) {
			fprintf(stderr, "%s: reading keys from stdin: %s\n", prog, strerror(errno));
			return EXIT_ERROR;
		}
		run_batch(k);
		for (size_t i = 0; i < CHUNK; i++)
			free(lines[i]);
		free(lines);
		free(caps);
	} else {
		for (int i = first + 1; i < argc; i++)
			push_key(k, argv[i], strlen(argv[i]));
		run_batch(k);
	}
	return 0;
}

static int verb_keys(int argc, char **argv, enum key_op op)
{
	struct keys k = { .op = op, .what = argv[0] };
	int first = 1;
	if ((op == OP_CHECK || op == OP_DEL || op == OP_CAPPED) && argc > first && !strcmp(argv[first], "-q")) {
		k.quiet = 1;
		first++;
	}
	if (op == OP_CAPPED) {
		if (argc - first < 2 || strcmp(argv[first], "--cap") != 0)
			die_usage("add-capped needs --cap N, a filter name and keys (or -)");
		k.cap = argv[first + 1];
		if (strspn(k.cap, "0123456789") != strlen(k.cap) || strlen(k.cap) == 0 || strlen(k.cap) > 7)
			die_usage("add-capped: --cap '%s' is not an integer from 0 to 1000000", k.cap);
		first += 2;
	}
	if (argc - first < 2)
		die_usage("%s needs a filter name and keys (or - to read them from stdin)", argv[0]);
	const char *filter = argv[first];
	k.argv = calloc(CHUNK + 4, sizeof(*k.argv));
	k.lens = calloc(CHUNK + 4, sizeof(*k.lens));
	if (k.argv == NULL || k.lens == NULL) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return EXIT_ERROR;
	}
	/* A missing daemon or filter is an error even for empty input. */
	k.cuckoo = filter_is_cuckoo(argv[0], filter);
	static const char *const bloom_verbs[] = { "BF.MADD", "BF.MEXISTS" };
	static const char *const cuckoo_verbs[] = { "CF.INSERT", "CF.MEXISTS", "CF.DEL", "CF.COUNT", "SHMF.ADDCAPPED" };
	if (!k.cuckoo && op >= OP_DEL)
		die_usage("%s: filter '%s' is a Bloom filter; %s works on cuckoo filters only", argv[0], filter,
			  argv[0]);
	k.argv[0] = k.cuckoo ? cuckoo_verbs[op] : bloom_verbs[op];
	k.argv[1] = filter;
	k.head = 2;
	if (k.cuckoo && op == OP_ADD) {
		k.argv[2] = "NOCREATE";
		k.argv[3] = "ITEMS";
		k.head = 4;
	}
	for (int i = 0; i < k.head; i++)
		k.lens[i] = strlen(k.argv[i]);
	int rc = feed_keys(&k, argc, argv, first);
	free(k.argv);
	free(k.lens);
	if (rc != 0)
		return rc;
	switch (op) {
	case OP_ADD:
		if (k.full) {
			fprintf(stderr, "%s: add: filter '%s' is full: %zu of %zu keys added\n", prog, filter, k.ones,
				k.total);
			return EXIT_ERROR;
		}
		if (k.cuckoo)
			printf("%zu keys added\n", k.total);
		else
			printf("%zu keys added, %zu new\n", k.total, k.ones);
		return 0;
	case OP_CHECK:
		if (k.quiet)
			printf("%zu of %zu keys present\n", k.ones, k.total);
		return k.ones == k.total ? 0 : EXIT_ABSENT;
	case OP_DEL:
		if (k.quiet)
			printf("%zu of %zu keys deleted\n", k.ones, k.total);
		return k.ones == k.total ? 0 : EXIT_ABSENT;
	case OP_CAPPED:
		if (k.quiet)
			printf("%zu of %zu keys added\n", k.ones, k.total);
		return k.ones == k.total ? 0 : EXIT_ABSENT;
	case OP_COUNT: break;
	}
	return 0;
}

static int verb_simple(int argc, char **argv, const char *cmd, int nargs)
{
	if (argc != nargs + 1)
		die_usage(nargs ? "%s takes one filter name" : "%s takes no arguments", argv[0]);
	const char *req[] = { cmd, argv[1] };
	redisReply *r = call(argv[0], nargs + 1, req, NULL);
	printf("%s\n", r->type == REDIS_REPLY_STATUS ? r->str : "OK");
	freeReplyObject(r);
	return 0;
}

static int verb_drop(int argc, char **argv, int json)
{
	(void)json;
	return verb_simple(argc, argv, "SHMF.DROP", 1);
}

static int verb_rotate(int argc, char **argv, int json)
{
	(void)json;
	return verb_simple(argc, argv, "SHMF.ROTATE", 1);
}

static int verb_ping(int argc, char **argv, int json)
{
	(void)json;
	return verb_simple(argc, argv, "PING", 0);
}

/* snapshot, swap, restore: FILTER FILE, the file sent as an absolute
 * path (shmd opens it with the caller's identity); @p extra (NULL: none)
 * after it. */
static int verb_file(int argc, char **argv, const char *cmd, const char *extra)
{
	char path[4096];
	if (argc != 3)
		die_usage("%s takes a filter name and a file", argv[0]);
	if (argv[2][0] == '/') {
		snprintf(path, sizeof(path), "%s", argv[2]);
	} else {
		char cwd[4096];
		if (getcwd(cwd, sizeof(cwd)) == NULL ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", cwd, argv[2]) >= sizeof(path))
			die_usage("%s: path too long", argv[2]);
	}
	const char *req[] = { cmd, argv[1], path, extra };
	redisReply *r = call(argv[0], extra != NULL ? 4 : 3, req, NULL);
	printf("%s\n", r->type == REDIS_REPLY_STATUS ? r->str : "OK");
	freeReplyObject(r);
	return 0;
}

/* snapshot [--force] FILTER FILE: --force replaces a file that is not a
 * snapshot (never a device, FIFO or directory). */
static int verb_snapshot(int argc, char **argv, int json)
{
	(void)json;
	int force = 0;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--force")) {
			force = 1;
			memmove(&argv[i], &argv[i + 1], (size_t)(argc - i - 1) * sizeof(argv[0]));
			argc--;
			break;
		}
	return verb_file(argc, argv, "SHMF.SNAPSHOT", force ? "FORCE" : NULL);
}

static int verb_swap(int argc, char **argv, int json)
{
	(void)json;
	return verb_file(argc, argv, "SHMF.SWAP", NULL);
}

static int verb_restore(int argc, char **argv, int json)
{
	(void)json;
	return verb_file(argc, argv, "SHMF.RESTORE", NULL);
}

/* One SHMF.REPLICATION filter (flat field, value pairs; nodes an array of
 * [node, ms ago, foreign]) as text lines or a JSON object. */
static void print_replication(const redisReply *r, int json)
{
	printf(json ? "{" : "");
	for (size_t i = 0; i + 1 < r->elements; i += 2) {
		const redisReply *f = r->element[i], *v = r->element[i + 1];
		if (json) {
			printf("%s", i ? ", " : "");
			json_string(f->str);
			printf(": ");
		}
		if (v->type == REDIS_REPLY_ARRAY) { /* nodes */
			if (!json && v->elements == 0)
				printf("%-23s (none heard from)\n", f->str);
			printf(json ? "[" : "");
			for (size_t j = 0; j < v->elements; j++) {
				const redisReply *n = v->element[j];
				if (n->type != REDIS_REPLY_ARRAY || n->elements != 3)
					continue;
				if (json) {
					printf("%s{\"node\": ", j ? ", " : "");
					json_string(n->element[0]->str);
					printf(", \"last_heard_ms_ago\": %lld, \"foreign_shape\": %lld}",
					       n->element[1]->integer, n->element[2]->integer);
				} else {
					printf("%-23s %s, heard from %lld ms ago%s\n", j ? "" : f->str,
					       n->element[0]->str, n->element[1]->integer,
					       n->element[2]->integer ? ", FOREIGN SHAPE (refused)" : "");
				}
			}
			printf(json ? "]" : "");
		} else if (v->type == REDIS_REPLY_INTEGER) {
			if (json)
				printf("%lld", v->integer);
			else
				printf("%-23s %lld\n", f->str, v->integer);
		} else if (json) {
			json_string(v->str ? v->str : "");
		} else if (v->str != NULL && v->str[0] != '\0') {
			printf("%-23s %s\n", f->str, v->str);
		}
	}
	printf(json ? "}" : "");
}

/* replication [--json] [FILTER]: SHMF.REPLICATION, one filter or all. */
static int verb_replication(int argc, char **argv, int json)
{
	const char *filter = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (argv[i][0] == '-' && argv[i][1] == '-')
			die_usage("replication: unknown option '%s'", argv[i]);
		else if (filter == NULL)
			filter = argv[i];
		else
			die_usage("replication takes at most one filter name");
	}
	const char *req[] = { "SHMF.REPLICATION", filter };
	redisReply *r = call("replication", filter ? 2 : 1, req, NULL);
	if (r->type != REDIS_REPLY_ARRAY) {
		fprintf(stderr, "%s: replication: unexpected reply from shmd\n", prog);
		exit(EXIT_ERROR);
	}
	if (filter != NULL) {
		print_replication(r, json);
	} else {
		printf(json ? "[" : "");
		for (size_t i = 0; i < r->elements; i++) {
			printf(json ? (i ? ", " : "") : (i ? "\n" : ""));
			print_replication(r->element[i], json);
		}
		printf(json ? "]" : "");
		if (!json && r->elements == 0)
			printf("no replicated filters\n");
	}
	if (json)
		printf("\n");
	freeReplyObject(r);
	return 0;
}

static int verb_build(int argc, char **argv, int json)
{
	(void)json;
	return shmctl_build(argc, argv);
}

/* ---- Fleets: pull and merge (issue 17) ---- */

static int verb_pull(int argc, char **argv, int json)
{
	(void)json;
	return shmctl_pull(argc, argv, daemon_conn);
}

static int verb_merge(int argc, char **argv, int json)
{
	(void)json;
	return verb_file(argc, argv, "SHMF.MERGE", NULL);
}

/* A verb runs its own function, or (run NULL) verb_keys with its key operation. */
static const struct verb {
	const char *name;
	int (*run)(int argc, char **argv, int json);
	enum key_op op;
} verbs[] = {
	{ "create", verb_create, 0 },
	{ "list", verb_list, 0 },
	{ "info", verb_info, 0 },
	{ "drop", verb_drop, 0 },
	{ "ping", verb_ping, 0 },
	{ "add", NULL, OP_ADD },
	{ "check", NULL, OP_CHECK },
	{ "del", NULL, OP_DEL },
	{ "count", NULL, OP_COUNT },
	{ "add-capped", NULL, OP_CAPPED },
	{ "snapshot", verb_snapshot, 0 },
	{ "swap", verb_swap, 0 },
	{ "rotate", verb_rotate, 0 },
	{ "restore", verb_restore, 0 },
	{ "build", verb_build, 0 },
	{ "inspect", shmctl_inspect, 0 },
	{ "replication", verb_replication, 0 },
	{ "pull", verb_pull, 0 },
	{ "merge", verb_merge, 0 },
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "instance", required_argument, NULL, 'i' },
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *instance = "default", *socket_path = NULL;
	int json = 0, opt;
	/* '+': stop at the verb, so that keys starting with '-' stay keys. */
	while ((opt = getopt_long(argc, argv, "+i:s:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'i': instance = optarg; break;
		case 's': socket_path = optarg; break;
		case 'j': json = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return EXIT_ERROR;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		die_usage("no verb given");
	/* --json may also follow the verb's arguments (list --json, info X --json). */
	if (argc > 1 && !strcmp(argv[argc - 1], "--json") &&
	    (!strcmp(argv[0], "list") || !strcmp(argv[0], "info") || !strcmp(argv[0], "inspect"))) {
		json = 1;
		argc--;
	}
	if (shmf_name_check(instance) < 0)
		die_usage("--instance '%s': not a valid instance name", instance);

	const struct verb *v = NULL;
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(argv[0], verbs[i].name))
			v = &verbs[i];
	if (v == NULL)
		die_usage("unknown verb '%s'", argv[0]);

	instance_name = instance;
	socket_given = socket_path;
	atexit(close_conn);
	int rc = v->run != NULL ? v->run(argc, argv, json) : verb_keys(argc, argv, v->op);
	close_conn();
	if (fflush(stdout) != 0) {
		fprintf(stderr, "%s: writing output: %s\n", prog, strerror(errno));
		return EXIT_ERROR;
	}
	return rc;
}
