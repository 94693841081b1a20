/*
 * cli_text: text that comes from the logs (names, files, command lines, other processes'
 * words), written so that it cannot move the terminal's cursor, or as valid UTF-8, and a
 * function as the text and --json outputs name it.
 *
 * Interface: cli_put_line, cli_print_func, cli_json_func, cli_utf8_dup, cli_print_argv.
 */
#ifndef PYPROF_CLI_TEXT_H
#define PYPROF_CLI_TEXT_H

#include <stddef.h>
#include <stdio.h>

#include "read/profile.h"

#include "jsonw.h"

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

/* Writes argv as one line a shell would split back the same way. */
void cli_print_argv(FILE *f, char *const *argv, size_t argc);

#endif
