/*
 * test-permissions.c - who may do what, against the real shmd running as
 * root with a client group (users and a group created for the test, and
 * removed after it):
 *
 *   modes     - the instance directory, control file, data files and
 *               socket get the configured modes and group;
 *   users     - a user outside the group can neither open a filter nor
 *               connect (a clear EACCES); a member may check a 0640
 *               filter but not add to it, and add to a 0660 one; files it
 *               names on the socket (as an admin: [roles] admin_group is
 *               the group here) are opened with its identity;
 *   read-only - a check-only handle's mapping is read-only: a write
 *               through it faults (SIGSEGV in a child), mprotect cannot
 *               make it writable, and the control file mapping is the same;
 *   planted   - files another user planted in the instance directory (a
 *               data file, the control file, a symlink) are refused, by
 *               clients and by a restarted shmd (which leaves a refused
 *               file in place for an operator); a directory owned by
 *               another user is refused by the clients and by shmd;
 *   names     - names that try to leave the directory are refused by the
 *               library, on the socket and in the configuration.
 *
 * Usage: test-permissions PATH-TO-SHMD
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/daemon-process.h"
#include "tests/fixture.h"
#include "libclient/rundir.h"
#include "tests/users.h"

#define INSTANCE "pm"
static const char *shmd_path;
static struct daemon_dir shmd; /* shmd's runtime directory and files */
static char group_name[32], member_name[32], outsider_name[32];
static gid_t group_gid;
static uid_t member_uid, outsider_uid;
static pid_t daemon_pid;

/* ---- Users and the daemon ---------------------------------------------- */

static int run(const char *cmd)
{
	int rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* The client group, a member of it and a user outside it. */
static int make_users(void)
{
	if (users_make_group("shmfg", group_name, sizeof(group_name), &group_gid) < 0 ||
	    users_make_user("shmfm", member_name, sizeof(member_name), &member_uid, group_name, NULL) < 0 ||
	    users_make_user("shmfo", outsider_name, sizeof(outsider_name), &outsider_uid, NULL) < 0)
		return -1;
	return member_uid != outsider_uid ? 0 : -1;
}

static int connect_sock(void)
{
	return sock_unix_connect(shmd.sock);
}

static void start_shmd(void)
{
	daemon_pid = daemon_start(shmd_path, shmd.conf, shmd.sock, shmd.log);
}

static void stop_shmd(void)
{
	if (daemon_pid > 0)
		daemon_stop(daemon_pid, SIGTERM);
	daemon_pid = 0;
}

/* Send one request and read one line of reply. */
static void request(int fd, int argc, const char *const *argv, const size_t *lens, char *reply, size_t cap)
{
	resp_send(fd, argc, argv, lens);
	resp_read_line(fd, reply, cap, 10000);
}

static void call(int argc, const char *const *argv, char *reply, size_t cap)
{
	int fd = connect_sock();
	assert_true(fd >= 0);
	request(fd, argc, argv, NULL, reply, cap);
	close(fd);
}

static int setup(void **state)
{
	(void)state;
	if (daemon_dir_make_as_root(&shmd, "test-permissions", make_users, "perm", INSTANCE) < 0)
		return -1;
	if (daemon_write_conf(shmd.conf,
			      "[instance]\nname = " INSTANCE "\ndir_mode = 0750\nsocket_mode = 0660\ngroup = %s\n"
			      /* The member an admin (test-roles covers writers), so that
			       * the file verbs run and open its files as itself. */
			      "[roles]\nadmin_group = %s\n"
			      "[filter ro]\ncapacity = 100000\nfpr = 0.01\nmode = 0640\n"
			      "[filter rw]\ncapacity = 100000\nfpr = 0.01\nmode = 0660\n"
			      "[filter cu]\ntype = cuckoo\ncapacity = 100000\nfpr = 0.01\nmode = 0660\n"
			      "[filter priv]\ncapacity = 100000\nfpr = 0.01\nmode = 0600\n",
			      group_name, group_name) < 0)
		return -1;
	start_shmd();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	int rc = daemon_dir_remove(&shmd, &daemon_pid, SIGTERM);
	users_remove();
	return rc;
}

static void assert_file(const char *path, mode_t type, unsigned mode, uid_t uid, gid_t gid)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		fail_msg("%s: %s", path, strerror(errno));
	if ((st.st_mode & S_IFMT) != type || (st.st_mode & 07777) != mode || st.st_uid != uid || st.st_gid != gid)
		fail_msg("%s: mode %04o owner %u:%u, want %04o %u:%u", path, (unsigned)(st.st_mode & 07777),
			 (unsigned)st.st_uid, (unsigned)st.st_gid, mode, (unsigned)uid, (unsigned)gid);
}

