/*
 * allocs: what the sampled allocations of a loaded profile stand for.  Allocations are
 * sampled by bytes (format.h, ALLOC): one of X bytes was sampled with probability
 * p = 1 - exp(-X / I), I the mean interval of its log, so it stands for X / p bytes and
 * 1 / p allocations, an unbiased estimate of what was allocated for every size.  This
 * module gives that estimate, tells which allocations are in use at the end (tracked, and
 * not freed before the end of the window the filters keep) or at a given time, finds the
 * peak of the estimated heap, and sums all three per stack, per function (self: the
 * innermost frame; total: anywhere on the stack, once per stack however often it
 * recurses, as CPU totals are), per process, per domain and overall.
 *
 * The peak: the estimated live heap at time T is the sum of what the tracked allocations
 * kept stand for (allocs_estimate's bytes) over those allocated at or before T and not
 * freed at or before T.  It is taken over the whole profile as filtered, every process
 * summed, on one axis: each process's times shifted by its start (start_unix_ns) past the
 * earliest process's start, as the HTML page's heap line is; a profile of one process is
 * on that process's own axis.  The peak is the highest value of it (it changes only at
 * allocations and frees, so it is reached at some allocation's time), the first time it
 * is reached; the allocations "in use at the peak" are those counted in it.
 *
 * Pure over a loaded profile; tool-side only.
 *
 * Interface: allocs_estimate, allocs_estimate_shifted, allocs_in_use, allocs_before_teardown,
 * ALLOCS_END, allocs_in_use_at, allocs_process_offset_us, allocs_peak, allocs_find_peak,
 * allocs_cost, allocs_counts, allocs_sum, allocs_counts_free, ALLOCS_BY_ALLOC, ALLOCS_BY_INUSE,
 * ALLOCS_BY_PEAK, allocs_key, allocs_sort_funcs, allocs_stack_weights, allocs_domain_name.
 */
#ifndef PYPROF_ALLOCS_H
#define PYPROF_ALLOCS_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

/* What a sampled allocation of `size` bytes stands for, sampled at a mean interval of
 * `interval` bytes: *bytes = size / p and *objects = 1 / p with p = -expm1(-size /
 * interval).  Size 0 (p -> 0) takes the limits where there is one: *bytes = interval (the
 * limit of size / p) and *objects = 1 (1 / p has none; a block of no bytes is counted as
 * itself).  Interval 0 (a log that did not say) counts every allocation as itself: size
 * bytes and one allocation. */
void allocs_estimate(uint64_t size, uint64_t interval, double *bytes, double *objects);

/* What an allocation of `size` bytes sampled inside an allocation window of shift `shift`
 * stands for (format.h, AWINDOW): what one of size * 2^shift bytes stands for
 * (allocs_estimate's *bytes), and 2^shift times its allocations.  Shift 0 is allocs_estimate; a
 * size * 2^shift past 64 bits is taken as the real number it is. */
void allocs_estimate_shifted(uint64_t size, unsigned shift, uint64_t interval, double *bytes,
                             double *objects);

/* Whether allocation `a` is in use at the end: tracked (not PYPROF_ALLOC_F_UNTRACKED) and
 * not freed, or freed only after --to (the window's end; a free at --to ends it).
 * Without --to, in a process whose log saw the interpreter's teardown begin, the end is
 * the program's: made before the teardown and not freed before it (what the teardown
 * freed, the modules' objects, was still in use when the program finished). */
int allocs_in_use(const profile *p, const profile_alloc *a);

/* 1 when "in use at the end" is the program's end before the interpreter's teardown
 * in every process (no --to, and each log saw its teardown). */
int allocs_before_teardown(const profile *p);

/* The time allocs_in_use_at takes for the end of the window. */
#define ALLOCS_END INT64_MAX

/* Where process `process`'s axis starts on the common axis of the peak (see above), in
 * microseconds past the earliest process's start: 0 for the earliest, and for every
 * process when some process's start is unknown (0). */
int64_t allocs_process_offset_us(const profile *p, uint32_t process);

/* Whether allocation `a` is in use at time t_us of the common axis: tracked, allocated at
 * or before t_us and not freed at or before t_us.  ALLOCS_END: at the end, which is
 * allocs_in_use. */
int allocs_in_use_at(const profile *p, const profile_alloc *a, int64_t t_us);

/* The peak of the estimated live heap (see above). */
typedef struct allocs_peak {
    int found;      /* 0: no tracked allocation kept, so no peak (the rest 0) */
    int64_t t_us;   /* when, on the common axis */
    double t_s;     /* the same in seconds: from the earliest process's start */
    double bytes;   /* the estimated heap then */
    double objects; /* and the allocations it holds */
    uint64_t samples;
} allocs_peak;

/* Finds the peak over the allocations kept.  0, or -1 when out of memory. */
int allocs_find_peak(const profile *p, allocs_peak *pk);

/* A sum of allocations: how many samples, what they stand for, and the part of them in
 * use at the end and at the peak. */
typedef struct allocs_cost {
    uint64_t samples;
    double alloc_bytes, alloc_objects;
    uint64_t inuse_samples;
    double inuse_bytes, inuse_objects;
    uint64_t peak_samples;
    double peak_bytes, peak_objects;
} allocs_cost;

typedef struct allocs_counts {
    allocs_cost *stack;   /* per stack of the profile */
    allocs_cost *self;    /* per function: allocations where it is the innermost frame */
    allocs_cost *total;   /* per function: allocations with it anywhere on the stack */
    allocs_cost *process; /* per process */
    allocs_cost domain[PYPROF_ALLOC_DOMAINS];
    allocs_cost all;
    uint64_t untracked;      /* allocations whose free is not followed (never in use) */
    uint64_t freed;          /* allocations freed before the end (of the window) */
    uint64_t teardown_freed; /* of those in use at the program's end (before the
                              * interpreter's teardown), the ones the teardown freed */
    allocs_peak peak;        /* the peak the peak_* parts are in use at */
} allocs_counts;

/* Finds the peak and sums every allocation kept.  Returns 0, or -1 when out of memory (nothing
 * to free). */
int allocs_sum(const profile *p, allocs_counts *c);

void allocs_counts_free(allocs_counts *c);

/* The measures functions and stacks are ordered and weighed by. */
#define ALLOCS_BY_ALLOC 0 /* bytes allocated */
#define ALLOCS_BY_INUSE 1 /* bytes in use at the end */
#define ALLOCS_BY_PEAK 2  /* bytes in use at the peak */

/* The measure `by` of a cost, in bytes. */
double allocs_key(const allocs_cost *c, int by);

/* Fills `order` (p->nfuncs entries) with the functions on some allocation's stack,
 * sorted by measure `by` of their self (or with `total`, their total) cost descending,
 * ties by the other of self and total, then by samples, then by name, file and line;
 * returns how many there are. */
size_t allocs_sort_funcs(const profile *p, const allocs_counts *c, int by, int total,
                         uint32_t *order);

/* Per stack, measure `by` rounded to whole bytes, for the call tree: a calloc'ed array
 * of p->nstacks entries (at least one), or NULL when out of memory. */
uint64_t *allocs_stack_weights(const profile *p, const allocs_counts *c, int by);

/* The name of an enum pyprof_alloc_domain: "malloc", "pyobject", "pymem", "pyraw",
 * "mmap", or "unknown". */
const char *allocs_domain_name(int domain);

#endif
