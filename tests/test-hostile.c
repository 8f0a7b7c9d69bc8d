/*
 * test-hostile.c - segments written by a buggy (or hostile) writer. The
 * client library trusts nothing it maps; this test scribbles over what it
 * maps and shows that clients refuse or stay within bounds, with no crash
 * and (in the sanitizer build) no out-of-bounds access:
 *
 *   fields    - every field of the control header, of a slot and of a
 *               data header, set in turn to values at and past the limits
 *               of what it may hold, for a Bloom, a cuckoo and a windowed
 *               filter; each time clients open the filter read-only and
 *               read-write and use every call;
 *   payload   - random bytes over the payload of open handles (Bloom
 *               blocks, the cuckoo relocation state, version stripes and
 *               buckets, the item counters); every call still answers
 *               within bounds, in bounded time;
 *   racing    - a writer scribbling over the slot and the payload while
 *               two processes use the filter;
 *   daemon    - the daemon's own code on a hostile control file: rotate,
 *               snapshot, info, drop and a restart refuse a slot whose
 *               ring is out of range instead of overrunning their arrays.
 *
 * What a writer can do that no reader can defend against is left out:
 * truncating a file that clients have mapped (their next access to the
 * lost pages raises SIGBUS), and keeping the slot's sequence odd (every
 * reader then spends shmf_slot_read()'s bounded retries, one to ten
 * seconds, and gets -EBUSY; the long mode tests that once).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libclient/cuckoo.h"
#include "tests/fixture.h"
#include "libclient/rundir.h"
#include "shmd/store/expires.h"
#include "shmd/store/quotas.h"

static struct fixture fx;
static int long_mode;

/* What is being tried, printed if the process dies of it. */
static char current[256];

