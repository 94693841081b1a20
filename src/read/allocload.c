/*
 * allocload: the sampled allocations of a profile as its logs load.  See allocload.h.
 *
 * Frees are matched in one pass: the tracked allocations and the frees, as events, sorted
 * by (process, address, time, file seq, record position), then each address's events
 * walked in that order with a stack of its allocations still alive, a FREE ending the top
 * one.  The --span filter sorts the allocations left by (thread, time) and finds each
 * named span's by binary search, as spans.c does for samples.  The windows are sorted by
 * (process, time, file seq, record position), and an allocation's window found by binary
 * search; the pauses are summed in the same walk over them.
 */
#include "allocload.h"

#include <stdlib.h>
#include <string.h>

#include "allocs.h"
#include "common/growarray.h"

long allocload_alloc(allocload *al, uint32_t proc, uint32_t thread, uint32_t stack,
                     const pyprof_alloc_rec *r, int64_t t_us, uint64_t interval, uint64_t seq,
                     uint64_t pos, int loaded)
{
    if (GROW_ARRAY(al->allocs, al->cap_allocs, al->nallocs + 1))
        return -1;
    allocload_entry *e = &al->allocs[al->nallocs];
    memset(e, 0, sizeof *e);
    e->a.t_us = t_us;
    e->a.size = r->size;
    /* Its window's shift: allocs_estimate_shifted weighs it. */
    e->a.shift = (uint8_t)PYPROF_ALLOC_SHIFT(r->flags);
    allocs_estimate_shifted(r->size, e->a.shift, interval, &e->a.bytes, &e->a.objects);
    e->a.process = proc;
    e->a.thread = thread;
    e->a.stack = stack;
    e->a.domain = r->domain;
    /* Flags this reader does not know are kept out of the model: only UNTRACKED means
     * anything here. */
    e->a.flags = (uint8_t)(r->flags & PYPROF_ALLOC_F_UNTRACKED);
    e->address = r->address;
    e->seq = seq;
    e->pos = pos;
    e->loaded = (uint8_t) !!loaded;
    return (long)al->nallocs++;
}

void allocload_set_stack(allocload *al, size_t i, uint32_t stack)
{
    al->allocs[i].a.stack = stack;
}

int allocload_free(allocload *al, uint32_t proc, const pyprof_free_rec *r, int64_t t_us,
                   uint64_t seq, uint64_t pos)
{
    if (GROW_ARRAY(al->frees, al->cap_frees, al->nfrees + 1))
        return -1;
    al->frees[al->nfrees++] = (allocload_free_entry){proc, t_us, r->address, seq, pos};
    return 0;
}

int allocload_awindow(allocload *al, uint32_t proc, const pyprof_awindow_rec *r, int64_t t_us,
                      uint64_t seq, uint64_t pos)
{
    if (GROW_ARRAY(al->windows, al->cap_windows, al->nwindows + 1))
        return -1;
    allocload_window *w = &al->windows[al->nwindows++];
    memset(w, 0, sizeof *w);
    w->process = proc;
    w->t_us = t_us;
    w->len_us = r->len_us;
    w->shift = (uint8_t)r->shift; /* the decoder's bound: PYPROF_ALLOC_SHIFT_MAX */
    w->floor_shift = (uint8_t)r->floor_shift;
    w->flags = (uint8_t)(r->flags & (PYPROF_AWINDOW_F_PAUSED | PYPROF_AWINDOW_F_WRAPPED));
    w->seq = seq;
    w->pos = pos;
    return 0;
}

static int cmp_window(const void *a, const void *b)
{
    const allocload_window *x = a, *y = b;
    if (x->process != y->process)
        return x->process < y->process ? -1 : 1;
    if (x->t_us != y->t_us)
        return x->t_us < y->t_us ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* 1 + the index among windows[0 .. n) (sorted by process, then time; PAUSED records
 * are no window) of the window of process `proc` open at t_us: the latest to open at or
 * before it, if it is still open then.  0 when none is. */
static uint32_t window_of(const allocload_window *windows, size_t n, uint32_t proc,
                          int64_t t_us)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const allocload_window *w = &windows[mid];
        if (w->process < proc || (w->process == proc && w->t_us <= t_us))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || windows[lo - 1].process != proc)
        return 0;
    const allocload_window *w = &windows[lo - 1];
    if ((w->flags & PYPROF_AWINDOW_F_PAUSED) || (uint64_t)(t_us - w->t_us) > w->len_us ||
        lo > UINT32_MAX - 1)
        return 0;
    return (uint32_t)lo;
}

