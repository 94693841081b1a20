/*
 * procstat: /proc/self/stat without the library's threads.  See procstat.h.
 *
 * Runs in the program's thread that calls fopen, never in a signal handler.  The copy is
 * an anonymous memory file (memfd), so the stream behaves like one on a real file:
 * fileno, fstat, seeking and fclose work, and the descriptor is close-on-exec exactly
 * when the mode asks for it ("e").
 */
#include "procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/ownthreads.h"

/* The stat line is a few hundred bytes; a longer one is left alone. */
#define STAT_MAX 4096

/* Is `path` this process's stat file? */
static int is_own_stat(const char *path)
{
    if (strncmp(path, "/proc/", 6) != 0)
        return 0; /* every other fopen: one comparison */
    if (strcmp(path, "/proc/self/stat") == 0)
        return 1;
    char mine[48];
    snprintf(mine, sizeof mine, "/proc/%ld/stat", (long)getpid());
    return strcmp(path, mine) == 0;
}

/* Rewrites field 20 of the stat line in `buf` (length *len, capacity STAT_MAX) to its
 * value minus `hide`.  0 when the line does not have the expected shape. */
static int hide_threads(char *buf, size_t *len, long hide)
{
    buf[*len] = 0;
    char *p, *end;
    long n;
    if (ownthreads_stat_num_threads(buf, &n, &p, &end) < 0 || n <= hide)
        return 0;
    char num[24];
    int numlen = snprintf(num, sizeof num, "%ld", n - hide);
    size_t tail = *len - (size_t)(end - buf);
    memmove(p + numlen, end, tail + 1);
    memcpy(p, num, (size_t)numlen);
    *len = (size_t)(p + numlen - buf) + tail;
    return 1;
}

FILE *procstat_fopen(const char *path, const char *mode)
{
    if (!path || !mode || mode[0] != 'r' || strchr(mode, '+') || !is_own_stat(path))
        return NULL;
    int saved = errno;
    long all, hide = 0;
    if (ownthreads_scan(&all, &hide) < 0)
        hide = 0;
    FILE *f = NULL;
    int in = -1, out = -1;
    if (hide <= 0)
        goto done;
    in = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    char buf[STAT_MAX + 1];
    ssize_t r = in < 0 ? -1 : read(in, buf, STAT_MAX);
    size_t len = r > 0 ? (size_t)r : 0;
    if (!len || len == STAT_MAX || !hide_threads(buf, &len, hide))
        goto done;
    out = memfd_create("stat", strchr(mode, 'e') ? MFD_CLOEXEC : 0);
    if (out < 0 || write(out, buf, len) != (ssize_t)len || lseek(out, 0, SEEK_SET) != 0)
        goto done;
    f = fdopen(out, mode);
    if (f)
        out = -1;
done:
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    errno = saved;
    return f;
}
