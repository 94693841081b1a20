/* A C library of the allocation tests: its own malloc family, through its own GOT, as a C
 * extension's would be.  Loaded with ctypes by tests/integration/workloads/alloc_work.py
 * and alloc_safety.py. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>

void *ext_alloc(size_t n)
{
    char *p = malloc(n);
    if (p)
        memset(p, 1, n < 64 ? n : 64);
    return p;
}

void ext_free(void *p) { free(p); }

/* A block grown by realloc `steps` times, `grow` bytes a step, then freed; its final
 * contents checked.  Returns 1 when every byte survived every move. */
int ext_realloc_chain(int steps, size_t grow)
{
    unsigned char *p = NULL;
    size_t n = 0;
    for (int i = 0; i < steps; i++) {
        unsigned char *q = realloc(p, n + grow);
        if (!q) {
            free(p);
            return 0;
        }
        memset(q + n, (unsigned char)i, grow);
        p = q;
        n += grow;
    }
    int ok = 1;
    for (size_t k = 0; k < n; k++)
        ok &= p[k] == (unsigned char)(k / grow);
    free(p);
    return ok;
}

/* posix_memalign, aligned_alloc, memalign, valloc and calloc blocks of `n` bytes, `count`
 * times each; returns 1 when every one was aligned as asked (and calloc's zeroed). */
int ext_aligned(int count, size_t n)
{
    int ok = 1;
    for (int i = 0; i < count; i++) {
        void *p = NULL;
        ok &= posix_memalign(&p, 256, n) == 0 && ((size_t)p & 255) == 0;
        free(p);
        p = aligned_alloc(64, (n + 63) & ~(size_t)63);
        ok &= p && ((size_t)p & 63) == 0;
        free(p);
        unsigned char *z = calloc(n, 1);
        ok &= z != NULL;
        for (size_t k = 0; z && k < n; k += 97)
            ok &= z[k] == 0;
        free(z);
    }
    return ok;
}

/* A SIGALRM handler that maps and unmaps memory on a timer every `us` microseconds, so
 * allocation hooks run inside a signal handler at any instruction of the program (mmap
 * rather than malloc: the C library's malloc is not reentrant, and a handler's malloc
 * can deadlock in it with or without a profiler); the count of handler runs is kept. */
static volatile long handler_runs;

static void on_alarm(int sig)
{
    (void)sig;
    void *p = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
        memset(p, 2, 64);
        munmap(p, 65536);
    }
    handler_runs++;
}

int ext_alarm_allocs(long us)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    if (sigaction(SIGALRM, &sa, NULL) < 0)
        return -1;
    struct itimerval it = {{0, us}, {0, us}};
    return setitimer(ITIMER_REAL, &it, NULL);
}

long ext_alarm_stop(void)
{
    struct itimerval it;
    memset(&it, 0, sizeof it);
    setitimer(ITIMER_REAL, &it, NULL);
    signal(SIGALRM, SIG_IGN);
    return handler_runs;
}
