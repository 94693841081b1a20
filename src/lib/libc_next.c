/*
 * libc_next: the C library's sigaction and pthread_create.  See libc_next.h.
 *
 * dlsym(RTLD_NEXT) from any object of libpyprof.so finds the next definition after the
 * library, which is the C library's: the same answer the interposed wrappers get.
 */
#include "libc_next.h"

#include <dlfcn.h>
#include <errno.h>

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                                 void *);

static sigaction_fn real_sigaction;
static pthread_create_fn real_pthread_create;

int libc_next_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!real_sigaction)
        real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    if (!real_sigaction) {
        errno = ENOSYS;
        return -1;
    }
    return real_sigaction(sig, act, old);
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

void libc_next_init(void)
{
    real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    real_pthread_create = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
}
