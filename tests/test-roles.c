/*
 * test-roles.c - roles on the control socket and permissions that follow
 * the configuration, with real unix users against a real shmd running as
 * root (users and groups made for the test with useradd/groupadd, unique
 * names, removed at the end, also when a test fails):
 *
 *   writer     - a member of the client group adds to and checks 0660
 *                filters, but may not drop, create (RESERVE, an INSERT
 *                that would create), swap, restore, snapshot to a path of
 *                its choosing, rotate, chmod or resize; nor add to or
 *                delete from a 0640 filter (its group may only check it),
 *                nor add to a filter whose writers = names others. Each
 *                refusal is -NOPERM naming both roles (or the file and its
 *                mode), is logged, and changes nothing;
 *   admin      - a member of admin_group may do all of it;
 *   tcp        - a TCP user with a reader password cannot add, a writer
 *                user only to the filters its filters = names, and
 *                neither creates; requirepass is the admin "default";
 *   quotas     - writer_create = yes: a writer creates within the quotas;
 *                over a quota (bytes of the filter, bytes of the
 *                instance's filters, their count) the create is refused
 *                before any file is made;
 *   chmod      - SHMF.CHMOD changes every live generation's file in place;
 *                a read-only client that had it open keeps working, a
 *                group member can then add, a rotation keeps the mode;
 *   swap       - a file of another type or shape is refused without
 *                RESHAPE, saying what would change; taken with it;
 *   resize     - an empty filter gets its new shape; a Bloom or cuckoo
 *                filter holding keys is refused with why and what to do;
 *   restart    - a restart with another group = brings the instance
 *                directory, control file, socket and data files to it
 *                (and wrong modes back), logging each change;
 *   messages   - shmctl refused the socket and shmd refused its runtime
 *                directory name the path, the user and what to change.
 *
 * Usage: test-roles PATH-TO-SHMD PATH-TO-SHMCTL
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/daemon-process.h"
#include "tests/fixture.h"
#include "libclient/rundir.h"
#include "tests/users.h"

#define INSTANCE "rl"
static const char *shmd_path;
static struct daemon_dir shmd; /* shmd's runtime directory and files */
/* Groups: the client group, admin_group, a team a filter names, and the
 * group of the restart. Users: a writer (client group), an admin (admin
 * group and client group: the socket is the client group's), a team member
 * (client group and team). */
static char g_client[32], g_admin[32], g_team[32], g_other[32];
static char u_writer[32], u_admin[32], u_team[32], u_out[32];
static const char *shmctl_path;
static gid_t gid_client, gid_other;
static int tcp_port;
static pid_t daemon_pid;

/* ---- Users, the configuration and the daemon ---------------------------- */

/* The groups, then the users, as the comment on their names says. */
static int make_users(void)
{
	if (users_make_group("shmrc", g_client, sizeof(g_client), &gid_client) < 0 ||
	    users_make_group("shmra", g_admin, sizeof(g_admin), NULL) < 0 ||
	    users_make_group("shmrt", g_team, sizeof(g_team), NULL) < 0 ||
	    users_make_group("shmro", g_other, sizeof(g_other), &gid_other) < 0)
		return -1;
	if (users_make_user("shmrw", u_writer, sizeof(u_writer), NULL, g_client, NULL) < 0 ||
	    users_make_user("shmrA", u_admin, sizeof(u_admin), NULL, g_client, g_admin, NULL) < 0 ||
	    users_make_user("shmrT", u_team, sizeof(u_team), NULL, g_client, g_team, NULL) < 0 ||
	    users_make_user("shmrO", u_out, sizeof(u_out), NULL, NULL) < 0)
		return -1;
	return 0;
}

/* The configuration: the instance's group @p group, [roles] with
 * @p roles_extra, the filters and the TCP users. */
