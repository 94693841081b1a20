/*
 * export_folded: Brendan Gregg's collapsed stacks ("folded"), the input of
 * flamegraph.pl, inferno and speedscope.  One line per distinct path of the call tree
 * that samples ended in: the frames from the outermost to the innermost joined by ';',
 * a space, and the number of samples.  A frame is "NAME (FILE:LINE)" with the
 * function's first line, or with --lines the line running in that frame (py-spy's
 * style, which splits a function by its lines).  The line counts add up to the samples.
 * With --memory the values are bytes instead: what the sampled allocations of each stack
 * stand for, allocated, (=inuse) in use at the end or (=peak) in use at the peak of the
 * estimated heap (allocs.h).
 *
 * The format has no quoting: ';' separates frames and the last space the count, so a
 * ';' inside a name or file becomes ':', and control characters (a newline would end
 * the line) become '?'.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "read/allocs.h"
#include "read/calltree.h"
#include "export.h"

static void put_clean(FILE *out, const char *s)
{
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        putc(*c == ';' ? ':' : *c < 0x20 || *c == 0x7f ? '?' : *c, out);
}

static void put_frame(FILE *out, const profile *p, const calltree_node *n, int lines)
{
    const profile_func *f = &p->funcs[n->func];
    put_clean(out, f->name);
    if (!f->file[0])
        return;
    fputs(" (", out);
    put_clean(out, f->file);
    if (!lines)
        fprintf(out, ":%" PRId64 ")", f->line);
    else if (n->line >= 0)
        fprintf(out, ":%" PRId32 ")", n->line);
    else
        fputs(":?)", out);
}

/* The path from the outermost frame down to node `n`, then its self count. */
static void put_path(FILE *out, const profile *p, const calltree *t, uint32_t n, uint32_t *path,
                     int lines)
{
    size_t depth = 0;
    for (uint32_t k = n; k != CALLTREE_ROOT; k = t->nodes[k].parent)
        path[depth++] = k;
    while (depth--) {
        put_frame(out, p, &t->nodes[path[depth]], lines);
        if (depth)
            putc(';', out);
    }
    fprintf(out, " %" PRIu64 "\n", t->nodes[n].self);
}

/* The weight of each stack: its samples, or with --memory its bytes; NULL when out of
 * memory. */
static uint64_t *stack_weights(const profile *p, const export_opts *o)
{
    uint64_t *w = NULL;
    if (o->memory) {
        w = export_memory_weights(p, o->by);
    } else {
        aggregate_counts agg;
        if (aggregate_funcs(p, &agg) < 0)
            return NULL;
        w = agg.stack_weight;
        agg.stack_weight = NULL; /* kept */
        aggregate_counts_free(&agg);
    }
    return w;
}

int export_folded(FILE *out, const profile *p, const export_opts *o)
{
    calltree t;
    uint64_t *weights = stack_weights(p, o);
    if (!weights)
        return export_oom();
    int rc = calltree_build(&t, p, weights, o->lines);
    free(weights);
    if (rc < 0)
        return export_oom();

    uint32_t maxdepth = 0;
    for (size_t n = 0; n < t.nnodes; n++)
        if (t.nodes[n].depth > maxdepth)
            maxdepth = t.nodes[n].depth;
    uint32_t *path = malloc(((size_t)maxdepth + 1) * sizeof *path);
    if (!path) {
        calltree_free(&t);
        return export_oom();
    }
    /* Samples without a Python frame still count, so the lines add up. */
    if (t.nodes[CALLTREE_ROOT].self)
        fprintf(out, "[no Python frame] %" PRIu64 "\n", t.nodes[CALLTREE_ROOT].self);
    for (size_t n = 1; n < t.nnodes; n++)
        if (t.nodes[n].self)
            put_path(out, p, &t, (uint32_t)n, path, o->lines);
    free(path);
    calltree_free(&t);
    return 0;
}
