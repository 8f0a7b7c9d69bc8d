/*
 * fuzz-segment.c - the segment validators and the client on top of them
 * (libclient/segment.c, client.c), on a control file and data files built
 * from any bytes: a client must refuse them with an error or use them
 * within bounds, never crash, never read or write outside what it mapped.
 *
 * Input: byte 0 flags, then the control header (64 bytes), slot 0 (512),
 * a data header (176) and the payload of the data files (the rest, from
 * the payload offset); what is missing is zero. The flags repair what a
 * random mutation would almost never get right, so that mutations reach
 * the checks behind it:
 *   0x01 control header constants (magic, version, layout, sizes)
 *   0x02 data header constants (magic, version, layout, sizes, offsets),
 *        and a cuckoo relocation lock timeout of 1 or 2 ms (Bloom: 0): the
 *        payload's lock word is any bytes, and a held one costs every
 *        locked call its timeout (without 0x02, a cuckoo header's valid
 *        timeout is made 1 or 2 ms too)
 *   0x04 data header agrees with the slot (type, k, bucket size, blocks,
 *        buckets, name, and each file's generation)
 *   0x08 the slot's data_bytes agrees with its nblocks
 *   0x10 each data file is data_bytes long (else payload offset + payload)
 *   0x20 open read-write (else read-only)
 *   0x40 the payload's first 4096 bytes are the item-counter page (the
 *        shared counters any adder can write), the rest the blocks
 * A data file is written for each live generation the slot names (at most
 * 16, each at most 64 MiB, sparse). The slot's sequence is kept even: an
 * odd one only makes every open wait out shmf_slot_read()'s retries.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "libclient/cuckoo.h"
#include "libclient/geometry.h"
#include "libclient/rundir.h"
#include "libclient/segment.h"
#include <shmf.h>

#define INSTANCE  "fz"
#define FILE_MAX  (UINT64_C(64) << 20)
#define HDR_BYTES sizeof(struct shmf_data_header)

static char dir[128];
static int dir_fd = -1;

static void clear_dir(void);

static void remove_dir(void)
{
	clear_dir();
	char inst[160];
	snprintf(inst, sizeof(inst), "%s/" INSTANCE, dir);
	rmdir(inst);
	rmdir(dir);
}

/* Directories of harness processes that are gone (libFuzzer may end
 * without running atexit handlers). */
static void remove_stale(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		long pid;
		char cmd[300];
		if (sscanf(e->d_name, "shmf-fuzz-%ld", &pid) != 1 || pid <= 0 ||
		    (kill((pid_t)pid, 0) < 0 && errno != ESRCH) || kill((pid_t)pid, 0) == 0)
			continue;
		snprintf(cmd, sizeof(cmd), "rm -rf '/dev/shm/%s'", e->d_name);
		if (system(cmd) != 0)
			fuzz_fail("cannot remove /dev/shm/%s", e->d_name);
	}
	if (d != NULL)
		closedir(d);
}

static void clear_dir(void)
{
	DIR *d = fdopendir(dup(dir_fd));
	struct dirent *e;
	if (d == NULL)
		fuzz_fail("opendir");
	rewinddir(d);
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			unlinkat(dir_fd, e->d_name, 0);
	closedir(d);
}

