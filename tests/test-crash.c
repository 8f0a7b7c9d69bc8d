/*
 * test-crash.c - the crash matrix of the failure model (docs/design.md): SIGKILL
 * at random points of
 *
 *   workers      - processes adding to a Bloom filter, and to a cuckoo
 *                  filter at high load (relocations under the writer lock);
 *   lock holder  - a process doing capped adds, stopped and killed while it
 *                  holds the cuckoo relocation lock (often mid-move), with
 *                  another process waiting for that lock;
 *   shmd         - the real daemon, killed while it swaps a filter, rotates
 *                  a time window, writes a snapshot (adders running, a
 *                  cuckoo filter's lock held by the snapshot) or restores.
 *
 * After every kill: no false negative for any key whose add returned (in a
 * live generation), every snapshot file is whole (the previous or the new
 * one), shmd starts again and re-attaches, no data file is left that no
 * filter names, and clients (including handles opened before the kill)
 * keep working. Each case runs 20 times (SHMF_LONG=1: 200; SHMF_CRASH_RUNS
 * overrides both); SHMF_SEED replays a run's random choices.
 *
 * Usage: test-crash CASE [PATH-TO-SHMD]
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libclient/cuckoo.h"
#include "tests/daemon-process.h"
#include "tests/fixture.h"
#include "libclient/rundir.h"
#include "common/snapshot.h"

static unsigned runs;
static const char *shmd_path;

/* ---- Random choices, replayable ----------------------------------------- */

static uint64_t rng;

static uint64_t rnd(void)
{
	return fixture_random(&rng);
}

