/*
 * commands.c - what the filter verbs share (see commands.h): finding the
 * filter a request names, the one-key and batch calls, the options of a
 * time window, creating a filter, and the fields of INFO replies.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "commands.h"
#include "roles.h"
#include "spec.h"

/* Keys per shmf_add_many/shmf_check_many call for BF.MADD and BF.MEXISTS. */
#define BATCH 256

int cmd_name_ok(struct verb_call *c)
{
	if (c->key_rc < 0) {
		reply_error(c->out, "ERR invalid filter name '%.*s': %s", 80, c->req->argv[1],
			    shmf_strerror(c->key_rc));
		return SHMF_E_NAME;
	}
	return 0;
}

int cmd_slot(struct verb_call *c)
{
	const char *name = c->req->argv[1];
	if (cmd_name_ok(c) < 0)
		return SHMF_E_NAME;
	int slot = registry_find(c->reg, name);
	if (slot < 0)
		reply_error(c->out, "ERR filter '%s' not found", name);
	return slot;
}

shmf_t *cmd_handle(struct verb_call *c, int slot, int type)
{
	char err[REGISTRY_ERR_MAX];
	const struct shmf_slot *s = &c->reg->ctl.slots[slot];
	shmf_t *h;
	if (type != 0 && (int)s->type != type) {
		reply_error(c->out, "WRONGTYPE filter '%s' is a %s filter; use the %s commands", c->req->argv[1],
			    spec_type_name((int)s->type), s->type == SHMF_TYPE_CUCKOO ? "CF.*" : "BF.*");
		return NULL;
	}
	if (registry_handle(c->reg, slot, &h, err, sizeof(err)) < 0) {
		reply_error(c->out, "ERR %s", err);
		return NULL;
	}
	return h;
}

shmf_t *cmd_filter(struct verb_call *c, int type)
{
	int slot = cmd_slot(c);
	return slot < 0 ? NULL : cmd_handle(c, slot, type);
}

void cmd_lib_error(struct verb_call *c, int rc)
{
	reply_error(c->out, "ERR filter '%s': %s", c->req->argv[1], shmf_strerror(rc));
}

void cmd_one_key(struct verb_call *c, int type, int (*op)(shmf_t *, const void *, size_t))
{
	shmf_t *h = cmd_filter(c, type);
	if (h == NULL)
		return;
	int rc = op(h, c->req->argv[2], c->req->lens[2]);
	if (rc < 0)
		cmd_lib_error(c, rc);
	else
		reply_int(c->out, rc);
}

void cmd_many(struct verb_call *c, int slot, int type, int add, int first)
{
	const struct request *req = c->req;
	shmf_t *h = slot < 0 ? cmd_filter(c, type) : cmd_handle(c, slot, type);
	if (h == NULL)
		return;
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
		if (rc < 0) {
			/* Adds before the failure stay: a Bloom add cannot be undone.
			 * The only failures are a filter dropped mid-request and a
			 * read-only handle, which the daemon never has. */
			free(res);
			cmd_lib_error(c, rc);
			return;
		}
		done += m;
	}
	reply_array(c->out, n);
	for (size_t i = 0; i < n; i++)
		reply_int(c->out, res[i]);
	free(res);
}

int cmd_window_option(struct verb_call *c, int *i, struct filter_spec *spec)
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

int cmd_window_complete(struct verb_call *c, struct filter_spec *spec)
{
	if (spec->window_gens != 0 && spec->window_secs == 0) {
		reply_error(c->out, "ERR GENERATIONS needs WINDOW duration");
		return SHMF_E_INVAL;
	}
	if (spec->window_secs != 0 && spec->window_gens == 0)
		spec->window_gens = 2;
	return 0;
}

int cmd_create(struct verb_call *c, const struct filter_spec *spec)
{
	char err[REGISTRY_ERR_MAX];
	/* Who may create, and how much, before anything is allocated. */
	if (!roles_may_create(c, spec))
		return -EACCES;
	int rc = registry_create(c->reg, spec, err, sizeof(err));
	if (rc == SHMF_E_EXISTS)
		reply_error(c->out, "ERR item exists");
	else if (rc < 0)
		reply_error(c->out, "ERR %s", err);
	return rc;
}

int cmd_insert_target(struct verb_call *c, const struct filter_spec *spec, int items, int nocreate)
{
	if (items < 0 || items >= c->req->argc) {
		reply_error(c->out, "ERR ITEMS and at least one item are required");
		return SHMF_E_INVAL;
	}
	int slot = registry_find(c->reg, c->req->argv[1]);
	if (slot >= 0)
		return slot;
	if (nocreate) {
		reply_error(c->out, "ERR not found");
		return SHMF_E_NOTFOUND;
	}
	return cmd_create(c, spec);
}

void field_int(struct reply *out, const char *name, long long v)
{
	reply_bulk_str(out, name);
	reply_int(out, v);
}

void field_str(struct reply *out, const char *name, const char *v)
{
	reply_bulk_str(out, name);
	reply_bulk_str(out, v);
}

void field_double(struct reply *out, const char *name, double v)
{
	char text[40];
	snprintf(text, sizeof(text), "%.17g", v);
	field_str(out, name, text);
}
