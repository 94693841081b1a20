/*
 * sampler: timers, handler installation and quiesce.  See sampler.h.
 *
 * Why a perf event.  CPU-time interval timers (setitimer, POSIX CPU-clock timers) fire
 * on scheduler ticks, 250 Hz on these machines, whatever period is asked.  A software
 * perf event counting the thread's task clock overflows on an hrtimer, so it honours
 * 1 kHz and more, and with `sigtrap` it raises a synchronous SIGTRAP on the very thread
 * that used the CPU (si_code TRAP_PERF, si_perf_data = our cookie).  Every thread has
 * its own event with a random first period (threadtimer.h says why and how): the
 * threads that exist at start (an embedding host starting Python late, too) get one
 * each from /proc/self/task, and every thread created later gets one from the
 * pthread_create wrapper's trampoline, before its start routine runs.  Forked children
 * set up their own, and remove_on_exec drops the events at exec, so an exec'd program
 * never sees our signal.
 *
 * Wall clock (PYPROF_CLOCK=wall).  Every Python thread, running or not, once per period.
 * Our own sampler thread wakes on an absolute CLOCK_MONOTONIC deadline and reads each
 * thread's stack from its thread state (wall_sample_threads), the way an outside
 * profiler reads another process, but in-process and with guarded reads; it keeps a
 * stack only when it can show the thread changed nothing meanwhile (it did not hold
 * the GIL nor take it, or its CPU clock did not move), so the stack is whole and one the
 * thread had.  A thread found running is sampled by itself instead: each thread has cpu
 * mode's perf event at the same period, and a pass that finds it running asks that
 * timer for one sample (threadtimer_ask); the thread's next signal takes every sample
 * asked of it, its own stack where it runs then, and a pass that finds it still later
 * takes over what is left.  So every thread has one sample per pass, as before.  No
 * signal reaches a sleeping or blocked thread (a CPU timer counts only the CPU the
 * thread uses), so it is never woken or interrupted: its sleep is exactly as long as
 * without the library (Python 2.7's time.sleep would end early on any signal).  Where
 * perf events are refused, the pass reads running threads too, with the walk's own
 * checks only (wall.c says what those cannot rule out).
 *
 * Fallback.  When perf_event_open is refused (seccomp, perf_event_paranoid, an old
 * kernel), a timer_create(CLOCK_PROCESS_CPUTIME_ID) timer raises SIGPROF; the kernel
 * delivers a process-directed signal to a thread that is running, so CPU-heavy threads
 * still get the samples.  The achieved rate is in the log's footer either way.
 */
#include "sampler.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "calib.h"
#include "codetable.h"
#include "diag.h"
#include "native.h"
#include "ownthreads.h"
#include "pthread_tid.h"
#include "safe_read.h"
#include "sigdisp.h"
#include "sysprobe.h"
#include "sighandler.h"
#include "spans.h"
#include "threadtimer.h"
#include "wall.h"
#include "sigstate.h"

#define SAMPLE_RING_BYTES (4u << 20)
#define CODE_RING_BYTES (2u << 20)
#define QUIESCE_MAX_NS 1000000000ull /* sampler_stop waits no longer for a late handler */

static timer_t posix_timer;
static int have_posix_timer;
static const char *timer_name = "none";
static int handlers_installed;
static _Atomic int armed; /* timers armed, not yet disarmed */
/* Native mode as the last sampler_start decided it: -1 until it has (sampler_native). */
static _Atomic int native_mode = -1;
static pthread_t wall_thread;
static int wall_running;
static _Atomic int wall_stop;
static uint64_t wall_period_ns;
static int wall_timed; /* each thread has its CPU timer too (see the top) */
static _Atomic uint64_t wall_passes;
static void *memory; /* rings + code tables, one mapping */
static size_t memory_len;

const char *sampler_timer_name(void) { return timer_name; }
uint64_t sampler_wall_passes(void) { return atomic_load(&wall_passes); }
ring *sampler_sample_ring(void) { return &sighandler_g.samples; }
ring *sampler_code_ring(void) { return &sighandler_g.codes; }
uint64_t sampler_t0_ns(void) { return sighandler_g.t0_ns; }
int sampler_native(void) { return atomic_load(&native_mode); }

/* The timer is armed: sampling runs, with or without native stacks from now on, and the
 * program's spans go into the sample ring (the writer closes their gate when it finishes
 * the log). */
