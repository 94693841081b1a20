/*
 * Unit tests of src/lib/pyabi.c's layout logic: the table rows, and the offsets taken from
 * an interpreter's _Py_DebugOffsets (3.13+).  The tables are real: the first words of
 * _PyRuntime dumped from the running 3.13.0, 3.14.10 and 3.15.2 by
 * tests/fixtures/debug_offsets/gen.py (read from tests/fixtures/debug_offsets relative to
 * the working directory, or $DEBUG_OFFSETS_FIXTURES).  A real table must give back
 * exactly the offsets pyprof measured for its minor with offsetof(); a table edited the
 * way a patch release or another build moves things must be taken, or refused with one
 * line where pyprof cannot follow.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/pyabi.h"

#define WORDS 128

typedef struct fixture {
    int major, minor, micro;
    uint64_t w[WORDS];
} fixture;

static void load(fixture *fx, const char *version)
{
    const char *dir = getenv("DEBUG_OFFSETS_FIXTURES");
    char path[512], line[256];
    snprintf(path, sizeof path, "%s/%s.txt", dir ? dir : "tests/fixtures/debug_offsets",
             version);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s", path);
    int n = -1, words = 0;
    memset(fx, 0, sizeof *fx);
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        if (sscanf(line, "version %d.%d.%d", &fx->major, &fx->minor, &fx->micro) == 3)
            continue;
        if (sscanf(line, "words %d", &words) == 1) {
            n = 0;
            continue;
        }
        assert_true(n >= 0 && n < WORDS);
        fx->w[n++] = strtoull(line, NULL, 10);
    }
    fclose(f);
    assert_int_equal(n, WORDS);
    assert_int_equal(words, WORDS);
}

/* The row pyabi_layout gives, and the result of taking the fixture's table into it. */
static int take(const fixture *fx, pyabi *row, pyabi *out, char *err, size_t errlen)
{
    assert_int_equal(pyabi_layout(row, fx->major, fx->minor, fx->micro, err, errlen), 0);
    *out = *row;
    return pyabi_take_debug_offsets(out, fx->w, err, errlen);
}

/* The same, which must succeed. */
static void take_ok(const fixture *fx, pyabi *row, pyabi *out)
{
    char err[512];
    if (take(fx, row, out, err, sizeof err) != 0)
        fail_msg("%s", err);
}

/* Every offset the sample path and the name reader use, by name. */
/* clang-format off */
#define FIELDS(X)                                                                              \
    X(rt_initialized) X(rt_finalizing) X(rt_interp_head) X(rt_interp_main) X(rt_tss)           \
    X(gil_holder) X(is_tstate_head) X(ts_prev) X(ts_next) X(ts_interp) X(ts_thread_id)         \
    X(ts_native_tid) X(is_modules) X(ts_frame) X(fr_back) X(fr_code) X(fr_lasti)               \
    X(fr_owner) X(co_firstlineno) X(co_filename) X(co_name) X(co_qualname)                     \
    X(co_linetable) X(co_code_adaptive) X(co_firsttraceable) X(uni_ascii_size)                 \
    X(uni_compact_size) X(uni_data) X(str_length) X(str_state) X(ht_cached_keys)
/* clang-format on */
#define SAME(f) assert_int_equal(got.f, want.f);

/* A real table gives back what offsetof() measured for its minor, field by field: every
 * word index pyprof reads is the right one. */
static void check_real(const char *version)
{
    fixture fx;
    load(&fx, version);
    pyabi want, got;
    char err[512];
    int rc = take(&fx, &want, &got, err, sizeof err);
    if (rc != 0)
        fail_msg("%s: %s", version, err);
    FIELDS(SAME)
    assert_int_equal(got.co_basicsize, want.co_basicsize);
}

static void test_real_313(void **state)
{
    (void)state;
    check_real("3.13.0");
}
static void test_real_314(void **state)
{
    (void)state;
    check_real("3.14.10");
}
static void test_real_315(void **state)
{
    (void)state;
    check_real("3.15.2");
}

/* 3.14.5 moved interp->imports.modules and, with it, the GIL (the per-interpreter GC
 * state grew): offsets the table publishes are followed wherever they go. */
static void test_moved_interp_fields_taken(void **state)
{
    (void)state;
    fixture fx;
    load(&fx, "3.14.10");
    pyabi row, got;
    /* interpreter_state.imports_modules, gil_runtime_state_locked, _holder */
    assert_int_equal(fx.w[12], 7688);
    assert_int_equal(fx.w[18], 7800);
    assert_int_equal(fx.w[19], 7792);
    fx.w[12] -= 24;
    fx.w[18] -= 24;
    fx.w[19] -= 24;
    take_ok(&fx, &row, &got);
    assert_int_equal(got.is_modules, row.is_modules - 24);
    assert_int_equal(got.gil_holder, row.gil_holder - 24);
}

/* A moved frame or code field is taken too, and what is derived from it follows. */
static void test_moved_code_fields_taken(void **state)
{
    (void)state;
    fixture fx;
    load(&fx, "3.15.2");
    pyabi row, got;
    assert_int_equal(fx.w[56], 208); /* code_object.co_code_adaptive */
    fx.w[56] = 216;
    fx.w[47] = 224; /* code_object.size */
    take_ok(&fx, &row, &got);
    assert_int_equal(got.co_code_adaptive, 216);
    assert_int_equal(got.co_basicsize, 216);
    assert_int_equal(got.co_firsttraceable, 200);
}

