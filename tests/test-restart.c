/*
 * test-restart.c - the real shmd killed with SIGKILL while client
 * processes add to a Bloom and a cuckoo filter: a restarted shmd
 * re-attaches both and every key whose add returned is there. Then, with
 * periodic snapshots configured, the runtime directory is removed (a
 * reboot): the restarted shmd restores both filters from their newest
 * snapshots (every key added before that snapshot began is there), and
 * falls back to an older snapshot when the newest is damaged.
 *
 * Usage: test-restart PATH-TO-SHMD
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
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

#include "tests/daemon-process.h"
#include <shmf.h>

#define ADDERS 2 /* per filter */
static const char *shmd_path;
static char root[64], conf[128], snaps[128], logpath[128];
static const char *const filters[2] = { "rb", "rc" };

struct board {
	_Atomic uint64_t progress[2][ADDERS]; /* adds [0, progress) returned */
	_Atomic int stop;
};

static size_t key_of(char *buf, unsigned round, unsigned f, unsigned id, uint64_t i)
{
	return (size_t)sprintf(buf, "r%u-f%u-a%u-%llu", round, f, id, (unsigned long long)i);
}

static pid_t current; /* the running shmd, killed at exit whatever happened */

static pid_t start_shmd(void)
{
	char sock[128];
	snprintf(sock, sizeof(sock), "%s/rs.sock", root);
	current = daemon_start(shmd_path, conf, sock, logpath);
	return current;
}

static void adder(struct board *b, unsigned round, unsigned f, unsigned id)
{
	shmf_t *h;
	if (shmf_open("rs", filters[f], SHMF_RDWR, &h) < 0)
		_exit(3);
	char key[64];
	for (uint64_t i = 0; !atomic_load(&b->stop); i++) {
		if (shmf_add(h, key, key_of(key, round, f, id, i)) < 0)
			_exit(4);
		atomic_store(&b->progress[f][id], i + 1);
	}
	shmf_close(h);
	_exit(0);
}

static void start_adders(struct board *b, unsigned round, pid_t pids[2][ADDERS])
{
	memset(b, 0, sizeof(*b));
	for (unsigned f = 0; f < 2; f++)
		for (unsigned id = 0; id < ADDERS; id++)
			if ((pids[f][id] = fork()) == 0)
				adder(b, round, f, id);
}

static void stop_adders(struct board *b, pid_t pids[2][ADDERS])
{
	atomic_store(&b->stop, 1);
	for (unsigned f = 0; f < 2; f++)
		for (unsigned id = 0; id < ADDERS; id++) {
			int st;
			assert_int_equal(waitpid(pids[f][id], &st, 0), pids[f][id]);
			assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		}
}

/* Every key [0, upto) of each adder of @p round is in its filter. */
static void assert_keys(unsigned round, uint64_t upto[2][ADDERS])
{
	char key[64];
	for (unsigned f = 0; f < 2; f++) {
		shmf_t *h;
		int rc = shmf_open("rs", filters[f], SHMF_RDONLY, &h);
		if (rc < 0)
			fail_msg("open %s after restart: %s", filters[f], shmf_strerror(rc));
		for (unsigned id = 0; id < ADDERS; id++)
			for (uint64_t i = 0; i < upto[f][id]; i++)
				if (shmf_check(h, key, key_of(key, round, f, id, i)) != 1)
					fail_msg("round %u: key %s (of %llu) lost", round, key,
						 (unsigned long long)upto[f][id]);
		shmf_close(h);
	}
}

static void kill_shmd(pid_t pid)
{
	daemon_stop(pid, SIGKILL);
}

static int log_has(const char *text)
{
	return daemon_log_count(logpath, text) > 0;
}

