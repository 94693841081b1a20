/*
 * logenc: the payload of every record the writer emits (include/pyprof/format.h),
 * encoded from plain values.  The writer fills the structs from its
 * state and frames the payload with rec_envelope; the encoders hold no state and do no
 * I/O, so each is tested on its own against the format (tests/unit/test_logenc.c) and the
 * reader.
 * [sigsafe] (pure code; nothing here allocates)
 *
 *   logenc_put_header   HEADER from a logenc_header_fields
 *   logenc_put_thread   THREAD: thread_idx, tid, name
 *   logenc_put_code     CODE from a logenc_code_fields; logenc_code_max sizes its buffer
 *   logenc_put_stack    STACK: stack_id and logenc_frames; LOGENC_STACK_MAX sizes it
 *   logenc_put_stack_runs  the STACK's native-log tail: nruns and the run lengths
 *   logenc_put_stack_gil   the STACK's wall-clock tail: the GIL state (after the runs)
 *   logenc_put_sample   SAMPLE: dt_us, thread_idx, stack_id, cpu_us
 *   logenc_put_sample_native  the SAMPLE's native-log tail: nstack_id, native_flags
 *   logenc_put_rss      RSS: dt_us, rss_bytes
 *   logenc_batch_start, logenc_batch_sample, logenc_batch_rss, logenc_put_batch
 *                       BATCH: events appended one by one to the caller's buffer (a
 *                       logenc_batch keeps what the next event is coded against), then
 *                       the payload: its fields and the events
 *   logenc_put_module   MODULE from a logenc_module_fields; logenc_module_max sizes it
 *   logenc_put_nstack   NSTACK: nstack_id and addresses; LOGENC_NSTACK_MAX sizes it
 *   logenc_put_module_gone  MODULE_GONE: module_id
 *   logenc_put_snapshot SNAPSHOT: id, time and logenc_snap_threads; LOGENC_SNAPSHOT_MAX
 *   logenc_put_span_start, logenc_put_span_stop  SPAN_START / SPAN_STOP (strings cut to
 *                       the format's limits); LOGENC_SPAN_MAX
 *   logenc_put_alloc    ALLOC from a logenc_alloc_fields (its native tail included);
 *                       LOGENC_ALLOC_MAX
 *   logenc_put_free     FREE: t_us, address; LOGENC_FREE_MAX
 *   logenc_put_awindow  AWINDOW from a logenc_awindow_fields; LOGENC_AWINDOW_MAX
 *   logenc_allocs_start, logenc_allocs_alloc, logenc_allocs_free, logenc_put_allocs
 *                       ALLOCS: allocation and free events appended one by one to the
 *                       caller's buffer (a logenc_allocs keeps what the next is coded
 *                       against), then the payload: its fields and the events
 *   logenc_put_footer   FOOTER from a logenc_footer_fields, cost bounds from format.h
 *
 * The native-log tails are appended by the caller right after the record they extend,
 * and only in logs whose header has PYPROF_HDR_NATIVE, so other logs stay as they were.
 *
 * Every encoder appends to `o` and returns 0, or -1 when `o` overflowed (then the payload
 * is cut and must not be written).
 */
#ifndef PYPROF_LOGENC_H
#define PYPROF_LOGENC_H

#include <stddef.h>
#include <stdint.h>

#include <pyprof/format.h>

#include "record.h"

typedef struct logenc_header_fields {
    uint64_t pid, ppid;
    const char *run_id;
    uint64_t start_unix_ns;
    const char *host, *exe;
    /* The command line as /proc/self/cmdline has it: each argument followed by a NUL. */
    const char *cmdline;
    size_t cmdline_len;
    const char *python_version; /* "3.11.7" */
    uint64_t python_hex;        /* PY_VERSION_HEX */
    uint64_t period_ns;
    uint8_t clock;     /* enum pyprof_clock */
    const char *timer; /* sampler_timer_name() */
    uint64_t max_depth, flags, window;
    uint64_t seq, series_start_unix_ns, offset_us; /* the file's place in its series */
    uint64_t alloc_interval;                       /* bytes; 0: allocations are not sampled */
} logenc_header_fields;

