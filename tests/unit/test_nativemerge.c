/*
 * Unit tests for the merge of a sample's Python and native stacks (src/read/nativemerge.c)
 * on constructed stacks: as many eval frames as Python runs, one more, a mismatch, a cut
 * Python stack, glue folding on and off, runs of several frames, inlined frames, and
 * C -> Python -> C -> Python nesting.  Frames are named by their function number:
 * Python functions 1xx, native ones 2xx (eval 200, interpreter glue 201-209, libc 210-219,
 * an extension module 220-229).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "read/nativemerge.h"
#include "read/symbols.h"

#define EVAL 200
#define GLUE 201  /* e.g. _PyFunction_Vectorcall */
#define GLUE2 202 /* e.g. PyDict_GetItem, a leaf in the interpreter */
#define START 203 /* e.g. Py_BytesMain, in the interpreter */
#define LIBC 210  /* __libc_start_main */
#define LIBC2 211 /* memcpy */
#define EXT 220   /* a function of an extension module */
#define EXT2 221
#define INL 222 /* inlined into EXT2 */

static profile_frame frames_pool[64];

static nm_native nat(uint32_t func)
{
    unsigned flags = 0;
    if (func == EVAL)
        flags = SYM_EVAL | SYM_INTERP | SYM_RESOLVED;
    else if (func < 210)
        flags = SYM_INTERP | SYM_RESOLVED;
    else if (func < 220)
        flags = SYM_LIBC | SYM_RESOLVED;
    else
        flags = SYM_RESOLVED;
    frames_pool[func - 200] = (profile_frame){func, 0};
    return (nm_native){&frames_pool[func - 200], 1, flags};
}

/* Merges and compares the functions, outermost first, with want[] (0-terminated). */
static void check(const nm_input *in, const uint32_t *want, int want_paired)
{
    profile_frame *out = NULL;
    size_t cap = 0;
    int paired = -1;
    long n = nativemerge(in, &out, &cap, &paired);
    assert_true(n >= 0);
    size_t nw = 0;
    while (want[nw])
        nw++;
    char got_s[512] = "", want_s[512] = "";
    for (long i = 0; i < n; i++)
        snprintf(got_s + strlen(got_s), sizeof got_s - strlen(got_s), "%u ", out[i].func);
    for (size_t i = 0; i < nw; i++)
        snprintf(want_s + strlen(want_s), sizeof want_s - strlen(want_s), "%u ", want[i]);
    assert_string_equal(got_s, want_s);
    assert_int_equal(paired, want_paired);
    free(out);
}

static const profile_frame py3[] = {{101, 1}, {102, 2}, {103, 3}};

static void test_equal_counts(void **state)
{
    (void)state;
    nm_native n[] = {nat(LIBC), nat(START), nat(EVAL), nat(GLUE), nat(EVAL),
                     nat(GLUE), nat(EVAL),  nat(EXT),  nat(LIBC2)};
    nm_input in = {py3, 3, NULL, 0, 0, n, 9, 0};
    check(&in, (uint32_t[]){101, 102, 103, EXT, LIBC2, 0}, 1);
    /* --native-glue shows every native frame, eval frames still replaced. */
    in.show_glue = 1;
    check(&in, (uint32_t[]){LIBC, START, 101, GLUE, 102, GLUE, 103, EXT, LIBC2, 0}, 1);
}

static void test_one_more_eval(void **state)
{
    (void)state;
    /* The innermost eval frame has no Python frame yet: it stays, as a native frame. */
    nm_native n[] = {nat(LIBC), nat(EVAL), nat(EVAL), nat(EVAL), nat(EVAL), nat(GLUE2)};
    nm_input in = {py3, 3, NULL, 0, 0, n, 6, 0};
    check(&in, (uint32_t[]){101, 102, 103, EVAL, GLUE2, 0}, 1);
}

static void test_innermost_interp_kept(void **state)
{
    (void)state;
    /* Time in a dict lookup shows under its Python caller; glue above it is hidden. */
    nm_native n[] = {nat(EVAL), nat(EVAL), nat(EVAL), nat(GLUE), nat(GLUE2)};
    nm_input in = {py3, 3, NULL, 0, 0, n, 5, 0};
    check(&in, (uint32_t[]){101, 102, 103, GLUE2, 0}, 1);
}

