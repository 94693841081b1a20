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

/* What a client's bytes have made of its request line so far (ctlsock_feed). */
enum ctlsock_feed_result {
    CTLSOCK_MORE,     /* every byte taken, no '\n' yet */
    CTLSOCK_LINE,     /* a '\n' ended the line */
    CTLSOCK_TOO_LONG, /* a byte past CTLSOCK_LINE_MAX, with no '\n' before it */
};

/* The framing of a request, pure: appends the `n` bytes at `buf` to `line` (`*len` bytes
 * so far, room for CTLSOCK_LINE_MAX + 1).  At a '\n' the line ends: a '\r' just before
 * it is dropped, the line is NUL-terminated, and the bytes after the '\n' are ignored.
 * *len never exceeds CTLSOCK_LINE_MAX. */
int ctlsock_feed(char *line, size_t *len, const char *buf, size_t n);

/* Is the line (`len` bytes) one line of printable ASCII, as a request must be? */
int ctlsock_line_ok(const char *line, size_t len);

/* Binds "\0pyprof.<pid>" and starts the control thread, which calls `handle` for each
 * request.  Returns 0, or -1 with a line in `err` (the name is taken, no thread). */
int ctlsock_start(ctlsock_handler handle, char *err, size_t errlen);

/* In a fork child (inside fork): the parent's socket and thread are not ours; closes the
 * copies of the parent's descriptors and starts the child's own. */
void ctlsock_restart_in_child(void);

/* In a fork child that is not profiled: closes the copies of the parent's descriptors. */
void ctlsock_forget_in_child(void);

#endif
