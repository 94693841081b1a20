/*
 * control: the toggle signal and the terminating signals.  See control.h.
 *
 * Signal handlers: control_on_toggle and control_on_terminate run inside a signal
 * handler, and call only what signal-safety(7) lists (sem_post, nanosleep,
 * pthread_sigmask, raise, and sigaction through sigdisp_reset_default), the program's
 * own handler (sigdisp_run_program) and the window's atomic flags
 * (window_request_end, window_end_done).  The rest of the file runs on ordinary threads.
 */
#include "control.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <pyprof/format.h>

#include "common/clock.h"
#include "ownthreads.h"
#include "sigdisp.h"
#include "window.h"

/* How long a terminating signal waits for the log to be finished, at most. */
#define TERMINATE_WAIT_MS 3000

static const int terminating[] = {SIGTERM, SIGINT, SIGHUP};
#define N_TERMINATING ((int)(sizeof terminating / sizeof terminating[0]))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int installed;
static int toggle_signal;
static sem_t toggle_sem; /* posted by the toggle's handler, waited on by the thread */

/* ---- the handlers (async-signal-safe) ------------------------------------------------ */

static void control_on_toggle(int sig, siginfo_t *info, void *uc)
{
    int saved_errno = errno;
    sem_post(&toggle_sem);
    /* A program that also handles the toggle signal still gets it. */
    sigdisp_run_program(sig, info, uc);
    errno = saved_errno;
}

/* While the program leaves the signal at its default action: has the cron end the
 * window and finish its log (waiting at most TERMINATE_WAIT_MS), then restores the default
 * action and raises the signal again, so the process ends as it would have. */
static void control_on_terminate(int sig, siginfo_t *info, void *uc)
{
    (void)info;
    (void)uc;
    int saved_errno = errno;
    if (window_request_end(PYPROF_END_SIGNAL, sig)) {
        for (int i = 0; i < TERMINATE_WAIT_MS && !window_end_done(); i++) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
    }
    sigdisp_reset_default(sig);
    sigset_t unblock;
    sigemptyset(&unblock);
    sigaddset(&unblock, sig);
    pthread_sigmask(SIG_UNBLOCK, &unblock, NULL);
    raise(sig);
    errno = saved_errno;
}

/* ---- the control thread -------------------------------------------------------------- */

static void *control_main(void *arg)
{
    (void)arg;
    ownthreads_name_self("control");
    for (;;) {
        /* Woken by the toggle's handler; every 200 ms it also looks whether only the
         * library's threads are left (a paused process has no cron to look). */
        struct timespec dl = clock_mono_deadline(200000000u);
        if (sem_clockwait(&toggle_sem, CLOCK_MONOTONIC, &dl) == 0)
            window_toggle();
        else
            window_end_if_alone();
    }
    return NULL;
}

static int start_thread(char *err, size_t errlen)
{
    sem_init(&toggle_sem, 0, 0);
    /* The control thread takes no signal: the toggle's handler runs elsewhere. */
    pthread_t t;
    int rc = ownthreads_start(&t, control_main, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "pyprof: cannot start the control thread: %s; not profiling",
                 strerror(rc));
        return -1;
    }
    pthread_detach(t);
    return 0;
}

int control_install(int toggle_sig, char *err, size_t errlen)
{
    pthread_mutex_lock(&lock);
    int rc = 0;
    if (installed)
        goto out;
    if (toggle_sig) {
        if (start_thread(err, errlen) < 0) {
            rc = -1;
            goto out;
        }
        if (sigdisp_take(toggle_sig, control_on_toggle, SA_RESTART, NULL, SIGDISP_KEEP, NULL) <
            0) {
            snprintf(err, errlen,
                     "pyprof: cannot install the PYPROF_SIGNAL handler: %s; "
                     "not profiling",
                     strerror(errno));
            rc = -1;
            goto out;
        }
        toggle_signal = toggle_sig;
    }
    for (int i = 0; i < N_TERMINATING; i++)
        if (terminating[i] != toggle_sig)
            sigdisp_take(terminating[i], control_on_terminate, SA_RESTART, NULL,
                         SIGDISP_DEFAULT, NULL);
    installed = 1;
out:
    pthread_mutex_unlock(&lock);
    return rc;
}

void control_restart_in_child(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    lock = m;
    if (toggle_signal) {
        char err[256];
        start_thread(err, sizeof err);
    }
}
