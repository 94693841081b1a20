/* compare's noise models, of time and of bytes: the z of a change and when a change is
 * flagged. */
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

/* Memory: the estimates' variances are their samples' squared weights summed, and the
 * difference has the variance of both: z = (b1 - b0) / sqrt(v0 + v1). */
static void memory_z(void **state)
{
    (void)state;
    /* 100 samples of 32 KiB against 144: with equal weights, the time formula again. */
    double w = 32768;
    assert_true(fabs(compare_z_memory(100 * w, 100 * w * w, 144 * w, 144 * w * w) -
                     44.0 / sqrt(244.0)) < 1e-9);
    assert_true(fabs(compare_z_memory(100 * w, 100 * w * w, 144 * w, 144 * w * w) -
                     compare_z(100 * w, 100, 144 * w, 144)) < 1e-9);
    assert_true(compare_z_memory(144 * w, 144 * w * w, 100 * w, 100 * w * w) < 0);
    assert_true(compare_z_memory(5 * w, 5 * w * w, 5 * w, 5 * w * w) == 0);
    assert_true(compare_z_memory(0, 0, 0, 0) == 0);
    /* One side empty: its variance is 0, the other's counts alone (sqrt(n) for n equal
     * samples). */
    assert_true(fabs(compare_z_memory(0, 0, 20 * w, 20 * w * w) - sqrt(20.0)) < 1e-9);
    assert_true(fabs(compare_z_memory(20 * w, 20 * w * w, 0, 0) + sqrt(20.0)) < 1e-9);
}

/* Heavy samples are noisy: the same 1 MiB more is sure when it is 100 samples of 32 KiB
 * more on ~1,000, and noise when it is one sample of 1 MiB more, whose weight dominates
 * the variance. */
static void memory_weights(void **state)
{
    (void)state;
    double k = 32768, m = 1048576;
    /* 1000 x 32 KiB -> 1032 x 32 KiB (+1 MiB, 3 %): z = 32 / sqrt(2032) = 0.7. */
    double z = compare_z_memory(1000 * k, 1000 * k * k, 1032 * k, 1032 * k * k);
    assert_true(fabs(z - 32.0 / sqrt(2032.0)) < 1e-9);
    /* Mixed weights: 10 samples of 1 MiB and 100 of 32 KiB on each side, then one of
     * 1 MiB more: var = 2 x (10 m^2 + 100 k^2) + m^2. */
    double b0 = 10 * m + 100 * k, v0 = 10 * m * m + 100 * k * k;
    double b1 = b0 + m, v1 = v0 + m * m;
    z = compare_z_memory(b0, v0, b1, v1);
    assert_true(fabs(z - m / sqrt(v0 + v1)) < 1e-9);
    assert_true(z < 0.25);
    assert_true(!compare_flagged_memory(b0, v0, b1, v1));
    /* The same 1 MiB more as 32 more samples of 32 KiB on top of 100 of 32 KiB alone:
     * z = 32 / sqrt(232) = 2.1, +24 %: not flagged; 64 more: z = 3.94, still not; 70
     * more: z = 4.26, +41 %, flagged. */
    assert_true(!compare_flagged_memory(100 * k, 100 * k * k, 132 * k, 132 * k * k));
    z = compare_z_memory(100 * k, 100 * k * k, 164 * k, 164 * k * k);
    assert_true(fabs(z - 64.0 / sqrt(264.0)) < 1e-9 && z < COMPARE_Z);
    assert_true(!compare_flagged_memory(100 * k, 100 * k * k, 164 * k, 164 * k * k));
    assert_true(compare_flagged_memory(100 * k, 100 * k * k, 170 * k, 170 * k * k));
}

/* Flagged only beyond both thresholds, as for time. */
static void memory_flags(void **state)
{
    (void)state;
    double w = 65536;
    /* 33 -> 164 samples of 64 KiB (the integration test's site): z 9.3, +397 %. */
    double z = compare_z_memory(33 * w, 33 * w * w, 164 * w, 164 * w * w);
    assert_true(fabs(z - 131.0 / sqrt(197.0)) < 1e-9 && z > 9);
    assert_true(compare_flagged_memory(33 * w, 33 * w * w, 164 * w, 164 * w * w));
    assert_true(compare_flagged_memory(164 * w, 164 * w * w, 33 * w, 33 * w * w));
    /* 100000 -> 105000 samples: z 11, 4.8 %: not flagged; -> 112000: 10.7 %, flagged. */
    assert_true(compare_z_memory(1e5 * w, 1e5 * w * w, 1.05e5 * w, 1.05e5 * w * w) > 10);
    assert_true(!compare_flagged_memory(1e5 * w, 1e5 * w * w, 1.05e5 * w, 1.05e5 * w * w));
    assert_true(compare_flagged_memory(1e5 * w, 1e5 * w * w, 1.12e5 * w, 1.12e5 * w * w));
    /* 10 -> 20 samples: +100 %, z 1.8: not. */
    assert_true(!compare_flagged_memory(10 * w, 10 * w * w, 20 * w, 20 * w * w));
    assert_true(!compare_flagged_memory(0, 0, 0, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(equal_periods),     cmocka_unit_test(one_side_empty),
        cmocka_unit_test(different_periods), cmocka_unit_test(flags),
        cmocka_unit_test(memory_z),          cmocka_unit_test(memory_weights),
        cmocka_unit_test(memory_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
