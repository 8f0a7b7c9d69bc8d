/* workers.c - forked worker processes, released together, timed each. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/die.h"
#include "bench/ticks.h"
#include "bench/workers.h"

#define WORKERS_MAX 64

struct result {
	uint64_t keys;
	double ns;
};

static void child(const struct worker_job *job, int idx, int nworkers, double seconds, int ready, int start, int result)
{
	void *state = job->setup(job->arg, idx, nworkers);
	/* Say ready, then close: a worker that dies in its setup leaves the
	 * parent an end of file instead of a wait for ever. */
	if (write(ready, "r", 1) != 1)
		_exit(1);
	close(ready);
	char c;
	while (read(start, &c, 1) < 0 && errno == EINTR) /* end of file: go */
		;
	uint64_t deadline = ticks_deadline(seconds), t0 = ticks_now();
	uint64_t keys = job->run(state, deadline);
	struct result r = { keys, ticks_ns(ticks_now() - t0) };
	/* One write of a few bytes to a pipe is atomic. */
	_exit(write(result, &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 1);
}

/* Busy and total jiffies of all CPUs (steal counts as busy: someone else ran). */
static void cpu_jiffies(unsigned long long *busy, unsigned long long *total)
{
	unsigned long long v[8] = { 0 };
	FILE *fp = fopen("/proc/stat", "re");
	if (fp == NULL || fscanf(fp, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
				 &v[5], &v[6], &v[7]) != 8)
		memset(v, 0, sizeof(v));
	if (fp != NULL)
		fclose(fp);
	*total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
	*busy = *total - v[3] - v[4]; /* less idle and iowait */
}

static double children_cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

static size_t read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return got;
}

double workers_throughput(const struct worker_job *job, int nworkers, double seconds, struct workers_cpu *cpu)
{
	unsigned long long busy0, total0, busy1, total1;
	int ready[2], start[2], result[2];
	pid_t pids[WORKERS_MAX];
	if (nworkers < 1 || nworkers > WORKERS_MAX)
		die("%d workers: want 1 to %d", nworkers, WORKERS_MAX);
	if (pipe(ready) < 0 || pipe(start) < 0 || pipe(result) < 0)
		die("pipe: %m");
	fflush(stdout);
	fflush(stderr);
	for (int i = 0; i < nworkers; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			die("fork: %m");
		if (pids[i] == 0) {
			close(ready[0]);
			close(start[1]);
			close(result[0]);
			child(job, i, nworkers, seconds, ready[1], start[0], result[1]);
		}
	}
	close(ready[1]);
	close(start[0]);
	close(result[1]);

	char buf[WORKERS_MAX];
	size_t nready = read_full(ready[0], buf, (size_t)nworkers);
	close(ready[0]);
	double ours0 = children_cpu_seconds();
	cpu_jiffies(&busy0, &total0);
	uint64_t t0 = ticks_now();
	if (nready == (size_t)nworkers)
		close(start[1]); /* release them all at once */
	else
		for (int i = 0; i < nworkers; i++)
			kill(pids[i], SIGKILL);

	double rate = 0;
	int got = 0;
	struct result r;
	while (nready == (size_t)nworkers && read_full(result[0], &r, sizeof(r)) == sizeof(r)) {
		rate += (double)r.keys / (r.ns / 1e9);
		got++;
	}
	close(result[0]);
	if (nready != (size_t)nworkers)
		close(start[1]);
	int failed = 0;
	for (int i = 0; i < nworkers; i++) {
		int status = -1; /* not WIFEXITED: a failed wait counts as a failed worker */
		while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR)
			;
		failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	}
	if (failed || got != nworkers)
		die("%d of %d worker processes failed (see their messages above)", nworkers - got, nworkers);
	/* The workers' setup ran before busy0 was read; it is in ours too,
	 * which makes others a little low, never high. */
	cpu_jiffies(&busy1, &total1);
	double ncpu = (double)sysconf(_SC_NPROCESSORS_ONLN), wall = ticks_ns(ticks_now() - t0) / 1e9;
	double busy = total1 > total0 ? (double)(busy1 - busy0) / (double)(total1 - total0) * ncpu : 0;
	double ours = (children_cpu_seconds() - ours0) / wall;
	cpu->workers = ours;
	cpu->others = busy > ours ? busy - ours : 0;
	return rate;
}
