/*
 * cmd_report: `pyprof report` — the terminal summary of one or more logs, or the same
 * numbers as one JSON object (--json) for scripts and tests; with --memory, the summary of
 * their sampled allocations instead of their samples (report_memory.c); with --gil, where
 * wall-clock time went with the GIL (report_gil.c).  What the three share is report.c's.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read/aggregate.h"
#include "read/allocs.h"

#include "cli.h"
#include "cli_args.h"
#include "cli_fmt.h"
#include "cli_log.h"
#include "cli_parse.h"
#include "cli_text.h"
#include "cmd.h"
#include "jsonw.h"
#include "report.h"
#include "report_gil.h"
#include "report_tasks.h"
#include "report_memory.h"

/* clang-format off */
const char cmd_report_usage[] =
    "usage: pyprof report [options] LOG... | DIR...\n"
    "\n"
    "Summarizes pyprof logs: a header per process, the functions where samples were taken\n"
    "(self) and the functions on the stack (total), the split by process and by thread,\n"
    "and the resident memory (RSS) at start, at its peak and at the end.  A directory\n"
    "stands for every log in it.  Functions are merged across processes.\n"
    "\n"
    "options:\n"
    "  --json           print one JSON object: samples, dropped, duration_s, processes\n"
    "                   (with their span counts), threads, functions (sorted by self\n"
    "                   samples, with their lines)\n"
    "  --top N          show N functions per list (default 20; --json shows all unless\n"
    "                   --top is given)\n"
    "  --memory[=alloc|inuse|peak]\n"
    "                   report the sampled allocations (logs written with PYPROF_ALLOC)\n"
    "                   instead: per function the bytes and objects allocated in it (self)\n"
    "                   and under it (total), the part still in use at the end (at --to,\n"
    "                   with --to) and the part in use at the peak (when the estimated\n"
    "                   heap of all the processes was highest), estimated from the\n"
    "                   samples; sorted by bytes allocated, with =inuse by bytes in use at\n"
    "                   the end, with =peak by bytes in use at the peak.  --json: one\n"
    "                   object with the totals, the peak, by allocator, processes and\n"
    "                   functions\n"
    "  --gil            report the GIL instead (logs written in wall mode, PYPROF_CLOCK=\n"
    "                   wall): per thread the share of its samples it held the GIL,\n"
    "                   waited to take it, or did neither (waited on I/O, a lock, a\n"
    "                   sleep, or ran C code without it); per stack that waited for the\n"
    "                   GIL, its waiting samples and the stacks that held the GIL\n"
    "                   meanwhile (the holder's sample nearest in time, within a period,\n"
    "                   among the samples kept: --gil-wait keeps no holder).\n"
    "                   --json: one object with the totals, threads and waits\n"
    "  --tasks          report asyncio tasks instead (Python 3.7 and later): per task,\n"
    "                   names ending in a number folded into one row (orders-*), the\n"
    "                   samples its own frames ran (self) and those it or a task it\n"
    "                   awaited ran (total), and its functions that ran most.  --json:\n"
    "                   one object with the totals and the tasks\n"
    CLI_FILTER_HELP
    "  -h, --help       show this text\n"
    "\n"
    "A truncated log (its process was killed) is reported up to where it ends, with a\n"
    "warning.  Exit status: 0 ok, 1 bad input, 2 usage.\n"
    "\n"
    "EXAMPLES\n"
    "  pyprof report /tmp/pyprof.Ab12Cd\n"
    "  pyprof report --top 50 pyprof.python3.4242.x1y2z3.lz4\n"
    "  pyprof report --json logs/ | jq '.functions[:5]'\n"
    "  pyprof report --pid 4242 --from 10 --to 20 logs/\n"
    "  pyprof report --span db logs/      # only the samples inside `db` spans\n"
    "  pyprof report --memory=inuse logs/ # what holds the memory at the end\n"
    "  pyprof report --memory=peak logs/  # what held it when the heap was highest\n"
    "  pyprof report --gil logs/          # who waits for the GIL, behind whom\n"
    "  pyprof report --tasks logs/        # which asyncio task used the time\n";
/* clang-format on */

/* Room for the functions' order, and the threads in report order.  Returns 0, or -1
 * when out of memory (both NULL). */
static int orders(const profile *p, uint32_t **funcs, uint32_t **threads)
{
    *funcs = malloc((p->nfuncs ? p->nfuncs : 1) * sizeof **funcs);
    *threads = aggregate_threads_by_samples(p);
    if (*funcs && *threads)
        return 0;
    free(*funcs);
    free(*threads);
    *funcs = *threads = NULL;
    return -1;
}

