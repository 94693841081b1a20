/*
 * compare: what changed between two profiles, function by function.  See compare.h.
 */
#include "compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "allocs.h"
#include "idmap.h"

double compare_z(double t0, uint64_t n0, double t1, uint64_t n1)
{
    if (!n0 && !n1)
        return 0;
    /* The weight of a sample on each side; a side without samples takes the other's
     * (the same period is the best guess for samples that did not happen). */
    double w0 = n0 ? t0 / (double)n0 : t1 / (double)n1;
    double w1 = n1 ? t1 / (double)n1 : t0 / (double)n0;
    double var = (w0 + w1) * (t0 + t1) / 2;
    return var > 0 ? (t1 - t0) / sqrt(var) : 0;
}

int compare_flagged(double t0, uint64_t n0, double t1, uint64_t n1)
{
    double big = t0 > t1 ? t0 : t1;
    return fabs(compare_z(t0, n0, t1, n1)) >= COMPARE_Z &&
           fabs(t1 - t0) >= COMPARE_MIN_RATIO * big && big > 0;
}

double compare_z_memory(double b0, double v0, double b1, double v1)
{
    double var = v0 + v1;
    return var > 0 ? (b1 - b0) / sqrt(var) : 0;
}

int compare_flagged_memory(double b0, double v0, double b1, double v1)
{
    double big = b0 > b1 ? b0 : b1;
    return fabs(compare_z_memory(b0, v0, b1, v1)) >= COMPARE_Z &&
           fabs(b1 - b0) >= COMPARE_MIN_RATIO * big && big > 0;
}

static int cmp_by_window(const void *x, const void *y, void *arg)
{
    const profile_alloc *allocs = arg;
    uint32_t a = allocs[*(const size_t *)x].window, b = allocs[*(const size_t *)y].window;
    return (a > b) - (a < b);
}

/* The variance of the allocations sampled inside windows: the windows, not their samples,
 * are the draws (a window holds its samples together, or none of them), so each window
 * adds, per function, the square of what its samples there sum to (cluster sampling).
 * idx[0 .. n) are allocations of p with a window; `s` gets the variances.  0, or -1
 * when out of memory. */
static int window_var(const profile *p, size_t *idx, size_t n, compare_side *s)
{
    size_t nf = p->nfuncs ? p->nfuncs : 1;
    double *self = calloc(nf, sizeof *self), *total = calloc(nf, sizeof *total);
    uint32_t *touched = malloc(nf * sizeof *touched), *stamp = malloc(nf * sizeof *stamp);
    if (!self || !total || !touched || !stamp) {
        free(self);
        free(total);
        free(touched);
        free(stamp);
        return -1;
    }
    qsort_r(idx, n, sizeof *idx, cmp_by_window, (void *)p->allocs);
    memset(stamp, 0xff, nf * sizeof *stamp);
    size_t ntouched = 0;
    for (size_t i = 0; i < n; i++) {
        const profile_alloc *a = &p->allocs[idx[i]];
        if (a->stack < p->nstacks && p->stacks[a->stack].nframes) {
            const profile_stack *ps = &p->stacks[a->stack];
            const profile_frame *fr = p->frames + ps->first;
            for (uint32_t j = 0; j < ps->nframes; j++) {
                uint32_t f = fr[j].func;
                if (stamp[f] == (uint32_t)i)
                    continue; /* once per stack however often it recurses */
                stamp[f] = (uint32_t)i;
                if (self[f] == 0 && total[f] == 0)
                    touched[ntouched++] = f;
                total[f] += a->bytes;
            }
            self[fr[ps->nframes - 1].func] += a->bytes;
        }
        if (i + 1 == n || p->allocs[idx[i + 1]].window != a->window) {
            for (size_t k = 0; k < ntouched; k++) {
                uint32_t f = touched[k];
                s[f].self_var += self[f] * self[f];
                s[f].total_var += total[f] * total[f];
                self[f] = total[f] = 0;
            }
            ntouched = 0;
        }
    }
    free(self);
    free(total);
    free(touched);
    free(stamp);
    return 0;
}

/* Per function of `p`: the samples of measure `by` (allocs.h), their bytes and the sum
 * of their weights squared (per window for those sampled inside allocation windows: see
 * window_var), self and total, as side_times does for time.  A calloc'ed array of
 * p->nfuncs entries, or NULL when out of memory. */
