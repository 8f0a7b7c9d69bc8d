/*
 * test-fleet.c - the replication engine against a real Redis: one
 * redis-server of the test's own (unix socket in a temporary directory, no
 * persistence) and two shmd nodes (separate runtime directories, nodes A
 * and B, one secret), with adds made through libshmf.
 *
 *   converge       adds on A visible on B and back (Bloom and cuckoo), the
 *                  lag of each of 200 adds measured; no echo (every stream
 *                  entry is its adder's, each journalled add sent once);
 *                  each node skips its own entries; shmctl replication
 *                  --json is valid JSON
 *   created        filters made replicated at run time (BF.RESERVE and
 *                  CF.RESERVE ... REPLICATE, shmctl create --replicate)
 *                  replicate; one made without it does not
 *   foreign        a filter of another shape on B: A's entries refused,
 *                  counted and reported, never applied
 *   redis_down     Redis not running at start: shmd serves, says
 *                  disconnected, adds succeed and wait in the journal; once
 *                  Redis runs, B has every key
 *   wrong_password Redis refuses the password: disconnected, with the
 *                  reason in SHMF.REPLICATION and the log
 *   windows        entries written into the stream by hand as another node
 *                  would: of the next window within the skew tolerance
 *                  (this node starts it early), of a retired window
 *                  (counted), far ahead (dropped, counted), of an unknown
 *                  version or op (counted malformed)
 *   window_attack  entries of huge window numbers for a 50-day window,
 *                  forged into A's journal and into the stream: dropped,
 *                  counted, not sent on; no node rotates or loses a key
 *   skew_ahead     10 s windows and a node 25 s ahead (its entries forged
 *                  into the stream and A's journal): dropped, counted; no
 *                  early rotation, no key just added lost
 *   diverged       Redis loses the stream (FLUSHALL), or trims it past a
 *                  stopped node's cursor: diverged, saying what to do, and
 *                  still serving and following
 *   replay         a crash between applying and storing the cursor, as a
 *                  cursor moved back: Bloom unchanged, cuckoo copies added
 *                  again (docs/design.md says so)
 *
 * Usage: test-fleet SHMD SHMCTL TEST. redis-server must be installed
 * (scripts/install-deps.sh): without it the test fails, it never skips.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "tests/daemon-process.h"
#include "common/fleet-auth.h"
#include "common/fleet.h"
#include "libclient/segment-format.h"
#include <shmf.h>

#define REPL_TEXT 640 /* a text field of SHMF.REPLICATION */

static const char *shmd_path, *shmctl_path;
static char tmp[256];        /* Redis' directory, configurations, logs */
static char redis_sock[320]; /* Redis' unix socket */
static pid_t redis_pid = -1;

struct node {
	const char *name; /* A or B: the node name; the instance is n<name> */
	char instance[8];
	char root[256]; /* SHMF_RUNTIME_DIR */
	char conf[400], log[400], sock[400];
	pid_t pid;
};

static struct node nodes[2] = { { .name = "A" }, { .name = "B" } };

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- Redis ---------------------------------------------------------------- */

static redisReply *redis(const char *fmt, ...)
{
	struct timeval tv = { .tv_sec = 5 };
	redisContext *c = redisConnectUnixWithTimeout(redis_sock, tv);
	if (c == NULL || c->err) {
		if (c != NULL)
			redisFree(c);
		return NULL;
	}
	va_list ap;
	va_start(ap, fmt);
	redisReply *r = redisvCommand(c, fmt, ap);
	va_end(ap);
	redisFree(c);
	return r;
}

/* Start the test's redis-server (requirepass @p pass unless NULL) and wait
 * until it answers PING. Fails the test when it cannot run. */
static void redis_start(const char *pass)
{
	redis_pid = fork_child();
	if (redis_pid == 0) {
		char log[320];
		snprintf(log, sizeof(log), "%s/redis.log", tmp);
		const char *argv[20] = { "redis-server",
					 "--port",
					 "0",
					 "--unixsocket",
					 redis_sock,
					 "--unixsocketperm",
					 "700",
					 "--save",
					 "",
					 "--appendonly",
					 "no",
					 "--dir",
					 tmp,
					 "--logfile",
					 log };
		int argc = 15;
		if (pass != NULL) {
			argv[argc++] = "--requirepass";
			argv[argc++] = pass;
		}
		argv[argc] = NULL;
		execvp("redis-server", (char *const *)argv);
		fprintf(stderr, "test-fleet: cannot run redis-server: %s (scripts/install-deps.sh installs it)\n",
			strerror(errno));
		_exit(127);
	}
	uint64_t end = now_ms() + 10000;
	for (;;) {
		int st;
		if (waitpid(redis_pid, &st, WNOHANG) == redis_pid)
			fail_msg("redis-server exited (status %d) before answering; see %s/redis.log", st, tmp);
		redisReply *r = redis("PING");
		int ok = r != NULL && (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_ERROR);
		if (r != NULL)
			freeReplyObject(r);
		if (ok)
			return;
		if (now_ms() > end)
			fail_msg("redis-server does not answer on %s", redis_sock);
		usleep(20000);
	}
}

static void redis_stop(void)
{
	if (redis_pid > 0) {
		kill(redis_pid, SIGKILL);
		waitpid(redis_pid, NULL, 0);
	}
	redis_pid = -1;
}

/* ---- Nodes ---------------------------------------------------------------- */

/* Point libshmf (and the next daemon started) at node @p n. */
static void use(const struct node *n)
{
	setenv("SHMF_RUNTIME_DIR", n->root, 1);
}

/* Start node @p n with [replication] (@p password unless NULL) and the
 * filters of @p filters (configuration text). */
static void node_start(struct node *n, const char *password, const char *filters)
{
	snprintf(n->instance, sizeof(n->instance), "n%s", n->name);
	if (n->root[0] == '\0')
		assert_int_equal(daemon_rundir_make(n->root, sizeof(n->root), "fleet"), 0);
	snprintf(n->conf, sizeof(n->conf), "%s/%s.conf", tmp, n->instance);
	snprintf(n->log, sizeof(n->log), "%s/%s.log", tmp, n->instance);
	snprintf(n->sock, sizeof(n->sock), "%s/%s.sock", n->root, n->instance);
	assert_int_equal(daemon_write_conf(n->conf,
					   "[instance]\nname = %s\nhuge_pages = off\n"
					   "[replication]\nredis = %s\nnode = %s\nsecret = fleet-test-secret\n%s%s\n%s",
					   n->instance, redis_sock, n->name, password ? "password = " : "",
					   password ? password : "", filters),
			 0);
	use(n);
	n->pid = daemon_start(shmd_path, n->conf, n->sock, n->log);
}

static void node_stop(struct node *n)
{
	if (n->pid > 0)
		daemon_stop(n->pid, SIGTERM);
	n->pid = -1;
}

