/*
 * libc_next: the C library's sigaction, pthread_create, dl_iterate_phdr, dlopen and
 * exit.  See libc_next.h.
 *
 * dlsym(RTLD_NEXT) from any object of libpyprof.so finds the next definition after the
 * library, which is the C library's: the same answer the interposed wrappers get.
 */
#include "libc_next.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                                 void *);

typedef int (*dl_iterate_phdr_fn)(int (*)(struct dl_phdr_info *, size_t, void *), void *);
typedef void *(*dlopen_fn)(const char *, int);
typedef void (*exit_fn)(int);

static sigaction_fn real_sigaction;
static dl_iterate_phdr_fn real_dl_iterate_phdr;
static pthread_create_fn real_pthread_create;
static dlopen_fn real_dlopen;
static exit_fn real_exit;

int libc_next_sigaction_found(int sig, const struct sigaction *act, struct sigaction *old)
{
    sigaction_fn fn = real_sigaction;
    if (!fn) {
        errno = ENOSYS;
        return -1;
    }
    return fn(sig, act, old);
}

int libc_next_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!real_sigaction)
        real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    return libc_next_sigaction_found(sig, act, old);
}

int libc_next_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                             void *(*start)(void *), void *arg)
{
    if (!real_pthread_create)
        real_pthread_create = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
    if (!real_pthread_create)
        return EAGAIN;
    return real_pthread_create(thread, attr, start, arg);
}

int libc_next_dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
    if (!real_dl_iterate_phdr)
        real_dl_iterate_phdr = (dl_iterate_phdr_fn)dlsym(RTLD_NEXT, "dl_iterate_phdr");
    if (!real_dl_iterate_phdr)
        return -1;
    return real_dl_iterate_phdr(cb, data);
}

void *libc_next_dlopen(const char *file, int mode)
{
    if (!real_dlopen)
        real_dlopen = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
    if (!real_dlopen)
        return NULL;
    return real_dlopen(file, mode);
}

void libc_next_exit(int status)
{
    if (!real_exit)
        real_exit = (exit_fn)dlsym(RTLD_NEXT, "exit");
    if (!real_exit)
        abort(); /* unreachable: every C library has exit */
    real_exit(status);
    __builtin_unreachable();
}

void libc_next_init(void)
{
    real_dl_iterate_phdr = (dl_iterate_phdr_fn)dlsym(RTLD_NEXT, "dl_iterate_phdr");
    real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    real_pthread_create = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
    real_dlopen = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
    real_exit = (exit_fn)dlsym(RTLD_NEXT, "exit");
}
