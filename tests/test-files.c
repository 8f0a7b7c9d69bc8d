/*
 * test-files.c - files named by clients against a real shmd:
 * the event loop never waits on a file, only regular files are read,
 * snapshot targets are checked, and no temporary file outlives its writer.
 *
 * The slow device is an ext4 file system on a loop device that the test
 * freezes (FIFREEZE): every write to it blocks until the test thaws it, so
 * a snapshot there is as slow as the test wants, deterministically. No
 * FUSE or device-mapper is needed (dm-delay needs a kernel driver this
 * machine may not have; fsfreeze needs only ext4 and a loop device, there
 * wherever CI runs as root). Without root the tests that mount skip.
 *
 *   test-files PATH-TO-SHMD PATH-TO-SHMCTL TEST
 *
 * TEST: slow (FIFO restore, frozen-disk snapshot: PING and rotation timed),
 * targets (where a snapshot may go, what may be read), killed (kill -9
 * mid-snapshot, a killed shmctl build, SIGTERM mid-snapshot: temporaries).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/daemon-process.h"
#include "tests/ping-timing.h"
#include <shmf.h>
#include "tests/run-named.h"

#define INSTANCE "files"
static const char *shmd_path, *shmctl_path;
static struct daemon_dir shmd;  /* shmd's runtime directory and files */
static char mnt[160], img[160]; /* the slow file system; "" none */
static int frozen_fd = -1;
static char files_dir[192]; /* test_targets' files; "" none */
static pid_t daemon_pid;
static redisContext *rc;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int run(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- the slow file system ------------------------------------------------- */

static void thaw(void)
{
	if (frozen_fd >= 0) {
		ioctl(frozen_fd, FITHAW, 0);
		close(frozen_fd);
	}
	frozen_fd = -1;
}

static void freeze(void)
{
	frozen_fd = open(mnt, O_RDONLY | O_DIRECTORY);
	assert_true(frozen_fd >= 0);
	if (ioctl(frozen_fd, FIFREEZE, 0) < 0)
		fail_msg("FIFREEZE %s: %s", mnt, strerror(errno));
}

/* An ext4 file system of @p mb MiB on a loop device at mnt. 0, or -1 (not root: skip). */
static int slow_fs_make(unsigned mb)
{
	char cmd[1024];
	if (geteuid() != 0)
		return -1;
	/* Outside the runtime directory, where snapshots are refused. */
	snprintf(mnt, sizeof(mnt), "/tmp/shmf-files-%ld.mnt", (long)getpid());
	snprintf(img, sizeof(img), "/tmp/shmf-files-%ld.img", (long)getpid());
	snprintf(cmd, sizeof(cmd), "truncate -s %uM %s && mkfs.ext4 -q -F %s && mkdir -p %s && mount -o loop %s %s", mb,
		 img, img, mnt, img, mnt);
	if (run(cmd) != 0)
		fail_msg("cannot make the slow file system (%s): root needs truncate, mkfs.ext4 and a loop device",
			 cmd);
	return 0;
}

static void slow_fs_remove(void)
{
	char cmd[1024];
	thaw();
	if (mnt[0] != '\0') {
		snprintf(cmd, sizeof(cmd), "umount %s 2>/dev/null; rmdir %s; rm -f %s", mnt, mnt, img);
		run(cmd);
	}
	mnt[0] = '\0';
}

/* ---- the daemon ------------------------------------------------------------- */

/* shmd with filters big (Bloom, @p big_capacity keys), other, and w (a
 * 1-second window of 3), and @p extra lines in [instance]. */
static void start(uint64_t big_capacity, const char *extra)
{
	assert_int_equal(daemon_write_conf(shmd.conf,
					   "[instance]\nname = " INSTANCE "\n%s\n"
					   "[filter big]\ncapacity = %" PRIu64 "\nfpr = 0.01\n"
					   "[filter other]\ncapacity = 1000\nfpr = 0.01\n"
					   "[filter w]\ncapacity = 1000\nfpr = 0.01\nwindow = 1s\ngenerations = 3\n",
					   extra, big_capacity),
			 0);
	daemon_pid = daemon_start(shmd_path, shmd.conf, shmd.sock, shmd.log);
	rc = redisConnectUnix(shmd.sock);
	assert_true(rc != NULL && rc->err == 0);
}

static void stop(int sig)
{
	if (rc != NULL)
		redisFree(rc);
	rc = NULL;
	if (daemon_pid > 0)
		daemon_stop(daemon_pid, sig);
	daemon_pid = 0;
}

static int setup(void **state)
{
	(void)state;
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(daemon_dir_make(&shmd, "files", INSTANCE, 0), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	thaw();
	stop(SIGKILL);
	slow_fs_remove();
	if (files_dir[0] != '\0') {
		char cmd[256];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", files_dir);
		run(cmd);
		files_dir[0] = '\0';
	}
	daemon_rundir_remove(shmd.root);
	return 0;
}

/* A request of string arguments on the daemon's connection; the reply (caller frees). */
static redisReply *ask_argv(int argc, const char **argv)
{
	redisReply *r = redisCommandArgv(rc, argc, argv, NULL);
	if (r == NULL)
		fail_msg("no reply to %s: %s", argv[0], rc->errstr);
	return r;
}

#define ASK(...) \
	ask_argv(sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(const char *), (const char *[]){ __VA_ARGS__ })

static void ok(redisReply *r)
{
	if (r->type == REDIS_REPLY_ERROR)
		fail_msg("error reply: %s", r->str);
	freeReplyObject(r);
}

/* The reply is an error holding @p text. */
static void refused(redisReply *r, const char *text)
{
	if (r->type != REDIS_REPLY_ERROR)
		fail_msg("accepted; expected an error saying '%s'", text);
	if (strstr(r->str, text) == NULL)
		fail_msg("error '%s' does not say '%s'", r->str, text);
	printf("# refused: %s\n", r->str);
	freeReplyObject(r);
}

/* A raw connection for requests whose reply comes later. */
static int raw_connect(void)
{
	int fd = sock_unix_connect(shmd.sock);
	assert_true(fd >= 0);
	return fd;
}

static void raw_send(int fd, int argc, const char **argv)
{
	resp_send(fd, argc, argv, NULL);
}

/* ---- slow: FIFO restore, frozen-disk snapshot --------------------------------- */

static void test_fifo(shmf_t *w)
{
	char fifo[192];
	snprintf(fifo, sizeof(fifo), "%s/never-opened.fifo", shmd.root);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* Refused at once: O_NONBLOCK opens a FIFO without a writer without
	 * waiting, and it is not a regular file. */
	static const char *const verbs[] = { "SHMF.RESTORE", "SHMF.SWAP", "SHMF.MERGE" };
	for (size_t i = 0; i < 3; i++) {
		double t0 = now_ms();
		refused(ASK(verbs[i], "other", fifo), "is a FIFO, not a snapshot file");
		printf("# %s from a FIFO never opened: refused in %.1f ms\n", verbs[i], now_ms() - t0);
	}
	/* And a restore from it parked on another connection harms nothing
	 * either: PING and rotations while it is (not) pending. */
	int fd = raw_connect();
	const char *req[] = { "SHMF.RESTORE", "fromfifo", fifo };
	raw_send(fd, 3, req);
	struct ping_timing t;
	ping_timing_run(rc, w, 1500, NULL, NULL, &t);
	char line[512];
	resp_read_line(fd, line, sizeof(line), 5000);
	assert_non_null(strstr(line, "is a FIFO"));
	close(fd);
	printf("# FIFO restore: %u PINGs, slowest %.2f ms, %u over 50 ms; %u rotations of the 1 s window\n", t.pings,
	       t.worst_ping, t.slow_pings, t.rotations);
	ping_timing_assert(&t);
	assert_true(t.rotations >= 1);
}

static void test_slow(void **state)
{
	(void)state;
	if (slow_fs_make(256) < 0)
		skip();
	/* 16 M keys: a 19 MB payload, five checksum chunks. */
	start(16000000, "");
	shmf_t *w;
	assert_int_equal(shmf_open(INSTANCE, "w", SHMF_RDONLY, &w), 0);
	test_fifo(w);

	char target[256];
	snprintf(target, sizeof(target), "%s/big.snap", mnt);
	freeze();
	int a = raw_connect(), c = raw_connect();
	const char *snap[] = { "SHMF.SNAPSHOT", "big", target };
	raw_send(a, 3, snap);
	usleep(200000); /* the worker is in the frozen file system by now */
	/* A write to the filter being snapshotted waits for the snapshot, in order. */
	const char *add[] = { "BF.ADD", "big", "after-snapshot" };
	raw_send(c, 3, add);
	struct ping_timing t;
	ping_timing_run(rc, w, 3500, NULL, NULL, &t);
	/* Other filters' commands go on. */
	ok(ASK("BF.ADD", "other", "k"));
	char line[512];
	if (resp_read_line(a, line, sizeof(line), 10) != 0)
		fail_msg("the snapshot replied while the disk was frozen: %s", line);
	if (resp_read_line(c, line, sizeof(line), 10) != 0)
		fail_msg("an add to the filter being snapshotted replied before the snapshot: %s", line);
	printf("# frozen-disk snapshot: %u PINGs, slowest %.2f ms, %u over 50 ms; %u rotations, longest between two "
	       "%.0f ms\n",
	       t.pings, t.worst_ping, t.slow_pings, t.rotations, t.worst_gap);
	ping_timing_assert(&t);
	assert_true(t.rotations >= 2);
	assert_true(t.worst_gap < ROTATE_BOUND_MS);
	thaw();
	resp_read_line(a, line, sizeof(line), 30000);
	if (strncmp(line, "+OK", 3) != 0)
		fail_msg("snapshot after thawing: '%s'; log: %s", line, daemon_read_file(shmd.log));
	resp_read_line(c, line, sizeof(line), 5000);
	assert_string_equal(line, ":1\r\n"); /* new: added after the copy */
	close(a);
	close(c);
	/* The file is whole and restores. */
	ok(ASK("SHMF.RESTORE", "copy", target));
	shmf_close(w);
	stop(SIGTERM);
}

/* ---- targets: where a snapshot may be written, what may be read --------------- */

static void assert_kind(const char *path, mode_t kind)
{
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & S_IFMT, kind);
}

static void test_targets(void **state)
{
	(void)state;
	char dir[192], fifo[256], sub[256], link[256], notsnap[256], control[256], good[256], allowed[224],
		outside[300];
	/* Outside the runtime directory, where snapshots are refused. */
	snprintf(dir, sizeof(dir), "/tmp/shmf-files-%ld.dir", (long)getpid());
	snprintf(files_dir, sizeof(files_dir), "%s", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(sub, sizeof(sub), "%s/subdir", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(notsnap, sizeof(notsnap), "%s/notes.txt", dir);
	snprintf(good, sizeof(good), "%s/good.snap", dir);
	snprintf(control, sizeof(control), "%s/" INSTANCE "/control", shmd.root);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(daemon_write_conf(notsnap, "precious notes\n"), 0);
	start(1000, "");
	ok(ASK("BF.ADD", "other", "k"));
	ok(ASK("SHMF.SNAPSHOT", "other", good));
	assert_int_equal(symlink(good, link), 0);
	struct stat before;
	assert_int_equal(stat(control, &before), 0);

	refused(ASK("SHMF.SNAPSHOT", "other", "/dev/null"), "is a character device, not a snapshot file");
	assert_kind("/dev/null", S_IFCHR);
	refused(ASK("SHMF.SNAPSHOT", "other", "/dev/null", "FORCE"), "character device");
	assert_kind("/dev/null", S_IFCHR);
	refused(ASK("SHMF.SNAPSHOT", "other", fifo), "is a FIFO");
	assert_kind(fifo, S_IFIFO);
	refused(ASK("SHMF.SNAPSHOT", "other", sub), "is a directory");
	assert_kind(sub, S_IFDIR);
	refused(ASK("SHMF.SNAPSHOT", "other", link), "is a symbolic link");
	assert_kind(link, S_IFLNK);
	refused(ASK("SHMF.SNAPSHOT", "other", control), "is an instance directory in shmd's runtime directory");
	refused(ASK("SHMF.SNAPSHOT", "other", control, "FORCE"), "runtime directory");
	struct stat after;
	assert_int_equal(stat(control, &after), 0);
	assert_true(after.st_ino == before.st_ino && after.st_size == before.st_size);
	char pidfile[256];
	snprintf(pidfile, sizeof(pidfile), "%s/" INSTANCE ".pid", shmd.root);
	refused(ASK("SHMF.SNAPSHOT", "other", pidfile, "FORCE"), "is the name of an instance's pidfile");
	refused(ASK("SHMF.SNAPSHOT", "other", notsnap), "is not a snapshot");
	assert_string_equal(daemon_read_file(notsnap), "precious notes\n");
	ok(ASK("SHMF.SNAPSHOT", "other", notsnap, "FORCE"));
	ok(ASK("SHMF.RESTORE", "copy", notsnap));
	/* Over an older snapshot: no FORCE needed. */
	ok(ASK("SHMF.SNAPSHOT", "other", good));
	/* Reading: links and non-regular files refused, naming what they are. */
	refused(ASK("SHMF.RESTORE", "copy2", link), "is a symbolic link");
	refused(ASK("SHMF.SWAP", "other", sub), "is a directory");
	refused(ASK("SHMF.RESTORE", "copy2", "/dev/null"), "is a character device");
	stop(SIGTERM);

	/* snapshot_paths: client-named files only in those directories. */
	snprintf(allowed, sizeof(allowed), "%s/allowed", dir);
	snprintf(outside, sizeof(outside), "%s/outside.snap", dir);
	assert_int_equal(mkdir(allowed, 0700), 0);
	char extra[300], inside[256];
	snprintf(extra, sizeof(extra), "snapshot_paths = %s", allowed);
	snprintf(inside, sizeof(inside), "%s/in.snap", allowed);
	start(1000, extra);
	refused(ASK("SHMF.SNAPSHOT", "other", outside), "outside snapshot_paths");
	assert_int_not_equal(access(outside, F_OK), 0);
	refused(ASK("SHMF.RESTORE", "copy3", good), "outside snapshot_paths");
	ok(ASK("SHMF.SNAPSHOT", "other", inside));
	ok(ASK("SHMF.RESTORE", "copy3", inside));
	/* A link into snapshot_paths from outside does not make a file inside. */
	char escape[256];
	snprintf(escape, sizeof(escape), "%s/escape", allowed);
	assert_int_equal(symlink(dir, escape), 0);
	char via[300];
	snprintf(via, sizeof(via), "%s/via.snap", escape);
	refused(ASK("SHMF.SNAPSHOT", "other", via), "outside snapshot_paths");
	stop(SIGTERM);
}

/* ---- killed: nothing left behind ------------------------------------------------ */

/* The temporary snapshot files in @p dir. */
static int temporaries(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL)
		n += e->d_name[0] == '.' && strstr(e->d_name, ".tmp-") != NULL;
	if (d != NULL)
		closedir(d);
	return n;
}

/* Wait (10 s at most) until a temporary file appears in @p dir. */
static void wait_temporary(const char *dir)
{
	for (int i = 0; i < 10000 && temporaries(dir) == 0; i++)
		usleep(1000);
	assert_true(temporaries(dir) > 0);
}

/* A snapshot of big into the slow file system, frozen once its temporary
 * file is there (mid-write); the connection it was asked on. */
static int snapshot_frozen(const char *target)
{
	int fd = raw_connect();
	const char *req[] = { "SHMF.SNAPSHOT", "big", target };
	raw_send(fd, 3, req);
	wait_temporary(mnt);
	freeze();
	return fd;
}

/* kill -9 shmd in the middle of that snapshot, then thaw: the temporary
 * file stays behind. */
static void kill_mid_snapshot(const char *target)
{
	int fd = snapshot_frozen(target);
	kill(daemon_pid, SIGKILL);
	thaw();
	waitpid(daemon_pid, NULL, 0);
	daemon_pid = 0;
	close(fd);
	redisFree(rc);
	rc = NULL;
}

static void test_killed(void **state)
{
	(void)state;
	if (slow_fs_make(512) < 0)
		skip();
	char target[256], extra[256];
	snprintf(target, sizeof(target), "%s/big.snap", mnt);
	snprintf(extra, sizeof(extra), "snapshot_paths = %s", mnt);
	/* 150 M keys: a 180 MB payload, long enough to be caught mid-write. */
	start(150000000, extra);

	/* kill -9 mid-write; the restart, which knows the directory
	 * (snapshot_paths), removes what it left. */
	kill_mid_snapshot(target);
	int left = temporaries(mnt);
	printf("# kill -9 mid-snapshot: %d temporary file(s) left\n", left);
	assert_int_equal(left, 1);
	start(150000000, extra);
	printf("# after the restart: %d\n", temporaries(mnt));
	assert_int_equal(temporaries(mnt), 0);
	assert_true(daemon_log_count(shmd.log, "left by a snapshot that did not finish") >= 1);

	/* Killed again; a daemon that does not know the directory: the next
	 * snapshot into it removes the file. */
	kill_mid_snapshot(target);
	assert_int_equal(temporaries(mnt), 1);
	start(1000, "");
	char small[256];
	snprintf(small, sizeof(small), "%s/other.snap", mnt);
	ok(ASK("SHMF.SNAPSHOT", "other", small));
	printf("# after the next snapshot into the directory: %d\n", temporaries(mnt));
	assert_int_equal(temporaries(mnt), 0);
	stop(SIGTERM);

	/* A killed shmctl build leaves its own; the next snapshot there removes it. */
	char cmd[768];
	snprintf(cmd, sizeof(cmd),
		 "seq 1 200000 | %s build --capacity 150000000 --fpr 0.01 --from - -o %s/built.snap & "
		 "pid=$!; for i in $(seq 1 5000); do ls -a %s | grep -q '^\\.built.snap.tmp-' && break; sleep 0.002; done; "
		 "kill -9 $pid; wait $pid 2>/dev/null; ls -a %s | grep -c '^\\.built.snap.tmp-'",
		 shmctl_path, mnt, mnt, mnt);
	FILE *p = popen(cmd, "r");
	char out[32] = "";
	assert_non_null(fgets(out, sizeof(out), p));
	pclose(p);
	printf("# kill -9 of shmctl build mid-write: %d temporary file(s) left\n", atoi(out));
	assert_int_equal(atoi(out), 1);
	start(1000, "");
	ok(ASK("SHMF.SNAPSHOT", "other", small));
	assert_int_equal(temporaries(mnt), 0);
	stop(SIGTERM);

	/* SIGTERM mid-write: shmd cancels the snapshot at its next chunk once
	 * the disk lets the write return, removes the temporary file, exits 0. */
	start(150000000, extra);
	int fd = snapshot_frozen(target);
	kill(daemon_pid, SIGTERM);
	usleep(300000);
	thaw();
	int st = daemon_stop(daemon_pid, 0);
	daemon_pid = 0;
	close(fd);
	redisFree(rc);
	rc = NULL;
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	printf("# SIGTERM mid-snapshot: %d temporary file(s) left\n", temporaries(mnt));
	assert_int_equal(temporaries(mnt), 0);
	assert_true(daemon_log_count(shmd.log, "file job(s) cancelled") >= 1);
	/* Cancelled (no file), or done before the cancel was seen (whole). */
	if (access(target, F_OK) == 0) {
		snprintf(cmd, sizeof(cmd), "%s inspect %s >/dev/null", shmctl_path, target);
		assert_int_equal(run(cmd), 0);
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: test-files SHMD SHMCTL [slow|targets|killed]\n");
		return 2;
	}
	shmd_path = argv[1];
	shmctl_path = argv[2];
	const struct CMUnitTest all[] = {
		cmocka_unit_test_setup_teardown(test_slow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_targets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killed, setup, teardown),
	};
	static const char *const names[] = { "slow", "targets", "killed" };
	return RUN_NAMED("files", argc > 3 ? argv[3] : NULL, all, names, NULL, NULL);
}