static void write_conf(const char *group, const char *roles_extra)
{
	int rc = daemon_write_conf(shmd.conf,
				   "[instance]\nname = " INSTANCE "\ndir_mode = 0750\nsocket_mode = 0660\ngroup = %s\n"
				   "[roles]\nadmin_group = %s\n%s"
				   "[tcp]\nenabled = yes\nport = %d\nrequirepass = adminpw\n"
				   "[user rdr]\npassword = readerpw\nrole = reader\n"
				   "[user wtr]\npassword = writerpw\nrole = writer\nfilters = rw\n"
				   "[filter rw]\ncapacity = 100000\nfpr = 0.01\nmode = 0660\n"
				   "[filter ro]\ncapacity = 100000\nfpr = 0.01\nmode = 0640\n"
				   "[filter cu]\ntype = cuckoo\ncapacity = 100000\nfpr = 0.01\nmode = 0660\n"
				   "[filter curo]\ntype = cuckoo\ncapacity = 100000\nfpr = 0.01\nmode = 0640\n"
				   "[filter team]\ncapacity = 100000\nfpr = 0.01\nmode = 0660\nwriters = @%s\n"
				   "[filter win]\ncapacity = 10000\nfpr = 0.01\nmode = 0640\nwindow = 1h\n"
				   "generations = 3\n",
				   group, g_admin, roles_extra, tcp_port, g_team);
	assert_int_equal(rc, 0);
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

static void restart_shmd(const char *group, const char *roles_extra)
{
	stop_shmd();
	write_conf(group, roles_extra);
	start_shmd();
}

/* ---- Requests ------------------------------------------------------------ */

/* One request on a new connection (unix, or TCP after AUTH @p auth when
 * not NULL); the first line of its reply in @p reply. */
static void request(const char *const *argv, int argc, const char *const *auth, int nauth, char *reply, size_t cap)
{
	int fd = auth != NULL ? sock_tcp_connect(tcp_port) : sock_unix_connect(shmd.sock);
	reply[0] = '\0';
	if (fd < 0) {
		snprintf(reply, cap, "(cannot connect: %s)", strerror(-fd));
		return;
	}
	if (auth != NULL) {
		resp_send(fd, nauth, auth, NULL);
		resp_read_line(fd, reply, cap, 10000);
		if (strncmp(reply, "+OK", 3) != 0) {
			close(fd);
			return;
		}
	}
	resp_send(fd, argc, argv, NULL);
	resp_read_line(fd, reply, cap, 10000);
	close(fd);
}

/* Does request @p argv answer a reply starting with @p prefix and holding
 * every one of @p contains (NULL-terminated)? 0, or 1 after saying what it
 * got on stderr. Usable in the children that act as the users. */
static int expect_as(const char *const *auth, int nauth, int argc, const char *const *argv, const char *prefix,
		     const char *const *contains)
{
	char reply[2048];
	request(argv, argc, auth, nauth, reply, sizeof(reply));
	int ok = strncmp(reply, prefix, strlen(prefix)) == 0;
	for (const char *const *c = contains; ok && c != NULL && *c != NULL; c++)
		ok = strstr(reply, *c) != NULL;
	if (!ok) {
		fprintf(stderr, "  uid %u: %s", (unsigned)getuid(), argv[0]);
		for (int i = 1; i < argc; i++)
			fprintf(stderr, " %s", argv[i]);
		fprintf(stderr, "\n    got:  %s    want: %s ...", reply, prefix);
		for (const char *const *c = contains; c != NULL && *c != NULL; c++)
			fprintf(stderr, " [%s]", *c);
		fprintf(stderr, "\n");
	}
	return !ok;
}

#define EXPECT(prefix, contains, ...)                                                             \
	expect_as(NULL, 0, (int)(sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(const char *)), \
		  (const char *[]){ __VA_ARGS__ }, prefix, contains)
#define WORDS(...) ((const char *const[]){ __VA_ARGS__, NULL })

static void assert_as(const char *user, int (*fn)(void), const char *what)
{
	int rc = users_run_as(user, fn);
	if (rc != 0)
		fail_msg("%s as %s: %d check(s) failed (above)", what, user, rc);
}

/* Files in the instance directory and their bytes. */
static int instance_files(uint64_t *bytes)
{
	DIR *d = opendir(shmd.idir);
	assert_non_null(d);
	struct dirent *e;
	int n = 0;
	*bytes = 0;
	while ((e = readdir(d)) != NULL) {
		char p[512];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s", shmd.idir, e->d_name);
		if (e->d_name[0] != '.' && stat(p, &st) == 0) {
			n++;
			*bytes += (uint64_t)st.st_blocks * 512;
		}
	}
	closedir(d);
	return n;
}

/* The data files of every live generation of filter @p name (the
 * instance directory holds no others: shmd removes what no slot names). */
static int data_files(const char *name, char paths[][256], int max)
{
	DIR *d = opendir(shmd.idir);
	assert_non_null(d);
	struct dirent *e;
	int n = 0;
	size_t nl = strlen(name);
	while ((e = readdir(d)) != NULL && n < max) {
		size_t l = strlen(e->d_name);
		if (strncmp(e->d_name, name, nl) == 0 && e->d_name[nl] == '.' && l > 5 &&
		    strcmp(e->d_name + l - 5, ".data") == 0)
			snprintf(paths[n++], 256, "%s/%s", shmd.idir, e->d_name);
	}
	closedir(d);
	return n;
}

static unsigned mode_of(const char *path, gid_t *gid)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		fail_msg("%s: %s", path, strerror(errno));
	if (gid != NULL)
		*gid = st.st_gid;
	return (unsigned)(st.st_mode & 07777);
}

