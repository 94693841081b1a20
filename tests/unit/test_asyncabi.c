/*
 * Unit tests of src/lib/asyncabi.c's validation of an `.AsyncioDebug` table
 * (asyncabi_check), against the interpreter's sizes as pyabi takes them from the real
 * _Py_DebugOffsets of 3.14.10 and 3.15.2 (tests/fixtures/debug_offsets, or
 * $DEBUG_OFFSETS_FIXTURES).  The two real tables (docs/ASYNCIO.md, ".AsyncioDebug") must
 * be accepted, and each planted fault refused with one line naming what failed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/asyncabi.h"
#include "lib/pyabi.h"

#define DEBUG_WORDS 128

/* docs/ASYNCIO.md's tables, as the probe read them from the sid interpreters. */
static const asyncabi_words T314 = {168,    136,   96,  108, 109, 128, 152,
                                    225864, 10880, 936, 864, 872, 880};
static const asyncabi_words T315 = {168,    136,   96,   108,  109,  128, 152,
                                    226240, 10856, 1104, 1024, 1032, 1048};

/* The interpreter's sizes, by pyabi from the real _Py_DebugOffsets of `version`. */
static void sizes(const char *version, uint64_t *interp, uint64_t *tstate)
{
    const char *dir = getenv("DEBUG_OFFSETS_FIXTURES");
    char path[512], line[256], err[512];
    snprintf(path, sizeof path, "%s/%s.txt", dir ? dir : "tests/fixtures/debug_offsets",
             version);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s", path);
    static uint64_t w[DEBUG_WORDS];
    int major = 0, minor = 0, micro = 0, n = -1;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || sscanf(line, "version %d.%d.%d", &major, &minor, &micro) == 3)
            continue;
        if (!strncmp(line, "words ", 6)) {
            n = 0;
            continue;
        }
        assert_true(n >= 0 && n < DEBUG_WORDS);
        w[n++] = strtoull(line, NULL, 10);
    }
    fclose(f);
    assert_int_equal(n, DEBUG_WORDS);
    pyabi a;
    assert_int_equal(pyabi_layout(&a, major, minor, micro, err, sizeof err), 0);
    if (pyabi_take_debug_offsets(&a, w, err, sizeof err) != 0)
        fail_msg("%s: %s", version, err);
    *interp = a.is_size;
    *tstate = a.ts_size;
}

static void ok(const asyncabi_words *t, const char *version)
{
    uint64_t is, ts;
    char err[256] = "";
    sizes(version, &is, &ts);
    if (asyncabi_check(t, is, ts, err, sizeof err) != 0)
        fail_msg("%s refused: %s", version, err);
}

/* `t` refused against `version`'s sizes, with a line that contains `says`. */
static void refused(const asyncabi_words *t, const char *version, const char *says)
{
    uint64_t is, ts;
    char err[256] = "";
    sizes(version, &is, &ts);
    assert_int_equal(asyncabi_check(t, is, ts, err, sizeof err), -1);
    assert_true(err[0] && !strchr(err, '\n'));
    if (!strstr(err, says))
        fail_msg("%s: expected a line naming %s, got: %s", version, says, err);
}

static void test_sizes_from_debug_offsets(void **state)
{
    (void)state;
    uint64_t is, ts;
    sizes("3.14.10", &is, &ts);
    assert_int_equal(is, 225864);
    assert_int_equal(ts, 832);
    sizes("3.15.2", &is, &ts);
    assert_int_equal(is, 226240);
    assert_int_equal(ts, 888);
}

static void test_real_tables_accepted(void **state)
{
    (void)state;
    ok(&T314, "3.14.10");
    ok(&T315, "3.15.2");
}

/* A table checked against the other minor's interpreter: its interpreter size differs. */
static void test_other_minor_refused(void **state)
{
    (void)state;
    refused(&T314, "3.15.2", "interpreter state is 225864");
    refused(&T315, "3.14.10", "interpreter state is 226240");
}

static void test_task_field_past_size(void **state)
{
    (void)state;
    asyncabi_words t = T314;
    t.task_coro = 168; /* + 8 past 168 */
    refused(&t, "3.14.10", "task_coro at 168");
    t = T315;
    t.task_node = 160; /* + 16 past 168 */
    refused(&t, "3.15.2", "task_node at 160");
    t = T314;
    t.task_is_task = 168; /* a char at the very end is past it */
    refused(&t, "3.14.10", "task_is_task");
    t = T314;
    t.task_name = UINT64_MAX - 2; /* no wrap-around */
    refused(&t, "3.14.10", "task_name");
}

static void test_task_field_in_header(void **state)
{
    (void)state;
    asyncabi_words t = T314;
    t.task_name = 8;
    refused(&t, "3.14.10", "task_name at 8 is inside the object header");
}

static void test_task_size_insane(void **state)
{
    (void)state;
    asyncabi_words t = T314;
    t.task_size = 0;
    refused(&t, "3.14.10", "task of 0 bytes");
    t.task_size = 1 << 20;
    refused(&t, "3.14.10", "task of 1048576 bytes");
}

static void test_interp_size_wrong(void **state)
{
    (void)state;
    asyncabi_words t = T314;
    t.interp_size += 8;
    refused(&t, "3.14.10", "by _Py_DebugOffsets");
}

static void test_interp_head_past_size(void **state)
{
    (void)state;
    asyncabi_words t = T315;
    t.interp_tasks_head = t.interp_size - 8;
    refused(&t, "3.15.2", "interp asyncio_tasks_head");
}

static void test_tstate_smaller_than_public(void **state)
{
    (void)state;
    asyncabi_words t = T314;
    t.tstate_size = 800; /* PyThreadState is 832 */
    refused(&t, "3.14.10", "smaller than the public one");
}

static void test_thread_field_inside_public_tstate(void **state)
{
    (void)state;
    asyncabi_words t = T314;
    t.running_task = 824; /* before PyThreadState's end (832) */
    refused(&t, "3.14.10", "asyncio_running_task at 824 is inside the public thread state");
    t = T315;
    t.running_loop = 0;
    refused(&t, "3.15.2", "asyncio_running_loop at 0");
}

static void test_thread_field_past_size(void **state)
{
    (void)state;
    asyncabi_words t = T315;
    t.tstate_tasks_head = 1096; /* + 16 past 1104 */
    refused(&t, "3.15.2", "tstate asyncio_tasks_head at 1096");
    t = T314;
    t.running_task = 936;
    refused(&t, "3.14.10", "asyncio_running_task at 936 + 8");
}

/* No interpreter sizes (before 3.13, or not taken): nothing to check against. */
static void test_no_sizes_refused(void **state)
{
    (void)state;
    char err[256] = "";
    assert_int_equal(asyncabi_check(&T314, 0, 0, err, sizeof err), -1);
    assert_true(err[0] != 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_from_debug_offsets),
        cmocka_unit_test(test_real_tables_accepted),
        cmocka_unit_test(test_other_minor_refused),
        cmocka_unit_test(test_task_field_past_size),
        cmocka_unit_test(test_task_field_in_header),
        cmocka_unit_test(test_task_size_insane),
        cmocka_unit_test(test_interp_size_wrong),
        cmocka_unit_test(test_interp_head_past_size),
        cmocka_unit_test(test_tstate_smaller_than_public),
        cmocka_unit_test(test_thread_field_inside_public_tstate),
        cmocka_unit_test(test_thread_field_past_size),
        cmocka_unit_test(test_no_sizes_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
