/*
 * sysprobe: a system call tried in a child before the process makes it (sysprobe.h).
 */
#include "sysprobe.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* 0 not known yet, 1 allowed, 2 deadly. */
static _Atomic int perf_state;

/* Whether a seccomp filter is in force ("Seccomp: 2" in /proc/self/status). */
static int filtered(void)
{
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1; /* unknown: probe */
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 1;
    buf[n] = 0;
    const char *s = strstr(buf, "\nSeccomp:");
    if (!s)
        return 0; /* a kernel without seccomp */
    s += strlen("\nSeccomp:");
    while (*s == ' ' || *s == '\t')
        s++;
    return *s == '2';
}

/* The child's whole life: SIGSYS at its default (a program's handler must not run in
 * it), the call, exit.  System calls only: the child of a raw clone of a threaded
 * process may find any lock of the C library held. */
static void __attribute__((noreturn)) child_perf(void)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.sample_period = 10000000;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    /* The kernel's struct sigaction (x86_64 and arm64 alike), through the system call:
     * the C library's sigaction is the one preload/ interposes. */
    struct {
        void (*handler)(int);
        unsigned long flags;
        void (*restorer)(void);
        uint64_t mask;
    } dfl = {SIG_DFL, 0, NULL, 0};
    syscall(SYS_rt_sigaction, SIGSYS, &dfl, NULL, sizeof dfl.mask);
    long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd >= 0)
        syscall(SYS_close, fd);
    syscall(SYS_exit_group, 0);
    __builtin_unreachable();
}

int sysprobe_perf_allowed(void)
{
    int st = atomic_load(&perf_state);
    if (st)
        return st == 1;
    int allowed = 1;
    if (filtered()) {
        /* clone with no exit signal: its end sends the program no SIGCHLD, and a wait of
         * the program's (without __WALL or __WCLONE) never collects it. */
        long pid = syscall(SYS_clone, 0, NULL, NULL, NULL, 0);
        if (pid == 0)
            child_perf();
        allowed = 0;
        if (pid > 0) {
            int status = 0;
            long r;
            do
                r = syscall(SYS_wait4, pid, &status, __WALL, NULL);
            while (r < 0 && errno == EINTR);
            allowed = r == pid && WIFEXITED(status);
        }
    }
    atomic_store(&perf_state, allowed ? 1 : 2);
    return allowed;
}
