/*
 * build.c - shmctl build: train a filter offline from a key list (one key
 * per line) and write it as a snapshot file, ready for `shmctl swap` or
 * `shmctl restore` on any host. No daemon is involved.
 *
 * Keys are read in large blocks and added in batches of 1024 (the batch
 * add prefetches the blocks a batch touches). On a terminal, stderr shows
 * a progress bar: keys per second, and the ETA when the input size is
 * known (a regular file); on a pipe it stays quiet.
 *
 * A static filter (--type static, binary fuse: libclient/fuse.h) is built
 * from the whole set at once: each key's hash is kept (8 bytes a key,
 * the array grown as lines come), then fuse_build() sorts them, drops
 * duplicates and constructs the filter, whose capacity is then the set's
 * distinct keys. The memory that takes (fuse-build.h) is checked against
 * what the machine has before the first key is read, and again once the
 * keys are counted.
 */
#include <bsd/stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "libclient/bloom.h"
#include "libclient/cuckoo.h"
#include "libclient/fuse.h"
#include "libclient/geometry.h"
#include "common/fuse-build.h"
#include "tools/offline.h"
#include "libclient/rundir.h"
#include "common/snapshot.h"
#include "common/spec.h"

#define READ_BLOCK (1u << 20)
#define BATCH      1024

/* The table being trained, in private memory (cuckoo: a memfd, because the
 * relocation lock is a lock on a file). */
struct table {
	struct shmf_geometry g;
	uint64_t seed;
	void *payload; /* g.nblocks * 64 bytes */
	int memfd;
	struct shmf_bloom_geom bloom;
	struct shmf_cuckoo_geom cuckoo;
	struct shmf_cuckoo_lock lock;
	uint64_t items;
	uint64_t keys;
	uint64_t *hashes; /* static: every key's hash, keys of them, room for cap */
	uint64_t cap;
	struct fuse_built built; /* static: the filter, once built */
};

