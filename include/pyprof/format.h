/*
 * pyprof log format, version 1.  This comment is the specification; docs/FORMAT.md
 * walks through it with an example.
 *
 * A log file is a sequence of LZ4 frames (`lz4 -d` opens it).  Decompressed, it is
 *
 *     magic (8 bytes, PYPROF_MAGIC)  record  record  record ...
 *
 * and every record is
 *
 *     type: 1 byte    length: uvarint    payload: `length` bytes
 *
 * Integers inside payloads are LEB128 varints: `uvarint` unsigned, `svarint` zigzag
 * signed (0,-1,1,-2,... -> 0,1,2,3,...).  A `str` is a uvarint byte count followed by that
 * many bytes of UTF-8, not NUL-terminated.  A `u8` is one raw byte.
 *
 * Compatibility rules.  Readers skip record types they do not know and ignore bytes
 * left over at the end of a payload they do know, so fields may be appended to a record
 * and record types may be added without a version change.  Anything else bumps
 * PYPROF_FORMAT_VERSION, and readers refuse versions newer than their own.
 *
 * Order.  The HEADER comes first.  A THREAD, CODE or STACK record always precedes the
 * first record that refers to it.  The FOOTER comes last; a log without one was cut short
 * (the process was killed, or crashed), and everything before the cut is valid data.
 *
 * Time.  Timed records (SAMPLE, RSS, and the events of a BATCH, which stand for SAMPLE and
 * RSS records) carry `dt_us`: microseconds since the previous timed record, or since the
 * start of profiling for the first one.  Start of profiling is
 * HEADER.start_unix_ns on the wall clock and 0 on the monotonic clock used for dt.
 */
#ifndef PYPROF_FORMAT_H
#define PYPROF_FORMAT_H

#include <stdint.h>

#define PYPROF_MAGIC "\x89PYPROF\n"
#define PYPROF_MAGIC_LEN 8
#define PYPROF_FORMAT_VERSION 1

