/*
 * replay_main: runs a libFuzzer target over saved inputs without libFuzzer, so that every
 * input that ever failed a target stays fixed (`make fuzz-replay`, part of `make check` and
 * `make test`, links it with each tests/fuzz/fuzz_<name>.c, ASan and UBSan).
 *
 *     fuzz_replay DIR|FILE...
 *
 * Directories are walked recursively; every regular file is one input.  Each input runs
 * in a child process, so one crash (an abort, a fault, a sanitizer report) is counted and
 * named and the others still run.  Prints "N passed, M failed" and exits 1 when M > 0,
 * 2 when an argument cannot be read or nothing was found.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz.h"

/* Inputs larger than this are not fuzz inputs; they are skipped with a warning. */
#define REPLAY_MAX_INPUT (64u << 20)
/* Seconds one input may take before it counts as a hang. */
#define REPLAY_TIMEOUT 60

static unsigned long passed, failed;
static int io_errors;

/* Reads the whole file into a malloc'd buffer. */
static uint8_t *read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    uint8_t *buf = NULL;
    if (fstat(fd, &st) < 0 || st.st_size > (off_t)REPLAY_MAX_INPUT)
        goto cleanup;
    buf = malloc((size_t)st.st_size + 1); /* +1: malloc(0) may return NULL */
    if (!buf)
        goto cleanup;
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            free(buf);
            buf = NULL;
            goto cleanup;
        }
        got += (size_t)n;
    }
    *len = got;
cleanup:
    close(fd);
    return buf;
}

static void run_one(const char *path)
{
    size_t len = 0;
    uint8_t *data = read_file(path, &len);
    if (!data) {
        fprintf(stderr, "fuzz_replay: cannot read %s: %s\n", path,
                errno ? strerror(errno) : "too large");
        io_errors = 1;
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        /* No child: run in this process, a crash then ends the replay, which still
         * fails the build. */
        LLVMFuzzerTestOneInput(data, len);
        passed++;
        free(data);
        return;
    }
    if (pid == 0) {
        alarm(REPLAY_TIMEOUT);
        LLVMFuzzerTestOneInput(data, len);
        _exit(0);
    }
    free(data);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        passed++;
        return;
    }
    failed++;
    if (WIFSIGNALED(status))
        fprintf(stderr, "FAILED %s: killed by signal %d%s\n", path, WTERMSIG(status),
                WTERMSIG(status) == SIGALRM ? " (timeout)" : "");
    else
        fprintf(stderr, "FAILED %s: exit status %d\n", path, WEXITSTATUS(status));
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void walk(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(errno));
        io_errors = 1;
        return;
    }
    if (S_ISREG(st.st_mode)) {
        run_one(path);
        return;
    }
    if (!S_ISDIR(st.st_mode))
        return;
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(errno));
        io_errors = 1;
        return;
    }
    /* Sorted, so that runs print in the same order everywhere. */
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown)
                break;
            names = grown;
        }
        names[n] = strdup(e->d_name);
        if (names[n])
            n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        char child[PATH_MAX];
        if (snprintf(child, sizeof child, "%s/%s", path, names[i]) < (int)sizeof child)
            walk(child);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++)
        walk(argv[i]);
    printf("%lu passed, %lu failed\n", passed, failed);
    if (failed)
        return 1;
    if (io_errors || passed == 0)
        return 2;
    return 0;
}
