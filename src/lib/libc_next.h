/*
 * libc_next: the C library's own sigaction, pthread_create, dl_iterate_phdr, dlopen and
 * exit, past the definitions libpyprof.so puts in front of them (preload/interpose.c).
 * The library's own calls go through these, so its signal handlers, threads, module
 * lookups and loads are never taken for the program's, and no code below preload/ calls
 * into the interposer.
 */
#ifndef PYPROF_LIBC_NEXT_H
#define PYPROF_LIBC_NEXT_H

#include <link.h>
#include <pthread.h>
#include <signal.h>

/* [not sigsafe] The C library's sigaction, found (dlsym) at the first call.  -1 with
 * ENOSYS when it has none. */
int libc_next_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* [sigsafe] The same, for a signal handler: only the one found already (every handler
 * of ours was installed through libc_next_sigaction, so it has been).  -1 with ENOSYS
 * before that. */
int libc_next_sigaction_found(int sig, const struct sigaction *act, struct sigaction *old);

/* [not sigsafe] The C library's pthread_create.  EAGAIN when it has none. */
int libc_next_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                             void *(*start)(void *), void *arg);

/* [not sigsafe] The C library's dl_iterate_phdr (takes the loader lock, may malloc).
 * -1 when it has none. */
int libc_next_dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data);

/* [not sigsafe] The C library's dlopen.  Called from libpyprof.so, so the loader takes
 * the library as the caller (its namespace, no RUNPATH), as the interposed dlopen's jump
 * made it for these names.  NULL when it has none. */
void *libc_next_dlopen(const char *file, int mode);

/* [not sigsafe] The C library's exit: the program's atexit handlers and every
 * destructor run (ours finishes the log).  Does not return. */
__attribute__((noreturn)) void libc_next_exit(int status);

/* [not sigsafe] Resolves them all, before any wrapper can run concurrently (constructor). */
void libc_next_init(void);

#endif