struct progress {
	int on;         /* stderr is a terminal */
	uint64_t total; /* input bytes, 0 when unknown */
	uint64_t done;
	double start, last;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void progress_show(struct progress *p, uint64_t keys, int final)
{
	double t = now_s();
	if (!p->on || (!final && t - p->last < 0.2))
		return;
	p->last = t;
	double rate = keys / (t - p->start > 1e-9 ? t - p->start : 1e-9);
	if (p->total > 0) {
		double frac = (double)p->done / (double)p->total;
		int fill = (int)(frac * 30.0 + 0.5);
		double eta = frac > 0 ? (t - p->start) * (1.0 - frac) / frac : 0;
		fprintf(stderr, "\r[%-30.*s] %3.0f%%  %" PRIu64 " keys  %.2f M keys/s  ETA %.0f s   ", fill,
			"##############################", frac * 100.0, keys, rate / 1e6, final ? 0.0 : eta);
	} else {
		fprintf(stderr, "\r%" PRIu64 " keys  %.2f M keys/s   ", keys, rate / 1e6);
	}
	if (final)
		fputc('\n', stderr);
}

/* The memory a static filter of @p keys keys needs while it is built,
 * against what the machine has: @return 0, or -ENOMEM with the figures
 * said. */
static int static_mem_check(uint64_t keys, double fpr)
{
	uint64_t need = fuse_build_bytes(keys, fpr), have = fuse_mem_available();
	if (have == 0 || need <= have)
		return 0;
	fprintf(stderr,
		"shmctl: build: a static filter of %" PRIu64 " keys needs about %.1f GiB of memory while it is built "
		"(about %u bytes a key: fuse-build.h), and this machine has %.1f GiB available: build it on a "
		"larger machine, or split the set\n",
		keys, (double)need / 1073741824.0, FUSE_BUILD_BYTES_PER_KEY, (double)have / 1073741824.0);
	return -ENOMEM;
}

/* A static filter's key hashes: room for the capacity, reserved but not
 * touched (pages are taken as keys come). */
static int static_init(struct table *t, const struct filter_spec *s)
{
	int rc = shmf_geometry_size(SHMF_TYPE_STATIC, s->capacity, s->fpr, 0, 0, &t->g);
	if (rc < 0)
		return rc;
	if (static_mem_check(s->capacity, s->fpr) < 0)
		return 1;
	arc4random_buf(&t->seed, sizeof(t->seed));
	t->memfd = -1;
	t->cap = s->capacity;
	t->hashes = mmap(NULL, t->cap * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (t->hashes == MAP_FAILED)
		return t->hashes = NULL, -errno;
	(void)madvise(t->hashes, t->cap * 8, MADV_HUGEPAGE); /* a fault a 2 MiB, not a 4 KiB */
	return 0;
}

/* Keep the hashes of @p n keys, the array doubled when full. */
static int static_add(struct table *t, const shmf_key_t *keys, size_t n)
{
	if (t->keys + n > t->cap) {
		uint64_t cap = t->cap * 2 > t->keys + n ? t->cap * 2 : t->keys + n;
		void *p = mremap(t->hashes, t->cap * 8, cap * 8, MREMAP_MAYMOVE);
		if (p == MAP_FAILED)
			return -errno;
		t->hashes = p;
		t->cap = cap;
	}
	for (size_t i = 0; i < n; i++)
		t->hashes[t->keys + i] = shmf_hash(keys[i].ptr, keys[i].len, t->seed);
	t->keys += n;
	return 0;
}

static int table_init(struct table *t, const struct filter_spec *s)
{
	int type = s->type;
	if (type == SHMF_TYPE_STATIC)
		return static_init(t, s);
	int rc = shmf_geometry_size(type, s->capacity, s->fpr, s->max_kicks, s->bucket_size, &t->g);
	if (rc < 0)
		return rc;
	size_t len = (size_t)(t->g.nblocks * SHMF_BLOCK_BYTES);
	arc4random_buf(&t->seed, sizeof(t->seed));
	t->memfd = -1;
	if (type == SHMF_TYPE_BLOOM) {
		t->payload = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (t->payload == MAP_FAILED)
			return -errno;
		t->bloom = (struct shmf_bloom_geom){ t->payload, t->g.nblocks, t->seed, t->g.k, t->g.bucket_size };
	} else {
		t->memfd = memfd_create("shmctl-build", MFD_CLOEXEC);
		if (t->memfd < 0 || ftruncate(t->memfd, (off_t)len) < 0)
			return -errno;
		t->payload = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, t->memfd, 0);
		if (t->payload == MAP_FAILED)
			return -errno;
		shmf_cuckoo_lock_init(&t->lock, 0);
		t->cuckoo = (struct shmf_cuckoo_geom){
			.buckets = (char *)t->payload + sizeof(struct shmf_cuckoo_meta),
			.nbuckets = t->g.nbuckets,
			.seed = t->seed,
			.fp_bits = t->g.k,
			.slots = t->g.bucket_size,
			.max_kicks = t->g.max_kicks,
			.meta = t->payload,
			.lock = &t->lock,
		};
		if ((rc = shmf_cuckoo_geom_layout(&t->cuckoo)) < 0)
			return rc;
	}
	(void)madvise(t->payload, len, MADV_HUGEPAGE);
	return 0;
}

/* Add a batch. @return 0, or SHMF_E_FULL (cuckoo) with t->keys counting
 * the keys stored. */
static int table_add(struct table *t, const shmf_key_t *keys, size_t n)
{
	if (t->g.type == SHMF_TYPE_STATIC)
		return static_add(t, keys, n);
	if (t->g.type == SHMF_TYPE_BLOOM) {
		t->items += shmf_bloom_add_batch(&t->bloom, keys, n, NULL);
		t->keys += n;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		struct shmf_cuckoo_key k = shmf_cuckoo_locate(&t->cuckoo, shmf_hash(keys[i].ptr, keys[i].len, t->seed));
		int rc = shmf_cuckoo_add(&t->cuckoo, &k);
		if (rc < 0)
			return rc;
		t->items++;
		t->keys++;
	}
	return 0;
}

/* Read keys from @p fd, one per line (a trailing CR removed, blank lines
 * skipped), into the table. @return 0 or an error code. */
static int feed(struct table *t, int fd, struct progress *p, const char *from)
{
	char *buf = malloc(READ_BLOCK * 2);
	shmf_key_t batch[BATCH];
	size_t have = 0, nb = 0;
	int rc = 0;
	if (buf == NULL)
		return -ENOMEM;
	for (;;) {
		ssize_t got = read(fd, buf + have, READ_BLOCK);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = -errno;
			fprintf(stderr, "shmctl: build: reading %s: %s\n", from, strerror(errno));
			break;
		}
		p->done += (uint64_t)got;
		size_t end = have + (size_t)got, at = 0;
		int eof = got == 0;
		/* Every complete line; at end of input the last one too. The
		 * batch points into buf, so it is added before buf moves. */
		for (;;) {
			char *nl = memchr(buf + at, '\n', end - at);
			if (nl == NULL && !(eof && at < end))
				break;
			size_t len = (nl ? (size_t)(nl - buf) : end) - at;
			if (len > 0 && buf[at + len - 1] == '\r')
				len--;
			if (len > 0)
				batch[nb++] = (shmf_key_t){ buf + at, len };
			at = nl ? (size_t)(nl - buf) + 1 : end;
			if (nb == BATCH) {
				if ((rc = table_add(t, batch, nb)) < 0)
					goto out;
				nb = 0;
			}
		}
		if (nb > 0 && (rc = table_add(t, batch, nb)) < 0)
			goto out;
		nb = 0;
		if (eof)
			break;
		if (end - at > READ_BLOCK) {
			fprintf(stderr, "shmctl: build: %s: a line is longer than %u bytes\n", from, READ_BLOCK);
			rc = SHMF_E_INVAL;
			break;
		}
		memmove(buf, buf + at, end - at);
		have = end - at;
		progress_show(p, t->keys, 0);
	}
out:
	free(buf);
	return rc;
}

