/*
 * test-cuckoo-handle.c - cuckoo filters through libshmf's public calls on
 * filters shmd's registry created: the frequency cap across processes,
 * what each call answers for each type and handle mode, info, batches
 * that fill the filter, and threads of one process sharing a handle
 * while relocations run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libclient/cuckoo.h"
#include "tests/fixture.h"

static struct fixture fx;

/* The frequency cap: 8 processes each try to add the same key 10
 * times with cap 4; exactly 4 adds succeed in all, and shmf_count says 4. */
static void test_frequency_cap(void **state)
{
	(void)state;
	fixture_filter(&fx, "push", SHMF_TYPE_CUCKOO, 10000, 0.01);
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	const char key[] = "device-4711";
	for (int p = 0; p < 8; p++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid != 0)
			continue;
		shmf_t *f;
		if (shmf_open(FIXTURE_INSTANCE, "push", SHMF_RDWR, &f) < 0)
			_exit(2);
		unsigned char won = 0;
		for (int i = 0; i < 10; i++) {
			int before = shmf_add_capped(f, key, sizeof(key) - 1, 4);
			if (before < 0)
				_exit(3);
			won += before < 4;
		}
		shmf_close(f);
		_exit(write(fds[1], &won, 1) == 1 ? 0 : 4);
	}
	close(fds[1]);
	int total = 0;
	unsigned char won;
	while (read(fds[0], &won, 1) == 1)
		total += won;
	close(fds[0]);
	for (int p = 0; p < 8; p++) {
		int st;
		wait(&st);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	assert_int_equal(total, 4);
	shmf_t *f = fixture_open("push", SHMF_RDONLY);
	assert_int_equal(shmf_count(f, key, sizeof(key) - 1), 4);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.items, 4);
	shmf_close(f);
}

/* Every call on each type and handle mode: the cuckoo-only calls refuse a
 * Bloom filter, writes refuse a read-only handle, and nothing changes. */