static void print_process_text(const profile *p, size_t i)
{
    const profile_process *pr = &p->procs[i];
    char b1[64], b2[64], b3[64];
    report_print_process(pr);
    printf("\n  log      %s\n", pr->path);
    printf("  python   %s, %s clock, every %s (%s)", pr->python_version,
           cli_clock_name(pr->clock), cli_fmt_ns(pr->period_ns, b1, sizeof b1), pr->timer);
    if (pr->has_footer && pr->footer.achieved_hz_milli)
        printf(", %.1f Hz achieved", (double)pr->footer.achieved_hz_milli / 1000.0);
    printf("\n  started  %s, ended: %s, after %.2f s\n",
           cli_fmt_unix_ns(pr->start_unix_ns, b1, sizeof b1), cli_fmt_end(pr, b2, sizeof b2),
           pr->has_footer ? (double)pr->footer.duration_ns / 1e9 : (double)pr->last_t_us / 1e6);
    printf("  samples  %" PRIu64 " reported", pr->samples);
    if (pr->samples != pr->samples_read)
        printf(" (of %" PRIu64 " in the log)", pr->samples_read);
    uint64_t dropped = aggregate_process_dropped(p, i);
    if (dropped) {
        printf(", %" PRIu64 " lost:", dropped);
        const char *sep = " ";
        for (int d = 0; d < PYPROF_DROP_COUNT; d++) {
            if (d == PYPROF_DROP_NOT_READY || d == PYPROF_DROP_NO_PYTHON ||
                !pr->footer.dropped[d])
                continue;
            printf("%s%" PRIu64 " %s", sep, pr->footer.dropped[d], cli_drop_text(d));
            sep = ", ";
        }
    }
    if (pr->has_footer && pr->footer.has_clock && pr->footer.clock_kernel_ns) {
        /* Only a drift that moves the figures: info prints every one. */
        const char *way, *why;
        double drift = cli_clock_drift(&pr->footer, &way, &why);
        if (fabs(drift) > 2.0)
            printf("\n  timer    ran %.0f%% %s the kernel's CPU clock (%s); samples %s",
                   fabs(drift), way, why,
                   pr->footer.clock_corrected ? "follow the kernel's CPU"
                                              : "were not corrected");
    }
    if (pr->has_rss)
        printf("\n  memory   RSS start %s, peak %s, end %s\n",
               cli_fmt_bytes(pr->rss_start, b1, sizeof b1),
               cli_fmt_bytes(pr->rss_peak, b2, sizeof b2),
               cli_fmt_bytes(pr->rss_end, b3, sizeof b3));
    else
        printf("\n  memory   no RSS recorded\n");
}

static void print_funcs_text(const profile *p, const aggregate_counts *a, const uint32_t *order,
                             size_t n, int by_self, size_t top)
{
    uint64_t total = p->nsamples;
    printf("\ntop functions by %s (of %" PRIu64 " samples):\n", by_self ? "self" : "total",
           total);
    if (by_self)
        printf("  %6s %9s %7s %9s  %s\n", "self%", "self", "total%", "total", "function");
    else
        printf("  %6s %9s %7s %9s  %s\n", "total%", "total", "self%", "self", "function");
    for (size_t k = 0; k < n && k < top; k++) {
        uint32_t f = order[k];
        uint64_t x = by_self ? a->self[f] : a->total[f];
        uint64_t y = by_self ? a->total[f] : a->self[f];
        printf("  %5.1f%% %9" PRIu64 " %6.1f%% %9" PRIu64 "  ", cli_pct(x, total), x,
               cli_pct(y, total), y);
        cli_print_func(stdout, &p->funcs[f]);
        putchar('\n');
    }
    if (n > top)
        printf("  ... %zu more (--top N)\n", n - top);
}

