/*
 * test-segment.c - a client trusts nothing it maps: truncated files, wrong
 * magic, version or layout, untrusted owners and modes are each refused
 * with their own error, and the refusal changes nothing on disk.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fixture.h"
#include "libclient/rundir.h"

static struct fixture fx;
static char data_path[512], ctl_path[512], dir_path[512];

/* Each test starts with Bloom filter "victim" holding one key, so that
 * "unchanged" has content to compare. */
static int setup(void **state)
{
	char fname[128];
	fixture_up(state);
	int slot = fixture_bloom(&fx, "victim", 10000, 0.01);
	uint64_t gen = atomic_load(&fx.reg.ctl.slots[slot].generation);
	shmf_data_filename("victim", gen, fname, sizeof(fname));
	fixture_path(&fx, fname, data_path, sizeof(data_path));
	fixture_path(&fx, SHMF_CTL_FILE, ctl_path, sizeof(ctl_path));
	snprintf(dir_path, sizeof(dir_path), "%s/%s", fx.root, FIXTURE_INSTANCE);
	shmf_t *f = fixture_open("victim", SHMF_RDWR);
	assert_int_equal(shmf_add(f, "present", 7), 1);
	shmf_close(f);
	return 0;
}

struct blob {
	unsigned char *bytes;
	size_t len;
	struct stat st;
};

static struct blob read_file(const char *path)
{
	struct blob b = { 0 };
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &b.st), 0);
	b.len = (size_t)b.st.st_size;
	b.bytes = malloc(b.len + 1);
	assert_non_null(b.bytes);
	assert_int_equal(pread(fd, b.bytes, b.len, 0), (ssize_t)b.len);
	close(fd);
	return b;
}

static void write_file(const char *path, const struct blob *b)
{
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)b->len), 0);
	assert_int_equal(pwrite(fd, b->bytes, b->len, 0), (ssize_t)b->len);
	assert_int_equal(fchmod(fd, b->st.st_mode & 07777), 0);
	assert_int_equal(fchown(fd, b->st.st_uid, b->st.st_gid), 0);
	close(fd);
}

static int same(const struct blob *a, const struct blob *b)
{
	return a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0 && a->st.st_mode == b->st.st_mode &&
	       a->st.st_uid == b->st.st_uid;
}

/* Write @p v over the @p width (4 or 8) bytes at @p off of the file. */
static void patch(const char *path, size_t off, unsigned width, uint64_t v)
{
	uint32_t v32 = (uint32_t)v;
	const void *bytes = width == 4 ? (const void *)&v32 : (const void *)&v;
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, bytes, width, (off_t)off), (ssize_t)width);
	close(fd);
}

/* Open must fail with @want for both flags and leave the file as damaged. */
static void expect_refused(const char *path, int want, const char *what)
{
	struct blob before = read_file(path);
	for (int flags = SHMF_RDONLY; flags <= SHMF_RDWR; flags++) {
		shmf_t *f = NULL;
		int r = shmf_open(FIXTURE_INSTANCE, "victim", flags, &f);
		if (r != want)
			fail_msg("%s (flags %d): got %d (%s), want %d (%s)", what, flags, r, shmf_strerror(r), want,
				 shmf_strerror(want));
		assert_null(f);
	}
	struct blob after = read_file(path);
	if (!same(&before, &after))
		fail_msg("%s: the refused open changed the file", what);
	free(before.bytes);
	free(after.bytes);
}

/* The pristine filter opens and still holds its key. */
static void expect_good(void)
{
	shmf_t *f = NULL;
	int r = shmf_open(FIXTURE_INSTANCE, "victim", SHMF_RDONLY, &f);
	if (r < 0)
		fail_msg("pristine open: %s", shmf_strerror(r));
	assert_int_equal(shmf_check(f, "present", 7), 1);
	shmf_close(f);
}

/* One way to damage a file, and the error every open must then give. */
struct damage {
	enum { SHORTEN_BY, TRUNCATE_TO, PATCH_U32, PATCH_U64, CHMOD, CHOWN_NOBODY } how;
	size_t where;   /* bytes to cut or keep, or the offset of the field patched */
	uint64_t value; /* the patched field's new value, or the mode */
	int want;
	const char *what;
};

static void apply(const char *path, const struct damage *d, size_t len)
{
	switch (d->how) {
	case SHORTEN_BY: assert_int_equal(truncate(path, (off_t)(len - d->where)), 0); break;
	case TRUNCATE_TO: assert_int_equal(truncate(path, (off_t)d->where), 0); break;
	case PATCH_U32: patch(path, d->where, 4, d->value); break;
	case PATCH_U64: patch(path, d->where, 8, d->value); break;
	case CHMOD: assert_int_equal(chmod(path, (mode_t)d->value), 0); break;
	case CHOWN_NOBODY:
		if (geteuid() != 0)
			fail_msg("the owner checks need root (chown); run the suite as root");
		assert_int_equal(chown(path, 65534, 65534), 0);
		break;
	}
}

/* Each damage in turn: refused as it says, the file unchanged by the
 * refusal; then the pristine bytes, mode and owner are put back. */
static void refuse_each(const char *path, const struct damage *d, size_t n)
{
	struct blob pristine = read_file(path);
	expect_good();
	for (size_t i = 0; i < n; i++) {
		apply(path, &d[i], pristine.len);
		expect_refused(path, d[i].want, d[i].what);
		write_file(path, &pristine);
	}
	expect_good();
	free(pristine.bytes);
}

