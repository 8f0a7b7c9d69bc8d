/* fixture.c - what the unit tests share (see fixture.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/fixture.h"
#include "tests/run-named.h"
#include "libclient/hash.h"
#include "libclient/rundir.h"
#include "common/snapshot.h"

void fixture_setup(struct fixture *fx)
{
	char err[REGISTRY_ERR_MAX];
	memset(fx, 0, sizeof(*fx));
	snprintf(fx->root, sizeof(fx->root), "/dev/shm/shmf-test-XXXXXX");
	if (mkdtemp(fx->root) == NULL) {
		perror("mkdtemp");
		abort();
	}
	setenv("SHMF_RUNTIME_DIR", fx->root, 1);
	snprintf(fx->files, sizeof(fx->files), "%s/files", fx->root);
	if (mkdir(fx->files, 0700) < 0) {
		perror(fx->files);
		abort();
	}
	if (registry_open(&fx->reg, FIXTURE_INSTANCE, 0750, 0640, (gid_t)-1, err, sizeof(err)) < 0) {
		fprintf(stderr, "registry_open: %s\n", err);
		abort();
	}
}

void fixture_teardown(struct fixture *fx)
{
	char cmd[512];
	registry_close(&fx->reg, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->root);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", fx->root);
}

int fixture_up(void **state)
{
	fixture_setup(*state);
	return 0;
}

int fixture_down(void **state)
{
	fixture_teardown(*state);
	return 0;
}

void fixture_path(const struct fixture *fx, const char *file, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s/%s", fx->root, FIXTURE_INSTANCE, file);
}

void fixture_data_path(struct fixture *fx, const char *name, char *buf, size_t size)
{
	char fname[128];
	int slot = registry_find(&fx->reg, name);
	assert_true(slot >= 0);
	shmf_data_filename(name, atomic_load(&fx->reg.ctl.slots[slot].generation), fname, sizeof(fname));
	fixture_path(fx, fname, buf, size);
}

int fixture_bloom(struct fixture *fx, const char *name, uint64_t capacity, double fpr)
{
	return fixture_filter(fx, name, SHMF_TYPE_BLOOM, capacity, fpr);
}

int fixture_filter(struct fixture *fx, const char *name, int type, uint64_t capacity, double fpr)
{
	return fixture_window(fx, name, type, capacity, fpr, 0, 0);
}

/* Create the filter @p spec describes with @p name, or abort saying why. */
static int create_or_abort(struct fixture *fx, struct filter_spec *spec, const char *name)
{
	char err[REGISTRY_ERR_MAX];
	snprintf(spec->name, sizeof(spec->name), "%s", name);
	int slot = registry_create(&fx->reg, spec, err, sizeof(err));
	if (slot < 0) {
		fprintf(stderr, "registry_create %s: %s\n", name, err);
		abort();
	}
	return slot;
}

int fixture_growing(struct fixture *fx, const char *name, int type, uint64_t capacity, double fpr, uint32_t expansion,
		    int nonscaling)
{
	struct filter_spec spec = { .type = type,
				    .capacity = capacity,
				    .fpr = fpr,
				    .mode = 0640,
				    .expansion = expansion,
				    .nonscaling = nonscaling };
	return create_or_abort(fx, &spec, name);
}

int fixture_window(struct fixture *fx, const char *name, int type, uint64_t capacity, double fpr, uint64_t secs,
		   uint32_t gens)
{
	struct filter_spec spec = {
		.type = type, .capacity = capacity, .fpr = fpr, .mode = 0640, .window_secs = secs, .window_gens = gens
	};
	return create_or_abort(fx, &spec, name);
}

int fixture_cuckoo(struct fixture *fx, const char *name, uint64_t capacity, double fpr, uint32_t bucket_size)
{
	return fixture_cuckoo_growing(fx, name, capacity, fpr, bucket_size, 0);
}

