/*
 * cmd_info: `pyprof info` — every header and footer field of each log, what it contains,
 * and an integrity check: complete, truncated (and how much survived) or corrupted.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read/aggregate.h"

#include "cli.h"
#include "cli_args.h"
#include "cli_fmt.h"
#include "cli_log.h"
#include "cli_text.h"
#include "cmd.h"

/* clang-format off */
const char cmd_info_usage[] =
    "usage: pyprof info [options] LOG... | DIR...\n"
    "\n"
    "Prints each log's metadata — process, run id, start time, host, program and arguments,\n"
    "Python version, sampling clock and period — its footer — how the process ended, how\n"
    "many samples were taken, dropped and why, the rate achieved, how far the CPU timers\n"
    "ran from the kernel's CPU clock, the CPU time the library used — and checks its\n"
    "integrity: complete, or cut short (and how much survived), or corrupted.  The files of\n"
    "a rotated series are one process: their list (seq, where each starts, how it ended,\n"
    "path) follows the run id, and the snapshots `pyprof dump` took are listed by id and\n"
    "time, and the spans counted (started, stopped, unfinished: no stop in the logs; lost:\n"
    "starts and stops the library could not queue).\n"
    "\n"
    "options:\n"
    CLI_FILTER_HELP
    "  -h, --help       show this text\n"
    "\n"
    "The filters choose the logs (--pid, --run) and, with --thread, --from and --to, which\n"
    "samples count as kept.  Exit status: 0 ok (a truncated log gets a warning), 1 when a\n"
    "log is missing, not a pyprof log, too new or corrupted, 2 usage.\n"
    "\n"
    "EXAMPLES\n"
    "  pyprof info pyprof.python3.4242.x1y2z3.lz4\n"
    "  pyprof info /tmp/pyprof.Ab12Cd\n"
    "  pyprof info --run 0123456789abcdef logs/\n";
/* clang-format on */

static void print_whole(const pyprof_footer *f);
static void print_clock(const pyprof_footer *f);
static void print_footer(const profile *p, size_t i)
{
    const profile_process *pr = &p->procs[i];
    const pyprof_footer *f = &pr->footer;
    char b1[128], b2[64];
    if (!pr->has_footer) {
        printf("  ended           unknown: the log has no footer (the process was killed or "
               "crashed, or is still running)\n");
        printf("  last record at  %.3f s\n", (double)pr->last_t_us / 1e6);
        return;
    }
    printf("  ended           %s at %s, after %.3f s\n", cli_fmt_end(pr, b1, sizeof b1),
           cli_fmt_unix_ns(f->end_unix_ns, b2, sizeof b2), (double)f->duration_ns / 1e9);
    printf("  samples         %" PRIu64 " written, %" PRIu64 " sampling signals handled\n",
           f->samples, f->signals);
    uint64_t lost = aggregate_process_dropped(p, i);
    printf("  dropped         %" PRIu64 " samples lost", lost);
    if (lost)
        printf(" (%.1f%% of %" PRIu64 ")", cli_pct(lost, f->samples + lost), f->samples + lost);
    putchar('\n');
    for (int d = 0; d < PYPROF_DROP_COUNT; d++) {
        if (!f->dropped[d])
            continue;
        int not_lost = d == PYPROF_DROP_NOT_READY || d == PYPROF_DROP_NO_PYTHON;
        printf("    %12" PRIu64 "  %s%s\n", f->dropped[d], cli_drop_text(d),
               not_lost ? "; nothing to sample, not a loss" : "");
    }
    printf("  achieved rate   %.1f Hz %s\n", (double)f->achieved_hz_milli / 1000.0,
           pr->clock == PYPROF_CLOCK_WALL ? "per thread (wall clock)"
                                          : "per CPU second (cpu clock)");
    print_clock(f);
    printf("  library CPU     %.3f ms", (double)f->lib_cpu_ns / 1e6);
    if (f->has_whole && f->process_cpu_ns)
        printf(" (%.2f%% of the process's CPU)", cli_pct(f->lib_cpu_ns, f->process_cpu_ns));
    else if (f->duration_ns)
        printf(" (%.2f%% of the run's wall time)", cli_pct(f->lib_cpu_ns, f->duration_ns));
    printf(": handler, writer, thread timers%s\n",
           f->has_whole && f->calib_ns ? ", measuring the signal's cost" : "");
    print_whole(f);
    if (!f->has_cost)
        return;
    printf("  handler time    %.3f ms, %.2f us per sample; writer %.3f ms, %.2f us per "
           "sample\n",
           (double)f->handler_ns / 1e6,
           f->samples ? (double)f->handler_ns / 1e3 / (double)f->samples : 0.0,
           (double)f->writer_ns / 1e6,
           f->samples ? (double)f->writer_ns / 1e3 / (double)f->samples : 0.0);
    if (f->has_timers && (f->timer_ns || f->untimed_ns))
        printf("  thread timers   %.3f ms making and releasing them; threads' CPU outside "
               "them (never sampled, no Python runs then) %.3f ms\n",
               (double)f->timer_ns / 1e6, (double)f->untimed_ns / 1e6);
    printf("    %-14s %10s %10s %10s\n", "stack depth", "samples", "median", "p90");
    uint64_t lo = 0;
    for (uint32_t d = 0; d < f->cost_ndepth; d++) {
        uint64_t n = cli_cost_samples(f, d), hi = f->cost_depth_bound[d];
        char range[32];
        if (hi)
            snprintf(range, sizeof range, "%" PRIu64 "-%" PRIu64, lo + 1, hi);
        else
            snprintf(range, sizeof range, "> %" PRIu64, lo);
        lo = hi;
        if (!n)
            continue;
        printf("    %-14s %10" PRIu64 " %8.2f us %7.2f us\n", range, n,
               cli_cost_quantile_ns(f, d, 0.5) / 1e3, cli_cost_quantile_ns(f, d, 0.9) / 1e3);
    }
}

