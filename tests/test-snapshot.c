/*
 * test-snapshot.c - snapshot files, swap and restore, against a private
 * registry: round trips for both types, damaged files refused with the
 * live filter unchanged, snapshots taken while 4 processes add, a writer
 * killed at random points 50 times, and 50 swaps under 4 checking
 * processes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include <xxhash.h>

#include "libclient/cuckoo.h"
#include "tests/fixture.h"
#include "common/snapshot.h"

static struct fixture fx;

static void file_path(const char *name, char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "%s/%s", fx.files, name) >= len)
		fail_msg("path too long");
}

static void add_keys(shmf_t *f, unsigned family, uint64_t n)
{
	char key[32];
	for (uint64_t i = 0; i < n; i++)
		assert_true(shmf_add(f, key, fixture_key(key, family, i)) >= 0);
}

static uint64_t count_present(shmf_t *f, unsigned family, uint64_t n)
{
	char key[32];
	uint64_t hits = 0;
	for (uint64_t i = 0; i < n; i++)
		hits += shmf_check(f, key, fixture_key(key, family, i)) == 1;
	return hits;
}

/* ---- Round trip -------------------------------------------------------- */

static void roundtrip_type(int type, const char *name, const char *copy)
{
	char path[512], err[SNAPSHOT_ERR_MAX];
	fixture_filter(&fx, name, type, 20000, 0.01);
	shmf_t *f = fixture_open(name, SHMF_RDWR);
	add_keys(f, 1, 15000);
	shmf_info_t before;
	assert_int_equal(shmf_info(f, &before), 0);
	file_path(name, path, sizeof(path));
	assert_int_equal(registry_snapshot(&fx.reg, name, path, NULL, err, sizeof(err)), 0);

	struct snap_file sf;
	assert_int_equal(snapshot_open(&sf, path, err, sizeof(err)), 0);
	assert_int_equal(sf.hdr.type, type);
	assert_int_equal(sf.hdr.capacity, 20000);
	assert_string_equal(sf.hdr.name, name);
	assert_int_equal(sf.sec[0].items, before.items);
	assert_int_equal(sf.sec[0].generation, before.generation);
	assert_int_equal(snapshot_read_section(&sf, 0, NULL, err, sizeof(err)), 0);
	snapshot_close(&sf);

	/* Restore as a new filter: the same keys, the same counts. */
	assert_true(fixture_replace(&fx, copy, path, REGISTRY_RESTORE, err, sizeof(err)) >= 0);
	shmf_t *c = fixture_open(copy, SHMF_RDWR);
	assert_int_equal(count_present(c, 1, 15000), 15000);
	assert_true(count_present(c, 2, 10000) < 300); /* not a filter of everything */
	shmf_info_t after;
	assert_int_equal(shmf_info(c, &after), 0);
	assert_int_equal(after.items, before.items);
	assert_int_equal(after.type, type);
	/* And it works: a cuckoo copy deletes, a Bloom copy adds. */
	char key[32];
	size_t len = fixture_key(key, 1, 7);
	if (type == SHMF_TYPE_CUCKOO)
		assert_int_equal(shmf_del(c, key, len), 1);
	else
		assert_int_equal(shmf_add(c, key, fixture_key(key, 3, 1)), 1);
	shmf_close(c);
	shmf_close(f);
	/* Swap needs the filter to exist. */
	assert_int_equal(fixture_replace(&fx, "nosuch", path, REGISTRY_SWAP, err, sizeof(err)), SHMF_E_NOTFOUND);
	assert_non_null(strstr(err, "not found"));
}

static void test_roundtrip(void **state)
{
	(void)state;
	roundtrip_type(SHMF_TYPE_BLOOM, "rtb", "rtb-copy");
	roundtrip_type(SHMF_TYPE_CUCKOO, "rtc", "rtc-copy");
}

/* ---- Bucket sizes ------------------------------------------------------- */

static void *read_file(const char *path, size_t *len);
static void write_file(const char *path, const void *buf, size_t len);
static void reseal(void *buf);

/* A 32-bit filter @p name swapped from its own snapshot @p path keeps
 * every key; from the 8-bit b2's (buckets of 2 too) it is a change of
 * shape, which the swap's shape check refuses naming both widths. */
static void check_swap_32(const char *name, const char *path)
{
	char err[SNAPSHOT_ERR_MAX], other[512], key[32];
	assert_true(fixture_replace(&fx, name, path, REGISTRY_SWAP, err, sizeof(err)) >= 0);
	shmf_t *s = fixture_open(name, SHMF_RDONLY);
	for (uint64_t k = 200; k < 15000; k++)
		assert_int_equal(shmf_check(s, key, fixture_key(key, 1, k)), 1);
	shmf_close(s);
	struct snap_file sf;
	file_path("b2", other, sizeof(other));
	assert_int_equal(snapshot_open(&sf, other, err, sizeof(err)), 0);
	assert_int_equal(registry_swap_shape(&fx.reg, name, &sf.hdr, err, sizeof(err)), SHMF_E_INVAL);
	if (strstr(err, "32-bit") == NULL || strstr(err, "8-bit") == NULL)
		fail_msg("swap of a 32-bit filter from an 8-bit snapshot: %s", err);
	snapshot_close(&sf);
}

/*
 * A cuckoo filter of buckets of @p b fingerprints at rate @p fpr ("b<b>"),
 * with copies and deletes, through a snapshot file and a restore under
 * another name ("b<b>-copy"): the file (version 3) says the bucket size,
 * and the copy has it, with every key, count, item and delete.
 */