typedef struct logenc_code_fields {
    uint64_t code_id;
    int64_t first_line;
    const char *name, *qualname, *filename; /* not NUL-terminated: the lengths count */
    size_t name_len, qualname_len, filename_len;
    uint8_t lt_kind; /* enum pyprof_linetable */
    const void *lt;
    size_t lt_len;
    uint64_t flags; /* PYPROF_CODE_F_* */
} logenc_code_fields;

/* A frame of a stack: a code id (or a marker below PYPROF_CODE_FIRST) and a line.  No
 * padding, so stacks of frames compare with memcmp. */
typedef struct logenc_frame {
    uint32_t code_id;
    int32_t line;
} logenc_frame;

typedef struct logenc_footer_fields {
    uint64_t end_unix_ns, duration_ns, samples, signals;
    uint64_t drops[PYPROF_DROP_COUNT]; /* by enum pyprof_drop */
    uint64_t end;                      /* enum pyprof_end */
    int status_known;
    int64_t status;
    uint64_t achieved_hz_milli, lib_cpu_ns, handler_ns, writer_ns;
    /* Samples by depth and handler time, in the buckets PYPROF_COST_*_BOUNDS. */
    uint64_t cost[PYPROF_COST_NDEPTH][PYPROF_COST_NTIME];
    uint64_t timer_ns, untimed_ns;
    /* The native section, written only when has_native is set (native logs). */
    int has_native;
    uint64_t native_ok, native_truncated, native_skipped, native_ns;
    /* The whole-cost section. */
    uint64_t signal_cost_ns, calib_signals, calib_ns, process_cpu_ns;
    /* The span section, written after the whole-cost one: span events the library could
     * not queue. */
    uint64_t spans_lost;
    /* The allocation section, written only when has_alloc is set (logs whose header has
     * a nonzero alloc_interval). */
    int has_alloc;
    uint64_t alloc_samples, alloc_frees, alloc_lost, frees_lost, alloc_live;
    /* The clock section, always written, last: the CPU the sampling timers counted over
     * the intervals their signals closed, and the CPU the kernel accounted to the same
     * threads over the same intervals (both 0 without per-thread timers); whether the
     * samples stand for the kernel's figure (1) or the timers' (0). */
    uint64_t clock_timer_ns, clock_kernel_ns, clock_corrected;
    /* The teardown section, written after the clock section: 1 + when the interpreter's
     * teardown was first seen (µs on the file's axis, like a FREE's), 0 when it was not. */
    uint64_t teardown_us1;
} logenc_footer_fields;

/* An ALLOC record's fields. */
typedef struct logenc_alloc_fields {
    uint64_t t_us, thread_idx, stack_id, size, address;
    uint8_t domain; /* enum pyprof_alloc_domain */
    uint64_t flags; /* PYPROF_ALLOC_F_* */
    int native;     /* a native log: nstack_id follows */
    uint64_t nstack_id;
} logenc_alloc_fields;
#define LOGENC_ALLOC_MAX (8 * REC_VARINT_MAX + 1)
#define LOGENC_FREE_MAX (2 * REC_VARINT_MAX)

/* An AWINDOW record's fields: an allocation window, or with PYPROF_AWINDOW_F_PAUSED the
 * start of a pause of them. */
typedef struct logenc_awindow_fields {
    uint64_t t_us;        /* when it opened (or the pause began), as ALLOC's */
    uint64_t len_us;      /* how long it really stayed open */
    uint64_t planned_us;  /* how long it was meant to */
    uint64_t shift;       /* its duty is 2^-shift (at most PYPROF_ALLOC_SHIFT_MAX) */
    uint64_t floor_shift; /* the largest shift the library would use (likewise) */
    uint64_t flags;       /* PYPROF_AWINDOW_F_* */
} logenc_awindow_fields;
#define LOGENC_AWINDOW_MAX (6 * REC_VARINT_MAX)

/* A PT_LOAD segment of a module, as the MODULE record carries it. */
typedef struct logenc_segment {
    uint64_t vaddr, memsz, file_offset, flags; /* flags: PF_X 1, PF_W 2, PF_R 4 */
} logenc_segment;

typedef struct logenc_module_fields {
    uint64_t module_id;
    const char *path;        /* NUL-terminated */
    uint64_t base;           /* load bias */
    const uint8_t *build_id; /* raw note bytes, build_id_len of them (may be 0) */
    size_t build_id_len;
    const logenc_segment *segs;
    size_t nseg;
    uint64_t dev, ino, size, mtime_ns; /* of the file; 0 when unknown */
} logenc_module_fields;

