/*
 * procself: what the process is, as the log's name and header say it: its command line
 * (the one reader of /proc/self/cmdline), program name, executable, host name, and its
 * resident set size from /proc/self/statm.  Every file is opened O_CLOEXEC and closed
 * before returning, so a fork-and-exec of the program never inherits one.  [not sigsafe]
 *
 *   procself_cmdline     the raw command line (arguments, each NUL-terminated)
 *   procself_prog_name   the base name of argv[0] ("unknown" without one)
 *   procself_exe         the target of /proc/self/exe
 *   procself_host        the node name (uname)
 *   procself_rss         the resident set size from an open /proc/self/statm
 */
#ifndef PYPROF_PROCSELF_H
#define PYPROF_PROCSELF_H

#include <stddef.h>
#include <stdint.h>

/* Reads /proc/self/cmdline into buf: at most cap - 1 bytes, then a NUL, so buf is also
 * argv[0] as a C string.  Returns the bytes read (0 when it cannot be read).  A command
 * line longer than cap - 1 is cut: its last argument then has no NUL of its own. */
size_t procself_cmdline(char *buf, size_t cap);

/* The program's name for the log's file name: argv[0] after its last '/'. */
void procself_prog_name(char *out, size_t cap);

/* The executable's path, "" when it cannot be read. */
void procself_exe(char *out, size_t cap);

/* The host's node name, "" when uname fails. */
void procself_host(char *out, size_t cap);

/* The resident set size in bytes from `statm_fd` (open on /proc/self/statm; read with
 * pread, so it stays open for the next).  Returns 0, or -1 when it cannot be read. */
int procself_rss(int statm_fd, uint64_t *rss_bytes);

#endif
