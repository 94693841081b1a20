/*
 * Unit tests for the tool's model and its views (src/read/profile.c, aggregate.c,
 * calltree.c, callgraph.c): a log is written here with the record codec and LZ4F from a
 * plan of stacks and samples, loaded into a profile, and every aggregate is checked
 * against the same numbers computed naively from the plan (per sample, by name), never
 * through the code under test.  Then the fixture tests/fixtures/good.lz4 is loaded and
 * its views are checked against each other.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/record.h"
#include "logbuf.h"
#include "read/aggregate.h"
#include "read/callgraph.h"
#include "read/calltree.h"
#include "read/profile.h"

/* ---- the plan --------------------------------------------------------------------- */

#define PERIOD_NS 10000000ull /* 10 ms: a sample with cpu_us 0 stands for 10000 us */
#define NSAMPLES 400
#define MAXF 6

/* Functions by code id 16 + i. */
static const char *const fname[] = {"main", "f", "g", "C.h"};
static const char *const ffile[] = {"a.py", "a.py", "b.py", "b.py"};
static const int64_t fline[] = {1, 10, 20, 30};
#define NFUNCS 4

/* Stacks by stack id, outermost first, as (function, line).  Stack 3 has stack 0's
 * frames under another id (one stack in the model); stack 4 has no frame; g recurses
 * twice in 2 (the call g -> g twice on one stack) and h in 5. */
typedef struct pstack {
    int n;
    int func[MAXF];
    int line[MAXF];
} pstack;
/* clang-format off */
static const pstack plan_stacks[] = {
    {3, {0, 1, 2}, {2, 11, 21}},
    {2, {0, 1}, {2, 12}},
    {4, {0, 2, 2, 2}, {3, 22, 23, 24}},
    {3, {0, 1, 2}, {2, 11, 21}},
    {0, {0}, {0}},
    {4, {0, 3, 1, 3}, {4, 31, 13, 32}},
};
/* clang-format on */
#define NSTACKS 6

typedef struct psample {
    int64_t t_us;
    int thread; /* thread_idx: 0 is tid 100, 1 is tid 101 */
    int stack;
    uint64_t cpu_us;
} psample;
static psample plan[NSAMPLES];

/* A fixed pseudo-random plan: skewed stacks, both threads, times that sometimes go
 * back (the writer's dt may be negative), some cpu_us 0. */
static void make_plan(void)
{
    uint64_t x = 12345;
    int64_t t = 0;
    for (int i = 0; i < NSAMPLES; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t r = (uint32_t)(x >> 33);
        t += r % 5 == 0 ? 0 : (int64_t)(r % 20000) - 2000; /* equal times too */
        plan[i].t_us = t;
        plan[i].thread = (r >> 8) % 3 == 0;
        plan[i].stack = (int)((r >> 12) % 16);
        if (plan[i].stack >= NSTACKS)
            plan[i].stack = plan[i].stack % 2; /* stacks 0 and 1 are the busiest */
        plan[i].cpu_us = (r >> 20) % 4 == 0 ? 0 : 1000 + (r >> 20) % 9000;
    }
}

static uint64_t plan_us(const psample *s) { return s->cpu_us ? s->cpu_us : PERIOD_NS / 1000; }

/* ---- writing the log --------------------------------------------------------------- */

static uint8_t scratch[1 << 16];

/* A HEADER; with `series`, the rotated series' fields too (a file `seq` of a series
 * started at SERIES_START, `offset_us` into it), else as an older writer wrote it. */
static void put_header_fields(logbuf *b, int series, uint64_t seq, uint64_t offset_us);

static void put_header(logbuf *b) { put_header_fields(b, 0, 0, 0); }

static void put_thread(logbuf *b, uint64_t idx, uint64_t tid, const char *name)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, idx);
    rec_put_uvarint(&o, tid);
    rec_put_cstr(&o, name);
    logbuf_put(b, PYPROF_REC_THREAD, &o);
}

/* Function f's CODE record, under code id 16 + base + f (a series' files use ids of
 * their own). */
static void put_code_at(logbuf *b, uint64_t base, int f)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, 16 + base + (uint64_t)f);
    rec_put_svarint(&o, fline[f]);
    const char *dot = strchr(fname[f], '.');
    rec_put_cstr(&o, dot ? dot + 1 : fname[f]); /* name; the qualified name wins */
    rec_put_cstr(&o, dot ? fname[f] : "");
    rec_put_cstr(&o, ffile[f]);
    rec_put_u8(&o, PYPROF_LT_LOCATIONS_311);
    rec_put_str(&o, "", 0);
    rec_put_uvarint(&o, 0);
    logbuf_put(b, PYPROF_REC_CODE, &o);
}

static void put_code(logbuf *b, int f) { put_code_at(b, 0, f); }

static void put_stack(logbuf *b, int s)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, (uint64_t)s);
    rec_put_uvarint(&o, (uint64_t)plan_stacks[s].n);
    for (int k = 0; k < plan_stacks[s].n; k++) {
        rec_put_uvarint(&o, 16 + (uint64_t)plan_stacks[s].func[k]);
        rec_put_svarint(&o, plan_stacks[s].line[k]);
    }
    logbuf_put(b, PYPROF_REC_STACK, &o);
}

static void put_sample(logbuf *b, int64_t dt, const psample *s)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_svarint(&o, dt);
    rec_put_uvarint(&o, (uint64_t)s->thread);
    rec_put_uvarint(&o, (uint64_t)s->stack);
    rec_put_uvarint(&o, s->cpu_us);
    logbuf_put(b, PYPROF_REC_SAMPLE, &o);
}

