/*
 * keep: a filter's samples kept (keep.h).
 */
#include "keep.h"

void keep_samples(profile *p, const uint8_t *keep)
{
    size_t n = 0;
    for (size_t i = 0; i < p->nsamples; i++)
        if (keep[i])
            p->samples[n++] = p->samples[i];
    p->nsamples = n;
    for (size_t i = 0; i < p->nthreads; i++)
        p->threads[i].samples = 0;
    for (size_t i = 0; i < p->nprocs; i++)
        p->procs[i].samples = 0;
    for (size_t i = 0; i < n; i++) {
        p->threads[p->samples[i].thread].samples++;
        p->procs[p->samples[i].process].samples++;
    }
}
