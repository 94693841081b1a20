/*
 * report_gil: `pyprof report --gil` — where wall-clock time went with the GIL (logs
 * written in wall mode): per thread the share of its samples it held the GIL, waited for
 * it, or neither; per stack that waited for it, its waiting samples and the stacks that
 * held the GIL meanwhile (gilwait.h), as text or as one JSON object (docs/JSON.md,
 * "report gil").
 *
 * Interface: report_gil.
 */
#ifndef PYPROF_REPORT_GIL_H
#define PYPROF_REPORT_GIL_H

#include "read/profile.h"

#include "report.h"

/* Prints the GIL report of p on stdout: the o->top stacks that waited most (with `json`,
 * one JSON object, all of them unless o->top_given).  Returns CLI_EXIT_OK, or
 * CLI_EXIT_BAD_INPUT after printing "out of memory". */
int report_gil(const profile *p, const report_opts *o, int json);

#endif