/* Type 7, once MARK, now reserved: its dt must not move the clock. */
static void put_reserved_mark(logbuf *b)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_svarint(&o, 500000);
    rec_put_uvarint(&o, 0);
    rec_put_cstr(&o, "half way");
    logbuf_put(b, 7, &o);
}

static char log_path[64];

static void write_log(void)
{
    make_plan();
    logbuf b = {NULL, 0, 0};
    uint8_t magic[PYPROF_MAGIC_LEN];
    memcpy(magic, PYPROF_MAGIC, PYPROF_MAGIC_LEN);
    b.p = malloc(1024);
    b.cap = 1024;
    memcpy(b.p, magic, sizeof magic);
    b.len = sizeof magic;
    put_header(&b);
    put_thread(&b, 0, 100, "Main");
    put_thread(&b, 1, 101, "Worker");
    for (int f = 0; f < NFUNCS; f++)
        put_code(&b, f);
    for (int s = 0; s < NSTACKS; s++)
        put_stack(&b, s);
    int64_t t = 0;
    for (int i = 0; i < NSAMPLES; i++) {
        put_sample(&b, plan[i].t_us - t, &plan[i]);
        t = plan[i].t_us;
        if (i == NSAMPLES / 2)
            put_reserved_mark(&b);
    }
    /* No footer: the log is truncated, which the model keeps with a warning. */
    snprintf(log_path, sizeof log_path, "/tmp/test_model.XXXXXX");
    int fd = mkstemp(log_path);
    assert_true(fd >= 0);
    close(fd);
    logbuf_write(&b, log_path);
    free(b.p);
}

static int setup(void **state)
{
    (void)state;
    write_log();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(log_path);
    return 0;
}

static profile *load(const profile_filter *f)
{
    profile *p = profile_new(f, 0, NULL);
    assert_non_null(p);
    assert_int_equal(profile_load(p, log_path), 0);
    return p;
}

/* ---- naive answers from the plan ---------------------------------------------------- */

/* The plan's function of a profile function, by name. */
static int plan_func(const profile *p, uint32_t f)
{
    for (int i = 0; i < NFUNCS; i++)
        if (!strcmp(p->funcs[f].name, fname[i]) && !strcmp(p->funcs[f].file, ffile[i]) &&
            p->funcs[f].line == fline[i])
            return i;
    fail_msg("function %s is not in the plan", p->funcs[f].name);
    return -1;
}

static int stack_has(const pstack *s, int f)
{
    for (int k = 0; k < s->n; k++)
        if (s->func[k] == f)
            return 1;
    return 0;
}