enum pyprof_record_type {
    /* uvarint format_version; uvarint pid; uvarint ppid; str run_id;
     * uvarint start_unix_ns; str host; str exe; uvarint argc; argc x str argv;
     * str python_version ("3.11.7"); uvarint python_hex (PY_VERSION_HEX);
     * uvarint period_ns (requested); u8 clock (enum pyprof_clock);
     * str timer (how samples were triggered, e.g. "perf-task-clock");
     * uvarint max_depth; uvarint flags (PYPROF_HDR_*); uvarint window (toggle window,
     * 0 for the first);
     * then, optional (absent in logs of older writers, read as 0): uvarint seq (this
     * file's place in its series of rotated logs, 0 for the first); uvarint
     * series_start_unix_ns (start_unix_ns of the series' first file, seq 0); uvarint
     * offset_us (microseconds on the monotonic clock from the series' first file's start
     * of profiling to this file's; 0 for seq 0);
     * then, optional (absent in logs of older writers, read as 0): uvarint alloc_interval
     * (the mean interval, in bytes, of allocation sampling; 0 when allocations are not
     * sampled; see ALLOC).
     * A series is the logs of one process and window: the same host, run_id, pid,
     * window and series_start_unix_ns.  Every file of it is a complete log on its own
     * (its own THREAD, CODE and STACK records, its footer counting its own samples,
     * time and drops); every file but the last ends with PYPROF_END_ROTATED. */
    PYPROF_REC_HEADER = 1,
    /* uvarint thread_idx (small, assigned by the writer); uvarint tid (OS thread id);
     * str name.  Repeated with the same thread_idx when the name becomes known or
     * changes. */
    PYPROF_REC_THREAD = 2,
    /* uvarint code_id (>= PYPROF_CODE_FIRST); svarint first_line; str name;
     * str qualname (empty where the Python version has none); str filename;
     * u8 line_table_kind (enum pyprof_linetable); str line_table (the code object's
     * raw co_lnotab / co_linetable bytes, possibly cut: see flags);
     * uvarint flags (PYPROF_CODE_F_*) */
    PYPROF_REC_CODE = 3,
    /* uvarint stack_id; uvarint nframes; nframes x (uvarint code_id, svarint line).
     * Frames run from the outermost (the thread's entry point) to the innermost (where
     * the sample was taken).  A line is -1 where the code has no line for the
     * instruction.
     * Then, only in logs with PYPROF_HDR_NATIVE: uvarint nruns; nruns x uvarint length:
     * the frames grouped, outermost first, by the activation of the interpreter's
     * eval-loop C function that runs them (one frame each up to 3.10; on 3.11+ a run
     * starts at an entry frame).  The lengths add up to nframes; markers (cut,
     * unreadable) belong to the run they sit in.
     * Then, in wall-clock logs: uvarint gil (enum pyprof_gil): where the thread stood with
     * the GIL when its samples of this stack were taken.  Two samples with the same frames
     * and different GIL states have two STACK records.  Absent (older writers, cpu mode)
     * or a value this reader does not know: PYPROF_GIL_UNKNOWN. */
    PYPROF_REC_STACK = 4,
    /* svarint dt_us; uvarint thread_idx; uvarint stack_id; uvarint cpu_us (the CPU time
     * this sample stands for: the period in cpu mode);
     * then, only in logs with PYPROF_HDR_NATIVE: uvarint nstack_id (the sample's native
     * stack, an NSTACK record; 0 = none); uvarint native_flags (PYPROF_NATIVE_F_*) */
    PYPROF_REC_SAMPLE = 5,
    /* svarint dt_us; uvarint rss_bytes (resident set size of the process) */
    PYPROF_REC_RSS = 6,
    /* 7 is reserved: never written; a reader skips it like any unknown type. */
    /* A loaded ELF module (native mode), written before the first sample that can hold
     * one of its addresses is drained, and again (with a new module_id) when the program
     * loads it anew.  uvarint module_id (>= 1); str path (absolute; the executable's
     * own path for the main program; an object without a file, the kernel's vDSO, has
     * the loader's name for it, "linux-vdso.so.1", with no '/', and dev, ino, size and
     * mtime_ns 0); uvarint base (load bias: runtime address =
     * base + vaddr); str build_id (the raw bytes of the GNU build-id note; empty when
     * the module has none); uvarint nseg; nseg x (uvarint vaddr, uvarint memsz,
     * uvarint file_offset, uvarint flags (PF_X 1, PF_W 2, PF_R 4)): its PT_LOAD
     * segments; uvarint dev; uvarint ino; uvarint size; uvarint mtime_ns (of the file,
     * 0 when unknown) */
    PYPROF_REC_MODULE = 8,
    /* A native call chain (native mode).  uvarint nstack_id (>= 1); uvarint n;
     * n x uvarint address, outermost first.  The innermost (last) address is the exact
     * instruction the thread was interrupted at; every other one is a return address
     * (look up address - 1 to find the call). */
    PYPROF_REC_NSTACK = 9,
    /* A module was unloaded (dlclose): uvarint module_id.  Addresses in its segments
     * belong to it in the samples before this record; a sample drained late may still
     * hold one, so a reader keeps the module and prefers modules loaded at the time. */
    PYPROF_REC_MODULE_GONE = 10,
    /* Where every thread was at one moment (`pyprof dump`), read from the thread states
     * without stopping the threads.  uvarint snapshot_id (>= 1, increasing within a
     * process); uvarint t_us (microseconds since this file's start of profiling: an
     * absolute time, not a dt, so the dt chain of the timed records is not affected);
     * uvarint nthreads; nthreads x (uvarint thread_idx; uvarint stack_id (0: no Python
     * frame could be read); uvarint flags (PYPROF_SNAP_F_*); u8 os_state (the kernel's
     * state letter of the thread, 'R' running, 'S' sleeping, 'D' disk wait, ...; 0 when
     * unknown)).  The THREAD, CODE and STACK records it refers to come before it. */
    PYPROF_REC_SNAPSHOT = 11,
    /* A span began: a named stretch of one thread's time, opened by the program
     * (pyprof_span_start in pyprof.h; the Python package `pyprof`; OSProfiler's pyprof://
     * driver).  uvarint span_id (>= 1, unique within the process for its whole life:
     * across the files of a series and across windows); uvarint t_us (microseconds since
     * this file's start of profiling, on the samples' clock: an absolute time like
     * SNAPSHOT's, outside the dt chain); uvarint thread_idx (its THREAD record comes
     * first); uvarint parent_span_id (the span of the same process it is nested in, 0 for
     * none); str name; str trace_id; str parent_id; str base_id (OSProfiler's ids of this
     * trace point, its parent and its trace's root, as text; empty when the program gave
     * none); str info (a JSON object, or empty).  Strings are cut at PYPROF_SPAN_NAME_MAX,
     * PYPROF_SPAN_ID_MAX and PYPROF_SPAN_INFO_MAX bytes. */
    PYPROF_REC_SPAN_START = 12,
    /* A span ended.  uvarint span_id; uvarint t_us; uvarint thread_idx (the thread that
     * ended it); str info (a JSON object, or empty).  A span with a SPAN_START and no
     * SPAN_STOP was still open when the log ended.  A file of a series may hold the stop
     * of a span another file started. */
    PYPROF_REC_SPAN_STOP = 13,
    /* A run of timed records (SAMPLE and RSS) in their order, each coded in a few bytes:
     * a reader yields from it exactly the SAMPLE and RSS records it stands for.
     * uvarint count (events, at most PYPROF_BATCH_MAX); uvarint base_us (the usual gap
     * between two samples: the period); uvarint cpu_us (a sample's cpu_us unless it gives
     * its own); uvarint rss_unit (>= 1: RSS values are counted in units of this many
     * bytes, the page size); then `count` events.  An event begins with uvarint h:
     *   h even: a sample of the current thread: stack_id h >> 1, cpu_us the batch's;
     *      svarint gap_us - base_us.
     *   otherwise h & 7 is the kind and v = h >> 3:
     *   1  a sample of another thread: stack_id v; uvarint thread_idx (the current
     *      thread from now on); svarint gap_us - base_us; cpu_us the batch's.
     *   3  an RSS point: v = zigzag of (rss_bytes / rss_unit) minus the previous RSS
     *      point's of this batch (0 before the first); svarint dt_us.
     *   5  a sample, any field given: stack_id v; uvarint flags (PYPROF_BATCH_F_*; other
     *      bits are corruption); uvarint thread_idx if PYPROF_BATCH_F_THREAD (the current
     *      thread from now on); uvarint cpu_us if PYPROF_BATCH_F_CPU (else the batch's);
     *      svarint gap_us if PYPROF_BATCH_F_DT, else svarint gap_us - base_us.
     *   7  corruption.
     * Samples of logs with PYPROF_HDR_NATIVE end with uvarint nstack_id; uvarint
     * native_flags, as SAMPLE does.  Times: an RSS point's dt_us counts from the event
     * before it, as an RSS record's does; a sample's gap_us counts from the batch's
     * previous sample, or for its first sample from the timed record before the batch
     * (RSS points between samples do not break their rhythm).  The time after the batch
     * is its last event's.  The current thread is thread_idx 0 at the start of each
     * batch, so a batch depends on nothing but the time before it. */
    PYPROF_REC_BATCH = 14,
    /* uvarint end_unix_ns; uvarint duration_ns; uvarint samples (SAMPLE records written);
     * uvarint signals (sampling signals handled); uvarint ndrop;
     * ndrop x (uvarint reason (enum pyprof_drop), uvarint count);
     * uvarint end (enum pyprof_end); u8 status_known; svarint status (exit status, or
     * signal number for PYPROF_END_SIGNAL); uvarint achieved_hz_milli (samples per CPU
     * second in cpu mode, per wall second and thread in wall mode, x1000);
     * uvarint lib_cpu_ns (CPU time the library spent in its handler, its writer and on
     * the threads' CPU timers);
     * then, optional (absent in logs of older writers; a reader checks for more bytes):
     * uvarint handler_ns (time inside the sampling handler, or the wall sampler's reads);
     * uvarint writer_ns (the writer thread's CPU time); the cost histogram:
     * uvarint ntime, ntime x uvarint time bound (ns, 0 = no bound); uvarint ndepth,
     * ndepth x (uvarint depth bound (frames, 0 = no bound), ntime x uvarint count):
     * samples taken at a stack depth up to that bound (and above the previous one) whose
     * handler time was up to that time bound (and above the previous one);
     * then, optional: uvarint timer_ns (CPU time spent making and releasing the threads'
     * CPU timers, in cpu mode); uvarint untimed_ns (CPU time threads used outside any
     * timer of theirs, never sampled: a new thread's start before its timer runs, the
     * timer's set-up and release; no Python code runs then);
     * then, optional, in native mode: uvarint native_ok (samples with a whole native
     * stack); uvarint native_truncated (PYPROF_NATIVE_F_TRUNCATED); uvarint
     * native_skipped (PYPROF_NATIVE_F_SKIPPED); uvarint native_ns (time inside the
     * native walk, part of handler_ns);
     * then, optional (after the native section in native logs, after the timer section
     * otherwise): the whole cost.  uvarint signal_cost_ns (CPU one sampling signal costs
     * the thread it interrupts outside the handler's sample: the timer's interrupt,
     * signal delivery and return, disturbed caches; measured in the process on a thread
     * of the library with the same timer; 0 when not measured); uvarint calib_signals
     * (signals that figure was measured over); uvarint calib_ns (CPU the measurement
     * took in this file, part of lib_cpu_ns and not of writer_ns); uvarint
     * process_cpu_ns (the process's CPU time, all threads, during this file).  The whole
     * cost of sampling is lib_cpu_ns + signals x signal_cost_ns;
     * then, optional: uvarint spans_lost (span starts and stops the program asked for
     * that the library could not queue, its buffer being full: their SPAN_START /
     * SPAN_STOP records are missing from this file);
     * then, optional, in logs whose header has a nonzero alloc_interval: uvarint
     * alloc_samples (allocations written: ALLOC records and ALLOCS events); uvarint
     * alloc_frees (frees written, likewise);
     * uvarint alloc_lost (allocations sampled that have no ALLOC record: the buffer was
     * full, or the allocation was made inside a sample, by a signal handler of the
     * program's that interrupted one); uvarint frees_lost (frees of sampled blocks that
     * have no FREE record: the buffer was full);
     * uvarint alloc_live (sampled blocks still followed at the end of this file, the ALLOC
     * records of earlier files of its series included);
     * then, optional (after the allocation section in logs with one, after the span
     * section otherwise): the clock section.  uvarint clock_timer_ns (the CPU time the
     * sampling timers counted over the intervals their signals closed, summed over the
     * sampled threads: what the signals stood for before any correction); uvarint
     * clock_kernel_ns (the CPU time the kernel accounted to the same threads over the same
     * intervals, from their CPU clocks, each interval's at most what the timer counted:
     * a timer also counts time a hypervisor steals from the virtual CPU, which the
     * kernel's clock leaves out); uvarint clock_corrected
     * (bit 0 set: the samples stand for the kernel's CPU, each signal recording as many
     * samples as whole periods of its thread's CPU clock it closed, the remainder carried
     * to the next; clear: they stand for the timer's count, as in wall mode, where the
     * passes set it; other bits are reserved and ignored).  Both times are 0 when no
     * per-thread timer ran (the process CPU timer fallback, whose clock is the kernel's
     * own);
     * then, optional (after the clock section): the teardown section.  uvarint
     * teardown_us1: 0, or 1 + the time (µs since this file's start, as a FREE's t_us) a
     * sampled allocation or free first found the interpreter's teardown begun (the
     * runtime's finalizing mark set; 2.7: no longer initialized); what was in use
     * before it is what the program left when it finished. */
    PYPROF_REC_FOOTER = 15,
    /* A sampled allocation.  Allocations are sampled by bytes: each thread counts down a
     * number of bytes drawn from an exponential distribution of mean alloc_interval
     * (HEADER), and the allocation that takes the count below zero is sampled, so one of
     * X bytes is sampled with probability p = 1 - exp(-X / alloc_interval), and stands
     * for X / p bytes and 1 / p allocations (an unbiased estimate for every size).
     * uvarint t_us (microseconds since this file's start of profiling: an absolute time
     * like SNAPSHOT's, outside the dt chain); uvarint thread_idx; uvarint stack_id (the
     * allocating thread's Python stack at the call; 0 = no Python frame); uvarint size
     * (bytes asked for); uvarint address (of the block; a later FREE of the same address
     * ends it); u8 domain (enum pyprof_alloc_domain); uvarint flags (PYPROF_ALLOC_F_*);
     * then, only in logs with PYPROF_HDR_NATIVE: uvarint nstack_id (0 = none).
     * A realloc is a FREE of the old block (when it was sampled) and an allocation of the
     * new size.  A reader takes a domain it does not know as another allocator, ignores
     * flag bits it does not know, and counts an ALLOC of a log without alloc_interval
     * as the one allocation it is. */
    PYPROF_REC_ALLOC = 16,
    /* A sampled block was freed (free, realloc, munmap of its start, the Python
     * allocators' free).  uvarint t_us (as ALLOC's); uvarint address.  A FREE whose ALLOC
     * is in an earlier file of the series, or was never written, is legal. */
    PYPROF_REC_FREE = 17,
    /* Allocation samples and frees, a few bytes each (the library writes these rather
     * than ALLOC and FREE records).  uvarint count (events, at most PYPROF_BATCH_MAX);
     * uvarint t0_us (an absolute time like ALLOC's, that the first event's gap counts from);
     * uvarint ordinal0 (the first allocation event's ordinal: allocation events of
     * ALLOCS records the process wrote before it, in every file of its series); then
     * `count` events, each starting with uvarint h:
     *   h & 3 == 0  an allocation: domain = h >> 2 & 7; stack_id = h >> 6; if h & 32,
     *               uvarint more (PYPROF_ALLOCS_M_*; other bits are corruption) and,
     *               in this order, uvarint thread_idx if M_THREAD (the current thread
     *               from now on; it starts as 0 in every record), uvarint address if
     *               M_ADDRESS (the block is named by its address, else by its ordinal:
     *               ordinal0 + allocation events before it in this record), uvarint
     *               flags if M_FLAGS (PYPROF_ALLOC_F_*, else 0); then uvarint size;
     *               svarint gap_us; in logs with PYPROF_HDR_NATIVE, uvarint nstack_id.
     *   h & 3 == 1  a free of the block named by ordinal (next - 1 - (h >> 2), where
     *               next is the ordinal the record's next allocation event would have;
     *               below 0 is corruption); svarint gap_us.
     *   h & 3 == 2  a free of the block named by address (h >> 2); svarint gap_us.
     *   h & 3 == 3  corruption.
     * gap_us counts from the event before (the first event's from t0_us).  An event
     * stands for the ALLOC (thread, stack, size, domain, flags, native stack) or FREE
     * record of that time; a free by ordinal ends the allocation event of the same
     * ordinal in the same process (this file or an earlier one of its series). */
    PYPROF_REC_ALLOCS = 18,
    /* An allocation window (logs with a nonzero alloc_interval).  When the Python
     * domains' small requests (the ones pymalloc serves from its pools) are many, they are
     * seen only inside short windows at random times, and the rest of the time the
     * domains run the interpreter's own allocator: an allocation of such a request made
     * inside a window counts 2^shift times its bytes in its thread's countdown, and its
     * ALLOC's flags carry the shift (PYPROF_ALLOC_SHIFT).  Everything else (larger
     * requests, the C library's allocator, mmap) is seen at every moment, counted once.
     * uvarint t_us (when the window opened, as ALLOC's); uvarint len_us (how long it
     * really stayed open); uvarint planned_us (how long it was meant to); uvarint shift
     * (its duty is 2^-shift: windows open at random times, so that any moment is inside
     * one with that probability: the gap after a window is drawn from an exponential
     * distribution of mean (2^shift - 1) times the length the window really had, less
     * the time the window before opened late); uvarint floor_shift (the largest shift
     * the library would use); uvarint flags (PYPROF_AWINDOW_F_*; a reader ignores bits
     * it does not know).  An allocation sampled inside a window of shift k stands for
     * what an allocation of size * 2^k stands for (ALLOC: bytes), and 2^k allocations
     * per 1 / p: the windows' records are not needed to weigh it, and tell how the
     * windows really ran.  A record with PYPROF_AWINDOW_F_PAUSED set is no window: from
     * t_us on, windows were paused until the next window's record (another allocator
     * hook sat on top of pyprof's, so the domains could not be switched; the small
     * requests of that time were seen only when the domains stayed wrapped, see the
     * flag). */
    PYPROF_REC_AWINDOW = 19,
};