static compare_side *side_bytes(const profile *p, int by, uint64_t *samples, double *bytes)
{
    size_t nf = p->nfuncs ? p->nfuncs : 1, ns = p->nstacks ? p->nstacks : 1;
    compare_side *s = calloc(nf, sizeof *s);
    compare_side *st = calloc(ns, sizeof *st); /* per stack: in its self_* fields */
    uint32_t *stamp = malloc(nf * sizeof *stamp);
    size_t *windowed = malloc((p->nallocs ? p->nallocs : 1) * sizeof *windowed), nw = 0;
    if (!s || !st || !stamp || !windowed) {
        free(s);
        free(st);
        free(stamp);
        free(windowed);
        return NULL;
    }
    *samples = 0;
    *bytes = 0;
    for (size_t i = 0; i < p->nallocs; i++) {
        const profile_alloc *a = &p->allocs[i];
        if (by == ALLOCS_BY_INUSE && !allocs_in_use(p, a))
            continue;
        *samples += 1;
        *bytes += a->bytes;
        if (a->window)
            windowed[nw++] = i;
        if (a->stack < p->nstacks) {
            st[a->stack].self_n++;
            st[a->stack].self_us += a->bytes;
            if (!a->window)
                st[a->stack].self_var += a->bytes * a->bytes;
        }
    }
    memset(stamp, 0xff, nf * sizeof *stamp);
    for (size_t k = 0; k < p->nstacks; k++) {
        const compare_side *w = &st[k];
        const profile_stack *ps = &p->stacks[k];
        if (!w->self_n || !ps->nframes)
            continue;
        const profile_frame *fr = p->frames + ps->first;
        for (uint32_t j = 0; j < ps->nframes; j++) {
            uint32_t f = fr[j].func;
            if (stamp[f] != (uint32_t)k) {
                stamp[f] = (uint32_t)k;
                s[f].total_n += w->self_n;
                s[f].total_us += w->self_us;
                s[f].total_var += w->self_var;
            }
        }
        compare_side *leaf = &s[fr[ps->nframes - 1].func];
        leaf->self_n += w->self_n;
        leaf->self_us += w->self_us;
        leaf->self_var += w->self_var;
    }
    free(st);
    free(stamp);
    int rc = nw ? window_var(p, windowed, nw, s) : 0;
    free(windowed);
    if (rc < 0) {
        free(s);
        return NULL;
    }
    return s;
}

/* Per function of `p`: its self and total samples and time.  A calloc'ed array of
 * p->nfuncs entries, or NULL when out of memory. */
static compare_side *side_times(const profile *p, uint64_t *samples, double *us)
{
    size_t nf = p->nfuncs ? p->nfuncs : 1;
    compare_side *s = calloc(nf, sizeof *s);
    uint32_t *stamp = malloc(nf * sizeof *stamp);
    uint64_t *cnt = NULL, *sus = NULL;
    if (!s || !stamp || aggregate_stack_costs(p, &cnt, &sus) < 0) {
        free(s);
        free(stamp);
        return NULL;
    }
    *samples = 0;
    *us = 0;
    /* A function counts once per sample in `total` however often it recurses. */
    memset(stamp, 0xff, nf * sizeof *stamp);
    for (size_t k = 0; k < p->nstacks; k++) {
        const profile_stack *st = &p->stacks[k];
        if (!cnt[k])
            continue;
        *samples += cnt[k];
        *us += (double)sus[k];
        if (!st->nframes)
            continue;
        const profile_frame *fr = p->frames + st->first;
        for (uint32_t j = 0; j < st->nframes; j++) {
            uint32_t f = fr[j].func;
            if (stamp[f] != (uint32_t)k) {
                stamp[f] = (uint32_t)k;
                s[f].total_n += cnt[k];
                s[f].total_us += (double)sus[k];
            }
        }
        uint32_t leaf = fr[st->nframes - 1].func;
        s[leaf].self_n += cnt[k];
        s[leaf].self_us += (double)sus[k];
    }
    free(stamp);
    free(cnt);
    free(sus);
    return s;
}

/* A function of one side, for matching. */
typedef struct cand {
    const profile_func *fn;
    uint32_t index;
    int side;
    int matched;
} cand;

static int cmp_name(const profile_func *a, const profile_func *b)
{
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    int c = strcmp(a->file, b->file);
    return c ? c : strcmp(a->name, b->name);
}

static int cmp_cand(const void *x, const void *y)
{
    const cand *a = x, *b = y;
    int c = cmp_name(a->fn, b->fn);
    if (c)
        return c;
    if (a->fn->line != b->fn->line)
        return a->fn->line < b->fn->line ? -1 : 1;
    if (a->side != b->side)
        return a->side - b->side;
    return (a->index > b->index) - (a->index < b->index);
}