static void on_fatal(int sig)
{
	static const char pre[] = "\ntest-hostile: died while trying: ";
	(void)!write(2, pre, sizeof(pre) - 1);
	(void)!write(2, current, strlen(current));
	(void)!write(2, "\n", 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_fatal(void)
{
	signal(SIGSEGV, on_fatal);
	signal(SIGBUS, on_fatal);
	signal(SIGABRT, on_fatal);
	signal(SIGFPE, on_fatal);
	signal(SIGALRM, on_fatal); /* a call that does not come back */
}

static uint64_t rng = 0x1234567;

static uint64_t rnd(void)
{
	return fixture_random(&rng);
}

/* ---- Using a filter: every call, each answer checked for range ---------- */

/* In a forked user process a failure must end that process (cmocka's
 * longjmp would run the rest of the test program in it). */
static int in_child;

#define fail_here(...)                                \
	do {                                          \
		if (in_child) {                       \
			fprintf(stderr, __VA_ARGS__); \
			fputc('\n', stderr);          \
			_exit(3);                     \
		}                                     \
		fail_msg(__VA_ARGS__);                \
	} while (0)

static void result(int r, int max, const char *call)
{
	int is_errno = r < 0 && r >= -4095, is_lib = r >= SHMF_E_FIRST && r <= SHMF_E_LAST;
	if (r > max || (r < 0 && !is_errno && !is_lib))
		fail_here("%s: %s returned %d", current, call, r);
}

/* Every call on @p f; adds are undone by deletes where the type allows,
 * so that the filter does not fill up over thousands of tries. */
static void use(shmf_t *f, int rdwr)
{
	char kb[8][32];
	shmf_key_t k[8];
	uint8_t out[8];
	for (unsigned i = 0; i < 8; i++)
		k[i] = (shmf_key_t){ kb[i], fixture_key(kb[i], 0x77, i) };
	for (unsigned i = 0; i < 8; i++) {
		result(shmf_check(f, k[i].ptr, k[i].len), 1, "check");
		result(shmf_count(f, k[i].ptr, k[i].len), 2 * SHMF_CUCKOO_SLOTS_MAX * SHMF_RING_MAX, "count");
		if (!rdwr) {
			if (shmf_add(f, k[i].ptr, k[i].len) != SHMF_E_READONLY)
				fail_here("%s: add on a read-only handle", current);
			continue;
		}
		result(shmf_add(f, k[i].ptr, k[i].len), 1, "add");
		result(shmf_add_unique(f, k[i].ptr, k[i].len), 1, "add_unique");
		result(shmf_add_capped(f, k[i].ptr, k[i].len, 3), 2 * SHMF_CUCKOO_SLOTS_MAX * SHMF_RING_MAX,
		       "add_capped");
		for (int d = 0; d < 3; d++)
			result(shmf_del(f, k[i].ptr, k[i].len), 1, "del");
	}
	result(shmf_check_many(f, k, 8, out), 8, "check_many");
	if (rdwr) {
		result(shmf_add_many(f, k, 8, out), 8, "add_many");
		for (unsigned i = 0; i < 8; i++)
			result(shmf_del(f, k[i].ptr, k[i].len), 1, "del");
	}
	shmf_info_t info;
	result(shmf_info(f, &info), 0, "info");
}

/* Open @p name both ways and use it. @return how many opens succeeded. */
static int try_filter(const char *name)
{
	int opened = 0;
	for (int flags = SHMF_RDONLY; flags <= SHMF_RDWR; flags++) {
		shmf_t *f = NULL;
		int r = shmf_open(FIXTURE_INSTANCE, name, flags, &f);
		result(r, 0, "open");
		if (r < 0) {
			if (f != NULL)
				fail_here("%s: a failed open set its handle", current);
			continue;
		}
		opened++;
		use(f, flags == SHMF_RDWR);
		shmf_close(f);
	}
	return opened;
}

/* ---- Scribbling one field at a time ------------------------------------- */

struct field {
	const char *name;
	size_t off, size;
};

// clang-format off
#define F(type, member) { #member, offsetof(struct type, member), sizeof(((struct type *)0)->member) }
#define FA(type, member, i) { #member "[" #i "]", offsetof(struct type, member[i]), sizeof(((struct type *)0)->member[i]) }

static const struct field ctl_fields[] = {
	F(shmf_ctl_header, magic),       F(shmf_ctl_header, version),      F(shmf_ctl_header, header_size),
	F(shmf_ctl_header, layout),      F(shmf_ctl_header, nslots),       F(shmf_ctl_header, slot_size),
	F(shmf_ctl_header, slots_offset), F(shmf_ctl_header, daemon_pid),  F(shmf_ctl_header, start_epoch),
	F(shmf_ctl_header, last_generation),
};

static const struct field slot_fields[] = {
	F(shmf_slot, generation), F(shmf_slot, type),        F(shmf_slot, k),           F(shmf_slot, capacity),
	F(shmf_slot, fpr_bits),   F(shmf_slot, nblocks),     F(shmf_slot, data_bytes),  F(shmf_slot, created_epoch),
	F(shmf_slot, nbuckets),   FA(shmf_slot, name, 0),    FA(shmf_slot, name, 2),    FA(shmf_slot, name, 63),
	F(shmf_slot, window_secs), F(shmf_slot, window_gens), F(shmf_slot, nlive),      FA(shmf_slot, live, 0),
	FA(shmf_slot, live, 1),   FA(shmf_slot, live, 2),    FA(shmf_slot, live, 3),    FA(shmf_slot, live, 15),
	FA(shmf_slot, live_created, 0), FA(shmf_slot, live_created, 2), F(shmf_slot, bucket_size),
	F(shmf_slot, expansion),  F(shmf_slot, lock_timeout_ms), F(shmf_slot, scheme),
};

static const struct field data_fields[] = {
	F(shmf_data_header, magic),    F(shmf_data_header, version),    F(shmf_data_header, header_size),
	F(shmf_data_header, layout),   F(shmf_data_header, type),       F(shmf_data_header, k),
	F(shmf_data_header, nblocks),  F(shmf_data_header, seed),       F(shmf_data_header, generation),
	F(shmf_data_header, capacity), F(shmf_data_header, fpr_bits),   F(shmf_data_header, blocks_offset),
	F(shmf_data_header, counters_offset), F(shmf_data_header, nbuckets), F(shmf_data_header, max_kicks),
	F(shmf_data_header, reserved), FA(shmf_data_header, name, 0),   FA(shmf_data_header, name, 63),
	F(shmf_data_header, bucket_size), F(shmf_data_header, scheme),
};
// clang-format on

/* The values a field of @p size bytes is set to, from its value @p orig. */
static unsigned values_for(uint64_t orig, size_t size, uint64_t *v)
{
	uint64_t ones = size >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * size)) - 1, top = (ones >> 1) + 1;
	unsigned n = 0;
	v[n++] = 0;
	v[n++] = 1;
	v[n++] = 2;
	v[n++] = ones;
	v[n++] = (orig + 1) & ones;
	v[n++] = (orig - 1) & ones;
	v[n++] = orig ^ top;
	v[n++] = (orig * 2) & ones;
	v[n++] = (orig * 4096) & ones;
	v[n++] = 16 & ones;
	v[n++] = 17 & ones;
	v[n++] = 1025 & ones;
	v[n++] = top;
	v[n++] = '/' & ones;
	for (int i = 0; i < (long_mode ? 40 : 3); i++)
		v[n++] = rnd() & ones;
	return n;
}

