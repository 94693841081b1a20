/*
 * report_memory: `pyprof report --memory` — the summary of the logs' sampled allocations
 * (PYPROF_ALLOC, allocs.h): what was allocated, what is still in use at the end (at --to,
 * with --to), and what was in use at the peak of the estimated heap, in all, per process,
 * by allocator and by function (self and total), as text or as one JSON object
 * (docs/JSON.md, "report memory").
 *
 * Interface: report_memory.
 */
#ifndef PYPROF_REPORT_MEMORY_H
#define PYPROF_REPORT_MEMORY_H

#include "read/profile.h"

#include "report.h"

/* Prints the report of p's allocation samples on stdout: the functions sorted by o->by,
 * o->top of them (with `json`, one JSON object, all of them unless o->top_given).
 * Returns CLI_EXIT_OK, or CLI_EXIT_BAD_INPUT after printing why (no log was written with
 * allocation sampling; out of memory). */
int report_memory(const profile *p, const report_opts *o, int json);

#endif
