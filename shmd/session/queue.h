/*
 * queue.h - the requests a transaction queued between MULTI and EXEC
 * (verbs-multi.c): each request's copy, its vectors and its entry,
 * counted as allocated, and the most bytes their replies can take.
 */
#ifndef SHMD_QUEUE_H
#define SHMD_QUEUE_H

#include <stddef.h>

#include "shmd/resp/request.h"

struct multi_queue;

/* Requests queued at most in one transaction, and the memory the queue
 * takes at most: each request's copy, its vectors and its entry, counted
 * as allocated (the largest request, 64 MiB, still fits once). The
 * replies EXEC could give are bounded too: at most REPLY_UNSENT_MAX in all,
 * by each verb's reply bound (verb.h), checked as each request is queued. */
#define QUEUE_MAX_REQUESTS 100000
#define QUEUE_MAX_BYTES    (64u << 20)

/**
 * Copy @p req, whose reply takes at most @p reply bytes, to the end of
 * queue @p *m (made on first use). @return 0, or -ENOMEM, SHMF_E_TOOBIG
 * (past QUEUE_MAX_REQUESTS or QUEUE_MAX_BYTES) or -ERANGE (the replies
 * would pass REPLY_UNSENT_MAX).
 */
int queue_push(struct multi_queue **m, const struct request *req, size_t reply);

/** The requests queued in @p m (NULL: none). */
size_t queue_len(const struct multi_queue *m);

/** The @p i-th request queued (i < queue_len()). */
const struct request *queue_at(const struct multi_queue *m, size_t i);

/** The most bytes the queued requests' replies can take (0 without a queue). */
size_t queue_reply_max(const struct multi_queue *m);

/** The memory the queue takes (0 without one). */
size_t queue_memory(const struct multi_queue *m);

/** Free queue @p m and its copies (NULL: nothing). */
void queue_free(struct multi_queue *m);

#endif
