/*
 * snapshot.c - snapshot files: the crash-safe writer and the validating
 * reader (snapshot.h, snapshot-format.h, docs/snapshot-format.md).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "common/errmsg.h"
#include "libclient/fuse.h"
#include "libclient/geometry.h"
#include "libclient/segment-format.h"
#include "libclient/rundir.h"
#include "common/snapshot.h"

_Static_assert(SHMF_SNAP_SECTIONS == SHMF_RING_MAX, "a snapshot holds every generation a slot publishes");
_Static_assert(sizeof(struct shmf_snap_fleet) == 544, "the fleet block is 544 bytes");
_Static_assert(SHMF_SNAP_FLEET_PEERS == SHMF_FLEET_PEERS, "a fleet block holds a slot's senders");

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

int snapshot_layout(const struct shmf_snap_header *h, struct snap_layout *l, struct shmf_geometry *g)
{
	double fpr;
	memcpy(&fpr, &h->fpr_bits, sizeof(fpr));
	memset(l, 0, sizeof(*l));
	if (h->nsections == 0 || h->nsections > SHMF_SNAP_SECTIONS || h->chunk_bytes == 0)
		return SHMF_E_FORMAT;
	uint64_t at = SHMF_SNAP_PAYLOAD_OFF, chunks = 0;
	for (unsigned i = 0; i < h->nsections; i++) {
		struct shmf_geometry gi;
		snapshot_geometry(h, &gi);
		if (h->flags & SHMF_SNAP_F_LAYERED) {
			/* Section i is layer nsections - 1 - i, sized by its place
			 * (with the first layer's bucket size). */
			struct shmf_layer lay;
			int rc = shmf_geometry_layer((int)h->type, h->capacity, fpr, h->max_kicks, gi.bucket_size,
						     h->expansion, h->nsections - 1 - i, &lay);
			if (rc < 0)
				return rc == SHMF_E_TOOBIG ? SHMF_E_TOOBIG : SHMF_E_FORMAT;
			gi = lay.g;
		}
		if (g != NULL)
			g[i] = gi;
		l->bytes[i] = gi.nblocks * SHMF_BLOCK_BYTES;
		l->off[i] = at;
		l->nchunks[i] = (l->bytes[i] + h->chunk_bytes - 1) / h->chunk_bytes;
		l->chunk0[i] = chunks;
		/* At most 16 sections of at most 64 TiB: no overflow. */
		at += l->bytes[i];
		chunks += l->nchunks[i];
	}
	l->table_off = at;
	l->table_entries = chunks;
	l->fleet_off = at + chunks * 8;
	l->file_bytes = l->fleet_off + (h->flags & SHMF_SNAP_F_FLEET ? sizeof(struct shmf_snap_fleet) : 0) +
			SHMF_SNAP_TRAILER;
	return 0;
}

/* The trailer's checksum: XXH3-64 of the header, the @p n section headers
 * and the chunk table. @return 0, or -ENOMEM (no checksum state). */
static int meta_checksum(const struct shmf_snap_header *h, const struct shmf_snap_section *sec, unsigned n,
			 const uint64_t *table, uint64_t table_bytes, uint64_t *sum)
{
	XXH3_state_t *st = io_xxh3_state();
	if (st == NULL)
		return -ENOMEM;
	XXH3_64bits_reset(st);
	XXH3_64bits_update(st, h, sizeof(*h));
	XXH3_64bits_update(st, sec, n * sizeof(sec[0]));
	XXH3_64bits_update(st, table, table_bytes);
	*sum = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	return 0;
}

/* The start time of process @p pid (field 22 of /proc/PID/stat, clock
 * ticks since boot), or 0 if it does not run. With the pid it names a
 * process for good: a pid used again has another start time. */
static uint64_t process_start(long pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
	for (int field = 2; p != NULL && field < 22; field++)
		p = strchr(p + 1, ' ');
	return p != NULL ? strtoull(p + 1, NULL, 10) : 0;
}

static uint64_t self_start(void)
{
	static _Atomic uint64_t start;
	uint64_t s = atomic_load_explicit(&start, memory_order_relaxed);
	if (s == 0) {
		s = process_start((long)getpid());
		atomic_store_explicit(&start, s, memory_order_relaxed);
	}
	return s;
}

/* 1 if process @p pid is gone, or (@p start not 0) is another process
 * than the one that started at @p start. /proc may hide a live process of
 * another user (hidepid, a systemd unit's ProtectProc=): then kill()
 * tells, and a process it sees is taken as the writer. */
static int writer_gone(long pid, uint64_t start)
{
	uint64_t now = process_start(pid);
	if (now != 0)
		return start != 0 && now != start;
	return kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/* 1 if @p name is a temporary snapshot file whose writer is gone. */
static int stale_temporary(const char *name)
{
	const char *t = name[0] == '.' ? strstr(name, ".tmp-") : NULL;
	if (t == NULL)
		return 0;
	char *end;
	long pid = strtol(t + 5, &end, 10);
	if (end == t + 5 || pid <= 0)
		return 0;
	if (*end == '\0') /* .NAME.tmp-PID: written before the start time was in the name */
		return writer_gone(pid, 0);
	if (*end != '-')
		return 0;
	uint64_t start = strtoull(end + 1, &end, 10);
	if (*end != '-' || start == 0)
		return 0;
	for (end++; *end >= '0' && *end <= '9'; end++)
		;
	return *end == '\0' && writer_gone(pid, start);
}

int snapshot_remove_stale(int dfd, void (*removed)(void *arg, const char *name), void *arg)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN)
			continue;
		if (!stale_temporary(e->d_name) || unlinkat(dfd, e->d_name, 0) < 0)
			continue;
		n++;
		if (removed != NULL)
			removed(arg, e->d_name);
	}
	closedir(d);
	return n;
}