static uint64_t get_field(const char *path, size_t off, size_t size)
{
	uint64_t v = 0;
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &v, size, (off_t)off), (ssize_t)size);
	close(fd);
	return v;
}

static void set_field(const char *path, size_t off, size_t size, uint64_t v)
{
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &v, size, (off_t)off), (ssize_t)size);
	close(fd);
}

struct tally {
	unsigned tries, refused, used;
};

/* Set each field in turn to each value; clients open and use the filter. */
static void scribble_fields(const char *what, const char *path, size_t base, const struct field *fields, size_t nf,
			    const char *filter, struct tally *t)
{
	for (size_t i = 0; i < nf; i++) {
		uint64_t orig = get_field(path, base + fields[i].off, fields[i].size), v[64];
		unsigned nv = values_for(orig, fields[i].size, v);
		for (unsigned j = 0; j < nv; j++) {
			if (v[j] == orig)
				continue;
			snprintf(current, sizeof(current), "filter %s: %s field %s = %#llx (was %#llx)", filter, what,
				 fields[i].name, (unsigned long long)v[j], (unsigned long long)orig);
			set_field(path, base + fields[i].off, fields[i].size, v[j]);
			int opened = try_filter(filter);
			t->tries++;
			t->refused += opened == 0;
			t->used += opened > 0;
			set_field(path, base + fields[i].off, fields[i].size, orig);
		}
	}
	snprintf(current, sizeof(current), "filter %s: pristine again after the %s fields", filter, what);
	if (try_filter(filter) != 2)
		fail_msg("%s", current);
}

static void data_file(const char *name, uint64_t gen, char *path, size_t len)
{
	char fname[128];
	shmf_data_filename(name, gen, fname, sizeof(fname));
	fixture_path(&fx, fname, path, len);
}

/* How long the hostile tests' cuckoo filters let a writer wait for the
 * relocation lock. */
#define LOCK_TIMEOUT_MS 10

/* The shapes: Bloom, cuckoo, a windowed cuckoo filter with three live
 * generations, and cuckoo filters of the other bucket sizes (each a word
 * of another width: 2 bytes for buckets of 1 with 16-bit fingerprints and
 * of 2 with 8-bit ones, 8 for buckets of 8 and for buckets of 2 with
 * 32-bit ones). */
static const char *const filters[] = { "hb", "hc", "hw", "hc1", "hc2", "hc8", "hc32" };
#define NFILTERS ((int)(sizeof(filters) / sizeof(filters[0])))

static void make_filters(void)
{
	fixture_filter(&fx, "hb", SHMF_TYPE_BLOOM, 10000, 0.01);
	fixture_filter(&fx, "hc", SHMF_TYPE_CUCKOO, 10000, 0.01);
	fixture_window(&fx, "hw", SHMF_TYPE_CUCKOO, 10000, 0.01, 3600, 3);
	fixture_rotate(&fx, "hw");
	fixture_rotate(&fx, "hw");
	fixture_cuckoo(&fx, "hc1", 10000, 0.01, 1);
	fixture_cuckoo(&fx, "hc2", 10000, 0.05, 2);
	fixture_cuckoo(&fx, "hc8", 10000, 0.1, 8);
	fixture_cuckoo(&fx, "hc32", 10000, 1e-9, 2);
	/* Some keys in each, so that answers have something to find. */
	for (int i = 0; i < NFILTERS; i++) {
		shmf_t *f = fixture_open(filters[i], SHMF_RDWR);
		char key[32];
		for (uint64_t k = 0; k < 5000; k++)
			assert_true(shmf_add(f, key, fixture_key(key, 1, k)) >= 0);
		shmf_close(f);
	}
	/* A lock word the scribbling leaves held costs every locked call its
	 * timeout: LOCK_TIMEOUT_MS here, so that the tests stay short. The
	 * timeout is the slot's (handles opened from now on copy it); the
	 * daemon's side of this test writes it as shmd would. */
	for (int i = 1; i < NFILTERS; i++) {
		struct shmf_slot *s = &fx.reg.ctl.slots[registry_find(&fx.reg, filters[i])];
		shmf_slot_write_begin(s);
		s->lock_timeout_ms = LOCK_TIMEOUT_MS;
		shmf_slot_write_end(s);
	}
}