/* The whole cost: the library's CPU plus what each signal costs outside the handler, as
 * measured in the process (signal_cost_ns). */
static void print_whole(const pyprof_footer *f)
{
    if (!f->has_whole)
        return;
    if (!f->signal_cost_ns) {
        printf("  whole cost      not measured (cpu clock with perf timers only, after a "
               "second of profiling)\n");
        return;
    }
    uint64_t outside = f->signals * f->signal_cost_ns, whole = f->lib_cpu_ns + outside;
    printf("  whole cost      %.3f ms", (double)whole / 1e6);
    if (f->process_cpu_ns)
        printf(" (%.2f%% of the process's CPU)", cli_pct(whole, f->process_cpu_ns));
    if (f->samples)
        printf(", %.1f us per sample", (double)whole / 1e3 / (double)f->samples);
    printf(": %" PRIu64 " signals x %.1f us outside the handler (timer interrupt, signal "
           "delivery and return; measured over %" PRIu64 " signals), plus the library CPU\n",
           f->signals, (double)f->signal_cost_ns / 1e3, f->calib_signals);
}

/* The clock section: how far the sampling timers ran from the CPU the kernel accounted
 * to the same threads, and whether the samples were corrected to the kernel's figure.
 * Nothing without per-thread timers (the kernel's figure is 0). */
static void print_clock(const pyprof_footer *f)
{
    if (!f->has_clock || !f->clock_kernel_ns)
        return;
    const char *way, *why;
    double pct = cli_clock_drift(f, &way, &why);
    double timer_s = (double)f->clock_timer_ns / 1e9;
    double kernel_s = (double)f->clock_kernel_ns / 1e9;
    printf("  cpu clocks      the timer ran ");
    if (fabs(pct) < 0.5)
        printf("with the kernel's CPU clock (%+.1f%%: timers %.3f s, kernel %.3f s)", pct,
               timer_s, kernel_s);
    else
        printf("%.1f%% %s the kernel's CPU clock (timers %.3f s, kernel %.3f s: %s)", fabs(pct),
               way, timer_s, kernel_s, why);
    printf("; samples %s\n", f->clock_corrected ? "corrected" : "not corrected");
}

/* Native mode: what the footer counted of the native walks, and how the tool merged and
 * symbolized the samples kept. */