static void test_restart(void **state)
{
	(void)state;
	struct board *b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(b != MAP_FAILED);
	pid_t pids[2][ADDERS];
	uint64_t upto[2][ADDERS], upto1[2][ADDERS];

	/* 1. SIGKILL while clients add; the segments stay; restart re-attaches. */
	pid_t d = start_shmd();
	start_adders(b, 1, pids);
	while (atomic_load(&b->progress[1][ADDERS - 1]) < 20000)
		usleep(1000);
	kill_shmd(d);
	usleep(100000); /* the adders go on without a daemon */
	stop_adders(b, pids);
	memcpy(upto1, (void *)b->progress, sizeof(upto1));
	d = start_shmd();
	assert_keys(1, upto1);
	assert_true(log_has("filter 'rb': attached generation"));

	/* 2. Adds, then a periodic snapshot after they stopped, SIGKILL, and
	 * the runtime directory removed: restored from the snapshots. */
	start_adders(b, 2, pids);
	while (atomic_load(&b->progress[1][ADDERS - 1]) < 20000)
		usleep(1000);
	stop_adders(b, pids);
	memcpy(upto, (void *)b->progress, sizeof(upto));
	time_t t0 = time(NULL);
	/* Two snapshots of each after the adds stopped (1 s apart; keep 2). */
	while (daemon_count_snapshots(snaps, "rb") < 2 || time(NULL) < t0 + 3)
		usleep(100000);
	assert_true(daemon_count_snapshots(snaps, "rb") <= 2); /* snapshot_keep = 2 pruned the rest */
	kill_shmd(d);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf %s/rs %s/rs.sock %s/rs.pid", root, root, root);
	assert_int_equal(system(cmd), 0);
	d = start_shmd();
	assert_keys(1, upto1); /* round 1 keys came back too */
	assert_keys(2, upto);
	assert_true(log_has("filter 'rb': missing at start; restored from snapshot"));
	assert_true(log_has("filter 'rc': missing at start; restored from snapshot"));

	/* 3. The newest snapshot damaged: the next older one is used. */
	kill_shmd(d);
	assert_int_equal(system(cmd), 0);
	char bad[256];
	snprintf(bad, sizeof(bad), "%s/rc.29991231T235959Z.snap", snaps);
	FILE *fp = fopen(bad, "w");
	assert_non_null(fp);
	fputs("not a snapshot", fp);
	fclose(fp);
	/* And a temporary file that a killed snapshot writer left. */
	char stale[256];
	snprintf(stale, sizeof(stale), "%s/.rb.20200101T000000Z.snap.tmp-99999", snaps);
	fp = fopen(stale, "w");
	assert_non_null(fp);
	fclose(fp);
	d = start_shmd();
	assert_true(log_has("rc.29991231T235959Z.snap: snapshot ") && log_has("trying an older snapshot"));
	assert_keys(2, upto);
	for (int i = 0; i < 50 && access(stale, F_OK) == 0; i++)
		usleep(100000); /* the next periodic snapshot removes it */
	assert_int_not_equal(access(stale, F_OK), 0);
	assert_true(log_has("left by a snapshot that did not finish"));
	kill(d, SIGTERM);
	waitpid(d, NULL, 0);
	munmap(b, sizeof(*b));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s PATH-TO-SHMD\n", argv[0]);
		return 2;
	}
	shmd_path = argv[1];
	if (daemon_rundir_make(root, sizeof(root), "restart") < 0)
		return 1;
	snprintf(snaps, sizeof(snaps), "%s/snaps", root);
	snprintf(conf, sizeof(conf), "%s/shmd.conf", root);
	snprintf(logpath, sizeof(logpath), "%s/shmd.log", root);
	mkdir(snaps, 0700);
	if (daemon_write_conf(
		    conf,
		    "[instance]\nname = rs\nsnapshot_dir = %s\n"
		    "[filter rb]\ntype = bloom\ncapacity = 4000000\nfpr = 0.01\nmode = 0660\nsnapshot_every = 1s\n"
		    "snapshot_keep = 2\n"
		    "[filter rc]\ntype = cuckoo\ncapacity = 4000000\nfpr = 0.01\nmode = 0660\nsnapshot_every = 1s\n"
		    "snapshot_keep = 2\n",
		    snaps) < 0)
		return 1;
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_restart) };
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	if (current > 0 && kill(current, SIGKILL) == 0)
		waitpid(current, NULL, 0);
	if (rc != 0 && daemon_log_tail(logpath, 30) < 0)
		rc = 1;
	if (daemon_rundir_remove(root) < 0)
		return 1;
	return rc;
}
