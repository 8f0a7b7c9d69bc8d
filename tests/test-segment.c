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

#include "fixture.h"
#include "rundir.h"

static struct fixture fx;
static char data_path[512], ctl_path[512], dir_path[512];

static int setup(void **state)
{
	(void)state;
	char fname[128];
	fixture_setup(&fx);
	int slot = fixture_bloom(&fx, "victim", 10000, 0.01);
	uint64_t gen = atomic_load(&fx.reg.ctl.slots[slot].generation);
	shmf_data_filename("victim", gen, fname, sizeof(fname));
	fixture_path(&fx, fname, data_path, sizeof(data_path));
	fixture_path(&fx, SHMF_CTL_FILE, ctl_path, sizeof(ctl_path));
	snprintf(dir_path, sizeof(dir_path), "%s/%s", fx.root, FIXTURE_INSTANCE);
	/* A key in it, so "unchanged" has content to compare. */
	shmf_t *f;
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, "victim", SHMF_RDWR, &f), 0);
	assert_int_equal(shmf_add(f, "present", 7), 1);
	shmf_close(f);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fixture_teardown(&fx);
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

static void patch_u64(const char *path, size_t off, uint64_t v)
{
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &v, sizeof(v), (off_t)off), (ssize_t)sizeof(v));
	close(fd);
}

static void patch_u32(const char *path, size_t off, uint32_t v)
{
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &v, sizeof(v), (off_t)off), (ssize_t)sizeof(v));
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

static void test_data_damage(void **state)
{
	(void)state;
	struct blob pristine = read_file(data_path);
	expect_good();

	assert_int_equal(truncate(data_path, (off_t)pristine.len - 64), 0);
	expect_refused(data_path, SHMF_E_FORMAT, "data truncated by one block");
	write_file(data_path, &pristine);

	assert_int_equal(truncate(data_path, 100), 0);
	expect_refused(data_path, SHMF_E_FORMAT, "data truncated into its header");
	write_file(data_path, &pristine);

	patch_u64(data_path, offsetof(struct shmf_data_header, magic), 0x1234);
	expect_refused(data_path, SHMF_E_FORMAT, "data wrong magic");
	write_file(data_path, &pristine);

	patch_u32(data_path, offsetof(struct shmf_data_header, version), SHMF_FORMAT_VERSION + 1);
	expect_refused(data_path, SHMF_E_VERSION, "data wrong version");
	write_file(data_path, &pristine);

	patch_u64(data_path, offsetof(struct shmf_data_header, layout), shmf_layout_fingerprint() ^ 1);
	expect_refused(data_path, SHMF_E_LAYOUT, "data wrong layout fingerprint");
	write_file(data_path, &pristine);

	patch_u64(data_path, offsetof(struct shmf_data_header, nblocks), UINT64_C(1) << 60);
	expect_refused(data_path, SHMF_E_FORMAT, "data header claims more blocks than the file has");
	write_file(data_path, &pristine);

	patch_u32(data_path, offsetof(struct shmf_data_header, k), 0);
	expect_refused(data_path, SHMF_E_FORMAT, "data header k differs from the slot");
	write_file(data_path, &pristine);

	assert_int_equal(chmod(data_path, 0646), 0);
	expect_refused(data_path, SHMF_E_OWNER, "data writable by others");
	write_file(data_path, &pristine);

	if (geteuid() != 0)
		fail_msg("the owner checks need root (chown); run the suite as root");
	assert_int_equal(chown(data_path, 65534, 65534), 0);
	expect_refused(data_path, SHMF_E_OWNER, "data owned by nobody");
	write_file(data_path, &pristine);

	expect_good();
	free(pristine.bytes);
}

static void test_control_damage(void **state)
{
	(void)state;
	struct blob pristine = read_file(ctl_path);
	expect_good();

	assert_int_equal(truncate(ctl_path, (off_t)pristine.len - 1), 0);
	expect_refused(ctl_path, SHMF_E_FORMAT, "control truncated by a byte");
	write_file(ctl_path, &pristine);

	assert_int_equal(truncate(ctl_path, 10), 0);
	expect_refused(ctl_path, SHMF_E_FORMAT, "control truncated into its header");
	write_file(ctl_path, &pristine);

	patch_u64(ctl_path, offsetof(struct shmf_ctl_header, magic), SHMF_DATA_MAGIC);
	expect_refused(ctl_path, SHMF_E_FORMAT, "control wrong magic");
	write_file(ctl_path, &pristine);

	patch_u32(ctl_path, offsetof(struct shmf_ctl_header, version), 99);
	expect_refused(ctl_path, SHMF_E_VERSION, "control wrong version");
	write_file(ctl_path, &pristine);

	patch_u64(ctl_path, offsetof(struct shmf_ctl_header, layout), 42);
	expect_refused(ctl_path, SHMF_E_LAYOUT, "control wrong layout fingerprint");
	write_file(ctl_path, &pristine);

	patch_u32(ctl_path, offsetof(struct shmf_ctl_header, nslots), 1u << 30);
	expect_refused(ctl_path, SHMF_E_FORMAT, "control claims more slots than it holds");
	write_file(ctl_path, &pristine);

	/* A slot whose fields contradict each other. */
	size_t slot0 = sizeof(struct shmf_ctl_header);
	patch_u64(ctl_path, slot0 + offsetof(struct shmf_slot, data_bytes), 12345);
	expect_refused(ctl_path, SHMF_E_FORMAT, "slot size fields disagree");
	write_file(ctl_path, &pristine);

	patch_u32(ctl_path, slot0 + offsetof(struct shmf_slot, k), 1000);
	expect_refused(ctl_path, SHMF_E_FORMAT, "slot k out of range");
	write_file(ctl_path, &pristine);

	assert_int_equal(chmod(ctl_path, 0660), 0);
	expect_refused(ctl_path, SHMF_E_OWNER, "control writable by group");
	write_file(ctl_path, &pristine);

	if (geteuid() != 0)
		fail_msg("the owner checks need root (chown); run the suite as root");
	assert_int_equal(chown(ctl_path, 65534, 65534), 0);
	expect_refused(ctl_path, SHMF_E_OWNER, "control owned by nobody");
	write_file(ctl_path, &pristine);

	expect_good();
	free(pristine.bytes);
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
	patch_u32(ctl_path, offsetof(struct shmf_ctl_header, version), 7);
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
		cmocka_unit_test(test_data_damage),
		cmocka_unit_test(test_control_damage),
		cmocka_unit_test(test_directory_and_links),
		cmocka_unit_test(test_daemon_restart_validates),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
