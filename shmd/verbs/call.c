/*
 * call.c - what the filter verbs share (see call.h): finding the
 * filter a request names, the one-key and batch calls, the options of a
 * time window, creating a filter, and the fields of INFO replies.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shmd/verbs/call.h"
#include "shmd/verbs/allow.h"
#include "shmd/session/roles.h"
#include "shmd/resp/reply-errors.h"
#include "shmd/files/grow.h"
#include "shmd/verbs/keyjob.h"
#include "shmd/store/expires.h"
#include "shmd/store/quotas.h"
#include "shmd/session/session.h"
#include "common/spec.h"

/* Keys per shmf_add_many/shmf_check_many call for BF.MADD and BF.MEXISTS. */
#define BATCH 256

int call_name_ok(struct verb_call *c)
{
	if (c->key_rc < 0) {
		reply_error(c->out, "ERR invalid filter name '%.*s': %s", 80, c->req->argv[1],
			    shmf_strerror(c->key_rc));
		return SHMF_E_NAME;
	}
	return 0;
}

int call_slot(struct verb_call *c)
{
	const char *name = c->req->argv[1];
	if (call_name_ok(c) < 0)
		return SHMF_E_NAME;
	int slot = registry_find(c->reg, name);
	if (slot < 0)
		reply_error(c->out, "ERR filter '%s' not found", name);
	return slot;
}

shmf_t *call_handle(struct verb_call *c, int slot, int type)
{
	char err[REGISTRY_ERR_MAX];
	const struct shmf_slot *s = &c->reg->ctl.slots[slot];
	shmf_t *h;
	if (type != 0 && spec_family((int)s->type) != type) {
		reply_rb_error(c->out, RB_WRONGTYPE);
		return NULL;
	}
	if (registry_handle(c->reg, slot, &h, err, sizeof(err)) < 0) {
		reply_error(c->out, "ERR %s", err);
		return NULL;
	}
	return h;
}

shmf_t *call_filter(struct verb_call *c, int type)
{
	int slot = call_slot(c);
	return slot < 0 ? NULL : call_handle(c, slot, type);
}

int call_rb_integer(const char *text, long long *out)
{
	const char *d = text + (text[0] == '-');
	if (d[0] < '0' || d[0] > '9' || (d[0] == '0' && (d[1] != '\0' || d != text)))
		return SHMF_E_INVAL;
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (errno != 0 || *end != '\0')
		return SHMF_E_INVAL;
	*out = v;
	return 0;
}

void call_arity_error(struct verb_call *c)
{
	char verb[32];
	size_t i = 0;
	for (; c->req->argv[0][i] != '\0' && i + 1 < sizeof(verb); i++)
		verb[i] = (char)tolower((unsigned char)c->req->argv[0][i]);
	verb[i] = '\0';
	reply_error(c->out, "ERR wrong number of arguments for '%s' command", verb);
}

static void reply_full(struct verb_call *c, int slot)
{
	grow_reply_full(c->reg, slot, c->out);
}

/* A Bloom add of key @p i to the filter in @p slot (handle @p h) that
 * growth no longer serves (grow_refused(): its last layer full, the next
 * refused): 0 (RedisBloom's "not new") for a key the filter holds, else
 * SHMF_E_FULL: a new key is refused, as NONSCALING refuses it, rather
 * than overfilling the layer. 1: an ordinary add. */
static int bloom_add_refused(struct verb_call *c, int slot, shmf_t *h, int i)
{
	char why[REGISTRY_ERR_MAX];
	if (c->reg->ctl.slots[slot].type != SHMF_TYPE_BLOOM || !grow_refused(c->reg, slot, why, sizeof(why)))
		return 1;
	return shmf_check(h, c->req->argv[i], c->req->lens[i]) == 1 ? 0 : SHMF_E_FULL;
}

void call_lib_error(struct verb_call *c, int rc)
{
	/* A full filter that grows no more says why (a refused layer). */
	if (rc == SHMF_E_FULL)
		reply_full(c, c->key_rc == 0 ? registry_find(c->reg, c->req->argv[1]) : -1);
	else
		reply_lib_error(c->out, c->req->argv[1], rc);
}

