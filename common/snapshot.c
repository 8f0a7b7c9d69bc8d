/*
 * snapshot.c - snapshot files: the crash-safe writer and the validating
 * reader (snapshot.h, snapshot-format.h, docs/snapshot-format.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "errmsg.h"
#include "geometry.h"
#include "segment-format.h"
#include "rundir.h"
#include "snapshot.h"

/* ---- File operations -------------------------------------------------- */

/* Every file operation and allocation of this file goes through these
 * wrappers. In test builds (SHMF_TEST_HOOKS) each consults the fault plan
 * of snapshot.h first; in other builds they are the plain calls. */
#ifdef SHMF_TEST_HOOKS
struct snapshot_fault snapshot_fault;

/* Count a call of kind @p io. @return 0 to go ahead, the errno to fail
 * with, or -1 for a short write (the next counted call then fails). */
static int fault(int io)
{
	struct snapshot_fault *f = &snapshot_fault;
	if (f->fail_at == 0 || !(f->kinds & (1u << io)) || ++f->calls != f->fail_at)
		return 0;
	if (f->partial && (io == SNAP_IO_WRITE || io == SNAP_IO_FILL)) {
		f->partial = 0;
		f->fail_at++;
		return -1;
	}
	f->injected++;
	return f->err;
}
#else
static inline int fault(int io)
{
	(void)io;
	return 0;
}
#endif

/* 1 (errno set) if the test plan fails this call. */
static int failed(int io)
{
	int e = fault(io);
	if (e > 0) {
		errno = e;
		return 1;
	}
	return 0;
}

static int io_open(int dfd, const char *path, int flags, unsigned mode)
{
	return failed(SNAP_IO_OPEN) ? -1 : openat(dfd, path, flags, mode);
}

static int io_fchmod(int fd, unsigned mode)
{
	return failed(SNAP_IO_CHMOD) ? -1 : fchmod(fd, mode);
}

static ssize_t io_pwrite(int fd, const void *buf, size_t n, uint64_t off, int io)
{
	int e = fault(io);
	if (e > 0) {
		errno = e;
		return -1;
	}
	if (e < 0 && n > 1)
		n /= 2;
	return pwrite(fd, buf, n, (off_t)off);
}

static ssize_t io_pread(int fd, void *buf, size_t n, uint64_t off)
{
	return failed(SNAP_IO_READ) ? -1 : pread(fd, buf, n, (off_t)off);
}

static int io_fsync(int fd, int io)
{
	return failed(io) ? -1 : fsync(fd);
}

/* The descriptor is closed whatever the outcome, as close(2) does. */
static int io_close(int fd)
{
	int rc = close(fd);
	return failed(SNAP_IO_CLOSE) ? -1 : rc;
}

static int io_rename(int dfd, const char *from, const char *to)
{
	return failed(SNAP_IO_RENAME) ? -1 : renameat(dfd, from, dfd, to);
}

static void *io_malloc(size_t n)
{
	return failed(SNAP_IO_ALLOC) ? NULL : malloc(n);
}

static int io_memalign(void **p, size_t align, size_t n)
{
	return failed(SNAP_IO_ALLOC) ? ENOMEM : posix_memalign(p, align, n);
}

static XXH3_state_t *io_xxh3_state(void)
{
	return failed(SNAP_IO_ALLOC) ? NULL : XXH3_createState();
}

uint64_t snapshot_file_bytes(unsigned nsections, uint64_t section_bytes, uint32_t chunk_bytes)
{
	uint64_t nchunks = (section_bytes + chunk_bytes - 1) / chunk_bytes;
	return SHMF_SNAP_PAYLOAD_OFF + nsections * section_bytes + nsections * nchunks * 8 + SHMF_SNAP_TRAILER;
}

/* ---- Writing ----------------------------------------------------------- */

/* A file being written: a sticky error checked once at the end (the first
 * failing step keeps its name), and the running metadata checksum. */
struct writer {
	int fd;
	int err;          /* first -errno, 0 while all is well */
	const char *step; /* what failed */
	uint64_t off;
};