static void test_fields(void **state)
{
	(void)state;
	catch_fatal();
	make_filters();
	char ctl[512], path[512];
	fixture_path(&fx, SHMF_CTL_FILE, ctl, sizeof(ctl));
	struct tally t = { 0 };
	scribble_fields("control header", ctl, 0, ctl_fields, sizeof(ctl_fields) / sizeof(ctl_fields[0]), "hc", &t);
	for (int i = 0; i < NFILTERS; i++) {
		int slot = registry_find(&fx.reg, filters[i]);
		assert_true(slot >= 0);
		size_t base = sizeof(struct shmf_ctl_header) + (size_t)slot * sizeof(struct shmf_slot);
		scribble_fields("slot", ctl, base, slot_fields, sizeof(slot_fields) / sizeof(slot_fields[0]),
				filters[i], &t);
		struct shmf_slot copy;
		assert_int_equal(shmf_slot_read(&fx.reg.ctl.slots[slot], &copy), 0);
		/* The newest generation's data header, and the oldest's. */
		for (unsigned g = 0; g < copy.nlive; g += copy.nlive - 1) {
			data_file(filters[i], copy.live[g], path, sizeof(path));
			scribble_fields(g ? "oldest data header" : "data header", path, 0, data_fields,
					sizeof(data_fields) / sizeof(data_fields[0]), filters[i], &t);
			if (copy.nlive == 1)
				break;
		}
	}
	print_message("fields: %u scribbles over control header, slots and data headers of a Bloom, a cuckoo and a "
		      "windowed filter: %u refused at open, %u opened and used within bounds\n",
		      t.tries, t.refused, t.used);
	assert_true(t.refused > 0 && t.used > 0);
}

/* An odd sequence left in a slot: a bounded wait, then -EBUSY. */
static void test_odd_sequence(void **state)
{
	(void)state;
	if (!long_mode)
		skip(); /* the bounded wait is seconds long: SHMF_LONG=1 runs it */
	fixture_bloom(&fx, "hs", 1000, 0.01);
	int slot = registry_find(&fx.reg, "hs");
	struct shmf_slot *s = &fx.reg.ctl.slots[slot];
	shmf_t *f = fixture_open("hs", SHMF_RDONLY);
	atomic_fetch_add(&s->seq, 1);
	time_t t0 = time(NULL);
	shmf_t *g = NULL;
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, "hs", SHMF_RDONLY, &g), -EBUSY);
	assert_true(time(NULL) - t0 < 30);
	/* A handle already open does not even notice (the generation did not change). */
	assert_int_equal(shmf_check(f, "k", 1), 0);
	atomic_fetch_add(&s->seq, 1);
	assert_int_equal(shmf_open(FIXTURE_INSTANCE, "hs", SHMF_RDONLY, &g), 0);
	shmf_close(g);
	shmf_close(f);
}

/* ---- Random bytes over the payload of open handles ----------------------- */

struct mapped {
	int fd;
	size_t len;
	unsigned char *p;
};

static void map_file(const char *path, struct mapped *m)
{
	m->fd = open(path, O_RDWR);
	assert_true(m->fd >= 0);
	m->len = (size_t)lseek(m->fd, 0, SEEK_END);
	m->p = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
	assert_true(m->p != MAP_FAILED);
}

static void unmap_file(struct mapped *m)
{
	munmap(m->p, m->len);
	close(m->fd);
}

/* Scribble over the counter page and payload (not the header page, which
 * clients copied at open and never read again). */
static void scribble_payload(struct mapped *m, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t r = rnd();
		size_t at;
		switch (r % 4) {
		case 0: /* the cuckoo relocation state: moving, moves, version stripes */
			at = SHMF_DATA_BLOCKS_OFF + (r >> 8) % sizeof(struct shmf_cuckoo_meta);
			break;
		case 1: /* the counters */
			at = SHMF_DATA_COUNTERS_OFF + (r >> 8) % (SHMF_DATA_BLOCKS_OFF - SHMF_DATA_COUNTERS_OFF);
			break;
		default: at = SHMF_DATA_BLOCKS_OFF + (r >> 8) % (m->len - SHMF_DATA_BLOCKS_OFF);
		}
		if (r & (1u << 7)) {
			uint64_t v = rnd();
			size_t len = m->len - at < 8 ? m->len - at : 8;
			memcpy(m->p + at, &v, len);
		} else {
			m->p[at] = (unsigned char)(r >> 40);
		}
	}
}

/* Item counters a writer left absurd: info answers at once (it used to
 * spend minutes summing billions of Poisson terms for a Bloom filter's
 * estimate, and the daemon's INFO with it). */
