/*
 * cmd_report: `pyprof report` — the terminal summary of one or more logs, or the same
 * numbers as one JSON object (--json) for scripts and tests.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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
    "                   --top is given)\n" CLI_FILTER_HELP
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
    "  pyprof report --span db logs/      # only the samples inside `db` spans\n";

typedef struct report_opts {
    int top_given;
    size_t top;
} report_opts;

/* "name (file:line)"; a native function as "name [native] (module)", its first line
 * being unknown. */
static void print_func(const profile_func *f)
{
    if (f->kind == PROFILE_FUNC_NATIVE)
        printf(f->file[0] ? "%s [native] (%s)" : "%s [native]", f->name, f->file);
    else if (f->file[0])
        printf("%s (%s:%" PRId64 ")", f->name, f->file, f->line);
    else
        fputs(f->name, stdout);
}

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
    printf("\nprocess %" PRIu64 " (parent %" PRIu64 "), run %s", pr->pid, pr->ppid,
           pr->run_id);
    if (pr->window)
        printf(" window %" PRIu64, pr->window);
    fputs(": ", stdout);
    cli_print_argv(stdout, pr->argv, pr->argc);
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
        print_func(&p->funcs[f]);
        putchar('\n');
    }
    if (n > top)
        printf("  ... %zu more (--top N)\n", n - top);
}

