/*
 * procstat: the program's view of /proc/self/stat, without the library's own threads.
 *
 * CPython 3.12+ reads the thread count (field 20 of /proc/self/stat, through fopen) after
 * every os.fork() and warns "This process is multi-threaded, use of fork() may lead to
 * deadlocks" when it is above one; under -W error the warning is an exception.  The
 * library's threads (writer, wall-clock sampler, toggle control: see src/lib/ownthreads.h)
 * would make every fork of a single-threaded program warn.  fopen and fopen64 of
 * /proc/self/stat or /proc/<own pid>/stat for reading therefore return a private copy of
 * the file in which those threads are not counted; every other fopen, and every read of
 * the file while the library runs no thread, is the C library's own.
 */
#ifndef PYPROF_PROCSTAT_H
#define PYPROF_PROCSTAT_H

#include <stdio.h>

/* [not sigsafe] For fopen(path, mode): a stream on the adjusted copy of the process's
 * stat file, or NULL (errno unchanged) when the caller should open `path` itself. */
FILE *procstat_fopen(const char *path, const char *mode);

#endif
