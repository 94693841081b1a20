/*
 * profile: the in-memory model of one or more pyprof logs that the tool's commands share.
 * It owns every process (header, footer, how the log ended), thread, function, stack,
 * sample and RSS point loaded from the logs.  Functions are merged across code ids
 * and across processes by identity (qualified name where present else name, file, first
 * line); stacks are deduplicated across processes.  The filters are applied while
 * loading, so the model holds exactly what the commands report, and a sample costs 24
 * bytes.
 *
 * Everything is indexed by small integers (uint32_t) into the arrays of struct profile,
 * which callers read directly and never modify.  Sums and orders over a loaded profile
 * are aggregate.h's, the call tree calltree.h's, the call graph callgraph.h's.  Not
 * thread-safe; tool-side only.
 *
 * A rotated series (logs of one process and window: the same host, run id, pid, window and
 * series start, told apart by seq) is one process: each file's times are shifted by its
 * offset_us onto one axis from the series' start, its counters are added to the others',
 * and how the process ended is how its highest-seq file did.  Files may be missing (the
 * oldest removed by retention) and may come in any order: the process is the same.  Each
 * file's ids are its own, mapped per file like any log's.  A log that is not rotated is
 * a series of one file.
 *
 * Spans (SPAN_START / SPAN_STOP records) are loaded per process: a stop is matched to its
 * start by span id within the process (across the files of a series, in whatever order
 * they load), and a span without a stop is `unfinished` and runs to the end of its
 * process's data.  A stop whose start is not in the loaded logs (a fork child's stop of
 * its parent's span, a file removed by retention, another window's span) is ignored and
 * counted in profile_process.span_stops_unmatched.  Spans of a thread the --thread filter
 * excludes are left out; --from/--to do not cut spans (they window samples only).
 * --span NAME keeps only the samples inside a span of one of the names given, on the
 * span's thread (start <= t < stop); it is applied once the logs of a load call are read,
 * since a span's stop may come after its samples or in a later file.
 *
 * Sampled allocations (ALLOC / FREE records, logs with a nonzero alloc_interval) are
 * loaded per process by allocload.h: each ALLOC is a profile_alloc with what it stands for
 * (allocs.h's estimate, from its file's interval), and a FREE ends the newest allocation
 * of the same address in the same process that is still alive at the FREE's time (across
 * the files of a series, in whatever order they load; ties in time go by file and record
 * order).  An UNTRACKED allocation is never freed nor in use.  A FREE that matches no
 * allocation of the loaded logs (its ALLOC in a file removed by retention, or never
 * written) is counted in profile_process.frees_unmatched.  Frees are matched before any
 * filter, so an allocation is freed whatever the filters keep; then allocations are kept
 * as samples are: by thread, by time (--from/--to: allocated inside the window) and by
 * --span (allocated inside a span, on its thread).
 *
 * Allocation windows (AWINDOW records) are kept per process, whatever the filters, and
 * once the logs of a load call are read every allocation sampled inside a window (a
 * nonzero PYPROF_ALLOC_SHIFT in its flags) is weighed as format.h says: it stands for
 * allocs_estimate of its size times 2^shift, and 2^shift times its allocations (every
 * moment was inside a window with probability 2^-shift).  profile_alloc.flags keeps only
 * UNTRACKED; profile_alloc.shift the window's shift.  Each process's windows are summed in its
 * profile_awindows.
 *
 * In logs with native frames, each sample's native stack is symbolized (symbols.h) and
 * merged with its Python stack (nativemerge.h) when the log is done, so a sample's stack
 * is the merged one (an allocation's too); native functions are identified by (symbol, module
 * path) and carry kind PROFILE_FUNC_NATIVE.  The modules' files are looked for under the
 * profile's root first (profile_new), for logs of processes that ran in a chroot or a
 * container.
 *
 * Interface: profile_filter, profile_process, profile_module, profile_thread,
 * PROFILE_FUNC_PYTHON, PROFILE_FUNC_NATIVE, PROFILE_FUNC_TASK, profile_func, profile_frame,
 * profile_stack, profile_sample, profile_rss, profile_file, profile_snapshot,
 * profile_snap_thread, profile_span, PROFILE_NO_SPAN, PROFILE_NO_STACK, profile_alloc,
 * profile_awindows,
 * PROFILE_KEEP_CORRUPT, PROFILE_NATIVE_GLUE, profile, profile_new, profile_free, profile_load,
 * profile_load_paths.
 */
#ifndef PYPROF_PROFILE_H
#define PYPROF_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include <pyprof/reader.h>

/* What to keep.  The arrays are the caller's and must outlive the profile; an empty list
 * (n == 0) keeps everything. */