static int print_text(const profile *p, const aggregate_counts *a, size_t top)
{
    uint64_t total = p->nsamples, dropped = aggregate_dropped(p);
    printf("pyprof report: %zu process%s, %zu thread%s, %" PRIu64 " samples, %.2f s",
           p->nprocs, p->nprocs == 1 ? "" : "es", p->nthreads, p->nthreads == 1 ? "" : "s",
           total, aggregate_duration(p));
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

static void json_u64_or_null(int known, uint64_t v)
{
    if (known)
        printf("%" PRIu64, v);
    else
        fputs("null", stdout);
}

/* The footer's cost section: handler, writer and thread-timer time, the threads' CPU
 * no timer counted (null for logs without it), and per stack-depth bucket the
 * samples and the median and p90 handler time; null for a log without it. */
static void print_cost_json(const profile_process *pr)
{
    const pyprof_footer *f = &pr->footer;
    if (!pr->has_footer || !f->has_cost) {
        fputs("null", stdout);
        return;
    }
    printf("{\"handler_ns\": %" PRIu64 ", \"writer_ns\": %" PRIu64 ", \"timer_ns\": ",
           f->handler_ns, f->writer_ns);
    json_u64_or_null(f->has_timers, f->timer_ns);
    fputs(", \"untimed_ns\": ", stdout);
    json_u64_or_null(f->has_timers, f->untimed_ns);
    fputs(", \"signal_cost_ns\": ", stdout);
    json_u64_or_null(f->has_whole && f->signal_cost_ns, f->signal_cost_ns);
    fputs(", \"calib_signals\": ", stdout);
    json_u64_or_null(f->has_whole, f->calib_signals);
    fputs(", \"calib_ns\": ", stdout);
    json_u64_or_null(f->has_whole, f->calib_ns);
    fputs(", \"process_cpu_ns\": ", stdout);
    json_u64_or_null(f->has_whole, f->process_cpu_ns);
    fputs(", \"whole_ns\": ", stdout);
    json_u64_or_null(f->has_whole && f->signal_cost_ns,
                     f->lib_cpu_ns + f->signals * f->signal_cost_ns);
    fputs(", \"by_depth\": [", stdout);
    for (uint32_t d = 0; d < f->cost_ndepth; d++) {
        printf("%s{\"max_depth\": ", d ? ", " : "");
        json_u64_or_null(f->cost_depth_bound[d] != 0, f->cost_depth_bound[d]);
        printf(", \"samples\": %" PRIu64 ", \"median_ns\": %.0f, \"p90_ns\": %.0f}",
               cli_cost_samples(f, d), cli_cost_quantile_ns(f, d, 0.5),
               cli_cost_quantile_ns(f, d, 0.9));
    }
    fputs("]}", stdout);
}

/* Native mode: the footer's walk counts and time (null without a footer), and what
 * loading made of the native stacks; null for a log without native frames. */
static void print_native_json(const profile_process *pr)
{
    const pyprof_footer *f = &pr->footer;
    if (!(pr->flags & PYPROF_HDR_NATIVE)) {
        fputs("null", stdout);
        return;
    }
    int has = pr->has_footer && f->has_native;
    fputs("{\"ok\": ", stdout);
    json_u64_or_null(has, f->native_ok);
    fputs(", \"truncated\": ", stdout);
    json_u64_or_null(has, f->native_truncated);
    fputs(", \"skipped\": ", stdout);
    json_u64_or_null(has, f->native_skipped);
    fputs(", \"walk_ns\": ", stdout);
    json_u64_or_null(has, f->native_ns);
    printf(", \"samples\": %" PRIu64 ", \"unmerged\": %" PRIu64
           ", \"unresolved_addresses\": %" PRIu64 "}",
           pr->native_samples, pr->native_unmerged, pr->native_unresolved);
}

static void print_process_json(const profile *p, size_t i)
{
    const profile_process *pr = &p->procs[i];
    const pyprof_footer *f = &pr->footer;
    printf("{\"pid\": %" PRIu64 ", \"ppid\": %" PRIu64 ", \"run_id\": ", pr->pid, pr->ppid);
    cli_json_str(stdout, pr->run_id);
    fputs(", \"argv\": [", stdout);
    for (size_t k = 0; k < pr->argc; k++) {
        if (k)
            fputs(", ", stdout);
        cli_json_str(stdout, pr->argv[k]);
    }
    fputs("], \"exe\": ", stdout);
    cli_json_str(stdout, pr->exe);
    fputs(", \"host\": ", stdout);
    cli_json_str(stdout, pr->host);
    fputs(", \"python\": ", stdout);
    cli_json_str(stdout, pr->python_version);
    printf(", \"window\": %" PRIu64 ", \"start_unix_ns\": %" PRIu64
           ", \"period_ns\": %" PRIu64 ", \"clock\": \"%s\", \"timer\": ",
           pr->window, pr->start_unix_ns, pr->period_ns, cli_clock_name(pr->clock));
    cli_json_str(stdout, pr->timer);
    printf(", \"samples\": %" PRIu64 ", \"samples_in_log\": %" PRIu64
           ", \"duration_s\": %.6f, \"ended\": ",
           pr->samples, pr->samples_read, aggregate_process_duration(p, i));
    cli_json_str(stdout, pr->has_footer ? cli_end_text(f->end) : "truncated");
    fputs(", \"exit_status\": ", stdout);
    if (pr->has_footer && f->status_known && f->end != PYPROF_END_SIGNAL)
        printf("%" PRId64, f->status);
    else
        fputs("null", stdout);
    fputs(", \"signal\": ", stdout);
    if (pr->has_footer && f->status_known && f->end == PYPROF_END_SIGNAL)
        printf("%" PRId64, f->status);
    else
        fputs("null", stdout);
    printf(", \"truncated\": %s, \"dropped\": {", pr->has_footer ? "false" : "true");
    if (pr->has_footer) {
        for (int d = 0; d < PYPROF_DROP_COUNT; d++)
            printf("%s\"%s\": %" PRIu64, d ? ", " : "", cli_drop_name(d), f->dropped[d]);
    }
    fputs("}, \"achieved_hz\": ", stdout);
    if (pr->has_footer)
        printf("%.3f", (double)f->achieved_hz_milli / 1000.0);
    else
        fputs("null", stdout);
    fputs(", \"library_cpu_ns\": ", stdout);
    json_u64_or_null(pr->has_footer, f->lib_cpu_ns);
    fputs(", \"cost\": ", stdout);
    print_cost_json(pr);
    fputs(", \"native\": ", stdout);
    print_native_json(pr);
    fputs(", \"rss\": {\"start\": ", stdout);
    json_u64_or_null(pr->has_rss, pr->rss_start);
    fputs(", \"peak\": ", stdout);
    json_u64_or_null(pr->has_rss, pr->rss_peak);
    fputs(", \"end\": ", stdout);
    json_u64_or_null(pr->has_rss, pr->rss_end);
    fputs("}, \"path\": ", stdout);
    cli_json_str(stdout, pr->path);
    /* A rotated series is one process of several files. */
    printf(", \"files\": %zu, \"snapshots\": %" PRIu64, pr->nfiles, pr->snapshots);
    /* Spans: kept, of which without a stop in the logs; stops whose start is not there. */
    printf(", \"spans\": %" PRIu64 ", \"spans_unfinished\": %" PRIu64
           ", \"span_stops_unmatched\": %" PRIu64 ", \"spans_lost\": ",
           pr->spans, pr->spans_unfinished, pr->span_stops_unmatched);
    /* Starts and stops the library could not queue (the footer's span section; null
     * without it: no footer, or an older writer). */
    json_u64_or_null(pr->has_footer && f->has_spans, f->spans_lost);
    fputc('}', stdout);
}

static int print_json(const profile *p, const aggregate_counts *a, const report_opts *o)
{
    uint32_t *order, *threads;
    if (orders(p, &order, &threads) < 0)
        return cli_oom();
    printf("{\"samples\": %zu, \"dropped\": %" PRIu64 ", \"duration_s\": %.6f,\n"
           " \"processes\": [",
           p->nsamples, aggregate_dropped(p), aggregate_duration(p));
    for (size_t i = 0; i < p->nprocs; i++) {
        fputs(i ? ",\n  " : "\n  ", stdout);
        print_process_json(p, i);
    }
    fputs("],\n \"threads\": [", stdout);
    for (size_t k = 0; k < p->nthreads; k++) {
        const profile_thread *t = &p->threads[threads[k]];
        printf("%s{\"pid\": %" PRIu64 ", \"tid\": %" PRIu64 ", \"name\": ",
               k ? ",\n  " : "\n  ", p->procs[t->process].pid, t->tid);
        cli_json_str(stdout, t->name);
        printf(", \"samples\": %" PRIu64 "}", t->samples);
    }
    fputs("],\n \"functions\": [", stdout);
    size_t n = aggregate_sort_funcs(p, a, a->self, order);
    if (o->top_given && n > o->top)
        n = o->top;
    for (size_t k = 0; k < n; k++) {
        uint32_t f = order[k];
        const profile_func *fn = &p->funcs[f];
        fputs(k ? ",\n  {\"name\": " : "\n  {\"name\": ", stdout);
        cli_json_str(stdout, fn->name);
        fputs(", \"file\": ", stdout);
        cli_json_str(stdout, fn->file);
        printf(", \"line\": %" PRId64 ", \"kind\": \"%s\", \"self\": %" PRIu64
               ", \"total\": %" PRIu64 ", \"lines\": [",
               fn->line, fn->kind == PROFILE_FUNC_NATIVE ? "native" : "python", a->self[f],
               a->total[f]);
        for (size_t l = a->line_first[f]; l < a->line_first[f + 1]; l++)
            printf("%s{\"line\": %" PRId32 ", \"self\": %" PRIu64 "}",
                   l > a->line_first[f] ? ", " : "", a->lines[l].line, a->lines[l].self);
        fputs("]}", stdout);
    }
    fputs("]}\n", stdout);
    free(order);
    free(threads);
    return CLI_EXIT_OK;
}

static int report_option(void *ctx, int c, const char *arg)
{
    report_opts *o = ctx;
    (void)c; /* --top, the only one */
    uint32_t v;
    int rc = cli_parse_count("report", "top", arg, &v);
    if (rc)
        return rc;
    o->top = v;
    o->top_given = 1;
    return 0;
}

int cmd_report(int argc, char **argv)
{
    static const struct option options[] = {
        {"top", required_argument, NULL, 't'},
        {NULL, 0, NULL, 0},
    };
    static const cli_command cmd = {"report", cmd_report_usage, 1, "", options,
                                    report_option, NULL, 0};
    report_opts o = {0, 20};
    aggregate_counts agg;
    memset(&agg, 0, sizeof agg);
    cli_args a;
    int rc = cli_start(&cmd, argc, argv, &o, &a);
    if (rc >= 0)
        goto cleanup;
    if (aggregate_funcs(a.p, &agg) < 0)
        rc = cli_oom();
    else
        rc = a.json ? print_json(a.p, &agg, &o) : print_text(a.p, &agg, o.top);

cleanup:
    aggregate_counts_free(&agg);
    cli_args_free(&a);
    return rc;
}
