/* results.c - rows of the CSV, and the same on stdout. */
#include <stdio.h>

#include "bench/results.h"

int results_open(struct results *r, const char *path)
{
	r->err = 0;
	r->fp = fopen(path, "we");
	if (r->fp == NULL)
		return -1;
	if (fputs("filter,type,keys,fpr_target,fpr_measured,k,bits_per_key,load,key_bytes,system,transport,op,"
		  "keys_per_call,workers,median_ns,p99_ns,keys_per_s,samples,sample,workers_cpus,others_cpus\n",
		  r->fp) < 0)
		r->err = 1;
	return 0;
}

void results_row(struct results *r, const struct row *w)
{
	const struct facts *f = w->f;
	int thr = w->keys_per_s > 0;
	if (fprintf(r->fp, "%s,%s,%llu,%.3g,%.3g,%u,%.2f,%.4f,%zu,%s,%s,%s,%zu,%d,", f->filter, f->type,
		    (unsigned long long)f->keys, f->fpr_target, f->fpr_measured, f->k, f->bits_per_key, f->load,
		    w->key_bytes, w->system, w->transport, w->op, w->keys_per_call, w->workers) < 0)
		r->err = 1;
	if ((thr ? fprintf(r->fp, ",,%.0f", w->keys_per_s) : fprintf(r->fp, "%.1f,%.1f,", w->median_ns, w->p99_ns)) < 0)
		r->err = 1;
	if (fprintf(r->fp, ",%zu,%s,", w->samples, w->sample) < 0 || (!thr && fputc(',', r->fp) == EOF) ||
	    (thr && fprintf(r->fp, "%.2f,%.2f", w->workers_cpus, w->others_cpus) < 0) || fputc('\n', r->fp) == EOF)
		r->err = 1;
	fflush(r->fp);

	if (thr)
		printf("%-16s %2zuB %-19s %-10s %-5s x%-3zu %d worker%s %14.0f keys/s  (CPUs: workers %.2f, others %.2f)\n",
		       f->filter, w->key_bytes, w->system, w->transport, w->op, w->keys_per_call, w->workers,
		       w->workers > 1 ? "s" : " ", w->keys_per_s, w->workers_cpus, w->others_cpus);
	else
		printf("%-16s %2zuB %-19s %-10s %-5s x%-3zu %12.1f ns/key  p99 %10.1f  (%zu samples)\n", f->filter,
		       w->key_bytes, w->system, w->transport, w->op, w->keys_per_call, w->median_ns, w->p99_ns,
		       w->samples);
	fflush(stdout);
}

int results_close(struct results *r)
{
	if (fclose(r->fp) != 0)
		r->err = 1;
	r->fp = NULL;
	return r->err ? -1 : 0;
}
