/*
 * entry: the library's life cycle in the process, from its entry points.  The
 * constructor reads the configuration and looks for CPython; profiling starts there if
 * Python is linked in, or from an interpreter-init hook if it is loaded later.  Every
 * exit path calls entry_finish, which ends the profiling window (lib/window.h) exactly
 * once.  A fork child forgets the parent's profile.  Any failure prints one line and
 * leaves the program running unprofiled.
 */
#ifndef PYPROF_ENTRY_H
#define PYPROF_ENTRY_H

/* From an init hook: Python may have just been loaded (RTLD_LOCAL plugin); start if not
 * yet started.  [not sigsafe] */
void entry_python_appeared(void);

/* From an exit path: stops sampling and finalizes the log (first call only), unless
 * this is a vfork child of the profiled process.  `end` is enum pyprof_end.  The exit
 * status a hook learns before goes to procexit_note_status. */
void entry_finish(int end, int status_known, int status);

/* Python's own main is running (the python executable, not an embedder): its
 * Py_FinalizeEx is not the end of the process's Python. */
void entry_note_python_main(int inside);
int entry_in_python_main(void);

#endif
