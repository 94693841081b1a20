/*
 * Unit tests of src/lib/cpucredit.c, against src/lib/cpucredit.h: a signal records the
 * whole periods of kernel CPU it closed and carries the rest; signals that were lost
 * merge into the next; the shorter first period is scaled to a whole one, at most one,
 * counted from when the timer started;
 * a clock that went back or did not move adds nothing; and, simulated over many threads
 * with the timer counting more than the kernel (steal) or not, the expected samples are
 * the kernel's CPU over the period, for threads shorter than a period too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>
#include <math.h>

#include "lib/cpucredit.h"

#define P 1000000ull /* 1 ms */

/* A signal that read only the CPU clock (a steady interval, or a thread armed from
 * another one), no ratio measured in the process yet. */
static uint32_t sig(cpucredit *c, uint64_t now, uint64_t timer, uint64_t *k)
{
    cpucredit_now at = {now, 0, 0};
    cpucredit_seen seen;
    uint32_t n = cpucredit_signal(c, &at, timer, P, 0, &seen);
    *k = seen.kernel_ns;
    assert_false(seen.ratio_known);
    return n;
}

/* A signal with all three readings, the process's recent ratio `ratio_q`. */
static uint32_t sig3(cpucredit *c, const cpucredit_now *at, uint64_t timer, uint32_t ratio_q,
                     cpucredit_seen *seen)
{
    return cpucredit_signal(c, at, timer, P, ratio_q, seen);
}

/* A credit started from the CPU clock alone, as from another thread. */
static void start(cpucredit *c, uint64_t now, uint64_t seed)
{
    cpucredit_now at = {now, 0, 0};
    cpucredit_start(c, &at, seed);
}

/* A credit past its first signal: its intervals are steady ones. */
static void start_steady(cpucredit *c, uint64_t now, uint64_t seed)
{
    start(c, now, seed);
    c->fresh = 0;
}

#define HALF (CPUCREDIT_ONE / 2)

static void test_whole_periods_and_remainders(void **state)
{
    (void)state;
    cpucredit c;
    uint64_t k, now = 5000;
    start_steady(&c, now, 0);
    /* 0.6 of a period per signal: 0, 1, 0, 1, 1 (credit 0.6, 1.2, 0.8, 1.4, 1.0). */
    static const uint32_t want[] = {0, 1, 0, 1, 1};
    for (int i = 0; i < 5; i++) {
        now += 6 * P / 10;
        assert_int_equal(sig(&c, now, P, &k), want[i]);
        assert_int_equal(k, 6 * P / 10);
        assert_true(c.credit_ns < P);
    }
    assert_int_equal(c.credit_ns, 0);
    /* The seed stays as the remainder while each signal closes exactly a period. */
    start_steady(&c, now, P / 2);
    for (int i = 0; i < 4; i++) {
        now += P;
        assert_int_equal(sig(&c, now, P, &k), 1);
        assert_int_equal(c.credit_ns, P / 2);
    }
}

static void test_lost_signals_merge(void **state)
{
    (void)state;
    cpucredit c;
    uint64_t k;
    start_steady(&c, 0, P / 4);
    /* Three periods of the thread's CPU since its last signal, which the timer counted
     * as one: one sample, as the timer counted (CPU the kernel counts to the thread
     * outside the timer, its switches and wake-ups, is not added to another stack). */
    assert_int_equal(sig(&c, 3 * P, P, &k), 1);
    assert_int_equal(k, P);
    assert_int_equal(c.credit_ns, P / 4);
}

static void test_first_period_scaled(void **state)
{
    (void)state;
    cpucredit c;
    uint64_t k;
    /* Steady intervals are taken as read; a first one of P/4 stands for a whole period
     * at the ratio the kernel gave (here, from another thread with no ratio measured
     * yet: all of it), however much CPU its clock showed. */
    start(&c, 100, 0);
    assert_int_equal(sig(&c, 100 + P / 8, P / 4, &k), 1);
    assert_int_equal(k, P / 4);
    assert_int_equal(c.credit_ns, 0);
    assert_int_equal(sig(&c, 100 + P / 8 + P / 2, P, &k), 0);
    assert_int_equal(c.credit_ns, P / 2);
    /* A first period as long as the period is a steady one. */
    start(&c, 0, P / 3);
    assert_int_equal(sig(&c, P + P / 2, P, &k), 1);
    assert_int_equal(c.credit_ns, P / 3);
}