static redisReply *node_call(const struct node *n, int argc, const char **argv)
{
	struct timeval tv = { .tv_sec = 10 };
	redisContext *c = redisConnectUnixWithTimeout(n->sock, tv);
	if (c == NULL || c->err)
		fail_msg("node %s: cannot connect to %s", n->name, n->sock);
	redisReply *r = redisCommandArgv(c, argc, argv, NULL);
	redisFree(c);
	if (r == NULL)
		fail_msg("node %s: no reply", n->name);
	return r;
}

/* Field @p name of a flat field/value array. */
static const redisReply *field(const redisReply *r, const char *name)
{
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2)
		if (!strcmp(r->element[i]->str, name))
			return r->element[i + 1];
	return NULL;
}

/* SHMF.REPLICATION @p filter on node @p n (the caller frees it). */
static redisReply *repl(const struct node *n, const char *filter)
{
	const char *argv[] = { "SHMF.REPLICATION", filter };
	redisReply *r = node_call(n, 2, argv);
	if (r->type != REDIS_REPLY_ARRAY)
		fail_msg("node %s: SHMF.REPLICATION %s: %s", n->name, filter, r->str ? r->str : "not an array");
	return r;
}

static long long repl_int(const struct node *n, const char *filter, const char *name)
{
	redisReply *r = repl(n, filter);
	const redisReply *v = field(r, name);
	if (v == NULL || v->type != REDIS_REPLY_INTEGER)
		fail_msg("SHMF.REPLICATION %s has no integer %s", filter, name);
	long long x = v->integer;
	freeReplyObject(r);
	return x;
}

/* Field @p name as text into @p buf. */
static char *repl_str(const struct node *n, const char *filter, const char *name, char *buf, size_t size)
{
	redisReply *r = repl(n, filter);
	const redisReply *v = field(r, name);
	if (v == NULL || v->type != REDIS_REPLY_STRING)
		fail_msg("SHMF.REPLICATION %s has no text %s", filter, name);
	snprintf(buf, size, "%s", v->str);
	freeReplyObject(r);
	return buf;
}

/* Poll until SHMF.REPLICATION's @p name of @p filter on @p n equals @p want
 * (within @p ms). */
static void wait_int(const struct node *n, const char *filter, const char *name, long long want, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	long long got;
	while ((got = repl_int(n, filter, name)) != want) {
		if (now_ms() > end) {
			daemon_log_tail(n->log, 20);
			fail_msg("node %s: %s of %s is %lld, not %lld after %d ms", n->name, name, filter, got, want,
				 ms);
		}
		usleep(10000);
	}
}

static void wait_state(const struct node *n, const char *filter, const char *want, int ms)
{
	char got[64];
	uint64_t end = now_ms() + (uint64_t)ms;
	while (strcmp(repl_str(n, filter, "state", got, sizeof(got)), want) != 0) {
		if (now_ms() > end) {
			daemon_log_tail(n->log, 20);
			fail_msg("node %s: %s is %s, not %s after %d ms", n->name, filter, got, want, ms);
		}
		usleep(10000);
	}
}

static shmf_t *open_on(const struct node *n, const char *filter)
{
	shmf_t *h;
	use(n);
	int rc = shmf_open(n->instance, filter, SHMF_RDWR, &h);
	if (rc < 0)
		fail_msg("node %s: shmf_open %s: %s", n->name, filter, shmf_strerror(rc));
	return h;
}

static size_t key(char *buf, const char *family, unsigned i)
{
	return (size_t)snprintf(buf, 32, "%s-%u", family, i);
}

/* Poll until @p h answers present for keys @p from..@p to of @p family
 * (within @p ms); @return the ms it took. */
static uint64_t wait_present(shmf_t *h, const char *family, unsigned from, unsigned to, int ms)
{
	char k[32];
	uint64_t start = now_ms(), end = start + (uint64_t)ms;
	for (unsigned i = from; i < to;) {
		int rc = shmf_check(h, k, key(k, family, i));
		assert_true(rc >= 0);
		if (rc == 1) {
			i++;
			continue;
		}
		if (now_ms() > end) {
			daemon_log_tail(nodes[0].log, 20);
			daemon_log_tail(nodes[1].log, 20);
			fail_msg("key %s-%u not replicated after %d ms", family, i, ms);
		}
		usleep(1000);
	}
	return now_ms() - start;
}

/* The stream's entries by node: how many stream entries and journal
 * entries (batch bytes / 16) each node wrote. Each is of this version,
 * with its tags and a sequence above the one its node sent before. */
