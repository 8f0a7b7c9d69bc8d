/* journal.c - the fleet journal: creation, the adders' slow path, draining. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "libclient/journal.h"
#include "libclient/rundir.h"

/* Adds missed between two tries of a writer that found no journal or no
 * free ring, at most: a try costs an open() (or a scan of the owners), so
 * a host whose journal is gone pays it once per this many adds. */
#define BACKOFF_MAX 1024u

/* Entries a drain copies out per call of the callback. */
#define DRAIN_BATCH 512u

int shmf_journal_filename(const char *name, char *buf, size_t size)
{
	size_t n = strlen(name);
	if (n + sizeof(SHMF_JOURNAL_SUFFIX) > size)
		return -ENAMETOOLONG;
	memcpy(buf, name, n);
	memcpy(buf + n, SHMF_JOURNAL_SUFFIX, sizeof(SHMF_JOURNAL_SUFFIX));
	return 0;
}

/* ---- Creation ---------------------------------------------------------- */

static int sizes_valid(unsigned nrings, unsigned ring_entries)
{
	return nrings >= 1 && nrings <= SHMF_JOURNAL_RINGS_MAX && ring_entries >= SHMF_JOURNAL_ENTRIES_MIN &&
	       ring_entries <= SHMF_JOURNAL_ENTRIES_MAX && (ring_entries & (ring_entries - 1)) == 0;
}

int shmf_journal_create(int dirfd, const char *name, mode_t mode, gid_t gid, unsigned nrings, unsigned ring_entries)
{
	char fname[SHMF_NAME_MAX + sizeof(SHMF_JOURNAL_SUFFIX)];
	struct shmf_journal_header h = { 0 };
	int r = shmf_name_check(name);
	if (r < 0)
		return r;
	if (!sizes_valid(nrings, ring_entries) || (mode & ~(mode_t)0777) || (mode & S_IWOTH))
		return SHMF_E_INVAL;
	if ((r = shmf_journal_filename(name, fname, sizeof(fname))) < 0)
		return r;
	uint64_t bytes = shmf_journal_bytes(nrings, ring_entries);
	if (bytes > (uint64_t)INT64_MAX)
		return SHMF_E_TOOBIG;
	int fd = openat(dirfd, fname, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return errno == EEXIST ? SHMF_E_EXISTS : -errno;
	/* The mode exactly (not masked by the umask), as for data segments. */
	if (fchmod(fd, mode) < 0 || (gid != (gid_t)-1 && fchown(fd, (uid_t)-1, gid) < 0)) {
		r = -errno;
		goto bad;
	}
	/* Every page now: a full tmpfs is an error here, not a SIGBUS in an
	 * adder later. The rings start zeroed: every owner free, every op 0. */
	if (ftruncate(fd, (off_t)bytes) < 0) {
		r = -errno;
		goto bad;
	}
	if ((r = posix_fallocate(fd, 0, (off_t)bytes)) != 0) {
		r = -r;
		goto bad;
	}
	h.magic = SHMF_JOURNAL_MAGIC;
	h.version = SHMF_FORMAT_VERSION;
	h.header_size = sizeof(h);
	h.layout = shmf_layout_fingerprint();
	h.nrings = nrings;
	h.ring_entries = ring_entries;
	h.entry_size = sizeof(struct shmf_journal_entry);
	h.ring_header_size = sizeof(struct shmf_journal_ring);
	h.rings_offset = SHMF_JOURNAL_HDR_BYTES;
	h.ring_bytes = shmf_journal_ring_bytes(ring_entries);
	h.created_epoch = (uint64_t)time(NULL);
	memcpy(h.name, name, strlen(name) + 1);
	if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		r = -EIO;
		goto bad;
	}
	close(fd);
	return 0;
bad:
	close(fd);
	unlinkat(dirfd, fname, 0);
	return r;
}

/* Open, check and map the journal of @p name. @p hdr receives the
 * validated private copy of its header. */
