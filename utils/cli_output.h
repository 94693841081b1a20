/*
 * cli_output: what the commands write besides their lines of text — the check that
 * everything written to stdout got there, and a page (an HTML template with the
 * command's data written into it).
 *
 * Interface: cli_close_stdout, cli_write_page.
 */
#ifndef PYPROF_CLI_OUTPUT_H
#define PYPROF_CLI_OUTPUT_H

#include <stddef.h>
#include <stdio.h>

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
