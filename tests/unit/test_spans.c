/*
 * Unit tests for what the tool derives from spans: which samples a span holds, its cost
 * and top functions, the --span mask (src/read/spans.c), traces grouped by base_id and
 * joined across processes into acyclic trees (src/read/trace.c), and the strict reader
 * of the JSON objects spans carry (src/read/jsonscan.c).  Profiles are built here by
 * hand, field by field, so every expected number comes from the test's own inputs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "read/jsonscan.h"
#include "read/profile.h"
#include "read/spans.h"
#include "read/trace.h"

/* ---- building a profile --------------------------------------------------------------- */

#define GROW1(arr, n) ((arr) = realloc((arr), ((n) + 1) * sizeof *(arr)))

static profile *mk(size_t nprocs)
{
    profile *p = profile_new(NULL, 0, NULL);
    assert_non_null(p);
    p->procs = calloc(nprocs, sizeof *p->procs);
    assert_non_null(p->procs);
    p->nprocs = nprocs;
    for (size_t i = 0; i < nprocs; i++) {
        p->procs[i].pid = 100 * (i + 1);
        p->procs[i].start_unix_ns = 1000000000000000000ull + i * 5000000ull; /* +5 ms */
        p->procs[i].period_ns = 1000000;
    }
    return p;
}

static uint32_t add_thread(profile *p, uint32_t proc, uint64_t tid)
{
    GROW1(p->threads, p->nthreads);
    p->threads[p->nthreads] = (profile_thread){proc, tid, strdup("t"), 0};
    return (uint32_t)p->nthreads++;
}

/* A function and a one-frame stack of it; returns the stack. */
static uint32_t add_func_stack(profile *p, const char *name)
{
    GROW1(p->funcs, p->nfuncs);
    p->funcs[p->nfuncs] = (profile_func){strdup(name), strdup("x.py"), 1, PROFILE_FUNC_PYTHON};
    GROW1(p->frames, p->nframes);
    p->frames[p->nframes] = (profile_frame){(uint32_t)p->nfuncs++, 1};
    GROW1(p->stacks, p->nstacks);
    p->stacks[p->nstacks] = (profile_stack){p->nframes++, 1, 0};
    return (uint32_t)p->nstacks++;
}

static void add_sample(profile *p, uint32_t th, int64_t t_us, uint32_t stack, uint32_t cpu_us)
{
    GROW1(p->samples, p->nsamples);
    p->samples[p->nsamples++] = (profile_sample){t_us, th, stack, cpu_us,
                                                 p->threads[th].process};
}

static uint32_t add_span(profile *p, uint32_t th, uint64_t id, int64_t start, int64_t stop,
                         int unfinished, const char *name, const char *base,
                         const char *trace_id, const char *parent_id, uint32_t parent)
{
    GROW1(p->spans, p->nspans);
    profile_span *s = &p->spans[p->nspans];
    memset(s, 0, sizeof *s);
    s->process = p->threads[th].process;
    s->thread = s->stop_thread = th;
    s->parent = parent;
    s->depth = parent == PROFILE_NO_SPAN ? 0 : p->spans[parent].depth + 1;
    s->parent_span_id = parent == PROFILE_NO_SPAN ? 0 : p->spans[parent].id;
    s->unfinished = unfinished;
    s->id = id;
    s->start_us = start;
    s->stop_us = stop;
    s->name = strdup(name);
    s->base_id = strdup(base);
    s->trace_id = strdup(trace_id);
    s->parent_id = strdup(parent_id);
    s->info = strdup("");
    s->stop_info = strdup("");
    return (uint32_t)p->nspans++;
}

/* ---- spans ---------------------------------------------------------------------------- */