static int setup(void **state)
{
	(void)state;
	if (daemon_dir_make_as_root(&shmd, "test-roles", make_users, "roles", INSTANCE) < 0)
		return -1;
	tcp_port = sock_free_port();
	write_conf(g_client, "");
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

/* ---- A writer: a member of the client group ----------------------------- */

static char snap_path[160], writer_dir[160];

static int writer_checks(void)
{
	static const char *const admin_needed[] = { "needs the admin role", "is a writer", "uid ", NULL };
	int f = 0;
	/* What a writer may do: add, check and delete on 0660 filters. */
	f += EXPECT(":1", NULL, "BF.ADD", "rw", "w1");
	f += EXPECT(":1", NULL, "BF.EXISTS", "rw", "w1");
	f += EXPECT("*2", NULL, "BF.MADD", "rw", "w2", "w3");
	f += EXPECT(":1", NULL, "CF.ADD", "cu", "c1");
	f += EXPECT(":1", NULL, "CF.DEL", "cu", "c1");
	f += EXPECT(":0", NULL, "BF.EXISTS", "ro", "w1"); /* 0640: checks yes */
	f += EXPECT("*", NULL, "SHMF.INFO", "ro");
	/* What it may not: administration. */
	f += EXPECT("-NOPERM shmf.drop", admin_needed, "SHMF.DROP", "rw");
	f += EXPECT("-NOPERM bf.reserve needs the admin role", WORDS("is a writer", "writer_create = no"), "BF.RESERVE",
		    "mine", "0.01", "1000");
	f += EXPECT("-NOPERM cf.reserve needs the admin role", WORDS("writer_create = no"), "CF.RESERVE", "mine",
		    "1000");
	f += EXPECT("-ERR not found", NULL, "BF.INSERT", "mine", "ITEMS", "a");
	/* Auto-create (BF.ADD, CF.ADD, ...) answers as for a missing filter when the role may not create. */
	f += EXPECT("-ERR not found", NULL, "BF.ADD", "mine", "a");
	f += EXPECT("-ERR not found", NULL, "CF.ADD", "mine", "a");
	f += EXPECT("-NOPERM shmf.swap", admin_needed, "SHMF.SWAP", "rw", snap_path);
	f += EXPECT("-NOPERM shmf.restore", admin_needed, "SHMF.RESTORE", "mine", snap_path);
	char path[200];
	snprintf(path, sizeof(path), "%s/stolen.snap", writer_dir);
	f += EXPECT("-NOPERM shmf.snapshot", admin_needed, "SHMF.SNAPSHOT", "ro", path);
	f += EXPECT("-NOPERM shmf.rotate", admin_needed, "SHMF.ROTATE", "win");
	f += EXPECT("-NOPERM shmf.chmod", admin_needed, "SHMF.CHMOD", "ro", "0660");
	f += EXPECT("-NOPERM shmf.resize", admin_needed, "SHMF.RESIZE", "rw", "200000");
	f += EXPECT("-NOPERM shmf.merge", admin_needed, "SHMF.MERGE", "rw", snap_path);
	f += EXPECT("-NOPERM bf.loadchunk", admin_needed, "BF.LOADCHUNK", "mine", "1", "x");
	/* Never more than the files allow: the group of a 0640 filter checks it only. */
	static const char *const no_write[] = { "needs write permission on its data file", "mode 0640", "shmctl chmod",
						NULL };
	f += EXPECT("-NOPERM bf.add on filter 'ro'", no_write, "BF.ADD", "ro", "x");
	f += EXPECT("-NOPERM bf.madd on filter 'ro'", no_write, "BF.MADD", "ro", "x", "y");
	f += EXPECT("-NOPERM bf.insert on filter 'ro'", no_write, "BF.INSERT", "ro", "ITEMS", "x");
	f += EXPECT("-NOPERM cf.add on filter 'curo'", no_write, "CF.ADD", "curo", "x");
	f += EXPECT("-NOPERM cf.del on filter 'curo'", no_write, "CF.DEL", "curo", "x");
	f += EXPECT("-NOPERM shmf.addcapped on filter 'curo'", no_write, "SHMF.ADDCAPPED", "curo", "x", "2");
	/* A filter that names its writers: the client group only reads it. */
	f += EXPECT("-NOPERM bf.add needs the writer role", WORDS("is a reader of filter 'team'"), "BF.ADD", "team",
		    "x");
	f += EXPECT(":0", NULL, "BF.EXISTS", "team", "x");
	return f;
}

static int team_checks(void)
{
	int f = 0;
	f += EXPECT(":1", NULL, "BF.ADD", "team", "t1");
	f += EXPECT("-NOPERM shmf.drop", WORDS("needs the admin role"), "SHMF.DROP", "team");
	return f;
}

static void test_writer(void **state)
{
	(void)state;
	char reply[512];
	snprintf(snap_path, sizeof(snap_path), "%s/rw.snap", shmd.root);
	const char *snap[] = { "SHMF.SNAPSHOT", "rw", snap_path };
	request(snap, 3, NULL, 0, reply, sizeof(reply));
	assert_string_equal(reply, "+OK\r\n");
	assert_int_equal(chmod(snap_path, 0644), 0);
	snprintf(writer_dir, sizeof(writer_dir), "%s/writer", shmd.root);
	assert_int_equal(mkdir(writer_dir, 0777), 0);
	assert_int_equal(chmod(writer_dir, 0777), 0);
	int before = daemon_log_count(shmd.log, "refused: ");
	uint64_t bytes_before, bytes_after;
	int files_before = instance_files(&bytes_before);

	assert_as(u_writer, writer_checks, "a member of the client group");
	assert_as(u_team, team_checks, "a member of the team a filter names");

	/* Nothing it was refused happened, and every refusal is in the log. */
	shmf_t *f;
	assert_int_equal(shmf_open(INSTANCE, "rw", SHMF_RDONLY, &f), 0);
	assert_int_equal(shmf_check(f, "w1", 2), 1);
	shmf_close(f);
	assert_int_equal(shmf_open(INSTANCE, "mine", SHMF_RDONLY, &f), SHMF_E_NOTFOUND);
	assert_int_equal(shmf_open(INSTANCE, "ro", SHMF_RDONLY, &f), 0);
	assert_int_equal(shmf_check(f, "x", 1), 0);
	shmf_close(f);
	char path[200];
	snprintf(path, sizeof(path), "%s/stolen.snap", writer_dir);
	assert_int_not_equal(access(path, F_OK), 0);
	assert_int_equal(instance_files(&bytes_after), files_before);
	assert_true(bytes_after == bytes_before);
	int logged = daemon_log_count(shmd.log, "refused: ") - before;
	/* The adds that would have created a filter answer "not found", as
	 * RedisBloom does with auto-create off: not a refusal, not logged. */
	if (logged < 19)
		fail_msg("%d refusals logged, want one for each of the 19 refused requests", logged);
	assert_true(daemon_log_count(shmd.log, "refused: shmf.drop needs the admin role; this connection (uid ") >= 2);
}

/* ---- An admin: a member of admin_group ----------------------------------- */

static int admin_checks(void)
{
	int f = 0;
	char path[200];
	snprintf(path, sizeof(path), "%s/admin.snap", writer_dir);
	f += EXPECT("+OK", NULL, "BF.RESERVE", "made", "0.01", "1000");
	f += EXPECT(":1", NULL, "BF.ADD", "ro", "a1"); /* admins own the files: exempt */
	f += EXPECT(":1", NULL, "CF.ADD", "curo", "a1");
	f += EXPECT("+OK", NULL, "SHMF.SNAPSHOT", "made", path);
	f += EXPECT("+OK", NULL, "SHMF.SWAP", "made", path);
	f += EXPECT("+OK", NULL, "SHMF.RESTORE", "copy", path);
	f += EXPECT("+OK", NULL, "SHMF.ROTATE", "win");
	f += EXPECT("+OK", NULL, "SHMF.CHMOD", "copy", "0660");
	f += EXPECT("+OK", NULL, "SHMF.RESIZE", "copy", "5000");
	f += EXPECT("+OK", NULL, "SHMF.DROP", "copy");
	f += EXPECT("+OK", NULL, "SHMF.DROP", "made");
	/* The files it names are still opened as itself. */
	f += EXPECT("-ERR", WORDS("Permission denied"), "SHMF.SNAPSHOT", "ro", "/root/admin-stolen.snap");
	return f;
}

static void test_admin(void **state)
{
	(void)state;
	assert_as(u_admin, admin_checks, "a member of admin_group");
	assert_int_not_equal(access("/root/admin-stolen.snap", F_OK), 0);
}

/* ---- TCP users ------------------------------------------------------------ */

static void test_tcp(void **state)
{
	(void)state;
	const char *const reader[] = { "AUTH", "rdr", "readerpw" }, *const writer[] = { "AUTH", "wtr", "writerpw" },
			  *const dflt[] = { "AUTH", "adminpw" }, *const wrong[] = { "AUTH", "rdr", "writerpw" };
	const char *const add[] = { "BF.ADD", "rw", "tcp1" }, *const exists[] = { "BF.EXISTS", "rw", "w1" },
			  *const reserve[] = { "BF.RESERVE", "tcpmade", "0.01", "1000" },
			  *const reserve_rw[] = { "BF.RESERVE", "rw", "0.01", "1000" },
			  *const add_cu[] = { "CF.ADD", "cu", "tcp1" }, *const drop[] = { "SHMF.DROP", "tcpmade" };
	assert_int_equal(expect_as(reader, 3, 3, add, "-NOPERM bf.add needs the writer role",
				   WORDS("user rdr", "is a reader")),
			 0);
	assert_int_equal(expect_as(reader, 3, 3, exists, ":1", NULL), 0);
	assert_int_equal(expect_as(reader, 3, 4, reserve, "-NOPERM", WORDS("admin")), 0);
	assert_int_equal(expect_as(writer, 3, 3, add, ":1", NULL), 0);
	assert_int_equal(expect_as(writer, 3, 3, add_cu, "-NOPERM cf.add on filter 'cu' is not allowed",
				   WORDS("user wtr", "filters =")),
			 0);
	assert_int_equal(expect_as(writer, 3, 4, reserve, "-NOPERM bf.reserve on filter 'tcpmade' is not allowed",
				   WORDS("filters =")),
			 0);
	assert_int_equal(expect_as(writer, 3, 4, reserve_rw, "-NOPERM bf.reserve needs the admin role",
				   WORDS("user wtr", "is a writer")),
			 0);
	assert_int_equal(expect_as(wrong, 3, 3, add, "-WRONGPASS", NULL), 0);
	assert_int_equal(expect_as(dflt, 2, 4, reserve, "+OK", NULL), 0);
	assert_int_equal(expect_as(dflt, 2, 2, drop, "+OK", NULL), 0);
	/* Not authenticated: nothing. */
	int fd = sock_tcp_connect(tcp_port);
	assert_true(fd >= 0);
	char reply[256];
	resp_send(fd, 3, exists, NULL);
	resp_read_line(fd, reply, sizeof(reply), 10000);
	close(fd);
	assert_int_equal(strncmp(reply, "-NOAUTH", 7), 0);
}

/* ---- Quotas of writers that create --------------------------------------- */

static int quota_checks(void)
{
	int f = 0;
	/* 1,000 keys at 1%: a few KiB, within every quota. */
	f += EXPECT("+OK", NULL, "BF.RESERVE", "wmade", "0.01", "1000", "MODE", "0660");
	f += EXPECT(":1", NULL, "BF.ADD", "wmade", "k"); /* 0660: its group may add */
	/* A billion keys: over writer_max_filter_bytes, before any memory. */
	f += EXPECT("-NOPERM creating filter 'huge'", WORDS("writer_max_filter_bytes = 1048576", "is a writer"),
		    "BF.RESERVE", "huge", "0.01", "1000000000");
	f += EXPECT("-NOPERM creating filter 'huge'", WORDS("writer_max_filter_bytes"), "BF.INSERT", "huge", "CAPACITY",
		    "1000000000", "ITEMS", "a");
	/* A window counts every generation. */
	f += EXPECT("-NOPERM creating filter 'wide'", WORDS("in all its generations"), "BF.RESERVE", "wide", "0.01",
		    "100000", "WINDOW", "1h", "GENERATIONS", "16");
	/* The count: the instance holds 7 filters now, the limit is 7. */
	f += EXPECT("-NOPERM creating filter 'one-more'", WORDS("writer_max_filters = 7"), "CF.RESERVE", "one-more",
		    "100");
	f += EXPECT("-NOPERM shmf.drop", WORDS("admin role"), "SHMF.DROP", "wmade");
	return f;
}

/* The instance's filters already hold more than writer_max_total_bytes:
 * a filter well within writer_max_filter_bytes is refused by the total. */
static int total_checks(void)
{
	int f = 0;
	f += EXPECT("-NOPERM creating filter 'small'", WORDS("writer_max_total_bytes = 4096", "is a writer"),
		    "BF.RESERVE", "small", "0.01", "1000");
	return f;
}

static void test_quotas(void **state)
{
	(void)state;
	restart_shmd(g_client, "writer_create = yes\nwriter_max_filter_bytes = 1m\nwriter_max_total_bytes = 64m\n"
			       "writer_max_filters = 7\n");
	uint64_t bytes_before, bytes_after;
	int files_before = instance_files(&bytes_before);
	assert_as(u_writer, quota_checks, "writer_create = yes with quotas");
	/* One data file more (wmade) and shmd's record of who made it
	 * (shmd-owners), nothing of the refused ones. */
	assert_int_equal(instance_files(&bytes_after), files_before + 2);
	assert_true(bytes_after - bytes_before < (1u << 20));
	assert_true(daemon_log_count(shmd.log, "over the writers' quota writer_max_filter_bytes") >= 2);
	restart_shmd(g_client, "writer_create = yes\nwriter_max_filter_bytes = 1m\nwriter_max_total_bytes = 4k\n");
	files_before = instance_files(&bytes_before);
	assert_as(u_writer, total_checks, "writer_create = yes, the instance over writer_max_total_bytes");
	assert_int_equal(instance_files(&bytes_after), files_before);
	assert_true(daemon_log_count(shmd.log, "over the writers' quota writer_max_total_bytes") >= 1);
	restart_shmd(g_client, "");
	const char *drop[] = { "SHMF.DROP", "wmade" };
	char reply[256];
	request(drop, 2, NULL, 0, reply, sizeof(reply));
	assert_string_equal(reply, "+OK\r\n");
}

/* ---- chmod ------------------------------------------------------------- */

static int chmod_reader(void)
{
	/* Opened read-only while the mode is 0640; the parent changes it to
	 * 0660 meanwhile (a pipe says when); the handle keeps working. */
	shmf_t *f;
	if (shmf_open(INSTANCE, "win", SHMF_RDONLY, &f) != 0)
		return 1;
	int r1 = shmf_check(f, "a1", 2), failed = 0;
	if (r1 < 0)
		failed++;
	raise(SIGSTOP); /* the parent chmods, then continues us */
	for (int i = 0; i < 1000; i++)
		if (shmf_check(f, "a1", 2) != r1)
			failed++;
	shmf_close(f);
	/* Now the group may add: through libshmf and through the socket. */
	if (shmf_open(INSTANCE, "win", SHMF_RDWR, &f) != 0)
		failed++;
	else if (shmf_add(f, "c2", 2) != 1)
		failed++;
	if (f != NULL)
		shmf_close(f);
	failed += EXPECT(":1", NULL, "BF.ADD", "win", "c3");
	return failed;
}

static void test_chmod(void **state)
{
	(void)state;
	char gens[4][256], gen0[256], reply[512];
	int n = data_files("win", gens, 4);
	assert_int_equal(n, 2); /* created, and rotated once by the admin */
	for (int i = 0; i < n; i++)
		assert_int_equal(mode_of(gens[i], NULL), 0640);
	pid_t pid = users_fork_as(u_writer);
	if (pid == 0)
		_exit(chmod_reader());
	int st;
	assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
	assert_true(WIFSTOPPED(st));
	const char *ch[] = { "SHMF.CHMOD", "win", "0660" };
	request(ch, 3, NULL, 0, reply, sizeof(reply));
	assert_int_equal(strncmp(reply, "+OK 2 files changed to 0660", 27), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(mode_of(gens[i], NULL), 0660);
	kill(pid, SIGCONT);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("the client that had 'win' open read-only: %d check(s) failed", WEXITSTATUS(st));
	/* The next generation takes the mode. */
	const char *rot[] = { "SHMF.ROTATE", "win" };
	request(rot, 2, NULL, 0, reply, sizeof(reply));
	assert_string_equal(reply, "+OK\r\n");
	fixture_client_data_path(INSTANCE, "win", gen0, sizeof(gen0));
	assert_int_equal(mode_of(gen0, NULL), 0660);
	/* Bad modes change nothing. */
	const char *bad[] = { "SHMF.CHMOD", "win", "0666" };
	request(bad, 3, NULL, 0, reply, sizeof(reply));
	assert_int_equal(strncmp(reply, "-ERR bad mode '0666'", 20), 0);
	assert_int_equal(mode_of(gen0, NULL), 0660);
}

/* ---- swap of another shape ---------------------------------------------- */

static void test_swap(void **state)
{
	(void)state;
	char path[160], reply[1024];
	snprintf(path, sizeof(path), "%s/cu.snap", shmd.root);
	const char *snap[] = { "SHMF.SNAPSHOT", "cu", path };
	request(snap, 3, NULL, 0, reply, sizeof(reply));
	assert_string_equal(reply, "+OK\r\n");
	const char *swap[] = { "SHMF.SWAP", "rw", path };
	request(swap, 3, NULL, 0, reply, sizeof(reply));
	if (strstr(reply, "-ERR swap would change rw from bloom 100000 keys (k ") != reply ||
	    strstr(reply, "to cuckoo 100000 keys (") == NULL || strstr(reply, "add --reshape") == NULL)
		fail_msg("swap of a cuckoo file into a Bloom filter: %s", reply);
	shmf_t *f;
	shmf_info_t info;
	assert_int_equal(shmf_open(INSTANCE, "rw", SHMF_RDONLY, &f), 0);
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.type, SHMF_TYPE_BLOOM);
	shmf_close(f);
	const char *odd[] = { "SHMF.SWAP", "rw", path, "SIDEWAYS" };
	request(odd, 4, NULL, 0, reply, sizeof(reply));
	assert_int_equal(strncmp(reply, "-ERR unknown option 'SIDEWAYS'", 30), 0);
	const char *reshape[] = { "SHMF.SWAP", "rw", path, "RESHAPE" };
	request(reshape, 4, NULL, 0, reply, sizeof(reply));
	assert_string_equal(reply, "+OK\r\n");
	assert_int_equal(shmf_open(INSTANCE, "rw", SHMF_RDONLY, &f), 0);
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.type, SHMF_TYPE_CUCKOO);
	shmf_close(f);
	/* The same shape needs no RESHAPE. */
	request(swap, 3, NULL, 0, reply, sizeof(reply));
	assert_string_equal(reply, "+OK\r\n");
}

