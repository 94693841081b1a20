/*
 * Unit tests for the writer's map from a block's address to its allocation event's
 * ordinal (src/lib/blockmap.c): put and take, an address put again, address 0, a long
 * pseudo-random run against a plain model with addresses picked to share home slots (and
 * to wrap around the table's end) so that removals shift long runs back, the table
 * refusing new addresses at half full, and a freed map used again.  After each step the
 * table itself is checked: every entry reachable from its home without crossing an empty
 * slot, none twice, n of them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/mix64.h"
#include "lib/blockmap.h"

#define CAP ((size_t)1 << BLOCKMAP_LOG2)
#define MASK (CAP - 1)

/* The slot an address's probe starts at, as blockmap.c computes it. */
static size_t home_of(uint64_t addr) { return (size_t)mix64(addr) & MASK; }

static int wrapped; /* check_table saw an entry past the table's end from its home */

/* The table as linear probing with backward-shift removal leaves it.  Returns the
 * longest probe an entry needs (slots past its home). */
static size_t check_table(const blockmap *m)
{
    if (!m->slots) {
        assert_int_equal(m->n, 0);
        return 0;
    }
    size_t used = 0, longest = 0;
    for (size_t i = 0; i < CAP; i++) {
        uint64_t a = m->slots[i].addr;
        if (!a)
            continue;
        used++;
        size_t d = 0;
        for (size_t j = home_of(a); j != i; j = (j + 1) & MASK, d++) {
            assert_true(m->slots[j].addr != 0);
            assert_true(m->slots[j].addr != a);
        }
        if (d > longest)
            longest = d;
        if (home_of(a) > i)
            wrapped = 1;
    }
    assert_int_equal(used, m->n);
    return longest;
}

static void test_basics(void **state)
{
    (void)state;
    blockmap m = {0};
    uint64_t ord = 12345;
    /* Empty, before anything is mapped. */
    assert_int_equal(blockmap_take(&m, 0x1000, &ord), 0);
    assert_int_equal(ord, 12345);
    assert_int_equal(blockmap_put(&m, 0x1000, 7), 0);
    assert_int_equal(blockmap_put(&m, 0x2000, 0), 0); /* ordinal 0 is an ordinal */
    assert_int_equal(blockmap_put(&m, UINT64_MAX, 9), 0);
    assert_int_equal(m.n, 3);
    check_table(&m);
    /* An address not in the map, the map not empty. */
    assert_int_equal(blockmap_take(&m, 0x3000, &ord), 0);
    assert_int_equal(ord, 12345);
    assert_int_equal(m.n, 3);
    assert_int_equal(blockmap_take(&m, 0x1000, &ord), 1);
    assert_int_equal(ord, 7);
    assert_int_equal(m.n, 2);
    /* Taken: gone. */
    ord = 12345;
    assert_int_equal(blockmap_take(&m, 0x1000, &ord), 0);
    assert_int_equal(ord, 12345);
    assert_int_equal(blockmap_take(&m, 0x2000, &ord), 1);
    assert_int_equal(ord, 0);
    assert_int_equal(blockmap_take(&m, UINT64_MAX, &ord), 1);
    assert_int_equal(ord, 9);
    assert_int_equal(m.n, 0);
    check_table(&m);
    /* Empty again, the table still mapped. */
    assert_int_equal(blockmap_take(&m, 0x2000, &ord), 0);
    assert_int_equal(blockmap_put(&m, 0x2000, 11), 0);
    assert_int_equal(blockmap_take(&m, 0x2000, &ord), 1);
    assert_int_equal(ord, 11);
    blockmap_free(&m);
}

/* An address put again (its first block's free was not seen) gets the new ordinal and
 * is in the map once. */
static void test_put_again(void **state)
{
    (void)state;
    blockmap m = {0};
    uint64_t ord;
    assert_int_equal(blockmap_put(&m, 0x5000, 1), 0);
    assert_int_equal(blockmap_put(&m, 0x6000, 2), 0);
    assert_int_equal(blockmap_put(&m, 0x5000, 3), 0);
    assert_int_equal(m.n, 2);
    check_table(&m);
    assert_int_equal(blockmap_take(&m, 0x5000, &ord), 1);
    assert_int_equal(ord, 3);
    assert_int_equal(blockmap_take(&m, 0x5000, &ord), 0);
    assert_int_equal(blockmap_take(&m, 0x6000, &ord), 1);
    assert_int_equal(ord, 2);
    assert_int_equal(m.n, 0);
    blockmap_free(&m);
}

