/*
 * sigdisp: the signals the library holds, and the program's own disposition of each, in
 * one table.  The library installs its handlers through sigdisp_take; from then on the
 * program's sigaction calls for that signal come here (sigdisp_program_sigaction, from
 * the interposed sigaction), so the program sees and sets its own disposition as if the
 * library were not there, and the library's handlers pass whatever is not theirs to it
 * (sigdisp_run_program).
 *
 * What a program's sigaction does to a held signal is the holder's policy:
 *
 *   SIGDISP_KEEP      ours stays installed; the program's disposition is recorded and
 *                     run by our handler for what is not ours (faults outside a guarded
 *                     read, traps that are not our timer's, the toggle signal)
 *   SIGDISP_DEFAULT   ours only while the program leaves the signal at its default
 *                     action (the terminating signals): a handler or SIG_IGN of the
 *                     program replaces ours, SIG_DFL puts ours back
 *   SIGDISP_YIELD     the program's first disposition replaces ours for good, and the
 *                     holder is told first (SIGPROF as the timer's signal)
 */
#ifndef PYPROF_SIGDISP_H
#define PYPROF_SIGDISP_H

#include <signal.h>

enum sigdisp_policy { SIGDISP_KEEP = 1, SIGDISP_DEFAULT, SIGDISP_YIELD };

typedef void (*sigdisp_handler)(int sig, siginfo_t *info, void *uc);

/* [not sigsafe] Installs `fn` for `sig` (SA_SIGINFO | `flags`, blocking `mask` too; NULL
 * blocks nothing more) and records the disposition it replaces as the program's.  For
 * SIGDISP_DEFAULT, only when that disposition is the default action: when not, it
 * returns 1 and the program's disposition stays, as if the program had just set it
 * (its SIG_DFL later installs `fn`).  `on_yield` (SIGDISP_YIELD only, may be NULL) runs
 * before the program's disposition replaces ours.  Taking a signal held already
 * reinstalls `fn` and keeps the program's record.  Returns 0, 1, or -1 with errno. */
int sigdisp_take(int sig, sigdisp_handler fn, int flags, const sigset_t *mask,
                 enum sigdisp_policy policy, void (*on_yield)(int sig));

/* [not sigsafe] The program's sigaction(sig, act, old) for a signal the library holds
 * or held: answered from the table by the signal's policy.  Returns 1 when answered, 0
 * when the call is the C library's to make (a signal never taken). */
int sigdisp_program_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* [sigsafe] Runs the program's disposition of `sig` the way the kernel would have
 * called it.  Returns 1 when a handler ran, 0 for SIG_DFL and SIG_IGN (what the default
 * means is the caller's to decide). */
int sigdisp_run_program(int sig, siginfo_t *info, void *uc);

/* [sigsafe] Gives `sig` back to its default action for real (the next delivery takes
 * it), for a handler that ends the process as the kernel would have. */
void sigdisp_reset_default(int sig);

#endif
