/*
 * shmctl - the command-line tool of shmfilter: talks to shmd over its
 * control socket (docs/protocol.md). The verbs are rows of the table at
 * the end; their help is in cli-usage.c, the key verbs in cli-keys.c, the
 * connection in cli-conn.c and the JSON writer in cli-json.c.
 *
 * Exit status: 0 success (for check: every key present), 1 check found a
 * key absent, 2 any error (bad arguments, no daemon, an error reply).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cli.h"
#include "tools/cli-keys.h"
#include "tools/offline.h"
#include "tools/pull.h"
#include "tools/import.h"
#include "libclient/cuckoo.h"
#include "libclient/geometry.h"
#include "common/spec.h"
#include "libclient/rundir.h"
#include <shmf.h>

/* ---- info and list ---------------------------------------------------- */

/* SHMF.INFO fields that are numbers sent as text (doubles). */
static int is_double_field(const char *field)
{
	return !strcmp(field, "error_rate") || !strcmp(field, "fill_ratio") || !strcmp(field, "fpr_estimate") ||
	       !strcmp(field, "bits_per_key");
}

/* "generations": "G:AGEs:ITEMS ..." (newest first) as an array of objects;
 * text that does not read so stays a string. */
static void json_generations(struct json *j, const char *text)
{
	unsigned long long g, age, items;
	int used;
	const char *p = text;
	while (*p == ' ')
		p++;
	for (const char *q = p; *q;) {
		if (sscanf(q, "%llu:%llus:%llu%n", &g, &age, &items, &used) != 3) {
			json_str(j, text);
			return;
		}
		q += used;
		while (*q == ' ')
			q++;
	}
	json_open(j, '[');
	while (*p && sscanf(p, "%llu:%llus:%llu%n", &g, &age, &items, &used) == 3) {
		json_open(j, '{');
		json_key(j, "generation");
		json_uint(j, g);
		json_key(j, "age_s");
		json_uint(j, age);
		json_key(j, "items");
		json_uint(j, items);
		json_close(j, '}');
		p += used;
		while (*p == ' ')
			p++;
	}
	json_close(j, ']');
}

/* "layers": "L:GEN:CAPACITY:ITEMS:BYTES:STATE ..." (current first) as an
 * array of objects; text that does not read so stays a string. */
static void json_layers(struct json *j, const char *text)
{
	unsigned long long l, g, cap, items, bytes;
	char state[16];
	int used;
	const char *fmt = "%llu:%llu:%llu:%llu:%llu:%15[a-z]%n";
	for (const char *q = text; *q;) {
		if (sscanf(q, fmt, &l, &g, &cap, &items, &bytes, state, &used) != 6) {
			json_str(j, text);
			return;
		}
		q += used;
		while (*q == ' ')
			q++;
	}
	json_open(j, '[');
	for (const char *p = text; *p && sscanf(p, fmt, &l, &g, &cap, &items, &bytes, state, &used) == 6;) {
		json_open(j, '{');
		json_key(j, "layer");
		json_uint(j, l);
		json_key(j, "generation");
		json_uint(j, g);
		json_key(j, "capacity");
		json_uint(j, cap);
		json_key(j, "items");
		json_uint(j, items);
		json_key(j, "bytes");
		json_uint(j, bytes);
		json_key(j, "state");
		json_str(j, state);
		json_close(j, '}');
		p += used;
		while (*p == ' ')
			p++;
	}
	json_close(j, ']');
}

/* A SHMF.INFO reply (field, value, ...) as one JSON object. */
static void info_json(struct json *j, const redisReply *r)
{
	json_open(j, '{');
	for (size_t i = 0; i + 1 < r->elements; i += 2) {
		const redisReply *f = r->element[i], *v = r->element[i + 1];
		json_key(j, f->str);
		if (v->type == REDIS_REPLY_INTEGER)
			json_int(j, v->integer);
		else if (v->type != REDIS_REPLY_STRING && v->type != REDIS_REPLY_STATUS)
			json_null(j);
		else if (is_double_field(f->str))
			json_number_text(j, v->str);
		else if (!strcmp(f->str, "generations"))
			json_generations(j, v->str);
		else if (!strcmp(f->str, "layers"))
			json_layers(j, v->str);
		else
			json_str(j, v->str);
	}
	json_close(j, '}');
}

