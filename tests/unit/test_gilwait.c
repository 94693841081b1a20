/*
 * Unit tests for src/read/gilwait.c and the --gil-wait filter (src/read/profile.c): two
 * wall-clock logs are written here with common/logenc.c and LZ4F from a plan of samples
 * whose GIL states (their STACK records' tails) and times are known, loaded into one
 * profile, and gilwait_sum is checked against the plan: each thread's samples by state,
 * and for each waiting sample the holder the plan names (the HELD sample of another thread
 * of the same process nearest in time, within one period), never one of its own thread, of
 * another process, of another state, or further than a period.
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

#include "common/logenc.h"
#include "common/record.h"
#include "logbuf.h"
#include "read/gilwait.h"
#include "read/profile.h"

/* ---- the plan --------------------------------------------------------------------- */

#define PERIOD_NS 10000000ull /* 10 ms: a holder counts up to 10000 us away */
#define NPROCS 2

/* Functions by code id 16 + i; every stack is main -> one of them, under stack id i, with
 * the GIL state (the STACK's tail) of that function.  "old" has no tail (an older writer)
 * and "bogus" one this reader does not know: both read as unknown. */
enum { MAIN, HOLD_A, HOLD_B, WAIT_X, WAIT_Y, IO, NOGIL, OLD, BOGUS, HOLD_C, WAIT_Z, NFUNCS };
static const char *const fname[NFUNCS] = {"main",  "hold_a", "hold_b", "wait_x", "wait_y", "io",
                                          "nogil", "old",    "bogus",  "hold_c", "wait_z"};
#define NO_TAIL 100
#define BOGUS_TAIL 9 /* >= PYPROF_GIL_STATES */
static const uint64_t tail[NFUNCS] = {[MAIN] = NO_TAIL,
                                      [HOLD_A] = PYPROF_GIL_HELD,
                                      [HOLD_B] = PYPROF_GIL_HELD,
                                      [WAIT_X] = PYPROF_GIL_WAIT,
                                      [WAIT_Y] = PYPROF_GIL_WAIT,
                                      [IO] = PYPROF_GIL_OTHER,
                                      [NOGIL] = PYPROF_GIL_NOT_HELD,
                                      [OLD] = NO_TAIL,
                                      [BOGUS] = BOGUS_TAIL,
                                      [HOLD_C] = PYPROF_GIL_HELD,
                                      [WAIT_Z] = PYPROF_GIL_WAIT};

static unsigned state_of(int func)
{
    return tail[func] < PYPROF_GIL_STATES ? (unsigned)tail[func] : PYPROF_GIL_UNKNOWN;
}

/* Threads by thread_idx: process 0 has tids 100..103 (103 never sampled), process 1 tid
 * 200. */
static const uint64_t tids[NPROCS][4] = {{100, 101, 102, 103}, {200}};
static const size_t nthreads_of[NPROCS] = {4, 1};

typedef struct psample {
    int proc;
    int64_t t_us;
    int thread; /* thread_idx in its process's log */
    int func;
    int holder; /* a waiting sample: the function of the stack that held the GIL
                 * meanwhile; NONE when none did, and for the other samples */
} psample;
#define NONE (-1)

/* clang-format off */
static const psample plan[] = {
    {0,  98000, 2, HOLD_B, NONE},
    /* Its own thread held 500 us later, hold_a of thread 1 3000 us later: hold_b of
     * thread 2, 2000 us earlier, is the nearest of another thread. */
    {0, 100000, 0, WAIT_X, HOLD_B},
    {0, 100500, 0, HOLD_A, NONE},
    {0, 103000, 1, HOLD_A, NONE},
    {0, 198500, 2, HOLD_B, NONE},
    /* Thread 2 was in io (not holding) 100 us later; hold_a 1000 us later is nearer than
     * hold_b 1500 us earlier. */
    {0, 200000, 0, WAIT_X, HOLD_A},
    {0, 200100, 2, IO, NONE},
    {0, 201000, 1, HOLD_A, NONE},
    {0, 289999, 0, HOLD_A, NONE},
    /* Its own thread held 200 us later, the other threads 10001 us away (past a period),
     * and process 1 held at the same moment: no holder. */
    {0, 300000, 1, WAIT_Y, NONE},
    {0, 300200, 1, HOLD_A, NONE},
    {0, 310001, 2, HOLD_B, NONE},
    {0, 389000, 2, HOLD_B, NONE},
    /* Exactly one period: still a holder; 11000 us: not. */
    {0, 400000, 1, WAIT_Y, HOLD_A},
    {0, 410000, 0, HOLD_A, NONE},
    /* The same moment. */
    {0, 500000, 0, HOLD_B, NONE},
    {0, 500000, 2, WAIT_X, HOLD_B},
    {0, 596000, 0, HOLD_A, NONE},
    {0, 600000, 1, WAIT_Y, HOLD_A},
    {0, 605000, 2, HOLD_B, NONE},
    {0, 699000, 2, HOLD_B, NONE},
    {0, 700000, 1, WAIT_Y, HOLD_B},
    {0, 800000, 0, IO, NONE},
    {0, 810000, 1, NOGIL, NONE},
    {0, 815000, 1, NOGIL, NONE},
    {0, 820000, 2, OLD, NONE},
    {0, 830000, 2, BOGUS, NONE},
    /* Process 0's thread 1 held at this very moment: another process, no holder. */
    {1, 103000, 0, WAIT_Z, NONE},
    {1, 300000, 0, HOLD_C, NONE},
};
/* clang-format on */
#define NPLAN (sizeof plan / sizeof plan[0])

