/*
 * jobs.c - the file worker (see jobs.h): a queue, JOBS_THREADS threads
 * that take jobs from it, and a list of finished jobs that an eventfd
 * announces to the loop.
 *
 * The queue and the finished list are shared with the threads, under one
 * mutex; the list of every job not yet done (which says what is busy, and
 * who waits) is the loop's alone.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "shmd/files/jobs.h"
#include "shmd/base/log.h"

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *queue, *queue_tail;  /* to be run, oldest first */
	struct job *finished, *fin_tail; /* run, waiting for done(), oldest first */
	int stopping;                    /* no more work is started */
	unsigned threads;                /* started */
	pthread_t tid[JOBS_THREADS];
	int efd;          /* readable while finished is not empty */
	struct job *all;  /* the loop's: every job submitted and not done */
	unsigned nactive; /* length of all */
} w = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .efd = -1 };

static void all_add(struct job *j)
{
	j->all_prev = NULL;
	j->all_next = w.all;
	if (w.all != NULL)
		w.all->all_prev = j;
	w.all = j;
	w.nactive++;
}

static void all_remove(struct job *j)
{
	if (j->all_prev != NULL)
		j->all_prev->all_next = j->all_next;
	else
		w.all = j->all_next;
	if (j->all_next != NULL)
		j->all_next->all_prev = j->all_prev;
	j->all_prev = j->all_next = NULL;
	w.nactive--;
}

static void push(struct job **head, struct job **tail, struct job *j)
{
	j->next = NULL;
	if (*tail != NULL)
		(*tail)->next = j;
	else
		*head = j;
	*tail = j;
}

static struct job *pop(struct job **head, struct job **tail)
{
	struct job *j = *head;
	if (j != NULL && (*head = j->next) == NULL)
		*tail = NULL;
	return j;
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&w.mu);
	for (;;) {
		struct job *j = pop(&w.queue, &w.queue_tail);
		if (j == NULL) {
			if (w.stopping)
				break;
			pthread_cond_wait(&w.cv, &w.mu);
			continue;
		}
		pthread_mutex_unlock(&w.mu);
		if (atomic_load(&j->cancel))
			j->rc = errmsg(j->err, sizeof(j->err), -ECANCELED,
				       "filter '%s': cancelled: shmd is shutting down", j->filter);
		else
			j->work(j);
		pthread_mutex_lock(&w.mu);
		push(&w.finished, &w.fin_tail, j);
		uint64_t one = 1;
		ssize_t ignored = write(w.efd, &one, sizeof(one));
		(void)ignored;
	}
	pthread_mutex_unlock(&w.mu);
	return NULL;
}

int jobs_start(char *err, size_t errlen)
{
	w.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w.efd < 0)
		return errmsg(err, errlen, -errno, "file worker: eventfd: %s", strerror(errno));
	for (unsigned i = 0; i < JOBS_THREADS; i++) {
		int rc = pthread_create(&w.tid[i], NULL, worker, NULL);
		if (rc != 0) {
			errmsg(err, errlen, -rc, "file worker: cannot start a thread: %s", strerror(rc));
			jobs_stop(NULL);
			return -rc;
		}
		w.threads++;
	}
	return 0;
}

int jobs_fd(void)
{
	return w.efd;
}

/* Without threads: the work (unless cancelled) and done() now, on this
 * thread. */
static void run_inline(struct job *j, struct registry *r)
{
	if (atomic_load(&j->cancel))
		j->rc = errmsg(j->err, sizeof(j->err), -ECANCELED, "filter '%s': cancelled: shmd is shutting down",
			       j->filter);
	else
		j->work(j);
	all_remove(j);
	j->done(j, r);
}

static int enqueue(struct job *j, struct registry *r)
{
	j->reg = r;
	all_add(j);
	if (w.threads == 0) {
		run_inline(j, r);
		return 0;
	}
	pthread_mutex_lock(&w.mu);
	push(&w.queue, &w.queue_tail, j);
	pthread_cond_signal(&w.cv);
	pthread_mutex_unlock(&w.mu);
	return 1;
}

int jobs_submit(struct job *j, struct registry *r)
{
	atomic_store(&j->cancel, 0);
	j->rc = 0;
	j->err[0] = '\0';
	return enqueue(j, r);
}

void jobs_again(struct job *j, job_work_fn *work, job_done_fn *done)
{
	j->work = work;
	j->done = done;
	j->rc = 0;
	j->err[0] = '\0';
	enqueue(j, j->reg); /* a cancelled job stays cancelled */
}

int jobs_busy(const char *name)
{
	for (const struct job *j = w.all; j != NULL; j = j->all_next)
		if (strcmp(j->filter, name) == 0)
			return 1;
	return 0;
}

int jobs_owned(const void *owner)
{
	for (const struct job *j = w.all; j != NULL && owner != NULL; j = j->all_next)
		if (j->owner == owner)
			return 1;
	return 0;
}

void jobs_disown(const void *owner)
{
	for (struct job *j = w.all; j != NULL; j = j->all_next)
		if (j->owner == owner) {
			j->owner = NULL;
			j->out = NULL;
		}
}

int jobs_reap(struct registry *r, void (*finished)(void *arg, const void *owner), void *arg)
{
	uint64_t n;
	if (w.efd >= 0 && read(w.efd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_msg(LOG_WARNING, "file worker: eventfd: %s", strerror(errno));
	int reaped = 0;
	for (;;) {
		pthread_mutex_lock(&w.mu);
		struct job *j = pop(&w.finished, &w.fin_tail);
		pthread_mutex_unlock(&w.mu);
		if (j == NULL)
			break;
		const void *owner = j->owner;
		all_remove(j);
		j->done(j, r); /* frees j, or queues it again */
		reaped++;
		if (finished != NULL && owner != NULL && !jobs_owned(owner))
			finished(arg, owner);
	}
	return reaped;
}

void jobs_stop(struct registry *r)
{
	if (w.nactive > 0)
		log_msg(LOG_NOTICE,
			"shutting down: %u file job(s) cancelled (a snapshot gives up at its next chunk and removes its "
			"temporary file; one in a system call waits for it to return)",
			w.nactive);
	pthread_mutex_lock(&w.mu);
	w.stopping = 1;
	for (struct job *j = w.queue; j != NULL; j = j->next)
		atomic_store(&j->cancel, 1);
	pthread_cond_broadcast(&w.cv);
	pthread_mutex_unlock(&w.mu);
	/* Running jobs give up at their next chunk. */
	for (struct job *j = w.all; j != NULL; j = j->all_next)
		atomic_store(&j->cancel, 1);
	for (unsigned i = 0; i < w.threads; i++)
		pthread_join(w.tid[i], NULL);
	w.threads = 0;
	/* Whatever done() hands back now runs inline, cancelled. */
	if (r != NULL)
		while (jobs_reap(r, NULL, NULL) > 0)
			;
	if (w.efd >= 0)
		close(w.efd);
	w.efd = -1;
	w.stopping = 0;
}

unsigned jobs_active(void)
{
	return w.nactive;
}
