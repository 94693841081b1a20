/*
 * reader: reads a pyprof log (include/pyprof/format.h) record by record.
 *
 * The reader owns the file and its buffers; a record it returns points into them and is
 * valid until the next call.  It never trusts the file: every length is checked, and a
 * log cut short (no footer, a partial LZ4 block, a partial record) yields every whole
 * record before the cut and then PYPROF_R_TRUNCATED, so a caller can report what survived.
 *
 * Interface: PYPROF_READER_ERRORS, enum pyprof_reader_error, pyprof_reader_strerror,
 * pyprof_str, pyprof_str_dup, pyprof_header, pyprof_thread_rec, pyprof_code_rec, pyprof_frame,
 * pyprof_stack_rec, pyprof_sample_rec, pyprof_rss_rec, pyprof_segment, pyprof_module_rec,
 * pyprof_nstack_rec, pyprof_snap_thread, pyprof_snapshot_rec, pyprof_span_start_rec,
 * pyprof_span_stop_rec, PYPROF_ALLOC_ORDINAL, pyprof_alloc_rec, pyprof_free_rec,
 * pyprof_awindow_rec, PYPROF_COST_MAX, pyprof_footer,
 * pyprof_record, pyprof_reader, pyprof_reader_open, pyprof_reader_open_mem,
 * pyprof_reader_header, pyprof_reader_next, pyprof_reader_follow, pyprof_reader_offset,
 * pyprof_reader_close.
 */
#ifndef PYPROF_READER_H
#define PYPROF_READER_H

#include <stddef.h>
#include <stdint.h>

#include <pyprof/format.h>

/* X(name, text): the reader's errors; functions return 0 or -PYPROF_R_name. */
#define PYPROF_READER_ERRORS(X)                                                                \
    X(OK, "no error")                                                                          \
    X(IO, "cannot read file")                                                                  \
    X(NOT_LZ4, "not a pyprof log (not LZ4-compressed)")                                        \
    X(NOT_PYPROF, "not a pyprof log (bad magic)")                                              \
    X(NEWER, "log written by a newer pyprof (format version too new)")                         \
    X(CORRUPT, "log is corrupted")                                                             \
    X(TRUNCATED, "log is truncated (the process was killed or crashed)")                       \
    X(NOMEM, "out of memory")                                                                  \
    X(AGAIN, "no more data yet (the log is still being written)")

enum pyprof_reader_error {
#define PYPROF_X_ENUM(name, text) PYPROF_R_##name,
    PYPROF_READER_ERRORS(PYPROF_X_ENUM)
#undef PYPROF_X_ENUM
};

const char *pyprof_reader_strerror(int err);

/* A string inside a record: not NUL-terminated. */
typedef struct pyprof_str {
    const char *s;
    size_t len;
} pyprof_str;

/* A NUL-terminated copy of `s` (malloc'ed; NULL when out of memory); NUL bytes inside
 * become '?', so the copy is the same string for every later strlen. */
char *pyprof_str_dup(pyprof_str s);

typedef struct pyprof_header {
    uint64_t format_version, pid, ppid, start_unix_ns, python_hex, period_ns, max_depth, flags,
        window;
    /* Rotated series (0 in logs of older writers and in the first file of a series). */
    uint64_t seq, series_start_unix_ns, offset_us;
    /* Allocation sampling's mean interval in bytes (0: not sampled, or an older writer). */
    uint64_t alloc_interval;
    pyprof_str run_id, host, exe, python_version, timer;
    uint64_t argc;
    const pyprof_str *argv; /* argc entries */
    uint8_t clock;
} pyprof_header;

typedef struct pyprof_thread_rec {
    uint64_t thread_idx, tid;
    pyprof_str name;
} pyprof_thread_rec;

typedef struct pyprof_code_rec {
    uint64_t code_id, flags;
    int64_t first_line;
    pyprof_str name, qualname, filename, line_table;
    uint8_t line_table_kind;
} pyprof_code_rec;

typedef struct pyprof_frame {
    uint64_t code_id;
    int64_t line;
} pyprof_frame;

typedef struct pyprof_stack_rec {
    uint64_t stack_id, nframes;
    const pyprof_frame *frames; /* outermost first */
    /* Native logs: the frames grouped by eval-loop activation, outermost first (run
     * lengths adding up to nframes).  nruns 0: not recorded. */
    uint64_t nruns;
    const uint32_t *runs;
    uint64_t gil; /* enum pyprof_gil; PYPROF_GIL_UNKNOWN when not recorded */
} pyprof_stack_rec;