/* The cost histogram's buckets (see PYPROF_REC_FOOTER), as the writer uses them.  The
 * log carries the bounds, so a reader never needs these. */
/* clang-format off */
#define PYPROF_COST_TIME_BOUNDS_NS                                                             \
    { 250, 500, 750, 1000, 1500, 2000, 3000, 4000, 6000, 8000, 16000, 32000, 64000, 0 }
#define PYPROF_COST_NTIME 14
#define PYPROF_COST_DEPTH_BOUNDS { 10, 25, 50, 100, 250, 500, 0 }
/* clang-format on */
#define PYPROF_COST_NDEPTH 7

/* Code ids below PYPROF_CODE_FIRST are markers, not code objects. */
enum pyprof_code_marker {
    PYPROF_CODE_CUT = 0,        /* frames were cut here (PYPROF_MAX_DEPTH); line = how many */
    PYPROF_CODE_UNREADABLE = 1, /* a frame whose memory could not be read or validated */
    PYPROF_CODE_FIRST = 16,
};

enum pyprof_clock {
    PYPROF_CLOCK_CPU = 0,
    PYPROF_CLOCK_WALL = 1,
};

#define PYPROF_HDR_MEMORY 1u /* RSS is recorded */
#define PYPROF_HDR_NATIVE 2u /* native frames are recorded */

