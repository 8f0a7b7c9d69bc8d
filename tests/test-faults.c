/*
 * test-faults.c - I/O faults in snapshots. Each file operation of a
 * snapshot (open, chmod, write, fsync, close, rename, fsync of the
 * directory, allocations) fails in turn at its Nth call, N counting up
 * until the snapshot succeeds; after every failure the error names the
 * step and the cause, the previous snapshot file is byte for byte what it
 * was, the live filter is unchanged (its data files, generation and keys),
 * no temporary file is left, and a cuckoo filter's relocation lock is
 * free again. Then the same for swap and restore: the read of the file
 * and the fill of the new generation fail at their Nth call, and the live
 * filter keeps serving with no new data file left behind.
 *
 * The faults come from snapshot.c's test hook (snapshot.h, compiled in by
 * tests/meson.build as snapshot-hooked): only the snapshot code's own
 * calls are failed, not the test's or the registry's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "libclient/cuckoo.h"
#include "tests/fixture.h"
#include "shmd/files/periodic.h"
#include "common/snapshot.h"
#include "common/spec.h"

static struct fixture fx;
static int long_mode;

/* No fault stays planned after a test, whatever stopped it. */
static int teardown(void **state)
{
	memset(&snapshot_fault, 0, sizeof(snapshot_fault));
	return fixture_down(state);
}

static void plan(unsigned kind, unsigned long n, int err, int partial)
{
	snapshot_fault = (struct snapshot_fault){ .kinds = 1u << kind, .fail_at = n, .err = err, .partial = partial };
}

/* ---- What must not change ---------------------------------------------- */

struct file_image {
	size_t len;
	uint64_t xxh; /* of the whole content */
};

/* The message names the cause: its errno's text (allocations: "out of memory"). */
static int names_cause(const char *msg, int err)
{
	return strstr(msg, strerror(err)) != NULL || (err == ENOMEM && strstr(msg, "out of memory") != NULL);
}

static int image_of(const char *path, struct file_image *out)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	XXH3_state_t *st = XXH3_createState();
	XXH3_64bits_reset(st);
	static char buf[1 << 16];
	ssize_t n;
	out->len = 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		XXH3_64bits_update(st, buf, (size_t)n);
		out->len += (size_t)n;
	}
	out->xxh = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	close(fd);
	return 0;
}

/* The data files of filter @p name in the instance directory: how many,
 * and one digest over their names and contents. */
static uint64_t instance_image(const char *name, unsigned *nfiles)
{
	char idir[512], path[1024];
	snprintf(idir, sizeof(idir), "%s/%s", fx.root, FIXTURE_INSTANCE);
	struct dirent **v;
	int n = scandir(idir, &v, NULL, alphasort);
	assert_true(n >= 0);
	uint64_t h = 0;
	*nfiles = 0;
	size_t nl = strlen(name);
	for (int i = 0; i < n; i++) {
		if (!strncmp(v[i]->d_name, name, nl) && v[i]->d_name[nl] == '.') {
			struct file_image im;
			snprintf(path, sizeof(path), "%s/%s", idir, v[i]->d_name);
			assert_int_equal(image_of(path, &im), 0);
			h = XXH3_64bits_withSeed(v[i]->d_name, strlen(v[i]->d_name), h ^ im.xxh);
			(*nfiles)++;
		}
		free(v[i]);
	}
	free(v);
	return h;
}

/* Temporary files ("." names) in the snapshot directory. */
static int temporaries(void)
{
	DIR *d = opendir(fx.files);
	assert_non_null(d);
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] == '.' && strstr(e->d_name, ".tmp-") != NULL;
	closedir(d);
	return n;
}

/* The file at @p path is a whole snapshot whose newest section holds @p items. */
static void assert_snapshot_holds(const char *path, uint64_t items)
{
	assert_int_equal(fixture_snapshot_items(path), items);
}

static uint64_t items_of(const char *name)
{
	shmf_t *f = fixture_open(name, SHMF_RDONLY);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	shmf_close(f);
	return info.items;
}

/* Nobody holds the relocation lock of cuckoo filter @p name's newest generation. */
static void assert_lock_free(const char *name)
{
	char path[600];
	fixture_data_path(&fx, name, path, sizeof(path));
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	struct shmf_cuckoo_meta meta;
	assert_int_equal(pread(fd, &meta, sizeof(meta), SHMF_DATA_BLOCKS_OFF), (ssize_t)sizeof(meta));
	assert_false(shmf_cuckoo_lock_held(&meta));
	close(fd);
}