static void write_file(const char *name, uint64_t size, const void *a, size_t alen, uint64_t boff, const void *b,
		       size_t blen)
{
	int fd = openat(dir_fd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (fd < 0)
		return; /* the same generation named twice */
	if (ftruncate(fd, (off_t)size) < 0)
		fuzz_fail("ftruncate");
	if (alen > size)
		alen = (size_t)size;
	if (alen && pwrite(fd, a, alen, 0) != (ssize_t)alen)
		fuzz_fail("pwrite");
	if (boff < size) {
		if (blen > size - boff)
			blen = (size_t)(size - boff);
		if (blen && pwrite(fd, b, blen, (off_t)boff) != (ssize_t)blen)
			fuzz_fail("pwrite");
	}
	close(fd);
}

/* A result of a call on a handle: a count within @p max, or an error code. */
static void result(int r, int max, const char *call)
{
	if (r > max || (r < 0 && !(r >= SHMF_E_FIRST && r <= SHMF_E_LAST) && !(r >= -4095)))
		fuzz_fail("%s returned %d", call, r);
}

static void use(shmf_t *f, const uint8_t *keys, size_t klen, int rdwr)
{
	shmf_key_t k[8];
	uint8_t out[8];
	for (unsigned i = 0; i < 8; i++)
		k[i] = (shmf_key_t){ keys + (klen ? i % klen : 0), klen ? (klen - i % klen) : 0 };
	for (unsigned i = 0; i < 8; i++) {
		result(shmf_check(f, k[i].ptr, k[i].len), 1, "check");
		result(shmf_count(f, k[i].ptr, k[i].len), 16 * 16, "count");
		if (rdwr) {
			result(shmf_add(f, k[i].ptr, k[i].len), 1, "add");
			result(shmf_add_unique(f, k[i].ptr, k[i].len), 1, "add_unique");
			result(shmf_add_capped(f, k[i].ptr, k[i].len, 3), 16 * 16, "add_capped");
			result(shmf_del(f, k[i].ptr, k[i].len), 1, "del");
		} else if (shmf_add(f, k[i].ptr, k[i].len) != SHMF_E_READONLY) {
			fuzz_fail("add through a read-only handle did not say SHMF_E_READONLY");
		}
	}
	result(shmf_check_many(f, k, 8, out), 8, "check_many");
	if (rdwr)
		result(shmf_add_many(f, k, 8, out), 8, "add_many");
	shmf_info_t info;
	result(shmf_info(f, &info), 0, "info");
	/* The bucket size sets the width of every word the calls above loaded
	 * and CASed: an opened cuckoo filter has one that is a word. */
	if (info.type == SHMF_TYPE_CUCKOO &&
	    !((info.bucket_size == 1 || info.bucket_size == 2 || info.bucket_size == 4 || info.bucket_size == 8) &&
	      (info.fingerprint_bits == 8 || info.fingerprint_bits == 16 || info.fingerprint_bits == 32) &&
	      info.bucket_size * info.fingerprint_bits <= 64 && (info.bucket_size == 4 || info.buckets % 2 == 0)))
		fuzz_fail("opened a cuckoo filter of buckets of %u %u-bit fingerprints (%llu buckets)",
			  info.bucket_size, info.fingerprint_bits, (unsigned long long)info.buckets);
}

/* The runtime directory and its instance directory, made at the first
 * input and removed at exit. */
static void make_dir_once(void)
{
	if (dir_fd >= 0)
		return;
	remove_stale();
	snprintf(dir, sizeof(dir), "/dev/shm/shmf-fuzz-%ld", (long)getpid());
	if (mkdir(dir, 0700) < 0)
		fuzz_fail("mkdir %s", dir);
	setenv("SHMF_RUNTIME_DIR", dir, 1);
	char inst[160];
	snprintf(inst, sizeof(inst), "%s/" INSTANCE, dir);
	if (mkdir(inst, 0700) < 0 || (dir_fd = open(inst, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		fuzz_fail("instance directory");
	atexit(remove_dir);
}

/* Repair what @p flags say (the top comment) in the control header @p ch,
 * slot @p slot and data header @p dh; keep the slot's sequence even. */
static void repair_flagged(uint8_t flags, struct shmf_ctl_header *ch, struct shmf_slot *slot,
			   struct shmf_data_header *dh)
{
	if (flags & 0x01) {
		ch->magic = SHMF_CTL_MAGIC;
		ch->version = SHMF_FORMAT_VERSION;
		ch->header_size = sizeof(*ch);
		ch->layout = shmf_layout_fingerprint();
		ch->nslots = SHMF_SLOTS;
		ch->slot_size = sizeof(struct shmf_slot);
		ch->slots_offset = sizeof(*ch);
	}
	atomic_store(&slot->seq, atomic_load(&slot->seq) & ~UINT64_C(1));
	if (flags & 0x08)
		slot->data_bytes = SHMF_DATA_BLOCKS_OFF + slot->nblocks * SHMF_BLOCK_BYTES;
	if (flags & 0x02) {
		dh->magic = SHMF_DATA_MAGIC;
		dh->version = SHMF_FORMAT_VERSION;
		dh->header_size = sizeof(*dh);
		dh->layout = shmf_layout_fingerprint();
		dh->blocks_offset = SHMF_DATA_BLOCKS_OFF;
		dh->counters_offset = SHMF_DATA_COUNTERS_OFF;
	}
	if (flags & 0x04) {
		dh->type = slot->type;
		dh->k = slot->k;
		dh->nblocks = slot->nblocks;
		dh->nbuckets = slot->nbuckets;
		dh->bucket_size = slot->bucket_size; /* which the client must still check: a word of its width */
		memcpy(dh->name, slot->name, sizeof(dh->name));
	}
	/* The lock timeout is the slot's: a valid one is valid at any length,
	 * but a held lock word (the payload is any bytes) costs every locked
	 * call all of it: one of 0 (the default, 1 s) or more than 2 ms made
	 * an input of a few locked calls a libFuzzer timeout. With flag 0x02
	 * it is made valid; out-of-range values stay, for the check. */
	if (slot->type == SHMF_TYPE_CUCKOO &&
	    ((flags & 0x02) || slot->lock_timeout_ms <= SHMF_CUCKOO_LOCK_TIMEOUT_MAX) &&
	    (slot->lock_timeout_ms == 0 || slot->lock_timeout_ms > 2))
		slot->lock_timeout_ms = 1 + slot->lock_timeout_ms % 2;
}

/*
 * Write the control file (header @p ch, slot @p slot) and a data file of
 * filter @p name for each live generation the slot names: header @p dh,
 * then @p payload (@p plen bytes), and @p counters (@p clen bytes, when
 * any) over its item-counter page.
 */
static void write_files(uint8_t flags, const struct shmf_ctl_header *ch, const struct shmf_slot *slot,
			struct shmf_data_header *dh, const char *name, const uint8_t *payload, size_t plen,
			const uint8_t *counters, size_t clen)
{
	clear_dir();
	write_file(SHMF_CTL_FILE, SHMF_CTL_BYTES, ch, sizeof(*ch), sizeof(*ch), slot, sizeof(*slot));
	unsigned nlive = slot->nlive < SHMF_RING_MAX ? slot->nlive : SHMF_RING_MAX;
	for (unsigned i = 0; i < (nlive ? nlive : 1); i++) {
		uint64_t gen = i == 0 ? atomic_load(&slot->generation) : slot->live[i];
		char fname[128];
		if (shmf_data_filename(name, gen, fname, sizeof(fname)) < 0)
			continue;
		if (flags & 0x04)
			dh->generation = gen;
		uint64_t fsize = (flags & 0x10) ? slot->data_bytes : SHMF_DATA_BLOCKS_OFF + plen;
		if (fsize > FILE_MAX)
			fsize = SHMF_DATA_BLOCKS_OFF + plen;
		write_file(fname, fsize, dh, sizeof(*dh), SHMF_DATA_BLOCKS_OFF, payload, plen);
		if (clen > 0 && fsize >= SHMF_DATA_BLOCKS_OFF) {
			int fd = openat(dir_fd, fname, O_WRONLY | O_CLOEXEC);
			if (fd < 0 || pwrite(fd, counters, clen, SHMF_DATA_COUNTERS_OFF) != (ssize_t)clen)
				fuzz_fail("counters");
			close(fd);
		}
	}
}

/* The input's slot is 512 bytes, the slot of format 9 before its ring
 * grew from 16 entries to SHMF_RING_MAX: its fields before the ring, 16
 * generations, 16 creation times, then the fields after the ring up to
 * the fleet's sequences (format 10; clients never read them). Read into a
 * slot of today's layout, so that the corpus keeps its meaning. */
#define IN_SLOT_BYTES 512u
#define IN_RING       16u
static void slot_from_input(const uint8_t *in, struct shmf_slot *s)
{
	size_t ring = offsetof(struct shmf_slot, live), tail = ring + 2 * IN_RING * sizeof(uint64_t);
	size_t tail_bytes = offsetof(struct shmf_slot, fleet_sent_seq) - offsetof(struct shmf_slot, flags);
	memset(s, 0, sizeof(*s));
	memcpy(s, in, ring);
	memcpy(s->live, in + ring, IN_RING * sizeof(uint64_t));
	memcpy(s->live_created, in + ring + IN_RING * sizeof(uint64_t), IN_RING * sizeof(uint64_t));
	memcpy(&s->flags, in + tail, tail_bytes);
	_Static_assert(offsetof(struct shmf_slot, live) + 2 * IN_RING * sizeof(uint64_t) +
				       (offsetof(struct shmf_slot, fleet_sent_seq) -
					offsetof(struct shmf_slot, flags)) <=
			       IN_SLOT_BYTES,
		       "the input's slot holds the fields");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	make_dir_once();
	uint8_t flags = size ? data[0] : 0;
	struct shmf_ctl_header ch;
	struct shmf_slot slot;
	struct shmf_data_header dh;
	uint8_t fixed[1 + 64 + IN_SLOT_BYTES + HDR_BYTES] = { 0 };
	memcpy(fixed, data, size < sizeof(fixed) ? size : sizeof(fixed));
	memcpy(&ch, fixed + 1, sizeof(ch));
	slot_from_input(fixed + 1 + 64, &slot);
	memcpy(&dh, fixed + 1 + 64 + IN_SLOT_BYTES, sizeof(dh));
	const uint8_t *payload = data + sizeof(fixed);
	size_t plen = size > sizeof(fixed) ? size - sizeof(fixed) : 0;
	const uint8_t *counters = NULL;
	size_t clen = 0;
	if (flags & 0x40) {
		counters = payload;
		clen = plen < 4096 ? plen : 4096;
		payload += clen;
		plen -= clen;
	}
	repair_flagged(flags, &ch, &slot, &dh);

	/* The validators on their own: they must not read past what they get. */
	int ctl_ok = shmf_ctl_header_check(&ch, SHMF_CTL_BYTES) == 0;
	struct shmf_slot copy = slot;
	copy.name[SHMF_NAME_MAX] = '\0';
	int slot_ok = shmf_slot_check(&copy) == 0;
	if (slot_ok && (copy.nlive < 1 || copy.nlive > SHMF_RING_MAX))
		fuzz_fail("slot accepted with %u live generations", copy.nlive);
	(void)shmf_data_header_check(&dh, &copy, slot.data_bytes);

	/* The files, and a client on them. */
	char name[SHMF_NAME_MAX + 1];
	memcpy(name, slot.name, sizeof(name));
	name[SHMF_NAME_MAX] = '\0';
	if (shmf_name_check(name) < 0)
		snprintf(name, sizeof(name), "x");
	write_files(flags, &ch, &slot, &dh, name, payload, plen, counters, clen);
	int rdwr = (flags & 0x20) != 0;
	shmf_t *f = NULL;
	int r = shmf_open(INSTANCE, name, rdwr ? SHMF_RDWR : SHMF_RDONLY, &f);
	if (getenv("SHMF_FUZZ_VERBOSE") != NULL)
		fprintf(stderr, "open %s (%s): %s\n", name, rdwr ? "read-write" : "read-only",
			r ? shmf_strerror(r) : "ok");
	if (r == 0) {
		if (!ctl_ok || !slot_ok)
			fuzz_fail("opened a filter whose control header or slot fails validation");
		use(f, payload, plen < 24 ? plen : 24, rdwr);
		shmf_close(f);
	} else if (f != NULL || r >= 0 || !(r >= SHMF_E_FIRST && r <= SHMF_E_LAST ? 1 : r >= -4095)) {
		fuzz_fail("open returned %d", r);
	}
	return 0;
}
