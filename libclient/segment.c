/* segment.c - mapping and validation of control and data segments. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libclient/cuckoo.h"
#include "libclient/fuse.h"
#include "libclient/geometry.h"
#include "libclient/rundir.h"
#include "libclient/segment.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

_Static_assert(SHMF_DATA_COW_OFF >= sizeof(struct shmf_data_header) &&
		       SHMF_DATA_COW_OFF + sizeof(struct shmf_cuckoo_cow) <= SHMF_DATA_STATE_OFF,
	       "the snapshot log fits the header page after the header, before the layer state");

uint64_t shmf_layout_fingerprint(void)
{
	// clang-format off
	static const uint64_t facts[] = {
		SHMF_FORMAT_VERSION, SHMF_SLOTS, SHMF_BLOCK_BYTES, SHMF_ITEM_STRIPES,
		SHMF_DATA_HDR_BYTES, SHMF_DATA_COUNTERS_OFF, SHMF_DATA_BLOCKS_OFF, SHMF_NAME_MAX,
		sizeof(struct shmf_ctl_header), _Alignof(struct shmf_ctl_header),
		offsetof(struct shmf_ctl_header, layout), offsetof(struct shmf_ctl_header, slots_offset),
		offsetof(struct shmf_ctl_header, daemon_pid),
		sizeof(struct shmf_slot), _Alignof(struct shmf_slot),
		offsetof(struct shmf_slot, generation), offsetof(struct shmf_slot, seq),
		offsetof(struct shmf_slot, type), offsetof(struct shmf_slot, k),
		offsetof(struct shmf_slot, capacity), offsetof(struct shmf_slot, fpr_bits),
		offsetof(struct shmf_slot, nblocks), offsetof(struct shmf_slot, data_bytes),
		offsetof(struct shmf_slot, name),
		sizeof(struct shmf_data_header), _Alignof(struct shmf_data_header),
		offsetof(struct shmf_data_header, k), offsetof(struct shmf_data_header, nblocks),
		offsetof(struct shmf_data_header, seed), offsetof(struct shmf_data_header, generation),
		offsetof(struct shmf_data_header, blocks_offset), offsetof(struct shmf_data_header, name),
		offsetof(struct shmf_data_header, nbuckets), offsetof(struct shmf_data_header, max_kicks),
		offsetof(struct shmf_slot, nbuckets), sizeof(struct shmf_cuckoo_meta), SHMF_CUCKOO_STRIPES,
		sizeof(struct shmf_counter), offsetof(struct shmf_counter, deletes),
		sizeof(_Atomic uint64_t), _Alignof(_Atomic uint64_t),
		offsetof(struct shmf_slot, window_secs), offsetof(struct shmf_slot, nlive),
		offsetof(struct shmf_slot, live), offsetof(struct shmf_slot, live_created), SHMF_WINDOW_MAX, SHMF_RING_MAX, SHMF_CTL_STARTED_BYTES,
		offsetof(struct shmf_slot, flags), offsetof(struct shmf_slot, cursor_ms),
		offsetof(struct shmf_slot, cursor_seq), SHMF_SLOT_FLAGS,
		SHMF_JOURNAL_HDR_BYTES, SHMF_JOURNAL_RINGS_MAX, SHMF_JOURNAL_ENTRIES_MIN, SHMF_JOURNAL_ENTRIES_MAX,
		sizeof(struct shmf_journal_header), _Alignof(struct shmf_journal_header),
		offsetof(struct shmf_journal_header, nrings), offsetof(struct shmf_journal_header, rings_offset),
		offsetof(struct shmf_journal_header, ring_bytes), offsetof(struct shmf_journal_header, name),
		offsetof(struct shmf_journal_header, missed),
		sizeof(struct shmf_journal_ring), offsetof(struct shmf_journal_ring, owner),
		offsetof(struct shmf_journal_ring, head), offsetof(struct shmf_journal_ring, dropped),
		offsetof(struct shmf_journal_ring, tail), offsetof(struct shmf_journal_ring, lost),
		sizeof(struct shmf_journal_entry), offsetof(struct shmf_journal_entry, op),
		offsetof(struct shmf_journal_entry, window), SHMF_JOP_MAX, SHMF_JOURNAL_OWNER_CLOSED,
		offsetof(struct shmf_slot, lock_timeout_ms), offsetof(struct shmf_cuckoo_meta, lock),
		sizeof(struct shmf_cuckoo_lockword), offsetof(struct shmf_cuckoo_lockword, list_next),
		offsetof(struct shmf_cuckoo_meta, version), SHMF_DATA_COW_OFF, sizeof(struct shmf_cuckoo_cow),
		offsetof(struct shmf_cuckoo_cow, copied), offsetof(struct shmf_cuckoo_cow, head),
		offsetof(struct shmf_cuckoo_cow, tail),
		offsetof(struct shmf_cuckoo_cow, entry), SHMF_CUCKOO_COW_ENTRIES,
		offsetof(struct shmf_slot, bucket_size), offsetof(struct shmf_data_header, bucket_size),
		SHMF_CUCKOO_SLOTS_MAX,
		SHMF_DATA_STATE_OFF, sizeof(struct shmf_layer_state), offsetof(struct shmf_slot, expansion),
		SHMF_LAYER_OPENED, SHMF_LAYER_FULL, SHMF_LAYER_NEAR,
		offsetof(struct shmf_slot, scheme), offsetof(struct shmf_data_header, scheme), SHMF_SCHEME_MAX,
		sizeof(struct shmf_rb_table), sizeof(struct shmf_rb_link), SHMF_RB_LINKS_MAX,
		offsetof(struct shmf_slot, fleet_sent_seq), offsetof(struct shmf_slot, fleet_peers), SHMF_FLEET_PEERS,
		SHMF_TYPE_STATIC, SHMF_FUSE_MAGIC, SHMF_FUSE_TABLE_BYTES, SHMF_FUSE_SEGMENT_MAX,
	};
	// clang-format on
	return XXH3_64bits(facts, sizeof(facts));
}

static uid_t trusted_extra_uid(void)
{
	const char *s = getenv("SHMF_TRUST_UID");
	if (s == NULL || *s == '\0')
		return (uid_t)-1;
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (*end != '\0' || v >= (unsigned long)(uid_t)-1)
		return (uid_t)-1;
	return (uid_t)v;
}

int shmf_dir_check(int fd, struct shmf_dir *out)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return SHMF_E_FORMAT;
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return SHMF_E_OWNER;
	if (st.st_uid != 0 && st.st_uid != geteuid() && st.st_uid != trusted_extra_uid())
		return SHMF_E_OWNER;
	out->fd = fd;
	out->owner = st.st_uid;
	return 0;
}

int shmf_dir_open(const char *instance, struct shmf_dir *out)
{
	char path[4096];
	int r = shmf_instance_path(instance, "", path, sizeof(path));
	if (r < 0)
		return r;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		r = (errno == ENOENT || errno == ENOTDIR) ? SHMF_E_NOTFOUND : -errno;
		shmf_detail_access(path, NULL, 0, 1, r);
		return r;
	}
	if ((r = shmf_dir_check(fd, out)) < 0) {
		close(fd);
		return r;
	}
	return 0;
}

void shmf_dir_close(struct shmf_dir *d)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

int shmf_dir_open_member(const struct shmf_dir *dir, const char *name, int writable, mode_t forbidden, struct stat *st)
{
	int fd = openat(dir->fd, name, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		int r = errno == ENOENT ? SHMF_E_NOTFOUND : errno == ELOOP ? SHMF_E_OWNER : -errno;
		shmf_detail_member(dir->fd, name, writable, r);
		return r;
	}
	if (fstat(fd, st) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return SHMF_E_FORMAT;
	}
	if (st->st_uid != dir->owner || (st->st_mode & forbidden)) {
		close(fd);
		return SHMF_E_OWNER;
	}
	return fd;
}

int shmf_ctl_header_check(const struct shmf_ctl_header *h, uint64_t file_size)
{
	if (file_size < sizeof(*h) || h->magic != SHMF_CTL_MAGIC)
		return SHMF_E_FORMAT;
	if (h->version != SHMF_FORMAT_VERSION)
		return SHMF_E_VERSION;
	if (h->layout != shmf_layout_fingerprint())
		return SHMF_E_LAYOUT;
	if (h->header_size != sizeof(*h) || h->nslots != SHMF_SLOTS || h->slot_size != sizeof(struct shmf_slot) ||
	    h->slots_offset != sizeof(*h) || file_size != SHMF_CTL_BYTES)
		return SHMF_E_FORMAT;
	return 0;
}

int shmf_ctl_map_open(const struct shmf_dir *dir, int writable, struct shmf_ctl_map *out)
{
	struct stat st;
	struct shmf_ctl_header copy;
	int fd = shmf_dir_open_member(dir, SHMF_CTL_FILE, writable, S_IWGRP | S_IWOTH, &st);
	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size < sizeof(copy)) {
		close(fd);
		return SHMF_E_FORMAT;
	}
	/* Validate a private copy read with pread: nothing is mapped until the
	 * sizes are known to be right, so a short file cannot fault us. */
	if (pread(fd, &copy, sizeof(copy), 0) != (ssize_t)sizeof(copy)) {
		close(fd);
		return SHMF_E_FORMAT;
	}
	int r = shmf_ctl_header_check(&copy, (uint64_t)st.st_size);
	if (r < 0) {
		close(fd);
		return r;
	}
	void *p = mmap(NULL, SHMF_CTL_BYTES, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		r = -errno;
		close(fd);
		return r;
	}
	out->fd = fd;
	out->len = SHMF_CTL_BYTES;
	out->hdr = p;
	out->slots = (struct shmf_slot *)((char *)p + sizeof(struct shmf_ctl_header));
	return 0;
}

