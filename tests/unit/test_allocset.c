/*
 * Unit tests for the sampled-address set (src/lib/allocset.c): membership against a
 * plain model through inserts, removes and sweeps; addresses that share a home slot; a
 * full neighbourhood refused; and four threads inserting and removing their own
 * addresses at once, with nothing lost or found twice.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <pthread.h>

#include "lib/allocset.h"

static int setup(void **state)
{
    (void)state;
    if (allocset_init() < 0)
        return -1;
    allocset_clear();
    return 0;
}

/* Addresses as allocators give them: 16-byte aligned, spread. */
static uintptr_t addr_of(uint64_t i) { return (uintptr_t)0x7f0000000000ull + i * 48; }

static void test_model(void **state)
{
    (void)state;
    enum { N = 20000 };
    static unsigned char in[N];
    uint64_t x = 88172645463325252ull, live = 0;
    for (int step = 0; step < 200000; step++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t i = x % N;
        if (in[i]) {
            assert_int_equal(allocset_remove(addr_of(i)), 1);
            in[i] = 0;
            live--;
        } else {
            assert_int_equal(allocset_remove(addr_of(i)), 0);
            if (allocset_insert(addr_of(i)) == 0) {
                in[i] = 1;
                live++;
            }
        }
        if (step % 5000 == 0)
            allocset_sweep();
        assert_true(allocset_live() == live);
    }
    for (uint64_t i = 0; i < N; i++)
        assert_int_equal(allocset_remove(addr_of(i)), in[i]);
    assert_true(allocset_live() == 0);
    /* Every deleted mark can go once the table is empty. */
    allocset_sweep();
    for (uint64_t i = 0; i < N; i++)
        assert_int_equal(allocset_remove(addr_of(i)), 0);
}

static void test_null_and_marks(void **state)
{
    (void)state;
    assert_int_equal(allocset_insert(0), -1);
    assert_int_equal(allocset_insert(1), -1);
    assert_int_equal(allocset_remove(0), 0);
    assert_int_equal(allocset_remove(1), 0);
}

/* More addresses than the probe window at one home: the set refuses the rest instead of
 * searching further, and still finds every one it took. */
static void test_crowded_home(void **state)
{
    (void)state;
    /* Addresses whose home is slot 7, found by trying (the hash is allocset.c's). */
    uintptr_t got[ALLOCSET_PROBES + 8];
    unsigned n = 0;
    for (uint64_t a = 16; n < ALLOCSET_PROBES + 8; a += 16)
        if ((uint32_t)(((uint64_t)a * 0x9e3779b97f4a7c15ull) >> (64 - ALLOCSET_LOG2)) == 7)
            got[n++] = (uintptr_t)a;
    unsigned taken = 0;
    for (unsigned i = 0; i < n; i++)
        taken += allocset_insert(got[i]) == 0;
    assert_true(taken == ALLOCSET_PROBES);
    for (unsigned i = 0; i < ALLOCSET_PROBES; i++)
        assert_int_equal(allocset_remove(got[i]), 1);
    allocset_sweep();
    assert_true(allocset_live() == 0);
}

#define THREADS 4
#define PER 200000

static void *churn(void *arg)
{
    uint64_t base = (uint64_t)(uintptr_t)arg * PER;
    uint64_t lost = 0;
    for (uint64_t i = 0; i < PER; i++) {
        uintptr_t a = addr_of(base + i);
        if (allocset_insert(a) < 0)
            continue;
        if (allocset_remove(a) != 1)
            lost++;
        if (allocset_remove(a) != 0)
            lost++;
    }
    return (void *)(uintptr_t)lost;
}

static void *sweeper(void *arg)
{
    _Atomic int *stop = arg;
    while (!*stop)
        allocset_sweep();
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    pthread_t t[THREADS], s;
    _Atomic int stop = 0;
    pthread_create(&s, NULL, sweeper, (void *)&stop);
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, churn, (void *)i);
    uint64_t lost = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        lost += (uint64_t)(uintptr_t)r;
    }
    stop = 1;
    pthread_join(s, NULL);
    assert_true(lost == 0);
    assert_true(allocset_live() == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_model, setup),
        cmocka_unit_test_setup(test_null_and_marks, setup),
        cmocka_unit_test_setup(test_crowded_home, setup),
        cmocka_unit_test_setup(test_threads, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