static void put(struct writer *w, const void *buf, size_t n)
{
	const char *p = buf;
	while (w->err == 0 && n > 0) {
		ssize_t k = io_pwrite(w->fd, p, n, w->off, SNAP_IO_WRITE);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			w->err = k < 0 ? -errno : -EIO;
			w->step = "write";
			return;
		}
		p += k;
		n -= (size_t)k;
		w->off += (uint64_t)k;
	}
}

static void seal_header(struct shmf_snap_header *h)
{
	h->header_xxh3 = XXH3_64bits(h, offsetof(struct shmf_snap_header, header_xxh3));
}

static void seal_section(struct shmf_snap_section *s)
{
	s->xxh3 = XXH3_64bits(s, offsetof(struct shmf_snap_section, xxh3));
}

/* Split @p path into its directory (opened) and its last component. */
static int open_parent(const char *path, char *base, size_t baselen, char *err, size_t errlen)
{
	char tmp[4096];
	if (strlen(path) >= sizeof(tmp) || path[0] == '\0')
		return errmsg(err, errlen, -ENAMETOOLONG, "snapshot path '%s' is empty or too long", path);
	strcpy(tmp, path);
	const char *b = basename(tmp);
	if (strlen(b) >= baselen || !strcmp(b, "/") || !strcmp(b, ".") || !strcmp(b, ".."))
		return errmsg(err, errlen, -EINVAL, "snapshot path '%s' does not name a file", path);
	strcpy(base, b);
	strcpy(tmp, path);
	const char *d = dirname(tmp);
	int fd = io_open(AT_FDCWD, d, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0)
		return errmsg(err, errlen, -errno, "snapshot %s: cannot open directory %s: %s", path, d, strerror(errno));
	return fd;
}

