/*
 * cpucredit: how many samples one signal of a thread's CPU timer stands for, so that
 * samples follow the CPU time the kernel accounts to the thread, whatever the timer
 * counted.  Pure arithmetic on one thread's state; signal-safe.
 *
 * Why.  The perf task-clock event counts the time between a thread's sched-in and
 * sched-out, which on a virtual machine includes the time the hypervisor took the
 * virtual CPU away (steal); the scheduler's own accounting (CLOCK_THREAD_CPUTIME_ID,
 * getrusage, top) has it subtracted.  Steal comes with what makes a guest exit (system
 * calls, thread starts, timer programming), so a timer that counts it both inflates a
 * profile and skews it toward that code (docs/ARCHITECTURE.md, "CPU the kernel
 * accounts").
 *
 * How.  Each signal closes an interval the timer counted: the random first period, then
 * the steady one.  The handler reads the thread's own CPU clock; the kernel's CPU of the
 * interval, scaled to a whole period when the interval was the (shorter) first one, is
 * added to a credit (at most what the timer counted: the kernel also counts a thread's
 * switches and wake-ups to it, which the timer does not), and the signal records
 * floor(credit / period) samples, keeping the remainder.  The credit starts at a uniformly
 * random fraction of a period, so that the rounding is unbiased: a thread's expected samples
 * are its kernel CPU over the period, one that ran for less than a period included (the timer's
 * random first period gives it its chance of a signal; the scaled first interval, what that
 * signal is worth).
 *
 * Where an interval starts matters.  Between two signals, each clock reading comes as
 * late after its timer's overflow as the other (the timer's interrupt, delivered 40-100
 * us late on the test machine's virtual CPU, and the signal's delivery), so the
 * lateness cancels.  An interval that starts where a timer starts counting (a thread's
 * first event, the steady event made at its signal) has it at its end only, and for a
 * short first period it would outweigh the period itself.  Such a "fresh" interval is
 * measured as a ratio instead: the thread's CPU clock over CLOCK_MONOTONIC from the
 * timer's start to the signal, both late by the same time, is the share of the interval
 * the kernel gave the thread (what the timer counts is on-CPU time, which with no
 * context switch of the thread in the interval is the monotonic clock's; steal and
 * interrupt time in it are not the thread's).  A fresh interval the thread switched in,
 * or whose start was read from another thread, takes the ratio the process's recent
 * fresh intervals showed (`ratio_q`, averaged by the caller, threadtimer.c): its own
 * clock cannot tell its lateness from the switches' and sleeps.
 */
#ifndef PYPROF_CPUCREDIT_H
#define PYPROF_CPUCREDIT_H

#include <stdint.h>

/* The most samples one signal records: far beyond any real interval (a thread whose
 * signals were lost for 65,536 periods), it only bounds a broken clock's damage. */
#define CPUCREDIT_MAX_SAMPLES 65536u
/* Ratios are fixed-point, ONE being 1.0. */
#define CPUCREDIT_ONE (1u << 20)

typedef struct cpucredit {
    uint64_t last_ns;  /* the thread's CPU clock at its last signal, or where its timer
                        * started */
    uint64_t start_ns; /* the reading cpucredit_start was given */
    uint64_t
        credit_ns; /* kernel CPU not yet turned into samples; below period after a signal */
    /* Where the fresh interval started: CLOCK_MONOTONIC (0: not read) and the thread's
     * context switches. */
    uint64_t mono_ns, switches;
    int fresh; /* last_ns is where a timer started, not a signal's reading */
} cpucredit;

/* What a handler read: the thread's CPU clock; for a fresh interval (cpucredit_fresh)
 * CLOCK_MONOTONIC and the thread's context switches, else 0s. */
typedef struct cpucredit_now {
    uint64_t cpu_ns, mono_ns, switches;
} cpucredit_now;

/* What a signal showed besides its samples. */
typedef struct cpucredit_seen {
    uint64_t kernel_ns; /* the kernel's CPU of the interval, set against what the timer
                         * counted (a fresh interval's: its ratio x timer_ns); 0 when
                         * the clock went backwards or did not move */
    uint32_t ratio_q;   /* with ratio_known: a fresh interval's own ratio */
    int ratio_known;    /* a fresh interval without a switch: its ratio was measured */
} cpucredit_seen;

/* [sigsafe] A thread's timer starts counting at readings `at` (on the thread itself;
 * from another thread only the CPU clock, the rest 0); `seed_ns` is uniformly random in
 * [0, period). */
void cpucredit_start(cpucredit *c, const cpucredit_now *at, uint64_t seed_ns);

/* [sigsafe] Made from another thread: its timer started counting at CPU clock reading
 * `now_ns`, later than cpucredit_start's: the base moves there unless the thread's
 * signal came first (a compare-and-swap decides). */
void cpucredit_rebase(cpucredit *c, uint64_t now_ns);

/* [sigsafe] In the thread's own handler, after its signal's cpucredit_signal: a new
 * timer of the thread started counting at readings `at`. */
void cpucredit_restart(cpucredit *c, const cpucredit_now *at);

/* [sigsafe] 1 when the next signal closes a fresh interval measured from the thread
 * itself: its handler reads CLOCK_MONOTONIC and the context switches too. */
int cpucredit_fresh(const cpucredit *c);

/* [sigsafe] A signal of the thread's timer, with the readings `now`, closing an
 * interval the timer counted as `timer_ns` (the first period's length, or the period);
 * `ratio_q`, the process's recent fresh ratio (0: none seen yet, taken as ONE).
 * Returns the samples it stands for; fills `*seen`. */
uint32_t cpucredit_signal(cpucredit *c, const cpucredit_now *now, uint64_t timer_ns,
                          uint64_t period_ns, uint32_t ratio_q, cpucredit_seen *seen);

#endif
