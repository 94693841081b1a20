/*
 * clock: nanosecond readings of the POSIX clocks, and deadlines for the timed waits of
 * the library's threads, and the wait for in-flight calls to leave.  clock_gettime is on
 * signal-safety(7), so clock_ns may be called from a signal handler.
 */
#ifndef PYPROF_CLOCK_H
#define PYPROF_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

/* [sigsafe] Clock `c` in nanoseconds (0 if it cannot be read). */
static inline uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    if (clock_gettime(c, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* [sigsafe] The CPU clock of thread `tid` of this process (the scheduler's account of
 * its CPU time), read from any of its threads: the clock id pthread_getcpuclockid makes,
 * the tid's complement shifted past the clock type (CPUCLOCK_SCHED, 2) and the
 * per-thread bit (4).  0 when the thread is gone. */
static inline uint64_t clock_thread_ns(uint32_t tid)
{
    return clock_ns((clockid_t)((~tid << 3) | 6u));
}

/* [sigsafe] CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t clock_mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

/* CLOCK_MONOTONIC `ns` nanoseconds from now, for sem_clockwait and the like. */
static inline struct timespec clock_mono_deadline(uint64_t ns)
{
    uint64_t t = clock_mono_ns() + ns;
    struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
    return ts;
}

/* [not sigsafe] Waits until `*count` is at most `keep` (the calls in progress that a
 * gate just closed: signal handlers, span calls), sleeping 50 us between looks, for at
 * most `max_ns` by the clock -- not by a count of sleeps, which the caller's timer
 * slack stretches.  Returns 1 when they left, 0 when it gave up. */
static inline int clock_wait_at_most(_Atomic int *count, int keep, uint64_t max_ns)
{
    uint64_t give_up_ns = clock_mono_ns() + max_ns;
    while (atomic_load(count) > keep) {
        if (clock_mono_ns() >= give_up_ns)
            return 0;
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
    return 1;
}

#endif