/* Timed records carry the absolute time, already summed from the dt fields. */
typedef struct pyprof_sample_rec {
    int64_t t_us; /* since start of profiling */
    uint64_t thread_idx, stack_id, cpu_us;
    uint64_t nstack_id;    /* native logs: the NSTACK, 0 = none */
    uint64_t native_flags; /* PYPROF_NATIVE_F_* */
} pyprof_sample_rec;

typedef struct pyprof_segment {
    uint64_t vaddr, memsz, file_offset, flags;
} pyprof_segment;

typedef struct pyprof_module_rec {
    uint64_t module_id, base, nseg, dev, ino, size, mtime_ns;
    pyprof_str path, build_id; /* build_id: raw bytes */
    const pyprof_segment *segs;
} pyprof_module_rec;

typedef struct pyprof_nstack_rec {
    uint64_t nstack_id, n;
    const uint64_t *addrs; /* outermost first; the last is the interrupted instruction */
} pyprof_nstack_rec;

typedef struct pyprof_snap_thread {
    uint64_t thread_idx, stack_id, flags; /* flags: PYPROF_SNAP_F_* */
    uint8_t os_state;                     /* 'R', 'S', 'D', ...; 0 unknown */
} pyprof_snap_thread;

typedef struct pyprof_snapshot_rec {
    uint64_t snapshot_id;
    int64_t t_us; /* since start of profiling of this file */
    uint64_t nthreads;
    const pyprof_snap_thread *threads;
} pyprof_snapshot_rec;

typedef struct pyprof_span_start_rec {
    uint64_t span_id, thread_idx, parent_span_id;
    int64_t t_us; /* since start of profiling of this file */
    pyprof_str name, trace_id, parent_id, base_id, info;
} pyprof_span_start_rec;

typedef struct pyprof_span_stop_rec {
    uint64_t span_id, thread_idx;
    int64_t t_us; /* since start of profiling of this file */
    pyprof_str info;
} pyprof_span_stop_rec;

/* The address of a block that an ALLOCS record names by its ordinal (no real address
 * has this bit; a reader takes one that has it as corruption): PYPROF_ALLOC_ORDINAL | ordinal,
 * in its ALLOC and in its FREE. */
#define PYPROF_ALLOC_ORDINAL (1ull << 63)

typedef struct pyprof_alloc_rec {
    int64_t t_us; /* since start of profiling of this file */
    uint64_t thread_idx, stack_id, size, flags;
    uint64_t address;   /* or PYPROF_ALLOC_ORDINAL | ordinal */
    uint64_t nstack_id; /* native logs: the NSTACK, 0 = none */
    uint8_t domain;     /* enum pyprof_alloc_domain */
} pyprof_alloc_rec;

typedef struct pyprof_free_rec {
    int64_t t_us;     /* since start of profiling of this file */
    uint64_t address; /* or PYPROF_ALLOC_ORDINAL | ordinal */
} pyprof_free_rec;

/* An allocation window (AWINDOW), or with PYPROF_AWINDOW_F_PAUSED the start of a pause of
 * the windows.  shift and floor_shift are at most PYPROF_ALLOC_SHIFT_MAX (more is
 * corruption); flags are the record's, bits this reader does not know included (a user
 * tests the PYPROF_AWINDOW_F_* bits it knows). */
typedef struct pyprof_awindow_rec {
    int64_t t_us; /* since start of profiling of this file, as an ALLOC's */
    uint64_t len_us, planned_us, shift, floor_shift, flags;
} pyprof_awindow_rec;

typedef struct pyprof_rss_rec {
    int64_t t_us;
    uint64_t rss_bytes;
} pyprof_rss_rec;

#define PYPROF_COST_MAX 16 /* cost-histogram buckets a reader keeps, per dimension */

