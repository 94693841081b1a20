/*
 * cli: the one-line error messages, and where the library is.  See cli.h.
 */
#include "cli.h"

#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cli_error(const char *fmt, ...)
{
    va_list ap;
    fputs("pyprof: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "pyprof %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'pyprof help %s'.\n", cmd);
    return CLI_EXIT_USAGE;
}

int cli_bad_option(const char *cmd, int c, char **argv)
{
    const char *opt = argv[optind - 1];
    if (c == ':')
        return cli_usage_error(cmd, "option '%s' needs a value", opt);
    if (strncmp(opt, "--", 2) == 0)
        return cli_usage_error(cmd, "unrecognized option '%s'", opt);
    return cli_usage_error(cmd, "unknown option '-%c'", optopt ? optopt : '?');
}

int cli_oom(void)
{
    cli_error("out of memory");
    return CLI_EXIT_BAD_INPUT;
}

#ifndef PYPROF_LIBDIR
#define PYPROF_LIBDIR "/usr/local/lib"
#endif

int cli_find_library(char *out, size_t len)
{
    char dir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    char *slash = NULL;
    if (n > 0) {
        dir[n] = 0;
        slash = strrchr(dir, '/');
    }
    if (slash)
        *slash = 0;
    const char *const cands[][2] = {
        {slash ? dir : NULL, "libpyprof.so"},
        {slash ? dir : NULL, "../lib/libpyprof.so"},
        {PYPROF_LIBDIR, "libpyprof.so"},
    };
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        char cand[PATH_MAX + 32];
        if (!cands[i][0])
            continue;
        snprintf(cand, sizeof cand, "%s/%s", cands[i][0], cands[i][1]);
        if (access(cand, R_OK) == 0 && realpath(cand, out) && strlen(out) < len)
            return 0;
    }
    return -1;
}