int call_lookup(struct verb_call *c)
{
	if (c->key_rc < 0)
		return SHMF_E_NOTFOUND; /* no filter can have that name */
	return registry_find(c->reg, c->req->argv[1]);
}

void call_auto_spec(struct verb_call *c, int type, struct filter_spec *spec)
{
	const struct filter_defaults *d = session_defaults(c->sess);
	spec_defaults(spec, c->req->argv[1]);
	spec->type = type;
	spec->mode = d->mode;
	if (type == SHMF_TYPE_CUCKOO) {
		spec->capacity = d->cuckoo_capacity;
		spec->max_kicks = d->cuckoo_max_iterations;
		spec->bucket_size = d->cuckoo_bucket_size;
		spec->expansion = call_cuckoo_expansion(d->cuckoo_expansion);
	} else {
		spec->capacity = d->bloom_capacity;
		spec->fpr = d->bloom_error_rate;
		spec->expansion = d->bloom_expansion;
	}
}

uint32_t call_cuckoo_expansion(uint32_t e)
{
	uint32_t p = 1;
	if (e == 0)
		return 0;
	while (p < e && p < SHMF_EXPANSION_MAX)
		p <<= 1;
	return p;
}

/*
 * Every filter an add creates on the fly comes through here (BF.ADD,
 * BF.MADD, BF.INSERT, CF.ADD, CF.ADDNX, CF.INSERT, CF.INSERTNX), so that
 * one place decides whether this connection may create one. The role and
 * quota check of docs/design.md's roles goes here, before call_create():
 * a connection that may not create answers what a missing filter answers
 * (RedisBloom's "ERR not found"), as auto_create = no does.
 */
int call_autocreate(struct verb_call *c, const struct filter_spec *spec)
{
	/* A connection that may not create filters gets what RedisBloom
	 * answers when auto-create is off: the filter is not found. */
	if (!session_defaults(c->sess)->auto_create || !roles_role_creates(c->sess)) {
		reply_rb_error(c->out, RB_NOT_FOUND);
		return SHMF_E_NOTFOUND;
	}
	if (call_name_ok(c) < 0)
		return SHMF_E_NAME;
	return call_create(c, spec);
}

int call_add_target(struct verb_call *c, int type)
{
	int slot = call_lookup(c);
	if (slot >= 0)
		return slot;
	struct filter_spec spec;
	call_auto_spec(c, type, &spec);
	return call_autocreate(c, &spec);
}

void call_one_key(struct verb_call *c, int slot, int type, int (*op)(shmf_t *, const void *, size_t), int boolean)
{
	shmf_t *h = call_handle(c, slot, type);
	if (h == NULL)
		return;
	if (op != shmf_check && op != shmf_count)
		call_grow(c, slot);
	int rc = op == shmf_add ? bloom_add_refused(c, slot, h, 2) : 1;
	if (rc == 1)
		rc = op(h, c->req->argv[2], c->req->lens[2]);
	if (rc == SHMF_E_BUSY) {
		/* It would wait (a cuckoo filter's lock held, its reads raced):
		 * on the file worker, never on the loop. */
		enum keyjob_op k = op == shmf_add_unique ? KEYJOB_ADD_UNIQUE
				   : op == shmf_del      ? KEYJOB_DEL
				   : op == shmf_check    ? KEYJOB_CHECK
				   : op == shmf_count    ? KEYJOB_COUNT
							 : KEYJOB_ADD;
		keyjob_defer(c, k, 0, 2, 0, NULL, boolean ? KEYJOB_BOOL : KEYJOB_INT);
	} else if (rc < 0)
		call_lib_error(c, rc);
	else if (boolean)
		reply_bool(c->out, rc);
	else
		reply_int(c->out, rc);
}

void call_read_key(struct verb_call *c, int type, int (*op)(shmf_t *, const void *, size_t), int boolean)
{
	int slot = call_lookup(c);
	if (slot >= 0)
		call_one_key(c, slot, type, op, boolean);
	else if (boolean)
		reply_bool(c->out, 0);
	else
		reply_int(c->out, 0);
}

