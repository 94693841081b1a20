/*
 * aggregate: sums over a loaded profile that more than one view needs: what a sample
 * stands for, samples in thread order, the cost of each distinct stack.
 */
#ifndef PYPROF_AGGREGATE_H
#define PYPROF_AGGREGATE_H

#include <stdint.h>

#include "profile.h"

/* The time in microseconds sample `s` stands for: its CPU time (the period in cpu mode),
 * else its process's period. */
uint64_t aggregate_sample_us(const profile *p, const profile_sample *s);

/* The indices of p's samples ordered by thread, then by time, then by position in the
 * log: a malloc'ed array of p->nsamples entries, or NULL when out of memory. */
uint32_t *aggregate_samples_by_thread(const profile *p);

/* Per stack: the samples taken with it and the microseconds they stand for.  Fills two
 * calloc'ed arrays of p->nstacks entries; returns 0 or -1 (out of memory). */
int aggregate_stack_costs(const profile *p, uint64_t **count, uint64_t **us);

#endif
