/*
 * bench-cuckoo-fill.c - how many keys a cuckoo table takes before an add
 * fails, against the capacity it was sized for, with the sizing's headroom
 * and without it (shmf_cuckoo_size()), side by side on the same seeds.
 *
 *   bench-cuckoo-fill [TABLES] [CAPACITY...]
 *
 * For each capacity (default 1 3 10 30 100 300 1000), TABLES tables
 * (default 20000) each get their own seed and are filled with distinct keys
 * until shmf_cuckoo_add() answers SHMF_E_FULL. Prints, per sizing, how many
 * tables filled before their capacity, the fewest keys one took, and the
 * buckets. Counts, not times: nothing here depends on the machine's speed.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuckoo.h"
#include "hash.h"
#include "shmf.h"

struct table {
	void *base;
	size_t len;
	struct shmf_cuckoo_lock lock;
	struct shmf_cuckoo_geom g;
};

static void table_open(struct table *t, const struct shmf_cuckoo_params *p)
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
					  .max_kicks = SHMF_CUCKOO_MAX_KICKS,
					  .meta = t->base,
					  .lock = &t->lock };
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

int main(int argc, char **argv)
{
	static const uint64_t defaults[] = { 1, 3, 10, 30, 100, 300, 1000 };
	unsigned tables = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 20000;
	int ncap = argc > 2 ? argc - 2 : (int)(sizeof(defaults) / sizeof(defaults[0]));
	if (tables == 0) {
		fprintf(stderr, "usage: %s [TABLES] [CAPACITY...]\n", argv[0]);
		return 2;
	}
	printf("%-9s %-16s %8s %18s %10s\n", "capacity", "sizing", "buckets", "full before cap", "fewest");
	for (int c = 0; c < ncap; c++) {
		uint64_t cap = argc > 2 ? strtoull(argv[2 + c], NULL, 10) : defaults[c];
		for (int headroom = 0; headroom <= 1; headroom++) {
			struct shmf_cuckoo_params p;
			if (cap == 0 || shmf_cuckoo_size(cap, 0.01, headroom, &p) < 0) {
				fprintf(stderr, "capacity %" PRIu64 " cannot be sized\n", cap);
				return 2;
			}
			struct table t;
			table_open(&t, &p);
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
