/*
 * ctlsock: the control socket's transport.  Owns the listening socket (the abstract Unix
 * name "\0pyprof.<pid>": no file on disk, gone with the process), the control thread
 * (pyprof-ctl) that serves it, and what a client may do to it: only a peer with this
 * process's effective uid, or root, is served (SO_PEERCRED); a request is one line of at
 * most CTLSOCK_LINE_MAX bytes sent within a second of connecting; at most
 * CTLSOCK_CLIENTS clients are read at a time (the rest wait in the kernel's backlog).
 * What a request means is the `handle` callback's (ctlcmd.h).  docs/CONTROL.md is the
 * protocol.  [not sigsafe]
 */
#ifndef PYPROF_CTLSOCK_H
#define PYPROF_CTLSOCK_H

#include <stddef.h>

#define CTLSOCK_LINE_MAX 256
#define CTLSOCK_CLIENTS 8

/* Answers one request line (without its '\n'): writes the reply, first line "ok..." or
 * "error: ...", into `out` and returns its length. */
typedef size_t (*ctlsock_handler)(const char *line, char *out, size_t cap);

/* Binds "\0pyprof.<pid>" and starts the control thread, which calls `handle` for each
 * request.  Returns 0, or -1 with a line in `err` (the name is taken, no thread). */
int ctlsock_start(ctlsock_handler handle, char *err, size_t errlen);

/* In a fork child (inside fork): the parent's socket and thread are not ours; closes the
 * copies of the parent's descriptors and starts the child's own. */
void ctlsock_restart_in_child(void);

/* In a fork child that is not profiled: closes the copies of the parent's descriptors. */
void ctlsock_forget_in_child(void);

#endif