int snapshot_write(const char *path, struct snap_source *src, unsigned mode, char *err, size_t errlen)
{
	struct shmf_snap_header *h = &src->hdr;
	char base[256], tmpname[300];
	unsigned n = src->nsections;

	if (n == 0 || n > SHMF_SNAP_SECTIONS)
		return errmsg(err, errlen, -EINVAL, "snapshot %s: %u sections (1 to %u)", path, n, SHMF_SNAP_SECTIONS);
	memcpy(h->magic, SHMF_SNAP_MAGIC, sizeof(h->magic));
	h->version = SHMF_SNAP_VERSION;
	h->header_size = sizeof(*h);
	h->nsections = n;
	h->chunk_bytes = SHMF_SNAP_CHUNK;
	h->section_bytes = h->nblocks * SHMF_BLOCK_BYTES;
	h->file_bytes = snapshot_file_bytes(n, h->section_bytes, h->chunk_bytes);
	memset(h->reserved, 0, sizeof(h->reserved));
	seal_header(h);
	for (unsigned i = 0; i < n; i++) {
		memset(src->sec[i].reserved, 0, sizeof(src->sec[i].reserved));
		seal_section(&src->sec[i]);
	}
	uint64_t nchunks = (h->section_bytes + h->chunk_bytes - 1) / h->chunk_bytes;
	uint64_t *table = io_malloc(n * nchunks * 8);
	void *buf = NULL;
	if (table == NULL || io_memalign(&buf, 4096, h->chunk_bytes) != 0) {
		free(table);
		return errmsg(err, errlen, -ENOMEM, "snapshot %s: out of memory", path);
	}

	int dfd = open_parent(path, base, sizeof(base), err, errlen);
	if (dfd < 0) {
		free(table);
		free(buf);
		return dfd;
	}
	snprintf(tmpname, sizeof(tmpname), ".%s.tmp-%ld", base, (long)getpid());
	struct writer w = { .fd = io_open(dfd, tmpname, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode & 0666) };
	if (w.fd < 0) {
		int e = -errno;
		close(dfd);
		free(table);
		free(buf);
		return errmsg(err, errlen, e, "snapshot %s: cannot create %s: %s", path, tmpname, strerror(-e));
	}
	if (io_fchmod(w.fd, mode & 0666) < 0) {
		w.err = -errno;
		w.step = "chmod";
	}
	/* Header and section headers, zeros up to the payload. */
	put(&w, h, sizeof(*h));
	put(&w, src->sec, n * sizeof(src->sec[0]));
	memset(buf, 0, SHMF_SNAP_PAYLOAD_OFF - w.off);
	put(&w, buf, SHMF_SNAP_PAYLOAD_OFF - w.off);
	/* Payloads, a chunk at a time: copy, checksum the copy, write it. */
	for (unsigned i = 0; i < n && w.err == 0; i++) {
		const char *p = src->payload[i];
		for (uint64_t c = 0; c < nchunks && w.err == 0; c++) {
			uint64_t at = c * h->chunk_bytes;
			size_t len = (size_t)(h->section_bytes - at < h->chunk_bytes ? h->section_bytes - at : h->chunk_bytes);
			memcpy(buf, p + at, len);
			table[i * nchunks + c] = XXH3_64bits(buf, len);
			put(&w, buf, len);
		}
	}
	put(&w, table, n * nchunks * 8);
	/* Trailer: the checksum of all the metadata. */
	XXH3_state_t *st = io_xxh3_state();
	uint64_t trailer[2] = { 0, 0 };
	if (st == NULL) {
		if (w.err == 0) {
			w.err = -ENOMEM;
			w.step = "checksum";
		}
	} else {
		XXH3_64bits_reset(st);
		XXH3_64bits_update(st, h, sizeof(*h));
		XXH3_64bits_update(st, src->sec, n * sizeof(src->sec[0]));
		XXH3_64bits_update(st, table, n * nchunks * 8);
		trailer[0] = XXH3_64bits_digest(st);
		XXH3_freeState(st);
	}
	memcpy(&trailer[1], SHMF_SNAP_END_MAGIC, 8);
	put(&w, trailer, sizeof(trailer));
	if (w.err == 0 && w.off != h->file_bytes) {
		w.err = -EIO;
		w.step = "size check";
	}
	if (w.err == 0 && io_fsync(w.fd, SNAP_IO_FSYNC) < 0) {
		w.err = -errno;
		w.step = "fsync";
	}
	if (io_close(w.fd) < 0 && w.err == 0) {
		w.err = -errno;
		w.step = "close";
	}
	if (w.err == 0 && io_rename(dfd, tmpname, base) < 0) {
		w.err = -errno;
		w.step = "rename";
	}
	int renamed = w.err == 0;
	if (w.err != 0) {
		unlinkat(dfd, tmpname, 0);
	} else if (io_fsync(dfd, SNAP_IO_DIRSYNC) < 0) {
		/* The file is complete under its name; only the directory entry
		 * may not be durable yet. Report it: the caller asked for both. */
		w.err = -errno;
		w.step = "fsync of the directory";
	}
	close(dfd);
	free(table);
	free(buf);
	if (w.err != 0)
		return errmsg(err, errlen, w.err, "snapshot %s: %s failed: %s (%s)", path, w.step, strerror(-w.err),
			    renamed ? "the new file is complete under its name, but the rename may not survive a crash"
				    : "the previous file, if any, is unchanged");
	return 0;
}

/* ---- Reading ----------------------------------------------------------- */

