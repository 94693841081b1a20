/*
 * cli_parse: the values of options.  See cli_parse.h.
 */
#include "cli_parse.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "read/allocs.h"

#include "cli.h"

static int parse_seconds(const char *s, double *v)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (!s[0] || errno || *end || !isfinite(x) || x < 0)
        return -1;
    *v = x;
    return 0;
}

int cli_parse_pid(const char *cmd, const char *arg, pid_t *pid)
{
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (!arg[0] || *end || errno || v < 1 || v > 0x3fffffff)
        return cli_usage_error(cmd, "'%s' is not a process id", arg);
    *pid = (pid_t)v;
    return 0;
}

int cli_parse_seconds(const char *cmd, const char *opt, const char *arg, double *v)
{
    if (parse_seconds(arg, v) < 0)
        return cli_usage_error(cmd, "--%s: '%s' is not a number of seconds (such as 2.5)", opt,
                               arg);
    return 0;
}

int cli_parse_count(const char *cmd, const char *opt, const char *arg, uint32_t *v)
{
    char *end;
    long x = strtol(arg, &end, 10);
    if (!arg[0] || *end || x < 1 || x > 1000000)
        return cli_usage_error(cmd, "--%s: '%s' is not a number from 1 to 1000000", opt, arg);
    *v = (uint32_t)x;
    return 0;
}

int cli_parse_memory(const char *cmd, const char *arg, int peak, int *on, int *by)
{
    if (!arg || !strcmp(arg, "alloc"))
        *by = ALLOCS_BY_ALLOC;
    else if (!strcmp(arg, "inuse"))
        *by = ALLOCS_BY_INUSE;
    else if (!strcmp(arg, "peak") && peak)
        *by = ALLOCS_BY_PEAK;
    else if (!strcmp(arg, "peak"))
        return cli_usage_error(cmd, "--memory=peak: %s compares alloc or inuse only", cmd);
    else if (!peak)
        return cli_usage_error(cmd, "--memory: '%s' is neither alloc nor inuse", arg);
    else
        return cli_usage_error(cmd, "--memory: '%s' is none of alloc, inuse and peak", arg);
    *on = 1;
    return 0;
}