static void test_calls_by_type_and_mode(void **state)
{
	(void)state;
	/* 16-bit fingerprints: the exact counts below would be wrong by a
	 * fingerprint collision about once in 10^6 runs (8-bit: once in 10^4). */
	fixture_filter(&fx, "cf", SHMF_TYPE_CUCKOO, 1000, 0.01);
	fixture_bloom(&fx, "bf", 1000, 0.01);
	shmf_t *cf = fixture_open("cf", SHMF_RDWR), *cro = fixture_open("cf", SHMF_RDONLY);
	shmf_t *bf = fixture_open("bf", SHMF_RDWR);

	assert_int_equal(shmf_add(cf, "a", 1), 1);
	assert_int_equal(shmf_add(cf, "a", 1), 1); /* a second copy */
	assert_int_equal(shmf_count(cf, "a", 1), 2);
	assert_int_equal(shmf_add_unique(cf, "a", 1), 0);
	assert_int_equal(shmf_add_unique(cf, "b", 1), 1);
	assert_int_equal(shmf_add_unique(cf, "b", 1), 0);
	assert_int_equal(shmf_check(cro, "b", 1), 1);
	assert_int_equal(shmf_check(cro, "zzz", 3), 0);
	assert_int_equal(shmf_del(cf, "a", 1), 1);
	assert_int_equal(shmf_count(cro, "a", 1), 1);
	assert_int_equal(shmf_add_capped(cf, "c", 1, 0), 0); /* cap 0 never adds */
	assert_int_equal(shmf_count(cf, "c", 1), 0);

	/* Read-only: every write refused, nothing changed. */
	assert_int_equal(shmf_add(cro, "x", 1), SHMF_E_READONLY);
	assert_int_equal(shmf_add_unique(cro, "x", 1), SHMF_E_READONLY);
	assert_int_equal(shmf_add_capped(cro, "x", 1, 3), SHMF_E_READONLY);
	assert_int_equal(shmf_del(cro, "a", 1), SHMF_E_READONLY);
	assert_int_equal(shmf_count(cro, "x", 1), 0);
	assert_int_equal(shmf_count(cro, "a", 1), 1);
	/* Bad keys. */
	assert_int_equal(shmf_del(cf, NULL, 3), SHMF_E_INVAL);
	assert_int_equal(shmf_count(cf, NULL, 3), SHMF_E_INVAL);
	assert_int_equal(shmf_add_capped(cf, NULL, 3, 1), SHMF_E_INVAL);

	/* Bloom: the cuckoo-only calls say so; add_unique is add. */
	assert_int_equal(shmf_del(bf, "a", 1), SHMF_E_TYPE);
	assert_int_equal(shmf_count(bf, "a", 1), SHMF_E_TYPE);
	assert_int_equal(shmf_add_capped(bf, "a", 1, 4), SHMF_E_TYPE);
	assert_int_equal(shmf_check(bf, "a", 1), 0);
	assert_int_equal(shmf_add_unique(bf, "a", 1), 1);
	assert_int_equal(shmf_add_unique(bf, "a", 1), 0);
	assert_string_equal(shmf_strerror(SHMF_E_TYPE), "the filter type does not support this operation");

	shmf_info_t info;
	assert_int_equal(shmf_info(cf, &info), 0);
	assert_int_equal(info.type, SHMF_TYPE_CUCKOO);
	assert_int_equal(info.fingerprint_bits, 16); /* 1% is out of reach of 8-bit fingerprints */
	assert_int_equal(info.k, 16);
	assert_int_equal(info.buckets, 296); /* ceil(1000 / 3.8) + ceil(sqrt(1000)) */
	assert_int_equal(info.bits, 296 * 4 * 16);
	assert_int_equal(info.max_kicks, 500);
	assert_int_equal(info.items, 2); /* a, b: 3 adds, 1 delete */
	assert_int_equal(info.deletes, 1);
	assert_true(fabs(info.fill_ratio - 2.0 / (296 * 4)) < 1e-12); /* 2 of 1184 slots */
	assert_int_equal(shmf_info(bf, &info), 0);
	assert_int_equal(info.type, SHMF_TYPE_BLOOM);
	assert_int_equal(info.buckets, 0);
	assert_int_equal(info.fingerprint_bits, 0);
	shmf_close(cf);
	shmf_close(cro);
	shmf_close(bf);
}

/* add_many into a cuckoo filter too small for the batch: SHMF_E_FULL, the
 * keys before the failure stored and found, the rest marked 0. */
static void test_batches_fill_up(void **state)
{
	(void)state;
	enum { N = 400 };
	static char keys[N][17];
	shmf_key_t k[N];
	uint8_t out[N];
	fixture_filter(&fx, "small", SHMF_TYPE_CUCKOO, 100, 0.01);
	shmf_t *f = fixture_open("small", SHMF_RDWR);
	for (unsigned i = 0; i < N; i++)
		k[i] = (shmf_key_t){ keys[i], fixture_key(keys[i], 12, i) };
	memset(out, 7, sizeof(out));
	assert_int_equal(shmf_add_many(f, k, N, out), SHMF_E_FULL);
	unsigned stored = 0;
	while (stored < N && out[stored] == 1)
		stored++;
	if (stored < 100 || stored >= N)
		fail_msg("stored %u of %u", stored, N);
	for (unsigned i = stored; i < N; i++)
		assert_int_equal(out[i], 0);
	assert_int_equal(shmf_check_many(f, k, stored, out), (int)stored);
	/* All N, stored and not: each answer is the one-key check's. */
	int present = shmf_check_many(f, k, N, out);
	int want = 0;
	for (unsigned i = 0; i < N; i++) {
		int one = shmf_check(f, k[i].ptr, k[i].len);
		assert_int_equal(out[i], one);
		want += one;
	}
	assert_int_equal(present, want);
	assert_true(want >= (int)stored && want < N);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.items, stored);
	shmf_close(f);
}