/* Bounds of the native records.  A writer never exceeds them and a reader takes a record
 * beyond one as corruption: segments in a MODULE, addresses in an NSTACK, bytes of a
 * build-id. */
#define PYPROF_MODULE_SEG_MAX 256
#define PYPROF_NSTACK_MAX 4096
#define PYPROF_BUILD_ID_MAX 64

/* SAMPLE.native_flags */
/* clang-format off */
#define PYPROF_NATIVE_F_TRUNCATED 1u /* the native walk stopped before the thread's root
                                      * (a fault, a frame without unwind information, the
                                      * depth limit): the chain holds its inner part */
#define PYPROF_NATIVE_F_SKIPPED 2u   /* no native walk was made (the thread was not set up
                                      * for it yet, or modules were being loaded or
                                      * unloaded); nstack_id is 0 */
/* clang-format on */

enum pyprof_linetable {
    PYPROF_LT_NONE = 0,
    PYPROF_LT_LNOTAB_U8 = 1,     /* 2.7 co_lnotab: (addr_incr u8, line_incr u8) pairs */
    PYPROF_LT_LNOTAB_S8 = 2,     /* 3.6-3.9 co_lnotab: line_incr is int8 */
    PYPROF_LT_LINETABLE_310 = 3, /* 3.10 co_linetable: (start_delta u8, line_delta int8) */
    PYPROF_LT_LOCATIONS_311 = 4, /* 3.11+ location table (code units) */
};

