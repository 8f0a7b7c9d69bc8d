/*
 * test-grow-daemon.c - growing filters with a real shmd: a filter
 * configured with expansion = 2 grows through 8 layers while 4 forked
 * workers add through libshmf and a RESP client adds through the socket;
 * no key whose add returned is missing, the rate shmd estimates from the
 * layers' fill is within the declared rate and the one measured over a
 * million absent keys within 10% of it; then shmd is killed
 * and restarted (it re-attaches every layer), and the runtime directory
 * removed (the filter comes back from its periodic snapshot, every layer).
 * NONSCALING refusals through libshmf and the socket, a cuckoo filter of
 * EXPANSION 0 full, and bad growth options refused with nothing changed.
 *
 * Usage: test-grow-daemon PATH-TO-SHMD [growth|refusals]
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libclient/cuckoo.h"
#include "libclient/segment-format.h"
#include "tests/daemon-process.h"
#include <shmf.h>

#define WORKERS     4
#define WORKER_KEYS 140000 /* each; with the socket's, past the 7 layers of 508,000 keys */
#define RESP_KEYS   20000

static const char *shmd_path;
static char root[64], conf[128], snaps[128], logpath[128], sock[128];
static pid_t current; /* the running shmd, killed at exit whatever happened */

struct board {
	_Atomic uint64_t progress[WORKERS]; /* adds [0, progress) returned */
	_Atomic int failed;
};

static size_t key_of(char *buf, unsigned who, uint64_t i)
{
	return (size_t)sprintf(buf, "w%u-%llu", who, (unsigned long long)i);
}

static void start_shmd(void)
{
	current = daemon_start(shmd_path, conf, sock, logpath);
}

static void stop_shmd(int sig)
{
	daemon_stop(current, sig);
	current = 0;
}

static redisContext *client(void)
{
	redisContext *c = redisConnectUnix(sock);
	if (c == NULL || c->err)
		fail_msg("connect %s: %s", sock, c ? c->errstr : "no memory");
	return c;
}

/* A reply of @p type, or the test fails naming the command. */
static redisReply *call(redisContext *c, int type, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	redisReply *r = redisvCommand(c, fmt, ap);
	va_end(ap);
	if (r == NULL)
		fail_msg("%s: %s", fmt, c->errstr);
	if (type >= 0 && r->type != type)
		fail_msg("%s: reply type %d (%s), want %d", fmt, r->type, r->type == REDIS_REPLY_ERROR ? r->str : "",
			 type);
	return r;
}

static long long call_int(redisContext *c, const char *fmt, const char *a, const char *b)
{
	redisReply *r = call(c, REDIS_REPLY_ARRAY, fmt, a, b);
	long long v = r->elements == 1 && r->element[0]->type == REDIS_REPLY_INTEGER ? r->element[0]->integer : -1;
	freeReplyObject(r);
	return v;
}

/* Worker @p who: its keys through libshmf, a millisecond's pause after
 * every 5 at first, after every 145 at the end: the four of them add
 * about 20 keys a millisecond while the first layer (4,000 keys) fills,
 * 500 while the seventh (256,000) does. shmd makes each next layer at
 * half its current one, on a tick every 10 ms: a load that fills a layer
 * from half to full faster than that overfills it (by design: an add
 * never waits), and its rate would rise past the declared one. */
static void worker(struct board *b, unsigned who)
{
	shmf_t *h;
	if (shmf_open("gr", "gf", SHMF_RDWR, &h) < 0) {
		atomic_store(&b->failed, 1);
		_exit(3);
	}
	char key[64];
	for (uint64_t i = 0; i < WORKER_KEYS; i++) {
		int r = shmf_add(h, key, key_of(key, who, i));
		if (r < 0) {
			fprintf(stderr, "worker %u, key %llu: %s\n", who, (unsigned long long)i, shmf_strerror(r));
			atomic_store(&b->failed, 1);
			_exit(4);
		}
		atomic_store(&b->progress[who], i + 1);
		if (i % (5 + i / 1000) == 0)
			usleep(1000);
	}
	shmf_close(h);
	_exit(0);
}

