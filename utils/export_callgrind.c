/*
 * export_callgrind: the callgrind profile format (valgrind's docs/callgrind-format),
 * read by kcachegrind, qcachegrind and callgrind_annotate.  Two events, Samples and
 * Time_us (the time the samples stand for).  Per function: its self cost on each line
 * where samples were taken, then each call it makes: the callee (cfl=/cfn=), calls=
 * with the number of samples the call was on the stack and the callee's first line, and
 * the inclusive cost of the call on the caller's line.  A call on the stack several
 * times in one sample (recursion) counts once, so inclusive costs never exceed the
 * total.
 *
 * File and function names use the format's compression ("fn=(3) name" once, "fn=(3)"
 * after).  A function is known by its name there, so two functions of one file with the
 * same name (two lambdas) get their first line appended ("<lambda>'12").  Control
 * characters become '?': the format is line-based.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <pyprof/pyprof.h>

#include "read/callgraph.h"
#include "export.h"

typedef struct cg_out {
    FILE *out;
    const profile *p;
    uint32_t *file_id;  /* per function: the id of its file, 0 before first use */
    uint8_t *fn_named;  /* per function: its name was written once */
    uint8_t *ambiguous; /* per function: another function of its file has its name */
} cg_out;

static void put_clean(FILE *out, const char *s)
{
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        putc(*c < 0x20 || *c == 0x7f ? '?' : *c, out);
}

static const char *file_of(const profile_func *f)
{
    return f->file[0] ? f->file : "[unknown file]";
}

static const profile *sort_p;
static int cmp_file_name(const void *a, const void *b)
{
    const profile_func *x = &sort_p->funcs[*(const uint32_t *)a];
    const profile_func *y = &sort_p->funcs[*(const uint32_t *)b];
    int r = strcmp(x->file, y->file);
    return r ? r : strcmp(x->name, y->name);
}

/* One sort by (file, name) gives both: the functions whose (file, name) another function
 * shares are marked ambiguous, and functions of one file share a file id. */
static int index_functions(cg_out *w)
{
    const profile *p = w->p;
    uint32_t *order = malloc((p->nfuncs ? p->nfuncs : 1) * sizeof *order);
    if (!order)
        return -1;
    for (uint32_t f = 0; f < p->nfuncs; f++)
        order[f] = f;
    sort_p = p;
    qsort(order, p->nfuncs, sizeof *order, cmp_file_name);
    uint32_t id = 0;
    for (size_t i = 0; i < p->nfuncs; i++) {
        if (i && !cmp_file_name(&order[i - 1], &order[i])) {
            w->ambiguous[order[i - 1]] = 1;
            w->ambiguous[order[i]] = 1;
        }
        if (!i || strcmp(p->funcs[order[i - 1]].file, p->funcs[order[i]].file))
            id++;
        w->file_id[order[i]] = id;
    }
    free(order);
    return 0;
}

/* "fl=(3) FILE" the first time a file id is written, "fl=(3)" after. */
static void put_file(cg_out *w, const char *key, uint32_t f, uint8_t *file_named)
{
    uint32_t id = w->file_id[f];
    fprintf(w->out, "%s=(%" PRIu32 ")", key, id);
    if (!file_named[id]) {
        file_named[id] = 1;
        putc(' ', w->out);
        put_clean(w->out, file_of(&w->p->funcs[f]));
    }
    putc('\n', w->out);
}

static void put_fn(cg_out *w, const char *key, uint32_t f)
{
    fprintf(w->out, "%s=(%" PRIu32 ")", key, f + 1);
    if (!w->fn_named[f]) {
        const profile_func *fn = &w->p->funcs[f];
        w->fn_named[f] = 1;
        putc(' ', w->out);
        put_clean(w->out, fn->name);
        if (w->ambiguous[f])
            fprintf(w->out, "'%" PRId64, fn->line);
    }
    putc('\n', w->out);
}

static int64_t line_pos(int64_t line) { return line > 0 ? line : 0; }

static void put_header(FILE *out, const profile *p, const callgraph *g)
{
    uint64_t n = 0, us = 0;
    for (size_t i = 0; i < g->nlines; i++) {
        n += g->lines[i].self.n;
        us += g->lines[i].self.us;
    }
    fprintf(out, "# callgrind format\nversion: 1\ncreator: pyprof %s\n", PYPROF_VERSION_STRING);
    if (p->nprocs == 1) {
        fprintf(out, "pid: %" PRIu64 "\ncmd: ", p->procs[0].pid);
        for (size_t i = 0; i < p->procs[0].argc; i++) {
            if (i)
                putc(' ', out);
            put_clean(out, p->procs[0].argv[i]);
        }
        putc('\n', out);
    }
    fprintf(out, "positions: line\nevents: Samples Time_us\nsummary: %" PRIu64 " %" PRIu64 "\n",
            n, us);
}

static void put_functions(cg_out *w, const callgraph *g, uint8_t *file_named)
{
    size_t l = 0, e = 0;
    for (uint32_t f = 0; f < w->p->nfuncs; f++) {
        if (!g->funcs[f].total.n)
            continue;
        putc('\n', w->out);
        put_file(w, "fl", f, file_named);
        put_fn(w, "fn", f);
        for (; l < g->nlines && g->lines[l].func <= f; l++)
            if (g->lines[l].func == f)
                fprintf(w->out, "%" PRId64 " %" PRIu64 " %" PRIu64 "\n",
                        line_pos(g->lines[l].line), g->lines[l].self.n, g->lines[l].self.us);
        for (; e < g->nedges && g->edges[e].caller <= f; e++) {
            const callgraph_edge *c = &g->edges[e];
            if (c->caller != f)
                continue;
            put_file(w, "cfl", c->callee, file_named);
            put_fn(w, "cfn", c->callee);
            fprintf(w->out,
                    "calls=%" PRIu64 " %" PRId64 "\n%" PRId64 " %" PRIu64 " %" PRIu64 "\n",
                    c->total.n, line_pos(w->p->funcs[c->callee].line), line_pos(c->line),
                    c->total.n, c->total.us);
        }
    }
}

int export_callgrind(FILE *out, const profile *p, const export_opts *o)
{
    (void)o;
    callgraph g;
    if (callgraph_build(&g, p, 1) < 0)
        return export_oom();
    callgraph_sort_edges(&g, 0);
    size_t nf = p->nfuncs ? p->nfuncs : 1;
    cg_out w = {out, p, calloc(nf, sizeof(uint32_t)), calloc(nf, 1), calloc(nf, 1)};
    uint8_t *file_named = calloc(nf + 1, 1);
    int rc = -1;
    if (!w.file_id || !w.fn_named || !w.ambiguous || !file_named || index_functions(&w) < 0) {
        export_oom();
        goto cleanup;
    }
    put_header(out, p, &g);
    put_functions(&w, &g, file_named);
    rc = 0;
cleanup:
    free(w.file_id);
    free(w.fn_named);
    free(w.ambiguous);
    free(file_named);
    callgraph_free(&g);
    return rc;
}