static void print_native(const profile_process *pr)
{
    const pyprof_footer *f = &pr->footer;
    if (pr->has_footer && f->has_native) {
        printf("  native walks    %" PRIu64 " whole, %" PRIu64 " truncated, %" PRIu64
               " skipped; %.3f ms walking",
               f->native_ok, f->native_truncated, f->native_skipped,
               (double)f->native_ns / 1e6);
        uint64_t walked = f->native_ok + f->native_truncated;
        if (walked)
            printf(" (%.2f us per walk)", (double)f->native_ns / 1e3 / (double)walked);
        putchar('\n');
    }
    printf("  native stacks   %" PRIu64 " modules, %" PRIu64 " native stacks; %" PRIu64
           " samples kept with one, %" PRIu64 " of them unmerged (Python stack, then the "
           "native leaf); %" PRIu64 " addresses without a symbol\n",
           pr->modules_read, pr->nstacks_read, pr->native_samples, pr->native_unmerged,
           pr->native_unresolved);
}

/* A rotated series: its files by seq, where each starts on the process's axis and how it
 * ended. */
static void print_series(const profile_process *pr)
{
    const profile_file *last = &pr->files[pr->nfiles - 1];
    int rotated = pr->nfiles > 1 || pr->files[0].seq ||
                  (last->has_footer && last->footer.end == PYPROF_END_ROTATED);
    if (!rotated)
        return;
    uint64_t span = last->seq - pr->files[0].seq + 1;
    printf("  series          %zu file%s, seq %" PRIu64 " to %" PRIu64, pr->nfiles,
           pr->nfiles == 1 ? "" : "s", pr->files[0].seq, last->seq);
    if (span > pr->nfiles)
        printf(" (%" PRIu64 " missing)", span - pr->nfiles);
    if (pr->files[0].seq)
        printf(" (seq 0 to %" PRIu64 " missing)", pr->files[0].seq - 1);
    putchar('\n');
    for (size_t k = 0; k < pr->nfiles; k++) {
        const profile_file *f = &pr->files[k];
        const char *how = f->end_error == -PYPROF_R_TRUNCATED   ? "truncated"
                          : f->end_error                        ? "corrupted"
                          : !f->has_footer                      ? "truncated"
                          : f->footer.end == PYPROF_END_ROTATED ? "rotated"
                                                                : cli_end_text(f->footer.end);
        printf("    seq %-6" PRIu64 " from %10.3f s  %-10s %s\n", f->seq,
               (double)f->offset_us / 1e6, how, f->path);
    }
}

/* The snapshots (`pyprof dump`) of process i: their ids and times. */
static void print_snapshots(const profile *p, size_t i)
{
    const profile_process *pr = &p->procs[i];
    if (!pr->snapshots)
        return;
    printf("  snapshots       %" PRIu64 ":", pr->snapshots);
    size_t shown = 0;
    for (size_t k = 0; k < p->nsnapshots; k++) {
        const profile_snapshot *s = &p->snapshots[k];
        if (s->process != i)
            continue;
        if (shown++ == 20) {
            printf(" ...");
            break;
        }
        printf("%s #%" PRIu64 " at %.3f s (%u threads)", shown > 1 ? "," : "", s->id,
               (double)s->t_us / 1e6, s->nthreads);
    }
    putchar('\n');
}