/* Every key of the workers and of the socket in filter @p name; @return
 * how many were checked. */
static uint64_t assert_all_keys(const char *name, const uint64_t *upto, uint64_t resp)
{
	shmf_t *h;
	int rc = shmf_open("gr", name, SHMF_RDONLY, &h);
	if (rc < 0)
		fail_msg("open %s: %s", name, shmf_strerror(rc));
	char key[64];
	uint64_t n = 0;
	for (unsigned w = 0; w <= WORKERS; w++) {
		uint64_t to = w < WORKERS ? upto[w] : resp;
		for (uint64_t i = 0; i < to; i++, n++)
			if (shmf_check(h, key, key_of(key, w, i)) != 1)
				fail_msg("%s: key %s lost", name, key);
	}
	shmf_close(h);
	return n;
}

/* The socket's keys (key family WORKERS), 100 to a BF.MADD into gf, until
 * RESP_KEYS were added. @return how many were. */
static uint64_t add_through_socket(redisContext *c)
{
	const char *argv[102];
	size_t lens[102];
	char keys[100][64];
	uint64_t resp = 0;
	argv[0] = "BF.MADD";
	argv[1] = "gf";
	lens[0] = 7;
	lens[1] = 2;
	while (resp < RESP_KEYS) {
		for (int i = 0; i < 100; i++) {
			lens[2 + i] = key_of(keys[i], WORKERS, resp + (uint64_t)i);
			argv[2 + i] = keys[i];
		}
		redisReply *r = redisCommandArgv(c, 102, argv, lens);
		if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 100)
			fail_msg("BF.MADD: %s", r == NULL ? c->errstr : r->type == REDIS_REPLY_ERROR ? r->str : "?");
		freeReplyObject(r);
		resp += 100;
		usleep(2000);
	}
	return resp;
}

/* gf grew to 8 layers at least, each with its capacity (in *@p capacity;
 * its layers in *@p layers); no key lost, through libshmf and through the
 * socket. */
static void check_layers_hold_every_key(redisContext *c, const uint64_t *upto, uint64_t resp, long long *layers,
					long long *capacity)
{
	*layers = call_int(c, "BF.INFO %s %s", "gf", "FILTERS");
	*capacity = call_int(c, "BF.INFO %s %s", "gf", "CAPACITY");
	long long items = call_int(c, "BF.INFO %s %s", "gf", "ITEMS");
	print_message("grew to %lld layers, capacity %lld, %lld items of %d keys added\n", *layers, *capacity, items,
		      WORKERS * WORKER_KEYS + RESP_KEYS);
	redisReply *si = call(c, REDIS_REPLY_ARRAY, "SHMF.INFO gf");
	for (size_t i = 0; i + 1 < si->elements; i += 2)
		if (!strcmp(si->element[i]->str, "layers"))
			print_message("layers (layer:generation:capacity:items:bytes:state): %s\n",
				      si->element[i + 1]->str);
	freeReplyObject(si);
	assert_true(*layers >= 8);
	assert_int_equal(*capacity, 4000LL * ((1LL << *layers) - 1));
	uint64_t n = assert_all_keys("gf", upto, resp);
	assert_int_equal(n, WORKERS * WORKER_KEYS + RESP_KEYS);
	redisReply *r = call(c, REDIS_REPLY_ARRAY, "BF.MEXISTS gf %s %s %s", "w0-0", "w3-69999", "w4-19999");
	for (size_t i = 0; i < r->elements; i++)
		assert_int_equal(r->element[i]->integer, 1);
	freeReplyObject(r);
}

/*
 * The false-positive rate of gf over a million absent keys (each layer's
 * rate is half the one before's, the first 0.45 of the declared). The rate
 * shmd estimates from each layer's fill, and the one measured, are within
 * the declared one: the layers' rates sum to 0.45% + 0.225% + ... = 0.89%
 * for 7 full layers; one filter's measured rate varies around that by a
 * few percent (its first layers are small: 4,000 keys in 80 blocks), a
 * million draws by 1%.
 */
