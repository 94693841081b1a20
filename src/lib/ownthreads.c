/*
 * ownthreads: the library's threads among the process's.  See ownthreads.h.
 */
#include "ownthreads.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allochook.h"
#include "libc_next.h"

/* The library's threads that have named themselves and not yet ended: counted up in
 * ownthreads_name_self, down by a thread-specific destructor at their exit (which runs
 * just before the thread leaves /proc, so the count is never below what /proc shows for
 * long).  A fork child inherits the parent's count, which is then too high: that only
 * costs it the cheap test below. */
static _Atomic long live_own;
static pthread_key_t live_key;
static pthread_once_t live_once = PTHREAD_ONCE_INIT;

static void own_thread_ended(void *v)
{
    (void)v;
    atomic_fetch_sub(&live_own, 1);
}

static void live_key_make(void)
{
    if (pthread_key_create(&live_key, own_thread_ended) != 0)
        live_key = (pthread_key_t)-1;
}

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>

/* AddressSanitizer builds only.  Our threads are created with the C library's own
 * pthread_create (libc_next.h), past AddressSanitizer's, which therefore never clears
 * the shadow of their stacks.  In a fork child, glibc hands such a thread a stack that a
 * thread of the parent was using at the fork, redzones and all: every frame would then
 * meet stale poison, in the frames below this one and in those of the thread's start
 * routine above it alike (which of the parent's stacks a thread gets, and where its
 * poison lies, depends on the order the parent's threads left glibc's stack cache).  So
 * the whole stack is cleared here: the frames running now lose their redzones' checks,
 * and nothing stale is left. */
__attribute__((noinline)) static void clear_stale_stack_poison(void)
{
    pthread_attr_t attr;
    void *lo;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return;
    int ok = pthread_attr_getstack(&attr, &lo, &size) == 0;
    pthread_attr_destroy(&attr);
    if (ok)
        __asan_unpoison_memory_region(lo, size);
}
#else
static void clear_stale_stack_poison(void) {}
#endif

int ownthreads_start(pthread_t *thread, void *(*start)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = libc_next_pthread_create(thread, NULL, start, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

void ownthreads_name_self(const char *role)
{
    clear_stale_stack_poison();
    allochook_own_thread(); /* what this thread allocates is the library's, never sampled */
    pthread_once(&live_once, live_key_make);
    if (live_key != (pthread_key_t)-1 && !pthread_getspecific(live_key) &&
        pthread_setspecific(live_key, (void *)1) == 0)
        atomic_fetch_add(&live_own, 1);
    char name[16];
    snprintf(name, sizeof name, "%s%s", OWNTHREADS_PREFIX, role);
    pthread_setname_np(pthread_self(), name);
}

/* Reads the start of `path` into buf (NUL-terminated).  Its length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t r = read(fd, buf, cap - 1);
    close(fd);
    if (r < 0)
        return -1;
    buf[r] = 0;
    return r;
}

int ownthreads_scan(long *all, long *ours)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    long n = 0, mine = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        /* "tid (comm) S ...": the name between the first '(' and the last ')' */
        char path[300], stat[512];
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        if (read_small(path, stat, sizeof stat) <= 0)
            continue; /* it ended meanwhile */
        char *open_paren = strchr(stat, '('), *close_paren = strrchr(stat, ')');
        if (!open_paren || !close_paren || close_paren[1] != ' ')
            continue;
        char state = close_paren[2];
        if (state == 'Z' || state == 'X')
            continue;
        n++;
        if (strncmp(open_paren + 1, OWNTHREADS_PREFIX, strlen(OWNTHREADS_PREFIX)) == 0)
            mine++;
    }
    closedir(d);
    *all = n;
    *ours = mine;
    return 0;
}

int ownthreads_stat_num_threads(char *stat, long *n, char **start, char **end)
{
    /* "pid (comm) S ppid ...": the command may hold anything, so fields are counted
     * from its last ')'; field 3 follows it. */
    char *p = strrchr(stat, ')');
    if (!p)
        return -1;
    for (int field = 3; field <= 20; field++) {
        if (*++p != ' ')
            return -1;
        if (field < 20)
            p += strcspn(p + 1, " ");
    }
    p++;
    errno = 0;
    *n = strtol(p, end, 10);
    if (errno || *end == p || **end != ' ')
        return -1;
    *start = p;
    return 0;
}

int ownthreads_program_gone(void)
{
    /* num_threads first: more than ours (and a zombie main thread) means the
     * program's, with no directory to scan. */
    char stat[1024], *start, *end;
    long n;
    if (read_small("/proc/self/stat", stat, sizeof stat) <= 0 ||
        ownthreads_stat_num_threads(stat, &n, &start, &end) < 0 ||
        n > atomic_load(&live_own) + 1)
        return 0;
    /* The thread group's leader (the main thread) stays listed, as a zombie once it has
     * ended: running, it is the program's. */
    char path[64], lstat[1024];
    snprintf(path, sizeof path, "/proc/self/task/%ld/stat", (long)getpid());
    if (read_small(path, lstat, sizeof lstat) > 0) {
        const char *paren = strrchr(lstat, ')');
        if (paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X')
            return 0;
    }
    long all, ours;
    if (ownthreads_scan(&all, &ours) < 0)
        return 0;
    return all > 0 && all == ours;
}

static _Atomic int end_claimed;

int ownthreads_claim_end(void)
{
    if (atomic_load(&end_claimed) || !ownthreads_program_gone())
        return 0;
    return !atomic_exchange(&end_claimed, 1);
}