static void info_text(const redisReply *r)
{
	for (size_t i = 0; i + 1 < r->elements; i += 2) {
		const redisReply *f = r->element[i], *v = r->element[i + 1];
		if (v->type == REDIS_REPLY_INTEGER)
			printf("%-14s %lld\n", f->str, v->integer);
		else
			printf("%-14s %s\n", f->str, v->str ? v->str : "");
	}
}

/* --json anywhere among @p argv[1..]: taken out, and said in the return value. */
static int take_json(int *argc, char **argv)
{
	int json = 0, n = 1;
	for (int i = 1; i < *argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else
			argv[n++] = argv[i];
	}
	*argc = n;
	return json;
}

static int verb_info(int argc, char **argv, int json)
{
	json |= take_json(&argc, argv);
	if (argc < 2)
		cli_usage_error("info", "missing FILTER, the filter to describe");
	if (argc > 2)
		cli_usage_error("info", "unexpected argument '%s' (one filter at a time)", argv[2]);
	const char *req[] = { "SHMF.INFO", argv[1] };
	redisReply *r = cli_call("info", 2, req, NULL);
	if (json) {
		struct json j = { 0 };
		info_json(&j, r);
		putchar('\n');
	} else {
		info_text(r);
	}
	freeReplyObject(r);
	return 0;
}

static int verb_list(int argc, char **argv, int json)
{
	json |= take_json(&argc, argv);
	if (argc != 1)
		cli_usage_error("list", "unexpected argument '%s' (list takes only --json)", argv[1]);
	const char *req[] = { "SHMF.LIST" };
	redisReply *r = cli_call("list", 1, req, NULL);
	if (!json) {
		for (size_t i = 0; i < r->elements; i++)
			printf("%s\n", r->element[i]->str);
		freeReplyObject(r);
		return 0;
	}
	/* All the SHMF.INFO requests in one round trip. */
	for (size_t i = 0; i < r->elements; i++) {
		const char *ireq[] = { "SHMF.INFO", r->element[i]->str };
		cli_send("list", 2, ireq, NULL);
	}
	struct json j = { 0 };
	json_open(&j, '[');
	for (size_t i = 0; i < r->elements; i++) {
		redisReply *info = cli_take("list");
		info_json(&j, info);
		freeReplyObject(info);
	}
	json_close(&j, ']');
	putchar('\n');
	freeReplyObject(r);
	return 0;
}

/* ---- create ------------------------------------------------------------ */

struct create_args {
	const char *name, *capacity, *fpr, *mode, *type, *kicks, *bucket, *window, *gens, *expansion;
	int replicate, quiet, nonscaling;
};

