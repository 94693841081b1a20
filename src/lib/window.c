/*
 * window: profiling windows, and the cron that runs while one is open.  See window.h.
 *
 * A window is open from a successful window_start (the writer, the sampler, then the
 * cron that drains the sampler's rings into the writer's log) to the first window_end
 * after it.  `active` says it is open and `owner` in which process: a fork child sees its
 * parent's state until window_forget_in_child runs, and a vfork child never runs it
 * (preload/entry.c keeps a vfork child's exit paths away from here).  `finished` makes the end
 * happen once whichever exit path comes first; `ending` keeps the toggle and the control socket
 * from starting a window once the process is on its way out.
 *
 * The cron.  One thread per window (named pyprof-writer: most of its time is the
 * writer's) sleeps on the doorbell (doorbell.h) and, at each wake, runs one round: the
 * calibration's slice when one is due (calib_tick), the writer's round (writer_round,
 * which says how soon it wants the next), the allocation hooks' upkeep
 * (allochook_tick), the look for the asyncio layout (asyncabi_tick), and every
 * ALONE_EVERY_NS the check for a process whose own threads are all gone.  It ends a
 * window itself in two cases, through window_end like every other end: a terminating
 * signal's request (window_request_end: the process ends when the signal's handler
 * returns), and only the library's threads left (then it ends the process too,
 * procexit_alone).  window_end on the cron's own thread lets it go (detached) instead
 * of joining it.
 */
#include "window.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <pyprof/format.h>

#include "allochook.h"
#include "asyncabi.h"
#include "calib.h"
#include "common/clock.h"
#include "diag.h"
#include "doorbell.h"
#include "gilstate.h"
#include "ownthreads.h"
#include "procexit.h"
#include "safe_read.h"
#include "sampler.h"
#include "threadtimer.h"
#include "writer.h"

#define CRON_SLACK_NS 4000000ul     /* how late a wake may be (prctl PR_SET_TIMERSLACK) */
#define ALONE_EVERY_NS 200000000ull /* are the program's threads all gone? (ownthreads.h) */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int active;   /* a window is open */
static _Atomic int finished; /* the open window's end has begun */
static _Atomic int ending;   /* the process is ending: no window starts again */
static pid_t owner;
static pyprof_config cfg;
static pyabi abi;
static char run_id[64];
static unsigned window; /* toggle windows started, 0 without PYPROF_SIGNAL */

/* The open window's cron thread. */
static struct {
    pthread_t thread;
    int running;               /* started, and neither joined nor let go */
    _Atomic int stop;          /* asked to stop */
    _Atomic int end_requested; /* window_request_end: end_kind, end_status */
    int end_kind, end_status;
    _Atomic int end_done; /* the window's log is finished */
    uint64_t cpu_ns;      /* its CPU, when it stopped */
} cron;

static void *cron_main(void *arg)
{
    (void)arg;
    ownthreads_name_self("writer");
    safe_read_unblock_faults(); /* pynames reads interpreter memory under the guard */
    /* Nothing here needs to wake on the dot: a wide timer slack lets the kernel serve
     * this thread's timeouts with an interrupt that happens anyway (the tick, another
     * timer) instead of one of their own, which on a virtual machine costs exits to the
     * hypervisor. */
    prctl(PR_SET_TIMERSLACK, CRON_SLACK_NS, 0, 0, 0);
    uint64_t wake_ns = WRITER_FIRST_ROUND_NS, alone_checked_ns = clock_mono_ns();
    for (;;) {
        doorbell_wait(wake_ns);
        if (atomic_load(&cron.stop))
            break;
        if (atomic_load(&cron.end_requested)) {
            /* Stored first: an exit path may end the window before us and join this
             * thread (and once the window has ended, a new one may own `cron`). */
            cron.cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
            window_end(cron.end_kind, 1, cron.end_status);
            return NULL;
        }
        uint64_t now = clock_mono_ns();
        if (cfg.clock == PYPROF_CLOCK_CPU && writer_writing())
            calib_tick(now - sampler_t0_ns());
        wake_ns = writer_round(now);
        uint64_t switch_ns = allochook_tick(now);
        if (switch_ns && switch_ns < wake_ns)
            wake_ns = switch_ns;
        uint64_t scan_ns = asyncabi_tick();
        if (scan_ns && scan_ns < wake_ns)
            wake_ns = scan_ns;
        if (now - alone_checked_ns >= ALONE_EVERY_NS) {
            alone_checked_ns = now;
            window_end_if_alone();
        }
    }
    cron.cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    return NULL;
}

