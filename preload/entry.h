/*
 * entry: the library's life cycle in the process.  The constructor reads the
 * configuration and looks for CPython; profiling starts there if Python is linked in, or
 * from an interpreter-init hook if it is loaded later.  Every exit path calls
 * entry_finish, which stops sampling and finalizes the log exactly once.  A fork child
 * forgets the parent's profile.  Any failure prints one line and leaves the program
 * running unprofiled.
 */
#ifndef PYPROF_ENTRY_H
#define PYPROF_ENTRY_H

/* From an init hook: Python may have just been loaded (RTLD_LOCAL plugin); start if not
 * yet started.  [not sigsafe] */
void entry_python_appeared(void);

/* Stops sampling and finalizes the log (first call only).  `end` is enum pyprof_end. */
void entry_finish(int end, int status_known, int status);

/* From the control thread, at each delivery of PYPROF_SIGNAL: stops profiling
 * (finalizing the window's log) or starts a new window.  [not sigsafe] */
void entry_toggle(void);

/* The exit status the program is heading for, when a hook learns it (Py_RunMain's
 * return value, exit()'s argument). */
void entry_note_status(int status);

/* Python's own main is running (the python executable, not an embedder): its
 * Py_FinalizeEx is not the end of the process's Python. */
void entry_note_python_main(int inside);
int entry_in_python_main(void);

#endif
