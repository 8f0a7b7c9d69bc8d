/*
 * verbs-scandump.c - BF.SCANDUMP, BF.LOADCHUNK, CF.SCANDUMP and
 * CF.LOADCHUNK: RedisBloom's shapes (SCANDUMP key iter answers [iter,
 * data], iter 0 first and [0, ""] - CF: [0, nil] - at the end; LOADCHUNK
 * key iter data answers OK), shmd's chunks (scandump.h), which RedisBloom
 * does not load, nor shmd RedisBloom's. See call.h.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmd/verbs/handlers.h"
#include "shmd/base/log.h"
#include "shmd/verbs/call.h"
#include "common/errmsg.h"
#include "shmd/resp/reply-errors.h"
#include "shmd/files/jobs.h"
#include "shmd/store/scandump.h"
#include "shmd/session/session.h"
#include "common/snapshot.h"

/* argv[2], an iterator, as RedisBloom reads one (an integer, string2ll).
 * 0 with *out; 1 for a negative one (BF.SCANDUMP answers it the end of
 * the dump); or SHMF_E_INVAL after replying RedisBloom's text: BF's
 * "Second argument must be numeric" (LOADCHUNK's with ERR), CF's "Invalid
 * position" for anything but a position (0 for SCANDUMP, 1 or more for
 * LOADCHUNK). */
static int iter_arg(struct verb_call *c, int type, int load, uint64_t *out)
{
	long long v;
	int ok = call_rb_integer(c->req->argv[2], &v) == 0;
	if (type == SHMF_TYPE_CUCKOO) {
		if (!ok || v < load) {
			reply_rb_error(c->out, RB_CF_INVALID_POSITION);
			return SHMF_E_INVAL;
		}
	} else if (!ok) {
		reply_rb_error(c->out, load ? RB_BF_LOADCHUNK_ITER : RB_BF_SCANDUMP_ITER);
		return SHMF_E_INVAL;
	}
	*out = ok && v > 0 ? (uint64_t)v : 0;
	return v < 0;
}

/* RedisBloom's texts for a missing filter and one of the other type;
 * shmd's own sentence for what RedisBloom has no word for. */
static void reply_chunk_error(struct verb_call *c, int rc, const char *err)
{
	if (rc == SHMF_E_TYPE)
		reply_rb_error(c->out, RB_WRONGTYPE);
	else if (rc == SHMF_E_NOTFOUND && c->req->argc == 3)
		reply_rb_error(c->out, RB_NOT_FOUND);
	else
		reply_error(c->out, "ERR %s", err);
}

/* The end of a dump, as RedisBloom answers it: [0, ""] (BF), [0, nil]
 * (CF). */
static void reply_end(struct reply *out, int type)
{
	reply_array(out, 2);
	reply_int(out, 0);
	if (type == SHMF_TYPE_BLOOM)
		reply_bulk(out, "", 0);
	else
		reply_nil(out);
}

static void reply_chunk(struct reply *out, int type, const struct scandump_chunk *ch)
{
	if (ch->data == NULL) {
		reply_end(out, type);
		return;
	}
	reply_array(out, 2);
	reply_int(out, (long long)ch->iter);
	reply_bulk(out, ch->data, ch->len);
}

/* The first request of a cuckoo dump: the filter copied on the file
 * worker (scandump.h), the header chunk replied when that ends. */
struct copy_job {
	struct job j;
	struct held *h;
};

static void copy_work(struct job *j)
{
	struct copy_job *cj = (struct copy_job *)j;
	j->rc = scandump_copy_work(cj->h, j->err, sizeof(j->err));
}

static void copy_done(struct job *j, struct registry *r)
{
	struct copy_job *cj = (struct copy_job *)j;
	struct scandump_chunk ch;
	char err[SNAPSHOT_ERR_MAX];
	int rc = scandump_copy_end(r, cj->h, j->rc, &ch, err, sizeof(err));
	if (j->out != NULL) {
		if (rc < 0)
			reply_error(j->out, "ERR %s", j->rc < 0 ? j->err : err);
		else
			reply_chunk(j->out, SHMF_TYPE_CUCKOO, &ch);
	}
	free(ch.data);
	free(cj);
}

static void cuckoo_dump_begin(struct verb_call *c)
{
	char err[REGISTRY_ERR_MAX + 256];
	struct copy_job *cj = calloc(1, sizeof(*cj));
	int rc = cj != NULL
			 ? scandump_copy_begin(c->reg, c->req->argv[1], c->sess->id, &cj->h, err, sizeof(err))
			 : errmsg(err, sizeof(err), -ENOMEM, "filter '%s': out of memory for a dump", c->req->argv[1]);
	if (rc < 0) {
		free(cj);
		reply_chunk_error(c, rc, err);
		return;
	}
	snprintf(cj->j.filter, sizeof(cj->j.filter), "%s", c->req->argv[1]);
	cj->j.out = c->out;
	cj->j.owner = c->sess;
	cj->j.work = copy_work;
	cj->j.done = copy_done;
	c->parked = jobs_submit(&cj->j, c->reg);
}

