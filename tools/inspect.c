/*
 * inspect.c - shmctl inspect: a snapshot file's header fields, its
 * generations, and the checksum verdict of every part of it. A damaged
 * file exits 2 and says where and what.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "offline.h"
#include "snapshot.h"
#include "spec.h"

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
	printf("type            %s\n", spec_type_name((int)h->type));
	printf("capacity        %" PRIu64 "\n", h->capacity);
	printf("error_rate      %.17g\n", fpr);
	printf("%-15s %u\n", h->type == SHMF_TYPE_CUCKOO ? "fingerprint" : "k", h->k);
	printf("blocks          %" PRIu64 " (%" PRIu64 " bytes per generation)\n", h->nblocks, h->section_bytes);
	if (h->type == SHMF_TYPE_CUCKOO)
		printf("buckets         %" PRIu64 "\nmax_kicks       %u\n", h->nbuckets, h->max_kicks);
	printf("seed            0x%016" PRIx64 "\n", h->seed);
	printf("created         %s\nsnapshot_taken  %s\n", when(h->created_epoch, a, sizeof(a)),
	       when(h->snapshot_epoch, b, sizeof(b)));
	if (h->window_gens)
		printf("window          %" PRIu64 " s x %u generations\n", h->window_secs, h->window_gens);
	else
		printf("window          none\n");
	printf("replicated      %s\n", h->flags & SHMF_SNAP_F_REPLICATED ? "yes" : "no");
	printf("stream_cursor   %" PRIu64 "-%" PRIu64 "%s\n", h->cursor_ms, h->cursor_seq,
	       h->cursor_ms || h->cursor_seq ? "" : " (none)");
	printf("file_bytes      %" PRIu64 "\n", h->file_bytes);
	for (unsigned i = 0; i < h->nsections; i++)
		printf("generation      %" PRIu64 ": created %s, items %" PRIu64 ", deletes %" PRIu64 "\n",
		       sf->sec[i].generation, when(sf->sec[i].created_epoch, a, sizeof(a)), sf->sec[i].items,
		       sf->sec[i].deletes);
}

static void print_json(const struct snap_file *sf, const char *verdict)
{
	const struct shmf_snap_header *h = &sf->hdr;
	double fpr;
	memcpy(&fpr, &h->fpr_bits, sizeof(fpr));
	printf("{\"version\":%u,\"name\":\"%s\",\"type\":\"%s\",\"capacity\":%" PRIu64 ",\"error_rate\":%.17g,\"k\":%u,"
	       "\"blocks\":%" PRIu64 ",\"buckets\":%" PRIu64 ",\"max_kicks\":%u,\"seed\":%" PRIu64
	       ",\"created\":%" PRIu64 ",\"snapshot_taken\":%" PRIu64 ",\"window_secs\":%" PRIu64
	       ",\"window_generations\":%u,\"replicated\":%s,\"stream_cursor\":\"%" PRIu64 "-%" PRIu64
	       "\",\"file_bytes\":%" PRIu64 ",\"generations\":[",
	       h->version, h->name, spec_type_name((int)h->type), h->capacity, fpr, h->k, h->nblocks, h->nbuckets,
	       h->max_kicks, h->seed, h->created_epoch, h->snapshot_epoch, h->window_secs, h->window_gens,
	       h->flags & SHMF_SNAP_F_REPLICATED ? "true" : "false", h->cursor_ms, h->cursor_seq, h->file_bytes);
	for (unsigned i = 0; i < h->nsections; i++)
		printf("%s{\"generation\":%" PRIu64 ",\"created\":%" PRIu64 ",\"items\":%" PRIu64
		       ",\"deletes\":%" PRIu64 "}",
		       i ? "," : "", sf->sec[i].generation, sf->sec[i].created_epoch, sf->sec[i].items,
		       sf->sec[i].deletes);
	printf("],\"checksum\":\"%s\"}\n", verdict);
}

int shmctl_inspect(int argc, char **argv, int json)
{
	if (argc != 2) {
		fprintf(stderr, "shmctl: inspect takes one snapshot file\n");
		return 2;
	}
	struct snap_file sf;
	char err[SNAPSHOT_ERR_MAX];
	if (snapshot_open(&sf, argv[1], err, sizeof(err)) < 0) {
		if (json)
			printf("{\"checksum\":\"damaged\",\"error\":\"%s\"}\n", "see stderr");
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