static void stream_by_node(const char *stream, long long entries[2], long long journalled[2])
{
	entries[0] = entries[1] = journalled[0] = journalled[1] = 0;
	uint64_t last_seq[2] = { 0, 0 };
	redisReply *r = redis("XRANGE %s - +", stream);
	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	for (size_t i = 0; i < r->elements; i++) {
		const redisReply *f = r->element[i]->element[1];
		const redisReply *n = field(f, "n"), *b = field(f, "e"), *v = field(f, "v"), *s = field(f, "s");
		assert_non_null(n);
		assert_non_null(b);
		assert_non_null(v);
		assert_non_null(s);
		assert_string_equal(v->str, FLEET_STREAM_VERSION);
		assert_int_equal(s->len, 16);
		const redisReply *q = field(f, "q"), *m = field(f, "m");
		assert_non_null(q);
		assert_non_null(m);
		assert_int_equal(m->len, FLEET_MAC_BYTES);
		assert_int_equal(b->len % 16, 0);
		assert_true(b->len / 16 <= 4096);
		int who = !strcmp(n->str, "A") ? 0 : !strcmp(n->str, "B") ? 1 : -1;
		if (who < 0)
			fail_msg("stream %s: entry of unknown node '%s'", stream, n->str);
		uint64_t seq = strtoull(q->str, NULL, 10);
		assert_true(seq > last_seq[who]);
		last_seq[who] = seq;
		entries[who]++;
		journalled[who] += (long long)(b->len / 16);
	}
	freeReplyObject(r);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static const char filters[] = "[filter clicks]\ncapacity = 100000\nfpr = 0.001\nmode = 0660\nreplicate = yes\n"
			      "[filter caps]\ntype = cuckoo\ncapacity = 10000\nfpr = 0.01\nmode = 0660\n"
			      "replicate = yes\n";

/* ---- the tests ------------------------------------------------------------ */

/* The lag of single adds, one at a time: add on A (@p ab), poll B (@p bb)
 * until it has the key (5 s at most); the percentiles printed. @return
 * how many of the adds were new on A. */
static long long measure_single_add_lag(shmf_t *ab, shmf_t *bb)
{
	enum { LAGS = 200 };
	uint64_t lag_us[LAGS];
	char k[32];
	long long added = 0;
	for (unsigned i = 0; i < LAGS; i++) {
		size_t len = key(k, "lag", i);
		int rc = shmf_add(ab, k, len);
		assert_true(rc >= 0);
		added += rc;
		uint64_t t0 = now_us();
		while (shmf_check(bb, k, len) != 1) {
			if (now_us() - t0 > 5000000u)
				fail_msg("key %s not on B after 5 s", k);
			usleep(50);
		}
		lag_us[i] = now_us() - t0;
	}
	qsort(lag_us, LAGS, sizeof(lag_us[0]), cmp_u64);
	printf("replication lag, add on A until visible on B, %d adds one at a time: p50 %.2f ms, p99 %.2f ms, "
	       "max %.2f ms\n",
	       LAGS, lag_us[LAGS / 2] / 1000.0, lag_us[LAGS * 99 / 100] / 1000.0, lag_us[LAGS - 1] / 1000.0);
	return added;
}

/* A batch of 5,000 on A (@p ab), 100 single adds on B (@p bb): each side
 * gets the other's. The adds that were new on each side are added to
 * *@p new_a and *@p new_b. */
static void check_batches_cross(shmf_t *ab, shmf_t *bb, long long *new_a, long long *new_b)
{
	enum { MANY = 5000 };
	static shmf_key_t keys[MANY];
	static char kb[MANY][32];
	static uint8_t res[MANY];
	char k[32];
	for (unsigned i = 0; i < MANY; i++)
		keys[i] = (shmf_key_t){ .ptr = kb[i], .len = key(kb[i], "batch", i) };
	assert_true(shmf_add_many(ab, keys, MANY, res) >= 0);
	for (unsigned i = 0; i < MANY; i++)
		*new_a += res[i];
	for (unsigned i = 0; i < 100; i++) {
		int rc = shmf_add(bb, k, key(k, "fromb", i));
		assert_true(rc >= 0);
		*new_b += rc;
	}
	wait_present(bb, "batch", 0, MANY, 10000);
	wait_present(ab, "fromb", 0, 100, 10000);
}

/* Cuckoo: adds, a second copy, deletes on A (@p ac); B (@p bc) ends with
 * A's counts. */
static void check_cuckoo_counts_converge(shmf_t *ac, shmf_t *bc)
{
	char k[32];
	for (unsigned i = 0; i < 300; i++)
		assert_int_equal(shmf_add(ac, k, key(k, "cf", i)), 1);
	for (unsigned i = 0; i < 20; i++)
		assert_int_equal(shmf_add(ac, k, key(k, "cf", i)), 1);
	for (unsigned i = 280; i < 300; i++)
		assert_int_equal(shmf_del(ac, k, key(k, "cf", i)), 1);
	shmf_info_t ia, ib;
	assert_int_equal(shmf_info(ac, &ia), 0);
	assert_int_equal(ia.items, 300);
	uint64_t end = now_ms() + 10000;
	do {
		assert_int_equal(shmf_info(bc, &ib), 0);
		if (ib.items == ia.items && repl_int(&nodes[1], "caps", "applied") == 340)
			break;
		usleep(5000);
	} while (now_ms() < end);
	assert_int_equal(ib.items, ia.items);
	for (unsigned i = 0; i < 300; i++) {
		int want = i < 20 ? 2 : i < 280 ? 1 : 0;
		int got = shmf_count(bc, k, key(k, "cf", i));
		if (got < want)
			fail_msg("cuckoo key cf-%u: %d copies on B, %d on A", i, got, want);
	}
}

/*
 * No echo: every stream entry of clicks is its adder's, and the journal
 * entries each node wrote are exactly its adds that changed its filter
 * (@p new_a on A, @p new_b on B). B's applied entries were never sent
 * back. Each node skips its own entries (and only those) and applies the
 * other's; both cursors end at the stream's last entry.
 */
static void check_no_echo(long long new_a, long long new_b)
{
	redisReply *xl = redis("XLEN shmf:clicks");
	assert_non_null(xl);
	long long xlen = xl->integer;
	freeReplyObject(xl);
	long long entries[2], journalled[2];
	stream_by_node("shmf:clicks", entries, journalled);
	assert_int_equal(entries[0] + entries[1], xlen);
	assert_int_equal(journalled[0], new_a);
	assert_int_equal(journalled[1], new_b);
	assert_int_equal(repl_int(&nodes[0], "clicks", "sent"), new_a);
	assert_int_equal(repl_int(&nodes[1], "clicks", "sent"), new_b);
	wait_int(&nodes[0], "clicks", "own_skipped", entries[0], 5000);
	wait_int(&nodes[1], "clicks", "own_skipped", entries[1], 5000);
	wait_int(&nodes[1], "clicks", "applied", new_a, 5000);
	wait_int(&nodes[0], "clicks", "applied", new_b, 5000);
	assert_int_equal(repl_int(&nodes[1], "clicks", "dropped_foreign_shape"), 0);
	assert_int_equal(repl_int(&nodes[1], "clicks", "journal_depth"), 0);
	redisReply *last = redis("XREVRANGE shmf:clicks + - COUNT 1");
	assert_non_null(last);
	char want_cursor[64], got[64];
	snprintf(want_cursor, sizeof(want_cursor), "%s", last->element[0]->element[0]->str);
	freeReplyObject(last);
	for (int i = 0; i < 2; i++) {
		uint64_t end = now_ms() + 5000;
		while (strcmp(repl_str(&nodes[i], "clicks", "cursor", got, sizeof(got)), want_cursor) != 0 &&
		       now_ms() < end)
			usleep(10000);
		assert_string_equal(got, want_cursor);
		wait_state(&nodes[i], "clicks", "following", 5000);
	}
}

/* Nodes seen: B heard from A, with A's shape; and shmctl replication on B
 * (--json, for one filter and for all: valid JSON; plain: following). */
static void check_b_reports_a(void)
{
	redisReply *r = repl(&nodes[1], "clicks");
	const redisReply *seen = field(r, "nodes");
	assert_non_null(seen);
	assert_int_equal(seen->elements, 1);
	assert_string_equal(seen->element[0]->element[0]->str, "A");
	assert_int_equal(seen->element[0]->element[2]->integer, 0);
	assert_true(field(r, "lag_p50_ms")->integer >= 0);
	freeReplyObject(r);
	char cmd[1024];
	for (int all = 0; all < 2; all++) {
		snprintf(cmd, sizeof(cmd),
			 "SHMF_RUNTIME_DIR='%s' '%s' -i %s replication --json %s | python3 -m json.tool > /dev/null",
			 nodes[1].root, shmctl_path, nodes[1].instance, all ? "" : "clicks");
		assert_int_equal(system(cmd), 0);
	}
	snprintf(cmd, sizeof(cmd), "SHMF_RUNTIME_DIR='%s' '%s' -i %s replication | grep -q '^state  *following$'",
		 nodes[1].root, shmctl_path, nodes[1].instance);
	assert_int_equal(system(cmd), 0);
}

static void test_converge(void **state)
{
	(void)state;
	redis_start(NULL);
	node_start(&nodes[0], NULL, filters);
	node_start(&nodes[1], NULL, filters);
	shmf_t *ab = open_on(&nodes[0], "clicks"), *ac = open_on(&nodes[0], "caps");
	shmf_t *bb = open_on(&nodes[1], "clicks"), *bc = open_on(&nodes[1], "caps");
	long long new_a = measure_single_add_lag(ab, bb), new_b = 0;
	check_batches_cross(ab, bb, &new_a, &new_b);
	check_cuckoo_counts_converge(ac, bc);
	check_no_echo(new_a, new_b);
	check_b_reports_a();
	shmf_close(ab);
	shmf_close(ac);
	shmf_close(bb);
	shmf_close(bc);
}

static void test_created(void **state)
{
	(void)state;
	char k[32], cmd[1024];
	redis_start(NULL);
	node_start(&nodes[0], NULL, "");
	node_start(&nodes[1], NULL, "");
	const char *bf[] = { "BF.RESERVE", "viaverb", "0.001", "5000", "REPLICATE" };
	const char *cf[] = { "CF.RESERVE", "cfverb", "5000", "REPLICATE", "ERROR", "0.01" };
	const char *plain[] = { "BF.RESERVE", "plain", "0.001", "5000" };
	for (int i = 0; i < 2; i++) {
		redisReply *r = node_call(&nodes[i], 5, bf);
		assert_int_equal(r->type, REDIS_REPLY_STATUS);
		freeReplyObject(r);
		r = node_call(&nodes[i], 6, cf);
		assert_int_equal(r->type, REDIS_REPLY_STATUS);
		freeReplyObject(r);
		r = node_call(&nodes[i], 4, plain);
		assert_int_equal(r->type, REDIS_REPLY_STATUS);
		freeReplyObject(r);
		snprintf(cmd, sizeof(cmd),
			 "SHMF_RUNTIME_DIR='%s' '%s' -i %s create viactl --capacity 5000 --fpr 0.001 --replicate > /dev/null",
			 nodes[i].root, shmctl_path, nodes[i].instance);
		assert_int_equal(system(cmd), 0);
	}
	const char *names[] = { "viaverb", "cfverb", "viactl" };
	for (int f = 0; f < 3; f++) {
		shmf_t *a = open_on(&nodes[0], names[f]), *b = open_on(&nodes[1], names[f]);
		for (unsigned i = 0; i < 20; i++)
			assert_int_equal(shmf_add(a, k, key(k, names[f], i)), 1);
		wait_present(b, names[f], 0, 20, 10000);
		shmf_close(a);
		shmf_close(b);
	}
	/* Without REPLICATE: no journal, nothing sent, not reported. */
	shmf_t *a = open_on(&nodes[0], "plain"), *b = open_on(&nodes[1], "plain");
	assert_int_equal(shmf_add(a, "p", 1), 1);
	const char *rq[] = { "SHMF.REPLICATION", "plain" };
	redisReply *r = node_call(&nodes[0], 2, rq);
	assert_int_equal(r->type, REDIS_REPLY_ERROR);
	assert_non_null(strstr(r->str, "filter 'plain' does not replicate"));
	freeReplyObject(r);
	const char *all[] = { "SHMF.REPLICATION" };
	r = node_call(&nodes[0], 1, all);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, 3);
	freeReplyObject(r);
	usleep(200000);
	assert_int_equal(shmf_check(b, "p", 1), 0);
	redisReply *x = redis("EXISTS shmf:plain");
	assert_int_equal(x->integer, 0);
	freeReplyObject(x);
	shmf_close(a);
	shmf_close(b);
	/* A drop takes the journal with it. */
	char path[600];
	snprintf(path, sizeof(path), "%s/%s/viaverb.journal", nodes[0].root, nodes[0].instance);
	assert_int_equal(access(path, F_OK), 0);
	const char *drop[] = { "SHMF.DROP", "viaverb" };
	r = node_call(&nodes[0], 2, drop);
	assert_int_equal(r->type, REDIS_REPLY_STATUS);
	freeReplyObject(r);
	assert_int_equal(access(path, F_OK), -1);
}