void shmf_ctl_map_close(struct shmf_ctl_map *m)
{
	if (m->hdr != NULL)
		munmap(m->hdr, m->len);
	if (m->fd >= 0)
		close(m->fd);
	m->hdr = NULL;
	m->slots = NULL;
	m->fd = -1;
}

int shmf_slot_read(const struct shmf_slot *shared, struct shmf_slot *copy)
{
	struct shmf_slot *s = (struct shmf_slot *)shared;

	for (int tries = 0; tries < 100000; tries++) {
		/* acquire: pairs with the release store in shmf_slot_write_end. */
		uint64_t s1 = atomic_load_explicit(&s->seq, memory_order_acquire);
		if (s1 & 1) {
			if (tries > 100)
				usleep(10);
			continue;
		}
		memcpy((void *)copy, (const void *)shared, sizeof(*copy));
		/* acquire fence: the copy is complete before seq is read again. */
		atomic_thread_fence(memory_order_acquire);
		uint64_t s2 = atomic_load_explicit(&s->seq, memory_order_relaxed);
		if (s1 == s2) {
			copy->name[SHMF_NAME_MAX] = '\0';
			return 0;
		}
	}
	return -EBUSY;
}

void shmf_slot_write_begin(struct shmf_slot *s)
{
	uint64_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
	atomic_store_explicit(&s->seq, q | 1, memory_order_relaxed);
	/* release fence: seq is odd before any field changes. */
	atomic_thread_fence(memory_order_release);
}