/* ---- writing the logs ------------------------------------------------------------- */

static uint8_t scratch[1 << 12];

static void put_header(logbuf *b, int proc)
{
    static const char cmdline[] = "python3\0app.py\0";
    logenc_header_fields h = {.pid = 4242 + (uint64_t)proc,
                              .ppid = 1,
                              .run_id = proc ? "run-b" : "run-a",
                              .start_unix_ns = 1700000000000000000ull,
                              .host = "host",
                              .exe = "/usr/bin/python3",
                              .cmdline = cmdline,
                              .cmdline_len = sizeof cmdline - 1,
                              .python_version = "3.12.1",
                              .python_hex = 0x030c01f0,
                              .period_ns = PERIOD_NS,
                              .clock = PYPROF_CLOCK_WALL,
                              .timer = "wall",
                              .max_depth = 256};
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    assert_int_equal(logenc_put_header(&o, &h), 0);
    logbuf_put(b, PYPROF_REC_HEADER, &o);
}

static void put_code(logbuf *b, int f)
{
    logenc_code_fields c = {.code_id = 16 + (uint64_t)f,
                            .first_line = 10 * f + 1,
                            .name = fname[f],
                            .name_len = strlen(fname[f]),
                            .qualname = fname[f],
                            .qualname_len = strlen(fname[f]),
                            .filename = "app.py",
                            .filename_len = 6,
                            .lt_kind = PYPROF_LT_LOCATIONS_311};
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    assert_int_equal(logenc_put_code(&o, &c), 0);
    logbuf_put(b, PYPROF_REC_CODE, &o);
}

/* Stack id f: main -> f, with f's GIL tail as the writer puts it. */
static void put_stack(logbuf *b, int f)
{
    const logenc_frame fr[2] = {{16, 2}, {16 + (uint32_t)f, 10 * f + 2}};
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    assert_int_equal(logenc_put_stack(&o, (uint64_t)f, fr, 2), 0);
    if (tail[f] != NO_TAIL)
        assert_int_equal(logenc_put_stack_gil(&o, tail[f]), 0);
    logbuf_put(b, PYPROF_REC_STACK, &o);
}

static char log_path[NPROCS][64];

static void write_log(int proc)
{
    logbuf b = {malloc(1024), PYPROF_MAGIC_LEN, 1024};
    assert_non_null(b.p);
    memcpy(b.p, PYPROF_MAGIC, PYPROF_MAGIC_LEN);
    put_header(&b, proc);
    rec_out o;
    for (size_t i = 0; i < nthreads_of[proc]; i++) {
        char name[24]; /* "T" and any size_t */
        snprintf(name, sizeof name, "T%zu", i);
        rec_out_init(&o, scratch, sizeof scratch);
        assert_int_equal(logenc_put_thread(&o, i, tids[proc][i], name), 0);
        logbuf_put(&b, PYPROF_REC_THREAD, &o);
    }
    for (int f = 0; f < NFUNCS; f++)
        put_code(&b, f);
    for (int f = 1; f < NFUNCS; f++)
        put_stack(&b, f);
    int64_t t = 0;
    for (size_t i = 0; i < NPLAN; i++) {
        if (plan[i].proc != proc)
            continue;
        rec_out_init(&o, scratch, sizeof scratch);
        assert_int_equal(logenc_put_sample(&o, plan[i].t_us - t, (uint64_t)plan[i].thread,
                                           (uint64_t)plan[i].func, PERIOD_NS / 1000),
                         0);
        logbuf_put(&b, PYPROF_REC_SAMPLE, &o);
        t = plan[i].t_us;
    }
    /* No footer: a truncated log, kept with a warning. */
    snprintf(log_path[proc], sizeof log_path[proc], "/tmp/test_gilwait.XXXXXX");
    int fd = mkstemp(log_path[proc]);
    assert_true(fd >= 0);
    close(fd);
    logbuf_write(&b, log_path[proc]);
    free(b.p);
}