/* ---- resize -------------------------------------------------------------- */

static void test_resize(void **state)
{
	(void)state;
	char reply[1024];
	const char *mk[] = { "BF.RESERVE", "rs", "0.01", "1000" }, *mkc[] = { "CF.RESERVE", "rsc", "1000" };
	request(mk, 4, NULL, 0, reply, sizeof(reply));
	assert_string_equal(reply, "+OK\r\n");
	request(mkc, 3, NULL, 0, reply, sizeof(reply));
	assert_string_equal(reply, "+OK\r\n");
	const char *rs[] = { "SHMF.RESIZE", "rs", "100000" };
	request(rs, 3, NULL, 0, reply, sizeof(reply));
	assert_string_equal(reply, "+OK\r\n");
	shmf_t *f;
	shmf_info_t info;
	assert_int_equal(shmf_open(INSTANCE, "rs", SHMF_RDONLY, &f), 0);
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.capacity, 100000);
	shmf_close(f);
	const char *add[] = { "BF.ADD", "rs", "k" }, *addc[] = { "CF.ADD", "rsc", "k" };
	request(add, 3, NULL, 0, reply, sizeof(reply));
	request(addc, 3, NULL, 0, reply, sizeof(reply));
	const char *again[] = { "SHMF.RESIZE", "rs", "200000" }, *cu[] = { "SHMF.RESIZE", "rsc", "200000", "0.01" };
	request(again, 3, NULL, 0, reply, sizeof(reply));
	if (strstr(reply, "a Bloom filter cannot be rebuilt from its bits") == NULL ||
	    strstr(reply, "shmctl build --type bloom --capacity 200000") == NULL ||
	    strstr(reply, "shmctl swap rs FILE --reshape") == NULL)
		fail_msg("resize of a Bloom filter holding a key: %s", reply);
	request(cu, 4, NULL, 0, reply, sizeof(reply));
	if (strstr(reply, "fingerprints cannot move to a table of another size") == NULL ||
	    strstr(reply, "shmctl build --type cuckoo") == NULL)
		fail_msg("resize of a cuckoo filter holding a key: %s", reply);
	/* Both still hold their key, in their old shape. */
	assert_int_equal(shmf_open(INSTANCE, "rsc", SHMF_RDONLY, &f), 0);
	assert_int_equal(shmf_check(f, "k", 1), 1);
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.capacity, 1000);
	shmf_close(f);
}

