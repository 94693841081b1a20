/*
 * sigstate: the state the signal path reads, `sighandler_state`, and its one instance,
 * sighandler_g.  Data only, below everything that reads it: sampler.c sets it up before
 * the first signal can arrive and tears it down only after sampler_stop's quiesce; the
 * handler (sighandler.c), the walk's helpers (codeid.c, native.c), the sample commit
 * (sampleout.c), allocation sampling (allocsample.c), the spans (spans.c) and the wall
 * pass (wall.c) read it and bump its counters (atomics); the writer reads the rings.
 */
#ifndef PYPROF_SIGSTATE_H
#define PYPROF_SIGSTATE_H

#include <stdint.h>

#include <pyprof/format.h>

#include "pyabi.h"
#include "ring.h"

typedef struct sighandler_state {
    _Atomic int enabled;  /* handler does work only while set */
    _Atomic int inflight; /* handlers running now (quiesce waits for 0) */
    pyabi abi;
    ring samples; /* rrec.h: every kind but RREC_CODE */
    ring codes;   /* rrec_code */
    unsigned max_depth;
    uint64_t period_ns;   /* for the handler's own time budget */
    uint64_t t0_ns;       /* CLOCK_MONOTONIC at start */
    uint64_t perf_cookie; /* si_perf_data tag of our perf events (threadtimer.h) */
    int sample_signal;    /* SIGTRAP (perf) or SIGPROF */
    /* Wall mode with a CPU timer per thread: a timer's signal samples its thread only
     * for the passes that found it running (threadtimer_ask; wall.c). */
    int wall_timed;
    _Atomic uint64_t drops[PYPROF_DROP_COUNT];
    _Atomic uint64_t signals;
    _Atomic uint64_t handler_ns; /* time spent inside the handler */
    /* Samples by stack depth and handler time (PYPROF_COST_* buckets). */
    _Atomic uint64_t cost[PYPROF_COST_NDEPTH][PYPROF_COST_NTIME];
    _Atomic int pthread_tid_offset; /* where glibc's thread descriptor keeps the tid, or 0 */
    /* Native mode (PYPROF_NATIVE): set before the first signal; each sample then also
     * walks the native stack (native.h) into up to native_max addresses. */
    int native;
    unsigned native_max;
    _Atomic uint64_t native_ok, native_truncated, native_skipped, native_ns;
} sighandler_state;

/* The one instance (sigstate.c). */
extern sighandler_state sighandler_g;

#endif