/* ---- Modes -------------------------------------------------------------- */

static void test_modes(void **state)
{
	(void)state;
	char path[256];
	assert_file(shmd.idir, S_IFDIR, 0750, 0, group_gid);
	snprintf(path, sizeof(path), "%s/control", shmd.idir);
	assert_file(path, S_IFREG, 0640, 0, group_gid);
	assert_file(shmd.sock, S_IFSOCK, 0660, 0, group_gid);
	static const struct {
		const char *name;
		unsigned mode;
	} want[] = { { "ro", 0640 }, { "rw", 0660 }, { "cu", 0660 }, { "priv", 0600 } };
	for (size_t i = 0; i < 4; i++) {
		fixture_client_data_path(INSTANCE, want[i].name, path, sizeof(path));
		assert_file(path, S_IFREG, want[i].mode, 0, group_gid);
	}
	/* A filter created on the socket: the default mode, the group. */
	char reply[256];
	const char *argv[] = { "BF.RESERVE", "made", "0.01", "1000" };
	call(4, argv, reply, sizeof(reply));
	assert_string_equal(reply, "+OK\r\n");
	fixture_client_data_path(INSTANCE, "made", path, sizeof(path));
	assert_file(path, S_IFREG, 0640, 0, group_gid);
	/* A rotation or a swap keeps the mode: the next generation of rw. */
	char file[128];
	snprintf(file, sizeof(file), "%s/rw.snap", shmd.root);
	const char *s1[] = { "SHMF.SNAPSHOT", "rw", file };
	call(3, s1, reply, sizeof(reply));
	assert_string_equal(reply, "+OK\r\n");
	assert_file(file, S_IFREG, 0660, 0, 0); /* the data file's mode; written as root */
	const char *s2[] = { "SHMF.SWAP", "rw", file };
	call(3, s2, reply, sizeof(reply));
	assert_string_equal(reply, "+OK\r\n");
	fixture_client_data_path(INSTANCE, "rw", path, sizeof(path));
	assert_file(path, S_IFREG, 0660, 0, group_gid);
}

/* ---- Users -------------------------------------------------------------- */

/* 1 (and the detail printed) if shmf_error_detail() lacks one of the
 * NULL-terminated strings after @p first. */
static int detail_lacks_v(const char *first, ...)
{
	va_list ap;
	const char *d = shmf_error_detail();
	int lacks = 0;
	va_start(ap, first);
	for (const char *s = first; s != NULL && !lacks; s = va_arg(ap, const char *))
		lacks = strstr(d, s) == NULL;
	va_end(ap);
	fprintf(stderr, "%s: shmf_error_detail(): %s\n", lacks ? "LACKS" : "ok", d);
	return lacks;
}
#define detail_lacks(...) detail_lacks_v(__VA_ARGS__, NULL)

/* Exit codes of the children: 0 as expected, else which check failed. */
static int outsider_checks(void)
{
	shmf_t *f = NULL;
	static const char *const names[] = { "ro", "rw", "cu", "priv" };
	for (int i = 0; i < 4; i++) {
		if (shmf_open(INSTANCE, names[i], SHMF_RDONLY, &f) != -EACCES || f != NULL)
			return 10 + i;
		if (shmf_open(INSTANCE, names[i], SHMF_RDWR, &f) != -EACCES || f != NULL)
			return 20 + i;
	}
	if (strcmp(shmf_strerror(-EACCES), "Permission denied") != 0)
		return 30;
	/* The detail names the directory refused, its owner, group and mode,
	 * who asked, and what to change. */
	if (shmf_open(INSTANCE, "rw", SHMF_RDWR, &f) != -EACCES)
		return 32;
	if (detail_lacks(shmd.idir, "Permission denied", "(the instance directory)", outsider_name, "not in group",
			 group_name, "is root:", "mode 0750", "run the worker as a member of group"))
		return 33;
	if (connect_sock() != -EACCES)
		return 31;
	return 0;
}

