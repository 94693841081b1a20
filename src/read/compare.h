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
 * Memory (compare_profiles_memory): the same rows from the allocation samples (allocs.h),
 * a function's measure being the bytes allocated in it (self) or under it (total), or the
 * part of them still in use at the end.  The samples of a function are Poisson counts as
 * above, but each stands for its own number of bytes w (size / p, allocs.h): the estimate
 * is a compound-Poisson sum, whose variance is estimated by the sum of w^2 over its samples.
 * If the function did not change, both sides estimate one amount and each side's variance
 * is about the mean of the two sums, so the difference has variance v_base + v_new and
 * z = (b_new - b_base) / sqrt(v_base + v_new): with equal weights w, the CPU formula above
 * again.  Neither side is scaled (as for time: a function's change is its own, not its
 * share's).  The sum of w^2 overstates the sampling noise of blocks near or above the
 * sampling interval (a block of size x is missed with probability 1 - p, so the exact
 * variance of its term is w (w - x), nought for blocks always sampled): such blocks are
 * treated as if they were counted, which keeps z finite and errs towards not flagging.
 * Flagged as above: |z| >= COMPARE_Z and at least COMPARE_MIN_RATIO of the larger side.
 *
 * Interface:
 *   compare_profiles, compare_free     the rows
 *   compare_profiles_memory            the rows of allocated or in-use bytes
 *   compare_tree                       both sides' call trees merged, per node each
 *                                      side's time (a differential flame graph)
 *   compare_z, compare_flagged         the noise model on its own (unit-tested)
 *   compare_z_memory, compare_flagged_memory
 *                                      and the memory one
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
    uint64_t self_n, total_n;   /* samples */
    double self_us, total_us;   /* what they stand for (memory: bytes, not microseconds) */
    double self_var, total_var; /* memory: the sum of their weights squared (else 0) */
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
    double us[2];        /* and what they stand for (memory: bytes) */
    size_t nflagged;     /* rows with a flag */
    int memory;          /* 0: time; 1: compare_profiles_memory's */
    int by;              /* and its measure, ALLOCS_BY_ALLOC or ALLOCS_BY_INUSE */
} compare_result;

/* Compares `base` (side 0) with `nw` (side 1).  Returns 0, or -1 when out of memory
 * (then *out is empty). */
int compare_profiles(const profile *base, const profile *nw, compare_result *out);

/* The same from the allocation samples: the bytes allocated (by ALLOCS_BY_ALLOC) or in
 * use at the end (ALLOCS_BY_INUSE, the samples counted being those in use).  0, or -1
 * when out of memory (then *out is empty). */
int compare_profiles_memory(const profile *base, const profile *nw, int by,
                            compare_result *out);

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
 * compare_profiles made from these two: not compare_profiles_memory), in an array where a
 * parent comes before its children.  Returns 0 with *nodes (malloc'ed) and *nnodes, or -1 when
 * out of memory. */
int compare_tree(const profile *base, const profile *nw, const compare_result *r,
                 compare_node **nodes, size_t *nnodes);

/* z of a change from (t0 microseconds in n0 samples) to (t1 in n1), as above; 0 when
 * both are empty. */
double compare_z(double t0, uint64_t n0, double t1, uint64_t n1);

/* 1 when a change from t0 (n0 samples) to t1 (n1) is flagged: |z| >= COMPARE_Z and
 * |t1 - t0| >= COMPARE_MIN_RATIO x max(t0, t1). */
int compare_flagged(double t0, uint64_t n0, double t1, uint64_t n1);

/* z of a change in bytes from b0 (its samples' squared weights summing to v0) to b1
 * (v1): (b1 - b0) / sqrt(v0 + v1); 0 when v0 + v1 is 0. */
double compare_z_memory(double b0, double v0, double b1, double v1);

/* 1 when that change is flagged: |z| >= COMPARE_Z and |b1 - b0| >= COMPARE_MIN_RATIO x
 * max(b0, b1). */
int compare_flagged_memory(double b0, double v0, double b1, double v1);

#endif