static uint64_t rnd_below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void sleep_us(uint64_t us)
{
	struct timespec ts = { .tv_sec = (time_t)(us / 1000000u), .tv_nsec = (long)(us % 1000000u) * 1000 };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Stop @p pid and wait until it is stopped. */
static void stop_child(pid_t pid)
{
	kill(pid, SIGSTOP);
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	assert_int_equal(waitid(P_PID, (id_t)pid, &si, WSTOPPED | WEXITED), 0);
	if (si.si_code != CLD_STOPPED)
		fail_msg("process %d ended (code %d, status %d) instead of stopping", (int)pid, si.si_code,
			 si.si_status);
}

static void kill_child(pid_t pid)
{
	kill(pid, SIGKILL);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

/* ---- Workers killed during adds (a private registry) --------------------- */

static struct fixture fx;

#define WORKERS 2
struct board {
	_Atomic uint64_t progress[WORKERS]; /* worker i's adds [0, progress) have returned */
	_Atomic int full[WORKERS];          /* worker i met SHMF_E_FULL and waits */
	_Atomic int started[WORKERS];
	_Atomic int slow_moves;    /* set by the test: workers slow their moves */
	_Atomic int waiter_result; /* test_lock_holder's waiter: what its capped add returned */
};

/* A relocation that takes its time between copying a fingerprint to its
 * new bucket and clearing the old one: a random stop then often lands
 * mid-move (the window a killed mover must leave safe). */
static void slow_move(void)
{
	uint64_t t0 = now_us();
	while (now_us() - t0 < 20)
		;
}

/* Add keys of @p family + id, one after another, until killed (@p cap:
 * capped adds). A cuckoo worker that fills the filter waits to be killed. */
static __attribute__((noreturn)) void worker(struct board *b, const char *name, unsigned id, unsigned family,
					     unsigned cap)
{
	shmf_t *f;
	if (atomic_load(&b->slow_moves))
		shmf_cuckoo_move_hook = slow_move;
	if (shmf_open(FIXTURE_INSTANCE, name, SHMF_RDWR, &f) < 0)
		_exit(3);
	atomic_store(&b->started[id], 1);
	char key[32];
	for (uint64_t i = 0;; i++) {
		size_t len = fixture_key(key, family + id, i);
		int r = cap ? shmf_add_capped(f, key, len, cap) : shmf_add(f, key, len);
		if (r == SHMF_E_FULL) {
			atomic_store(&b->full[id], 1);
			for (;;)
				pause();
		}
		if (r < 0)
			_exit(4);
		atomic_store(&b->progress[id], i + 1);
	}
}

static pid_t start_worker(struct board *b, const char *name, unsigned id, unsigned family, unsigned cap)
{
	pid_t pid = fork_child();
	if (pid == 0)
		worker(b, name, id, family, cap);
	while (!atomic_load(&b->started[id]))
		sleep_us(100);
	return pid;
}

static void assert_all_present(shmf_t *f, unsigned family, uint64_t n, const char *what)
{
	char key[32];
	for (uint64_t i = 0; i < n; i++) {
		int r = shmf_check(f, key, fixture_key(key, family, i));
		if (r != 1)
			fail_msg("%s: key %llu of family %u (of %llu whose add returned) %s", what,
				 (unsigned long long)i, family, (unsigned long long)n,
				 r == 0 ? "is missing" : shmf_strerror(r));
	}
}

/* Bloom: two workers add; both are killed at a random instant. */
static void test_workers_bloom(void **state)
{
	(void)state;
	fixture_bloom(&fx, "wb", 20000000, 0.01);
	shmf_t *check = fixture_open("wb", SHMF_RDWR);
	struct board *b = fixture_shared_map(sizeof(*b));
	uint64_t total = 0;
	for (unsigned run = 0; run < runs; run++) {
		memset(b, 0, sizeof(*b));
		unsigned family = 10 + 2 * (run % 100);
		pid_t pids[WORKERS];
		for (unsigned i = 0; i < WORKERS; i++)
			pids[i] = start_worker(b, "wb", i, family, 0);
		sleep_us(rnd_below(8000));
		for (unsigned i = 0; i < WORKERS; i++)
			kill_child(pids[i]);
		for (unsigned i = 0; i < WORKERS; i++) {
			uint64_t n = atomic_load(&b->progress[i]);
			assert_all_present(check, family + i, n, "bloom worker killed");
			total += n;
		}
		/* The filter still takes adds and answers. */
		char key[32];
		size_t len = fixture_key(key, 9, run);
		assert_true(shmf_add(check, key, len) >= 0);
		assert_int_equal(shmf_check(check, key, len), 1);
	}
	print_message("bloom workers: %u runs, 2 workers killed at random points in each, %llu returned adds all found\n",
		      runs, (unsigned long long)total);
	shmf_close(check);
	munmap(b, sizeof(*b));
}

/* The data file of the newest generation of @p name, mapped read-only, to
 * look at the cuckoo relocation state. */
struct peek {
	int fd;
	size_t len;
	void *base;
	struct shmf_cuckoo_meta *meta;
};

static void peek_open(const char *name, struct peek *p)
{
	char path[600];
	fixture_data_path(&fx, name, path, sizeof(path));
	p->fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(p->fd >= 0);
	struct stat st;
	assert_int_equal(fstat(p->fd, &st), 0);
	p->len = (size_t)st.st_size;
	p->base = mmap(NULL, p->len, PROT_READ, MAP_SHARED, p->fd, 0);
	assert_true(p->base != MAP_FAILED);
	p->meta = (struct shmf_cuckoo_meta *)((char *)p->base + SHMF_DATA_BLOCKS_OFF);
}

static void peek_close(struct peek *p)
{
	munmap(p->base, p->len);
	close(p->fd);
}

/* Is the relocation lock of the peeked file held (its word names a
 * holder; one that died reads as free)? */
static int lock_held(const struct peek *p)
{
	return shmf_cuckoo_lock_held(p->meta);
}

/* No move is open: every version stripe even, no move recorded. */
static void assert_no_open_move(const struct peek *p)
{
	assert_int_equal(atomic_load(&p->meta->moving), 0);
	for (unsigned s = 0; s < SHMF_CUCKOO_STRIPES; s++)
		if (atomic_load(&p->meta->version[s]) & 1)
			fail_msg("version stripe %u is still odd after the next writer took the lock", s);
}

/* A fresh cuckoo filter @p name of @p capacity keys, filled to @p percent
 * of its slots by the test (family 8), so that the workers' adds relocate. */
static uint64_t cuckoo_prefilled(const char *name, uint64_t capacity, unsigned percent, shmf_t **out)
{
	fixture_filter(&fx, name, SHMF_TYPE_CUCKOO, capacity, 0.01);
	shmf_t *f = fixture_open(name, SHMF_RDWR);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	uint64_t n = info.buckets * info.bucket_size * percent / 100;
	char key[32];
	for (uint64_t i = 0; i < n; i++)
		assert_int_equal(shmf_add(f, key, fixture_key(key, 8, i)), 1);
	*out = f;
	return n;
}

/* Alarm: a test that would hang on a lock nobody can release fails instead. */
static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "test-crash: timed out (a lock that should be free is held?)\n";
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(99);
}

/* Cuckoo: two workers add at 85-100% load; they are stopped at random
 * instants, and killed there (always when one holds the relocation lock,
 * else one time in four). */
static void test_workers_cuckoo(void **state)
{
	(void)state;
	struct board *b = fixture_shared_map(sizeof(*b));
	unsigned with_lock = 0, mid_move = 0, plain = 0;
	uint64_t total = 0;
	signal(SIGALRM, on_alarm);
	for (unsigned run = 0; run < runs; run++) {
		char name[32], err[REGISTRY_ERR_MAX];
		snprintf(name, sizeof(name), "wc%u", run);
		shmf_t *f;
		uint64_t pre = cuckoo_prefilled(name, 20000, 85, &f);
		struct peek pk;
		peek_open(name, &pk);
		memset(b, 0, sizeof(*b));
		pid_t pids[WORKERS];
		for (unsigned i = 0; i < WORKERS; i++)
			pids[i] = start_worker(b, name, i, 20, 0);
		for (unsigned tries = 0;; tries++) {
			sleep_us(rnd_below(400));
			for (unsigned i = 0; i < WORKERS; i++)
				stop_child(pids[i]);
			int held = lock_held(&pk), moving = atomic_load(&pk.meta->moving) != 0;
			int full = atomic_load(&b->full[0]) && atomic_load(&b->full[1]);
			if (held || full || tries > 200 || rnd_below(4) == 0) {
				with_lock += held;
				mid_move += moving;
				plain += !held;
				break;
			}
			for (unsigned i = 0; i < WORKERS; i++)
				kill(pids[i], SIGCONT);
		}
		for (unsigned i = 0; i < WORKERS; i++)
			kill_child(pids[i]);
		/* Every key: the test's and each worker's returned adds. */
		alarm(60);
		assert_all_present(f, 8, pre, "cuckoo prefill after workers were killed");
		for (unsigned i = 0; i < WORKERS; i++) {
			uint64_t n = atomic_load(&b->progress[i]);
			assert_all_present(f, 20 + i, n, "cuckoo worker killed");
			total += n;
		}
		/* The lock is free: a capped add takes it (and repairs an open
		 * move), and the filter still answers. */
		char key[32];
		size_t len = fixture_key(key, 9, run);
		int r = shmf_add_capped(f, key, len, 1);
		assert_true(r == 0 || r == SHMF_E_FULL);
		assert_false(lock_held(&pk));
		assert_no_open_move(&pk);
		alarm(0);
		peek_close(&pk);
		shmf_close(f);
		assert_int_equal(registry_drop(&fx.reg, name, err, sizeof(err)), 0);
	}
	print_message("cuckoo workers: %u runs: killed holding the relocation lock %u times (%u of them mid-move), "
		      "elsewhere %u times; %llu returned adds all found\n",
		      runs, with_lock, mid_move, plain, (unsigned long long)total);
	munmap(b, sizeof(*b));
}

/* A worker doing capped adds at 90% load is stopped while it holds the
 * relocation lock; another process then waits for the lock; the holder is
 * killed; the waiter gets the lock at once and nothing is lost. */
static void test_lock_holder(void **state)
{
	(void)state;
	struct board *b = fixture_shared_map(sizeof(*b));
	unsigned caught = 0, mid_move = 0;
	uint64_t total = 0;
	signal(SIGALRM, on_alarm);
	for (unsigned run = 0; run < runs; run++) {
		char name[32], err[REGISTRY_ERR_MAX];
		snprintf(name, sizeof(name), "lh%u", run);
		shmf_t *f;
		/* 10% of a million-key filter to fill: with the lock a word in
		 * shared memory, the worker fills 100,000 keys' 10% in a
		 * millisecond or two, before a random stop catches it. */
		uint64_t pre = cuckoo_prefilled(name, 1000000, 90, &f);
		struct peek pk;
		peek_open(name, &pk);
		memset(b, 0, sizeof(*b));
		atomic_store(&b->slow_moves, run % 2 == 0);
		pid_t holder = start_worker(b, name, 0, 30, 2);
		/* Odd runs: the first time it holds the lock. Even runs (moves
		 * slowed): wait for an instant when it is moving a fingerprint. */
		int held = 0;
		for (unsigned tries = 0; tries < 3000; tries++) {
			sleep_us(rnd_below(300));
			stop_child(holder);
			held = lock_held(&pk);
			if (held && (run % 2 == 1 || atomic_load(&pk.meta->moving) != 0 || tries >= 1500))
				break;
			if (atomic_load(&b->full[0]))
				fail_msg("run %u: the worker filled the filter before it was caught holding the lock",
					 run);
			kill(holder, SIGCONT);
			held = 0;
		}
		if (!held)
			fail_msg("run %u: never caught the worker holding the lock in 3000 tries (%s)", run,
				 atomic_load(&b->full[0]) ? "it filled the filter" : "it kept running");
		caught++;
		int pk_moving = atomic_load(&pk.meta->moving) != 0;
		mid_move += pk_moving;
		/* A waiter: blocks on the lock while the holder is stopped. */
		int ready[2];
		assert_int_equal(pipe(ready), 0);
		pid_t waiter = fork_child();
		if (waiter == 0) {
			char key[32];
			size_t len = fixture_key(key, 9, run);
			shmf_t *w;
			if (shmf_open(FIXTURE_INSTANCE, name, SHMF_RDWR, &w) < 0)
				_exit(3);
			(void)!write(ready[1], "w", 1);
			int r = shmf_add_capped(w, key, len, 1);
			atomic_store(&b->waiter_result, r);
			shmf_close(w);
			_exit(r == 0 ? 0 : r == SHMF_E_FULL ? 5 : 4);
		}
		char c;
		assert_int_equal(read(ready[0], &c, 1), 1);
		close(ready[0]);
		close(ready[1]);
		sleep_us(20000);
		int st;
		assert_int_equal(waitpid(waiter, &st, WNOHANG), 0); /* still waiting for the lock */
		kill_child(holder);
		uint64_t t0 = now_us();
		alarm(30);
		assert_int_equal(waitpid(waiter, &st, 0), waiter);
		alarm(0);
		if (now_us() - t0 > 5000000)
			fail_msg("run %u: the waiter needed %llu ms to get the lock of a killed holder", run,
				 (unsigned long long)(now_us() - t0) / 1000);
		if (!WIFEXITED(st) || (WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 5))
			fail_msg("run %u: the waiter %s %d (its capped add: %s; the holder %s mid-move)", run,
				 WIFEXITED(st) ? "exited" : "died of signal",
				 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
				 shmf_strerror(atomic_load(&b->waiter_result)), pk_moving ? "was" : "was not");
		assert_all_present(f, 8, pre, "prefill after the lock holder was killed");
		uint64_t n = atomic_load(&b->progress[0]);
		assert_all_present(f, 30, n, "capped adds of the killed lock holder");
		total += n;
		assert_false(lock_held(&pk));
		assert_no_open_move(&pk);
		peek_close(&pk);
		shmf_close(f);
		assert_int_equal(registry_drop(&fx.reg, name, err, sizeof(err)), 0);
	}
	print_message("lock holder: %u runs, killed holding the relocation lock every time (%u mid-move) with a "
		      "process waiting for it, which got it at once; %llu returned capped adds all found\n",
		      caught, mid_move, (unsigned long long)total);
	munmap(b, sizeof(*b));
}

/* ---- shmd killed during its operations ---------------------------------- */

#define INSTANCE "cr"
static struct daemon_dir shmd; /* shmd's runtime directory and files */
static char files[128];        /* shmd.root/files: the snapshots */
static pid_t daemon_pid;
static int case_passed;

static int connect_shmd(void)
{
	return sock_unix_connect(shmd.sock);
}

static void start_shmd(void)
{
	daemon_pid = daemon_start(shmd_path, shmd.conf, shmd.sock, shmd.log);
}

static void kill_shmd(void)
{
	daemon_stop(daemon_pid, SIGKILL);
	daemon_pid = 0;
}

/* A request that must answer +OK; @return how long it took, in µs. */
static uint64_t call_ok(int argc, const char *const *argv)
{
	char reply[1024];
	int fd = connect_shmd();
	assert_true(fd >= 0);
	uint64_t t0 = now_us();
	resp_send(fd, argc, argv, NULL);
	resp_read_line(fd, reply, sizeof(reply), 60000);
	uint64_t t = now_us() - t0;
	close(fd);
	if (strncmp(reply, "+OK", 3) != 0)
		fail_msg("%s %s: '%s'", argv[0], argc > 1 ? argv[1] : "", reply);
	return t;
}

/* At least @p runs runs, and more (up to three times as many) until a
 * kill has landed before shmd answered, so that the case is never passed
 * by kills that all came after the work. */
static int more_runs(unsigned run, unsigned replied)
{
	return run < runs || (run == replied && run < 3 * runs);
}

/* The median of @p n durations (sorts them). A median, not the slowest:
 * one slow measurement would send most kills past the end of the work. */
static uint64_t median(uint64_t *t, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
			uint64_t x = t[j];
			t[j] = t[j - 1];
			t[j - 1] = x;
		}
	return t[n / 2];
}