/* ---- Writing ----------------------------------------------------------- */

/* A file being written: a temporary file next to the target, renamed over
 * it at the end; a sticky error checked once at the end (the first
 * failing step keeps its name). */
struct writer {
	int dfd;          /* the target's directory */
	int fd;           /* the temporary file */
	int err;          /* first -errno, 0 while all is well */
	const char *step; /* what failed */
	uint64_t off;
	char base[256]; /* the target's name in dfd */
	char tmpname[300];
	struct snap_layout lay;
	uint64_t *table; /* lay.table_entries payload checksums */
	void *buf;       /* one chunk */
	const atomic_int *cancel;
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

/* Record a failed step unless an earlier one failed already. */
static void fail_step(struct writer *w, int err, const char *step)
{
	if (w->err == 0) {
		w->err = err;
		w->step = step;
	}
}

static void writer_free(struct writer *w)
{
	free(w->table);
	free(w->buf);
}

void snapshot_seal(struct snap_source *src)
{
	struct shmf_snap_header *h = &src->hdr;
	memcpy(h->magic, SHMF_SNAP_MAGIC, sizeof(h->magic));
	h->version = SHMF_SNAP_VERSION;
	h->header_size = sizeof(*h);
	h->nsections = src->nsections;
	h->chunk_bytes = SHMF_SNAP_CHUNK;
	h->section_bytes = h->nblocks * SHMF_BLOCK_BYTES;
	if (!(h->flags & SHMF_SNAP_F_LAYERED))
		h->expansion = 0;
	struct snap_layout l;
	h->file_bytes = snapshot_layout(h, &l, NULL) == 0
				? l.file_bytes
				: snapshot_file_bytes(src->nsections, h->section_bytes, h->chunk_bytes);
	memset(h->reserved, 0, sizeof(h->reserved));
	h->header_xxh3 = XXH3_64bits(h, offsetof(struct shmf_snap_header, header_xxh3));
	src->fleet.reserved = 0;
	src->fleet.xxh3 = XXH3_64bits(&src->fleet, offsetof(struct shmf_snap_fleet, xxh3));
	for (unsigned i = 0; i < src->nsections; i++) {
		struct shmf_snap_section *s = &src->sec[i];
		s->layer = (h->flags & SHMF_SNAP_F_LAYERED) ? src->nsections - 1 - i : 0;
		s->reserved0 = 0;
		memset(s->reserved, 0, sizeof(s->reserved));
		s->xxh3 = XXH3_64bits(s, offsetof(struct shmf_snap_section, xxh3));
	}
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
		return errmsg(err, errlen, -errno, "snapshot %s: cannot open directory %s: %s", path, d,
			      strerror(errno));
	return fd;
}

/* What may be replaced: nothing, or a regular file that holds a snapshot
 * (with @p force: any regular file). Never a device, FIFO, socket,
 * directory or link: a rename over /dev/null would make it a regular
 * file. @return 0 or an error naming the path and what it is. */
static int target_check(int dfd, const char *base, const char *path, int force, char *err, size_t errlen)
{
	struct stat st;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0
				       : errmsg(err, errlen, -errno, "snapshot %s: cannot stat the target: %s", path,
						strerror(errno));
	if (!S_ISREG(st.st_mode))
		return errmsg(err, errlen, -EEXIST,
			      "snapshot %s: the target is %s, not a snapshot file; not replacing it", path,
			      errmsg_file_kind(st.st_mode));
	if (force)
		return 0;
	char magic[sizeof(((struct shmf_snap_header *)0)->magic)] = { 0 };
	int fd = openat(dfd, base, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n = fd >= 0 ? pread(fd, magic, sizeof(magic), 0) : -1;
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (n < 0)
		return errmsg(err, errlen, -e,
			      "snapshot %s: cannot read the existing file to see whether it is a snapshot: %s", path,
			      strerror(e));
	if ((size_t)n != sizeof(magic) || memcmp(magic, SHMF_SNAP_MAGIC, sizeof(magic)) != 0)
		return errmsg(err, errlen, -EEXIST,
			      "snapshot %s: the file exists and is not a snapshot (it does not begin with \"%s\"); not "
			      "replacing it without --force (SHMF.SNAPSHOT ... FORCE)",
			      path, SHMF_SNAP_MAGIC);
	return 0;
}

/* The buffers, the directory and the temporary file (of @p mode) for
 * writing @p src's file to @p path: the directory checked by the caller's
 * dir_check, the target by target_check(), stale temporaries removed. @return 0, or an error with nothing
 * left open or allocated. */
static int writer_open(struct writer *w, const char *path, const struct snap_source *src, unsigned mode, char *err,
		       size_t errlen)
{
	const struct shmf_snap_header *h = &src->hdr;
	*w = (struct writer){ .dfd = -1, .fd = -1, .cancel = src->cancel };
	if (snapshot_layout(h, &w->lay, NULL) < 0)
		return errmsg(err, errlen, -EINVAL, "snapshot %s: the filter's layers cannot be sized", path);
	w->table = io_malloc(w->lay.table_entries * 8);
	if (w->table == NULL || io_memalign(&w->buf, 4096, h->chunk_bytes) != 0) {
		writer_free(w);
		return errmsg(err, errlen, -ENOMEM, "snapshot %s: out of memory", path);
	}
	w->dfd = open_parent(path, w->base, sizeof(w->base), err, errlen);
	if (w->dfd < 0) {
		writer_free(w);
		return w->dfd;
	}
	int rc = src->dir_check != NULL ? src->dir_check(src->dir_arg, w->dfd, path, err, errlen) : 0;
	if (rc == 0)
		rc = target_check(w->dfd, w->base, path, src->force, err, errlen);
	if (rc < 0) {
		close(w->dfd);
		writer_free(w);
		return rc;
	}
	/* Writers killed mid-write (this one's earlier lives included) left
	 * their temporary files: they are of no use to anyone. */
	snapshot_remove_stale(w->dfd, NULL, NULL);
	/* The pid and start time say whose file it is, for good; the count
	 * keeps the threads of one process apart. */
	static _Atomic unsigned seq;
	snprintf(w->tmpname, sizeof(w->tmpname), ".%s.tmp-%ld-%" PRIu64 "-%u", w->base, (long)getpid(), self_start(),
		 atomic_fetch_add(&seq, 1));
	w->fd = io_open(w->dfd, w->tmpname, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode & 0666);
	if (w->fd < 0) {
		int e = -errno;
		close(w->dfd);
		writer_free(w);
		return errmsg(err, errlen, e, "snapshot %s: cannot create %s: %s", path, w->tmpname, strerror(-e));
	}
	if (io_fchmod(w->fd, mode & 0666) < 0)
		fail_step(w, -errno, "chmod");
	return 0;
}

/* The payloads, a chunk at a time: copy, checksum the copy, write it. */
static void put_payloads(struct writer *w, const struct snap_source *src)
{
	const struct shmf_snap_header *h = &src->hdr;
	for (unsigned i = 0; i < src->nsections && w->err == 0; i++) {
		const char *p = src->payload[i];
		uint64_t bytes = w->lay.bytes[i];
		for (uint64_t c = 0; c < w->lay.nchunks[i] && w->err == 0; c++) {
			uint64_t at = c * h->chunk_bytes;
			size_t len = (size_t)(bytes - at < h->chunk_bytes ? bytes - at : h->chunk_bytes);
			if (w->cancel != NULL && atomic_load(w->cancel))
				fail_step(w, -ECANCELED, "cancelled (shmd is shutting down)");
			if (w->err != 0)
				break;
			memcpy(w->buf, p + at, len);
			w->table[w->lay.chunk0[i] + c] = XXH3_64bits(w->buf, len);
			put(w, w->buf, len);
		}
	}
}

/* Everything the file holds, in order (snapshot-format.h). */
static void put_file(struct writer *w, const struct snap_source *src)
{
	const struct shmf_snap_header *h = &src->hdr;
	unsigned n = src->nsections;
	uint64_t table_bytes = w->lay.table_entries * 8;
	/* Header and section headers, zeros up to the payload. */
	put(w, h, sizeof(*h));
	put(w, src->sec, n * sizeof(src->sec[0]));
	memset(w->buf, 0, SHMF_SNAP_PAYLOAD_OFF - w->off);
	put(w, w->buf, SHMF_SNAP_PAYLOAD_OFF - w->off);
	put_payloads(w, src);
	put(w, w->table, table_bytes);
	if (h->flags & SHMF_SNAP_F_FLEET)
		put(w, &src->fleet, sizeof(src->fleet));
	/* Trailer: the checksum of all the metadata. */
	uint64_t trailer[2] = { 0, 0 };
	if (meta_checksum(h, src->sec, n, w->table, table_bytes, &trailer[0]) < 0)
		fail_step(w, -ENOMEM, "checksum");
	memcpy(&trailer[1], SHMF_SNAP_END_MAGIC, 8);
	put(w, trailer, sizeof(trailer));
	if (w->err == 0 && w->off != h->file_bytes)
		fail_step(w, -EIO, "size check");
}

/* Make the temporary file durable and rename it over the target; on any
 * failure remove it. Frees what writer_open() took. @return 0 or the
 * first error, with the step named in @p err. */
static int writer_commit(struct writer *w, const char *path, char *err, size_t errlen)
{
	if (w->err == 0 && io_fsync(w->fd, SNAP_IO_FSYNC) < 0)
		fail_step(w, -errno, "fsync");
	if (io_close(w->fd) < 0)
		fail_step(w, -errno, "close");
	if (w->err == 0 && io_rename(w->dfd, w->tmpname, w->base) < 0)
		fail_step(w, -errno, "rename");
	int renamed = w->err == 0;
	if (w->err != 0)
		unlinkat(w->dfd, w->tmpname, 0);
	else if (io_fsync(w->dfd, SNAP_IO_DIRSYNC) < 0)
		/* The file is complete under its name; only the directory entry
		 * may not be durable yet. Report it: the caller asked for both. */
		fail_step(w, -errno, "fsync of the directory");
	close(w->dfd);
	writer_free(w);
	if (w->err != 0)
		return errmsg(err, errlen, w->err, "snapshot %s: %s failed: %s (%s)", path, w->step, strerror(-w->err),
			      renamed ? "the new file is complete under its name, but the rename may not survive a crash"
				      : "the previous file, if any, is unchanged");
	return 0;
}

int snapshot_write(const char *path, struct snap_source *src, unsigned mode, char *err, size_t errlen)
{
	struct writer w;
	unsigned n = src->nsections;
	if (n == 0 || n > SHMF_SNAP_SECTIONS)
		return errmsg(err, errlen, -EINVAL, "snapshot %s: %u sections (1 to %u)", path, n, SHMF_SNAP_SECTIONS);
	snapshot_seal(src);
	int rc = writer_open(&w, path, src, mode, err, errlen);
	if (rc < 0)
		return rc;
	put_file(&w, src);
	return writer_commit(&w, path, err, errlen);
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

/* The header's own bytes: its size, the name, the reserved bytes, and
 * the flags and expansion each version may set. */
static int header_bytes_check(const struct shmf_snap_header *h, const char *p, char *err, size_t errlen)
{
	if (h->header_size != sizeof(*h))
		return errmsg(err, errlen, SHMF_E_FORMAT, "%s: header size %u at byte 12, expected %zu", p,
			      h->header_size, sizeof(*h));
	if (memchr(h->name, '\0', sizeof(h->name)) == NULL || shmf_name_check(h->name) < 0)
		return errmsg(err, errlen, SHMF_E_FORMAT, "%s: filter name at byte 120 is not a valid name", p);
	for (size_t i = 0; i < sizeof(h->reserved); i++)
		if (h->reserved[i] != 0)
			return errmsg(err, errlen, SHMF_E_FORMAT, "%s: reserved byte %zu is not zero", p,
				      offsetof(struct shmf_snap_header, reserved) + i);
	/* Version 1 had these bytes reserved: zero, so cursor 0-0. */
	if (h->version < 2 && (h->cursor_ms | h->cursor_seq | h->flags) != 0)
		return errmsg(err, errlen, SHMF_E_FORMAT, "%s: version 1 header has bytes 184-203 set (reserved there)",
			      p);
	/* Versions 1 and 2 had bytes 204-211 reserved (zero: every cuckoo
	 * bucket held 4 fingerprints), and no growing filter. */
	if (h->version < 3 && (h->expansion != 0 || h->bucket_size != 0 || (h->flags & ~SHMF_SNAP_F_REPLICATED)))
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: version %u header has version 3's flags, expansion or bucket size (bytes 200-211) "
			      "set",
			      p, h->version);
	/* Before version 5 a Bloom filter's bucket size was zero (one line a key). */
	if (h->version < 5 && h->type == SHMF_TYPE_BLOOM && h->bucket_size != 0)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: version %u header has version 5's lines a key (bytes 208-211) set for a Bloom filter",
			      p, h->version);
	/* Before version 4 bytes 212-215 were reserved: shmfilter's own filters. */
	if (h->version < 4 && h->scheme != 0)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: version %u header has version 4's scheme (bytes 212-215) set", p, h->version);
	if (h->flags & ~SHMF_SNAP_F_ALL)
		return errmsg(err, errlen, SHMF_E_FORMAT, "%s: flags 0x%x at byte 200 has unknown bits", p, h->flags);
	if ((h->flags & SHMF_SNAP_F_FLEET) && (h->version < 6 || !(h->flags & SHMF_SNAP_F_REPLICATED)))
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: flags 0x%x at byte 200 say a fleet block, which only a replicated filter's "
			      "file of version 6 has",
			      p, h->flags);
	if ((h->flags & SHMF_SNAP_F_LAYERED)
		    ? h->expansion == 0 || h->expansion > SHMF_EXPANSION_MAX || h->window_gens != 0 ||
			      (h->flags & SHMF_SNAP_F_NONSCALING)
		    : h->expansion != 0 || ((h->flags & SHMF_SNAP_F_NONSCALING) &&
					    (h->type != SHMF_TYPE_BLOOM || h->window_gens != 0)))
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: flags 0x%x and expansion %u (bytes 200-207) do not describe a filter (a growing one "
			      "expands by 1 to %u and has no window; NONSCALING is for a Bloom filter that does not grow)",
			      p, h->flags, h->expansion, SHMF_EXPANSION_MAX);
	return 0;
}

