/*
 * calib: what one sampling signal costs the thread it interrupts, outside the sample
 * itself.  The handler times its own sample; what it cannot time is everything around
 * it: the timer's interrupt and re-arming (on a virtual machine, exits to the
 * hypervisor), the kernel building the signal frame, the handler's entry and return,
 * sigreturn, and the caches all that disturbs.  The thread's CPU clock counts all of it,
 * but a profiled thread's clock only shows its period between two signals, so the cost
 * can only be seen as work the program did not do.
 *
 * So it is measured on a thread of ours, once per process (a fork child keeps its
 * parent's figure): a fixed unit of work (about 50 us) is timed over and over on the
 * thread's CPU clock with the very timer the sampled threads have (same event, period
 * and signal; the handler returns at once for it), and the units a signal landed in,
 * with the unit after each, are compared with the units no signal touched.  The
 * difference, per signal, is the cost outside the handler's sample.  The measuring
 * is done in slices, a few milliseconds at a time, that the cron spaces out so that
 * it never takes more than a small share of the process's CPU (calib_tick); it ends after
 * CALIB_SIGNALS signals or CALIB_BUDGET_NS of CPU in all, so a 100 Hz period gets fewer
 * signals than 1 kHz.  docs/ARCHITECTURE.md explains how the log's whole cost is put
 * together from it.
 */
#ifndef PYPROF_CALIB_H
#define PYPROF_CALIB_H

#include <stdint.h>

#define CALIB_SIGNALS 32
#define CALIB_BUDGET_NS 128000000ull

typedef struct calib_result {
    uint64_t signal_ns; /* cost per signal outside the sample; 0 when not measured */
    uint64_t signals;   /* signals it was measured over */
    uint64_t cpu_ns;    /* CPU time the measurement took */
    uint64_t spent_ns;  /* CPU time every measurement of this process took (a new
                         * period is measured anew: see calib_begin) */
} calib_result;

/* [not sigsafe] On the cron thread (window.c; it unblocks SIGTRAP for the slice and
 * blocks it again), while the threads' timers are armed: one slice of measuring, of
 * about `budget_ns` of CPU; the estimate is updated from every slice so far.  Returns 1
 * once the measuring is over (enough signals, the whole budget spent, or no timer to
 * measure with), else 0. */
int calib_step(uint64_t budget_ns);

/* [not sigsafe] The cron's call, every round of a cpu-mode window with a log: a slice of
 * calib_step when one is due -- once the process has been profiled (`profiled_ns`) for a
 * second (a short-lived process never pays for it), while the threads' perf timers are
 * armed, and only while the measuring has taken less than half a percent of the
 * process's CPU. */
void calib_tick(uint64_t profiled_ns);

/* [not sigsafe] At the start of a window, before its writer runs: a measurement made at
 * another period (`pyprof ctl period` starts a window with a new one) does not stand
 * for this one, and is forgotten; the same period keeps it. */
void calib_begin(uint64_t period_ns);

/* [not sigsafe] Releases the timer calib_step keeps between slices, if any: when the
 * window's log is finished (the timer is the cron thread's).  calib_step makes a new one
 * when it needs it. */
void calib_release(void);

/* [not sigsafe] In a fork child: forgets the parent's timer (not inherited).  The
 * measurement, or how far it got, is kept: same machine, same timers. */
void calib_forget_in_child(void);

/* [sigsafe] Called first thing by the handler for one of our signals: 1 when the calling
 * thread is measuring (the signal is counted here and the handler returns at once). */
int calib_on_signal(void);

/* The measurement, zeros until there is one. */
void calib_get(calib_result *out);

/* 1 once the measuring is over in this process (or its parent, for a fork child). */
int calib_done(void);

#endif
