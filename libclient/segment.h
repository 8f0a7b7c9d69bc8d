/*
 * segment.h - opening, validating and mapping the segments of an instance.
 *
 * Used by libshmf (read side) and by shmd (which also writes slots). Every
 * function validates what it maps against a private copy of the header and
 * the size fstat() reports, and returns a library error naming the failed
 * check; nothing mapped is trusted before that.
 */
#ifndef SHMF_SEGMENT_H
#define SHMF_SEGMENT_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "libclient/geometry.h"
#include "libclient/segment-format.h"

/* An open instance directory, checked for a trusted owner and mode. */
struct shmf_dir {
	int fd;      /* O_DIRECTORY descriptor */
	uid_t owner; /* every file in it must have this owner */
};

/* ---- errors.c: the thread's error detail (shmf_error_detail()) ---- */

/** Forget the thread's detail (at the start of shmf_open()). */
void shmf_detail_clear(void);

/**
 * When @p err is -EACCES or -EPERM: the thread's detail becomes a sentence
 * naming @p path, its owner, group and mode, the caller's identity and
 * what to change (@p filter: the filter to name there, NULL: none;
 * @p writable: opened for adding; @p is_dir: the instance directory).
 * Other errors leave it as it is.
 */
void shmf_detail_access(const char *path, const char *filter, int writable, int is_dir, int err);

/** The same for file @p name of the directory open on @p dirfd. */
void shmf_detail_member(int dirfd, const char *name, int writable, int err);

/* The control segment, mapped. */
struct shmf_ctl_map {
	int fd;
	size_t len;
	struct shmf_ctl_header *hdr; /* the mapping (read-only for clients) */
	struct shmf_slot *slots;     /* slot 0 in the mapping */
};

/* A data segment, mapped, with its validated private header. */
struct shmf_data_map {
	int fd;
	size_t len;
	void *base;
	uint64_t *blocks;               /* nblocks * 8 words */
	struct shmf_counter *counters;  /* SHMF_ITEM_STRIPES */
	struct shmf_layer_state *state; /* the layer state word in the header page */
	struct shmf_data_header hdr;    /* private copy, validated */
};

/**
 * Open and trust-check an instance directory (path may be NULL for the
 * default instance; it is an instance name, not a path). The directory must
 * not be writable by group or others, and must be owned by root, by the
 * caller, or by the uid in $SHMF_TRUST_UID.
 * @return 0, SHMF_E_NAME, SHMF_E_RUNDIR, SHMF_E_NOTFOUND, SHMF_E_OWNER, -errno.
 */
int shmf_dir_open(const char *instance, struct shmf_dir *out);

/** Check a directory already open on fd (what shmf_dir_open() checks). */
int shmf_dir_check(int fd, struct shmf_dir *out);

void shmf_dir_close(struct shmf_dir *d);

/**
 * Open file @p name of the directory (O_NOFOLLOW) and check it: a regular
 * file owned by the directory's owner, with none of the @p forbidden mode
 * bits. @p st receives its fstat().
 * @return the descriptor, SHMF_E_NOTFOUND, SHMF_E_OWNER (wrong owner or
 *         mode, or a symbolic link), SHMF_E_FORMAT (not a regular file), -errno.
 */
int shmf_dir_open_member(const struct shmf_dir *dir, const char *name, int writable, mode_t forbidden, struct stat *st);

/**
 * Map all @p size bytes of the validated file @p fd, shared, read-write if
 * @p writable. On failure @p fd is closed.
 * @return 0 with *out set, SHMF_E_TOOBIG (larger than the address space), -errno.
 */
int shmf_map_file(int fd, uint64_t size, int writable, void **out);

/**
 * Map and validate the control segment of @p dir.
 * @param writable 0 for a read-only map (clients), 1 for shmd
 * @return 0, SHMF_E_NOTFOUND (no control file), SHMF_E_OWNER, SHMF_E_FORMAT,
 *         SHMF_E_VERSION, SHMF_E_LAYOUT, -errno.
 */
int shmf_ctl_map_open(const struct shmf_dir *dir, int writable, struct shmf_ctl_map *out);