/* No block lives at address 0: 0 marks an empty slot, so it is never put or found. */
static void test_address_zero(void **state)
{
    (void)state;
    blockmap m = {0};
    uint64_t ord = 77;
    assert_int_equal(blockmap_put(&m, 0, 1), -1);
    assert_int_equal(m.n, 0);
    assert_int_equal(blockmap_take(&m, 0, &ord), 0);
    assert_int_equal(blockmap_put(&m, 0x1000, 1), 0);
    assert_int_equal(blockmap_put(&m, 0, 2), -1);
    assert_int_equal(m.n, 1);
    assert_int_equal(blockmap_take(&m, 0, &ord), 0);
    assert_int_equal(ord, 77);
    check_table(&m);
    assert_int_equal(blockmap_take(&m, 0x1000, &ord), 1);
    assert_int_equal(ord, 1);
    blockmap_free(&m);
}

/* xorshift64: a fixed sequence. */
static uint64_t rng_state;
static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

#define CLUSTER 160 /* addresses per crowded window of home slots */
#define NPOOL (4 * CLUSTER + 1024)

static uint64_t pool[NPOOL];

/* Fills pool[at..at+n) with page-aligned addresses (from `from` on) whose homes fall in
 * the `width` slots from `first` (mod CAP); returns at + n. */
static size_t crowd(size_t at, size_t n, uint64_t *from, size_t first, size_t width)
{
    while (n) {
        uint64_t a = *from;
        *from += 4096;
        if (((home_of(a) - first) & MASK) < width) {
            pool[at++] = a;
            n--;
        }
    }
    return at;
}

/* Many thousands of puts and takes against a model.  Half the addresses crowd into a
 * few dozen home slots (one window across the table's end), so the runs grow to
 * hundreds of slots and every take shifts some of them back; the others are pages and
 * a narrow range of small blocks, as allocators give them. */
static void test_random(void **state)
{
    (void)state;
    size_t n = 0;
    uint64_t from = 4096;
    n = crowd(n, 2 * CLUSTER, &from, 1000, 40);
    n = crowd(n, 2 * CLUSTER, &from, CAP - 20, 40);
    for (size_t i = 0; i < 512; i++)
        pool[n++] = 0x7e8000000000ull + i * 4096;
    for (size_t i = 0; i < 512; i++)
        pool[n++] = 0x7f0000001000ull + i * 16;
    assert_int_equal(n, NPOOL);
    /* No address twice: a model slot per address. */
    for (size_t i = 0; i < NPOOL; i++)
        for (size_t j = 0; j < i; j++)
            assert_true(pool[i] != pool[j]);

    static uint64_t want[NPOOL]; /* ordinal + 1, 0 = absent */
    memset(want, 0, sizeof want);
    size_t live = 0, longest = 0;
    uint64_t next_ord = 0;
    blockmap m = {0};
    rng_state = 0x9e3779b97f4a7c15ull;
    for (int step = 0; step < 200000; step++) {
        uint64_t r = rnd();
        /* Crowded addresses three times in four. */
        size_t i = (r & 3) ? (size_t)(r >> 8) % (4 * CLUSTER) : (size_t)(r >> 8) % NPOOL;
        /* More puts than takes in the first half, fewer in the second. */
        int put = (int)((r >> 2) & 3) < (step < 100000 ? 3 : 1);
        if (put) {
            assert_int_equal(blockmap_put(&m, pool[i], next_ord), 0);
            if (!want[i])
                live++;
            want[i] = ++next_ord;
        } else {
            uint64_t ord = UINT64_MAX;
            int got = blockmap_take(&m, pool[i], &ord);
            assert_int_equal(got, want[i] != 0);
            if (got) {
                assert_int_equal(ord, want[i] - 1);
                want[i] = 0;
                live--;
            } else {
                assert_int_equal(ord, UINT64_MAX);
            }
        }
        assert_int_equal(m.n, live);
        if (step % 2000 == 0) {
            size_t d = check_table(&m);
            if (d > longest)
                longest = d;
        }
    }
    check_table(&m);
    /* The crowding worked: some entries sat a hundred slots past their home, some across
     * the table's end. */
    assert_true(longest >= 100);
    assert_true(wrapped);
    /* Everything still in the model is in the map, with its ordinal. */
    for (size_t i = 0; i < NPOOL; i++) {
        uint64_t ord = UINT64_MAX;
        assert_int_equal(blockmap_take(&m, pool[i], &ord), want[i] != 0);
        if (want[i])
            assert_int_equal(ord, want[i] - 1);
    }
    assert_int_equal(m.n, 0);
    for (size_t i = 0; i < CAP; i++)
        assert_int_equal(m.slots[i].addr, 0);
    blockmap_free(&m);
}

