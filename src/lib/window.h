/*
 * window: when this process is profiled.  Owns the profiling windows' state machine:
 * a window starts (writer, sampler, then the cron thread) and ends (cron and sampler
 * stopped, log finished) under one lock; the window counter in each log's header; the
 * configuration and interpreter new windows start with; the end of the process (no window
 * starts again once an exit path has ended one).  The exit status the hooks learn is
 * procexit.h's.
 *
 * Without PYPROF_SIGNAL there is one window, from the start to an exit path.  With it,
 * the process starts paused and each toggle (control.c) or the control socket's pause,
 * resume, period and clock (ctlcmd.c) end or start a window.  preload/entry.c opens the
 * first one, and its exit paths end the last one.
 *
 * While a window is open, its cron thread runs the library's periodic work, one round
 * at a time: each module's own tick (calib_tick, writer_round, allochook_tick) and the
 * check for a process whose own threads are all gone.  Every end of a window goes
 * through window_end: the exit paths, the toggle and the control socket, a terminating
 * signal (window_request_end, carried out by the cron), the program's threads gone
 * (window_end_if_alone).  Nothing here is async-signal-safe but window_request_end and
 * window_end_done.
 */
#ifndef PYPROF_WINDOW_H
#define PYPROF_WINDOW_H

#include <stdint.h>

#include "common/config.h"
#include "pyabi.h"

/* [not sigsafe] No window starts or ends between these two, but for window_end: the
 * exit paths never wait for the control thread.  The functions marked "locked" need it
 * held; window_toggle takes it itself. */
void window_lock(void);
void window_unlock(void);

/* [not sigsafe, locked] What windows start with: the configuration, the interpreter
 * found, and the run id (at most 63 bytes kept).  Before the first window. */
void window_configure(const pyprof_config *cfg, const pyabi *abi, const char *run_id);

/* [not sigsafe, locked] The configuration the next window starts with. */
void window_config(pyprof_config *out);

/* [not sigsafe, locked] Starts a window with the configuration as it is, keeping the
 * window counter (the process's first window, or a fork child's again).  0, or -1 with
 * a line on stderr and nothing left running. */
int window_start(void);

/* [not sigsafe, locked] Starts the next window with `cfg` (the control socket's resume,
 * period and clock).  -1 once the process is ending, or as window_start. */
int window_resume(const pyprof_config *cfg);

/* [not sigsafe, locked] Ends the open window ("toggled off"); windows may start again. */
void window_pause(void);

/* [not sigsafe] 1 while a window of this process is open. */
int window_is_open(void);

/* [not sigsafe] The toggle (PYPROF_SIGNAL, from the control thread): ends the open
 * window, or starts the next one unless the process is ending. */
void window_toggle(void);

/* [not sigsafe] Stops sampling and finishes the open window's log (the first call per
 * window; with or without the lock).  `end` is enum pyprof_end; any end but
 * PYPROF_END_TOGGLE is the process's, and no window starts after it. */
void window_end(int end, int status_known, int status);

/* [sigsafe] For a terminating signal's handler: asks the cron to end the window with
 * `end` (status `status`, the signal number), and returns at once.  1 when the request
 * was taken, 0 when there is nothing to end (paused, already ending, not this process's
 * window). */
int window_request_end(int end, int status);

/* [sigsafe] 1 once the window's log is finished (by a requested end or any other). */
int window_end_done(void);

/* [not sigsafe] When only the library's threads are left (ownthreads_claim_end): ends
 * the window, then the process, as glibc would have (procexit_alone); otherwise returns.
 * The cron calls it, and the control thread while paused. */
void window_end_if_alone(void);

/* [not sigsafe] The CPU the open window's cron thread has taken (the last one's once it
 * stopped): the writer's time in `pyprof ctl status`. */
uint64_t window_cron_cpu_ns(void);

/* [not sigsafe] In a fork child (inside fork): the parent's window is not the child's.
 * Forgets it (sampler, writer) and the lock's state; returns 1 when a window was open,
 * for the child to start its own. */
int window_forget_in_child(void);

#endif