static void test_clock_backwards_or_still(void **state)
{
    (void)state;
    cpucredit c;
    uint64_t k;
    start(&c, 10 * P, P / 2);
    /* The first, fresh interval: a clock that did not move is worth nothing. */
    assert_int_equal(sig(&c, 10 * P, P / 2, &k), 0);
    assert_int_equal(k, 0);
    assert_int_equal(c.credit_ns, P / 2);
    /* Steady ones: a clock that went back adds nothing and keeps its base. */
    assert_int_equal(sig(&c, 9 * P, P, &k), 0);
    assert_int_equal(k, 0);
    assert_int_equal(c.last_ns, 10 * P);
    assert_int_equal(c.credit_ns, P / 2);
    assert_int_equal(sig(&c, 10 * P, P, &k), 0); /* did not move */
    assert_int_equal(sig(&c, 11 * P, P, &k), 1); /* counted from the larger reading */
    assert_int_equal(k, P);
    assert_int_equal(c.credit_ns, P / 2);
}

static void test_rebase(void **state)
{
    (void)state;
    cpucredit c;
    uint64_t k;
    /* The timer started counting later than the first reading: the base moves there,
     * and the next steady interval counts from the first signal. */
    start(&c, 1000, 0);
    cpucredit_rebase(&c, 1000 + P / 10);
    assert_int_equal(c.last_ns, 1000 + P / 10);
    sig(&c, 1000 + P / 10 + P / 4, P / 2, &k);
    assert_int_equal(c.last_ns, 1000 + P / 10 + P / 4);
    /* A signal came first: its reading stays the base. */
    start(&c, 1000, 0);
    sig(&c, 1000 + P / 5, P / 2, &k);
    cpucredit_rebase(&c, 1000 + P / 10);
    assert_int_equal(c.last_ns, 1000 + P / 5);
    /* A reading that did not move the clock changes nothing. */
    start(&c, 1000, 0);
    cpucredit_rebase(&c, 1000);
    assert_int_equal(c.last_ns, 1000);
}

static void test_fresh_by_wall_clock(void **state)
{
    (void)state;
    cpucredit c;
    cpucredit_seen seen;
    /* Started on the thread: monotonic 1 s, 7 switches.  At the first signal the CPU
     * clock moved 0.3 ms in 0.4 ms of wall time without a switch: the kernel gave the
     * thread 3/4 of what the timer counted, whatever the lateness.  A first period of
     * P/4: worth 3/4 of a period. */
    cpucredit_now at = {1000, 1000000000ull, 7};
    cpucredit_start(&c, &at, 0);
    assert_true(cpucredit_fresh(&c));
    cpucredit_now now = {1000 + 300000, 1000000000ull + 400000, 7};
    assert_int_equal(sig3(&c, &now, P / 4, HALF, &seen), 0);
    assert_true(seen.ratio_known);
    assert_int_equal(seen.ratio_q, 3 * CPUCREDIT_ONE / 4);
    assert_int_equal(seen.kernel_ns, 3 * (P / 4) / 4); /* as the timer would count it */
    assert_int_equal(c.credit_ns, 3 * P / 4);
    assert_false(cpucredit_fresh(&c));
    /* The next, steady interval is not fresh: its CPU counts as read. */
    now.cpu_ns += P / 2;
    assert_int_equal(sig3(&c, &now, P, HALF, &seen), 1);
    assert_false(seen.ratio_known);
    assert_int_equal(seen.kernel_ns, P / 2);
    assert_int_equal(c.credit_ns, P / 4);
    /* A steady timer made at that signal: fresh again, by the wall clock; no steal, all
     * of it. */
    cpucredit_now re = {now.cpu_ns + 20000, now.mono_ns + 900000, 9};
    cpucredit_restart(&c, &re);
    assert_true(cpucredit_fresh(&c));
    cpucredit_now then = {re.cpu_ns + P + 50000, re.mono_ns + P + 50000, 9};
    assert_int_equal(sig3(&c, &then, P, HALF, &seen), 1);
    assert_int_equal(seen.ratio_q, CPUCREDIT_ONE);
    assert_int_equal(c.credit_ns, P / 4);
    /* A switch in the interval: the process's recent ratio stands in, here a half. */
    cpucredit_start(&c, &at, 0);
    cpucredit_now sw = {1000 + 300000, 1000000000ull + 900000, 8};
    assert_int_equal(sig3(&c, &sw, P / 2, HALF, &seen), 0);
    assert_false(seen.ratio_known);
    assert_int_equal(c.credit_ns, P / 2);
    /* ... or, before any was measured, all of it. */
    cpucredit_start(&c, &at, 0);
    assert_int_equal(sig3(&c, &sw, P / 2, 0, &seen), 1);
    assert_int_equal(c.credit_ns, 0);
    /* More CPU than wall time (the clocks are read apart): the whole interval. */
    cpucredit_start(&c, &at, 0);
    cpucredit_now over = {1000 + 500000, 1000000000ull + 400000, 7};
    assert_int_equal(sig3(&c, &over, P / 4, HALF, &seen), 1);
    assert_int_equal(c.credit_ns, 0);
    /* Started from another thread (no wall reading): the recent ratio. */
    cpucredit_now other = {1000, 0, 0};
    cpucredit_start(&c, &other, 0);
    assert_false(cpucredit_fresh(&c));
    cpucredit_now plain = {1000 + 300000, 0, 0};
    assert_int_equal(sig3(&c, &plain, P / 2, HALF, &seen), 0);
    assert_int_equal(c.credit_ns, P / 2);
    /* A fresh interval whose clock did not move is worth nothing. */
    cpucredit_start(&c, &other, 0);
    assert_int_equal(sig3(&c, &other, P / 2, HALF, &seen), 0);
    assert_int_equal(c.credit_ns, 0);
}

