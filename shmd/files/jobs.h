/*
 * jobs.h - the file worker: the part of snapshot, swap, restore, merge and
 * periodic snapshots that touches a file named by a client or the
 * configuration runs on worker threads, never on the event loop, so that a
 * slow disk, a hung network file system or a hostile path stalls only the
 * request that named it (see docs/design.md, "The daemon").
 *
 * The registry stays single-threaded. A job is prepared on the loop (the
 * slot copied, the generations it reads mapped, the data files it fills
 * created), its work() runs on a worker thread and touches only files and
 * the shared memory it was handed, and its done() runs on the loop again
 * (publish, reply, release). done() may hand the job back for another
 * round of work (jobs_again()): a restore opens and checks the file, then
 * the loop makes the new generations, then the worker fills them.
 *
 * A job keeps its filter busy from jobs_submit() until its last done()
 * (jobs_busy()): the dispatcher makes requests that would change the
 * filter, or take its relocation lock, wait until then, so that commands
 * on one filter stay in the order they came.
 *
 * The loop polls jobs_fd(), readable while finished jobs wait for their
 * done(), and calls jobs_reap(). Everything here but work() is called from
 * the loop only.
 */
#ifndef SHMD_JOBS_H
#define SHMD_JOBS_H

#include <stdatomic.h>
#include <stddef.h>

#include "shmd/store/registry.h"
#include "shmd/resp/reply.h"
#include <shmf.h>
#include "common/snapshot.h"

/* Worker threads: jobs of different filters run side by side, so a write
 * stuck on one slow disk does not hold up the others. */
#define JOBS_THREADS 4

struct job;

/* On a worker thread: the file work, its outcome in j->rc and j->err. */
typedef void job_work_fn(struct job *j);

/* On the loop: what follows the work (publish, release, reply into j->out
 * when it is not NULL). Frees the job, or hands it back with jobs_again(). */
typedef void job_done_fn(struct job *j, struct registry *r);

struct job {
	job_work_fn *work;
	job_done_fn *done;
	char filter[SHMF_NAME_MAX + 1];  /* busy until the last done() */
	struct reply *out;               /* the reply goes here; NULL: nobody waits (periodic, or the client left) */
	const void *owner;               /* who waits (the session), NULL: nobody */
	atomic_int cancel;               /* set at shutdown: work() gives up where it can */
	int rc;                          /* work()'s outcome: 0 or a negative code */
	char err[SNAPSHOT_ERR_MAX];      /* and its sentence */
	struct job *next;                /* the queue it is in (under the queue's mutex) */
	struct job *all_prev, *all_next; /* every job not yet done (the loop's) */
	struct registry *reg;            /* for done() when it runs inline */
};

/** Start the worker threads (after daemon(): threads do not survive a fork). 0 or -errno. */
int jobs_start(char *err, size_t errlen);

/** The descriptor the loop polls: readable while finished jobs wait for jobs_reap(). -1 before jobs_start(). */
int jobs_fd(void);

/**
 * Queue @p j (work, done, filter, out and owner set) for a worker; its
 * filter is busy from now on. Without worker threads (jobs_start() not
 * called: unit tests, start-up, shutdown) the work and done() run at once
 * on the caller's thread.
 * @return 1: queued, done() comes later; 0: done() has run (replied).
 */
int jobs_submit(struct job *j, struct registry *r);

/** Called from done(): queue @p j again, with @p work and then @p done; its filter stays busy. */
void jobs_again(struct job *j, job_work_fn *work, job_done_fn *done);

/** 1 if a job of filter @p name is queued, running, or waiting for its done(). */
int jobs_busy(const char *name);

/** 1 if @p owner waits for a job. */
int jobs_owned(const void *owner);

/** The client @p owner left: its jobs run on, and their replies go nowhere. */
void jobs_disown(const void *owner);

/**
 * Run done() of every finished job (on the loop). @p finished (if not
 * NULL) is then told of each owner whose job has ended, so that it can
 * go on with its next request. @return the jobs reaped: when not 0, a
 * filter may have stopped being busy.
 */
int jobs_reap(struct registry *r, void (*finished)(void *arg, const void *owner), void *arg);

/**
 * Shutdown: jobs not started are cancelled (rc -ECANCELED), running ones
 * told to give up (a snapshot stops at its next chunk and removes its
 * temporary file), the threads joined, and every done() run.
 */
void jobs_stop(struct registry *r);

/** Jobs queued, running or waiting for done() (tests, INFO). */
unsigned jobs_active(void);

#endif