static void absurd_counters(void)
{
	alarm(60);
	for (int i = 0; i < NFILTERS; i++) {
		shmf_t *f = fixture_open(filters[i], SHMF_RDWR);
		int slot = registry_find(&fx.reg, filters[i]);
		char path[512];
		data_file(filters[i], atomic_load(&fx.reg.ctl.slots[slot].generation), path, sizeof(path));
		struct mapped m;
		map_file(path, &m);
		struct shmf_counter *c = (struct shmf_counter *)(m.p + SHMF_DATA_COUNTERS_OFF);
		static const uint64_t values[] = { UINT64_C(1) << 62, UINT64_MAX, UINT64_C(1) << 40,
						   UINT64_C(123456789012) };
		for (size_t v = 0; v < sizeof(values) / sizeof(values[0]); v++) {
			atomic_store(&c[v].items, values[v]);
			snprintf(current, sizeof(current), "filter %s: item counter %zu = %#llx", filters[i], v,
				 (unsigned long long)values[v]);
			struct timespec a, b;
			clock_gettime(CLOCK_MONOTONIC, &a);
			shmf_info_t info;
			assert_int_equal(shmf_info(f, &info), 0);
			struct filter_info fi;
			char err[REGISTRY_ERR_MAX];
			assert_int_equal(registry_info(&fx.reg, slot, &fi, err, sizeof(err)), 0);
			clock_gettime(CLOCK_MONOTONIC, &b);
			double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
			if (secs > 1.0)
				fail_msg("%s: info took %.1f s", current, secs);
			if (!(info.fpr_estimate >= 0.0 && info.fpr_estimate <= 1.0) ||
			    !(info.fill_ratio >= 0.0 && info.fill_ratio <= 1.0))
				fail_msg("%s: estimates %g and %g out of [0, 1]", current, info.fpr_estimate,
					 info.fill_ratio);
			atomic_store(&c[v].items, 0);
		}
		unmap_file(&m);
		shmf_close(f);
	}
	alarm(0);
}

static uint64_t ms_since(const struct timespec *a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (uint64_t)((b.tv_sec - a->tv_sec) * 1000 + (b.tv_nsec - a->tv_nsec) / 1000000);
}

/*
 * The lock word of a cuckoo filter's newest generation set to values
 * nobody holds it with: a foreign thread id, this thread's own id, every
 * bit, only the waiters bit. A locked call then answers SHMF_E_BUSY after
 * the filter's timeout, never later; checks answer at once; a word the
 * kernel would have left for a dead holder (OWNER_DIED) is taken over.
 */
static void lock_word(const char *name, struct shmf_cuckoo_meta *meta, shmf_t *ro, shmf_t *rw)
{
	static const uint32_t held[] = { 0x12345, 0, UINT32_MAX, FUTEX_WAITERS, FUTEX_WAITERS | 1, 0x3fffffff };
	char key[32];
	/* A key the scribbled filter answers absent: random bytes over its
	 * buckets make false positives likely (an 8x8-bit bucket pair holds 16
	 * slots of 8 bits), and the checks below expect 0. */
	size_t len = 0;
	for (uint64_t i = 1; i < 1000; i++) {
		len = fixture_key(key, 0x78, i);
		if (shmf_check(ro, key, len) == 0 && shmf_count(rw, key, len) == 0)
			break;
	}
	for (size_t v = 0; v < sizeof(held) / sizeof(held[0]); v++) {
		uint32_t word = held[v] ? held[v] : (uint32_t)syscall(SYS_gettid);
		atomic_store(&meta->lock.word, word);
		snprintf(current, sizeof(current), "filter %s: lock word %#x", name, word);
		/* Checks never touch the lock: the quickest of three tries is
		 * under half the timeout (one try may be descheduled; a check
		 * that waited on the word would wait the timeout every time). */
		struct timespec a;
		uint64_t quickest = UINT64_MAX;
		for (int try = 0; try < 3; try++) {
			clock_gettime(CLOCK_MONOTONIC, &a);
			assert_int_equal(shmf_check(ro, key, len), 0);
			assert_int_equal(shmf_count(rw, key, len), 0);
			if (ms_since(&a) < quickest)
				quickest = ms_since(&a);
		}
		if (quickest * 2 >= LOCK_TIMEOUT_MS)
			fail_msg("%s: checks waited %llu ms", current, (unsigned long long)quickest);
		clock_gettime(CLOCK_MONOTONIC, &a);
		int r = shmf_add_capped(rw, key, len, 1);
		uint64_t ms = ms_since(&a);
		/* All ones has OWNER_DIED set: taken over, as from a dead holder. */
		if (word == UINT32_MAX) {
			assert_int_equal(r, 0);
			assert_int_equal(shmf_del(rw, key, len), 1);
			continue;
		}
		if (r != SHMF_E_BUSY || ms < LOCK_TIMEOUT_MS || ms > LOCK_TIMEOUT_MS + 2000)
			fail_msg("%s: capped add answered %d after %llu ms (SHMF_E_BUSY after %u ms expected)", current,
				 r, (unsigned long long)ms, LOCK_TIMEOUT_MS);
		assert_int_equal(atomic_load(&meta->lock.word) & FUTEX_TID_MASK, word & FUTEX_TID_MASK);
	}
	atomic_store(&meta->lock.word, 0);
	snprintf(current, sizeof(current), "filter %s: lock word free again", name);
	assert_int_equal(shmf_add_capped(rw, key, len, 1), 0);
	assert_int_equal(shmf_del(rw, key, len), 1);
}

