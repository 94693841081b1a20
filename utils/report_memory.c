/*
 * report_memory: `pyprof report --memory`, the summary of the sampled allocations.  See
 * report_memory.h.
 */
#include "report_memory.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "read/allocs.h"

#include "cli.h"
#include "cli_fmt.h"
#include "cli_log.h"
#include "cli_text.h"
#include "jsonw.h"

static const char *fmt_bytes(double v, char *buf, size_t len)
{
    return cli_fmt_bytes(cli_bytes_count(v), buf, len);
}

static double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

/* "1/16", or "1/16 to 1/64" when the shifts differ; with `times`, "16x" or "16x to
 * 64x". */
static const char *fmt_shifts(uint32_t lo, uint32_t hi, int times, char *buf, size_t len)
{
    unsigned long long a = 1ull << lo, b = 1ull << hi;
    if (times && lo == hi)
        snprintf(buf, len, "%llux", a);
    else if (times)
        snprintf(buf, len, "%llux to %llux", a, b);
    else if (lo == hi)
        snprintf(buf, len, "1/%llu", a);
    else
        snprintf(buf, len, "1/%llu to 1/%llu", a, b);
    return buf;
}

/* The allocation windows' lines, in a log that has some (or pauses of them). */
static void print_memory_windows(const profile_process *pr)
{
    const profile_awindows *aw = &pr->awin;
    char b1[64], b2[64], b3[64];
    if (aw->windows) {
        printf("  windows    small Python allocations seen in %" PRIu64 " window%s",
               aw->windows, aw->windows == 1 ? "" : "s");
        if (pr->end_us > 0)
            printf(", %.1f %% of the time", pct((double)aw->window_us, (double)pr->end_us));
        printf(" (duty %s, floor %s); estimates weigh them %s\n",
               fmt_shifts(aw->shift_min, aw->shift_max, 0, b1, sizeof b1),
               fmt_shifts(aw->floor_shift, aw->floor_shift, 0, b2, sizeof b2),
               fmt_shifts(aw->shift_min, aw->shift_max, 1, b3, sizeof b3));
    }
    if (aw->pauses) {
        printf("  paused     windows paused %s: another allocator hook was on top",
               cli_fmt_ns((uint64_t)aw->paused_us * 1000, b1, sizeof b1));
        if (aw->paused_unseen_us == aw->paused_us)
            printf(" (small requests not seen then)\n");
        else if (aw->paused_unseen_us == 0)
            printf(" (small requests all seen then, counted once)\n");
        else
            printf(" (small requests not seen for %s of it)\n",
                   cli_fmt_ns((uint64_t)aw->paused_unseen_us * 1000, b1, sizeof b1));
    }
}

static void print_memory_process(const profile *p, const allocs_counts *c, size_t i)
{
    const profile_process *pr = &p->procs[i];
    const pyprof_footer *f = &pr->footer;
    const allocs_cost *k = &c->process[i];
    char b1[64], b2[64];
    report_print_process(pr);
    printf("\n  log        %s\n", pr->path);
    if (pr->alloc_interval)
        printf("  sampling   one allocation per %s allocated, on average\n",
               cli_fmt_bytes(pr->alloc_interval, b1, sizeof b1));
    else
        printf("  sampling   off (every allocation the log holds counts as itself)\n");
    if (pr->awin.windows || pr->awin.pauses)
        print_memory_windows(pr);
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
           p->filter.has_to            ? " (--to)"
           : allocs_before_teardown(p) ? " of the program (before the interpreter's teardown)"
                                       : "",
           c->all.inuse_samples, c->freed, c->untracked);
    if (allocs_before_teardown(p))
        printf("             of which the interpreter's teardown then freed %" PRIu64
               " blocks sampled (the modules' objects)\n",
               c->teardown_freed);
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
    report_json_process_ident(w, pr);
    jsonw_key_string(w, "path", pr->path);
    jsonw_key_u64(w, "files", pr->nfiles);
    jsonw_key_u64(w, "alloc_interval", pr->alloc_interval);
    jsonw_key_u64(w, "allocs_in_log", pr->allocs_read);
    jsonw_key_u64(w, "frees_in_log", pr->frees_read);
    jsonw_key_u64(w, "frees_unmatched", pr->frees_unmatched);
    report_json_u64_or_null(w, "alloc_samples", has, f->alloc_samples);
    report_json_u64_or_null(w, "alloc_frees", has, f->alloc_frees);
    report_json_u64_or_null(w, "alloc_lost", has, f->alloc_lost);
    report_json_u64_or_null(w, "frees_lost", has, f->frees_lost);
    report_json_u64_or_null(w, "alloc_live", has, f->alloc_live);
    json_cost(w, "total", &c->process[i]);
    const profile_awindows *aw = &pr->awin;
    if (aw->windows || aw->pauses) {
        /* docs/JSON.md: only in logs with allocation windows (or pauses of them). */
        jsonw_key(w, "alloc_windows");
        jsonw_begin_object(w);
        jsonw_key_u64(w, "windows", aw->windows);
        jsonw_key_double(w, "window_s", (double)aw->window_us / 1e6, 6);
        jsonw_key_double(w, "window_share",
                         pr->end_us > 0 ? (double)aw->window_us / (double)pr->end_us : 0, 6);
        jsonw_key_u64(w, "shift_min", aw->shift_min);
        jsonw_key_u64(w, "shift_max", aw->shift_max);
        jsonw_key_u64(w, "floor_shift", aw->floor_shift);
        jsonw_key_u64(w, "weighed", aw->weighed);
        jsonw_key_u64(w, "pauses", aw->pauses);
        jsonw_key_double(w, "paused_s", (double)aw->paused_us / 1e6, 6);
        jsonw_key_double(w, "paused_unseen_s", (double)aw->paused_unseen_us / 1e6, 6);
        jsonw_end_object(w);
    }
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
    jsonw_key_u64(&w, "teardown_freed", c->teardown_freed);
    jsonw_key(&w, "inuse_at");
    jsonw_string(&w, p->filter.has_to            ? "to"
                     : allocs_before_teardown(p) ? "program_end"
                                                 : "log_end");
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

int report_memory(const profile *p, const report_opts *o, int json)
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
