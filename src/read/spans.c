/*
 * spans: the samples inside spans, their cost and top functions.  See spans.h.
 */
#include "spans.h"

#include <stdlib.h>
#include <string.h>

#include "aggregate.h"

int spans_contains(const profile_span *s, const profile_sample *x)
{
    return x->thread == s->thread && x->process == s->process && x->t_us >= s->start_us &&
           (s->unfinished || x->t_us < s->stop_us);
}

int spans_index_build(const profile *p, spans_index *ix)
{
    memset(ix, 0, sizeof *ix);
    ix->order = aggregate_samples_by_thread(p);
    ix->thread_first = calloc(p->nthreads + 1, sizeof *ix->thread_first);
    if (!ix->order || !ix->thread_first) {
        spans_index_free(ix);
        return -1;
    }
    for (size_t i = 0; i < p->nsamples; i++)
        ix->thread_first[p->samples[i].thread + 1]++;
    for (size_t t = 0; t < p->nthreads; t++)
        ix->thread_first[t + 1] += ix->thread_first[t];
    return 0;
}

void spans_index_free(spans_index *ix)
{
    free(ix->order);
    free(ix->thread_first);
    memset(ix, 0, sizeof *ix);
}

/* The first position in order[lo .. hi) whose sample is at t or later. */
static size_t first_at(const profile *p, const uint32_t *order, size_t lo, size_t hi, int64_t t)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->samples[order[mid]].t_us < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void spans_samples(const profile *p, const spans_index *ix, uint32_t span, size_t *first,
                   size_t *end)
{
    const profile_span *s = &p->spans[span];
    size_t lo = ix->thread_first[s->thread], hi = ix->thread_first[s->thread + 1];
    *first = first_at(p, ix->order, lo, hi, s->start_us);
    *end = s->unfinished ? hi : first_at(p, ix->order, *first, hi, s->stop_us);
}

int spans_mask(const profile *p, const char *const *names, size_t n, uint8_t *keep)
{
    if (p->nsamples)
        memset(keep, 0, p->nsamples);
    spans_index ix;
    if (spans_index_build(p, &ix) < 0)
        return -1;
    for (size_t i = 0; i < p->nspans; i++) {
        int named = 0;
        for (size_t k = 0; k < n && !named; k++)
            named = !strcmp(p->spans[i].name, names[k]);
        if (!named)
            continue;
        size_t a, b;
        spans_samples(p, &ix, (uint32_t)i, &a, &b);
        for (size_t k = a; k < b; k++)
            keep[ix.order[k]] = 1;
    }
    spans_index_free(&ix);
    return 0;
}

typedef struct leaf_cost {
    uint32_t func;
    uint64_t us;
} leaf_cost;

static int cmp_leaf(const void *a, const void *b)
{
    const leaf_cost *x = a, *y = b;
    return x->func < y->func ? -1 : x->func > y->func;
}

/* For qsort_r's comparator: the profile, for names. */
static int cmp_func(const void *a, const void *b, void *ctx)
{
    const profile *p = ctx;
    const spans_func *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    if (x->self_us != y->self_us)
        return x->self_us > y->self_us ? -1 : 1;
    int c = strcmp(p->funcs[x->func].name, p->funcs[y->func].name);
    return c ? c : (x->func < y->func ? -1 : x->func > y->func);
}

long spans_top_funcs(const profile *p, const spans_index *ix, uint32_t span, size_t max,
                     spans_func *out, spans_cost *cost)
{
    size_t a, b;
    spans_samples(p, ix, span, &a, &b);
    cost->samples = b - a;
    cost->us = 0;
    leaf_cost *leaves = malloc((b - a ? b - a : 1) * sizeof *leaves);
    if (!leaves)
        return -1;
    size_t n = 0;
    for (size_t k = a; k < b; k++) {
        const profile_sample *s = &p->samples[ix->order[k]];
        uint64_t us = aggregate_sample_us(p, s);
        cost->us += us;
        const profile_stack *st = &p->stacks[s->stack];
        if (st->nframes)
            leaves[n++] = (leaf_cost){p->frames[st->first + st->nframes - 1].func, us};
    }
    qsort(leaves, n, sizeof *leaves, cmp_leaf);
    /* Group by function, in place into a list of spans_func. */
    spans_func *all = malloc((n ? n : 1) * sizeof *all);
    if (!all) {
        free(leaves);
        return -1;
    }
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        if (m && all[m - 1].func == leaves[k].func) {
            all[m - 1].samples++;
            all[m - 1].self_us += leaves[k].us;
        } else {
            all[m++] = (spans_func){leaves[k].func, 1, leaves[k].us};
        }
    }
    free(leaves);
    qsort_r(all, m, sizeof *all, cmp_func, (void *)p);
    if (m > max)
        m = max;
    if (m)
        memcpy(out, all, m * sizeof *all);
    free(all);
    return (long)m;
}