/* Half full, the map refuses new addresses (the writer names those blocks by address)
 * but still takes a new ordinal for one it holds, and everything in it stays found. */
static void test_half_full(void **state)
{
    (void)state;
    blockmap m = {0};
    uint64_t ord;
    for (uint64_t i = 0; i < CAP / 2; i++)
        assert_int_equal(blockmap_put(&m, (i + 1) * 4096, i), 0);
    assert_int_equal(m.n, CAP / 2);
    assert_int_equal(blockmap_put(&m, (CAP / 2 + 1) * 4096, 1), -1);
    assert_int_equal(blockmap_put(&m, 0x7f0000000010ull, 1), -1);
    assert_int_equal(m.n, CAP / 2);
    assert_int_equal(blockmap_take(&m, (CAP / 2 + 1) * 4096, &ord), 0);
    assert_int_equal(blockmap_put(&m, 4096, 999999), 0);
    assert_int_equal(m.n, CAP / 2);
    check_table(&m);
    /* One taken, one more fits, and no more. */
    assert_int_equal(blockmap_take(&m, 8192, &ord), 1);
    assert_int_equal(ord, 1);
    assert_int_equal(blockmap_put(&m, 0x7f0000000010ull, 5), 0);
    assert_int_equal(blockmap_put(&m, 8192, 6), -1);
    check_table(&m);
    assert_int_equal(blockmap_take(&m, 0x7f0000000010ull, &ord), 1);
    assert_int_equal(ord, 5);
    for (uint64_t i = 0; i < CAP / 2; i++) {
        int got = blockmap_take(&m, (i + 1) * 4096, &ord);
        if (i == 1) {
            assert_int_equal(got, 0);
            continue;
        }
        assert_int_equal(got, 1);
        assert_int_equal(ord, i ? i : 999999);
    }
    assert_int_equal(m.n, 0);
    blockmap_free(&m);
}

/* blockmap_free forgets everything and leaves a map that works again, as does a map
 * whose table could not be mapped. */
static void test_free_reuse(void **state)
{
    (void)state;
    blockmap m = {0};
    uint64_t ord;
    blockmap_free(&m); /* a zeroed map: nothing to unmap */
    for (uint64_t i = 1; i <= 1000; i++)
        assert_int_equal(blockmap_put(&m, i * 64, i), 0);
    blockmap_free(&m);
    assert_null(m.slots);
    assert_int_equal(m.n, 0);
    assert_int_equal(blockmap_take(&m, 64, &ord), 0);
    assert_int_equal(blockmap_put(&m, 128, 42), 0);
    assert_int_equal(m.n, 1);
    assert_int_equal(blockmap_take(&m, 64, &ord), 0);
    assert_int_equal(blockmap_take(&m, 128, &ord), 1);
    assert_int_equal(ord, 42);
    check_table(&m);
    blockmap_free(&m);

    blockmap f = {.failed = 1};
    assert_int_equal(blockmap_put(&f, 128, 1), -1);
    assert_null(f.slots);
    blockmap_free(&f);
    assert_int_equal(f.failed, 0);
    assert_int_equal(blockmap_put(&f, 128, 1), 0);
    assert_int_equal(blockmap_take(&f, 128, &ord), 1);
    assert_int_equal(ord, 1);
    blockmap_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basics),       cmocka_unit_test(test_put_again),
        cmocka_unit_test(test_address_zero), cmocka_unit_test(test_random),
        cmocka_unit_test(test_half_full),    cmocka_unit_test(test_free_reuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