static int same_frames(const profile *p, uint32_t ps, const pstack *s)
{
    const profile_stack *st = &p->stacks[ps];
    if ((int)st->nframes != s->n)
        return 0;
    for (int k = 0; k < s->n; k++) {
        const profile_frame *fr = &p->frames[st->first + (uint32_t)k];
        if (plan_func(p, fr->func) != s->func[k] || fr->line != s->line[k])
            return 0;
    }
    return 1;
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_load(void **state)
{
    (void)state;
    profile *p = load(NULL);
    assert_int_equal(p->nprocs, 1);
    assert_int_equal(p->nsamples, NSAMPLES);
    assert_int_equal(p->nthreads, 2);
    assert_int_equal(p->nfuncs, NFUNCS);
    assert_int_equal(p->nstacks, NSTACKS - 1);     /* stacks 0 and 3 are one */
    assert_int_equal(p->procs[0].unknown_read, 1); /* the reserved type 7 */
    assert_int_equal(p->procs[0].end_error, -PYPROF_R_TRUNCATED);
    assert_int_equal(p->nwarnings, 1);
    /* In log order, with the times the plan gave: the skipped record moved nothing. */
    for (int i = 0; i < NSAMPLES; i++) {
        assert_int_equal(p->samples[i].t_us, plan[i].t_us);
        assert_int_equal(p->threads[p->samples[i].thread].tid, 100 + plan[i].thread);
        assert_true(same_frames(p, p->samples[i].stack, &plan_stacks[plan[i].stack]));
        assert_int_equal(aggregate_sample_us(p, &p->samples[i]), plan_us(&plan[i]));
    }
    profile_free(p);
}

static void test_stack_costs(void **state)
{
    (void)state;
    profile *p = load(NULL);
    uint64_t *count, *us;
    assert_int_equal(aggregate_stack_costs(p, &count, &us), 0);
    for (uint32_t s = 0; s < p->nstacks; s++) {
        uint64_t n = 0, u = 0;
        for (int i = 0; i < NSAMPLES; i++)
            if (same_frames(p, s, &plan_stacks[plan[i].stack])) {
                n++;
                u += plan_us(&plan[i]);
            }
        assert_true(n > 0);
        assert_int_equal(count[s], n);
        assert_int_equal(us[s], u);
    }
    free(count);
    free(us);
    assert_int_equal(aggregate_max_depth(p), 4);
    profile_free(p);
}

static void test_orders(void **state)
{
    (void)state;
    profile *p = load(NULL);
    uint32_t *o = aggregate_samples_by_thread(p);
    assert_non_null(o);
    /* Expected: tid 100's samples, then tid 101's, each by time, ties in log order. */
    int k = 0;
    for (int th = 0; th < 2; th++) {
        int used[NSAMPLES] = {0};
        for (;;) {
            int best = -1;
            for (int i = 0; i < NSAMPLES; i++)
                if (plan[i].thread == th && !used[i] &&
                    (best < 0 || plan[i].t_us < plan[best].t_us))
                    best = i;
            if (best < 0)
                break;
            used[best] = 1;
            assert_int_equal(o[k], best);
            k++;
        }
    }
    assert_int_equal(k, NSAMPLES);
    free(o);

    uint32_t *t = aggregate_threads_by_samples(p);
    assert_non_null(t);
    int n0 = 0;
    for (int i = 0; i < NSAMPLES; i++)
        n0 += plan[i].thread == 0;
    assert_true(n0 > NSAMPLES / 2); /* the plan makes tid 100 the busier */
    assert_int_equal(p->threads[t[0]].tid, 100);
    assert_int_equal(p->threads[t[0]].samples, n0);
    assert_int_equal(p->threads[t[1]].tid, 101);
    assert_int_equal(p->threads[t[1]].samples, NSAMPLES - n0);
    free(t);
    profile_free(p);
}

static void test_funcs(void **state)
{
    (void)state;
    profile *p = load(NULL);
    aggregate_counts a;
    assert_int_equal(aggregate_funcs(p, &a), 0);
    for (uint32_t f = 0; f < p->nfuncs; f++) {
        int pf = plan_func(p, f);
        uint64_t self = 0, total = 0;
        for (int i = 0; i < NSAMPLES; i++) {
            const pstack *s = &plan_stacks[plan[i].stack];
            total += stack_has(s, pf);
            self += s->n && s->func[s->n - 1] == pf;
        }
        assert_int_equal(a.self[f], self);
        assert_int_equal(a.total[f], total);
        /* Lines: each line's self count, by count descending; they add up to self. */
        uint64_t sum = 0;
        for (size_t l = a.line_first[f]; l < a.line_first[f + 1]; l++) {
            uint64_t want = 0;
            for (int i = 0; i < NSAMPLES; i++) {
                const pstack *s = &plan_stacks[plan[i].stack];
                want += s->n && s->func[s->n - 1] == pf && s->line[s->n - 1] == a.lines[l].line;
            }
            assert_int_equal(a.lines[l].self, want);
            if (l > a.line_first[f])
                assert_true(a.lines[l - 1].self >= a.lines[l].self);
            sum += want;
        }
        assert_int_equal(sum, self);
    }
    /* By self: g (the leaf of the busiest stack 0) first. */
    uint32_t order[NFUNCS];
    size_t n = aggregate_sort_funcs(p, &a, a.self, order);
    assert_int_equal(n, NFUNCS);
    for (size_t i = 1; i < n; i++)
        assert_true(a.self[order[i - 1]] >= a.self[order[i]]);
    n = aggregate_sort_funcs(p, &a, a.total, order);
    assert_string_equal(p->funcs[order[0]].name, "main");
    aggregate_counts_free(&a);
    profile_free(p);
}

/* Samples whose stack starts with the plan frames path[0..depth) (by function). */
static void path_counts(const int *path, int depth, uint64_t *total, uint64_t *self)
{
    *total = *self = 0;
    for (int i = 0; i < NSAMPLES; i++) {
        const pstack *s = &plan_stacks[plan[i].stack];
        if (s->n < depth)
            continue;
        int k = 0;
        while (k < depth && s->func[k] == path[k])
            k++;
        if (k < depth)
            continue;
        (*total)++;
        *self += s->n == depth;
    }
}

static void test_calltree(void **state)
{
    (void)state;
    profile *p = load(NULL);
    aggregate_counts a;
    calltree t;
    assert_int_equal(aggregate_funcs(p, &a), 0);
    assert_int_equal(calltree_build(&t, p, a.stack_weight, 0), 0);
    assert_int_equal(t.nodes[CALLTREE_ROOT].total, NSAMPLES);
    uint64_t empty = 0;
    for (int i = 0; i < NSAMPLES; i++)
        empty += plan_stacks[plan[i].stack].n == 0;
    assert_int_equal(t.nodes[CALLTREE_ROOT].self, empty);
    /* Every node against its path from the root, counted naively. */
    size_t distinct = 0;
    for (uint32_t n = 1; n < t.nnodes; n++) {
        int path[MAXF], depth = (int)t.nodes[n].depth;
        assert_true(depth >= 1 && depth <= MAXF);
        uint32_t m = n;
        for (int d = depth - 1; d >= 0; d--) {
            path[d] = plan_func(p, t.nodes[m].func);
            m = t.nodes[m].parent;
        }
        assert_int_equal(m, CALLTREE_ROOT);
        uint64_t total, self;
        path_counts(path, depth, &total, &self);
        assert_int_equal(t.nodes[n].total, total);
        assert_int_equal(t.nodes[n].self, self);
        distinct++;
    }
    /* main; main f; main f g; main g; main g g; main g g g; main C.h; main C.h f;
     * main C.h f C.h */
    assert_int_equal(distinct, 9);
    /* Children come by total descending. */
    uint32_t *kids;
    size_t nk = calltree_children(&t, p, CALLTREE_ROOT, &kids);
    assert_int_equal(nk, 1);
    free(kids);
    nk = calltree_children(&t, p, 1, &kids);
    assert_int_equal(nk, 3);
    for (size_t k = 1; k < nk; k++)
        assert_true(t.nodes[kids[k - 1]].total >= t.nodes[kids[k]].total);
    free(kids);
    calltree_free(&t);

    /* A stack at a time, in an order of the caller's: nodes numbered as made. */
    assert_int_equal(calltree_init(&t, p), 0);
    uint32_t last = p->nstacks - 1;
    uint32_t leaf = calltree_add(&t, p, last, 7, 0);
    assert_int_equal(leaf, p->stacks[last].nframes);
    for (uint32_t n = 1; n < t.nnodes; n++)
        assert_int_equal(t.nodes[n].parent, n - 1);
    assert_int_equal(t.nodes[leaf].self, 7);
    assert_int_equal(t.stack_leaf[last], leaf);
    assert_int_equal(t.stack_leaf[0], CALLTREE_NONE);
    calltree_free(&t);
    aggregate_counts_free(&a);
    profile_free(p);
}

static void test_callgraph(void **state)
{
    (void)state;
    profile *p = load(NULL);
    callgraph g;
    assert_int_equal(callgraph_build(&g, p, 0), 0);
    for (uint32_t f = 0; f < p->nfuncs; f++) {
        int pf = plan_func(p, f);
        uint64_t tn = 0, tus = 0, sn = 0, frames = 0;
        for (int i = 0; i < NSAMPLES; i++) {
            const pstack *s = &plan_stacks[plan[i].stack];
            for (int k = 0; k < s->n; k++)
                frames += s->func[k] == pf;
            if (stack_has(s, pf)) {
                tn++;
                tus += plan_us(&plan[i]);
            }
            sn += s->n && s->func[s->n - 1] == pf;
        }
        assert_int_equal(g.funcs[f].total.n, tn);
        assert_int_equal(g.funcs[f].total.us, tus);
        assert_int_equal(g.funcs[f].self.n, sn);
        assert_int_equal(g.funcs[f].frames, frames);
    }
    /* Each edge once per sample in total, every occurrence in frames. */
    callgraph_sort_edges(&g, 0);
    size_t expect_edges = 0;
    for (int a = 0; a < NFUNCS; a++)
        for (int b = 0; b < NFUNCS; b++) {
            uint64_t tn = 0, frames = 0, sn = 0;
            for (int i = 0; i < NSAMPLES; i++) {
                const pstack *s = &plan_stacks[plan[i].stack];
                int seen = 0;
                for (int k = 1; k < s->n; k++)
                    if (s->func[k - 1] == a && s->func[k] == b) {
                        frames++;
                        seen = 1;
                        sn += k == s->n - 1;
                    }
                tn += seen;
            }
            const callgraph_edge *e = NULL;
            for (size_t i = 0; i < g.nedges; i++)
                if (plan_func(p, g.edges[i].caller) == a &&
                    plan_func(p, g.edges[i].callee) == b)
                    e = &g.edges[i];
            if (!tn) {
                assert_null(e);
                continue;
            }
            expect_edges++;
            assert_non_null(e);
            assert_int_equal(e->total.n, tn);
            assert_int_equal(e->frames, frames);
            assert_int_equal(e->self.n, sn);
        }
    assert_int_equal(g.nedges, expect_edges);
    for (size_t i = 1; i < g.nedges; i++)
        assert_true(g.edges[i - 1].caller <= g.edges[i].caller);
    callgraph_free(&g);
    profile_free(p);
}

static void test_filters(void **state)
{
    (void)state;
    uint64_t tid = 101;
    profile_filter f;
    memset(&f, 0, sizeof f);
    f.tids = &tid;
    f.ntids = 1;
    f.has_from = f.has_to = 1;
    f.from_s = 0.5;
    f.to_s = 2.0;
    profile *p = load(&f);
    size_t want = 0;
    for (int i = 0; i < NSAMPLES; i++)
        want += plan[i].thread == 1 && plan[i].t_us >= 500000 && plan[i].t_us <= 2000000;
    assert_true(want > 0 && want < NSAMPLES / 4);
    assert_int_equal(p->nsamples, want);
    assert_int_equal(p->procs[0].samples_read, NSAMPLES);
    aggregate_counts a;
    assert_int_equal(aggregate_funcs(p, &a), 0);
    uint64_t sum = 0;
    for (uint32_t s = 0; s < p->nstacks; s++)
        sum += a.stack_weight[s];
    assert_int_equal(sum, want);
    aggregate_counts_free(&a);
    profile_free(p);
}

/* The fixture: the views agree with each other and with the samples. */
static void test_fixture(void **state)
{
    (void)state;
    profile *p = profile_new(NULL, 0, NULL);
    assert_non_null(p);
    assert_int_equal(profile_load(p, "tests/fixtures/good.lz4"), 0);
    assert_true(p->nsamples > 0);
    aggregate_counts a;
    calltree t;
    callgraph g;
    assert_int_equal(aggregate_funcs(p, &a), 0);
    assert_int_equal(calltree_build(&t, p, a.stack_weight, 0), 0);
    assert_int_equal(callgraph_build(&g, p, 0), 0);
    assert_int_equal(t.nodes[CALLTREE_ROOT].total, p->nsamples);
    uint64_t self = t.nodes[CALLTREE_ROOT].self, us = 0;
    for (size_t i = 0; i < p->nsamples; i++)
        us += aggregate_sample_us(p, &p->samples[i]);
    uint64_t gus = 0;
    for (uint32_t f = 0; f < p->nfuncs; f++) {
        self += a.self[f];
        assert_int_equal(g.funcs[f].self.n, a.self[f]);
        assert_int_equal(g.funcs[f].total.n, a.total[f]);
        assert_true(a.total[f] <= p->nsamples);
        gus += g.funcs[f].self.us;
    }
    assert_int_equal(self, p->nsamples);
    assert_true(gus <= us);
    uint64_t tsum = 0;
    for (size_t i = 0; i < p->nthreads; i++)
        tsum += p->threads[i].samples;
    assert_int_equal(tsum, p->nsamples);
    callgraph_free(&g);
    calltree_free(&t);
    aggregate_counts_free(&a);
    profile_free(p);
}

/* ---- a rotated series -------------------------------------------------------------- */

/* The plan cut into NFILES files of one series: file k has the samples [k * PER_FILE,
 * (k + 1) * PER_FILE), its own ids (thread_idx swapped in odd files, code and stack ids
 * moved by 100 * k), times from its own start, which is ser_off[k] after the series'. */
#define NFILES 4
#define PER_FILE (NSAMPLES / NFILES)
#define SERIES_START 1690000000000000000ull
static int64_t ser_off[NFILES];
static char ser_dir[64];
static char ser_path[NFILES][128];

static int file_of(int i) { return i / PER_FILE; }

/* The snapshot of file k: at 40 us after its first sample; thread 0 (tid 100) in stack
 * 2, thread 1 without a Python frame. */
static int64_t snap_t(int k) { return plan[k * PER_FILE].t_us + 40; }

static void put_header_series(logbuf *b, uint64_t seq, uint64_t offset_us)
{
    put_header_fields(b, 1, seq, offset_us);
}

static void put_header_fields(logbuf *b, int series, uint64_t seq, uint64_t offset_us)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, PYPROF_FORMAT_VERSION);
    rec_put_uvarint(&o, 4242);
    rec_put_uvarint(&o, 1);
    rec_put_cstr(&o, "0123456789abcdef");
    /* In a series the wall clock drifts from the monotonic offsets. */
    rec_put_uvarint(&o, series ? SERIES_START + offset_us * 1000 + 7 : 1700000000000000000ull);
    rec_put_cstr(&o, "host");
    rec_put_cstr(&o, "/usr/bin/python3");
    rec_put_uvarint(&o, 1);
    rec_put_cstr(&o, "python3");
    rec_put_cstr(&o, "3.11.7");
    rec_put_uvarint(&o, 0x030b07f0);
    rec_put_uvarint(&o, PERIOD_NS);
    rec_put_u8(&o, PYPROF_CLOCK_CPU);
    rec_put_cstr(&o, "test");
    rec_put_uvarint(&o, 256);
    rec_put_uvarint(&o, 0);
    rec_put_uvarint(&o, 0);
    if (series) {
        rec_put_uvarint(&o, seq);
        rec_put_uvarint(&o, SERIES_START);
        rec_put_uvarint(&o, offset_us);
    }
    logbuf_put(b, PYPROF_REC_HEADER, &o);
}