/* A filter imported from RedisBloom: one section, no window, layer,
 * journal or relocation bound; its shape is in its payload's table, which
 * shmd checks before it publishes one (redisbloom.h), not a sizing's. */
static int header_import_check(const struct shmf_snap_header *h, const char *p, char *err, size_t errlen)
{
	if (h->nsections != 1 || h->window_gens != 0 || h->flags != 0 || h->max_kicks != 0)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: a filter imported from RedisBloom (scheme %u at byte 212) has one section and no "
			      "window, flags or relocation bound (bytes 60, 96, 200, 56)",
			      p, h->scheme);
	return 0;
}

/* The filter the header describes: a type, sections and a window this
 * build can hold, in exactly the shape the sizing gives for its
 * parameters (or gave: shmf_geometry_sized()), and a file size that
 * follows from them. */
static int header_shape_check(const struct shmf_snap_header *h, const char *p, char *err, size_t errlen)
{
	double fpr;
	memcpy(&fpr, &h->fpr_bits, sizeof(fpr));
	if (h->type != SHMF_TYPE_BLOOM && h->type != SHMF_TYPE_CUCKOO && h->type != SHMF_TYPE_STATIC)
		return errmsg(err, errlen, SHMF_E_FORMAT, "%s: filter type %u at byte 16 is unknown", p, h->type);
	/* Static filters came with version 6; one section, nothing else. */
	if (h->type == SHMF_TYPE_STATIC && (h->version < 6 || h->nsections != 1 || h->window_gens != 0 ||
					    h->flags != 0 || h->max_kicks != 0 || h->scheme != 0))
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: a static filter (type 3 at byte 16) needs version 6 or later (byte 8) and has one "
			      "section and no window, flags, relocation bound or scheme (bytes 60, 96, 200, 56, 212)",
			      p);
	if (h->nsections == 0 || h->nsections > SHMF_SNAP_SECTIONS)
		return errmsg(err, errlen, SHMF_E_FORMAT, "%s: %u sections at byte 60 (1 to %u)", p, h->nsections,
			      SHMF_SNAP_SECTIONS);
	if ((h->window_secs == 0) != (h->window_gens == 0) || h->window_gens > SHMF_SNAP_SECTIONS ||
	    (h->window_gens != 0 && h->nsections > h->window_gens) ||
	    (h->window_gens == 0 && h->nsections != 1 && !(h->flags & SHMF_SNAP_F_LAYERED)))
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: window of %" PRIu64 " s and %u generations (bytes 88, 96) does not fit %u sections",
			      p, h->window_secs, h->window_gens, h->nsections);
	if (h->window_secs > SHMF_WINDOW_SECS_MAX)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: window of %" PRIu64 " s at byte 88 is longer than the longest window (%" PRIu64
			      " s, ten years)",
			      p, h->window_secs, SHMF_WINDOW_SECS_MAX);
	if (h->chunk_bytes < 4096 || h->chunk_bytes > (1u << 30) || h->chunk_bytes % SHMF_BLOCK_BYTES != 0)
		return errmsg(err, errlen, SHMF_E_FORMAT, "%s: chunk size %u at byte 100 is out of range", p,
			      h->chunk_bytes);
	struct shmf_geometry g;
	snapshot_geometry(h, &g);
	if (shmf_geometry_check(g.type, g.scheme, g.k, g.bucket_size, g.nblocks, g.nbuckets) < 0)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: shape (scheme %u, k %u, bucket size %u, %" PRIu64 " blocks, %" PRIu64
			      " buckets at bytes 212, 20, 208, 40, 48) is inconsistent",
			      p, h->scheme, h->k, g.bucket_size, h->nblocks, h->nbuckets);
	int rc;
	if (g.scheme != SHMF_SCHEME_NATIVE) {
		if ((rc = header_import_check(h, p, err, errlen)) < 0)
			return rc;
	} else if (h->flags & SHMF_SNAP_F_LAYERED) {
		/* A growing filter's first layer: as shmf_geometry_layer() makes it. */
		struct shmf_layer l0;
		rc = shmf_geometry_layer((int)h->type, h->capacity, fpr, h->max_kicks, g.bucket_size, h->expansion, 0,
					 &l0);
		if (rc == 0 && (l0.g.k != g.k || l0.g.nblocks != g.nblocks || l0.g.nbuckets != g.nbuckets ||
				l0.g.bucket_size != g.bucket_size))
			rc = SHMF_E_FORMAT;
	} else {
		rc = shmf_geometry_sized(&g, h->capacity, fpr);
	}
	if (rc < 0)
		return errmsg(err, errlen, rc == SHMF_E_TOOBIG ? SHMF_E_TOOBIG : SHMF_E_FORMAT,
			      "%s: capacity %" PRIu64 " at error rate %g (bytes 24, 32) does not give the stored shape",
			      p, h->capacity, fpr);
	if (h->section_bytes != h->nblocks * SHMF_BLOCK_BYTES)
		return errmsg(err, errlen, SHMF_E_FORMAT, "%s: section size %" PRIu64 " at byte 104, expected %" PRIu64,
			      p, h->section_bytes, h->nblocks * SHMF_BLOCK_BYTES);
	struct snap_layout lay;
	if ((rc = snapshot_layout(h, &lay, NULL)) < 0)
		return errmsg(err, errlen, rc,
			      "%s: the %u layers of this growing filter cannot be sized (expansion %u)", p,
			      h->nsections, h->expansion);
	uint64_t want = lay.file_bytes;
	if (h->file_bytes != want)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: file size field %" PRIu64 " at byte 112, expected %" PRIu64, p, h->file_bytes, want);
	return 0;
}

