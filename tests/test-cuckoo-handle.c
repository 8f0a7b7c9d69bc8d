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
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuckoo.h"
#include "fixture.h"

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
	shmf_t *f;
	unsigned id;
	int failed;
};

static void *thread_adds(void *arg)
{
	struct worker *w = arg;
	char key[17];
	for (uint64_t i = 0; i < 2000; i++)
		if (shmf_add(w->f, key, fixture_key(key, 20 + w->id, i)) != 1)
			w->failed = 1;
	return NULL;
}

/* 4 threads add through one handle into a filter they fill to 90%: the
 * relocations of one thread are not mistaken for another's (an OFD lock
 * is per descriptor, so the handle serialises its threads), and every key
 * is found afterwards. */
static void test_threads_share_a_handle(void **state)
{
	(void)state;
	fixture_filter(&fx, "threads", SHMF_TYPE_CUCKOO, 8400, 0.01); /* 2211 buckets, 8844 slots */
	shmf_t *f = fixture_open("threads", SHMF_RDWR);
	pthread_t t[4];
	struct worker w[4];
	for (unsigned i = 0; i < 4; i++) {
		w[i] = (struct worker){ f, i, 0 };
		assert_int_equal(pthread_create(&t[i], NULL, thread_adds, &w[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].failed, 0);
	}
	char key[17];
	for (unsigned id = 0; id < 4; id++)
		for (uint64_t i = 0; i < 2000; i++)
			if (shmf_check(f, key, fixture_key(key, 20 + id, i)) != 1)
				fail_msg("thread %u key %llu lost", id, (unsigned long long)i);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.items, 8000);
	printf("%llu relocations\n", (unsigned long long)info.relocations);
	assert_true(info.relocations > 100);
	shmf_close(f);
}

/*
 * A handle opened before fork() and used by parent and child: while the
 * parent holds the relocation lock (stopped mid-move by the test hook),
 * the child's capped add through the inherited handle must wait for it.
 * Without a lock descriptor of its own the child would share the parent's
 * open file description, and with it the lock, and go straight through.
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

int main(int argc, char **argv)
{
	const struct CMUnitTest all[] = {
		fixture_unit_test(test_frequency_cap, fx),
		fixture_unit_test(test_calls_by_type_and_mode, fx),
		fixture_unit_test(test_batches_fill_up, fx),
		fixture_unit_test(test_threads_share_a_handle, fx),
		fixture_unit_test(test_handle_shared_across_fork, fx),
	};
	const char *const names[] = { "cap", "calls", "batches", "threads", "fork" };
	return fixture_run(argc, argv, all, names);
}
