/*
 * cli: what the `pyprof` subcommands share — the exit codes, one-line error messages,
 * one command-line parser for the commands that read logs (--help, the filters every one
 * takes: --pid, --thread, --run, --from, --to, --span, the --native-glue view option, --root
 * (where native modules are looked for), and --json where it is offered; then the
 * logs, loaded into a profile with its warnings printed), UTF-8 checks and small number
 * formatters (JSON is jsonw's).  It also declares every command, for main.c's table.
 *
 * Interface:
 *   exits, errors   CLI_EXIT_*, cli_error, cli_usage_error, cli_bad_option, cli_oom
 *   command line    cli_command, cli_args, cli_start, cli_args_free, cli_no_logs,
 *                   cli_parse_count, cli_parse_seconds, cli_parse_pid; the filters on their
 * own: CLI_OPT_*, CLI_FILTER_OPTIONS, CLI_FILTER_HELP, cli_filter, cli_filter_option,
 *                   cli_filter_free; cli_load
 *   memory          cli_parse_memory, cli_need_allocs, cli_bytes_count
 *   text            cli_put_line, cli_print_func, cli_utf8_dup, cli_pct, cli_fmt_bytes,
 *                   cli_fmt_ns, cli_fmt_unix_ns, cli_print_argv, cli_fmt_end,
 *                   cli_clock_name, cli_drop_name, cli_drop_text, cli_end_text
 *   footer          cli_cost_samples, cli_cost_quantile_ns, cli_clock_drift
 *   output          cli_close_stdout, cli_write_page
 *   installation    cli_find_library
 *   commands        cmd_* and cmd_*_usage
 */
#ifndef PYPROF_CLI_H
#define PYPROF_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "read/aggregate.h"
#include "read/allocs.h"
#include "read/profile.h"

#include "jsonw.h"

/* Exit codes (pyprof(1), EXIT STATUS). */
#define CLI_EXIT_OK 0
#define CLI_EXIT_BAD_INPUT 1
#define CLI_EXIT_USAGE 2