static int print_text(const profile *p, const aggregate_counts *a, size_t top)
{
    uint64_t total = p->nsamples, dropped = aggregate_dropped(p);
    printf("pyprof report: %zu process%s, %zu thread%s, %" PRIu64 " samples, %.2f s", p->nprocs,
           p->nprocs == 1 ? "" : "es", p->nthreads, p->nthreads == 1 ? "" : "s", total,
           aggregate_duration(p));
    if (dropped)
        printf(", %" PRIu64 " lost (%.1f%%)", dropped, cli_pct(dropped, total + dropped));
    putchar('\n');
    for (size_t i = 0; i < p->nprocs; i++)
        print_process_text(p, i);

    if (!total) {
        printf("\nno samples\n");
        return CLI_EXIT_OK;
    }
    uint32_t *order, *threads;
    if (orders(p, &order, &threads) < 0)
        return cli_oom();
    size_t n = aggregate_sort_funcs(p, a, a->self, order);
    print_funcs_text(p, a, order, n, 1, top);
    n = aggregate_sort_funcs(p, a, a->total, order);
    print_funcs_text(p, a, order, n, 0, top);

    printf("\nby process:\n  %6s %9s %9s  %s\n", "share", "samples", "pid", "command");
    for (size_t i = 0; i < p->nprocs; i++) {
        const profile_process *pr = &p->procs[i];
        printf("  %5.1f%% %9" PRIu64 " %9" PRIu64 "  ", cli_pct(pr->samples, total),
               pr->samples, pr->pid);
        cli_print_argv(stdout, pr->argv, pr->argc);
        putchar('\n');
    }
    printf("\nby thread:\n  %6s %9s %9s %9s  %s\n", "share", "samples", "pid", "tid", "name");
    for (size_t k = 0; k < p->nthreads; k++) {
        const profile_thread *t = &p->threads[threads[k]];
        printf("  %5.1f%% %9" PRIu64 " %9" PRIu64 " %9" PRIu64 "  %s\n",
               cli_pct(t->samples, total), t->samples, p->procs[t->process].pid, t->tid,
               t->name);
    }
    free(order);
    free(threads);
    return CLI_EXIT_OK;
}

/* The footer's cost section: handler, writer and thread-timer time, the threads' CPU
 * no timer counted (null for logs without it), the whole cost, the CPU the timers counted
 * against the kernel's (null without the clock section), and per stack-depth bucket the
 * samples and the median and p90 handler time; null for a log without it. */
static void print_cost_json(jsonw *w, const profile_process *pr)
{
    const pyprof_footer *f = &pr->footer;
    jsonw_key(w, "cost");
    if (!pr->has_footer || !f->has_cost) {
        jsonw_null(w);
        return;
    }
    jsonw_begin_object(w);
    jsonw_key_u64(w, "handler_ns", f->handler_ns);
    jsonw_key_u64(w, "writer_ns", f->writer_ns);
    report_json_u64_or_null(w, "timer_ns", f->has_timers, f->timer_ns);
    report_json_u64_or_null(w, "untimed_ns", f->has_timers, f->untimed_ns);
    report_json_u64_or_null(w, "signal_cost_ns", f->has_whole && f->signal_cost_ns,
                            f->signal_cost_ns);
    report_json_u64_or_null(w, "calib_signals", f->has_whole, f->calib_signals);
    report_json_u64_or_null(w, "calib_ns", f->has_whole, f->calib_ns);
    report_json_u64_or_null(w, "process_cpu_ns", f->has_whole, f->process_cpu_ns);
    report_json_u64_or_null(w, "whole_ns", f->has_whole && f->signal_cost_ns,
                            f->lib_cpu_ns + f->signals * f->signal_cost_ns);
    report_json_u64_or_null(w, "clock_timer_ns", f->has_clock, f->clock_timer_ns);
    report_json_u64_or_null(w, "clock_kernel_ns", f->has_clock, f->clock_kernel_ns);
    jsonw_key(w, "clock_corrected");
    if (f->has_clock)
        jsonw_bool(w, f->clock_corrected != 0);
    else
        jsonw_null(w);
    jsonw_key(w, "by_depth");
    jsonw_begin_array(w);
    for (uint32_t d = 0; d < f->cost_ndepth; d++) {
        jsonw_begin_object(w);
        report_json_u64_or_null(w, "max_depth", f->cost_depth_bound[d] != 0,
                                f->cost_depth_bound[d]);
        jsonw_key_u64(w, "samples", cli_cost_samples(f, d));
        jsonw_key_double(w, "median_ns", cli_cost_quantile_ns(f, d, 0.5), 0);
        jsonw_key_double(w, "p90_ns", cli_cost_quantile_ns(f, d, 0.9), 0);
        jsonw_end_object(w);
    }
    jsonw_end_array(w);
    jsonw_end_object(w);
}

/* Native mode: the footer's walk counts and time (null without a footer), and what
 * loading made of the native stacks; null for a log without native frames. */
