/*
 * sampleout: what a sample leaves behind, shared by the signal handler (sighandler.c),
 * the code ids (codeid.c) and the wall-clock pass (wall.c): the records that carry a
 * stack (rrec.h: RREC_SAMPLE, RREC_SNAP, RREC_ALLOC) reserved in the sample ring and
 * committed, the cost histogram, and the drop counters.  State in sighandler_g.
 *
 * Interface ([sigsafe]: atomics on sighandler_g, clock_gettime(CLOCK_MONOTONIC) through
 * the vDSO, ring_reserve, ring_commit, memset):
 *   sampleout_drop(reason)         counts one sample lost for PYPROF_DROP_<reason>
 *   sampleout_drop_n(reason, n)    counts n
 *   sampleout_cost(depth, ns)      counts one sample of `depth` frames that cost `ns`
 *   sampleout_now_ns()             now, in the samples' time
 *   sampleout_reserve(kind, nframes, nnative)  a record of `kind` with room for its stack
 *   sampleout_commit(h, tid)       commits record h, its stack thread `tid`'s, now;
 *                                  returns the stack's depth
 *   sampleout_commit_sample(r, tid, repeat, how, gil)  the same for a SAMPLE, standing
 *                                  for `repeat` more, with GIL states (wall mode)
 */
#ifndef PYPROF_SAMPLEOUT_H
#define PYPROF_SAMPLEOUT_H

#include <stdint.h>

#include "rrec.h"

/* [sigsafe] Counts one sample lost for `reason` (PYPROF_DROP_*); _n: `n` samples. */
void sampleout_drop(int reason);
void sampleout_drop_n(int reason, uint64_t n);

/* [sigsafe] Counts one sample of `depth` frames that cost `ns` in the cost histogram. */
void sampleout_cost(uint32_t depth, uint64_t ns);

/* [sigsafe] Now on the monotonic clock, since the samples' zero (sighandler_state.t0_ns):
 * the time every record of the sample ring carries. */
uint64_t sampleout_now_ns(void);

/* [sigsafe] Reserves in the sample ring a record of `kind`, one that carries a stack
 * (RREC_SAMPLE, RREC_SNAP, RREC_ALLOC), with room for `nframes` frames and `nnative`
 * native addresses after it.  Its fixed part is zeroed, its kind set: its stack holds no
 * frame until a walk (walk.h) fills it.  The caller fills the kind's own fields, then
 * commits the record (sampleout_commit) or cancels it (ring_cancel on
 * sighandler_g.samples).  NULL when the ring is full (not counted: the caller knows
 * why it asked). */
void *sampleout_reserve(int kind, unsigned nframes, unsigned nnative);

/* [sigsafe] Commits record h (from sampleout_reserve), its stack stamped as thread
 * `tid`'s, now; returns the stack's depth (frames, cut ones included). */
uint32_t sampleout_commit(rrec_head *h, uint32_t tid);

/* [sigsafe] sampleout_commit of sample r, standing for `repeat` samples more (asked of
 * its thread's timer by passes that found it running), in the GIL states they were
 * asked in (`how`, as threadtimer_take_asked packs them: held, waiting, neither); its
 * thread stands as `gil` (enum pyprof_gil) with the GIL now. */
uint32_t sampleout_commit_sample(rrec_sample *r, uint32_t tid, uint32_t repeat, uint32_t how,
                                 uint8_t gil);

#endif