struct worker {
	shmf_t *f; /* shared, or NULL: a handle of its own */
	unsigned id;
	int failed;
	unsigned stored;
};

/* 2000 adds of keys of its own; with a handle of its own every other one
 * a capped add (cap 1: the key is new, so it is stored unless another
 * key's fingerprint in its buckets counts, the filter's false positive). */
static void *thread_adds(void *arg)
{
	struct worker *w = arg;
	char key[17];
	shmf_t *f = w->f;
	if (f == NULL && shmf_open(FIXTURE_INSTANCE, "threads", SHMF_RDWR, &f) < 0) {
		w->failed = 1;
		return NULL;
	}
	for (uint64_t i = 0; i < 2000; i++) {
		size_t len = fixture_key(key, 20 + w->id, i);
		int capped = w->f == NULL && i % 2,
		    r = capped ? shmf_add_capped(f, key, len, 1) : shmf_add(f, key, len);
		if (r < 0 || (!capped && r != 1))
			w->failed = r < 0 ? r : 1;
		w->stored += capped ? r == 0 : r == 1;
	}
	if (w->f == NULL)
		shmf_close(f);
	return NULL;
}

/* 4 threads add into a filter they fill to 90%, through one handle or
 * each through its own (then every other add a capped one): the
 * relocations of one thread are not mistaken for another's (each thread
 * takes the relocation lock as itself), and every key is found
 * afterwards. Threads on handles of their own hung under valgrind while
 * the lock was a file lock. */
static void threads_add(int share)
{
	fixture_filter(&fx, "threads", SHMF_TYPE_CUCKOO, 8400, 0.01); /* 2211 buckets, 8844 slots */
	shmf_t *f = fixture_open("threads", SHMF_RDWR);
	pthread_t t[4];
	struct worker w[4];
	for (unsigned i = 0; i < 4; i++) {
		w[i] = (struct worker){ share ? f : NULL, i, 0, 0 };
		assert_int_equal(pthread_create(&t[i], NULL, thread_adds, &w[i]), 0);
	}
	unsigned stored = 0;
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].failed, 0);
		stored += w[i].stored;
	}
	assert_true(stored > 7990 && stored <= 8000);
	char key[17];
	for (unsigned id = 0; id < 4; id++)
		for (uint64_t i = 0; i < 2000; i++)
			if (shmf_check(f, key, fixture_key(key, 20 + id, i)) != 1)
				fail_msg("thread %u key %llu lost", id, (unsigned long long)i);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.items, stored);
	printf("%llu relocations\n", (unsigned long long)info.relocations);
	assert_true(info.relocations > 100);
	shmf_close(f);
}

static void test_threads_share_a_handle(void **state)
{
	(void)state;
	threads_add(1);
}

static void test_threads_own_handles(void **state)
{
	(void)state;
	threads_add(0);
}

/*
 * A handle opened before fork() and used by parent and child: while the
 * parent holds the relocation lock (stopped mid-move by the test hook),
 * the child's capped add through the inherited handle must wait for it:
 * the child takes the lock as a thread of its own (its own id in the lock
 * word, its own robust list), not as the parent's thread it was copied
 * from.
 */
static int go_fd = -1, done_fd = -1, child_overtook = -1;

static void hold_lock_while_child_tries(void)
{
	if (child_overtook >= 0)
		return; /* only the first move */
	(void)!write(go_fd, "g", 1);
	usleep(300000);
	char c;
	child_overtook = read(done_fd, &c, 1) == 1;
}

