/*
 * writer: the log.  Owns the output file, the writer thread that drains the handler's
 * rings, turns instruction offsets into lines, deduplicates stacks, reads the RSS,
 * compresses with LZ4's frame API and writes; and the header and footer; rotation into a
 * series of files (PYPROF_ROTATE) and the removal of old ones (PYPROF_KEEP).  Memory stays
 * bounded however long the process runs: the code, stack and thread maps are reset when
 * the handler's code table changes generation.  [not sigsafe]
 */
#ifndef PYPROF_WRITER_H
#define PYPROF_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "pyabi.h"

/* What the header says about the process. */
typedef struct writer_meta {
    const char *run_id;
    unsigned window; /* toggle window index */
} writer_meta;

/* Resolves the output path and checks it can be written (the file itself is created once
 * the interpreter is running, so a process that never runs Python leaves no file), then
 * starts the writer thread.  Returns 0, or -1 with a line in `err`. */
int writer_start(const pyprof_config *cfg, const pyabi *abi, const writer_meta *meta, char *err,
                 size_t errlen);
/* (After writer_finish, writer_start begins a new log: a new toggle window.) */

/* Drains what is left, writes the footer and closes the log.  The sampler must be
 * stopped first.  Only the first call does anything.  `end` is enum pyprof_end; with
 * PYPROF_END_EXEC a log that was not created yet is not created now. */
void writer_finish(int end, int status_known, int status);

/* [sigsafe] For a terminating signal's handler: asks the writer thread to stop the
 * sampler and finish the log with `end` (status `status`, the signal number), and returns
 * at once.  Returns 1 when the request was taken, 0 when there is nothing to finish
 * (paused, already finished, not this process's writer). */
int writer_request_end(int end, int status);

/* [sigsafe] 1 once the log is finished (by a requested end or any other). */
int writer_end_done(void);

/* In a fork child: drop the parent's file, thread and maps without writing; a new
 * writer_start may follow. */
void writer_forget_in_child(void);

/* Path of the log, once created ("" before). */
const char *writer_path(void);

/* What the control thread may ask of the writer thread. */
enum {
    WRITER_REQ_FLUSH = 1, /* drain the rings and flush the file */
    WRITER_REQ_ROTATE = 2 /* finish this file of the series and begin the next */
};

/* [not sigsafe] Has the writer thread do `op` and waits for it (at most 2 s).  Returns 0
 * with the log's path (after the request) in `path`, or -1: no log is being written, the
 * writer did not answer in time, or writing failed. */
int writer_request(int op, char *path, size_t cap);

/* What `pyprof ctl status` says of the log. */
typedef struct writer_status_info {
    int open;        /* a log is being written */
    char path[4096]; /* "" when none */
    unsigned seq, window;
    uint64_t samples, dropped, lib_cpu_ns; /* in this file */
    uint32_t snapshot_last;
} writer_status_info;

/* [not sigsafe] Reads the writer's state (from another thread: the numbers are a
 * moment's, not a consistent cut). */
void writer_status(writer_status_info *st);

#endif