static int member_checks(void)
{
	shmf_t *f;
	char key[32];
	size_t len = fixture_key(key, 1, 1);
	/* 0640: check yes, add no. */
	if (shmf_open(INSTANCE, "ro", SHMF_RDONLY, &f) != 0)
		return 10;
	if (shmf_check(f, key, len) != 0 || shmf_add(f, key, len) != SHMF_E_READONLY)
		return 11;
	shmf_close(f);
	if (shmf_open(INSTANCE, "ro", SHMF_RDWR, &f) != -EACCES)
		return 12;
	/* The data file refused, named with its mode and group, and the two
	 * ways out. */
	char data[256];
	snprintf(data, sizeof(data), "%s/ro.", shmd.idir);
	if (detail_lacks(data, ".data: Permission denied opening it to add (SHMF_RDWR)", member_name, ", in group ",
			 group_name, "it is root:", "mode 0640", "open it with SHMF_RDONLY", "'shmctl chmod ro 0660'"))
		return 22;
	if (shmf_open(INSTANCE, "ro", SHMF_RDONLY, &f) != 0 || strcmp(shmf_error_detail(), "") != 0)
		return 23;
	shmf_close(f);
	/* 0660: add too, and the cuckoo lock through its own descriptor. */
	if (shmf_open(INSTANCE, "rw", SHMF_RDWR, &f) != 0)
		return 13;
	if (shmf_add(f, key, len) != 1 || shmf_check(f, key, len) != 1)
		return 14;
	shmf_close(f);
	if (shmf_open(INSTANCE, "cu", SHMF_RDWR, &f) != 0)
		return 15;
	if (shmf_add_capped(f, key, len, 2) != 0 || shmf_add_capped(f, key, len, 2) != 1 ||
	    shmf_add_capped(f, key, len, 2) != 2 || shmf_count(f, key, len) != 2)
		return 16;
	shmf_close(f);
	/* 0600: not even a check. */
	if (shmf_open(INSTANCE, "priv", SHMF_RDONLY, &f) != -EACCES)
		return 17;
	if (detail_lacks(shmd.idir, "/priv.", "to check (SHMF_RDONLY)", "mode 0600", "give the filter mode 0640",
			 "'shmctl chmod priv MODE'"))
		return 24;
	/* The socket: files are opened as this user, not as root. */
	char reply[512], path[160];
	snprintf(path, sizeof(path), "%s/secret.snap", shmd.root);
	const char *restore[] = { "SHMF.RESTORE", "stolen", path };
	call(3, restore, reply, sizeof(reply));
	if (strncmp(reply, "-ERR", 4) != 0 || strstr(reply, "Permission denied") == NULL)
		return 18;
	snprintf(path, sizeof(path), "%s/rootonly/mine.snap", shmd.root);
	const char *snap[] = { "SHMF.SNAPSHOT", "ro", path };
	call(3, snap, reply, sizeof(reply));
	if (strncmp(reply, "-ERR", 4) != 0 || strstr(reply, "Permission denied") == NULL)
		return 19;
	snprintf(path, sizeof(path), "%s/open/mine.snap", shmd.root);
	const char *snap2[] = { "SHMF.SNAPSHOT", "ro", path };
	call(3, snap2, reply, sizeof(reply));
	if (strcmp(reply, "+OK\r\n") != 0) {
		fprintf(stderr, "member's snapshot into its own directory: %s", reply);
		return 20;
	}
	struct stat st;
	if (stat(path, &st) < 0 || st.st_uid != getuid())
		return 21;
	return 0;
}