/* The longest strings of a SPAN_START / SPAN_STOP; a writer cuts longer ones (at a
 * UTF-8 character boundary) and a reader takes longer ones as corruption. */
#define PYPROF_SPAN_NAME_MAX 256
#define PYPROF_SPAN_ID_MAX 64
#define PYPROF_SPAN_INFO_MAX 4096

/* ALLOC.domain: which allocator the block came from. */
enum pyprof_alloc_domain {
    PYPROF_ALLOC_MALLOC = 0,   /* the C library's malloc family */
    PYPROF_ALLOC_PYOBJECT = 1, /* PyObject_Malloc (pymalloc for small objects) */
    PYPROF_ALLOC_PYMEM = 2,    /* PyMem_Malloc */
    PYPROF_ALLOC_PYRAW = 3,    /* PyMem_RawMalloc */
    PYPROF_ALLOC_MMAP = 4,     /* an anonymous mmap */
    PYPROF_ALLOC_DOMAINS = 5,
};

/* ALLOC.flags */
/* clang-format off */
#define PYPROF_ALLOC_F_UNTRACKED 1u /* the block's free is not followed (the address set
                                     * was full): it counts as allocated, never in use */
#define PYPROF_ALLOC_F_SHIFT_MASK 62u /* bits 1-5: the shift of the allocation window it
                                       * was sampled in (AWINDOW), 0 when none */
