/*
 * spans: what the spans of a loaded profile hold.  A span's samples are the samples of the
 * thread that started it taken at start <= t < stop; an unfinished span (no stop in the
 * logs) runs to the end of its process's data, so it holds every later sample of its
 * thread.  Nested spans each count the samples of the spans inside them (inclusive, as
 * their durations are).  This module finds them (by binary search in the samples sorted
 * by thread and time), sums their cost, ranks their functions, and marks the samples the
 * --span filter keeps.  Pure over a loaded profile; tool-side only.
 *
 * Interface: spans_contains, spans_index, spans_index_build, spans_index_free,
 * spans_samples, spans_mask, spans_func, spans_cost, spans_top_funcs.
 */
#ifndef PYPROF_SPANS_H
#define PYPROF_SPANS_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

/* Whether sample `x` is inside span `s` (the rule above). */
int spans_contains(const profile_span *s, const profile_sample *x);

/* The samples of a profile by thread, then time, then position in the log. */
typedef struct spans_index {
    uint32_t *order;      /* sample indexes */
    size_t *thread_first; /* thread t's: order[thread_first[t] .. thread_first[t + 1]) */
} spans_index;

/* Builds the index of p's samples.  Returns 0, or -1 when out of memory. */
int spans_index_build(const profile *p, spans_index *ix);
void spans_index_free(spans_index *ix);

/* The samples of span `span`: ix->order[*first .. *end). */
void spans_samples(const profile *p, const spans_index *ix, uint32_t span, size_t *first,
                   size_t *end);

/* Sets keep[i] (p->nsamples entries, cleared first) to 1 for each sample inside a span
 * whose name is one of names[0 .. n).  Returns 0, or -1 when out of memory. */
int spans_mask(const profile *p, const char *const *names, size_t n, uint8_t *keep);

/* A span's cost: its samples and the microseconds they stand for
 * (aggregate_sample_us). */
typedef struct spans_cost {
    uint64_t samples, us;
} spans_cost;

/* One function of a span's top list: the samples taken in it (its self samples) and
 * the microseconds they stand for. */
typedef struct spans_func {
    uint32_t func;
    uint64_t samples, self_us;
} spans_func;

/* The span's cost into *cost, and its `max` busiest functions by self samples (then
 * self time, then name) into out[]: returns how many, or -1 when out of memory.  A
 * sample whose stack has no frame counts in the cost only. */
long spans_top_funcs(const profile *p, const spans_index *ix, uint32_t span, size_t max,
                     spans_func *out, spans_cost *cost);

#endif
