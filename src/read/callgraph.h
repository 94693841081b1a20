/*
 * callgraph: a profile's samples as a graph of functions and the calls between them,
 * for the exports whose consumers think in functions and call edges (pstats,
 * callgrind).  For every function: its self and total cost and how many of its frames
 * the samples held; for every call (caller, line of the call, callee): the same three
 * things; and the self cost of every line where samples were taken.
 *
 * Costs come in samples and in the microseconds those samples stand for.  Recursion is
 * counted the way a profiler's "cumulative" means it: a function (or a call edge) that
 * appears several times on one stack adds that sample to its total once, so no total
 * exceeds the profile's; `frames` counts every level, which is what a recursive call
 * count shows.  Not thread-safe; tool-side only.
 *
 * Interface: CALLGRAPH_ANY_LINE, callgraph_cost, callgraph_func, callgraph_edge,
 * callgraph_line, callgraph, callgraph_build, callgraph_free, callgraph_sort_edges.
 */
#ifndef PYPROF_CALLGRAPH_H
#define PYPROF_CALLGRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "idmap.h"
#include "profile.h"

#define CALLGRAPH_ANY_LINE INT32_MIN /* edges keyed by caller and callee only */

typedef struct callgraph_cost {
    uint64_t n;  /* samples */
    uint64_t us; /* the time they stand for */
} callgraph_cost;

typedef struct callgraph_func {
    callgraph_cost self;  /* samples taken in it */
    callgraph_cost total; /* samples with it on the stack (once per sample) */
    uint64_t frames;      /* its frames over all samples, every recursion level */
} callgraph_func;

typedef struct callgraph_edge {
    uint32_t caller, callee;
    int32_t line;         /* where the caller was (the call site), or CALLGRAPH_ANY_LINE */
    uint32_t stamp;       /* private: the last stack that counted this edge, plus one */
    callgraph_cost self;  /* samples taken in the callee right under this call */
    callgraph_cost total; /* samples with this call on the stack (once per sample) */
    uint64_t frames;      /* the call's occurrences over all samples, every level */
} callgraph_edge;

typedef struct callgraph_line {
    uint32_t func;
    int32_t line; /* -1: no line */
    callgraph_cost self;
} callgraph_line;

typedef struct callgraph {
    callgraph_func *funcs; /* p->nfuncs entries */
    callgraph_edge *edges; /* in no particular order until callgraph_sort_edges */
    size_t nedges;
    callgraph_line *lines; /* by function, then line */
    size_t nlines;
    /* Private: capacities and the (caller, line, callee) -> edge index. */
    size_t cap_edges;
    idtab index;
} callgraph;

/* Builds the graph of `p`.  With `call_lines`, calls from different lines of one caller
 * are different edges.  Returns 0, or -1 when out of memory (the graph is then empty). */
int callgraph_build(callgraph *g, const profile *p, int call_lines);

void callgraph_free(callgraph *g);

/* Orders the edges by caller, line and callee (by_callee == 0), or by callee, caller and
 * line (by_callee == 1).  The edge index is dropped: call it once the graph is built. */
void callgraph_sort_edges(callgraph *g, int by_callee);

#endif
