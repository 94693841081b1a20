/*
 * interpose: the symbols libpyprof.so defines in place of the program's libraries'
 * (interpose.c).  Their one list is preload/exports.map, which `make check-exports`
 * holds to exactly what the library exports; each is there for one of these reasons:
 *
 *   Py_Initialize*          start when Python is loaded or started late (embedders)
 *   Py_*Main                know the exit status Python's own main returns
 *   Py_Finalize*            finalize the log for embedders
 *   exit, _exit, _Exit      every exit path finishes the log
 *   exec*                   finish the log before the image is replaced
 *   sigaction, signal       keep our handlers first (the program's: lib/sigdisp.h)
 *   fopen, fopen64          /proc/self/stat without our threads (procstat.h)
 *   pthread_create          each new thread's CPU timer (lib/threadtimer.h)
 *
 * Each wrapper resolves its target lazily with dlsym(RTLD_NEXT), falling back to a
 * libpython loaded RTLD_LOCAL; each handles a missing target (LD_PRELOAD reaches every
 * program, Python or not).
 */
#ifndef PYPROF_INTERPOSE_H
#define PYPROF_INTERPOSE_H

#endif
