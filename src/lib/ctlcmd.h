/*
 * ctlcmd: what the control socket's requests do (docs/CONTROL.md): status, pause,
 * resume, flush, rotate, period, clock, dump.  The socket is ctlsock.h's; the profiling
 * windows are window.h's; the log is writer.h's; the dump's read of every thread is
 * wall.h's.  Runs on the control thread.  [not sigsafe]
 */
#ifndef PYPROF_CTLCMD_H
#define PYPROF_CTLCMD_H

#include <stddef.h>
#include <stdint.h>

/* ctlsock_handler: answers one request line into `out`; returns the reply's length.
 * Every request runs under the window lock (no window starts or ends meanwhile). */
size_t ctlcmd_handle(const char *line, char *out, size_t cap);

/* A request line split into its words: "request [argument]", separated by spaces or
 * tabs.  `name` and `arg` point into `buf` (the line's first 299 bytes). */
typedef struct ctlcmd_req {
    const char *name; /* never empty */
    const char *arg;  /* NULL when none; only period and clock take one */
    char buf[300];
} ctlcmd_req;

/* The part of ctlcmd_handle that only reads the line: splits it into `req`, and refuses
 * an empty line, more than two words, and an argument to a request that takes none.
 * Returns 0, or -1 with the error reply ("error: ...\n", cut to fit and NUL-terminated
 * when errlen > 0) in `err`.  Pure: touches nothing but its arguments. */
int ctlcmd_parse(const char *line, ctlcmd_req *req, char *err, size_t errlen);

#endif
