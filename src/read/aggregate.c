/*
 * aggregate: sums, orders and derived numbers over a loaded profile.  See aggregate.h.
 *
 * Sums over samples go through the deduplicated stacks where they can: each stack is
 * weighted by its samples once, so the cost is the number of distinct stacks, not of
 * samples.
 */
#include "aggregate.h"

#include <stdlib.h>
#include <string.h>

uint64_t aggregate_sample_us(const profile *p, const profile_sample *s)
{
    if (s->cpu_us)
        return s->cpu_us;
    return p->procs[s->process].period_ns / 1000;
}

/* Within one thread: by time, then by position in the log. */
static int cmp_sample_time(const void *a, const void *b, void *arg)
{
    const profile *p = arg;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    const profile_sample *x = &p->samples[i], *y = &p->samples[j];
    if (x->t_us != y->t_us)
        return x->t_us < y->t_us ? -1 : 1;
    return (i > j) - (i < j);
}

uint32_t *aggregate_samples_by_thread(const profile *p)
{
    /* A counting sort by thread keeps the log's order within each thread, which is
     * nearly the time order already (a log is written in time order per writer pass):
     * a thread's samples are sorted only when they are not in order. */
    size_t nt = p->nthreads;
    uint32_t *o = malloc((p->nsamples ? p->nsamples : 1) * sizeof *o);
    size_t *first = calloc(nt + 1, sizeof *first);
    if (!o || !first) {
        free(o);
        free(first);
        return NULL;
    }
    for (size_t i = 0; i < p->nsamples; i++)
        first[p->samples[i].thread + 1]++;
    for (size_t t = 0; t < nt; t++)
        first[t + 1] += first[t];
    for (size_t i = 0; i < p->nsamples; i++)
        o[first[p->samples[i].thread]++] = (uint32_t)i;
    /* first[t] is now where thread t ends, and so where thread t + 1 starts. */
    for (size_t t = 0, start = 0; t < nt; start = first[t++]) {
        uint32_t *run = o + start;
        size_t n = first[t] - start, k = 1;
        while (k < n && p->samples[run[k - 1]].t_us <= p->samples[run[k]].t_us)
            k++;
        if (k < n)
            qsort_r(run, n, sizeof *run, cmp_sample_time, (void *)p);
    }
    free(first);
    return o;
}

static int cmp_thread_order(const void *a, const void *b, void *arg)
{
    const profile *p = arg;
    const profile_thread *x = &p->threads[*(const uint32_t *)a];
    const profile_thread *y = &p->threads[*(const uint32_t *)b];
    if (x->process != y->process)
        return x->process < y->process ? -1 : 1;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    return (x->tid > y->tid) - (x->tid < y->tid);
}

uint32_t *aggregate_threads_by_samples(const profile *p)
{
    uint32_t *o = malloc((p->nthreads ? p->nthreads : 1) * sizeof *o);
    if (!o)
        return NULL;
    for (size_t i = 0; i < p->nthreads; i++)
        o[i] = (uint32_t)i;
    qsort_r(o, p->nthreads, sizeof *o, cmp_thread_order, (void *)p);
    return o;
}

uint32_t aggregate_max_depth(const profile *p)
{
    uint32_t d = 0;
    for (size_t s = 0; s < p->nstacks; s++)
        if (p->stacks[s].nframes > d)
            d = p->stacks[s].nframes;
    return d;
}

int aggregate_stack_costs(const profile *p, uint64_t **count, uint64_t **us)
{
    size_t n = p->nstacks ? p->nstacks : 1;
    *count = calloc(n, sizeof **count);
    *us = calloc(n, sizeof **us);
    if (!*count || !*us) {
        free(*count);
        free(*us);
        *count = *us = NULL;
        return -1;
    }
    for (size_t i = 0; i < p->nsamples; i++) {
        const profile_sample *s = &p->samples[i];
        (*count)[s->stack]++;
        (*us)[s->stack] += aggregate_sample_us(p, s);
    }
    return 0;
}

/* The full length of a process's profiling, unclipped. */
static double process_length(const profile_process *pr)
{
    if (pr->has_footer)
        return (double)pr->footer.duration_ns / 1e9;
    return pr->last_t_us > 0 ? (double)pr->last_t_us / 1e6 : 0.0;
}

/* The window [*a, *b] (seconds since the process's start) that the filters keep. */
static void process_window(const profile *p, size_t i, double *a, double *b)
{
    *a = 0;
    *b = process_length(&p->procs[i]);
    if (p->filter.has_from && p->filter.from_s > *a)
        *a = p->filter.from_s;
    if (p->filter.has_to && p->filter.to_s < *b)
        *b = p->filter.to_s;
    if (*b < *a)
        *b = *a;
}

double aggregate_process_duration(const profile *p, size_t i)
{
    double a, b;
    process_window(p, i, &a, &b);
    return b - a;
}

double aggregate_duration(const profile *p)
{
    double lo = 0, hi = 0;
    for (size_t i = 0; i < p->nprocs; i++) {
        double a, b, start = (double)p->procs[i].start_unix_ns / 1e9;
        process_window(p, i, &a, &b);
        if (i == 0 || start + a < lo)
            lo = start + a;
        if (i == 0 || start + b > hi)
            hi = start + b;
    }
    return hi - lo;
}

