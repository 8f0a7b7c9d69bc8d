/*
 * workers.h - throughput of real worker processes: N children forked, each
 * opening its own handle or connection (as a worker of a PHP-FPM pool
 * would), all released at once, each running calls for the same time.
 */
#ifndef BENCH_WORKERS_H
#define BENCH_WORKERS_H

#include <stdint.h>

struct worker_job {
	/* In the child: open what worker @p idx of @p nworkers needs. */
	void *(*setup)(const void *arg, int idx, int nworkers);
	/* In the child: calls until ticks_now() passes @p deadline; keys done. */
	uint64_t (*run)(void *state, uint64_t deadline);
	const void *arg;
};

/**
 * Keys per second of @p nworkers processes together: the sum over workers
 * of the keys each did divided by its own running time (they start within
 * microseconds of each other). Exits if a worker fails.
 * @p cpu receives how many CPUs' worth of time the workers got, and how
 * many every other process used meanwhile (a server under test included,
 * other work on the machine, time the hypervisor stole): /proc/stat's
 * busy time less the workers' own.
 */
struct workers_cpu {
	double workers;
	double others;
};
double workers_throughput(const struct worker_job *job, int nworkers, double seconds, struct workers_cpu *cpu);

#endif
