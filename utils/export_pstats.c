/*
 * export_pstats: the file Python's profile and cProfile modules write (Stats.dump_stats)
 * and pstats.Stats loads — for `python3 -m pstats`, snakeviz, gprof2dot and
 * pyprof2calltree.  It is one marshalled dict:
 *
 *     {(file, first_line, name): (cc, nc, tt, ct, {caller_key: (nc, cc, tt, ct)})}
 *
 * with, from samples instead of calls: tt (tottime) the time of the samples taken in
 * the function, ct (cumtime) the time of the samples with it on the stack, counted once
 * however deep it recurses; nc the function's frames over all samples (every recursion
 * level) and cc the samples with it on the stack, so a recursive function shows "nc/cc"
 * the way cProfile shows recursive calls.  A caller entry holds the same four numbers
 * for the calls from that caller, in the order cProfile writes them there (nc first:
 * Lib/cProfile.py, and pstats reads them so).  Functions without a file (the "[cut]"
 * marker) get cProfile's key for built-ins, ('~', 0, name).
 *
 * The marshal encoding is written by hand — the few codes needed, as CPython's
 * Python/marshal.c reads them (any version since 3.4): '{' dict ... '0', ')' small
 * tuple, 'i' int32 and 'l' long (15-bit digits), 'g' binary double, 'u' UTF-8 string,
 * all little-endian.  Strings must be valid UTF-8 there, so bytes that are not become
 * U+FFFD.
 */
#include <stdlib.h>
#include <string.h>

#include "read/callgraph.h"
#include "cli_text.h"
#include "export.h"

typedef struct marshal_out {
    FILE *out;
    int oom;
} marshal_out;

static void m_u32(marshal_out *m, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        putc((int)((v >> (8 * i)) & 0xff), m->out);
}

static void m_int(marshal_out *m, uint64_t v)
{
    if (v <= INT32_MAX) {
        putc('i', m->out);
        m_u32(m, (uint32_t)v);
        return;
    }
    uint16_t digits[5];
    uint32_t n = 0;
    for (; v; v >>= 15)
        digits[n++] = (uint16_t)(v & 0x7fff);
    putc('l', m->out);
    m_u32(m, n); /* a positive count: the sign of a long is the sign of its size */
    for (uint32_t i = 0; i < n; i++) {
        putc(digits[i] & 0xff, m->out);
        putc(digits[i] >> 8, m->out);
    }
}

static void m_float(marshal_out *m, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    putc('g', m->out);
    for (int i = 0; i < 8; i++)
        putc((int)((bits >> (8 * i)) & 0xff), m->out);
}

/* A string; bytes that are not UTF-8 become U+FFFD, since marshal decodes strictly. */
static void m_str(marshal_out *m, const char *s)
{
    char *clean = cli_utf8_dup(s);
    if (!clean) {
        m->oom = 1;
        return;
    }
    size_t len = strlen(clean);
    putc('u', m->out);
    m_u32(m, (uint32_t)len);
    fwrite(clean, 1, len, m->out);
    free(clean);
}

static void m_tuple(marshal_out *m, uint8_t n)
{
    putc(')', m->out);
    putc(n, m->out);
}

/* The key of function `f`: (file, first line, name). */
static void m_func_key(marshal_out *m, const profile_func *f)
{
    m_tuple(m, 3);
    if (f->file[0]) {
        m_str(m, f->file);
        m_int(m, f->line > 0 ? (uint64_t)f->line : 0);
    } else {
        m_str(m, "~");
        m_int(m, 0);
    }
    m_str(m, f->name);
}

static void m_counts(marshal_out *m, uint64_t a, uint64_t b, uint64_t tt_us, uint64_t ct_us)
{
    m_int(m, a);
    m_int(m, b);
    m_float(m, (double)tt_us / 1e6);
    m_float(m, (double)ct_us / 1e6);
}

/* The callers of the callee of edges[*i ..], advancing *i past them. */
static void m_callers(marshal_out *m, const profile *p, const callgraph *g, size_t *i,
                      uint32_t callee)
{
    putc('{', m->out);
    for (; *i < g->nedges && g->edges[*i].callee == callee; (*i)++) {
        const callgraph_edge *e = &g->edges[*i];
        m_func_key(m, &p->funcs[e->caller]);
        m_tuple(m, 4);
        /* cProfile orders a caller's counts (nc, cc, ...), unlike a function's. */
        m_counts(m, e->frames, e->total.n, e->self.us, e->total.us);
    }
    putc('0', m->out);
}

int export_pstats(FILE *out, const profile *p, const export_opts *o)
{
    (void)o;
    callgraph g;
    if (callgraph_build(&g, p, 0) < 0)
        return export_oom();
    callgraph_sort_edges(&g, 1);
    marshal_out m = {out, 0};
    putc('{', out);
    size_t e = 0;
    for (uint32_t f = 0; f < p->nfuncs && !m.oom; f++) {
        const callgraph_func *cf = &g.funcs[f];
        if (!cf->total.n)
            continue;
        while (e < g.nedges && g.edges[e].callee < f)
            e++;
        m_func_key(&m, &p->funcs[f]);
        m_tuple(&m, 5);
        m_counts(&m, cf->total.n, cf->frames, cf->self.us, cf->total.us);
        m_callers(&m, p, &g, &e, f);
    }
    putc('0', out);
    callgraph_free(&g);
    return m.oom ? export_oom() : 0;
}