/* The options of create that take a value, and where each goes. */
static const char **create_slot(struct create_args *a, const char *opt)
{
	static const struct {
		const char *opt;
		size_t off;
	} rows[] = {
		{ "--capacity", offsetof(struct create_args, capacity) },
		{ "--fpr", offsetof(struct create_args, fpr) },
		{ "--mode", offsetof(struct create_args, mode) },
		{ "--type", offsetof(struct create_args, type) },
		{ "--max-kicks", offsetof(struct create_args, kicks) },
		{ "--bucket-size", offsetof(struct create_args, bucket) },
		{ "--window", offsetof(struct create_args, window) },
		{ "--generations", offsetof(struct create_args, gens) },
		{ "--expansion", offsetof(struct create_args, expansion) },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (!strcmp(opt, rows[i].opt))
			return (const char **)((char *)a + rows[i].off);
	return NULL;
}

static void create_parse(int argc, char **argv, struct create_args *a)
{
	*a = (struct create_args){ .type = "bloom" };
	for (int i = 1; i < argc; i++) {
		const char **slot = create_slot(a, argv[i]);
		if (!strcmp(argv[i], "--replicate")) {
			a->replicate = 1;
		} else if (!strcmp(argv[i], "--nonscaling")) {
			a->nonscaling = 1;
		} else if (!strcmp(argv[i], "-q")) {
			a->quiet = 1;
		} else if (slot != NULL) {
			if (i + 1 >= argc)
				cli_usage_error("create", "%s needs a value", argv[i]);
			*slot = argv[++i];
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			cli_usage_error("create", "unknown option '%s'", argv[i]);
		} else if (a->name == NULL) {
			a->name = argv[i];
		} else {
			cli_usage_error("create", "unexpected argument '%s' (one filter at a time)", argv[i]);
		}
	}
	if (a->name == NULL)
		cli_usage_error("create", "missing FILTER, the name of the filter to create");
	if (a->capacity == NULL)
		cli_usage_error("create", "missing --capacity N, the keys filter '%s' is sized for", a->name);
	if (a->fpr == NULL)
		cli_usage_error("create", "missing --fpr P, the false-positive rate of filter '%s' at capacity",
				a->name);
	if (strcmp(a->type, "bloom") != 0 && strcmp(a->type, "cuckoo") != 0)
		cli_usage_error("create", "unknown --type '%s' (bloom or cuckoo)", a->type);
	if (a->kicks != NULL && strcmp(a->type, "cuckoo") != 0)
		cli_usage_error("create", "--max-kicks applies to --type cuckoo only");
	if (a->bucket != NULL && strcmp(a->type, "cuckoo") != 0)
		cli_usage_error("create", "--bucket-size applies to --type cuckoo only");
	if (a->nonscaling && strcmp(a->type, "bloom") != 0)
		cli_usage_error("create", "--nonscaling applies to --type bloom only (a cuckoo filter that does not "
					  "grow answers 'filter is full')");
	if (a->nonscaling && a->expansion != NULL && strcmp(a->expansion, "0") != 0)
		cli_usage_error("create", "--nonscaling and --expansion: a NONSCALING filter does not grow");
}

/* The BF.RESERVE or CF.RESERVE request of @p a into @p req. @return its length. */
static int create_request(const struct create_args *a, const char **req)
{
	int n = 0;
	int cuckoo = !strcmp(a->type, "cuckoo");
	req[n++] = cuckoo ? "CF.RESERVE" : "BF.RESERVE";
	req[n++] = a->name;
	if (cuckoo) {
		req[n++] = a->capacity;
		req[n++] = "ERROR";
		req[n++] = a->fpr;
	} else {
		req[n++] = a->fpr;
		req[n++] = a->capacity;
	}
	/* shmctl's door keeps shmd's defaults (buckets of 4, or 2 below the
	 * rates 4 reach; 500 moves); the CF.RESERVE it sends would otherwise
	 * get RedisBloom's 2 and 20. A capacity or rate that does not parse
	 * is shmd's to refuse. */
	static char kicks_default[16], bucket_default[16];
	uint64_t cap = 0;
	double rate = 0.0;
	uint32_t slots = SHMF_CUCKOO_SLOTS_DEFAULT;
	if (cuckoo && spec_parse_capacity(a->capacity, &cap) == 0 && spec_parse_fpr(a->fpr, &rate) == 0)
		slots = shmf_geometry_bucket_size(cap, rate);
	snprintf(kicks_default, sizeof(kicks_default), "%u", SHMF_CUCKOO_MAX_KICKS);
	snprintf(bucket_default, sizeof(bucket_default), "%u", slots);
	const char *kicks = a->kicks != NULL || !cuckoo ? a->kicks : kicks_default;
	const char *bucket = a->bucket != NULL || !cuckoo ? a->bucket : bucket_default;
	const char *opts[][2] = { { "MAXITERATIONS", kicks },
				  { "BUCKETSIZE", bucket },
				  { "MODE", a->mode },
				  { "WINDOW", a->window },
				  { "GENERATIONS", a->gens } };
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (opts[i][1] != NULL) {
			req[n++] = opts[i][0];
			req[n++] = opts[i][1];
		}
	if (a->replicate)
		req[n++] = "REPLICATE";
	/* shmctl's filters are fixed unless asked (as configured ones): one
	 * layer, sized for the whole lifetime. */
	int grows = a->expansion != NULL && strcmp(a->expansion, "0") != 0;
	if (grows) {
		req[n++] = "EXPANSION";
		req[n++] = a->expansion;
	} else if (cuckoo) {
		req[n++] = "EXPANSION";
		req[n++] = "0";
	} else {
		req[n++] = a->nonscaling ? "NONSCALING" : "FIXED";
	}
	return n;
}

/* The value of field @p name in a SHMF.INFO reply, as text ("" if absent). */
static const char *info_field(const redisReply *r, const char *name, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
		const redisReply *v = r->element[i + 1];
		if (strcmp(r->element[i]->str, name) != 0)
			continue;
		if (v->type == REDIS_REPLY_INTEGER)
			snprintf(buf, len, "%lld", v->integer);
		else if (v->str != NULL)
			snprintf(buf, len, "%s", v->str);
	}
	return buf;
}

