/*
 * test-pull.c - shmctl pull and shmctl merge between two real shmd
 * instances, each with its own runtime directory: the source with its TCP
 * listener on a loopback port and a password, the destination reached on
 * its unix socket. A pulled filter (Bloom of several chunks, cuckoo,
 * windowed) answers every check as the source does and carries the
 * source's stream cursor; an unreachable peer, a wrong or missing
 * password and a missing filter are clear errors that create nothing;
 * merge gives the union and refuses a cuckoo file; a static filter pulled
 * stays static and answers as the source.
 *
 *   test-pull PATH-TO-SHMD PATH-TO-SHMCTL [TEST]
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "tests/daemon-process.h"
#include "common/snapshot-format.h"
#include "tests/run-named.h"

#define PASSWORD "pull-test-pw"
#define NKEYS    20000

static const char *shmd_path, *shmctl_path;

struct node {
	char root[128]; /* its runtime directory */
	char sock[192], log[192], conf[192];
	pid_t pid;
	int port; /* TCP, 0: none */
	redisContext *c;
};

static struct node src, dst;

/* Start shmd on runtime directory n->root (made here), with a TCP
 * listener on a free loopback port when @p tcp; retried when another
 * process takes the port first. */
static void node_start(struct node *n, const char *what, int tcp)
{
	assert_int_equal(daemon_rundir_make(n->root, sizeof(n->root), what), 0);
	snprintf(n->sock, sizeof(n->sock), "%s/%s.sock", n->root, what);
	snprintf(n->log, sizeof(n->log), "%s/%s.log", n->root, what);
	snprintf(n->conf, sizeof(n->conf), "%s/%s.ini", n->root, what);
	for (int attempt = 0; attempt < 10; attempt++) {
		n->port = tcp ? sock_free_port() : 0;
		if (tcp)
			assert_int_equal(daemon_write_conf(n->conf,
							   "[instance]\nname = %s\n\n[tcp]\nenabled = yes\nport = %d\n"
							   "requirepass = %s\n",
							   what, n->port, PASSWORD),
					 0);
		else
			assert_int_equal(daemon_write_conf(n->conf, "[instance]\nname = %s\n", what), 0);
		unlink(n->log);
		/* The daemon and shmctl find the runtime directory here. */
		setenv("SHMF_RUNTIME_DIR", n->root, 1);
		n->pid = daemon_spawn(shmd_path, n->conf, n->log);
		int status = 0, rc = daemon_wait_listening(n->pid, n->sock, 30000, &status);
		if (rc == 0 && tcp) {
			for (int i = 0; i < 1000; i++) {
				int fd = sock_tcp_connect(n->port);
				if (fd >= 0) {
					close(fd);
					break;
				}
				usleep(10000);
			}
		}
		if (rc == 0)
			break;
		if (rc == -ECHILD && strstr(daemon_read_file(n->log), "in use") != NULL)
			continue;
		fail_msg("shmd %s did not start: %s", what, daemon_read_file(n->log));
	}
	n->c = redisConnectUnix(n->sock);
	assert_true(n->c != NULL && n->c->err == 0);
}

static void node_stop(struct node *n)
{
	if (n->c != NULL)
		redisFree(n->c);
	n->c = NULL;
	if (n->pid > 0) {
		int st = daemon_stop(n->pid, SIGTERM);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fail_msg("shmd exited with status %d; its log: %s", st, daemon_read_file(n->log));
	}
	n->pid = 0;
	daemon_rundir_remove(n->root);
}