/* ---- Writing: every step fails in turn ---------------------------------- */

struct fault_case {
	unsigned kind;
	int err;
	int partial;
	const char *step; /* in the message */
};

// clang-format off
static const struct fault_case long_write_cases[] = {
	{ SNAP_IO_WRITE, EDQUOT, 1, "write failed" },
	{ SNAP_IO_WRITE, EFBIG, 0, "write failed" },
	{ SNAP_IO_WRITE, EROFS, 0, "write failed" },
	{ SNAP_IO_OPEN, EROFS, 0, "cannot" },
	{ SNAP_IO_RENAME, EXDEV, 0, "rename failed" },
	{ SNAP_IO_FSYNC, EDQUOT, 0, "fsync failed" },
};
// clang-format on

static const struct fault_case write_cases[] = {
	{ SNAP_IO_OPEN, EMFILE, 0, "cannot" },
	{ SNAP_IO_CHMOD, EPERM, 0, "chmod failed" },
	{ SNAP_IO_WRITE, EIO, 0, "write failed" },
	{ SNAP_IO_WRITE, ENOSPC, 0, "write failed" },
	{ SNAP_IO_WRITE, ENOSPC, 1, "write failed" }, /* short write first, then ENOSPC */
	{ SNAP_IO_FSYNC, EIO, 0, "fsync failed" },
	{ SNAP_IO_FSYNC, ENOSPC, 0, "fsync failed" },
	{ SNAP_IO_CLOSE, EIO, 0, "close failed" },
	{ SNAP_IO_RENAME, EIO, 0, "rename failed" },
	{ SNAP_IO_RENAME, ENOSPC, 0, "rename failed" },
	{ SNAP_IO_DIRSYNC, EIO, 0, "fsync of the directory failed" },
	{ SNAP_IO_ALLOC, ENOMEM, 0, "" },
};

static const char *const kind_names[SNAP_IO_KINDS] = {
	"open", "chmod", "write", "fsync", "close", "rename", "directory fsync", "allocation", "read", "fill",
};

/*
 * Snapshot filter @p name to @p path with the Nth call of the case's kind
 * failing, N = 1, 2, ... until a snapshot succeeds. Before each attempt a
 * key is added (through @p add, a handle on the filter), so that the new
 * snapshot differs from the previous one. @return the number of fault
 * points (N) that failed the snapshot.
 */
static unsigned fail_each_call(const char *name, const char *path, shmf_t *add, unsigned family,
			       const struct fault_case *c, int cuckoo)
{
	char err[SNAPSHOT_ERR_MAX], key[32];
	uint64_t prev = fixture_snapshot_items(path); /* what the file holds */
	for (unsigned long n = 1;; n++) {
		assert_true(n < 1000);
		assert_true(shmf_add(add, key, fixture_key(key, family, n + 1000 * c->kind)) == 1);
		uint64_t items = items_of(name);
		struct file_image before, after;
		assert_int_equal(image_of(path, &before), 0);
		unsigned files_before, files_after;
		uint64_t live_before = instance_image(name, &files_before);

		plan(c->kind, n, c->err, c->partial);
		err[0] = '\0';
		int rc = registry_snapshot(&fx.reg, name, path, NULL, err, sizeof(err));
		unsigned long injected = snapshot_fault.injected;
		memset(&snapshot_fault, 0, sizeof(snapshot_fault));

		if (injected == 0) {
			/* Past the last call of this kind: the snapshot went through. */
			if (rc != 0)
				fail_msg("%s at call %lu: no fault injected, yet: %s", kind_names[c->kind], n, err);
			assert_snapshot_holds(path, items);
			assert_int_equal(temporaries(), 0);
			return (unsigned)(n - 1);
		}
		if (rc >= 0)
			fail_msg("%s failing at call %lu (%s): snapshot reported success", kind_names[c->kind], n,
				 strerror(c->err));
		/* The error names the file, the step and the cause. */
		if (strstr(err, path) == NULL || strstr(err, c->step) == NULL || !names_cause(err, c->err))
			fail_msg("%s failing at call %lu: message '%s' lacks the path, '%s' or '%s'",
				 kind_names[c->kind], n, err, c->step, strerror(c->err));
		if (c->kind != SNAP_IO_ALLOC)
			assert_int_equal(rc, -c->err);
		assert_int_equal(image_of(path, &after), 0);
		if (c->kind == SNAP_IO_DIRSYNC) {
			/* The rename happened: the new file is complete under its
			 * name, and the message must not claim otherwise. */
			assert_snapshot_holds(path, items);
			if (strstr(err, "unchanged") != NULL)
				fail_msg("directory fsync failed after the rename, yet the message says: %s", err);
			prev = items;
		} else {
			if (before.len != after.len || before.xxh != after.xxh)
				fail_msg("%s failing at call %lu: the previous snapshot changed", kind_names[c->kind],
					 n);
			assert_snapshot_holds(path, prev);
		}
		/* The live filter: same files, same bytes; every key still there. */
		uint64_t live_after = instance_image(name, &files_after);
		assert_int_equal(files_after, files_before);
		if (live_after != live_before)
			fail_msg("%s failing at call %lu: the live filter's data files changed", kind_names[c->kind],
				 n);
		if (temporaries() != 0)
			fail_msg("%s failing at call %lu: a temporary file was left in %s", kind_names[c->kind], n,
				 fx.files);
		if (cuckoo)
			assert_lock_free(name);
		/* And a snapshot without faults writes what the filter holds now. */
		if (c->kind == SNAP_IO_DIRSYNC) {
			assert_int_equal(registry_snapshot(&fx.reg, name, path, NULL, err, sizeof(err)), 0);
			assert_snapshot_holds(path, items);
		}
	}
}