/* The header fields say a filter this build can hold (header_bytes_check(),
 * header_shape_check()). */
static int header_fields_check(const struct shmf_snap_header *h, const char *p, char *err, size_t errlen)
{
	int rc = header_bytes_check(h, p, err, errlen);
	return rc < 0 ? rc : header_shape_check(h, p, err, errlen);
}

int snapshot_header_check(const struct shmf_snap_header *h, const char *what, char *err, size_t errlen)
{
	if (memcmp(h->magic, SHMF_SNAP_MAGIC, sizeof(h->magic)) != 0)
		return errmsg(err, errlen, SHMF_E_FORMAT, "%s: bytes 0-7 are not \"%s\": not a snapshot file", what,
			      SHMF_SNAP_MAGIC);
	if (XXH3_64bits(h, offsetof(struct shmf_snap_header, header_xxh3)) != h->header_xxh3)
		return errmsg(err, errlen, SHMF_E_FORMAT, "%s: header checksum mismatch (bytes 0-255 are damaged)",
			      what);
	if (h->version < SHMF_SNAP_VERSION_MIN || h->version > SHMF_SNAP_VERSION)
		return errmsg(err, errlen, SHMF_E_VERSION, "%s: format version %u, this build reads versions %u to %u",
			      what, h->version, SHMF_SNAP_VERSION_MIN, SHMF_SNAP_VERSION);
	return header_fields_check(h, what, err, errlen);
}