/* "bloom, capacity 50000, error rate 0.001, 92032 bytes, mode 0660[, window 3600 s x 2]" */
static void describe_filter(const char *filter, char *out, size_t len)
{
	const char *req[] = { "SHMF.INFO", filter };
	redisReply *r = cli_call("create", 2, req, NULL);
	char t[32], c[32], e[40], b[32], m[16], w[32], g[16];
	double rate = strtod(info_field(r, "error_rate", e, sizeof(e)), NULL);
	int at = snprintf(out, len, "%s, capacity %s, error rate %g, %s bytes, mode %s",
			  info_field(r, "type", t, sizeof(t)), info_field(r, "capacity", c, sizeof(c)), rate,
			  info_field(r, "bytes", b, sizeof(b)), info_field(r, "mode", m, sizeof(m)));
	if (info_field(r, "window_secs", w, sizeof(w))[0] != '\0' && at > 0 && (size_t)at < len)
		at += snprintf(out + at, len - (size_t)at, ", window %s s x %s generations", w,
			       info_field(r, "window_generations", g, sizeof(g)));
	if (info_field(r, "expansion", w, sizeof(w))[0] != '\0' && at > 0 && (size_t)at < len)
		at += snprintf(out + at, len - (size_t)at, ", grows by %s", w);
	if (info_field(r, "nonscaling", w, sizeof(w))[0] != '\0' && at > 0 && (size_t)at < len)
		snprintf(out + at, len - (size_t)at, ", nonscaling");
	freeReplyObject(r);
}

static int verb_create(int argc, char **argv, int json)
{
	(void)json;
	struct create_args a;
	const char *req[20];
	char what[256];
	create_parse(argc, argv, &a);
	int n = create_request(&a, req);
	cli_send("create", n, req, NULL);
	redisReply *r = cli_take_any("create");
	if (r->type == REDIS_REPLY_ERROR) {
		int exists = !strcmp(r->str, "ERR item exists");
		if (!exists)
			fprintf(stderr, "shmctl: create: %s\n", cli_error_text(r));
		freeReplyObject(r);
		if (exists) {
			describe_filter(a.name, what, sizeof(what));
			fprintf(stderr,
				"shmctl: create: filter '%s' exists already (%s): see it with 'shmctl info %s'; to make it "
				"anew, 'shmctl drop %s' first (its keys go)\n",
				a.name, what, a.name, a.name);
		}
		return EXIT_ERROR;
	}
	freeReplyObject(r);
	if (!a.quiet) {
		describe_filter(a.name, what, sizeof(what));
		printf("created filter '%s': %s\n", a.name, what);
	}
	return 0;
}

