/*
 * cmd_report: `pyprof report` — the terminal summary of one or more logs, or the same
 * numbers as one JSON object (--json) for scripts and tests; with --memory, the summary of
 * their sampled allocations (what was allocated, what is still in use at the end, and
 * what was in use at the peak of the estimated heap, by function) instead of their
 * samples; with --gil, where wall-clock time went with the GIL (per thread held, waited
 * for, neither; per stack that waited, the stacks that held it meanwhile: gilwait.h).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read/gilwait.h"

#include "cli.h"
#include "jsonw.h"

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
    "  pyprof report --gil logs/          # who waits for the GIL, behind whom\n";
/* clang-format on */

typedef struct report_opts {
    int top_given;
    size_t top;
    int memory; /* --memory */
    int by;     /* its ALLOCS_BY_* */
    int gil;    /* --gil */
} report_opts;

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
    printf("\nprocess %" PRIu64 " (parent %" PRIu64 "), run %s", pr->pid, pr->ppid, pr->run_id);
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

static void json_u64_or_null(jsonw *w, const char *key, int known, uint64_t v)
{
    jsonw_key(w, key);
    if (known)
        jsonw_u64(w, v);
    else
        jsonw_null(w);
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
    json_u64_or_null(w, "timer_ns", f->has_timers, f->timer_ns);
    json_u64_or_null(w, "untimed_ns", f->has_timers, f->untimed_ns);
    json_u64_or_null(w, "signal_cost_ns", f->has_whole && f->signal_cost_ns, f->signal_cost_ns);
    json_u64_or_null(w, "calib_signals", f->has_whole, f->calib_signals);
    json_u64_or_null(w, "calib_ns", f->has_whole, f->calib_ns);
    json_u64_or_null(w, "process_cpu_ns", f->has_whole, f->process_cpu_ns);
    json_u64_or_null(w, "whole_ns", f->has_whole && f->signal_cost_ns,
                     f->lib_cpu_ns + f->signals * f->signal_cost_ns);
    json_u64_or_null(w, "clock_timer_ns", f->has_clock, f->clock_timer_ns);
    json_u64_or_null(w, "clock_kernel_ns", f->has_clock, f->clock_kernel_ns);
    jsonw_key(w, "clock_corrected");
    if (f->has_clock)
        jsonw_bool(w, f->clock_corrected != 0);
    else
        jsonw_null(w);
    jsonw_key(w, "by_depth");
    jsonw_begin_array(w);
    for (uint32_t d = 0; d < f->cost_ndepth; d++) {
        jsonw_begin_object(w);
        json_u64_or_null(w, "max_depth", f->cost_depth_bound[d] != 0, f->cost_depth_bound[d]);
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
    json_u64_or_null(w, "ok", has, f->native_ok);
    json_u64_or_null(w, "truncated", has, f->native_truncated);
    json_u64_or_null(w, "skipped", has, f->native_skipped);
    json_u64_or_null(w, "walk_ns", has, f->native_ns);
    jsonw_key_u64(w, "samples", pr->native_samples);
    jsonw_key_u64(w, "unmerged", pr->native_unmerged);
    jsonw_key_u64(w, "unresolved_addresses", pr->native_unresolved);
    jsonw_end_object(w);
}

/* The process's identity in --json outputs: pid, ppid, run_id, argv. */
static void json_process_ident(jsonw *w, const profile_process *pr)
{
    jsonw_key_u64(w, "pid", pr->pid);
    jsonw_key_u64(w, "ppid", pr->ppid);
    jsonw_key_string(w, "run_id", pr->run_id);
    jsonw_key(w, "argv");
    jsonw_begin_array(w);
    for (size_t k = 0; k < pr->argc; k++)
        jsonw_string(w, pr->argv[k]);
    jsonw_end_array(w);
}

static void print_process_json(jsonw *w, const profile *p, size_t i)
{
    const profile_process *pr = &p->procs[i];
    const pyprof_footer *f = &pr->footer;
    jsonw_begin_object(w);
    json_process_ident(w, pr);
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
    json_u64_or_null(w, "library_cpu_ns", pr->has_footer, f->lib_cpu_ns);
    print_cost_json(w, pr);
    print_native_json(w, pr);
    jsonw_key(w, "rss");
    jsonw_begin_object(w);
    json_u64_or_null(w, "start", pr->has_rss, pr->rss_start);
    json_u64_or_null(w, "peak", pr->has_rss, pr->rss_peak);
    json_u64_or_null(w, "end", pr->has_rss, pr->rss_end);
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
    json_u64_or_null(w, "spans_lost", pr->has_footer && f->has_spans, f->spans_lost);
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

/* ---- --memory ----------------------------------------------------------------------- */

static const char *fmt_bytes(double v, char *buf, size_t len)
{
    return cli_fmt_bytes(cli_bytes_count(v), buf, len);
}

static double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

static void print_memory_process(const profile *p, const allocs_counts *c, size_t i)
{
    const profile_process *pr = &p->procs[i];
    const pyprof_footer *f = &pr->footer;
    const allocs_cost *k = &c->process[i];
    char b1[64], b2[64];
    printf("\nprocess %" PRIu64 " (parent %" PRIu64 "), run %s", pr->pid, pr->ppid, pr->run_id);
    if (pr->window)
        printf(" window %" PRIu64, pr->window);
    fputs(": ", stdout);
    cli_print_argv(stdout, pr->argv, pr->argc);
    printf("\n  log        %s\n", pr->path);
    if (pr->alloc_interval)
        printf("  sampling   one allocation per %s allocated, on average\n",
               cli_fmt_bytes(pr->alloc_interval, b1, sizeof b1));
    else
        printf("  sampling   off (every allocation the log holds counts as itself)\n");
    printf("  in the log %" PRIu64 " allocations, %" PRIu64 " frees", pr->allocs_read,
           pr->frees_read);
    if (pr->frees_unmatched)
        printf(" (%" PRIu64 " of blocks whose allocation is not in the logs)",
               pr->frees_unmatched);
    if (pr->has_footer && f->has_alloc)
        printf("\n  lost       allocations %" PRIu64 ", frees %" PRIu64
               " (buffer full, or made inside a sample); blocks followed at the end %" PRIu64
               "\n",
               f->alloc_lost, f->frees_lost, f->alloc_live);
    else
        printf("\n  lost       unknown (the log has no footer)\n");
    char b3[64];
    printf("  kept       %" PRIu64 " allocations: %s allocated, %s in use at the end, %s at "
           "the peak\n",
           k->samples, fmt_bytes(k->alloc_bytes, b1, sizeof b1),
           fmt_bytes(k->inuse_bytes, b2, sizeof b2), fmt_bytes(k->peak_bytes, b3, sizeof b3));
}

static void print_memory_funcs(const profile *p, const allocs_counts *c, const uint32_t *order,
                               size_t n, int by, int total, size_t top)
{
    char b1[64], b2[64], b3[64];
    double all = allocs_key(&c->all, by);
    /* The last column: bytes allocated beside the in-use measures, in use at the end
     * beside the bytes allocated. */
    int other = by == ALLOCS_BY_ALLOC ? ALLOCS_BY_INUSE : ALLOCS_BY_ALLOC;
    printf("\ntop functions by bytes %s %s (%s), of %s:\n",
           by == ALLOCS_BY_INUSE  ? "in use at the end"
           : by == ALLOCS_BY_PEAK ? "in use at the peak"
                                  : "allocated",
           total ? "under them" : "in them", total ? "total" : "self",
           fmt_bytes(all, b1, sizeof b1));
    printf("  %6s %10s %10s %7s %10s %10s  %s\n", total ? "total%" : "self%",
           total ? "total" : "self", "objects", total ? "self%" : "total%",
           total ? "self" : "total", other == ALLOCS_BY_ALLOC ? "allocated" : "in use",
           "function");
    for (size_t k = 0; k < n && k < top; k++) {
        uint32_t f = order[k];
        const allocs_cost *x = total ? &c->total[f] : &c->self[f];
        const allocs_cost *y = total ? &c->self[f] : &c->total[f];
        double xv = allocs_key(x, by), yv = allocs_key(y, by);
        double objects = by == ALLOCS_BY_INUSE  ? x->inuse_objects
                         : by == ALLOCS_BY_PEAK ? x->peak_objects
                                                : x->alloc_objects;
        printf("  %5.1f%% %10s %10" PRIu64 " %6.1f%% %10s %10s  ", pct(xv, all),
               fmt_bytes(xv, b1, sizeof b1), cli_bytes_count(objects), pct(yv, all),
               fmt_bytes(yv, b2, sizeof b2), fmt_bytes(allocs_key(x, other), b3, sizeof b3));
        cli_print_func(stdout, &p->funcs[f]);
        putchar('\n');
    }
    if (n > top)
        printf("  ... %zu more (--top N)\n", n - top);
}

static int print_memory_text(const profile *p, const allocs_counts *c, const report_opts *o)
{
    char b1[64], b2[64];
    /* The interval, when the processes share one (0: none has any). */
    uint64_t interval = 0, lost = 0, frees_lost = 0;
    int same = 1, footers = 1;
    for (size_t i = 0; i < p->nprocs; i++) {
        const profile_process *pr = &p->procs[i];
        if (pr->alloc_interval && interval && pr->alloc_interval != interval)
            same = 0;
        if (pr->alloc_interval)
            interval = pr->alloc_interval;
        footers &= pr->has_footer && pr->footer.has_alloc;
        lost += pr->footer.alloc_lost;
        frees_lost += pr->footer.frees_lost;
    }
    printf("pyprof report --memory: %zu process%s, %" PRIu64 " allocations sampled", p->nprocs,
           p->nprocs == 1 ? "" : "es", c->all.samples);
    if (!same)
        printf(" (at different intervals)");
    else if (interval)
        printf(" (one per %s allocated, on average)", cli_fmt_bytes(interval, b1, sizeof b1));
    if (footers)
        printf("; lost: %" PRIu64 " allocations, %" PRIu64 " frees\n", lost, frees_lost);
    else
        printf("; lost: unknown (a log has no footer)\n");
    printf("  allocated  %s in %" PRIu64 " objects (estimated)\n",
           fmt_bytes(c->all.alloc_bytes, b1, sizeof b1), cli_bytes_count(c->all.alloc_objects));
    printf("  in use     %s in %" PRIu64 " objects at the end%s: %" PRIu64
           " blocks sampled (%" PRIu64 " freed, %" PRIu64 " not followed to their free)\n",
           fmt_bytes(c->all.inuse_bytes, b2, sizeof b2), cli_bytes_count(c->all.inuse_objects),
           p->filter.has_to ? " (--to)" : "", c->all.inuse_samples, c->freed, c->untracked);
    if (c->peak.found)
        printf("  peak       %s in %" PRIu64 " objects at %.3f s from the start%s: %" PRIu64
               " blocks sampled\n",
               fmt_bytes(c->peak.bytes, b1, sizeof b1), cli_bytes_count(c->peak.objects),
               c->peak.t_s, p->nprocs > 1 ? " (of the earliest process)" : "", c->peak.samples);
    else
        printf("  peak       none (no allocation followed to its free)\n");
    for (size_t i = 0; i < p->nprocs; i++)
        print_memory_process(p, c, i);
    if (!c->all.samples) {
        printf("\nno allocation samples\n");
        return CLI_EXIT_OK;
    }
    printf("\nby allocator:\n  %-9s %9s %10s %10s %10s %10s\n", "domain", "samples",
           "allocated", "objects", "in use", "objects");
    for (int d = 0; d < PYPROF_ALLOC_DOMAINS; d++) {
        const allocs_cost *k = &c->domain[d];
        if (!k->samples)
            continue;
        printf("  %-9s %9" PRIu64 " %10s %10" PRIu64 " %10s %10" PRIu64 "\n",
               allocs_domain_name(d), k->samples, fmt_bytes(k->alloc_bytes, b1, sizeof b1),
               cli_bytes_count(k->alloc_objects), fmt_bytes(k->inuse_bytes, b2, sizeof b2),
               cli_bytes_count(k->inuse_objects));
    }
    uint32_t *order = malloc((p->nfuncs ? p->nfuncs : 1) * sizeof *order);
    if (!order)
        return cli_oom();
    size_t n = allocs_sort_funcs(p, c, o->by, 0, order);
    print_memory_funcs(p, c, order, n, o->by, 0, o->top);
    n = allocs_sort_funcs(p, c, o->by, 1, order);
    print_memory_funcs(p, c, order, n, o->by, 1, o->top);
    free(order);
    return CLI_EXIT_OK;
}

/* docs/JSON.md, "report memory": samples, what they stand for, and the in-use part. */
static void json_cost(jsonw *w, const char *key, const allocs_cost *c)
{
    jsonw_key(w, key);
    jsonw_begin_object(w);
    jsonw_key_u64(w, "samples", c->samples);
    jsonw_key_u64(w, "alloc_bytes", cli_bytes_count(c->alloc_bytes));
    jsonw_key_u64(w, "alloc_objects", cli_bytes_count(c->alloc_objects));
    jsonw_key_u64(w, "inuse_samples", c->inuse_samples);
    jsonw_key_u64(w, "inuse_bytes", cli_bytes_count(c->inuse_bytes));
    jsonw_key_u64(w, "inuse_objects", cli_bytes_count(c->inuse_objects));
    jsonw_key_u64(w, "peak_samples", c->peak_samples);
    jsonw_key_u64(w, "peak_bytes", cli_bytes_count(c->peak_bytes));
    jsonw_key_u64(w, "peak_objects", cli_bytes_count(c->peak_objects));
    jsonw_end_object(w);
}

static void print_memory_process_json(jsonw *w, const profile *p, const allocs_counts *c,
                                      size_t i)
{
    const profile_process *pr = &p->procs[i];
    const pyprof_footer *f = &pr->footer;
    int has = pr->has_footer && f->has_alloc;
    jsonw_begin_object(w);
    json_process_ident(w, pr);
    jsonw_key_string(w, "path", pr->path);
    jsonw_key_u64(w, "files", pr->nfiles);
    jsonw_key_u64(w, "alloc_interval", pr->alloc_interval);
    jsonw_key_u64(w, "allocs_in_log", pr->allocs_read);
    jsonw_key_u64(w, "frees_in_log", pr->frees_read);
    jsonw_key_u64(w, "frees_unmatched", pr->frees_unmatched);
    json_u64_or_null(w, "alloc_samples", has, f->alloc_samples);
    json_u64_or_null(w, "alloc_frees", has, f->alloc_frees);
    json_u64_or_null(w, "alloc_lost", has, f->alloc_lost);
    json_u64_or_null(w, "frees_lost", has, f->frees_lost);
    json_u64_or_null(w, "alloc_live", has, f->alloc_live);
    json_cost(w, "total", &c->process[i]);
    jsonw_end_object(w);
}

static int print_memory_json(const profile *p, const allocs_counts *c, const report_opts *o)
{
    uint32_t *order = malloc((p->nfuncs ? p->nfuncs : 1) * sizeof *order);
    if (!order)
        return cli_oom();
    jsonw w;
    jsonw_init(&w, stdout, 0);
    jsonw_begin_object(&w);
    jsonw_key_string(&w, "memory",
                     o->by == ALLOCS_BY_INUSE  ? "inuse"
                     : o->by == ALLOCS_BY_PEAK ? "peak"
                                               : "alloc");
    json_cost(&w, "total", &c->all);
    jsonw_key(&w, "peak");
    jsonw_begin_object(&w);
    jsonw_key(&w, "t_s");
    if (c->peak.found)
        jsonw_double(&w, c->peak.t_s, 6);
    else
        jsonw_null(&w);
    jsonw_key_u64(&w, "bytes", cli_bytes_count(c->peak.bytes));
    jsonw_key_u64(&w, "objects", cli_bytes_count(c->peak.objects));
    jsonw_key_u64(&w, "samples", c->peak.samples);
    jsonw_end_object(&w);
    jsonw_key_u64(&w, "freed", c->freed);
    jsonw_key_u64(&w, "untracked", c->untracked);
    jsonw_break(&w, 1);
    jsonw_key(&w, "domains");
    jsonw_begin_object(&w);
    for (int d = 0; d < PYPROF_ALLOC_DOMAINS; d++) {
        jsonw_break(&w, 2);
        json_cost(&w, allocs_domain_name(d), &c->domain[d]);
    }
    jsonw_end_object(&w);
    jsonw_break(&w, 1);
    jsonw_key(&w, "processes");
    jsonw_begin_array(&w);
    for (size_t i = 0; i < p->nprocs; i++) {
        jsonw_break(&w, 2);
        print_memory_process_json(&w, p, c, i);
    }
    jsonw_end_array(&w);
    jsonw_break(&w, 1);
    jsonw_key(&w, "functions");
    jsonw_begin_array(&w);
    size_t n = allocs_sort_funcs(p, c, o->by, 0, order);
    if (o->top_given && n > o->top)
        n = o->top;
    for (size_t k = 0; k < n; k++) {
        uint32_t f = order[k];
        const profile_func *fn = &p->funcs[f];
        jsonw_break(&w, 2);
        jsonw_begin_object(&w);
        cli_json_func(&w, fn);
        json_cost(&w, "self", &c->self[f]);
        json_cost(&w, "total", &c->total[f]);
        jsonw_end_object(&w);
    }
    jsonw_end_array(&w);
    jsonw_end_object(&w);
    jsonw_finish(&w);
    free(order);
    return CLI_EXIT_OK;
}

static int report_memory(const profile *p, const report_opts *o, int json)
{
    int rc = cli_need_allocs(p);
    if (rc >= 0)
        return rc;
    allocs_counts c;
    if (allocs_sum(p, &c) < 0)
        return cli_oom();
    rc = json ? print_memory_json(p, &c, o) : print_memory_text(p, &c, o);
    allocs_counts_free(&c);
    return rc;
}

/* ---- --gil ---------------------------------------------------------------------------- */

static const char *const gil_key[PYPROF_GIL_STATES] = {"unknown", "held", "wait", "other",
                                                       "not_held"};

/* A stack on one line, innermost first: "f (file:line) < caller (file:line) < ...", at
 * most `max` functions. */
static void print_stack_line(const profile *p, uint32_t stack, unsigned max)
{
    const profile_stack *st = &p->stacks[stack];
    if (!st->nframes) {
        printf("(no Python frame)");
        return;
    }
    unsigned shown = 0;
    for (uint32_t k = st->nframes; k-- > 0 && shown < max; shown++) {
        if (shown)
            printf(" < ");
        cli_print_func(stdout, &p->funcs[p->frames[st->first + k].func]);
    }
    if (st->nframes > max)
        printf(" < ...");
}

static void json_stack(jsonw *w, const profile *p, uint32_t stack)
{
    const profile_stack *st = &p->stacks[stack];
    jsonw_key(w, "stack");
    jsonw_begin_array(w);
    for (uint32_t k = st->nframes; k-- > 0;) {
        const profile_frame *fr = &p->frames[st->first + k];
        jsonw_begin_object(w);
        cli_json_func(w, &p->funcs[fr->func]);
        jsonw_key_i64(w, "at_line", fr->line);
        jsonw_end_object(w);
    }
    jsonw_end_array(w);
}

static uint64_t gil_known(const uint64_t *samples)
{
    uint64_t n = 0;
    for (int g = 1; g < PYPROF_GIL_STATES; g++)
        n += samples[g];
    return n;
}

static int print_gil_text(const profile *p, const gilwait_counts *c, const report_opts *o)
{
    uint64_t known = gil_known(c->samples);
    printf("pyprof report --gil: %zu process%s, %zu samples, %" PRIu64 " with a GIL state\n",
           p->nprocs, p->nprocs == 1 ? "" : "es", p->nsamples, known);
    if (!known) {
        printf("\n  no sample says where its thread stood with the GIL: the logs were not\n"
               "  written in wall mode (PYPROF_CLOCK=wall)\n");
        return CLI_EXIT_OK;
    }
    printf("\n  held %.1f%%, waiting for the GIL %.1f%%, neither %.1f%%",
           cli_pct(c->samples[1], known), cli_pct(c->samples[2], known),
           cli_pct(c->samples[3], known));
    if (c->samples[PYPROF_GIL_NOT_HELD])
        printf(", not held (waits not seen) %.1f%%", cli_pct(c->samples[4], known));
    printf("\n  GIL waits with the holder's stack found: %.1f%%\n",
           cli_pct(c->attributed, c->samples[PYPROF_GIL_WAIT]));
    printf("\n  threads (share of each thread's samples)\n"
           "      pid      tid     held     wait  neither  not held  name\n");
    for (size_t i = 0; i < c->nthreads; i++) {
        const gilwait_thread *t = &c->threads[i];
        uint64_t n = gil_known(t->samples);
        if (!n)
            continue;
        const profile_thread *th = &p->threads[t->thread];
        printf("  %7" PRIu64 " %8" PRIu64 "  %6.1f%%  %6.1f%%  %6.1f%%   %6.1f%%  ",
               p->procs[th->process].pid, th->tid, cli_pct(t->samples[1], n),
               cli_pct(t->samples[2], n), cli_pct(t->samples[3], n), cli_pct(t->samples[4], n));
        cli_put_line(stdout, th->name);
        printf("\n");
    }
    if (!c->nstacks)
        return CLI_EXIT_OK;
    printf("\n  waiting for the GIL, by stack (share of all GIL waits), and who held it\n");
    size_t n = c->nstacks < o->top ? c->nstacks : o->top;
    for (size_t i = 0; i < n; i++) {
        const gilwait_stack *s = &c->stacks[i];
        printf("  %6.1f%%  ", cli_pct(s->samples, c->samples[PYPROF_GIL_WAIT]));
        print_stack_line(p, s->stack, 4);
        printf("\n");
        for (size_t h = 0; h < s->nholders && h < 3; h++) {
            printf("           %5.1f%% behind  ", cli_pct(s->holders[h].samples, s->samples));
            print_stack_line(p, s->holders[h].stack, 4);
            printf("\n");
        }
        if (s->attributed < s->samples)
            printf("           %5.1f%% behind  (no holder sample within a period)\n",
                   cli_pct(s->samples - s->attributed, s->samples));
    }
    return CLI_EXIT_OK;
}

static void json_gil_states(jsonw *w, const uint64_t *samples)
{
    for (int g = 0; g < PYPROF_GIL_STATES; g++)
        jsonw_key_u64(w, gil_key[g], samples[g]);
}

/* docs/JSON.md, "report gil". */
static int print_gil_json(const profile *p, const gilwait_counts *c, const report_opts *o)
{
    jsonw w;
    jsonw_init(&w, stdout, 0);
    jsonw_begin_object(&w);
    jsonw_key_u64(&w, "samples", p->nsamples);
    jsonw_key(&w, "states");
    jsonw_begin_object(&w);
    json_gil_states(&w, c->samples);
    jsonw_end_object(&w);
    jsonw_key_u64(&w, "attributed", c->attributed);
    jsonw_break(&w, 1);
    jsonw_key(&w, "threads");
    jsonw_begin_array(&w);
    for (size_t i = 0; i < c->nthreads; i++) {
        const gilwait_thread *t = &c->threads[i];
        const profile_thread *th = &p->threads[t->thread];
        jsonw_break(&w, 2);
        jsonw_begin_object(&w);
        jsonw_key_u64(&w, "pid", p->procs[th->process].pid);
        jsonw_key_u64(&w, "tid", th->tid);
        jsonw_key_string(&w, "name", th->name);
        json_gil_states(&w, t->samples);
        jsonw_end_object(&w);
    }
    jsonw_end_array(&w);
    jsonw_break(&w, 1);
    jsonw_key(&w, "waits");
    jsonw_begin_array(&w);
    size_t n = o->top_given && c->nstacks > o->top ? o->top : c->nstacks;
    for (size_t i = 0; i < n; i++) {
        const gilwait_stack *s = &c->stacks[i];
        jsonw_break(&w, 2);
        jsonw_begin_object(&w);
        jsonw_key_u64(&w, "samples", s->samples);
        jsonw_key_u64(&w, "attributed", s->attributed);
        json_stack(&w, p, s->stack);
        jsonw_key(&w, "holders");
        jsonw_begin_array(&w);
        for (size_t h = 0; h < s->nholders; h++) {
            jsonw_begin_object(&w);
            jsonw_key_u64(&w, "samples", s->holders[h].samples);
            json_stack(&w, p, s->holders[h].stack);
            jsonw_end_object(&w);
        }
        jsonw_end_array(&w);
        jsonw_end_object(&w);
    }
    jsonw_end_array(&w);
    jsonw_end_object(&w);
    jsonw_finish(&w);
    return CLI_EXIT_OK;
}

static int report_gil(const profile *p, const report_opts *o, int json)
{
    gilwait_counts c;
    if (gilwait_sum(p, &c) < 0)
        return cli_oom();
    int rc = json ? print_gil_json(p, &c, o) : print_gil_text(p, &c, o);
    gilwait_counts_free(&c);
    return rc;
}

static int report_option(void *ctx, int c, const char *arg)
{
    report_opts *o = ctx;
    if (c == 'g') {
        o->gil = 1;
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

int cmd_report(int argc, char **argv)
{
    static const struct option options[] = {
        {"top", required_argument, NULL, 't'},
        {"memory", optional_argument, NULL, 'm'},
        {"gil", no_argument, NULL, 'g'},
        {NULL, 0, NULL, 0},
    };
    static const cli_command cmd = {"report", cmd_report_usage, 1,    "",
                                    options,  report_option,    NULL, 0};
    report_opts o = {0, 20, 0, ALLOCS_BY_ALLOC, 0};
    aggregate_counts agg;
    memset(&agg, 0, sizeof agg);
    cli_args a;
    int rc = cli_start(&cmd, argc, argv, &o, &a);
    if (rc >= 0)
        goto cleanup;
    if (o.memory && o.gil)
        rc = cli_usage_error("report", "--memory and --gil are two reports: choose one");
    else if (o.memory)
        rc = report_memory(a.p, &o, a.json);
    else if (o.gil)
        rc = report_gil(a.p, &o, a.json);
    else if (aggregate_funcs(a.p, &agg) < 0)
        rc = cli_oom();
    else
        rc = a.json ? print_json(a.p, &agg, &o) : print_text(a.p, &agg, o.top);

cleanup:
    aggregate_counts_free(&agg);
    cli_args_free(&a);
    return rc;
}