/* A windowed Bloom filter of two live generations of about 6 MB each (two
 * checksum chunks each), so that a snapshot makes many writes. */
static shmf_t *make_window(const char *name, unsigned family, uint64_t capacity)
{
	char key[32];
	fixture_window(&fx, name, SHMF_TYPE_BLOOM, capacity, 0.01, 3600, 2);
	shmf_t *f = fixture_open(name, SHMF_RDWR);
	for (uint64_t i = 0; i < 3000; i++)
		assert_int_equal(shmf_add(f, key, fixture_key(key, family, i)), 1);
	fixture_rotate(&fx, name);
	for (uint64_t i = 3000; i < 6000; i++)
		assert_int_equal(shmf_add(f, key, fixture_key(key, family, i)), 1);
	return f;
}

static void test_write_faults(void **state)
{
	(void)state;
	char path[512], err[SNAPSHOT_ERR_MAX];
	shmf_t *w = make_window("win", 1, 5000000);
	fixture_filter(&fx, "cuc", SHMF_TYPE_CUCKOO, 200000, 0.01);
	shmf_t *c = fixture_open("cuc", SHMF_RDWR);
	char key[32];
	for (uint64_t i = 0; i < 150000; i++)
		assert_int_equal(shmf_add(c, key, fixture_key(key, 2, i)), 1);

	unsigned total = 0;
	for (int type = 0; type < 2; type++) {
		const char *name = type == 0 ? "win" : "cuc";
		snprintf(path, sizeof(path), "%s/%s.snap", fx.files, name);
		assert_int_equal(registry_snapshot(&fx.reg, name, path, NULL, err, sizeof(err)), 0);
		for (size_t i = 0; i < sizeof(write_cases) / sizeof(write_cases[0]); i++) {
			const struct fault_case *fc = &write_cases[i];
			unsigned points = fail_each_call(name, path, type == 0 ? w : c, 10 + (unsigned)i, fc,
							 type == 1);
			print_message("%s: %s failing with %s%s: %u fault points, each refused cleanly\n", name,
				      kind_names[fc->kind], strerror(fc->err),
				      fc->partial ? " after a short write" : "", points);
			assert_true(points >= 1);
			total += points;
		}
	}
	if (long_mode) {
		for (size_t i = 0; i < sizeof(long_write_cases) / sizeof(long_write_cases[0]); i++) {
			const struct fault_case *fc = &long_write_cases[i];
			snprintf(path, sizeof(path), "%s/win.snap", fx.files);
			unsigned points = fail_each_call("win", path, w, 40 + (unsigned)i, fc, 0);
			print_message("win: %s failing with %s: %u fault points\n", kind_names[fc->kind],
				      strerror(fc->err), points);
			total += points;
		}
	}
	print_message("snapshot writes: %u fault points in all\n", total);
	/* The windowed snapshot: 2 sections of 2 chunks each, so its writes
	 * are header, sections, padding, 4 chunks, table and trailer. */
	shmf_close(w);
	shmf_close(c);
}