/* ---- one request, one answer -------------------------------------------- */

/* drop, rotate, ping: VERB [FILTER], the reply's status printed. */
static int verb_simple(int argc, char **argv, const char *cmd, int nargs)
{
	if (argc > nargs + 1)
		cli_usage_error(argv[0], "unexpected argument '%s'", argv[nargs + 1]);
	if (argc < nargs + 1)
		cli_usage_error(argv[0], "missing FILTER, the filter to %s", argv[0]);
	const char *req[] = { cmd, argv[1] };
	redisReply *r = cli_call(argv[0], nargs + 1, req, NULL);
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

/* The counts of SHMF.RELOAD's summary, its last line: "FILE: N filters
 * created, N changes applied, N refused, N need a restart" (the file's
 * path may hold ": ", the counts never). @return 0, or -1 if it does not read so. */
static int reload_counts(const char *line, unsigned *refused, unsigned *restart)
{
	const char *last = NULL;
	unsigned created, applied;
	for (const char *q = line; (q = strstr(q, ": ")) != NULL; q++)
		last = q;
	if (last == NULL || sscanf(last + 2, "%u filters created, %u changes applied, %u refused, %u need a restart",
				   &created, &applied, refused, restart) != 4)
		return -1;
	return 0;
}

/* reload: SHMF.RELOAD, whose reply is the lines of what it did. Exit 0
 * when the file is in force, 1 when some of it is not (a change refused,
 * or one that needs a restart), 2 when nothing changed (an error). */
static int verb_reload(int argc, char **argv, int json)
{
	(void)json;
	if (argc > 1)
		cli_usage_error("reload", "unexpected argument '%s' (shmd reloads the file it was started with)",
				argv[1]);
	const char *req[] = { "SHMF.RELOAD" };
	cli_send("reload", 1, req, NULL);
	redisReply *r = cli_take_any("reload");
	if (r->type == REDIS_REPLY_ERROR) {
		const char *msg = cli_error_text(r);
		fprintf(stderr, "shmctl: reload: %s\n", strncmp(msg, "reload: ", 8) ? msg : msg + 8);
		freeReplyObject(r);
		return EXIT_ERROR;
	}
	unsigned refused = 0, restart = 0;
	const redisReply *last = r->type == REDIS_REPLY_ARRAY && r->elements > 0 ? r->element[r->elements - 1] : NULL;
	if (last == NULL || last->type != REDIS_REPLY_STRING || reload_counts(last->str, &refused, &restart) < 0) {
		fprintf(stderr, "shmctl: reload: unexpected reply from shmd (is it the same version as shmctl?)\n");
		freeReplyObject(r);
		return EXIT_ERROR;
	}
	for (size_t i = 0; i < r->elements; i++)
		if (r->element[i]->type == REDIS_REPLY_STRING)
			printf("%s\n", r->element[i]->str);
	freeReplyObject(r);
	if (refused == 0 && restart == 0)
		return 0;
	fflush(stdout);
	fprintf(stderr,
		"shmctl: reload: not all of the configuration is in force: %u change%s refused, %u need%s a restart "
		"(the lines above say which)\n",
		refused, refused == 1 ? "" : "s", restart, restart == 1 ? "s" : "");
	return EXIT_ABSENT;
}

/* snapshot, swap, restore, merge: FILTER FILE, the file sent as an absolute
 * path (shmd opens it with the caller's identity); swap also takes
 * --reshape (RESHAPE: the file may have another type or shape); @p extra
 * (NULL: none) is sent after the path. */
static int verb_file(int argc, char **argv, const char *cmd, const char *extra)
{
	char path[4096], cwd[4096];
	if (argc == 4 && !strcmp(cmd, "SHMF.SWAP") && !strcmp(argv[3], "--reshape"))
		extra = "RESHAPE", argc = 3;
	if (argc < 2)
		cli_usage_error(argv[0], "missing FILTER and FILE");
	if (argc < 3)
		cli_usage_error(argv[0], "missing FILE, the snapshot file of filter '%s'", argv[1]);
	if (argc > 3)
		cli_usage_error(argv[0], "unexpected argument '%s'", argv[3]);
	if (argv[2][0] == '/') {
		snprintf(path, sizeof(path), "%s", argv[2]);
	} else if (getcwd(cwd, sizeof(cwd)) == NULL ||
		   (size_t)snprintf(path, sizeof(path), "%s/%s", cwd, argv[2]) >= sizeof(path)) {
		fprintf(stderr, "shmctl: %s: %s: the path from the current directory is too long (give it absolute)\n",
			argv[0], argv[2]);
		return EXIT_ERROR;
	}
	const char *req[] = { cmd, argv[1], path, extra };
	redisReply *r = cli_call(argv[0], extra != NULL ? 4 : 3, req, NULL);
	printf("%s\n", r->type == REDIS_REPLY_STATUS ? r->str : "OK");
	freeReplyObject(r);
	return 0;
}

/* snapshot [--force] FILTER FILE: --force replaces a file that is not a
 * snapshot (never a device, FIFO or directory). */
static int verb_snapshot(int argc, char **argv, int json)
{
	(void)json;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--force")) {
			memmove(&argv[i], &argv[i + 1], (size_t)(argc - i - 1) * sizeof(argv[0]));
			return verb_file(argc - 1, argv, "SHMF.SNAPSHOT", "FORCE");
		}
	return verb_file(argc, argv, "SHMF.SNAPSHOT", NULL);
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

static int verb_merge(int argc, char **argv, int json)
{
	(void)json;
	return verb_file(argc, argv, "SHMF.MERGE", NULL);
}

/* chmod FILTER MODE: SHMF.CHMOD, every live generation's files at once. */
static int verb_chmod(int argc, char **argv, int json)
{
	(void)json;
	if (argc < 3)
		cli_usage_error("chmod", argc < 2 ? "missing FILTER and MODE"
						  : "missing MODE (0640: the group may "
						    "check, 0660: add too)");
	if (argc > 3)
		cli_usage_error("chmod", "unexpected argument '%s'", argv[3]);
	const char *req[] = { "SHMF.CHMOD", argv[1], argv[2] };
	redisReply *r = cli_call("chmod", 3, req, NULL);
	printf("%s\n", r->type == REDIS_REPLY_STATUS ? r->str : "OK");
	freeReplyObject(r);
	return 0;
}

/* resize FILTER --capacity N [--fpr P]: SHMF.RESIZE. */
static int verb_resize(int argc, char **argv, int json)
{
	(void)json;
	const char *filter = NULL, *capacity = NULL, *fpr = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--capacity") && i + 1 < argc)
			capacity = argv[++i];
		else if (!strcmp(argv[i], "--fpr") && i + 1 < argc)
			fpr = argv[++i];
		else if (argv[i][0] != '-' && filter == NULL)
			filter = argv[i];
		else
			cli_usage_error("resize", "unexpected argument '%s'", argv[i]);
	}
	if (filter == NULL || capacity == NULL)
		cli_usage_error("resize", filter == NULL ? "missing FILTER" : "missing --capacity N");
	const char *req[] = { "SHMF.RESIZE", filter, capacity, fpr };
	redisReply *r = cli_call("resize", fpr ? 4 : 3, req, NULL);
	printf("%s\n", r->type == REDIS_REPLY_STATUS ? r->str : "OK");
	freeReplyObject(r);
	return 0;
}