void shmf_slot_write_end(struct shmf_slot *s)
{
	uint64_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
	/* release: pairs with the acquire load in shmf_slot_read. */
	atomic_store_explicit(&s->seq, (q | 1) + 1, memory_order_release);
}

int shmf_slot_check(const struct shmf_slot *s)
{
	uint64_t gen = atomic_load_explicit(&((struct shmf_slot *)s)->generation, memory_order_relaxed);
	if (gen == 0)
		return SHMF_E_NOTFOUND;
	if (shmf_geometry_check(s->type, s->scheme, s->k, s->bucket_size, s->nblocks, s->nbuckets) < 0 ||
	    s->data_bytes != SHMF_DATA_BLOCKS_OFF + s->nblocks * SHMF_BLOCK_BYTES ||
	    memchr(s->name, '\0', sizeof(s->name)) == NULL || shmf_name_check(s->name) < 0 ||
	    (s->flags & ~SHMF_SLOT_FLAGS) != 0 ||
	    (s->type == SHMF_TYPE_CUCKOO ? s->lock_timeout_ms > SHMF_CUCKOO_LOCK_TIMEOUT_MAX : s->lock_timeout_ms != 0))
		return SHMF_E_FORMAT;
	/* An import is one read-only generation: no window, layer or journal;
	 * so is a static filter. */
	if ((s->scheme != SHMF_SCHEME_NATIVE || s->type == SHMF_TYPE_STATIC) &&
	    (s->flags != 0 || s->window_gens != 0 || s->nlive != 1))
		return SHMF_E_FORMAT;
	if (s->flags & SHMF_SLOT_LAYERED) {
		/* A growing filter: no window, no NONSCALING, up to
		 * shmf_layers_max() layers; the generation word is its newest
		 * file's, or (the standby promoted to current) that plus one. */
		if (s->window_secs != 0 || s->window_gens != 0 || (s->flags & SHMF_SLOT_NONSCALING) ||
		    s->expansion == 0 || s->expansion > SHMF_EXPANSION_MAX || s->nlive == 0 ||
		    s->nlive > shmf_layers_max(s->type) || ((s->flags & SHMF_SLOT_STANDBY) && s->nlive < 2))
			return SHMF_E_FORMAT;
		if (s->live[0] != gen && ((s->flags & SHMF_SLOT_STANDBY) || s->live[0] + 1 != gen))
			return SHMF_E_FORMAT;
	} else {
		/* The ring of a time window, or one generation. */
		if (s->expansion != 0 || (s->flags & SHMF_SLOT_STANDBY) ||
		    ((s->flags & SHMF_SLOT_NONSCALING) && (s->type != SHMF_TYPE_BLOOM || s->window_gens != 0)) ||
		    s->window_gens > SHMF_WINDOW_MAX || (s->window_gens == 0) != (s->window_secs == 0) ||
		    s->nlive == 0 || s->nlive > (s->window_gens ? s->window_gens : 1) || s->live[0] != gen ||
		    s->window_secs > SHMF_WINDOW_SECS_MAX)
			return SHMF_E_FORMAT;
		/* Each generation's window number fits the journal's 32 bits. */
		for (unsigned i = 0; s->window_secs != 0 && i < s->nlive; i++)
			if (s->live_created[i] / s->window_secs > SHMF_WINDOW_NUM_MAX)
				return SHMF_E_FORMAT;
	}
	/* Newest first, all distinct and older than the newest. */
	for (unsigned i = 1; i < s->nlive; i++)
		if (s->live[i] == 0 || s->live[i] >= s->live[i - 1])
			return SHMF_E_FORMAT;
	return 0;
}