static void check_bucket_size_round_trip(uint32_t b, double fpr)
{
	char path[512], err[SNAPSHOT_ERR_MAX], key[32], name[32], copy[32];
	/* Below 1e-6: 32-bit fingerprints, a filter of its own. */
	const char *wide = fpr < 1e-6 ? "-fp32" : "";
	snprintf(name, sizeof(name), "b%u%s", b, wide);
	snprintf(copy, sizeof(copy), "b%u%s-copy", b, wide);
	fixture_cuckoo(&fx, name, 20000, fpr, b);
	shmf_t *f = fixture_open(name, SHMF_RDWR);
	add_keys(f, 1, 15000);
	/* A second copy of some, and some deleted. In buckets of 1 a key's
	 * two copies take both its buckets, and a second copy whose part of
	 * the bucket graph already holds as many fingerprints as buckets has
	 * nowhere to go: SHMF_E_FULL, nothing changed (0.6% of such adds at
	 * this load, every one of them a part with more fingerprints than
	 * buckets; 30 to 70% of runs met one). */
	unsigned full = 0;
	for (uint64_t k = 0; k < 100; k++) {
		int r = shmf_add(f, key, fixture_key(key, 1, k));
		if (r == SHMF_E_FULL && b == 1)
			full++;
		else
			assert_int_equal(r, 1);
	}
	assert_true(full <= 5);
	for (uint64_t k = 100; k < 200; k++)
		assert_int_equal(shmf_del(f, key, fixture_key(key, 1, k)), 1);
	shmf_info_t before;
	assert_int_equal(shmf_info(f, &before), 0);
	assert_int_equal(before.bucket_size, b);
	if (*wide)
		assert_true(before.k == 32 && before.fingerprint_bits == 32);
	file_path(name, path, sizeof(path));
	assert_int_equal(registry_snapshot(&fx.reg, name, path, NULL, err, sizeof(err)), 0);
	struct snap_file sf;
	assert_int_equal(snapshot_open(&sf, path, err, sizeof(err)), 0);
	assert_int_equal(sf.hdr.version, SHMF_SNAP_VERSION);
	assert_int_equal(sf.hdr.bucket_size, b);
	snapshot_close(&sf);

	if (fixture_replace(&fx, copy, path, REGISTRY_RESTORE, err, sizeof(err)) < 0)
		fail_msg("restore %s: %s", copy, err);
	shmf_t *c = fixture_open(copy, SHMF_RDONLY);
	shmf_info_t after;
	assert_int_equal(shmf_info(c, &after), 0);
	assert_int_equal(after.bucket_size, b);
	assert_int_equal(after.k, before.k);
	assert_int_equal(after.fingerprint_bits, before.fingerprint_bits);
	assert_int_equal(after.buckets, before.buckets);
	assert_int_equal(after.items, before.items);
	assert_int_equal(after.deletes, before.deletes);
	for (uint64_t k = 0; k < 15000; k++) {
		size_t len = fixture_key(key, 1, k);
		if (shmf_count(c, key, len) != shmf_count(f, key, len))
			fail_msg("%s: key %llu counted %d, %d in the original", copy, (unsigned long long)k,
				 shmf_count(c, key, len), shmf_count(f, key, len));
		if (k >= 200)
			assert_int_equal(shmf_check(c, key, len), 1);
	}
	shmf_close(c);
	shmf_close(f);
	if (*wide)
		check_swap_32(name, path);
}

/* A swap of b1 from b2's snapshot changes the shape: refused without
 * --reshape, naming both bucket sizes; b2 from its own passes. */
static void check_swap_between_bucket_sizes_refused(void)
{
	char path[512], err[SNAPSHOT_ERR_MAX];
	struct snap_file sf;
	file_path("b2", path, sizeof(path));
	assert_int_equal(snapshot_open(&sf, path, err, sizeof(err)), 0);
	assert_int_equal(registry_swap_shape(&fx.reg, "b1", &sf.hdr, err, sizeof(err)), SHMF_E_INVAL);
	if (strstr(err, "buckets of 1") == NULL || strstr(err, "buckets of 2") == NULL)
		fail_msg("swap shape message: %s", err);
	assert_int_equal(registry_swap_shape(&fx.reg, "b2", &sf.hdr, err, sizeof(err)), 0);
	snapshot_close(&sf);
}

/* A bucket size edited into b2's snapshot, the header checksum made good
 * again: a size that is no word, or another word than the stored table's,
 * refused; so is one in a file of version 2, where the bytes were
 * reserved. */
static void check_edited_bucket_size_refused(void)
{
	char path[512], other[512], err[SNAPSHOT_ERR_MAX];
	struct snap_file sf;
	size_t len;
	file_path("b2", path, sizeof(path));
	uint8_t *orig = read_file(path, &len), *buf = malloc(len);
	static const struct {
		uint32_t version, bucket_size;
		const char *what;
	} edits[] = {
		{ SHMF_SNAP_VERSION, 3, "inconsistent" }, { SHMF_SNAP_VERSION, 16, "inconsistent" },
		{ SHMF_SNAP_VERSION, 0, "inconsistent" }, { SHMF_SNAP_VERSION, 4, "inconsistent" },
		{ SHMF_SNAP_VERSION, 1, "inconsistent" }, { 2, 2, "bytes 200-211) set" },
	};
	file_path("edited.snap", other, sizeof(other));
	for (size_t e = 0; e < sizeof(edits) / sizeof(edits[0]); e++) {
		memcpy(buf, orig, len);
		struct shmf_snap_header *h = (struct shmf_snap_header *)buf;
		h->version = edits[e].version;
		h->bucket_size = edits[e].bucket_size;
		reseal(buf);
		write_file(other, buf, len);
		int rc = snapshot_open(&sf, other, err, sizeof(err));
		if (rc == 0)
			snapshot_close(&sf);
		if (rc != SHMF_E_FORMAT || strstr(err, edits[e].what) == NULL)
			fail_msg("bucket size %u in a version %u file: %d, '%s'", edits[e].bucket_size,
				 edits[e].version, rc, err);
	}
	free(buf);
	free(orig);
}

/* A version 2 file of a filter of buckets of 4 (b4's snapshot made so:
 * bytes 208-211 zero, as written then) restores as buckets of 4 with
 * every key. */
