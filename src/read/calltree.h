/*
 * calltree: the samples of a profile as a tree of calls, for `pyprof tree`, the exports
 * that walk paths (folded) and the HTML page's tree of functions.  Each node is one frame
 * reached by one path from the outermost frame: its function (and, when asked, the line
 * executing in it), the samples whose stack passes through it (total) and the samples taken in
 * it (self).  Node CALLTREE_ROOT is a virtual root above every thread's outermost frame, so the
 * processes and threads of a profile are merged: two threads that start in the same
 * function share that node.  A stack with no frame counts as the root's self.
 *
 * Recursion needs no special case here: a recursive call is a deeper node, and a sample
 * counts once in each node of its own path, so a node's total is never more than its
 * parent's.  Not thread-safe; tool-side only.
 *
 * Interface: CALLTREE_ROOT, CALLTREE_NONE, CALLTREE_ANY_LINE, calltree_node, calltree,
 * calltree_build, calltree_init, calltree_add, calltree_free, calltree_children.
 */
#ifndef PYPROF_CALLTREE_H
#define PYPROF_CALLTREE_H

#include <stddef.h>
#include <stdint.h>

#include "idmap.h"
#include "profile.h"

#define CALLTREE_ROOT 0u
#define CALLTREE_NONE UINT32_MAX
#define CALLTREE_ANY_LINE INT32_MIN /* nodes keyed by function only */

typedef struct calltree_node {
    uint32_t func;   /* CALLTREE_NONE for the root */
    int32_t line;    /* the line executing in this frame, or CALLTREE_ANY_LINE */
    uint32_t parent; /* CALLTREE_NONE for the root */
    uint32_t first_child, next_sibling; /* CALLTREE_NONE ends the list (unordered) */
    uint32_t depth;                     /* 0 for the root, 1 for an outermost frame */
    uint64_t total, self;
} calltree_node;

typedef struct calltree {
    calltree_node *nodes;
    size_t nnodes;
    uint32_t *stack_leaf; /* per stack of the profile: its innermost node */
    /* Private: capacity and the (parent, func, line) -> node index. */
    size_t cap;
    idtab index;
} calltree;

/* Builds the tree of `p`'s stacks, each weighted by stack_weight[stack] (profile_agg's).
 * With `keep_lines`, frames of one function at different lines are different nodes.
 * Returns 0, or -1 when out of memory (the tree is then empty). */
int calltree_build(calltree *t, const profile *p, const uint64_t *stack_weight, int keep_lines);

/* The same, a stack at a time, for a caller that wants its own order of nodes (nodes are
 * numbered as they are made, parents first): calltree_init makes the tree with only its
 * root (0, or -1 when out of memory); calltree_add adds stack `stack` with `weight` and
 * returns its innermost node (also kept in stack_leaf), or CALLTREE_NONE when out of
 * memory.  A stack added twice is counted twice. */
int calltree_init(calltree *t, const profile *p);
uint32_t calltree_add(calltree *t, const profile *p, uint32_t stack, uint64_t weight,
                      int keep_lines);

void calltree_free(calltree *t);

/* The children of node `n`, by total descending, then by function name, file and line:
 * fills a malloc'ed array the caller frees and returns their number, or returns
 * (size_t)-1 when out of memory. */
size_t calltree_children(const calltree *t, const profile *p, uint32_t n, uint32_t **out);

#endif