static void test_foreign(void **state)
{
	(void)state;
	char k[32];
	redis_start(NULL);
	node_start(&nodes[0], NULL, "[filter odd]\ncapacity = 1000\nfpr = 0.001\nmode = 0660\nreplicate = yes\n");
	node_start(&nodes[1], NULL, "[filter odd]\ncapacity = 2000\nfpr = 0.001\nmode = 0660\nreplicate = yes\n");
	shmf_t *a = open_on(&nodes[0], "odd"), *b = open_on(&nodes[1], "odd");
	long long added = 0;
	for (unsigned i = 0; i < 50; i++)
		added += shmf_add(a, k, key(k, "odd", i));
	assert_int_equal(added, 50);
	wait_int(&nodes[1], "odd", "dropped_foreign_shape", 50, 10000);
	assert_int_equal(repl_int(&nodes[1], "odd", "applied"), 0);
	for (unsigned i = 0; i < 50; i++)
		assert_int_equal(shmf_check(b, k, key(k, "odd", i)), 0);
	redisReply *r = repl(&nodes[1], "odd");
	const redisReply *seen = field(r, "nodes");
	assert_int_equal(seen->elements, 1);
	assert_string_equal(seen->element[0]->element[0]->str, "A");
	assert_int_equal(seen->element[0]->element[2]->integer, 1);
	freeReplyObject(r);
	assert_true(daemon_log_count(nodes[1].log, "node A sends entries of another shape") >= 1);
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "SHMF_RUNTIME_DIR='%s' '%s' -i %s replication odd | grep -q 'FOREIGN SHAPE'",
		 nodes[1].root, shmctl_path, nodes[1].instance);
	assert_int_equal(system(cmd), 0);
	shmf_close(a);
	shmf_close(b);
}

static void test_redis_down(void **state)
{
	(void)state;
	char k[32], got[REPL_TEXT];
	/* No Redis yet: both nodes start and serve. */
	node_start(&nodes[0], NULL, filters);
	node_start(&nodes[1], NULL, filters);
	wait_state(&nodes[0], "clicks", "disconnected", 5000);
	/* "connecting" until the threads' first try has failed. */
	for (uint64_t end = now_ms() + 5000;
	     !strstr(repl_str(&nodes[0], "clicks", "last_error", got, sizeof(got)), "cannot connect") &&
	     now_ms() < end;)
		usleep(10000);
	assert_non_null(strstr(repl_str(&nodes[0], "clicks", "last_error", got, sizeof(got)), "cannot connect"));
	assert_true(daemon_log_count(nodes[0].log, "disconnected, retrying") >= 1);
	shmf_t *a = open_on(&nodes[0], "clicks"), *b = open_on(&nodes[1], "clicks");
	long long added = 0;
	for (unsigned i = 0; i < 100; i++)
		added += shmf_add(a, k, key(k, "down", i));
	assert_int_equal(added, 100);
	/* They wait in A's journal, and B has none of them. */
	wait_int(&nodes[0], "clicks", "journal_depth", 100, 10000);
	assert_int_equal(shmf_check(b, k, key(k, "down", 0)), 0);
	redis_start(NULL);
	wait_present(b, "down", 0, 100, 30000);
	wait_state(&nodes[0], "clicks", "following", 10000);
	wait_state(&nodes[1], "clicks", "following", 10000);
	assert_int_equal(repl_int(&nodes[0], "clicks", "journal_depth"), 0);
	assert_int_equal(repl_int(&nodes[0], "clicks", "sent"), 100);
	shmf_close(a);
	shmf_close(b);
}

