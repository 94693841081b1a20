/*
 * gilstate: which threads wait for the GIL, for wall-clock samples.  Whether a thread
 * holds the GIL is read from the interpreter (pyread.h); whether one that does not hold
 * it waits for it is seen here, where it happens.  On 3.6+ a thread waits for the GIL on
 * the GIL's own condition variables (take_gil on `cond`, drop_gil's forced switch on
 * `switch_cond`), through pthread_cond_timedwait and pthread_cond_wait: on 3.7+ both lie
 * inside the GIL's structure, whose address the wall pass tells (gilstate_watch); 3.6
 * keeps them as statics of libpython, found in its full symbol table (elfsym.h).  2.7
 * waits for its GIL, a semaphore the static `interpreter_lock` points at, in sem_wait.
 * Their GOT slots in every module but the library's (gotpatch.h) point at wrappers that,
 * for a wait on the GIL only, put the waiting thread's pthread_t in a table for as long
 * as the wait lasts; any other wait is forwarded untouched, with no store.  The wall pass
 * copies the table once a pass (gilstate_waiters).
 *
 * Not seen: a wait for the GIL's mutex (held only for a few instructions by a thread
 * taking or dropping the GIL); a wait of a subinterpreter with a GIL of its own; waits
 * on a 2.7 or 3.6 whose libpython is stripped of its symbol table (samples there say
 * PYPROF_GIL_NOT_HELD).  A table full of waiters (GILSTATE_WAITERS at once) leaves the
 * next ones unmarked.
 *
 *   gilstate_install(a, err, errlen)  [not sigsafe] the wrappers, once per process
 *                                     (window.c, when a wall-clock window starts); 0, or
 *                                     -1 with one line in err
 *   gilstate_installed()              [sigsafe] 1 once waits are seen
 *   gilstate_watch(lo)                [sigsafe] the GIL's structure starts at lo (the
 *                                     wall pass, each pass: 3.12+ find it once the main
 *                                     interpreter exists)
 *   gilstate_waiters(out, max)        [sigsafe] the pthread_t of the threads waiting now
 *   gilstate_after_fork_child()       [sigsafe] in a fork child: the parent's other
 *                                     threads' waits forgotten (a new thread may get the
 *                                     pthread_t of one of them)
 *
 * A thread cancelled inside a GIL wait (CPython never cancels one) would stay marked.
 */
#ifndef PYPROF_GILSTATE_H
#define PYPROF_GILSTATE_H

#include <stddef.h>
#include <stdint.h>

#include "pyabi.h"

#define GILSTATE_WAITERS 1024 /* threads marked waiting at once */
#define GILSTATE_SPAN                                                                          \
    256 /* bytes of the GIL's structure from its first field: both                             \
         * condition variables lie inside on 3.7-3.15 */

int gilstate_install(const pyabi *a, char *err, size_t errlen);
int gilstate_installed(void);
void gilstate_watch(uintptr_t lo);
unsigned gilstate_waiters(uintptr_t *out, unsigned max);
void gilstate_after_fork_child(void);

#endif