static int setup(void **state)
{
    (void)state;
    for (int proc = 0; proc < NPROCS; proc++)
        write_log(proc);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int proc = 0; proc < NPROCS; proc++)
        unlink(log_path[proc]);
    return 0;
}

static profile *load(const profile_filter *f)
{
    profile *p = profile_new(f, 0, NULL);
    assert_non_null(p);
    for (int proc = 0; proc < NPROCS; proc++)
        assert_int_equal(profile_load(p, log_path[proc]), 0);
    assert_int_equal(p->nprocs, NPROCS);
    assert_int_equal(p->procs[0].pid, 4242);
    assert_int_equal(p->procs[1].pid, 4243);
    return p;
}

/* ---- reading the profile back ----------------------------------------------------- */

/* The profile's stack main -> fname[f]. */
static uint32_t stack_of(const profile *p, int f)
{
    for (uint32_t s = 0; s < p->nstacks; s++) {
        const profile_stack *st = &p->stacks[s];
        if (st->nframes == 2 &&
            !strcmp(p->funcs[p->frames[st->first + 1].func].name, fname[f]) &&
            !strcmp(p->funcs[p->frames[st->first].func].name, "main"))
            return s;
    }
    fail_msg("no stack main -> %s", fname[f]);
    return UINT32_MAX;
}

/* The function (plan index) of a profile stack. */
static int func_of(const profile *p, uint32_t s)
{
    for (int f = 1; f < NFUNCS; f++)
        if (stack_of(p, f) == s)
            return f;
    fail_msg("stack %u is none of the plan's", s);
    return -1;
}

static uint32_t thread_of(const profile *p, int proc, int thread)
{
    for (uint32_t t = 0; t < p->nthreads; t++)
        if (p->threads[t].process == (uint32_t)proc && p->threads[t].tid == tids[proc][thread])
            return t;
    fail_msg("no thread %d of process %d", thread, proc);
    return UINT32_MAX;
}

/* ---- tests -------------------------------------------------------------------------- */

/* Each sample carries its STACK's state: known ones as written, no tail and an unknown
 * value as PYPROF_GIL_UNKNOWN. */
static void test_sample_states(void **state)
{
    (void)state;
    profile *p = load(NULL);
    assert_int_equal(p->nsamples, NPLAN);
    for (size_t i = 0; i < NPLAN; i++) {
        const profile_sample *s = &p->samples[i];
        assert_int_equal(s->process, plan[i].proc);
        assert_int_equal(s->t_us, plan[i].t_us);
        assert_int_equal(s->thread, thread_of(p, plan[i].proc, plan[i].thread));
        assert_int_equal(s->stack, stack_of(p, plan[i].func));
        assert_int_equal(s->gil, state_of(plan[i].func));
    }
    assert_int_equal(p->samples[NPLAN - 4].gil, PYPROF_GIL_UNKNOWN); /* old: no tail */
    assert_int_equal(p->samples[NPLAN - 3].gil, PYPROF_GIL_UNKNOWN); /* bogus: 9 */
    profile_free(p);
}