/** Validate a control header copy against the file size. */
int shmf_ctl_header_check(const struct shmf_ctl_header *h, uint64_t file_size);

void shmf_ctl_map_close(struct shmf_ctl_map *m);

/**
 * Copy a slot with the seqlock read protocol into private memory.
 * @return 0, or -EBUSY if the daemon stayed mid-write through every retry
 *         (it died while publishing; its restart repairs the slot).
 */
int shmf_slot_read(const struct shmf_slot *shared, struct shmf_slot *copy);

/**
 * Find the live slot named @p name and copy it.
 * @return the slot index (>= 0), SHMF_E_NOTFOUND, or -EBUSY.
 */
int shmf_slot_find(const struct shmf_ctl_map *m, const char *name, struct shmf_slot *copy);

/** Check a slot copy for consistency (type, k, sizes, name, flags, the
 * ring of a window or the layers of a growing filter). 0 or SHMF_E_FORMAT. */
int shmf_slot_check(const struct shmf_slot *s);

/**
 * What generation live[@p j] of checked slot copy @p s is: in a growing
 * filter (SHMF_SLOT_LAYERED), layer nlive - 1 - j, as shmf_geometry_layer()
 * makes it from the slot's capacity, error rate and expansion (layer 0
 * must have the slot's own shape); else the slot's capacity, rate and shape.
 * @return 0 or SHMF_E_FORMAT.
 */
int shmf_slot_layer(const struct shmf_slot *s, unsigned j, struct shmf_layer *out);

/* Daemon side of the seqlock: begin makes seq odd, end makes it even. */
void shmf_slot_write_begin(struct shmf_slot *s);
void shmf_slot_write_end(struct shmf_slot *s);

/**
 * Map and validate the newest data segment (live[0]) of @p slot (a
 * validated private copy).
 * @param writable 0 maps read-only, 1 read-write
 * @return 0, SHMF_E_NOTFOUND (file gone: dropped or replaced meanwhile),
 *         SHMF_E_OWNER, SHMF_E_FORMAT, SHMF_E_VERSION, SHMF_E_LAYOUT, -errno.
 */
int shmf_data_map_open(const struct shmf_dir *dir, const struct shmf_slot *slot, int writable,
		       struct shmf_data_map *out);

/** As shmf_data_map_open(), for generation @p gen of the slot's filter (an
 * older generation of a time window, a layer of a growing filter: each is
 * checked against the shape shmf_slot_layer() gives its place in the ring). */
int shmf_data_map_open_gen(const struct shmf_dir *dir, const struct shmf_slot *slot, uint64_t gen, int writable,
			   struct shmf_data_map *out);

/** Validate a data header copy of the slot's newest generation against the slot and the file size. */
int shmf_data_header_check(const struct shmf_data_header *h, const struct shmf_slot *slot, uint64_t file_size);

void shmf_data_map_close(struct shmf_data_map *m);

/* Bytes of one journal ring, and of a whole journal file. */
static inline uint64_t shmf_journal_ring_bytes(uint32_t ring_entries)
{
	return sizeof(struct shmf_journal_ring) + (uint64_t)ring_entries * sizeof(struct shmf_journal_entry);
}

static inline uint64_t shmf_journal_bytes(uint32_t nrings, uint32_t ring_entries)
{
	return SHMF_JOURNAL_HDR_BYTES + (uint64_t)nrings * shmf_journal_ring_bytes(ring_entries);
}

/**
 * Validate a journal header copy against the file size and, unless
 * @p name is NULL, the filter it must belong to.
 * @return 0, SHMF_E_FORMAT, SHMF_E_VERSION, SHMF_E_LAYOUT.
 */
int shmf_journal_header_check(const struct shmf_journal_header *h, const char *name, uint64_t file_size);

/** Sum of the item-counter stripes. */
uint64_t shmf_data_items(const struct shmf_data_map *m);

/** Sum of the delete-counter stripes (cuckoo). */
uint64_t shmf_data_deletes(const struct shmf_data_map *m);

#endif
