/*
 * writer: the log.  Owns the output file; the rounds that drain the handler's rings,
 * turn instruction offsets into lines, deduplicate stacks, read the RSS, compress with
 * LZ4's frame API and write; the header and footer; rotation into a series of files
 * (PYPROF_ROTATE) and the removal of old ones (PYPROF_KEEP).  It has no thread of its
 * own: the window's cron thread (window.c) calls writer_round, and the end of a window
 * calls writer_finish.  Memory stays bounded however long the process runs: the code,
 * stack and thread maps are reset when the handler's code table changes generation.
 * [not sigsafe]
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
 * the interpreter is running, so a process that never runs Python leaves no file).
 * Returns 0, or -1 with a line in `err`.  (After writer_finish, writer_start begins a new
 * log: a new toggle window.) */
int writer_start(const pyprof_config *cfg, const pyabi *abi, const writer_meta *meta, char *err,
                 size_t errlen);

/* One round, on the cron thread, `now` on the monotonic clock: creates the log once the
 * interpreter runs, drains the rings into records, reads the RSS, answers a pending
 * writer_request, starts the next file of a series when one is due, flips the code
 * tables when the handler's fills, re-reads thread names, flushes every PYPROF_FLUSH.
 * Returns how soon the next round is wanted (ns): sooner while the sample ring fills
 * fast. */
uint64_t writer_round(uint64_t now);

/* How long after writer_start the first round is wanted: a fork child that calls exec
 * before it (subprocess's fork-and-exec) creates no log. */
#define WRITER_FIRST_ROUND_NS 100000000ull

/* 1 while a log file is open (being written). */
int writer_writing(void);

/* Drains what is left, writes the footer and closes the log.  The sampler must be
 * stopped first and the rounds over.  `rounds_cpu_ns` is the CPU of the thread that ran
 * the rounds (the footer's writer time).  Only the first call does anything.  `end` is
 * enum pyprof_end; with PYPROF_END_EXEC a log that was not created yet is not created
 * now. */
void writer_finish(int end, int status_known, int status, uint64_t rounds_cpu_ns);

/* In a fork child: drop the parent's file and maps without writing; a new writer_start
 * may follow. */
void writer_forget_in_child(void);

/* Path of the log, once created ("" before). */
const char *writer_path(void);

/* What the control thread may ask of the rounds. */
enum {
    WRITER_REQ_FLUSH = 1, /* drain the rings and flush the file */
    WRITER_REQ_ROTATE = 2 /* finish this file of the series and begin the next */
};

/* [not sigsafe] Has the next round do `op` and waits for it (at most 2 s).  Returns 0
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
 * moment's, not a consistent cut); `rounds_cpu_ns` as for writer_finish, so far. */
void writer_status(writer_status_info *st, uint64_t rounds_cpu_ns);

#endif
