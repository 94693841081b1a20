/*
 * report: what the three reports of `pyprof report` share — the samples (cmd_report.c),
 * --memory (report_memory.c) and --gil (report_gil.c): the options they read, a
 * process's first line in the text reports, and the pieces of the JSON ones.
 *
 * Interface: report_opts, report_print_process, report_json_u64_or_null,
 * report_json_process_ident.
 */
#ifndef PYPROF_REPORT_H
#define PYPROF_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "read/profile.h"

#include "jsonw.h"

/* The options of `pyprof report`. */
typedef struct report_opts {
    int top_given;
    size_t top;
    int memory; /* --memory */
    int by;     /* its ALLOCS_BY_* */
    int gil;    /* --gil */
    int tasks;  /* --tasks */
} report_opts;

/* A process's first line on stdout, with no newline after it: a blank line, then
 * "process PID (parent PPID), run ID", " window N" for a window after the first, ": " and
 * the command line (cli_print_argv). */
void report_print_process(const profile_process *pr);

/* The member `key`: `v`, or null when it is not `known`. */
void report_json_u64_or_null(jsonw *w, const char *key, int known, uint64_t v);

/* The process's identity in --json outputs: pid, ppid, run_id, argv. */
void report_json_process_ident(jsonw *w, const profile_process *pr);

#endif