static void test_users(void **state)
{
	(void)state;
	char path[160], reply[256];
	/* A snapshot only root may read, a directory only root may write to,
	 * and one the member may write to. */
	snprintf(path, sizeof(path), "%s/secret.snap", shmd.root);
	const char *snap[] = { "SHMF.SNAPSHOT", "priv", path };
	call(3, snap, reply, sizeof(reply));
	assert_string_equal(reply, "+OK\r\n");
	assert_file(path, S_IFREG, 0600, 0, 0);
	snprintf(path, sizeof(path), "%s/rootonly", shmd.root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/open", shmd.root);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chown(path, member_uid, (gid_t)-1), 0);

	int rc = users_run_as(outsider_name, outsider_checks);
	if (rc != 0)
		fail_msg("a user outside the group: check %d failed (see outsider_checks)", rc);
	rc = users_run_as(member_name, member_checks);
	if (rc != 0)
		fail_msg("a member of the group: check %d failed (see member_checks)", rc);
	/* Nothing the member was refused happened. */
	snprintf(path, sizeof(path), "%s/rootonly/mine.snap", shmd.root);
	assert_int_not_equal(access(path, F_OK), 0);
	shmf_t *f;
	assert_int_equal(shmf_open(INSTANCE, "stolen", SHMF_RDONLY, &f), SHMF_E_NOTFOUND);
}

/* ---- Read-only mappings -------------------------------------------------- */

/* Where this process maps a file whose path ends in @p suffix, and with
 * which permissions ("r--s"). */
static void *mapping_of(const char *suffix, char perms[5])
{
	FILE *fp = fopen("/proc/self/maps", "r");
	assert_non_null(fp);
	char line[1024];
	void *at = NULL;
	while (fgets(line, sizeof(line), fp) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		size_t n = strlen(line), sl = strlen(suffix);
		if (n < sl || strcmp(line + n - sl, suffix) != 0)
			continue;
		unsigned long lo;
		if (sscanf(line, "%lx-%*x %4s", &lo, perms) == 2)
			at = (void *)lo;
		break;
	}
	fclose(fp);
	return at;
}

/* A child writes one byte at @p p: @return the signal it died of, or 0. */
static int write_faults(volatile char *p)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		p[100] = 1;
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

static int readonly_checks(void)
{
	shmf_t *f;
	char perms[5] = "", fname[64];
	if (shmf_open(INSTANCE, "ro", SHMF_RDONLY, &f) != 0)
		return 10;
	shmf_info_t info;
	if (shmf_info(f, &info) != 0)
		return 11;
	snprintf(fname, sizeof(fname), "/ro.%llu.data", (unsigned long long)info.generation);
	char *p = mapping_of(fname, perms);
	if (p == NULL || strcmp(perms, "r--s") != 0)
		return 12;
	if (write_faults(p + SHMF_DATA_BLOCKS_OFF) != SIGSEGV)
		return 13;
	if (mprotect(p, 4096, PROT_READ | PROT_WRITE) == 0 || errno != EACCES)
		return 14;
	char *c = mapping_of("/" INSTANCE "/control", perms);
	if (c == NULL || strcmp(perms, "r--s") != 0 || write_faults(c) != SIGSEGV)
		return 15;
	if (mprotect(c, 4096, PROT_READ | PROT_WRITE) == 0 || errno != EACCES)
		return 16;
	shmf_close(f);
	return 0;
}

static void test_readonly(void **state)
{
	(void)state;
	/* As root (who could open the file for writing, but did not ask to)
	 * and as a member of the group. */
	int rc = readonly_checks();
	if (rc != 0)
		fail_msg("root's check-only handle: check %d failed (see readonly_checks)", rc);
	rc = users_run_as(member_name, readonly_checks);
	if (rc != 0)
		fail_msg("a member's check-only handle: check %d failed (see readonly_checks)", rc);
	/* The daemon's file was not changed by any of it. */
	shmf_t *f;
	assert_int_equal(shmf_open(INSTANCE, "ro", SHMF_RDONLY, &f), 0);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.items, 0);
	shmf_close(f);
}

/* ---- Planted files ------------------------------------------------------ */

static void expect_open(const char *name, int want, const char *what)
{
	shmf_t *f = NULL;
	for (int flags = SHMF_RDONLY; flags <= SHMF_RDWR; flags++) {
		int r = shmf_open(INSTANCE, name, flags, &f);
		if (r != want)
			fail_msg("%s: open %s gave %s, want %s", what, name, shmf_strerror(r), shmf_strerror(want));
		shmf_close(f);
		f = NULL;
	}
}

