/*
 * sampleout: committing a sample and counting what samples cost and lose (sampleout.h).
 *
 * SIGNAL-HANDLER CODE: every function here runs inside the sampling signal handler (and
 * on the wall-clock sampler thread).  What they call, and why that is safe:
 *   atomic_fetch_add on sighandler_g's counters   lock-free on x86_64
 *   clock_gettime(CLOCK_MONOTONIC) (clock.h)      on signal-safety(7); served by the vDSO
 *   ring_commit                                   ours: a store on a preallocated buffer
 * No malloc, no lock, no stdio, no interpreter memory, errno untouched.
 */
#include "sampleout.h"

#include <stdatomic.h>

#include "common/clock.h"
#include "threadtimer.h"
#include "sigstate.h"
#include "rrec.h"

void sampleout_drop(int reason) { sampleout_drop_n(reason, 1); }

void sampleout_drop_n(int reason, uint64_t n)
{
    atomic_fetch_add_explicit(&sighandler_g.drops[reason], n, memory_order_relaxed);
}

void sampleout_cost(uint32_t depth, uint64_t ns)
{
    static const uint32_t depth_bounds[PYPROF_COST_NDEPTH] = PYPROF_COST_DEPTH_BOUNDS;
    static const uint32_t time_bounds[PYPROF_COST_NTIME] = PYPROF_COST_TIME_BOUNDS_NS;
    int d = 0, t = 0;
    while (d < PYPROF_COST_NDEPTH - 1 && depth > depth_bounds[d])
        d++;
    while (t < PYPROF_COST_NTIME - 1 && ns > time_bounds[t])
        t++;
    atomic_fetch_add_explicit(&sighandler_g.cost[d][t], 1, memory_order_relaxed);
}

uint32_t sampleout_commit(rrec_sample *r, uint32_t tid)
{
    return sampleout_commit_kind(r, tid, RREC_SAMPLE);
}

uint32_t sampleout_commit_kind(rrec_sample *r, uint32_t tid, int kind)
{
    return sampleout_commit_repeat(r, tid, kind, 0, 0, PYPROF_GIL_UNKNOWN);
}

uint32_t sampleout_commit_repeat(rrec_sample *r, uint32_t tid, int kind, uint32_t repeat,
                                 uint32_t how, uint8_t gil)
{
    sighandler_state *g = &sighandler_g;
    r->repeat = repeat;
    uint32_t held = THREADTIMER_ASKED_N(how, THREADTIMER_HELD);
    uint32_t wait = THREADTIMER_ASKED_N(how, THREADTIMER_WAIT);
    r->repeat_held = held < repeat ? held : repeat;
    r->repeat_wait = wait < repeat - r->repeat_held ? wait : repeat - r->repeat_held;
    r->gil = gil;
    /* The others were asked while it ran C code without the GIL. */
    r->repeat_gil = gil == PYPROF_GIL_UNKNOWN    ? PYPROF_GIL_UNKNOWN
                    : gil == PYPROF_GIL_NOT_HELD ? PYPROF_GIL_NOT_HELD
                                                 : PYPROF_GIL_OTHER;
    r->kind = (uint8_t)kind;
    r->tid = tid;
    r->t_ns = clock_mono_ns() - g->t0_ns;
    uint32_t depth = (uint32_t)r->nframes + r->cut;
    ring_commit(&g->samples, (void *)r);
    return depth;
}
