/*
 * commands-perms.c - the verbs that change a live filter's permissions or
 * shape in place (see commands.h): SHMF.CHMOD and SHMF.RESIZE, and the
 * shape check SHMF.SWAP makes before it replaces a filter with a file.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "commands.h"
#include "perms.h"
#include "snapshot-format.h"
#include "spec.h"

/* SHMF.CHMOD key mode: the data files of every live generation (and the
 * journal) get @p mode at once; mappings stay as they are. */
void cmd_shmf_chmod(struct verb_call *c)
{
	char err[REGISTRY_ERR_MAX], msg[320];
	mode_t mode;
	if (cmd_slot(c) < 0)
		return;
	if (spec_parse_mode(c->req->argv[2], 02, &mode) < 0) {
		reply_error(c->out, "ERR bad mode '%.*s': an octal mode like 0640 or 0660, without the other-write bit",
			    40, c->req->argv[2]);
		return;
	}
	int rc = perms_filter_mode(c->reg, c->req->argv[1], mode, err, sizeof(err));
	if (rc < 0) {
		reply_error(c->out, "ERR %s", err);
		return;
	}
	snprintf(msg, sizeof(msg),
		 "OK %d file%s changed to %04o (a filter in shmd's configuration gets its mode = back at the next "
		 "start or reload: change it there too)",
		 rc, rc == 1 ? "" : "s", (unsigned)mode);
	reply_status(c->out, msg);
}

/* SHMF.RESIZE key capacity [fpr] */
void cmd_shmf_resize(struct verb_call *c)
{
	char err[REGISTRY_ERR_MAX + 256];
	uint64_t capacity;
	double fpr = 0.0;
	if (cmd_slot(c) < 0)
		return;
	if (spec_parse_capacity(c->req->argv[2], &capacity) < 0) {
		reply_error(c->out, "ERR bad capacity '%.*s': must be a positive integer", 40, c->req->argv[2]);
		return;
	}
	if (c->req->argc == 4 && spec_parse_fpr(c->req->argv[3], &fpr) < 0) {
		reply_error(c->out, "ERR bad error rate '%.*s': must be a number in (0, 1)", 40, c->req->argv[3]);
		return;
	}
	if (registry_resize(c->reg, c->req->argv[1], capacity, fpr, err, sizeof(err)) < 0)
		reply_error(c->out, "ERR %s", err);
	else
		reply_status(c->out, "OK");
}

/* "bloom 1000000 keys (k 7, 19440 blocks, window 10m x 2)" */
static void describe_shape(char *buf, size_t len, uint32_t type, uint64_t capacity, uint32_t k, uint64_t nblocks,
			   uint64_t nbuckets, uint64_t window_secs, uint32_t window_gens)
{
	int at = snprintf(buf, len, "%s %" PRIu64 " keys (", spec_type_name((int)type), capacity);
	if (type == SHMF_TYPE_CUCKOO)
		at += snprintf(buf + at, len - (size_t)at, "%u-bit fingerprints, %" PRIu64 " buckets", k, nbuckets);
	else
		at += snprintf(buf + at, len - (size_t)at, "k %u, %" PRIu64 " blocks", k, nblocks);
	if (window_gens)
		at += snprintf(buf + at, len - (size_t)at, ", window %" PRIu64 "s x %u", window_secs, window_gens);
	snprintf(buf + at, len - (size_t)at, ")");
}

int cmd_swap_shape_ok(struct verb_call *c, const struct shmf_snap_header *h)
{
	const struct request *req = c->req;
	int reshape = 0;
	if (req->argc == 4) {
		if (strcasecmp(req->argv[3], "RESHAPE") != 0) {
			reply_error(c->out, "ERR unknown option '%.*s' for 'shmf.swap' (RESHAPE)", 40, req->argv[3]);
			return 0;
		}
		reshape = 1;
	}
	int slot = registry_find(c->reg, req->argv[1]);
	if (slot < 0 || reshape)
		return 1; /* the swap says "not found"; RESHAPE takes any shape */
	const struct shmf_slot *s = &c->reg->ctl.slots[slot];
	if (s->type == h->type && s->capacity == h->capacity && s->k == h->k && s->nblocks == h->nblocks &&
	    s->nbuckets == h->nbuckets && s->window_secs == h->window_secs && s->window_gens == h->window_gens)
		return 1;
	char from[160], to[160];
	describe_shape(from, sizeof(from), s->type, s->capacity, s->k, s->nblocks, s->nbuckets, s->window_secs,
		       s->window_gens);
	describe_shape(to, sizeof(to), h->type, h->capacity, h->k, h->nblocks, h->nbuckets, h->window_secs,
		       h->window_gens);
	reply_error(c->out,
		    "ERR swap would change %s from %s to %s; add --reshape (SHMF.SWAP %s FILE RESHAPE) if that is "
		    "meant",
		    s->name, from, to, s->name);
	return 0;
}