uint64_t aggregate_process_dropped(const profile *p, size_t i)
{
    const profile_process *pr = &p->procs[i];
    uint64_t n = 0;
    if (!pr->has_footer)
        return 0;
    for (int d = 0; d < PYPROF_DROP_COUNT; d++)
        if (d != PYPROF_DROP_NOT_READY && d != PYPROF_DROP_NO_PYTHON)
            n += pr->footer.dropped[d];
    return n;
}

uint64_t aggregate_dropped(const profile *p)
{
    uint64_t d = 0;
    for (size_t i = 0; i < p->nprocs; i++)
        d += aggregate_process_dropped(p, i);
    return d;
}

typedef struct line_entry {
    uint32_t func;
    int32_t line;
    uint64_t self;
} line_entry;

static int cmp_line_entry(const void *a, const void *b)
{
    const line_entry *x = a, *y = b;
    if (x->func != y->func)
        return x->func < y->func ? -1 : 1;
    if (x->self != y->self)
        return x->self > y->self ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

static int cmp_line_key(const void *a, const void *b)
{
    const line_entry *x = a, *y = b;
    if (x->func != y->func)
        return x->func < y->func ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

int aggregate_funcs(const profile *p, aggregate_counts *agg)
{
    memset(agg, 0, sizeof *agg);
    size_t nf = p->nfuncs ? p->nfuncs : 1, ns = p->nstacks ? p->nstacks : 1;
    uint32_t *stamp = malloc(nf * sizeof *stamp);
    line_entry *ent = malloc(ns * sizeof *ent);
    agg->stack_weight = calloc(ns, sizeof *agg->stack_weight);
    agg->self = calloc(nf, sizeof *agg->self);
    agg->total = calloc(nf, sizeof *agg->total);
    agg->line_first = calloc(nf + 1, sizeof *agg->line_first);
    agg->lines = malloc(ns * sizeof *agg->lines);
    int ret = -1;
    if (!stamp || !ent || !agg->stack_weight || !agg->self || !agg->total || !agg->line_first ||
        !agg->lines)
        goto cleanup;

    for (size_t i = 0; i < p->nsamples; i++)
        agg->stack_weight[p->samples[i].stack]++;

    /* Each stack once, weighted: a function counts once per sample in `total` however
     * often it recurses, which the stamp (the last stack that counted it) ensures. */
    memset(stamp, 0xff, nf * sizeof *stamp);
    size_t nent = 0;
    for (size_t s = 0; s < p->nstacks; s++) {
        uint64_t w = agg->stack_weight[s];
        const profile_stack *st = &p->stacks[s];
        if (!w || !st->nframes)
            continue;
        const profile_frame *fr = p->frames + st->first;
        for (uint32_t k = 0; k < st->nframes; k++) {
            if (stamp[fr[k].func] != (uint32_t)s) {
                stamp[fr[k].func] = (uint32_t)s;
                agg->total[fr[k].func] += w;
            }
        }
        const profile_frame *leaf = &fr[st->nframes - 1];
        agg->self[leaf->func] += w;
        ent[nent].func = leaf->func;
        ent[nent].line = leaf->line;
        ent[nent].self = w;
        nent++;
    }

    /* Merge the stacks that end at the same (function, line), then order each
     * function's lines by their counts. */
    qsort(ent, nent, sizeof *ent, cmp_line_key);
    size_t nl = 0;
    for (size_t i = 0; i < nent; i++) {
        if (nl && ent[nl - 1].func == ent[i].func && ent[nl - 1].line == ent[i].line)
            ent[nl - 1].self += ent[i].self;
        else
            ent[nl++] = ent[i];
    }
    qsort(ent, nl, sizeof *ent, cmp_line_entry);
    for (size_t i = 0; i < nl; i++) {
        agg->lines[i].line = ent[i].line;
        agg->lines[i].self = ent[i].self;
        agg->line_first[ent[i].func + 1]++;
    }
    for (size_t f = 0; f < p->nfuncs; f++)
        agg->line_first[f + 1] += agg->line_first[f];
    ret = 0;

cleanup:
    free(stamp);
    free(ent);
    if (ret < 0)
        aggregate_counts_free(agg);
    return ret;
}

void aggregate_counts_free(aggregate_counts *agg)
{
    free(agg->stack_weight);
    free(agg->self);
    free(agg->total);
    free(agg->lines);
    free(agg->line_first);
    memset(agg, 0, sizeof *agg);
}

typedef struct sort_ctx {
    const profile *p;
    const uint64_t *key, *other;
} sort_ctx;

static int cmp_func(const void *a, const void *b, void *arg)
{
    const sort_ctx *c = arg;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (c->key[x] != c->key[y])
        return c->key[x] > c->key[y] ? -1 : 1;
    if (c->other[x] != c->other[y])
        return c->other[x] > c->other[y] ? -1 : 1;
    int r = strcmp(c->p->funcs[x].name, c->p->funcs[y].name);
    if (r)
        return r;
    r = strcmp(c->p->funcs[x].file, c->p->funcs[y].file);
    if (r)
        return r;
    return (c->p->funcs[x].line > c->p->funcs[y].line) -
           (c->p->funcs[x].line < c->p->funcs[y].line);
}

size_t aggregate_sort_funcs(const profile *p, const aggregate_counts *agg, const uint64_t *key,
                            uint32_t *order)
{
    size_t n = 0;
    for (size_t f = 0; f < p->nfuncs; f++)
        if (agg->total[f])
            order[n++] = (uint32_t)f;
    sort_ctx c = {p, key, key == agg->self ? agg->total : agg->self};
    qsort_r(order, n, sizeof *order, cmp_func, &c);
    return n;
}