#define PYPROF_ALLOC_SHIFT(flags) (((flags) & PYPROF_ALLOC_F_SHIFT_MASK) >> 1)
#define PYPROF_ALLOC_SHIFT_MAX 31u

/* AWINDOW.flags */
#define PYPROF_AWINDOW_F_PAUSED 1u  /* windows paused here: another allocator hook is on top */
#define PYPROF_AWINDOW_F_WRAPPED 2u /* with PAUSED: the domains stayed wrapped (every small
                                     * request seen, counted once); clear: they stayed the
                                     * interpreter's own (small requests not seen) */
/* clang-format on */

/* ALLOCS: what follows an allocation event whose h has bit 32 set */
#define PYPROF_ALLOCS_MORE 32u
#define PYPROF_ALLOCS_M_THREAD 1u  /* thread_idx follows */
#define PYPROF_ALLOCS_M_ADDRESS 2u /* address follows: the block is named by it */
#define PYPROF_ALLOCS_M_FLAGS 4u   /* flags follows */
#define PYPROF_ALLOCS_M_ALL 7u

/* STACK.gil: a wall-clock sample's thread and the GIL (the interpreter's global lock). */
enum pyprof_gil {
    PYPROF_GIL_UNKNOWN = 0,  /* not recorded (cpu mode, older writers) */
    PYPROF_GIL_HELD = 1,     /* the thread held the GIL */
    PYPROF_GIL_WAIT = 2,     /* it waited to take the GIL */
    PYPROF_GIL_OTHER = 3,    /* it neither held nor waited for the GIL: it waited on
                              * something else (I/O, a lock, a sleep) or ran C code that
                              * released it */
    PYPROF_GIL_NOT_HELD = 4, /* it did not hold the GIL; whether it waited for it is not
                              * known (a 2.7 or 3.6 whose libpython has no symbol table
                              * to find its GIL in) */
    PYPROF_GIL_STATES = 5,
    /* Not a state of the GIL: the sample stands for an asyncio task suspended at an
     * `await` (wall mode, 3.14+), on the thread whose event loop it belongs to; its stack
     * is the task's coroutines and task frames alone (docs/FORMAT.md, "asyncio task
     * frames").  Readers keep these apart from the thread's own time. */
    PYPROF_GIL_AWAIT = 6,
};

