/*
 * report_tasks: `pyprof report --tasks` — where the time of asyncio programs went, by
 * task: per task (names that end in a number folded into one row, "orders-*") the
 * samples it was running in (self: its own frames were innermost) and the samples
 * under it (total: it or a task it awaited was running), and its functions that ran
 * most, as text or as one JSON object (docs/JSON.md, "report tasks").
 *
 * Interface: report_tasks.
 */
#ifndef PYPROF_REPORT_TASKS_H
#define PYPROF_REPORT_TASKS_H

#include "read/profile.h"

#include "report.h"

/* Prints the task report of p on stdout: the o->top task rows (with `json`, all of them
 * unless o->top_given).  Returns CLI_EXIT_OK, or CLI_EXIT_BAD_INPUT after printing "out
 * of memory". */
int report_tasks(const profile *p, const report_opts *o, int json);

#endif
