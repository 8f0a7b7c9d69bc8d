/*
 * reader.h - the read-side critical section of a libshmf call: liburcu-bp's
 * read lock and unlock, with the calling thread's reader looked up once.
 *
 * Inlined as liburcu-bp's header writes them, rcu_read_lock() and
 * rcu_read_unlock() each name the thread-local reader twice (a compiler
 * barrier between the two makes the compiler look it up again), and in a
 * shared library each look-up is a call to __tls_get_addr: four calls on
 * every check, most of what the handle costs over the filter's own work
 * (docs/design.md section 4). shmf_reader_lock() looks the reader up once
 * and returns it; shmf_reader_unlock() takes it back. Between them they do
 * what liburcu-bp's inline read side does (urcu/static/urcu-bp.h, whose
 * read-side functions its authors keep short so that other code may
 * inline them), in the same order: register the thread on its first
 * section, then copy the grace-period counter into the reader's (or count
 * one more nesting level), with liburcu-bp's slave barrier after the store;
 * on unlock the barrier, then the count taken back. A reader's struct lives
 * as long as its thread, so the pointer stays valid for the section.
 *
 * Sanitizer builds (meson defines SHMF_URCU_OUT_OF_LINE: liburcu 0.13's
 * registry trips UBSan's alignment check inside the inlined header code)
 * call liburcu-bp's own functions.
 */
#ifndef SHMF_READER_H
#define SHMF_READER_H

#ifndef SHMF_URCU_OUT_OF_LINE
#define _LGPL_SOURCE
#endif
#include <urcu-bp.h>

#ifndef SHMF_URCU_OUT_OF_LINE
typedef struct urcu_bp_reader *shmf_reader_t;

static inline shmf_reader_t shmf_reader_lock(void)
{
	struct urcu_bp_reader **slot = &URCU_TLS(urcu_bp_reader);
	/* Opaque from here: the compiler keeps the address in a register
	 * instead of computing it again (another call) after the barrier. */
	__asm__("" : "+r"(slot));
	if (caa_unlikely(*slot == NULL))
		urcu_bp_register();
	cmm_barrier();
	struct urcu_bp_reader *r = *slot;
	unsigned long tmp = r->ctr;
	if (caa_likely(!(tmp & URCU_BP_GP_CTR_NEST_MASK))) {
		_CMM_STORE_SHARED(r->ctr, _CMM_LOAD_SHARED(urcu_bp_gp.ctr));
		urcu_bp_smp_mb_slave();
	} else {
		_CMM_STORE_SHARED(r->ctr, tmp + URCU_BP_GP_COUNT);
	}
	return r;
}

static inline void shmf_reader_unlock(shmf_reader_t r)
{
	unsigned long tmp = r->ctr;
	urcu_bp_smp_mb_slave();
	_CMM_STORE_SHARED(r->ctr, tmp - URCU_BP_GP_COUNT);
	cmm_barrier();
}
#else
typedef int shmf_reader_t;

static inline shmf_reader_t shmf_reader_lock(void)
{
	rcu_read_lock();
	return 0;
}

static inline void shmf_reader_unlock(shmf_reader_t r)
{
	(void)r;
	rcu_read_unlock();
}
#endif

#endif
