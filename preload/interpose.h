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
 *   sigaction, signal             keep our handlers first (the program's: lib/sigdisp.h)
 *   fopen, fopen64                /proc/self/stat without our threads (procstat.h)
 *   pthread_create                each new thread's CPU timer (threadtimer.h)
 */
#ifndef PYPROF_INTERPOSE_H
#define PYPROF_INTERPOSE_H

/* Resolves the C library's sigaction and pthread_create (lib/libc_next.h) before any
 * wrapper can run concurrently (called from the constructor). */
void interpose_init(void);

#endif
