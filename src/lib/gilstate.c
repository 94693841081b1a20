/*
 * gilstate: the GIL-wait wrappers and their table (gilstate.h).  SIGNAL HANDLER rules for
 * the wrappers: they run inside the program's condition-variable waits, on any thread;
 * beyond the wait they forward to they make atomic loads and stores on our own static
 * table, and errno is the wait's (nothing after the forwarded call touches it).
 * gilstate_waiters and gilstate_watch run on the wall pass under the same rules.
 */
#include "gilstate.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "common/mix64.h"
#include "elfsym.h"
#include "gotpatch.h"

enum { W_TIMEDWAIT, W_WAIT, W_COUNT };

typedef int (*timedwait_fn)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
typedef int (*wait_fn)(pthread_cond_t *, pthread_mutex_t *);
typedef int (*sem_wait_fn)(sem_t *);

static void *orig[W_COUNT];
static void *orig_sem[1];
static _Atomic int installed;
/* The GIL's condition variables: two ranges of addresses (3.7+: the GIL's structure,
 * from the wall pass, and none; 3.6: its two static condition variables).  0: none. */
static _Atomic uintptr_t range_lo[2];
static uintptr_t range_span[2];
/* 2.7: the static holding the GIL's lock, a semaphore (PyThread_type_lock). */
static uintptr_t sem_var;
static _Atomic uintptr_t waiters[GILSTATE_WAITERS]; /* pthread_t of a waiter, 0: free */
static _Atomic unsigned nwaiters; /* slots taken: a pass stops looking once it found them */

/* Marks this thread waiting; the slot taken, or -1 when the table is full. */
static int mark(void)
{
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

/* Marks this thread waiting when `cond` is one of the GIL's; the slot taken, or -1. */
static int enter(const void *cond)
{
    for (int i = 0; i < 2; i++) {
        uintptr_t lo = atomic_load_explicit(&range_lo[i], memory_order_relaxed);
        if (lo && (uintptr_t)cond - lo < range_span[i])
            return mark();
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

/* 2.7: a wait on the GIL's semaphore (the lock the static interpreter_lock holds now:
 * PyEval_ReInitThreads makes a new one in a fork child). */
static int h_sem_wait(sem_t *sem)
{
    int k = -1;
    if (sem && *(sem_t *volatile *)sem_var == sem)
        k = mark();
    int rc = ((sem_wait_fn)orig_sem[0])(sem);
    leave(k);
    return rc;
}

static const gotpatch_sym syms[W_COUNT] = {
    [W_TIMEDWAIT] = {"pthread_cond_timedwait", (void *)h_timedwait},
    [W_WAIT] = {"pthread_cond_wait", (void *)h_wait},
};
static const gotpatch_sym sem_syms[1] = {{"sem_wait", (void *)h_sem_wait}};

/* 2.7 and 3.6: where the GIL is, from libpython's full symbol table. */
static int find_static_gil(const pyabi *a, char *err, size_t errlen)
{
    static const char *const names36[2] = {"gil_cond", "switch_cond"};
    static const char *const names27[1] = {"interpreter_lock"};
    uintptr_t at[2] = {0, 0};
    int n = a->major == 2 ? 1 : 2;
    if (!a->gil_tstate ||
        elfsym_find((const void *)a->gil_tstate, a->major == 2 ? names27 : names36, at,
                    (size_t)n) < 1 ||
        !at[0]) {
        snprintf(err, errlen,
                 "GIL waits not seen: Python %s keeps its GIL in statics, and its library's "
                 "symbol table (stripped?) does not name them",
                 a->version);
        return -1;
    }
    if (a->major == 2) {
        sem_var = at[0];
        return 0;
    }
    for (int i = 0; i < 2; i++)
        if (at[i]) {
            range_span[i] = sizeof(pthread_cond_t);
            atomic_store(&range_lo[i], at[i]);
        }
    return 0;
}

int gilstate_install(const pyabi *a, char *err, size_t errlen)
{
    if (atomic_load(&installed))
        return 0;
    int saved = errno;
    int rc = -1;
    char gerr[256] = "";
    if (a->gil_holder >= 0)
        range_span[0] = GILSTATE_SPAN; /* its start comes with the passes */
    else if (find_static_gil(a, err, errlen) < 0)
        goto out;
    if (sem_var ? gotpatch_install(sem_syms, 1, orig_sem, gerr, sizeof gerr) < 0
                : gotpatch_install(syms, W_COUNT, orig, gerr, sizeof gerr) < 0) {
        snprintf(err, errlen, "GIL waits not seen: %s", gerr);
        goto out;
    }
    if (sem_var ? !orig_sem[0] : !orig[W_TIMEDWAIT] || !orig[W_WAIT]) {
        snprintf(err, errlen, "GIL waits not seen: the C library lacks what the GIL waits on");
        goto out;
    }
    atomic_store(&installed, 1);
    rc = 0;
out:
    errno = saved;
    return rc;
}

int gilstate_installed(void) { return atomic_load_explicit(&installed, memory_order_relaxed); }

void gilstate_watch(uintptr_t lo)
{
    if (atomic_load_explicit(&range_lo[0], memory_order_relaxed) != lo)
        atomic_store_explicit(&range_lo[0], lo, memory_order_relaxed);
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
