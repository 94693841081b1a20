/*
 * cmd_ctl: `pyprof ctl PID REQUEST [ARG]` — sends one request to a profiled process's
 * control socket (docs/CONTROL.md) and prints the reply.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_parse.h"
#include "cli_text.h"
#include "cmd.h"
#include "ctlclient.h"

const char cmd_ctl_usage[] =
    "usage: pyprof ctl PID REQUEST [ARG]\n"
    "\n"
    "Sends REQUEST to the profiled process PID over its control socket (the abstract\n"
    "Unix socket \"\\0pyprof.PID\"; see docs/CONTROL.md) and prints the reply.  The\n"
    "process must run under the library with PYPROF_CONTROL unset or 1, as the same\n"
    "user as pyprof (or pyprof runs as root).\n"
    "\n"
    "requests:\n"
    "  status           state, period, clock, current log, samples and drops\n"
    "  pause            finish the current log and stop sampling\n"
    "  resume           start sampling again, in a new log\n"
    "  flush            write everything sampled so far to the log\n"
    "  rotate           finish the current log and begin the next of the series\n"
    "  period DURATION  sample every DURATION (10ms, 500us, 0.01) from now on\n"
    "  clock cpu|wall   sample by CPU time or by wall-clock time from now on\n"
    "  dump             write every thread's stack into the log (pyprof dump reads it)\n"
    "  heap [--json]    with PYPROF_ALLOC: flush, then print what the sampled\n"
    "                   allocations still in use now hold, by function (the logs of\n"
    "                   the process so far: pyprof report --memory=inuse --pid PID)\n"
    "\n"
    "options:\n"
    "  -h, --help       show this text\n"
    "\n"
    "The reply is printed as it came; when it is an error, its line goes to stderr.\n"
    "Exit status: 0 when the reply starts with \"ok\", 1 when it is an error, when PID\n"
    "has no control socket or cannot be reached, 2 usage.\n"
    "\n"
    "EXAMPLES\n"
    "  pyprof ctl 4242 status\n"
    "  pyprof ctl 4242 period 1ms\n"
    "  pyprof ctl 4242 pause\n"
    "  pyprof ctl 4242 heap\n";

/* `heap`: the process flushes its log, and the files of its series in that directory are
 * read as `report --memory=inuse --pid PID` reads them: the blocks sampled and not freed
 * up to now.  The process is not stopped; a log still being written is read up to where
 * it was flushed. */
static int heap_report(pid_t pid, const char *reply, int json)
{
    const char *path = reply + 11;
    if (strncmp(reply, "ok flushed ", 11) != 0 || !path[0] || path[0] == '\n') {
        fprintf(stderr, "pyprof ctl: pid %ld has no log to read the heap from: ", (long)pid);
        cli_put_line(stderr, reply);
        fputc('\n', stderr);
        return CLI_EXIT_BAD_INPUT;
    }
    char *dir = strdup(path);
    if (!dir)
        return cli_oom();
    dir[strcspn(dir, "\n")] = 0;
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = 0;
    char pidarg[32];
    snprintf(pidarg, sizeof pidarg, "%ld", (long)pid);
    char *args[7] = {(char *)"report", (char *)"--memory=inuse", (char *)"--pid", pidarg};
    int n = 4;
    if (json)
        args[n++] = (char *)"--json";
    args[n++] = dir;
    args[n] = NULL;
    int rc = cmd_report(n, args);
    free(dir);
    return rc;
}

int cmd_ctl(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        fputs(cmd_ctl_usage, stdout);
        return CLI_EXIT_OK;
    }
    int first = 1;
    if (argc >= 2 && !strcmp(argv[1], "--"))
        first = 2;
    if (argc - first < 2)
        return cli_usage_error("ctl", argc - first < 1 ? "no PID given" : "no REQUEST given");
    if (argc - first > 3)
        return cli_usage_error("ctl", "too many arguments (a request takes one value at most)");
    pid_t pid;
    int rc = cli_parse_pid("ctl", argv[first], &pid);
    if (rc)
        return rc;
    const char *req = argv[first + 1], *arg = argc - first == 3 ? argv[first + 2] : NULL;
    if (!req[0] || strchr(req, '\n') || (arg && strchr(arg, '\n')))
        return cli_usage_error("ctl", "a request is one line of text");
    int heap = !strcmp(req, "heap");
    if (heap && arg && strcmp(arg, "--json"))
        return cli_usage_error("ctl", "heap takes --json only");
    int heap_json = heap && arg;
    if (heap) {
        req = "flush";
        arg = NULL;
    }

    size_t n = strlen(req) + (arg ? strlen(arg) + 1 : 0) + 1;
    char *line = malloc(n);
    if (!line)
        return cli_oom();
    snprintf(line, n, "%s%s%s", req, arg ? " " : "", arg ? arg : "");
    char *reply, err[256];
    rc = ctl_request(pid, line, &reply, err, sizeof err);
    free(line);
    if (rc == CTL_NO_SOCKET) {
        fprintf(stderr, "pyprof ctl: %s\n", ctl_no_socket_text(pid, err, sizeof err));
        return CLI_EXIT_BAD_INPUT;
    }
    if (rc != CTL_OK) {
        fprintf(stderr, "pyprof ctl: %s\n", err);
        return CLI_EXIT_BAD_INPUT;
    }
    int kind = ctl_reply_kind(reply);
    if (kind < 0) {
        fputs("pyprof ctl: ", stderr);
        cli_put_line(stderr, reply);
        fputc('\n', stderr);
        free(reply);
        return CLI_EXIT_BAD_INPUT;
    }
    if (kind == 0) {
        fprintf(stderr, "pyprof ctl: unexpected reply from pid %ld: ", (long)pid);
        cli_put_line(stderr, reply);
        fputc('\n', stderr);
        free(reply);
        return CLI_EXIT_BAD_INPUT;
    }
    if (heap) {
        rc = heap_report(pid, reply, heap_json);
        free(reply);
        return rc;
    }
    fputs(reply, stdout);
    if (reply[strlen(reply) - 1] != '\n')
        putchar('\n');
    free(reply);
    return CLI_EXIT_OK;
}