static void test_contains(void **state)
{
    profile *p = mk(1);
    uint32_t t0 = add_thread(p, 0, 1), t1 = add_thread(p, 0, 2);
    uint32_t f = add_func_stack(p, "f");
    uint32_t s = add_span(p, t0, 1, 1000, 2000, 0, "a", "", "", "", PROFILE_NO_SPAN);
    uint32_t u = add_span(p, t0, 2, 5000, 5000, 1, "u", "", "", "", PROFILE_NO_SPAN);
    const struct {
        uint32_t th;
        int64_t t;
        int in_s, in_u;
    } cases[] = {{t0, 999, 0, 0},    {t0, 1000, 1, 0}, {t0, 1999, 1, 0},
                 {t0, 2000, 0, 0},   {t1, 1500, 0, 0}, {t0, 5000, 0, 1},
                 {t0, 900000, 0, 1}, {t0, 4999, 0, 0}, {t1, 6000, 0, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        profile_sample x = {cases[i].t, cases[i].th, f, 0, 0};
        assert_int_equal(spans_contains(&p->spans[s], &x), cases[i].in_s);
        assert_int_equal(spans_contains(&p->spans[u], &x), cases[i].in_u);
    }
    profile_free(p);
}

static void test_samples_and_top(void **state)
{
    profile *p = mk(1);
    uint32_t t0 = add_thread(p, 0, 1), t1 = add_thread(p, 0, 2);
    uint32_t f = add_func_stack(p, "f"), g = add_func_stack(p, "g"), h = add_func_stack(p, "h");
    /* Thread 0: at 0..9 ms, f on even ms, g on odd (g costs 3 ms, f the period); given
     * out of time order.  Thread 1: h at every ms. */
    for (int k = 9; k >= 0; k--) {
        add_sample(p, t0, k * 1000, k % 2 ? g : f, k % 2 ? 3000 : 0);
        add_sample(p, t1, k * 1000, h, 0);
    }
    uint32_t s = add_span(p, t0, 1, 2000, 6000, 0, "s", "", "", "", PROFILE_NO_SPAN);
    uint32_t u = add_span(p, t0, 2, 7000, 7000, 1, "u", "", "", "", PROFILE_NO_SPAN);
    uint32_t e = add_span(p, t1, 3, 20000, 30000, 0, "e", "", "", "", PROFILE_NO_SPAN);
    spans_index ix;
    assert_int_equal(spans_index_build(p, &ix), 0);
    spans_func top[4];
    spans_cost c;
    /* s: 2, 3, 4, 5 ms: f twice (2 ms), g twice (6 ms): g first by time. */
    assert_int_equal(spans_top_funcs(p, &ix, s, 4, top, &c), 2);
    assert_int_equal(c.samples, 4);
    assert_int_equal(c.us, 2 * 1000 + 2 * 3000);
    assert_string_equal(p->funcs[top[0].func].name, "g");
    assert_int_equal(top[0].samples, 2);
    assert_int_equal(top[0].self_us, 6000);
    assert_string_equal(p->funcs[top[1].func].name, "f");
    assert_int_equal(top[1].self_us, 2000);
    /* max cuts the list; u (unfinished from 7 ms): 7, 8, 9 ms. */
    assert_int_equal(spans_top_funcs(p, &ix, u, 1, top, &c), 1);
    assert_int_equal(c.samples, 3);
    assert_string_equal(p->funcs[top[0].func].name, "g");
    assert_int_equal(top[0].samples, 2);
    /* e: after every sample of its thread. */
    assert_int_equal(spans_top_funcs(p, &ix, e, 4, top, &c), 0);
    assert_int_equal(c.samples, 0);
    size_t a, b;
    spans_samples(p, &ix, s, &a, &b);
    for (size_t k = a; k < b; k++)
        assert_true(spans_contains(&p->spans[s], &p->samples[ix.order[k]]));
    spans_index_free(&ix);
    profile_free(p);
}

static void test_mask(void **state)
{
    profile *p = mk(2);
    uint32_t a0 = add_thread(p, 0, 1), b0 = add_thread(p, 1, 1); /* the same tid, twice */
    uint32_t f = add_func_stack(p, "f");
    for (int k = 0; k < 20; k++) {
        add_sample(p, a0, k * 1000, f, 0);
        add_sample(p, b0, k * 1000, f, 0);
    }
    /* "x" at 2-8 ms with an "x" nested at 4-12 ms (outliving it: corrupt, still
     * counted), "y" at 15 ms on, unfinished; in process 1, "x" at 0-1 ms. */
    uint32_t outer = add_span(p, a0, 1, 2000, 8000, 0, "x", "", "", "", PROFILE_NO_SPAN);
    add_span(p, a0, 2, 4000, 12000, 0, "x", "", "", "", outer);
    add_span(p, a0, 3, 15000, 15000, 1, "y", "", "", "", PROFILE_NO_SPAN);
    add_span(p, b0, 1, 0, 1000, 0, "x", "", "", "", PROFILE_NO_SPAN);
    uint8_t keep[40];
    const char *x[] = {"x"}, *xy[] = {"y", "x"}, *none[] = {"z"};
    struct {
        const char *const *names;
        size_t n;
    } runs[] = {{x, 1}, {xy, 2}, {none, 1}};
    for (size_t r = 0; r < 3; r++) {
        assert_int_equal(spans_mask(p, runs[r].names, runs[r].n, keep), 0);
        for (size_t i = 0; i < p->nsamples; i++) {
            const profile_sample *s = &p->samples[i];
            int want = 0;
            for (size_t k = 0; k < p->nspans; k++)
                for (size_t m = 0; m < runs[r].n; m++)
                    want |= !strcmp(p->spans[k].name, runs[r].names[m]) &&
                            s->thread == p->spans[k].thread &&
                            s->t_us >= p->spans[k].start_us &&
                            (p->spans[k].unfinished || s->t_us < p->spans[k].stop_us);
            assert_int_equal(keep[i], want);
        }
    }
    assert_int_equal(spans_mask(p, x, 1, keep), 0);
    size_t n = 0;
    for (size_t i = 0; i < p->nsamples; i++)
        n += keep[i];
    assert_int_equal(n, 10 + 1); /* 2..11 ms in process 0, 0 ms in process 1 */
    profile_free(p);
}

/* ---- traces --------------------------------------------------------------------------- */

static void test_trace_join(void **state)
{
    profile *p = mk(2);
    uint32_t a = add_thread(p, 0, 1), b = add_thread(p, 1, 7);
    /* Process 0 (pid 100): root (0-100 ms, trace B) > child (10-50); process 1 (pid 200,
     * started 5 ms later): remote, parent_id = child's trace_id; two spans without ids
     * (a trace "200.8" of their own); "late" of trace B in process 0, top level by
     * span, whose parent_id names nothing; a cycle by ids in trace C. */
    uint32_t root = add_span(p, a, 1, 0, 100000, 0, "root", "B", "T1", "B", PROFILE_NO_SPAN);
    uint32_t child = add_span(p, a, 2, 10000, 50000, 0, "child", "B", "T2", "T1", root);
    uint32_t remote = add_span(p, b, 3, 20000, 30000, 0, "remote", "B", "T3", "T2",
                               PROFILE_NO_SPAN);
    uint32_t lone = add_span(p, b, 8, 1000, 2000, 1, "lone", "", "", "", PROFILE_NO_SPAN);
    uint32_t lone2 = add_span(p, b, 9, 1500, 1800, 0, "lone2", "", "", "", lone);
    uint32_t late = add_span(p, a, 4, 200000, 210000, 0, "late", "B", "T4", "nothing",
                             PROFILE_NO_SPAN);
    uint32_t early = add_span(p, a, 5, 5000, 6000, 0, "early", "B", "T5", "T1", root);
    uint32_t cx = add_span(p, a, 6, 300000, 301000, 0, "cx", "C", "X", "Y", PROFILE_NO_SPAN);
    uint32_t cy = add_span(p, a, 7, 300500, 301000, 0, "cy", "C", "Y", "X", PROFILE_NO_SPAN);
    trace_set ts;
    assert_int_equal(trace_build(p, &ts), 0);
    assert_int_equal(ts.ntraces, 3);
    /* By start: B at 0, "200.8" at 5 + 1 ms, C at 300 ms. */
    assert_string_equal(ts.traces[0].id, "B");
    assert_string_equal(ts.traces[1].id, "200.8");
    assert_string_equal(ts.traces[2].id, "C");
    assert_int_equal(trace_find(&ts, "200.8"), 1);
    assert_int_equal(trace_find(&ts, "nope"), -1);
    const trace *tb = &ts.traces[0];
    assert_int_equal(tb->nspans, 5);
    assert_int_equal(tb->npids, 2);
    assert_int_equal(tb->pids[0], 100);
    assert_int_equal(tb->pids[1], 200);
    assert_int_equal(tb->start_unix_ns, p->procs[0].start_unix_ns);
    assert_int_equal(tb->end_unix_ns, p->procs[0].start_unix_ns + 210000000ull);
    assert_int_equal(ts.trace_of[remote], 0);
    assert_int_equal(ts.tparent[root], PROFILE_NO_SPAN);
    assert_int_equal(ts.tparent[child], root);
    assert_int_equal(ts.tparent[early], root);
    assert_int_equal(ts.tparent[remote], child); /* across processes */
    assert_int_equal(ts.tparent[late], PROFILE_NO_SPAN);
    /* Top level in start order: root, late; root's children: early, child. */
    assert_int_equal(tb->first_root, root);
    assert_int_equal(ts.next_sibling[root], late);
    assert_int_equal(ts.next_sibling[late], PROFILE_NO_SPAN);
    assert_int_equal(ts.first_child[root], early);
    assert_int_equal(ts.next_sibling[early], child);
    assert_int_equal(ts.first_child[child], remote);
    /* Spans without a base_id: the trace of their top-level span. */
    assert_int_equal(ts.trace_of[lone], 1);
    assert_int_equal(ts.trace_of[lone2], 1);
    assert_int_equal(ts.tparent[lone2], lone);
    assert_int_equal(ts.traces[1].unfinished, 1);
    /* The cycle X <-> Y is cut: exactly one of them is top level, the other under it. */
    int cx_root = ts.tparent[cx] == PROFILE_NO_SPAN,
        cy_root = ts.tparent[cy] == PROFILE_NO_SPAN;
    assert_int_equal(cx_root + cy_root, 1);
    assert_int_equal(cx_root ? ts.tparent[cy] : ts.tparent[cx], cx_root ? cx : cy);
    assert_int_equal(ts.traces[2].first_root, cx_root ? cx : cy);
    trace_set_free(&ts);
    profile_free(p);
}

static void test_trace_empty(void **state)
{
    profile *p = mk(1);
    trace_set ts;
    assert_int_equal(trace_build(p, &ts), 0);
    assert_int_equal(ts.ntraces, 0);
    assert_int_equal(trace_find(&ts, ""), -1);
    trace_set_free(&ts);
    profile_free(p);
}

/* ---- jsonscan ------------------------------------------------------------------------- */

static void test_json_objects(void **state)
{
    const char *good[] = {"{}",
                          " {\"a\": 1} ",
                          "{\"a\": [1, -2.5e+3, true, false, null, {}]}",
                          "{\"k\": \"\\u00e9\\n\\\"\\\\\\/\"}",
                          "{\"\xc3\xa9\": \"\xf0\x9f\x98\x80\"}",
                          "{\"a\":{\"b\":{\"c\":[[]]}}}",
                          "{\"n\": 0, \"m\": -0.0e1}"};
    const char *bad[] = {"",
                         "[]",
                         "\"s\"",
                         "{",
                         "{\"a\": 1,}",
                         "{\"a\" 1}",
                         "{'a': 1}",
                         "{\"a\": 01}",
                         "{\"a\": 1.}",
                         "{\"a\": .5}",
                         "{\"a\": tru}",
                         "{\"a\": \"\x01\"}",
                         "{\"a\": \"\\x\"}",
                         "{\"a\": \"\\u12g4\"}",
                         "{\"a\": \"\xff\"}",
                         "{\"a\": \"\xc0\xaf\"}",
                         "{\"a\": \"\xed\xa0\x80\"}",
                         "{} {}",
                         "{\"a\": 1} x",
                         "{\"a\": [1 2]}"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_int_equal(jsonscan_is_object(good[i]), 1);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(jsonscan_is_object(bad[i]), 0);
    assert_int_equal(jsonscan_is_object(NULL), 0);
    /* Nesting: 64 levels below the object pass, 65 do not. */
    char deep[256];
    for (int levels = 63; levels <= 64; levels++) {
        size_t n = 0;
        deep[n++] = '{';
        deep[n++] = '"';
        deep[n++] = 'a';
        deep[n++] = '"';
        deep[n++] = ':';
        for (int k = 0; k < levels; k++)
            deep[n++] = '[';
        for (int k = 0; k < levels; k++)
            deep[n++] = ']';
        deep[n++] = '}';
        deep[n] = 0;
        assert_int_equal(jsonscan_is_object(deep), levels < JSONSCAN_MAX_DEPTH);
    }
}

static void test_json_strings(void **state)
{
    const char *obj =
        "{\"etype\": \"ValueError\", \"n\": 5, \"nested\": {\"service\": \"no\"},"
        " \"s\\u0065rvice\": \"api \\u00e9\\ud83d\\ude00\\n\","
        " \"zero\": \"a\\u0000b\", \"lone\": \"\\ud800x\", \"etype\": \"second\"}";
    char *v = jsonscan_string(obj, "etype");
    assert_non_null(v);
    assert_string_equal(v, "ValueError"); /* the first of a repeated name */
    free(v);
    v = jsonscan_string(obj, "service"); /* a key written with an escape */
    assert_non_null(v);
    assert_string_equal(v, "api \xc3\xa9\xf0\x9f\x98\x80\n");
    free(v);
    v = jsonscan_string(obj, "zero");
    assert_non_null(v);
    /* clang-format off */
    assert_string_equal(v, "a\xef\xbf\xbd" "b");
    /* clang-format on */
    free(v);
    v = jsonscan_string(obj, "lone");
    assert_non_null(v);
    assert_string_equal(v, "\xef\xbf\xbdx");
    free(v);
    assert_null(jsonscan_string(obj, "n"));      /* not a string */
    assert_null(jsonscan_string(obj, "absent")); /* nested members do not count */
    assert_null(jsonscan_string("{\"a\": \"x\"", "a"));
    assert_null(jsonscan_string("", "a"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contains),     cmocka_unit_test(test_samples_and_top),
        cmocka_unit_test(test_mask),         cmocka_unit_test(test_trace_join),
        cmocka_unit_test(test_trace_empty),  cmocka_unit_test(test_json_objects),
        cmocka_unit_test(test_json_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