static int started(void)
{
    atomic_store(&native_mode, sighandler_g.native != 0);
    atomic_store(&armed, 1);
    spans_open(&sighandler_g.samples, sighandler_g.t0_ns);
    return 0;
}

void sampler_count_drop(int reason)
{
    if (reason >= 0 && reason < PYPROF_DROP_COUNT)
        atomic_fetch_add(&sighandler_g.drops[reason], 1);
}

void sampler_read_stats(sampler_stats *out)
{
    sighandler_state *g = &sighandler_g;
    out->signals = atomic_load(&g->signals);
    out->handler_ns = atomic_load(&g->handler_ns);
    for (int i = 0; i < PYPROF_DROP_COUNT; i++)
        out->drops[i] = atomic_load(&g->drops[i]);
    for (int d = 0; d < PYPROF_COST_NDEPTH; d++)
        for (int t = 0; t < PYPROF_COST_NTIME; t++)
            out->cost[d][t] = atomic_load(&g->cost[d][t]);
    out->native_ok = atomic_load(&g->native_ok);
    out->native_truncated = atomic_load(&g->native_truncated);
    out->native_skipped = atomic_load(&g->native_skipped);
    out->native_ns = atomic_load(&g->native_ns);
}

/* SIGPROF taken by the program while it is our timer's signal: the program wins,
 * sampling ends, the log says so. */
static void prof_yielded(int sig)
{
    (void)sig;
    if (sighandler_g.sample_signal == SIGPROF && atomic_load(&sighandler_g.enabled)) {
        atomic_fetch_add(&sighandler_g.drops[PYPROF_DROP_SIGNAL_STOLEN], 1);
        sampler_stop();
    }
}

/* The sampling handler runs with the sampling signals blocked, and the terminating ones
 * too: a SIGTERM, SIGINT or SIGHUP that arrives meanwhile is delivered the moment it
 * returns (microseconds later), never inside it.  Inside it, control.c's handler would
 * wait for the writer to finish the log while the writer waits for this very handler to
 * leave (sampler_stop's quiesce), and the log would be cut short. */
static int install_handler(int sig)
{
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTRAP);
    sigaddset(&mask, SIGPROF);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    return sig == SIGTRAP
               ? sigdisp_take(sig, sighandler_on_signal, SA_RESTART, &mask, SIGDISP_KEEP, NULL)
               : sigdisp_take(sig, sighandler_on_signal, SA_RESTART, &mask, SIGDISP_YIELD,
                              prof_yielded);
}

/* The perf task-clock events, one per thread (threadtimer.c).  When they cannot be had,
 * one stderr line says why and what takes their place (`instead`), once per process. */
static int arm_perf(uint64_t period_ns, const char *instead)
{
    if (threadtimer_arm(period_ns, sighandler_g.perf_cookie) < 0) {
        static int said;
        int e = errno;
        if (!said) {
            said = 1;
            if (sysprobe_perf_allowed())
                diag_error("pyprof: perf events refused (%s): %s", strerror(e), instead);
            else
                diag_error("pyprof: perf events not tried (a seccomp filter would kill the "
                           "process for perf_event_open): %s",
                           instead);
        }
        errno = e;
        return -1;
    }
    timer_name = threadtimer_name();
    return 0;
}

static int arm_posix_timer(uint64_t period_ns)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGPROF;
    if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &sev, &posix_timer) < 0)
        return -1;
    struct itimerspec its;
    its.it_interval.tv_sec = (time_t)(period_ns / 1000000000ull);
    its.it_interval.tv_nsec = (long)(period_ns % 1000000000ull);
    its.it_value = its.it_interval;
    if (timer_settime(posix_timer, 0, &its, NULL) < 0) {
        timer_delete(posix_timer);
        return -1;
    }
    have_posix_timer = 1;
    timer_name = "posix-cpu-timer";
    return 0;
}

static void *wall_main(void *arg)
{
    (void)arg;
    ownthreads_name_self("wall");
    safe_read_unblock_faults(); /* its thread-state reads run under the guard */
    uint64_t next = clock_mono_ns() + wall_period_ns;
    while (!atomic_load(&wall_stop)) {
        struct timespec dl = {(time_t)(next / 1000000000ull), (long)(next % 1000000000ull)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &dl, NULL) == EINTR)
            ;
        if (atomic_load(&wall_stop))
            break;
        uint64_t t0 = clock_mono_ns();
        /* The achieved rate counts the passes that recorded a sample, never the ones
         * that found nothing to record. */
        if (atomic_load(&sighandler_g.enabled) && wall_sample_threads(wall_timed) > 0)
            atomic_fetch_add_explicit(&wall_passes, 1, memory_order_relaxed);
        uint64_t now = clock_mono_ns();
        atomic_fetch_add_explicit(&sighandler_g.handler_ns, now - t0, memory_order_relaxed);
        next += wall_period_ns;
        if (next < now) /* late by more than a period: skip, do not burst */
            next = now + wall_period_ns - (now - next) % wall_period_ns;
    }
    return NULL;
}

