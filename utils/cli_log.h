/*
 * cli_log: what a log's header and footer hold, in the outputs' words and figures — the
 * clock, the drop reasons, how the process ended, the handler's cost by stack depth, how
 * far the timers ran from the kernel's CPU clock — and whether the logs hold allocation
 * samples at all.
 *
 * Interface: cli_fmt_end, cli_clock_name, cli_drop_name, cli_drop_text, cli_end_text,
 * cli_cost_samples, cli_cost_quantile_ns, cli_clock_drift, cli_need_allocs.
 */
#ifndef PYPROF_CLI_LOG_H
#define PYPROF_CLI_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "read/profile.h"

/* How a process's profiling ended, in words: "exit status 0", "signal 15 (Terminated)",
 * "truncated (no footer)". */
const char *cli_fmt_end(const profile_process *pr, char *buf, size_t len);

/* The name of an enum pyprof_clock: "wall", "cpu" or "unknown". */
const char *cli_clock_name(int clock);

/* The lowercase name of a drop reason ("ring_full") and its description. */
const char *cli_drop_name(int reason);
const char *cli_drop_text(int reason);
/* The text of an enum pyprof_end ("exit", "Py_FinalizeEx"). */
const char *cli_end_text(uint64_t end);

/* From a footer's cost histogram: samples in depth bucket `d`, and the handler time (ns)
 * below which a fraction `q` of them fall, interpolated within its time bucket (an
 * unbounded last bucket counts as twice its lower bound).  0 when the bucket is empty. */
uint64_t cli_cost_samples(const pyprof_footer *f, uint32_t d);
double cli_cost_quantile_ns(const pyprof_footer *f, uint32_t d, double q);

/* From a footer's clock section (clock_kernel_ns > 0): how far the sampling timers ran
 * from the kernel's CPU clock, 100 * (timers / kernel - 1), and in words: *way "ahead of"
 * or "behind", *why the likely cause ("hypervisor steal or interrupt time", or fewer
 * signals than the CPU). */
double cli_clock_drift(const pyprof_footer *f, const char **way, const char **why);

/* For the views of sampled allocations: -1 when some log of p was written with allocation
 * sampling, else CLI_EXIT_BAD_INPUT after printing "no allocation samples: the logs were
 * written without PYPROF_ALLOC". */
int cli_need_allocs(const profile *p);

#endif