static void check_version2_file_restores_as_buckets_of_4(void)
{
	char path[512], other[512], err[SNAPSHOT_ERR_MAX];
	size_t len;
	file_path("b4", path, sizeof(path));
	file_path("edited.snap", other, sizeof(other));
	uint8_t *orig = read_file(path, &len);
	struct shmf_snap_header *h = (struct shmf_snap_header *)orig;
	h->version = 2;
	h->bucket_size = 0;
	reseal(orig);
	/* The trailer's checksum covers the header too: header, section
	 * headers, chunk table. */
	uint64_t table = SHMF_SNAP_PAYLOAD_OFF + h->nsections * h->section_bytes;
	XXH3_state_t *st = XXH3_createState();
	XXH3_64bits_reset(st);
	XXH3_64bits_update(st, orig, sizeof(*h) + h->nsections * sizeof(struct shmf_snap_section));
	XXH3_64bits_update(st, orig + table, len - SHMF_SNAP_TRAILER - table);
	uint64_t sum = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	memcpy(orig + len - SHMF_SNAP_TRAILER, &sum, sizeof(sum));
	write_file(other, orig, len);
	if (fixture_replace(&fx, "b4-v2", other, REGISTRY_RESTORE, err, sizeof(err)) < 0)
		fail_msg("version 2 file: %s", err);
	shmf_t *c = fixture_open("b4-v2", SHMF_RDONLY);
	shmf_info_t info;
	assert_int_equal(shmf_info(c, &info), 0);
	assert_int_equal(info.bucket_size, 4);
	assert_int_equal(count_present(c, 1, 15000) >= 14800, 1);
	shmf_close(c);
	free(orig);
}

/*
 * A cuckoo filter of each bucket size, with copies and deletes, through a
 * snapshot file and a restore under another name: the file (version 3)
 * says the bucket size, and the copy has it, with every key, count, item
 * and delete. A swap between two sizes is a change of shape. Files of
 * version 2 (every cuckoo bucket of 4 then) read as buckets of 4; a bucket
 * size edited into a file, checksum resealed, is refused.
 */
static void test_bucket_sizes(void **state)
{
	(void)state;
	static const struct {
		uint32_t b;
		double fpr;
	} sizes[] = { { 1, 0.01 }, { 2, 0.05 }, { 4, 0.05 }, { 8, 0.1 }, { 2, 1e-9 } };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		check_bucket_size_round_trip(sizes[i].b, sizes[i].fpr);
	check_swap_between_bucket_sizes_refused();
	check_edited_bucket_size_refused();
	check_version2_file_restores_as_buckets_of_4();
}

/* ---- Damaged files ----------------------------------------------------- */

static void *read_file(const char *path, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0 && fstat(fd, &st) == 0);
	char *buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

static void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

/* The live filter "live" still answers as before: same generation, every key. */
static void assert_live_unchanged(uint64_t gen)
{
	shmf_t *f = fixture_open("live", SHMF_RDONLY);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.generation, gen);
	assert_int_equal(count_present(f, 5, 5000), 5000);
	shmf_close(f);
}

/* Refused by open or by the payload check; then swapping it in is refused
 * too and changes nothing. */
static void assert_refused(const char *path, uint64_t gen, const char *what)
{
	char err[SNAPSHOT_ERR_MAX] = "";
	struct snap_file sf;
	int rc = snapshot_open(&sf, path, err, sizeof(err));
	if (rc == 0) {
		rc = snapshot_read_section(&sf, 0, NULL, err, sizeof(err));
		snapshot_close(&sf);
	}
	if (rc >= 0)
		fail_msg("%s: accepted", what);
	if (strstr(err, "snapshot ") == NULL)
		fail_msg("%s: error does not name the file: '%s'", what, err);
	err[0] = '\0';
	assert_true(fixture_replace(&fx, "live", path, REGISTRY_SWAP, err, sizeof(err)) < 0);
	assert_true(err[0] != '\0');
	assert_live_unchanged(gen);
	/* No new generation's file was left in the instance directory. */
	char probe[512];
	snprintf(probe, sizeof(probe), "%s/%s/live.%llu.data", fx.root, FIXTURE_INSTANCE, (unsigned long long)gen + 1);
	assert_int_not_equal(access(probe, F_OK), 0);
}

static void reseal(void *buf)
{
	struct shmf_snap_header *h = buf;
	h->header_xxh3 = XXH3_64bits(h, offsetof(struct shmf_snap_header, header_xxh3));
}

