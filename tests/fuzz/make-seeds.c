/*
 * make-seeds.c - writes the seed inputs of the fuzz corpora (not a test):
 * snapshot files and segment images of small Bloom, cuckoo and windowed
 * filters made by the registry, RESP requests and configuration texts.
 * tests/fuzz/run-fuzz.sh --seeds runs it into tests/fuzz/corpus/.
 *
 * Usage: make-seeds CORPUS-DIR
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shmd/config/config.h"
#include "shmd/store/registry.h"
#include "libclient/rundir.h"
#include "common/snapshot.h"

static const char *out;

static void put(const char *sub, const char *name, const void *a, size_t alen, const void *b, size_t blen)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s/seed-%s", out, sub, name);
	FILE *fp = fopen(path, "wb");
	if (fp == NULL || fwrite(a, 1, alen, fp) != alen || (blen && fwrite(b, 1, blen, fp) != blen)) {
		perror(path);
		exit(1);
	}
	fclose(fp);
}

static void *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	if (fp == NULL) {
		perror(path);
		exit(1);
	}
	fseek(fp, 0, SEEK_END);
	*len = (size_t)ftell(fp);
	rewind(fp);
	char *buf = malloc(*len);
	if (fread(buf, 1, *len, fp) != *len)
		exit(1);
	fclose(fp);
	return buf;
}

static struct registry reg;
static char root[64];

static void filter_b(const char *name, int type, uint64_t capacity, double fpr, uint32_t gens, uint32_t bucket)
{
	char err[REGISTRY_ERR_MAX], key[32];
	struct filter_spec spec = { .type = type,
				    .capacity = capacity,
				    .fpr = fpr,
				    .mode = 0640,
				    .window_secs = gens ? 60 : 0,
				    .window_gens = gens,
				    .bucket_size = bucket };
	snprintf(spec.name, sizeof(spec.name), "%s", name);
	if (registry_create(&reg, &spec, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	shmf_t *f;
	if (shmf_open("seed", name, SHMF_RDWR, &f) < 0)
		exit(1);
	for (unsigned g = 0; g < (gens ? gens : 1); g++) {
		if (g > 0 && registry_rotate(&reg, name, err, sizeof(err)) < 0)
			exit(1);
		for (unsigned i = 0; i < capacity / 2; i++) {
			int n = snprintf(key, sizeof(key), "key-%u-%u", g, i);
			if (shmf_add(f, key, (size_t)n) < 0)
				exit(1);
		}
	}
	shmf_close(f);
	/* The snapshot file. */
	char path[256];
	snprintf(path, sizeof(path), "%s/%s.snap", root, name);
	if (registry_snapshot(&reg, name, path, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	size_t len;
	void *snap = slurp(path, &len);
	put("snapshot", name, snap, len, NULL, 0);
	free(snap);
	/* The segment image: flags, control header, slot, data header, payload. */
	int slot = registry_find(&reg, name);
	struct shmf_slot *s = &reg.ctl.slots[slot];
	char fname[128];
	shmf_data_filename(name, atomic_load(&s->generation), fname, sizeof(fname));
	snprintf(path, sizeof(path), "%s/seed/%s", root, fname);
	void *data = slurp(path, &len);
	size_t plen = len - SHMF_DATA_BLOCKS_OFF < 16384 ? len - SHMF_DATA_BLOCKS_OFF : 16384;
	size_t ilen = 1 + 64 + 512 + sizeof(struct shmf_data_header);
	unsigned char *img = calloc(1, ilen);
	memcpy(img + 1, reg.ctl.hdr, 64);
	memcpy(img + 1 + 64, s, 512);
	memcpy(img + 1 + 64 + 512, data, sizeof(struct shmf_data_header));
	for (int flags = 0; flags < 2; flags++) {
		char seed[96];
		img[0] = flags ? 0x3f : 0x20;
		snprintf(seed, sizeof(seed), "%s-%s", name, flags ? "repaired" : "as-is");
		put("segment", seed, img, ilen, (char *)data + SHMF_DATA_BLOCKS_OFF, plen);
	}
	free(img);
	free(data);
}

static void filter(const char *name, int type, uint64_t capacity, double fpr, uint32_t gens)
{
	filter_b(name, type, capacity, fpr, gens, 0);
}

static const char *const requests[][2] = {
	{ "ping", "*1\r\n$4\r\nPING\r\n" },
	{ "add", "*3\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n$5\r\nhello\r\n" },
	{ "pipeline",
	  "*2\r\n$9\r\nBF.EXISTS\r\n$1\r\nf\r\n*1\r\n$4\r\nPING\r\n*4\r\n$7\r\nBF.MADD\r\n$1\r\nf\r\n$1\r\na\r\n$0\r\n\r\n" },
	{ "binary", "*2\r\n$4\r\nECHO\r\n$5\r\na\0\r\nb\r\n" },
	{ "inline", "PING\r\n" },
	{ "partial", "*3\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n$100\r\nabc" },
	{ "reserve",
	  "*7\r\n$10\r\nBF.RESERVE\r\n$5\r\nclick\r\n$5\r\n0.001\r\n$7\r\n1000000\r\n$6\r\nWINDOW\r\n$3\r\n10m\r\n$11\r\nGENERATIONS\r\n" },
	{ "huge", "*1048577\r\n$1\r\nx\r\n" },
	{ "auth-narrow", "*2\r\n$4\r\nAUTH\r\n$6\r\nsecret\r\n*3\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n$40\r\n"
			 "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk\r\n\x21" },
};

static const char *const configs[][2] = {
	{ "default", NULL },
	{ "full",
	  "; a comment\n[instance]\nname = edge\ndir_mode = 0710\nsocket_mode = 0600\ngroup = root ; inline\n"
	  "remove_on_exit = yes\nhuge_pages = off\nsnapshot_dir = /var/lib/shmd\n\n[filter clicks]\ntype = bloom\n"
	  "capacity = 50000000\nfpr = 0.001\nmode = 0660\nsnapshot_every = 5m\nsnapshot_keep = 3\nwindow = 10m\n"
	  "generations = 3\n\n[filter push]\ntype = cuckoo\ncapacity = 10000000\nfpr = 0.01\nmax_kicks = 500\n" },
	{ "bad", "[filter a]\ncapacity = -1\n[filter a]\n" },
	{ "syntax", "[instance\nname\n" },
	{ "tcp", "[tcp]\nenabled = yes\nbind = ::1\nport = 6380\nrequirepass = secret ; comment\nmaxclients = 10\n"
		 "max_request = 64k\n[filter x]\ncapacity=10\n" },
};

int main(int argc, char **argv)
{
	char err[REGISTRY_ERR_MAX];
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS-DIR\n", argv[0]);
		return 2;
	}
	out = argv[1];
	snprintf(root, sizeof(root), "/dev/shm/shmf-seeds-XXXXXX");
	if (mkdtemp(root) == NULL)
		return 1;
	setenv("SHMF_RUNTIME_DIR", root, 1);
	if (registry_open(&reg, "seed", 0700, 0600, (gid_t)-1, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	filter("bloom", SHMF_TYPE_BLOOM, 200, 0.01, 0);
	filter("cuckoo16", SHMF_TYPE_CUCKOO, 200, 0.01, 0);
	filter("cuckoo8", SHMF_TYPE_CUCKOO, 200, 0.05, 0);
	filter("window", SHMF_TYPE_BLOOM, 100, 0.01, 3);
	filter("cwindow", SHMF_TYPE_CUCKOO, 100, 0.01, 2);
	/* The other bucket sizes: words of 2 bytes (buckets of 1, 16-bit
	 * fingerprints; of 2, 8-bit) and of 8 (buckets of 8). */
	filter_b("cuckoo-b1", SHMF_TYPE_CUCKOO, 200, 0.01, 0, 1);
	filter_b("cuckoo-b2", SHMF_TYPE_CUCKOO, 200, 0.05, 0, 2);
	filter_b("cuckoo-b8", SHMF_TYPE_CUCKOO, 200, 0.1, 0, 8);
	registry_close(&reg, 1);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd) != 0)
		return 1;
	for (size_t i = 0; i < sizeof(requests) / sizeof(requests[0]); i++)
		put("request", requests[i][0], i == 8 ? "\x05" : "\x10", 1, requests[i][1],
		    i == 3 ? 25 : strlen(requests[i][1]));
	for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++) {
		const char *t = configs[i][1] ? configs[i][1] : config_default_text;
		put("config", configs[i][0], t, strlen(t), NULL, 0);
	}
	return 0;
}
