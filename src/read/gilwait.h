/*
 * gilwait: the GIL's share of wall-clock time, from the samples' GIL states
 * (profile_sample.gil): per thread, the samples it held the GIL, waited to take it, or
 * did neither; per stack that waited, the samples it waited and the stacks that held the
 * GIL meanwhile.
 *
 * Who held it meanwhile: the sample of another thread of the same process, taken while
 * it held the GIL, nearest in time to the waiting sample and no further than one period
 * from it (the pass that found a thread waiting sampled the holder too: the sampler's
 * thread read it, or the holder's own timer did, within a period).  A waiting sample
 * with no such holder sample is `unattributed`.
 *
 * Interface:
 *   gilwait_thread, gilwait_holder, gilwait_stack, gilwait_counts
 *   gilwait_sum(p, &c)     fills c; 0, or -1 when out of memory
 *   gilwait_counts_free(&c)
 *
 * Not thread-safe; tool-side only.
 */
#ifndef PYPROF_GILWAIT_H
#define PYPROF_GILWAIT_H

#include <stddef.h>
#include <stdint.h>

#include <pyprof/format.h>

#include "profile.h"

/* One thread's samples by GIL state (enum pyprof_gil). */
typedef struct gilwait_thread {
    uint32_t thread; /* index into profile.threads */
    uint64_t samples[PYPROF_GIL_STATES];
} gilwait_thread;

/* A stack that held the GIL while a waiting stack waited, and how many of the waiting
 * samples it covers. */
typedef struct gilwait_holder {
    uint32_t stack;
    uint64_t samples;
} gilwait_holder;

/* A stack that waited for the GIL: its waiting samples, the part with a holder found,
 * and the holders, most samples first. */
typedef struct gilwait_stack {
    uint32_t stack; /* index into profile.stacks */
    uint64_t samples, attributed;
    gilwait_holder *holders;
    size_t nholders;
} gilwait_stack;

typedef struct gilwait_counts {
    uint64_t samples[PYPROF_GIL_STATES]; /* every sample kept, by state */
    uint64_t attributed;                 /* waiting samples with a holder found */
    gilwait_thread *threads;             /* threads with a sample, as aggregate orders them */
    size_t nthreads;
    gilwait_stack *stacks; /* stacks that waited, most waiting samples first */
    size_t nstacks;
} gilwait_counts;

int gilwait_sum(const profile *p, gilwait_counts *c);
void gilwait_counts_free(gilwait_counts *c);

#endif
