/*
 * Unit tests of src/lib/sigdisp.c with real signals in this process: what the program
 * sees and sets through the interposed sigaction for a signal the library holds, under
 * each policy, and which handler a delivery reaches.  SIGUSR1, SIGUSR2 and SIGWINCH
 * stand in for the signals the library takes (their numbers do not matter to sigdisp).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "lib/libc_next.h"
#include "lib/sigdisp.h"

static volatile sig_atomic_t ours_ran, program_ran, program_info_ran, yielded;
static int program_handled; /* what sigdisp_run_program returned in our handler */

static void ours(int sig, siginfo_t *info, void *uc)
{
    ours_ran++;
    program_handled = sigdisp_run_program(sig, info, uc);
}

static void program(int sig)
{
    (void)sig;
    program_ran++;
}

static void program_info(int sig, siginfo_t *info, void *uc)
{
    (void)sig;
    (void)info;
    (void)uc;
    program_info_ran++;
}

static void on_yield(int sig)
{
    (void)sig;
    yielded++;
}

static void reset_counts(void) { ours_ran = program_ran = program_info_ran = yielded = 0; }

static struct sigaction with_handler(void (*h)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sigemptyset(&sa.sa_mask);
    return sa;
}

/* The C library's disposition right now (not what the program is told). */
static struct sigaction real_now(int sig)
{
    struct sigaction cur;
    assert_int_equal(libc_next_sigaction(sig, NULL, &cur), 0);
    return cur;
}

static void test_keep(void **state)
{
    (void)state;
    reset_counts();
    struct sigaction before = with_handler(program);
    assert_int_equal(libc_next_sigaction(SIGUSR1, &before, NULL), 0);
    assert_int_equal(sigdisp_take(SIGUSR1, ours, SA_RESTART, NULL, SIGDISP_KEEP, NULL), 0);
    assert_ptr_equal(real_now(SIGUSR1).sa_sigaction, ours);

    /* The program is told its own handler, and ours stays installed. */
    struct sigaction old;
    assert_int_equal(sigdisp_program_sigaction(SIGUSR1, NULL, &old), 1);
    assert_ptr_equal(old.sa_handler, program);
    raise(SIGUSR1);
    assert_int_equal(ours_ran, 1);
    assert_int_equal(program_ran, 1);
    assert_int_equal(program_handled, 1);

    /* A new SA_SIGINFO handler of the program: recorded, run by ours. */
    struct sigaction si;
    memset(&si, 0, sizeof si);
    si.sa_sigaction = program_info;
    si.sa_flags = SA_SIGINFO;
    assert_int_equal(sigdisp_program_sigaction(SIGUSR1, &si, &old), 1);
    assert_ptr_equal(old.sa_handler, program);
    assert_ptr_equal(real_now(SIGUSR1).sa_sigaction, ours);
    raise(SIGUSR1);
    assert_int_equal(ours_ran, 2);
    assert_int_equal(program_info_ran, 1);

    /* SIG_IGN of the program: ours still runs, and is told nothing ran. */
    struct sigaction ign = with_handler(SIG_IGN);
    assert_int_equal(sigdisp_program_sigaction(SIGUSR1, &ign, NULL), 1);
    raise(SIGUSR1);
    assert_int_equal(ours_ran, 3);
    assert_int_equal(program_handled, 0);
}

