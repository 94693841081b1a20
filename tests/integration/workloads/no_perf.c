/*
 * no_perf: runs a program in which perf_event_open(2) fails with EACCES, as it does on a
 * machine whose perf_event_paranoid forbids it, so that the library falls back to its
 * tick-based POSIX CPU timer (SIGPROF).  For the integration tests (test_faults.py
 * compiles it).
 *
 *     no_perf PROGRAM [ARGS...]
 *
 * A seccomp filter (no new privileges needed: PR_SET_NO_NEW_PRIVS first) answers
 * perf_event_open with EACCES and allows everything else; then PROGRAM is exec'd.  With
 * NO_PERF_KILL=1 in the environment it kills the process instead (SIGSYS), as a systemd
 * unit's SystemCallFilter= without SystemCallErrorNumber= does for a call it leaves out.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "no_perf: unknown architecture"
#endif

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PROGRAM [ARGS...]\n", argv[0]);
        return 2;
    }
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    const char *kill = getenv("NO_PERF_KILL");
    if (kill && !strcmp(kill, "1"))
        filter[5] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    struct sock_fprog prog = {.len = sizeof filter / sizeof filter[0], .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
        fprintf(stderr, "no_perf: cannot install the seccomp filter: %s\n", strerror(errno));
        return 127;
    }
    execvp(argv[1], argv + 1);
    fprintf(stderr, "no_perf: cannot run %s: %s\n", argv[1], strerror(errno));
    return 127;
}
