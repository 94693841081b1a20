/*
 * gilstate: the GIL-wait wrappers and their table (gilstate.h).  SIGNAL HANDLER rules for
 * the wrappers: they run inside the program's condition-variable waits, on any thread;
 * beyond the wait they forward to they make atomic loads and stores on our own static
 * table, and errno is the wait's (nothing after the forwarded call touches it).
 * gilstate_waiters and gilstate_watch run on the wall pass under the same rules.
 */
#include "gilstate.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "common/mix64.h"
#include "gotpatch.h"

enum { W_TIMEDWAIT, W_WAIT, W_COUNT };

typedef int (*timedwait_fn)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
typedef int (*wait_fn)(pthread_cond_t *, pthread_mutex_t *);

static void *orig[W_COUNT];
static _Atomic int installed;
static _Atomic uintptr_t gil_lo; /* the GIL structure's first byte; 0 until known */
static _Atomic uintptr_t waiters[GILSTATE_WAITERS]; /* pthread_t of a waiter, 0: free */
static _Atomic unsigned nwaiters; /* slots taken: a pass stops looking once it found them */

/* Marks this thread waiting when `cond` is one of the GIL's; the slot taken, or -1. */
static int enter(const void *cond)
{
    uintptr_t lo = atomic_load_explicit(&gil_lo, memory_order_relaxed);
    if (!lo || (uintptr_t)cond - lo >= GILSTATE_SPAN)
        return -1;
    uintptr_t self = (uintptr_t)pthread_self();
    unsigned h = (unsigned)(mix64(self) % GILSTATE_WAITERS);
    for (unsigned i = 0; i < GILSTATE_WAITERS; i++) {
        unsigned k = (h + i) % GILSTATE_WAITERS;
        uintptr_t free_slot = 0;
        if (atomic_load_explicit(&waiters[k], memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong_explicit(
                &waiters[k], &free_slot, self, memory_order_release, memory_order_relaxed)) {
            atomic_fetch_add_explicit(&nwaiters, 1, memory_order_relaxed);
            return (int)k;
        }
    }
    return -1;
}

static void leave(int k)
{
    if (k >= 0) {
        atomic_store_explicit(&waiters[k], 0, memory_order_release);
        atomic_fetch_sub_explicit(&nwaiters, 1, memory_order_relaxed);
    }
}

static int h_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t)
{
    int k = enter(c);
    int rc = ((timedwait_fn)orig[W_TIMEDWAIT])(c, m, t);
    leave(k);
    return rc;
}

static int h_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    int k = enter(c);
    int rc = ((wait_fn)orig[W_WAIT])(c, m);
    leave(k);
    return rc;
}

static const gotpatch_sym syms[W_COUNT] = {
    [W_TIMEDWAIT] = {"pthread_cond_timedwait", (void *)h_timedwait},
    [W_WAIT] = {"pthread_cond_wait", (void *)h_wait},
};

int gilstate_install(const pyabi *a, char *err, size_t errlen)
{
    if (atomic_load(&installed))
        return 0;
    if (a->gil_holder < 0) {
        snprintf(err, errlen, "GIL waits not seen: Python %s keeps its GIL out of reach",
                 a->version);
        return -1;
    }
    char gerr[256] = "";
    if (gotpatch_install(syms, W_COUNT, orig, gerr, sizeof gerr) < 0) {
        snprintf(err, errlen, "GIL waits not seen: %s", gerr);
        return -1;
    }
    if (!orig[W_TIMEDWAIT] || !orig[W_WAIT]) {
        snprintf(err, errlen, "GIL waits not seen: the C library has no condition variables");
        return -1;
    }
    atomic_store(&installed, 1);
    return 0;
}

int gilstate_installed(void) { return atomic_load_explicit(&installed, memory_order_relaxed); }

void gilstate_watch(uintptr_t lo)
{
    if (atomic_load_explicit(&gil_lo, memory_order_relaxed) != lo)
        atomic_store_explicit(&gil_lo, lo, memory_order_relaxed);
}

void gilstate_after_fork_child(void)
{
    for (unsigned k = 0; k < GILSTATE_WAITERS; k++)
        atomic_store_explicit(&waiters[k], 0, memory_order_relaxed);
    atomic_store_explicit(&nwaiters, 0, memory_order_relaxed);
}

unsigned gilstate_waiters(uintptr_t *out, unsigned max)
{
    /* No waiter (an idle process): no scan.  A wait that begins or ends meanwhile may
     * be missed, as one a moment later would be. */
    unsigned want = atomic_load_explicit(&nwaiters, memory_order_acquire), n = 0;
    if (want > max)
        want = max;
    for (unsigned k = 0; k < GILSTATE_WAITERS && n < want; k++) {
        uintptr_t t = atomic_load_explicit(&waiters[k], memory_order_acquire);
        if (t)
            out[n++] = t;
    }
    return n;
}