static void print_native_json(jsonw *w, const profile_process *pr)
{
    const pyprof_footer *f = &pr->footer;
    jsonw_key(w, "native");
    if (!(pr->flags & PYPROF_HDR_NATIVE)) {
        jsonw_null(w);
        return;
    }
    int has = pr->has_footer && f->has_native;
    jsonw_begin_object(w);
    report_json_u64_or_null(w, "ok", has, f->native_ok);
    report_json_u64_or_null(w, "truncated", has, f->native_truncated);
    report_json_u64_or_null(w, "skipped", has, f->native_skipped);
    report_json_u64_or_null(w, "walk_ns", has, f->native_ns);
    jsonw_key_u64(w, "samples", pr->native_samples);
    jsonw_key_u64(w, "unmerged", pr->native_unmerged);
    jsonw_key_u64(w, "unresolved_addresses", pr->native_unresolved);
    jsonw_end_object(w);
}

static void print_process_json(jsonw *w, const profile *p, size_t i)
{
    const profile_process *pr = &p->procs[i];
    const pyprof_footer *f = &pr->footer;
    jsonw_begin_object(w);
    report_json_process_ident(w, pr);
    jsonw_key_string(w, "exe", pr->exe);
    jsonw_key_string(w, "host", pr->host);
    jsonw_key_string(w, "python", pr->python_version);
    jsonw_key_u64(w, "window", pr->window);
    jsonw_key_u64(w, "start_unix_ns", pr->start_unix_ns);
    jsonw_key_u64(w, "period_ns", pr->period_ns);
    jsonw_key_string(w, "clock", cli_clock_name(pr->clock));
    jsonw_key_string(w, "timer", pr->timer);
    jsonw_key_u64(w, "samples", pr->samples);
    jsonw_key_u64(w, "samples_in_log", pr->samples_read);
    jsonw_key_double(w, "duration_s", aggregate_process_duration(p, i), 6);
    jsonw_key_string(w, "ended", pr->has_footer ? cli_end_text(f->end) : "truncated");
    int status = pr->has_footer && f->status_known;
    jsonw_key(w, "exit_status");
    if (status && f->end != PYPROF_END_SIGNAL)
        jsonw_i64(w, f->status);
    else
        jsonw_null(w);
    jsonw_key(w, "signal");
    if (status && f->end == PYPROF_END_SIGNAL)
        jsonw_i64(w, f->status);
    else
        jsonw_null(w);
    jsonw_key_bool(w, "truncated", !pr->has_footer);
    jsonw_key(w, "dropped");
    jsonw_begin_object(w);
    if (pr->has_footer) {
        for (int d = 0; d < PYPROF_DROP_COUNT; d++)
            jsonw_key_u64(w, cli_drop_name(d), f->dropped[d]);
    }
    jsonw_end_object(w);
    jsonw_key(w, "achieved_hz");
    if (pr->has_footer)
        jsonw_double(w, (double)f->achieved_hz_milli / 1000.0, 3);
    else
        jsonw_null(w);
    report_json_u64_or_null(w, "library_cpu_ns", pr->has_footer, f->lib_cpu_ns);
    print_cost_json(w, pr);
    print_native_json(w, pr);
    jsonw_key(w, "rss");
    jsonw_begin_object(w);
    report_json_u64_or_null(w, "start", pr->has_rss, pr->rss_start);
    report_json_u64_or_null(w, "peak", pr->has_rss, pr->rss_peak);
    report_json_u64_or_null(w, "end", pr->has_rss, pr->rss_end);
    jsonw_end_object(w);
    jsonw_key_string(w, "path", pr->path);
    /* A rotated series is one process of several files. */
    jsonw_key_u64(w, "files", pr->nfiles);
    jsonw_key_u64(w, "snapshots", pr->snapshots);
    /* Spans: kept, of which without a stop in the logs; stops whose start is not there. */
    jsonw_key_u64(w, "spans", pr->spans);
    jsonw_key_u64(w, "spans_unfinished", pr->spans_unfinished);
    jsonw_key_u64(w, "span_stops_unmatched", pr->span_stops_unmatched);
    /* Starts and stops the library could not queue (the footer's span section; null
     * without it: no footer, or an older writer). */
    report_json_u64_or_null(w, "spans_lost", pr->has_footer && f->has_spans, f->spans_lost);
    jsonw_end_object(w);
}

