/*
 * allocsample: the byte countdown and the records of sampled blocks (allocsample.h).
 * SIGNAL HANDLER rules: allocsample_after and allocsample_before_free run inside the
 * program's allocation calls, on any thread, possibly inside the program's own signal
 * handlers; they take no lock and never allocate.  What they call:
 *
 *   initial-exec thread-locals      the countdown and the random state (no allocation,
 *                                   no loader lock: a static TLS block)
 *   log()                           libm, pure
 *   clock_gettime(CLOCK_MONOTONIC)  the vDSO (through sampleout_commit's stamp)
 *   allocset_insert/remove          atomics on a mapped table (allocset.h)
 *   sighandler_sample_alloc         the sample path under the handler's own rules
 *   ring_reserve/commit, ring_used  the sample ring, lock-free
 *   doorbell_ring (doorbell.c)      getpid and sem_post, on signal-safety(7)
 */
#include "allocsample.h"

#include <math.h>
#include <stdatomic.h>
#include <time.h>

#include <pyprof/format.h>

#include "common/clock.h"
#include "allocset.h"
#include "ring.h"
#include "sighandler.h"
#include "doorbell.h"
#include "sigstate.h"
#include "rrec.h"

static uint64_t interval;
static _Atomic uint64_t n_samples, n_frees, n_lost, n_frees_lost, n_untracked;

/* Bytes this thread may still allocate before its next sample; < 0 when due.  Starts at
 * 0, and a thread's first allocation draws its first count (tls_rng still 0). */
__thread int64_t allocsample_left __attribute__((tls_model("initial-exec")));
static __thread uint64_t tls_rng __attribute__((tls_model("initial-exec")));

void allocsample_configure(uint64_t bytes) { interval = bytes; }

uint64_t allocsample_interval(void) { return interval; }

