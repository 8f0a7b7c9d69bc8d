/*
 * spec.h - a filter's parameters from text: the one parser behind the
 * configuration file and BF.RESERVE, and the defaults both start from.
 * Each parser is strict (the whole text, no sign, no spaces), returns 0 or
 * SHMF_E_INVAL (the caller's message names the option and the value), and
 * leaves *out untouched on failure.
 */
#ifndef SHMF_COMMON_SPEC_H
#define SHMF_COMMON_SPEC_H

#include <stdint.h>
#include <sys/types.h>

#include <shmf.h>

/* What a filter is created from (configuration file or BF.RESERVE). */
struct filter_spec {
	char name[SHMF_NAME_MAX + 1];
	int type;                 /* SHMF_TYPE_BLOOM, SHMF_TYPE_CUCKOO (or, from a file only, SHMF_TYPE_STATIC) */
	uint64_t capacity;        /* keys */
	double fpr;               /* target false-positive rate at capacity, in (0, 1) */
	mode_t mode;              /* data file mode, e.g. 0640 (group may check) or 0660 (group may add) */
	uint32_t max_kicks;       /* cuckoo: relocation bound, 0 for the default */
	uint32_t bucket_size;     /* cuckoo: fingerprints per bucket (1, 2, 4, 8), 0 for the default (4) */
	uint32_t lock_timeout_ms; /* cuckoo: longest wait for the relocation lock, 0 for the default (1 s) */
	uint64_t window_secs;     /* time window: seconds per generation, 0: none */
	uint32_t window_gens;     /* time window: generations kept (1..SHMF_WINDOW_MAX) */
	int replicate;            /* fleet: journal its adds, seed from the fleet's secret (shmd/replication.h) */
	uint32_t expansion;       /* growing filter: each new layer this many times the last (geometry.h); 0: fixed */
	int nonscaling;           /* Bloom: adds of new keys past the capacity are refused (RedisBloom's NONSCALING) */
	/* Configuration only: periodic snapshots (snapshot_every 0: none). */
	uint64_t snapshot_every; /* seconds between snapshots */
	uint32_t snapshot_keep;  /* newest files kept */
	char snapshot_dir[256];  /* "" : the instance's snapshot_dir */
};

/** A Bloom filter @p name of 1,000,000 keys at 1% FPR, mode 0640, fixed
 * (it does not grow, and accepts adds past its capacity), name truncated
 * to fit. */
void spec_defaults(struct filter_spec *s, const char *name);

/** "bloom" or "cuckoo" to SHMF_TYPE_*. */
int spec_parse_type(const char *text, int *out);

/** A relocation bound: decimal, 1..SHMF_CUCKOO_KICKS_LIMIT. */
int spec_parse_kicks(const char *text, uint32_t *out);

/* The cuckoo bucket sizes there are, and why only those, for messages. */
/* shmd's built-in defaults that decide what a reservation makes: shmd's
 * configuration starts from them (shmd/config: defaults.h, config.h), and
 * shmctl plan says what BF.RESERVE and CF.RESERVE pick with them. */
#define SPEC_BLOOM_EXPANSION_DEFAULT    2u     /* [defaults] bloom_expansion */
#define SPEC_CUCKOO_BUCKET_SIZE_DEFAULT 2u     /* [defaults] cuckoo_bucket_size */
#define SPEC_JOURNAL_RINGS_DEFAULT      64u    /* [replication] journal_rings */
#define SPEC_JOURNAL_ENTRIES_DEFAULT    16384u /* [replication] journal_entries */

#define SPEC_BUCKET_SIZES_LIST "1, 2, 4 or 8"
#define SPEC_BUCKET_SIZES_WHY                                                                                        \
	"(a bucket is one word that a lookup reads in one atomic load and a move compare-and-swaps: 8 fingerprints " \
	"fit it only at 8 bits, 4 at 16 bits)"
#define SPEC_BUCKET_SIZES SPEC_BUCKET_SIZES_LIST " " SPEC_BUCKET_SIZES_WHY

/** A cuckoo bucket size: decimal, 1, 2, 4 or 8 (SPEC_BUCKET_SIZES). */
int spec_parse_bucket_size(const char *text, uint32_t *out);

/**
 * Why a cuckoo filter of @p capacity keys with buckets of @p bucket_size
 * (1, 2, 4 or 8) cannot reach error rate @p fpr, in @p msg: which
 * fingerprints fit its bucket word, the rate they reach, and what would
 * (a larger rate, a smaller bucket, a Bloom filter).
 */
void spec_bucket_fpr_why(uint64_t capacity, uint32_t bucket_size, double fpr, char *msg, size_t len);

/** The command family of SHMF_TYPE_* @p type: SHMF_TYPE_CUCKOO for a
 * cuckoo filter (CF.*), SHMF_TYPE_BLOOM for the others (BF.*: a static
 * filter answers BF.EXISTS, BF.MEXISTS, BF.INFO, BF.SCANDUMP and
 * BF.LOADCHUNK, and refuses BF.ADD by name). */
int spec_family(int type);

/** The name of SHMF_TYPE_* @p type: "bloom", "cuckoo" or "static". */
const char *spec_type_name(int type);

/** Decimal digits only, greater than 0 and representable. */
int spec_parse_capacity(const char *text, uint64_t *out);

/** A number strictly between 0 and 1 (no nan). */
int spec_parse_fpr(const char *text, double *out);

/** An octal permission mode (at most 0777) with none of @p forbidden set. */
int spec_parse_mode(const char *text, mode_t forbidden, mode_t *out);

/** A duration: a positive integer with an optional unit s, m, h or d
 * ("90", "10m", "1d"), at most ten years, into seconds. */
int spec_parse_duration(const char *text, uint64_t *out);

#endif