static void check_fpr_within_declared(redisContext *c)
{
	shmf_t *h;
	assert_int_equal(shmf_open("gr", "gf", SHMF_RDONLY, &h), 0);
	uint64_t fp = 0;
	shmf_key_t ks[1000];
	char kb[1000][32];
	uint8_t out[1000];
	for (uint64_t i = 0; i < 1000000; i += 1000) {
		for (int j = 0; j < 1000; j++) {
			ks[j].len = (size_t)sprintf(kb[j], "absent-%llu", (unsigned long long)(i + (uint64_t)j));
			ks[j].ptr = kb[j];
		}
		int got = shmf_check_many(h, ks, 1000, out);
		assert_true(got >= 0);
		fp += (uint64_t)got;
	}
	shmf_close(h);
	redisReply *r = call(c, REDIS_REPLY_ARRAY, "SHMF.INFO gf"); /* shmd's own fields: BF.INFO has RedisBloom's only
								     */
	double estimate = -1;
	for (size_t i = 0; i + 1 < r->elements; i += 2)
		if (!strcmp(r->element[i]->str, "fpr_estimate"))
			estimate = strtod(r->element[i + 1]->str, NULL);
	freeReplyObject(r);
	print_message("false positives: %llu of 1,000,000 absent keys (%.4f%%; estimated %.4f%%, declared 1%%)\n",
		      (unsigned long long)fp, (double)fp / 1e4, estimate * 100);
	assert_true(estimate > 0 && estimate <= 0.01);
	assert_true(fp <= 10000);
}

/* SIGKILL, restart: every one of gf's @p layers re-attached, every key
 * there. @return the client of the new shmd (@p c freed). */
static redisContext *check_kill_keeps_layers(redisContext *c, long long layers, const uint64_t *upto, uint64_t resp)
{
	stop_shmd(SIGKILL);
	start_shmd();
	redisFree(c);
	c = client();
	assert_int_equal(call_int(c, "BF.INFO %s %s", "gf", "FILTERS"), layers);
	assert_all_keys("gf", upto, resp);
	return c;
}

/* A reboot: the runtime directory gone, gf restored from its newest
 * periodic snapshot (taken after the adds stopped), its @p layers and
 * @p capacity and all; and it grows on from there. @return the client of
 * the new shmd (@p c freed). */
static redisContext *check_reboot_restores_layers(redisContext *c, long long layers, long long capacity,
						  const uint64_t *upto, uint64_t resp)
{
	time_t t0 = time(NULL);
	while (daemon_count_snapshots(snaps, "gf") < 2 || time(NULL) < t0 + 3)
		usleep(100000);
	stop_shmd(SIGKILL);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf %s/gr %s/gr.sock %s/gr.pid", root, root, root);
	assert_int_equal(system(cmd), 0);
	start_shmd();
	redisFree(c);
	c = client();
	assert_true(daemon_log_count(logpath, "filter 'gf': missing at start; restored from snapshot") >= 1);
	assert_int_equal(call_int(c, "BF.INFO %s %s", "gf", "FILTERS"), layers);
	assert_int_equal(call_int(c, "BF.INFO %s %s", "gf", "CAPACITY"), capacity);
	assert_all_keys("gf", upto, resp);
	redisReply *r = call(c, REDIS_REPLY_INTEGER, "BF.ADD gf %s", "after-restore");
	freeReplyObject(r);
	return c;
}