static void test_wrong_password(void **state)
{
	(void)state;
	char got[REPL_TEXT];
	redis_start("right-password");
	node_start(&nodes[0], "wrong-password", filters);
	wait_state(&nodes[0], "clicks", "disconnected", 5000);
	uint64_t end = now_ms() + 5000;
	while (strstr(repl_str(&nodes[0], "clicks", "last_error", got, sizeof(got)), "AUTH refused") == NULL &&
	       now_ms() < end)
		usleep(10000);
	assert_non_null(strstr(got, "AUTH refused"));
	assert_true(daemon_log_count(nodes[0].log, "AUTH refused") >= 1);
	/* Adds go on. */
	shmf_t *a = open_on(&nodes[0], "clicks");
	assert_int_equal(shmf_add(a, "k", 1), 1);
	assert_int_equal(shmf_check(a, "k", 1), 1);
	shmf_close(a);
	/* The right password: it connects. */
	node_stop(&nodes[0]);
	node_start(&nodes[0], "right-password", filters);
	wait_state(&nodes[0], "clicks", "following", 10000);
	wait_int(&nodes[0], "clicks", "sent", 1, 10000);
}

/* The seed and a key's hash on every node, spelled out (fleet.h, hash.h). */
static uint64_t fleet_hash(const char *filter, const char *k)
{
	const char secret[] = "fleet-test-secret";
	uint64_t seed = XXH3_64bits_withSeed(filter, strlen(filter), XXH3_64bits(secret, strlen(secret)));
	return XXH3_64bits_withSeed(k, strlen(k), seed);
}

/* The sequence and tags of an entry of node @p node, as a member signs
 * it with the fleet's key (common/fleet-auth.h). */
static void sign(const char *node, const char *shape, const unsigned char *b, size_t len, char seq[24],
		 unsigned char mac[FLEET_MAC_BYTES])
{
	static struct fleet_key key;
	static int have;
	static uint64_t last;
	if (!have++)
		assert_int_equal(fleet_key_derive("fleet-test-secret", &key), 0);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t q = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000, s = 0;
	last = q > last ? q : last + 1;
	snprintf(seq, 24, "%" PRIu64, last);
	assert_int_equal(fleet_shape_parse(shape, strlen(shape), &s), 0);
	fleet_mac(&key, node, strlen(node), s, last, b, len, mac);
}

/* XADD one stream entry as node @p node would: version @p v (signed with
 * the fleet's key when it is this version), @p shape, one journal entry
 * (hash, op, window) little-endian. */
static void xadd_one(const char *stream, const char *v, const char *node, const char *shape, uint64_t hash, uint32_t op,
		     uint32_t window)
{
	unsigned char b[16];
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(hash >> (8 * i));
	for (int i = 0; i < 4; i++) {
		b[8 + i] = (unsigned char)(op >> (8 * i));
		b[12 + i] = (unsigned char)(window >> (8 * i));
	}
	redisReply *r;
	if (!strcmp(v, FLEET_STREAM_VERSION)) {
		char seq[24];
		unsigned char mac[FLEET_MAC_BYTES];
		sign(node, shape, b, sizeof(b), seq, mac);
		r = redis("XADD %s * v %s n %s s %s q %s e %b m %b", stream, v, node, shape, seq, b, sizeof(b), mac,
			  sizeof(mac));
	} else {
		r = redis("XADD %s * v %s n %s s %s e %b", stream, v, node, shape, b, sizeof(b));
	}
	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_STRING);
	freeReplyObject(r);
}

static long long info_int(const struct node *n, const char *filter, const char *name)
{
	const char *argv[] = { "SHMF.INFO", filter };
	redisReply *r = node_call(n, 2, argv);
	const redisReply *v = field(r, name);
	assert_non_null(v);
	long long x = v->integer;
	freeReplyObject(r);
	return x;
}

static void test_windows(void **state)
{
	(void)state;
	char shape[17], k[32];
	enum { SECS = 20 };
	redis_start(NULL);
	node_start(&nodes[1], NULL,
		   "[filter win]\ncapacity = 10000\nfpr = 0.001\nmode = 0660\nwindow = 20s\ngenerations = 3\n"
		   "replicate = yes\n");
	/* Not too near a boundary: this node's own rotation must not be what the test sees. */
	while ((uint64_t)time(NULL) % SECS >= SECS - 6)
		usleep(100000);
	uint64_t W = (uint64_t)time(NULL) / SECS;
	/* The filter may have begun in the window before if the node started
	 * just before a boundary: wait for its own rotation then. */
	uint64_t end = now_ms() + 5000;
	while (info_int(&nodes[1], "win", "live_generations") != 1 && (uint64_t)time(NULL) / SECS == W &&
	       now_ms() < end)
		usleep(10000);
	long long gens = info_int(&nodes[1], "win", "live_generations");
	/* B's own entry gives B's shape, as another node of the same shape has it. */
	shmf_t *b = open_on(&nodes[1], "win");
	assert_int_equal(shmf_add(b, "own", 3), 1);
	wait_int(&nodes[1], "win", "own_skipped", 1, 5000);
	redisReply *r = redis("XRANGE shmf:win - +");
	assert_non_null(r);
	assert_int_equal(r->elements, 1);
	snprintf(shape, sizeof(shape), "%s", field(r->element[0]->element[1], "s")->str);
	freeReplyObject(r);

	/* Node C's clock is ahead by less than the skew tolerance (5 s, a
	 * quarter of 20 s): its first entry of window W + 1 comes while B is
	 * still in W, at most 4 s before the boundary. B starts W + 1 then,
	 * and the key goes there. */
	struct timespec ts;
	for (;;) {
		clock_gettime(CLOCK_REALTIME, &ts);
		if ((uint64_t)ts.tv_sec / SECS != W || (uint64_t)ts.tv_sec % SECS >= SECS - 4)
			break;
		usleep(20000);
	}
	assert_true((uint64_t)ts.tv_sec / SECS == W);
	xadd_one("shmf:win", FLEET_STREAM_VERSION, "C", shape, fleet_hash("win", "next"), SHMF_JOP_ADD,
		 (uint32_t)(W + 1));
	wait_int(&nodes[1], "win", "applied", 1, 2500);
	assert_true((uint64_t)time(NULL) / SECS == W);
	assert_int_equal(info_int(&nodes[1], "win", "live_generations"), gens + 1);
	assert_int_equal(shmf_check(b, "next", 4), 1);
	char line[128];
	snprintf(line, sizeof(line), "another node started window %llu first", (unsigned long long)(W + 1));
	assert_int_equal(daemon_log_count(nodes[1].log, line), 1);

	/* Far ahead (beyond the skew tolerance): dropped and counted, never
	 * applied, no rotation. */
	xadd_one("shmf:win", FLEET_STREAM_VERSION, "C", shape, fleet_hash("win", "far"), SHMF_JOP_ADD,
		 (uint32_t)(W + 1000));
	wait_int(&nodes[1], "win", "dropped_future_window", 1, 1500);
	assert_int_equal(shmf_check(b, "far", 3), 0);
	assert_int_equal(info_int(&nodes[1], "win", "live_generations"), gens + 1);

	/* A window every live generation began after: retired, counted. */
	xadd_one("shmf:win", FLEET_STREAM_VERSION, "C", shape, fleet_hash("win", "old"), SHMF_JOP_ADD, 1);
	wait_int(&nodes[1], "win", "dropped_retired_window", 1, 5000);
	assert_int_equal(shmf_check(b, "old", 3), 0);

	/* Another version, an op no node writes, a cuckoo op on Bloom:
	 * malformed, never applied. */
	xadd_one("shmf:win", "3", "C", shape, fleet_hash("win", "v2"), SHMF_JOP_ADD, (uint32_t)W);
	xadd_one("shmf:win", FLEET_STREAM_VERSION, "C", shape, fleet_hash("win", "op9"), 9, (uint32_t)W);
	wait_int(&nodes[1], "win", "malformed", 2, 5000);
	assert_int_equal(shmf_check(b, "v2", 2), 0);
	assert_int_equal(shmf_check(b, "op9", 3), 0);
	assert_int_equal(repl_int(&nodes[1], "win", "applied"), 1);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(shmf_check(b, k, key(k, "none", i)), 0);
	shmf_close(b);
}

