/*
 * defaults.c - the [defaults] section of the configuration (see
 * defaults.h): one row per key, read by the parser, the messages and the
 * built-in values.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "libclient/cuckoo.h"
#include "shmd/config/defaults.h"
#include "common/errmsg.h"
#include "libclient/geometry.h"
#include "common/spec.h"

const struct filter_defaults filter_defaults_builtin = FILTER_DEFAULTS_INIT;

enum dkind { D_BOOL, D_COUNT, D_RATE, D_MODE, D_BUCKET };

static const struct defaults_key {
	const char *name;
	enum dkind kind;
	size_t off, size; /* the field in struct filter_defaults */
	uint64_t min, max;
	const char *help;
} keys[] = {
#define DFIELD(f) offsetof(struct filter_defaults, f), sizeof(((struct filter_defaults *)0)->f)
	{ "auto_create", D_BOOL, DFIELD(auto_create), 0, 1, "yes or no" },
	{ "flushall", D_BOOL, DFIELD(flushall), 0, 1, "yes or no" },
	{ "bloom_capacity", D_COUNT, DFIELD(bloom_capacity), 1, UINT64_C(1) << 40, "keys, at least 1" },
	{ "bloom_error_rate", D_RATE, DFIELD(bloom_error_rate), 0, 0, "a number strictly between 0 and 1" },
	{ "bloom_expansion", D_COUNT, DFIELD(bloom_expansion), 1, 32768, "an integer from 1 to 32768" },
	{ "cuckoo_capacity", D_COUNT, DFIELD(cuckoo_capacity), 2, UINT64_C(1) << 40,
	  "keys, at least twice the bucket size" },
	{ "cuckoo_bucket_size", D_BUCKET, DFIELD(cuckoo_bucket_size), 1, SHMF_CUCKOO_SLOTS_MAX, SPEC_BUCKET_SIZES },
	{ "cuckoo_max_iterations", D_COUNT, DFIELD(cuckoo_max_iterations), 1, SHMF_CUCKOO_KICKS_LIMIT,
	  "an integer from 1 to the relocation limit" },
	{ "cuckoo_expansion", D_COUNT, DFIELD(cuckoo_expansion), 0, 32768, "an integer from 0 (never grow) to 32768" },
	{ "mode", D_MODE, DFIELD(mode), 0, 0, "an octal mode like 0640, without the other-write bit" },
#undef DFIELD
};

static int parse_value(const struct defaults_key *k, const char *value, void *field)
{
	uint64_t n = 0;
	int b;
	switch (k->kind) {
	case D_BOOL:
		if (!strcasecmp(value, "yes") || !strcasecmp(value, "true") || !strcmp(value, "1") ||
		    !strcasecmp(value, "on"))
			b = 1;
		else if (!strcasecmp(value, "no") || !strcasecmp(value, "false") || !strcmp(value, "0") ||
			 !strcasecmp(value, "off"))
			b = 0;
		else
			return SHMF_E_INVAL;
		*(int *)field = b;
		return 0;
	case D_RATE: return spec_parse_fpr(value, (double *)field);
	case D_MODE: return spec_parse_mode(value, 02, (mode_t *)field);
	case D_BUCKET: return spec_parse_bucket_size(value, (uint32_t *)field);
	case D_COUNT:
		if (!(value[0] == '0' && value[1] == '\0') && spec_parse_capacity(value, &n) < 0)
			return SHMF_E_INVAL;
		if (n < k->min || n > k->max)
			return SHMF_E_INVAL;
		if (k->size == sizeof(uint32_t))
			*(uint32_t *)field = (uint32_t)n;
		else
			*(uint64_t *)field = n;
		return 0;
	}
	return SHMF_E_INVAL;
}

int defaults_set(struct filter_defaults *d, const char *name, const char *value, char *msg, size_t len)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (strcmp(name, keys[i].name) != 0)
			continue;
		if (parse_value(&keys[i], value, (char *)d + keys[i].off) < 0)
			return errmsg(msg, len, SHMF_E_INVAL, "%s '%s': %s", name, value, keys[i].help);
		return 0;
	}
	/* config.c refuses the keys its table (config-keys.c) lacks first. */
	return errmsg(msg, len, SHMF_E_INVAL, "key '%s' is in the table of keys (config-keys.c) but has no parser",
		      name);
}

int defaults_check(const struct filter_defaults *d, char *msg, size_t len)
{
	if (d->cuckoo_capacity < 2 * (uint64_t)d->cuckoo_bucket_size)
		return errmsg(msg, len, SHMF_E_INVAL,
			      "cuckoo_capacity %llu is below twice cuckoo_bucket_size %u (RedisBloom's rule)",
			      (unsigned long long)d->cuckoo_capacity, d->cuckoo_bucket_size);
	/* A filter created on the fly gets the error rate of spec_defaults()
	 * (1%): a bucket size that cannot reach it would fail every add that
	 * creates one. */
	struct filter_spec spec;
	struct shmf_geometry g;
	spec_defaults(&spec, "defaults");
	if (shmf_geometry_size(SHMF_TYPE_CUCKOO, d->cuckoo_capacity, spec.fpr, 0, d->cuckoo_bucket_size, &g) ==
	    SHMF_E_INVAL) {
		char why[320];
		spec_bucket_fpr_why(d->cuckoo_capacity, d->cuckoo_bucket_size, spec.fpr, why, sizeof(why));
		return errmsg(msg, len, SHMF_E_INVAL,
			      "cuckoo_bucket_size %u: cuckoo filters created on the fly have error rate %g, and %s",
			      d->cuckoo_bucket_size, spec.fpr, why);
	}
	return 0;
}
