/* keyjob.c - a request's key operations that would wait, on the file worker (keyjob.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libclient/cuckoo.h"
#include "shmd/resp/reply-errors.h"
#include "shmd/files/grow.h"
#include "shmd/files/jobs.h"
#include "shmd/verbs/keyjob.h"
#include "shmd/store/registry.h"
#include "shmd/session/session.h"

struct keyjob {
	struct job j;
	char instance[SHMF_NAME_MAX + 1];
	enum keyjob_op op;
	enum keyjob_shape shape;
	unsigned cap;
	uint32_t timeout_ms; /* the slot's lock timeout */
	size_t n;            /* keys in the request */
	size_t done;         /* keys made so far (on the loop, then here) */
	int fail;            /* the error that stopped the keys at done, or 0 */
	long long *res;      /* n results */
	const char **key;    /* keys done..n-1, in keybuf */
	size_t *len;
	char *keybuf;
};

static int call(const struct keyjob *k, shmf_t *h, const char *key, size_t len)
{
	switch (k->op) {
	case KEYJOB_ADD: return shmf_add(h, key, len);
	case KEYJOB_ADD_UNIQUE: return shmf_add_unique(h, key, len);
	case KEYJOB_DEL: return shmf_del(h, key, len);
	case KEYJOB_CHECK: return shmf_check(h, key, len);
	case KEYJOB_COUNT: return shmf_count(h, key, len);
	case KEYJOB_CAPPED: return shmf_add_capped(h, key, len, k->cap);
	}
	return SHMF_E_INVAL;
}

/* On a worker thread: the keys left, each call waiting at most the lock
 * timeout, all of them together at most twice it (a writer that keeps the
 * lock held, or the versions racing, gets the request an error, not a
 * worker thread for ever). */
static void keyjob_work(struct job *j)
{
	struct keyjob *k = (struct keyjob *)j;
	shmf_t *h;
	int rc = shmf_open(k->instance, j->filter, SHMF_RDWR, &h);
	if (rc < 0) {
		k->fail = rc;
		return;
	}
	uint64_t timeout_ns = (uint64_t)(k->timeout_ms ? k->timeout_ms : SHMF_CUCKOO_LOCK_TIMEOUT_DEFAULT) * 1000000u;
	uint64_t saved = shmf_cuckoo_wait_deadline(shmf_cuckoo_now_ns() + 2 * timeout_ns);
	size_t first = k->done;
	for (; k->done < k->n && !atomic_load_explicit(&j->cancel, memory_order_relaxed); k->done++) {
		rc = call(k, h, k->key[k->done - first], k->len[k->done - first]);
		if (rc == SHMF_E_FULL && (k->shape == KEYJOB_INSERT || k->shape == KEYJOB_INSERT_ADD)) {
			k->res[k->done] = -1;
			continue;
		}
		if (rc < 0) {
			k->fail = rc;
			break;
		}
		k->res[k->done] = rc;
	}
	if (k->done < k->n && k->fail == 0)
		k->fail = -ECANCELED;
	shmf_cuckoo_wait_deadline(saved);
	shmf_close(h);
}

/* The reply the verb's handler would have given, from the results. */
static void reply_results(struct registry *r, struct reply *out, const char *name, enum keyjob_shape shape,
			  const long long *res, size_t n, int fail)
{
	if (fail == SHMF_E_FULL) {
		grow_reply_full(r, registry_find(r, name), out);
		return;
	}
	if (fail < 0) {
		reply_lib_error(out, name, fail);
		return;
	}
	switch (shape) {
	case KEYJOB_BOOL: reply_bool(out, (int)res[0]); break;
	case KEYJOB_INT: reply_int(out, res[0]); break;
	case KEYJOB_INSERT:
	case KEYJOB_INSERT_ADD:
		reply_array(out, n);
		for (size_t i = 0; i < n; i++) {
			if (shape == KEYJOB_INSERT_ADD && res[i] == 1)
				reply_bool(out, 1);
			else
				reply_int(out, res[i]);
		}
		break;
	case KEYJOB_BOOLS:
		reply_array(out, n);
		for (size_t i = 0; i < n; i++)
			reply_bool(out, (int)res[i]);
		break;
	}
}

static void keyjob_free(struct keyjob *k)
{
	free(k->res);
	free(k->key);
	free(k->len);
	free(k->keybuf);
	free(k);
}

/* On the loop: the reply, and a growing filter's next layer if the adds
 * made one due. */
static void keyjob_done(struct job *j, struct registry *r)
{
	struct keyjob *k = (struct keyjob *)j;
	if (k->fail == 0 && k->done < k->n)
		k->fail = j->rc < 0 ? j->rc : -ECANCELED; /* cancelled before it ran: shmd is stopping */
	if (j->out != NULL)
		reply_results(r, j->out, j->filter, k->shape, k->res, k->n, k->fail);
	int slot = registry_find(r, j->filter);
	if (slot >= 0 && (r->ctl.slots[slot].flags & SHMF_SLOT_LAYERED) && k->op != KEYJOB_CHECK &&
	    k->op != KEYJOB_COUNT)
		grow_filter(r, slot);
	keyjob_free(k);
}

void keyjob_defer(struct verb_call *c, enum keyjob_op op, unsigned cap, int first, size_t done, const long long *res,
		  enum keyjob_shape shape)
{
	const struct request *req = c->req;
	const char *name = req->argv[1];
	size_t n = (size_t)(req->argc - first);
	if (c->sess != NULL && c->sess->in_exec) {
		/* EXEC answers within one turn of the loop: no waiting. */
		reply_lib_error(c->out, name, SHMF_E_BUSY);
		return;
	}
	if (jobs_busy(name)) {
		/* A job holds the filter (another key job, a snapshot): this
		 * request runs again, from its start, after it. Only reads get
		 * here: the dispatcher holds back writes to a busy filter, and
		 * a read made nothing a second run could repeat. */
		c->wait = 1;
		return;
	}
	struct keyjob *k = calloc(1, sizeof(*k));
	size_t bytes = 0;
	for (size_t i = done; i < n; i++)
		bytes += req->lens[(size_t)first + i] + 1;
	if (k == NULL || (k->res = calloc(n, sizeof(*k->res))) == NULL ||
	    (k->key = calloc(n - done, sizeof(*k->key))) == NULL ||
	    (k->len = calloc(n - done, sizeof(*k->len))) == NULL || (k->keybuf = malloc(bytes ? bytes : 1)) == NULL) {
		if (k != NULL)
			keyjob_free(k);
		reply_lib_error(c->out, name, -ENOMEM);
		return;
	}
	char *p = k->keybuf;
	for (size_t i = done; i < n; i++) {
		size_t len = req->lens[(size_t)first + i];
		memcpy(p, req->argv[(size_t)first + i], len);
		p[len] = '\0';
		k->key[i - done] = p;
		k->len[i - done] = len;
		p += len + 1;
	}
	if (done > 0)
		memcpy(k->res, res, done * sizeof(*res));
	snprintf(k->instance, sizeof(k->instance), "%s", c->reg->instance);
	snprintf(k->j.filter, sizeof(k->j.filter), "%s", name);
	int slot = registry_find(c->reg, name);
	k->timeout_ms = slot >= 0 ? c->reg->ctl.slots[slot].lock_timeout_ms : 0;
	k->op = op;
	k->shape = shape;
	k->cap = cap;
	k->n = n;
	k->done = done;
	k->j.out = c->out;
	k->j.owner = c->sess;
	k->j.work = keyjob_work;
	k->j.done = keyjob_done;
	c->parked = jobs_submit(&k->j, c->reg);
}