/* SNAPSHOT thread flags */
/* clang-format off */
#define PYPROF_SNAP_F_GIL 1u     /* the thread held the GIL */
#define PYPROF_SNAP_F_CHANGED 2u /* the stack changed while it was read: only its innermost
                                  * frame is known (under the unreadable marker) */
#define PYPROF_SNAP_F_TASK 8u /* not a thread: an asyncio task suspended at an await in
                              * the thread's event loop (3.14+), its stack the task's
                              * coroutines and task frames (docs/FORMAT.md) */
#define PYPROF_SNAP_F_GIL_WAIT 4u /* the thread waited to take the GIL (a snapshot
                                   * taken while a wall-clock window is open) */
/* clang-format on */

#define PYPROF_CODE_F_TABLE_CUT 1u /* the line table was longer than the copy limit */
/* Not a code object: an asyncio task's frame, between the frames the task runs and those
 * of the task awaiting it (or the event loop's).  `name` is the task's name (as
 * Task.get_name() gives it), the other strings are empty and its line is none. */
#define PYPROF_CODE_F_TASK 2u

/* BATCH: the most events one holds (a reader takes more as corruption), and the flags
 * of its samples of kind 5. */
#define PYPROF_BATCH_MAX 65536
#define PYPROF_BATCH_F_THREAD 1u /* thread_idx follows */
#define PYPROF_BATCH_F_CPU 2u    /* cpu_us follows */
#define PYPROF_BATCH_F_DT 4u     /* gap_us is plain, not relative to base_us */
#define PYPROF_BATCH_F_ALL 7u

