/*
 * sampler: the sampling signal's source and the handler's life cycle.  Owns the timers
 * (a perf task-clock event per thread, threadtimer.h, that raises SIGTRAP on the thread
 * that used the CPU, or, where perf events are not allowed, a process CPU-time POSIX
 * timer raising SIGPROF, which the kernel's tick limits to CONFIG_HZ), the handler
 * installation, the memory of the rings and code tables, and the quiesce protocol:
 * sampler_stop returns only when no handler is running and none will do work again.
 */
#ifndef PYPROF_SAMPLER_H
#define PYPROF_SAMPLER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <pyprof/format.h>

#include "pyabi.h"
#include "ring.h"

/* What the handlers counted since sampler_start, read at once. */
typedef struct sampler_stats {
    uint64_t signals;    /* sampling signals handled while enabled */
    uint64_t handler_ns; /* time spent inside the handler */
    uint64_t drops[PYPROF_DROP_COUNT];
    uint64_t cost[PYPROF_COST_NDEPTH][PYPROF_COST_NTIME]; /* samples by depth and time */
    /* Native mode: samples whose native walk was whole, cut short, not made; the time
     * the native walks took (part of handler_ns). */
    uint64_t native_ok, native_truncated, native_skipped, native_ns;
} sampler_stats;

/* [not sigsafe] Allocates the rings and tables, installs the handlers and arms the timer
 * for every thread of the process (clock PYPROF_CLOCK_CPU), or starts the wall-clock
 * sampler thread (PYPROF_CLOCK_WALL).  With `native` (PYPROF_NATIVE) in cpu mode, sets
 * native walks up first (native.h); a failure there is one diag line and sampling goes
 * on without them (sampler_native says which).  Returns 0, or -1 with a line in `err`. */
int sampler_start(const pyabi *abi, uint64_t period_ns, unsigned max_depth, int clock,
                  int native, char *err, size_t errlen);

/* [not sigsafe] Disarms the timer and waits until no handler is at work.  Idempotent. */
void sampler_stop(void);

/* [not sigsafe] In a fork child: the timer, rings and counters are the parent's; forget
 * them without touching the parent's events, and leave sampling off until a new
 * sampler_start. */
void sampler_forget_in_child(void);

/* How samples are triggered ("perf-task-clock", "posix-cpu-timer", "wall-thread", or
 * "wall-thread+perf-task-clock": the wall pass with each thread's own timer). */
const char *sampler_timer_name(void);

/* Passes the wall-clock sampler made over the threads since start (0 in cpu mode). */
uint64_t sampler_wall_passes(void);

/* The handler's counters since sampler_start. */
void sampler_read_stats(sampler_stats *out);

/* Counts a sample lost outside the handler (the writer's, say) under `reason`. */
void sampler_count_drop(int reason);

/* The rings the handlers fill and the writer drains: the sample ring (every rrec.h kind
 * but RREC_CODE) and the code ring (rrec_code).  Valid from sampler_start until the next
 * one, or a fork child's sampler_forget_in_child. */
ring *sampler_sample_ring(void);
ring *sampler_code_ring(void);

/* CLOCK_MONOTONIC at sampler_start: the zero of the samples' time stamps. */
uint64_t sampler_t0_ns(void);

/* Native mode as the last sampler_start decided it: 1 when samples carry native stacks
 * (sighandler_state.native), 0 when not, -1 while it is undecided (from the start of
 * sampler_start until the timer is armed; also when it failed, or before any).  The writer
 * writes its header only once this is decided.  It keeps its value after sampler_stop, for
 * a log that is opened only at the end. */
int sampler_native(void);

#endif
