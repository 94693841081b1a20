/*
 * allocload: the sampled allocations of a profile as its logs load.  Every ALLOC and FREE
 * record read is kept here (an ALLOC with what it stands for, its thread and stack in the
 * model's indexes, and whether the --thread and --from/--to filters keep it); once the
 * logs of a load call are read, allocload_resolve matches every FREE read so far with its
 * allocation (profile.h says how) and makes profile.allocs anew from the allocations the
 * filters keep, --span included, with each process's counts.  Matching starts over at
 * each call, over everything read, so the result does not depend on the order the files
 * of a series were loaded in.  Every AWINDOW record read is kept too, whatever the
 * filters; allocload_resolve sums each process's windows (profile_awindows).  An
 * allocation sampled inside a window is weighed by its own shift as it loads
 * (allocs_estimate_shifted).  profile.c calls in here; tool-side only.
 *
 * Interface: allocload, allocload_entry, allocload_free_entry, allocload_window,
 * allocload_alloc, allocload_set_stack, allocload_free, allocload_awindow,
 * allocload_resolve, allocload_clear.
 */
#ifndef PYPROF_ALLOCLOAD_H
#define PYPROF_ALLOCLOAD_H

#include <stddef.h>
#include <stdint.h>

#include <pyprof/reader.h>

#include "profile.h"

/* An ALLOC as read. */
typedef struct allocload_entry {
    profile_alloc a; /* freed and free_us are allocload_resolve's */
    uint64_t address;
    uint64_t seq, pos; /* its file's seq, and the record's place in that file */
    uint8_t loaded;    /* the thread and time filters keep it */
} allocload_entry;

/* A FREE as read. */
typedef struct allocload_free_entry {
    uint32_t process;
    int64_t t_us; /* on the process's axis */
    uint64_t address;
    uint64_t seq, pos;
} allocload_free_entry;

/* An AWINDOW as read. */
typedef struct allocload_window {
    uint32_t process;
    int64_t t_us; /* on the process's axis */
    uint64_t len_us;
    uint8_t shift, floor_shift;
    uint8_t flags; /* PYPROF_AWINDOW_F_PAUSED and _WRAPPED (the other bits are left out) */
    uint64_t seq, pos;
} allocload_window;

/* Zeroed: nothing read. */
typedef struct allocload {
    allocload_entry *allocs;
    size_t nallocs, cap_allocs;
    allocload_free_entry *frees;
    size_t nfrees, cap_frees;
    allocload_window *windows; /* by (process, time, seq, pos) once resolved */
    size_t nwindows, cap_windows;
} allocload;

/* An ALLOC of process `proc` at t_us on its axis, by model thread `thread` (IDMAP_EXCLUDED:
 * a thread the filter excludes), with model stack `stack`, read at record `pos` of the
 * file of seq `seq` whose header gives `interval`; `loaded`: the thread and time filters
 * keep it.  Returns its index here (for allocload_set_stack), or -1 when out of memory. */
long allocload_alloc(allocload *al, uint32_t proc, uint32_t thread, uint32_t stack,
                     const pyprof_alloc_rec *r, int64_t t_us, uint64_t interval, uint64_t seq,
                     uint64_t pos, int loaded);

/* Replaces allocation `i`'s stack (its native stack merged in). */
void allocload_set_stack(allocload *al, size_t i, uint32_t stack);

/* A FREE of process `proc` at t_us on its axis, read at record `pos` of the file of seq
 * `seq`.  0, or -1 when out of memory. */
int allocload_free(allocload *al, uint32_t proc, const pyprof_free_rec *r, int64_t t_us,
                   uint64_t seq, uint64_t pos);

/* An AWINDOW of process `proc` at t_us on its axis, read at record `pos` of the file of
 * seq `seq`.  0, or -1 when out of memory. */
int allocload_awindow(allocload *al, uint32_t proc, const pyprof_awindow_rec *r, int64_t t_us,
                      uint64_t seq, uint64_t pos);

/* Once a load call's logs are read (and its spans resolved): matches the frees, then
 * makes p->allocs and each process's allocs, frees_unmatched and awin (its windows
 * summed; the pauses' end is the process's end_us).  0, or -1 when out of memory. */
int allocload_resolve(profile *p, allocload *al);

void allocload_clear(allocload *al);

#endif