/*
 * Send a request, kill shmd a random time into it (up to 150% of @p typical
 * µs, what it takes without a kill), and say whether it had answered +OK.
 */
static int call_and_kill(int argc, const char *const *argv, uint64_t typical)
{
	char reply[1024];
	int fd = connect_shmd();
	assert_true(fd >= 0);
	resp_send(fd, argc, argv, NULL);
	sleep_us(rnd_below(typical * 3 / 2 + 1));
	kill_shmd();
	resp_read_line(fd, reply, sizeof(reply), 200);
	close(fd);
	if (reply[0] != '\0' && strncmp(reply, "+OK", 3) != 0)
		fail_msg("%s %s answered '%s' before the kill", argv[0], argv[1], reply);
	return reply[0] != '\0';
}

/* Every data file in the instance directory is named by a live slot
 * (a restart removes those left by a daemon killed mid-operation). */
static void assert_no_orphans(void)
{
	struct shmf_dir d;
	struct shmf_ctl_map m;
	assert_int_equal(shmf_dir_open(INSTANCE, &d), 0);
	assert_int_equal(shmf_ctl_map_open(&d, 0, &m), 0);
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", shmd.root, INSTANCE);
	DIR *dir = opendir(path);
	assert_non_null(dir);
	struct dirent *e;
	while ((e = readdir(dir)) != NULL) {
		size_t n = strlen(e->d_name);
		if (n < 5 || strcmp(e->d_name + n - 5, ".data") != 0)
			continue;
		int named = 0;
		for (unsigned i = 0; i < SHMF_SLOTS && !named; i++) {
			struct shmf_slot copy;
			if (atomic_load(&m.slots[i].generation) == 0 || shmf_slot_read(&m.slots[i], &copy) < 0 ||
			    shmf_slot_check(&copy) < 0)
				continue;
			for (unsigned j = 0; j < copy.nlive && !named; j++) {
				char want[128];
				shmf_data_filename(copy.name, copy.live[j], want, sizeof(want));
				named = strcmp(want, e->d_name) == 0;
			}
		}
		if (!named)
			fail_msg("data file %s/%s is named by no filter after the restart", path, e->d_name);
	}
	closedir(dir);
	shmf_ctl_map_close(&m);
	shmf_dir_close(&d);
}