static void put_series_file(logbuf *b, int k, int footer, int bad_snapshot)
{
    uint64_t base = 100 * (uint64_t)k, swap = (uint64_t)k & 1;
    memcpy(b->p, PYPROF_MAGIC, PYPROF_MAGIC_LEN);
    b->len = PYPROF_MAGIC_LEN;
    put_header_series(b, (uint64_t)k, (uint64_t)ser_off[k]);
    put_thread(b, swap, 100, k == NFILES - 1 ? "Main-late" : "Main");
    put_thread(b, 1 - swap, 101, "Worker");
    rec_out o;
    for (int f = 0; f < NFUNCS; f++)
        put_code_at(b, base, f);
    for (int st = 0; st < NSTACKS; st++) {
        rec_out_init(&o, scratch, sizeof scratch);
        rec_put_uvarint(&o, base + (uint64_t)st + 1);
        rec_put_uvarint(&o, (uint64_t)plan_stacks[st].n);
        for (int j = 0; j < plan_stacks[st].n; j++) {
            rec_put_uvarint(&o, 16 + base + (uint64_t)plan_stacks[st].func[j]);
            rec_put_svarint(&o, plan_stacks[st].line[j]);
        }
        logbuf_put(b, PYPROF_REC_STACK, &o);
    }
    int64_t t = 0;
    for (int i = k * PER_FILE; i < (k + 1) * PER_FILE; i++) {
        int64_t rel = plan[i].t_us - ser_off[k];
        rec_out_init(&o, scratch, sizeof scratch);
        rec_put_svarint(&o, rel - t);
        rec_put_uvarint(&o, (uint64_t)plan[i].thread ^ swap);
        rec_put_uvarint(&o, base + (uint64_t)plan[i].stack + 1);
        rec_put_uvarint(&o, plan[i].cpu_us);
        logbuf_put(b, PYPROF_REC_SAMPLE, &o);
        t = rel;
        if (i == k * PER_FILE) {
            rec_out_init(&o, scratch, sizeof scratch);
            rec_put_uvarint(&o, (uint64_t)k + 1);
            rec_put_uvarint(&o, (uint64_t)(snap_t(k) - ser_off[k]));
            rec_put_uvarint(&o, bad_snapshot ? 3 : 2);
            rec_put_uvarint(&o, swap); /* tid 100 */
            rec_put_uvarint(&o, base + 2 + 1);
            rec_put_uvarint(&o, PYPROF_SNAP_F_GIL);
            rec_put_u8(&o, 'R');
            rec_put_uvarint(&o, 1 - swap); /* tid 101 */
            rec_put_uvarint(&o, 0);
            rec_put_uvarint(&o, 0);
            rec_put_u8(&o, 'S');
            logbuf_put(b, PYPROF_REC_SNAPSHOT, &o);
        }
    }
    if (!footer)
        return;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, SERIES_START + 99);                       /* end_unix_ns */
    rec_put_uvarint(&o, (uint64_t)(t + 10) * 1000 + (uint64_t)k); /* duration_ns */
    rec_put_uvarint(&o, PER_FILE);                                /* samples */
    rec_put_uvarint(&o, PER_FILE + (uint64_t)k);                  /* signals */
    rec_put_uvarint(&o, 1);
    rec_put_uvarint(&o, PYPROF_DROP_RING_FULL);
    rec_put_uvarint(&o, (uint64_t)k + 1);
    rec_put_uvarint(&o, k == NFILES - 1 ? PYPROF_END_EXIT : PYPROF_END_ROTATED);
    rec_put_u8(&o, k == NFILES - 1);
    rec_put_svarint(&o, 3);
    rec_put_uvarint(&o, 100000);                   /* achieved_hz_milli: 100 Hz */
    rec_put_uvarint(&o, 1000 * ((uint64_t)k + 1)); /* lib_cpu_ns */
    rec_put_uvarint(&o, 10);                       /* handler_ns */
    rec_put_uvarint(&o, 20);                       /* writer_ns */
    rec_put_uvarint(&o, 2);                        /* ntime */
    rec_put_uvarint(&o, 500);
    rec_put_uvarint(&o, 0);
    rec_put_uvarint(&o, 1); /* ndepth */
    rec_put_uvarint(&o, 0);
    rec_put_uvarint(&o, (uint64_t)k);
    rec_put_uvarint(&o, 1);
    rec_put_uvarint(&o, 0); /* timer_ns */
    rec_put_uvarint(&o, 0); /* untimed_ns */
    for (int i = 0; i < 4; i++)
        rec_put_uvarint(&o, 0); /* the whole cost */
    rec_put_uvarint(&o, 0);     /* spans_lost */
    /* The clock section: timers 5% ahead of the kernel; file 1's samples not corrected. */
    rec_put_uvarint(&o, 105000 * ((uint64_t)k + 1)); /* clock_timer_ns */
    rec_put_uvarint(&o, 100000 * ((uint64_t)k + 1)); /* clock_kernel_ns */
    rec_put_uvarint(&o, k != 1);                     /* clock_corrected */
    logbuf_put(b, PYPROF_REC_FOOTER, &o);
}

