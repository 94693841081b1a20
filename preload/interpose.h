/*
 * interpose: the symbols libpyprof.so defines in place of the program's libraries', in
 * one list (interpose.c), and the way to reach the real ones.  Each wrapper resolves its
 * target lazily with dlsym(RTLD_NEXT), falling back to a libpython loaded RTLD_LOCAL;
 * each handles a missing target (LD_PRELOAD reaches every program, Python or not).
 *
 *   Py_Initialize, Py_InitializeEx, Py_InitializeFromConfig   start when Python starts late
 *   Py_Main, Py_BytesMain, Py_RunMain, _Py_UnixMain           know the exit status
 *   Py_FinalizeEx, Py_Finalize                                 finalize for embedders
 *   exit, _exit, _Exit                                         every exit path
 *   sigaction, signal                                          keep our handlers first
 *   fopen, fopen64                /proc/self/stat without our threads (procstat.h)
 *   pthread_create                each new thread's CPU timer (threadtimer.h)
 */
#ifndef PYPROF_INTERPOSE_H
#define PYPROF_INTERPOSE_H

#include <pthread.h>
#include <signal.h>

/* [not sigsafe the first time: it resolves with dlsym] The C library's sigaction. */
int interpose_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* [sigsafe] Runs the program's disposition `a` for a signal that is not ours, the way
 * the kernel would have called it.  Returns 1 when a handler ran, 0 for SIG_DFL and
 * SIG_IGN (what "default" means is the caller's to decide). */
int interpose_run_program_handler(const struct sigaction *a, int sig, siginfo_t *info,
                                  void *uc);

/* [not sigsafe] For a signal whose real disposition stays ours: records the program's
 * `act` (when not NULL) in `*shadow` and reports the previous one in `old`, as sigaction
 * would. */
void interpose_shadow_sigaction(struct sigaction *shadow, const struct sigaction *act,
                                struct sigaction *old);

/* [not sigsafe] The C library's pthread_create: the library's own threads are started
 * with it, so they get no CPU timer of ours. */
int interpose_real_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                                  void *(*start)(void *), void *arg);

/* Resolves the real symbols that must be known before any wrapper runs concurrently
 * (called from the constructor). */
void interpose_init(void);

#endif
