/*
 * Unit tests of src/lib/codetable.c, the code table and its generations, without an
 * interpreter (code "objects" are just addresses): a first lookup claims a slot and a
 * new id, the same (address, digest) finds it once published and is busy until then, a
 * reused address with another digest gets a new id, a retired slot is never found again,
 * a crowded neighbourhood gives CODETABLE_FULL and a flip request, half a table asks for
 * a flip too; a flip makes the other table active, waits for the samples still in the
 * old one, drains before clearing, keeps what the new table holds (codetable_holds) and
 * clears the request; codetable_reset and codetable_start start over.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include <pyprof/format.h>

#include "common/mix64.h"
#include "lib/codetable.h"

static void *mem;

static int setup(void **state)
{
    (void)state;
    mem = aligned_alloc(64, CODETABLE_BYTES);
    if (!mem)
        return -1;
    memset(mem, 0, CODETABLE_BYTES);
    codetable_start(mem);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(mem);
    mem = NULL;
    return 0;
}

/* Looks `code` up in generation t and, when new, publishes it; returns its id. */
static uint32_t id_of(int t, uintptr_t code, uint64_t digest)
{
    uint32_t id = 0;
    code_slot *s = NULL;
    int rc = codetable_lookup(t, code, digest, &id, &s);
    assert_true(rc == CODETABLE_FOUND || rc == CODETABLE_NEW);
    if (rc == CODETABLE_NEW)
        codetable_publish(s, id);
    return id;
}

static void test_insert_lookup(void **state)
{
    (void)state;
    int t = codetable_enter();
    assert_int_equal(t, 0);
    uint32_t id = 0, id2 = 0;
    code_slot *s = NULL, *s2 = NULL;
    assert_int_equal(codetable_lookup(t, 0x10000, 77, &id, &s), CODETABLE_NEW);
    assert_int_equal(id, PYPROF_CODE_FIRST);
    assert_non_null(s);
    /* Its CODE record is not committed yet: no id to give. */
    assert_int_equal(codetable_lookup(t, 0x10000, 77, &id2, &s2), CODETABLE_BUSY);
    codetable_publish(s, id);
    assert_int_equal(codetable_lookup(t, 0x10000, 77, &id2, &s2), CODETABLE_FOUND);
    assert_int_equal(id2, id);
    /* Another code object at the same address (the old one died): a new id. */
    assert_int_equal(codetable_lookup(t, 0x10000, 78, &id2, &s2), CODETABLE_NEW);
    assert_int_equal(id2, id + 1);
    assert_ptr_not_equal(s2, s);
    codetable_publish(s2, id2);
    assert_int_equal(id_of(t, 0x10000, 78), id2);
    assert_int_equal(id_of(t, 0x10000, 77), id);
    /* Ids keep rising across addresses. */
    assert_int_equal(id_of(t, 0x20000, 5), id + 2);
    assert_true(codetable_holds(id));
    assert_true(codetable_holds(id + 2));
    assert_false(codetable_holds(id + 3));
    assert_false(codetable_flip_wanted());
    codetable_leave(t);
}

static void test_retire(void **state)
{
    (void)state;
    int t = codetable_enter();
    uint32_t id = 0, again = 0;
    code_slot *s = NULL;
    assert_int_equal(codetable_lookup(t, 0x30000, 9, &id, &s), CODETABLE_NEW);
    codetable_retire(s);
    assert_false(codetable_holds(id));
    /* The dead slot is walked past: the code object gets a new slot and id. */
    code_slot *s2 = NULL;
    assert_int_equal(codetable_lookup(t, 0x30000, 9, &again, &s2), CODETABLE_NEW);
    assert_int_not_equal(again, id);
    assert_ptr_not_equal(s2, s);
    codetable_publish(s2, again);
    assert_int_equal(id_of(t, 0x30000, 9), again);
    codetable_leave(t);
}

/* Addresses that all hash to the same home slot. */
static unsigned colliding(uintptr_t *out, unsigned n)
{
    uint32_t home = (uint32_t)mix64(0x1000) & (CODE_TABLE_SLOTS - 1);
    unsigned found = 0;
    for (uintptr_t a = 0x1000; found < n; a += 8)
        if (((uint32_t)mix64(a) & (CODE_TABLE_SLOTS - 1)) == home)
            out[found++] = a;
    return found;
}

static void test_full_neighbourhood(void **state)
{
    (void)state;
    enum { N = 80 };
    uintptr_t addr[N];
    assert_int_equal(colliding(addr, N), N);
    int t = codetable_enter();
    unsigned placed = 0;
    int full = 0;
    for (unsigned i = 0; i < N && !full; i++) {
        uint32_t id;
        code_slot *s;
        int rc = codetable_lookup(t, addr[i], 1, &id, &s);
        if (rc == CODETABLE_FULL) {
            full = 1;
        } else {
            assert_int_equal(rc, CODETABLE_NEW);
            codetable_publish(s, id);
            placed++;
        }
    }
    assert_true(full);
    assert_int_equal(placed, 64); /* the probe limit */
    assert_true(codetable_flip_wanted());
    /* What was placed is still found. */
    assert_int_equal(id_of(t, addr[0], 1), PYPROF_CODE_FIRST);
    codetable_leave(t);
}