static void test_growth(void **state)
{
	(void)state;
	struct board *b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(b != MAP_FAILED);
	memset(b, 0, sizeof(*b));
	start_shmd();
	redisContext *c = client();
	pid_t pids[WORKERS];
	for (unsigned w = 0; w < WORKERS; w++)
		if ((pids[w] = fork()) == 0)
			worker(b, w);
	uint64_t resp = add_through_socket(c);
	for (unsigned w = 0; w < WORKERS; w++) {
		int st;
		assert_int_equal(waitpid(pids[w], &st, 0), pids[w]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	assert_int_equal(atomic_load(&b->failed), 0);
	uint64_t upto[WORKERS];
	for (unsigned w = 0; w < WORKERS; w++)
		upto[w] = atomic_load(&b->progress[w]);

	long long layers, capacity;
	check_layers_hold_every_key(c, upto, resp, &layers, &capacity);
	check_fpr_within_declared(c);
	c = check_kill_keeps_layers(c, layers, upto, resp);
	c = check_reboot_restores_layers(c, layers, capacity, upto, resp);
	redisFree(c);
	stop_shmd(SIGTERM);
	munmap(b, sizeof(*b));
}

/* Each request of @p argv answers an error starting with @p want. */
static void refused(redisContext *c, int argc, const char *const *argv, const char *want)
{
	redisReply *r = redisCommandArgv(c, argc, (const char **)argv, NULL);
	if (r == NULL || r->type != REDIS_REPLY_ERROR || strncmp(r->str, want, strlen(want)) != 0)
		fail_msg("%s %s ...: got %s, want error '%s'", argv[0], argv[1],
			 r == NULL                      ? c->errstr
			 : r->type == REDIS_REPLY_ERROR ? r->str
							: "no error",
			 want);
	freeReplyObject(r);
}

/* NONSCALING through the socket: 100 keys, then RedisBloom's error; a key
 * present answers 0, not the error; BF.MADD stops at the refusal, as
 * RedisBloom's, the error in its place; and through libshmf. */
static void check_nonscaling_full_refused(redisContext *c)
{
	redisReply *r = call(c, REDIS_REPLY_STATUS, "BF.RESERVE ns 0.001 100 NONSCALING");
	freeReplyObject(r);
	int added = 0;
	char key[32];
	for (int i = 0; i < 200; i++) {
		sprintf(key, "k%d", i);
		r = call(c, -1, "BF.ADD ns %s", key);
		if (r->type == REDIS_REPLY_INTEGER)
			added += (int)r->integer;
		else if (r->type != REDIS_REPLY_ERROR || strcmp(r->str, "ERR non scaling filter is full") != 0)
			fail_msg("BF.ADD ns %s: %s", key, r->str ? r->str : "?");
		freeReplyObject(r);
	}
	assert_int_equal(added, 100);
	r = call(c, REDIS_REPLY_INTEGER, "BF.ADD ns k0");
	assert_int_equal(r->integer, 0); /* present: 0, not the error */
	freeReplyObject(r);
	r = call(c, REDIS_REPLY_ARRAY, "BF.MADD ns k1 new-1 new-2");
	assert_int_equal(r->elements, 2);
	assert_int_equal(r->element[0]->integer, 0);
	assert_int_equal(r->element[1]->type, REDIS_REPLY_ERROR);
	freeReplyObject(r);
	r = call(c, REDIS_REPLY_ARRAY, "BF.INFO ns EXPANSION");
	assert_int_equal(r->element[0]->type, REDIS_REPLY_NIL);
	freeReplyObject(r);
	shmf_t *h;
	assert_int_equal(shmf_open("gr", "ns", SHMF_RDWR, &h), 0);
	assert_int_equal(shmf_add(h, "lib-new", 7), SHMF_E_NONSCALING);
	assert_int_equal(shmf_add(h, "k5", 2), 0);
	shmf_close(h);
}

/* CF EXPANSION 0: full for good, RedisBloom's "Filter is full", one
 * filter, expansion rate 0. */
static void check_cf_expansion_0_stays_full(redisContext *c)
{
	redisReply *r = call(c, REDIS_REPLY_STATUS, "CF.RESERVE c0 100 EXPANSION 0");
	freeReplyObject(r);
	char key[32];
	int full = 0;
	for (int i = 0; i < 1000 && !full; i++) {
		sprintf(key, "c%d", i);
		r = call(c, -1, "CF.ADD c0 %s", key);
		full = r->type == REDIS_REPLY_ERROR && strcmp(r->str, "Filter is full") == 0;
		freeReplyObject(r);
	}
	assert_true(full);
	r = call(c, REDIS_REPLY_ARRAY, "CF.INFO c0");
	assert_int_equal(r->element[5]->integer, 1);  /* Number of filters */
	assert_int_equal(r->element[13]->integer, 0); /* Expansion rate */
	freeReplyObject(r);
}

/* Set (@p word: this process, a live holder) or clear (0) the relocation
 * lock word of every data file of filter @p name in directory @p dir. */
static int lock_layers(const char *dir, const char *name, uint32_t word)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	size_t len = strlen(name);
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, name, len) != 0 || e->d_name[len] != '.' || !strstr(e->d_name, ".data"))
			continue;
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		int fd = open(path, O_RDWR);
		assert_true(fd >= 0);
		off_t at = SHMF_DATA_BLOCKS_OFF + offsetof(struct shmf_cuckoo_meta, lock) +
			   offsetof(struct shmf_cuckoo_lockword, word);
		assert_int_equal(pwrite(fd, &word, sizeof(word), at), (ssize_t)sizeof(word));
		close(fd);
		n++;
	}
	closedir(d);
	return n;
}