/* ---- a restart with another group ---------------------------------------- */

static void test_restart_group(void **state)
{
	(void)state;
	char ctl[200], data[256];
	gid_t g;
	snprintf(ctl, sizeof(ctl), "%s/control", shmd.idir);
	fixture_client_data_path(INSTANCE, "ro", data, sizeof(data));
	stop_shmd();
	/* Wrong modes too, as an operator's chmod might leave them. */
	assert_int_equal(chmod(shmd.idir, 0700), 0);
	assert_int_equal(chmod(ctl, 0600), 0);
	int before = daemon_log_count(shmd.log, "permissions: ");
	write_conf(g_other, "");
	start_shmd();
	assert_int_equal(mode_of(shmd.idir, &g), 0750);
	assert_int_equal(g, gid_other);
	assert_int_equal(mode_of(ctl, &g), 0640);
	assert_int_equal(g, gid_other);
	assert_int_equal(mode_of(shmd.sock, &g), 0660);
	assert_int_equal(g, gid_other);
	assert_int_equal(mode_of(data, &g), 0640);
	assert_int_equal(g, gid_other);
	char want[300];
	snprintf(want, sizeof(want), "permissions: %s: group %s -> %s", shmd.idir, g_client, g_other);
	assert_int_equal(daemon_log_count(shmd.log, want), 1);
	snprintf(want, sizeof(want), "permissions: %s: mode 0600 -> 0640", ctl);
	assert_int_equal(daemon_log_count(shmd.log, want), 1);
	assert_true(daemon_log_count(shmd.log, "permissions: ") - before >= 6);
	/* The writer is in no group of the instance now: it cannot connect. */
	restart_shmd(g_client, "");
	assert_int_equal(mode_of(data, &g), 0640);
	assert_int_equal(g, gid_client);
}