typedef struct profile_filter {
    const uint64_t *pids;
    size_t npids;
    const uint64_t *tids;
    size_t ntids;
    const char *const *runs; /* run ids, compared exactly */
    size_t nruns;
    int has_from, has_to;
    double from_s, to_s;           /* seconds since the start of each process's profiling (of a
                                    * rotated series: of its first file) */
    const char *const *span_names; /* --span: keep the samples inside spans of these
                                    * names only (compared exactly) */
    size_t nspan_names;
    int gil_wait; /* --gil-wait: keep the samples of threads waiting for the GIL only */
    const char *const *task_globs; /* --task: keep the samples with a task frame whose
                                    * name matches one of these (fnmatch) */
    size_t ntask_globs;
    int awaiting; /* --awaiting: keep the samples of suspended asyncio tasks too
                   * (as PROFILE_AWAITING) */
} profile_filter;

/* A module (shared object or executable) of a process with native frames, for mapping
 * tables: its executable segment's runtime range and file offset. */
typedef struct profile_module {
    char *path;
    char *build_id; /* hex, "" when none was recorded */
    uint64_t start, limit, file_offset;
} profile_module;

/* One log file of a process (a rotated series has several). */
typedef struct profile_file {
    char *path;
    uint64_t seq, offset_us; /* the header's; 0 for a log that is not rotated */
    uint64_t start_unix_ns;  /* this file's own start */
    int has_footer;
    pyprof_footer footer; /* this file's own */
    int end_error;        /* as profile_process.end_error, for this file */
    uint64_t records, bytes, samples_read;
    int64_t last_t_us;       /* on the process's axis */
    uint64_t alloc_interval; /* the header's (0: allocations not sampled) */
} profile_file;

/* A process's allocation windows (AWINDOW records), over all of its data whatever the
 * filters: windows (records without PYPROF_AWINDOW_F_PAUSED) and the time inside them
 * (their len_us summed), the shifts they had, the largest floor_shift of its records,
 * and the pauses: PAUSED records, and the time from each to the next window, or to the
 * end of the process's data (end_us), of which the part the domains stayed unwrapped
 * (PYPROF_AWINDOW_F_WRAPPED clear: the small requests were not seen). */
typedef struct profile_awindows {
    uint64_t windows, pauses;
    int64_t window_us, paused_us, paused_unseen_us;
    uint32_t shift_min, shift_max; /* over the windows; both 0 without any */
    uint32_t floor_shift;
    uint64_t weighed; /* allocations kept that were sampled inside a window (a shift) */
} profile_awindows;

typedef struct profile_process {
    char *path; /* the first file's (lowest seq) */
    /* The series' files by seq; one for a log that is not rotated. */
    profile_file *files;
    size_t nfiles;
    uint64_t series_start_unix_ns; /* the header's (0 in logs of older writers) */
    uint64_t snapshots;            /* snapshots kept */
    /* The header; strings are NUL-terminated copies.  start_unix_ns is the series'
     * start (the first file's, seq 0), which every time of the process counts from. */
    uint64_t format_version, pid, ppid, start_unix_ns, python_hex, period_ns, max_depth, flags,
        window;
    char *run_id, *host, *exe, *python_version, *timer;
    char **argv;
    size_t argc;
    int clock; /* enum pyprof_clock */
    /* The footer, when the log has one.  A series: has_footer and how it ended (end,
     * status, end_unix_ns) are the highest-seq file's; duration_ns runs from the series'
     * start to that file's end; counters, drops and the cost histogram are the sums over
     * the files that have a footer (but alloc_live, the last such file's: it counts the
     * blocks of the files before it); achieved_hz_milli is samples over the time they
     * stand for, over all of them. */
    int has_footer;
    pyprof_footer footer;
    /* How reading ended: 0 (complete), -PYPROF_R_TRUNCATED, or with
     * PROFILE_KEEP_CORRUPT another negative reader code.  A series: the first file's
     * error other than TRUNCATED, else the highest-seq file's. */
    int end_error;
    /* Counts below: sums over the files. */
    uint64_t records;      /* records read, the header included */
    uint64_t bytes;        /* decompressed bytes read */
    uint64_t samples_read; /* SAMPLE records in the log, before filtering */
    uint64_t samples;      /* samples kept */
    /* Records by type; unknown_read counts the types this reader skips, the reserved
     * type 7 (MARK, never written) included. */
    uint64_t threads_read, codes_read, stacks_read, rss_read, unknown_read;
    int64_t last_t_us; /* time of the last timed record (the latest, in a series) */
    int has_rss;       /* RSS points kept: */
    uint64_t rss_start, rss_peak, rss_end;
    /* Native frames (logs with PYPROF_HDR_NATIVE). */
    uint64_t modules_read, nstacks_read;
    uint64_t native_samples;    /* samples kept that have a native stack */
    uint64_t native_unmerged;   /* of those, the ones whose stacks could not be paired */
    uint64_t native_unresolved; /* distinct native addresses no symbol covers */
    profile_module *modules;
    size_t nmodules;
    /* Spans: SPAN_START and SPAN_STOP records read; spans kept and those of them with no
     * stop; stops whose start is not in the loaded logs (ignored). */
    uint64_t span_starts_read, span_stops_read, spans, spans_unfinished, span_stops_unmatched;
    int64_t end_us; /* where its data ends on its axis: the footer's duration, else the
                     * last timed record (spans included) */
    /* Allocation sampling: the interval in bytes (the header's, of its first file; 0: not
     * sampled), ALLOC and FREE records read, allocations kept, frees that matched no
     * allocation of the loaded logs.  The footer's allocation section is in `footer`. */
    uint64_t alloc_interval, allocs_read, frees_read, allocs, frees_unmatched;
    uint64_t awindows_read; /* AWINDOW records read (windows and pauses) */
    profile_awindows awin;
    uint64_t awaiting; /* samples of suspended asyncio tasks read (kept or not) */
    /* When the interpreter's teardown began (the footer's teardown section, on the
     * process's axis): what was in use then is what the program left at its end. */
    int has_teardown;
    int64_t teardown_us;
} profile_process;