/* The commands: each takes its own name as argv[0] and returns an exit code. */
int cmd_run(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_tree(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_html(int argc, char **argv);
int cmd_ctl(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_systemd(int argc, char **argv);
extern const char cmd_run_usage[];
extern const char cmd_info_usage[];
extern const char cmd_report_usage[];
extern const char cmd_tree_usage[];
extern const char cmd_export_usage[];
extern const char cmd_html_usage[];
extern const char cmd_ctl_usage[];
extern const char cmd_dump_usage[];
extern const char cmd_top_usage[];
extern const char cmd_trace_usage[];
extern const char cmd_diff_usage[];
extern const char cmd_systemd_usage[];

/* Finds libpyprof.so: beside the pyprof executable (the build tree), in ../lib relative
 * to it (an installed prefix), or in the LIBDIR the tool was built for (a distribution's
 * multiarch directory).  Its real path into `out`; 0, or -1 when none is readable. */
int cli_find_library(char *out, size_t len);

/* "pyprof: <message>" and a newline on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "pyprof CMD: <message>", then a hint to `pyprof help CMD`, on stderr.  Returns
 * CLI_EXIT_USAGE so a command can `return cli_usage_error(...)`. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Reports getopt_long's '?' or ':' for `cmd` (opterr must be 0).  Returns
 * CLI_EXIT_USAGE. */
int cli_bad_option(const char *cmd, int c, char **argv);

/* Prints "pyprof: out of memory"; returns CLI_EXIT_BAD_INPUT. */
int cli_oom(void);

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
};
/* clang-format off */
#define CLI_FILTER_OPTIONS                                                                     \
    {"pid", required_argument, NULL, CLI_OPT_PID},                                             \
    {"thread", required_argument, NULL, CLI_OPT_THREAD},                                       \
    {"run", required_argument, NULL, CLI_OPT_RUN},                                             \
    {"from", required_argument, NULL, CLI_OPT_FROM},                                           \
    {"to", required_argument, NULL, CLI_OPT_TO},                                               \
    {"span", required_argument, NULL, CLI_OPT_SPAN},                                           \
    {"gil-wait", no_argument, NULL, CLI_OPT_GIL_WAIT}
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
    "  --native-glue    in logs with native frames, also show the interpreter's own C\n"       \
    "                   frames between Python frames and the process and thread start\n"       \
    "  --root DIR       in logs with native frames, look for each module's file under DIR\n"   \
    "                   first (the root file system the process ran in: a chroot, a\n"         \
    "                   container's), then at its recorded path\n"

/* Filter values parsed from the command line; owns its lists. */
typedef struct cli_filter {
    profile_filter f;
    uint64_t *pids, *tids;
    const char **runs, **spans;
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

/* --memory[=alloc|inuse|peak] (allocation sampling): sets *on and the measure *by
 * (ALLOCS_BY_ALLOC without a value, or for "alloc"; ALLOCS_BY_INUSE for "inuse";
 * ALLOCS_BY_PEAK for "peak" where `peak` allows it).  Returns 0, or CLI_EXIT_USAGE after
 * printing why. */
int cli_parse_memory(const char *cmd, const char *arg, int peak, int *on, int *by);

/* For the views of sampled allocations: -1 when some log of p was written with allocation
 * sampling, else CLI_EXIT_BAD_INPUT after printing "no allocation samples: the logs were
 * written without PYPROF_ALLOC". */
int cli_need_allocs(const profile *p);

/* An estimate of bytes or objects as the outputs give it: rounded to a whole number, 0
 * for anything below 0.5 (and for NaN). */
uint64_t cli_bytes_count(double v);

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

/* Parses option --`opt`'s value as a whole number from 1 to 1000000 into *v.  Returns 0,
 * or CLI_EXIT_USAGE after printing "--OPT: 'ARG' is not a number from 1 to 1000000". */
int cli_parse_count(const char *cmd, const char *opt, const char *arg, uint32_t *v);

/* Parses option --`opt`'s value as a number of seconds, 0 or more, into *v.  Returns 0,
 * or CLI_EXIT_USAGE after printing "--OPT: 'ARG' is not a number of seconds". */
int cli_parse_seconds(const char *cmd, const char *opt, const char *arg, double *v);

/* Parses a process id (a whole number from 1 up) into *pid.  Returns 0, or
 * CLI_EXIT_USAGE after printing "'ARG' is not a process id". */
int cli_parse_pid(const char *cmd, const char *arg, pid_t *pid);

/* Writes the first line of `s` (up to its newline or its end) with every control
 * character shown as '?', so that text from another process cannot move the terminal's
 * cursor; no newline is added. */
void cli_put_line(FILE *f, const char *s);

/* A function as the text outputs name it: "name (file:line)"; a native one as "name
 * [native] (module)", its first line being unknown. */
void cli_print_func(FILE *out, const profile_func *f);

/* A function as the --json outputs name it, inside the caller's object: "name", "file",
 * "line", "kind" ("python" or "native"). */
void cli_json_func(jsonw *w, const profile_func *f);

/* A malloc'ed copy of `s` in which every byte that is not part of valid UTF-8 became
 * U+FFFD, for formats whose strings must be UTF-8; NULL when out of memory. */
char *cli_utf8_dup(const char *s);

/* 100 * part / whole, 0 when whole is 0. */
double cli_pct(uint64_t part, uint64_t whole);

/* From a footer's cost histogram: samples in depth bucket `d`, and the handler time (ns)
 * below which a fraction `q` of them fall, interpolated within its time bucket (an
 * unbounded last bucket counts as twice its lower bound).  0 when the bucket is empty. */
uint64_t cli_cost_samples(const pyprof_footer *f, uint32_t d);
double cli_cost_quantile_ns(const pyprof_footer *f, uint32_t d, double q);

/* From a footer's clock section (clock_kernel_ns > 0): how far the sampling timers ran
 * from the kernel's CPU clock, 100 * (timers / kernel - 1), and in words: *way "ahead of"
 * or "behind", *why the likely cause ("hypervisor steal or interrupt time", or fewer
 * signals than the CPU). */
double cli_clock_drift(const pyprof_footer *f, const char **way, const char **why);

/* "12.3 MiB" into buf. */
const char *cli_fmt_bytes(uint64_t bytes, char *buf, size_t len);

/* "10 ms", "500 us", "1.5 s" into buf. */
const char *cli_fmt_ns(uint64_t ns, char *buf, size_t len);

/* "2024-05-01 12:00:00.123 UTC" into buf. */
const char *cli_fmt_unix_ns(uint64_t ns, char *buf, size_t len);

/* Writes argv as one line a shell would split back the same way. */
void cli_print_argv(FILE *f, char *const *argv, size_t argc);

/* How a process's profiling ended, in words: "exit status 0", "signal 15 (Terminated)",
 * "truncated (no footer)". */
const char *cli_fmt_end(const profile_process *pr, char *buf, size_t len);

/* The name of an enum pyprof_clock: "wall", "cpu" or "unknown". */
const char *cli_clock_name(int clock);

/* The lowercase name of a drop reason ("ring_full") and its description. */
const char *cli_drop_name(int reason);
const char *cli_drop_text(int reason);
/* The text of an enum pyprof_end ("exit", "Py_FinalizeEx"). */
const char *cli_end_text(uint64_t end);

/* Writes a page: template `tpl` (tpl_len bytes) with its "/\*PYPROF_DATA*\/" marker
 * replaced by what write_data(f, ctx) writes (it returns 0 or the errno of a failed
 * write), to `path` ("-": stdout, which main checks).  A page cut short by a write error
 * is removed when it is a regular file.  Returns CLI_EXIT_OK, or CLI_EXIT_BAD_INPUT after
 * printing one line. */
int cli_write_page(const char *cmd, const char *path, const char *tpl, size_t tpl_len,
                   int (*write_data)(FILE *f, void *ctx), void *ctx);

/* Flushes and closes stdout.  Returns 0, or CLI_EXIT_BAD_INPUT after printing one line
 * when anything written to it was lost (a full disk, a closed pipe). */
int cli_close_stdout(void);

#endif