int shmf_slot_layer(const struct shmf_slot *s, unsigned j, struct shmf_layer *out)
{
	if (j >= s->nlive || s->nlive > SHMF_RING_MAX)
		return SHMF_E_FORMAT;
	/* An import is one read-only generation: no window, layer or journal;
	 * so is a static filter. */
	if ((s->scheme != SHMF_SCHEME_NATIVE || s->type == SHMF_TYPE_STATIC) &&
	    (s->flags != 0 || s->window_gens != 0 || s->nlive != 1))
		return SHMF_E_FORMAT;
	if (s->flags & SHMF_SLOT_LAYERED) {
		double fpr;
		memcpy(&fpr, &s->fpr_bits, sizeof(fpr));
		int r = shmf_geometry_layer((int)s->type, s->capacity, fpr, 0, s->bucket_size, s->expansion,
					    s->nlive - 1 - j, out);
		if (r < 0)
			return SHMF_E_FORMAT;
		/* Layer 0's shape is the slot's. */
		if (j == s->nlive - 1 && (out->g.k != s->k || out->g.nblocks != s->nblocks ||
					  out->g.nbuckets != s->nbuckets || out->g.bucket_size != s->bucket_size))
			return SHMF_E_FORMAT;
		return 0;
	}
	out->capacity = s->capacity;
	memcpy(&out->fpr, &s->fpr_bits, sizeof(out->fpr));
	out->g = (struct shmf_geometry){ .type = s->type,
					 .k = s->k,
					 .nblocks = s->nblocks,
					 .nbuckets = s->nbuckets,
					 .bucket_size = s->bucket_size,
					 .scheme = s->scheme,
					 .data_bytes = s->data_bytes };
	return 0;
}

int shmf_slot_find(const struct shmf_ctl_map *m, const char *name, struct shmf_slot *copy)
{
	for (unsigned i = 0; i < SHMF_SLOTS; i++) {
		struct shmf_slot *s = &m->slots[i];
		/* Cheap pre-filter on the live name; the seqlock copy decides. */
		if (atomic_load_explicit(&s->generation, memory_order_relaxed) == 0)
			continue;
		if (strncmp((const char *)s->name, name, sizeof(s->name)) != 0)
			continue;
		int r = shmf_slot_read(s, copy);
		if (r < 0)
			return r;
		if (atomic_load_explicit(&copy->generation, memory_order_relaxed) == 0 || strcmp(copy->name, name) != 0)
			continue;
		r = shmf_slot_check(copy);
		return r < 0 ? r : (int)i;
	}
	return SHMF_E_NOTFOUND;
}