/* The live generations of filter @p name, newest first; @return how many. */
static unsigned live_generations(const char *name, uint64_t gens[SHMF_RING_MAX])
{
	struct shmf_dir d;
	struct shmf_ctl_map m;
	struct shmf_slot copy;
	assert_int_equal(shmf_dir_open(INSTANCE, &d), 0);
	assert_int_equal(shmf_ctl_map_open(&d, 0, &m), 0);
	int slot = shmf_slot_find(&m, name, &copy);
	if (slot < 0)
		fail_msg("filter %s: %s", name, shmf_strerror(slot));
	memcpy(gens, copy.live, sizeof(copy.live));
	shmf_ctl_map_close(&m);
	shmf_dir_close(&d);
	return copy.nlive;
}

static int shmd_setup(void **state)
{
	(void)state;
	if (daemon_dir_make(&shmd, "crash", INSTANCE, 0) < 0)
		return -1;
	snprintf(files, sizeof(files), "%s/files", shmd.root);
	mkdir(files, 0700);
	if (daemon_write_conf(shmd.conf,
			      "[instance]\nname = " INSTANCE "\n"
			      "[filter sw]\ntype = bloom\ncapacity = 8000000\nfpr = 0.01\nmode = 0660\n"
			      "[filter rot]\ntype = bloom\ncapacity = 20000000\nfpr = 0.01\nmode = 0660\nwindow = 1d\n"
			      "generations = 3\n"
			      "[filter sb]\ntype = bloom\ncapacity = 4000000\nfpr = 0.01\nmode = 0660\n"
			      "[filter sc]\ntype = cuckoo\ncapacity = 2000000\nfpr = 0.01\nmode = 0660\n") < 0)
		return -1;
	case_passed = 0;
	start_shmd();
	return 0;
}