/* A growing cuckoo filter grows through RedisBloom's 32 expansions, 33
 * layers, then answers "Maximum expansions reached": on the loop, and
 * also when the add had to wait for the relocation lock and was finished
 * on the file worker (the lock held by this process, freed 300 ms after
 * the add was sent). */
static void check_cf_last_layer(redisContext *c)
{
	redisReply *r = call(c, REDIS_REPLY_STATUS, "CF.RESERVE mx 4");
	freeReplyObject(r);
	char key[32];
	int i, max = 0;
	for (i = 0; i < 20000 && !max; i++) {
		sprintf(key, "m%d", i);
		r = call(c, -1, "CF.ADD mx %s", key);
		max = r->type == REDIS_REPLY_ERROR && strcmp(r->str, "Maximum expansions reached") == 0;
		assert_true(max || r->type == REDIS_REPLY_INTEGER);
		freeReplyObject(r);
	}
	assert_true(max);
	r = call(c, REDIS_REPLY_ARRAY, "CF.INFO mx");
	assert_int_equal(r->element[5]->integer, 33); /* Number of filters */
	freeReplyObject(r);
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/gr", root); /* the instance's directory */
	assert_int_equal(lock_layers(dir, "mx", (uint32_t)getpid()), 33);
	pid_t freer = fork();
	assert_true(freer >= 0);
	if (freer == 0) {
		usleep(300000);
		_exit(lock_layers(dir, "mx", 0) == 33 ? 0 : 1);
	}
	/* New keys until one needs the lock (an add into a free slot does not). */
	int deferred = 0, st;
	for (int k = 0; k < 2000 && !deferred; k++) {
		sprintf(key, "late%d", k);
		r = call(c, -1, "CF.ADD mx %s", key);
		if (r->type == REDIS_REPLY_ERROR) {
			assert_string_equal(r->str, "Maximum expansions reached");
			/* It waited for the lock: the freer is done. */
			assert_int_equal(waitpid(freer, &st, WNOHANG), freer);
			deferred = 1;
		}
		freeReplyObject(r);
	}
	assert_true(deferred);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	r = call(c, REDIS_REPLY_INTEGER, "DEL mx");
	freeReplyObject(r);
}

