/*
 * gilwait: the GIL's share of wall-clock time (gilwait.h).
 */
#include "gilwait.h"

#include <stdlib.h>
#include <string.h>

#include "aggregate.h"

#define NO_HOLDER UINT32_MAX

/* A waiting sample's stack and the stack that held the GIL meanwhile. */
typedef struct pair {
    uint32_t wait, held;
} pair;

static const profile *cmp_p;

/* Samples holding the GIL by process, then time. */
static int cmp_held(const void *x, const void *y)
{
    const profile_sample *a = &cmp_p->samples[*(const uint32_t *)x];
    const profile_sample *b = &cmp_p->samples[*(const uint32_t *)y];
    if (a->process != b->process)
        return a->process < b->process ? -1 : 1;
    if (a->t_us != b->t_us)
        return a->t_us < b->t_us ? -1 : 1;
    return 0;
}

static int cmp_pair(const void *x, const void *y)
{
    const pair *a = x, *b = y;
    if (a->wait != b->wait)
        return a->wait < b->wait ? -1 : 1;
    if (a->held != b->held)
        return a->held < b->held ? -1 : 1;
    return 0;
}

static int cmp_stack(const void *x, const void *y)
{
    const gilwait_stack *a = x, *b = y;
    if (a->samples != b->samples)
        return a->samples > b->samples ? -1 : 1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static int cmp_holder(const void *x, const void *y)
{
    const gilwait_holder *a = x, *b = y;
    if (a->samples != b->samples)
        return a->samples > b->samples ? -1 : 1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

/* The first entry of held[0..n) not before (process, t). */
static size_t lower_bound(const profile *p, const uint32_t *held, size_t n, uint32_t process,
                          int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const profile_sample *m = &p->samples[held[mid]];
        if (m->process < process || (m->process == process && m->t_us < t))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The stack of the sample of another thread of s's process that held the GIL nearest
 * in time to s, within one period; NO_HOLDER when there is none. */
static uint32_t holder_of(const profile *p, const uint32_t *held, size_t n,
                          const profile_sample *s)
{
    int64_t tol = (int64_t)(p->procs[s->process].period_ns / 1000);
    if (tol < 1)
        tol = 1;
    size_t at = lower_bound(p, held, n, s->process, s->t_us);
    uint32_t best = NO_HOLDER;
    int64_t best_d = tol + 1;
    for (size_t i = at; i < n; i++) { /* later */
        const profile_sample *h = &p->samples[held[i]];
        if (h->process != s->process || h->t_us - s->t_us >= best_d)
            break;
        if (h->thread != s->thread) {
            best_d = h->t_us - s->t_us;
            best = h->stack;
            break;
        }
    }
    for (size_t i = at; i-- > 0;) { /* earlier */
        const profile_sample *h = &p->samples[held[i]];
        if (h->process != s->process || s->t_us - h->t_us >= best_d)
            break;
        if (h->thread != s->thread) {
            best = h->stack;
            break;
        }
    }
    return best;
}

/* Groups the sorted pairs into c->stacks, each with its holders. */
static int group(gilwait_counts *c, const pair *pairs, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && pairs[j].wait == pairs[i].wait)
            j++;
        gilwait_stack *st = &c->stacks[c->nstacks++];
        memset(st, 0, sizeof *st);
        st->stack = pairs[i].wait;
        st->samples = j - i;
        size_t distinct = 0;
        for (size_t k = i; k < j; k++)
            if (pairs[k].held != NO_HOLDER && (k == i || pairs[k].held != pairs[k - 1].held))
                distinct++;
        if (distinct && !(st->holders = calloc(distinct, sizeof *st->holders)))
            return -1;
        for (size_t k = i; k < j; k++) {
            if (pairs[k].held == NO_HOLDER)
                continue;
            st->attributed++;
            if (st->nholders && st->holders[st->nholders - 1].stack == pairs[k].held)
                st->holders[st->nholders - 1].samples++;
            else
                st->holders[st->nholders++] = (gilwait_holder){pairs[k].held, 1};
        }
        c->attributed += st->attributed;
        qsort(st->holders, st->nholders, sizeof *st->holders, cmp_holder);
        i = j;
    }
    qsort(c->stacks, c->nstacks, sizeof *c->stacks, cmp_stack);
    return 0;
}

int gilwait_sum(const profile *p, gilwait_counts *c)
{
    memset(c, 0, sizeof *c);
    uint32_t *order = aggregate_threads_by_samples(p);
    uint32_t *slot = calloc(p->nthreads + 1, sizeof *slot);
    uint32_t *held = calloc(p->nsamples + 1, sizeof *held);
    pair *pairs = NULL;
    size_t nheld = 0, nwait = 0;
    if (!order || !slot || !held)
        goto oom;
    for (size_t i = 0; i < p->nthreads; i++)
        if (p->threads[order[i]].samples)
            slot[order[i]] = (uint32_t)++c->nthreads;
    if (c->nthreads && !(c->threads = calloc(c->nthreads, sizeof *c->threads)))
        goto oom;
    for (size_t i = 0; i < p->nthreads; i++)
        if (slot[order[i]])
            c->threads[slot[order[i]] - 1].thread = order[i];
    for (size_t i = 0; i < p->nsamples; i++) {
        const profile_sample *s = &p->samples[i];
        unsigned g = s->gil < PYPROF_GIL_STATES ? s->gil : PYPROF_GIL_UNKNOWN;
        c->samples[g]++;
        if (slot[s->thread])
            c->threads[slot[s->thread] - 1].samples[g]++;
        if (g == PYPROF_GIL_HELD)
            held[nheld++] = (uint32_t)i;
        else if (g == PYPROF_GIL_WAIT)
            nwait++;
    }
    cmp_p = p;
    qsort(held, nheld, sizeof *held, cmp_held);
    if (nwait && !(pairs = calloc(nwait, sizeof *pairs)))
        goto oom;
    size_t k = 0;
    for (size_t i = 0; i < p->nsamples; i++) {
        const profile_sample *s = &p->samples[i];
        if (s->gil == PYPROF_GIL_WAIT)
            pairs[k++] = (pair){s->stack, holder_of(p, held, nheld, s)};
    }
    qsort(pairs, nwait, sizeof *pairs, cmp_pair);
    size_t distinct = 0;
    for (size_t i = 0; i < nwait; i++)
        if (i == 0 || pairs[i].wait != pairs[i - 1].wait)
            distinct++;
    if (distinct && !(c->stacks = calloc(distinct, sizeof *c->stacks)))
        goto oom;
    if (group(c, pairs, nwait) < 0)
        goto oom;
    free(order);
    free(slot);
    free(held);
    free(pairs);
    return 0;
oom:
    free(order);
    free(slot);
    free(held);
    free(pairs);
    gilwait_counts_free(c);
    return -1;
}

void gilwait_counts_free(gilwait_counts *c)
{
    for (size_t i = 0; i < c->nstacks; i++)
        free(c->stacks[i].holders);
    free(c->stacks);
    free(c->threads);
    memset(c, 0, sizeof *c);
}
