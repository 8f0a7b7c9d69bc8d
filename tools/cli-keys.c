/*
 * cli-keys.c - the shmctl verbs that take keys (add, check, del, count,
 * add-capped): from the command line or stdin, sent in batches of CHUNK
 * keys (one multi-key request where the protocol has one, else one
 * pipeline), each answer tallied and printed unless -q.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/cli.h"
#include "tools/cli-keys.h"

/* Keys per batch. */
#define CHUNK 10000

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
	redisReply *r = cli_call(what, 2, req, NULL);
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
	fprintf(stderr, "shmctl: %s: unexpected reply from shmd (is it the same version as shmctl?)\n", k->what);
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
	case OP_COUNT:
		if (!k->quiet)
			printf("%lld\t%.*s\n", v, len, key);
		break;
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
		redisReply *r = cli_call(k->what, k->head + (int)k->n, k->argv, k->lens);
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
			cli_send(k->what, k->op == OP_CAPPED ? 4 : 3, req, lens);
		}
		for (size_t i = 0; i < k->n; i++) {
			redisReply *r = cli_take(k->what);
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

/* The keys of stdin, one a line, in batches. 0 or EXIT_ERROR. */
static int feed_stdin(struct keys *k)
{
	char **lines = calloc(CHUNK, sizeof(*lines));
	size_t *caps = calloc(CHUNK, sizeof(*caps));
	int rc = 0;
	if (lines == NULL || caps == NULL) {
		fprintf(stderr, "shmctl: %s: out of memory\n", k->what);
		rc = EXIT_ERROR;
	}
	while (rc == 0) {
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
	if (rc == 0 && ferror(stdin)) {
		fprintf(stderr, "shmctl: %s: reading keys from stdin: %s\n", k->what, strerror(errno));
		rc = EXIT_ERROR;
	}
	if (rc == 0)
		run_batch(k);
	for (size_t i = 0; lines != NULL && i < CHUNK; i++)
		free(lines[i]);
	free(lines);
	free(caps);
	return rc;
}

/* What the verb was given: options, the filter, and where the keys are. */
struct key_args {
	const char *filter;
	int first;   /* argv index of the first key */
	int literal; /* argv index of the first key that came after --: no file check from there */
	int from_stdin;
};

/* One option at argv[*i] into @p k (its value, if any, taken too); an
 * unknown one is a usage error naming it (exits). */
static void parse_option(struct keys *k, int argc, char **argv, int *i)
{
	const char *verb = argv[0], *opt = argv[*i];
	if (!strcmp(opt, "-q")) {
		k->quiet = 1;
	} else if (!strcmp(opt, "--cap") && k->op == OP_CAPPED) {
		if (*i + 1 >= argc)
			cli_usage_error(verb, "--cap needs a value: the most copies a key may have");
		k->cap = argv[++*i];
		if (strspn(k->cap, "0123456789") != strlen(k->cap) || strlen(k->cap) == 0 || strlen(k->cap) > 7)
			cli_usage_error(verb, "--cap '%s' is not an integer from 0 to 1000000", k->cap);
	} else {
		cli_usage_error(verb, "unknown option '%s' (a key that starts with '-' goes after --)", opt);
	}
}

/* [-q] [--cap N] FILTER [--] (KEY... | -) into @p a and @p k; a usage
 * error exits. Options are taken anywhere before --, so that 'add f -q k'
 * is quiet rather than a key "-q"; after --, every argument is the filter
 * or a key. The filter and the keys are moved to argv[1..], in order.
 * @return the new argc. */
static int parse(struct keys *k, int argc, char **argv, struct key_args *a)
{
	const char *verb = argv[0];
	int n = 1, dashes = 0;
	a->literal = argc;
	for (int i = 1; i < argc; i++) {
		if (!dashes && !strcmp(argv[i], "--")) {
			dashes = 1;
			a->literal = n;
		} else if (!dashes && argv[i][0] == '-' && argv[i][1] != '\0') {
			parse_option(k, argc, argv, &i);
		} else {
			argv[n++] = argv[i];
		}
	}
	if (k->op == OP_CAPPED && k->cap == NULL)
		cli_usage_error(verb, "missing --cap N, the most copies a key may have");
	if (n < 2)
		cli_usage_error(verb, "missing FILTER and the keys (KEY..., or - to read them from stdin)");
	a->filter = argv[1];
	if (n < 3)
		cli_usage_error(verb, "missing the keys after '%s' (KEY..., or - to read them from stdin)", a->filter);
	a->first = 2;
	a->literal = a->literal < a->first ? a->first : a->literal;
	a->from_stdin = a->literal > a->first && n == 3 && !strcmp(argv[2], "-");
	return n;
}

/* A key that names an existing file was most likely meant as the file
 * of keys: refused, saying how to do either (exits). */
static void refuse_file_keys(const struct keys *k, int argc, char **argv, const struct key_args *a)
{
	struct stat st;
	for (int i = a->first; i < argc && i < a->literal && !a->from_stdin; i++)
		if (stat(argv[i], &st) == 0) {
			fprintf(stderr,
				"shmctl: %s: '%s' is a file here; to %s its lines, use 'shmctl %s %s - < %s'; to take the "
				"name itself as a key, put -- before the keys\n",
				k->what, argv[i], k->what, k->what, a->filter, argv[i]);
			exit(EXIT_ERROR);
		}
}

/* The tallies, and the exit status they make. */
static int finish(const struct keys *k, const char *filter)
{
	switch (k->op) {
	case OP_ADD:
		if (k->full) {
			fprintf(stderr,
				"shmctl: add: filter '%s' is full: %zu of %zu keys added (a bigger filter: 'shmctl "
				"create' one and 'shmctl add' the keys again)\n",
				filter, k->ones, k->total);
			return EXIT_ERROR;
		}
		if (!k->quiet && k->cuckoo)
			printf("%zu keys added\n", k->total);
		else if (!k->quiet)
			printf("%zu keys added, %zu new\n", k->total, k->ones);
		return 0;
	case OP_CHECK:
	case OP_DEL:
	case OP_CAPPED: return k->ones == k->total ? 0 : EXIT_ABSENT;
	case OP_COUNT: break;
	}
	return 0;
}

int cli_keys(int argc, char **argv, enum key_op op)
{
	struct keys k = { .op = op, .what = argv[0] };
	struct key_args a = { 0 };
	argc = parse(&k, argc, argv, &a);
	refuse_file_keys(&k, argc, argv, &a);
	k.argv = calloc(CHUNK + 4, sizeof(*k.argv));
	k.lens = calloc(CHUNK + 4, sizeof(*k.lens));
	if (k.argv == NULL || k.lens == NULL) {
		fprintf(stderr, "shmctl: %s: out of memory\n", k.what);
		free(k.argv);
		free(k.lens);
		return EXIT_ERROR;
	}
	/* A missing daemon or filter is an error even for empty input. */
	k.cuckoo = filter_is_cuckoo(k.what, a.filter);
	static const char *const bloom_verbs[] = { "BF.MADD", "BF.MEXISTS" };
	static const char *const cuckoo_verbs[] = { "CF.INSERT", "CF.MEXISTS", "CF.DEL", "CF.COUNT", "SHMF.ADDCAPPED" };
	if (!k.cuckoo && op >= OP_DEL) {
		fprintf(stderr, "shmctl: %s: filter '%s' is a Bloom filter; %s works on cuckoo filters only\n", k.what,
			a.filter, k.what);
		free(k.argv);
		free(k.lens);
		return EXIT_ERROR;
	}
	k.argv[0] = k.cuckoo ? cuckoo_verbs[op] : bloom_verbs[op];
	k.argv[1] = a.filter;
	k.head = 2;
	if (k.cuckoo && op == OP_ADD) {
		k.argv[2] = "NOCREATE";
		k.argv[3] = "ITEMS";
		k.head = 4;
	}
	for (int i = 0; i < k.head; i++)
		k.lens[i] = strlen(k.argv[i]);
	int rc = 0;
	if (a.from_stdin) {
		rc = feed_stdin(&k);
	} else {
		for (int i = a.first; i < argc; i++)
			push_key(&k, argv[i], strlen(argv[i]));
		run_batch(&k);
	}
	free(k.argv);
	free(k.lens);
	return rc != 0 ? rc : finish(&k, a.filter);
}