static void test_handle_shared_across_fork(void **state)
{
	(void)state;
	fixture_filter(&fx, "forked", SHMF_TYPE_CUCKOO, 4000, 0.01);
	shmf_t *f = fixture_open("forked", SHMF_RDWR);
	int go[2], done[2];
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe2(done, O_NONBLOCK), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		if (shmf_add_capped(f, "child", 5, 1) != 0)
			_exit(3);
		shmf_close(f); /* the child's copy of the handle (valgrind counts it lost otherwise) */
		_exit(write(done[1], "d", 1) == 1 ? 0 : 4);
	}
	go_fd = go[1];
	done_fd = done[0];
	shmf_cuckoo_move_hook = hold_lock_while_child_tries;
	char key[17];
	for (uint64_t i = 0; i < 4000 && child_overtook < 0; i++)
		assert_int_equal(shmf_add(f, key, fixture_key(key, 31, i)), 1);
	shmf_cuckoo_move_hook = NULL;
	assert_int_equal(child_overtook, 0); /* a move happened, and the child waited */
	fixture_reap(pid);
	assert_int_equal(shmf_count(f, "child", 5), 1);
	close(go[0]);
	close(go[1]);
	close(done[0]);
	close(done[1]);
	shmf_close(f);
}

/* Capped adds of @p n new keys of @p family in a forked process (another
 * process, as in the issue): @return the nanoseconds they took, or 0 if
 * one failed. */
static uint64_t capped_adds_elsewhere(const char *name, unsigned family, uint64_t n)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		shmf_t *f;
		uint64_t ns = 0;
		if (shmf_open(FIXTURE_INSTANCE, name, SHMF_RDWR, &f) == 0) {
			char key[32];
			struct timespec a, b;
			clock_gettime(CLOCK_MONOTONIC, &a);
			uint64_t i;
			/* Counts above 0: another key's fingerprint in the same
			 * buckets (the filter's false positives). */
			for (i = 0; i < n; i++)
				if (shmf_add_capped(f, key, fixture_key(key, family, i), 4) < 0)
					break;
			clock_gettime(CLOCK_MONOTONIC, &b);
			if (i == n)
				ns = (uint64_t)((b.tv_sec - a.tv_sec) * 1000000000 + (b.tv_nsec - a.tv_nsec));
			shmf_close(f);
		}
		_exit(write(fds[1], &ns, sizeof(ns)) == sizeof(ns) ? 0 : 1);
	}
	uint64_t ns = 0;
	assert_int_equal(read(fds[0], &ns, sizeof(ns)), (ssize_t)sizeof(ns));
	fixture_reap(pid);
	close(fds[0]);
	close(fds[1]);
	return ns;
}

/*
 * The attack: a process that may only read the filter opens its
 * data file O_RDONLY, takes F_OFD_SETLK F_RDLCK over the whole of it and
 * keeps it. Writers take no file lock any more: capped adds in another
 * process go at the speed they had without it, and a snapshot of the
 * filter (the daemon's code) completes.
 */
static void test_reader_file_lock(void **state)
{
	(void)state;
	fixture_filter(&fx, "rl", SHMF_TYPE_CUCKOO, 200000, 0.01);
	char path[600], snap[600], err[REGISTRY_ERR_MAX];
	fixture_data_path(&fx, "rl", path, sizeof(path));
	fixture_path(&fx, "rl.snap", snap, sizeof(snap));
	const uint64_t n = 20000;
	uint64_t before = capped_adds_elsewhere("rl", 40, n);
	assert_true(before > 0);

	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t reader = fork();
	assert_true(reader >= 0);
	if (reader == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int fd = open(path, O_RDONLY);
		struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
		if (fd < 0 || fcntl(fd, F_OFD_SETLK, &fl) < 0)
			_exit(2);
		(void)!write(ready[1], "r", 1);
		pause();
		_exit(0);
	}
	char c;
	assert_int_equal(read(ready[0], &c, 1), 1);
	alarm(60); /* a writer blocked by the reader's lock fails the test instead of hanging it */
	uint64_t during = capped_adds_elsewhere("rl", 41, n);
	assert_true(during > 0);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(registry_snapshot(&fx.reg, "rl", snap, NULL, err, sizeof(err)), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	alarm(0);
	double snap_ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	kill(reader, SIGKILL);
	waitpid(reader, NULL, 0);
	close(ready[0]);
	close(ready[1]);
	printf("capped adds in another process: %.0f ns each before a reader locked the data file, %.0f ns while it "
	       "held the lock; a snapshot meanwhile took %.1f ms\n",
	       (double)before / (double)n, (double)during / (double)n, snap_ms);
	/* The same speed, give or take a noisy machine; the old file lock made
	 * them wait for as long as the reader liked. */
	assert_true(during < 4 * before + 200000000u);
	assert_true(snap_ms < 5000);
	shmf_t *f = fixture_open("rl", SHMF_RDONLY);
	char key[32];
	for (uint64_t i = 0; i < n; i++)
		assert_int_equal(shmf_check(f, key, fixture_key(key, 41, i)), 1);
	shmf_close(f);
}

/* The lock timeout in the slot of filter @p name (what handles use). */
static uint32_t slot_lock_timeout(const char *name)
{
	struct shmf_slot copy;
	assert_int_equal(shmf_slot_read(&fx.reg.ctl.slots[registry_find(&fx.reg, name)], &copy), 0);
	return copy.lock_timeout_ms;
}

/* Set the data header word where format 7 kept the lock timeout, as a
 * writer of the file can. */
static void scribble_header_timeout(const char *name, uint32_t ms)
{
	char path[600];
	fixture_data_path(&fx, name, path, sizeof(path));
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &ms, sizeof(ms), offsetof(struct shmf_data_header, reserved)), (ssize_t)sizeof(ms));
	close(fd);
}

