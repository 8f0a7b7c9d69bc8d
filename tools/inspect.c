/*
 * inspect.c - shmctl inspect: a snapshot file's header fields, its
 * generations, and the checksum verdict of every part of it. A damaged
 * file exits 2 and says where and what.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tools/cli.h"
#include "tools/offline.h"
#include "common/snapshot.h"
#include "libclient/segment-format.h"
#include "common/spec.h"

static const char *when(uint64_t epoch, char *buf, size_t len)
{
	time_t t = (time_t)epoch;
	struct tm tm;
	if (gmtime_r(&t, &tm) == NULL || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, len, "%" PRIu64, epoch);
	return buf;
}

static void print_text(const struct snap_file *sf)
{
	const struct shmf_snap_header *h = &sf->hdr;
	char a[32], b[32];
	double fpr;
	memcpy(&fpr, &h->fpr_bits, sizeof(fpr));
	printf("file            %s\n", sf->path);
	printf("format          shmfilter snapshot, version %u, little-endian\n", h->version);
	printf("filter          %s\n", h->name);
	printf("type            %s%s\n", spec_type_name((int)h->type),
	       h->scheme != SHMF_SCHEME_NATIVE ? ", imported from RedisBloom (read-only, RedisBloom's hashing)" : "");
	printf("capacity        %" PRIu64 "\n", h->capacity);
	printf("error_rate      %.17g\n", fpr);
	printf("%-15s %u\n", h->type == SHMF_TYPE_CUCKOO ? "fingerprint" : "k", h->k);
	printf("blocks          %" PRIu64 " (%" PRIu64 " bytes per generation)\n", h->nblocks, h->section_bytes);
	struct shmf_geometry g;
	snapshot_geometry(h, &g); /* cuckoo before version 3: 4; Bloom before version 5: one line */
	if (h->type == SHMF_TYPE_CUCKOO)
		printf("buckets         %" PRIu64 "\nbucket_size     %u\nmax_kicks       %u\n", h->nbuckets,
		       g.bucket_size, h->max_kicks);
	else if (h->scheme == SHMF_SCHEME_NATIVE)
		printf("lines           %u (a key's bits in %u 64-byte line%s, k %u in each)\n", g.bucket_size,
		       g.bucket_size, g.bucket_size > 1 ? "s" : "", h->k);
	printf("seed            0x%016" PRIx64 "\n", h->seed);
	printf("created         %s\nsnapshot_taken  %s\n", when(h->created_epoch, a, sizeof(a)),
	       when(h->snapshot_epoch, b, sizeof(b)));
	if (h->window_gens)
		printf("window          %" PRIu64 " s x %u generations\n", h->window_secs, h->window_gens);
	else
		printf("window          none\n");
	if (h->flags & SHMF_SNAP_F_LAYERED)
		printf("grows           by %u a layer, %u layers (generations below, the newest first)\n", h->expansion,
		       h->nsections);
	else
		printf("grows           no%s\n", h->flags & SHMF_SNAP_F_NONSCALING ? " (nonscaling)" : "");
	printf("replicated      %s\n", h->flags & SHMF_SNAP_F_REPLICATED ? "yes" : "no");
	printf("stream_cursor   %" PRIu64 "-%" PRIu64 "%s\n", h->cursor_ms, h->cursor_seq,
	       h->cursor_ms || h->cursor_seq ? "" : " (none)");
	printf("file_bytes      %" PRIu64 "\n", h->file_bytes);
	for (unsigned i = 0; i < h->nsections; i++) {
		printf("generation      %" PRIu64 ": created %s, items %" PRIu64 ", deletes %" PRIu64,
		       sf->sec[i].generation, when(sf->sec[i].created_epoch, a, sizeof(a)), sf->sec[i].items,
		       sf->sec[i].deletes);
		if (h->flags & SHMF_SNAP_F_LAYERED)
			printf(", layer %u of %" PRIu64 " bytes", sf->sec[i].layer, sf->lay.bytes[i]);
		putchar('\n');
	}
}