/* ---- Permission errors name the path, who, and what to change ---------- */

/* Run @p cmd as user @p user; its stderr (and stdout) in @p out. */
static void run_as(const char *user, const char *cmd, char *out, size_t cap)
{
	char line[2048], file[160];
	snprintf(file, sizeof(file), "%s/out.txt", shmd.root);
	struct passwd *pw = getpwnam(user);
	assert_non_null(pw);
	snprintf(line, sizeof(line), "setpriv --reuid=%u --regid=%u --init-groups sh -c '%s' >%s 2>&1",
		 (unsigned)pw->pw_uid, (unsigned)pw->pw_gid, cmd, file);
	(void)!system(line);
	FILE *fp = fopen(file, "r");
	assert_non_null(fp);
	out[fread(out, 1, cap - 1, fp)] = '\0';
	fclose(fp);
}

static void test_messages(void **state)
{
	(void)state;
	char cmd[1024], out[4096];
	/* A user in no group of the instance: shmctl says who it is, what the
	 * socket allows and which setting decides. */
	snprintf(cmd, sizeof(cmd), "SHMF_RUNTIME_DIR=%s %s -i %s ping", shmd.root, shmctl_path, INSTANCE);
	run_as(u_out, cmd, out, sizeof(out));
	static const char *const want[] = { "permission denied for user", "(uid ", "mode 0660",
					    "group in [instance] of shmd's configuration" };
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (strstr(out, want[i]) == NULL || strstr(out, shmd.sock) == NULL)
			fail_msg("shmctl on a socket it may not use said: %s (want [%s] and the path)", out, want[i]);
	/* shmd as a user whose runtime directory holds an instance directory
	 * it may not open (root's, 0700). */
	char denied[160], inst[200];
	struct passwd *pw = getpwnam(u_out);
	assert_non_null(pw);
	snprintf(denied, sizeof(denied), "%s/outsider", shmd.root);
	snprintf(inst, sizeof(inst), "%s/other", denied);
	assert_int_equal(mkdir(denied, 0700), 0);
	assert_int_equal(chown(denied, pw->pw_uid, pw->pw_gid), 0);
	assert_int_equal(mkdir(inst, 0700), 0);
	snprintf(cmd, sizeof(cmd), "SHMF_RUNTIME_DIR=%s %s -f -i other", denied, shmd_path);
	run_as(u_out, cmd, out, sizeof(out));
	if (strstr(out, "Permission denied") == NULL || strstr(out, "shmd runs as uid") == NULL ||
	    strstr(out, "SHMF_RUNTIME_DIR") == NULL || strstr(out, inst) == NULL)
		fail_msg("shmd that may not create its runtime directory said: %s", out);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s PATH-TO-SHMD PATH-TO-SHMCTL [TEST]\n", argv[0]);
		return 2;
	}
	shmd_path = argv[1];
	shmctl_path = argv[2];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writer), cmocka_unit_test(test_admin),         cmocka_unit_test(test_tcp),
		cmocka_unit_test(test_quotas), cmocka_unit_test(test_chmod),         cmocka_unit_test(test_swap),
		cmocka_unit_test(test_resize), cmocka_unit_test(test_restart_group), cmocka_unit_test(test_messages),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