/*
 * Filter "ro"'s @p what at @p path, replaced by a copy another user owns
 * (the same bytes), then by a symlink to @p link_to (a file root owns; NULL:
 * the original): each refused; then put back, and it opens again.
 */
static void plant(const char *path, const char *link_to, const char *what)
{
	char saved[300], cmd[1024], msg[600];
	snprintf(saved, sizeof(saved), "%s.saved", path);
	assert_int_equal(rename(path, saved), 0);
	snprintf(cmd, sizeof(cmd), "cp -p '%s' '%s' && chown %s '%s'", saved, path, outsider_name, path);
	assert_int_equal(run(cmd), 0);
	snprintf(msg, sizeof(msg), "%s owned by another user", what);
	expect_open("ro", SHMF_E_OWNER, msg);
	if (link_to == NULL)
		link_to = saved;
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink(link_to, path), 0);
	snprintf(msg, sizeof(msg), "%s replaced by a symlink to %s", what, link_to);
	expect_open("ro", SHMF_E_OWNER, msg);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rename(saved, path), 0);
	snprintf(msg, sizeof(msg), "%s put back", what);
	expect_open("ro", 0, msg);
}

static void test_planted(void **state)
{
	(void)state;
	char path[256], saved[300], cmd[1024];
	fixture_client_data_path(INSTANCE, "ro", path, sizeof(path));
	plant(path, NULL, "data file");
	snprintf(path, sizeof(path), "%s/control", shmd.idir);
	plant(path, "/etc/passwd", "control file");

	/* A restarted shmd does not take a planted data file either: it
	 * removes one that no filter names ... */
	stop_shmd();
	snprintf(path, sizeof(path), "%s/evil.99.data", shmd.idir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0666);
	assert_true(fd >= 0);
	assert_int_equal(fchown(fd, outsider_uid, outsider_uid), 0);
	close(fd);
	/* ... and refuses one planted under a live filter's name. */
	fixture_client_data_path(INSTANCE, "rw", saved, sizeof(saved));
	snprintf(cmd, sizeof(cmd), "chown %s '%s'", outsider_name, saved);
	assert_int_equal(run(cmd), 0);
	start_shmd();
	assert_int_not_equal(access(path, F_OK), 0);
	snprintf(cmd, sizeof(cmd), "grep -q 'filter .rw.*untrusted owner.*slot cleared, files left' %s", shmd.log);
	assert_int_equal(run(cmd), 0);
	char now[256];
	fixture_client_data_path(INSTANCE, "rw", now, sizeof(now)); /* a new generation, owned by root */
	assert_string_not_equal(now, saved);
	assert_file(now, S_IFREG, 0660, 0, group_gid);
	/* The refused file is left for an operator, as the log says (it used
	 * to be swept away with the files no filter names). */
	assert_file(saved, S_IFREG, 0660, outsider_uid, group_gid);

	/* The instance directory owned by another user: clients and shmd refuse it. */
	stop_shmd();
	assert_int_equal(chown(shmd.idir, outsider_uid, (gid_t)-1), 0);
	expect_open("ro", SHMF_E_OWNER, "instance directory owned by another user");
	char owner_log[160], msg[1024] = "";
	snprintf(owner_log, sizeof(owner_log), "%s.owner", shmd.log);
	pid_t pid = daemon_spawn(shmd_path, shmd.conf, owner_log);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	FILE *lf = fopen(owner_log, "r");
	assert_non_null(lf);
	msg[fread(msg, 1, sizeof(msg) - 1, lf)] = '\0';
	fclose(lf);
	if (strstr(msg, "untrusted owner") == NULL)
		fail_msg("shmd on a directory another user owns said: %s", msg);
	assert_int_equal(chown(shmd.idir, 0, (gid_t)-1), 0);
	start_shmd();
	expect_open("ro", 0, "instance directory owned by root again");
}

/* ---- Names that leave the directory ------------------------------------- */

