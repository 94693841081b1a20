/*
 * cli_args: one command-line parser for the commands that read logs (--help, the filters
 * every one takes: --pid, --thread, --run, --from, --to, --span, --gil-wait, --task, the
 * --native-glue view option, --root (where native modules are looked for), --json where
 * it is offered, and the command's own options through a callback), then the logs,
 * loaded into a profile with its warnings printed.
 *
 * Interface: CLI_OPT_*, CLI_FILTER_OPTIONS, CLI_FILTER_HELP, cli_filter,
 * cli_filter_option, cli_filter_free, cli_load, cli_command, cli_args, cli_start,
 * cli_args_free, cli_no_logs.
 */
#ifndef PYPROF_CLI_ARGS_H
#define PYPROF_CLI_ARGS_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

#include "read/profile.h"

/* The filter options, as getopt_long `val`s.  Put CLI_FILTER_OPTIONS in a command's long
 * option table and pass those values to cli_filter_option. */
enum {
    CLI_OPT_PID = 0x1000,
    CLI_OPT_THREAD,
    CLI_OPT_RUN,
    CLI_OPT_FROM,
    CLI_OPT_TO,
    CLI_OPT_JSON,
    CLI_OPT_NATIVE_GLUE,
    CLI_OPT_SPAN,
    CLI_OPT_ROOT,
    CLI_OPT_GIL_WAIT,
    CLI_OPT_TASK,
    CLI_OPT_AWAITING,
};
/* clang-format off */
#define CLI_FILTER_OPTIONS                                                                     \
    {"pid", required_argument, NULL, CLI_OPT_PID},                                             \
    {"thread", required_argument, NULL, CLI_OPT_THREAD},                                       \
    {"run", required_argument, NULL, CLI_OPT_RUN},                                             \
    {"from", required_argument, NULL, CLI_OPT_FROM},                                           \
    {"to", required_argument, NULL, CLI_OPT_TO},                                               \
    {"span", required_argument, NULL, CLI_OPT_SPAN},                                           \
    {"gil-wait", no_argument, NULL, CLI_OPT_GIL_WAIT},                                         \
    {"task", required_argument, NULL, CLI_OPT_TASK},                                           \
    {"awaiting", no_argument, NULL, CLI_OPT_AWAITING}
/* clang-format on */

/* The usage lines that describe them, for a command's help text. */
#define CLI_FILTER_HELP                                                                        \
    "  --pid PID        only the process PID (repeatable)\n"                                   \
    "  --thread TID     only the thread with OS thread id TID (repeatable)\n"                  \
    "  --run ID         only the logs of run ID (repeatable)\n"                                \
    "  --from SECONDS   only what happened SECONDS or later after each process started\n"      \
    "  --to SECONDS     only what happened up to SECONDS after each process started\n"         \
    "  --span NAME      only the samples taken inside a span named NAME, on the thread\n"      \
    "                   that started it (repeatable: inside any of the names)\n"               \
    "  --gil-wait       only the samples of threads waiting to take the GIL (logs written\n"   \
    "                   in wall mode)\n"                                                       \
    "  --task GLOB      only the samples of asyncio tasks whose name matches GLOB, and of\n"   \
    "                   the tasks they await (repeatable: any of the globs)\n"                 \
    "  --awaiting       also the samples of asyncio tasks suspended at an await (wall\n"       \
    "                   mode, 3.14+), each standing for a period of its waiting\n"             \
    "  --native-glue    in logs with native frames, also show the interpreter's own C\n"       \
    "                   frames between Python frames and the process and thread start\n"       \
    "  --root DIR       in logs with native frames, look for each module's file under DIR\n"   \
    "                   first (the root file system the process ran in: a chroot, a\n"         \
    "                   container's), then at its recorded path\n"

/* Filter values parsed from the command line; owns its lists. */
typedef struct cli_filter {
    profile_filter f;
    uint64_t *pids, *tids;
    const char **runs, **spans, **tasks;
} cli_filter;

/* If `opt` is a filter option, records `arg` and returns 1; returns 0 for another option,
 * or CLI_EXIT_USAGE (after printing why) when `arg` is bad. */
int cli_filter_option(cli_filter *cf, const char *cmd, int opt, const char *arg);

void cli_filter_free(cli_filter *cf);

/* Loads every path into a new profile (profile_new's filter, options and root), printing
 * each warning (truncated logs) on stderr.  Returns CLI_EXIT_OK with *out set, or
 * CLI_EXIT_BAD_INPUT after printing the error. */
int cli_load(char **paths, int npaths, const profile_filter *filter, unsigned options,
             const char *root, profile **out);

/* A command that reads logs, for cli_start. */
typedef struct cli_command {
    const char *name;             /* "report": in messages as "pyprof report: ..." */
    const char *usage;            /* printed by -h, --help */
    int json;                     /* --json is one of its options */
    const char *shortopts;        /* its own short options, getopt style ("o:"), or "" */
    const struct option *options; /* its own long options, ended by a zero entry */
    /* Takes one of its own options (`c` is the option's getopt value); returns 0, or an
     * exit code after printing why.  NULL when it has none. */
    int (*option)(void *ctx, int c, const char *arg);
    /* After the options, before loading: returns -1 to go on, or an exit code.  NULL:
     * cli_no_logs, the check that at least one log was given. */
    int (*check)(void *ctx, int nlogs);
    unsigned load; /* profile_new options */
    /* Words the command takes before its logs (`trace show TRACE_ID LOG...`): the first
     * `nargs` operands are these, in cli_args.args, not logs. */
    int nargs;
    /* After the options: profile_new options its own options ask for.  NULL: none. */
    unsigned (*load_for)(void *ctx);
} cli_command;

/* What cli_start leaves for the command. */
typedef struct cli_args {
    cli_filter cf;
    int json;      /* --json was given */
    char *root;    /* --root DIR as an absolute path, or NULL */
    char **args;   /* the command's nargs words before the logs */
    unsigned load; /* the profile_new options the logs were loaded with */
    profile *p;    /* the logs, loaded and filtered */
} cli_args;

/* Parses the command line of `cmd` (its options, --help, the filters, --native-glue,
 * --root, --json when offered; getopt's errors as cli_bad_option reports them; a --root
 * that is not a directory is a usage error) and loads the logs it names.
 * Returns -1 with a->p loaded for the command to go on, or the exit code to return now:
 * CLI_EXIT_OK after printing the usage for --help, CLI_EXIT_USAGE or CLI_EXIT_BAD_INPUT
 * after printing why.  Either way the caller ends with cli_args_free. */
int cli_start(const cli_command *cmd, int argc, char **argv, void *ctx, cli_args *a);

void cli_args_free(cli_args *a);

/* The default check: CLI_EXIT_USAGE with "no log given" when nlogs is 0, else -1.
 * nlogs counts the operands after the command's nargs words (negative when some of
 * those are missing). */
int cli_no_logs(const char *cmd, int nlogs);

#endif
