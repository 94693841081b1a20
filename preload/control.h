/*
 * control: the signals that start and stop profiling while the program runs.
 *
 *   PYPROF_SIGNAL      each delivery toggles profiling; the process starts paused.  The
 *                      handler only posts a semaphore; a control thread, started with
 *                      the library, does the work (entry_toggle).
 *   SIGTERM, SIGINT,   while the program leaves them at their default action (the
 *   SIGHUP             process ends), our handler has the log finished first, then the
 *                      process ends by the same signal.  The program never sees ours:
 *                      sigaction reports its own disposition, and a handler it installs
 *                      replaces ours (and SIG_DFL puts ours back).
 *
 * The handlers themselves are in src/sighandler.c, with every other signal handler.
 */
#ifndef PYPROF_CONTROL_H
#define PYPROF_CONTROL_H

#include <signal.h>

/* [not sigsafe] Installs the terminating-signal handlers where the disposition is the
 * default, and with `toggle_sig` (0 = none) the toggle handler and the control thread.
 * Returns 0, or -1 with a line in `err`. */
int control_install(int toggle_sig, char *err, size_t errlen);

/* [not sigsafe] Interposed sigaction for the signals control watches.  Returns 1 when
 * handled (the program's disposition recorded, the real one ours), 0 when the caller
 * passes the call on. */
int control_app_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* [not sigsafe] In a fork child (inside fork): the control thread was the parent's;
 * start the child's own. */
void control_restart_in_child(void);

#endif
