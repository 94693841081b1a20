/*
 * Unit tests of src/lib/codemap.c: the writer's code id -> line table and CODE record
 * map.  Entries are found by id across growth; a new slot comes zeroed; a flip keeps only
 * the ids asked for, with their contents, and frees the rest; freeing empties the map.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/codemap.h"

#define N 5000 /* past several doublings of the first 1,024 slots */

static code_info *put(codemap *m, uint32_t id)
{
    code_info *ci = codemap_slot(m, id);
    assert_non_null(ci);
    assert_int_equal(ci->id, 0); /* a new slot: every field 0 */
    assert_null(ci->lt);
    ci->id = id;
    ci->first_line = (int32_t)(id * 3);
    ci->lt_len = 1;
    ci->lt = malloc(1);
    ci->lt[0] = (uint8_t)id;
    return ci;
}

static void test_find_across_growth(void **state)
{
    (void)state;
    codemap m = {0};
    assert_null(codemap_find(&m, 16));
    for (uint32_t id = 16; id < 16 + N; id++) {
        code_info *ci = put(&m, id);
        assert_int_equal(ci->first_line, id * 3);
    }
    assert_int_equal(m.n, N);
    assert_true(m.cap >= 2 * m.n);
    for (uint32_t id = 16; id < 16 + N; id++) {
        code_info *ci = codemap_find(&m, id);
        assert_non_null(ci);
        assert_int_equal(ci->first_line, id * 3);
        assert_int_equal(ci->lt[0], (uint8_t)id);
    }
    assert_null(codemap_find(&m, 16 + N));
    /* A slot asked again for a known id is that entry, not a new one. */
    assert_ptr_equal(codemap_slot(&m, 20), codemap_find(&m, 20));
    assert_int_equal(m.n, N);
    codemap_free(&m);
    assert_int_equal(m.n, 0);
    assert_null(codemap_find(&m, 20));
}

static int even(uint32_t id) { return id % 2 == 0; }

static void test_keep_after_flip(void **state)
{
    (void)state;
    codemap m = {0};
    for (uint32_t id = 16; id < 16 + N; id++)
        put(&m, id);
    codemap_keep(&m, even);
    assert_int_equal(m.n, N / 2);
    for (uint32_t id = 16; id < 16 + N; id++) {
        code_info *ci = codemap_find(&m, id);
        if (id % 2) {
            assert_null(ci);
        } else {
            assert_non_null(ci);
            assert_int_equal(ci->first_line, id * 3);
            assert_int_equal(ci->lt[0], (uint8_t)id);
        }
    }
    codemap_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_across_growth),
        cmocka_unit_test(test_keep_after_flip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