/* Writes the series into a fresh directory; `last_footer` 0 leaves the last file's off. */
static void write_series(int last_footer, int bad_snapshot_in)
{
    make_plan();
    snprintf(ser_dir, sizeof ser_dir, "/tmp/test_series.XXXXXX");
    assert_non_null(mkdtemp(ser_dir));
    for (int k = 0; k < NFILES; k++) {
        int64_t first = plan[k * PER_FILE].t_us;
        ser_off[k] = k == 0 ? 0 : (first > 1000 ? first - 1000 : 0);
    }
    logbuf b = {malloc(1024), 0, 1024};
    for (int k = 0; k < NFILES; k++) {
        put_series_file(&b, k, k < NFILES - 1 || last_footer, k == bad_snapshot_in);
        /* Names that sort against seq order, as a directory may list them. */
        snprintf(ser_path[k], sizeof ser_path[k], "%s/pyprof.%c.%d.lz4", ser_dir, 'z' - k, k);
        logbuf_write(&b, ser_path[k]);
    }
    free(b.p);
}

static void remove_series(void)
{
    for (int k = 0; k < NFILES; k++)
        unlink(ser_path[k]);
    rmdir(ser_dir);
}

/* Loads files `which` of the series, in that order. */
static profile *load_series(const int *which, int n, const profile_filter *f, int *rc)
{
    const char *paths[NFILES];
    for (int i = 0; i < n; i++)
        paths[i] = ser_path[which[i]];
    profile *p = profile_new(f, 0, NULL);
    assert_non_null(p);
    *rc = profile_load_paths(p, paths, (size_t)n);
    return p;
}