static void test_default_policy(void **state)
{
    (void)state;
    reset_counts();
    /* Not at its default action: not taken, nothing changes. */
    struct sigaction h = with_handler(program);
    assert_int_equal(libc_next_sigaction(SIGUSR2, &h, NULL), 0);
    assert_int_equal(sigdisp_take(SIGUSR2, ours, SA_RESTART, NULL, SIGDISP_DEFAULT, NULL), 1);
    assert_ptr_equal(real_now(SIGUSR2).sa_handler, program);
    assert_int_equal(sigdisp_program_sigaction(SIGUSR2, NULL, NULL), 0);
    /* The program setting SIG_DFL later puts ours in, telling it its own handler. */
    struct sigaction dfl = with_handler(SIG_DFL), old;
    assert_int_equal(sigdisp_program_sigaction(SIGUSR2, &dfl, &old), 1);
    assert_ptr_equal(old.sa_handler, program);
    assert_ptr_equal(real_now(SIGUSR2).sa_sigaction, ours);

    /* Ignored at the start (a background job), then the default: ours. */
    struct sigaction ign = with_handler(SIG_IGN);
    assert_int_equal(libc_next_sigaction(SIGHUP, &ign, NULL), 0);
    assert_int_equal(sigdisp_take(SIGHUP, ours, SA_RESTART, NULL, SIGDISP_DEFAULT, NULL), 1);
    assert_ptr_equal(real_now(SIGHUP).sa_handler, SIG_IGN);
    assert_int_equal(sigdisp_program_sigaction(SIGHUP, &dfl, &old), 1);
    assert_ptr_equal(old.sa_handler, SIG_IGN);
    assert_ptr_equal(real_now(SIGHUP).sa_sigaction, ours);
    sigdisp_reset_default(SIGHUP);

    /* At its default: ours, and the program is told SIG_DFL. */
    assert_int_equal(libc_next_sigaction(SIGUSR2, &dfl, NULL), 0);
    assert_int_equal(sigdisp_take(SIGUSR2, ours, SA_RESTART, NULL, SIGDISP_DEFAULT, NULL), 0);
    assert_ptr_equal(real_now(SIGUSR2).sa_sigaction, ours);
    assert_int_equal(sigdisp_program_sigaction(SIGUSR2, NULL, &old), 1);
    assert_ptr_equal(old.sa_handler, SIG_DFL);

    /* The program's handler replaces ours for real... */
    assert_int_equal(sigdisp_program_sigaction(SIGUSR2, &h, &old), 1);
    assert_ptr_equal(old.sa_handler, SIG_DFL);
    assert_ptr_equal(real_now(SIGUSR2).sa_handler, program);
    raise(SIGUSR2);
    assert_int_equal(program_ran, 1);
    assert_int_equal(ours_ran, 0);
    /* ...later queries are the C library's... */
    assert_int_equal(sigdisp_program_sigaction(SIGUSR2, NULL, NULL), 0);
    /* ...and SIG_DFL puts ours back, telling the program its own previous handler. */
    assert_int_equal(sigdisp_program_sigaction(SIGUSR2, &dfl, &old), 1);
    assert_ptr_equal(old.sa_handler, program);
    assert_ptr_equal(real_now(SIGUSR2).sa_sigaction, ours);
}

static void test_yield(void **state)
{
    (void)state;
    reset_counts();
    struct sigaction dfl = with_handler(SIG_DFL);
    assert_int_equal(libc_next_sigaction(SIGWINCH, &dfl, NULL), 0);
    assert_int_equal(sigdisp_take(SIGWINCH, ours, SA_RESTART, NULL, SIGDISP_YIELD, on_yield),
                     0);
    /* A query does not yield. */
    struct sigaction old;
    assert_int_equal(sigdisp_program_sigaction(SIGWINCH, NULL, &old), 1);
    assert_ptr_equal(old.sa_handler, SIG_DFL);
    assert_int_equal(yielded, 0);
    /* Any disposition of the program's wins, the holder told first. */
    struct sigaction h = with_handler(program);
    assert_int_equal(sigdisp_program_sigaction(SIGWINCH, &h, &old), 1);
    assert_int_equal(yielded, 1);
    assert_ptr_equal(real_now(SIGWINCH).sa_handler, program);
    raise(SIGWINCH);
    assert_int_equal(program_ran, 1);
    assert_int_equal(ours_ran, 0);
    /* From then on the C library answers, even SIG_DFL. */
    assert_int_equal(sigdisp_program_sigaction(SIGWINCH, &dfl, NULL), 0);
    assert_int_equal(yielded, 1);
}

static void test_untaken_and_bad(void **state)
{
    (void)state;
    assert_int_equal(sigdisp_program_sigaction(SIGALRM, NULL, NULL), 0);
    assert_int_equal(sigdisp_program_sigaction(0, NULL, NULL), 0);
    assert_int_equal(sigdisp_program_sigaction(NSIG, NULL, NULL), 0);
    assert_int_equal(sigdisp_take(0, ours, 0, NULL, SIGDISP_KEEP, NULL), -1);
    assert_int_equal(sigdisp_run_program(NSIG + 5, NULL, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keep),
        cmocka_unit_test(test_default_policy),
        cmocka_unit_test(test_yield),
        cmocka_unit_test(test_untaken_and_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