void call_read_many(struct verb_call *c, int type)
{
	int slot = call_lookup(c);
	if (slot >= 0) {
		call_many(c, slot, type, 0, 2);
		return;
	}
	reply_array(c->out, (size_t)(c->req->argc - 2));
	for (int i = 2; i < c->req->argc; i++)
		reply_bool(c->out, 0);
}

void call_grow(struct verb_call *c, int slot)
{
	if (c->reg->ctl.slots[slot].flags & SHMF_SLOT_LAYERED)
		grow_filter(c->reg, slot);
}

/* Adds to a growing or NONSCALING filter, one at a time, as RedisBloom
 * makes them: a growing filter's next layer made when one is due (a
 * request's keys arrive faster than the tick), up to the first key a
 * NONSCALING filter refuses, whose place in the reply is the error. */
static void many_each(struct verb_call *c, int slot, shmf_t *h, int first)
{
	const struct request *req = c->req;
	size_t n = (size_t)(req->argc - first), done = 0;
	int *res = malloc(n * sizeof(*res)), rc = 0;
	if (res == NULL) {
		reply_error(c->out, "ERR out of memory for %zu items", n);
		return;
	}
	for (; done < n; done++) {
		call_grow(c, slot);
		rc = bloom_add_refused(c, slot, h, first + (int)done);
		if (rc == 1)
			rc = shmf_add(h, req->argv[(size_t)first + done], req->lens[(size_t)first + done]);
		if (rc < 0)
			break;
		res[done] = rc;
	}
	if (rc == SHMF_E_FULL && c->reg->ctl.slots[slot].type == SHMF_TYPE_BLOOM) {
		/* The key growth refused: its place in the reply is the error. */
		reply_array(c->out, done + 1);
		for (size_t i = 0; i < done; i++)
			reply_bool(c->out, res[i]);
		reply_full(c, slot);
		free(res);
		return;
	}
	if (rc < 0 && rc != SHMF_E_NONSCALING) {
		free(res);
		call_lib_error(c, rc);
		return;
	}
	reply_array(c->out, done + (rc < 0));
	for (size_t i = 0; i < done; i++)
		reply_bool(c->out, res[i]);
	if (rc < 0)
		reply_rb_error(c->out, RB_NONSCALING_FULL);
	free(res);
}

void call_many(struct verb_call *c, int slot, int type, int add, int first)
{
	const struct request *req = c->req;
	shmf_t *h = call_handle(c, slot, type);
	if (h == NULL)
		return;
	if (add && (c->reg->ctl.slots[slot].flags & (SHMF_SLOT_NONSCALING | SHMF_SLOT_LAYERED))) {
		many_each(c, slot, h, first);
		return;
	}
	size_t n = (size_t)(req->argc - first);
	uint8_t *res = malloc(n);
	if (res == NULL) {
		reply_error(c->out, "ERR out of memory for %zu items", n);
		return;
	}
	shmf_key_t keys[BATCH];
	for (size_t done = 0; done < n;) {
		size_t m = n - done < BATCH ? n - done : BATCH;
		for (size_t i = 0; i < m; i++) {
			keys[i].ptr = req->argv[(size_t)first + done + i];
			keys[i].len = req->lens[(size_t)first + done + i];
		}
		int rc = add ? shmf_add_many(h, keys, m, res + done) : shmf_check_many(h, keys, m, res + done);
		if (rc == SHMF_E_BUSY && !add) {
			/* A cuckoo read that would wait: the whole batch again,
			 * on the file worker (checks change nothing). */
			free(res);
			keyjob_defer(c, KEYJOB_CHECK, 0, first, 0, NULL, KEYJOB_BOOLS);
			return;
		}
		if (rc < 0) {
			/* Adds before the failure stay: a Bloom add cannot be undone.
			 * The only failures are a filter dropped mid-request and a
			 * read-only handle, which the daemon never has. */
			free(res);
			call_lib_error(c, rc);
			return;
		}
		done += m;
	}
	reply_array(c->out, n);
	for (size_t i = 0; i < n; i++)
		reply_bool(c->out, res[i]);
	free(res);
}

