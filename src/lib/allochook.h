/*
 * allochook: where allocations are seen.  With allocation sampling on (PYPROF_ALLOC),
 * two kinds of hooks feed allocsample.h:
 *   * CPython's object and memory domains (PyObject_Malloc, which serves small objects
 *     from pymalloc's pools without calling malloc, and PyMem_Malloc), wrapped with
 *     PyMem_SetAllocator (3.6 and later; 2.7 has no such call), as soon as profiling
 *     starts, so that a short program is seen from its first line, and again where the
 *     interpreter's start replaced them (3.6 resets its allocators in Py_Main, every
 *     version installs PYTHONMALLOC's: the malloc hooks check until the interpreter is
 *     initialized); with pymalloc's arena allocator wrapped too, so that a request
 *     pymalloc serves from its pools is forwarded without the guard, and the sampled
 *     ones served by the raw domain, so that pymalloc's free needs no wrapper;
 *   * the C library's malloc family and anonymous mmap/munmap, through the GOT slots of
 *     every loaded module but the library itself (gotpatch.h), and of every module
 *     loaded later (allochook_after_dlopen).
 * When small Python allocations are many, the domains are wrapped only inside short
 * allocation windows at random times (allocwin.h; allochook.c, "the allocation windows").
 * Nothing is hooked when sampling is off, so a process without PYPROF_ALLOC runs the
 * allocator it always ran.  Nested calls (pymalloc asking the raw domain, which calls
 * malloc) are counted once, by the outermost hook, through a thread-local guard.  Once
 * installed, the hooks stay for the life of the process; between windows they forward
 * and sample nothing the log would keep.
 *
 * Interface:
 *   allochook_install(interval, windows, err, errlen)  [not sigsafe] the hooks, once
 *                       per process, when profiling first starts (window.c); windows:
 *                       PYPROF_ALLOC_WINDOWS (config.h).  0, or -1 with one line in err
 *                       (a part that could not be hooked is said in err and the rest
 *                       works: check err[0])
 *   allochook_recheck()     [not sigsafe] wraps the Python domains again where the
 *                       interpreter's start replaced them (the writer, at its first log);
 *                       the allocation windows may start after it
 *   allochook_installed()   [sigsafe] 1 once the hooks are in place
 *   allochook_pause()       [not sigsafe] profiling paused (a toggle; never at an exit,
 *                       where the interpreter may be gone): an allocation window that is
 *                       open closes, so that the domains run the interpreter's own
 *                       allocator until profiling starts again
 *   allochook_after_dlopen()  [not sigsafe] hooks the modules the program's dlopen just
 *                       loaded (the interposed dlopen, once it returned)
 *   allochook_tick(now)     [not sigsafe] the cron's call, every round (window.c; `now`
 *                       on the monotonic clock): once a second, the sampled-address set's
 *                       upkeep (allocsample_sweep), hooks for the modules loaded past
 *                       the interposed dlopen (not in a fork child until its loader is
 *                       seen to work); every quarter of a second, the windows' duty from
 *                       the allocation rate; every round, the allocation windows' switch
 *                       that is due.  Returns
 *                       how soon (ns) the next switch is due, 0 when none is
 *   allochook_python_hooked() [not sigsafe] 1 when the Python domains are wrapped
 *   allochook_after_fork_child()  [not sigsafe] the child's locks, and the parent's
 *                       sampled blocks forgotten (they are not the child's log's)
 *   allochook_own_thread()  [sigsafe] the calling thread is one of the library's: what
 *                       it allocates (through the C library too) is never sampled
 */
#ifndef PYPROF_ALLOCHOOK_H
#define PYPROF_ALLOCHOOK_H

#include <stddef.h>
#include <stdint.h>

int allochook_install(uint64_t interval, int windows, char *err, size_t errlen);
int allochook_installed(void);
void allochook_pause(void);
void allochook_recheck(void);
void allochook_after_dlopen(void);
uint64_t allochook_tick(uint64_t now);
int allochook_python_hooked(void);
void allochook_own_thread(void);
void allochook_after_fork_child(void);

#endif