int snapshot_fleet_check(const struct shmf_snap_fleet *f, const char *what, char *err, size_t errlen)
{
	if (XXH3_64bits(f, offsetof(struct shmf_snap_fleet, xxh3)) != f->xxh3 || f->reserved != 0)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "%s: the fleet block (the replicated filter's sequences) is damaged: its checksum "
			      "does not match or its reserved bytes are set",
			      what);
	return 0;
}

int snapshot_sections_check(const struct shmf_snap_header *h, const struct shmf_snap_section *sec, const char *what,
			    char *err, size_t errlen)
{
	for (unsigned i = 0; i < h->nsections && i < SHMF_SNAP_SECTIONS; i++) {
		const struct shmf_snap_section *s = &sec[i];
		uint64_t at = sizeof(*h) + i * sizeof(*s);
		if (XXH3_64bits(s, offsetof(struct shmf_snap_section, xxh3)) != s->xxh3)
			return errmsg(err, errlen, SHMF_E_FORMAT,
				      "%s: section %u header checksum mismatch (bytes %" PRIu64 "-%" PRIu64
				      " are damaged)",
				      what, i, at, at + sizeof(*s) - 1);
		if (s->generation == 0 || s->reserved0 | s->reserved[0] | s->reserved[1])
			return errmsg(err, errlen, SHMF_E_FORMAT,
				      "%s: section %u header (byte %" PRIu64 ") has generation 0 or reserved bits set",
				      what, i, at);
		/* A window number fits the journal's 32 bits (header_fields_check
		 * bounded the window's length). */
		if (h->window_secs != 0 && s->created_epoch / h->window_secs > SHMF_WINDOW_NUM_MAX)
			return errmsg(err, errlen, SHMF_E_FORMAT,
				      "%s: section %u began at %" PRIu64 " (byte %" PRIu64
				      "): its window number does not fit 32 bits",
				      what, i, s->created_epoch, at + 8);
		/* A growing filter's layers, newest first; any other section 0. */
		uint32_t want = (h->flags & SHMF_SNAP_F_LAYERED) ? h->nsections - 1 - i : 0;
		if (s->layer != want)
			return errmsg(err, errlen, SHMF_E_FORMAT,
				      "%s: section %u header (byte %" PRIu64 ") says layer %u, its place says %u", what,
				      i, at + 32, s->layer, want);
	}
	return 0;
}