static void test_half_full_wants_flip(void **state)
{
    (void)state;
    int t = codetable_enter();
    for (uintptr_t i = 0; i < CODE_TABLE_SLOTS / 2; i++)
        id_of(t, 0x100000 + 64 * i, 3);
    assert_false(codetable_flip_wanted());
    id_of(t, 0x100000 + 64 * (CODE_TABLE_SLOTS / 2), 3);
    assert_true(codetable_flip_wanted());
    codetable_leave(t);
    codetable_reset();
    assert_false(codetable_flip_wanted());
}

/* What the writer's callbacks saw during a flip. */
static struct {
    int drains, rekeys;
    uint32_t old_id, new_id; /* in the old table; put in the new one during the drain */
    int old_held, new_held;  /* codetable_holds in rekey */
    int drain_saw_active;    /* codetable_enter during drain */
} F;

static void drain_cb(void *ctx)
{
    assert_ptr_equal(ctx, &F);
    F.drains++;
    /* A sample that starts now uses the new table, and may fill it. */
    int t = codetable_enter();
    F.drain_saw_active = t;
    F.new_id = id_of(t, 0x50000, 4);
    codetable_leave(t);
}

static void rekey_cb(void *ctx)
{
    assert_ptr_equal(ctx, &F);
    F.rekeys++;
    F.old_held = codetable_holds(F.old_id);
    F.new_held = codetable_holds(F.new_id);
}

static void test_flip(void **state)
{
    (void)state;
    memset(&F, 0, sizeof F);
    int t = codetable_enter();
    F.old_id = id_of(t, 0x40000, 1);
    codetable_leave(t);
    assert_int_equal(codetable_flip(drain_cb, rekey_cb, &F), 1);
    assert_int_equal(F.drains, 1);
    assert_int_equal(F.rekeys, 1);
    assert_int_equal(F.drain_saw_active, 1);
    assert_false(F.old_held); /* only in the old table: forgotten */
    assert_true(F.new_held);  /* already in the new one: kept */
    assert_false(codetable_flip_wanted());
    /* The new generation is active; the code object known only to the old one is new
     * again, under a new id. */
    t = codetable_enter();
    assert_int_equal(t, 1);
    assert_int_equal(id_of(t, 0x50000, 4), F.new_id);
    uint32_t again = id_of(t, 0x40000, 1);
    assert_true(again > F.new_id);
    codetable_leave(t);
    /* And back: generation 0 was cleared by the first flip. */
    memset(&F, 0, sizeof F);
    F.old_id = again;
    assert_int_equal(codetable_flip(drain_cb, rekey_cb, &F), 1);
    assert_int_equal(F.drain_saw_active, 0);
    assert_false(F.old_held);
    assert_true(F.new_held);
    t = codetable_enter();
    assert_int_equal(t, 0);
    assert_int_equal(id_of(t, 0x50000, 4), F.new_id);
    codetable_leave(t);
}

static _Atomic int flip_done;
static _Atomic int drained;

static void count_drain(void *ctx)
{
    (void)ctx;
    atomic_store(&drained, 1);
}

static void no_rekey(void *ctx) { (void)ctx; }

static void *flipper(void *arg)
{
    (void)arg;
    int rc = codetable_flip(count_drain, no_rekey, NULL);
    atomic_store(&flip_done, rc ? 1 : -1);
    return NULL;
}

/* A flip waits for the sample still counted in the old table before draining. */
static void test_flip_waits_for_users(void **state)
{
    (void)state;
    atomic_store(&flip_done, 0);
    atomic_store(&drained, 0);
    int t = codetable_enter();
    assert_int_equal(t, 0);
    id_of(t, 0x60000, 6);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, flipper, NULL), 0);
    struct timespec ms20 = {0, 20000000};
    nanosleep(&ms20, NULL);
    assert_int_equal(atomic_load(&drained), 0);
    assert_int_equal(atomic_load(&flip_done), 0);
    /* A sample starting now goes to the new table. */
    int t2 = codetable_enter();
    assert_int_equal(t2, 1);
    codetable_leave(t2);
    codetable_leave(t);
    pthread_join(th, NULL);
    assert_int_equal(atomic_load(&flip_done), 1);
    assert_int_equal(atomic_load(&drained), 1);
}

static void test_start_again(void **state)
{
    (void)state;
    int t = codetable_enter();
    id_of(t, 0x70000, 7);
    codetable_leave(t);
    memset(mem, 0, CODETABLE_BYTES);
    codetable_start(mem);
    t = codetable_enter();
    assert_int_equal(t, 0);
    assert_int_equal(id_of(t, 0x70000, 7), PYPROF_CODE_FIRST);
    codetable_leave(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_insert_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_neighbourhood, setup, teardown),
        cmocka_unit_test_setup_teardown(test_half_full_wants_flip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flip_waits_for_users, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_again, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
