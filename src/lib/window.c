/*
 * window: profiling windows.  See window.h.
 *
 * A window is open from a successful window_start (writer first, so that the sampler's
 * first samples have somewhere to go) to the first window_end after it.  `active` says
 * it is open and `owner` in which process: a fork child sees its parent's state until
 * window_forget_in_child runs, and a vfork child never runs it (preload/entry.c keeps
 * a vfork child's exit paths away from here).  `finished` makes the end happen once
 * whichever exit path comes first; `ending` keeps the toggle and the control socket
 * from starting a window once the process is on its way out.
 */
#include "window.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include <pyprof/format.h>

#include "allochook.h"
#include "diag.h"
#include "gilstate.h"
#include "procexit.h"
#include "sampler.h"
#include "threadtimer.h"
#include "writer.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int active;   /* a window is open */
static _Atomic int finished; /* the open window's end has begun */
static _Atomic int ending;   /* the process is ending: no window starts again */
static pid_t owner;
static pyprof_config cfg;
static pyabi abi;
static char run_id[64];
static unsigned window; /* toggle windows started, 0 without PYPROF_SIGNAL */

void window_lock(void) { pthread_mutex_lock(&lock); }
void window_unlock(void) { pthread_mutex_unlock(&lock); }

void window_configure(const pyprof_config *c, const pyabi *a, const char *rid)
{
    cfg = *c;
    abi = *a;
    snprintf(run_id, sizeof run_id, "%s", rid);
}

void window_config(pyprof_config *out) { *out = cfg; }

int window_start(void)
{
    char err[1024];
    writer_meta meta = {.run_id = run_id, .window = window};
    if (writer_start(&cfg, &abi, &meta, err, sizeof err) < 0) {
        diag_error("%s", err);
        return -1;
    }
    threadtimer_configure(cfg.test_skew_milli, cfg.test_uncorrected);
    if (sampler_start(&abi, cfg.period_ns, cfg.max_depth, cfg.clock, cfg.native, err,
                      sizeof err) < 0) {
        diag_error("%s", err);
        writer_finish(PYPROF_END_ERROR, 0, 0);
        return -1;
    }
    /* The allocation hooks before the window says it is open: whoever waits for it
     * (pyprof_active) sees its allocations sampled from then on. */
    if (cfg.alloc && !allochook_installed()) {
        err[0] = 0;
        allochook_install(cfg.alloc, err, sizeof err);
        if (err[0])
            diag_error("pyprof: %s", err);
        if (!allochook_python_hooked())
            diag_verbose("pyprof: allocation sampling sees the C library's allocator only "
                         "(this Python has no PyMem_SetAllocator)");
    }
    /* Wall mode: which threads wait for the GIL, seen from the first pass on. */
    if (cfg.clock == PYPROF_CLOCK_WALL && !gilstate_installed()) {
        err[0] = 0;
        if (gilstate_install(&abi, err, sizeof err) < 0)
            diag_verbose("pyprof: %s", err);
    }
    owner = getpid();
    atomic_store(&active, 1);
    diag_verbose("pyprof: Python %s, period %llu ns, timer %s", abi.version,
                 (unsigned long long)cfg.period_ns, sampler_timer_name());
    return 0;
}

/* The next window, with the configuration as it is now. */
static int start_next(void)
{
    window++;
    atomic_store(&finished, 0);
    procexit_forget_status();
    return window_start();
}

int window_resume(const pyprof_config *c)
{
    if (atomic_load(&ending))
        return -1;
    cfg = *c;
    return start_next();
}

void window_pause(void) { window_end(PYPROF_END_TOGGLE, 0, 0); }

int window_is_open(void) { return atomic_load(&active) && getpid() == owner; }

void window_toggle(void)
{
    window_lock();
    if (window_is_open())
        window_pause();
    else if (!atomic_load(&ending))
        start_next();
    window_unlock();
}

void window_end(int end, int known, int status)
{
    if (end != PYPROF_END_TOGGLE)
        atomic_store(&ending, 1);
    if (!window_is_open() || atomic_exchange(&finished, 1))
        return;
    sampler_stop();
    writer_finish(end, known, status);
    atomic_store(&active, 0);
}

int window_forget_in_child(void)
{
    /* The parent's control thread may have held it at the fork. */
    pthread_mutex_init(&lock, NULL);
    allochook_after_fork_child(); /* the parent's sampled blocks are not the child's */
    gilstate_after_fork_child();  /* nor its threads' GIL waits */
    if (!atomic_load(&active))
        return 0;
    sampler_forget_in_child();
    writer_forget_in_child();
    atomic_store(&active, 0);
    atomic_store(&finished, 0);
    procexit_forget_status();
    return 1;
}
