/*
 * verbs-perms.c - the verbs that change a live filter's permissions or
 * shape in place (see call.h): SHMF.CHMOD and SHMF.RESIZE, and the
 * shape check SHMF.SWAP makes before it replaces a filter with a file.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "shmd/verbs/handlers.h"
#include "shmd/verbs/call.h"
#include "shmd/store/perms.h"
#include "common/snapshot-format.h"
#include "common/spec.h"

/* SHMF.CHMOD key mode: the data files of every live generation (and the
 * journal) get @p mode at once; mappings stay as they are. */
void cmd_shmf_chmod(struct verb_call *c)
{
	char err[REGISTRY_ERR_MAX], msg[320];
	mode_t mode;
	if (call_slot(c) < 0)
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
	if (call_slot(c) < 0)
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
