/*
 * allocsample: which allocations are sampled, and what a sampled block leaves in the
 * log.  Sampling is by bytes: each thread counts down a number of bytes drawn from an
 * exponential distribution of mean `interval` (tcmalloc's way), and the allocation that
 * takes the count below zero is sampled (format.h, ALLOC, says what a sample stands for).
 * A sampled block's address goes into allocset.h, so its free is recorded too.  The
 * hooks that call this are allochook.h's.
 *
 * Interface:
 *   allocsample_configure(interval)  [not sigsafe] the mean interval in bytes (0: off);
 *                                    before the hooks are installed
 *   allocsample_interval()           [sigsafe] the interval, 0 when off
 *   allocsample_after(p, size, dom, ret)  [sigsafe] after an allocation of `size`
 *                                    bytes returned p (domain: enum pyprof_alloc_domain;
 *                                    ret: the hook's return address, where a native
 *                                    chain starts);
 *                                    inline: the countdown, then allocsample_due when
 *                                    it ran out
 *   allocsample_after_shifted(p, size, shift, dom, ret)  [sigsafe] the same for a small
 *                                    request seen inside an allocation window of duty
 *                                    2^-shift: it counts size * 2^shift, and its sample
 *                                    says the shift (format.h, AWINDOW)
 *   allocsample_window(t_ns, len_ns, planned_ns, shift, floor, flags)  [sigsafe] the
 *                                    AWINDOW record of a window that closed (times on
 *                                    the monotonic clock), or of windows paused
 *   allocsample_before_free(p)       [sigsafe] before p is given back (free, realloc,
 *                                    munmap): the FREE record when p was sampled;
 *                                    inline: the address set's filter, then
 *                                    allocsample_freed when it may hold p
 *   allocsample_stats(&s)            [sigsafe] the counters, for the footer
 *   allocsample_teardown_ns()        [sigsafe] when a sampled allocation or free first
 *                                    found the interpreter's teardown begun (ns since
 *                                    profiling started), 0 when none did
 *   allocsample_sweep()              [not sigsafe] the periodic upkeep (allochook_tick)
 *   allocsample_after_fork_child()   [not sigsafe] the child forgets the parent's blocks
 *
 * The ring record of a free, RREC_FREE in the sample ring, is rrec.h's rrec_free.
 */
#ifndef PYPROF_ALLOCSAMPLE_H
#define PYPROF_ALLOCSAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "allocset.h"

typedef struct allocsample_counts {
    uint64_t samples;    /* allocation samples committed */
    uint64_t frees;      /* FREE records committed */
    uint64_t lost;       /* allocations sampled without a record (ring full, re-entered) */
    uint64_t frees_lost; /* frees of sampled blocks without a record */
    uint64_t untracked;  /* samples whose block the address set could not hold */
    uint64_t live;       /* sampled blocks followed now */
} allocsample_counts;

void allocsample_configure(uint64_t interval);
uint64_t allocsample_interval(void);
/* This thread's countdown (see allocsample.c); the fast path is inline in every hook. */
extern __thread int64_t allocsample_left __attribute__((tls_model("initial-exec")));
void allocsample_due(const void *p, size_t size, int shift, int domain, uintptr_t ret);

static inline void allocsample_after_shifted(const void *p, size_t size, int shift, int domain,
                                             uintptr_t ret)
{
    int64_t left = allocsample_left - ((int64_t)size << shift);
    if (__builtin_expect(left >= 0, 1)) {
        allocsample_left = left;
        return;
    }
    allocsample_due(p, size, shift, domain, ret);
}

static inline void allocsample_after(const void *p, size_t size, int domain, uintptr_t ret)
{
    allocsample_after_shifted(p, size, 0, domain, ret);
}
void allocsample_window(uint64_t t_ns, uint64_t len_ns, uint64_t planned_ns, int shift,
                        int floor_shift, int flags);
void allocsample_freed(const void *p);

static inline void allocsample_before_free(const void *p)
{
    if (allocset_may_hold((uintptr_t)p))
        allocsample_freed(p);
}
void allocsample_stats(allocsample_counts *c);
uint64_t allocsample_teardown_ns(void);
void allocsample_sweep(void);
void allocsample_after_fork_child(void);

#endif
