/*
 * diag: the library's messages on stderr.  One line per error unless PYPROF_QUIET; extra
 * diagnostics only with PYPROF_VERBOSE.  Written with write(2), never stdio, so the
 * program's own buffered stderr is never touched.  [not sigsafe]
 */
#ifndef PYPROF_DIAG_H
#define PYPROF_DIAG_H

void diag_set(int quiet, int verbose);
/* A line that already starts with "pyprof: " is printed as is; otherwise it is added. */
void diag_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void diag_verbose(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int diag_is_verbose(void);

#endif