static double row_key(const compare_row *r)
{
    double ds = fabs(r->side[1].self_us - r->side[0].self_us);
    double dt = fabs(r->side[1].total_us - r->side[0].total_us);
    return ds > dt ? ds : dt;
}

static int cmp_row(const void *x, const void *y)
{
    const compare_row *a = x, *b = y;
    if ((a->flags != 0) != (b->flags != 0))
        return a->flags ? -1 : 1;
    double ka = row_key(a), kb = row_key(b);
    if (ka != kb)
        return ka > kb ? -1 : 1;
    /* Ties (unchanged functions) by the larger time, then the base's functions by
     * index, then the new-only ones: a stable order. */
    double ta = a->side[0].total_us + a->side[1].total_us;
    double tb = b->side[0].total_us + b->side[1].total_us;
    if (ta != tb)
        return ta > tb ? -1 : 1;
    if ((a->func[0] == COMPARE_NONE) != (b->func[0] == COMPARE_NONE))
        return a->func[0] == COMPARE_NONE ? 1 : -1;
    int s = a->func[0] != COMPARE_NONE ? 0 : 1;
    return (a->func[s] > b->func[s]) - (a->func[s] < b->func[s]);
}

static void fill_row(compare_row *r, const compare_side *const sides[2], int memory,
                     uint32_t f0, uint32_t f1)
{
    static const compare_side none;
    memset(r, 0, sizeof *r);
    r->func[0] = f0;
    r->func[1] = f1;
    r->side[0] = f0 != COMPARE_NONE ? sides[0][f0] : none;
    r->side[1] = f1 != COMPARE_NONE ? sides[1][f1] : none;
    const compare_side *a = &r->side[0], *b = &r->side[1];
    if (memory) {
        r->self_z = compare_z_memory(a->self_us, a->self_var, b->self_us, b->self_var);
        r->total_z = compare_z_memory(a->total_us, a->total_var, b->total_us, b->total_var);
        if (compare_flagged_memory(a->self_us, a->self_var, b->self_us, b->self_var))
            r->flags |= COMPARE_SELF;
        if (compare_flagged_memory(a->total_us, a->total_var, b->total_us, b->total_var))
            r->flags |= COMPARE_TOTAL;
        return;
    }
    r->self_z = compare_z(a->self_us, a->self_n, b->self_us, b->self_n);
    r->total_z = compare_z(a->total_us, a->total_n, b->total_us, b->total_n);
    if (compare_flagged(a->self_us, a->self_n, b->self_us, b->self_n))
        r->flags |= COMPARE_SELF;
    if (compare_flagged(a->total_us, a->total_n, b->total_us, b->total_n))
        r->flags |= COMPARE_TOTAL;
}

/* The rows of `base` and `nw` (out->memory and out->by say of what). */
static int compare_rows(const profile *base, const profile *nw, compare_result *out)
{
    const profile *ps[2] = {base, nw};
    compare_side *sides[2] = {NULL, NULL};
    cand *c = NULL;
    int ret = -1;
    for (int i = 0; i < 2; i++)
        if (!(sides[i] = out->memory ? side_bytes(ps[i], out->by, &out->samples[i], &out->us[i])
                                     : side_times(ps[i], &out->samples[i], &out->us[i])))
            goto done;
    /* The functions with samples on either side, by (kind, file, name, line). */
    size_t nc = 0;
    c = malloc((base->nfuncs + nw->nfuncs + 1) * sizeof *c);
    out->rows = malloc((base->nfuncs + nw->nfuncs + 1) * sizeof *out->rows);
    if (!c || !out->rows)
        goto done;
    for (int i = 0; i < 2; i++)
        for (size_t f = 0; f < ps[i]->nfuncs; f++)
            if (sides[i][f].total_n)
                c[nc++] = (cand){&ps[i]->funcs[f], (uint32_t)f, i, 0};
    qsort(c, nc, sizeof *c, cmp_cand);
    const compare_side *const sv[2] = {sides[0], sides[1]};
    /* Within each (kind, file, name) group: the same first line first; then, when one
     * function of the name is left on each side, those two (its definition moved). */
    for (size_t g = 0; g < nc;) {
        size_t e = g + 1;
        while (e < nc && cmp_name(c[g].fn, c[e].fn) == 0)
            e++;
        for (size_t k = g; k + 1 < e; k++) {
            if (c[k].side == 0 && c[k + 1].side == 1 && c[k].fn->line == c[k + 1].fn->line) {
                fill_row(&out->rows[out->nrows++], sv, out->memory, c[k].index, c[k + 1].index);
                c[k].matched = c[k + 1].matched = 1;
                k++;
            }
        }
        size_t left[2] = {0, 0}, at[2] = {0, 0};
        for (size_t k = g; k < e; k++) {
            if (!c[k].matched) {
                left[c[k].side]++;
                at[c[k].side] = k;
            }
        }
        if (left[0] == 1 && left[1] == 1) {
            fill_row(&out->rows[out->nrows++], sv, out->memory, c[at[0]].index, c[at[1]].index);
            c[at[0]].matched = c[at[1]].matched = 1;
        }
        for (size_t k = g; k < e; k++) {
            if (!c[k].matched)
                fill_row(&out->rows[out->nrows++], sv, out->memory,
                         c[k].side == 0 ? c[k].index : COMPARE_NONE,
                         c[k].side == 1 ? c[k].index : COMPARE_NONE);
        }
        g = e;
    }
    qsort(out->rows, out->nrows, sizeof *out->rows, cmp_row);
    for (size_t k = 0; k < out->nrows; k++)
        out->nflagged += out->rows[k].flags != 0;
    ret = 0;
done:
    free(sides[0]);
    free(sides[1]);
    free(c);
    if (ret < 0)
        compare_free(out);
    return ret;
}

