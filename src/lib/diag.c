/*
 * diag: stderr lines.  See diag.h.
 */
#include "diag.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int quiet_flag, verbose_flag;

void diag_set(int quiet, int verbose)
{
    quiet_flag = quiet;
    verbose_flag = verbose && !quiet;
}

int diag_is_verbose(void) { return verbose_flag; }

static void emit(const char *fmt, va_list ap)
{
    int saved = errno;
    char line[1024];
    int off = 8;
    memcpy(line, "pyprof: ", 8);
    int n = vsnprintf(line + off, sizeof line - (size_t)off - 1, fmt, ap);
    if (n >= 8 && strncmp(line + off, "pyprof: ", 8) == 0) {
        memmove(line, line + off, strlen(line + off) + 1);
        off = 0;
    }
    size_t len = (size_t)off + (n < 0 ? 0 : (size_t)n);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    for (size_t done = 0; done < len;) {
        ssize_t w = write(STDERR_FILENO, line + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    errno = saved;
}

void diag_error(const char *fmt, ...)
{
    if (quiet_flag)
        return;
    va_list ap;
    va_start(ap, fmt);
    emit(fmt, ap);
    va_end(ap);
}

void diag_verbose(const char *fmt, ...)
{
    if (!verbose_flag)
        return;
    va_list ap;
    va_start(ap, fmt);
    emit(fmt, ap);
    va_end(ap);
}