/* docs/JSON.md, "report", describes every key. */
static int print_json(const profile *p, const aggregate_counts *a, const report_opts *o)
{
    uint32_t *order, *threads;
    if (orders(p, &order, &threads) < 0)
        return cli_oom();
    jsonw w;
    jsonw_init(&w, stdout, 0);
    jsonw_begin_object(&w);
    jsonw_key_u64(&w, "samples", p->nsamples);
    jsonw_key_u64(&w, "dropped", aggregate_dropped(p));
    jsonw_key_double(&w, "duration_s", aggregate_duration(p), 6);
    jsonw_break(&w, 1);
    jsonw_key(&w, "processes");
    jsonw_begin_array(&w);
    for (size_t i = 0; i < p->nprocs; i++) {
        jsonw_break(&w, 2);
        print_process_json(&w, p, i);
    }
    jsonw_end_array(&w);
    jsonw_break(&w, 1);
    jsonw_key(&w, "threads");
    jsonw_begin_array(&w);
    for (size_t k = 0; k < p->nthreads; k++) {
        const profile_thread *t = &p->threads[threads[k]];
        jsonw_break(&w, 2);
        jsonw_begin_object(&w);
        jsonw_key_u64(&w, "pid", p->procs[t->process].pid);
        jsonw_key_u64(&w, "tid", t->tid);
        jsonw_key_string(&w, "name", t->name);
        jsonw_key_u64(&w, "samples", t->samples);
        jsonw_end_object(&w);
    }
    jsonw_end_array(&w);
    jsonw_break(&w, 1);
    jsonw_key(&w, "functions");
    jsonw_begin_array(&w);
    size_t n = aggregate_sort_funcs(p, a, a->self, order);
    if (o->top_given && n > o->top)
        n = o->top;
    for (size_t k = 0; k < n; k++) {
        uint32_t f = order[k];
        const profile_func *fn = &p->funcs[f];
        jsonw_break(&w, 2);
        jsonw_begin_object(&w);
        cli_json_func(&w, fn);
        jsonw_key_u64(&w, "self", a->self[f]);
        jsonw_key_u64(&w, "total", a->total[f]);
        jsonw_key(&w, "lines");
        jsonw_begin_array(&w);
        for (size_t l = a->line_first[f]; l < a->line_first[f + 1]; l++) {
            jsonw_begin_object(&w);
            jsonw_key_i64(&w, "line", a->lines[l].line);
            jsonw_key_u64(&w, "self", a->lines[l].self);
            jsonw_end_object(&w);
        }
        jsonw_end_array(&w);
        jsonw_end_object(&w);
    }
    jsonw_end_array(&w);
    jsonw_end_object(&w);
    jsonw_finish(&w);
    free(order);
    free(threads);
    return CLI_EXIT_OK;
}

static int report_option(void *ctx, int c, const char *arg)
{
    report_opts *o = ctx;
    if (c == 'g') {
        o->gil = 1;
        return 0;
    }
    if (c == 'k') {
        o->tasks = 1;
        return 0;
    }
    if (c == 'm')
        return cli_parse_memory("report", arg, 1, &o->memory, &o->by);
    uint32_t v; /* --top */
    int rc = cli_parse_count("report", "top", arg, &v);
    if (rc)
        return rc;
    o->top = v;
    o->top_given = 1;
    return 0;
}

/* --tasks: the suspended tasks' samples too (their awaiting time). */
static unsigned report_load(void *ctx)
{
    const report_opts *o = ctx;
    return o->tasks ? PROFILE_AWAITING : 0;
}

int cmd_report(int argc, char **argv)
{
    static const struct option options[] = {
        {"top", required_argument, NULL, 't'},
        {"memory", optional_argument, NULL, 'm'},
        {"gil", no_argument, NULL, 'g'},
        {"tasks", no_argument, NULL, 'k'},
        {NULL, 0, NULL, 0},
    };
    static const cli_command cmd = {
        "report", cmd_report_usage, 1, "", options, report_option, NULL, 0, 0, report_load};
    report_opts o = {0, 20, 0, ALLOCS_BY_ALLOC, 0, 0};
    aggregate_counts agg;
    memset(&agg, 0, sizeof agg);
    cli_args a;
    int rc = cli_start(&cmd, argc, argv, &o, &a);
    if (rc >= 0)
        goto cleanup;
    if (o.memory + o.gil + o.tasks > 1)
        rc = cli_usage_error("report", "--memory, --gil and --tasks are three reports: choose "
                                       "one");
    else if (o.memory)
        rc = report_memory(a.p, &o, a.json);
    else if (o.gil)
        rc = report_gil(a.p, &o, a.json);
    else if (o.tasks)
        rc = report_tasks(a.p, &o, a.json);
    else if (aggregate_funcs(a.p, &agg) < 0)
        rc = cli_oom();
    else
        rc = a.json ? print_json(a.p, &agg, &o) : print_text(a.p, &agg, o.top);

cleanup:
    aggregate_counts_free(&agg);
    cli_args_free(&a);
    return rc;
}
