/*
 * top_model: what `pyprof top` computes from the samples it reads — the functions (keyed
 * by name, file and first line, so they carry over from one file of a series to the
 * next), the stacks of the current file summed up, the samples of the window, every
 * function's cumulative own and total time, its counts in the window and the order of
 * the rows.  The live log's ids come from livelog.h; nothing here reads a file or draws.
 *
 * Interface: top_model_func, top_model, top_model_init, top_model_file_start,
 * top_model_file_end, top_model_add_sample, top_model_count_window, top_model_rows,
 * top_model_free.
 */
#ifndef PYPROF_TOP_MODEL_H
#define PYPROF_TOP_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <pyprof/reader.h>

#include "read/functab.h"
#include "read/idmap.h"
#include "read/profile.h"

#include "livelog.h"

/* A function's counts, across all the files read (its name, file and line: fn). */
typedef struct top_model_func {
    uint64_t own_us, total_us;   /* cumulative */
    uint64_t win_own, win_total; /* samples in the window */
} top_model_func;

/* A stack of the current file, summed up, and a sample of the window (top_model.c). */
typedef struct top_model_stack top_model_stack;
typedef struct top_model_recent top_model_recent;

typedef struct top_model {
    double interval_s; /* the window's length */

    /* the file being read: its time axis, and its ids */
    int have_axis;
    uint64_t offset_us, start_unix_ns; /* its header's */
    idmap code_func;                   /* code_id -> function, this file */
    idmap stack_sum;                   /* stack_id -> top_model_stack, this file */

    /* across files */
    profile_func *fn; /* the functions, interned in func_tab */
    size_t nfuncs, cfn;
    functab func_tab;
    top_model_func *funcs; /* their counts, as many */
    size_t cfuncs;
    top_model_stack *stacks;
    size_t nstacks, cstacks;
    top_model_recent *recent;
    size_t rhead, nrecent, crecent;
    int64_t tmax_us;
    uint64_t samples;
} top_model;

/* Makes a zeroed model empty, with a window of one second. */
void top_model_init(top_model *m);

/* A file starts, whose header gives `offset_us` (its start on the series' axis) and
 * `start_unix_ns`; `new_series` when it is of another series (a new window, another
 * process) than the one before: its time axis is another, and the window starts over. */
void top_model_file_start(top_model *m, uint64_t offset_us, uint64_t start_unix_ns,
                          int new_series);

/* The current file is closed: its ids mean nothing any more. */
void top_model_file_end(top_model *m);

/* A sample of the current file, whose ids are in `log`: counted into its functions and
 * kept in the window (what falls out of the window is dropped).  Out of memory: counted
 * in `samples` only. */
void top_model_add_sample(top_model *m, const livelog *log, const pyprof_sample_rec *s);

/* The window's samples counted into the functions' win_own and win_total (the window
 * ends at the newest sample, or slides on with the clock when none arrive); returns how
 * many, and *nthreads the threads among them. */
uint64_t top_model_count_window(top_model *m, size_t *nthreads);

/* The rows to show: the functions with own time or on the stack in the window, sorted
 * by the window's own samples, then own time, the window's total samples, total time
 * and name.  An array of *n indices into fn and funcs (free it), or NULL when out of
 * memory. */
uint32_t *top_model_rows(const top_model *m, size_t *n);

void top_model_free(top_model *m);

#endif
