/*
 * series: the files of a rotated series as one process.  See series.h.
 */
#include "series.h"

#include <stdlib.h>
#include <string.h>

static int same_series(const series_key *k, const profile_process *pr)
{
    return k->pid == pr->pid && k->window == pr->window &&
           k->series_start_unix_ns == pr->series_start_unix_ns && !strcmp(k->host, pr->host) &&
           !strcmp(k->run_id, pr->run_id);
}

static int process_has_seq(const profile_process *pr, uint64_t seq)
{
    for (size_t i = 0; i < pr->nfiles; i++)
        if (pr->files[i].seq == seq)
            return 1;
    return 0;
}

uint32_t series_process(const profile *p, const series_key *k)
{
    for (size_t i = 0; i < p->nprocs; i++)
        if (same_series(k, &p->procs[i]) && !process_has_seq(&p->procs[i], k->seq))
            return (uint32_t)i;
    return UINT32_MAX;
}

/* Adds file `b`'s footer into the sums `a`.  The cost histograms add up only when their
 * buckets are the same (one writer's). */
static void footer_add(pyprof_footer *a, const pyprof_footer *b)
{
    a->samples += b->samples;
    a->signals += b->signals;
    a->lib_cpu_ns += b->lib_cpu_ns;
    for (int d = 0; d < PYPROF_DROP_COUNT; d++)
        a->dropped[d] += b->dropped[d];
    if (b->has_cost) {
        if (!a->has_cost) {
            a->has_cost = 1;
            a->cost_ntime = b->cost_ntime;
            a->cost_ndepth = b->cost_ndepth;
            memcpy(a->cost_time_bound, b->cost_time_bound, sizeof a->cost_time_bound);
            memcpy(a->cost_depth_bound, b->cost_depth_bound, sizeof a->cost_depth_bound);
        }
        a->handler_ns += b->handler_ns;
        a->writer_ns += b->writer_ns;
        if (a->cost_ntime == b->cost_ntime && a->cost_ndepth == b->cost_ndepth &&
            !memcmp(a->cost_time_bound, b->cost_time_bound, sizeof a->cost_time_bound) &&
            !memcmp(a->cost_depth_bound, b->cost_depth_bound, sizeof a->cost_depth_bound))
            for (uint32_t d = 0; d < b->cost_ndepth; d++)
                for (uint32_t t = 0; t < b->cost_ntime; t++)
                    a->cost[d][t] += b->cost[d][t];
    }
    if (b->has_timers) {
        a->has_timers = 1;
        a->timer_ns += b->timer_ns;
        a->untimed_ns += b->untimed_ns;
    }
    if (b->has_native) {
        a->has_native = 1;
        a->native_ok += b->native_ok;
        a->native_truncated += b->native_truncated;
        a->native_skipped += b->native_skipped;
        a->native_ns += b->native_ns;
    }
    if (b->has_whole) {
        /* The cost per signal is the process's, measured once: the files before the
         * measurement say 0, and the figure stands for every file's signals. */
        a->has_whole = 1;
        if (b->signal_cost_ns) {
            a->signal_cost_ns = b->signal_cost_ns;
            a->calib_signals = b->calib_signals;
        }
        a->calib_ns += b->calib_ns;
        a->process_cpu_ns += b->process_cpu_ns;
    }
    if (b->has_spans) {
        a->has_spans = 1;
        a->spans_lost += b->spans_lost;
    }
    if (b->has_alloc) {
        /* Counts add up; the blocks still followed are the latest file's (files come in
         * seq order here), which counts those of the files before it. */
        a->has_alloc = 1;
        a->alloc_samples += b->alloc_samples;
        a->alloc_frees += b->alloc_frees;
        a->alloc_lost += b->alloc_lost;
        a->frees_lost += b->frees_lost;
        a->alloc_live = b->alloc_live;
    }
    if (b->has_clock) {
        /* Like the other sections, over the files that have it: both sums cover the same
         * files, so their ratio is still how far the timers ran from the kernel's clock.
         * The series' samples stand for the kernel's CPU only if every file's do. */
        a->clock_corrected = (a->has_clock ? a->clock_corrected : 1) & b->clock_corrected;
        a->has_clock = 1;
        a->clock_timer_ns += b->clock_timer_ns;
        a->clock_kernel_ns += b->clock_kernel_ns;
    }
}

int series_combine(profile_process *pr)
{
    const profile_file *last = &pr->files[pr->nfiles - 1];
    if (strcmp(pr->path, pr->files[0].path)) {
        char *path = strdup(pr->files[0].path);
        if (!path)
            return -1;
        free(pr->path);
        pr->path = path;
    }
    pr->has_footer = last->has_footer;
    pr->last_t_us = last->last_t_us;
    pr->end_error = last->end_error;
    for (size_t i = 0; i < pr->nfiles; i++)
        if (pr->files[i].end_error && pr->files[i].end_error != -PYPROF_R_TRUNCATED) {
            pr->end_error = pr->files[i].end_error;
            break;
        }
    if (pr->nfiles == 1) {
        /* One file: its footer as it is, but for where it ends on the process's axis. */
        pr->footer = last->footer;
        if (last->has_footer)
            pr->footer.duration_ns += last->offset_us * 1000;
        return 0;
    }
    pyprof_footer *f = &pr->footer;
    memset(f, 0, sizeof *f);
    double cpu_s = 0;        /* the time the samples stand for, over the files that say */
    uint64_t hz_samples = 0; /* their samples */
    for (size_t i = 0; i < pr->nfiles; i++) {
        const profile_file *pf = &pr->files[i];
        if (!pf->has_footer)
            continue;
        footer_add(f, &pf->footer);
        if (pf->footer.achieved_hz_milli && pf->footer.samples) {
            hz_samples += pf->footer.samples;
            cpu_s += (double)pf->footer.samples * 1000.0 / (double)pf->footer.achieved_hz_milli;
        }
    }
    if (cpu_s > 0)
        f->achieved_hz_milli = (uint64_t)((double)hz_samples * 1000.0 / cpu_s + 0.5);
    if (last->has_footer) {
        f->end_unix_ns = last->footer.end_unix_ns;
        f->duration_ns = last->offset_us * 1000 + last->footer.duration_ns;
        f->end = last->footer.end;
        f->status = last->footer.status;
        f->status_known = last->footer.status_known;
    }
    return 0;
}

long series_add_file(profile *p, uint32_t proc, const char *path, const pyprof_header *h)
{
    profile_process *pr = &p->procs[proc];
    profile_file *files = realloc(pr->files, (pr->nfiles + 1) * sizeof *files);
    if (!files)
        return -1;
    pr->files = files;
    size_t at = pr->nfiles;
    while (at > 0 && files[at - 1].seq > h->seq)
        at--;
    memmove(files + at + 1, files + at, (pr->nfiles - at) * sizeof *files);
    profile_file *pf = &files[at];
    memset(pf, 0, sizeof *pf);
    pr->nfiles++;
    pf->path = strdup(path);
    if (!pf->path)
        return -1;
    pf->seq = h->seq;
    pf->offset_us = h->offset_us;
    pf->start_unix_ns = h->start_unix_ns;
    pf->alloc_interval = h->alloc_interval;
    return (long)at;
}