/* What shmctl build was asked for. */
struct build_args {
	struct filter_spec spec; /* type, capacity, fpr, max_kicks, bucket_size and name */
	const char *from, *out;
};

/* Print the usage with the reason formatted from @p fmt; @return 2, the
 * exit status of a usage error. */
static int build_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int build_usage(const char *fmt, ...)
{
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	fprintf(stderr, "shmctl: build: %s (see 'shmctl help build')\n", why);
	return 2;
}

/* One option into @p a. @return 0, or 2 (usage printed). */
static int build_option(int opt, const char *arg, struct build_args *a, const char **name)
{
	struct filter_spec *s = &a->spec;
	switch (opt) {
	case 't':
		if (strcmp(arg, "static") == 0)
			return s->type = SHMF_TYPE_STATIC, 0;
		return spec_parse_type(arg, &s->type) < 0
			       ? build_usage("--type '%s': must be bloom, cuckoo or static", arg)
			       : 0;
	case 'c':
		return spec_parse_capacity(arg, &s->capacity) < 0
			       ? build_usage("--capacity '%s': not a positive integer", arg)
			       : 0;
	case 'p': return spec_parse_fpr(arg, &s->fpr) < 0 ? build_usage("--fpr '%s': not a number in (0, 1)", arg) : 0;
	case 'k':
		return spec_parse_kicks(arg, &s->max_kicks) < 0
			       ? build_usage("--max-kicks '%s': not an integer from 1 to %u", arg,
					     SHMF_CUCKOO_KICKS_LIMIT)
			       : 0;
	case 'b':
		return spec_parse_bucket_size(arg, &s->bucket_size) < 0
			       ? build_usage("--bucket-size '%s': not one of " SPEC_BUCKET_SIZES, arg)
			       : 0;
	case 'f': a->from = arg; return 0;
	case 'o': a->out = arg; return 0;
	case 'n': *name = arg; return 0;
	case ':': return build_usage("%s needs a value", arg);
	default: return build_usage("unknown option '%s'", arg);
	}
}