typedef struct pyprof_footer {
    uint64_t end_unix_ns, duration_ns, samples, signals, end, achieved_hz_milli, lib_cpu_ns;
    uint64_t dropped[PYPROF_DROP_COUNT]; /* by enum pyprof_drop */
    int64_t status;
    uint8_t status_known;
    /* The optional cost section (0 in logs of older writers). */
    uint8_t has_cost;
    uint64_t handler_ns, writer_ns;
    uint32_t cost_ntime, cost_ndepth;
    uint64_t cost_time_bound[PYPROF_COST_MAX];       /* ns; 0 = no bound */
    uint64_t cost_depth_bound[PYPROF_COST_MAX];      /* frames; 0 = no bound */
    uint64_t cost[PYPROF_COST_MAX][PYPROF_COST_MAX]; /* [depth][time] sample counts */
    /* The optional timer section (0 in logs of older writers). */
    uint8_t has_timers;
    uint64_t timer_ns, untimed_ns;
    /* The optional native section (0 in logs without native frames). */
    uint8_t has_native;
    uint64_t native_ok, native_truncated, native_skipped, native_ns;
    /* The optional whole-cost section (0 in logs of older writers). */
    uint8_t has_whole;
    uint64_t signal_cost_ns, calib_signals, calib_ns, process_cpu_ns;
    /* The optional span section (0 in logs of older writers): span starts and stops the
     * library could not queue (its buffer was full), so their records are missing. */
    uint8_t has_spans;
    uint64_t spans_lost;
    /* The optional allocation section (logs with allocation sampling). */
    uint8_t has_alloc;
    uint64_t alloc_samples, alloc_frees, alloc_lost, frees_lost, alloc_live;
    /* The optional clock section (0 in logs of older writers): the CPU the sampling timers
     * counted and the CPU the kernel accounted over the same intervals (both 0 without
     * per-thread timers); clock_corrected 1 when the samples stand for the kernel's figure
     * (the log's reserved bits are dropped). */
    uint8_t has_clock;
    uint64_t clock_timer_ns, clock_kernel_ns, clock_corrected;
    /* The optional teardown section: has_teardown when the interpreter's teardown was
     * seen, at teardown_us (µs since this file's start, as a FREE's t_us). */
    uint8_t has_teardown;
    uint64_t teardown_us;
} pyprof_footer;

typedef struct pyprof_record {
    /* enum pyprof_record_type, or another value for a skipped unknown type; MARK (7) is
     * reserved and skipped like an unknown type. */
    int type;
    union {
        pyprof_header header;
        pyprof_thread_rec thread;
        pyprof_code_rec code;
        pyprof_stack_rec stack;
        pyprof_sample_rec sample;
        pyprof_rss_rec rss;
        pyprof_module_rec module;
        pyprof_nstack_rec nstack;
        uint64_t module_gone; /* PYPROF_REC_MODULE_GONE: the module_id */
        pyprof_snapshot_rec snapshot;
        pyprof_span_start_rec span_start;
        pyprof_span_stop_rec span_stop;
        pyprof_alloc_rec alloc;
        pyprof_free_rec free;
        pyprof_awindow_rec awindow;
        pyprof_footer footer;
    } u;
} pyprof_record;

typedef struct pyprof_reader pyprof_reader;

/* Opens `path` and checks the magic and the header.  On failure returns NULL and stores
 * a PYPROF_R_* code in *err. */
pyprof_reader *pyprof_reader_open(const char *path, int *err);

/* Opens an in-memory log (for the fuzzer and unit tests); `data` must outlive the
 * reader, and may be NULL when `len` is 0 (an empty log). */
pyprof_reader *pyprof_reader_open_mem(const void *data, size_t len, int *err);

/* The header, read by open. */
const pyprof_header *pyprof_reader_header(const pyprof_reader *r);

/* Reads the next record.  Returns 1 with *rec filled, 0 at a clean end (after the
 * footer), or -PYPROF_R_TRUNCATED / -PYPROF_R_CORRUPT / -PYPROF_R_IO when the log ends
 * early or is damaged; every record returned before that is valid. */
int pyprof_reader_next(pyprof_reader *r, pyprof_record *rec);

/* Follow mode, for a log that is still being written (`pyprof top`): when the file
 * has no more bytes for now, pyprof_reader_next returns -PYPROF_R_AGAIN instead of
 * -PYPROF_R_TRUNCATED, keeping what it has read of a partial block or record, and may be
 * called again once the file has grown.  Off by default. */
void pyprof_reader_follow(pyprof_reader *r, int on);

/* Bytes of decompressed log consumed so far (to say how much survived a cut). */
uint64_t pyprof_reader_offset(const pyprof_reader *r);

void pyprof_reader_close(pyprof_reader *r);

#endif