static int cron_start(char *err, size_t errlen)
{
    atomic_store(&cron.stop, 0);
    atomic_store(&cron.end_requested, 0);
    atomic_store(&cron.end_done, 0);
    cron.cpu_ns = 0;
    doorbell_open();
    /* The cron thread takes no signal of the program's, nor ours. */
    int rc = ownthreads_start(&cron.thread, cron_main, NULL);
    if (rc != 0) {
        doorbell_close();
        snprintf(err, errlen, "pyprof: cannot start the writer thread: %s; not profiling",
                 strerror(rc));
        return -1;
    }
    cron.running = 1;
    return 0;
}

/* Stops the cron (joined; let go when called on it) and returns its CPU. */
static uint64_t cron_stop(void)
{
    if (!cron.running)
        return cron.cpu_ns;
    cron.running = 0;
    if (pthread_equal(pthread_self(), cron.thread)) {
        pthread_detach(cron.thread);
        doorbell_close();
        return clock_ns(CLOCK_THREAD_CPUTIME_ID);
    }
    atomic_store(&cron.stop, 1);
    doorbell_ring();
    pthread_join(cron.thread, NULL);
    doorbell_close();
    return cron.cpu_ns;
}

void window_lock(void) { pthread_mutex_lock(&lock); }
void window_unlock(void) { pthread_mutex_unlock(&lock); }

void window_configure(const pyprof_config *c, const pyabi *a, const char *rid)
{
    cfg = *c;
    abi = *a;
    asyncabi_configure(a);
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
        writer_finish(PYPROF_END_ERROR, 0, 0, 0);
        return -1;
    }
    /* The cron once the rings exist (its first round takes their pages' faults). */
    if (cron_start(err, sizeof err) < 0) {
        diag_error("%s", err);
        sampler_stop();
        writer_finish(PYPROF_END_ERROR, 0, 0, 0);
        return -1;
    }
    /* The allocation hooks before the window says it is open: whoever waits for it
     * (pyprof_active) sees its allocations sampled from then on. */
    if (cfg.alloc && !allochook_installed()) {
        err[0] = 0;
        allochook_install(cfg.alloc, cfg.alloc_windows, err, sizeof err);
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
    uint64_t cron_ns = cron_stop();
    sampler_stop();
    writer_finish(end, known, status, cron_ns);
    if (end == PYPROF_END_TOGGLE)
        allochook_pause(); /* no cron switches the windows until the next start */
    atomic_store(&active, 0);
    /* Whoever ended it, the log is complete: a terminating signal may go on. */
    atomic_store(&cron.end_done, 1);
}

int window_request_end(int end, int status)
{
    if (!cron.running || owner != getpid() || atomic_load(&finished) ||
        atomic_exchange(&cron.end_requested, 1))
        return 0;
    cron.end_kind = end;
    cron.end_status = status;
    doorbell_ring();
    return 1;
}

int window_end_done(void) { return atomic_load(&cron.end_done); }

void window_end_if_alone(void)
{
    if (!ownthreads_claim_end())
        return;
    /* Only the library's threads are left: the process ends as glibc would have ended
     * it, exit(0), with the log finished here first (the exit hooks find it finished). */
    window_end(PYPROF_END_EXIT, 1, 0);
    procexit_alone();
}

uint64_t window_cron_cpu_ns(void)
{
    clockid_t cid;
    if (cron.running && pthread_getcpuclockid(cron.thread, &cid) == 0)
        return clock_ns(cid);
    return cron.cpu_ns;
}

int window_forget_in_child(void)
{
    /* The parent's control thread may have held it at the fork. */
    pthread_mutex_init(&lock, NULL);
    allochook_after_fork_child(); /* the parent's sampled blocks are not the child's */
    gilstate_after_fork_child();  /* nor its threads' GIL waits */
    asyncabi_after_fork_child();  /* its loader's lock may have been held */
    if (!atomic_load(&active))
        return 0;
    sampler_forget_in_child();
    writer_forget_in_child();
    cron.running = 0; /* the parent's cron thread is not the child's */
    atomic_store(&active, 0);
    atomic_store(&finished, 0);
    procexit_forget_status();
    return 1;
}
