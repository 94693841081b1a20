/*
 * logset: which files are pyprof logs and in what order they come, the one answer the
 * commands share (profile.c, so every command that loads logs; `pyprof top` for a
 * directory).  A file is a log when its content says so, whatever its name: its
 * header reads as a pyprof log's.  A directory's candidates are its regular files with
 * data, in name order; an empty file is a log not yet written, or not a log, and says
 * nothing either way, so it is no candidate (no subdirectory, FIFO or device is either).
 * What a file that does not read means (a warning, an error, nothing) is the caller's.
 *
 * Two orders over the logs read: by series (the files of one process and window, told
 * apart by seq, grouped in the order each series is first met, then by seq: how a
 * rotated series loads as one process), and newest first (by modification time: where
 * the log being written now is, for `top`); and the next file of one process and run
 * after a given one (the next of its series, or the first of a later window).
 *
 * Interface: LOGSET_NAMED, logset_file, logset, logset_add, logset_scan_dir,
 * logset_read_header, logset_not_log, logset_series_order, logset_sort_newest,
 * logset_next, logset_free.
 *
 * Not thread-safe; tool-side only.
 */
#ifndef PYPROF_LOGSET_H
#define PYPROF_LOGSET_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define LOGSET_NAMED (-1) /* logset_file.dir of a file named by the caller */

/* One candidate file. */
typedef struct logset_file {
    char *path;
    int dir;               /* the index the caller gave its directory, or LOGSET_NAMED */
    struct timespec mtime; /* at the scan (zero for a named file) */
    /* logset_read_header: PYPROF_R_OK when the header was read, else the reader's error
     * (PYPROF_R_*), with errno in sys_errno for PYPROF_R_IO. */
    int err, sys_errno;
    /* The header's, when it was read (host and run_id NUL-terminated copies, NUL bytes
     * inside as '?'): */
    uint64_t pid, window, series_start_unix_ns, seq;
    char *host, *run_id;
    /* Whether logset_series_order takes it: 1 once its header was read; the caller may
     * clear it (a filter). */
    int use;
    size_t series; /* logset_series_order: its series, counted from 0 */
} logset_file;

/* Zeroed, an empty set. */
typedef struct logset {
    logset_file *files;
    size_t n, cap;
} logset;

/* Adds `path` (copied) as a candidate found in directory `dir` (LOGSET_NAMED: named by
 * the caller); its header is not read yet.  0, or -1 (errno ENOMEM). */
int logset_add(logset *s, const char *path, int dir);

/* Adds the candidates of directory `path`, in name order, each `dir` = `index`, with
 * its modification time; a name too long for a path is left out.  0, or -1 with errno
 * (the directory cannot be read; ENOMEM). */
int logset_scan_dir(logset *s, const char *path, int index);

/* Reads f's header: sets err (and sys_errno), and with a header its fields and use = 1.
 * 0 (the reader's refusal, out of memory included, is in err), or -1 when out of memory
 * copying the header's strings (err PYPROF_R_NOMEM). */
int logset_read_header(logset_file *f);

/* 1 when f's content says it is not a pyprof log (not LZ4, or no pyprof magic), else 0
 * (a log, one cut before the end of its header, one that could not be read). */
int logset_not_log(const logset_file *f);

/* The files with `use` set, by series then seq: a file joins the first series of its
 * key (host, run id, pid, window, series start) that does not have its seq yet (the
 * same file met twice makes two series); series come in the order they are first met.
 * Sets each one's `series`.  Returns how many, with their indexes in *order (malloc'ed,
 * NULL when none), or -1 when out of memory. */
long logset_series_order(logset *s, size_t **order);

/* Sorts the files newest first by mtime; ties by path. */
void logset_sort_newest(logset *s);

/* The file that comes after (window, seq) for process `pid` of run `run_id`: among the
 * files with a header of that pid and run id and a later (window, seq), the lowest;
 * `skip` (a path, or NULL) is never taken.  Its index, or -1 when there is none. */
long logset_next(const logset *s, uint64_t pid, const char *run_id, uint64_t window,
                 uint64_t seq, const char *skip);

void logset_free(logset *s);

#endif
