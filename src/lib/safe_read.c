/*
 * safe_read: fault-tolerant reads for the signal handler.  See safe_read.h.
 *
 * Async-signal-safety: safe_fail and the fault handler use __builtin_longjmp (no libc;
 * it only leaves our own guarded reads, which interrupt nothing unsafe), and, for faults
 * that are not ours, the program's own handler (sigdisp_run_program), or
 * sigaction and raise (both on signal-safety(7)).
 */
#include "safe_read.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "sigdisp.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
/* The most stack a guarded region abandons that is unpoisoned (see safe_fail). */
#define ASAN_ABANDONED_MAX (256u * 1024u)
#endif

__thread void **safe_guard_tls __attribute__((tls_model("initial-exec")));

static _Atomic int installed;

SAFE_NO_SANITIZE void safe_fail(void)
{
    void **jb = safe_guard_tls;
    safe_guard_tls = NULL;
#if defined(__SANITIZE_ADDRESS__)
    /* AddressSanitizer builds only.  The frames this jump abandons (between here and the
     * guarded frame's jump buffer) never run the epilogues that clear their redzones, and
     * __builtin_longjmp, unlike longjmp, has no interceptor to clear them: the stale
     * poison would be reported against whatever later lives at those addresses (the next
     * signal's frame, or a thread that gets this stack from glibc's cache).  Clearing it
     * writes shadow memory only, which is safe in a signal handler.  On an alternate
     * signal stack the distance is not that of the abandoned frames: skipped. */
    volatile char here = 0;
    uintptr_t lo = (uintptr_t)&here, hi = (uintptr_t)jb;
    if (hi > lo && hi - lo <= ASAN_ABANDONED_MAX)
        __asan_unpoison_memory_region((const void *)lo, hi - lo);
#endif
    __builtin_longjmp(jb, 1);
}

SAFE_NO_SANITIZE void safe_copy(void *dst, uintptr_t src, uint64_t n)
{
    if (n == 0)
        return;
    if (src < 4096 || src >= 0x800000000000ull || n > 0x800000000000ull - src)
        safe_fail();
    /* volatile byte loop: memcpy might be an unsafe ifunc-selected routine only in
     * theory, but a plain loop keeps every faulting load inside this function. */
    volatile const uint8_t *s = (volatile const uint8_t *)src;
    uint8_t *d = dst;
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, (const void *)(s + i), 8);
        memcpy(d + i, &w, 8);
    }
    for (; i < n; i++)
        d[i] = s[i];
}

SAFE_NO_SANITIZE static void fault_handler(int sig, siginfo_t *info, void *uc)
{
    if (safe_guard_tls)
        safe_fail();
    /* Not ours: behave as the program asked. */
    if (sigdisp_run_program(sig, info, uc))
        return;
    /* Default action (a fault cannot be ignored): reset and return, so the faulting
     * instruction runs again and the kernel applies the default, as without us. */
    sigdisp_reset_default(sig);
    if (info->si_code <= 0) /* sent by kill(), not a real fault: re-send it */
        raise(sig);
}

void safe_read_unblock_faults(void)
{
    sigset_t faults;
    sigemptyset(&faults);
    sigaddset(&faults, SIGSEGV);
    sigaddset(&faults, SIGBUS);
    pthread_sigmask(SIG_UNBLOCK, &faults, NULL);
}

int safe_read_install(void)
{
    if (atomic_load(&installed))
        return 0;
    int flags = SA_NODEFER | SA_ONSTACK | SA_RESTART;
    if (sigdisp_take(SIGSEGV, fault_handler, flags, NULL, SIGDISP_KEEP, NULL) < 0 ||
        sigdisp_take(SIGBUS, fault_handler, flags, NULL, SIGDISP_KEEP, NULL) < 0)
        return -1;
    atomic_store(&installed, 1);
    return 0;
}