static void test_mismatch(void **state)
{
    (void)state;
    /* Two eval frames for three Python frames: the Python stack, then the native frames
     * leafward of the innermost eval frame. */
    nm_native n[] = {nat(LIBC), nat(EVAL), nat(GLUE),  nat(EVAL),
                     nat(GLUE), nat(EXT),  nat(GLUE2), nat(LIBC2)};
    nm_input in = {py3, 3, NULL, 0, 0, n, 8, 0};
    check(&in, (uint32_t[]){101, 102, 103, EXT, LIBC2, 0}, 0);
    /* Five eval frames (two more) for three: unmerged too. */
    nm_native n5[] = {nat(EVAL), nat(EVAL), nat(EVAL), nat(EVAL), nat(EVAL), nat(EXT)};
    in.nat = n5;
    in.nnat = 6;
    check(&in, (uint32_t[]){101, 102, 103, EXT, 0}, 0);
    /* No eval frame at all (the interpreter's ELF was not found): the leading process
     * start frames are hidden, the rest follows the Python stack. */
    nm_native n0[] = {nat(LIBC), nat(START), nat(EXT), nat(LIBC2)};
    in.nat = n0;
    in.nnat = 4;
    check(&in, (uint32_t[]){101, 102, 103, EXT, LIBC2, 0}, 0);
}

static void test_cut_python_stack(void **state)
{
    (void)state;
    nm_native n[] = {nat(EVAL), nat(EVAL), nat(EVAL), nat(EXT)};
    const profile_frame cut[] = {{101, 1}, {1, 40}, {103, 3}}; /* a [cut] marker */
    nm_input in = {cut, 3, NULL, 0, 1, n, 4, 0};
    check(&in, (uint32_t[]){101, 1, 103, EXT, 0}, 0);
}

static void test_runs(void **state)
{
    (void)state;
    /* 3.11+: two eval activations running 2 and 1 Python frames. */
    nm_native n[] = {nat(EVAL), nat(GLUE), nat(EXT), nat(EVAL), nat(LIBC2)};
    nm_input in = {py3, 3, (uint32_t[]){2, 1}, 2, 0, n, 5, 0};
    check(&in, (uint32_t[]){101, 102, EXT, 103, LIBC2, 0}, 1);
    /* Runs that do not add up to the frames: unmerged. */
    in.runs = (uint32_t[]){2, 2};
    check(&in, (uint32_t[]){101, 102, 103, LIBC2, 0}, 0);
}

static void test_c_python_c_python(void **state)
{
    (void)state;
    /* main (C) -> Python -> extension -> Python (callback) -> extension leaf. */
    nm_native n[] = {nat(LIBC), nat(START), nat(EVAL), nat(GLUE), nat(EXT),
                     nat(GLUE), nat(EVAL),  nat(GLUE), nat(EVAL), nat(EXT2)};
    nm_input in = {py3, 3, NULL, 0, 0, n, 10, 0};
    check(&in, (uint32_t[]){101, EXT, 102, 103, EXT2, 0}, 1);
}

static void test_inlined_frames(void **state)
{
    (void)state;
    profile_frame two[] = {{EXT2, 10}, {INL, 20}};
    nm_native n[] = {nat(EVAL), {two, 2, SYM_RESOLVED}};
    nm_input in = {py3, 1, NULL, 0, 0, n, 2, 0};
    check(&in, (uint32_t[]){101, EXT2, INL, 0}, 1);
}

static void test_no_python(void **state)
{
    (void)state;
    /* A thread in C only (no Python frames, no eval frame): the native stack, glue
     * folded. */
    nm_native n[] = {nat(LIBC), nat(EXT), nat(GLUE), nat(LIBC2)};
    nm_input in = {NULL, 0, NULL, 0, 0, n, 4, 0};
    check(&in, (uint32_t[]){LIBC, EXT, LIBC2, 0}, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_counts),
        cmocka_unit_test(test_one_more_eval),
        cmocka_unit_test(test_innermost_interp_kept),
        cmocka_unit_test(test_mismatch),
        cmocka_unit_test(test_cut_python_stack),
        cmocka_unit_test(test_runs),
        cmocka_unit_test(test_c_python_c_python),
        cmocka_unit_test(test_inlined_frames),
        cmocka_unit_test(test_no_python),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