static void test_damaged(void **state)
{
	(void)state;
	char good[512], bad[512], err[SNAPSHOT_ERR_MAX];
	fixture_bloom(&fx, "live", 10000, 0.01);
	shmf_t *f = fixture_open("live", SHMF_RDWR);
	add_keys(f, 5, 5000);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	shmf_close(f);
	/* A bigger file as the source, so that payloads span chunks. */
	fixture_bloom(&fx, "src", 8000000, 0.01);
	file_path("good", good, sizeof(good));
	file_path("bad", bad, sizeof(bad));
	assert_int_equal(registry_snapshot(&fx.reg, "src", good, NULL, err, sizeof(err)), 0);
	size_t len;
	unsigned char *orig = read_file(good, &len), *buf = malloc(len);
	assert_true(len > 2 * SHMF_SNAP_CHUNK);

	/* Every header byte flipped, one at a time: the header checksum. */
	for (size_t i = 0; i < sizeof(struct shmf_snap_header); i += 7) {
		memcpy(buf, orig, len);
		buf[i] ^= 0x20;
		write_file(bad, buf, len);
		char what[64];
		snprintf(what, sizeof(what), "header byte %zu flipped", i);
		assert_refused(bad, info.generation, what);
	}
	/* Fields changed with the checksum recomputed (a buggy writer): the
	 * checks of meaning. Offsets from snapshot-format.h. */
	// clang-format off
	static const struct {
		size_t off, size;
		uint64_t value;
		const char *what;
	} fields[] = {
		{ 8, 4, SHMF_SNAP_VERSION + 1, "version" }, { 12, 4, 128, "header_size" },    { 16, 4, 3, "type" },
		{ 16, 4, 2, "type cuckoo" },      { 20, 4, 33, "k" },               { 20, 4, 3, "k other" },
		{ 24, 8, 1ull << 62, "capacity absurd" }, { 24, 8, 0, "capacity 0" }, { 32, 8, 0, "fpr 0" },
		{ 40, 8, 1ull << 60, "nblocks absurd" }, { 40, 8, 1, "nblocks small" }, { 48, 8, 5, "nbuckets" },
		{ 56, 4, 9, "max_kicks on Bloom" }, { 60, 4, 0, "nsections 0" },   { 60, 4, 17, "nsections 17" },
		{ 60, 4, 2, "nsections 2" },      { 88, 8, 60, "window without gens" }, { 96, 4, 3, "gens without window" },
		{ 100, 4, 100, "chunk_bytes" },   { 104, 8, 4096, "section_bytes" }, { 112, 8, 1ull << 50, "file_bytes" },
		{ 120, 1, '/', "name" },          { 120, 1, 0, "empty name" },      { 214, 1, 1, "reserved" },
		{ 200, 4, 8, "unknown flag" },    { 8, 4, 0, "version 0" },         { 208, 4, 4, "bucket size on Bloom" },
		{ 200, 4, 2, "layered without expansion" }, { 204, 4, 2, "expansion without layered" },
		{ 200, 4, 6, "layered and nonscaling" },
	};
	// clang-format on
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		memcpy(buf, orig, len);
		memcpy(buf + fields[i].off, &fields[i].value, fields[i].size);
		reseal(buf);
		write_file(bad, buf, len);
		assert_refused(bad, info.generation, fields[i].what);
	}
	/* Section header, chunk table and trailer damage. */
	size_t table = len - SHMF_SNAP_TRAILER - 8 * ((len - SHMF_SNAP_PAYLOAD_OFF) / SHMF_SNAP_CHUNK + 1);
	size_t spots[] = { 256 + 3, 256 + 60, len - 1, len - 9, len - 20, table + 8 };
	for (size_t i = 0; i < sizeof(spots) / sizeof(spots[0]); i++) {
		memcpy(buf, orig, len);
		buf[spots[i]] ^= 1;
		write_file(bad, buf, len);
		assert_refused(bad, info.generation, "metadata bit flipped");
	}
	/* One payload bit, in the first chunk, a middle one and the last. */
	size_t payload_bits[] = { SHMF_SNAP_PAYLOAD_OFF, SHMF_SNAP_PAYLOAD_OFF + SHMF_SNAP_CHUNK + 12345, table - 1 };
	for (size_t i = 0; i < 3; i++) {
		memcpy(buf, orig, len);
		buf[payload_bits[i]] ^= 0x80;
		write_file(bad, buf, len);
		assert_refused(bad, info.generation, "payload bit flipped");
		struct snap_file sf;
		assert_int_equal(snapshot_open(&sf, bad, err, sizeof(err)), 0);
		assert_int_equal(snapshot_read_section(&sf, 0, NULL, err, sizeof(err)), SHMF_E_FORMAT);
		assert_non_null(strstr(err, "checksum mismatch in section 0"));
		snapshot_close(&sf);
	}
	/* Truncated at several offsets, and extended. */
	size_t cuts[] = { 0, 100, 255, 256, 4095, 4096, SHMF_SNAP_PAYLOAD_OFF + 1000, table, len - 16, len - 1 };
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		write_file(bad, orig, cuts[i]);
		assert_refused(bad, info.generation, "truncated");
	}
	memcpy(buf, orig, len);
	unsigned char *longer = malloc(len + 10);
	memcpy(longer, orig, len);
	memset(longer + len, 0, 10);
	write_file(bad, longer, len + 10);
	assert_refused(bad, info.generation, "extended");
	/* Not a snapshot at all. */
	write_file(bad, "hello world, not a snapshot file at all", 40);
	assert_refused(bad, info.generation, "text");
	/* The good file still swaps in. */
	assert_true(fixture_replace(&fx, "live", good, REGISTRY_SWAP, err, sizeof(err)) >= 0);
	free(longer);
	free(buf);
	free(orig);
}

/* ---- Every bit of the metadata page ------------------------------------ */

/* The data files of filter @p name in the instance directory. */
static int data_files(const char *name)
{
	char dir[512], prefix[80];
	snprintf(dir, sizeof(dir), "%s/%s", fx.root, FIXTURE_INSTANCE);
	snprintf(prefix, sizeof(prefix), "%s.", name);
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL)
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0 && strstr(e->d_name, ".data") != NULL;
	if (d != NULL)
		closedir(d);
	return n;
}

/* Each of the 4,096 bytes of the first 4 KiB (header, three section
 * headers, the zero padding after them) with one bit flipped (bit i % 8 of
 * byte i, so that every bit position is met): every file is refused with a
 * message naming it, and nothing is loaded. (Every bit of every byte
 * passes too, in 8 times the time: a reader's check costs about 9 ms, the
 * sizing check of the header.) */