/* Whether the cuckoo filter in @p slot holds nothing: its dump is
 * RedisBloom's for an empty cuckoo filter, [0, nil]. */
static int cuckoo_empty(struct verb_call *c, int slot)
{
	char err[REGISTRY_ERR_MAX];
	struct filter_info fi;
	return registry_info(c->reg, slot, &fi, err, sizeof(err)) == 0 && fi.info.items == 0;
}

static void scandump(struct verb_call *c, int type)
{
	char err[REGISTRY_ERR_MAX + 256];
	uint64_t iter;
	if (call_name_ok(c) < 0)
		return;
	int neg = iter_arg(c, type, 0, &iter);
	if (neg < 0)
		return;
	int slot = call_lookup(c);
	if (neg && slot >= 0 && c->reg->ctl.slots[slot].type == SHMF_TYPE_BLOOM) {
		reply_end(c->out, type); /* RedisBloom's answer to a negative iterator */
		return;
	}
	if (iter == 0 && type == SHMF_TYPE_CUCKOO) {
		if (slot >= 0 && c->reg->ctl.slots[slot].type == SHMF_TYPE_CUCKOO && cuckoo_empty(c, slot)) {
			reply_end(c->out, type);
			return;
		}
		if (slot >= 0 && c->reg->ctl.slots[slot].type == SHMF_TYPE_CUCKOO) {
			if (c->sess != NULL && c->sess->in_exec)
				/* EXEC answers in one turn of the loop: no copy. */
				reply_error(c->out,
					    "ERR CF.SCANDUMP of filter '%s' cannot begin inside MULTI: its "
					    "copy is made off the event loop",
					    c->req->argv[1]);
			else
				cuckoo_dump_begin(c);
			return;
		}
	}
	struct scandump_chunk ch;
	int rc = scandump_next(c->reg, c->req->argv[1], type, iter, c->sess != NULL ? c->sess->id : 0, &ch, err,
			       sizeof(err));
	if (rc == SHMF_E_INVAL || rc == -EAGAIN) {
		/* An iterator that no dump goes with (never handed out, past
		 * the end, or of a dump the filter's rotation, replacement or
		 * idle time ended): RedisBloom answers the end of the dump.
		 * A load fed the chunks before it publishes nothing without
		 * its last chunk; shmctl pull counts them and starts again. */
		log_msg(LOG_INFO, "%s: answered as the end of the dump: %s", c->req->argv[0], err);
		reply_end(c->out, type);
		return;
	}
	if (rc < 0) {
		reply_chunk_error(c, rc, err);
		return;
	}
	reply_chunk(c->out, type, &ch);
	free(ch.data);
}

/* A chunk shmd cannot load (malformed, damaged, out of order, of
 * another dump or type, no load begun): RedisBloom's text for it, and
 * shmd's sentence in the log. The load it belonged to is discarded. */
static int chunk_refused(struct verb_call *c, int type, uint64_t iter, int rc, const char *err)
{
	if (rc != SHMF_E_FORMAT && rc != SHMF_E_INVAL && rc != SHMF_E_NOTFOUND)
		return 0;
	log_msg(LOG_NOTICE, "%s refused: %s", c->req->argv[0], err);
	if (type == SHMF_TYPE_BLOOM)
		reply_rb_error(c->out, RB_BF_BAD_CHUNK);
	else
		reply_rb_error(c->out, (iter & 0xffffffffu) == 1 ? RB_CF_BAD_HEADER : RB_CF_BAD_CHUNK);
	return 1;
}

static void loadchunk(struct verb_call *c, int type)
{
	char err[SNAPSHOT_ERR_MAX];
	uint64_t iter;
	if (call_name_ok(c) < 0)
		return;
	int neg = iter_arg(c, type, 1, &iter);
	if (neg < 0)
		return;
	int rc = neg ? SHMF_E_INVAL : 0;
	if (neg)
		snprintf(err, sizeof(err), "iterator %s is negative", c->req->argv[2]);
	else
		rc = scandump_load(c->reg, c->sess->id, c->req->argv[1], type, iter, c->req->argv[3], c->req->lens[3],
				   err, sizeof(err));
	if (rc >= 0)
		reply_status(c->out, "OK");
	else if (rc == SHMF_E_TYPE || !chunk_refused(c, type, iter, rc, err))
		reply_chunk_error(c, rc, err);
}

void cmd_bf_scandump(struct verb_call *c)
{
	scandump(c, SHMF_TYPE_BLOOM);
}

void cmd_bf_loadchunk(struct verb_call *c)
{
	loadchunk(c, SHMF_TYPE_BLOOM);
}

void cmd_cf_scandump(struct verb_call *c)
{
	scandump(c, SHMF_TYPE_CUCKOO);
}

void cmd_cf_loadchunk(struct verb_call *c)
{
	loadchunk(c, SHMF_TYPE_CUCKOO);
}