/* Write one entry (hash, op, window) into the journal of @p filter on
 * node @p n as any local writer of the filter can (the journal has the
 * filter's mode, 0660 here): map the file, claim a free ring, append. */
static void journal_forge(const struct node *n, const char *filter, uint64_t hash, uint32_t op, uint32_t window)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s/%s%s", n->root, n->instance, filter, SHMF_JOURNAL_SUFFIX);
	int fd = open(path, O_RDWR);
	if (fd < 0)
		fail_msg("cannot open %s", path);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	char *base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(base != MAP_FAILED);
	close(fd);
	const struct shmf_journal_header *h = (const void *)base;
	uint64_t mine = (uint64_t)getpid() << 32 | 0x7ead;
	for (uint32_t i = 0; i < h->nrings; i++) {
		struct shmf_journal_ring *r = (void *)(base + h->rings_offset + i * h->ring_bytes);
		uint64_t expect = 0;
		if (atomic_load(&r->owner) != mine && !atomic_compare_exchange_strong(&r->owner, &expect, mine))
			continue;
		uint64_t head = atomic_fetch_add(&r->head, 1);
		struct shmf_journal_entry *e = (void *)((char *)(r + 1) + (head & (h->ring_entries - 1)) * sizeof(*e));
		atomic_store(&e->hash, hash);
		atomic_store(&e->window, window);
		atomic_store_explicit(&e->op, op, memory_order_release);
		munmap(base, (size_t)st.st_size);
		return;
	}
	fail_msg("%s: no free ring", path);
}

/* The stream's entries from node @p node with a window of @p window or
 * more. */
static long long stream_windows_from(const char *stream, const char *node, uint64_t window)
{
	long long found = 0;
	redisReply *r = redis("XRANGE %s - +", stream);
	assert_non_null(r);
	for (size_t i = 0; i < r->elements; i++) {
		const redisReply *f = r->element[i]->element[1], *nd = field(f, "n"), *b = field(f, "e");
		if (nd == NULL || b == NULL || strcmp(nd->str, node) != 0)
			continue;
		for (size_t at = 0; at + 16 <= b->len; at += 16) {
			uint32_t w = 0;
			for (int j = 3; j >= 0; j--)
				w = w << 8 | (unsigned char)b->str[at + 12 + (size_t)j];
			found += w >= window;
		}
	}
	freeReplyObject(r);
	return found;
}

/* newest generation's window on node @p n (from its control segment). */
static uint64_t newest_window(const struct node *n, const char *filter)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s/%s", n->root, n->instance, SHMF_CTL_FILE);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	for (unsigned i = 0; i < SHMF_SLOTS; i++) {
		struct shmf_slot s;
		off_t at = (off_t)(sizeof(struct shmf_ctl_header) + i * sizeof(struct shmf_slot));
		assert_int_equal(pread(fd, &s, sizeof(s), at), sizeof(s));
		s.name[SHMF_NAME_MAX] = '\0';
		if (strcmp(s.name, filter) != 0 || s.window_secs == 0)
			continue;
		close(fd);
		return s.live_created[0] / s.window_secs;
	}
	fail_msg("no windowed slot named %s in %s", filter, path);
	return 0;
}

/* One forged entry once wiped a windowed filter on every node. A
 * window of 50 days (past 49.7, where window x length x 1000 wraps 64
 * bits); 1,000 keys added on A reach B; then entries of huge window
 * numbers are forged into A's journal as a local writer and into the
 * stream as anyone with Redis write access. Each is dropped and counted,
 * never sent on, and neither node rotates or loses a key. */