/* Checks the model of files `which` (any order) against the plan, computed here: the
 * samples of those files (in the window, when f has one) with the plan's times, threads
 * and stacks, in the plan's order unless `loose` (then only their number and times); the
 * sums of their footers; the end of the highest one. */
static void check_series_as(const profile *p, const int *which, int n, const profile_filter *f,
                            int last_footer, int loose)
{
    int have[NFILES] = {0}, hi = -1, lo = NFILES;
    for (int i = 0; i < n; i++) {
        have[which[i]] = 1;
        hi = which[i] > hi ? which[i] : hi;
        lo = which[i] < lo ? which[i] : lo;
    }
    assert_int_equal(p->nprocs, 1);
    const profile_process *pr = &p->procs[0];
    assert_int_equal(pr->nfiles, n);
    for (size_t i = 0; i + 1 < pr->nfiles; i++)
        assert_true(pr->files[i].seq < pr->files[i + 1].seq);
    assert_string_equal(pr->path, ser_path[lo]);
    assert_int_equal(pr->start_unix_ns, SERIES_START);
    assert_int_equal(p->nthreads, 2);
    /* The samples, in time order of the plan. */
    size_t j = 0;
    uint64_t in_files = 0;
    int64_t tsum = 0;
    for (int i = 0; i < NSAMPLES; i++) {
        if (!have[file_of(i)])
            continue;
        in_files++;
        double t = (double)plan[i].t_us / 1e6;
        if (f && ((f->has_from && t < f->from_s) || (f->has_to && t > f->to_s)))
            continue;
        assert_true(j < p->nsamples);
        if (loose) {
            tsum += plan[i].t_us - p->samples[j++].t_us;
            continue;
        }
        const profile_sample *ps = &p->samples[j++];
        assert_int_equal(ps->t_us, plan[i].t_us);
        assert_int_equal(p->threads[ps->thread].tid, 100 + plan[i].thread);
        assert_true(same_frames(p, ps->stack, &plan_stacks[plan[i].stack]));
    }
    assert_int_equal(j, p->nsamples);
    assert_int_equal(tsum, 0);
    assert_int_equal(pr->samples_read, in_files);
    /* Footer sums over the files, the end of the highest one. */
    uint64_t samples = 0, signals = 0, ring = 0, lib = 0, cost0 = 0, timer = 0, kernel = 0;
    int footers = 0, corrected = 1;
    for (int k = 0; k < NFILES; k++)
        if (have[k] && (k < NFILES - 1 || last_footer)) {
            samples += PER_FILE;
            signals += PER_FILE + (uint64_t)k;
            ring += (uint64_t)k + 1;
            lib += 1000 * ((uint64_t)k + 1);
            cost0 += (uint64_t)k;
            timer += 105000 * ((uint64_t)k + 1);
            kernel += 100000 * ((uint64_t)k + 1);
            corrected &= k != 1;
            footers++;
        }
    int hi_footer = hi < NFILES - 1 || last_footer;
    assert_int_equal(pr->has_footer, hi_footer);
    assert_int_equal(pr->footer.samples, samples);
    assert_int_equal(pr->footer.signals, signals);
    assert_int_equal(pr->footer.dropped[PYPROF_DROP_RING_FULL], ring);
    assert_int_equal(pr->footer.lib_cpu_ns, lib);
    assert_int_equal(pr->footer.cost[0][0], cost0);
    /* The clock sums, and corrected only when every file's samples were. */
    assert_int_equal(pr->footer.has_clock, footers > 0);
    assert_int_equal(pr->footer.clock_timer_ns, timer);
    assert_int_equal(pr->footer.clock_kernel_ns, kernel);
    assert_int_equal(pr->footer.clock_corrected, footers > 0 && corrected);
    assert_int_equal(pr->end_error, hi_footer ? 0 : -PYPROF_R_TRUNCATED);
    if (hi_footer) {
        assert_int_equal(pr->footer.end,
                         hi == NFILES - 1 ? PYPROF_END_EXIT : PYPROF_END_ROTATED);
        assert_int_equal(pr->footer.achieved_hz_milli, 100000);
        int64_t last_rel = plan[(hi + 1) * PER_FILE - 1].t_us - ser_off[hi];
        assert_int_equal(pr->footer.duration_ns, (uint64_t)ser_off[hi] * 1000 +
                                                     (uint64_t)(last_rel + 10) * 1000 +
                                                     (uint64_t)hi);
    }
    /* The newest name wins. */
    for (size_t t = 0; t < p->nthreads; t++)
        if (p->threads[t].tid == 100)
            assert_string_equal(p->threads[t].name, have[NFILES - 1] ? "Main-late" : "Main");
    /* Snapshots: one per file, on the process's axis. */
    size_t ns = 0;
    for (int k = 0; k < NFILES && !loose; k++) {
        if (!have[k])
            continue;
        double t = (double)snap_t(k) / 1e6;
        if (f && ((f->has_from && t < f->from_s) || (f->has_to && t > f->to_s)))
            continue;
        assert_true(ns < p->nsnapshots);
        const profile_snapshot *sn = &p->snapshots[ns++];
        assert_int_equal(sn->id, (uint64_t)k + 1);
        assert_int_equal(sn->t_us, snap_t(k));
        assert_int_equal(sn->nthreads, 2);
        const profile_snap_thread *a = &p->snap_threads[sn->first];
        assert_int_equal(p->threads[a[0].thread].tid, 100);
        assert_true(same_frames(p, a[0].stack, &plan_stacks[2]));
        assert_int_equal(a[0].flags, PYPROF_SNAP_F_GIL);
        assert_int_equal(a[0].os_state, 'R');
        assert_int_equal(p->threads[a[1].thread].tid, 101);
        assert_int_equal(a[1].stack, PROFILE_NO_STACK);
        assert_int_equal(a[1].os_state, 'S');
    }
    if (!loose)
        assert_int_equal(ns, p->nsnapshots);
    assert_int_equal(pr->snapshots, p->nsnapshots);
}