/* An interrupted write, read or fill (EINTR) is retried, not reported:
 * the snapshot and the swap go through whichever call is interrupted. */
static void test_interrupted(void **state)
{
	(void)state;
	char path[512], err[SNAPSHOT_ERR_MAX];
	shmf_t *w = make_window("win", 5, 100000);
	snprintf(path, sizeof(path), "%s/win.snap", fx.files);
	unsigned retried = 0;
	static const unsigned kinds[] = { SNAP_IO_WRITE, SNAP_IO_READ, SNAP_IO_FILL };
	for (size_t k = 0; k < 3; k++) {
		for (unsigned long n = 1;; n++) {
			assert_true(n < 1000);
			plan(kinds[k], n, EINTR, 0);
			int rc;
			if (kinds[k] == SNAP_IO_WRITE) {
				rc = registry_snapshot(&fx.reg, "win", path, NULL, err, sizeof(err));
			} else {
				rc = fixture_replace(&fx, "win", path, REGISTRY_SWAP, err, sizeof(err));
			}
			unsigned long injected = snapshot_fault.injected;
			memset(&snapshot_fault, 0, sizeof(snapshot_fault));
			if (rc < 0)
				fail_msg("%s interrupted at call %lu: %s", kind_names[kinds[k]], n, err);
			fixture_snapshot_items(path); /* whole */
			if (injected == 0)
				break;
			retried++;
		}
	}
	print_message("interrupted calls: %u, each retried, every snapshot and swap went through\n", retried);
	assert_true(retried >= 3);
	char key[32];
	for (uint64_t i = 0; i < 6000; i++)
		assert_int_equal(shmf_check(w, key, fixture_key(key, 5, i)), 1);
	shmf_close(w);
}

/* ---- Reading: swap and restore ----------------------------------------- */

static const struct fault_case read_cases[] = {
	{ SNAP_IO_OPEN, EACCES, 0, "cannot open" },
	{ SNAP_IO_READ, EIO, 0, "" },
	{ SNAP_IO_FILL, ENOSPC, 0, "cannot write the new generation" },
	{ SNAP_IO_FILL, ENOSPC, 1, "cannot write the new generation" },
	{ SNAP_IO_ALLOC, ENOMEM, 0, "out of memory" },
};

/* Swap @p file into @p name (or restore it as @p name when @p restore),
 * failing call N of the case's kind, N = 1, 2, ... until it succeeds. */
static unsigned fail_each_read(const char *name, const char *file, int restore, const struct fault_case *fc,
			       unsigned family)
{
	char err[SNAPSHOT_ERR_MAX], key[32];
	for (unsigned long n = 1;; n++) {
		assert_true(n < 1000);
		unsigned files_before, files_after;
		uint64_t live_before = instance_image(name, &files_before);
		plan(fc->kind, n, fc->err, fc->partial);
		err[0] = '\0';
		int rc = fixture_replace(&fx, name, file, restore ? REGISTRY_RESTORE : REGISTRY_SWAP, err, sizeof(err));
		unsigned long injected = snapshot_fault.injected;
		memset(&snapshot_fault, 0, sizeof(snapshot_fault));
		if (injected == 0) {
			if (rc < 0)
				fail_msg("%s at call %lu: no fault injected, yet: %s", kind_names[fc->kind], n, err);
			shmf_t *f = fixture_open(name, SHMF_RDONLY);
			for (uint64_t i = 0; i < 6000; i++)
				assert_int_equal(shmf_check(f, key, fixture_key(key, family, i)), 1);
			shmf_close(f);
			return (unsigned)(n - 1);
		}
		if (rc >= 0)
			fail_msg("%s failing at call %lu: %s reported success", kind_names[fc->kind], n,
				 restore ? "restore" : "swap");
		if (strstr(err, file) == NULL || strstr(err, fc->step) == NULL || !names_cause(err, fc->err))
			fail_msg("%s failing at call %lu: message '%s' lacks the path, '%s' or '%s'",
				 kind_names[fc->kind], n, err, fc->step, strerror(fc->err));
		/* Nothing published, no new generation's file left. */
		uint64_t live_after = instance_image(name, &files_after);
		assert_int_equal(files_after, files_before);
		if (live_after != live_before)
			fail_msg("%s failing at call %lu: the live filter changed", kind_names[fc->kind], n);
		if (restore)
			assert_int_equal(registry_find(&fx.reg, name), SHMF_E_NOTFOUND);
	}
}