/* ---- replication --------------------------------------------------------- */

/* One SHMF.REPLICATION filter (flat field, value pairs; nodes an array of
 * [node, ms ago, foreign]) as text lines. */
static void replication_text(const redisReply *r)
{
	for (size_t i = 0; i + 1 < r->elements; i += 2) {
		const redisReply *f = r->element[i], *v = r->element[i + 1];
		if (v->type == REDIS_REPLY_ARRAY) { /* nodes */
			if (v->elements == 0)
				printf("%-23s (none heard from)\n", f->str);
			for (size_t j = 0; j < v->elements; j++) {
				const redisReply *n = v->element[j];
				if (n->type == REDIS_REPLY_ARRAY && n->elements == 3)
					printf("%-23s %s, heard from %lld ms ago%s\n", j ? "" : f->str,
					       n->element[0]->str, n->element[1]->integer,
					       n->element[2]->integer ? ", FOREIGN SHAPE (refused)" : "");
			}
		} else if (v->type == REDIS_REPLY_INTEGER) {
			printf("%-23s %lld\n", f->str, v->integer);
		} else if (v->str != NULL && v->str[0] != '\0') {
			printf("%-23s %s\n", f->str, v->str);
		}
	}
}

/* The same as one JSON object. */
static void replication_json(struct json *j, const redisReply *r)
{
	json_open(j, '{');
	for (size_t i = 0; i + 1 < r->elements; i += 2) {
		const redisReply *f = r->element[i], *v = r->element[i + 1];
		json_key(j, f->str);
		if (v->type == REDIS_REPLY_INTEGER) {
			json_int(j, v->integer);
		} else if (v->type != REDIS_REPLY_ARRAY) {
			json_str(j, v->str ? v->str : "");
		} else {
			json_open(j, '[');
			for (size_t k = 0; k < v->elements; k++) {
				const redisReply *n = v->element[k];
				if (n->type != REDIS_REPLY_ARRAY || n->elements != 3)
					continue;
				json_open(j, '{');
				json_key(j, "node");
				json_str(j, n->element[0]->str ? n->element[0]->str : "");
				json_key(j, "last_heard_ms_ago");
				json_int(j, n->element[1]->integer);
				json_key(j, "foreign_shape");
				json_int(j, n->element[2]->integer);
				json_close(j, '}');
			}
			json_close(j, ']');
		}
	}
	json_close(j, '}');
}