static void test_payload(void **state)
{
	(void)state;
	catch_fatal();
	make_filters();
	absurd_counters();
	unsigned rounds = long_mode ? 3000 : 300;
	for (int i = 0; i < NFILTERS; i++) {
		shmf_t *ro = fixture_open(filters[i], SHMF_RDONLY), *rw = fixture_open(filters[i], SHMF_RDWR);
		int slot = registry_find(&fx.reg, filters[i]);
		struct shmf_slot copy;
		assert_int_equal(shmf_slot_read(&fx.reg.ctl.slots[slot], &copy), 0);
		struct mapped m[SHMF_RING_MAX];
		char path[512];
		for (unsigned g = 0; g < copy.nlive; g++) {
			data_file(filters[i], copy.live[g], path, sizeof(path));
			map_file(path, &m[g]);
		}
		uint64_t slowest = 0;
		unsigned held = 0;
		for (unsigned round = 0; round < rounds; round++) {
			snprintf(current, sizeof(current), "filter %s: payload scribble round %u", filters[i], round);
			scribble_payload(&m[round % copy.nlive], 1 + (unsigned)(rnd() % 64));
			struct timespec a, b;
			clock_gettime(CLOCK_MONOTONIC, &a);
			use(ro, 0);
			use(rw, 1);
			clock_gettime(CLOCK_MONOTONIC, &b);
			int64_t ns = (int64_t)(b.tv_sec - a.tv_sec) * 1000000000 + (int64_t)(b.tv_nsec - a.tv_nsec);
			uint64_t us = (uint64_t)(ns / 1000);
			slowest = us > slowest ? us : slowest;
			/* Nobody holds the lock between rounds: a word that names
			 * a holder was scribbled. Free it (lock_word() below tries
			 * such words on purpose), so rounds stay short. */
			for (unsigned g = 0; i > 0 && g < copy.nlive; g++) {
				struct shmf_cuckoo_meta *meta = (struct shmf_cuckoo_meta *)(m[g].p +
											    SHMF_DATA_BLOCKS_OFF);
				if (shmf_cuckoo_lock_held(meta)) {
					atomic_store(&meta->lock.word, 0);
					held++;
				}
			}
		}
		/* Bounded: every stripe odd only sends readers to the read that
		 * one move cannot fool. */
		if (i > 0) {
			struct shmf_cuckoo_meta *meta = (struct shmf_cuckoo_meta *)(m[0].p + SHMF_DATA_BLOCKS_OFF);
			for (unsigned s = 0; s < SHMF_CUCKOO_STRIPES; s++)
				atomic_store(&meta->version[s], 1);
			atomic_store(&meta->moving, UINT64_MAX);
			snprintf(current, sizeof(current), "filter %s: every version stripe odd, moving all ones",
				 filters[i]);
			use(ro, 0);
			use(rw, 1);
			lock_word(filters[i], meta, ro, rw);
		}
		print_message("payload of %s: %u rounds of random bytes over the relocation state, counters and "
			      "payload (the lock word left held %u times); every call answered within bounds, the "
			      "slowest round in %llu us\n",
			      filters[i], rounds, held, (unsigned long long)slowest);
		for (unsigned g = 0; g < copy.nlive; g++)
			unmap_file(&m[g]);
		shmf_close(ro);
		shmf_close(rw);
	}
}

/* ---- A writer scribbling while processes use the filter ------------------ */