/* Bytes a CODE payload of these fields takes at most; a STACK payload of n frames. */
static inline size_t logenc_code_max(const logenc_code_fields *c)
{
    return 64 + c->name_len + c->qualname_len + c->filename_len + c->lt_len;
}
#define LOGENC_STACK_MAX(n) (32 + 16 * (size_t)(n))
/* Bytes the runs of a stack of n frames add at most (at most one run per frame). */
#define LOGENC_RUNS_MAX(n) (REC_VARINT_MAX + 5 * (size_t)(n))
/* Bytes an NSTACK payload of n addresses takes at most. */
#define LOGENC_NSTACK_MAX(n) (2 * REC_VARINT_MAX + REC_VARINT_MAX * (size_t)(n))
static inline size_t logenc_module_max(const logenc_module_fields *m)
{
    size_t path_len = 0;
    while (m->path[path_len])
        path_len++;
    return 10 * REC_VARINT_MAX + path_len + m->build_id_len + m->nseg * 4 * REC_VARINT_MAX;
}

int logenc_put_header(rec_out *o, const logenc_header_fields *h);
int logenc_put_thread(rec_out *o, uint64_t thread_idx, uint64_t tid, const char *name);
int logenc_put_code(rec_out *o, const logenc_code_fields *c);
int logenc_put_stack(rec_out *o, uint64_t stack_id, const logenc_frame *f, size_t n);
/* The runs: nruns lengths, outermost first, adding up to the stack's frames. */
int logenc_put_stack_runs(rec_out *o, const uint32_t *runs, size_t nruns);
int logenc_put_stack_gil(rec_out *o, uint64_t gil);
int logenc_put_sample(rec_out *o, int64_t dt_us, uint64_t thread_idx, uint64_t stack_id,
                      uint64_t cpu_us);
int logenc_put_sample_native(rec_out *o, uint64_t nstack_id, uint64_t native_flags);
int logenc_put_rss(rec_out *o, int64_t dt_us, uint64_t rss_bytes);
int logenc_put_module(rec_out *o, const logenc_module_fields *m);
int logenc_put_alloc(rec_out *o, const logenc_alloc_fields *a);
int logenc_put_free(rec_out *o, uint64_t t_us, uint64_t address);
int logenc_put_awindow(rec_out *o, const logenc_awindow_fields *w);

/* A BATCH being built: its fields and what the next event is coded against.  The
 * caller's only state; logenc_batch_start clears it. */
typedef struct logenc_batch {
    uint64_t base_us, cpu_us, rss_unit; /* the payload's fields */
    int native;                         /* samples carry the native tail */
    uint64_t count;                     /* events so far */
    uint64_t thread;                    /* the current thread */
    uint64_t rss;                       /* the last RSS point, in rss_unit */
    int64_t t_us;                       /* the last event's time */
    int64_t sample_us;                  /* the last sample's (t_us before the first) */
} logenc_batch;

/* The most bytes one event takes. */
#define LOGENC_BATCH_EVENT_MAX (7 * REC_VARINT_MAX)
/* The most bytes a BATCH payload takes beside its events. */
#define LOGENC_BATCH_HEAD_MAX (4 * REC_VARINT_MAX)

/* An empty batch after a timed record at t0_us (the time the batch counts from).
 * rss_unit 0 is taken as 1. */
void logenc_batch_start(logenc_batch *b, int64_t t0_us, uint64_t base_us, uint64_t cpu_us,
                        uint64_t rss_unit, int native);
/* Appends a sample at t_us (the native tail only when b->native) to `ev`, in the
 * shortest form that codes it.  Returns 0, or -1 with `ev` and `b` unchanged when `ev`
 * has no room or the batch holds PYPROF_BATCH_MAX events. */
int logenc_batch_sample(rec_out *ev, logenc_batch *b, int64_t t_us, uint64_t thread_idx,
                        uint64_t stack_id, uint64_t cpu_us, uint64_t nstack_id,
                        uint64_t native_flags);
/* Appends an RSS point at t_us.  Returns 0, or -1 with `ev` and `b` unchanged as above,
 * or when rss_bytes is not a multiple of the batch's rss_unit (an RSS record holds it). */