static void test_data_damage(void **state)
{
	(void)state;
	const struct damage damage[] = {
		{ SHORTEN_BY, 64, 0, SHMF_E_FORMAT, "data truncated by one block" },
		{ TRUNCATE_TO, 100, 0, SHMF_E_FORMAT, "data truncated into its header" },
		{ PATCH_U64, offsetof(struct shmf_data_header, magic), 0x1234, SHMF_E_FORMAT, "data wrong magic" },
		{ PATCH_U32, offsetof(struct shmf_data_header, version), SHMF_FORMAT_VERSION + 1, SHMF_E_VERSION,
		  "data wrong version" },
		{ PATCH_U64, offsetof(struct shmf_data_header, layout), shmf_layout_fingerprint() ^ 1, SHMF_E_LAYOUT,
		  "data wrong layout fingerprint" },
		{ PATCH_U64, offsetof(struct shmf_data_header, nblocks), UINT64_C(1) << 60, SHMF_E_FORMAT,
		  "data header claims more blocks than the file has" },
		{ PATCH_U32, offsetof(struct shmf_data_header, k), 0, SHMF_E_FORMAT,
		  "data header k differs from the slot" },
		{ CHMOD, 0, 0646, SHMF_E_OWNER, "data writable by others" },
		{ CHOWN_NOBODY, 0, 0, SHMF_E_OWNER, "data owned by nobody" },
	};
	refuse_each(data_path, damage, sizeof(damage) / sizeof(damage[0]));
}

static void test_control_damage(void **state)
{
	(void)state;
	const size_t slot0 = sizeof(struct shmf_ctl_header);
	const struct damage damage[] = {
		{ SHORTEN_BY, 1, 0, SHMF_E_FORMAT, "control truncated by a byte" },
		{ TRUNCATE_TO, 10, 0, SHMF_E_FORMAT, "control truncated into its header" },
		{ PATCH_U64, offsetof(struct shmf_ctl_header, magic), SHMF_DATA_MAGIC, SHMF_E_FORMAT,
		  "control wrong magic" },
		{ PATCH_U32, offsetof(struct shmf_ctl_header, version), 99, SHMF_E_VERSION, "control wrong version" },
		{ PATCH_U64, offsetof(struct shmf_ctl_header, layout), 42, SHMF_E_LAYOUT,
		  "control wrong layout fingerprint" },
		{ PATCH_U32, offsetof(struct shmf_ctl_header, nslots), 1u << 30, SHMF_E_FORMAT,
		  "control claims more slots than it holds" },
		/* A slot whose fields contradict each other. */
		{ PATCH_U64, slot0 + offsetof(struct shmf_slot, data_bytes), 12345, SHMF_E_FORMAT,
		  "slot size fields disagree" },
		{ PATCH_U32, slot0 + offsetof(struct shmf_slot, k), 1000, SHMF_E_FORMAT, "slot k out of range" },
		{ CHMOD, 0, 0660, SHMF_E_OWNER, "control writable by group" },
		{ CHOWN_NOBODY, 0, 0, SHMF_E_OWNER, "control owned by nobody" },
	};
	refuse_each(ctl_path, damage, sizeof(damage) / sizeof(damage[0]));
}

static void test_directory_and_links(void **state)
{
	(void)state;
	shmf_t *f = NULL;
	assert_int_equal(chmod(dir_path, 0770), 0);
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, "victim", SHMF_RDONLY, &f), SHMF_E_OWNER);
	assert_int_equal(chmod(dir_path, 0750), 0);

	/* A symlink in place of the data file is not followed. */
	char moved[600];
	snprintf(moved, sizeof(moved), "%s.moved", data_path);
	assert_int_equal(rename(data_path, moved), 0);
	assert_int_equal(symlink(moved, data_path), 0);
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, "victim", SHMF_RDONLY, &f), SHMF_E_OWNER);
	assert_int_equal(unlink(data_path), 0);
	/* Missing data file: the filter is not there. */
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, "victim", SHMF_RDONLY, &f), SHMF_E_NOTFOUND);
	assert_int_equal(rename(moved, data_path), 0);
	assert_null(f);
	expect_good();
}

static void test_daemon_restart_validates(void **state)
{
	(void)state;
	/* A restarted daemon re-attaches a good filter, and refuses a damaged
	 * control segment with a message instead of overwriting it. */
	char err[REGISTRY_ERR_MAX];
	struct registry r2;
	registry_close(&fx.reg, 0);
	assert_int_equal(registry_open(&r2, FIXTURE_INSTANCE, 0750, 0640, (gid_t)-1, err, sizeof(err)), 0);
	assert_true(registry_find(&r2, "victim") >= 0);
	registry_close(&r2, 0);

	struct blob pristine = read_file(ctl_path);
	patch(ctl_path, offsetof(struct shmf_ctl_header, version), 4, SHMF_FORMAT_VERSION + 1);
	assert_int_equal(registry_open(&r2, FIXTURE_INSTANCE, 0750, 0640, (gid_t)-1, err, sizeof(err)), SHMF_E_VERSION);
	assert_non_null(strstr(err, "control"));
	struct blob after = read_file(ctl_path);
	assert_true(after.len == pristine.len);
	assert_int_equal(memcmp(after.bytes + 16, pristine.bytes + 16, after.len - 16), 0);
	write_file(ctl_path, &pristine);
	free(after.bytes);
	free(pristine.bytes);
	assert_int_equal(registry_open(&fx.reg, FIXTURE_INSTANCE, 0750, 0640, (gid_t)-1, err, sizeof(err)), 0);
	expect_good();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate_setup_teardown(test_data_damage, setup, fixture_down, &fx),
		cmocka_unit_test_prestate_setup_teardown(test_control_damage, setup, fixture_down, &fx),
		cmocka_unit_test_prestate_setup_teardown(test_directory_and_links, setup, fixture_down, &fx),
		cmocka_unit_test_prestate_setup_teardown(test_daemon_restart_validates, setup, fixture_down, &fx),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
