/*
 * Unit tests of src/lib/allocwin.c: the cost cap's shift for an allocation rate, and the
 * gaps between windows (their mean keeps every moment inside a window with probability
 * 2^-shift, whatever the windows' real lengths).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib/allocwin.h"

static void test_shift_for_rate(void **state)
{
    (void)state;
    const double q = ALLOCWIN_QUIET_BPS;
    assert_int_equal(allocwin_shift_for_rate(0, 4), 0);
    assert_int_equal(allocwin_shift_for_rate(q, 4), 0);        /* up to quiet: wrapped */
    assert_int_equal(allocwin_shift_for_rate(q * 1.01, 4), 1); /* then a half */
    assert_int_equal(allocwin_shift_for_rate(q * 2, 4), 1);
    assert_int_equal(allocwin_shift_for_rate(q * 3, 4), 2);
    assert_int_equal(allocwin_shift_for_rate(q * 12.5, 4), 4);
    assert_int_equal(allocwin_shift_for_rate(q * 1e6, 4), 4); /* the floor holds */
    assert_int_equal(allocwin_shift_for_rate(q * 1e6, 0), 0);
}

/* The gaps drawn over a fine grid of u have the exponential's mean: L * (2^k - 1). */
static void test_gap_mean(void **state)
{
    (void)state;
    const uint64_t len = 6000000; /* a window that ran 6 ms */
    for (int k = 1; k <= 6; k++) {
        const int n = 200000;
        double sum = 0;
        for (int i = 0; i < n; i++)
            sum += (double)allocwin_gap_ns(len, k, (i + 0.5) / n);
        double mean = sum / n, want = (double)len * (double)((1 << k) - 1);
        if (mean < want * 0.995 || mean > want * 1.005)
            fail_msg("shift %d: mean gap %.0f ns, want %.0f", k, mean, want);
    }
}

static void test_gap_edges(void **state)
{
    (void)state;
    assert_true(allocwin_gap_ns(4000000, 0, 0.5) == 0); /* no windows: no gap */
    assert_true(allocwin_gap_ns(4000000, 4, 1.0) == 0); /* u = 1: the next at once */
    /* u out of (0, 1] (a broken draw) is taken as 1, and the tail is cut at 40 means. */
    assert_true(allocwin_gap_ns(4000000, 4, 0.0) == 0);
    assert_true(allocwin_gap_ns(4000000, 4, 1e-300) <= 40ull * 4000000 * 15);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shift_for_rate),
        cmocka_unit_test(test_gap_mean),
        cmocka_unit_test(test_gap_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