static void print_log(const profile *p, size_t i, int filtered)
{
    const profile_process *pr = &p->procs[i];
    char b1[64], b2[64], b3[64];
    printf("%s%s\n", i ? "\n" : "", pr->path);
    printf("  format          version %" PRIu64 "\n", pr->format_version);
    printf("  process         pid %" PRIu64 ", parent %" PRIu64 "\n", pr->pid, pr->ppid);
    printf("  run id          %s (window %" PRIu64 ")\n", pr->run_id, pr->window);
    print_series(pr);
    printf("  started         %s\n", cli_fmt_unix_ns(pr->start_unix_ns, b1, sizeof b1));
    printf("  host            %s\n", pr->host);
    printf("  executable      %s\n", pr->exe);
    printf("  command line    ");
    cli_print_argv(stdout, pr->argv, pr->argc);
    putchar('\n');
    printf("  python          %s (0x%08" PRIx64 ")\n", pr->python_version, pr->python_hex);
    printf("  sampling        %s clock, every %s requested, timer %s\n",
           cli_clock_name(pr->clock), cli_fmt_ns(pr->period_ns, b1, sizeof b1), pr->timer);
    printf("  max depth       %" PRIu64 " frames\n", pr->max_depth);
    printf("  options         memory %s, native %s\n",
           pr->flags & PYPROF_HDR_MEMORY ? "on" : "off",
           pr->flags & PYPROF_HDR_NATIVE ? "on" : "off");
    print_footer(p, i);
    if (pr->flags & PYPROF_HDR_NATIVE)
        print_native(pr);
    printf("  contents        %" PRIu64 " threads, %" PRIu64 " code objects, %" PRIu64
           " stacks, %" PRIu64 " samples, %" PRIu64 " RSS points",
           pr->threads_read, pr->codes_read, pr->stacks_read, pr->samples_read, pr->rss_read);
    if (pr->awindows_read)
        printf(", %" PRIu64 " allocation window records", pr->awindows_read);
    if (pr->unknown_read)
        printf(", %" PRIu64 " records of newer types (skipped)", pr->unknown_read);
    putchar('\n');
    print_snapshots(p, i);
    /* The footer's spans_lost: starts and stops the library could not queue. */
    uint64_t lost = pr->has_footer && pr->footer.has_spans ? pr->footer.spans_lost : 0;
    if (pr->span_starts_read || pr->span_stops_read || lost) {
        printf("  spans           %" PRIu64 " started, %" PRIu64 " stopped",
               pr->span_starts_read, pr->span_stops_read);
        if (lost)
            printf("; %" PRIu64 " starts and stops lost (the library's buffer was full)", lost);
        if (pr->spans != pr->span_starts_read)
            printf("; %" PRIu64 " kept", pr->spans);
        if (pr->spans_unfinished)
            printf("; %" PRIu64 " unfinished (no stop in the logs)", pr->spans_unfinished);
        if (pr->span_stops_unmatched)
            printf("; %" PRIu64 " stops of spans not in the logs (ignored)",
                   pr->span_stops_unmatched);
        putchar('\n');
    }
    if (pr->has_rss)
        printf("  memory          RSS start %s, peak %s, end %s\n",
               cli_fmt_bytes(pr->rss_start, b1, sizeof b1),
               cli_fmt_bytes(pr->rss_peak, b2, sizeof b2),
               cli_fmt_bytes(pr->rss_end, b3, sizeof b3));
    if (filtered)
        printf("  kept            %" PRIu64 " samples match the filters\n", pr->samples);
    if (pr->end_error == 0 && pr->footer.samples != pr->samples_read)
        printf("  integrity       complete: %" PRIu64 " records, %" PRIu64
               " bytes decompressed; but the footer counts %" PRIu64 " samples, not %" PRIu64
               "\n",
               pr->records, pr->bytes, pr->footer.samples, pr->samples_read);
    else if (pr->end_error == 0)
        printf("  integrity       complete: %" PRIu64 " records, %" PRIu64
               " bytes decompressed\n",
               pr->records, pr->bytes);
    else if (pr->end_error == -PYPROF_R_TRUNCATED)
        printf("  integrity       TRUNCATED after %" PRIu64 " records (%" PRIu64
               " bytes decompressed); %" PRIu64 " samples survived\n",
               pr->records, pr->bytes, pr->samples_read);
    else
        printf("  integrity       CORRUPTED after %" PRIu64 " records (byte %" PRIu64
               " decompressed): %s; %" PRIu64 " samples before the damage\n",
               pr->records, pr->bytes, pyprof_reader_strerror(pr->end_error), pr->samples_read);
}

int cmd_info(int argc, char **argv)
{
    /* A corrupted log is shown up to the damage, and still fails the command. */
    static const cli_command cmd = {"info", cmd_info_usage, 0,    "",
                                    NULL,   NULL,           NULL, PROFILE_KEEP_CORRUPT};
    cli_args a;
    int rc = cli_start(&cmd, argc, argv, NULL, &a);
    if (rc >= 0)
        goto cleanup;
    rc = CLI_EXIT_OK;
    const profile *p = a.p;
    int filtered = a.cf.f.ntids || a.cf.f.has_from || a.cf.f.has_to || a.cf.f.nspan_names;
    for (size_t i = 0; i < p->nprocs; i++) {
        print_log(p, i, filtered);
        if (p->procs[i].end_error && p->procs[i].end_error != -PYPROF_R_TRUNCATED)
            rc = CLI_EXIT_BAD_INPUT;
    }
    if (p->nprocs == 0)
        printf("no log matches the filters\n");

cleanup:
    cli_args_free(&a);
    return rc;
}
