/*
 * procself: the process's command line, names and RSS.  See procself.h.
 */
#include "procself.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

size_t procself_cmdline(char *buf, size_t cap)
{
    size_t len = 0;
    if (!cap)
        return 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        /* One read gives it all on today's kernels; loop anyway, it costs nothing. */
        ssize_t n;
        while (len < cap - 1 && (n = read(fd, buf + len, cap - 1 - len)) > 0)
            len += (size_t)n;
        close(fd);
    }
    buf[len] = 0;
    return len;
}

void procself_prog_name(char *out, size_t cap)
{
    char cmd[4096];
    size_t n = procself_cmdline(cmd, sizeof cmd);
    const char *base = strrchr(cmd, '/');
    const char *name = n ? (base ? base + 1 : cmd) : "unknown";
    size_t l = strnlen(name, cap - 1);
    memcpy(out, name, l);
    out[l] = 0;
}

void procself_exe(char *out, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", out, cap - 1);
    out[n > 0 ? n : 0] = 0;
}

void procself_host(char *out, size_t cap)
{
    struct utsname u;
    out[0] = 0;
    if (uname(&u) == 0)
        snprintf(out, cap, "%s", u.nodename);
}

int procself_rss(int statm_fd, uint64_t *rss_bytes)
{
    char buf[128];
    ssize_t n = pread(statm_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    unsigned long size_pages, rss_pages;
    if (sscanf(buf, "%lu %lu", &size_pages, &rss_pages) != 2)
        return -1;
    *rss_bytes = (uint64_t)rss_pages * (uint64_t)sysconf(_SC_PAGESIZE);
    return 0;
}
