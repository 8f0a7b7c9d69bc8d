/*
 * snapshot.h - writing and reading snapshot files (snapshot-format.h).
 *
 * Shared by shmd (snapshot, restore, swap, restart) and shmctl (build,
 * inspect); nothing here touches the registry. Errors are -errno or shmf
 * codes, each with a sentence naming the file and the cause in err[].
 */
#ifndef SHMF_COMMON_SNAPSHOT_H
#define SHMF_COMMON_SNAPSHOT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "libclient/geometry.h"
#include "common/snapshot-format.h"
#include "common/spec.h"

#define SNAPSHOT_ERR_MAX 512

/* Called by the writer with the target's directory, opened (@p dfd), before
 * anything is created in it: 0 to write there, or an error with a
 * sentence in @p err (shmd: not inside its runtime directory, within
 * snapshot_paths). */
typedef int snapshot_dir_check_fn(void *arg, int dfd, const char *path, char *err, size_t errlen);

/* Where each section's payload and checksums lie in a file: a growing
 * filter's sections differ in size (its layers), every other filter's
 * are section_bytes each. */
struct snap_layout {
	uint64_t bytes[SHMF_SNAP_SECTIONS];   /* payload bytes of section i */
	uint64_t off[SHMF_SNAP_SECTIONS];     /* its file offset */
	uint64_t nchunks[SHMF_SNAP_SECTIONS]; /* its checksums */
	uint64_t chunk0[SHMF_SNAP_SECTIONS];  /* the index of its first checksum in the table */
	uint64_t table_off;                   /* the chunk table's file offset */
	uint64_t table_entries;               /* checksums in it */
	uint64_t fleet_off;                   /* the fleet block's (flag FLEET), after the table */
	uint64_t file_bytes;                  /* the whole file */
};

/**
 * The layout of a file of header @p h (its type, shape, nsections,
 * chunk_bytes, flags and expansion read; nothing else). @return 0, or
 * SHMF_E_FORMAT / SHMF_E_TOOBIG when a growing filter's layers cannot be
 * sized from the header (@p g, if not NULL, gets each section's shape).
 */
int snapshot_layout(const struct shmf_snap_header *h, struct snap_layout *l, struct shmf_geometry *g);

/* What to write: the header fields that describe the filter (set by
 * snapshot_header_fill(); magic, version, sizes, chunking and checksums
 * are filled in by the writer), and one section header and payload per
 * generation; then the writer's options (all zero: none). */
struct snap_source {
	struct shmf_snap_header hdr;
	unsigned nsections;
	struct shmf_snap_section sec[SHMF_SNAP_SECTIONS];
	const void *payload[SHMF_SNAP_SECTIONS]; /* hdr.nblocks * 64 bytes each (a growing filter's: its layer's) */
	struct shmf_snap_fleet fleet;            /* written with hdr.flags' FLEET (sealed by the writer) */
	int force;                               /* replace an existing regular file that is not a snapshot */
	const atomic_int *cancel;                /* set: give up at the next chunk (the temporary file removed) */
	snapshot_dir_check_fn *dir_check;        /* NULL: any directory */
	void *dir_arg;
};

/**
 * Fill the header fields that describe a filter: name, capacity, error
 * rate, time window and how it grows from @p spec (its type and
 * relocation bound are not read), type and shape from @p g (a growing
 * filter's first layer's), the hash @p seed, when the filter was created
 * and when this snapshot began. The one place these fields are set, for
 * shmd's snapshots and shmctl build alike.
 */
void snapshot_header_fill(struct shmf_snap_header *h, const struct filter_spec *spec, const struct shmf_geometry *g,
			  uint64_t seed, uint64_t created_epoch, uint64_t snapshot_epoch);

/**
 * Fill in the writer's fields of @p src's header (magic, version, sizes,
 * chunking, reserved bytes zeroed) and the header and section checksums,
 * as snapshot_write() does: what a dump's header chunk carries.
 */
