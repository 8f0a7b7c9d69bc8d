/*
 * fuzz-config.c - the daemon's configuration parser (shmd/config.c: inih
 * and the key parsers of spec.c) on any text.
 *
 * What must hold: no crash, no out-of-bounds access; a refusal says why
 * (a message naming the origin); an accepted configuration holds only
 * what the daemon can use: a valid instance name, modes without
 * other-write bits, a TCP listener with a port, a client limit, a request
 * limit and one address in range, filters with valid names, a type, a positive
 * capacity, an error rate in (0, 1), a window with 1 to 16 generations or
 * none, and periodic snapshots only with an absolute directory.
 */
#include <math.h>
#include <string.h>

#include "shmd/config/config.h"
#include "libclient/cuckoo.h"
#include "tests/fuzz/fuzz.h"
#include "shmd/resp/request.h"
#include "libclient/rundir.h"

static struct config cfg;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (1u << 16))
		return 0;
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	char err[512] = "";
	int rc = config_parse(&cfg, text, "fuzz.conf", err, sizeof(err));
	free(text);
	if (rc < 0) {
		if (strncmp(err, "fuzz.conf", 9) != 0)
			fuzz_fail("refused without naming the origin: '%s'", err);
		return 0;
	}
	if (shmf_name_check(cfg.instance) < 0 || (cfg.dir_mode & 022) || (cfg.socket_mode & 02) ||
	    cfg.nfilters > CONFIG_FILTERS_MAX)
		fuzz_fail("accepted a bad [instance]");
	const struct tcp_config *t = &cfg.tcp;
	if (t->port < 1 || t->port > 65535 || t->maxclients < 1 || t->maxclients > TCP_MAXCLIENTS_LIMIT ||
	    t->max_request < TCP_MAX_REQUEST_MIN || t->max_request > REQUEST_MAX_BYTES || t->bind[0] == '\0' ||
	    strpbrk(t->bind, " \t") != NULL || memchr(t->requirepass, '\0', sizeof(t->requirepass)) == NULL)
		fuzz_fail("accepted a bad [tcp]");
	if (t->enabled && t->requirepass[0] == '\0' && cfg.roles.nusers == 0 && cfg.roles.tcp_unauthenticated_role == 0)
		fuzz_fail("accepted a TCP listener without a password and without unauthenticated_role");
	for (unsigned i = 0; i < cfg.nfilters; i++) {
		const struct filter_spec *f = &cfg.filters[i];
		if (shmf_name_check(f->name) < 0 || (f->type != SHMF_TYPE_BLOOM && f->type != SHMF_TYPE_CUCKOO) ||
		    f->capacity == 0 || !(f->fpr > 0.0 && f->fpr < 1.0) || (f->mode & ~0777u) || (f->mode & 02) ||
		    f->max_kicks > SHMF_CUCKOO_KICKS_LIMIT || f->window_gens > SHMF_WINDOW_MAX ||
		    (f->window_secs == 0) != (f->window_gens == 0) || f->snapshot_keep == 0 ||
		    (f->snapshot_every != 0 && f->snapshot_dir[0] != '/'))
			fuzz_fail("accepted a bad [filter %s]", f->name);
		for (unsigned j = 0; j < i; j++)
			if (!strcmp(cfg.filters[j].name, f->name))
				fuzz_fail("filter %s declared twice", f->name);
	}
	return 0;
}
