/*
 * commands-scandump.c - BF.SCANDUMP, BF.LOADCHUNK, CF.SCANDUMP and
 * CF.LOADCHUNK: RedisBloom's shapes (SCANDUMP key iter answers [iter,
 * data], iter 0 first and [0, ""] - CF: [0, nil] - at the end; LOADCHUNK
 * key iter data answers OK), shmd's chunks (scandump.h), which RedisBloom
 * does not load, nor shmd RedisBloom's. See commands.h.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "errors.h"
#include "scandump.h"
#include "session.h"
#include "snapshot.h"

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

static void scandump(struct verb_call *c, int type)
{
	char err[REGISTRY_ERR_MAX + 128];
	uint64_t iter;
	if (cmd_name_ok(c) < 0 || iter_arg(c, &iter) < 0)
		return;
	struct scandump_chunk ch;
	int rc = scandump_next(c->reg, c->req->argv[1], type, iter, &ch, err, sizeof(err));
	if (rc < 0) {
		reply_chunk_error(c, rc, err);
		return;
	}
	reply_array(c->out, 2);
	reply_int(c->out, (long long)ch.iter);
	if (ch.data != NULL)
		reply_bulk(c->out, ch.data, ch.len);
	else if (type == SHMF_TYPE_BLOOM)
		reply_bulk(c->out, "", 0);
	else
		reply_nil(c->out);
	free(ch.data);
}

static void loadchunk(struct verb_call *c, int type)
{
	char err[SNAPSHOT_ERR_MAX];
	uint64_t iter;
	if (cmd_name_ok(c) < 0 || iter_arg(c, &iter) < 0)
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