/* Sums each process's windows into its awin (sorted windows; the allocations' count,
 * awin.weighed, is the caller's). */
static void sum_windows(profile *p, const allocload *al)
{
    for (size_t i = 0; i < p->nprocs; i++)
        memset(&p->procs[i].awin, 0, sizeof p->procs[i].awin);
    for (size_t i = 0; i < al->nwindows; i++) {
        const allocload_window *w = &al->windows[i];
        profile_process *pr = &p->procs[w->process];
        profile_awindows *aw = &pr->awin;
        if (w->floor_shift > aw->floor_shift)
            aw->floor_shift = w->floor_shift;
        if (w->flags & PYPROF_AWINDOW_F_PAUSED) {
            /* Paused to the next record (a window, or another pause: the same time is
             * counted once), or to the end of the process's data. */
            const allocload_window *after = i + 1 < al->nwindows &&
                                                    al->windows[i + 1].process == w->process
                                                ? &al->windows[i + 1]
                                                : NULL;
            int64_t end = after ? after->t_us : pr->end_us;
            int64_t d = end > w->t_us ? end - w->t_us : 0;
            aw->pauses++;
            aw->paused_us += d;
            if (!(w->flags & PYPROF_AWINDOW_F_WRAPPED))
                aw->paused_unseen_us += d;
            continue;
        }
        if (!aw->windows || w->shift < aw->shift_min)
            aw->shift_min = w->shift;
        if (!aw->windows || w->shift > aw->shift_max)
            aw->shift_max = w->shift;
        aw->windows++;
        /* Saturated: a damaged log's lengths (each within the decoder's bound) may
         * overlap past any real time. */
        aw->window_us = (uint64_t)(INT64_MAX - aw->window_us) < w->len_us
                            ? INT64_MAX
                            : aw->window_us + (int64_t)w->len_us;
    }
}

/* An allocation or a free, for the matching. */
typedef struct event {
    uint32_t process;
    uint8_t is_free;
    int64_t t_us;
    uint64_t address, seq, pos;
    size_t index; /* into allocload.allocs or .frees */
} event;

static int cmp_event(const void *a, const void *b)
{
    const event *x = a, *y = b;
    if (x->process != y->process)
        return x->process < y->process ? -1 : 1;
    if (x->address != y->address)
        return x->address < y->address ? -1 : 1;
    if (x->t_us != y->t_us)
        return x->t_us < y->t_us ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return (x->is_free > y->is_free) - (x->is_free < y->is_free);
}

/* Sets every allocation's freed and free_us, and counts each process's unmatched frees.
 * 0, or -1 when out of memory. */
static int match_frees(profile *p, allocload *al)
{
    size_t n = 0;
    for (size_t i = 0; i < al->nallocs; i++) {
        al->allocs[i].a.freed = 0;
        al->allocs[i].a.free_us = 0;
        n += !(al->allocs[i].a.flags & PYPROF_ALLOC_F_UNTRACKED);
    }
    n += al->nfrees;
    event *ev = malloc((n ? n : 1) * sizeof *ev);
    size_t *live = malloc((n ? n : 1) * sizeof *live);
    if (!ev || !live) {
        free(ev);
        free(live);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < al->nallocs; i++) {
        const allocload_entry *e = &al->allocs[i];
        if (!(e->a.flags & PYPROF_ALLOC_F_UNTRACKED))
            ev[k++] = (event){e->a.process, 0, e->a.t_us, e->address, e->seq, e->pos, i};
    }
    for (size_t i = 0; i < al->nfrees; i++) {
        const allocload_free_entry *f = &al->frees[i];
        ev[k++] = (event){f->process, 1, f->t_us, f->address, f->seq, f->pos, i};
    }
    qsort(ev, n, sizeof *ev, cmp_event);
    for (size_t i = 0; i < p->nprocs; i++)
        p->procs[i].frees_unmatched = 0;
    size_t nlive = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || ev[i].process != ev[i - 1].process || ev[i].address != ev[i - 1].address)
            nlive = 0; /* another block */
        if (!ev[i].is_free) {
            live[nlive++] = ev[i].index;
            continue;
        }
        if (!nlive) {
            p->procs[ev[i].process].frees_unmatched++;
            continue;
        }
        profile_alloc *a = &al->allocs[live[--nlive]].a;
        a->freed = 1;
        a->free_us = ev[i].t_us;
    }
    free(ev);
    free(live);
    return 0;
}