static int shmd_teardown(void **state)
{
	(void)state;
	if (daemon_pid > 0)
		kill_shmd();
	if (!case_passed && daemon_log_tail(shmd.log, 25) < 0)
		return -1;
	return daemon_dir_remove(&shmd, &daemon_pid, SIGKILL);
}

/* Snapshot files made offline, in another instance of the same runtime
 * directory: a Bloom filter of @p capacity holding keys [0, n) of @p family. */
static void make_source(const char *name, unsigned family, uint64_t n, uint64_t capacity, const char *path)
{
	char err[SNAPSHOT_ERR_MAX], key[32];
	struct registry r;
	assert_int_equal(registry_open(&r, "mk", 0700, 0600, (gid_t)-1, err, sizeof(err)), 0);
	struct filter_spec spec = { .type = SHMF_TYPE_BLOOM, .capacity = capacity, .fpr = 0.01, .mode = 0600 };
	snprintf(spec.name, sizeof(spec.name), "%s", name);
	assert_true(registry_create(&r, &spec, err, sizeof(err)) >= 0);
	shmf_t *f;
	assert_int_equal(shmf_open("mk", name, SHMF_RDWR, &f), 0);
	for (uint64_t i = 0; i < n; i++)
		assert_true(shmf_add(f, key, fixture_key(key, family, i)) >= 0);
	shmf_close(f);
	assert_int_equal(registry_snapshot(&r, name, path, NULL, err, sizeof(err)), 0);
	registry_close(&r, 1);
}

#define SRC_KEYS 20000
#define FAM_A    0xa0
#define FAM_B    0xb0

/* The two files that swaps and restores alternate between: a.snap holds
 * keys [0, SRC_KEYS) of FAM_A, b.snap those of FAM_B. */
static void make_sources(char a[256], char b[256])
{
	snprintf(a, 256, "%s/a.snap", files);
	snprintf(b, 256, "%s/b.snap", files);
	make_source("srca", FAM_A, SRC_KEYS, 8000000, a);
	make_source("srcb", FAM_B, SRC_KEYS, 8000000, b);
}

/* 1 if every key [0, n) of @p family is in @p f, 0 if any is missing. */
static int holds(shmf_t *f, unsigned family, uint64_t n)
{
	char key[32];
	for (uint64_t i = 0; i < n; i++) {
		int r = shmf_check(f, key, fixture_key(key, family, i));
		if (r < 0)
			fail_msg("check: %s", shmf_strerror(r));
		if (r == 0)
			return 0;
	}
	return 1;
}

static shmf_t *open_filter(const char *name, int flags)
{
	shmf_t *f;
	int r = shmf_open(INSTANCE, name, flags, &f);
	if (r < 0)
		fail_msg("open %s after the restart: %s", name, shmf_strerror(r));
	return f;
}

/* Which source a filter holds, whole: FAM_A, FAM_B, or fails. */
static unsigned which_source(shmf_t *f, const char *what)
{
	int a = holds(f, FAM_A, SRC_KEYS), b = holds(f, FAM_B, SRC_KEYS);
	if (a == b)
		fail_msg("%s: holds %s", what, a ? "both sources" : "neither source whole");
	return a ? FAM_A : FAM_B;
}

/* A handle opened before the kills: while shmd is down it still answers,
 * from the generation the slot publishes (or -EBUSY if the daemon died
 * inside the slot's write window, until a restart repairs it). */
static int old_handle_answers(shmf_t *f, unsigned expect_either_a, unsigned expect_either_b)
{
	char key[32];
	int a = 1, b = 1;
	for (uint64_t i = 0; i < 200; i++) {
		int r = shmf_check(f, key, fixture_key(key, FAM_A, i));
		if (r == -EBUSY)
			return 0;
		if (r < 0)
			fail_msg("old handle while shmd is down: %s", shmf_strerror(r));
		a &= r == 1;
		r = shmf_check(f, key, fixture_key(key, FAM_B, i));
		if (r < 0)
			fail_msg("old handle while shmd is down: %s", shmf_strerror(r));
		b &= r == 1;
	}
	if (!((a && expect_either_a) || (b && expect_either_b)))
		fail_msg("old handle while shmd is down holds neither the old nor the new filter");
	return 1;
}

static void test_shmd_swap(void **state)
{
	(void)state;
	char a[256], b[256];
	make_sources(a, b);
	/* How long a swap takes, unkilled (the median of three). */
	uint64_t times[3];
	for (int i = 0; i < 3; i++) {
		const char *argv[] = { "SHMF.SWAP", "sw", i % 2 ? b : a };
		times[i] = call_ok(3, argv);
	}
	uint64_t typical = median(times, 3);
	unsigned cur = FAM_A;
	shmf_t *old = open_filter("sw", SHMF_RDONLY);
	unsigned replied = 0, kept_old = 0, got_new = 0, busy = 0;
	unsigned run;
	for (run = 0; more_runs(run, replied); run++) {
		unsigned target = cur == FAM_A ? FAM_B : FAM_A;
		const char *argv[] = { "SHMF.SWAP", "sw", target == FAM_A ? a : b };
		int ok = call_and_kill(3, argv, typical);
		replied += ok;
		busy += !old_handle_answers(old, 1, 1);
		start_shmd();
		shmf_t *f = open_filter("sw", SHMF_RDWR);
		unsigned now = which_source(f, "swap killed");
		if (ok && now != target)
			fail_msg("run %u: the swap answered OK, but the filter holds the old source after the restart",
				 run);
		if (!ok) {
			kept_old += now == cur;
			got_new += now == target;
		}
		/* The handle from before every kill follows; new adds work. */
		assert_int_equal(which_source(old, "handle opened before the kills"), now);
		char key[32];
		size_t len = fixture_key(key, 7, run);
		assert_true(shmf_add(f, key, len) >= 0);
		assert_int_equal(shmf_check(old, key, len), 1);
		shmf_close(f);
		assert_no_orphans();
		cur = now;
	}
	shmf_close(old);
	print_message("shmd killed during a swap (%llu µs unkilled): %u runs; killed before answering %u times (old "
		      "filter kept %u, new one published %u), after %u; every time one filter whole, shmd restarted, no "
		      "stray data file, the old handle followed (%u times it read -EBUSY while shmd was down)\n",
		      (unsigned long long)typical, run, run - replied, kept_old, got_new, replied, busy);
	assert_true(run - replied >= 1);
	case_passed = 1;
}