/* The command line into @p a. @return 0, or 2 (usage printed). */
static int build_parse(int argc, char **argv, struct build_args *a)
{
	static const struct option opts[] = {
		{ "type", required_argument, NULL, 't' },
		{ "capacity", required_argument, NULL, 'c' },
		{ "fpr", required_argument, NULL, 'p' },
		{ "from", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "max-kicks", required_argument, NULL, 'k' },
		{ "name", required_argument, NULL, 'n' },
		{ "bucket-size", required_argument, NULL, 'b' },
		{ NULL, 0, NULL, 0 },
	};
	const char *name = "built";
	int opt, rc;
	*a = (struct build_args){ .spec = { .type = SHMF_TYPE_BLOOM } };
	optind = 1;
	opterr = 0; /* build_usage() says it, in one line */
	while ((opt = getopt_long(argc, argv, ":o:", opts, NULL)) != -1)
		if ((rc = build_option(opt, opt == ':' || opt == '?' ? argv[optind - 1] : optarg, a, &name)) != 0)
			return rc;
	if (optind != argc)
		return build_usage("unexpected argument '%s'", argv[optind]);
	if (a->spec.capacity == 0 || a->spec.fpr == 0 || a->from == NULL || a->out == NULL)
		return build_usage("missing %s (--capacity, --fpr, --from and -o are required)",
				   a->spec.capacity == 0 ? "--capacity N"
				   : a->spec.fpr == 0    ? "--fpr P"
				   : a->from == NULL     ? "--from FILE|-"
							 : "-o OUT");
	/* Checked before it is copied: a longer name would be truncated. */
	if (shmf_name_check(name) < 0)
		return build_usage("--name '%s': not a valid filter name", name);
	if (a->spec.max_kicks != 0 && a->spec.type != SHMF_TYPE_CUCKOO)
		return build_usage("--max-kicks applies to cuckoo filters only");
	if (a->spec.bucket_size != 0 && a->spec.type != SHMF_TYPE_CUCKOO)
		return build_usage("--bucket-size applies to cuckoo filters only");
	snprintf(a->spec.name, sizeof(a->spec.name), "%s", name);
	return 0;
}

/* Train @p t on the keys of @p from ("-": stdin), showing progress on a
 * terminal. @return 0, or -1 with the error printed. */
static int build_read(struct table *t, const char *from, double *secs)
{
	int fd = strcmp(from, "-") == 0 ? STDIN_FILENO : open(from, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "shmctl: build: cannot open %s: %s\n", from, strerror(errno));
		return -1;
	}
	struct progress p = { .on = isatty(STDERR_FILENO), .start = now_s() };
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		p.total = (uint64_t)st.st_size;
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	int rc = feed(t, fd, &p, from);
	if (fd != STDIN_FILENO)
		close(fd);
	progress_show(&p, t->keys, 1);
	if (rc == SHMF_E_FULL)
		fprintf(stderr,
			"shmctl: build: the cuckoo filter is full after %" PRIu64 " keys: give a larger --capacity\n",
			t->keys);
	*secs = now_s() - p.start;
	return rc < 0 ? -1 : 0;
}

/* Write the trained table @p t as snapshot @p out, mode 0666 less the
 * umask. @return 0, or -1 with the error printed. */
