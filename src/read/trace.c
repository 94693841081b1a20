/*
 * trace: spans grouped into traces and joined into trees.  See trace.h.
 */
#include "trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spanload.h"

uint64_t trace_span_unix_ns(const profile *p, uint32_t span, int end)
{
    const profile_span *s = &p->spans[span];
    int64_t t = end ? s->stop_us : s->start_us;
    uint64_t base = p->procs[s->process].start_unix_ns;
    if (t < 0 && (uint64_t)(-t) * 1000 > base)
        return 0;
    return base + (uint64_t)(t * 1000);
}

void trace_set_free(trace_set *ts)
{
    for (size_t i = 0; i < ts->ntraces; i++) {
        free(ts->traces[i].id);
        free(ts->traces[i].pids);
    }
    free(ts->traces);
    free(ts->trace_of);
    free(ts->tparent);
    free(ts->first_child);
    free(ts->next_sibling);
    memset(ts, 0, sizeof *ts);
}

long trace_find(const trace_set *ts, const char *id)
{
    for (size_t i = 0; i < ts->ntraces; i++)
        if (!strcmp(ts->traces[i].id, id))
            return (long)i;
    return -1;
}

/* The state qsort_r's comparators read. */
typedef struct sort_ctx {
    const profile *p;
    const char **key;         /* per span: its trace's key */
    const uint64_t *start;    /* per span: wall-clock start */
    const uint32_t *trace_of; /* per span */
    const trace *traces;
} sort_ctx;

static int cmp_depth(const void *a, const void *b, void *c)
{
    const sort_ctx *x = c;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    uint32_t di = x->p->spans[i].depth, dj = x->p->spans[j].depth;
    if (di != dj)
        return di < dj ? -1 : 1;
    return i < j ? -1 : i > j;
}

static int cmp_start(const void *a, const void *b, void *c)
{
    const sort_ctx *x = c;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    if (x->start[i] != x->start[j])
        return x->start[i] < x->start[j] ? -1 : 1;
    return i < j ? -1 : i > j;
}

static int cmp_key(const void *a, const void *b, void *c)
{
    const sort_ctx *x = c;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    int r = strcmp(x->key[i], x->key[j]);
    return r ? r : cmp_start(a, b, c);
}

/* Spans with a trace_id by (trace, trace_id, start). */
static int cmp_trace_id(const void *a, const void *b, void *c)
{
    const sort_ctx *x = c;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    if (x->trace_of[i] != x->trace_of[j])
        return x->trace_of[i] < x->trace_of[j] ? -1 : 1;
    int r = strcmp(x->p->spans[i].trace_id, x->p->spans[j].trace_id);
    return r ? r : cmp_start(a, b, c);
}

static int cmp_trace(const void *a, const void *b)
{
    const trace *x = a, *y = b;
    if (x->start_unix_ns != y->start_unix_ns)
        return x->start_unix_ns < y->start_unix_ns ? -1 : 1;
    return strcmp(x->id, y->id);
}

/* The first span of trace `t` with trace_id `id` in by_tid[0 .. n), other than `self`;
 * PROFILE_NO_SPAN when none. */
static uint32_t find_trace_id(const profile *p, const trace_set *ts, const uint32_t *by_tid,
                              size_t n, uint32_t t, const char *id, uint32_t self)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t s = by_tid[mid];
        int c = ts->trace_of[s] != t ? (ts->trace_of[s] < t ? -1 : 1)
                                     : strcmp(p->spans[s].trace_id, id);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (;
         lo < n && ts->trace_of[by_tid[lo]] == t && !strcmp(p->spans[by_tid[lo]].trace_id, id);
         lo++)
        if (by_tid[lo] != self)
            return by_tid[lo];
    return PROFILE_NO_SPAN;
}