/* xorshift64*: a thread's own stream, seeded from its stack address and the clock. */
static uint64_t next_random(void)
{
    uint64_t x = tls_rng;
    if (!x) {
        x = (uint64_t)(uintptr_t)&x ^ clock_mono_ns() ^ 0x9e3779b97f4a7c15ull;
        x = x ? x : 1;
    }
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    tls_rng = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* Bytes until the next sample: exponential with mean `interval`. */
static int64_t draw(void)
{
    /* u uniform in (0, 1]: -log(u) is exponential with mean 1. */
    double u = (double)((next_random() >> 11) + 1) * (1.0 / 9007199254740992.0);
    double d = -log(u) * (double)interval;
    if (d > 9e18)
        d = 9e18;
    return (int64_t)d + 1;
}

/* The time (ns since profiling started, at least 1) a sampled allocation or free first
 * found the interpreter's teardown begun, 0 until then: the runtime's finalizing mark
 * set (3.7+; 3.6 _Py_Finalizing), or 2.7 no longer initialized after it had been.  A
 * program that ends normally tears its interpreter down (the modules' objects freed)
 * after its last line: what is in use then is what it left. */
static _Atomic uint64_t teardown_ns;
static _Atomic int seen_running; /* 2.7: the interpreter was seen initialized */

static void note_teardown(void)
{
    if (atomic_load_explicit(&teardown_ns, memory_order_relaxed))
        return;
    const pyabi *a = &sighandler_g.abi;
    int ending;
    /* Plain loads of the interpreter's static data (always mapped). */
    if (a->runtime) {
        ending = *(volatile uintptr_t *)(a->runtime + (uintptr_t)a->rt_finalizing) != 0;
    } else if (a->finalizing_var) {
        ending = *(volatile uintptr_t *)a->finalizing_var != 0;
    } else if (a->is_initialized) {
        int up = a->is_initialized();
        if (up)
            atomic_store_explicit(&seen_running, 1, memory_order_relaxed);
        ending = !up && atomic_load_explicit(&seen_running, memory_order_relaxed);
    } else {
        return;
    }
    if (!ending)
        return;
    uint64_t t = clock_mono_ns() - sighandler_g.t0_ns, none = 0;
    atomic_compare_exchange_strong(&teardown_ns, &none, t ? t : 1);
}

uint64_t allocsample_teardown_ns(void) { return atomic_load(&teardown_ns); }

void allocsample_due(const void *p, size_t size, int shift, int domain, uintptr_t ret)
{
    if (!interval || !p)
        return; /* a failed allocation: the count stays due for the next one */
    if (!tls_rng) {
        /* This thread's first allocation: its first count, this allocation in it. */
        allocsample_left = draw() - ((int64_t)size << shift);
        if (allocsample_left >= 0)
            return;
    }
    allocsample_left = draw();
    note_teardown();
    int flags = (shift << 1) & PYPROF_ALLOC_F_SHIFT_MASK;
    if (allocset_insert((uintptr_t)p) < 0) {
        flags |= PYPROF_ALLOC_F_UNTRACKED;
        atomic_fetch_add_explicit(&n_untracked, 1, memory_order_relaxed);
    }
    int rc = sighandler_sample_alloc(size, (uintptr_t)p, domain, flags, ret);
    const ring *r = &sighandler_g.samples;
    if (rc != 0 && ring_used(r) > r->size / 4)
        doorbell_ring(); /* a burst: the writer drains now rather than at its next wake */
    if (rc > 0) {
        atomic_fetch_add_explicit(&n_samples, 1, memory_order_relaxed);
        return;
    }
    /* No record: its free must not be recorded either. */
    if (!(flags & PYPROF_ALLOC_F_UNTRACKED))
        allocset_remove((uintptr_t)p);
    if (rc < 0)
        atomic_fetch_add_explicit(&n_lost, 1, memory_order_relaxed);
}

void allocsample_freed(const void *p)
{
    if (!p || !allocset_remove((uintptr_t)p))
        return;
    sighandler_state *g = &sighandler_g;
    atomic_fetch_add(&g->inflight, 1);
    note_teardown();
    if (atomic_load(&g->enabled)) {
        rrec_free *r = ring_reserve(&g->samples, sizeof *r);
        if (r) {
            r->head.kind = RREC_FREE;
            r->t_ns = clock_mono_ns() - g->t0_ns;
            r->addr = (uint64_t)(uintptr_t)p;
            ring_commit(&g->samples, r);
            atomic_fetch_add_explicit(&n_frees, 1, memory_order_relaxed);
        } else {
            atomic_fetch_add_explicit(&n_frees_lost, 1, memory_order_relaxed);
        }
    }
    atomic_fetch_sub(&g->inflight, 1);
}

void allocsample_window(uint64_t t_ns, uint64_t len_ns, uint64_t planned_ns, int shift,
                        int floor_shift, int flags)
{
    sighandler_state *g = &sighandler_g;
    atomic_fetch_add(&g->inflight, 1);
    if (atomic_load(&g->enabled)) {
        rrec_awindow *r = ring_reserve(&g->samples, sizeof *r);
        if (r) {
            r->head.kind = RREC_AWINDOW;
            r->shift = (uint8_t)shift;
            r->floor_shift = (uint8_t)floor_shift;
            r->flags = (uint8_t)flags;
            r->t_ns = t_ns > g->t0_ns ? t_ns - g->t0_ns : 0;
            r->len_ns = len_ns;
            r->planned_ns = planned_ns;
            ring_commit(&g->samples, r);
        }
    }
    atomic_fetch_sub(&g->inflight, 1);
}

void allocsample_stats(allocsample_counts *c)
{
    c->samples = atomic_load(&n_samples);
    c->frees = atomic_load(&n_frees);
    c->lost = atomic_load(&n_lost);
    c->frees_lost = atomic_load(&n_frees_lost);
    c->untracked = atomic_load(&n_untracked);
    c->live = allocset_live();
}

void allocsample_sweep(void) { allocset_sweep(); }

void allocsample_after_fork_child(void)
{
    atomic_store(&teardown_ns, 0);
    allocset_clear();
    allocsample_left = 0;
    tls_rng = 0;
}