/* replication [--json] [FILTER]: SHMF.REPLICATION, one filter or all. */
static int verb_replication(int argc, char **argv, int json)
{
	json |= take_json(&argc, argv);
	if (argc > 2)
		cli_usage_error("replication", "unexpected argument '%s' (at most one filter)", argv[2]);
	const char *filter = argc == 2 ? argv[1] : NULL;
	const char *req[] = { "SHMF.REPLICATION", filter };
	redisReply *r = cli_call("replication", filter ? 2 : 1, req, NULL);
	if (r->type != REDIS_REPLY_ARRAY) {
		fprintf(stderr,
			"shmctl: replication: unexpected reply from shmd (is it the same version as shmctl?)\n");
		freeReplyObject(r);
		return EXIT_ERROR;
	}
	struct json j = { 0 };
	if (filter != NULL && json) {
		replication_json(&j, r);
	} else if (filter != NULL) {
		replication_text(r);
	} else if (json) {
		json_open(&j, '[');
		for (size_t i = 0; i < r->elements; i++)
			replication_json(&j, r->element[i]);
		json_close(&j, ']');
	} else {
		for (size_t i = 0; i < r->elements; i++) {
			printf(i ? "\n" : "");
			replication_text(r->element[i]);
		}
		if (r->elements == 0)
			printf("no replicated filters\n");
	}
	if (json)
		putchar('\n');
	freeReplyObject(r);
	return 0;
}

/* ---- the rest --------------------------------------------------------------- */

static int verb_build(int argc, char **argv, int json)
{
	(void)json;
	return shmctl_build(argc, argv);
}

static int verb_inspect(int argc, char **argv, int json)
{
	json |= take_json(&argc, argv);
	return shmctl_inspect(argc, argv, json);
}