static void test_metadata_bits(void **state)
{
	(void)state;
	char good[512], bad[512], err[SNAPSHOT_ERR_MAX];
	fixture_window(&fx, "win", SHMF_TYPE_BLOOM, 1000, 0.01, 3600, 3);
	fixture_rotate(&fx, "win");
	fixture_rotate(&fx, "win");
	file_path("win.snap", good, sizeof(good));
	file_path("flipped.snap", bad, sizeof(bad));
	assert_int_equal(registry_snapshot(&fx.reg, "win", good, NULL, err, sizeof(err)), 0);
	fixture_bloom(&fx, "live", 1000, 0.01);
	shmf_t *f = fixture_open("live", SHMF_RDWR);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	shmf_close(f);
	size_t len;
	unsigned char *orig = read_file(good, &len), *buf = malloc(len);
	assert_int_equal(((struct shmf_snap_header *)orig)->nsections, 3);
	unsigned refused = 0, by_region[3] = { 0 }; /* header, section headers, padding */
	for (size_t bit = 0; bit < 8 * SHMF_SNAP_PAYLOAD_OFF; bit += bit % 8 == 7 ? 1 : 9) {
		memcpy(buf, orig, len);
		buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		write_file(bad, buf, len);
		struct snap_file sf;
		err[0] = '\0';
		int rc = snapshot_open(&sf, bad, err, sizeof(err));
		if (rc == 0) {
			snapshot_close(&sf);
			fail_msg("byte %zu bit %zu flipped: accepted", bit / 8, bit % 8);
		}
		if (strstr(err, bad) == NULL)
			fail_msg("byte %zu bit %zu: the error does not name the file: '%s'", bit / 8, bit % 8, err);
		/* A swap of it is refused too: one byte in 64, the whole way. */
		if (bit / 8 % 64 == 0)
			assert_true(fixture_replace(&fx, "live", bad, REGISTRY_SWAP, err, sizeof(err)) < 0);
		refused++;
		by_region[bit / 8 < 256 ? 0 : bit / 8 < 256 + 3 * 64 ? 1 : 2]++;
	}
	printf("# %u of %u bytes 0-4095 with a bit flipped refused (header %u, section headers %u, padding %u)\n",
	       refused, SHMF_SNAP_PAYLOAD_OFF, by_region[0], by_region[1], by_region[2]);
	assert_int_equal(refused, SHMF_SNAP_PAYLOAD_OFF);
	/* Nothing loaded: the live filter as it was, no other data file. */
	f = fixture_open("live", SHMF_RDONLY);
	shmf_info_t now;
	assert_int_equal(shmf_info(f, &now), 0);
	shmf_close(f);
	assert_int_equal(now.generation, info.generation);
	assert_int_equal(data_files("live"), 1);
	/* The untouched file still loads. */
	assert_true(fixture_replace(&fx, "live", good, REGISTRY_SWAP, err, sizeof(err)) >= 0);
	free(buf);
	free(orig);
}

/* ---- Snapshot while 4 processes add ------------------------------------ */

#define ADDERS 4
struct board {
	_Atomic uint64_t progress[ADDERS]; /* adder i's adds [0, progress) have returned */
	_Atomic int stop;
};

static void adder(struct board *b, const char *name, unsigned id)
{
	shmf_t *f;
	if (shmf_open(FIXTURE_INSTANCE, name, SHMF_RDWR, &f) < 0)
		_exit(3);
	char key[32];
	for (uint64_t i = 0; !atomic_load(&b->stop); i++) {
		if (shmf_add(f, key, fixture_key(key, 20 + id, i)) < 0)
			_exit(4);
		atomic_store(&b->progress[id], i + 1);
	}
	shmf_close(f);
	_exit(0);
}

static void concurrent_type(int type, const char *name, const char *copy)
{
	char path[512], err[SNAPSHOT_ERR_MAX];
	fixture_filter(&fx, name, type, 2000000, 0.01);
	struct board *b = fixture_shared_map(sizeof(*b));
	pid_t pids[ADDERS];
	for (unsigned i = 0; i < ADDERS; i++)
		if ((pids[i] = fork()) == 0)
			adder(b, name, i);
	/* Let them get going, then note what has returned and snapshot. */
	while (atomic_load(&b->progress[ADDERS - 1]) < 20000)
		usleep(1000);
	uint64_t before[ADDERS];
	for (unsigned i = 0; i < ADDERS; i++)
		before[i] = atomic_load(&b->progress[i]);
	file_path(name, path, sizeof(path));
	assert_int_equal(registry_snapshot(&fx.reg, name, path, NULL, err, sizeof(err)), 0);
	uint64_t during[ADDERS];
	for (unsigned i = 0; i < ADDERS; i++)
		during[i] = atomic_load(&b->progress[i]);
	atomic_store(&b->stop, 1);
	for (unsigned i = 0; i < ADDERS; i++)
		fixture_reap(pids[i]);
	assert_true(fixture_replace(&fx, copy, path, REGISTRY_RESTORE, err, sizeof(err)) >= 0);
	shmf_t *c = fixture_open(copy, SHMF_RDONLY);
	for (unsigned i = 0; i < ADDERS; i++) {
		assert_int_equal(count_present(c, 20 + i, before[i]), before[i]);
		(void)during;
	}
	shmf_close(c);
	munmap(b, sizeof(*b));
}

static void test_concurrent(void **state)
{
	(void)state;
	concurrent_type(SHMF_TYPE_BLOOM, "cb", "cb-copy");
	concurrent_type(SHMF_TYPE_CUCKOO, "cc", "cc-copy");
}

/* ---- A writer killed at random points ---------------------------------- */

/* The size of the file in fx.files whose name begins with @p prefix (a
 * writer's temporary file: .NAME.tmp-PID-START-N), or 0. */
static uint64_t temporary_size(const char *prefix)
{
	DIR *d = opendir(fx.files);
	uint64_t size = 0;
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		struct stat st;
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && fstatat(dirfd(d), e->d_name, &st, 0) == 0)
			size = (uint64_t)st.st_size;
	}
	if (d != NULL)
		closedir(d);
	return size;
}

