/*
 * ownthreads: the library's own threads among the process's.
 *
 * Every thread the library runs names itself OWNTHREADS_PREFIX<role> first thing
 * ("pyprof-writer", "pyprof-wall", "pyprof-control"), which is how the rest of the
 * process, and this module, tell them from the program's:
 *
 *  - procstat (preload/) leaves them out of the thread count /proc/self/stat shows
 *    through fopen, where CPython 3.12+ counts threads before warning at fork;
 *  - the writer (and the control thread of a paused process) asks now and then whether
 *    every thread of the program has ended (the last one returned from its start
 *    routine or called pthread_exit): glibc would have ended the process with exit(0),
 *    and only our threads keep it alive.  The first to see it finishes what it owns and
 *    ends the process as glibc would (ownthreads_claim_end, procexit_alone).  That
 *    happens in a child forked from a thread other than main, whose only thread is the
 *    forking one.
 *
 * A zombie thread (a main thread that called pthread_exit while others run) is not a
 * running thread of the program.  Nothing here is async-signal-safe.
 */
#ifndef PYPROF_OWNTHREADS_H
#define PYPROF_OWNTHREADS_H

#include <pthread.h>

#define OWNTHREADS_PREFIX "pyprof-"

/* [not sigsafe] Names the calling thread OWNTHREADS_PREFIX `role` (role: at most 8
 * bytes, the kernel keeps 15).  Every thread of ours calls it first: in an
 * AddressSanitizer build it also clears the stale shadow of a reused stack. */
void ownthreads_name_self(const char *role);

/* [not sigsafe] Starts a thread of ours with the C library's own pthread_create
 * (libc_next.h), every signal blocked in it: the program's signals are the program's, and
 * ours are handled on the threads they sample.  Returns 0 or pthread_create's error. */
int ownthreads_start(pthread_t *thread, void *(*start)(void *), void *arg);

/* [not sigsafe] Threads of this process that are not zombies: all of them in *all,
 * the library's in *ours.  -1 when /proc/self/task cannot be read (nothing filled). */
int ownthreads_scan(long *all, long *ours);

/* The thread count in a NUL-terminated /proc/<pid>/stat line (field 20, num_threads):
 * its value in *n, where its digits start and end in *start and *end.  0, or -1 when the
 * line does not have that shape. */
int ownthreads_stat_num_threads(char *stat, long *n, char **start, char **end);

/* [not sigsafe] 1 when the process has threads and all of them are the library's; 0 when
 * the program has a thread, or when that cannot be told.  Cheap while the process has
 * more threads than the library runs (one read of /proc/self/stat) or its main thread
 * runs (one more read); only otherwise are the threads listed. */
int ownthreads_program_gone(void);

/* [not sigsafe] From a thread of the library: 1 for the first caller once the program's
 * threads are all gone; that caller finishes what it owns and then ends the process
 * (procexit_alone, procexit.h).  0 otherwise. */
int ownthreads_claim_end(void);

#endif
