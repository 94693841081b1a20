/*
 * control: the toggle signal and the terminating signals.  See control.h.
 */
#include "control.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "entry.h"
#include "interpose.h"
#include "ownthreads.h"
#include "sighandler.h"

static const int terminating[] = { SIGTERM, SIGINT, SIGHUP };
#define N_TERMINATING ((int)(sizeof terminating / sizeof terminating[0]))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int installed;
static int toggle_signal;
/* Per terminating signal: ours is the real disposition, and what the program set. */
static int ours[N_TERMINATING];
static struct sigaction shadow[N_TERMINATING];

static int terminating_index(int sig)
{
    for (int i = 0; i < N_TERMINATING; i++)
        if (terminating[i] == sig)
            return i;
    return -1;
}

static int is_default(const struct sigaction *a)
{
    return !(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_DFL;
}

static int install_ours(int sig, void (*fn)(int, siginfo_t *, void *), struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    return interpose_real_sigaction(sig, &sa, old);
}

static void *control_main(void *arg)
{
    (void)arg;
    ownthreads_name_self("control");
    for (;;) {
        /* Woken by the toggle's handler; every 200 ms it also looks whether only the
         * library's threads are left (a paused process has no writer to look). */
        struct timespec dl;
        clock_gettime(CLOCK_MONOTONIC, &dl);
        dl.tv_nsec += 200000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
        if (sem_clockwait(&sighandler_control_sem, CLOCK_MONOTONIC, &dl) == 0)
            entry_toggle();
        else
            ownthreads_end_if_program_gone();
    }
    return NULL;
}

static int start_thread(char *err, size_t errlen)
{
    sem_init(&sighandler_control_sem, 0, 0);
    /* The control thread takes no signal: the toggle's handler runs elsewhere. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    int rc = interpose_real_pthread_create(&t, NULL, control_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
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
        if (install_ours(toggle_sig, sighandler_on_toggle, &sighandler_app_toggle) < 0) {
            snprintf(err, errlen, "pyprof: cannot install the PYPROF_SIGNAL handler: %s; "
                     "not profiling", strerror(errno));
            rc = -1;
            goto out;
        }
        toggle_signal = toggle_sig;
    }
    for (int i = 0; i < N_TERMINATING; i++) {
        if (terminating[i] == toggle_sig)
            continue;
        struct sigaction cur;
        if (interpose_real_sigaction(terminating[i], NULL, &cur) == 0 && is_default(&cur) &&
            install_ours(terminating[i], sighandler_on_terminate, NULL) == 0) {
            shadow[i] = cur;
            ours[i] = 1;
        }
    }
    installed = 1;
out:
    pthread_mutex_unlock(&lock);
    return rc;
}

int control_app_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!installed)
        return 0;
    if (sig == toggle_signal) {
        interpose_shadow_sigaction(&sighandler_app_toggle, act, old);
        return 1;
    }
    int i = terminating_index(sig);
    if (i < 0)
        return 0;
    /* No lock: a program may call sigaction from a signal handler. */
    int handled = 0;
    if (act && is_default(act)) {
        /* Back to the default: ours again, the program's SIG_DFL in the shadow. */
        struct sigaction prev;
        if (install_ours(sig, sighandler_on_terminate, &prev) == 0) {
            if (old)
                *old = ours[i] ? shadow[i] : prev;
            shadow[i] = *act;
            ours[i] = 1;
            handled = 1;
        }
    } else if (ours[i]) {
        if (!act) {
            if (old)
                *old = shadow[i];
            handled = 1;
        } else if (interpose_real_sigaction(sig, act, NULL) == 0) {
            /* The program's own handler (or SIG_IGN) replaces ours. */
            if (old)
                *old = shadow[i];
            ours[i] = 0;
            handled = 1;
        }
    }
    return handled;
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
