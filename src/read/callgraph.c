/*
 * callgraph: functions and calls from a profile's stacks.  See callgraph.h.
 *
 * One pass over the deduplicated stacks, each weighted by its samples and their time.
 * The "once per sample" rule for totals is kept with stamps: a function or an edge
 * remembers the last stack that counted it, and a later frame of the same stack (a
 * recursive call) adds to `frames` only.
 */
#include "callgraph.h"

#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "common/growarray.h"

static uint64_t edge_hash(uint32_t caller, uint32_t callee, int32_t line)
{
    return idtab_hash2(caller, callee, line);
}

/* The edge for (caller, line, callee), created empty.  NULL when out of memory. */
static callgraph_edge *edge_of(callgraph *g, uint32_t caller, int32_t line, uint32_t callee)
{
    uint64_t h = edge_hash(caller, callee, line);
    size_t pos;
    for (uint32_t i = idtab_first(&g->index, h, &pos); i != IDTAB_NONE;
         i = idtab_next(&g->index, h, &pos)) {
        callgraph_edge *e = &g->edges[i];
        if (e->caller == caller && e->callee == callee && e->line == line)
            return e;
    }
    if (grow_array((void **)&g->edges, &g->cap_edges, g->nedges + 1, sizeof *g->edges, 256) < 0)
        return NULL;
    if (g->nedges >= IDTAB_NONE || idtab_reserve(&g->index, g->nedges + 1) < 0)
        return NULL;
    callgraph_edge *e = &g->edges[g->nedges];
    memset(e, 0, sizeof *e);
    e->caller = caller;
    e->callee = callee;
    e->line = line;
    idtab_add(&g->index, h, (uint32_t)g->nedges++);
    return e;
}

static void add_cost(callgraph_cost *c, uint64_t n, uint64_t us)
{
    c->n += n;
    c->us += us;
}

/* Counts stack `s` (n samples, us microseconds) into functions and edges. */
static int add_stack(callgraph *g, const profile *p, uint32_t s, uint64_t n, uint64_t us,
                     uint32_t *func_stamp, int call_lines)
{
    const profile_stack *st = &p->stacks[s];
    const profile_frame *fr = p->frames + st->first;
    for (uint32_t k = 0; k < st->nframes; k++) {
        callgraph_func *f = &g->funcs[fr[k].func];
        f->frames += n;
        if (func_stamp[fr[k].func] != s + 1) {
            func_stamp[fr[k].func] = s + 1;
            add_cost(&f->total, n, us);
        }
        if (k == 0)
            continue;
        callgraph_edge *e = edge_of(
            g, fr[k - 1].func, call_lines ? fr[k - 1].line : CALLGRAPH_ANY_LINE, fr[k].func);
        if (!e)
            return -1;
        e->frames += n;
        if (e->stamp != s + 1) {
            e->stamp = s + 1;
            add_cost(&e->total, n, us);
        }
        if (k + 1 == st->nframes)
            add_cost(&e->self, n, us);
    }
    if (st->nframes)
        add_cost(&g->funcs[fr[st->nframes - 1].func].self, n, us);
    return 0;
}

static int cmp_line(const void *a, const void *b)
{
    const callgraph_line *x = a, *y = b;
    if (x->func != y->func)
        return x->func < y->func ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

/* The self cost of every (function, line) where samples were taken. */
static int build_lines(callgraph *g, const profile *p, const uint64_t *count,
                       const uint64_t *us)
{
    g->lines = malloc((p->nstacks ? p->nstacks : 1) * sizeof *g->lines);
    if (!g->lines)
        return -1;
    size_t n = 0;
    for (size_t s = 0; s < p->nstacks; s++) {
        const profile_stack *st = &p->stacks[s];
        if (!count[s] || !st->nframes)
            continue;
        const profile_frame *leaf = &p->frames[st->first + st->nframes - 1];
        g->lines[n].func = leaf->func;
        g->lines[n].line = leaf->line;
        g->lines[n].self.n = count[s];
        g->lines[n].self.us = us[s];
        n++;
    }
    qsort(g->lines, n, sizeof *g->lines, cmp_line);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && !cmp_line(&g->lines[m - 1], &g->lines[i]))
            add_cost(&g->lines[m - 1].self, g->lines[i].self.n, g->lines[i].self.us);
        else
            g->lines[m++] = g->lines[i];
    }
    g->nlines = m;
    return 0;
}

int callgraph_build(callgraph *g, const profile *p, int call_lines)
{
    memset(g, 0, sizeof *g);
    uint64_t *count = NULL, *us = NULL;
    uint32_t *stamp = calloc(p->nfuncs ? p->nfuncs : 1, sizeof *stamp);
    g->funcs = calloc(p->nfuncs ? p->nfuncs : 1, sizeof *g->funcs);
    int rc = -1;
    if (!stamp || !g->funcs || aggregate_stack_costs(p, &count, &us) < 0)
        goto cleanup;
    for (size_t s = 0; s < p->nstacks; s++)
        if (count[s] && add_stack(g, p, (uint32_t)s, count[s], us[s], stamp, call_lines) < 0)
            goto cleanup;
    rc = build_lines(g, p, count, us);
cleanup:
    free(stamp);
    free(count);
    free(us);
    if (rc < 0)
        callgraph_free(g);
    return rc;
}

void callgraph_free(callgraph *g)
{
    free(g->funcs);
    free(g->edges);
    free(g->lines);
    idtab_free(&g->index);
    memset(g, 0, sizeof *g);
}

static int cmp_u32(uint32_t a, uint32_t b) { return (a > b) - (a < b); }

static int cmp_by_caller(const void *a, const void *b)
{
    const callgraph_edge *x = a, *y = b;
    int r = cmp_u32(x->caller, y->caller);
    if (!r)
        r = (x->line > y->line) - (x->line < y->line);
    return r ? r : cmp_u32(x->callee, y->callee);
}

static int cmp_by_callee(const void *a, const void *b)
{
    const callgraph_edge *x = a, *y = b;
    int r = cmp_u32(x->callee, y->callee);
    if (!r)
        r = cmp_u32(x->caller, y->caller);
    return r ? r : (x->line > y->line) - (x->line < y->line);
}

void callgraph_sort_edges(callgraph *g, int by_callee)
{
    qsort(g->edges, g->nedges, sizeof *g->edges, by_callee ? cmp_by_callee : cmp_by_caller);
    idtab_free(&g->index);
}