/* Open @p sf->path: a regular file, long enough for a snapshot. @return 0
 * with its size in @p size, or an error. */
static int open_file(struct snap_file *sf, uint64_t *size, char *err, size_t errlen)
{
	const char *path = sf->path;
	struct stat st;
	/* O_NONBLOCK: opening a FIFO nobody writes to returns at once (and is
	 * refused below) instead of waiting for a writer; on a regular file
	 * it changes nothing. */
	sf->fd = io_open(AT_FDCWD, path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0);
	if (sf->fd < 0 && errno == ELOOP)
		return errmsg(err, errlen, -ELOOP,
			      "snapshot %s: is a symbolic link, not a snapshot file (name the file it points to)",
			      path);
	if (sf->fd < 0)
		return errmsg(err, errlen, -errno, "snapshot %s: cannot open: %s", path, strerror(errno));
	if (fstat(sf->fd, &st) < 0)
		return errmsg(err, errlen, -errno, "snapshot %s: cannot stat: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return errmsg(err, errlen, SHMF_E_FORMAT, "snapshot %s: is %s, not a snapshot file", path,
			      errmsg_file_kind(st.st_mode));
	*size = (uint64_t)st.st_size;
	if (*size < SHMF_SNAP_PAYLOAD_OFF + SHMF_SNAP_TRAILER)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "snapshot %s: file is %" PRIu64 " bytes, too short for a snapshot (truncated?)", path,
			      *size);
	return 0;
}

/* Read the header and check it whole (snapshot_header_check()), then
 * against the file's @p size. */
static int read_header(struct snap_file *sf, uint64_t size, char *err, size_t errlen)
{
	const struct shmf_snap_header *h = &sf->hdr;
	const char *path = sf->path;
	char what[sizeof(sf->path) + 16];
	snprintf(what, sizeof(what), "snapshot %s", path);
	int rc = read_at(sf->fd, &sf->hdr, sizeof(sf->hdr), 0);
	if (rc < 0)
		return errmsg(err, errlen, rc, "snapshot %s: cannot read header: %s", path, strerror(-rc));
	if ((rc = snapshot_header_check(h, what, err, errlen)) < 0)
		return rc;
	if ((rc = snapshot_layout(h, &sf->lay, NULL)) < 0)
		return errmsg(err, errlen, rc, "snapshot %s: the filter's layers cannot be sized", path);
	if (size != h->file_bytes)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "snapshot %s: file is %" PRIu64 " bytes, its header says %" PRIu64 " (%s)", path, size,
			      h->file_bytes, size < h->file_bytes ? "truncated" : "extra bytes at the end");
	return 0;
}