static void test_killed_writer(void **state)
{
	(void)state;
	char path[512], err[SNAPSHOT_ERR_MAX];
	fixture_bloom(&fx, "kw", 20000000, 0.01); /* 24 MB: tens of ms to write */
	shmf_t *f = fixture_open("kw", SHMF_RDWR);
	file_path("kw", path, sizeof(path));
	assert_int_equal(registry_snapshot(&fx.reg, "kw", path, NULL, err, sizeof(err)), 0);
	struct snap_file sf;
	assert_int_equal(snapshot_open(&sf, path, err, sizeof(err)), 0);
	uint64_t total = sf.hdr.file_bytes;
	snapshot_close(&sf);
	srand((unsigned)getpid());
	unsigned killed_mid = 0, completed = 0;
	for (int run = 0; run < 50; run++) {
		/* Each run adds a key, so a new snapshot holds run + 1 items and
		 * differs from the previous one. */
		char key[32];
		assert_int_equal(shmf_add(f, key, fixture_key(key, 30, (uint64_t)run)), 1);
		assert_int_equal(snapshot_open(&sf, path, err, sizeof(err)), 0);
		uint64_t prev = sf.sec[0].items;
		snapshot_close(&sf);
		pid_t p = fork();
		if (p == 0) {
			char e[SNAPSHOT_ERR_MAX];
			_exit(registry_snapshot(&fx.reg, "kw", path, NULL, e, sizeof(e)) == 0 ? 0 : 1);
		}
		/* Kill it once its temporary file has reached a random size
		 * (up to 110% of the whole: some runs end before the kill). */
		uint64_t target = (uint64_t)rand() % (total + total / 10);
		char prefix[64];
		snprintf(prefix, sizeof(prefix), ".kw.tmp-%ld-", (long)p);
		for (;;) {
			if (temporary_size(prefix) >= target)
				break;
			siginfo_t si = { 0 };
			if (waitid(P_PID, (id_t)p, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == p)
				break; /* finished first */
			usleep(200);
		}
		kill(p, SIGKILL);
		int st;
		waitpid(p, &st, 0);
		if (WIFSIGNALED(st))
			killed_mid++;
		else
			completed++;
		/* The destination is the previous or the new snapshot, whole. */
		assert_int_equal(snapshot_open(&sf, path, err, sizeof(err)), 0);
		assert_int_equal(snapshot_read_section(&sf, 0, NULL, err, sizeof(err)), 0);
		uint64_t now = (uint64_t)run + 1; /* keys added so far */
		if (sf.sec[0].items != prev && sf.sec[0].items != now)
			fail_msg("run %d: snapshot holds %llu items, want %llu (previous) or %llu (new)", run,
				 (unsigned long long)sf.sec[0].items, (unsigned long long)prev,
				 (unsigned long long)now);
		snapshot_close(&sf);
	}
	print_message("killed writer: %u runs killed mid-write, %u completed first\n", killed_mid, completed);
	assert_true(killed_mid >= 10);
	shmf_close(f);
}

/* ---- Swaps under load -------------------------------------------------- */

#define CHECKERS 4
#define COMMON   20000
struct swapboard {
	_Atomic int stop;
	_Atomic uint64_t final_gen;
	_Atomic uint64_t checks[CHECKERS];
	_Atomic uint64_t misses[CHECKERS];
	_Atomic uint64_t errors[CHECKERS];
	_Atomic int saw_final[CHECKERS]; /* 1: the first call after the last swap saw it */
	_Atomic int last_is_a;
};

static void checker(struct swapboard *b, unsigned id)
{
	shmf_t *f;
	if (shmf_open(FIXTURE_INSTANCE, "sw", SHMF_RDONLY, &f) < 0)
		_exit(3);
	char key[32];
	for (uint64_t i = 0; !atomic_load(&b->stop); i++) {
		int r = shmf_check(f, key, fixture_key(key, 40, (i * 7 + id) % COMMON));
		if (r < 0)
			atomic_fetch_add(&b->errors[id], 1);
		else if (r == 0)
			atomic_fetch_add(&b->misses[id], 1);
		atomic_fetch_add(&b->checks[id], 1);
	}
	/* The next call after the last swap: the last filter. */
	shmf_info_t info;
	int ok = shmf_info(f, &info) == 0 && info.generation == atomic_load(&b->final_gen);
	/* Its own keys are there. */
	unsigned fam = atomic_load(&b->last_is_a) ? 41 : 42;
	for (uint64_t i = 0; i < 1000; i++)
		ok &= shmf_check(f, key, fixture_key(key, fam, i)) == 1;
	atomic_store(&b->saw_final[id], ok);
	shmf_close(f);
	_exit(0);
}

static void build_file(const char *name, unsigned own, char *path, size_t len)
{
	char err[SNAPSHOT_ERR_MAX];
	fixture_bloom(&fx, name, 100000, 0.01);
	shmf_t *f = fixture_open(name, SHMF_RDWR);
	add_keys(f, 40, COMMON);
	add_keys(f, own, 1000);
	shmf_close(f);
	file_path(name, path, len);
	assert_int_equal(registry_snapshot(&fx.reg, name, path, NULL, err, sizeof(err)), 0);
	assert_int_equal(registry_drop(&fx.reg, name, err, sizeof(err)), 0);
}

static void test_swap_under_load(void **state)
{
	(void)state;
	char a[512], b_[512], err[SNAPSHOT_ERR_MAX];
	build_file("fa", 41, a, sizeof(a));
	build_file("fb", 42, b_, sizeof(b_));
	assert_true(fixture_replace(&fx, "sw", a, REGISTRY_RESTORE, err, sizeof(err)) >= 0);
	struct swapboard *b = fixture_shared_map(sizeof(*b));
	pid_t pids[CHECKERS];
	for (unsigned i = 0; i < CHECKERS; i++)
		if ((pids[i] = fork()) == 0)
			checker(b, i);
	for (int s = 0; s < 50; s++) {
		usleep(2000);
		int to_a = s % 2 == 1;
		assert_true(fixture_replace(&fx, "sw", to_a ? a : b_, REGISTRY_SWAP, err, sizeof(err)) >= 0);
		atomic_store(&b->last_is_a, to_a);
	}
	shmf_t *f = fixture_open("sw", SHMF_RDONLY);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	shmf_close(f);
	atomic_store(&b->final_gen, info.generation);
	atomic_store(&b->stop, 1);
	uint64_t checks = 0;
	for (unsigned i = 0; i < CHECKERS; i++) {
		fixture_reap(pids[i]);
		assert_int_equal(atomic_load(&b->misses[i]), 0);
		assert_int_equal(atomic_load(&b->errors[i]), 0);
		assert_int_equal(atomic_load(&b->saw_final[i]), 1);
		checks += atomic_load(&b->checks[i]);
	}
	print_message("swap under load: 50 swaps, %llu checks, no miss, no error\n", (unsigned long long)checks);
	/* The instance directory holds one data file for the filter: old
	 * generations were unlinked at once. */
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "test $(ls %s/%s | grep -c '^sw\\.') -eq 1", fx.root, FIXTURE_INSTANCE);
	assert_int_equal(system(cmd), 0);
	munmap(b, sizeof(*b));
}

