/*
 * trace: the spans of a loaded profile grouped into traces, each a tree that may cross
 * processes, as OSProfiler's traces are.
 *
 * Grouping.  A span belongs to the trace its base_id names (OSProfiler's id of the
 * trace's root, the same in every process the trace crossed).  A span without a
 * base_id belongs to the trace of the span it is nested in (its parent span, same
 * process), and a top-level span without one starts a trace of its own, whose id is
 * "PID.SPAN_ID" (its process id and span id, written "4242.7").
 *
 * The tree.  Within its trace a span's parent is, in this order: its parent span (same
 * process) when that is in the same trace; else the span of the trace, in any process,
 * whose trace_id is this span's parent_id (how a root span of one process, started by an
 * incoming request, hangs under the span of the process that sent it); else none: it is
 * a top-level span of the trace.  Links that would close a cycle (corrupt or reused ids)
 * are dropped.  Children are in the order they started (their wall-clock time; a span's
 * own process's start plus its start on that process's axis), ties by index.
 *
 * Interface: trace, trace_set, trace_build, trace_set_free, trace_find,
 * trace_span_unix_ns.  Tool-side only; not thread-safe.
 */
#ifndef PYPROF_TRACE_H
#define PYPROF_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

typedef struct trace {
    char *id;            /* base_id, or "PID.SPAN_ID" */
    uint32_t first_root; /* its first top-level span; the others by next_sibling */
    size_t nspans;
    uint64_t start_unix_ns; /* its earliest span's start */
    uint64_t end_unix_ns;   /* its latest span's end (an unfinished one's: its
                             * process's end of data) */
    size_t unfinished;      /* spans without a stop */
    uint64_t *pids;         /* its processes' pids, in the order first met */
    size_t npids;
} trace;

typedef struct trace_set {
    trace *traces; /* by start, then id */
    size_t ntraces;
    /* Per span of the profile (p->nspans entries): */
    uint32_t *trace_of;     /* its trace */
    uint32_t *tparent;      /* its parent in the trace's tree, or PROFILE_NO_SPAN */
    uint32_t *first_child;  /* its first child, or PROFILE_NO_SPAN */
    uint32_t *next_sibling; /* the next child of its parent (or top-level span of its
                             * trace), or PROFILE_NO_SPAN */
} trace_set;

/* Groups p's spans into traces.  Returns 0, or -1 when out of memory (*ts then empty). */
int trace_build(const profile *p, trace_set *ts);

void trace_set_free(trace_set *ts);

/* The index of the trace whose id is `id` (the first, should two processes' synthesized
 * ids be the same), or -1. */
long trace_find(const trace_set *ts, const char *id);

/* The wall-clock time of a span's start, or of its end (`end` nonzero). */
uint64_t trace_span_unix_ns(const profile *p, uint32_t span, int end);

#endif
