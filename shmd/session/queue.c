/*
 * queue.c - the requests a transaction queued (see queue.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shmd/session/queue.h"
#include "shmd/resp/reply.h"
#include <shmf.h>

/* One queued request: its vectors and arguments copied into one block
 * (the reader's buffer is reused for the next request). */
struct queued {
	struct request req; /* argv, lens and the strings all in mem */
	void *mem;
};

struct multi_queue {
	struct queued *q;
	size_t n, cap;
	size_t bytes;     /* memory taken: the blocks and the entries' array */
	size_t reply_max; /* what EXEC's reply can take at most */
};

void queue_free(struct multi_queue *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->q[i].mem);
	free(m->q);
	free(m);
}

int queue_push(struct multi_queue **mp, const struct request *req, size_t reply)
{
	if (*mp == NULL && (*mp = calloc(1, sizeof(**mp))) == NULL)
		return -ENOMEM;
	struct multi_queue *m = *mp;
	size_t vec = (size_t)req->argc * (sizeof(char *) + sizeof(size_t)), bytes = vec;
	for (int i = 0; i < req->argc; i++)
		bytes += req->lens[i] + 1;
	size_t grow = m->n == m->cap ? (m->cap ? m->cap : 16) * sizeof(*m->q) : 0;
	if (m->n >= QUEUE_MAX_REQUESTS || m->bytes + bytes + grow > QUEUE_MAX_BYTES)
		return SHMF_E_TOOBIG;
	if (m->reply_max + reply > REPLY_UNSENT_MAX)
		return -ERANGE;
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 16;
		struct queued *q = realloc(m->q, cap * sizeof(*q));
		if (q == NULL)
			return -ENOMEM;
		m->q = q;
		m->cap = cap;
		m->bytes += grow;
	}
	struct queued *e = &m->q[m->n];
	if ((e->mem = malloc(bytes)) == NULL)
		return -ENOMEM;
	e->req.argv = e->mem;
	e->req.lens = (size_t *)(e->req.argv + req->argc);
	char *p = (char *)(e->req.lens + req->argc);
	for (int i = 0; i < req->argc; i++) {
		memcpy(p, req->argv[i], req->lens[i]);
		p[req->lens[i]] = '\0';
		e->req.argv[i] = p;
		e->req.lens[i] = req->lens[i];
		p += req->lens[i] + 1;
	}
	e->req.argc = req->argc;
	m->n++;
	m->bytes += bytes;
	m->reply_max += reply;
	return 0;
}

size_t queue_len(const struct multi_queue *m)
{
	return m != NULL ? m->n : 0;
}

const struct request *queue_at(const struct multi_queue *m, size_t i)
{
	return &m->q[i].req;
}

size_t queue_reply_max(const struct multi_queue *m)
{
	return m != NULL ? m->reply_max : 0;
}

size_t queue_memory(const struct multi_queue *m)
{
	return m != NULL ? sizeof(*m) + m->bytes : 0;
}