static int build_write(const struct table *t, const struct filter_spec *spec, const char *out)
{
	struct snap_source src = { .nsections = 1 };
	uint64_t now = (uint64_t)time(NULL);
	snapshot_header_fill(&src.hdr, spec, &t->g, t->seed, now, now);
	src.sec[0] = (struct shmf_snap_section){ .generation = 1, .created_epoch = now, .items = t->items };
	src.payload[0] = t->payload;
	char err[SNAPSHOT_ERR_MAX];
	mode_t um = umask(0);
	umask(um);
	if (snapshot_write(out, &src, 0666 & ~(unsigned)um, err, sizeof(err)) < 0) {
		fprintf(stderr, "shmctl: build: %s\n", err);
		return -1;
	}
	return 0;
}

/* The false-positive rate trained table @p t answers at: Bloom, from the
 * bits set (a key lands in a block at random and finds its k bits there
 * set with probability (set / 512)^k, in each of its lines; duplicates in the input count once,
 * as they set nothing); cuckoo, from its load. */
static double table_fpr(const struct table *t)
{
	if (t->g.type != SHMF_TYPE_BLOOM)
		return shmf_cuckoo_fpr(t->items, t->g.nbuckets, t->g.k, t->g.bucket_size);
	const uint64_t *w = t->payload;
	double sum = 0;
	for (uint64_t b = 0; b < t->g.nblocks; b++) {
		unsigned set = 0;
		for (unsigned i = 0; i < SHMF_BLOCK_BYTES / 8; i++)
			set += (unsigned)__builtin_popcountll(w[b * (SHMF_BLOCK_BYTES / 8) + i]);
		sum += pow((double)set / (SHMF_BLOCK_BYTES * 8), (double)t->g.k);
	}
	/* Each of a key's lines is a random line (bucket_size: lines a key). */
	return pow(sum / (double)t->g.nblocks, (double)t->g.bucket_size);
}

/* More keys than the filter was sized for: a warning with the rate the
 * filter will answer at, since a snapshot swapped in by a script is
 * seldom looked at again. The keys that set a bit (items) decide, not the
 * lines read: a list with duplicates may fill the filter no further than
 * its capacity. */
static void build_warn_over(const struct table *t, const struct filter_spec *s)
{
	if (t->items <= s->capacity)
		return;
	double fpr = table_fpr(t);
	char rate[64];
	if (fpr >= 0.9995)
		snprintf(rate, sizeof(rate), "nearly 1 (almost every check will answer 'present')");
	else
		snprintf(rate, sizeof(rate), "about %.3g", fpr);
	fprintf(stderr,
		"shmctl: build: warning: %" PRIu64 " keys read into a filter sized for --capacity %" PRIu64
		": its false-positive rate will be %s, not the %g asked for (--capacity %" PRIu64
		" covers every line read)\n",
		t->keys, s->capacity, rate, s->fpr, t->keys);
}

/* The static filter of the hashes read: duplicates dropped, constructed,
 * its shape and capacity those of the distinct keys. @return 0, or -1
 * with the error printed. */
static int static_construct(struct table *t, struct filter_spec *s, const char *from)
{
	if (t->keys == 0) {
		fprintf(stderr, "shmctl: build: %s holds no key: a static filter is built from at least one\n", from);
		return -1;
	}
	if (t->keys > s->capacity && static_mem_check(t->keys, s->fpr) < 0)
		return -1;
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "building the static filter of %" PRIu64 " keys...\n", t->keys);
	int rc = fuse_build(t->hashes, t->keys, s->fpr, &t->built);
	munmap(t->hashes, t->cap * 8);
	t->hashes = NULL;
	if (rc < 0) {
		fprintf(stderr, "shmctl: build: the static filter of %s could not be built: %s\n", from,
			rc == SHMF_E_FULL ? "no construction seed of 100 worked (please report it)"
					  : shmf_strerror(rc));
		return -1;
	}
	s->capacity = t->built.keys;
	if ((rc = shmf_geometry_size(SHMF_TYPE_STATIC, s->capacity, s->fpr, 0, 0, &t->g)) < 0 ||
	    t->g.nblocks != t->built.p.nblocks) {
		fprintf(stderr, "shmctl: build: the static filter's shape does not follow from its keys\n");
		return -1;
	}
	t->payload = t->built.payload;
	t->items = t->built.keys;
	return 0;
}