void snapshot_seal(struct snap_source *src);

/**
 * Write @p src to @p path crash-safely: a temporary file in the same
 * directory, fsync, rename over @p path, fsync of the directory. A crash
 * or an error at any point leaves @p path as it was (the previous
 * snapshot, or nothing) and no temporary file behind on error. Payloads
 * are copied a chunk at a time before they are checksummed, so a payload
 * that concurrent adders keep changing is still written consistently
 * with its checksums.
 *
 * The target must be missing or a regular file holding a snapshot (its
 * first bytes the magic; another regular file only with src->force):
 * never a device, FIFO, socket, directory or symbolic link, which are
 * refused with the path and what it is. The temporary file is
 * .NAME.tmp-PID-START-N (the writer's pid and start time, see
 * snapshot_remove_stale()), created with O_EXCL; before creating it the
 * writer removes the temporaries of dead writers in the directory.
 * @param mode  permission bits of the new file
 * @return 0, or -errno (the failing step named in @p err).
 */
int snapshot_write(const char *path, struct snap_source *src, unsigned mode, char *err, size_t errlen);

/* An open, validated snapshot file. */
struct snap_file {
	int fd;
	struct shmf_snap_header hdr;
	struct shmf_snap_section sec[SHMF_SNAP_SECTIONS];
	struct snap_layout lay;       /* where each section lies */
	uint64_t *chunks;             /* lay.table_entries payload checksums */
	struct shmf_snap_fleet fleet; /* checked, with hdr.flags' FLEET; else zero */
	char path[4096];
};

/**
 * Open @p path (O_NONBLOCK | O_NOFOLLOW: a FIFO never blocks the caller,
 * a symbolic link as the last component is refused; directories above it
 * may be links) and refuse anything that is not a regular file, naming
 * what it is. Then validate everything but the payloads: magic, version,
 * header and section checksums, that the parameters describe a filter this
 * build can hold (the geometry sizing gives, or gave, exactly the stored
 * shape: shmf_geometry_sized()), the
 * file size, the zero padding before the payload, the chunk table and
 * the trailer.
 * @return 0, SHMF_E_FORMAT (damaged or not a snapshot), SHMF_E_VERSION,
 *         SHMF_E_TOOBIG, or -errno; @p err says where and what.
 */
int snapshot_open(struct snap_file *sf, const char *path, char *err, size_t errlen);

/**
 * Check a snapshot header held in memory (a file's, or the first chunk of a
 * SCANDUMP): magic, checksum, version (SHMF_SNAP_VERSION_MIN to
 * SHMF_SNAP_VERSION) and every field as snapshot_open() does, but for the
 * size of a file. @p what names it in @p err ("snapshot /path").
 * @return 0, SHMF_E_FORMAT, SHMF_E_VERSION or SHMF_E_TOOBIG.
 */
int snapshot_header_check(const struct shmf_snap_header *h, const char *what, char *err, size_t errlen);

/** Check fleet block @p f (its checksum and reserved bytes). @return 0 or
 * SHMF_E_FORMAT, @p what named in @p err. */
int snapshot_fleet_check(const struct shmf_snap_fleet *f, const char *what, char *err, size_t errlen);

/** Check the checksum and fields of section headers @p sec of a checked
 * header @p h. @return 0 or SHMF_E_FORMAT. */
int snapshot_sections_check(const struct shmf_snap_header *h, const struct shmf_snap_section *sec, const char *what,
			    char *err, size_t errlen);

/** The shape a snapshot header stores, as a geometry (data_bytes computed):
 * the shape a filter restored from it gets (a growing one's first layer). */
void snapshot_geometry(const struct shmf_snap_header *h, struct shmf_geometry *g);

/** The spec a filter restored from checked header @p h is made with: its
 * name, type, capacity, rate, window, expansion and NONSCALING, mode 0640. */
void snapshot_spec(const struct shmf_snap_header *h, struct filter_spec *spec);

