/*
 * bench-cuckoo-fill.c - how many keys a cuckoo table takes before an add
 * fails, against the capacity it was sized for, with the sizing's headroom
 * and without it (shmf_cuckoo_size()), side by side on the same seeds.
 *
 *   bench-cuckoo-fill [--bucket-size B] [--kicks N] [--fpr P] [TABLES] [CAPACITY...]
 *   bench-cuckoo-fill --load [--kicks N] [TABLES] [CAPACITY...]
 *
 * For each capacity (default 1 3 10 30 100 300 1000), TABLES tables
 * (default 20000) each get their own seed and are filled with distinct keys
 * until shmf_cuckoo_add() answers SHMF_E_FULL. Prints, per sizing, how many
 * tables filled before their capacity, the fewest keys one took, and the
 * buckets; buckets of B fingerprints (default 4), relocation paths of at
 * most N (default 500), sized for error rate P (default 0.01).
 *
 * --load: for every bucket size and fingerprint width that make one word,
 * TABLES tables (default 5) sized for each capacity (default 1000000) at
 * the planned load are filled until the first SHMF_E_FULL, and the load
 * reached (keys / slots) printed: the lowest and the median. This is what
 * shmf_cuckoo_load() plans by. Counts, not times: nothing here depends on
 * the machine's speed.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libclient/cuckoo.h"
#include "libclient/hash.h"
#include <shmf.h>

struct table {
	void *base;
	size_t len;
	struct shmf_cuckoo_lock lock;
	struct shmf_cuckoo_geom g;
};

static void table_open(struct table *t, const struct shmf_cuckoo_params *p, uint32_t kicks)
{
	char path[64];
	snprintf(path, sizeof(path), "/dev/shm/shmf-bench-fill.%d", (int)getpid());
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	t->len = sizeof(struct shmf_cuckoo_meta) + p->table_bytes;
	if (fd < 0 || ftruncate(fd, (off_t)t->len) < 0 ||
	    (t->base = mmap(NULL, t->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		perror(path);
		exit(1);
	}
	unlink(path);
	close(fd);
	shmf_cuckoo_lock_init(&t->lock, 0);
	t->g = (struct shmf_cuckoo_geom){ .buckets = (char *)t->base + sizeof(struct shmf_cuckoo_meta),
					  .nbuckets = p->nbuckets,
					  .fp_bits = p->fp_bits,
					  .slots = p->slots,
					  .max_kicks = kicks,
					  .meta = t->base,
					  .lock = &t->lock };
	if (shmf_cuckoo_geom_layout(&t->g) < 0) {
		fprintf(stderr, "buckets of %u %u-bit fingerprints are not one word\n", p->slots, p->fp_bits);
		exit(1);
	}
}

static void table_close(struct table *t)
{
	munmap(t->base, t->len);
}

/* Keys a fresh table with @p seed takes before its first SHMF_E_FULL. */
static uint64_t fill(struct table *t, uint64_t seed)
{
	memset(t->base, 0, t->len);
	t->g.seed = seed;
	for (uint64_t n = 0;; n++) {
		uint64_t k[2] = { n, 0xf111 };
		struct shmf_cuckoo_key key = shmf_cuckoo_locate(&t->g, shmf_hash(k, sizeof(k), seed));
		int r = shmf_cuckoo_add(&t->g, &key);
		if (r == SHMF_E_FULL)
			return n;
		if (r < 0) {
			fprintf(stderr, "add: %s\n", shmf_strerror(r));
			exit(1);
		}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* --load: the load each layout reaches before its first SHMF_E_FULL. */
static void loads(unsigned tables, int ncap, char **caps, uint32_t kicks)
{
	printf("%-9s %-7s %-7s %10s %10s %10s %8s\n", "capacity", "bucket", "fp bits", "buckets", "lowest", "median",
	       "planned");
	for (int c = 0; c < (ncap ? ncap : 1); c++) {
		uint64_t cap = ncap ? strtoull(caps[c], NULL, 10) : 1000000;
		for (uint32_t slots = 1; slots <= SHMF_CUCKOO_SLOTS_MAX; slots *= 2)
			for (uint32_t bits = 8; bits <= 32; bits *= 2) {
				struct shmf_cuckoo_params p = { .fp_bits = bits, .slots = slots };
				if (!shmf_cuckoo_layout_ok(slots, bits) ||
				    shmf_cuckoo_buckets(cap, slots, bits, 1, &p.nbuckets) < 0)
					continue;
				/* The buckets the sizing plans, the width asked for. */
				p.table_bytes = shmf_cuckoo_table_bytes(p.nbuckets, bits, slots);
				struct table t;
				table_open(&t, &p, kicks);
				uint64_t *n = malloc(tables * sizeof(*n));
				for (unsigned i = 0; i < tables; i++)
					n[i] = fill(&t, 0x10ad0000u + i);
				qsort(n, tables, sizeof(*n), cmp_u64);
				double s = (double)p.nbuckets * slots;
				printf("%-9" PRIu64 " %-7u %-7u %10" PRIu64 " %10.4f %10.4f %8.2f\n", cap, slots, bits,
				       p.nbuckets, (double)n[0] / s, (double)n[tables / 2] / s,
				       shmf_cuckoo_load(slots, bits));
				free(n);
				table_close(&t);
			}
	}
}

int main(int argc, char **argv)
{
	static const uint64_t defaults[] = { 1, 3, 10, 30, 100, 300, 1000 };
	uint32_t slots = SHMF_CUCKOO_SLOTS_DEFAULT, kicks = SHMF_CUCKOO_MAX_KICKS;
	double fpr = 0.01;
	int load = 0;
	while (argc > 1 && argv[1][0] == '-' && argv[1][1] == '-') {
		if (!strcmp(argv[1], "--load")) {
			load = 1;
			argv++, argc--;
			continue;
		}
		if (argc < 3)
			break;
		if (!strcmp(argv[1], "--bucket-size"))
			slots = (uint32_t)strtoul(argv[2], NULL, 10);
		else if (!strcmp(argv[1], "--kicks"))
			kicks = (uint32_t)strtoul(argv[2], NULL, 10);
		else if (!strcmp(argv[1], "--fpr"))
			fpr = strtod(argv[2], NULL);
		else
			break;
		argv += 2, argc -= 2;
	}
	unsigned tables = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : load ? 5 : 20000;
	int ncap = argc > 2 ? argc - 2 : (int)(sizeof(defaults) / sizeof(defaults[0]));
	if (tables == 0 || kicks == 0 || kicks > SHMF_CUCKOO_KICKS_LIMIT) {
		fprintf(stderr,
			"usage: %s [--bucket-size B] [--kicks N] [--fpr P] [TABLES] [CAPACITY...]\n"
			"       %s --load [--kicks N] [TABLES] [CAPACITY...]\n",
			argv[0], argv[0]);
		return 2;
	}
	if (load) {
		loads(tables, argc > 2 ? argc - 2 : 0, argv + 2, kicks);
		return 0;
	}
	printf("buckets of %u, paths of at most %u moves, error rate %g\n", slots, kicks, fpr);
	printf("%-9s %-16s %8s %18s %10s\n", "capacity", "sizing", "buckets", "full before cap", "fewest");
	for (int c = 0; c < ncap; c++) {
		uint64_t cap = argc > 2 ? strtoull(argv[2 + c], NULL, 10) : defaults[c];
		for (int headroom = 0; headroom <= 1; headroom++) {
			struct shmf_cuckoo_params p;
			if (cap == 0 || shmf_cuckoo_size(cap, fpr, slots, headroom, &p) < 0) {
				fprintf(stderr, "capacity %" PRIu64 " cannot be sized\n", cap);
				return 2;
			}
			struct table t;
			table_open(&t, &p, kicks);
			unsigned short_of = 0;
			uint64_t fewest = UINT64_MAX;
			for (unsigned i = 0; i < tables; i++) {
				/* The same seeds for both sizings. */
				uint64_t n = fill(&t, 0x5eed0000u + i);
				short_of += n < cap;
				fewest = n < fewest ? n : fewest;
			}
			table_close(&t);
			char frac[32];
			snprintf(frac, sizeof(frac), "%u of %u", short_of, tables);
			printf("%-9" PRIu64 " %-16s %8" PRIu64 " %18s %10" PRIu64 "\n", cap,
			       headroom ? "with headroom" : "without headroom", p.nbuckets, frac, fewest);
		}
	}
	return 0;
}
