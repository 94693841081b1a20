/*
 * allocs: what the sampled allocations of a loaded profile stand for.  See allocs.h.
 *
 * Sums go through the deduplicated stacks, as aggregate.c's do: each allocation is added
 * to its stack, then each stack once to its functions.  The peak is found by one sweep
 * over the allocations and frees sorted by time on the common axis.
 */
#include "allocs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void allocs_estimate(uint64_t size, uint64_t interval, double *bytes, double *objects)
{
    if (!interval) {
        *bytes = (double)size;
        *objects = 1;
        return;
    }
    if (!size) {
        *bytes = (double)interval;
        *objects = 1;
        return;
    }
    double x = (double)size, p = -expm1(-x / (double)interval);
    if (p <= 0) { /* underflow: a size far below the interval, where p is x / interval */
        *bytes = (double)interval;
        *objects = (double)interval / x;
        return;
    }
    *bytes = x / p;
    *objects = 1 / p;
}

void allocs_estimate_shifted(uint64_t size, unsigned shift, uint64_t interval, double *bytes,
                             double *objects)
{
    double times = ldexp(1.0, (int)shift);
    if (shift < 64 && size <= UINT64_MAX >> shift) {
        allocs_estimate(size << shift, interval, bytes, objects);
        *objects *= times;
        return;
    }
    /* Past 64 bits the size is far above any interval: p is 1 but for rounding. */
    double x = ldexp((double)size, (int)shift);
    double p = interval ? -expm1(-x / (double)interval) : 1;
    if (p <= 0)
        p = 1;
    *bytes = x / p;
    *objects = times / p;
}

int allocs_in_use(const profile *p, const profile_alloc *a)
{
    if (a->flags & PYPROF_ALLOC_F_UNTRACKED)
        return 0;
    const profile_process *pr = a->process < p->nprocs ? &p->procs[a->process] : NULL;
    if (!p->filter.has_to && pr && pr->has_teardown) {
        /* The program's end, before the interpreter's teardown freed what it left. */
        if (a->t_us >= pr->teardown_us)
            return 0;
        return !a->freed || a->free_us >= pr->teardown_us;
    }
    if (!a->freed)
        return 1;
    return p->filter.has_to && (double)a->free_us / 1e6 > p->filter.to_s;
}

int allocs_before_teardown(const profile *p)
{
    if (p->filter.has_to || !p->nprocs)
        return 0;
    for (size_t i = 0; i < p->nprocs; i++)
        if (!p->procs[i].has_teardown)
            return 0;
    return 1;
}

/* The earliest start of a process, or 0 when some process's start is unknown. */
static uint64_t earliest_start(const profile *p)
{
    uint64_t t0 = 0;
    for (size_t i = 0; i < p->nprocs; i++) {
        uint64_t s = p->procs[i].start_unix_ns;
        if (!s)
            return 0;
        if (!t0 || s < t0)
            t0 = s;
    }
    return t0;
}

static int64_t offset_from(const profile *p, uint64_t t0, uint32_t process)
{
    if (!t0 || process >= p->nprocs)
        return 0;
    return (int64_t)((p->procs[process].start_unix_ns - t0) / 1000);
}

int64_t allocs_process_offset_us(const profile *p, uint32_t process)
{
    return offset_from(p, earliest_start(p), process);
}

/* allocs_in_use_at with the process's offset given. */
static int in_use_at(const profile *p, const profile_alloc *a, int64_t off, int64_t t_us)
{
    if (t_us == ALLOCS_END)
        return allocs_in_use(p, a);
    if (a->flags & PYPROF_ALLOC_F_UNTRACKED || off + a->t_us > t_us)
        return 0;
    return !a->freed || off + a->free_us > t_us;
}

int allocs_in_use_at(const profile *p, const profile_alloc *a, int64_t t_us)
{
    return in_use_at(p, a, allocs_process_offset_us(p, a->process), t_us);
}

/* Every process's offset: a malloc'ed array (at least one entry), or NULL. */
static int64_t *offsets(const profile *p)
{
    int64_t *off = malloc((p->nprocs ? p->nprocs : 1) * sizeof *off);
    if (!off)
        return NULL;
    uint64_t t0 = earliest_start(p);
    for (size_t i = 0; i < p->nprocs; i++)
        off[i] = offset_from(p, t0, (uint32_t)i);
    return off;
}