/**
 * Read section @p i's payload into @p dst (lay.bytes[i] bytes), or
 * only verify it when @p dst is NULL, checking every chunk's checksum.
 * @return 0, SHMF_E_FORMAT (a chunk is damaged: err names its bytes), or
 *         -errno. On error @p dst holds partial data.
 */
int snapshot_read_section(struct snap_file *sf, unsigned i, void *dst, char *err, size_t errlen);

/**
 * As snapshot_read_section(), but the payload is written to @p out_fd at
 * @p out_off (pwrite: no page faults on a mapping of the target).
 */
int snapshot_copy_section(struct snap_file *sf, unsigned i, int out_fd, uint64_t out_off, char *err, size_t errlen);

/* What snapshot_scan_section() hands each checked chunk to: @p len bytes
 * at payload offset @p off. */
typedef void snapshot_chunk_fn(void *arg, uint64_t off, const void *buf, size_t len);

/**
 * As snapshot_read_section(), but each chunk is handed to @p fn once its
 * checksum matched (a chunk-sized buffer, not the whole payload, is held).
 * A damaged chunk stops the scan: the chunks before it were handed over.
 */
int snapshot_scan_section(struct snap_file *sf, unsigned i, snapshot_chunk_fn *fn, void *arg, char *err, size_t errlen);

/**
 * Remove from directory @p dfd the temporary snapshot files of writers
 * that are gone: names .NAME.tmp-PID-START-N whose process PID is not
 * running, or runs with another start time (a pid used again), and the
 * older .NAME.tmp-PID whose PID is not running. A live writer's file is
 * never touched. @p removed (if not NULL) is told each name removed.
 * @return how many were removed.
 */
int snapshot_remove_stale(int dfd, void (*removed)(void *arg, const char *name), void *arg);

/** Close what snapshot_open() opened. */
void snapshot_close(struct snap_file *sf);

/** The file size of a snapshot of @p nsections sections of @p section_bytes (a filter that does not grow). */
uint64_t snapshot_file_bytes(unsigned nsections, uint64_t section_bytes, uint32_t chunk_bytes);

/*
 * The file operations a snapshot makes, by kind. Test builds
 * (tests/meson.build compiles snapshot.c again with SHMF_TEST_HOOKS) route
 * each through snapshot_fault: the calls of the kinds in @p kinds are
 * counted and the @p fail_at-th fails with @p err, so that a test can fail
 * each step of a snapshot in turn. With @p partial, that call (a write)
 * first writes half its buffer and returns the short count (a file system
 * filling up), and the next counted call fails.
 */
enum snapshot_io {
	SNAP_IO_OPEN,    /* open of the directory, the temporary file or a snapshot to read */
	SNAP_IO_CHMOD,   /* fchmod of the temporary file */
	SNAP_IO_WRITE,   /* pwrite into the temporary file */
	SNAP_IO_FSYNC,   /* fsync of the temporary file */
	SNAP_IO_CLOSE,   /* close of the temporary file (the descriptor is closed anyway) */
	SNAP_IO_RENAME,  /* rename over the target */
	SNAP_IO_DIRSYNC, /* fsync of the directory */
	SNAP_IO_ALLOC,   /* a buffer or checksum state */
	SNAP_IO_READ,    /* pread of a snapshot */
	SNAP_IO_FILL,    /* pwrite of a payload into a new generation */
	SNAP_IO_KINDS
};

#ifdef SHMF_TEST_HOOKS
struct snapshot_fault {
	unsigned kinds;         /* 1 << SNAP_IO_* of the calls that count */
	unsigned long fail_at;  /* the counted call that fails, from 1; 0: none */
	int err;                /* its errno */
	int partial;            /* a write: short first, then the next call fails */
	unsigned long calls;    /* counted calls so far */
	unsigned long injected; /* faults injected so far */
};
extern struct snapshot_fault snapshot_fault;
#endif

#endif