static void test_counts(void **state)
{
    (void)state;
    profile *p = load(NULL);
    gilwait_counts c;
    assert_int_equal(gilwait_sum(p, &c), 0);

    /* Every sample by state, from the plan. */
    uint64_t want[PYPROF_GIL_STATES] = {0};
    for (size_t i = 0; i < NPLAN; i++)
        want[state_of(plan[i].func)]++;
    for (int g = 0; g < PYPROF_GIL_STATES; g++)
        assert_int_equal(c.samples[g], want[g]);
    assert_int_equal(c.samples[PYPROF_GIL_HELD], 15);
    assert_int_equal(c.samples[PYPROF_GIL_WAIT], 8);
    assert_int_equal(c.samples[PYPROF_GIL_OTHER], 2);
    assert_int_equal(c.samples[PYPROF_GIL_NOT_HELD], 2);
    assert_int_equal(c.samples[PYPROF_GIL_UNKNOWN], 2);

    /* The threads with a sample (not tid 103), by process then busiest first: tids 102
     * (10 samples), 101 (9), 100 (8), then process 1's 200. */
    static const uint64_t order[] = {102, 101, 100, 200};
    assert_int_equal(c.nthreads, 4);
    for (size_t k = 0; k < c.nthreads; k++) {
        const gilwait_thread *gt = &c.threads[k];
        assert_int_equal(p->threads[gt->thread].tid, order[k]);
        uint64_t mine[PYPROF_GIL_STATES] = {0};
        for (size_t i = 0; i < NPLAN; i++)
            if (thread_of(p, plan[i].proc, plan[i].thread) == gt->thread)
                mine[state_of(plan[i].func)]++;
        for (int g = 0; g < PYPROF_GIL_STATES; g++)
            assert_int_equal(gt->samples[g], mine[g]);
    }
    assert_int_equal(c.threads[0].samples[PYPROF_GIL_HELD], 6);
    assert_int_equal(c.threads[0].samples[PYPROF_GIL_UNKNOWN], 2);
    assert_int_equal(c.threads[1].samples[PYPROF_GIL_WAIT], 4);
    assert_int_equal(c.threads[1].samples[PYPROF_GIL_NOT_HELD], 2);
    assert_int_equal(c.threads[2].samples[PYPROF_GIL_HELD], 5);
    assert_int_equal(c.threads[3].samples[PYPROF_GIL_WAIT], 1);
    gilwait_counts_free(&c);
    profile_free(p);
}

/* Each waiting stack: its samples, those with a holder, and the holders as the plan
 * names them, most samples first. */
static void test_holders(void **state)
{
    (void)state;
    profile *p = load(NULL);
    gilwait_counts c;
    assert_int_equal(gilwait_sum(p, &c), 0);

    uint64_t attributed = 0;
    for (size_t i = 0; i < NPLAN; i++)
        attributed += state_of(plan[i].func) == PYPROF_GIL_WAIT && plan[i].holder != NONE;
    assert_int_equal(c.attributed, attributed);
    assert_int_equal(c.attributed, 6);

    /* Against the plan, naively: for each waiting stack, count its samples and, per
     * holder function, the samples the plan gives it. */
    assert_int_equal(c.nstacks, 3);
    for (size_t k = 0; k < c.nstacks; k++) {
        const gilwait_stack *st = &c.stacks[k];
        int wf = func_of(p, st->stack);
        uint64_t n = 0, with = 0, per[NFUNCS] = {0};
        for (size_t i = 0; i < NPLAN; i++) {
            if (plan[i].func != wf)
                continue;
            n++;
            if (plan[i].holder != NONE) {
                with++;
                per[plan[i].holder]++;
            }
        }
        assert_int_equal(st->samples, n);
        assert_int_equal(st->attributed, with);
        uint64_t sum = 0;
        for (size_t h = 0; h < st->nholders; h++) {
            assert_int_equal(st->holders[h].samples, per[func_of(p, st->holders[h].stack)]);
            assert_true(st->holders[h].samples > 0);
            if (h)
                assert_true(st->holders[h].samples <= st->holders[h - 1].samples);
            sum += st->holders[h].samples;
        }
        assert_int_equal(sum, with);
    }

    /* Most waiting samples first: wait_y (4) although wait_x (3) was interned before it;
     * the holders most samples first too, whatever their index order. */
    assert_true(stack_of(p, WAIT_X) < stack_of(p, WAIT_Y));
    assert_true(stack_of(p, HOLD_A) < stack_of(p, HOLD_B));
    const gilwait_stack *y = &c.stacks[0], *x = &c.stacks[1], *z = &c.stacks[2];
    assert_int_equal(y->stack, stack_of(p, WAIT_Y));
    assert_int_equal(y->samples, 4);
    assert_int_equal(y->attributed, 3); /* the wait at 300000 has none */
    assert_int_equal(y->nholders, 2);
    assert_int_equal(y->holders[0].stack, stack_of(p, HOLD_A));
    assert_int_equal(y->holders[0].samples, 2);
    assert_int_equal(y->holders[1].stack, stack_of(p, HOLD_B));
    assert_int_equal(y->holders[1].samples, 1);

    assert_int_equal(x->stack, stack_of(p, WAIT_X));
    assert_int_equal(x->samples, 3);
    assert_int_equal(x->attributed, 3);
    assert_int_equal(x->nholders, 2);
    assert_int_equal(x->holders[0].stack, stack_of(p, HOLD_B));
    assert_int_equal(x->holders[0].samples, 2);
    assert_int_equal(x->holders[1].stack, stack_of(p, HOLD_A));
    assert_int_equal(x->holders[1].samples, 1);

    /* Process 1's wait: process 0 held at that moment, but that is another process. */
    assert_int_equal(z->stack, stack_of(p, WAIT_Z));
    assert_int_equal(z->samples, 1);
    assert_int_equal(z->attributed, 0);
    assert_int_equal(z->nholders, 0);
    for (size_t k = 0; k < c.nstacks; k++)
        for (size_t h = 0; h < c.stacks[k].nholders; h++)
            assert_int_not_equal(c.stacks[k].holders[h].stack, stack_of(p, HOLD_C));
    gilwait_counts_free(&c);
    profile_free(p);
}