static int journal_map(const struct shmf_dir *dir, const char *name, int writable, struct shmf_journal_header *hdr,
		       int *fd_out, void **base_out, size_t *len_out)
{
	char fname[SHMF_NAME_MAX + sizeof(SHMF_JOURNAL_SUFFIX)];
	struct stat st;
	int r = shmf_journal_filename(name, fname, sizeof(fname));
	if (r < 0)
		return r;
	int fd = shmf_dir_open_member(dir, fname, writable, S_IWOTH, &st);
	if (fd < 0)
		return fd;
	/* Validate a private copy read with pread before mapping anything. */
	if ((uint64_t)st.st_size < SHMF_JOURNAL_HDR_BYTES || pread(fd, hdr, sizeof(*hdr), 0) != (ssize_t)sizeof(*hdr)) {
		close(fd);
		return SHMF_E_FORMAT;
	}
	if ((r = shmf_journal_header_check(hdr, name, (uint64_t)st.st_size)) < 0) {
		close(fd);
		return r;
	}
	void *p = NULL;
	if ((r = shmf_map_file(fd, (uint64_t)st.st_size, writable, &p)) < 0)
		return r;
	*fd_out = fd;
	*base_out = p;
	*len_out = (size_t)st.st_size;
	return 0;
}

/* ---- The adders' side -------------------------------------------------- */

_Atomic uint32_t shmf_journal_fork_epoch;

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void on_fork_child(void)
{
	/* Every claim made before the fork is the parent's now. */
	atomic_fetch_add_explicit(&shmf_journal_fork_epoch, 1, memory_order_relaxed);
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, on_fork_child);
}

/* Claim tokens of this process: they tell two claims of one pid apart. */
static _Atomic uint32_t claim_tokens;

struct shmf_journal_writer *shmf_journal_writer_new(const struct shmf_dir *dir, const char *name)
{
	pthread_once(&atfork_once, register_atfork);
	struct shmf_journal_writer *w = calloc(1, sizeof(*w));
	if (w == NULL)
		return NULL;
	pthread_mutex_init(&w->lock, NULL);
	w->fd = -1;
	w->backoff = 1;
	w->dir = dir;
	w->name = name;
	return w;
}

static struct shmf_journal_ring *ring_at(char *rings, uint64_t ring_bytes, uint32_t i)
{
	return (struct shmf_journal_ring *)(rings + (uint64_t)i * ring_bytes);
}

static int writer_map_locked(struct shmf_journal_writer *w)
{
	struct shmf_journal_header h;
	int r = journal_map(w->dir, w->name, 1, &h, &w->fd, &w->base, &w->len);
	if (r < 0)
		return r;
	w->rings = (char *)w->base + SHMF_JOURNAL_HDR_BYTES;
	w->ring_bytes = h.ring_bytes;
	w->mask = h.ring_entries - 1;
	w->nrings = h.nrings;
	return 0;
}

/* Claim a free ring for this process, starting the search at a place of
 * the pid's so that processes starting together do not all CAS ring 0. */
