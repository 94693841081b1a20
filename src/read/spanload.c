/*
 * spanload: the spans of a profile as its logs load.  See spanload.h.
 *
 * Stops are matched in one pass per load call: the spans sorted by (process, id, index)
 * and each pending stop looked up by binary search, the first unfinished span of its id
 * taking it (in the order the starts were read).
 */
#include "spanload.h"

#include <stdlib.h>
#include <string.h>

#include "keep.h"
#include "common/growarray.h"
#include "idmap.h"
#include "spans.h"

int spanload_start(profile *p, spanload *sl, uint32_t proc, uint32_t thread,
                   const pyprof_span_start_rec *s, int64_t t_us)
{
    if (thread == IDMAP_EXCLUDED) {
        if (GROW_ARRAY(sl->dropped, sl->cap_dropped, sl->ndropped + 1))
            return -1;
        sl->dropped[sl->ndropped++] = (spanload_dropped){proc, s->span_id};
        return 0;
    }
    if (p->nspans >= IDMAP_EXCLUDED || GROW_ARRAY(p->spans, p->cap_spans, p->nspans + 1))
        return -1;
    profile_span *sp = &p->spans[p->nspans];
    memset(sp, 0, sizeof *sp);
    sp->process = proc;
    sp->thread = sp->stop_thread = thread;
    sp->parent = PROFILE_NO_SPAN;
    sp->unfinished = 1;
    sp->id = s->span_id;
    sp->parent_span_id = s->parent_span_id;
    sp->start_us = sp->stop_us = t_us;
    sp->name = pyprof_str_dup(s->name);
    sp->trace_id = pyprof_str_dup(s->trace_id);
    sp->parent_id = pyprof_str_dup(s->parent_id);
    sp->base_id = pyprof_str_dup(s->base_id);
    sp->info = pyprof_str_dup(s->info);
    sp->stop_info = strdup("");
    p->nspans++; /* freed with the profile, whatever was copied */
    if (!sp->name || !sp->trace_id || !sp->parent_id || !sp->base_id || !sp->info ||
        !sp->stop_info)
        return -1;
    p->procs[proc].spans++;
    return 0;
}

int spanload_stop(spanload *sl, uint32_t proc, uint32_t thread, const pyprof_span_stop_rec *s,
                  int64_t t_us)
{
    if (GROW_ARRAY(sl->stops, sl->cap_stops, sl->nstops + 1))
        return -1;
    char *info = pyprof_str_dup(s->info);
    if (!info)
        return -1;
    sl->stops[sl->nstops++] = (spanload_stop_rec){proc, thread, s->span_id, t_us, info};
    return 0;
}

