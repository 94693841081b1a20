/*
 * aggregate: sums over a loaded profile that more than one view needs.  See aggregate.h.
 */
#include "aggregate.h"

#include <stdlib.h>

uint64_t aggregate_sample_us(const profile *p, const profile_sample *s)
{
    if (s->cpu_us)
        return s->cpu_us;
    return p->procs[s->process].period_ns / 1000;
}

static int cmp_sample_order(const void *a, const void *b, void *arg)
{
    const profile *p = arg;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    const profile_sample *x = &p->samples[i], *y = &p->samples[j];
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    if (x->t_us != y->t_us)
        return x->t_us < y->t_us ? -1 : 1;
    return (i > j) - (i < j);
}

uint32_t *aggregate_samples_by_thread(const profile *p)
{
    uint32_t *o = malloc((p->nsamples ? p->nsamples : 1) * sizeof *o);
    if (!o)
        return NULL;
    for (size_t i = 0; i < p->nsamples; i++)
        o[i] = (uint32_t)i;
    qsort_r(o, p->nsamples, sizeof *o, cmp_sample_order, (void *)p);
    return o;
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