static int verb_plan(int argc, char **argv, int json)
{
	return shmctl_plan(argc, argv, json);
}

static int verb_pull(int argc, char **argv, int json)
{
	(void)json;
	return shmctl_pull(argc, argv, cli_conn);
}

static int verb_import(int argc, char **argv, int json)
{
	(void)json;
	return shmctl_import(argc, argv, cli_conn);
}

static int verb_help(int argc, char **argv, int json)
{
	(void)json;
	if (argc > 2)
		cli_usage_error("help", "unexpected argument '%s' (one verb at a time)", argv[2]);
	if (argc == 1) {
		cli_help_all(stdout);
		return 0;
	}
	return cli_help_verb(argv[1]);
}

/* A verb runs its own function, or (run NULL) cli_keys with its key operation. */
static const struct verb {
	const char *name;
	int (*run)(int argc, char **argv, int json);
	enum key_op op;
} verbs[] = {
	{ "create", verb_create, 0 },      { "list", verb_list, 0 },         { "info", verb_info, 0 },
	{ "drop", verb_drop, 0 },          { "ping", verb_ping, 0 },         { "add", NULL, OP_ADD },
	{ "check", NULL, OP_CHECK },       { "del", NULL, OP_DEL },          { "count", NULL, OP_COUNT },
	{ "add-capped", NULL, OP_CAPPED }, { "snapshot", verb_snapshot, 0 }, { "swap", verb_swap, 0 },
	{ "rotate", verb_rotate, 0 },      { "restore", verb_restore, 0 },   { "build", verb_build, 0 },
	{ "inspect", verb_inspect, 0 },    { "plan", verb_plan, 0 },         { "replication", verb_replication, 0 },
	{ "pull", verb_pull, 0 },          { "import", verb_import, 0 },     { "merge", verb_merge, 0 },
	{ "chmod", verb_chmod, 0 },        { "resize", verb_resize, 0 },     { "reload", verb_reload, 0 },
	{ "help", verb_help, 0 },
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "instance", required_argument, NULL, 'i' }, { "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },           { "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },        { NULL, 0, NULL, 0 },
	};
	const char *instance = "default", *socket_path = NULL;
	int json = 0, opt;
	/* A refused or broken connection is an error to report, not a signal to die of. */
	signal(SIGPIPE, SIG_IGN);
	opterr = 0;
	/* '+': stop at the verb, so that keys starting with '-' stay keys. */
	while ((opt = getopt_long(argc, argv, "+:i:s:hV", opts, NULL)) != -1) {
		switch (opt) {
		case 'i': instance = optarg; break;
		case 's': socket_path = optarg; break;
		case 'j': json = 1; break;
		case 'h': cli_help_all(stdout); return 0;
		case 'V': puts("shmctl " SHMF_VERSION_STRING " (commit " SHMF_COMMIT ")"); return 0;
		case ':': cli_usage_error(NULL, "option '%s' needs a value", argv[optind - 1]);
		default: cli_usage_error(NULL, "unknown option '%s'", argv[optind - 1]);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		cli_usage_error(NULL, "no verb given");
	if (shmf_name_check(instance) < 0)
		cli_usage_error(NULL, "--instance '%s': not a valid instance name (1-63 of A-Z a-z 0-9 _ . : -)",
				instance);
	const struct verb *v = NULL;
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(argv[0], verbs[i].name))
			v = &verbs[i];
	if (v == NULL)
		cli_usage_error(NULL, "unknown verb '%s'", argv[0]);
	cli_conn_target(instance, socket_path);
	atexit(cli_conn_close);
	int rc = v->run != NULL ? v->run(argc, argv, json) : cli_keys(argc, argv, v->op);
	cli_conn_close();
	if (fflush(stdout) != 0) {
		fprintf(stderr, "shmctl: writing output: %s\n", strerror(errno));
		return EXIT_ERROR;
	}
	return rc;
}
