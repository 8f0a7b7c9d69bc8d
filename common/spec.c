/*
 * spec.c - a filter's parameters from text (see spec.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libclient/cuckoo.h"
#include "common/spec.h"

void spec_defaults(struct filter_spec *s, const char *name)
{
	*s = (struct filter_spec){ .type = SHMF_TYPE_BLOOM, .capacity = 1000000, .fpr = 0.01, .mode = 0640 };
	snprintf(s->name, sizeof(s->name), "%s", name);
}

int spec_parse_type(const char *text, int *out)
{
	if (!strcmp(text, "bloom"))
		*out = SHMF_TYPE_BLOOM;
	else if (!strcmp(text, "cuckoo"))
		*out = SHMF_TYPE_CUCKOO;
	else
		return SHMF_E_INVAL;
	return 0;
}

int spec_family(int type)
{
	return type == SHMF_TYPE_CUCKOO ? SHMF_TYPE_CUCKOO : SHMF_TYPE_BLOOM;
}

const char *spec_type_name(int type)
{
	return type == SHMF_TYPE_CUCKOO ? "cuckoo" : type == SHMF_TYPE_STATIC ? "static" : "bloom";
}

int spec_parse_kicks(const char *text, uint32_t *out)
{
	uint64_t v;
	if (spec_parse_capacity(text, &v) < 0 || v > SHMF_CUCKOO_KICKS_LIMIT)
		return SHMF_E_INVAL;
	*out = (uint32_t)v;
	return 0;
}

int spec_parse_bucket_size(const char *text, uint32_t *out)
{
	uint64_t v;
	if (spec_parse_capacity(text, &v) < 0 || v > SHMF_CUCKOO_SLOTS_MAX || !shmf_cuckoo_layout_ok((uint32_t)v, 8))
		return SHMF_E_INVAL;
	*out = (uint32_t)v;
	return 0;
}

/* The error rate at capacity of the sizing's table of @p slots with
 * @p bits-bit fingerprints. */
static double reachable(uint64_t capacity, uint32_t slots, uint32_t bits)
{
	uint64_t nb;
	if (shmf_cuckoo_buckets(capacity, slots, bits, 1, &nb) < 0)
		return 1.0;
	return shmf_cuckoo_fpr(capacity, nb, bits, slots);
}

/* @p x rounded up to 3 significant digits: a rate printed with %g that
 * is not below @p x. */
static double up3(double x)
{
	double unit = pow(10.0, floor(log10(x)) - 2.0);
	return ceil(x / unit) * unit;
}

void spec_bucket_fpr_why(uint64_t capacity, uint32_t bucket_size, double fpr, char *msg, size_t len)
{
	if (!shmf_cuckoo_layout_ok(bucket_size, 16))
		snprintf(msg, len,
			 "a bucket of %u fingerprints holds only 8-bit ones (%u x 8 bits fill the 64-bit word a "
			 "lookup reads at once), which reach an error rate of %.3g at capacity, not %g: ask for "
			 "%g or more, or a bucket size of 1, 2 or 4",
			 bucket_size, bucket_size, reachable(capacity, bucket_size, 8), fpr,
			 up3(reachable(capacity, bucket_size, 8)));
	else if (!shmf_cuckoo_layout_ok(bucket_size, 32) && fpr >= reachable(capacity, SHMF_CUCKOO_SLOTS_LOW_RATE, 32))
		snprintf(msg, len,
			 "error rate %g is below what buckets of %u with 16-bit fingerprints reach (%.3g at "
			 "capacity); buckets of 2 with 32-bit fingerprints reach it: ask for a bucket size of 2, "
			 "or none",
			 fpr, bucket_size, reachable(capacity, bucket_size, 16));
	else
		snprintf(msg, len,
			 "error rate %g is below what cuckoo filters reach (%.3g at capacity, buckets of 2 with "
			 "32-bit fingerprints); use a Bloom filter",
			 fpr, reachable(capacity, SHMF_CUCKOO_SLOTS_LOW_RATE, 32));
}

int spec_parse_capacity(const char *text, uint64_t *out)
{
	char *end;
	if (*text < '0' || *text > '9')
		return SHMF_E_INVAL;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno != 0 || *end != '\0' || v == 0)
		return SHMF_E_INVAL;
	*out = v;
	return 0;
}

int spec_parse_fpr(const char *text, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(text, &end);
	if (errno != 0 || end == text || *end != '\0' || !(v > 0.0 && v < 1.0))
		return SHMF_E_INVAL;
	*out = v;
	return 0;
}

int spec_parse_mode(const char *text, mode_t forbidden, mode_t *out)
{
	char *end;
	if (*text < '0' || *text > '7')
		return SHMF_E_INVAL;
	errno = 0;
	unsigned long v = strtoul(text, &end, 8);
	if (errno != 0 || *end != '\0' || v > 0777 || (v & forbidden))
		return SHMF_E_INVAL;
	*out = (mode_t)v;
	return 0;
}

int spec_parse_duration(const char *text, uint64_t *out)
{
	char *end;
	if (*text < '0' || *text > '9')
		return SHMF_E_INVAL;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	uint64_t unit = 1;
	if (errno != 0 || v == 0)
		return SHMF_E_INVAL;
	if (*end != '\0') {
		if (end[1] != '\0')
			return SHMF_E_INVAL;
		switch (*end) {
		case 's': unit = 1; break;
		case 'm': unit = 60; break;
		case 'h': unit = 3600; break;
		case 'd': unit = 86400; break;
		default: return SHMF_E_INVAL;
		}
	}
	if (v > SHMF_WINDOW_SECS_MAX / unit) /* ten years: the longest window */
		return SHMF_E_INVAL;
	*out = (uint64_t)v * unit;
	return 0;
}