/* An allocation or a free on the common axis, for the sweep. */
typedef struct heap_event {
    int64_t t_us;
    size_t index; /* into p->allocs */
    int is_free;
} heap_event;

static int cmp_heap_event(const void *a, const void *b)
{
    const heap_event *x = a, *y = b;
    if (x->t_us != y->t_us)
        return x->t_us < y->t_us ? -1 : 1;
    if (x->is_free != y->is_free)
        return x->is_free > y->is_free ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* The sweep, with the offsets given. */
static int find_peak(const profile *p, const int64_t *off, allocs_peak *pk)
{
    memset(pk, 0, sizeof *pk);
    size_t n = 0;
    for (size_t i = 0; i < p->nallocs; i++)
        if (!(p->allocs[i].flags & PYPROF_ALLOC_F_UNTRACKED))
            n += 1 + !!p->allocs[i].freed;
    if (!n)
        return 0;
    heap_event *ev = malloc(n * sizeof *ev);
    if (!ev)
        return -1;
    n = 0;
    for (size_t i = 0; i < p->nallocs; i++) {
        const profile_alloc *a = &p->allocs[i];
        if (a->flags & PYPROF_ALLOC_F_UNTRACKED)
            continue;
        ev[n++] = (heap_event){off[a->process] + a->t_us, i, 0};
        if (a->freed)
            ev[n++] = (heap_event){off[a->process] + a->free_us, i, 1};
    }
    qsort(ev, n, sizeof *ev, cmp_heap_event);
    /* The heap after every event at a time; a rounding error of the running sum must not
     * make an equal later value the peak. */
    double heap = 0, best = 0;
    for (size_t i = 0; i < n;) {
        int64_t t = ev[i].t_us;
        int allocated = 0;
        for (; i < n && ev[i].t_us == t; i++) {
            double b = p->allocs[ev[i].index].bytes;
            heap += ev[i].is_free ? -b : b;
            allocated |= !ev[i].is_free;
        }
        if (allocated && (!pk->found || heap > best + 1e-9 * fabs(best) + 1e-6)) {
            pk->found = 1;
            pk->t_us = t;
            best = heap;
        }
    }
    free(ev);
    /* What the heap holds then, summed afresh rather than from the running sum. */
    for (size_t i = 0; i < p->nallocs; i++) {
        const profile_alloc *a = &p->allocs[i];
        if (in_use_at(p, a, off[a->process], pk->t_us)) {
            pk->samples++;
            pk->bytes += a->bytes;
            pk->objects += a->objects;
        }
    }
    pk->t_s = (double)pk->t_us / 1e6;
    return 0;
}

int allocs_find_peak(const profile *p, allocs_peak *pk)
{
    int64_t *off = offsets(p);
    if (!off)
        return -1;
    int rc = find_peak(p, off, pk);
    free(off);
    return rc;
}

static void cost_add(allocs_cost *c, const allocs_cost *d)
{
    c->samples += d->samples;
    c->alloc_bytes += d->alloc_bytes;
    c->alloc_objects += d->alloc_objects;
    c->inuse_samples += d->inuse_samples;
    c->inuse_bytes += d->inuse_bytes;
    c->inuse_objects += d->inuse_objects;
    c->peak_samples += d->peak_samples;
    c->peak_bytes += d->peak_bytes;
    c->peak_objects += d->peak_objects;
}

int allocs_sum(const profile *p, allocs_counts *c)
{
    memset(c, 0, sizeof *c);
    size_t nf = p->nfuncs ? p->nfuncs : 1, ns = p->nstacks ? p->nstacks : 1;
    size_t np = p->nprocs ? p->nprocs : 1;
    c->stack = calloc(ns, sizeof *c->stack);
    c->self = calloc(nf, sizeof *c->self);
    c->total = calloc(nf, sizeof *c->total);
    c->process = calloc(np, sizeof *c->process);
    uint32_t *stamp = malloc(nf * sizeof *stamp);
    int64_t *off = offsets(p);
    if (!c->stack || !c->self || !c->total || !c->process || !stamp || !off ||
        find_peak(p, off, &c->peak) < 0) {
        free(stamp);
        free(off);
        allocs_counts_free(c);
        return -1;
    }
    for (size_t i = 0; i < p->nallocs; i++) {
        const profile_alloc *a = &p->allocs[i];
        allocs_cost one = {1, a->bytes, a->objects, 0, 0, 0, 0, 0, 0};
        if (c->peak.found && in_use_at(p, a, off[a->process], c->peak.t_us)) {
            one.peak_samples = 1;
            one.peak_bytes = a->bytes;
            one.peak_objects = a->objects;
        }
        if (allocs_in_use(p, a)) {
            one.inuse_samples = 1;
            one.inuse_bytes = a->bytes;
            one.inuse_objects = a->objects;
            c->teardown_freed += a->freed;
        } else if (a->flags & PYPROF_ALLOC_F_UNTRACKED)
            c->untracked++;
        else
            c->freed++;
        cost_add(&c->stack[a->stack], &one);
        cost_add(&c->process[a->process], &one);
        if (a->domain < PYPROF_ALLOC_DOMAINS)
            cost_add(&c->domain[a->domain], &one);
        cost_add(&c->all, &one);
    }
    /* Each stack once: a function counts once per stack in `total` however often it
     * recurses, which the stamp (the last stack that counted it) ensures. */
    memset(stamp, 0xff, nf * sizeof *stamp);
    for (size_t s = 0; s < p->nstacks; s++) {
        const allocs_cost *w = &c->stack[s];
        const profile_stack *st = &p->stacks[s];
        if (!w->samples || !st->nframes)
            continue;
        const profile_frame *fr = p->frames + st->first;
        for (uint32_t k = 0; k < st->nframes; k++) {
            if (stamp[fr[k].func] != (uint32_t)s) {
                stamp[fr[k].func] = (uint32_t)s;
                cost_add(&c->total[fr[k].func], w);
            }
        }
        cost_add(&c->self[fr[st->nframes - 1].func], w);
    }
    free(stamp);
    free(off);
    return 0;
}

void allocs_counts_free(allocs_counts *c)
{
    free(c->stack);
    free(c->self);
    free(c->total);
    free(c->process);
    memset(c, 0, sizeof *c);
}

double allocs_key(const allocs_cost *c, int by)
{
    return by == ALLOCS_BY_INUSE  ? c->inuse_bytes
           : by == ALLOCS_BY_PEAK ? c->peak_bytes
                                  : c->alloc_bytes;
}

typedef struct sort_ctx {
    const profile *p;
    const allocs_cost *key, *other;
    int by;
} sort_ctx;

static int cmp_func(const void *a, const void *b, void *arg)
{
    const sort_ctx *c = arg;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    double kx = allocs_key(&c->key[x], c->by), ky = allocs_key(&c->key[y], c->by);
    if (kx != ky)
        return kx > ky ? -1 : 1;
    kx = allocs_key(&c->other[x], c->by);
    ky = allocs_key(&c->other[y], c->by);
    if (kx != ky)
        return kx > ky ? -1 : 1;
    if (c->key[x].samples != c->key[y].samples)
        return c->key[x].samples > c->key[y].samples ? -1 : 1;
    const profile_func *fx = &c->p->funcs[x], *fy = &c->p->funcs[y];
    int r = strcmp(fx->name, fy->name);
    if (!r)
        r = strcmp(fx->file, fy->file);
    if (!r)
        r = (fx->line > fy->line) - (fx->line < fy->line);
    return r ? r : (x > y) - (x < y);
}

size_t allocs_sort_funcs(const profile *p, const allocs_counts *c, int by, int total,
                         uint32_t *order)
{
    size_t n = 0;
    for (size_t f = 0; f < p->nfuncs; f++)
        if (c->total[f].samples)
            order[n++] = (uint32_t)f;
    sort_ctx ctx = {p, total ? c->total : c->self, total ? c->self : c->total, by};
    qsort_r(order, n, sizeof *order, cmp_func, &ctx);
    return n;
}

uint64_t *allocs_stack_weights(const profile *p, const allocs_counts *c, int by)
{
    uint64_t *w = calloc(p->nstacks ? p->nstacks : 1, sizeof *w);
    if (!w)
        return NULL;
    for (size_t s = 0; s < p->nstacks; s++) {
        double v = allocs_key(&c->stack[s], by);
        w[s] = v > 0 ? (uint64_t)llround(v) : 0;
    }
    return w;
}

const char *allocs_domain_name(int domain)
{
    static const char *const names[PYPROF_ALLOC_DOMAINS] = {"malloc", "pyobject", "pymem",
                                                            "pyraw", "mmap"};
    return domain >= 0 && domain < PYPROF_ALLOC_DOMAINS ? names[domain] : "unknown";
}