/* An adder through every kill: for each key, the generation it went to
 * (0: unknown, the handle moved during the add). */
#define ROT_KEYS (1u << 21)
struct rot_board {
	_Atomic int stop;
	_Atomic uint64_t progress;
	_Atomic uint64_t errors;
	_Atomic int last_error;
	_Atomic int done; /* all ROT_KEYS added */
	uint64_t gen[ROT_KEYS];
};

static void rot_adder(struct rot_board *b)
{
	shmf_t *f;
	if (shmf_open(INSTANCE, "rot", SHMF_RDWR, &f) < 0)
		_exit(3);
	char key[32];
	for (uint64_t i = 0; i < ROT_KEYS && !atomic_load(&b->stop); i++) {
		shmf_info_t before, after;
		int r1 = shmf_info(f, &before);
		int r = shmf_add(f, key, fixture_key(key, 0x60, i));
		int r2 = shmf_info(f, &after);
		if (r < 0 || r1 < 0 || r2 < 0) {
			atomic_fetch_add(&b->errors, 1);
			atomic_store(&b->last_error, r < 0 ? r : r1 < 0 ? r1 : r2);
		}
		b->gen[i] = r >= 0 && r1 == 0 && r2 == 0 && before.generation == after.generation ? before.generation
												  : 0;
		atomic_store(&b->progress, i + 1);
		if (i % 64 == 63)
			sleep_us(1000);
	}
	atomic_store(&b->done, 1);
	shmf_close(f);
	_exit(0);
}

static void test_shmd_rotate(void **state)
{
	(void)state;
	const char *argv[] = { "SHMF.ROTATE", "rot" };
	uint64_t times[3];
	for (int i = 0; i < 3; i++)
		times[i] = call_ok(2, argv);
	uint64_t typical = median(times, 3);
	struct rot_board *b = fixture_shared_map(sizeof(*b));
	pid_t adder = fork_child();
	if (adder == 0)
		rot_adder(b);
	while (atomic_load(&b->progress) < 100)
		sleep_us(1000);
	unsigned replied = 0, rotated_unanswered = 0,
		 orphans_before = (unsigned)daemon_log_count(shmd.log, "no filter names this data file");
	uint64_t checked = 0;
	shmf_t *check = open_filter("rot", SHMF_RDONLY);
	unsigned run;
	for (run = 0; more_runs(run, replied); run++) {
		uint64_t gens[SHMF_RING_MAX];
		live_generations("rot", gens);
		uint64_t newest = gens[0];
		int ok = call_and_kill(2, argv, typical);
		replied += ok;
		/* Clients go on without the daemon. */
		uint64_t p = atomic_load(&b->progress);
		for (int i = 0; i < 2000 && atomic_load(&b->progress) == p && !atomic_load(&b->done); i++)
			sleep_us(1000);
		assert_true(atomic_load(&b->progress) > p || atomic_load(&b->done));
		start_shmd();
		unsigned n = live_generations("rot", gens);
		if (ok && gens[0] <= newest)
			fail_msg("run %u: the rotation answered OK, but generation %llu is still the newest", run,
				 (unsigned long long)newest);
		rotated_unanswered += !ok && gens[0] > newest;
		/* Every key whose add returned into a generation still live. */
		p = atomic_load(&b->progress);
		char key[32];
		for (uint64_t i = 0; i < p; i++) {
			int live = 0;
			for (unsigned j = 0; j < n; j++)
				live |= b->gen[i] == gens[j];
			if (!live || b->gen[i] == 0)
				continue;
			int r = shmf_check(check, key, fixture_key(key, 0x60, i));
			if (r != 1)
				fail_msg("run %u: key %llu, added into live generation %llu, %s", run,
					 (unsigned long long)i, (unsigned long long)b->gen[i],
					 r == 0 ? "is missing" : shmf_strerror(r));
			checked++;
		}
		assert_no_orphans();
	}
	atomic_store(&b->stop, 1);
	fixture_reap(adder);
	if (atomic_load(&b->errors) != 0 && atomic_load(&b->last_error) != -EBUSY)
		fail_msg("the adder saw %llu errors, the last %s", (unsigned long long)atomic_load(&b->errors),
			 shmf_strerror(atomic_load(&b->last_error)));
	shmf_close(check);
	unsigned orphans = (unsigned)daemon_log_count(shmd.log, "no filter names this data file") - orphans_before;
	print_message("shmd killed during a rotation (%llu µs unkilled): %u runs; killed before answering %u times (%u "
		      "of them after publishing), after %u; %u stray data files removed at restart; an adder went on "
		      "through every kill (%llu adds, %llu errors), and %llu checks of keys in live generations all hit\n",
		      (unsigned long long)typical, run, run - replied, rotated_unanswered, replied, orphans,
		      (unsigned long long)atomic_load(&b->progress), (unsigned long long)atomic_load(&b->errors),
		      (unsigned long long)checked);
	assert_true(run - replied >= 1 && checked > 0);
	munmap(b, sizeof(*b));
	case_passed = 1;
}