static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
	char *p = buf;
	while (n > 0) {
		ssize_t k = io_pread(fd, p, n, off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EIO; /* shorter than fstat said: changed under us */
		p += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

/* The header says a filter this build can hold, in exactly the shape the
 * sizing gives for its parameters (or gave: shmf_geometry_sized()). */
static int header_check(const struct snap_file *sf, uint64_t file_size, char *err, size_t errlen)
{
	const struct shmf_snap_header *h = &sf->hdr;
	const char *p = sf->path;
	double fpr;
	memcpy(&fpr, &h->fpr_bits, sizeof(fpr));

	if (h->header_size != sizeof(*h))
		return errmsg(err, errlen, SHMF_E_FORMAT, "snapshot %s: header size %u at byte 12, expected %zu", p,
			    h->header_size, sizeof(*h));
	if (memchr(h->name, '\0', sizeof(h->name)) == NULL || shmf_name_check(h->name) < 0)
		return errmsg(err, errlen, SHMF_E_FORMAT, "snapshot %s: filter name at byte 120 is not a valid name", p);
	for (size_t i = 0; i < sizeof(h->reserved); i++)
		if (h->reserved[i] != 0)
			return errmsg(err, errlen, SHMF_E_FORMAT, "snapshot %s: reserved byte %zu is not zero", p,
				    offsetof(struct shmf_snap_header, reserved) + i);
	if (h->type != SHMF_TYPE_BLOOM && h->type != SHMF_TYPE_CUCKOO)
		return errmsg(err, errlen, SHMF_E_FORMAT, "snapshot %s: filter type %u at byte 16 is unknown", p, h->type);
	if (h->nsections == 0 || h->nsections > SHMF_SNAP_SECTIONS)
		return errmsg(err, errlen, SHMF_E_FORMAT, "snapshot %s: %u sections at byte 60 (1 to %u)", p, h->nsections,
			    SHMF_SNAP_SECTIONS);
	if ((h->window_secs == 0) != (h->window_gens == 0) || h->window_gens > SHMF_SNAP_SECTIONS ||
	    (h->window_gens != 0 && h->nsections > h->window_gens) || (h->window_gens == 0 && h->nsections != 1))
		return errmsg(err, errlen, SHMF_E_FORMAT,
			    "snapshot %s: window of %" PRIu64 " s and %u generations (bytes 88, 96) does not fit %u sections", p,
			    h->window_secs, h->window_gens, h->nsections);
	if (h->chunk_bytes < 4096 || h->chunk_bytes > (1u << 30) || h->chunk_bytes % SHMF_BLOCK_BYTES != 0)
		return errmsg(err, errlen, SHMF_E_FORMAT, "snapshot %s: chunk size %u at byte 100 is out of range", p,
			    h->chunk_bytes);
	if (shmf_geometry_check(h->type, h->k, h->nblocks, h->nbuckets) < 0)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			    "snapshot %s: shape (k %u, %" PRIu64 " blocks, %" PRIu64 " buckets at bytes 20, 40, 48) is inconsistent",
			    p, h->k, h->nblocks, h->nbuckets);
	struct shmf_geometry g;
	snapshot_geometry(h, &g);
	int rc = shmf_geometry_sized(&g, h->capacity, fpr);
	if (rc < 0)
		return errmsg(err, errlen, rc == SHMF_E_TOOBIG ? SHMF_E_TOOBIG : SHMF_E_FORMAT,
			    "snapshot %s: capacity %" PRIu64 " at error rate %g (bytes 24, 32) does not give the stored shape", p,
			    h->capacity, fpr);
	if (h->section_bytes != h->nblocks * SHMF_BLOCK_BYTES)
		return errmsg(err, errlen, SHMF_E_FORMAT, "snapshot %s: section size %" PRIu64 " at byte 104, expected %" PRIu64,
			    p, h->section_bytes, h->nblocks * SHMF_BLOCK_BYTES);
	uint64_t want = snapshot_file_bytes(h->nsections, h->section_bytes, h->chunk_bytes);
	if (h->file_bytes != want)
		return errmsg(err, errlen, SHMF_E_FORMAT, "snapshot %s: file size field %" PRIu64 " at byte 112, expected %" PRIu64,
			    p, h->file_bytes, want);
	if (file_size != want)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			    "snapshot %s: file is %" PRIu64 " bytes, its header says %" PRIu64 " (%s)", p, file_size, want,
			    file_size < want ? "truncated" : "extra bytes at the end");
	return 0;
}