static void test_window_attack(void **state)
{
	(void)state;
	char k[32], shape[17];
	enum { KEYS = 1000 };
	const uint64_t SECS = 50 * 86400;
	static const char conf[] = "[filter long]\ncapacity = 10000\nfpr = 0.001\nmode = 0660\nwindow = 50d\n"
				   "generations = 2\nreplicate = yes\n";
	redis_start(NULL);
	node_start(&nodes[0], NULL, conf);
	node_start(&nodes[1], NULL, conf);
	shmf_t *a = open_on(&nodes[0], "long"), *b = open_on(&nodes[1], "long");
	for (unsigned i = 0; i < KEYS; i++)
		assert_int_equal(shmf_add(a, k, key(k, "kept", i)), 1);
	wait_present(b, "kept", 0, KEYS, 10000);
	wait_int(&nodes[0], "long", "sent", KEYS, 5000);
	uint64_t W = (uint64_t)time(NULL) / SECS;
	assert_int_equal(newest_window(&nodes[0], "long"), W);
	redisReply *r = redis("XRANGE shmf:long - + COUNT 1");
	assert_non_null(r);
	assert_int_equal(r->elements, 1);
	snprintf(shape, sizeof(shape), "%s", field(r->element[0]->element[1], "s")->str);
	freeReplyObject(r);

	/* The window number whose window x length x 1000 wraps to a time
	 * before now (the old check's "begins within 30 s"), the largest,
	 * and the next window (50 days ahead: beyond any skew tolerance). */
	const uint64_t wrap = UINT64_MAX / (SECS * 1000) + 1;
	const uint32_t forged[] = { (uint32_t)wrap, UINT32_MAX, (uint32_t)(W + 1) };
	for (unsigned i = 0; i < 3; i++)
		journal_forge(&nodes[0], "long", fleet_hash("long", "forged-j"), SHMF_JOP_ADD, forged[i]);
	wait_int(&nodes[0], "long", "dropped_future_window", 3, 5000);
	for (unsigned i = 0; i < 3; i++)
		xadd_one("shmf:long", FLEET_STREAM_VERSION, "C", shape, fleet_hash("long", "forged-s"), SHMF_JOP_ADD,
			 forged[i]);
	wait_int(&nodes[0], "long", "dropped_future_window", 6, 5000);
	wait_int(&nodes[1], "long", "dropped_future_window", 3, 5000);
	/* A tick or two for any rotation that would follow. */
	usleep(2500000);
	assert_int_equal(repl_int(&nodes[0], "long", "sent"), KEYS);
	assert_int_equal(stream_windows_from("shmf:long", "A", W + 1), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(newest_window(&nodes[i], "long"), W);
		assert_int_equal(info_int(&nodes[i], "long", "live_generations"), 1);
		assert_int_equal(daemon_log_count(nodes[i].log, "first; started it here"), 0);
		assert_true(daemon_log_count(nodes[i].log, "the skew tolerance") >= 1);
	}
	unsigned lost_a = 0, lost_b = 0;
	for (unsigned i = 0; i < KEYS; i++) {
		lost_a += shmf_check(a, k, key(k, "kept", i)) != 1;
		lost_b += shmf_check(b, k, key(k, "kept", i)) != 1;
	}
	printf("FIGURE window_attack_keys_lost_A = %u of %u\nFIGURE window_attack_keys_lost_B = %u of %u\n", lost_a,
	       KEYS, lost_b, KEYS);
	assert_int_equal(lost_a, 0);
	assert_int_equal(lost_b, 0);
	assert_int_equal(shmf_check(a, "forged-s", 8), 0);
	assert_int_equal(shmf_check(b, "forged-j", 8), 0);
	assert_int_equal(shmf_check(b, "forged-s", 8), 0);
	/* Replication goes on. */
	for (unsigned i = 0; i < 10; i++)
		assert_int_equal(shmf_add(a, k, key(k, "after", i)), 1);
	wait_present(b, "after", 0, 10, 10000);
	shmf_close(a);
	shmf_close(b);
}

/* A node whose clock is 25 s ahead, with windows of 10 s (2 generations):
 * its entries are of the window 2 or 3 on from the others'. The old 30 s
 * tolerance made the others start that window at once, retiring the
 * current one with the keys just added in it. Now the tolerance is 2.5 s
 * (a quarter window): the entries, forged into the stream as that node's
 * and into A's journal, are dropped and counted, nobody rotates early, and
 * every key just added stays on both nodes. */
static void test_skew_ahead(void **state)
{
	(void)state;
	char k[32], shape[17];
	enum { SECS = 10, KEYS = 500 };
	static const char conf[] = "[filter ten]\ncapacity = 10000\nfpr = 0.001\nmode = 0660\nwindow = 10s\n"
				   "generations = 2\nreplicate = yes\n";
	redis_start(NULL);
	node_start(&nodes[0], NULL, conf);
	node_start(&nodes[1], NULL, conf);
	shmf_t *a = open_on(&nodes[0], "ten"), *b = open_on(&nodes[1], "ten");
	/* Early in a window, both nodes in it: the keys have 10 s or more. */
	struct timespec ts;
	for (;;) {
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t into = ((uint64_t)ts.tv_sec % SECS) * 1000 + (uint64_t)ts.tv_nsec / 1000000;
		uint64_t w = (uint64_t)ts.tv_sec / SECS;
		if (into >= 1300 && into < 2500 && newest_window(&nodes[0], "ten") == w &&
		    newest_window(&nodes[1], "ten") == w)
			break;
		usleep(20000);
	}
	uint64_t W = (uint64_t)ts.tv_sec / SECS;
	for (unsigned i = 0; i < KEYS; i++)
		assert_int_equal(shmf_add(a, k, key(k, "just", i)), 1);
	wait_present(b, "just", 0, KEYS, 3000);
	redisReply *r = redis("XRANGE shmf:ten - + COUNT 1");
	assert_non_null(r);
	assert_int_equal(r->elements, 1);
	snprintf(shape, sizeof(shape), "%s", field(r->element[0]->element[1], "s")->str);
	freeReplyObject(r);

	/* Node C, 25 s ahead, adds keys: its entries, and the same forged
	 * into A's journal by a local writer. */
	clock_gettime(CLOCK_REALTIME, &ts);
	uint32_t ahead = (uint32_t)(((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 + 25000) / 1000 /
				    SECS);
	assert_true(ahead == W + 2 || ahead == W + 3);
	for (unsigned i = 0; i < 5; i++) {
		key(k, "c", i);
		xadd_one("shmf:ten", FLEET_STREAM_VERSION, "C", shape, fleet_hash("ten", k), SHMF_JOP_ADD, ahead);
		journal_forge(&nodes[0], "ten", fleet_hash("ten", k), SHMF_JOP_ADD, ahead);
	}
	wait_int(&nodes[0], "ten", "dropped_future_window", 10, 3000);
	wait_int(&nodes[1], "ten", "dropped_future_window", 5, 3000);
	/* Still window W (a tick would have rotated by now), both nodes. */
	usleep(1200000);
	clock_gettime(CLOCK_REALTIME, &ts);
	assert_int_equal((uint64_t)ts.tv_sec / SECS, W);
	unsigned lost[2] = { 0, 0 };
	shmf_t *h[2] = { a, b };
	for (int n = 0; n < 2; n++) {
		assert_int_equal(newest_window(&nodes[n], "ten"), W);
		assert_int_equal(daemon_log_count(nodes[n].log, "first; started it here"), 0);
		for (unsigned i = 0; i < KEYS; i++)
			lost[n] += shmf_check(h[n], k, key(k, "just", i)) != 1;
	}
	printf("FIGURE skew_ahead_keys_lost_A = %u of %u\nFIGURE skew_ahead_keys_lost_B = %u of %u\n", lost[0], KEYS,
	       lost[1], KEYS);
	assert_int_equal(lost[0], 0);
	assert_int_equal(lost[1], 0);
	assert_int_equal(stream_windows_from("shmf:ten", "A", W + 1), 0);
	shmf_close(a);
	shmf_close(b);
}

static void test_diverged(void **state)
{
	(void)state;
	char k[32], got[REPL_TEXT];
	redis_start(NULL);
	node_start(&nodes[0], NULL, filters);
	node_start(&nodes[1], NULL, filters);
	shmf_t *a = open_on(&nodes[0], "clicks"), *b = open_on(&nodes[1], "clicks");
	for (unsigned i = 0; i < 10; i++)
		assert_int_equal(shmf_add(a, k, key(k, "d", i)), 1);
	wait_int(&nodes[1], "clicks", "applied", 10, 10000);
	wait_state(&nodes[1], "clicks", "following", 5000);

	/* Redis lost its data: the stream is gone, B's cursor is not 0-0. */
	redisReply *r = redis("FLUSHALL");
	assert_non_null(r);
	freeReplyObject(r);
	wait_state(&nodes[1], "clicks", "diverged", 5000);
	repl_str(&nodes[1], "clicks", "last_error", got, sizeof(got));
	assert_non_null(strstr(got, "stream shmf:clicks is gone"));
	assert_non_null(strstr(got, "shmctl pull clicks --from PEER"));
	assert_non_null(strstr(got, "shmctl merge clicks SNAPSHOT"));
	assert_int_equal(daemon_log_count(nodes[1].log, "filter 'clicks': diverged"), 1);
	/* It keeps serving, and following what comes now. */
	assert_int_equal(shmf_check(b, k, key(k, "d", 0)), 1);
	for (unsigned i = 10; i < 20; i++)
		assert_int_equal(shmf_add(a, k, key(k, "d", i)), 1);
	wait_present(b, "d", 10, 20, 10000);
	wait_state(&nodes[1], "clicks", "diverged", 1000);

	/* Trimmed past a stopped node's cursor. */
	node_stop(&nodes[1]);
	for (unsigned i = 20; i < 30; i++)
		assert_int_equal(shmf_add(a, k, key(k, "d", i)), 1);
	wait_int(&nodes[0], "clicks", "sent", 30, 10000);
	r = redis("XTRIM shmf:clicks MAXLEN 1");
	assert_non_null(r);
	freeReplyObject(r);
	node_start(&nodes[1], NULL, filters);
	wait_state(&nodes[1], "clicks", "diverged", 5000);
	assert_non_null(strstr(repl_str(&nodes[1], "clicks", "last_error", got, sizeof(got)), "was trimmed past"));
	shmf_close(a);
	shmf_close(b);
}

/* Set the cursor of filter @p filter in node @p n's control segment (the
 * node stopped), and forget the senders' sequences stored with it: what a
 * crash between applying entries and storing both leaves. */
static void cursor_poke(const struct node *n, const char *filter, uint64_t ms, uint64_t seq)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s/%s", n->root, n->instance, SHMF_CTL_FILE);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	for (unsigned i = 0; i < SHMF_SLOTS; i++) {
		off_t at = (off_t)(sizeof(struct shmf_ctl_header) + i * sizeof(struct shmf_slot));
		char name[SHMF_NAME_MAX + 1];
		assert_int_equal(pread(fd, name, sizeof(name), at + offsetof(struct shmf_slot, name)), sizeof(name));
		if (strcmp(name, filter) != 0)
			continue;
		assert_int_equal(pwrite(fd, &ms, 8, at + offsetof(struct shmf_slot, cursor_ms)), 8);
		assert_int_equal(pwrite(fd, &seq, 8, at + offsetof(struct shmf_slot, cursor_seq)), 8);
		static const char none[sizeof(((struct shmf_slot *)0)->fleet_peers) + 8];
		assert_int_equal(pwrite(fd, none, sizeof(none), at + offsetof(struct shmf_slot, fleet_floor)),
				 sizeof(none));
		close(fd);
		return;
	}
	fail_msg("no slot named %s in %s", filter, path);
}