static int start_wall_thread(uint64_t period_ns)
{
    wall_period_ns = period_ns;
    atomic_store(&wall_stop, 0);
    atomic_store(&wall_passes, 0);
    int rc = ownthreads_start(&wall_thread, wall_main, NULL);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    wall_running = 1;
    timer_name = wall_timed ? "wall-thread+perf-task-clock" : "wall-thread";
    return 0;
}

/* The code-table generations and the counters a footer reports, for a new start. */
static void reset_counters(void)
{
    sighandler_state *g = &sighandler_g;
    codetable_reset();
    atomic_store(&g->signals, 0);
    atomic_store(&g->handler_ns, 0);
    for (int d = 0; d < PYPROF_COST_NDEPTH; d++)
        for (int t = 0; t < PYPROF_COST_NTIME; t++)
            atomic_store(&g->cost[d][t], 0);
    for (int i = 0; i < PYPROF_DROP_COUNT; i++)
        atomic_store(&g->drops[i], 0);
    atomic_store(&g->native_ok, 0);
    atomic_store(&g->native_truncated, 0);
    atomic_store(&g->native_skipped, 0);
    atomic_store(&g->native_ns, 0);
}

/* Native mode for this window: on only in cpu mode, where each sample is taken by the
 * interrupted thread itself (the wall clock reads other threads, which cannot be
 * unwound in-process), and only when libunwind loads and checks out (native.h).  Any
 * failure is one line; profiling goes on without native frames. */
static void setup_native(int want, int clock)
{
    sighandler_state *g = &sighandler_g;
    char err[512];
    g->native = 0;
    g->native_max = NATIVE_MAX;
    if (!want)
        return;
    if (clock != PYPROF_CLOCK_CPU) {
        diag_error("pyprof: native frames off: PYPROF_CLOCK=wall samples threads from "
                   "another thread, which cannot unwind them; use the cpu clock");
        return;
    }
    if (native_setup(err, sizeof err) < 0) {
        diag_error("%s", err);
        return;
    }
    g->native = 1;
}

int sampler_start(const pyabi *abi, uint64_t period_ns, unsigned max_depth, int clock,
                  int native, char *err, size_t errlen)
{
    sighandler_state *g = &sighandler_g;
    size_t tables = CODETABLE_BYTES;
    atomic_store(&native_mode, -1);
    if (memory) {
        /* A new toggle window: the last one's stop quiesced every handler, so the memory
         * is ours to clear and use again. */
        memset(memory, 0, memory_len);
    } else {
        memory_len = SAMPLE_RING_BYTES + CODE_RING_BYTES + tables;
        memory = mmap(NULL, memory_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                      0);
        if (memory == MAP_FAILED) {
            memory = NULL;
            snprintf(err, errlen, "pyprof: cannot allocate %zu bytes; not profiling",
                     memory_len);
            return -1;
        }
    }
    reset_counters();
    uint8_t *m = memory;
    ring_init(&g->samples, m, SAMPLE_RING_BYTES);
    ring_init(&g->codes, m + SAMPLE_RING_BYTES, CODE_RING_BYTES);
    codetable_start(m + SAMPLE_RING_BYTES + CODE_RING_BYTES);
    g->abi = *abi;
    g->max_depth = max_depth;
    g->period_ns = period_ns;
    g->t0_ns = clock_mono_ns();
    if (getrandom(&g->perf_cookie, sizeof g->perf_cookie, GRND_NONBLOCK) !=
        sizeof g->perf_cookie)
        g->perf_cookie = g->t0_ns ^ (uint64_t)getpid() << 32;

    if (safe_read_install() < 0) {
        snprintf(err, errlen, "pyprof: cannot install the fault guard: %s; not profiling",
                 strerror(errno));
        return -1;
    }
    /* Our SIGTRAP handler stays for the life of the process: a late trap from a
     * disarmed event must never meet the default action (a core dump). */
    if (!handlers_installed) {
        if (install_handler(SIGTRAP) < 0) {
            snprintf(err, errlen,
                     "pyprof: cannot install the signal handler: %s; not profiling",
                     strerror(errno));
            return -1;
        }
        handlers_installed = 1;
    }
    setup_native(native, clock);
    g->wall_timed = 0;
    atomic_store(&g->enabled, 1);
    if (clock == PYPROF_CLOCK_WALL) {
        atomic_store(&g->pthread_tid_offset, pthread_tid_offset());
        g->wall_timed = 1; /* before the first timer's signal */
        wall_timed = arm_perf(period_ns,
                              "wall-clock passes read the running threads themselves") == 0;
        g->wall_timed = wall_timed;
        if (wall_timed)
            g->sample_signal = SIGTRAP;
        if (start_wall_thread(period_ns) == 0)
            return started();
        if (wall_timed)
            threadtimer_disarm();
        atomic_store(&g->enabled, 0);
        snprintf(err, errlen,
                 "pyprof: cannot start the wall-clock sampler thread: %s; "
                 "not profiling",
                 strerror(errno));
        return -1;
    }
    if (arm_perf(period_ns, "sampling with a process CPU timer (posix-cpu-timer)") == 0) {
        g->sample_signal = SIGTRAP;
        return started();
    }
    if (g->sample_signal == SIGPROF || install_handler(SIGPROF) == 0) {
        g->sample_signal = SIGPROF;
        if (arm_posix_timer(period_ns) == 0)
            return started();
    }
    atomic_store(&g->enabled, 0);
    snprintf(err, errlen, "pyprof: cannot start a sampling timer: %s; not profiling",
             strerror(errno));
    return -1;
}

