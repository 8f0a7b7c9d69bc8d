/*
 * defaults.h - what a filter created on the fly gets, and the switches
 * around RedisBloom compatibility: the [defaults] section of the
 * configuration (config.c parses it; this is the one table of values).
 *
 *   [defaults]
 *   auto_create = yes            ; BF.ADD, BF.MADD, BF.INSERT, CF.ADD, CF.ADDNX,
 *                                ; CF.INSERT, CF.INSERTNX create a missing filter
 *   bloom_capacity = 100         ; RedisBloom's defaults, as it creates them
 *   bloom_error_rate = 0.01
 *   bloom_expansion = 2
 *   cuckoo_capacity = 1024
 *   cuckoo_bucket_size = 2
 *   cuckoo_max_iterations = 20
 *   cuckoo_expansion = 1
 *   mode = 0640                  ; data file mode of a filter created on the fly
 *   flushall = no                ; FLUSHALL / FLUSHDB drop every filter (off: refused)
 *
 * These are RedisBloom's door (design.md, "Two doors"): BF.* and CF.*
 * make filters with them, CF.RESERVE without BUCKETSIZE or MAXITERATIONS
 * included (RedisBloom's cf-bucket-size and cf-max-iterations); shmd's
 * own doors (shmctl create, the filter sections) keep shmd's buckets of 4
 * and 500 moves (libclient/cuckoo.h).
 *
 * cuckoo_bucket_size is the bucket size of a cuckoo filter created on the
 * fly: 1, 2, 4 or 8 (cuckoo.h says why no other), one whose buckets can
 * reach those filters' 1% error rate (not 8: that needs 8-bit
 * fingerprints); CF.INSERT's capacity check uses it too. The expansions
 * are what the filters created on the fly (and by BF.RESERVE, BF.INSERT,
 * CF.RESERVE without EXPANSION) grow by; the cuckoo one is rounded up to a
 * power of 2, as RedisBloom keeps it, and 0 never grows. A growing cuckoo
 * filter's layers keep its first layer's bucket size.
 */
#ifndef SHMD_DEFAULTS_H
#define SHMD_DEFAULTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/spec.h"

struct filter_defaults {
	int auto_create; /* 1: the adds create a missing filter (RedisBloom's behaviour) */
	int flushall;    /* 1: FLUSHALL and FLUSHDB are served */
	uint64_t bloom_capacity;
	double bloom_error_rate;
	uint32_t bloom_expansion;
	uint64_t cuckoo_capacity;
	uint32_t cuckoo_bucket_size;
	uint32_t cuckoo_max_iterations;
	uint32_t cuckoo_expansion;
	mode_t mode;
};

/* RedisBloom's: BF 100 keys at 1%, expansion 2; CF 1024 keys, buckets of
 * 2, 20 iterations, expansion 1. */
#define FILTER_DEFAULTS_INIT                                                                        \
	{                                                                                           \
		.auto_create = 1, .flushall = 0, .bloom_capacity = 100, .bloom_error_rate = 0.01,   \
		.bloom_expansion = SPEC_BLOOM_EXPANSION_DEFAULT, .cuckoo_capacity = 1024,           \
		.cuckoo_bucket_size = SPEC_CUCKOO_BUCKET_SIZE_DEFAULT, .cuckoo_max_iterations = 20, \
		.cuckoo_expansion = 1, .mode = 0640                                                 \
	}

/** The built-in defaults (FILTER_DEFAULTS_INIT), for a server started without a configuration. */
extern const struct filter_defaults filter_defaults_builtin;

/**
 * Set key @p name of [defaults] from its text @p value.
 * @return 0, or SHMF_E_INVAL with "key 'value': what a good value is" (or
 *         "unknown key ...") in @p msg.
 */
int defaults_set(struct filter_defaults *d, const char *name, const char *value, char *msg, size_t len);

/** The keys taken together (a cuckoo capacity of at least twice the bucket size). 0 or SHMF_E_INVAL with @p msg. */
int defaults_check(const struct filter_defaults *d, char *msg, size_t len);

#endif