static void print_json(const struct snap_file *sf, const char *verdict)
{
	const struct shmf_snap_header *h = &sf->hdr;
	struct json j = { 0 };
	char cursor[48];
	double fpr;
	memcpy(&fpr, &h->fpr_bits, sizeof(fpr));
	struct shmf_geometry g;
	snapshot_geometry(h, &g); /* the bucket size: cuckoo before version 3, 4; Bloom: lines a key */
	json_open(&j, '{');
	json_key(&j, "file");
	json_str(&j, sf->path);
	json_key(&j, "version");
	json_uint(&j, h->version);
	json_key(&j, "name");
	json_str(&j, h->name);
	json_key(&j, "type");
	json_str(&j, spec_type_name((int)h->type));
	const struct {
		const char *key;
		uint64_t v;
	} nums[] = {
		{ "capacity", h->capacity },       { "k", h->k },
		{ "scheme", h->scheme },           { "blocks", h->nblocks },
		{ "buckets", h->nbuckets },        { "bucket_size", g.bucket_size },
		{ "max_kicks", h->max_kicks },     { "seed", h->seed },
		{ "created", h->created_epoch },   { "snapshot_taken", h->snapshot_epoch },
		{ "window_secs", h->window_secs }, { "window_generations", h->window_gens },
		{ "file_bytes", h->file_bytes },
	};
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		json_key(&j, nums[i].key);
		json_uint(&j, nums[i].v);
	}
	char rate[40];
	snprintf(rate, sizeof(rate), "%.17g", fpr);
	json_key(&j, "error_rate");
	json_number_text(&j, rate);
	json_key(&j, "replicated");
	json_bool(&j, (h->flags & SHMF_SNAP_F_REPLICATED) != 0);
	json_key(&j, "expansion");
	json_uint(&j, (h->flags & SHMF_SNAP_F_LAYERED) ? h->expansion : 0);
	json_key(&j, "nonscaling");
	json_bool(&j, (h->flags & SHMF_SNAP_F_NONSCALING) != 0);
	snprintf(cursor, sizeof(cursor), "%" PRIu64 "-%" PRIu64, h->cursor_ms, h->cursor_seq);
	json_key(&j, "stream_cursor");
	json_str(&j, cursor);
	json_key(&j, "generations");
	json_open(&j, '[');
	for (unsigned i = 0; i < h->nsections; i++) {
		json_open(&j, '{');
		json_key(&j, "generation");
		json_uint(&j, sf->sec[i].generation);
		json_key(&j, "created");
		json_uint(&j, sf->sec[i].created_epoch);
		json_key(&j, "items");
		json_uint(&j, sf->sec[i].items);
		json_key(&j, "deletes");
		json_uint(&j, sf->sec[i].deletes);
		json_key(&j, "layer");
		json_uint(&j, sf->sec[i].layer);
		json_key(&j, "bytes");
		json_uint(&j, sf->lay.bytes[i]);
		json_close(&j, '}');
	}
	json_close(&j, ']');
	json_key(&j, "checksum");
	json_str(&j, verdict);
	json_close(&j, '}');
	putchar('\n');
}

/* The JSON of a file that cannot be read as a snapshot at all. */
static void print_json_refused(const char *path, const char *err)
{
	struct json j = { 0 };
	json_open(&j, '{');
	json_key(&j, "file");
	json_str(&j, path);
	json_key(&j, "checksum");
	json_str(&j, "damaged");
	json_key(&j, "error");
	json_str(&j, err);
	json_close(&j, '}');
	putchar('\n');
}

int shmctl_inspect(int argc, char **argv, int json)
{
	if (argc < 2)
		cli_usage_error("inspect", "missing FILE, the snapshot file to inspect");
	if (argc > 2)
		cli_usage_error("inspect", "unexpected argument '%s' (one file at a time)", argv[2]);
	struct snap_file sf;
	char err[SNAPSHOT_ERR_MAX];
	if (snapshot_open(&sf, argv[1], err, sizeof(err)) < 0) {
		if (json)
			print_json_refused(argv[1], err);
		fprintf(stderr, "shmctl: inspect: %s\n", err);
		return 2;
	}
	int rc = 0;
	for (unsigned i = 0; i < sf.hdr.nsections && rc == 0; i++)
		rc = snapshot_read_section(&sf, i, NULL, err, sizeof(err));
	if (json) {
		print_json(&sf, rc == 0 ? "ok" : "damaged");
	} else {
		print_text(&sf);
		printf("checksum        %s\n",
		       rc == 0 ? "ok (header, generations, every payload chunk, trailer)" : "DAMAGED");
	}
	if (rc < 0)
		fprintf(stderr, "shmctl: inspect: %s\n", err);
	snapshot_close(&sf);
	return rc < 0 ? 2 : 0;
}