typedef struct profile_thread {
    uint32_t process;
    uint64_t tid;
    char *name;
    uint64_t samples;
} profile_thread;

/* PROFILE_FUNC_TASK: an asyncio task's frame (a CODE record flagged PYPROF_CODE_F_TASK),
 * named "<task NAME>", with no file and no line. */
enum { PROFILE_FUNC_PYTHON = 0, PROFILE_FUNC_NATIVE = 1, PROFILE_FUNC_TASK = 2 };

typedef struct profile_func {
    /* Python: the qualified name where the log has one, else the name.  Native: the
     * symbol (or inlined function), or "module+0xOFFSET" when no symbol covers it. */
    char *name;
    char *file;   /* Python: the source file; native: the module's path */
    int64_t line; /* first line; 0 for native functions (unknown) */
    int kind;     /* PROFILE_FUNC_* */
} profile_func;

typedef struct profile_frame {
    uint32_t func;
    int32_t line; /* -1: no line; native frames: the DWARF source line, 0 unknown */
} profile_frame;

typedef struct profile_stack {
    uint64_t first;   /* index into profile.frames */
    uint32_t nframes; /* outermost first */
    uint32_t hash;
} profile_stack;

typedef struct profile_sample {
    int64_t t_us; /* since the start of its process's profiling */
    uint32_t thread;
    uint32_t stack;
    uint32_t cpu_us;
    uint32_t process : 28;
    uint32_t gil : 4; /* enum pyprof_gil: wall-clock logs say where the thread stood with
                       * the GIL (its STACK record's state); else PYPROF_GIL_UNKNOWN */
} profile_sample;

typedef struct profile_rss {
    int64_t t_us;
    uint64_t bytes;
    uint32_t process;
} profile_rss;

/* A snapshot (SNAPSHOT record): where every thread was at one moment. */
typedef struct profile_snapshot {
    uint32_t process;
    uint64_t id;
    int64_t t_us;   /* on the process's axis, like a sample's */
    uint64_t first; /* its threads: profile.snap_threads[first .. first + nthreads) */
    uint32_t nthreads;
} profile_snapshot;

#define PROFILE_NO_STACK UINT32_MAX /* a snapshot thread without a Python frame */

typedef struct profile_snap_thread {
    uint32_t thread;  /* index into profile.threads (tid and name there) */
    uint32_t stack;   /* index into profile.stacks, or PROFILE_NO_STACK */
    uint32_t flags;   /* PYPROF_SNAP_F_* */
    uint8_t os_state; /* the kernel's state letter ('R', 'S', 'D', ...); 0 unknown */
} profile_snap_thread;

#define PROFILE_NO_SPAN UINT32_MAX

/* A span: a named stretch of one thread's time that the program marked (SPAN_START and
 * its SPAN_STOP).  Strings are NUL-terminated copies of the log's bytes (a NUL inside
 * becomes '?'); they are the program's and may be anything, invalid UTF-8 included. */
typedef struct profile_span {
    uint32_t process;
    uint32_t thread;      /* the thread that started it: its samples are the span's */
    uint32_t stop_thread; /* the thread that ended it (== thread while unfinished) */
    uint32_t parent;      /* the span of the same process it is nested in (its
                           * parent_span_id), or PROFILE_NO_SPAN; never a cycle */
    uint32_t depth;       /* spans above it through `parent` */
    int unfinished;       /* no stop was read: stop_us is the process's end_us */
    uint64_t id, parent_span_id;
    int64_t start_us, stop_us; /* on the process's axis, like samples; stop >= start */
    char *name, *trace_id, *parent_id, *base_id;
    char *info, *stop_info; /* JSON objects as the program gave them, or "" */
} profile_span;

