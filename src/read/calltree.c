/*
 * calltree: the call tree of a profile.  See calltree.h.
 *
 * The tree is built from the profile's deduplicated stacks, each inserted once with its
 * weight, so the cost is the number of distinct stacks times their depth, not the number
 * of samples.  A child is found through one index table (idmap.h) keyed by (parent,
 * function, line) instead of a walk of the sibling list: a dispatcher with thousands of
 * callees stays linear.  Nodes are numbered in the order they are made, so a parent
 * comes before its children, and a caller that adds stacks in its own order (the HTML
 * page: in the order samples first use them) gets its own numbering.
 */
#include "calltree.h"

#include <stdlib.h>
#include <string.h>

#include "common/growarray.h"

static uint64_t node_hash(uint32_t parent, uint32_t func, int32_t line)
{
    return idtab_hash2(parent, func, line);
}

/* Appends a node and links it under `parent`.  Returns its index or CALLTREE_NONE. */
static uint32_t add_node(calltree *t, uint32_t parent, uint32_t func, int32_t line)
{
    if (grow_array((void **)&t->nodes, &t->cap, t->nnodes + 1, sizeof *t->nodes, 1024) < 0)
        return CALLTREE_NONE;
    if (t->nnodes >= CALLTREE_NONE - 1 || idtab_reserve(&t->index, t->nnodes + 1) < 0)
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
        idtab_add(&t->index, node_hash(parent, func, line), idx); /* the root: never */
    }
    return idx;
}

static uint32_t child_of(calltree *t, uint32_t parent, uint32_t func, int32_t line)
{
    uint64_t h = node_hash(parent, func, line);
    size_t pos;
    for (uint32_t i = idtab_first(&t->index, h, &pos); i != IDTAB_NONE;
         i = idtab_next(&t->index, h, &pos)) {
        const calltree_node *n = &t->nodes[i];
        if (n->parent == parent && n->func == func && n->line == line)
            return i;
    }
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

int calltree_init(calltree *t, const profile *p)
{
    memset(t, 0, sizeof *t);
    t->stack_leaf = malloc((p->nstacks ? p->nstacks : 1) * sizeof *t->stack_leaf);
    if (!t->stack_leaf ||
        add_node(t, CALLTREE_NONE, CALLTREE_NONE, CALLTREE_ANY_LINE) == CALLTREE_NONE) {
        calltree_free(t);
        return -1;
    }
    for (size_t s = 0; s < p->nstacks; s++)
        t->stack_leaf[s] = CALLTREE_NONE;
    return 0;
}

uint32_t calltree_add(calltree *t, const profile *p, uint32_t stack, uint64_t weight,
                      int keep_lines)
{
    t->stack_leaf[stack] = insert_stack(t, p, &p->stacks[stack], weight, keep_lines);
    return t->stack_leaf[stack];
}

int calltree_build(calltree *t, const profile *p, const uint64_t *stack_weight, int keep_lines)
{
    if (calltree_init(t, p) < 0)
        return -1;
    for (size_t s = 0; s < p->nstacks; s++) {
        /* A stack no sample kept stays out: the tree is what is reported. */
        if (stack_weight[s] &&
            calltree_add(t, p, (uint32_t)s, stack_weight[s], keep_lines) == CALLTREE_NONE) {
            calltree_free(t);
            return -1;
        }
    }
    return 0;
}

void calltree_free(calltree *t)
{
    free(t->nodes);
    free(t->stack_leaf);
    idtab_free(&t->index);
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