static void check_series(const profile *p, const int *which, int n, const profile_filter *f,
                         int last_footer)
{
    check_series_as(p, which, n, f, last_footer, 0);
}

/* A fingerprint of what the views see: samples (time, tid, frames by name), threads,
 * snapshots. */
static uint64_t model_digest(const profile *p)
{
    uint64_t h = 1469598103934665603ull;
#define MIXD(v) (h = (h ^ (uint64_t)(v)) * 0x100000001b3ull)
    for (size_t i = 0; i < p->nsamples; i++) {
        const profile_sample *s = &p->samples[i];
        MIXD(s->t_us);
        MIXD(p->threads[s->thread].tid);
        const profile_stack *st = &p->stacks[s->stack];
        for (uint32_t k = 0; k < st->nframes; k++) {
            const profile_frame *fr = &p->frames[st->first + k];
            for (const char *c = p->funcs[fr->func].name; *c; c++)
                MIXD(*c);
            MIXD(fr->line);
        }
    }
    for (size_t i = 0; i < p->nsnapshots; i++) {
        MIXD(p->snapshots[i].id);
        MIXD(p->snapshots[i].t_us);
    }
    MIXD(p->procs[0].footer.duration_ns);
    MIXD(p->procs[0].footer.end);
#undef MIXD
    return h;
}

