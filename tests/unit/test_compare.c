/* compare's noise model: the z of a change and when a change is flagged. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "read/compare.h"

/* Equal periods: z is (n - b) / sqrt(n + b). */
static void equal_periods(void **state)
{
    (void)state;
    assert_true(fabs(compare_z(100e3, 100, 144e3, 144) - 44.0 / sqrt(244.0)) < 1e-9);
    assert_true(fabs(compare_z(144e3, 144, 100e3, 100) + 44.0 / sqrt(244.0)) < 1e-9);
    assert_true(compare_z(5e3, 5, 5e3, 5) == 0);
    assert_true(compare_z(0, 0, 0, 0) == 0);
}

/* A side without samples takes the other's weight: 0 -> 20 samples is sqrt(20). */
static void one_side_empty(void **state)
{
    (void)state;
    assert_true(fabs(compare_z(0, 0, 20e3, 20) - sqrt(20.0)) < 1e-9);
    assert_true(fabs(compare_z(20e4, 20, 0, 0) + sqrt(20.0)) < 1e-9);
}

/* Different periods: the same time in 10x fewer, 10x heavier samples is no change. */
static void different_periods(void **state)
{
    (void)state;
    assert_true(fabs(compare_z(1e6, 1000, 1e6, 100)) < 1e-9);
    /* 1000 samples of 1 ms against 150 of 10 ms: +0.5 s, var (1e3 + 1e4) x 1.25e6 us. */
    double z = compare_z(1e6, 1000, 1.5e6, 150);
    assert_true(fabs(z - 0.5e6 / sqrt(11e3 * 1.25e6)) < 1e-9);
}

/* Flagged only beyond both thresholds. */
static void flags(void **state)
{
    (void)state;
    /* z 5.3, +255 %: flagged. */
    assert_true(compare_flagged(20e3, 20, 71e3, 71));
    /* 10 -> 20 samples: +100 %, but z 1.8: not. */
    assert_true(fabs(compare_z(10e3, 10, 20e3, 20)) < COMPARE_Z);
    assert_true(!compare_flagged(10e3, 10, 20e3, 20));
    /* 100000 -> 105000 samples: z 11, but 4.8 % of the larger side: not flagged. */
    assert_true(compare_z(1e8, 100000, 1.05e8, 105000) > 10);
    assert_true(!compare_flagged(1e8, 100000, 1.05e8, 105000));
    /* 100000 -> 112000: z 24 and 10.7 %: flagged, and so is the way back. */
    assert_true(compare_flagged(1e8, 100000, 1.12e8, 112000));
    assert_true(compare_flagged(1.12e8, 112000, 1e8, 100000));
    assert_true(!compare_flagged(0, 0, 0, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(equal_periods),
        cmocka_unit_test(one_side_empty),
        cmocka_unit_test(different_periods),
        cmocka_unit_test(flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
