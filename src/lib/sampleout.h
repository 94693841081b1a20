/*
 * sampleout: what a sample leaves behind, shared by the signal handler (sighandler.c),
 * the code ids (codeid.c) and the wall-clock pass (wall.c): the SAMPLE record committed
 * to the ring, the cost histogram, and the drop counters.  State in sighandler_g.
 *
 * Interface ([sigsafe]: atomics on sighandler_g, clock_gettime(CLOCK_MONOTONIC) through
 * the vDSO, ring_commit):
 *   sampleout_drop(reason)         counts one sample lost for PYPROF_DROP_<reason>
 *   sampleout_drop_n(reason, n)    counts n
 *   sampleout_cost(depth, ns)      counts one sample of `depth` frames that cost `ns`
 *   sampleout_commit(r, tid)       commits sample r of thread `tid`; returns its depth
 *   sampleout_commit_repeat(r, tid, kind, repeat, how, gil)  the same, standing for
 *                                  repeat more, with GIL states (wall mode)
 *   sampleout_commit_kind(r, tid, kind)  the same for a record of another kind (RREC_SNAP,
 *                                  RREC_SNAP_END)
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

/* [sigsafe] Commits sample r (reserved in sighandler_g.samples) of thread `tid`, stamped
 * now; returns its depth (frames, cut ones included). */
uint32_t sampleout_commit(rrec_sample *r, uint32_t tid);
uint32_t sampleout_commit_kind(rrec_sample *r, uint32_t tid, int kind);
/* [sigsafe] sampleout_commit_kind of a record that stands for `repeat` samples more
 * (asked of its thread's timer by passes that found it running), in the GIL states they
 * were asked in (`how`, as threadtimer_take_asked packs them: held, waiting, neither);
 * its thread stands as `gil` (enum pyprof_gil) with the GIL now. */
uint32_t sampleout_commit_repeat(rrec_sample *r, uint32_t tid, int kind, uint32_t repeat,
                                 uint32_t how, uint8_t gil);

#endif