static void test_racing(void **state)
{
	(void)state;
	catch_fatal();
	make_filters();
	char ctl[512], path[512];
	fixture_path(&fx, SHMF_CTL_FILE, ctl, sizeof(ctl));
	for (int i = 0; i < NFILTERS; i++) {
		int slot = registry_find(&fx.reg, filters[i]);
		struct shmf_slot saved;
		assert_int_equal(shmf_slot_read(&fx.reg.ctl.slots[slot], &saved), 0);
		pid_t users[2];
		int ready[2];
		assert_int_equal(pipe(ready), 0);
		for (int u = 0; u < 2; u++) {
			users[u] = fork();
			assert_true(users[u] >= 0);
			if (users[u] == 0) {
				in_child = 1;
				prctl(PR_SET_PDEATHSIG, SIGKILL);
				shmf_t *f;
				if (shmf_open(FIXTURE_INSTANCE, filters[i], u ? SHMF_RDWR : SHMF_RDONLY, &f) < 0)
					_exit(2);
				(void)!write(ready[1], "r", 1);
				snprintf(current, sizeof(current), "filter %s: user %d while a writer scribbles",
					 filters[i], u);
				for (;;)
					use(f, u);
			}
		}
		for (int u = 0; u < 2; u++) {
			char c;
			assert_int_equal(read(ready[0], &c, 1), 1);
		}
		close(ready[0]);
		close(ready[1]);
		/* The writer: random values into slot fields (not the sequence)
		 * and random bytes over the newest generation's payload. */
		struct mapped m;
		data_file(filters[i], saved.live[0], path, sizeof(path));
		map_file(path, &m);
		unsigned char *sl = (unsigned char *)&fx.reg.ctl.slots[slot];
		uint64_t end = (uint64_t)time(NULL) + (long_mode ? 10 : 1), writes = 0;
		while ((uint64_t)time(NULL) < end) {
			const struct field *fl = &slot_fields[rnd() % (sizeof(slot_fields) / sizeof(slot_fields[0]))];
			uint64_t v = rnd() % 4 ? rnd() % 64 : rnd();
			memcpy(sl + fl->off, &v, fl->size);
			scribble_payload(&m, 4);
			writes++;
			usleep(50);
			if (writes % 64 == 0) /* now and then the truth again */
				memcpy(sl, &saved, sizeof(saved));
		}
		for (int u = 0; u < 2; u++) {
			int st;
			kill(users[u], SIGKILL);
			assert_int_equal(waitpid(users[u], &st, 0), users[u]);
			if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
				fail_msg("filter %s: user %d died on its own (status %#x) while a writer scribbled",
					 filters[i], u, st);
		}
		memcpy(sl, &saved, sizeof(saved));
		unmap_file(&m);
		snprintf(current, sizeof(current), "filter %s: after the scribbler", filters[i]);
		assert_int_equal(try_filter(filters[i]), 2);
		print_message("racing on %s: %llu scribbles of slot fields and payload while a reader and a writer "
			      "used the filter; neither died\n",
			      filters[i], (unsigned long long)writes);
	}
}

/* ---- The daemon's code on a hostile control file ------------------------ */