/* Header @p h of generation @p gen of the filter in @p slot, shaped as
 * @p want says (a layer's shape and size, never the file's own word). */
static int header_check_layer(const struct shmf_data_header *h, const struct shmf_slot *slot, uint64_t gen,
			      const struct shmf_layer *want, uint64_t file_size)
{
	const struct shmf_geometry *g = &want->g;
	if (file_size < SHMF_DATA_BLOCKS_OFF || h->magic != SHMF_DATA_MAGIC)
		return SHMF_E_FORMAT;
	if (h->version != SHMF_FORMAT_VERSION)
		return SHMF_E_VERSION;
	if (h->layout != shmf_layout_fingerprint())
		return SHMF_E_LAYOUT;
	if (h->header_size != sizeof(*h) || h->type != slot->type || h->k != g->k || h->nblocks != g->nblocks ||
	    h->nbuckets != g->nbuckets || h->bucket_size != g->bucket_size || h->scheme != slot->scheme ||
	    shmf_geometry_check(h->type, h->scheme, h->k, h->bucket_size, h->nblocks, h->nbuckets) < 0 ||
	    (h->type == SHMF_TYPE_CUCKOO && h->scheme == SHMF_SCHEME_NATIVE
		     ? h->max_kicks == 0 || h->max_kicks > SHMF_CUCKOO_KICKS_LIMIT
		     : h->max_kicks != 0) ||
	    h->blocks_offset != SHMF_DATA_BLOCKS_OFF || h->counters_offset != SHMF_DATA_COUNTERS_OFF ||
	    h->generation != gen || memchr(h->name, '\0', sizeof(h->name)) == NULL || strcmp(h->name, slot->name) != 0)
		return SHMF_E_FORMAT;
	/* A layer's capacity decides when it is full: the function's, checked. */
	if ((slot->flags & SHMF_SLOT_LAYERED) && h->capacity != want->capacity)
		return SHMF_E_FORMAT;
	if (h->nblocks > (SHMF_DATA_MAX_BYTES - SHMF_DATA_BLOCKS_OFF) / SHMF_BLOCK_BYTES ||
	    file_size != SHMF_DATA_BLOCKS_OFF + h->nblocks * SHMF_BLOCK_BYTES)
		return SHMF_E_FORMAT;
	return 0;
}

/* Where generation @p gen is in the slot's ring, or nlive if it is not there. */
static unsigned ring_index(const struct shmf_slot *slot, uint64_t gen)
{
	unsigned j = 0;
	while (j < slot->nlive && j < SHMF_RING_MAX && slot->live[j] != gen)
		j++;
	return j < slot->nlive ? j : slot->nlive;
}

/* The shape generation @p gen must have: its layer's in a growing filter
 * (when it is in the ring), else the slot's. */
static int expected_shape(const struct shmf_slot *slot, uint64_t gen, struct shmf_layer *want)
{
	unsigned j = ring_index(slot, gen);
	if ((slot->flags & SHMF_SLOT_LAYERED) && j < slot->nlive)
		return shmf_slot_layer(slot, j, want);
	struct shmf_slot plain = *slot;
	plain.flags &= ~(uint32_t)SHMF_SLOT_LAYERED;
	plain.nlive = 1;
	return shmf_slot_layer(&plain, 0, want);
}

/* The newest generation's file: live[0] (a promoted standby's generation
 * word is one past it), or the generation word of a slot copy made up
 * without a ring (shmd, for a file it is filling). */
static uint64_t newest(const struct shmf_slot *slot)
{
	return slot->nlive != 0 ? slot->live[0]
				: atomic_load_explicit(&((struct shmf_slot *)slot)->generation, memory_order_relaxed);
}

int shmf_data_header_check(const struct shmf_data_header *h, const struct shmf_slot *slot, uint64_t file_size)
{
	struct shmf_layer want;
	int r = expected_shape(slot, newest(slot), &want);
	return r < 0 ? r : header_check_layer(h, slot, newest(slot), &want, file_size);
}

int shmf_data_map_open(const struct shmf_dir *dir, const struct shmf_slot *slot, int writable,
		       struct shmf_data_map *out)
{
	return shmf_data_map_open_gen(dir, slot, newest(slot), writable, out);
}

