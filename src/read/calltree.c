/*
 * calltree: the call tree of a profile.  See calltree.h.
 *
 * The tree is built from the profile's deduplicated stacks, each inserted once with its
 * weight, so the cost is the number of distinct stacks times their depth, not the number
 * of samples.  A child is found through one open-addressing table keyed by (parent,
 * function, line) instead of a walk of the sibling list: a dispatcher with thousands of
 * callees stays linear.
 */
#include "calltree.h"

#include <stdlib.h>
#include <string.h>

static uint64_t node_key_hash(uint32_t parent, uint32_t func, int32_t line)
{
    uint64_t h = ((uint64_t)parent << 32 | func) * 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)(uint32_t)line * 0xc2b2ae3d27d4eb4full;
    return h ^ (h >> 29);
}

static int node_matches(const calltree_node *n, uint32_t parent, uint32_t func, int32_t line)
{
    return n->parent == parent && n->func == func && n->line == line;
}

static void slot_insert(calltree *t, uint32_t idx)
{
    const calltree_node *n = &t->nodes[idx];
    size_t mask = t->nslots - 1;
    size_t i = node_key_hash(n->parent, n->func, n->line) & mask;
    while (t->slots[i] != CALLTREE_NONE)
        i = (i + 1) & mask;
    t->slots[i] = idx;
}

/* Keeps the table at most half full.  Returns 0 or -1. */
static int slots_reserve(calltree *t, size_t nodes)
{
    if (nodes * 2 <= t->nslots)
        return 0;
    size_t n = t->nslots ? t->nslots : 1024;
    while (nodes * 2 > n)
        n *= 2;
    uint32_t *s = malloc(n * sizeof *s);
    if (!s)
        return -1;
    memset(s, 0xff, n * sizeof *s);
    free(t->slots);
    t->slots = s;
    t->nslots = n;
    for (size_t i = 1; i < t->nnodes; i++) /* the root is never looked up */
        slot_insert(t, (uint32_t)i);
    return 0;
}

/* Appends a node and links it under `parent`.  Returns its index or CALLTREE_NONE. */
static uint32_t add_node(calltree *t, uint32_t parent, uint32_t func, int32_t line)
{
    if (t->nnodes == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        calltree_node *n = realloc(t->nodes, cap * sizeof *n);
        if (!n)
            return CALLTREE_NONE;
        t->nodes = n;
        t->cap = cap;
    }
    if (t->nnodes >= CALLTREE_NONE - 1 || slots_reserve(t, t->nnodes + 1) < 0)
        return CALLTREE_NONE;
    uint32_t idx = (uint32_t)t->nnodes++;
    calltree_node *n = &t->nodes[idx];
    memset(n, 0, sizeof *n);
    n->func = func;
    n->line = line;
    n->parent = parent;
    n->first_child = CALLTREE_NONE;
    n->next_sibling = CALLTREE_NONE;
    if (parent != CALLTREE_NONE) {
        n->depth = t->nodes[parent].depth + 1;
        n->next_sibling = t->nodes[parent].first_child;
        t->nodes[parent].first_child = idx;
        slot_insert(t, idx);
    }
    return idx;
}

static uint32_t child_of(calltree *t, uint32_t parent, uint32_t func, int32_t line)
{
    size_t mask = t->nslots - 1;
    for (size_t i = node_key_hash(parent, func, line) & mask; t->slots[i] != CALLTREE_NONE;
         i = (i + 1) & mask)
        if (node_matches(&t->nodes[t->slots[i]], parent, func, line))
            return t->slots[i];
    return add_node(t, parent, func, line);
}

/* Adds one stack with weight `w`; returns its innermost node or CALLTREE_NONE. */
static uint32_t insert_stack(calltree *t, const profile *p, const profile_stack *st, uint64_t w,
                             int keep_lines)
{
    uint32_t n = CALLTREE_ROOT;
    t->nodes[n].total += w;
    const profile_frame *fr = p->frames + st->first;
    for (uint32_t k = 0; k < st->nframes; k++) {
        n = child_of(t, n, fr[k].func, keep_lines ? fr[k].line : CALLTREE_ANY_LINE);
        if (n == CALLTREE_NONE)
            return CALLTREE_NONE;
        t->nodes[n].total += w;
    }
    t->nodes[n].self += w;
    return n;
}

int calltree_build(calltree *t, const profile *p, const uint64_t *stack_weight, int keep_lines)
{
    memset(t, 0, sizeof *t);
    t->stack_leaf = malloc((p->nstacks ? p->nstacks : 1) * sizeof *t->stack_leaf);
    if (!t->stack_leaf || slots_reserve(t, 1) < 0 ||
        add_node(t, CALLTREE_NONE, CALLTREE_NONE, CALLTREE_ANY_LINE) == CALLTREE_NONE)
        goto fail;
    for (size_t s = 0; s < p->nstacks; s++) {
        t->stack_leaf[s] = CALLTREE_NONE;
        if (!stack_weight[s])
            continue; /* filtered out: keep the tree to what is reported */
        t->stack_leaf[s] = insert_stack(t, p, &p->stacks[s], stack_weight[s], keep_lines);
        if (t->stack_leaf[s] == CALLTREE_NONE)
            goto fail;
    }
    return 0;
fail:
    calltree_free(t);
    return -1;
}

void calltree_free(calltree *t)
{
    free(t->nodes);
    free(t->stack_leaf);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

typedef struct child_order {
    const calltree *t;
    const profile *p;
} child_order;

static int cmp_child(const void *a, const void *b, void *arg)
{
    const child_order *c = arg;
    const calltree_node *x = &c->t->nodes[*(const uint32_t *)a];
    const calltree_node *y = &c->t->nodes[*(const uint32_t *)b];
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    const profile_func *fx = &c->p->funcs[x->func], *fy = &c->p->funcs[y->func];
    int r = strcmp(fx->name, fy->name);
    if (!r)
        r = strcmp(fx->file, fy->file);
    if (!r)
        r = (fx->line > fy->line) - (fx->line < fy->line);
    if (!r)
        r = (x->line > y->line) - (x->line < y->line);
    return r;
}

size_t calltree_children(const calltree *t, const profile *p, uint32_t n, uint32_t **out)
{
    size_t count = 0;
    for (uint32_t c = t->nodes[n].first_child; c != CALLTREE_NONE; c = t->nodes[c].next_sibling)
        count++;
    uint32_t *arr = malloc((count ? count : 1) * sizeof *arr);
    if (!arr)
        return (size_t)-1;
    size_t k = 0;
    for (uint32_t c = t->nodes[n].first_child; c != CALLTREE_NONE; c = t->nodes[c].next_sibling)
        arr[k++] = c;
    child_order ctx = {t, p};
    qsort_r(arr, count, sizeof *arr, cmp_child, &ctx);
    *out = arr;
    return count;
}
