/*
 * procexit: how the process ends, as the library learns it -- the exit status the
 * program is heading for, noted by the hooks that learn it (preload/interpose.c: exit()'s
 * argument, Py_RunMain's return value) and read where the log is finished
 * (preload/entry.c); and the end of a process whose own threads are all gone
 * (ownthreads_claim_end), which window_end_if_alone carries out (window.c: the cron or,
 * while paused, the control thread).  Below window.c, which forgets the status when a
 * window starts.
 *
 * Interface:
 *   procexit_note_status(status)    [sigsafe] the status the program is heading for
 *   procexit_noted_status(&status)  [sigsafe] 1 and the status when one was noted (and
 *                                   not forgotten since), else 0
 *   procexit_forget_status()        [sigsafe] a new window, or a fork child: none noted
 *   procexit_alone()                [not sigsafe] only the library's threads are left:
 *                                   the process ends as glibc ends it after its last
 *                                   thread, exit(0), with the status noted as the
 *                                   interposed exit notes it, through the C library's
 *                                   exit (libc_next.h), whose hooks finish the log.
 *                                   Does not return.
 */
#ifndef PYPROF_PROCEXIT_H
#define PYPROF_PROCEXIT_H

void procexit_note_status(int status);
int procexit_noted_status(int *status);
void procexit_forget_status(void);
__attribute__((noreturn)) void procexit_alone(void);

#endif