/* A sampled allocation (ALLOC record) and what it stands for. */
typedef struct profile_alloc {
    int64_t t_us;    /* on the process's axis, like a sample's */
    int64_t free_us; /* when it was freed (freed != 0), on the same axis */
    uint64_t size;   /* bytes asked for */
    double bytes;    /* what it stands for (allocs_estimate): bytes allocated, */
    double objects;  /* and allocations */
    uint32_t process;
    uint32_t thread;
    uint32_t stack;  /* index into profile.stacks (no frame: an empty stack); merged with
                      * its native stack in logs with native frames, as samples are */
    uint8_t domain;  /* enum pyprof_alloc_domain */
    uint8_t flags;   /* PYPROF_ALLOC_F_UNTRACKED (the other bits are left out) */
    uint8_t shift;   /* the shift of the allocation window it was sampled in, 0: none */
    uint8_t freed;   /* a FREE of the loaded logs ended it (never for UNTRACKED) */
    uint32_t window; /* with a shift: 1 + the window's number in the profile (the same for
                      * every allocation sampled in one window), 0 when its window's
                      * record was not loaded */
} profile_alloc;

/* profile_new options. */
/* clang-format off */
#define PROFILE_KEEP_CORRUPT 1u /* keep a corrupted log's records instead of failing */
#define PROFILE_NATIVE_GLUE 2u  /* keep the interpreter's and process start's native
                                 * frames in merged stacks (nativemerge.h) */
#define PROFILE_AWAITING 4u     /* keep the samples of suspended asyncio tasks
                                 * (PYPROF_GIL_AWAIT: wall mode, 3.14+); without it they
                                 * are only counted (profile_process.awaiting) */
/* clang-format on */

typedef struct profile_index profile_index; /* the loader's hash tables, private */

typedef struct profile {
    profile_filter filter;
    unsigned options;
    char *root; /* profile_new's root (a copy), or NULL */
    profile_process *procs;
    size_t nprocs;
    profile_thread *threads;
    size_t nthreads;
    profile_func *funcs;
    size_t nfuncs;
    profile_stack *stacks;
    size_t nstacks;
    profile_frame *frames;
    size_t nframes;
    profile_sample *samples;
    size_t nsamples;
    profile_rss *rss;
    size_t nrss;
    profile_snapshot *snapshots; /* by process, then time (the order of the logs) */
    size_t nsnapshots;
    profile_snap_thread *snap_threads;
    size_t nsnap_threads;
    profile_span *spans; /* in the order their starts were read */
    size_t nspans;
    profile_alloc *allocs; /* the allocations kept, in the order they were read */
    size_t nallocs;
    /* Warnings met while loading, one line each without the "pyprof: " prefix (a
     * truncated log, a directory entry skipped). */
    char **warnings;
    size_t nwarnings;
    /* The error that made the last profile_load fail. */
    char error[1024];

    /* Capacities and the private index. */
    size_t cap_procs, cap_threads, cap_funcs, cap_stacks, cap_frames, cap_samples, cap_rss,
        cap_warnings, cap_snapshots, cap_snap_threads, cap_spans, cap_allocs;
    profile_index *index;
} profile;

/* Returns an empty profile that will keep what `filter` (copied; NULL for none) allows,
 * or NULL when out of memory.  `root` (copied; NULL for none): the directory native
 * modules' recorded paths are looked for under first (symbols_new's root). */
profile *profile_new(const profile_filter *filter, unsigned options, const char *root);

void profile_free(profile *p);

/* Loads a log, or every log in a directory (its regular files whose content is a pyprof
 * log; other files are skipped silently).  Returns 0, or -1 with a one-line message in
 * p->error ("PATH: what is wrong") when the path is missing or unreadable, a file named
 * explicitly is not a usable log, or any log is from a newer pyprof or is corrupted (with
 * PROFILE_KEEP_CORRUPT, a corrupted log is kept up to the damage instead).  A truncated log
 * is kept, with a warning.  Logs excluded by the pid or run filter are skipped. */
int profile_load(profile *p, const char *path);

/* Loads several paths as profile_load does each, but as one set: the files of a rotated
 * series are loaded in seq order whatever order the paths (or a directory's entries)
 * give them in, so the model does not depend on it.  Processes come in the order their
 * first file is met.  A file of a series that an earlier call loaded joins that
 * process. */
int profile_load_paths(profile *p, const char *const *paths, size_t npaths);

#endif