static void stop_mid_move(void)
{
	raise(SIGSTOP);
}

/*
 * A filter's lock_timeout_ms (configuration, filter_spec) reaches its slot
 * (never read from the data header, which writers can change), a handle
 * waits that long for a lock held by a stopped writer and
 * then answers SHMF_E_BUSY, and rotations and swaps keep it. A Bloom
 * filter with one is refused.
 */
static void test_lock_timeout(void **state)
{
	(void)state;
	char err[REGISTRY_ERR_MAX], snap[600];
	struct filter_spec spec = { .type = SHMF_TYPE_CUCKOO,
				    .capacity = 2000,
				    .fpr = 0.01,
				    .mode = 0640,
				    .lock_timeout_ms = 150,
				    .window_secs = 3600,
				    .window_gens = 2 };
	snprintf(spec.name, sizeof(spec.name), "lt");
	assert_true(registry_create(&fx.reg, &spec, err, sizeof(err)) >= 0);
	assert_int_equal(slot_lock_timeout("lt"), 150);
	/* A writer that raises the data header's old timeout word to an hour
	 * changes nothing: handles take the slot's. */
	scribble_header_timeout("lt", 3600000);

	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		shmf_t *f;
		if (shmf_open(FIXTURE_INSTANCE, "lt", SHMF_RDWR, &f) < 0)
			_exit(2);
		shmf_cuckoo_move_hook = stop_mid_move;
		char key[32];
		for (uint64_t i = 0;; i++)
			if (shmf_add(f, key, fixture_key(key, 50, i)) != 1)
				_exit(3);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
	assert_true(WIFSTOPPED(st));
	shmf_t *f = fixture_open("lt", SHMF_RDWR);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(shmf_add_capped(f, "k", 1, 1), SHMF_E_BUSY);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	printf("a capped add waited %.0f ms for a writer stopped mid-move (lock_timeout_ms 150)\n", ms);
	assert_true(ms >= 150 && ms < 150 + 2000);  /* bounded: the timeout, and a noisy machine */
	assert_int_equal(shmf_check(f, "k", 1), 0); /* checks do not wait */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(shmf_add_capped(f, "k", 1, 1), 0);
	shmf_close(f);

	fixture_rotate(&fx, "lt");
	assert_int_equal(slot_lock_timeout("lt"), 150);
	fixture_path(&fx, "lt.snap", snap, sizeof(snap));
	assert_int_equal(registry_snapshot(&fx.reg, "lt", snap, NULL, err, sizeof(err)), 0);
	assert_true(fixture_replace(&fx, "lt", snap, REGISTRY_SWAP, err, sizeof(err)) >= 0);
	assert_int_equal(slot_lock_timeout("lt"), 150);
	f = fixture_open("lt", SHMF_RDONLY);
	assert_int_equal(shmf_check(f, "k", 1), 1);
	shmf_close(f);

	struct filter_spec bloom = {
		.type = SHMF_TYPE_BLOOM, .capacity = 2000, .fpr = 0.01, .mode = 0640, .lock_timeout_ms = 150
	};
	snprintf(bloom.name, sizeof(bloom.name), "ltb");
	assert_int_equal(registry_create(&fx.reg, &bloom, err, sizeof(err)), SHMF_E_INVAL);
	assert_non_null(strstr(err, "lock timeout applies to cuckoo filters only"));
}

