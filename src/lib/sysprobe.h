/*
 * sysprobe: whether a system call the library would make can kill the process.  A seccomp
 * filter may answer a call it does not allow by killing the caller (SIGSYS) rather than
 * failing it: a systemd unit with SystemCallFilter= and no SystemCallErrorNumber= does,
 * and @system-service, the usual filter of a hardened unit, leaves perf_event_open out.
 * Where /proc/self/status says a filter is in force, the call is first made by a child
 * process (a raw clone: no SIGCHLD, no fork handlers, nothing but system calls in it)
 * whose fate says whether the process itself may make it.  [not sigsafe]
 *
 * Interface:
 *   sysprobe_perf_allowed()  1 when perf_event_open fails or works here (no filter, or a
 *                            filter that lets it through or fails it), 0 when it would
 *                            kill the process (or the probe could not be made); the
 *                            answer is kept for the life of the process (a fork child
 *                            has the same filter)
 */
#ifndef PYPROF_SYSPROBE_H
#define PYPROF_SYSPROBE_H

int sysprobe_perf_allowed(void);

#endif