/* Adders on a Bloom and a cuckoo filter through every kill. */
#define SNAP_KEYS 1500000u /* below the cuckoo filter's capacity */
struct snap_board {
	_Atomic int stop;
	_Atomic uint64_t progress[2];
	_Atomic int done[2]; /* all SNAP_KEYS added (the long mode gets there) */
};

static void snap_adder(struct snap_board *b, unsigned which)
{
	shmf_t *f;
	if (shmf_open(INSTANCE, which ? "sc" : "sb", SHMF_RDWR, &f) < 0)
		_exit(3);
	char key[32];
	for (uint64_t i = 0; i < SNAP_KEYS && !atomic_load(&b->stop); i++) {
		if (shmf_add(f, key, fixture_key(key, 0x70 + which, i)) < 0)
			_exit(4);
		atomic_store(&b->progress[which], i + 1);
		if (i % 64 == 63)
			sleep_us(1000);
	}
	atomic_store(&b->done[which], 1);
	shmf_close(f);
	_exit(0);
}

static void test_shmd_snapshot(void **state)
{
	(void)state;
	char path[2][256];
	const char *names[2] = { "sb", "sc" };
	struct snap_board *b = fixture_shared_map(sizeof(*b));
	pid_t adders[2];
	for (unsigned w = 0; w < 2; w++) {
		snprintf(path[w], sizeof(path[w]), "%s/%s.snap", files, names[w]);
		if ((adders[w] = fork_child()) == 0)
			snap_adder(b, w);
	}
	while (atomic_load(&b->progress[0]) < 100 || atomic_load(&b->progress[1]) < 100)
		sleep_us(1000);
	uint64_t times[4];
	for (int i = 0; i < 4; i++) {
		const char *argv[] = { "SHMF.SNAPSHOT", names[i % 2], path[i % 2] };
		times[i] = call_ok(3, argv);
	}
	uint64_t typical = median(times, 4);
	unsigned replied = 0, new_unanswered = 0, tmp_left = 0;
	uint64_t checked[2] = { 0, 0 };
	unsigned run;
	for (run = 0; more_runs(run, replied); run++) {
		unsigned w = run % 2;
		uint64_t prev = fixture_snapshot_items(path[w]);
		const char *argv[] = { "SHMF.SNAPSHOT", names[w], path[w] };
		pid_t killed = daemon_pid;
		int ok = call_and_kill(3, argv, typical);
		replied += ok;
		/* The file is whole: the previous snapshot or the new one. */
		uint64_t items = fixture_snapshot_items(path[w]);
		if (items < prev || (ok && items == prev && !atomic_load(&b->done[w])))
			fail_msg("run %u: snapshot holds %llu items, the previous one %llu (answered: %d)", run,
				 (unsigned long long)items, (unsigned long long)prev, ok);
		new_unanswered += !ok && items > prev;
		/* A killed writer may leave its temporary file
		 * (.NAME.tmp-PID-START-N), and only that. */
		char tmp[128];
		snprintf(tmp, sizeof(tmp), ".%s.snap.tmp-%ld-", names[w], (long)killed);
		DIR *d = opendir(files);
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			if (strncmp(e->d_name, tmp, strlen(tmp)) == 0 && unlinkat(dirfd(d), e->d_name, 0) == 0)
				tmp_left++;
			else if (strstr(e->d_name, ".tmp-") != NULL)
				fail_msg("run %u: unexpected temporary file %s", run, e->d_name);
		}
		closedir(d);
		/* The adders went on without the daemon: the cuckoo one too,
		 * though the snapshot held its filter's relocation lock. */
		for (unsigned i = 0; i < 2; i++) {
			uint64_t p = atomic_load(&b->progress[i]);
			for (int k = 0; k < 2000 && atomic_load(&b->progress[i]) == p && !atomic_load(&b->done[i]); k++)
				sleep_us(1000);
			if (atomic_load(&b->progress[i]) == p && !atomic_load(&b->done[i]))
				fail_msg("run %u: the %s adder is stuck after shmd was killed", run, names[i]);
		}
		start_shmd();
		/* The adds that returned since the last run, in the re-attached
		 * filters, and 2,000 older ones at random. */
		for (unsigned i = 0; i < 2; i++) {
			shmf_t *f = open_filter(names[i], SHMF_RDONLY);
			uint64_t p = atomic_load(&b->progress[i]);
			char key[32];
			for (uint64_t k = checked[i]; k < p; k++)
				if (shmf_check(f, key, fixture_key(key, 0x70 + i, k)) != 1)
					fail_msg("run %u: key %llu of the %s adder lost", run, (unsigned long long)k,
						 names[i]);
			for (int k = 0; k < 2000 && checked[i] > 0; k++) {
				uint64_t j = rnd_below(checked[i]);
				if (shmf_check(f, key, fixture_key(key, 0x70 + i, j)) != 1)
					fail_msg("run %u: key %llu of the %s adder lost", run, (unsigned long long)j,
						 names[i]);
			}
			checked[i] = p;
			shmf_close(f);
		}
		assert_no_orphans();
	}
	atomic_store(&b->stop, 1);
	for (unsigned w = 0; w < 2; w++) {
		fixture_reap(adders[w]);
		/* At the end, every key of each adder. */
		shmf_t *f = open_filter(names[w], SHMF_RDONLY);
		assert_all_present(f, 0x70 + w, atomic_load(&b->progress[w]), "adder's keys at the end");
		checked[w] = atomic_load(&b->progress[w]);
		shmf_close(f);
	}
	print_message("shmd killed during a snapshot (%llu µs unkilled): %u runs; killed before answering %u times (%u "
		      "of them after the rename), after %u; the file was whole every time; %u temporary files left by "
		      "killed writers; %llu + %llu adds through the kills, all found\n",
		      (unsigned long long)typical, run, run - replied, new_unanswered, replied, tmp_left,
		      (unsigned long long)checked[0], (unsigned long long)checked[1]);
	assert_true(run - replied >= 1);
	munmap(b, sizeof(*b));
	case_passed = 1;
}