static void test_replay(void **state)
{
	(void)state;
	char k[32];
	redis_start(NULL);
	node_start(&nodes[0], NULL, filters);
	node_start(&nodes[1], NULL, filters);
	shmf_t *ab = open_on(&nodes[0], "clicks"), *ac = open_on(&nodes[0], "caps");
	for (unsigned i = 0; i < 40; i++) {
		assert_int_equal(shmf_add(ab, k, key(k, "re", i)), 1);
		assert_int_equal(shmf_add(ac, k, key(k, "re", i)), 1);
	}
	wait_int(&nodes[1], "clicks", "applied", 40, 10000);
	wait_int(&nodes[1], "caps", "applied", 40, 10000);
	/* B stops; its cursors go back to the start, as if it had died after
	 * applying every entry and before storing any cursor. */
	node_stop(&nodes[1]);
	cursor_poke(&nodes[1], "clicks", 0, 0);
	cursor_poke(&nodes[1], "caps", 0, 0);
	node_start(&nodes[1], NULL, filters);
	wait_int(&nodes[1], "clicks", "applied", 40, 10000);
	wait_int(&nodes[1], "caps", "applied", 40, 10000);
	shmf_t *bb = open_on(&nodes[1], "clicks"), *bc = open_on(&nodes[1], "caps");
	shmf_info_t ib, ic;
	assert_int_equal(shmf_info(bb, &ib), 0);
	assert_int_equal(shmf_info(bc, &ic), 0);
	/* Bloom: every bit was set already, the replay changed nothing. */
	for (unsigned i = 0; i < 40; i++)
		assert_int_equal(shmf_check(bb, k, key(k, "re", i)), 1);
	/* Cuckoo: each replayed add stored its copy again. */
	assert_int_equal(ic.items, 80);
	for (unsigned i = 0; i < 40; i++)
		assert_int_equal(shmf_count(bc, k, key(k, "re", i)), 2);
	shmf_close(ab);
	shmf_close(ac);
	shmf_close(bb);
	shmf_close(bc);
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++) {
		node_stop(&nodes[i]);
		if (nodes[i].root[0] != '\0')
			daemon_rundir_remove(nodes[i].root);
		nodes[i].root[0] = '\0';
	}
	redis_stop();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "test-fleet: cannot remove %s\n", tmp);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/shmf-fleet-XXXXXX");
	if (mkdtemp(tmp) == NULL)
		return -1;
	snprintf(redis_sock, sizeof(redis_sock), "%s/redis.sock", tmp);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		struct CMUnitTest test;
	} all[] = {
		{ "converge", cmocka_unit_test_setup_teardown(test_converge, setup, teardown) },
		{ "created", cmocka_unit_test_setup_teardown(test_created, setup, teardown) },
		{ "foreign", cmocka_unit_test_setup_teardown(test_foreign, setup, teardown) },
		{ "redis_down", cmocka_unit_test_setup_teardown(test_redis_down, setup, teardown) },
		{ "wrong_password", cmocka_unit_test_setup_teardown(test_wrong_password, setup, teardown) },
		{ "windows", cmocka_unit_test_setup_teardown(test_windows, setup, teardown) },
		{ "window_attack", cmocka_unit_test_setup_teardown(test_window_attack, setup, teardown) },
		{ "skew_ahead", cmocka_unit_test_setup_teardown(test_skew_ahead, setup, teardown) },
		{ "diverged", cmocka_unit_test_setup_teardown(test_diverged, setup, teardown) },
		{ "replay", cmocka_unit_test_setup_teardown(test_replay, setup, teardown) },
	};
	if (argc != 4) {
		fprintf(stderr, "usage: test-fleet SHMD SHMCTL TEST\n");
		return 2;
	}
	shmd_path = argv[1];
	shmctl_path = argv[2];
	setvbuf(stdout, NULL, _IONBF, 0);
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(argv[3], all[i].name)) {
			const struct CMUnitTest t[] = { all[i].test };
			return cmocka_run_group_tests_name(all[i].name, t, NULL, NULL);
		}
	fprintf(stderr, "test-fleet: unknown test '%s'\n", argv[3]);
	return 2;
}
