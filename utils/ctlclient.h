/*
 * ctlclient: the client side of a profiled process's control socket (docs/CONTROL.md),
 * shared by `pyprof ctl`, `pyprof dump` and `pyprof top`.  One request is one
 * connection: connect to the abstract socket "\0pyprof.<pid>", check with SO_PEERCRED
 * that the process listening is that pid (any process may bind a name, so another one
 * could hold it), send one line, read the whole reply (at most CTL_REPLY_MAX bytes,
 * everything within CTL_DEADLINE_MS of connecting).
 *
 * Interface: CTL_REPLY_MAX, CTL_DEADLINE_MS, enum ctl_result, ctl_request,
 * ctl_reply_kind, ctl_reply_value, ctl_no_socket_text.
 */
#ifndef PYPROF_CTLCLIENT_H
#define PYPROF_CTLCLIENT_H

#include <stddef.h>
#include <sys/types.h>

#define CTL_REPLY_MAX (64u << 10)
#define CTL_DEADLINE_MS 5000

enum ctl_result {
    CTL_OK = 0,         /* a reply arrived (*reply set): see ctl_reply_kind */
    CTL_NO_SOCKET = -1, /* nobody listens on that name: not profiled, control off, gone */
    CTL_FAILED = -2,    /* anything else; the message is in err */
};

/* Sends `line` (without its newline, which is added) to process `pid`'s control socket
 * and reads the reply into *reply (malloc'ed, NUL-terminated, its trailing newline
 * kept; the caller frees it).  Returns CTL_OK, CTL_NO_SOCKET, or CTL_FAILED with a
 * one-line reason in err ("the control socket of pid 12 is held by pid 34", "no reply
 * within 5 s", "reply longer than 65536 bytes", ...). */
int ctl_request(pid_t pid, const char *line, char **reply, char *err, size_t errlen);

/* What a reply's first line says: 1 for "ok" (alone or followed by a space), -1 for
 * "error: ...", 0 for anything else. */
int ctl_reply_kind(const char *reply);

/* In a `status` reply, the value of "key: value" on its own line, copied into buf
 * (NUL-terminated, cut to fit).  Returns 0, or -1 when the key is absent. */
int ctl_reply_value(const char *reply, const char *key, char *buf, size_t len);

/* The message for CTL_NO_SOCKET: "no pyprof control socket for pid N (not profiled,
 * PYPROF_CONTROL=0, or not running)", into buf; for a process in another network
 * namespace than ours (where its abstract socket is), that and how to reach it. */
const char *ctl_no_socket_text(pid_t pid, char *buf, size_t len);

#endif