/* The bytes between the last section header and the payload: no checksum
 * covers them (the format predates the question), so they must be zero,
 * as every writer leaves them. Checked rather than covered, so that every
 * file written so far still reads: a flipped bit here is refused too. */
static int read_padding(struct snap_file *sf, char *err, size_t errlen)
{
	uint64_t from = sizeof(sf->hdr) + sf->hdr.nsections * sizeof(sf->sec[0]);
	unsigned char pad[SHMF_SNAP_PAYLOAD_OFF];
	int rc = read_at(sf->fd, pad, SHMF_SNAP_PAYLOAD_OFF - from, from);
	if (rc < 0)
		return errmsg(err, errlen, rc, "snapshot %s: cannot read the header padding: %s", sf->path,
			      strerror(-rc));
	for (uint64_t i = 0; i < SHMF_SNAP_PAYLOAD_OFF - from; i++)
		if (pad[i] != 0)
			return errmsg(err, errlen, SHMF_E_FORMAT,
				      "snapshot %s: byte %" PRIu64 " of the padding before the payload (bytes %" PRIu64
				      "-%u, zero in every snapshot) is 0x%02x: the file is damaged",
				      sf->path, from + i, from, SHMF_SNAP_PAYLOAD_OFF - 1, pad[i]);
	return 0;
}

/* Read the section headers and check each one's checksum and fields, then
 * the padding after them. */
static int read_sections(struct snap_file *sf, char *err, size_t errlen)
{
	const char *path = sf->path;
	char what[sizeof(sf->path) + 16];
	snprintf(what, sizeof(what), "snapshot %s", path);
	unsigned n = sf->hdr.nsections;
	int rc = read_at(sf->fd, sf->sec, n * sizeof(sf->sec[0]), sizeof(sf->hdr));
	if (rc < 0)
		return errmsg(err, errlen, rc, "snapshot %s: cannot read section headers: %s", path, strerror(-rc));
	if ((rc = snapshot_sections_check(&sf->hdr, sf->sec, what, err, errlen)) < 0)
		return rc;
	return read_padding(sf, err, errlen);
}

/* Read the chunk table and the trailer, and check the end marker and the
 * checksum of all the metadata. */
static int read_chunk_table(struct snap_file *sf, char *err, size_t errlen)
{
	const struct shmf_snap_header *h = &sf->hdr;
	const char *path = sf->path;
	unsigned n = h->nsections;
	uint64_t table_bytes = sf->lay.table_entries * 8, table_off = sf->lay.table_off;
	uint64_t trailer[2], sum;
	int rc;
	sf->chunks = io_malloc(table_bytes);
	if (sf->chunks == NULL)
		return errmsg(err, errlen, -ENOMEM, "snapshot %s: out of memory for %" PRIu64 " checksums", path,
			      sf->lay.table_entries);
	if ((rc = read_at(sf->fd, sf->chunks, table_bytes, table_off)) < 0 ||
	    (rc = read_at(sf->fd, trailer, sizeof(trailer), sf->hdr.file_bytes - SHMF_SNAP_TRAILER)) < 0)
		return errmsg(err, errlen, rc, "snapshot %s: cannot read the chunk table: %s", path, strerror(-rc));
	if (memcmp(&trailer[1], SHMF_SNAP_END_MAGIC, 8) != 0)
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "snapshot %s: end marker at byte %" PRIu64 " is missing (truncated or damaged)", path,
			      sf->hdr.file_bytes - SHMF_SNAP_TRAILER + 8);
	if (meta_checksum(h, sf->sec, n, sf->chunks, table_bytes, &sum) < 0)
		return errmsg(err, errlen, -ENOMEM, "snapshot %s: out of memory", path);
	if (sum != trailer[0])
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "snapshot %s: trailer checksum mismatch (the chunk table at bytes %" PRIu64 "-%" PRIu64
			      " or the trailer is damaged)",
			      path, table_off, table_off + table_bytes + 7);
	return 0;
}

/* A static filter's table (the first 64 bytes of its payload) against its
 * header, as every client will check it (fuse.h): a forged or damaged one
 * is refused here, naming its bytes, before anything is loaded. */
static int read_static_table(struct snap_file *sf, char *err, size_t errlen)
{
	const struct shmf_snap_header *h = &sf->hdr;
	if (h->type != SHMF_TYPE_STATIC)
		return 0;
	uint8_t block[SHMF_BLOCK_BYTES];
	struct shmf_fuse_geom g;
	uint64_t off = sf->lay.off[0];
	if (read_at(sf->fd, block, sizeof(block), off) < 0 ||
	    shmf_fuse_open(block, h->nblocks * SHMF_BLOCK_BYTES, h->k, h->bucket_size, h->nbuckets, h->capacity,
			   h->seed, &g) < 0) {
		/* shmf_fuse_open reads only the 64 bytes: the size is the header's. */
		return errmsg(err, errlen, SHMF_E_FORMAT,
			      "snapshot %s: the static filter's table at bytes %" PRIu64 "-%" PRIu64
			      " does not match its header (%u-bit fingerprints, %" PRIu64
			      " fingerprints, segments of %u, %" PRIu64 " keys): damaged or forged",
			      sf->path, off, off + SHMF_BLOCK_BYTES - 1, h->k, h->nbuckets, h->bucket_size,
			      h->capacity);
	}
	return 0;
}