int shmf_data_map_open_gen(const struct shmf_dir *dir, const struct shmf_slot *slot, uint64_t gen, int writable,
			   struct shmf_data_map *out)
{
	char fname[128];
	struct stat st;
	struct shmf_layer want;
	int r = expected_shape(slot, gen, &want);
	if (r < 0)
		return r;
	if ((r = shmf_data_filename(slot->name, gen, fname, sizeof(fname))) < 0)
		return r;
	int fd = shmf_dir_open_member(dir, fname, writable, S_IWOTH, &st);
	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size != want.g.data_bytes || (uint64_t)st.st_size < SHMF_DATA_BLOCKS_OFF) {
		close(fd);
		return SHMF_E_FORMAT;
	}
	if (pread(fd, &out->hdr, sizeof(out->hdr), 0) != (ssize_t)sizeof(out->hdr)) {
		close(fd);
		return SHMF_E_FORMAT;
	}
	if ((r = header_check_layer(&out->hdr, slot, gen, &want, (uint64_t)st.st_size)) < 0) {
		close(fd);
		return r;
	}
	size_t len = (size_t)st.st_size;
	void *p = NULL;
	if ((r = shmf_map_file(fd, (uint64_t)st.st_size, writable, &p)) < 0)
		return r;
	/* Ask for transparent huge pages where the tmpfs allows them; a no-op
	 * (and harmless) elsewhere. */
	(void)madvise(p, len, MADV_HUGEPAGE);
	out->fd = fd;
	out->len = len;
	out->base = p;
	out->blocks = (uint64_t *)((char *)p + SHMF_DATA_BLOCKS_OFF);
	out->counters = (struct shmf_counter *)((char *)p + SHMF_DATA_COUNTERS_OFF);
	out->state = (struct shmf_layer_state *)((char *)p + SHMF_DATA_STATE_OFF);
	return 0;
}

void shmf_data_map_close(struct shmf_data_map *m)
{
	if (m->base != NULL)
		munmap(m->base, m->len);
	if (m->fd >= 0)
		close(m->fd);
	m->base = NULL;
	m->fd = -1;
}

int shmf_journal_header_check(const struct shmf_journal_header *h, const char *name, uint64_t file_size)
{
	if (file_size < SHMF_JOURNAL_HDR_BYTES || h->magic != SHMF_JOURNAL_MAGIC)
		return SHMF_E_FORMAT;
	if (h->version != SHMF_FORMAT_VERSION)
		return SHMF_E_VERSION;
	if (h->layout != shmf_layout_fingerprint())
		return SHMF_E_LAYOUT;
	if (h->header_size != sizeof(*h) || h->entry_size != sizeof(struct shmf_journal_entry) ||
	    h->ring_header_size != sizeof(struct shmf_journal_ring) || h->rings_offset != SHMF_JOURNAL_HDR_BYTES ||
	    h->nrings == 0 || h->nrings > SHMF_JOURNAL_RINGS_MAX || h->ring_entries < SHMF_JOURNAL_ENTRIES_MIN ||
	    h->ring_entries > SHMF_JOURNAL_ENTRIES_MAX || (h->ring_entries & (h->ring_entries - 1)) != 0 ||
	    h->ring_bytes != shmf_journal_ring_bytes(h->ring_entries) ||
	    memchr(h->name, '\0', sizeof(h->name)) == NULL || (name != NULL && strcmp(h->name, name) != 0))
		return SHMF_E_FORMAT;
	/* No overflow: at most 2^12 rings of 2^28 + 192 bytes. */
	if (file_size != shmf_journal_bytes(h->nrings, h->ring_entries))
		return SHMF_E_FORMAT;
	return 0;
}

uint64_t shmf_data_items(const struct shmf_data_map *m)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < SHMF_ITEM_STRIPES; i++)
		sum += atomic_load_explicit(&m->counters[i].items, memory_order_relaxed);
	return sum;
}

uint64_t shmf_data_deletes(const struct shmf_data_map *m)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < SHMF_ITEM_STRIPES; i++)
		sum += atomic_load_explicit(&m->counters[i].deletes, memory_order_relaxed);
	return sum;
}

int shmf_map_file(int fd, uint64_t size, int writable, void **out)
{
	if (size > SIZE_MAX) {
		close(fd);
		return SHMF_E_TOOBIG;
	}
	void *p = mmap(NULL, (size_t)size, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		int r = -errno;
		close(fd);
		return r;
	}
	*out = p;
	return 0;
}