/* Allocation indexes by (thread, time, index). */
static int cmp_thread_time(const void *a, const void *b, void *ctx)
{
    const allocload *al = ctx;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const profile_alloc *x = &al->allocs[i].a, *y = &al->allocs[j].a;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    if (x->t_us != y->t_us)
        return x->t_us < y->t_us ? -1 : 1;
    return (i > j) - (i < j);
}

/* The first position in order[lo .. hi) (one thread's, by time) at t or later. */
static size_t first_at(const allocload *al, const size_t *order, size_t lo, size_t hi,
                       int64_t t)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (al->allocs[order[mid]].a.t_us < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* --span: clears keep[i] for the allocations outside every span of the names given (a
 * span holds the allocations of the thread that started it at start <= t < stop, to the
 * end of its process's data while unfinished).  0, or -1 when out of memory. */
static int span_mask(const profile *p, const allocload *al, uint8_t *keep)
{
    const profile_filter *f = &p->filter;
    size_t n = 0;
    for (size_t i = 0; i < al->nallocs; i++)
        n += keep[i];
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    uint8_t *inside = calloc(al->nallocs ? al->nallocs : 1, 1);
    if (!order || !inside) {
        free(order);
        free(inside);
        return -1;
    }
    n = 0;
    for (size_t i = 0; i < al->nallocs; i++)
        if (keep[i])
            order[n++] = i;
    qsort_r(order, n, sizeof *order, cmp_thread_time, (void *)al);
    for (size_t s = 0; s < p->nspans; s++) {
        const profile_span *sp = &p->spans[s];
        int named = 0;
        for (size_t k = 0; k < f->nspan_names && !named; k++)
            named = !strcmp(sp->name, f->span_names[k]);
        if (!named)
            continue;
        /* The span's thread's allocations: order[lo .. hi). */
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (al->allocs[order[mid]].a.thread < sp->thread)
                lo = mid + 1;
            else
                hi = mid;
        }
        hi = lo;
        while (hi < n && al->allocs[order[hi]].a.thread == sp->thread)
            hi++;
        size_t a = first_at(al, order, lo, hi, sp->start_us);
        size_t b = sp->unfinished ? hi : first_at(al, order, a, hi, sp->stop_us);
        for (size_t k = a; k < b; k++)
            inside[order[k]] = 1;
    }
    for (size_t i = 0; i < al->nallocs; i++)
        keep[i] &= inside[i];
    free(order);
    free(inside);
    return 0;
}

int allocload_resolve(profile *p, allocload *al)
{
    if (match_frees(p, al) < 0)
        return -1;
    uint8_t *keep = malloc(al->nallocs ? al->nallocs : 1);
    if (!keep)
        return -1;
    for (size_t i = 0; i < al->nallocs; i++)
        keep[i] = al->allocs[i].loaded;
    if (p->filter.nspan_names && span_mask(p, al, keep) < 0) {
        free(keep);
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < al->nallocs; i++)
        n += keep[i];
    if (GROW_ARRAY(p->allocs, p->cap_allocs, n)) {
        free(keep);
        return -1;
    }
    for (size_t i = 0; i < p->nprocs; i++)
        p->procs[i].allocs = 0;
    if (al->nwindows)
        qsort(al->windows, al->nwindows, sizeof *al->windows, cmp_window);
    sum_windows(p, al);
    n = 0;
    for (size_t i = 0; i < al->nallocs; i++) {
        if (!keep[i])
            continue;
        profile_alloc *a = &p->allocs[n++];
        *a = al->allocs[i].a;
        p->procs[a->process].allocs++;
        if (a->shift) {
            p->procs[a->process].awin.weighed++;
            a->window = window_of(al->windows, al->nwindows, a->process, a->t_us);
        }
    }
    p->nallocs = n;
    free(keep);
    return 0;
}

void allocload_clear(allocload *al)
{
    free(al->allocs);
    free(al->frees);
    free(al->windows);
    memset(al, 0, sizeof *al);
}
