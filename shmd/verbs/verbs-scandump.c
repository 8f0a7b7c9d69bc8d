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
#include "shmd/verbs/call.h"
#include "common/errmsg.h"
#include "shmd/resp/reply-errors.h"
#include "shmd/files/jobs.h"
#include "shmd/store/scandump.h"
#include "shmd/session/session.h"
#include "common/snapshot.h"

/* argv[2], an iterator: a decimal integer from 0 to 2^63 - 1, as RESP
 * integers go (SCANDUMP answers them as such). 0, or SHMF_E_INVAL after
 * replying. */
static int iter_arg(struct verb_call *c, uint64_t *out)
{
	const char *v = c->req->argv[2];
	size_t n = c->req->lens[2];
	uint64_t x = 0;
	int ok = n > 0 && n <= 19;
	for (size_t i = 0; ok && i < n; i++) {
		ok = v[i] >= '0' && v[i] <= '9';
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	if (!ok || x > INT64_MAX) {
		reply_error(c->out, "ERR invalid iterator '%.*s': 0 or an iterator that SCANDUMP returned", 40, v);
		return SHMF_E_INVAL;
	}
	*out = x;
	return 0;
}

/* RedisBloom's texts for a missing filter (SCANDUMP; a LOADCHUNK with no
 * load begun says so in shmd's words) and one of the other type; shmd's
 * own sentence for what RedisBloom has no word for. */
static void reply_chunk_error(struct verb_call *c, int rc, const char *err)
{
	if (rc == SHMF_E_TYPE)
		reply_rb_error(c->out, RB_WRONGTYPE);
	else if (rc == SHMF_E_NOTFOUND && c->req->argc == 3)
		reply_rb_error(c->out, RB_NOT_FOUND);
	else
		reply_error(c->out, "ERR %s", err);
}

static void reply_chunk(struct reply *out, int type, const struct scandump_chunk *ch)
{
	reply_array(out, 2);
	reply_int(out, (long long)ch->iter);
	if (ch->data != NULL)
		reply_bulk(out, ch->data, ch->len);
	else if (type == SHMF_TYPE_BLOOM)
		reply_bulk(out, "", 0);
	else
		reply_nil(out);
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

static void scandump(struct verb_call *c, int type)
{
	char err[REGISTRY_ERR_MAX + 256];
	uint64_t iter;
	if (call_name_ok(c) < 0 || iter_arg(c, &iter) < 0)
		return;
	if (iter == 0 && type == SHMF_TYPE_CUCKOO) {
		int slot = call_lookup(c);
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
	if (rc < 0) {
		reply_chunk_error(c, rc, err);
		return;
	}
	reply_chunk(c->out, type, &ch);
	free(ch.data);
}

static void loadchunk(struct verb_call *c, int type)
{
	char err[SNAPSHOT_ERR_MAX];
	uint64_t iter;
	if (call_name_ok(c) < 0 || iter_arg(c, &iter) < 0)
		return;
	int rc = scandump_load(c->reg, c->sess->id, c->req->argv[1], type, iter, c->req->argv[3], c->req->lens[3], err,
			       sizeof(err));
	if (rc < 0)
		reply_chunk_error(c, rc, err);
	else
		reply_status(c->out, "OK");
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
