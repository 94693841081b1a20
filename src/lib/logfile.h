/*
 * logfile: the log on disk.  Where it goes (PYPROF_OUTPUT: a directory, or a file-name
 * template; the default is $TMPDIR or /tmp), how it is created (O_CREAT | O_EXCL |
 * O_NOFOLLOW | O_CLOEXEC, mode 0600, a random suffix when the name is taken; the sequence
 * number of a rotated series in the name), and the LZ4
 * frame it holds: records are staged uncompressed, compressed LOGFILE_STAGE_BYTES at a
 * time, and flushed on request, so a killed process leaves a log readable up to the last
 * flush.  The first failed write is reported once; from then on the data is discarded
 * (`failed`), never retried.  [not sigsafe]
 *
 *   logfile_check_dir   the directory a PYPROF_OUTPUT names, checked writable
 *   logfile_init        an unopened log with its stage
 *   logfile_open        creates the file, starts the frame and stages the magic
 *   logfile_emit        appends one record (type + payload)
 *   logfile_flush       compresses the stage and flushes the frame to the file
 *   logfile_close       ends the frame and closes the file
 *   logfile_free        drops everything without writing (a fork child, a new window)
 */
#ifndef PYPROF_LOGFILE_H
#define PYPROF_LOGFILE_H

#include <limits.h>
#include <lz4frame.h>
#include <stddef.h>
#include <stdint.h>

#include "common/record.h"

#define LOGFILE_STAGE_BYTES (64u << 10) /* uncompressed records per compress call */

typedef struct logfile {
    int fd;              /* -1 until logfile_open, and after logfile_close */
    int failed;          /* creating or writing failed: data is discarded from then on */
    char path[PATH_MAX]; /* the log, once created ("" before) */
    LZ4F_cctx *cctx;
    uint8_t *stage; /* LOGFILE_STAGE_BYTES */
    size_t stage_len;
    uint64_t written; /* bytes written to the file so far */
    uint8_t *out;     /* compressed output */
    size_t out_cap;
    void (*write_failed)(void); /* called once, when the first write fails (may be NULL) */
} logfile;

/* What the log's name is made of: PYPROF_OUTPUT's template variables
 * (config_expand_template). */
typedef struct logfile_naming {
    const char *output; /* PYPROF_OUTPUT: "" (default), a directory, or a template */
    long pid, ppid;
    const char *prog, *host, *run_id;
    uint64_t start_unix_ns; /* for %t */
    unsigned seq;           /* the file's place in its series (%s) */
    int series;             /* rotating: the name carries seq even without %s */
} logfile_naming;

/* The directory of the logs `output` names, into dir; it must exist and be writable now,
 * so a bad PYPROF_OUTPUT is reported when profiling starts.  Returns 0, or -1 with a line
 * in `err`. */
int logfile_check_dir(const char *output, char *dir, size_t dircap, char *err, size_t errlen);

/* An unopened log (fd -1) with its stage allocated.  Returns 0, or -1 when memory is
 * short. */
int logfile_init(logfile *lf, void (*write_failed)(void));

/* Creates the file, writes the LZ4 frame header and stages the magic: the caller emits
 * the HEADER record next.  Returns 0, or -1 with `failed` set (and a line on stderr). */
int logfile_open(logfile *lf, const logfile_naming *n);

/* Appends a record.  A record larger than the stage is compressed on its own. */
void logfile_emit(logfile *lf, uint8_t type, const rec_out *payload);

/* Compresses what is staged and flushes the frame, so the file is readable up to here. */
void logfile_flush(logfile *lf);

/* Compresses what is staged, ends the frame, closes the file (fd -1). */
void logfile_close(logfile *lf);

/* Closes the descriptor without writing and frees the buffers: lf is as zeroed, fd -1. */
void logfile_free(logfile *lf);

#endif