/* Why a sampling signal did not produce a sample.  X(name, text) */
#define PYPROF_DROP_LIST(X)                                                                    \
    X(NOT_READY, "interpreter not running (starting or finalizing)")                           \
    X(NO_PYTHON, "thread not running Python")                                                  \
    X(UNREADABLE, "stack unreadable (fault or failed validation)")                             \
    X(RING_FULL, "buffer full")                                                                \
    X(REENTERED, "signal arrived inside the handler")                                          \
    X(CODE_TABLE_FULL, "code table full")                                                      \
    X(SIGNAL_STOLEN, "the program took over the sampling signal")                              \
    X(WRITE_ERROR, "log write failed")                                                         \
    X(THROTTLED, "skipped: sampling cost more than a quarter of the period")                   \
    X(NO_TIMER, "threads not sampled: their CPU timer could not be created")                   \
    X(MERGED, "timer expirations merged into a signal still pending (POSIX timer)")            \
    X(CHANGING, "stack kept changing while it was read (wall clock)")                          \
    X(ENDED_RUNNING, "thread found running ended before its timer took the sample (wall clock)")

enum pyprof_drop {
#define PYPROF_X_ENUM(name, text) PYPROF_DROP_##name,
    /* clang-format off */
    PYPROF_DROP_LIST(PYPROF_X_ENUM)
#undef PYPROF_X_ENUM
    PYPROF_DROP_COUNT
    /* clang-format on */
};

/* How profiling of this log ended.  X(name, text) */
#define PYPROF_END_LIST(X)                                                                     \
    X(UNKNOWN, "unknown")                                                                      \
    X(EXIT, "exit")                                                                            \
    X(UNDERSCORE_EXIT, "_exit")                                                                \
    X(FINALIZE, "Py_FinalizeEx")                                                               \
    X(SIGNAL, "signal")                                                                        \
    X(EXEC, "exec")                                                                            \
    X(TOGGLE, "toggled off")                                                                   \
    X(ERROR, "error")                                                                          \
    X(ROTATED, "rotated")

enum pyprof_end {
#define PYPROF_X_ENUM(name, text) PYPROF_END_##name,
    /* clang-format off */
    PYPROF_END_LIST(PYPROF_X_ENUM)
#undef PYPROF_X_ENUM
    PYPROF_END_COUNT
    /* clang-format on */
};

#endif
