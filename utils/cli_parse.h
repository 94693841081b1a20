/*
 * cli_parse: the values of options, checked: counts, seconds, process ids and
 * --memory's measure.  Each returns 0, or CLI_EXIT_USAGE after printing why (as
 * cli_usage_error does, for command `cmd`).
 *
 * Interface: cli_parse_count, cli_parse_seconds, cli_parse_pid, cli_parse_memory.
 */
#ifndef PYPROF_CLI_PARSE_H
#define PYPROF_CLI_PARSE_H

#include <stdint.h>
#include <sys/types.h>

/* Parses option --`opt`'s value as a whole number from 1 to 1000000 into *v.  Returns 0,
 * or CLI_EXIT_USAGE after printing "--OPT: 'ARG' is not a number from 1 to 1000000". */
int cli_parse_count(const char *cmd, const char *opt, const char *arg, uint32_t *v);

/* Parses option --`opt`'s value as a number of seconds, 0 or more, into *v.  Returns 0,
 * or CLI_EXIT_USAGE after printing "--OPT: 'ARG' is not a number of seconds". */
int cli_parse_seconds(const char *cmd, const char *opt, const char *arg, double *v);

/* Parses a process id (a whole number from 1 up) into *pid.  Returns 0, or
 * CLI_EXIT_USAGE after printing "'ARG' is not a process id". */
int cli_parse_pid(const char *cmd, const char *arg, pid_t *pid);

/* --memory[=alloc|inuse|peak] (allocation sampling): sets *on and the measure *by
 * (ALLOCS_BY_ALLOC without a value, or for "alloc"; ALLOCS_BY_INUSE for "inuse";
 * ALLOCS_BY_PEAK for "peak" where `peak` allows it).  Returns 0, or CLI_EXIT_USAGE after
 * printing why. */
int cli_parse_memory(const char *cmd, const char *arg, int peak, int *on, int *by);

#endif
