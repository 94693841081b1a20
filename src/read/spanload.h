/*
 * spanload: the spans of a profile as its logs load.  A SPAN_START becomes a span of the
 * model at once; a SPAN_STOP waits until the logs of a load call are read (its start may
 * come later, in another file of the series), and is then matched to its start by span id
 * within the process.  A stop whose start is not loaded stays pending across load calls
 * (a later call may load it) and is counted unmatched meanwhile; the stop of a span the
 * --thread filter left out goes with it.  Once matched: each process's end (end_us), the
 * unfinished spans' stops at it, every span's parent and depth (cycles cut), and the
 * --span filter over the samples.  profile.c calls in here; tool-side only.
 *
 * Interface: spanload, spanload_start, spanload_stop, spanload_resolve, spanload_filter,
 * spanload_break_cycles, spanload_free.
 */
#ifndef PYPROF_SPANLOAD_H
#define PYPROF_SPANLOAD_H

#include <stddef.h>
#include <stdint.h>

#include <pyprof/reader.h>

#include "profile.h"

/* A SPAN_STOP not yet matched to its start. */
typedef struct spanload_stop_rec {
    uint32_t process, thread; /* thread: the model's, or IDMAP_EXCLUDED */
    uint64_t id;
    int64_t t_us; /* on the process's axis */
    char *info;
} spanload_stop_rec;

/* A span the --thread filter left out, so that its stop is not taken for a stray one. */
typedef struct spanload_dropped {
    uint32_t process;
    uint64_t id;
} spanload_dropped;

/* Zeroed: no pending stop. */
typedef struct spanload {
    spanload_stop_rec *stops;
    size_t nstops, cap_stops;
    spanload_dropped *dropped;
    size_t ndropped, cap_dropped;
} spanload;

/* A SPAN_START at t_us on process `proc`'s axis, started by `thread` (IDMAP_EXCLUDED: a
 * thread the filter excludes, so the span is left out): a span of p, unfinished until
 * spanload_resolve.  0, or -1 when out of memory. */
int spanload_start(profile *p, spanload *sl, uint32_t proc, uint32_t thread,
                   const pyprof_span_start_rec *s, int64_t t_us);

/* A SPAN_STOP at t_us, ended by `thread` (or IDMAP_EXCLUDED): pending.  0, or -1. */
int spanload_stop(spanload *sl, uint32_t proc, uint32_t thread, const pyprof_span_stop_rec *s,
                  int64_t t_us);

/* Once a load call's logs are read: matches the pending stops with their starts, sets
 * each process's end_us, unfinished spans' ends, parents and depths, the counts of
 * unfinished spans and unmatched stops.  0, or -1 when out of memory. */
int spanload_resolve(profile *p, spanload *sl);

/* --span (p->filter.span_names): keeps only the samples inside spans of those names, the
 * threads' and processes' sample counts with them.  0, or -1 when out of memory. */
int spanload_filter(profile *p);

/* A forest given as parent[i] (an index below n, or PROFILE_NO_SPAN for a root), made
 * acyclic: a link that closes a cycle is dropped (set to PROFILE_NO_SPAN).  Fills
 * depth[i] (roots 0) when `depth` is not NULL.  0, or -1 when out of memory (nothing
 * changed). */
int spanload_break_cycles(uint32_t *parent, size_t n, uint32_t *depth);

void spanload_free(spanload *sl);

#endif