/* Every version stripe of the table being read, bumped by every read
 * (shmf_cuckoo_read_hook): no read ever comes out consistent. */
static struct shmf_cuckoo_meta *racing_meta;

static void race_every_read(void)
{
	for (unsigned i = 0; i < SHMF_CUCKOO_STRIPES; i++)
		atomic_fetch_add(&racing_meta->version[i], 2);
}

/*
 * A thread that may not wait (deadline now, as shmd's event loop runs)
 * gets SHMF_E_BUSY from a check whose reads moves keep racing, one key or
 * a batch, never "absent" for a key the filter holds; without the
 * deadline the same check waits out its tries and finds the key.
 */
static void test_nowait_reads(void **state)
{
	(void)state;
	fixture_filter(&fx, "nw", SHMF_TYPE_CUCKOO, 2000, 0.01);
	shmf_t *f = fixture_open("nw", SHMF_RDWR);
	assert_int_equal(shmf_add(f, "k", 1), 1);
	char path[600];
	fixture_data_path(&fx, "nw", path, sizeof(path));
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	char *base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(base != MAP_FAILED);
	close(fd);
	racing_meta = (struct shmf_cuckoo_meta *)(base + SHMF_DATA_BLOCKS_OFF);

	unsigned tries = shmf_cuckoo_read_tries;
	shmf_cuckoo_read_tries = 0; /* straight to the read one move cannot fool */
	shmf_cuckoo_read_hook = race_every_read;
	uint64_t saved = shmf_cuckoo_wait_deadline(0);
	shmf_key_t keys[2] = { { "k", 1 }, { "k", 1 } };
	uint8_t out[2] = { 0, 0 };
	assert_int_equal(shmf_check(f, "k", 1), SHMF_E_BUSY);
	assert_int_equal(shmf_count(f, "k", 1), SHMF_E_BUSY);
	assert_int_equal(shmf_check_many(f, keys, 2, out), SHMF_E_BUSY);
	shmf_cuckoo_wait_deadline(saved);
	/* A thread that may wait: the tries run out, and the read that one
	 * move cannot fool still finds the key. */
	assert_int_equal(shmf_check(f, "k", 1), 1);
	assert_int_equal(shmf_check_many(f, keys, 2, out), 2);
	shmf_cuckoo_read_hook = NULL;
	shmf_cuckoo_read_tries = tries;
	munmap(base, (size_t)st.st_size);
	shmf_close(f);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest all[] = {
		fixture_unit_test(test_frequency_cap, fx),       fixture_unit_test(test_calls_by_type_and_mode, fx),
		fixture_unit_test(test_batches_fill_up, fx),     fixture_unit_test(test_threads_share_a_handle, fx),
		fixture_unit_test(test_threads_own_handles, fx), fixture_unit_test(test_handle_shared_across_fork, fx),
		fixture_unit_test(test_reader_file_lock, fx),    fixture_unit_test(test_lock_timeout, fx),
		fixture_unit_test(test_nowait_reads, fx),
	};
	const char *const names[] = { "cap",  "calls",       "batches",      "threads",     "threads_own",
				      "fork", "reader_lock", "lock_timeout", "nowait_reads" };
	return fixture_run(argc, argv, all, names);
}