/* Bad growth options: clear errors, nothing made, shmd up. */
static void check_bad_growth_options_refused(redisContext *c)
{
	redisReply *r = call(c, REDIS_REPLY_ARRAY, "SHMF.LIST");
	size_t before = r->elements;
	freeReplyObject(r);
	const struct {
		int argc;
		const char *argv[9];
		const char *want;
	} bad[] = {
		{ 6,
		  { "BF.RESERVE", "x", "0.01", "100", "EXPANSION", "-5" },
		  "ERR expansion must be in the range [0, 32768]" },
		{ 6,
		  { "BF.RESERVE", "x", "0.01", "100", "EXPANSION", "1000000" },
		  "ERR expansion must be in the range [0, 32768]" },
		{ 6, { "BF.RESERVE", "x", "0.01", "100", "EXPANSION", "99999999999999999999" }, "ERR bad expansion" },
		{ 6, { "BF.RESERVE", "x", "0.01", "100", "EXPANSION", "two" }, "ERR bad expansion" },
		{ 5, { "BF.RESERVE", "x", "0.01", "100", "EXPANSION" }, "ERR no expansion" },
		{ 8,
		  { "BF.RESERVE", "x", "0.01", "100", "EXPANSION", "2", "WINDOW", "1h" },
		  "ERR EXPANSION cannot be combined with WINDOW" },
		{ 7,
		  { "BF.RESERVE", "x", "0.01", "100", "NONSCALING", "EXPANSION", "2" },
		  "Nonscaling filters cannot expand" },
		{ 6, { "BF.INSERT", "x", "EXPANSION", "-1", "ITEMS", "a" }, "Bad expansion" },
		{ 6, { "BF.INSERT", "x", "EXPANSION", "40000", "ITEMS", "a" }, "Bad expansion" },
		{ 6, { "BF.INSERT", "x", "EXPANSION", "x", "ITEMS", "a" }, "Bad expansion" },
		{ 5,
		  { "CF.RESERVE", "x", "100", "EXPANSION", "-1" },
		  "EXPANSION: value must be in the range [0, 32768]" },
		{ 5, { "CF.RESERVE", "x", "100", "EXPANSION", "1e3" }, "Couldn't parse EXPANSION" },
		{ 5,
		  { "CF.RESERVE", "x", "100", "EXPANSION", "65536" },
		  "EXPANSION: value must be in the range [0, 32768]" },
		{ 7,
		  { "CF.RESERVE", "x", "100", "EXPANSION", "2", "WINDOW", "1h" },
		  "ERR EXPANSION cannot be combined with WINDOW" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		refused(c, bad[i].argc, bad[i].argv, bad[i].want);
	r = call(c, REDIS_REPLY_ARRAY, "SHMF.LIST");
	assert_int_equal(r->elements, before);
	freeReplyObject(r);
	r = call(c, REDIS_REPLY_STATUS, "PING");
	freeReplyObject(r);
}

static void test_refusals(void **state)
{
	(void)state;
	start_shmd();
	redisContext *c = client();
	check_nonscaling_full_refused(c);
	check_cf_expansion_0_stays_full(c);
	check_cf_last_layer(c);
	check_bad_growth_options_refused(c);
	redisFree(c);
	stop_shmd(SIGTERM);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH-TO-SHMD [growth|refusals]\n", argv[0]);
		return 2;
	}
	shmd_path = argv[1];
	if (daemon_rundir_make(root, sizeof(root), "grow") < 0)
		return 1;
	snprintf(snaps, sizeof(snaps), "%s/snaps", root);
	snprintf(conf, sizeof(conf), "%s/shmd.conf", root);
	snprintf(logpath, sizeof(logpath), "%s/shmd.log", root);
	snprintf(sock, sizeof(sock), "%s/gr.sock", root);
	mkdir(snaps, 0700);
	if (daemon_write_conf(conf,
			      "[instance]\nname = gr\nsnapshot_dir = %s\n"
			      "[filter gf]\ntype = bloom\ncapacity = 4000\nfpr = 0.01\nexpansion = 2\nmode = 0660\n"
			      "snapshot_every = 1s\nsnapshot_keep = 2\n",
			      snaps) < 0)
		return 1;
	const struct CMUnitTest all[] = { cmocka_unit_test(test_growth), cmocka_unit_test(test_refusals) };
	const char *const names[] = { "growth", "refusals" };
	int rc = 2;
	if (argc == 2)
		rc = cmocka_run_group_tests(all, NULL, NULL);
	for (size_t i = 0; argc > 2 && i < 2; i++)
		if (!strcmp(argv[2], names[i]))
			rc = _cmocka_run_group_tests(names[i], &all[i], 1, NULL, NULL);
	if (current > 0 && kill(current, SIGKILL) == 0)
		waitpid(current, NULL, 0);
	if (rc != 0 && daemon_log_tail(logpath, 30) < 0)
		rc = 1;
	if (daemon_rundir_remove(root) < 0)
		return 1;
	return rc;
}