/* The reach is the process's own period: with 1.5 ms instead of 10 (as a log written at
 * that period would load), the plan's holders 2000, 4000 and 10000 us from their waits
 * are out of reach, those 0 and 1000 us away are kept. */
static void test_period_bounds(void **state)
{
    (void)state;
    profile *p = load(NULL);
    p->procs[0].period_ns = 1500000;
    gilwait_counts c;
    assert_int_equal(gilwait_sum(p, &c), 0);
    /* wait_x: 100000 (2000 away) has none now; 200000 (hold_a 1000 away) and 500000
     * (hold_b, 0) keep theirs.  wait_y: 700000 (hold_b 1000 away) only. */
    assert_int_equal(c.attributed, 3);
    for (size_t k = 0; k < c.nstacks; k++) {
        const gilwait_stack *st = &c.stacks[k];
        if (st->stack == stack_of(p, WAIT_X)) {
            assert_int_equal(st->attributed, 2);
            assert_int_equal(st->nholders, 2);
        } else if (st->stack == stack_of(p, WAIT_Y)) {
            assert_int_equal(st->attributed, 1);
            assert_int_equal(st->nholders, 1);
            assert_int_equal(st->holders[0].stack, stack_of(p, HOLD_B));
        } else {
            assert_int_equal(st->attributed, 0);
        }
    }
    gilwait_counts_free(&c);
    profile_free(p);
}

/* --gil-wait keeps exactly the waiting samples, of every process, in their order. */
static void test_gil_wait_filter(void **state)
{
    (void)state;
    profile_filter f;
    memset(&f, 0, sizeof f);
    f.gil_wait = 1;
    profile *p = load(&f);
    size_t k = 0;
    for (size_t i = 0; i < NPLAN; i++) {
        if (state_of(plan[i].func) != PYPROF_GIL_WAIT)
            continue;
        assert_true(k < p->nsamples);
        const profile_sample *s = &p->samples[k++];
        assert_int_equal(s->process, plan[i].proc);
        assert_int_equal(s->t_us, plan[i].t_us);
        assert_int_equal(s->thread, thread_of(p, plan[i].proc, plan[i].thread));
        assert_int_equal(s->stack, stack_of(p, plan[i].func));
        assert_int_equal(s->gil, PYPROF_GIL_WAIT);
    }
    assert_int_equal(p->nsamples, k);
    assert_int_equal(k, 8);
    /* Every sample was read; the others were left out. */
    assert_int_equal(p->procs[0].samples_read + p->procs[1].samples_read, NPLAN);
    assert_int_equal(p->procs[0].samples + p->procs[1].samples, 8);
    gilwait_counts c;
    assert_int_equal(gilwait_sum(p, &c), 0);
    assert_int_equal(c.samples[PYPROF_GIL_WAIT], 8);
    for (int g = 0; g < PYPROF_GIL_STATES; g++)
        if (g != PYPROF_GIL_WAIT)
            assert_int_equal(c.samples[g], 0);
    gilwait_counts_free(&c);
    profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample_states),   cmocka_unit_test(test_counts),
        cmocka_unit_test(test_holders),         cmocka_unit_test(test_period_bounds),
        cmocka_unit_test(test_gil_wait_filter),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
