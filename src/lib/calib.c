/*
 * calib: what one sampling signal costs outside the sample.  See calib.h.
 *
 * The estimate.  Units of work are timed back to back on the thread's CPU clock, each
 * noting how many of our signals arrived during it.  A signal's cost shows in the unit
 * it landed in and, as caches refill, in the next one; so for every unit with one signal
 * followed by a unit with none, the extra is (unit + next) - 2 x base, where base is the
 * mean of the units with no signal in them nor in the unit before, and no tick.  The
 * cost is the mean extra, with the highest tenth left out (a unit the host stalled is
 * not the signal's doing).  The kernel's tick costs something too: a unit that saw a
 * tick is told by the coarse monotonic clock, which moves only at ticks, and the tick's
 * own cost (from units with a tick and no signal) is taken out of the units it fell in.  Other
 * interrupts land in base units as often as in signal units, so they cancel.
 *
 * Everything here runs on a thread of the library, outside signal context, except
 * calib_on_signal: a thread-local flag and counter.
 */
#include "calib.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "threadtimer.h"

#define UNIT_NS 50000ull             /* the target length of a unit of work */
#define CALIB_AFTER_NS 1000000000ull /* calib_tick: profiled this long before measuring, */
#define CALIB_SHARE 0.005            /* with at most this share of the process's CPU, */
#define CALIB_SLICE_NS 4000000ull    /* in slices of this much */
#define MAX_UNITS 4096u              /* 200 ms of units: more than the budget allows */

static __thread volatile int tls_measuring __attribute__((tls_model("initial-exec")));
static __thread volatile uint32_t tls_signals __attribute__((tls_model("initial-exec")));

/* The last unit of a slice: the unit after it was timed later, so a signal in it is
 * not counted, and it is no base unit either. */
#define SLICE_END 255

static _Atomic int done;
static _Atomic uint64_t res_signal_ns, res_signals, res_cpu_ns, spent_all_ns;

/* The units timed so far, over every slice (only the writer thread runs calib_step). */
static uint32_t unit_ns[MAX_UNITS];
static uint8_t unit_sig[MAX_UNITS];
static uint8_t unit_tick[MAX_UNITS]; /* the kernel's tick came during the unit */
static size_t nunits;
static uint64_t iters;
/* The timer measured with, kept from slice to slice (a new one would start its period
 * afresh every slice, and a slice is shorter than a 100 Hz period), on thread
 * probe_tid. */
static uintptr_t probe;
static pid_t probe_tid;

int calib_on_signal(void)
{
    if (!tls_measuring)
        return 0;
    tls_signals++;
    return 1;
}

static uint64_t thread_cpu_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

/* The unit of work: integer arithmetic with no memory traffic, not foldable. */
static uint64_t __attribute__((noinline)) work(uint64_t n, uint64_t x)
{
    for (uint64_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        x ^= x >> 13;
    }
    return x;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Unit i with no signal in it nor in the unit before (its start is clean). */
static int calm(size_t i) { return !unit_sig[i] && !unit_sig[i - 1]; }

/* The cost per signal from units [0, n), or 0 when it cannot be told. */
static uint64_t estimate(size_t n, uint64_t *signals)
{
    /* Base: calm units without a tick. */
    double base = 0;
    size_t nbase = 0;
    for (size_t i = 1; i < n; i++) {
        if (calm(i) && !unit_tick[i]) { /* SLICE_END is never calm */
            base += unit_ns[i];
            nbase++;
        }
    }
    if (nbase < 16)
        return 0;
    base /= (double)nbase;
    /* A tick's own cost, from calm units with one, and the calm unit after. */
    double tick = 0;
    size_t nticks = 0;
    for (size_t i = 1; i + 1 < n; i++) {
        if (calm(i) && unit_tick[i] && calm(i + 1) && !unit_tick[i + 1]) {
            tick += (double)unit_ns[i] + (double)unit_ns[i + 1] - 2 * base;
            nticks++;
        }
    }
    tick = nticks >= 4 && tick > 0 ? tick / (double)nticks : 0;
    /* A signal's: the unit it landed in and the next, less the ticks in them. */
    static uint64_t extra[MAX_UNITS];
    size_t ne = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (unit_sig[i] != 1 || unit_sig[i + 1])
            continue;
        double e = (double)unit_ns[i] + (double)unit_ns[i + 1] - 2 * base -
                   tick * (unit_tick[i] + unit_tick[i + 1]);
        extra[ne++] = e > 0 ? (uint64_t)e : 0;
    }
    *signals = ne;
    if (ne < 4)
        return 0;
    qsort(extra, ne, sizeof extra[0], cmp_u64);
    size_t keep = ne - ne / 10;
    double sum = 0;
    for (size_t i = 0; i < keep; i++)
        sum += (double)extra[i];
    return (uint64_t)(sum / (double)keep);
}

