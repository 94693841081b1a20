/*
 * main: the `pyprof` command — the table of subcommands, `pyprof help [CMD]`,
 * `pyprof --version`, and the check that everything written to stdout got there.  Each
 * command lives in utils/cmd_NAME.c as cmd_NAME(argc, argv), with argv[0] its name.
 */
#include <stdio.h>
#include <string.h>

#include <pyprof/format.h>
#include <pyprof/pyprof.h>

#include "cli.h"
#include "cli_output.h"
#include "cmd.h"

typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
    const char *usage;
} command;

static const command commands[] = {
    {"run", cmd_run, "run a command with the profiler preloaded, then summarize",
     cmd_run_usage},
    {"report", cmd_report, "top functions, processes, threads and memory (--json)",
     cmd_report_usage},
    {"tree", cmd_tree, "the call tree with total and self shares", cmd_tree_usage},
    {"diff", cmd_diff, "what changed between two profiles, beyond sampling noise (--json)",
     cmd_diff_usage},
    {"export", cmd_export, "write folded, pstats, callgrind, speedscope, pprof or chrome",
     cmd_export_usage},
    {"html", cmd_html, "a self-contained HTML page: flame graph, timeline, memory",
     cmd_html_usage},
    {"trace", cmd_trace, "the traces spans make: list them, show one (--json, --html, --dot)",
     cmd_trace_usage},
    {"info", cmd_info, "metadata of logs and an integrity check", cmd_info_usage},
    {"ctl", cmd_ctl, "send a request to a running profiled process (status, pause, ...)",
     cmd_ctl_usage},
    {"dump", cmd_dump, "every thread's current Python stack of a running process",
     cmd_dump_usage},
    {"top", cmd_top, "a live view of a running process's hottest functions", cmd_top_usage},
    {"systemd", cmd_systemd, "profile a systemd service: write or remove its drop-in",
     cmd_systemd_usage},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fputs("usage: pyprof COMMAND [options] [ARGS...]\n"
          "\n"
          "pyprof samples the Python stacks of whole processes (LD_PRELOAD=libpyprof.so)\n"
          "and reads the logs they write.\n"
          "\n"
          "commands:\n",
          f);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fputs("  help     show this text, or a command's (pyprof help CMD)\n"
          "\n"
          "options:\n"
          "  -h, --help     show this text\n"
          "  -V, --version  show the version\n"
          "\n"
          "Exit status: 0 ok, 1 bad input (a missing, damaged or foreign log), 2 usage.\n"
          "\n"
          "EXAMPLES\n"
          "  pyprof run -- python3 app.py\n"
          "  LD_PRELOAD=/usr/local/lib/libpyprof.so PYPROF_OUTPUT=/tmp/prof vdsm\n"
          "  pyprof report /tmp/prof\n"
          "  pyprof info /tmp/prof/pyprof.vdsm.4242.x1y2z3.lz4\n"
          "  pyprof dump 4242\n"
          "  pyprof top 4242\n",
          f);
}

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(commands[i].name, name))
            return &commands[i];
    return NULL;
}

static int help(int argc, char **argv)
{
    if (argc < 2) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    const command *c = find_command(argv[1]);
    if (!c) {
        cli_error("help: unknown command '%s'; try 'pyprof help'", argv[1]);
        return CLI_EXIT_USAGE;
    }
    fputs(c->usage, stdout);
    return CLI_EXIT_OK;
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "help") || !strcmp(name, "-h") || !strcmp(name, "--help"))
        return help(argc - 1, argv + 1);
    if (!strcmp(name, "-V") || !strcmp(name, "--version")) {
        printf("pyprof %s (log format %d)\n", PYPROF_VERSION_STRING, PYPROF_FORMAT_VERSION);
        return CLI_EXIT_OK;
    }
    const command *c = find_command(name);
    if (!c) {
        cli_error("unknown command '%s'; try 'pyprof help'", name);
        return CLI_EXIT_USAGE;
    }
    return c->fn(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
    int rc = dispatch(argc, argv);
    /* Output that did not arrive is a failure, whatever the command thought. */
    int out = cli_close_stdout();
    return rc ? rc : out;
}