static int cmp_dropped(const void *a, const void *b)
{
    const spanload_dropped *x = a, *y = b;
    if (x->process != y->process)
        return x->process < y->process ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Span indexes by (process, id, index): the order stops are matched in. */
static int cmp_span_key(const void *a, const void *b, void *ctx)
{
    const profile *p = ctx;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    const profile_span *x = &p->spans[i], *y = &p->spans[j];
    if (x->process != y->process)
        return x->process < y->process ? -1 : 1;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* The first position in by_key[0 .. n) whose span is (proc, id) or after it. */
static size_t span_lower(const profile *p, const uint32_t *by_key, size_t n, uint32_t proc,
                         uint64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const profile_span *s = &p->spans[by_key[mid]];
        if (s->process < proc || (s->process == proc && s->id < id))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Where each process's data ends: its footer's duration, its last timed record, or its
 * latest span time, whichever is latest. */
static void process_ends(profile *p)
{
    for (size_t i = 0; i < p->nprocs; i++) {
        profile_process *pr = &p->procs[i];
        pr->end_us = pr->last_t_us;
        if (pr->has_footer && (int64_t)(pr->footer.duration_ns / 1000) > pr->end_us)
            pr->end_us = (int64_t)(pr->footer.duration_ns / 1000);
    }
    for (size_t i = 0; i < p->nspans; i++) {
        const profile_span *s = &p->spans[i];
        profile_process *pr = &p->procs[s->process];
        int64_t t = s->unfinished ? s->start_us : s->stop_us;
        if (t > pr->end_us)
            pr->end_us = t;
    }
}

/* Sets each span's parent and depth from parent_span_id (the first span of the process
 * with that id), a link that would close a cycle (corrupt ids) being dropped. */
static int span_parents(profile *p, const uint32_t *by_key)
{
    size_t n = p->nspans;
    for (size_t i = 0; i < n; i++) {
        profile_span *s = &p->spans[i];
        s->parent = PROFILE_NO_SPAN;
        if (!s->parent_span_id)
            continue;
        size_t k = span_lower(p, by_key, n, s->process, s->parent_span_id);
        if (k < n && p->spans[by_key[k]].process == s->process &&
            p->spans[by_key[k]].id == s->parent_span_id && by_key[k] != i)
            s->parent = by_key[k];
    }
    uint32_t *parent = malloc((n ? n : 1) * sizeof *parent);
    uint32_t *depth = malloc((n ? n : 1) * sizeof *depth);
    int rc = parent && depth ? 0 : -1;
    if (rc == 0) {
        for (size_t i = 0; i < n; i++)
            parent[i] = p->spans[i].parent;
        rc = spanload_break_cycles(parent, n, depth);
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        p->spans[i].parent = parent[i];
        p->spans[i].depth = depth[i];
    }
    free(parent);
    free(depth);
    return rc;
}

int spanload_break_cycles(uint32_t *parent, size_t n, uint32_t *depth)
{
    /* Walking up to an entry whose depth is known; a walk that comes back to an entry on
     * its own path is a cycle, cut above the entry it started from. */
    uint8_t *state = calloc(n ? n : 1, 1); /* 0 unknown, 1 on the path, 2 known */
    uint32_t *path = malloc((n ? n : 1) * sizeof *path);
    uint32_t *d_at = depth ? depth : malloc((n ? n : 1) * sizeof *d_at);
    if (!state || !path || !d_at) {
        free(state);
        free(path);
        if (d_at != depth)
            free(d_at);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        uint32_t at = (uint32_t)i;
        while (at != PROFILE_NO_SPAN && state[at] == 0) {
            state[at] = 1;
            path[len++] = at;
            at = parent[at];
        }
        if (at != PROFILE_NO_SPAN && state[at] == 1) {
            /* A cycle: the last entry of the path links back into it. */
            parent[path[len - 1]] = PROFILE_NO_SPAN;
            at = PROFILE_NO_SPAN;
        }
        uint32_t d = at == PROFILE_NO_SPAN ? 0 : d_at[at] + 1;
        while (len > 0) {
            uint32_t e = path[--len];
            d_at[e] = parent[e] == PROFILE_NO_SPAN ? 0 : d;
            d = d_at[e] + 1;
            state[e] = 2;
        }
    }
    free(state);
    free(path);
    if (d_at != depth)
        free(d_at);
    return 0;
}

int spanload_resolve(profile *p, spanload *sl)
{
    size_t n = p->nspans;
    uint32_t *by_key = malloc((n ? n : 1) * sizeof *by_key);
    if (!by_key)
        return -1;
    for (size_t i = 0; i < n; i++)
        by_key[i] = (uint32_t)i;
    qsort_r(by_key, n, sizeof *by_key, cmp_span_key, p);
    size_t kept = 0;
    for (size_t i = 0; i < sl->nstops; i++) {
        spanload_stop_rec *st = &sl->stops[i];
        size_t k = span_lower(p, by_key, n, st->process, st->id);
        profile_span *s = NULL;
        for (; k < n && p->spans[by_key[k]].process == st->process &&
               p->spans[by_key[k]].id == st->id;
             k++)
            if (p->spans[by_key[k]].unfinished) {
                s = &p->spans[by_key[k]];
                break;
            }
        if (!s) {
            sl->stops[kept++] = *st; /* its start may come with a later load */
            continue;
        }
        s->unfinished = 0;
        s->stop_us = st->t_us > s->start_us ? st->t_us : s->start_us;
        if (st->thread != IDMAP_EXCLUDED)
            s->stop_thread = st->thread;
        free(s->stop_info);
        s->stop_info = st->info;
    }
    /* The stops of spans the --thread filter left out go with them. */
    if (sl->ndropped)
        qsort(sl->dropped, sl->ndropped, sizeof *sl->dropped, cmp_dropped);
    size_t stray = 0;
    for (size_t i = 0; i < kept; i++) {
        spanload_dropped key = {sl->stops[i].process, sl->stops[i].id};
        if (sl->ndropped && bsearch(&key, sl->dropped, sl->ndropped, sizeof key, cmp_dropped)) {
            free(sl->stops[i].info);
            continue;
        }
        sl->stops[stray++] = sl->stops[i];
    }
    kept = stray;
    sl->nstops = kept;
    for (size_t i = 0; i < p->nprocs; i++)
        p->procs[i].spans_unfinished = p->procs[i].span_stops_unmatched = 0;
    for (size_t i = 0; i < kept; i++)
        p->procs[sl->stops[i].process].span_stops_unmatched++;
    process_ends(p);
    for (size_t i = 0; i < n; i++) {
        profile_span *s = &p->spans[i];
        if (!s->unfinished)
            continue;
        p->procs[s->process].spans_unfinished++;
        s->stop_us = p->procs[s->process].end_us;
    }
    int rc = span_parents(p, by_key);
    free(by_key);
    return rc;
}

int spanload_filter(profile *p)
{
    const profile_filter *f = &p->filter;
    if (!f->nspan_names || !p->nsamples)
        return 0;
    uint8_t *keep = malloc(p->nsamples);
    if (!keep || spans_mask(p, f->span_names, f->nspan_names, keep) < 0) {
        free(keep);
        return -1;
    }
    keep_samples(p, keep);
    free(keep);
    return 0;
}

void spanload_free(spanload *sl)
{
    for (size_t i = 0; i < sl->nstops; i++)
        free(sl->stops[i].info);
    free(sl->stops);
    free(sl->dropped);
}
