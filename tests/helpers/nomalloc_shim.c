/*
 * nomalloc_shim: proves the sampling handler never allocates.
 *
 * Preloaded AFTER libpyprof.so (LD_PRELOAD="libpyprof.so nomalloc_shim.so"), so that
 * libpyprof's dlsym(RTLD_NEXT, "sigaction") finds this file's sigaction.  When the
 * library installs its SIGTRAP or SIGPROF handler, we install a wrapper instead that
 * marks the thread as "inside the handler" around the call.  Our malloc family (the
 * process's, since libpyprof defines none) aborts with a message when called while the
 * mark is set.  A run that ends normally therefore never allocated in the handler.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

static __thread int in_handler;
static void (*wrapped[65])(int, siginfo_t *, void *);

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static void fail(const char *what)
{
    static const char msg[] = "nomalloc_shim: allocation inside the sampling handler: ";
    write(2, msg, sizeof msg - 1);
    write(2, what, strlen(what));
    write(2, "\n", 1);
    _exit(99);
}

void *malloc(size_t n)
{
    if (in_handler)
        fail("malloc");
    return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
    if (in_handler)
        fail("calloc");
    return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
    if (in_handler)
        fail("realloc");
    return __libc_realloc(p, n);
}

void free(void *p)
{
    if (in_handler)
        fail("free");
    __libc_free(p);
}

static void wrapper(int sig, siginfo_t *info, void *uc)
{
    in_handler = 1;
    wrapped[sig](sig, info, uc);
    in_handler = 0;
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    static int (*real)(int, const struct sigaction *, struct sigaction *);
    if (!real)
        real = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT,
                                                                                 "sigaction");
    if (act && (sig == SIGTRAP || sig == SIGPROF) && (act->sa_flags & SA_SIGINFO) &&
        act->sa_sigaction != wrapper) {
        struct sigaction mine = *act;
        wrapped[sig] = act->sa_sigaction;
        mine.sa_sigaction = wrapper;
        return real(sig, &mine, old);
    }
    return real(sig, act, old);
}
