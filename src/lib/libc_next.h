/*
 * libc_next: the C library's own sigaction, pthread_create and dl_iterate_phdr, past the definitions
 * libpyprof.so puts in front of them (preload/interpose.c).  The library's own signal
 * handlers and threads go through these, so they are never taken for the program's.
 */
#ifndef PYPROF_LIBC_NEXT_H
#define PYPROF_LIBC_NEXT_H

#include <link.h>
#include <pthread.h>
#include <signal.h>

/* [sigsafe once resolved] The C library's sigaction.  -1 with ENOSYS when it has none. */
int libc_next_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* [not sigsafe] The C library's pthread_create.  EAGAIN when it has none. */
int libc_next_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                             void *(*start)(void *), void *arg);

/* [not sigsafe] The C library's dl_iterate_phdr (takes the loader lock, may malloc).
 * -1 when it has none. */
int libc_next_dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data);

/* [not sigsafe] Resolves them all, before any wrapper can run concurrently (constructor). */
void libc_next_init(void);

#endif