int call_window_option(struct verb_call *c, int *i, struct filter_spec *spec)
{
	const struct request *req = c->req;
	const char *opt = req->argv[*i];
	int is_window = !strcasecmp(opt, "WINDOW"), is_gens = !strcasecmp(opt, "GENERATIONS");
	if (!is_window && !is_gens)
		return 0;
	if (*i + 1 >= req->argc) {
		reply_error(c->out, "ERR %s needs a value", is_window ? "WINDOW" : "GENERATIONS");
		return SHMF_E_INVAL;
	}
	const char *val = req->argv[++*i];
	uint64_t n;
	if (is_window && spec_parse_duration(val, &spec->window_secs) < 0) {
		reply_error(c->out, "ERR bad WINDOW '%.*s': a duration such as 60, 10m, 1h or 1d", 40, val);
		return SHMF_E_INVAL;
	}
	if (is_gens) {
		if (spec_parse_capacity(val, &n) < 0 || n > SHMF_WINDOW_MAX) {
			reply_error(c->out, "ERR bad GENERATIONS '%.*s': an integer from 1 to %u", 40, val,
				    SHMF_WINDOW_MAX);
			return SHMF_E_INVAL;
		}
		spec->window_gens = (uint32_t)n;
	}
	return 1;
}

int call_window_complete(struct verb_call *c, struct filter_spec *spec)
{
	if (spec->window_gens != 0 && spec->window_secs == 0) {
		reply_error(c->out, "ERR GENERATIONS needs WINDOW duration");
		return SHMF_E_INVAL;
	}
	if (spec->window_secs != 0 && spec->window_gens == 0)
		spec->window_gens = 2;
	return 0;
}

int call_create(struct verb_call *c, const struct filter_spec *spec)
{
	char err[REGISTRY_ERR_MAX];
	/* Who may create, and how much, before anything is allocated. */
	if (!allow_create(c, spec))
		return -EACCES;
	/* A writer's filter remembers its writer before it exists (a crash
	 * between leaves a record of no filter, dropped at the next start,
	 * never a writer's filter without one): its quotas bind it for its
	 * whole life. Not over a filter that exists: that create fails. */
	struct quota_owner o;
	int recorded = roles_creator(c->sess, &o) && registry_find(c->reg, spec->name) < 0;
	if (recorded)
		quotas_record(c->reg, spec->name, &o);
	int rc = registry_create(c->reg, spec, err, sizeof(err));
	if (rc < 0 && recorded)
		quotas_forget(c->reg, spec->name);
	if (rc == SHMF_E_EXISTS)
		reply_rb_error(c->out, RB_ITEM_EXISTS);
	else if (rc < 0)
		reply_error(c->out, "ERR %s", err);
	else
		expires_forget(c->reg, spec->name); /* a new filter has no expiry, as a new Redis key */
	return rc;
}

int call_insert_target(struct verb_call *c, const struct filter_spec *spec, int items, int nocreate)
{
	if (items < 0 || items >= c->req->argc) {
		reply_error(c->out, "ERR ITEMS and at least one item are required");
		return SHMF_E_INVAL;
	}
	int slot = call_lookup(c);
	if (slot >= 0)
		return slot;
	if (nocreate) {
		reply_rb_error(c->out, RB_NOT_FOUND);
		return SHMF_E_NOTFOUND;
	}
	return call_autocreate(c, spec);
}

void reply_field_int(struct reply *out, const char *name, long long v)
{
	reply_bulk_str(out, name);
	reply_int(out, v);
}

void reply_field_str(struct reply *out, const char *name, const char *v)
{
	reply_bulk_str(out, name);
	reply_bulk_str(out, v);
}

void reply_field_double(struct reply *out, const char *name, double v)
{
	reply_bulk_str(out, name);
	reply_double(out, v);
}