static void test_daemon(void **state)
{
	(void)state;
	catch_fatal();
	make_filters();
	char err[REGISTRY_ERR_MAX], path[512];
	static const struct {
		size_t off, size;
		uint64_t v;
		const char *what;
	} bad[] = {
		{ offsetof(struct shmf_slot, nlive), 4, 1000, "nlive 1000" },
		{ offsetof(struct shmf_slot, window_gens), 4, 1000, "window_gens 1000" },
		{ offsetof(struct shmf_slot, nlive), 4, 17, "nlive 17" },
		{ offsetof(struct shmf_slot, window_gens), 4, 17, "window_gens 17" },
		{ offsetof(struct shmf_slot, nlive), 4, 0, "nlive 0" },
		{ offsetof(struct shmf_slot, live[1]), 8, UINT64_MAX, "live[1] all ones" },
		{ offsetof(struct shmf_slot, k), 4, 1000, "k 1000" },
		{ offsetof(struct shmf_slot, nblocks), 8, UINT64_C(1) << 60, "nblocks 2^60" },
		{ offsetof(struct shmf_slot, bucket_size), 4, 3, "bucket_size 3" },
		{ offsetof(struct shmf_slot, bucket_size), 4, 16, "bucket_size 16" },
		/* A width no bucket word has (cuckoo; 24 bits a key is a Bloom k). */
		{ offsetof(struct shmf_slot, k), 4, 24, "k 24" },
	};
	unsigned refused = 0, tries = 0;
	for (int i = 0; i < NFILTERS; i++) {
		int slot = registry_find(&fx.reg, filters[i]);
		struct shmf_slot *s = &fx.reg.ctl.slots[slot], saved;
		memcpy(&saved, s, sizeof(saved));
		for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
			if (s->type == SHMF_TYPE_BLOOM && bad[b].off == offsetof(struct shmf_slot, k) && bad[b].v == 24)
				continue;
			uint64_t gen_before = atomic_load(&s->generation);
			/* window_gens together with nlive, for the ring loops. */
			memcpy((char *)s + bad[b].off, &bad[b].v, bad[b].size);
			if (bad[b].off == offsetof(struct shmf_slot, nlive) && bad[b].v > 16)
				s->window_gens = (uint32_t)bad[b].v;
			snprintf(current, sizeof(current), "daemon on filter %s with slot %s", filters[i], bad[b].what);
			snprintf(path, sizeof(path), "%s/hostile.snap", fx.root);
			int r1 = registry_rotate(&fx.reg, filters[i], err, sizeof(err));
			int r2 = registry_snapshot(&fx.reg, filters[i], path, NULL, err, sizeof(err));
			struct filter_info fi;
			(void)registry_info(&fx.reg, slot, &fi, err, sizeof(err));
			registry_rotate_due(&fx.reg, (uint64_t)time(NULL));
			tries++;
			/* Refused, not walked: nothing published, no file written
			 * (live[1] means nothing to a filter of one generation). */
			if (bad[b].off != offsetof(struct shmf_slot, live[1]) || saved.nlive > 1) {
				if (r1 >= 0 || r2 >= 0)
					fail_msg("%s: rotate gave %d, snapshot %d (want errors)", current, r1, r2);
				assert_int_equal(atomic_load(&s->generation), gen_before);
				assert_int_not_equal(access(path, F_OK), 0);
				refused++;
			}
			unlink(path);
			memcpy(s, &saved, sizeof(saved));
		}
		/* The same filter, once more pristine: the daemon works on it. */
		snprintf(path, sizeof(path), "%s/%s.snap", fx.root, filters[i]);
		assert_int_equal(registry_snapshot(&fx.reg, filters[i], path, NULL, err, sizeof(err)), 0);
		unlink(path);
	}
	/* A restart on a hostile slot: refused and cleared, nothing overrun. */
	int slot = registry_find(&fx.reg, "hw");
	fx.reg.ctl.slots[slot].nlive = 1000;
	fx.reg.ctl.slots[slot].window_gens = 1000;
	registry_close(&fx.reg, 0);
	assert_int_equal(registry_open(&fx.reg, FIXTURE_INSTANCE, 0750, 0640, (gid_t)-1, err, sizeof(err)), 0);
	assert_int_equal(registry_find(&fx.reg, "hw"), SHMF_E_NOTFOUND);
	assert_true(registry_find(&fx.reg, "hb") >= 0 && registry_find(&fx.reg, "hc") >= 0);
	print_message("daemon: %u hostile slots given to rotate, snapshot, info and the rotation clock: %u refused by "
		      "rotate and snapshot, nothing published or overrun; a restart cleared such a slot\n",
		      tries, refused);
}

/* The record files of the instance directory (shmd-expires, shmd-owners)
 * planted as FIFOs: read without waiting and ignored (a blocking open
 * would hang here until the alarm); then a regular file is read. */
static void test_record_files(void **state)
{
	struct fixture *fx = *state;
	char path[4400];
	const char *const files[] = { EXPIRES_FILE, QUOTAS_FILE };
	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", fx->reg.dir_path, files[i]);
		assert_int_equal(mkfifo(path, 0600), 0);
	}
	alarm(10);
	uint64_t at = 0;
	assert_int_equal(expires_get(&fx->reg, "x", &at), 0);
	quotas_load(&fx->reg);
	assert_int_equal(quotas_owner(&fx->reg, "x", NULL), 0);
	alarm(0);
	/* A regular file is read: the check above could have found one. */
	struct fixture other;
	fixture_setup(&other);
	snprintf(path, sizeof(path), "%s/%s", other.reg.dir_path, EXPIRES_FILE);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "4102444800000 x\n");
	fclose(f);
	assert_int_equal(expires_get(&other.reg, "x", &at), 1);
	assert_true(at == 4102444800000ull);
	fixture_teardown(&other);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		fixture_unit_test(test_fields, fx),  fixture_unit_test(test_odd_sequence, fx),
		fixture_unit_test(test_payload, fx), fixture_unit_test(test_racing, fx),
		fixture_unit_test(test_daemon, fx),  fixture_unit_test(test_record_files, fx),
	};
	static const char *const names[] = { "fields", "odd_sequence", "payload", "racing", "daemon", "record_files" };
	long_mode = fixture_long_mode();
	return fixture_run(argc, argv, tests, names);
}