/* What a filter of @p keys keys at @p fpr costs of each kind: a static
 * filter beside a one-line Bloom filter, one line of stdout. */
static void print_costs(uint64_t keys, double fpr)
{
	struct shmf_geometry b, f;
	if (keys == 0 || shmf_geometry_size(SHMF_TYPE_BLOOM, keys, fpr, 0, 1, &b) < 0)
		return;
	double bloom_bpk = (double)b.nblocks * SHMF_BLOCK_BITS / (double)keys;
	if (shmf_geometry_size(SHMF_TYPE_STATIC, keys, fpr, 0, 0, &f) < 0) {
		printf("  cost: a one-line Bloom filter of these %" PRIu64 " keys at %g: %.1f MiB, %.2f bits a key; "
		       "a static filter cannot reach that rate (2^-32 at best)\n",
		       keys, fpr, (double)b.nblocks * 64 / 1048576.0, bloom_bpk);
		return;
	}
	printf("  cost: these %" PRIu64 " keys at %g: static (%u-bit fingerprints, rate %.3g) %.1f MiB, %.2f bits a "
	       "key; one-line Bloom %.1f MiB, %.2f bits a key\n",
	       keys, fpr, f.k, shmf_fuse_fpr(f.k), (double)f.nblocks * 64 / 1048576.0,
	       (double)f.nbuckets * f.k / (double)keys, (double)b.nblocks * 64 / 1048576.0, bloom_bpk);
}

int shmctl_build(int argc, char **argv)
{
	struct build_args a;
	int rc = build_parse(argc, argv, &a);
	if (rc != 0)
		return rc;
	struct filter_spec *s = &a.spec;
	struct table t = { 0 };
	if ((rc = table_init(&t, s)) > 0)
		return 2; /* said */
	if (rc < 0) {
		char why[320] = "";
		if (rc == SHMF_E_INVAL && s->type == SHMF_TYPE_CUCKOO)
			spec_bucket_fpr_why(s->capacity, s->bucket_size ? s->bucket_size : SHMF_CUCKOO_SLOTS_DEFAULT,
					    s->fpr, why, sizeof(why));
		else if (rc == SHMF_E_INVAL && s->type == SHMF_TYPE_STATIC)
			snprintf(why, sizeof(why),
				 "a static filter reaches 2^-8 (8-bit fingerprints), 2^-16 (16-bit) or 2^-32 (32-bit) at "
				 "best; give a rate of at least %.3g",
				 shmf_fuse_fpr(32));
		fprintf(stderr, "shmctl: build: capacity %" PRIu64 " at error rate %g: %s\n", s->capacity, s->fpr,
			why[0] ? why : shmf_strerror(rc));
		return 2;
	}
	double secs, start = now_s();
	if (build_read(&t, a.from, &secs) < 0 || (s->type == SHMF_TYPE_STATIC && static_construct(&t, s, a.from) < 0) ||
	    build_write(&t, s, a.out) < 0)
		return 2;
	secs = now_s() - start;
	if (s->type != SHMF_TYPE_STATIC)
		build_warn_over(&t, s);
	printf("%s: %s filter, %" PRIu64 " keys read, %" PRIu64 " items, %.2f M keys/s\n", a.out,
	       spec_type_name(s->type), t.keys, t.items, secs > 0 ? (double)t.keys / secs / 1e6 : 0.0);
	if (s->type == SHMF_TYPE_STATIC)
		printf("  static: %u-bit fingerprints (false-positive rate %.3g), %" PRIu64
		       " fingerprints in segments of %u, %.2f bits a key, built on try %u\n",
		       t.g.k, shmf_fuse_fpr(t.g.k), t.g.nbuckets, t.g.bucket_size,
		       (double)t.g.nbuckets * t.g.k / (double)t.items, t.built.attempts);
	print_costs(t.items, s->fpr);
	return 0;
}