int calib_step(uint64_t budget_ns)
{
    if (atomic_load(&done))
        return 1;
    uint64_t c0 = thread_cpu_ns();
    static volatile uint64_t sink;
    if (!iters) {
        /* Size a unit: iterations for UNIT_NS, from a first run of a known count. */
        uint64_t t = thread_cpu_ns();
        sink = work(100000, sink);
        uint64_t per = thread_cpu_ns() - t;
        iters = per ? 100000ull * UNIT_NS / per : 100000;
        if (iters == 0)
            iters = 1;
    }
    sigset_t trap, old;
    sigemptyset(&trap);
    sigaddset(&trap, SIGTRAP);
    tls_signals = 0;
    tls_measuring = 1;
    pthread_sigmask(SIG_UNBLOCK, &trap, &old);
    if (probe && probe_tid != gettid())
        calib_release();
    if (!probe) {
        probe = threadtimer_open_probe();
        probe_tid = gettid();
    }
    size_t first = nunits;
    if (probe) {
        uint64_t start = thread_cpu_ns(), now = start;
        while (nunits < MAX_UNITS && now - start < budget_ns) {
            uint32_t s0 = tls_signals;
            uint64_t k0 = clock_ns(CLOCK_MONOTONIC_COARSE);
            uint64_t a = thread_cpu_ns();
            sink = work(iters, sink);
            now = thread_cpu_ns();
            unit_tick[nunits] = clock_ns(CLOCK_MONOTONIC_COARSE) != k0;
            unit_ns[nunits] = (uint32_t)(now - a < UINT32_MAX ? now - a : UINT32_MAX);
            uint32_t d = tls_signals - s0;
            unit_sig[nunits] = (uint8_t)(d < 255 ? d : 255);
            nunits++;
        }
    }
    /* A signal still pending is delivered here, while the flag is up. */
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    tls_measuring = 0;
    if (nunits > first)
        unit_sig[nunits - 1] = SLICE_END; /* its next unit is not the one that follows */
    uint64_t signals = 0, cost = estimate(nunits, &signals);
    atomic_store(&res_signals, signals);
    atomic_store(&res_signal_ns, cost);
    uint64_t slice = thread_cpu_ns() - c0;
    uint64_t spent = atomic_load(&res_cpu_ns) + slice;
    atomic_store(&res_cpu_ns, spent);
    atomic_fetch_add(&spent_all_ns, slice);
    if (signals >= CALIB_SIGNALS || spent >= CALIB_BUDGET_NS || nunits >= MAX_UNITS || !probe) {
        atomic_store(&done, 1);
        calib_release();
    }
    return atomic_load(&done);
}

void calib_begin(uint64_t period_ns)
{
    static uint64_t measured_at;
    if (period_ns == measured_at)
        return;
    measured_at = period_ns;
    calib_release();
    nunits = 0;
    atomic_store(&res_signal_ns, 0);
    atomic_store(&res_signals, 0);
    atomic_store(&res_cpu_ns, 0);
    atomic_store(&done, 0);
}

void calib_forget_in_child(void)
{
    /* Perf mappings are not copied into a fork child: nothing to release. */
    probe = 0;
    probe_tid = 0;
}

void calib_release(void)
{
    if (probe)
        threadtimer_close_probe(probe);
    probe = 0;
    probe_tid = 0;
}

void calib_get(calib_result *out)
{
    out->signal_ns = atomic_load(&res_signal_ns);
    out->signals = atomic_load(&res_signals);
    out->cpu_ns = atomic_load(&res_cpu_ns);
    out->spent_ns = atomic_load(&spent_all_ns);
}

int calib_done(void) { return atomic_load(&done); }

void calib_tick(uint64_t profiled_ns)
{
    if (atomic_load(&done) || !threadtimer_armed() || profiled_ns < CALIB_AFTER_NS)
        return;
    calib_result c;
    calib_get(&c);
    double allowed = CALIB_SHARE * (double)clock_ns(CLOCK_PROCESS_CPUTIME_ID) -
                     (double)c.spent_ns;
    if (allowed < (double)CALIB_SLICE_NS)
        return;
    calib_step(CALIB_SLICE_NS);
}