static void test_shmd_restore(void **state)
{
	(void)state;
	char a[256], b[256];
	make_sources(a, b);
	uint64_t times[3];
	for (int i = 0; i < 3; i++) {
		char name[16];
		snprintf(name, sizeof(name), "t%d", i);
		const char *argv[] = { "SHMF.RESTORE", name, a };
		times[i] = call_ok(3, argv);
		const char *drop[] = { "SHMF.DROP", name };
		call_ok(2, drop);
	}
	uint64_t typical = median(times, 3);
	unsigned replied = 0, created = 0, absent = 0, replaced = 0, kept = 0;
	unsigned cur = 0; /* what "rx" holds, once it exists */
	unsigned run;
	for (run = 0; more_runs(run, replied); run++) {
		char name[16];
		int fresh = run % 2 == 0 || cur == 0;
		unsigned src = fresh ? FAM_A : (cur == FAM_A ? FAM_B : FAM_A);
		snprintf(name, sizeof(name), fresh ? "rs%u" : "rx", run);
		if (fresh && cur == 0)
			snprintf(name, sizeof(name), "rx");
		const char *argv[] = { "SHMF.RESTORE", name, src == FAM_A ? a : b };
		int ok = call_and_kill(3, argv, typical);
		replied += ok;
		start_shmd();
		shmf_t *f;
		int r = shmf_open(INSTANCE, name, SHMF_RDONLY, &f);
		if (r == SHMF_E_NOTFOUND) {
			/* A restore that never published: nothing of it is left. */
			if (ok || (!fresh && cur != 0))
				fail_msg("run %u: filter %s is gone after a restore was killed", run, name);
			absent++;
		} else {
			if (r < 0)
				fail_msg("run %u: open %s: %s", run, name, shmf_strerror(r));
			unsigned now = which_source(f, "restore killed");
			shmf_close(f);
			if (ok && now != src)
				fail_msg("run %u: the restore answered OK, but %s does not hold its source", run, name);
			if (!strcmp(name, "rx")) {
				replaced += cur != 0 && now == src;
				kept += cur != 0 && now != src;
				created += cur == 0;
				cur = now;
			} else {
				created++;
				const char *drop[] = { "SHMF.DROP", name };
				call_ok(2, drop);
			}
		}
		assert_no_orphans();
	}
	print_message("shmd killed during a restore (%llu µs unkilled): %u runs; killed before answering %u times; a "
		      "new filter was created whole %u times and left absent %u times, an existing one was replaced "
		      "%u times and kept %u times; never anything half restored or a stray data file\n",
		      (unsigned long long)typical, run, run - replied, created, absent, replaced, kept);
	assert_true(run - replied >= 1);
	case_passed = 1;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		fixture_unit_test(test_workers_bloom, fx),
		fixture_unit_test(test_workers_cuckoo, fx),
		fixture_unit_test(test_lock_holder, fx),
		cmocka_unit_test_setup_teardown(test_shmd_swap, shmd_setup, shmd_teardown),
		cmocka_unit_test_setup_teardown(test_shmd_rotate, shmd_setup, shmd_teardown),
		cmocka_unit_test_setup_teardown(test_shmd_snapshot, shmd_setup, shmd_teardown),
		cmocka_unit_test_setup_teardown(test_shmd_restore, shmd_setup, shmd_teardown),
	};
	static const char *const names[] = { "workers_bloom", "workers_cuckoo", "lock_holder", "shmd_swap",
					     "shmd_rotate",   "shmd_snapshot",  "shmd_restore" };
	const char *env;
	runs = fixture_long_mode() ? 200 : 20;
	if ((env = getenv("SHMF_CRASH_RUNS")) != NULL && atoi(env) > 0)
		runs = (unsigned)atoi(env);
	rng = (env = getenv("SHMF_SEED")) != NULL ? strtoull(env, NULL, 0)
						  : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	fprintf(stderr, "test-crash: %u runs per case, SHMF_SEED=%" PRIu64 "\n", runs, rng);
	shmd_path = argc > 2 ? argv[2] : NULL;
	if (argc > 1 && !strncmp(argv[1], "shmd_", 5) && shmd_path == NULL) {
		fprintf(stderr, "usage: %s %s PATH-TO-SHMD\n", argv[0], argv[1]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	return fixture_run(argc > 2 ? 2 : argc, argv, tests, names);
}