static void test_read_faults(void **state)
{
	(void)state;
	char file[512], err[SNAPSHOT_ERR_MAX], key[32];
	shmf_t *w = make_window("src", 3, 5000000);
	snprintf(file, sizeof(file), "%s/src.snap", fx.files);
	assert_int_equal(registry_snapshot(&fx.reg, "src", file, NULL, err, sizeof(err)), 0);
	shmf_close(w);
	/* The live filter a swap would replace, with keys of its own. */
	shmf_t *live = make_window("live", 4, 5000000);
	unsigned total = 0;
	for (size_t i = 0; i < sizeof(read_cases) / sizeof(read_cases[0]); i++) {
		const struct fault_case *fc = &read_cases[i];
		unsigned swap_points = fail_each_read("live", file, 0, fc, 3);
		/* It was swapped in at last: put the old keys back for the next case. */
		for (uint64_t k = 0; k < 6000; k++)
			assert_true(shmf_add(live, key, fixture_key(key, 4, k)) >= 0);
		char fresh[32];
		snprintf(fresh, sizeof(fresh), "restored-%zu", i);
		unsigned restore_points = fail_each_read(fresh, file, 1, fc, 3);
		print_message("swap and restore: %s failing with %s%s: %u and %u fault points, each refused cleanly\n",
			      kind_names[fc->kind], strerror(fc->err), fc->partial ? " after a short write" : "",
			      swap_points, restore_points);
		assert_true(swap_points >= 1 && restore_points >= 1);
		total += swap_points + restore_points;
	}
	print_message("swap and restore: %u fault points in all\n", total);
	shmf_close(live);
}

/* ---- Periodic snapshots ------------------------------------------------- */

/* A failing periodic snapshot keeps every older file (nothing pruned) and
 * leaves no temporary file; the next one that succeeds prunes as usual. */
static void test_periodic_faults(void **state)
{
	(void)state;
	struct filter_spec f;
	spec_defaults(&f, "per");
	f.capacity = 100000;
	f.snapshot_every = 1;
	f.snapshot_keep = 2;
	assert_true(strlen(fx.files) < sizeof(f.snapshot_dir));
	memcpy(f.snapshot_dir, fx.files, strlen(fx.files) + 1);
	char err[REGISTRY_ERR_MAX];
	assert_true(registry_create(&fx.reg, &f, err, sizeof(err)) >= 0);
	assert_int_equal(periodic_snapshot(&fx.reg, &f, 1700000000), 0);
	assert_int_equal(periodic_snapshot(&fx.reg, &f, 1700000001), 0);
	char p0[600], p1[600], p2[600];
	snprintf(p0, sizeof(p0), "%s/per.20231114T221320Z.snap", fx.files);
	snprintf(p1, sizeof(p1), "%s/per.20231114T221321Z.snap", fx.files);
	snprintf(p2, sizeof(p2), "%s/per.20231114T221322Z.snap", fx.files);
	assert_int_equal(access(p0, F_OK), 0);
	assert_int_equal(access(p1, F_OK), 0);
	for (unsigned kind = SNAP_IO_WRITE; kind <= SNAP_IO_RENAME; kind++) {
		plan(kind, 1, EIO, 0);
		assert_true(periodic_snapshot(&fx.reg, &f, 1700000002) < 0);
		memset(&snapshot_fault, 0, sizeof(snapshot_fault));
		assert_int_equal(access(p0, F_OK), 0);
		assert_int_equal(access(p1, F_OK), 0);
		assert_int_not_equal(access(p2, F_OK), 0);
		assert_int_equal(temporaries(), 0);
	}
	assert_int_equal(periodic_snapshot(&fx.reg, &f, 1700000002), 0);
	assert_int_not_equal(access(p0, F_OK), 0); /* pruned: keep 2 */
	assert_int_equal(access(p2, F_OK), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate_setup_teardown(test_write_faults, fixture_up, teardown, &fx),
		cmocka_unit_test_prestate_setup_teardown(test_read_faults, fixture_up, teardown, &fx),
		cmocka_unit_test_prestate_setup_teardown(test_periodic_faults, fixture_up, teardown, &fx),
		cmocka_unit_test_prestate_setup_teardown(test_interrupted, fixture_up, teardown, &fx),
	};
	static const char *const names[] = { "write", "read", "periodic", "interrupted" };
	long_mode = fixture_long_mode();
	return fixture_run(argc, argv, tests, names);
}
