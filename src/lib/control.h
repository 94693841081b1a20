/*
 * control: the signals that start and stop profiling while the program runs.
 *
 *   PYPROF_SIGNAL      each delivery toggles profiling; the process starts paused.  The
 *                      handler only posts a semaphore; a control thread, started with
 *                      the library, does the work (window_toggle, window.h).
 *   SIGTERM, SIGINT,   while the program leaves them at their default action (the
 *   SIGHUP             process ends), our handler has the log finished first, then the
 *                      process ends by the same signal.  The program never sees ours:
 *                      sigaction reports its own disposition, and a handler it installs
 *                      replaces ours (and SIG_DFL puts ours back): sigdisp.h, policy
 *                      SIGDISP_DEFAULT.
 *
 * The two handlers are in control.c and are async-signal-safe; everything else here is
 * not.
 */
#ifndef PYPROF_CONTROL_H
#define PYPROF_CONTROL_H

#include <stddef.h>

/* [not sigsafe] Installs the terminating-signal handlers where the disposition is the
 * default, and with `toggle_sig` (0 = none) the toggle handler and the control thread,
 * which toggles the profiling window at each delivery (window_toggle: window_configure
 * comes first).  Returns 0, or -1 with a line in `err`. */
int control_install(int toggle_sig, char *err, size_t errlen);

/* [not sigsafe] In a fork child (inside fork): the control thread was the parent's;
 * start the child's own. */
void control_restart_in_child(void);

#endif