static int setup(void **state)
{
	(void)state;
	signal(SIGPIPE, SIG_IGN);
	node_start(&src, "src", 1);
	node_start(&dst, "dst", 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	node_stop(&src);
	node_stop(&dst);
	return 0;
}

/* One request of string arguments; the reply (caller frees). */
static redisReply *ask(struct node *n, int argc, const char **argv)
{
	redisReply *r = redisCommandArgv(n->c, argc, argv, NULL);
	assert_non_null(r);
	return r;
}

#define ASK(n, ...) \
	ask(n, sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(const char *), (const char *[]){ __VA_ARGS__ })

static void ok(redisReply *r)
{
	if (r->type == REDIS_REPLY_ERROR)
		fail_msg("error reply: %s", r->str);
	freeReplyObject(r);
}

/* Add keys "<prefix><i>" for i in [from, to) with VERB (BF.MADD, or
 * CF.INSERT with NOCREATE ITEMS). */
static void add_keys(struct node *n, const char *filter, int cuckoo, const char *prefix, int from, int to)
{
	const char **argv = calloc((size_t)(to - from) + 4, sizeof(*argv));
	char **keys = calloc((size_t)(to - from), sizeof(*keys));
	int argc = 0;
	argv[argc++] = cuckoo ? "CF.INSERT" : "BF.MADD";
	argv[argc++] = filter;
	if (cuckoo) {
		argv[argc++] = "NOCREATE";
		argv[argc++] = "ITEMS";
	}
	for (int i = from; i < to; i++) {
		if (asprintf(&keys[i - from], "%s%d", prefix, i) < 0)
			fail();
		argv[argc++] = keys[i - from];
	}
	ok(ask(n, argc, argv));
	for (int i = 0; i < to - from; i++)
		free(keys[i]);
	free(keys);
	free(argv);
}

/* The replies of @p verb (BF.MEXISTS, CF.MEXISTS, ...) for keys
 * "<prefix><i>", i in [0, count), on node @p n, as one string of digits. */
static char *answers(struct node *n, const char *verb, const char *filter, const char *prefix, int count)
{
	const char **argv = calloc((size_t)count + 2, sizeof(*argv));
	char **keys = calloc((size_t)count, sizeof(*keys));
	argv[0] = verb;
	argv[1] = filter;
	for (int i = 0; i < count; i++) {
		if (asprintf(&keys[i], "%s%d", prefix, i) < 0)
			fail();
		argv[i + 2] = keys[i];
	}
	redisReply *r = ask(n, count + 2, argv);
	if (r->type != REDIS_REPLY_ARRAY)
		fail_msg("%s %s: %s", verb, filter, r->type == REDIS_REPLY_ERROR ? r->str : "not an array");
	char *s = calloc((size_t)count + 1, 1);
	for (int i = 0; i < count; i++)
		s[i] = (char)('0' + r->element[i]->integer);
	freeReplyObject(r);
	for (int i = 0; i < count; i++)
		free(keys[i]);
	free(keys);
	free(argv);
	return s;
}

/* CF.COUNT of each key, one reply per request, as digits. */
static char *counts(struct node *n, const char *filter, const char *prefix, int count)
{
	char *s = calloc((size_t)count + 1, 1);
	for (int i = 0; i < count; i++) {
		char key[32];
		snprintf(key, sizeof(key), "%s%d", prefix, i);
		redisReply *r = ASK(n, "CF.COUNT", filter, key);
		assert_int_equal(r->type, REDIS_REPLY_INTEGER);
		s[i] = (char)('0' + r->integer);
		freeReplyObject(r);
	}
	return s;
}

/* Run shmctl against the destination's socket; its exit status, and its
 * output and errors in *out (static). */
static int shmctl(char **out, const char *args)
{
	char cmd[2048], outf[256];
	snprintf(outf, sizeof(outf), "%s/shmctl.out", dst.root);
	snprintf(cmd, sizeof(cmd), "%s --socket %s %s >%s 2>&1", shmctl_path, dst.sock, args, outf);
	int st = system(cmd);
	*out = daemon_read_file(outf);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int has_filter(struct node *n, const char *name)
{
	redisReply *r = ASK(n, "SHMF.LIST");
	int found = 0;
	for (size_t i = 0; i < r->elements; i++)
		found |= !strcmp(r->element[i]->str, name);
	freeReplyObject(r);
	return found;
}

/* Both nodes answer every check (and for cuckoo every count) on the keys
 * of @p prefix alike. */
static void same_answers(const char *sname, const char *dname, int cuckoo, const char *prefix, int count)
{
	const char *verb = cuckoo ? "CF.MEXISTS" : "BF.MEXISTS";
	char *a = answers(&src, verb, sname, prefix, count), *b = answers(&dst, verb, dname, prefix, count);
	if (strcmp(a, b) != 0)
		fail_msg("'%s' and the pulled '%s' answer the keys %s... differently", sname, dname, prefix);
	free(a);
	free(b);
	if (cuckoo) {
		a = counts(&src, sname, prefix, count);
		b = counts(&dst, dname, prefix, count);
		assert_string_equal(a, b);
		free(a);
		free(b);
	}
}

/* Give the source's filter @p name the stream cursor @p ms-@p seq: a
 * snapshot of it with the cursor written in (both checksums remade),
 * swapped back in. */
static void set_source_cursor(const char *name, uint64_t ms, uint64_t seq)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/cursor.snap", src.root);
	ok(ASK(&src, "SHMF.SNAPSHOT", name, path));
	int fd = open(path, O_RDWR);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	size_t len = (size_t)st.st_size;
	char *buf = malloc(len);
	assert_int_equal(pread(fd, buf, len, 0), (ssize_t)len);
	struct shmf_snap_header *h = (struct shmf_snap_header *)buf;
	h->cursor_ms = ms;
	h->cursor_seq = seq;
	h->header_xxh3 = XXH3_64bits(h, offsetof(struct shmf_snap_header, header_xxh3));
	uint64_t nch = (h->section_bytes + h->chunk_bytes - 1) / h->chunk_bytes;
	size_t table = SHMF_SNAP_PAYLOAD_OFF + h->nsections * h->section_bytes;
	XXH3_state_t *x = XXH3_createState();
	XXH3_64bits_reset(x);
	XXH3_64bits_update(x, h, sizeof(*h));
	XXH3_64bits_update(x, buf + sizeof(*h), h->nsections * sizeof(struct shmf_snap_section));
	XXH3_64bits_update(x, buf + table, h->nsections * nch * 8);
	uint64_t sum = XXH3_64bits_digest(x);
	XXH3_freeState(x);
	memcpy(buf + len - 16, &sum, 8);
	assert_int_equal(pwrite(fd, buf, len, 0), (ssize_t)len);
	close(fd);
	free(buf);
	ok(ASK(&src, "SHMF.SWAP", name, path));
}

/* The stream cursor of the destination's filter @p name, through a
 * snapshot of it. */
static void dest_cursor(const char *name, uint64_t *ms, uint64_t *seq)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/check.snap", dst.root);
	ok(ASK(&dst, "SHMF.SNAPSHOT", name, path));
	int fd = open(path, O_RDONLY);
	struct shmf_snap_header h;
	assert_int_equal(pread(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	close(fd);
	*ms = h.cursor_ms;
	*seq = h.cursor_seq;
}

static void test_pull(void **state)
{
	(void)state;
	char *out, args[512];
	/* A Bloom filter of several chunks, a cuckoo one, a windowed one. */
	ok(ASK(&src, "BF.RESERVE", "big", "0.01", "8000000"));
	ok(ASK(&src, "CF.RESERVE", "cf", "100000"));
	ok(ASK(&src, "BF.RESERVE", "win", "0.01", "100000", "WINDOW", "1h", "GENERATIONS", "3"));
	add_keys(&src, "big", 0, "b", 0, NKEYS);
	add_keys(&src, "cf", 1, "c", 0, NKEYS);
	add_keys(&src, "win", 0, "w", 0, NKEYS / 2);
	ok(ASK(&src, "SHMF.ROTATE", "win"));
	add_keys(&src, "win", 0, "w", NKEYS / 2, NKEYS);
	set_source_cursor("big", 1700000000000ull, 17);

	snprintf(args, sizeof(args), "pull big --from 127.0.0.1:%d --password %s", src.port, PASSWORD);
	if (shmctl(&out, args) != 0 || strstr(out, "pulled from") == NULL ||
	    strstr(out, "stream cursor 1700000000000-17") == NULL)
		fail_msg("pull big: %s", out);
	same_answers("big", "big", 0, "b", 2 * NKEYS);
	uint64_t ms, seq;
	dest_cursor("big", &ms, &seq);
	assert_int_equal(ms, 1700000000000ull);
	assert_int_equal(seq, 17);
	/* shmctl inspect shows it (the snapshot dest_cursor() took). */
	snprintf(args, sizeof(args), "inspect %s/check.snap", dst.root);
	char version[64]; /* a file written now is of the current version */
	snprintf(version, sizeof(version), "format          shmfilter snapshot, version %u,", SHMF_SNAP_VERSION);
	if (shmctl(&out, args) != 0 || strstr(out, "stream_cursor   1700000000000-17\n") == NULL ||
	    strstr(out, version) == NULL)
		fail_msg("inspect: %s", out);
	snprintf(args, sizeof(args), "inspect %s/check.snap --json", dst.root);
	if (shmctl(&out, args) != 0 || strstr(out, "\"stream_cursor\": \"1700000000000-17\"") == NULL)
		fail_msg("inspect --json: %s", out);

	snprintf(args, sizeof(args), "pull cf --from 127.0.0.1:%d --password %s --as cf-copy", src.port, PASSWORD);
	if (shmctl(&out, args) != 0)
		fail_msg("pull cf: %s", out);
	same_answers("cf", "cf-copy", 1, "c", NKEYS + 2000);
	snprintf(args, sizeof(args), "pull win --from 127.0.0.1:%d --user default --password %s", src.port, PASSWORD);
	if (shmctl(&out, args) != 0)
		fail_msg("pull win: %s", out);
	same_answers("win", "win", 0, "w", 2 * NKEYS);
	redisReply *r = ASK(&dst, "SHMF.INFO", "win");
	int live = 0;
	for (size_t i = 0; i + 1 < r->elements; i += 2)
		if (!strcmp(r->element[i]->str, "live_generations"))
			live = (int)r->element[i + 1]->integer;
	freeReplyObject(r);
	assert_int_equal(live, 2);

	/* Pulled again after more adds: the copy is replaced whole. */
	add_keys(&src, "big", 0, "b", NKEYS, 2 * NKEYS);
	snprintf(args, sizeof(args), "pull big --from 127.0.0.1:%d --password %s", src.port, PASSWORD);
	assert_int_equal(shmctl(&out, args), 0);
	same_answers("big", "big", 0, "b", 3 * NKEYS);

	/* Errors: each clear, each exit 2, nothing created. */
	int closed = sock_free_port();
	const struct {
		const char *fmt, *says;
		int port_of_src;
	} bad[] = {
		{ "pull nope --from 127.0.0.1:%d --password " PASSWORD, "cannot connect to peer", 0 },
		{ "pull nope --from 127.0.0.1:%d --password wrong", "refused the credentials: WRONGPASS", 1 },
		{ "pull nope --from 127.0.0.1:%d", "wants a password", 1 },
		{ "pull nope --from 127.0.0.1:%d --password " PASSWORD, "filter 'nope' not found", 1 },
		{ "pull nope --from 127.0.0.1 --password " PASSWORD, "HOST:PORT expected", 1 },
		{ "pull --from 127.0.0.1:%d", "missing FILTER", 1 },
		{ "pull bad/name --from 127.0.0.1:%d", "not a valid filter name", 1 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(args, sizeof(args), bad[i].fmt, bad[i].port_of_src ? src.port : closed);
		int rc = shmctl(&out, args);
		if (rc != 2 || strstr(out, bad[i].says) == NULL)
			fail_msg("shmctl %s: exit %d, '%s' (want 2 and '%s')", args, rc, out, bad[i].says);
		assert_false(has_filter(&dst, "nope"));
	}
	redisReply *list = ASK(&dst, "SHMF.LIST");
	assert_int_equal(list->elements, 3); /* big, cf-copy, win */
	freeReplyObject(list);
}

/* A static filter (built offline by shmctl build --type static, restored
 * on the source) pulled: the copy is static, answers every check as the
 * source (false positives included), and refuses adds naming the type. */
static void test_pull_static(void **state)
{
	(void)state;
	char *out, args[512], keys[256], snap[256], cmd[1024];
	snprintf(keys, sizeof(keys), "%s/static.keys", src.root);
	snprintf(snap, sizeof(snap), "%s/static.snap", src.root);
	FILE *f = fopen(keys, "w");
	assert_non_null(f);
	for (int i = 0; i < NKEYS; i++)
		fprintf(f, "s%d\n", i);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s build --type static --capacity %d --fpr 0.01 --from %s -o %s >/dev/null",
		 shmctl_path, NKEYS, keys, snap);
	assert_int_equal(system(cmd), 0);
	ok(ASK(&src, "SHMF.RESTORE", "st", snap));
	snprintf(args, sizeof(args), "pull st --from 127.0.0.1:%d --password %s", src.port, PASSWORD);
	if (shmctl(&out, args) != 0 || strstr(out, "pulled from") == NULL)
		fail_msg("pull st: %s", out);
	/* The set and as many absent keys: about 0.4% of those present. */
	same_answers("st", "st", 0, "s", 2 * NKEYS);
	char *a = answers(&dst, "BF.MEXISTS", "st", "s", NKEYS);
	assert_int_equal(strspn(a, "1"), NKEYS);
	free(a);
	redisReply *r = ASK(&dst, "SHMF.INFO", "st");
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_true(r->elements >= 4 && !strcmp(r->element[2]->str, "type"));
	assert_string_equal(r->element[3]->str, "static");
	freeReplyObject(r);
	r = ASK(&dst, "BF.ADD", "st", "new-key");
	if (r->type != REDIS_REPLY_ERROR || strstr(r->str, "static") == NULL)
		fail_msg("BF.ADD on the pulled static filter: %s", r->type == REDIS_REPLY_ERROR ? r->str : "no error");
	freeReplyObject(r);
}

static void test_merge(void **state)
{
	(void)state;
	char *out, args[512], path[256], cpath[256];
	ok(ASK(&src, "BF.RESERVE", "m", "0.01", "100000", "FIXED"));
	ok(ASK(&src, "CF.RESERVE", "mc", "1000"));
	add_keys(&src, "m", 0, "x", 0, NKEYS / 4);
	snprintf(args, sizeof(args), "pull m --from 127.0.0.1:%d --password %s", src.port, PASSWORD);
	assert_int_equal(shmctl(&out, args), 0);
	/* Cut off from each other: each side adds its own keys. */
	add_keys(&src, "m", 0, "y", 0, NKEYS / 4);
	add_keys(&dst, "m", 0, "z", 0, NKEYS / 4);
	snprintf(path, sizeof(path), "%s/m.snap", src.root);
	ok(ASK(&src, "SHMF.SNAPSHOT", "m", path));
	snprintf(args, sizeof(args), "merge m %s", path);
	if (shmctl(&out, args) != 0 || strncmp(out, "OK", 2) != 0)
		fail_msg("merge: %s", out);
	const char *prefixes[] = { "x", "y", "z" };
	for (int i = 0; i < 3; i++) {
		char *a = answers(&dst, "BF.MEXISTS", "m", prefixes[i], NKEYS / 4);
		assert_int_equal(strspn(a, "1"), NKEYS / 4);
		free(a);
	}
	/* A cuckoo file is refused, naming why; the filter keeps its keys. */
	snprintf(cpath, sizeof(cpath), "%s/mc.snap", src.root);
	ok(ASK(&src, "SHMF.SNAPSHOT", "mc", cpath));
	snprintf(args, sizeof(args), "merge m %s", cpath);
	if (shmctl(&out, args) != 2 || strstr(out, "union of cuckoo tables is not defined") == NULL)
		fail_msg("merge of a cuckoo file: %s", out);
	snprintf(args, sizeof(args), "merge m %s/nofile.snap", src.root);
	if (shmctl(&out, args) != 2 || strstr(out, "No such file") == NULL)
		fail_msg("merge of a missing file: %s", out);
	char *a = answers(&dst, "BF.MEXISTS", "m", "z", NKEYS / 4);
	assert_int_equal(strspn(a, "1"), NKEYS / 4);
	free(a);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: test-pull SHMD SHMCTL [TEST]\n");
		return 2;
	}
	shmd_path = argv[1];
	shmctl_path = argv[2];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pull, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pull_static, setup, teardown),
	};
	static const char *const names[] = { "pull", "merge", "static" };
	return RUN_NAMED("pull", argc > 3 ? argv[3] : NULL, tests, names, NULL, NULL);
}