int trace_build(const profile *p, trace_set *ts)
{
    memset(ts, 0, sizeof *ts);
    size_t n = p->nspans, n1 = n ? n : 1;
    int ok = 0;
    const char **key = calloc(n1, sizeof *key);
    char **synth = calloc(n1, sizeof *synth); /* the keys made up for top-level spans */
    uint64_t *start = malloc(n1 * sizeof *start);
    uint32_t *order = malloc(n1 * sizeof *order), *by_tid = malloc(n1 * sizeof *by_tid);
    ts->trace_of = malloc(n1 * sizeof *ts->trace_of);
    ts->tparent = malloc(n1 * sizeof *ts->tparent);
    ts->first_child = malloc(n1 * sizeof *ts->first_child);
    ts->next_sibling = malloc(n1 * sizeof *ts->next_sibling);
    uint32_t *remap = NULL;
    if (!key || !synth || !start || !order || !by_tid || !ts->trace_of || !ts->tparent ||
        !ts->first_child || !ts->next_sibling)
        goto done;
    sort_ctx c = {p, key, start, ts->trace_of, NULL};
    for (size_t i = 0; i < n; i++) {
        start[i] = trace_span_unix_ns(p, (uint32_t)i, 0);
        order[i] = (uint32_t)i;
    }
    /* Keys, parents first. */
    qsort_r(order, n, sizeof *order, cmp_depth, &c);
    for (size_t k = 0; k < n; k++) {
        uint32_t i = order[k];
        const profile_span *s = &p->spans[i];
        if (s->base_id[0]) {
            key[i] = s->base_id;
        } else if (s->parent != PROFILE_NO_SPAN) {
            key[i] = key[s->parent];
        } else {
            if (asprintf(&synth[i], "%" PRIu64 ".%" PRIu64, p->procs[s->process].pid, s->id) <
                0) {
                synth[i] = NULL;
                goto done;
            }
            key[i] = synth[i];
        }
    }
    /* Traces: the runs of one key. */
    qsort_r(order, n, sizeof *order, cmp_key, &c);
    ts->traces = calloc(n1, sizeof *ts->traces);
    if (!ts->traces)
        goto done;
    for (size_t k = 0; k < n; k++) {
        uint32_t i = order[k];
        if (!k || strcmp(key[i], key[order[k - 1]])) {
            trace *t = &ts->traces[ts->ntraces++];
            t->id = strdup(key[i]);
            t->pids = malloc(sizeof *t->pids);
            if (!t->id || !t->pids)
                goto done;
            t->start_unix_ns = start[i]; /* its spans come by start */
            t->first_root = PROFILE_NO_SPAN;
        }
        trace *t = &ts->traces[ts->ntraces - 1];
        ts->trace_of[i] = (uint32_t)(ts->ntraces - 1);
        t->nspans++;
        const profile_span *s = &p->spans[i];
        uint64_t end = trace_span_unix_ns(p, i, 1);
        if (end > t->end_unix_ns)
            t->end_unix_ns = end;
        t->unfinished += s->unfinished != 0;
        uint64_t pid = p->procs[s->process].pid;
        size_t q = 0;
        while (q < t->npids && t->pids[q] != pid)
            q++;
        if (q == t->npids) {
            uint64_t *pids = realloc(t->pids, (t->npids + 1) * sizeof *pids);
            if (!pids)
                goto done;
            t->pids = pids;
            t->pids[t->npids++] = pid;
        }
    }
    /* Traces by start; the spans follow their trace's new index. */
    uint32_t *rank = malloc((ts->ntraces ? ts->ntraces : 1) * sizeof *rank);
    remap = rank;
    if (!rank)
        goto done;
    for (size_t k = 0; k < ts->ntraces; k++)
        ts->traces[k].first_root = (uint32_t)k; /* the old index, for a moment */
    qsort(ts->traces, ts->ntraces, sizeof *ts->traces, cmp_trace);
    for (size_t k = 0; k < ts->ntraces; k++) {
        rank[ts->traces[k].first_root] = (uint32_t)k;
        ts->traces[k].first_root = PROFILE_NO_SPAN;
    }
    for (size_t i = 0; i < n; i++)
        ts->trace_of[i] = rank[ts->trace_of[i]];
    /* Parents: the parent span when in the same trace, else the span whose trace_id is
     * the parent_id. */
    size_t ntid = 0;
    for (size_t i = 0; i < n; i++)
        if (p->spans[i].trace_id[0])
            by_tid[ntid++] = (uint32_t)i;
    qsort_r(by_tid, ntid, sizeof *by_tid, cmp_trace_id, &c);
    for (size_t i = 0; i < n; i++) {
        const profile_span *s = &p->spans[i];
        uint32_t par = PROFILE_NO_SPAN;
        if (s->parent != PROFILE_NO_SPAN && ts->trace_of[s->parent] == ts->trace_of[i])
            par = s->parent;
        else if (s->parent_id[0])
            par = find_trace_id(p, ts, by_tid, ntid, ts->trace_of[i], s->parent_id,
                                (uint32_t)i);
        ts->tparent[i] = par;
    }
    if (spanload_break_cycles(ts->tparent, n, NULL) < 0)
        goto done;
    /* Children in start order: prepend while going through the spans latest first. */
    qsort_r(order, n, sizeof *order, cmp_start, &c);
    for (size_t i = 0; i < n; i++)
        ts->first_child[i] = ts->next_sibling[i] = PROFILE_NO_SPAN;
    for (size_t k = n; k-- > 0;) {
        uint32_t i = order[k];
        uint32_t *head = ts->tparent[i] == PROFILE_NO_SPAN
                             ? &ts->traces[ts->trace_of[i]].first_root
                             : &ts->first_child[ts->tparent[i]];
        ts->next_sibling[i] = *head;
        *head = i;
    }
    ok = 1;

done:
    for (size_t i = 0; synth && i < n; i++)
        free(synth[i]);
    free(synth);
    free(key);
    free(start);
    free(order);
    free(by_tid);
    free(remap);
    if (!ok)
        trace_set_free(ts);
    return ok ? 0 : -1;
}
