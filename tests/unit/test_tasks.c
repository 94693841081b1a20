/*
 * Unit tests of src/read/tasks.c's pure parts, and of asynctask_insert: a task frame's
 * name is read back from "<task NAME>" only for a function of kind task; a name that
 * ends in a number folds to "*" in its place (a family of tasks started in a loop is one
 * row), one that is only a number or has none stays; the running task of a stack is its
 * innermost task frame; and inserting a chain into a ring record's stack puts it right
 * after the given frame, keeping the order of the rest and the cut's inner count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/asynctask.h"
#include "read/tasks.h"

static void assert_fold(const char *name, const char *want)
{
    char out[64];
    assert_string_equal(tasks_fold(name, strlen(name), out), want);
}

static void test_fold(void **state)
{
    (void)state;
    assert_fold("orders-12", "orders-*");
    assert_fold("Task-1", "Task-*");
    assert_fold("worker7", "worker*");
    assert_fold("boss", "boss");
    assert_fold("2024", "2024"); /* all digits: nothing left to name it by */
    assert_fold("", "");
    assert_fold("a-1-2", "a-1-*");
}

static void test_name(void **state)
{
    (void)state;
    const char *name;
    size_t len;
    profile_func task = {"<task orders-3>", "", 0, PROFILE_FUNC_TASK};
    assert_true(tasks_name(&task, &name, &len));
    assert_int_equal(len, strlen("orders-3"));
    assert_memory_equal(name, "orders-3", len);
    profile_func empty = {"<task >", "", 0, PROFILE_FUNC_TASK};
    assert_true(tasks_name(&empty, &name, &len));
    assert_int_equal(len, 0);
    /* A Python function that happens to be named so is no task. */
    profile_func py = {"<task orders-3>", "x.py", 1, PROFILE_FUNC_PYTHON};
    assert_false(tasks_name(&py, &name, &len));
}

static void test_running(void **state)
{
    (void)state;
    profile_func funcs[] = {{"main", "x.py", 1, PROFILE_FUNC_PYTHON},
                            {"<task boss>", "", 0, PROFILE_FUNC_TASK},
                            {"<task kid>", "", 0, PROFILE_FUNC_TASK}};
    /* Outermost first: main, boss, main, kid, main. */
    profile_frame frames[] = {{0, 1}, {1, -1}, {0, 2}, {2, -1}, {0, 3}};
    profile_stack stacks[] = {{0, 5, 0}, {0, 1, 0}};
    profile p;
    memset(&p, 0, sizeof p);
    p.funcs = funcs;
    p.nfuncs = 3;
    p.frames = frames;
    p.nframes = 5;
    p.stacks = stacks;
    p.nstacks = 2;
    assert_int_equal(tasks_running(&p, 0), 3);
    assert_int_equal(tasks_running(&p, 1), -1);
}

static void test_insert(void **state)
{
    (void)state;
    union {
        rrec_stack st;
        uint8_t bytes[sizeof(rrec_stack) + 16 * sizeof(rframe)];
    } u;
    memset(&u, 0, sizeof u);
    rframe *fr = rrec_frames(&u.st);
    for (unsigned i = 0; i < 5; i++)
        fr[i] = (rframe){100 + i, (int32_t)i};
    u.st.nframes = 5;
    u.st.keep_inner = 5;
    rframe chain[] = {{200, -1}, {201, 7}, {202, -1}};
    asynctask_insert(&u.st, 1, chain, 3);
    uint32_t want[] = {100, 101, 200, 201, 202, 102, 103, 104};
    assert_int_equal(u.st.nframes, 8);
    assert_int_equal(u.st.keep_inner, 8);
    for (unsigned i = 0; i < 8; i++)
        assert_int_equal(fr[i].code_id, want[i]);
    assert_int_equal(fr[3].offset, 7);
    assert_int_equal(fr[7].offset, 4);
    /* A cut stack: the inner part grows by the chain. */
    u.st.cut = 10;
    u.st.keep_inner = 4;
    asynctask_insert(&u.st, 0, chain, 1);
    assert_int_equal(u.st.nframes, 9);
    assert_int_equal(u.st.keep_inner, 5);
    assert_int_equal(fr[1].code_id, 200);
    assert_int_equal(fr[2].code_id, 101);
    /* Nothing to insert: nothing moves. */
    asynctask_insert(&u.st, 2, chain, 0);
    assert_int_equal(u.st.nframes, 9);
    assert_int_equal(fr[8].code_id, 104);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fold),
        cmocka_unit_test(test_name),
        cmocka_unit_test(test_running),
        cmocka_unit_test(test_insert),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