static void test_names(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"..",
		".",
		"../" INSTANCE "/ro",
		"ro/../ro",
		"/etc/passwd",
		"a/b",
		".hidden",
		"..ro",
		"ro\n",
		"ro ",
		"0123456789012345678901234567890123456789012345678901234567890123",
		"",
	};
	shmf_t *f = NULL;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (shmf_open(INSTANCE, bad[i], SHMF_RDONLY, &f) != SHMF_E_NAME)
			fail_msg("filter name '%s' was not refused as a name", bad[i]);
		if (shmf_open(bad[i], "ro", SHMF_RDONLY, &f) != SHMF_E_NAME)
			fail_msg("instance name '%s' was not refused as a name", bad[i]);
	}
	assert_null(f);
	/* On the socket: every verb that takes a name, and paths. */
	char reply[512];
	static const char *const sock_bad[] = { "../evil", "a/../../evil", "/tmp/evil", ".evil" };
	for (size_t i = 0; i < 4; i++) {
		const char *reserve[] = { "BF.RESERVE", sock_bad[i], "0.01", "1000" };
		call(4, reserve, reply, sizeof(reply));
		if (strncmp(reply, "-ERR", 4) != 0)
			fail_msg("BF.RESERVE '%s' answered %s", sock_bad[i], reply);
		const char *cf[] = { "CF.RESERVE", sock_bad[i], "1000" };
		call(3, cf, reply, sizeof(reply));
		assert_int_equal(strncmp(reply, "-ERR", 4), 0);
		const char *add[] = { "BF.ADD", sock_bad[i], "k" };
		call(3, add, reply, sizeof(reply));
		assert_int_equal(strncmp(reply, "-ERR", 4), 0);
		char file[128];
		snprintf(file, sizeof(file), "%s/x.snap", shmd.root);
		const char *restore[] = { "SHMF.RESTORE", sock_bad[i], file };
		call(3, restore, reply, sizeof(reply));
		assert_int_equal(strncmp(reply, "-ERR", 4), 0);
	}
	/* A name with a NUL byte in it. */
	int fd = connect_sock();
	assert_true(fd >= 0);
	const char *nul[] = { "BF.RESERVE", "ok\0/../evil", "0.01", "1000" };
	size_t lens[] = { 10, 11, 4, 4 };
	request(fd, 4, nul, lens, reply, sizeof(reply));
	close(fd);
	assert_int_equal(strncmp(reply, "-ERR", 4), 0);
	/* A relative snapshot path. */
	const char *rel[] = { "SHMF.SNAPSHOT", "ro", "../../evil.snap" };
	call(3, rel, reply, sizeof(reply));
	assert_non_null(strstr(reply, "absolute"));
	/* Nothing named evil anywhere under the runtime root or in /tmp. */
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "test -z \"$(find %s /tmp /dev/shm -maxdepth 3 -name '*evil*' 2>/dev/null)\"",
		 shmd.root);
	assert_int_equal(run(cmd), 0);
	/* And in the configuration. */
	char badconf[160];
	snprintf(badconf, sizeof(badconf), "%s/bad.conf", shmd.root);
	assert_int_equal(daemon_write_conf(badconf, "[instance]\nname = other\n[filter ../escape]\ncapacity = 10\n"),
			 0);
	snprintf(cmd, sizeof(cmd), "%s -f -c %s 2>&1 | grep -q \"invalid filter name '../escape'\"", shmd_path,
		 badconf);
	assert_int_equal(run(cmd), 0);
	assert_int_equal(daemon_write_conf(badconf, "[instance]\nname = ../other\n"), 0);
	snprintf(cmd, sizeof(cmd), "%s -f -c %s 2>&1 | grep -q \"invalid instance name\"", shmd_path, badconf);
	assert_int_equal(run(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s -f -i ../other 2>&1 | grep -q 'invalid name'", shmd_path);
	assert_int_equal(run(cmd), 0);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH-TO-SHMD [TEST]\n", argv[0]);
		return 2;
	}
	shmd_path = argv[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modes),   cmocka_unit_test(test_users), cmocka_unit_test(test_readonly),
		cmocka_unit_test(test_planted), cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
