/*
 * sampleout: reserving and committing the records that carry a stack, and counting what
 * samples cost and lose (sampleout.h).
 *
 * SIGNAL-HANDLER CODE: every function here runs inside the sampling signal handler (and
 * on the wall-clock sampler thread).  What they call, and why that is safe:
 *   atomic_fetch_add on sighandler_g's counters   lock-free on x86_64
 *   clock_gettime(CLOCK_MONOTONIC) (clock.h)      on signal-safety(7); served by the vDSO
 *   ring_reserve, ring_commit                     ours: a CAS and a store on a preallocated
 *                                                 buffer
 *   memset                                        of a record just reserved
 * No malloc, no lock, no stdio, no interpreter memory, errno untouched.
 */
#include "sampleout.h"

#include <stdatomic.h>
#include <string.h>

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

uint64_t sampleout_now_ns(void) { return clock_mono_ns() - sighandler_g.t0_ns; }

void *sampleout_reserve(int kind, unsigned nframes, unsigned nnative)
{
    size_t fixed = rrec_stack_kind_size(kind);
    uint8_t *r = ring_reserve(&sighandler_g.samples, fixed + (size_t)nframes * sizeof(rframe) +
                                                         (size_t)nnative * sizeof(uint64_t));
    if (!r)
        return NULL;
    memset(r, 0, fixed);
    ((rrec_head *)(void *)r)->kind = (uint8_t)kind;
    return r;
}

uint32_t sampleout_commit(rrec_head *h, uint32_t tid)
{
    rrec_stack *st = rrec_stack_of(h);
    st->tid = tid;
    st->t_ns = sampleout_now_ns();
    uint32_t depth = (uint32_t)st->nframes + st->cut;
    ring_commit(&sighandler_g.samples, (void *)h);
    return depth;
}

uint32_t sampleout_commit_sample(rrec_sample *r, uint32_t tid, uint32_t repeat, uint32_t how,
                                 uint8_t gil)
{
    r->repeat = repeat;
    uint32_t held = THREADTIMER_ASKED_N(how, THREADTIMER_HELD);
    uint32_t wait = THREADTIMER_ASKED_N(how, THREADTIMER_WAIT);
    r->repeat_held = held < repeat ? held : repeat;
    r->repeat_wait = wait < repeat - r->repeat_held ? wait : repeat - r->repeat_held;
    r->gil = gil;
    /* The others were asked while it ran C code without the GIL. */
    r->repeat_gil = gil == PYPROF_GIL_AWAIT      ? PYPROF_GIL_AWAIT
                    : gil == PYPROF_GIL_UNKNOWN  ? PYPROF_GIL_UNKNOWN
                    : gil == PYPROF_GIL_NOT_HELD ? PYPROF_GIL_NOT_HELD
                                                 : PYPROF_GIL_OTHER;
    return sampleout_commit(&r->head, tid);
}
