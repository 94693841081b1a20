/*
 * compare: what changed between two profiles, function by function, and whether each
 * change is more than sampling alone explains.  `pyprof diff` prints it.
 *
 * A function's time on one side is what its samples stand for (aggregate_sample_us:
 * CPU time in cpu mode, thread time in wall mode), self (innermost frame) and total (on
 * the stack).  Functions are matched by kind, file and name, and by first line where a
 * name occurs more than once in a file; a function found on one side only is matched
 * with nothing.
 *
 * The noise model.  Samples fall on a function as Poisson counts: a time t made of n
 * samples of weight w = t / n has variance w t.  If the function's rate did not change,
 * both sides estimate one time T = (t_base + t_new) / 2, so the difference has variance
 * (w_base + w_new) T and z = (t_new - t_base) / sqrt((w_base + w_new) T); with equal
 * periods this is (n - b) / sqrt(n + b).  A change is flagged when |z| >= COMPARE_Z
 * (about 6e-5 two-sided per test: a few hundred functions twice each stay near zero
 * false flags) and it is at least COMPARE_MIN_RATIO of the larger side: two runs of one
 * program also differ by what the machine did to them, which no sampling model holds
 * (three runs of the same fixed work, 1.5 s of CPU at 1 ms, with both cores busy with
 * other programs, differed by 0.8-3.3 %).
 *
 * Interface:
 *   compare_profiles, compare_free     the rows
 *   compare_tree                       both sides' call trees merged, per node each
 *                                      side's time (a differential flame graph)
 *   compare_z, compare_flagged         the noise model on its own (unit-tested)
 *
 * Not thread-safe; tool-side only.
 */
#ifndef PYPROF_COMPARE_H
#define PYPROF_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

#define COMPARE_Z 4.0
#define COMPARE_MIN_RATIO 0.10
#define COMPARE_NONE UINT32_MAX /* no such function on that side */

/* Flags of a row: which of its changes are beyond the noise. */
#define COMPARE_SELF 1u
#define COMPARE_TOTAL 2u

/* One function on one side. */
typedef struct compare_side {
    uint64_t self_n, total_n; /* samples */
    double self_us, total_us; /* what they stand for */
} compare_side;

typedef struct compare_row {
    uint32_t func[2]; /* index into base's, new's funcs, or COMPARE_NONE */
    compare_side side[2];
    double self_z, total_z; /* new against base; 0 when neither side has samples */
    unsigned flags;         /* COMPARE_SELF | COMPARE_TOTAL */
} compare_row;

typedef struct compare_result {
    compare_row *rows; /* flagged first, each part by its larger change (self or total) */
    size_t nrows;
    uint64_t samples[2]; /* each side's samples */
    double us[2];        /* and what they stand for */
    size_t nflagged;     /* rows with a flag */
} compare_result;

/* Compares `base` (side 0) with `nw` (side 1).  Returns 0, or -1 when out of memory
 * (then *out is empty). */
int compare_profiles(const profile *base, const profile *nw, compare_result *out);

void compare_free(compare_result *r);

/* A node of the merged call tree: the call of function `row` (an index into the
 * result's rows) from node `parent` (node 0 is the root: row and parent COMPARE_NONE).
 * Per side, the samples with this path on the stack and their time. */
typedef struct compare_node {
    uint32_t parent, row;
    uint64_t n[2];
    double us[2];
} compare_node;

/* The call trees of `base` and `nw` merged by function (the rows of `r`, which
 * compare_profiles made from these two), in an array where a parent comes before its
 * children.  Returns 0 with *nodes (malloc'ed) and *nnodes, or -1 when out of memory. */
int compare_tree(const profile *base, const profile *nw, const compare_result *r,
                 compare_node **nodes, size_t *nnodes);

/* z of a change from (t0 microseconds in n0 samples) to (t1 in n1), as above; 0 when
 * both are empty. */
double compare_z(double t0, uint64_t n0, double t1, uint64_t n1);

/* 1 when a change from t0 (n0 samples) to t1 (n1) is flagged: |z| >= COMPARE_Z and
 * |t1 - t0| >= COMPARE_MIN_RATIO x max(t0, t1). */
int compare_flagged(double t0, uint64_t n0, double t1, uint64_t n1);

#endif