static void disarm(void)
{
    if (wall_running) {
        atomic_store(&wall_stop, 1);
        pthread_join(wall_thread, NULL);
        wall_running = 0;
    }
    threadtimer_disarm();
    atomic_fetch_add(&sighandler_g.drops[PYPROF_DROP_NO_TIMER], threadtimer_take_lost());
    if (have_posix_timer) {
        timer_delete(posix_timer);
        have_posix_timer = 0;
    }
}

void sampler_stop(void)
{
    sighandler_state *g = &sighandler_g;
    atomic_store(&g->enabled, 0);
    /* Two threads may stop at once (the writer finishing for a terminating signal while
     * the program exits): only one closes the descriptors. */
    if (atomic_exchange(&armed, 0))
        disarm();
    /* A handler that read `enabled` before we cleared it may still be walking; wait for
     * it.  Handlers never block, so this ends in microseconds.  Never wait for our own
     * thread's handler (we may be running nested in it, from a program's signal handler
     * that calls _exit), and never wait forever: after a second by the clock (not by a
     * count of sleeps, which a thread's timer slack stretches), go on; nothing we do
     * next frees memory a late handler could touch. */
    clock_wait_at_most(&g->inflight, sighandler_inside(), QUIESCE_MAX_NS);
    if (g->native && diag_is_verbose()) {
        uint64_t ok = atomic_load(&g->native_ok), cut = atomic_load(&g->native_truncated);
        uint64_t walks = ok + cut;
        diag_verbose("pyprof: native walks: %llu whole, %llu truncated, %llu skipped, "
                     "%llu ns each on average",
                     (unsigned long long)ok, (unsigned long long)cut,
                     (unsigned long long)atomic_load(&g->native_skipped),
                     (unsigned long long)(walks ? atomic_load(&g->native_ns) / walks : 0));
    }
}

void sampler_forget_in_child(void)
{
    sighandler_state *g = &sighandler_g;
    atomic_store(&g->enabled, 0);
    /* The perf events belong to the parent's threads.  A POSIX timer is not inherited
     * by fork. */
    threadtimer_forget_in_child();
    calib_forget_in_child();
    wall_forget_in_child();
    have_posix_timer = 0;
    wall_running = 0; /* the wall thread was the parent's */
    atomic_store(&armed, 0);
    atomic_store(&native_mode, -1);
    /* Only the forking thread exists here, and it is not in a handler (fork is not
     * called from one), so no handler runs: the parent's unwritten records and code ids
     * go with the mapping, and a new start maps fresh memory. */
    if (memory)
        munmap(memory, memory_len);
    memory = NULL;
    atomic_store(&g->inflight, 0);
    spans_forget_in_child();
    reset_counters();
    sighandler_reset_tid();
    native_forget_in_child();
}
