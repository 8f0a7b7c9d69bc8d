/*
 * fuzz-snapshot.c - the snapshot loader (common/snapshot.c: snapshot_open,
 * snapshot_read_section, snapshot_copy_section) on any bytes.
 *
 * Each input is loaded twice: as it is, which exercises the checksum
 * checks, and with every checksum recomputed over the mutated bytes
 * (header, section headers, chunk table, trailer, where the sizes allow),
 * so that mutations reach the checks of meaning behind the checksums. The
 * loader itself is not changed for fuzzing.
 *
 * What must hold: no crash or out-of-bounds access; a refusal names the
 * file ("snapshot PATH: ..."); an accepted file has 1 to 16 sections, its
 * size is what its header says, and its payloads read back whole.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include "tests/fuzz/fuzz.h"
#include "common/snapshot.h"

static int in_fd = -1, out_fd = -1;
static char in_path[64];

static void load(const uint8_t *data, size_t size)
{
	char err[SNAPSHOT_ERR_MAX] = "";
	struct snap_file sf;
	if (ftruncate(in_fd, 0) < 0 || (size && pwrite(in_fd, data, size, 0) != (ssize_t)size))
		fuzz_fail("cannot write the input file");
	int rc = snapshot_open(&sf, in_path, err, sizeof(err));
	if (getenv("SHMF_FUZZ_VERBOSE") != NULL)
		fprintf(stderr, "%s\n", rc ? err : "accepted");
	if (rc < 0) {
		if (strncmp(err, "snapshot ", 9) != 0 || strstr(err, in_path) == NULL)
			fuzz_fail("refusal does not name the file: '%s'", err);
		return;
	}
	if (sf.hdr.nsections < 1 || sf.hdr.nsections > SHMF_SNAP_SECTIONS || sf.hdr.file_bytes != size ||
	    sf.hdr.section_bytes != sf.hdr.nblocks * 64)
		fuzz_fail("accepted a file whose header does not describe it");
	void *buf = malloc(sf.hdr.section_bytes);
	if (buf == NULL)
		fuzz_fail("section of %llu bytes in a file of %zu", (unsigned long long)sf.hdr.section_bytes, size);
	for (unsigned i = 0; i < sf.hdr.nsections; i++) {
		err[0] = '\0';
		int r1 = snapshot_read_section(&sf, i, buf, err, sizeof(err));
		if (r1 < 0 && strstr(err, "checksum mismatch") == NULL)
			fuzz_fail("section %u refused for another reason than its checksum: '%s'", i, err);
		int r2 = snapshot_copy_section(&sf, i, out_fd, 8192, err, sizeof(err));
		if ((r1 < 0) != (r2 < 0))
			fuzz_fail("read and copy of section %u disagree", i);
		if (r1 == 0 &&
		    memcmp(buf, data + SHMF_SNAP_PAYLOAD_OFF + i * sf.hdr.section_bytes, sf.hdr.section_bytes))
			fuzz_fail("section %u read back differs from the file", i);
	}
	free(buf);
	if (snapshot_read_section(&sf, sf.hdr.nsections, NULL, err, sizeof(err)) == 0)
		fuzz_fail("read a section past the last");
	snapshot_close(&sf);
}

/* Recompute every checksum the sizes in the (mutated) header allow. */
static void reseal(uint8_t *d, size_t size)
{
	struct shmf_snap_header h;
	if (size < sizeof(h))
		return;
	memcpy(&h, d, sizeof(h));
	h.header_xxh3 = XXH3_64bits(&h, offsetof(struct shmf_snap_header, header_xxh3));
	memcpy(d, &h, sizeof(h));
	unsigned n = h.nsections < SHMF_SNAP_SECTIONS ? h.nsections : SHMF_SNAP_SECTIONS;
	for (unsigned i = 0; i < n && sizeof(h) + (i + 1) * 64 <= size; i++) {
		struct shmf_snap_section s;
		memcpy(&s, d + sizeof(h) + i * 64, sizeof(s));
		s.xxh3 = XXH3_64bits(&s, offsetof(struct shmf_snap_section, xxh3));
		memcpy(d + sizeof(h) + i * 64, &s, sizeof(s));
	}
	if (n == 0 || h.chunk_bytes < 64 || h.section_bytes > size)
		return;
	uint64_t nchunks = (h.section_bytes + h.chunk_bytes - 1) / h.chunk_bytes;
	uint64_t table = SHMF_SNAP_PAYLOAD_OFF + n * h.section_bytes;
	if (nchunks > size || table > size || table + n * nchunks * 8 + SHMF_SNAP_TRAILER != size)
		return;
	for (unsigned i = 0; i < n; i++)
		for (uint64_t c = 0; c < nchunks; c++) {
			uint64_t at = c * h.chunk_bytes;
			uint64_t len = h.section_bytes - at < h.chunk_bytes ? h.section_bytes - at : h.chunk_bytes;
			uint64_t x = XXH3_64bits(d + SHMF_SNAP_PAYLOAD_OFF + i * h.section_bytes + at, len);
			memcpy(d + table + (i * nchunks + c) * 8, &x, 8);
		}
	/* The trailer covers header, section headers and table, in that order. */
	XXH3_state_t *st = XXH3_createState();
	XXH3_64bits_reset(st);
	XXH3_64bits_update(st, d, sizeof(h) + n * 64);
	XXH3_64bits_update(st, d + table, n * nchunks * 8);
	uint64_t sum = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	memcpy(d + size - 16, &sum, 8);
	memcpy(d + size - 8, SHMF_SNAP_END_MAGIC, 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (in_fd < 0) {
		in_fd = memfd_create("fuzz-snapshot-in", MFD_CLOEXEC);
		out_fd = memfd_create("fuzz-snapshot-out", MFD_CLOEXEC);
		if (in_fd < 0 || out_fd < 0)
			fuzz_fail("memfd_create");
		snprintf(in_path, sizeof(in_path), "/proc/self/fd/%d", in_fd);
	}
	if (size > (1u << 22))
		return 0;
	load(data, size);
	if (size >= sizeof(struct shmf_snap_header)) {
		uint8_t *copy = malloc(size);
		memcpy(copy, data, size);
		reseal(copy, size);
		load(copy, size);
		free(copy);
	}
	if (ftruncate(out_fd, 0) < 0)
		fuzz_fail("ftruncate");
	return 0;
}
