/*
 * sigdisp: the held signals and the program's dispositions.  See sigdisp.h.
 *
 * No lock: a program may call sigaction from a signal handler, and the handlers read
 * the table.  A slot's `program` is written only from the program's sigaction calls
 * (and once at take), which the program serializes as it would its own.
 */
#include "sigdisp.h"

#include <stdatomic.h>
#include <string.h>

#include "libc_next.h"

typedef struct held_signal {
    _Atomic int policy; /* enum sigdisp_policy; 0: never taken */
    _Atomic int ours;   /* our handler is the real disposition */
    sigdisp_handler fn;
    int flags;
    sigset_t mask;
    void (*on_yield)(int);
    struct sigaction program;
} held_signal;

static held_signal held[NSIG];

static int valid(int sig) { return sig > 0 && sig < NSIG; }

static int is_default(const struct sigaction *a)
{
    return !(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_DFL;
}

static int install(held_signal *h, int sig, struct sigaction *prev)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = h->fn;
    sa.sa_flags = SA_SIGINFO | h->flags;
    sa.sa_mask = h->mask;
    return libc_next_sigaction(sig, &sa, prev);
}

int sigdisp_take(int sig, sigdisp_handler fn, int flags, const sigset_t *mask,
                 enum sigdisp_policy policy, void (*on_yield)(int sig))
{
    if (!valid(sig))
        return -1;
    held_signal *h = &held[sig];
    h->fn = fn;
    h->flags = flags;
    if (mask)
        h->mask = *mask;
    else
        sigemptyset(&h->mask);
    h->on_yield = on_yield;
    struct sigaction cur;
    if (libc_next_sigaction(sig, NULL, &cur) < 0)
        return -1;
    int was_ours = atomic_load(&h->ours) && cur.sa_sigaction == fn;
    if (policy == SIGDISP_DEFAULT && !was_ours && !is_default(&cur)) {
        /* Held as if the program had replaced ours: its SIG_DFL later puts ours in (a
         * program started with the signal ignored, as a shell starts a background job,
         * that then restores the default). */
        atomic_store(&h->ours, 0);
        h->program = cur;
        atomic_store(&h->policy, (int)policy);
        return 1;
    }
    if (install(h, sig, NULL) < 0)
        return -1;
    if (!was_ours)
        h->program = cur;
    atomic_store(&h->policy, (int)policy);
    atomic_store(&h->ours, 1);
    return 0;
}

int sigdisp_program_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!valid(sig))
        return 0;
    held_signal *h = &held[sig];
    int policy = atomic_load(&h->policy);
    if (!policy)
        return 0;
    if (!atomic_load(&h->ours)) {
        /* Given back (a handler of the program's replaced ours): the C library's, except
         * that SIG_DFL puts ours back for a signal held only at its default. */
        if (policy != SIGDISP_DEFAULT || !act || !is_default(act))
            return 0;
        struct sigaction prev;
        if (install(h, sig, &prev) < 0)
            return 0;
        if (old)
            *old = prev;
        h->program = *act;
        atomic_store(&h->ours, 1);
        return 1;
    }
    struct sigaction prev = h->program;
    if (act) {
        if (policy == SIGDISP_DEFAULT && is_default(act)) {
            h->program = *act;
        } else if (policy == SIGDISP_KEEP) {
            h->program = *act;
        } else {
            /* The program's disposition replaces ours. */
            if (policy == SIGDISP_YIELD && h->on_yield)
                h->on_yield(sig);
            if (libc_next_sigaction(sig, act, NULL) < 0)
                return 0;
            h->program = *act;
            atomic_store(&h->ours, 0);
        }
    }
    if (old)
        *old = prev;
    return 1;
}

int sigdisp_run_program(int sig, siginfo_t *info, void *uc)
{
    if (!valid(sig))
        return 0;
    const struct sigaction *a = &held[sig].program;
    if (a->sa_flags & SA_SIGINFO) {
        if (!a->sa_sigaction)
            return 0;
        a->sa_sigaction(sig, info, uc);
        return 1;
    }
    if (a->sa_handler == SIG_DFL || a->sa_handler == SIG_IGN)
        return 0;
    a->sa_handler(sig);
    return 1;
}

void sigdisp_reset_default(int sig)
{
    if (!valid(sig))
        return;
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    atomic_store(&held[sig].ours, 0);
    libc_next_sigaction_found(sig, &dfl, NULL);
}
