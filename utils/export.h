/*
 * export: the file formats `pyprof export` writes, one writer per format in
 * utils/export_FORMAT.c, and the few helpers they share (export_common.c, below the
 * writers: cmd_export.c calls the writers, the writers call the helpers).  A writer turns
 * a loaded, filtered profile into its format on an open stream; cmd_export.c owns the
 * command line, the output file and its errors.
 *
 * Every writer returns 0, or -1 after printing one line (cli_error) when it could not
 * finish (out of memory).  Write errors are left to the caller, which checks the stream
 * once at the end.
 */
#ifndef PYPROF_EXPORT_H
#define PYPROF_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "read/aggregate.h"
#include "read/profile.h"

typedef struct export_opts {
    int lines;  /* folded: frames carry the line executing in them, not the first line */
    int memory; /* --memory: the sampled allocations instead of the samples (folded,
                 * speedscope, pprof) */
    int by;     /* its ALLOCS_BY_*: folded's and speedscope's values */
    int by_set; /* --memory=alloc|inuse, not plain --memory: pprof's default sample type is
                 * then `by`'s, else inuse_space */
} export_opts;

int export_folded(FILE *out, const profile *p, const export_opts *o);
int export_pstats(FILE *out, const profile *p, const export_opts *o);
int export_callgrind(FILE *out, const profile *p, const export_opts *o);
int export_speedscope(FILE *out, const profile *p, const export_opts *o);
int export_pprof(FILE *out, const profile *p, const export_opts *o);
int export_chrome(FILE *out, const profile *p, const export_opts *o);

/* Prints "out of memory" and returns -1, for writers' failure paths. */
int export_oom(void);

/* --memory: per stack, the bytes its sampled allocations stand for by measure `by`
 * (ALLOCS_BY_*; allocs_stack_weights), p->nstacks entries; NULL when out of memory. */
uint64_t *export_memory_weights(const profile *p, int by);

#endif