static void test_broken_clock_bounded(void **state)
{
    (void)state;
    cpucredit c;
    uint64_t k;
    /* A clock that jumped by years: no more than the timer counted. */
    start_steady(&c, 0, P - 1);
    assert_int_equal(sig(&c, UINT64_MAX, P, &k), 1);
    assert_true(c.credit_ns < P);
    /* A timer count of 0 (never given): bounded all the same. */
    start_steady(&c, 0, P - 1);
    assert_int_equal(
        cpucredit_signal(&c, &(cpucredit_now){UINT64_MAX, 0, 0}, 0, P, 0, &(cpucredit_seen){0}),
        CPUCREDIT_MAX_SAMPLES);
}

/* A small deterministic generator: uniform in [0, 1). */
static double uniform(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* `n` threads, each using `cpu` periods of kernel CPU while its timer counts `ahead`
 * times as much (steal spread evenly), sampled as the library does: a uniformly random
 * first period, then steady ones, each signal's readings `late` periods after its
 * timer's overflow; the credit seeded uniform in [0, period); the first interval
 * measured by the wall clock when `wall`, else at the ratio the process saw (here the
 * true one).  Checks the mean samples per thread against the CPU within 5 standard
 * errors. */
static void simulate(double cpu, double ahead, double late, int wall, int n)
{
    uint64_t rng = 42;
    double total = 0, sq = 0;
    uint32_t ratio = (uint32_t)(CPUCREDIT_ONE / ahead);
    for (int i = 0; i < n; i++) {
        cpucredit c;
        /* Timer time t (on-CPU time, steal included) maps to kernel CPU t / ahead. */
        cpucredit_now at = {1, wall ? 1 : 0, 0};
        cpucredit_start(&c, &at, (uint64_t)(uniform(&rng) * (double)P));
        double timer_all = cpu * ahead * (double)P, lat = late * (double)P;
        uint64_t first = 1 + (uint64_t)(uniform(&rng) * (double)P);
        uint32_t got = 0;
        for (double t = (double)first; t + lat <= timer_all; t += (double)P) {
            cpucredit_now now = {1 + (uint64_t)((t + lat) / ahead),
                                 cpucredit_fresh(&c) ? 1 + (uint64_t)(t + lat) : 0, 0};
            cpucredit_seen seen;
            got += cpucredit_signal(&c, &now, t == (double)first ? first : P, P, ratio, &seen);
        }
        total += got;
        sq += (double)got * got;
    }
    /* A thread that stops within the lateness after an overflow never gets that signal
     * (the timer's own loss, with or without steal): late / ahead periods of its CPU. */
    double want = cpu - late / ahead;
    double mean = total / n, var = sq / n - mean * mean;
    double se = sqrt(var / n) + 1e-9;
    printf("  cpu %.2f periods, timer ahead x%.2f, read %.2f periods late (%s): %.4f "
           "samples per thread, %.4f expected (%.1f standard errors)\n",
           cpu, ahead, late, wall ? "wall clock" : "the process's ratio", mean, want,
           (mean - want) / se);
    assert_true(fabs(mean - want) < 5 * se);
}

static void test_expectation_is_kernel_cpu(void **state)
{
    (void)state;
    static const double cpus[] = {0.1, 0.3, 1.0, 3.7};
    static const double aheads[] = {1.0, 1.3, 1.65};
    for (unsigned i = 0; i < sizeof cpus / sizeof cpus[0]; i++)
        for (unsigned j = 0; j < sizeof aheads / sizeof aheads[0]; j++) {
            simulate(cpus[i], aheads[j], 0, 0, 100000);
            simulate(cpus[i], aheads[j], 0.05, 1, 100000);
            simulate(cpus[i], aheads[j], 0.05, 0, 100000);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_periods_and_remainders),
        cmocka_unit_test(test_lost_signals_merge),
        cmocka_unit_test(test_first_period_scaled),
        cmocka_unit_test(test_clock_backwards_or_still),
        cmocka_unit_test(test_rebase),
        cmocka_unit_test(test_fresh_by_wall_clock),
        cmocka_unit_test(test_broken_clock_bounded),
        cmocka_unit_test(test_expectation_is_kernel_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