/* ---- A shape an older sizing gave ------------------------------------ */

static const char *data_dir = "tests/data";

/* tests/data/cuckoo-sized-before-headroom.snap was written by shmctl build
 * before cuckoo sizing had its headroom (capacity 1000 at 1%: 264 buckets,
 * now 296), with keys legacy-0 to legacy-899. It restores in its own shape
 * with every key; a new filter of those parameters gets the new shape; and
 * the file's shape edited to neither is refused. */
static void test_older_sizing(void **state)
{
	(void)state;
	char path[512], err[SNAPSHOT_ERR_MAX], key[32];
	snprintf(path, sizeof(path), "%s/cuckoo-sized-before-headroom.snap", data_dir);
	if (fixture_replace(&fx, "legacy", path, REGISTRY_RESTORE, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	shmf_t *f = fixture_open("legacy", SHMF_RDWR);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.buckets, 264);
	assert_int_equal(info.bucket_size, 4); /* a version 1 file: buckets of 4 */
	assert_int_equal(info.capacity, 1000);
	assert_int_equal(info.items, 900);
	for (int i = 0; i < 900; i++) {
		int n = snprintf(key, sizeof(key), "legacy-%d", i);
		assert_int_equal(shmf_check(f, key, (size_t)n), 1);
	}
	shmf_close(f);

	fixture_filter(&fx, "fresh", SHMF_TYPE_CUCKOO, 1000, 0.01);
	f = fixture_open("fresh", SHMF_RDONLY);
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.buckets, 296);
	shmf_close(f);

	/* The file with a bucket count that no sizing gives (blocks to match,
	 * checksums resealed): refused, naming the parameters. */
	size_t len;
	uint8_t *buf = read_file(path, &len);
	struct shmf_snap_header *h = (struct shmf_snap_header *)buf;
	h->nbuckets = 272;
	h->nblocks = (sizeof(struct shmf_cuckoo_meta) + shmf_cuckoo_table_bytes(272, 16, 4)) / SHMF_BLOCK_BYTES;
	reseal(buf);
	char edited[512];
	file_path("edited.snap", edited, sizeof(edited));
	write_file(edited, buf, len);
	free(buf);
	struct snap_file sf;
	assert_int_equal(snapshot_open(&sf, edited, err, sizeof(err)), SHMF_E_FORMAT);
	if (strstr(err, "does not give the stored shape") == NULL)
		fail_msg("edited shape: %s", err);
}

/* tests/data/bloom-one-line-1e-6.snap was written by shmctl build of
 * snapshot version 4, before Bloom filters had several lines a key:
 * capacity 3000 at 1e-6 in one line a key (k 16, 226 blocks), keys
 * oneline-0 to oneline-2999. It restores in one line with every key, and
 * snapshots and restores again as such; a new filter of those parameters
 * gets two lines in less memory; the file with lines a key set in its
 * version 4 header, or a version 5 copy claiming two lines over the
 * one-line blocks, is refused. */
static void test_older_bloom_one_line(void **state)
{
	(void)state;
	char path[512], again[512], err[SNAPSHOT_ERR_MAX], key[32];
	snprintf(path, sizeof(path), "%s/bloom-one-line-1e-6.snap", data_dir);
	file_path("oneline-again.snap", again, sizeof(again));
	for (int round = 0; round < 2; round++) {
		const char *name = round == 0 ? "oneline" : "oneline2";
		if (fixture_replace(&fx, name, round == 0 ? path : again, REGISTRY_RESTORE, err, sizeof(err)) < 0)
			fail_msg("%s", err);
		shmf_t *f = fixture_open(name, SHMF_RDWR);
		shmf_info_t info;
		assert_int_equal(shmf_info(f, &info), 0);
		assert_int_equal(info.lines, 1);
		assert_int_equal(info.k, 16);
		assert_int_equal(info.bits, 226 * 512);
		assert_int_equal(info.items, 3000);
		for (int i = 0; i < 3000; i++) {
			int n = snprintf(key, sizeof(key), "oneline-%d", i);
			assert_int_equal(shmf_check(f, key, (size_t)n), 1);
		}
		unsigned fp = 0;
		for (int i = 0; i < 100000; i++) {
			int n = snprintf(key, sizeof(key), "absent-%d", i);
			fp += (unsigned)shmf_check(f, key, (size_t)n);
		}
		assert_true(fp <= 3); /* 0.1 expected */
		shmf_close(f);
		/* Snapshotted now (version 5): it stays one line a key. */
		assert_int_equal(registry_snapshot(&fx.reg, name, again, NULL, err, sizeof(err)), 0);
	}

	fixture_bloom(&fx, "twolines", 3000, 1e-6);
	shmf_t *f = fixture_open("twolines", SHMF_RDONLY);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	assert_int_equal(info.lines, 2);
	assert_true(info.bits < 226 * 512);
	shmf_close(f);

	/* Lines a key in a version 4 header: refused. */
	char edited[512];
	file_path("edited.snap", edited, sizeof(edited));
	size_t len;
	uint8_t *buf = read_file(path, &len);
	struct shmf_snap_header *h = (struct shmf_snap_header *)buf;
	h->bucket_size = 2;
	reseal(buf);
	write_file(edited, buf, len);
	free(buf);
	struct snap_file sf;
	assert_int_equal(snapshot_open(&sf, edited, err, sizeof(err)), SHMF_E_FORMAT);
	if (strstr(err, "version 5's lines a key") == NULL)
		fail_msg("lines in a version 4 header: %s", err);
	/* A version 5 file claiming two lines over the one-line blocks. */
	buf = read_file(again, &len);
	h = (struct shmf_snap_header *)buf;
	assert_int_equal(h->version, SHMF_SNAP_VERSION); /* 5 or later: lines a key */
	assert_int_equal(h->bucket_size, 1);
	h->bucket_size = 2;
	reseal(buf);
	write_file(edited, buf, len);
	free(buf);
	assert_int_equal(snapshot_open(&sf, edited, err, sizeof(err)), SHMF_E_FORMAT);
	if (strstr(err, "does not give the stored shape") == NULL)
		fail_msg("two lines over one line's blocks: %s", err);
}