int fixture_cuckoo_growing(struct fixture *fx, const char *name, uint64_t capacity, double fpr, uint32_t bucket_size,
			   uint32_t expansion)
{
	char err[REGISTRY_ERR_MAX];
	struct filter_spec spec = { .type = SHMF_TYPE_CUCKOO,
				    .capacity = capacity,
				    .fpr = fpr,
				    .mode = 0640,
				    .bucket_size = bucket_size,
				    .expansion = expansion };
	snprintf(spec.name, sizeof(spec.name), "%s", name);
	int slot = registry_create(&fx->reg, &spec, err, sizeof(err));
	if (slot < 0)
		fail_msg("registry_create %s: %s", name, err);
	return slot;
}

void fixture_rotate(struct fixture *fx, const char *name)
{
	char err[REGISTRY_ERR_MAX];
	if (registry_rotate(&fx->reg, name, err, sizeof(err)) != 0)
		fail_msg("rotate %s: %s", name, err);
}

shmf_t *fixture_open(const char *name, int flags)
{
	shmf_t *f = NULL;
	int r = shmf_open(FIXTURE_INSTANCE, name, flags, &f);
	if (r < 0)
		fail_msg("shmf_open %s: %s", name, shmf_strerror(r));
	return f;
}

void fixture_client_data_path(const char *instance, const char *name, char *buf, size_t size)
{
	shmf_t *f;
	assert_int_equal(shmf_open(instance, name, SHMF_RDONLY, &f), 0);
	shmf_info_t info;
	assert_int_equal(shmf_info(f, &info), 0);
	shmf_close(f);
	char dir[256], fname[128];
	assert_int_equal(shmf_instance_path(instance, "", dir, sizeof(dir)), 0);
	shmf_data_filename(name, info.generation, fname, sizeof(fname));
	snprintf(buf, size, "%s/%s", dir, fname);
}

size_t fixture_key(char *buf, unsigned family, uint64_t i)
{
	/* 16 bytes: family tag, then the number in hex. */
	snprintf(buf, 17, "%02x%014llx", family & 0xff, (unsigned long long)i);
	return 16;
}

uint64_t fixture_random(uint64_t *state)
{
	*state += UINT64_C(0x9e3779b97f4a7c15);
	return shmf_mix64(*state);
}

int fixture_replace(struct fixture *fx, const char *name, const char *path, int how, char *err, size_t errlen)
{
	struct snap_file sf;
	int rc = snapshot_open(&sf, path, err, errlen);
	if (rc < 0)
		return rc;
	rc = registry_replace(&fx->reg, name, &sf, how, err, errlen);
	snapshot_close(&sf);
	return rc;
}

uint64_t fixture_snapshot_items(const char *path)
{
	char err[SNAPSHOT_ERR_MAX];
	struct snap_file sf;
	if (snapshot_open(&sf, path, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	for (unsigned i = 0; i < sf.hdr.nsections; i++)
		if (snapshot_read_section(&sf, i, NULL, err, sizeof(err)) < 0)
			fail_msg("%s", err);
	uint64_t items = sf.sec[0].items;
	snapshot_close(&sf);
	return items;
}

void *fixture_shared_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		fail_msg("mmap of %zu shared bytes: %s", len, strerror(errno));
	return p;
}

void fixture_reap(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) != pid)
		fail_msg("waitpid %d: %s", (int)pid, strerror(errno));
	if (WIFSIGNALED(st))
		fail_msg("child %d was killed by signal %d", (int)pid, WTERMSIG(st));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("child %d exited with status %d", (int)pid, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

int fixture_run_tests(int argc, char **argv, const struct CMUnitTest *tests, size_t n, const char *const *names,
		      size_t nnames)
{
	return run_named_tests(argv[0], argc > 1 ? argv[1] : NULL, tests, n, names, nnames, NULL, NULL);
}

int fixture_long_mode(void)
{
	const char *l = getenv("SHMF_LONG");
	return l != NULL && strcmp(l, "0") != 0;
}
