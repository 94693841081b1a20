/*
 * aggregate: sums, orders and derived numbers over a loaded profile, for every view that
 * needs them; profile.c only loads.
 *
 * Interface:
 *   time        aggregate_sample_us, aggregate_process_duration, aggregate_duration
 *   drops       aggregate_process_dropped, aggregate_dropped
 *   orders      aggregate_samples_by_thread, aggregate_threads_by_samples,
 *               aggregate_sort_funcs
 *   stacks      aggregate_max_depth
 *   counts      aggregate_stack_costs; aggregate_counts (aggregate_line),
 *               aggregate_funcs, aggregate_counts_free
 *
 * Not thread-safe; tool-side only.
 */
#ifndef PYPROF_AGGREGATE_H
#define PYPROF_AGGREGATE_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

/* The time in microseconds sample `s` stands for: its CPU time (the period in cpu mode),
 * else its process's period. */
uint64_t aggregate_sample_us(const profile *p, const profile_sample *s);

/* Seconds covered by process `i`: the footer's duration, else the time of its last timed
 * record; clipped to the --from/--to window. */
double aggregate_process_duration(const profile *p, size_t i);

/* Wall-clock span in seconds from the first process's start to the last one's end. */
double aggregate_duration(const profile *p);

/* Samples lost by process `i`: every drop reason except NOT_READY and NO_PYTHON, which are
 * signals that had nothing to sample rather than samples lost. */
uint64_t aggregate_process_dropped(const profile *p, size_t i);

/* The same, summed over every process. */
uint64_t aggregate_dropped(const profile *p);

/* The indices of p's samples ordered by thread, then by time, then by position in the
 * log: a malloc'ed array of p->nsamples entries, or NULL when out of memory. */
uint32_t *aggregate_samples_by_thread(const profile *p);

/* The indices of p's threads by process, then busiest first, then by tid: a malloc'ed
 * array of p->nthreads entries, or NULL when out of memory. */
uint32_t *aggregate_threads_by_samples(const profile *p);

/* The most frames any stack of p has (a stack no sample kept included); 0 without any. */
uint32_t aggregate_max_depth(const profile *p);

/* Per stack: the samples taken with it and the microseconds they stand for.  Fills two
 * calloc'ed arrays of p->nstacks entries; returns 0 or -1 (out of memory). */
int aggregate_stack_costs(const profile *p, uint64_t **count, uint64_t **us);

/* Per-function and per-line sample counts over every sample kept. */
typedef struct aggregate_line {
    int32_t line;
    uint64_t self;
} aggregate_line;

typedef struct aggregate_counts {
    uint64_t *stack_weight; /* samples per stack */
    uint64_t *self;         /* per function: samples where it is the innermost frame */
    uint64_t *total;        /* per function: samples where it appears at least once */
    aggregate_line *lines;  /* per function, by self descending: */
    size_t *line_first;     /* lines[line_first[f] .. line_first[f + 1]) */
} aggregate_counts;

/* Computes the counts.  Returns 0, or -1 when out of memory. */
int aggregate_funcs(const profile *p, aggregate_counts *agg);

void aggregate_counts_free(aggregate_counts *agg);

/* Fills `order` (p->nfuncs entries) with the functions that appear in some sample,
 * sorted by `key` (agg->self or agg->total) descending, ties by the other count, then by
 * name; returns how many there are. */
size_t aggregate_sort_funcs(const profile *p, const aggregate_counts *agg, const uint64_t *key,
                            uint32_t *order);

#endif
