/*
 * threadtimer: each thread's CPU timer (cpu mode, and wall mode's running threads).  A
 * perf task-clock event per thread
 * raises SIGTRAP on that thread after each period of its CPU time; the first period of
 * every thread is uniformly random in (0, period], every later one is the period.  So a
 * thread's expected number of samples is its CPU time over the period however short its
 * life: a thread that uses 0.3 of a period is sampled with probability 0.3.  (A counter
 * that starts at zero in each thread, as an inherited event does, never samples a thread
 * shorter than one period.)
 *
 * Owns the table of events (a slot per thread: its owner's tid, the events' pinning
 * mappings, in wall mode the samples asked of it), the hook run in each new thread before its
 * start routine and at its exit, and the switch from the random first period to the steady one,
 * which runs in the signal handler.  The events are held by a one-page mmap each, not by a
 * descriptor: the program's descriptor table never holds ours, whatever the number of threads.
 */
#ifndef PYPROF_THREADTIMER_H
#define PYPROF_THREADTIMER_H

#include <stdint.h>

/* [not sigsafe] Arms an event for every thread of the process but the library's own,
 * each with a random first period; from now on threadtimer_thread_start arms new ones.
 * `cookie` is the random tag the events' signals carry (its low 24 bits are replaced by
 * the slot and the kind of event).  Returns 0, or -1 with errno when perf events cannot
 * be used here (then nothing is armed). */
int threadtimer_arm(uint64_t period_ns, uint64_t cookie);

/* [not sigsafe] Releases every event; no signal of ours follows once every handler has
 * returned.  Idempotent. */
void threadtimer_disarm(void);

/* [not sigsafe] In a fork child: the events were the parent's threads' (and their
 * mappings are not inherited); forget them. */
void threadtimer_forget_in_child(void);

/* [sigsafe] 1 while armed: new threads should call threadtimer_thread_start. */
int threadtimer_armed(void);

/* [not sigsafe] In a new thread, before its start routine: arms its event (replacing
 * any the scan of threadtimer_arm gave it). */
void threadtimer_thread_start(void);

/* [not sigsafe] Around pthread_create: begin returns 1 when timers are armed (the new
 * thread must run threadtimer_thread_start), else 0, and then end must be called once
 * the C library's pthread_create returned: threadtimer_arm waits for such creations, so
 * that its scan of the threads finds theirs. */
int threadtimer_create_begin(void);
void threadtimer_create_end(void);

/* [sigsafe] 1 when `sig_data` (si_perf_data of a TRAP_PERF SIGTRAP) is one of ours. */
int threadtimer_is_ours(uint64_t sig_data);

/* [sigsafe] In the handler of one of our signals, on the thread `tid` it interrupted:
 * after the first period, arms the steady timer; after a steady one, releases the
 * spent first event.  Returns the samples the signal stands for: the whole periods of
 * the thread's own CPU clock (the kernel's account, without hypervisor steal) it
 * closed, the rest carried to the next (cpucredit.h); 1 for a signal whose slot is not
 * the thread's, or under PYPROF_TEST_UNCORRECTED.  Raw system calls only
 * (clock_gettime(CLOCK_THREAD_CPUTIME_ID), perf_event_open, ioctl, mmap, close,
 * munmap). */
uint32_t threadtimer_on_signal(uint64_t sig_data, uint32_t tid);

/* [not sigsafe] Before threadtimer_arm, the test settings: the events count
 * `test_skew_milli` / 1000 times faster than the threads' CPU (PYPROF_TEST_SKEW: steal
 * made on demand), and `test_uncorrected` makes every signal one sample, as the timer
 * counted, without reading any clock (PYPROF_TEST_UNCORRECTED: the library as it was
 * before the correction, for make bench's comparison). */
void threadtimer_configure(unsigned test_skew_milli, int test_uncorrected);

/* [sigsafe] Since threadtimer_arm, over the signals handled: the CPU time the timers
 * counted (the intervals the signals closed) and the CPU time the kernel accounted to
 * the same threads over the same intervals. */
void threadtimer_clock(uint64_t *timer_ns, uint64_t *kernel_ns);

/* Wall mode (wall.c): the sampler thread, finding a thread running, asks its timer for
 * the sample instead of reading a stack that keeps changing; the thread's next signal
 * takes every sample asked of it so far, and a pass that later finds the thread still
 * takes what is left.
 *   [sigsafe] threadtimer_ask(tid, how)  one more sample asked of thread tid, which
 *                                       when asked held the GIL (THREADTIMER_HELD),
 *                                       waited for it (THREADTIMER_WAIT) or neither
 *                                       (THREADTIMER_OTHER); 0, or -1 when it has no
 *                                       event or 1023 such samples are asked already (a
 *                                       thread that never runs its timer's period)
 *   [sigsafe] threadtimer_take_asked(sig_data, tid)   in the handler of our signal on
 *                                       thread tid: what was asked, cleared: the three
 *                                       counts packed (THREADTIMER_ASKED_*)
 *   [sigsafe] threadtimer_take_asked_tid(tid)         the same from another thread */
enum { THREADTIMER_HELD = 0, THREADTIMER_WAIT = 1, THREADTIMER_OTHER = 2 };
#define THREADTIMER_ASKED_N(v, how) (((v) >> (10 * (how))) & 0x3ffu)
#define THREADTIMER_ASKED(v)                                                                   \
    (THREADTIMER_ASKED_N(v, 0) + THREADTIMER_ASKED_N(v, 1) + THREADTIMER_ASKED_N(v, 2))
int threadtimer_ask(uint32_t tid, int how);
/* [sigsafe] The samples asked of threads that ended before their timer took them, since
 * the last call. */
uint64_t threadtimer_take_ended_asked(void);
uint32_t threadtimer_take_asked(uint64_t sig_data, uint32_t tid);
uint32_t threadtimer_take_asked_tid(uint32_t tid);

/* CPU time the library spent making and releasing events, and reading the threads'
 * clocks at their signals, since threadtimer_arm (in the threads themselves and in the
 * handler). */
uint64_t threadtimer_cpu_ns(void);

/* CPU time the threads used outside any event of theirs since threadtimer_arm, so never
 * sampled: each new thread's start before its timer runs (the kernel's clone, the C
 * library's set-up, the library's own work above) and the release at its exit.  No
 * Python code runs then: it is the part of the process's CPU a profile cannot show. */
uint64_t threadtimer_untimed_ns(void);

/* [sigsafe] Counts a thread that starts without a timer (threadtimer_take_lost). */
void threadtimer_count_lost(void);

/* [not sigsafe] While armed: opens on the calling thread the same steady event every
 * sampled thread has (period, signal, cookie), tagged so that threadtimer_on_signal
 * leaves it alone; calib.c measures with it what one sampling signal costs.  Returns a
 * handle for threadtimer_close_probe, or 0 (errno set). */
uintptr_t threadtimer_open_probe(void);
void threadtimer_close_probe(uintptr_t probe);

/* "perf-task-clock", or "perf-task-clock-user" where only user time may be counted. */
const char *threadtimer_name(void);

/* Threads whose timer could not be made (no slot, descriptor or locked memory left)
 * since the last call; they are not sampled. */
uint64_t threadtimer_take_lost(void);

#endif