int snapshot_open(struct snap_file *sf, const char *path, char *err, size_t errlen)
{
	struct stat st;
	int rc;

	memset(sf, 0, sizeof(*sf));
	snprintf(sf->path, sizeof(sf->path), "%s", path);
	sf->fd = io_open(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
	if (sf->fd < 0)
		return errmsg(err, errlen, -errno, "snapshot %s: cannot open: %s", path, strerror(errno));
	if (fstat(sf->fd, &st) < 0) {
		rc = errmsg(err, errlen, -errno, "snapshot %s: cannot stat: %s", path, strerror(errno));
		goto bad;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = errmsg(err, errlen, SHMF_E_FORMAT, "snapshot %s: not a regular file", path);
		goto bad;
	}
	uint64_t size = (uint64_t)st.st_size;
	if (size < SHMF_SNAP_PAYLOAD_OFF + SHMF_SNAP_TRAILER) {
		rc = errmsg(err, errlen, SHMF_E_FORMAT, "snapshot %s: file is %" PRIu64 " bytes, too short for a snapshot (truncated?)",
			  path, size);
		goto bad;
	}
	if ((rc = read_at(sf->fd, &sf->hdr, sizeof(sf->hdr), 0)) < 0) {
		rc = errmsg(err, errlen, rc, "snapshot %s: cannot read header: %s", path, strerror(-rc));
		goto bad;
	}
	const struct shmf_snap_header *h = &sf->hdr;
	if (memcmp(h->magic, SHMF_SNAP_MAGIC, sizeof(h->magic)) != 0) {
		rc = errmsg(err, errlen, SHMF_E_FORMAT, "snapshot %s: bytes 0-7 are not \"%s\": not a snapshot file", path,
			  SHMF_SNAP_MAGIC);
		goto bad;
	}
	if (XXH3_64bits(h, offsetof(struct shmf_snap_header, header_xxh3)) != h->header_xxh3) {
		rc = errmsg(err, errlen, SHMF_E_FORMAT, "snapshot %s: header checksum mismatch (bytes 0-255 are damaged)", path);
		goto bad;
	}
	if (h->version != SHMF_SNAP_VERSION) {
		rc = errmsg(err, errlen, SHMF_E_VERSION, "snapshot %s: format version %u, this build reads version %u", path,
			  h->version, SHMF_SNAP_VERSION);
		goto bad;
	}
	if ((rc = header_check(sf, size, err, errlen)) < 0)
		goto bad;
	unsigned n = h->nsections;
	if ((rc = read_at(sf->fd, sf->sec, n * sizeof(sf->sec[0]), sizeof(*h))) < 0) {
		rc = errmsg(err, errlen, rc, "snapshot %s: cannot read section headers: %s", path, strerror(-rc));
		goto bad;
	}
	for (unsigned i = 0; i < n; i++) {
		const struct shmf_snap_section *s = &sf->sec[i];
		uint64_t at = sizeof(*h) + i * sizeof(*s);
		if (XXH3_64bits(s, offsetof(struct shmf_snap_section, xxh3)) != s->xxh3) {
			rc = errmsg(err, errlen, SHMF_E_FORMAT,
				  "snapshot %s: section %u header checksum mismatch (bytes %" PRIu64 "-%" PRIu64 " are damaged)", path,
				  i, at, at + sizeof(*s) - 1);
			goto bad;
		}
		if (s->generation == 0 || s->reserved[0] | s->reserved[1] | s->reserved[2]) {
			rc = errmsg(err, errlen, SHMF_E_FORMAT, "snapshot %s: section %u header (byte %" PRIu64 ") has generation 0 or reserved bits set",
				  path, i, at);
			goto bad;
		}
	}
	sf->nchunks = (h->section_bytes + h->chunk_bytes - 1) / h->chunk_bytes;
	uint64_t table_bytes = n * sf->nchunks * 8, table_off = SHMF_SNAP_PAYLOAD_OFF + n * h->section_bytes;
	uint64_t trailer[2];
	sf->chunks = io_malloc(table_bytes);
	if (sf->chunks == NULL) {
		rc = errmsg(err, errlen, -ENOMEM, "snapshot %s: out of memory for %" PRIu64 " checksums", path, n * sf->nchunks);
		goto bad;
	}
	if ((rc = read_at(sf->fd, sf->chunks, table_bytes, table_off)) < 0 ||
	    (rc = read_at(sf->fd, trailer, sizeof(trailer), table_off + table_bytes)) < 0) {
		rc = errmsg(err, errlen, rc, "snapshot %s: cannot read the chunk table: %s", path, strerror(-rc));
		goto bad;
	}
	if (memcmp(&trailer[1], SHMF_SNAP_END_MAGIC, 8) != 0) {
		rc = errmsg(err, errlen, SHMF_E_FORMAT, "snapshot %s: end marker at byte %" PRIu64 " is missing (truncated or damaged)",
			  path, table_off + table_bytes + 8);
		goto bad;
	}
	XXH3_state_t *xs = io_xxh3_state();
	if (xs == NULL) {
		rc = errmsg(err, errlen, -ENOMEM, "snapshot %s: out of memory", path);
		goto bad;
	}
	XXH3_64bits_reset(xs);
	XXH3_64bits_update(xs, h, sizeof(*h));
	XXH3_64bits_update(xs, sf->sec, n * sizeof(sf->sec[0]));
	XXH3_64bits_update(xs, sf->chunks, table_bytes);
	uint64_t sum = XXH3_64bits_digest(xs);
	XXH3_freeState(xs);
	if (sum != trailer[0]) {
		rc = errmsg(err, errlen, SHMF_E_FORMAT,
			  "snapshot %s: trailer checksum mismatch (the chunk table at bytes %" PRIu64 "-%" PRIu64 " or the trailer is damaged)",
			  path, table_off, table_off + table_bytes + 7);
		goto bad;
	}
	return 0;
bad:
	snapshot_close(sf);
	return rc;
}

/* Read section @p i chunk by chunk, checking each: into @p dst, or
 * written to @p out_fd at @p out_off, or (both unset) only checked. */
static int read_section(struct snap_file *sf, unsigned i, void *dst, int out_fd, uint64_t out_off, char *err,
			size_t errlen)
{
	const struct shmf_snap_header *h = &sf->hdr;
	void *buf = NULL;
	int rc = 0;

	if (i >= h->nsections)
		return errmsg(err, errlen, -EINVAL, "snapshot %s: no section %u", sf->path, i);
	if (dst == NULL && io_memalign(&buf, 4096, h->chunk_bytes) != 0)
		return errmsg(err, errlen, -ENOMEM, "snapshot %s: out of memory", sf->path);
	uint64_t base = SHMF_SNAP_PAYLOAD_OFF + i * h->section_bytes;
	for (uint64_t c = 0; c < sf->nchunks; c++) {
		uint64_t at = c * h->chunk_bytes;
		size_t len = (size_t)(h->section_bytes - at < h->chunk_bytes ? h->section_bytes - at : h->chunk_bytes);
		char *p = dst != NULL ? (char *)dst + at : buf;
		if ((rc = read_at(sf->fd, p, len, base + at)) < 0) {
			rc = errmsg(err, errlen, rc, "snapshot %s: cannot read bytes %" PRIu64 "-%" PRIu64 ": %s", sf->path, base + at,
				  base + at + len - 1, strerror(-rc));
			break;
		}
		if (XXH3_64bits(p, len) != sf->chunks[i * sf->nchunks + c]) {
			rc = errmsg(err, errlen, SHMF_E_FORMAT,
				  "snapshot %s: checksum mismatch in section %u, bytes %" PRIu64 "-%" PRIu64 " (payload damaged)",
				  sf->path, i, base + at, base + at + len - 1);
			break;
		}
		if (out_fd >= 0) {
			const char *q = p;
			uint64_t o = out_off + at;
			size_t left = len;
			while (left > 0) {
				ssize_t k = io_pwrite(out_fd, q, left, o, SNAP_IO_FILL);
				if (k < 0 && errno == EINTR)
					continue;
				if (k <= 0) {
					rc = k < 0 ? -errno : -EIO;
					break;
				}
				q += k;
				o += (uint64_t)k;
				left -= (size_t)k;
			}
			if (rc < 0) {
				rc = errmsg(err, errlen, rc, "snapshot %s: cannot write the new generation: %s", sf->path,
					  strerror(-rc));
				break;
			}
		}
	}
	free(buf);
	return rc;
}

int snapshot_read_section(struct snap_file *sf, unsigned i, void *dst, char *err, size_t errlen)
{
	return read_section(sf, i, dst, -1, 0, err, errlen);
}

int snapshot_copy_section(struct snap_file *sf, unsigned i, int out_fd, uint64_t out_off, char *err, size_t errlen)
{
	return read_section(sf, i, NULL, out_fd, out_off, err, errlen);
}

void snapshot_close(struct snap_file *sf)
{
	if (sf->fd >= 0)
		close(sf->fd);
	sf->fd = -1;
	free(sf->chunks);
	sf->chunks = NULL;
}