static void expect_refused(fixture *fx, const char *words)
{
    pyabi row, got;
    char err[512] = "";
    assert_int_equal(take(fx, &row, &got, err, sizeof err), -1);
    if (!strstr(err, words) || strchr(err, '\n') || strncmp(err, "pyprof: Python ", 15) != 0)
        fail_msg("expected one line naming '%s', got '%s'", words, err);
}

static void test_free_threaded_refused(void **state)
{
    (void)state;
    fixture fx;
    load(&fx, "3.14.10");
    fx.w[2] = 1; /* free_threaded */
    expect_refused(&fx, "free-threaded");
}

static void test_no_table_refused(void **state)
{
    (void)state;
    fixture fx;
    load(&fx, "3.15.2");
    memcpy(&fx.w[0], "xdebugpx", 8);
    expect_refused(&fx, "_Py_DebugOffsets not found");
}

static void test_other_version_refused(void **state)
{
    (void)state;
    fixture fx, other;
    load(&fx, "3.14.10");
    load(&other, "3.15.2");
    fx.w[1] = other.w[1]; /* a 3.15 table behind a 3.14 version string */
    expect_refused(&fx, "say version");
}

static void test_offset_outside_structure_refused(void **state)
{
    (void)state;
    fixture fx;
    load(&fx, "3.14.10");
    assert_int_equal(fx.w[36], 74); /* interpreter_frame.owner, in a frame of 88 bytes */
    fx.w[36] = 90;
    expect_refused(&fx, "frame.owner is at 90");
}

static void test_inconsistent_gil_refused(void **state)
{
    (void)state;
    fixture fx;
    load(&fx, "3.13.0");
    assert_int_equal(fx.w[17], 7768); /* gil_runtime_state_locked */
    fx.w[17] += 16;
    expect_refused(&fx, "GIL");
}

/* 3.13's thread-state key is not published: a runtime state laid out otherwise than the
 * one it was measured in cannot be trusted to hold it there. */
static void test_313_runtime_moved_refused(void **state)
{
    (void)state;
    fixture fx;
    load(&fx, "3.13.0");
    assert_int_equal(fx.w[4], 608); /* runtime_state.finalizing */
    fx.w[4] += 8;
    fx.w[5] += 8;
    expect_refused(&fx, "runtime or strings");
}

/* 3.14+ find their thread state by the list, not the key: the same move is followed. */
static void test_314_runtime_moved_taken(void **state)
{
    (void)state;
    fixture fx;
    load(&fx, "3.14.10");
    fx.w[4] += 8;
    fx.w[5] += 8;
    pyabi row, got;
    take_ok(&fx, &row, &got);
    assert_int_equal(got.rt_initialized, row.rt_initialized + 8);
    assert_int_equal(got.rt_interp_main, row.rt_interp_main + 8);
}

/* Before 3.15 the compact string header is not published: a moved ASCII header refuses;
 * 3.15 publishes both, so it is followed there. */
static void test_string_header_moved(void **state)
{
    (void)state;
    fixture fx;
    load(&fx, "3.14.10");
    assert_int_equal(fx.w[80], 40); /* unicode_object.asciiobject_size */
    fx.w[80] = 48;
    expect_refused(&fx, "runtime or strings");

    load(&fx, "3.15.2");
    assert_int_equal(fx.w[92], 40);
    assert_int_equal(fx.w[93], 56); /* compactunicodeobject_size */
    fx.w[92] = 48;
    fx.w[93] = 64;
    pyabi row, got;
    take_ok(&fx, &row, &got);
    assert_int_equal(got.uni_ascii_size, 48);
    assert_int_equal(got.uni_compact_size, 64);
    assert_int_equal(got.uni_data, 64);
}

static void test_versions_without_table(void **state)
{
    (void)state;
    pyabi a;
    char err[512];
    static const int none[][2] = {{3, 16}, {3, 5}, {2, 6}, {4, 0}};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        assert_int_equal(pyabi_layout(&a, none[i][0], none[i][1], 0, err, sizeof err), -1);
        assert_non_null(strstr(err, "is not supported (supported: 2.7, 3.6 to 3.15)"));
    }
    static const int some[][2] = {{2, 7}, {3, 6}, {3, 13}, {3, 14}, {3, 15}};
    for (size_t i = 0; i < sizeof some / sizeof some[0]; i++)
        assert_int_equal(pyabi_layout(&a, some[i][0], some[i][1], 1, err, sizeof err), 0);
    assert_string_equal(a.version, "3.15.1");
    assert_int_equal(a.fr_code_tag, 3);
    assert_int_equal(a.rt_tss, -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_313),
        cmocka_unit_test(test_real_314),
        cmocka_unit_test(test_real_315),
        cmocka_unit_test(test_moved_interp_fields_taken),
        cmocka_unit_test(test_moved_code_fields_taken),
        cmocka_unit_test(test_free_threaded_refused),
        cmocka_unit_test(test_no_table_refused),
        cmocka_unit_test(test_other_version_refused),
        cmocka_unit_test(test_offset_outside_structure_refused),
        cmocka_unit_test(test_inconsistent_gil_refused),
        cmocka_unit_test(test_313_runtime_moved_refused),
        cmocka_unit_test(test_314_runtime_moved_taken),
        cmocka_unit_test(test_string_header_moved),
        cmocka_unit_test(test_versions_without_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
