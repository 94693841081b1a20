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

#include "pyabi.h"

/* [not sigsafe] Allocates the rings and tables, installs the handlers and arms the timer
 * for every thread of the process (clock PYPROF_CLOCK_CPU), or starts the wall-clock
 * sampler thread (PYPROF_CLOCK_WALL).  Returns 0, or -1 with a line in `err`. */
int sampler_start(const pyabi *abi, uint64_t period_ns, unsigned max_depth, int clock,
                  char *err, size_t errlen);

/* [not sigsafe] Disarms the timer and waits until no handler is at work.  Idempotent. */
void sampler_stop(void);

/* [not sigsafe] In a fork child: the timer, rings and counters are the parent's; forget
 * them without touching the parent's events, and leave sampling off until a new
 * sampler_start. */
void sampler_forget_in_child(void);

/* How samples are triggered ("perf-task-clock", "posix-cpu-timer", "wall-thread"). */
const char *sampler_timer_name(void);

/* Passes the wall-clock sampler made over the threads since start (0 in cpu mode). */
uint64_t sampler_wall_passes(void);

/* [not sigsafe] Interposed sigaction for SIGTRAP/SIGPROF.  Returns 1 when handled (the
 * program's disposition recorded, ours left in place), 0 when the caller passes it on.
 * A program that takes SIGPROF while it is our timer's signal ends sampling, counted as
 * SIGNAL_STOLEN. */
int sampler_app_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

#endif