/* The fleet block, with flag FLEET: read and checked. */
static int read_fleet(struct snap_file *sf, char *err, size_t errlen)
{
	if (!(sf->hdr.flags & SHMF_SNAP_F_FLEET))
		return 0;
	int rc = read_at(sf->fd, &sf->fleet, sizeof(sf->fleet), sf->lay.fleet_off);
	if (rc < 0)
		return errmsg(err, errlen, rc, "snapshot %s: cannot read the fleet block: %s", sf->path, strerror(-rc));
	char what[sizeof(sf->path) + 16];
	snprintf(what, sizeof(what), "snapshot %s", sf->path);
	return snapshot_fleet_check(&sf->fleet, what, err, errlen);
}

int snapshot_open(struct snap_file *sf, const char *path, char *err, size_t errlen)
{
	uint64_t size = 0;
	int rc;
	memset(sf, 0, sizeof(*sf));
	snprintf(sf->path, sizeof(sf->path), "%s", path);
	if ((rc = open_file(sf, &size, err, errlen)) < 0 || (rc = read_header(sf, size, err, errlen)) < 0 ||
	    (rc = read_sections(sf, err, errlen)) < 0 || (rc = read_chunk_table(sf, err, errlen)) < 0 ||
	    (rc = read_static_table(sf, err, errlen)) < 0 || (rc = read_fleet(sf, err, errlen)) < 0) {
		snapshot_close(sf);
		return rc;
	}
	return 0;
}

/* Write @p n bytes at @p off of the new generation's file @p fd. @return 0
 * or -errno. */
static int fill_at(int fd, const void *buf, size_t n, uint64_t off)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t k = io_pwrite(fd, p, n, off, SNAP_IO_FILL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		p += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

/* Read section @p i chunk by chunk, checking each: into @p dst, or
 * written to @p out_fd at @p out_off, or handed to @p fn, or (all unset)
 * only checked. */
static int read_section(struct snap_file *sf, unsigned i, void *dst, int out_fd, uint64_t out_off,
			snapshot_chunk_fn *fn, void *arg, char *err, size_t errlen)
{
	const struct shmf_snap_header *h = &sf->hdr;
	void *buf = NULL;
	int rc = 0;

	if (i >= h->nsections)
		return errmsg(err, errlen, -EINVAL, "snapshot %s: no section %u", sf->path, i);
	if (dst == NULL && io_memalign(&buf, 4096, h->chunk_bytes) != 0)
		return errmsg(err, errlen, -ENOMEM, "snapshot %s: out of memory", sf->path);
	uint64_t base = sf->lay.off[i], bytes = sf->lay.bytes[i];
	for (uint64_t c = 0; c < sf->lay.nchunks[i]; c++) {
		uint64_t at = c * h->chunk_bytes;
		size_t len = (size_t)(bytes - at < h->chunk_bytes ? bytes - at : h->chunk_bytes);
		char *p = dst != NULL ? (char *)dst + at : buf;
		if ((rc = read_at(sf->fd, p, len, base + at)) < 0) {
			rc = errmsg(err, errlen, rc, "snapshot %s: cannot read bytes %" PRIu64 "-%" PRIu64 ": %s",
				    sf->path, base + at, base + at + len - 1, strerror(-rc));
			break;
		}
		if (XXH3_64bits(p, len) != sf->chunks[sf->lay.chunk0[i] + c]) {
			rc = errmsg(err, errlen, SHMF_E_FORMAT,
				    "snapshot %s: checksum mismatch in section %u, bytes %" PRIu64 "-%" PRIu64
				    " (payload damaged)",
				    sf->path, i, base + at, base + at + len - 1);
			break;
		}
		if (fn != NULL)
			fn(arg, at, p, len);
		if (out_fd >= 0 && (rc = fill_at(out_fd, p, len, out_off + at)) < 0) {
			rc = errmsg(err, errlen, rc, "snapshot %s: cannot write the new generation: %s", sf->path,
				    strerror(-rc));
			break;
		}
	}
	free(buf);
	return rc;
}

int snapshot_read_section(struct snap_file *sf, unsigned i, void *dst, char *err, size_t errlen)
{
	return read_section(sf, i, dst, -1, 0, NULL, NULL, err, errlen);
}

int snapshot_copy_section(struct snap_file *sf, unsigned i, int out_fd, uint64_t out_off, char *err, size_t errlen)
{
	return read_section(sf, i, NULL, out_fd, out_off, NULL, NULL, err, errlen);
}

int snapshot_scan_section(struct snap_file *sf, unsigned i, snapshot_chunk_fn *fn, void *arg, char *err, size_t errlen)
{
	return read_section(sf, i, NULL, -1, 0, fn, arg, err, errlen);
}

void snapshot_close(struct snap_file *sf)
{
	if (sf->fd >= 0)
		close(sf->fd);
	sf->fd = -1;
	free(sf->chunks);
	sf->chunks = NULL;
}