static int writer_claim_locked(struct shmf_journal_writer *w)
{
	uint32_t epoch = atomic_load_explicit(&shmf_journal_fork_epoch, memory_order_relaxed);
	uint32_t token = (atomic_fetch_add_explicit(&claim_tokens, 1, memory_order_relaxed) + 1) &
			 (uint32_t)(SHMF_JOURNAL_OWNER_CLOSED - 1);
	uint64_t pid = (uint64_t)getpid();
	uint64_t mine = pid << 32 | (token ? token : 1);
	for (uint32_t n = 0; n < w->nrings; n++) {
		uint32_t i = (uint32_t)((pid + n) % w->nrings);
		struct shmf_journal_ring *r = ring_at(w->rings, w->ring_bytes, i);
		uint64_t expect = 0;
		/* acq_rel: acquire pairs with shmd's release of a ring it freed
		 * (its drain is complete); release orders nothing of ours yet. */
		if (atomic_load_explicit(&r->owner, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_strong_explicit(&r->owner, &expect, mine, memory_order_acq_rel,
							    memory_order_relaxed)) {
			w->owner = mine;
			/* release: pairs with the acquire load in shmf_journal_put(). */
			atomic_store_explicit(&w->claim, (uint64_t)epoch << 32 | (i + 1), memory_order_release);
			return 0;
		}
	}
	return SHMF_E_FULL;
}

/* Tell shmd, through the header, of the adds missed since the last report
 * (written only while a handle cannot journal, and at its close). */
static void writer_report_locked(struct shmf_journal_writer *w)
{
	uint64_t missed = atomic_load_explicit(&w->missed, memory_order_relaxed);
	if (w->base == NULL || missed == w->reported)
		return;
	struct shmf_journal_header *h = w->base;
	atomic_fetch_add_explicit(&h->missed, missed - w->reported, memory_order_relaxed);
	w->reported = missed;
}

/* The claim of this process, or 0. */
static uint64_t current_claim(const struct shmf_journal_writer *w)
{
	uint64_t c = atomic_load_explicit(&((struct shmf_journal_writer *)w)->claim, memory_order_acquire);
	if ((uint32_t)c == 0 ||
	    (uint32_t)(c >> 32) != atomic_load_explicit(&shmf_journal_fork_epoch, memory_order_relaxed))
		return 0;
	return c;
}

void shmf_journal_put_slow(struct shmf_journal_writer *w, uint64_t hash, uint32_t op, uint32_t window)
{
	/* Backing off: count and go, no lock. */
	if (atomic_load_explicit(&w->missed, memory_order_relaxed) <
	    atomic_load_explicit(&w->retry_at, memory_order_relaxed)) {
		atomic_fetch_add_explicit(&w->missed, 1, memory_order_relaxed);
		return;
	}
	pthread_mutex_lock(&w->lock);
	int r = 0;
	uint64_t c = current_claim(w);
	if (c == 0) {
		/* No ring in this process yet (first add, or first since fork). */
		if (w->base == NULL)
			r = writer_map_locked(w);
		if (r == 0)
			r = writer_claim_locked(w);
		c = r == 0 ? current_claim(w) : 0;
	}
	if (c == 0) {
		uint64_t missed = atomic_fetch_add_explicit(&w->missed, 1, memory_order_relaxed) + 1;
		atomic_store_explicit(&w->retry_at, missed + w->backoff, memory_order_relaxed);
		if (w->backoff < BACKOFF_MAX)
			w->backoff *= 2;
		w->error = r;
		writer_report_locked(w);
		pthread_mutex_unlock(&w->lock);
		return;
	}
	w->backoff = 1;
	w->error = 0;
	writer_report_locked(w);
	pthread_mutex_unlock(&w->lock);
	shmf_journal_put_ring(ring_at(w->rings, w->ring_bytes, (uint32_t)c - 1), w->mask, hash, op, window);
}

void shmf_journal_writer_free(struct shmf_journal_writer *w)
{
	if (w == NULL)
		return;
	writer_report_locked(w);
	uint64_t c = current_claim(w);
	if (c != 0) {
		struct shmf_journal_ring *r = ring_at(w->rings, w->ring_bytes, (uint32_t)c - 1);
		/* No call on the handle runs now, so nothing more is reserved:
		 * an empty ring is free at once, another is shmd's to free once
		 * it has drained it. */
		uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
		uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
		uint64_t expect = w->owner, to = head == tail ? 0 : w->owner | SHMF_JOURNAL_OWNER_CLOSED;
		/* release: our entries are written before the ring is given up. */
		atomic_compare_exchange_strong_explicit(&r->owner, &expect, to, memory_order_release,
							memory_order_relaxed);
	}
	if (w->base != NULL)
		munmap(w->base, w->len);
	if (w->fd >= 0)
		close(w->fd);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

void shmf_journal_writer_stats(struct shmf_journal_writer *w, struct shmf_journal_writer_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->ring = -1;
	if (w == NULL)
		return;
	out->journals = 1;
	pthread_mutex_lock(&w->lock);
	uint64_t c = current_claim(w);
	if (c != 0) {
		out->ring = (int)((uint32_t)c - 1);
		out->dropped = atomic_load_explicit(&ring_at(w->rings, w->ring_bytes, (uint32_t)c - 1)->dropped,
						    memory_order_relaxed);
	}
	out->error = w->error;
	out->missed = atomic_load_explicit(&w->missed, memory_order_relaxed);
	pthread_mutex_unlock(&w->lock);
}

/* ---- Draining ---------------------------------------------------------- */

/* What the reader keeps of each ring: its own tail (the shared one is
 * writable by every adder, so it is only ever stored, and compared), and
 * its counts. */
struct reader_ring {
	uint64_t tail;
	uint64_t lost, drained, damaged;
};

struct shmf_journal_reader {
	int fd;
	void *base;
	size_t len;
	char *rings;
	uint64_t ring_bytes; /* from the private header copy, as are: */
	uint32_t nrings, mask;
	uint32_t next; /* the ring the next drain starts at (fairness) */
	uint64_t reclaimed;
	struct shmf_journal_header hdr;
	struct reader_ring r[];
};

int shmf_journal_reader_open(const struct shmf_dir *dir, const char *name, struct shmf_journal_reader **out)
{
	struct shmf_journal_header h;
	int fd;
	void *base;
	size_t len;
	/* Read-write: draining zeroes entries and stores tails. */
	int r = journal_map(dir, name, 1, &h, &fd, &base, &len);
	if (r < 0)
		return r;
	struct shmf_journal_reader *jr = calloc(1, sizeof(*jr) + h.nrings * sizeof(jr->r[0]));
	if (jr == NULL) {
		munmap(base, len);
		close(fd);
		return -ENOMEM;
	}
	jr->fd = fd;
	jr->base = base;
	jr->len = len;
	jr->hdr = h;
	jr->rings = (char *)base + SHMF_JOURNAL_HDR_BYTES;
	jr->ring_bytes = h.ring_bytes;
	jr->nrings = h.nrings;
	jr->mask = h.ring_entries - 1;
	/* Where a previous reader (a shmd that restarted) stopped. */
	for (uint32_t i = 0; i < jr->nrings; i++)
		jr->r[i].tail = atomic_load_explicit(&ring_at(jr->rings, jr->ring_bytes, i)->tail,
						     memory_order_relaxed);
	*out = jr;
	return 0;
}

void shmf_journal_reader_close(struct shmf_journal_reader *r)
{
	if (r == NULL)
		return;
	munmap(r->base, r->len);
	close(r->fd);
	free(r);
}

/* Can the owner @p owner still write to its ring? Free, closed, and
 * impossible owners cannot; a pid is asked only if @p ask. */
static int owner_gone(uint64_t owner, int ask)
{
	if (owner == 0 || (owner & SHMF_JOURNAL_OWNER_CLOSED))
		return 1;
	uint64_t pid = owner >> 32;
	/* 0 or past any pid: scribbled (and never a process group for kill()). */
	if (pid == 0 || pid > INT_MAX)
		return 1;
	if (!ask)
		return 0;
	/* EPERM: alive, another user's. */
	return kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

static int op_valid(uint32_t op)
{
	return op >= 1 && op <= SHMF_JOP_MAX;
}

/* A ring whose head and tail make no sense: count the written entries as
 * lost, zero them all, and start again from head. */
static void ring_reset(struct shmf_journal_reader *jr, uint32_t i, struct shmf_journal_ring *ring, uint64_t head)
{
	struct shmf_journal_entry *e = (struct shmf_journal_entry *)(ring + 1);
	uint64_t lost = 0;
	for (uint64_t j = 0; j <= jr->mask; j++)
		if (atomic_exchange_explicit(&e[j].op, 0, memory_order_acquire) != 0)
			lost++;
	jr->r[i].tail = head;
	jr->r[i].lost += lost;
	jr->r[i].damaged++;
	atomic_store_explicit(&ring->lost, jr->r[i].lost, memory_order_relaxed);
	atomic_store_explicit(&ring->tail, head, memory_order_release);
}

/* Drain ring @p i, one ring's worth at most. @return entries consumed,
 * or fn's negative code. */
static int64_t drain_ring(struct shmf_journal_reader *jr, uint32_t i, shmf_journal_fn fn, void *arg, unsigned flags,
			  struct shmf_jentry *buf)
{
	struct shmf_journal_ring *ring = ring_at(jr->rings, jr->ring_bytes, i);
	struct shmf_journal_entry *e = (struct shmf_journal_entry *)(ring + 1);
	struct reader_ring *rs = &jr->r[i];
	const uint64_t n_entries = (uint64_t)jr->mask + 1;

	/* The shared tail is ours alone to write; an adder changed it. */
	if (atomic_load_explicit(&ring->tail, memory_order_relaxed) != rs->tail) {
		rs->damaged++;
		atomic_store_explicit(&ring->tail, rs->tail, memory_order_release);
	}
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	if (head - rs->tail > n_entries) {
		ring_reset(jr, i, ring, head);
		return 0;
	}
	int64_t consumed = 0;
	int gone = -1; /* the owner: not asked yet */
	while (rs->tail != head) {
		uint64_t pos = rs->tail, lost = 0;
		size_t n = 0;
		while (pos != head && n < DRAIN_BATCH) {
			struct shmf_journal_entry *x = &e[pos & jr->mask];
			/* acquire: pairs with the adder's release store of op. */
			uint32_t op = atomic_load_explicit(&x->op, memory_order_acquire);
			if (op == 0) {
				/* Reserved, not written yet: wait for it, unless its
				 * writer is gone and never will. */
				if (gone < 0)
					gone = owner_gone(atomic_load_explicit(&ring->owner, memory_order_relaxed), 1);
				if (!gone || (op = atomic_load_explicit(&x->op, memory_order_acquire)) == 0) {
					if (!gone)
						break;
					lost++;
					pos++;
					continue;
				}
			}
			if (!op_valid(op)) {
				lost++;
				pos++;
				continue;
			}
			buf[n].hash = atomic_load_explicit(&x->hash, memory_order_relaxed);
			buf[n].window = atomic_load_explicit(&x->window, memory_order_relaxed);
			buf[n].op = op;
			n++;
			pos++;
		}
		if (pos == rs->tail)
			break; /* waiting for a writer */
		if (n > 0) {
			int r = fn(arg, i, buf, n);
			if (r < 0)
				return r;
		}
		/* Consume: zero, then publish the new tail. */
		for (uint64_t p = rs->tail; p != pos; p++)
			atomic_store_explicit(&e[p & jr->mask].op, 0, memory_order_relaxed);
		rs->tail = pos;
		rs->lost += lost;
		rs->drained += n;
		consumed += (int64_t)n;
		if (lost)
			atomic_store_explicit(&ring->lost, rs->lost, memory_order_relaxed);
		/* release: pairs with the adders' acquire load of tail; the
		 * zeroed entries are free for them after it. */
		atomic_store_explicit(&ring->tail, pos, memory_order_release);
	}
	/* A drained ring whose owner will not write again is free. */
	uint64_t owner = atomic_load_explicit(&ring->owner, memory_order_acquire);
	if (owner != 0 && atomic_load_explicit(&ring->head, memory_order_relaxed) == rs->tail &&
	    owner_gone(owner, (flags & SHMF_JDRAIN_RECLAIM) != 0)) {
		/* release: pairs with the next claimer's acquire CAS. */
		if (atomic_compare_exchange_strong_explicit(&ring->owner, &owner, 0, memory_order_release,
							    memory_order_relaxed))
			jr->reclaimed++;
	}
	return consumed;
}

int shmf_journal_drain(struct shmf_journal_reader *jr, shmf_journal_fn fn, void *arg, unsigned flags)
{
	struct shmf_jentry buf[DRAIN_BATCH];
	int64_t total = 0;
	uint32_t start = jr->next;
	jr->next = (start + 1) % jr->nrings;
	for (uint32_t n = 0; n < jr->nrings; n++) {
		uint32_t i = (start + n) % jr->nrings;
		/* A free, empty ring costs two loads. */
		struct shmf_journal_ring *ring = ring_at(jr->rings, jr->ring_bytes, i);
		if (atomic_load_explicit(&ring->owner, memory_order_relaxed) == 0 &&
		    atomic_load_explicit(&ring->head, memory_order_relaxed) == jr->r[i].tail &&
		    atomic_load_explicit(&ring->tail, memory_order_relaxed) == jr->r[i].tail)
			continue;
		int64_t r = drain_ring(jr, i, fn, arg, flags, buf);
		if (r < 0)
			return (int)r;
		total += r;
	}
	return total > INT_MAX ? INT_MAX : (int)total;
}

void shmf_journal_stats(const struct shmf_journal_reader *jr, struct shmf_journal_stats *total,
			struct shmf_journal_ring_stats *rings, size_t n)
{
	memset(total, 0, sizeof(*total));
	total->nrings = jr->nrings;
	total->ring_entries = jr->mask + 1;
	total->reclaimed = jr->reclaimed;
	total->missed = atomic_load_explicit(&((struct shmf_journal_header *)jr->base)->missed, memory_order_relaxed);
	for (uint32_t i = 0; i < jr->nrings; i++) {
		struct shmf_journal_ring *ring = ring_at(jr->rings, jr->ring_bytes, i);
		struct shmf_journal_ring_stats s;
		s.owner = atomic_load_explicit(&ring->owner, memory_order_relaxed);
		uint64_t depth = atomic_load_explicit(&ring->head, memory_order_relaxed) - jr->r[i].tail;
		s.depth = depth > (uint64_t)jr->mask + 1 ? (uint64_t)jr->mask + 1 : depth; /* damaged: at most a ring */
		s.dropped = atomic_load_explicit(&ring->dropped, memory_order_relaxed);
		s.lost = jr->r[i].lost;
		s.drained = jr->r[i].drained;
		s.damaged = jr->r[i].damaged;
		total->claimed += s.owner != 0;
		total->depth += s.depth;
		total->dropped += s.dropped;
		total->lost += s.lost;
		total->drained += s.drained;
		total->damaged += s.damaged;
		if (rings != NULL && i < n)
			rings[i] = s;
	}
}
