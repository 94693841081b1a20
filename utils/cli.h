/*
 * cli: what every `pyprof` command stands on — the exit codes and the one-line error
 * messages on stderr — and where the library is, for `run` and `systemd` (here because
 * the Makefile builds cli.o, and only it, with the LIBDIR the tool was built for).  The
 * rest the commands share is by concern: cli_args (the command line of the commands that
 * read logs, and the logs loaded), cli_parse (option values), cli_fmt (numbers, sizes,
 * durations, times), cli_text (text from the logs, made safe), cli_log (a log's header
 * and footer in words), cli_output (stdout's end, pages); the commands themselves are
 * declared in cmd.h.
 *
 * Interface: CLI_EXIT_*, cli_error, cli_usage_error, cli_bad_option, cli_oom,
 * cli_find_library.
 */
#ifndef PYPROF_CLI_H
#define PYPROF_CLI_H

#include <stddef.h>

/* Exit codes (pyprof(1), EXIT STATUS). */
#define CLI_EXIT_OK 0
#define CLI_EXIT_BAD_INPUT 1
#define CLI_EXIT_USAGE 2

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

#endif