int compare_profiles(const profile *base, const profile *nw, compare_result *out)
{
    memset(out, 0, sizeof *out);
    return compare_rows(base, nw, out);
}

int compare_profiles_memory(const profile *base, const profile *nw, int by, compare_result *out)
{
    memset(out, 0, sizeof *out);
    out->memory = 1;
    out->by = by;
    return compare_rows(base, nw, out);
}

void compare_free(compare_result *r)
{
    free(r->rows);
    memset(r, 0, sizeof *r);
}

/* Each side's function index -> the row that holds it. */
static uint32_t *row_of_funcs(const compare_result *r, const profile *p, int side)
{
    uint32_t *m = malloc((p->nfuncs ? p->nfuncs : 1) * sizeof *m);
    if (!m)
        return NULL;
    memset(m, 0xff, (p->nfuncs ? p->nfuncs : 1) * sizeof *m);
    for (size_t k = 0; k < r->nrows; k++)
        if (r->rows[k].func[side] != COMPARE_NONE)
            m[r->rows[k].func[side]] = (uint32_t)k;
    return m;
}

int compare_tree(const profile *base, const profile *nw, const compare_result *r,
                 compare_node **nodes, size_t *nnodes)
{
    const profile *ps[2] = {base, nw};
    size_t n = 1, cap = 256;
    compare_node *v = malloc(cap * sizeof *v);
    idmap children = {0};
    uint32_t *rows = NULL;
    uint64_t *cnt = NULL, *us = NULL;
    int ret = -1;
    if (!v)
        goto done;
    memset(&v[0], 0, sizeof v[0]);
    v[0].parent = v[0].row = COMPARE_NONE;
    for (int side = 0; side < 2; side++) {
        const profile *p = ps[side];
        if (!(rows = row_of_funcs(r, p, side)) || aggregate_stack_costs(p, &cnt, &us) < 0)
            goto done;
        for (size_t k = 0; k < p->nstacks; k++) {
            if (!cnt[k])
                continue;
            const profile_stack *st = &p->stacks[k];
            const profile_frame *fr = p->frames + st->first;
            uint32_t at = 0;
            v[0].n[side] += cnt[k];
            v[0].us[side] += (double)us[k];
            for (uint32_t j = 0; j < st->nframes; j++) {
                uint32_t row = rows[fr[j].func];
                if (row == COMPARE_NONE)
                    continue; /* no samples on either side: cannot happen */
                uint64_t key = ((uint64_t)at << 32) | row;
                uint32_t child = idmap_get(&children, key);
                if (child == IDMAP_EMPTY) {
                    if (n == cap) {
                        compare_node *g = realloc(v, 2 * cap * sizeof *v);
                        if (!g)
                            goto done;
                        v = g;
                        cap *= 2;
                    }
                    child = (uint32_t)n++;
                    memset(&v[child], 0, sizeof v[child]);
                    v[child].parent = at;
                    v[child].row = row;
                    if (idmap_set(&children, key, child) < 0)
                        goto done;
                }
                v[child].n[side] += cnt[k];
                v[child].us[side] += (double)us[k];
                at = child;
            }
        }
        free(rows);
        free(cnt);
        free(us);
        rows = NULL;
        cnt = NULL;
        us = NULL;
    }
    ret = 0;
done:
    free(rows);
    free(cnt);
    free(us);
    idmap_free(&children);
    if (ret < 0) {
        free(v);
        v = NULL;
        n = 0;
    }
    *nodes = v;
    *nnodes = n;
    return ret;
}