/* A windowed snapshot whose window is longer than the longest (ten
 * years), or whose generation began at a time whose window number does
 * not fit 32 bits, is refused by name and changes nothing; the longest
 * window itself restores. */
static void test_window_limits(void **state)
{
	(void)state;
	char path[512], bad[512], err[SNAPSHOT_ERR_MAX];
	fixture_bloom(&fx, "live", 10000, 0.01);
	shmf_t *f = fixture_open("live", SHMF_RDWR);
	add_keys(f, 5, 5000);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	shmf_close(f);
	struct filter_spec spec;
	spec_defaults(&spec, "wsrc");
	spec.capacity = 1000;
	spec.window_secs = 60;
	spec.window_gens = 2;
	assert_true(registry_create(&fx.reg, &spec, err, sizeof(err)) >= 0);
	file_path("wgood", path, sizeof(path));
	file_path("wbad", bad, sizeof(bad));
	assert_int_equal(registry_snapshot(&fx.reg, "wsrc", path, NULL, err, sizeof(err)), 0);
	size_t len;
	unsigned char *orig = read_file(path, &len), *buf = malloc(len);
	const size_t sec0 = sizeof(struct shmf_snap_header);

	/* The window's length at byte 88, checksum recomputed. */
	uint64_t secs = SHMF_WINDOW_SECS_MAX + 1;
	memcpy(buf, orig, len);
	memcpy(buf + 88, &secs, 8);
	reseal(buf);
	write_file(bad, buf, len);
	assert_refused(bad, info.generation, "window of ten years and a second");
	struct snap_file sf;
	assert_true(snapshot_open(&sf, bad, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "longer than the longest window"));
	secs = UINT64_MAX;
	memcpy(buf + 88, &secs, 8);
	reseal(buf);
	write_file(bad, buf, len);
	assert_refused(bad, info.generation, "window of 2^64 - 1 s");

	/* Section 0 began where window 2^32 begins: refused; the window
	 * before it, 2^32 - 1, is the largest there is. */
	uint64_t created = (UINT64_C(1) << 32) * 60;
	memcpy(buf, orig, len);
	memcpy(buf + sec0 + 8, &created, 8);
	uint64_t x = XXH3_64bits(buf + sec0, offsetof(struct shmf_snap_section, xxh3));
	memcpy(buf + sec0 + offsetof(struct shmf_snap_section, xxh3), &x, 8);
	write_file(bad, buf, len);
	assert_refused(bad, info.generation, "section of window 2^32");
	assert_true(snapshot_open(&sf, bad, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "does not fit 32 bits"));

	/* A generation that begins a day from now (a snapshot of a host whose
	 * clock is that far ahead): refused, nothing made; within the skew
	 * tolerance (15 s of a 60 s window), restored. */
	int ws = registry_find(&fx.reg, "wsrc");
	assert_true(ws >= 0);
	uint64_t was = fx.reg.ctl.slots[ws].live_created[0], now = (uint64_t)time(NULL);
	fx.reg.ctl.slots[ws].live_created[0] = now + 86400;
	assert_int_equal(registry_snapshot(&fx.reg, "wsrc", bad, NULL, err, sizeof(err)), 0);
	err[0] = '\0';
	assert_int_equal(fixture_replace(&fx, "wfuture", bad, REGISTRY_RESTORE, err, sizeof(err)), SHMF_E_FORMAT);
	assert_non_null(strstr(err, "after this host's clock"));
	assert_int_equal(registry_find(&fx.reg, "wfuture"), SHMF_E_NOTFOUND);
	fx.reg.ctl.slots[ws].live_created[0] = now + 10;
	assert_int_equal(registry_snapshot(&fx.reg, "wsrc", bad, NULL, err, sizeof(err)), 0);
	assert_true(fixture_replace(&fx, "wsoon", bad, REGISTRY_RESTORE, err, sizeof(err)) >= 0);
	fx.reg.ctl.slots[ws].live_created[0] = was;

	/* A filter of the longest window snapshots and restores, and its
	 * slot checks. */
	spec_defaults(&spec, "wlongest");
	spec.capacity = 1000;
	spec.window_secs = SHMF_WINDOW_SECS_MAX;
	spec.window_gens = 16;
	assert_true(registry_create(&fx.reg, &spec, err, sizeof(err)) >= 0);
	assert_int_equal(registry_snapshot(&fx.reg, "wlongest", path, NULL, err, sizeof(err)), 0);
	assert_true(fixture_replace(&fx, "wlong", path, REGISTRY_RESTORE, err, sizeof(err)) >= 0);
	shmf_t *w = fixture_open("wlong", SHMF_RDONLY);
	shmf_info_t wi;
	assert_int_equal(shmf_info(w, &wi), 0);
	assert_int_equal(wi.window_secs, SHMF_WINDOW_SECS_MAX);
	shmf_close(w);
	assert_live_unchanged(info.generation);
	free(buf);
	free(orig);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		fixture_unit_test(test_roundtrip, fx),
		fixture_unit_test(test_damaged, fx),
		fixture_unit_test(test_concurrent, fx),
		fixture_unit_test(test_killed_writer, fx),
		fixture_unit_test(test_swap_under_load, fx),
		fixture_unit_test(test_older_sizing, fx),
		fixture_unit_test(test_older_bloom_one_line, fx),
		fixture_unit_test(test_metadata_bits, fx),
		fixture_unit_test(test_bucket_sizes, fx),
		fixture_unit_test(test_window_limits, fx),
	};
	if (argc > 2)
		data_dir = argv[2];
	static const char *const names[] = { "roundtrip",       "damaged",      "concurrent",           "killed_writer",
					     "swap_under_load", "older_sizing", "older_bloom_one_line", "metadata_bits",
					     "bucket_sizes",    "window_limits" };
	return fixture_run(argc, argv, tests, names);
}