int logenc_batch_rss(rec_out *ev, logenc_batch *b, int64_t t_us, uint64_t rss_bytes);
/* The BATCH payload: b's fields, then the `len` bytes of events built with b. */
int logenc_put_batch(rec_out *o, const logenc_batch *b, const void *events, size_t len);
/* An ALLOCS record being built, as logenc_batch for BATCH. */
typedef struct logenc_allocs {
    int64_t t0_us;     /* the payload's fields */
    uint64_t ordinal0; /* ... */
    int native;        /* allocation events carry nstack_id */
    uint64_t count;    /* events so far */
    uint64_t nallocs;  /* allocation events so far: the next one's ordinal - ordinal0 */
    uint64_t thread;   /* the current thread */
    int64_t t_us;      /* the last event's time (t0_us before the first) */
} logenc_allocs;

/* The most bytes one event takes; the payload beside its events. */
#define LOGENC_ALLOCS_EVENT_MAX (8 * REC_VARINT_MAX)
#define LOGENC_ALLOCS_HEAD_MAX (3 * REC_VARINT_MAX)

/* An empty record whose events count from t0_us and whose first allocation event has
 * ordinal `ordinal0`. */
void logenc_allocs_start(logenc_allocs *b, int64_t t0_us, uint64_t ordinal0, int native);
/* Appends an allocation (a's t_us, thread, stack, size, domain, flags, native stack; its
 * address only when by_address, else the block is named by its ordinal, b->ordinal0 +
 * b->nallocs before the call).  Returns 0, or -1 with `ev` and `b` unchanged when `ev`
 * has no room or the record holds PYPROF_BATCH_MAX events. */
int logenc_allocs_alloc(rec_out *ev, logenc_allocs *b, const logenc_alloc_fields *a,
                        int by_address);
/* Appends a free at t_us of the block allocated with `ordinal` (below the next one's),
 * or, when by_address, of the block at `address`.  Returns 0 or -1 as above. */
int logenc_allocs_free(rec_out *ev, logenc_allocs *b, int64_t t_us, int by_address,
                       uint64_t ordinal, uint64_t address);
/* The ALLOCS payload: b's fields, then the `len` bytes of events built with b. */
int logenc_put_allocs(rec_out *o, const logenc_allocs *b, const void *events, size_t len);

/* addrs[0..n), outermost first. */
int logenc_put_nstack(rec_out *o, uint64_t nstack_id, const uint64_t *addrs, size_t n);
int logenc_put_module_gone(rec_out *o, uint64_t module_id);

/* One thread of a SNAPSHOT. */
typedef struct logenc_snap_thread {
    uint32_t thread_idx, stack_id;
    uint8_t flags;    /* PYPROF_SNAP_F_* */
    uint8_t os_state; /* 'R', 'S', ...; 0 unknown */
} logenc_snap_thread;

/* The largest SNAPSHOT payload for n threads. */
#define LOGENC_SNAPSHOT_MAX(n) (32 + 17 * (size_t)(n))

int logenc_put_snapshot(rec_out *o, uint64_t snapshot_id, uint64_t t_us,
                        const logenc_snap_thread *t, size_t n);
/* A SPAN_START's fields; strings need not be NUL-terminated and are cut (at a UTF-8
 * character boundary) to PYPROF_SPAN_*_MAX bytes. */
typedef struct logenc_span_start {
    uint64_t span_id, t_us, thread_idx, parent_span_id;
    const char *name, *trace_id, *parent_id, *base_id, *info;
    size_t name_len, trace_id_len, parent_id_len, base_id_len, info_len;
} logenc_span_start;

/* The largest SPAN_START or SPAN_STOP payload. */
#define LOGENC_SPAN_MAX                                                                        \
    (64 + PYPROF_SPAN_NAME_MAX + 3 * PYPROF_SPAN_ID_MAX + PYPROF_SPAN_INFO_MAX)

int logenc_put_span_start(rec_out *o, const logenc_span_start *s);
int logenc_put_span_stop(rec_out *o, uint64_t span_id, uint64_t t_us, uint64_t thread_idx,
                         const char *info, size_t info_len);
int logenc_put_footer(rec_out *o, const logenc_footer_fields *f);

#endif