static void test_series(void **state)
{
    (void)state;
    write_series(1, -1);
    static const int orders[][NFILES] = {
        {0, 1, 2, 3},
        {3, 2, 1, 0},
        {2, 0, 3, 1},
        {1, 3, 0, 2},
    };
    uint64_t digest = 0;
    for (size_t o = 0; o < sizeof orders / sizeof *orders; o++) {
        int rc;
        profile *p = load_series(orders[o], NFILES, NULL, &rc);
        assert_int_equal(rc, 0);
        assert_int_equal(p->nwarnings, 0);
        check_series(p, orders[o], NFILES, NULL, 1);
        if (o == 0)
            digest = model_digest(p);
        assert_true(model_digest(p) == digest);
        profile_free(p);
    }
    /* The directory, whose names sort the other way. */
    profile *p = profile_new(NULL, 0, NULL);
    assert_int_equal(profile_load(p, ser_dir), 0);
    check_series(p, orders[0], NFILES, NULL, 1);
    assert_true(model_digest(p) == digest);
    profile_free(p);
    /* One call per file, out of order: the files still join one process (in the order
     * they came). */
    p = profile_new(NULL, 0, NULL);
    for (int k = NFILES - 1; k >= 0; k--)
        assert_int_equal(profile_load(p, ser_path[(k + 2) % NFILES]), 0);
    check_series_as(p, orders[0], NFILES, NULL, 1, 1);
    assert_int_equal(p->nsnapshots, NFILES);
    profile_free(p);
    /* The same file twice is two processes, as two copies of any log are. */
    const char *twice[] = {ser_path[0], ser_path[0]};
    p = profile_new(NULL, 0, NULL);
    assert_int_equal(profile_load_paths(p, twice, 2), 0);
    assert_int_equal(p->nprocs, 2);
    profile_free(p);
    remove_series();
}

/* Files missing: the first, one in the middle, the last; whatever is given merges. */
static void test_series_missing(void **state)
{
    (void)state;
    write_series(1, -1);
    static const int sets[][NFILES] = {{1, 2, 3}, {3, 0, 2}, {2, 1, 0}, {2}};
    static const int nset[] = {3, 3, 3, 1};
    for (size_t i = 0; i < sizeof nset / sizeof *nset; i++) {
        int rc;
        profile *p = load_series(sets[i], nset[i], NULL, &rc);
        assert_int_equal(rc, 0);
        check_series(p, sets[i], nset[i], NULL, 1);
        profile_free(p);
    }
    remove_series();
    /* The last file cut short: the series ended as it did, truncated. */
    write_series(0, -1);
    static const int all[] = {1, 3, 0, 2};
    int rc;
    profile *p = load_series(all, NFILES, NULL, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(p->nwarnings, 1);
    check_series(p, all, NFILES, NULL, 0);
    profile_free(p);
    remove_series();
}

/* --from/--to count from the series' start, across files. */
static void test_series_window(void **state)
{
    (void)state;
    write_series(1, -1);
    /* From the middle of file 1 to the middle of file 2. */
    profile_filter f;
    memset(&f, 0, sizeof f);
    f.has_from = f.has_to = 1;
    f.from_s = (double)plan[PER_FILE + PER_FILE / 2].t_us / 1e6;
    f.to_s = (double)plan[2 * PER_FILE + PER_FILE / 2].t_us / 1e6;
    static const int all[] = {3, 1, 2, 0};
    int rc;
    profile *p = load_series(all, NFILES, &f, &rc);
    assert_int_equal(rc, 0);
    assert_true(p->nsamples > PER_FILE / 2 && p->nsamples < 2 * PER_FILE);
    check_series(p, all, NFILES, &f, 1);
    profile_free(p);
    remove_series();
}

/* A damaged SNAPSHOT (more threads announced than it holds) is a clean error. */
static void test_series_bad_snapshot(void **state)
{
    (void)state;
    write_series(1, 2);
    static const int all[] = {0, 1, 2, 3};
    int rc;
    profile *p = load_series(all, NFILES, NULL, &rc);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(p->error, ser_path[2]));
    assert_non_null(strstr(p->error, "corrupted"));
    profile_free(p);
    /* Kept up to the damage when asked. */
    p = profile_new(NULL, PROFILE_KEEP_CORRUPT, NULL);
    const char *paths[NFILES] = {ser_path[3], ser_path[2], ser_path[1], ser_path[0]};
    assert_int_equal(profile_load_paths(p, paths, NFILES), 0);
    assert_int_equal(p->nprocs, 1);
    assert_int_equal(p->procs[0].nfiles, NFILES);
    assert_int_equal(p->procs[0].end_error, -PYPROF_R_CORRUPT);
    assert_int_equal(p->procs[0].footer.end, PYPROF_END_EXIT);
    assert_int_equal(p->nsnapshots, NFILES - 1);
    profile_free(p);
    remove_series();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load),          cmocka_unit_test(test_stack_costs),
        cmocka_unit_test(test_orders),        cmocka_unit_test(test_funcs),
        cmocka_unit_test(test_calltree),      cmocka_unit_test(test_callgraph),
        cmocka_unit_test(test_filters),       cmocka_unit_test(test_fixture),
        cmocka_unit_test(test_series),        cmocka_unit_test(test_series_missing),
        cmocka_unit_test(test_series_window), cmocka_unit_test(test_series_bad_snapshot),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
