/*
 * writer: from the handler's rings to the compressed log.  See writer.h.
 *
 * Each round (writer_round, called by the window's cron thread: window.c) takes every
 * committed CODE record (kept in a map for the line tables) and SAMPLE record, turns each
 * frame's instruction offset into a line, interns the stack as a sequence of (code id, line)
 * from the outermost frame (stackmap.h), and emits THREAD/CODE/STACK records the first time
 * they are needed and an event of a BATCH record for every sample (see Batches).  The records'
 * payloads are logenc.h's; the file, its name and its LZ4 frame are logfile.h's, flushed every
 * PYPROF_FLUSH so a killed process leaves a log readable up to the last flush; what the
 * header says about the process is procself.h's.  All the writer's memory is its own
 * heap, never touched by the handler.
 *
 * Native mode (the header's PYPROF_HDR_NATIVE, when sampler_native() says the handler
 * records native stacks).  Right after the header, and before the samples of any drain
 * once the loader has loaded or unloaded objects, the writer announces the modules
 * (modules.h: MODULE and MODULE_GONE records).  Each sample's native addresses, reversed
 * to run outermost first, are interned in a second stackmap (NSTACK records), and the
 * SAMPLE record gains the native stack's id and flags.  The handler marks the outermost
 * frame of each eval-loop activation's run with RFRAME_RUN_START in the code id; the
 * writer strips the bit before anything else sees the id, keeps it in the stack's
 * identity, and writes the runs' lengths in the STACK record.  A module loaded after the
 * last check and sampled before the next drain would be announced just after that
 * drain's samples; the handler skips the native walk while objects are being loaded or
 * unloaded, which keeps that window to the loader's own bookkeeping.  Logs without
 * native mode are exactly what they were before it existed.
 *
 * Batches.  Samples and RSS points are not written as SAMPLE and RSS records but as the
 * events of a BATCH record (format.h), a few bytes each, gathered until the log is
 * flushed: the batch is written right before every flush, before any record whose place
 * among the timed records matters (everything but THREAD, CODE, STACK and NSTACK, which
 * only announce ids, so the log's order of timed records and the rest is what it was
 * with one record per sample), and when it holds BATCH_EVENTS events (or BATCH_BYTES).
 * What a crash loses is unchanged: records only ever reached the file at a flush (or
 * when 64 KiB were staged), and a batch is written before each flush.  A file cut inside
 * a batch (a torn write, a copy taken while it is written) loses that batch, at most
 * BATCH_EVENTS samples, where a cut loses nothing before it in a file of SAMPLE records:
 * the price of a few bytes per sample instead of about ten.
 *
 * Generations.  When the handler's code table fills to half, the writer flips it to the
 * other (empty) table, waits until no handler still uses the old one, drains the rings,
 * clears the old table and forgets every code id that the new table does not hold, and
 * every stack and thread (they are emitted again when seen).  That keeps memory bounded
 * in a process that creates code objects for weeks.
 */
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <pyprof/format.h>

#include "allochook.h"
#include "allocsample.h"
#include "blockmap.h"
#include "calib.h"
#include "common/clock.h"
#include "common/linetable.h"
#include "common/logenc.h"
#include "common/record.h"
#include "diag.h"
#include "doorbell.h"
#include "common/growarray.h"
#include "logfile.h"
#include "modules.h"
#include "native.h"
#include "ownfd.h"
#include "ownthreads.h"
#include "procself.h"
#include "pynames.h"
#include "safe_read.h"
#include "sampler.h"
#include "codemap.h"
#include "codetable.h"
#include "spans.h"
#include "stackmap.h"
#include "threadmap.h"
#include "threadtimer.h"
#include "procexit.h"
#include "rrec.h"

#define WAKE_IDLE_NS 100000000ull    /* the writer drains every 100 ms ... */
#define WAKE_BUSY_NS 5000000ull      /* ... or every 5 ms while the ring fills fast */
#define RSS_EVERY_NS 20000000ull     /* RSS read at a wake, at most every 20 ms ... */
#define RSS_SAME_NS 1000000000ull    /* ... and written when it changed, or every second */
#define NAMES_EVERY_NS 1000000000ull /* thread names re-read every second (renames) */
#define BATCH_BYTES (16u << 10)      /* events a BATCH gathers at most (bytes) ... */
#define BATCH_EVENTS 256             /* ... and in number: what a cut inside one loses */
#define ALLOCS_BYTES (8u << 10)      /* the same for an ALLOCS record */

/* Every counter the footer reports that runs on outside the writer's own bookkeeping,
 * as one snapshot: read when a file begins (its base) and when it ends, the footer is
 * the difference (counters_read, counters_since).  A new counter is a field here, a line
 * in counters_read, and the footer's field. */
typedef struct counters {
    sampler_stats st;         /* the handler's, since the sampler started */
    uint64_t writer_ns;       /* the writer thread's CPU */
    uint64_t timer_ns;        /* the timers' own upkeep (threadtimer_cpu_ns) */
    uint64_t untimed_ns;      /* threads that ran without a timer of their own */
    uint64_t wall_passes;     /* wall mode's passes over the threads */
    uint64_t clock_timer_ns;  /* what the CPU timers counted ... */
    uint64_t clock_kernel_ns; /* ... and what the kernel gave the threads of it */
    uint64_t calib_ns;        /* the calibration's CPU (once per process) */
    uint64_t spans_lost;      /* spans not recorded, since the process started */
    allocsample_counts alloc; /* allocation sampling's, since the process started */
} counters;

static struct {
    /* configuration */
    pyprof_config cfg;
    pyabi abi;
    char run_id[64];
    unsigned window;
    pid_t pid;
    /* the series of rotated files and this file of it */
    unsigned seq;             /* this file's place in the series */
    unsigned file_gen;        /* bumped at each new file */
    uint64_t series_unix_ns;  /* the first file's start (wall clock) */
    uint64_t file_rel0_ns;    /* this file's start of profiling, since sampler_t0 */
    uint64_t file_t0_mono_ns; /* the same on the monotonic clock */
    counters base;            /* the counters when this file began */
    uint64_t alloc_written, frees_written; /* allocations and frees written in this file */
    /* a snapshot being collected from the ring (RREC_SNAP ... RREC_SNAP_END) */
    logenc_snap_thread *snap;
    size_t snap_n, snap_cap;
    uint32_t snap_id;       /* the snapshot snap[] belongs to */
    uint32_t snapshot_last; /* the last snapshot written */
    /* output */
    logfile log;
    /* the BATCH being gathered: its coding state, its events, the record's payload */
    logenc_batch batch;
    rec_out batch_ev;
    uint8_t *batch_buf, *batch_payload; /* BATCH_BYTES, + LOGENC_BATCH_HEAD_MAX */
    /* the ALLOCS being gathered, the same way (buffers made at the first allocation
     * sample), and the ordinals of the sampled blocks whose frees are still to come */
    logenc_allocs allocs;
    rec_out allocs_ev;
    uint8_t *allocs_buf, *allocs_payload; /* ALLOCS_BYTES, + LOGENC_ALLOCS_HEAD_MAX */
    int allocs_failed;                    /* they could not be had: ALLOC, FREE records */
    blockmap blocks;
    int statm_fd;
    /* the rounds */
    int started;            /* writer_start succeeded: rounds will come */
    _Atomic int finished;   /* the footer was written (or is being written) */
    uint64_t rounds;        /* writer_round's calls */
    uint64_t writer_cpu_ns; /* the rounds' thread's CPU, at the footer */
    /* state */
    int64_t last_t_us;
    uint64_t last_rss_t_ns;    /* the last read of the RSS (since sampler_t0) */
    uint64_t last_rss_emit_ns; /* the last RSS record (since sampler_t0) */
    uint64_t last_rss;         /* its value */
    uint64_t last_flush_ns;
    uint64_t samples;
    uint64_t cpu_start_ns, unix_start_ns;
    /* code map: open addressing on id */
    codemap codes;
    /* stack dedup: Python stacks, native stacks (native mode) */
    stackmap stacks, nstacks;
    /* native mode: decided when the log is opened; the modules the log announced */
    int native;
    modules mods;
    /* threads: tid -> idx, and their names */
    threadmap tmap;
} W = {.log = {.fd = -1}, .statm_fd = -1};

const char *writer_path(void) { return W.log.path; }

/* ---- output ------------------------------------------------------------------------- */

/* A new, empty batch after the timed record at t0_us (the log's settings: the period,
 * the page size, native mode). */
static void batch_start(int64_t t0_us)
{
    uint64_t period_us = W.cfg.period_ns / 1000;
    long page = sysconf(_SC_PAGESIZE);
    logenc_batch_start(&W.batch, t0_us, period_us, period_us, page > 0 ? (uint64_t)page : 1,
                       W.native);
    if (W.batch_buf)
        rec_out_init(&W.batch_ev, W.batch_buf, BATCH_BYTES);
}

/* Writes the batch gathered so far, if any, as one BATCH record, and starts the next. */
static void batch_emit(void)
{
    if (!W.batch.count)
        return;
    rec_out o;
    rec_out_init(&o, W.batch_payload, BATCH_BYTES + LOGENC_BATCH_HEAD_MAX);
    if (logenc_put_batch(&o, &W.batch, W.batch_ev.buf, W.batch_ev.len) == 0)
        logfile_emit(&W.log, PYPROF_REC_BATCH, &o);
    batch_start(W.batch.t_us); /* the next counts from this one's last event */
}

/* Writes the allocation events gathered so far, if any, as one ALLOCS record; the next
 * record's first allocation event gets the ordinal after them. */
static void allocs_emit(void)
{
    if (!W.allocs.count)
        return;
    rec_out o;
    rec_out_init(&o, W.allocs_payload, ALLOCS_BYTES + LOGENC_ALLOCS_HEAD_MAX);
    if (logenc_put_allocs(&o, &W.allocs, W.allocs_ev.buf, W.allocs_ev.len) == 0)
        logfile_emit(&W.log, PYPROF_REC_ALLOCS, &o);
    logenc_allocs_start(&W.allocs, 0, W.allocs.ordinal0 + W.allocs.nallocs, W.native);
    rec_out_init(&W.allocs_ev, W.allocs_buf, ALLOCS_BYTES);
}

/* Appends one record (type + payload) to the log: after the batches gathered so far,
 * unless the record only announces ids (see the top of the file). */
static void emit(uint8_t type, const rec_out *payload)
{
    if (type != PYPROF_REC_THREAD && type != PYPROF_REC_CODE && type != PYPROF_REC_STACK &&
        type != PYPROF_REC_NSTACK) {
        batch_emit();
        allocs_emit();
    }
    logfile_emit(&W.log, type, payload);
}

/* Writes the batches and flushes the log to the file. */
static void flush_log(void)
{
    batch_emit();
    allocs_emit();
    logfile_flush(&W.log);
}

/* A sample into the batch (a full one is written first).  Returns 0, or -1 when there
 * is no batch (its memory could not be had): the caller writes a SAMPLE record. */
static int batch_sample(int64_t t_us, uint32_t tidx, uint32_t sid, uint64_t cpu_us,
                        uint32_t nsid, uint8_t nflags)
{
    if (!W.batch_buf)
        return -1;
    if (logenc_batch_sample(&W.batch_ev, &W.batch, t_us, tidx, sid, cpu_us, nsid, nflags) < 0) {
        batch_emit();
        if (logenc_batch_sample(&W.batch_ev, &W.batch, t_us, tidx, sid, cpu_us, nsid, nflags) <
            0)
            return -1;
    }
    if (W.batch.count >= BATCH_EVENTS)
        batch_emit();
    return 0;
}

/* An RSS point into the batch, as batch_sample.  -1 also for a value the batch cannot
 * hold (not a whole number of pages): the caller writes an RSS record. */
static int batch_rss(int64_t t_us, uint64_t rss)
{
    if (!W.batch_buf)
        return -1;
    if (logenc_batch_rss(&W.batch_ev, &W.batch, t_us, rss) < 0) {
        batch_emit();
        if (logenc_batch_rss(&W.batch_ev, &W.batch, t_us, rss) < 0)
            return -1;
    }
    if (W.batch.count >= BATCH_EVENTS)
        batch_emit();
    return 0;
}

/* The log's first failed write: the samples from then on are lost, and the footer (if it
 * can still be written) says so. */
static void count_write_error(void) { sampler_count_drop(PYPROF_DROP_WRITE_ERROR); }

static void put_header(void)
{
    uint8_t buf[16384];
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    char host[256], exe[PATH_MAX], cmd[8192 + 1];
    procself_host(host, sizeof host);
    procself_exe(exe, sizeof exe);
    size_t cl = procself_cmdline(cmd, sizeof cmd);
    logenc_header_fields h = {
        .pid = (uint64_t)W.pid,
        .ppid = (uint64_t)getppid(),
        .run_id = W.run_id,
        .start_unix_ns = W.unix_start_ns,
        .host = host,
        .exe = exe,
        .cmdline = cmd,
        .cmdline_len = cl,
        .python_version = W.abi.version,
        .python_hex = W.abi.hex,
        .period_ns = W.cfg.period_ns,
        .clock = (uint8_t)W.cfg.clock,
        .timer = sampler_timer_name(),
        .max_depth = W.cfg.max_depth,
        .flags = (W.cfg.memory ? PYPROF_HDR_MEMORY : 0) | (W.native ? PYPROF_HDR_NATIVE : 0),
        .window = W.window,
        .seq = W.seq,
        .series_start_unix_ns = W.series_unix_ns,
        .offset_us = W.file_rel0_ns / 1000,
        .alloc_interval = allochook_installed() ? allocsample_interval() : 0,
    };
    logenc_put_header(&o, &h);
    emit(PYPROF_REC_HEADER, &o);
}

static void emit_module(const logenc_module_fields *m, void *ctx)
{
    (void)ctx;
    size_t cap = logenc_module_max(m);
    uint8_t small[1024];
    uint8_t *buf = cap <= sizeof small ? small : malloc(cap);
    if (!buf)
        return;
    rec_out o;
    rec_out_init(&o, buf, cap);
    logenc_put_module(&o, m);
    emit(PYPROF_REC_MODULE, &o);
    if (buf != small)
        free(buf);
}

static void emit_module_gone(uint32_t module_id, void *ctx)
{
    (void)ctx;
    uint8_t buf[16];
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    logenc_put_module_gone(&o, module_id);
    emit(PYPROF_REC_MODULE_GONE, &o);
}

/* Announces the modules loaded since the last time, and those gone (native mode). */
static void sync_modules(void) { modules_sync(&W.mods, emit_module, emit_module_gone, NULL); }

/* Requests from the control thread (writer_request): one at a time, answered by the
 * writer thread.  Outside W, which a new window clears. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t done_cond;
    int op;            /* WRITER_REQ_*, 0 = none pending */
    uint64_t id, done; /* the pending request's number; the last one answered */
    int rc;
    char path[PATH_MAX];
    char current[PATH_MAX]; /* the log being written, for writer_status ("" none) */
} R = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, "", ""};

/* The log being written, as writer_status tells it (another thread's reads must not see
 * W.log.path change under them). */
static void publish_path(const char *path)
{
    pthread_mutex_lock(&R.lock);
    snprintf(R.current, sizeof R.current, "%s", path);
    pthread_mutex_unlock(&R.lock);
}

/* The files of this process that the library finished, oldest first: what PYPROF_KEEP
 * may remove.  Never another process's (a fork child starts with none), never the file
 * being written. */
static struct {
    char **paths;
    size_t n, cap;
} kept;

/* A finished file: remembered, and the oldest beyond PYPROF_KEEP removed. */
static void keep_finished(const char *path)
{
    if (!W.cfg.keep || !path[0])
        return;
    if (grow_array((void **)&kept.paths, &kept.cap, kept.n + 1, sizeof *kept.paths, 16) < 0)
        return;
    char *p = strdup(path);
    if (!p)
        return;
    kept.paths[kept.n++] = p;
    size_t drop = kept.n > W.cfg.keep ? kept.n - W.cfg.keep : 0;
    for (size_t i = 0; i < drop; i++) {
        if (unlink(kept.paths[i]) < 0 && errno != ENOENT)
            diag_verbose("pyprof: cannot remove %s: %s", kept.paths[i], strerror(errno));
        free(kept.paths[i]);
    }
    memmove(kept.paths, kept.paths + drop, (kept.n - drop) * sizeof *kept.paths);
    kept.n -= drop;
}

/* Opens the log and writes the frame header, magic and HEADER (and, in native mode, the
 * modules).  Returns 0 or -1. */
static int open_log(void)
{
    if (W.log.fd >= 0 || W.log.failed)
        return W.log.fd >= 0 ? 0 : -1;
    char prog[256], host[256];
    procself_prog_name(prog, sizeof prog);
    procself_host(host, sizeof host);
    logfile_naming nm = {.output = W.cfg.output,
                         .pid = W.pid,
                         .ppid = getppid(),
                         .prog = prog,
                         .host = host,
                         .run_id = W.run_id,
                         .start_unix_ns = W.unix_start_ns,
                         .seq = W.seq,
                         .series = W.cfg.rotate_ns || W.cfg.rotate_bytes || W.seq};
    if (logfile_open(&W.log, &nm) < 0)
        return -1;
    W.native = sampler_native() > 0;
    if (!W.batch_buf) {
        W.batch_buf = malloc(BATCH_BYTES);
        W.batch_payload = malloc(BATCH_BYTES + LOGENC_BATCH_HEAD_MAX);
        if (!W.batch_buf || !W.batch_payload) {
            free(W.batch_buf); /* SAMPLE and RSS records then, as before batches */
            free(W.batch_payload);
            W.batch_buf = W.batch_payload = NULL;
        }
    }
    batch_start(W.last_t_us);
    publish_path(W.log.path);
    allochook_recheck(); /* the interpreter's start may have replaced its allocators */
    put_header();
    if (W.native)
        sync_modules();
    diag_verbose("pyprof: profiling pid %ld into %s (%s)", (long)W.pid, W.log.path,
                 sampler_timer_name());
    return 0;
}

/* ---- maps --------------------------------------------------------------------------- */

/* A thread's THREAD record (threadmap.h announces threads through it). */
static void announce_thread(uint32_t idx, uint32_t tid, const char *name, void *ctx)
{
    (void)ctx;
    uint8_t buf[64 + PYNAMES_NAME_MAX];
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    logenc_put_thread(&o, idx, tid, name);
    emit(PYPROF_REC_THREAD, &o);
}

/* Both maps start afresh together, so no id of the new generation refers to a record
 * of the old one. */
static void stacks_reset(void)
{
    stackmap_reset(&W.stacks);
    stackmap_reset(&W.nstacks);
}

/* A sample's Python stack being built, outermost first: its frames, their words in the
 * stack map (with the run marks), and its runs. */
typedef struct stackbuild {
    logenc_frame *f;
    uint64_t *w;
    uint32_t *runs;
    size_t n, nruns;
    uint8_t gil; /* enum pyprof_gil: part of the stack's identity when known */
} stackbuild;

/* Appends a frame.  The outermost frame starts the first run, a frame marked
 * RFRAME_RUN_START the next; a marker is never marked, so it stays in the run it sits
 * in.  Marks count in the stack's identity only in native logs (elsewhere there are
 * none, and the words are the frames alone). */
static void sb_push(stackbuild *b, uint32_t code_id, int32_t line, int run_start)
{
    int starts = b->n == 0 || run_start;
    if (starts)
        b->runs[b->nruns++] = 0;
    b->runs[b->nruns - 1]++;
    b->f[b->n] = (logenc_frame){code_id, line};
    b->w[b->n] = stackmap_frame_word(code_id, line, W.native && starts);
    b->n++;
}

/* Writes code `id`'s CODE record into this file unless it is there already (a series'
 * next file announces again the code its stacks use). */
static void code_announce(uint32_t id)
{
    code_info *ci = id >= PYPROF_CODE_FIRST ? codemap_find(&W.codes, id) : NULL;
    if (!ci || ci->file_gen == W.file_gen || !ci->rec)
        return;
    ci->file_gen = W.file_gen;
    rec_out o;
    rec_out_init(&o, ci->rec, ci->rec_len);
    o.len = ci->rec_len;
    emit(PYPROF_REC_CODE, &o);
}

/* The id of this stack, emitting its STACK record (with its runs in native mode) the
 * first time.  0 on failure. */
static uint32_t stack_id(const stackbuild *b)
{
    int is_new;
    /* A known GIL state is one more word, which no frame's can equal (code ids stay
     * below 2^31 - 1): the same frames in two states are two stacks. */
    size_t nw = b->n;
    if (b->gil)
        b->w[nw++] = stackmap_frame_word(0x7fffffffu, b->gil, 0);
    uint32_t id = stackmap_intern(&W.stacks, b->w, nw, &is_new);
    if (!id || !is_new)
        return id;
    for (size_t i = 0; i < b->n; i++)
        code_announce(b->f[i].code_id);
    size_t cap = LOGENC_STACK_MAX(b->n) + (W.native ? LOGENC_RUNS_MAX(b->n) : 0) +
                 REC_VARINT_MAX;
    uint8_t small[4096];
    uint8_t *buf = cap <= sizeof small ? small : malloc(cap);
    if (!buf)
        return 0;
    rec_out o;
    rec_out_init(&o, buf, cap);
    logenc_put_stack(&o, id, b->f, b->n);
    if (W.native)
        logenc_put_stack_runs(&o, b->runs, b->nruns);
    if (b->gil)
        logenc_put_stack_gil(&o, b->gil);
    emit(PYPROF_REC_STACK, &o);
    if (buf != small)
        free(buf);
    return id;
}

/* The id of a record's native stack (stack st, `room` bytes from st to the record's end;
 * addresses innermost first), emitting its NSTACK record the first time; 0 when it has
 * none, or on failure.  A chain longer than the format allows keeps its inner part and
 * is flagged truncated. */
static uint32_t native_stack_id(const rrec_stack *st, size_t room, uint8_t *flags)
{
    size_t nn = st->nnative;
    if (!nn || rrec_stack_bytes(st) > room)
        return 0;
    if (nn > PYPROF_NSTACK_MAX) {
        nn = PYPROF_NSTACK_MAX;
        *flags |= PYPROF_NATIVE_F_TRUNCATED;
    }
    const uint64_t *in = rrec_native(st);
    uint64_t small[512];
    uint64_t *a = nn <= 512 ? small : malloc(nn * sizeof *a);
    if (!a)
        return 0;
    for (size_t i = 0; i < nn; i++)
        a[i] = in[nn - 1 - i];
    int is_new;
    uint32_t id = stackmap_intern(&W.nstacks, a, nn, &is_new);
    if (id && is_new) {
        size_t cap = LOGENC_NSTACK_MAX(nn);
        uint8_t *buf = malloc(cap);
        if (buf) {
            rec_out o;
            rec_out_init(&o, buf, cap);
            logenc_put_nstack(&o, id, a, nn);
            emit(PYPROF_REC_NSTACK, &o);
            free(buf);
        } else {
            id = 0;
        }
    }
    if (a != small)
        free(a);
    return id;
}

/* ---- draining ----------------------------------------------------------------------- */

static void take_code(const rrec_code *c)
{
    code_info *ci = codemap_slot(&W.codes, c->code_id);
    if (!ci)
        return;
    free(ci->lt);
    /* data: name, qualname, filename, line table, back to back */
    logenc_code_fields cf = {
        .code_id = c->code_id,
        .first_line = c->first_line,
        .name = c->data,
        .name_len = c->name_len,
        .qualname = c->data + c->name_len,
        .qualname_len = c->qualname_len,
        .filename = c->data + c->name_len + c->qualname_len,
        .filename_len = c->filename_len,
        .lt_kind = c->lt_kind,
        .lt = c->data + c->name_len + c->qualname_len + c->filename_len,
        .lt_len = c->lt_len,
        .flags = c->flags,
    };
    ci->id = c->code_id;
    ci->first_line = c->first_line;
    ci->kind = c->lt_kind;
    ci->lt_len = c->lt_len;
    ci->lt = malloc(c->lt_len ? c->lt_len : 1);
    if (ci->lt)
        memcpy(ci->lt, cf.lt, c->lt_len);
    else
        ci->lt_len = 0;
    size_t cap = logenc_code_max(&cf);
    free(ci->rec);
    ci->rec = NULL;
    ci->rec_len = 0;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return;
    rec_out o;
    rec_out_init(&o, buf, cap);
    logenc_put_code(&o, &cf);
    emit(PYPROF_REC_CODE, &o);
    /* Kept for the next file of a series, which must announce it again. */
    uint8_t *keep = realloc(buf, o.len ? o.len : 1);
    ci->rec = keep ? keep : buf;
    ci->rec_len = (uint32_t)o.len;
    ci->file_gen = W.file_gen;
}

static void drain_codes(void)
{
    if (W.log.fd < 0 && !W.log.failed)
        return;
    const void *rec;
    size_t len;
    while ((rec = ring_peek(sampler_code_ring(), &len))) {
        take_code(rec);
        ring_release(sampler_code_ring());
    }
}

static int32_t frame_line(uint32_t *code_id, int32_t offset)
{
    if (*code_id < PYPROF_CODE_FIRST)
        return 0;
    code_info *ci = codemap_find(&W.codes, *code_id);
    if (!ci) {
        /* The CODE record was committed before this sample, but an older record of
         * another thread may still hold the code ring; take what is there now. */
        drain_codes();
        ci = codemap_find(&W.codes, *code_id);
    }
    if (!ci) {
        *code_id = PYPROF_CODE_UNREADABLE;
        return 0;
    }
    return linetable_line(ci->kind, ci->lt, ci->lt_len, ci->first_line, offset);
}

/* Appends a recorded frame: its code id without the run mark, its line. */
static void sb_frame(stackbuild *b, const rframe *fr)
{
    uint32_t id = fr->code_id & ~RFRAME_RUN_START;
    int32_t line = frame_line(&id, fr->offset);
    sb_push(b, id, line, (fr->code_id & RFRAME_RUN_START) != 0);
}

#define SB_SMALL 512 /* frames a stack is built with on the writer's own stack */

/* A recorded time (ns since sampler_t0) in this file's microseconds. */
static int64_t file_us(uint64_t t_ns)
{
    return t_ns > W.file_rel0_ns ? (int64_t)((t_ns - W.file_rel0_ns) / 1000) : 0;
}

/* A record's stack (rrec_stack: a sample's, a snapshot thread's, an allocation's): its
 * thread's index and its Python stack's id, with what they need announced first; its GIL
 * state is `gil`.  Returns 0, or -1 when the stack could not be interned. */
static int stack_ids(const rrec_stack *st, uint8_t gil, uint32_t *tidx, uint32_t *sid)
{
    size_t n = (size_t)st->nframes + 3; /* the markers, the GIL state's word */
    logenc_frame fbuf[SB_SMALL];
    uint64_t wbuf[SB_SMALL];
    uint32_t rbuf[SB_SMALL];
    stackbuild b = {fbuf, wbuf, rbuf, 0, 0, gil};
    void *heap = NULL;
    if (n > SB_SMALL) {
        heap = malloc(n * (sizeof *b.w + sizeof *b.f + sizeof *b.runs));
        if (!heap)
            return -1;
        b.w = heap;
        b.f = (logenc_frame *)(b.w + n);
        b.runs = (uint32_t *)(b.f + n);
    }
    const rframe *fr = rrec_frames(st);
    if (st->unreadable_tail)
        sb_push(&b, PYPROF_CODE_UNREADABLE, 0, 0);
    for (size_t i = st->nframes; i-- > st->keep_inner;)
        sb_frame(&b, &fr[i]);
    if (st->cut)
        sb_push(&b, PYPROF_CODE_CUT, (int32_t)st->cut, 0);
    for (size_t i = st->keep_inner; i-- > 0;)
        sb_frame(&b, &fr[i]);
    *tidx = threadmap_idx(&W.tmap, st->tid);
    *sid = b.n ? stack_id(&b) : 0;
    free(heap);
    return *sid || !b.n ? 0 : -1;
}

/* One sample into the current BATCH, or a SAMPLE record of its own when it does not fit
 * one. */
static void put_sample(int64_t t_us, uint32_t tidx, uint32_t sid, uint64_t cpu_us,
                       uint32_t nsid, uint8_t nflags)
{
    if (batch_sample(t_us, tidx, sid, cpu_us, nsid, nflags) < 0) {
        uint8_t buf[64];
        rec_out o;
        rec_out_init(&o, buf, sizeof buf);
        logenc_put_sample(&o, t_us - W.last_t_us, tidx, sid, cpu_us);
        if (W.native)
            logenc_put_sample_native(&o, nsid, nflags);
        emit(PYPROF_REC_SAMPLE, &o);
        batch_start(t_us); /* the next batch counts from this record */
    }
    W.last_t_us = t_us;
    W.samples++;
}

/* One SAMPLE record (its stack `room` bytes to the record's end), with what it needs
 * announced first. */
static void take_sample(const rrec_sample *s, size_t room)
{
    const rrec_stack *st = &s->stack;
    uint32_t tidx, sid;
    if (stack_ids(st, s->gil, &tidx, &sid) < 0 || !sid)
        return;
    int64_t t_us = file_us(st->t_ns);
    uint64_t cpu_us = W.cfg.period_ns / 1000;
    if (s->gil == PYPROF_GIL_AWAIT) {
        /* A suspended asyncio task's: one sample whose cpu_us is the waiting it stands
         * for (its repeats: the tasks and passes it stands for), not that many. */
        put_sample(t_us, tidx, sid, cpu_us * ((uint64_t)s->repeat + 1), 0, 0);
        return;
    }
    /* Its repeats in their GIL states (the asking passes'): held, waiting, the rest. */
    uint32_t sid_held = sid, sid_wait = sid, sid_rest = sid;
    if (s->repeat && s->gil != PYPROF_GIL_UNKNOWN) {
        if (s->repeat_held && stack_ids(st, PYPROF_GIL_HELD, &tidx, &sid_held) < 0)
            sid_held = sid;
        if (s->repeat_wait && stack_ids(st, PYPROF_GIL_WAIT, &tidx, &sid_wait) < 0)
            sid_wait = sid;
        if (s->repeat > s->repeat_held + s->repeat_wait &&
            stack_ids(st, s->repeat_gil, &tidx, &sid_rest) < 0)
            sid_rest = sid;
    }
    uint8_t nflags = st->native_flags;
    uint32_t nsid = W.native ? native_stack_id(st, room, &nflags) : 0;
    /* A record that stands for more samples (wall mode: passes that found its thread
     * running before its timer fired) is that many samples of its stack, at its time. */
    for (uint64_t k = 0; k <= s->repeat; k++) {
        uint32_t id = k == 0                                 ? sid
                      : k <= s->repeat_held                  ? sid_held
                      : k <= s->repeat_held + s->repeat_wait ? sid_wait
                                                             : sid_rest;
        put_sample(t_us, tidx, id, cpu_us, nsid, nflags);
    }
}

/* One thread of a snapshot: kept until its RREC_SNAP_END.  What is kept of another
 * snapshot, one whose end never came (the ring was full), is let go. */
static void snap_add(const rrec_snap *s)
{
    if (W.snap_n && W.snap_id != s->snap_id)
        W.snap_n = 0;
    W.snap_id = s->snap_id;
    uint32_t tidx, sid;
    if (stack_ids(&s->stack, PYPROF_GIL_UNKNOWN, &tidx, &sid) < 0)
        sid = 0;
    if (grow_array((void **)&W.snap, &W.snap_cap, W.snap_n + 1, sizeof *W.snap, 16) < 0)
        return;
    W.snap[W.snap_n++] = (logenc_snap_thread){tidx, sid, s->flags, s->os_state};
}

/* The end of a snapshot: its SNAPSHOT record. */
static void snap_end(const rrec_snap_end *s)
{
    if (W.snap_n && W.snap_id != s->snap_id)
        W.snap_n = 0;
    size_t cap = LOGENC_SNAPSHOT_MAX(W.snap_n);
    uint8_t *buf = malloc(cap);
    if (buf) {
        rec_out o;
        rec_out_init(&o, buf, cap);
        logenc_put_snapshot(&o, s->snap_id, (uint64_t)file_us(s->t_ns), W.snap, W.snap_n);
        emit(PYPROF_REC_SNAPSHOT, &o);
        free(buf);
        W.snapshot_last = s->snap_id;
    }
    W.snap_n = 0;
}

/* A span's start or end (spans.h): its SPAN_START or SPAN_STOP record, the THREAD
 * record of the thread that made it first.  The time is absolute in this file (a start
 * made before a rotation and taken after it is at 0, as a sample would be). */
static void take_span(const void *rec, size_t len)
{
    spans_rec v;
    if (spans_parse(rec, len, &v) < 0)
        return;
    uint32_t tidx = threadmap_idx(&W.tmap, v.tid);
    uint64_t t_us = (uint64_t)file_us(v.t_ns);
    uint8_t buf[LOGENC_SPAN_MAX];
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    if (v.kind == RREC_SPAN_START) {
        logenc_span_start st = {
            .span_id = v.span_id,
            .t_us = t_us,
            .thread_idx = tidx,
            .parent_span_id = v.parent_span,
            .name = v.name,
            .name_len = v.name_len,
            .trace_id = v.trace_id,
            .trace_id_len = v.trace_id_len,
            .parent_id = v.parent_id,
            .parent_id_len = v.parent_id_len,
            .base_id = v.base_id,
            .base_id_len = v.base_id_len,
            .info = v.info,
            .info_len = v.info_len,
        };
        if (logenc_put_span_start(&o, &st) == 0)
            emit(PYPROF_REC_SPAN_START, &o);
    } else if (logenc_put_span_stop(&o, v.span_id, t_us, tidx, v.info, v.info_len) == 0) {
        emit(PYPROF_REC_SPAN_STOP, &o);
    }
}

/* Whether allocation events can be gathered (their buffers made at the first call). */
static int allocs_ready(void)
{
    if (!W.allocs_buf && !W.allocs_failed) {
        W.allocs_buf = malloc(ALLOCS_BYTES);
        W.allocs_payload = malloc(ALLOCS_BYTES + LOGENC_ALLOCS_HEAD_MAX);
        if (!W.allocs_buf || !W.allocs_payload) {
            free(W.allocs_buf); /* ALLOC and FREE records then */
            free(W.allocs_payload);
            W.allocs_buf = W.allocs_payload = NULL;
            W.allocs_failed = 1;
            return 0;
        }
        logenc_allocs_start(&W.allocs, 0, W.allocs.ordinal0, W.native);
        rec_out_init(&W.allocs_ev, W.allocs_buf, ALLOCS_BYTES);
    }
    return W.allocs_buf != NULL;
}

/* One event into the ALLOCS being gathered: the allocation `a`, or (a NULL) the free at
 * t_us of the block named by `ordinal` or `address`.  A record starts at its first
 * event (its t0); a full one is written first, and one that reaches BATCH_EVENTS after.
 * Returns 0, or -1 when even an empty record has no room for it. */
static int allocs_put(const logenc_alloc_fields *a, int by_address, int64_t t_us,
                      uint64_t ordinal, uint64_t address)
{
    for (;;) {
        int empty = !W.allocs.count;
        if (empty)
            logenc_allocs_start(&W.allocs, t_us, W.allocs.ordinal0, W.native);
        int rc = a ? logenc_allocs_alloc(&W.allocs_ev, &W.allocs, a, by_address)
                   : logenc_allocs_free(&W.allocs_ev, &W.allocs, t_us, by_address, ordinal,
                                        address);
        if (rc == 0)
            break;
        if (empty)
            return -1;
        allocs_emit();
    }
    if (W.allocs.count >= BATCH_EVENTS)
        allocs_emit();
    return 0;
}

/* An allocation sample: an event of the ALLOCS being gathered (or, without its buffers,
 * an ALLOC record), after the THREAD, STACK and (native mode) NSTACK it refers to.  A
 * sample taken without a Python frame has stack 0.  A block whose free is followed is
 * named by its event's ordinal while the block map has room, by its address otherwise;
 * an untracked one (no free to come) by its ordinal, never remembered. */
static void take_alloc(const rrec_alloc *s, size_t room)
{
    const rrec_stack *st = &s->stack;
    uint32_t tidx, sid;
    if (stack_ids(st, PYPROF_GIL_UNKNOWN, &tidx, &sid) < 0)
        return;
    uint8_t nflags = st->native_flags;
    uint32_t nsid = W.native ? native_stack_id(st, room, &nflags) : 0;
    uint8_t buf[LOGENC_ALLOC_MAX];
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    logenc_alloc_fields a = {
        .t_us = (uint64_t)file_us(st->t_ns),
        .thread_idx = tidx,
        .stack_id = sid,
        .size = s->size,
        .address = s->addr,
        .domain = s->domain,
        .flags = s->flags,
        .native = W.native,
        .nstack_id = nsid,
    };
    if (allocs_ready()) {
        uint64_t ordinal = W.allocs.ordinal0 + W.allocs.nallocs;
        int tracked = !(a.flags & PYPROF_ALLOC_F_UNTRACKED);
        int by_address = tracked && blockmap_put(&W.blocks, a.address, ordinal) < 0;
        if (allocs_put(&a, by_address, (int64_t)a.t_us, 0, 0) == 0) {
            W.alloc_written++;
            return;
        }
        uint64_t dummy;
        if (tracked && !by_address)
            blockmap_take(&W.blocks, a.address, &dummy);
    }
    if (logenc_put_alloc(&o, &a) == 0) {
        emit(PYPROF_REC_ALLOC, &o);
        W.alloc_written++;
    }
}

/* A sampled block's free: an event naming the block by the ordinal its allocation event
 * got, or by its address (or, without the buffers, a FREE record). */
static void take_free(const rrec_free *f)
{
    int64_t t_us = file_us(f->t_ns);
    if (allocs_ready()) {
        uint64_t ordinal = 0;
        int by_address = !blockmap_take(&W.blocks, f->addr, &ordinal);
        if (allocs_put(NULL, by_address, t_us, ordinal, f->addr) == 0) {
            W.frees_written++;
            return;
        }
    }
    uint8_t buf[LOGENC_FREE_MAX];
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    if (logenc_put_free(&o, (uint64_t)t_us, f->addr) == 0) {
        emit(PYPROF_REC_FREE, &o);
        W.frees_written++;
    }
}

static void take_awindow(const rrec_awindow *w)
{
    if (W.log.fd < 0 || W.log.failed)
        return;
    logenc_awindow_fields f = {
        .t_us = (uint64_t)file_us(w->t_ns),
        .len_us = w->len_ns / 1000,
        .planned_us = w->planned_ns / 1000,
        .shift = w->shift,
        .floor_shift = w->floor_shift,
        .flags = w->flags,
    };
    uint8_t buf[LOGENC_AWINDOW_MAX];
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    if (logenc_put_awindow(&o, &f) == 0)
        emit(PYPROF_REC_AWINDOW, &o);
}

/* One record of the sample ring (`len` bytes), by its kind.  A record with a stack is
 * taken only when its frames fit in it (the native addresses are checked where they are
 * read). */
static void take_record(const void *rec, size_t len)
{
    const rrec_head *h = rec;
    const rrec_stack *st = rrec_stack_of(h);
    size_t room = 0; /* bytes from the stack to the record's end */
    if (st) {
        if (len < rrec_stack_kind_size(h->kind))
            return;
        room = len - (size_t)((const char *)st - (const char *)rec);
        if (sizeof *st + (size_t)st->nframes * sizeof(rframe) > room)
            return;
    }
    switch (h->kind) {
    case RREC_SAMPLE:
        take_sample(rec, room);
        break;
    case RREC_SNAP:
        snap_add(rec);
        break;
    case RREC_ALLOC:
        take_alloc(rec, room);
        break;
    case RREC_SNAP_END:
        if (len >= sizeof(rrec_snap_end))
            snap_end(rec);
        break;
    case RREC_FREE:
        if (len >= sizeof(rrec_free))
            take_free(rec);
        break;
    case RREC_AWINDOW:
        if (len >= sizeof(rrec_awindow))
            take_awindow(rec);
        break;
    case RREC_SPAN_START:
    case RREC_SPAN_STOP:
        take_span(rec, len);
        break;
    }
}

static void drain(void)
{
    /* Until the log exists the records wait in the rings (their CODE records must not be
     * lost); once writing has failed they are taken and discarded. */
    if (W.log.fd < 0 && !W.log.failed)
        return;
    drain_codes();
    /* Modules first: a sample may hold an address in one loaded since the last drain. */
    if (W.native && W.log.fd >= 0 && !W.log.failed && modules_changed(&W.mods)) {
        native_refresh(); /* the walks' module snapshot too, for loads no wrapper saw */
        sync_modules();
    }
    const void *rec;
    size_t len;
    while ((rec = ring_peek(sampler_sample_ring(), &len))) {
        if (W.log.fd >= 0 && !W.log.failed)
            take_record(rec, len);
        ring_release(sampler_sample_ring());
    }
}

/* Reads the RSS (every RSS_EVERY_NS) and writes an RSS record when it changed, or at
 * least every RSS_SAME_NS, or with `force` (a file's last one): the log keeps every
 * value read, without a record per read of a steady process. */
static void record_rss(int force)
{
    if (!W.cfg.memory || W.statm_fd < 0 || W.log.fd < 0)
        return;
    uint64_t rss;
    if (procself_rss(W.statm_fd, &rss) < 0)
        return;
    uint64_t t = clock_mono_ns() - sampler_t0_ns();
    W.last_rss_t_ns = t;
    if (!force && W.last_rss_emit_ns && rss == W.last_rss &&
        t - W.last_rss_emit_ns < RSS_SAME_NS)
        return;
    int64_t t_us = file_us(t);
    if (batch_rss(t_us, rss) < 0) {
        uint8_t out[32];
        rec_out o;
        rec_out_init(&o, out, sizeof out);
        logenc_put_rss(&o, t_us - W.last_t_us, rss);
        emit(PYPROF_REC_RSS, &o);
        batch_start(t_us); /* the next batch counts from this record */
    }
    W.last_t_us = t_us;
    W.last_rss_emit_ns = t;
    W.last_rss = rss;
}

/* Keeps the code ids the new code table already holds; forgets the rest (and what was
 * announced under them).  codetable_flip calls it once the old table is cleared. */
static void flip_rekey(void *ctx)
{
    (void)ctx;
    codemap_keep(&W.codes, codetable_holds);
    stacks_reset();
    threadmap_forget(&W.tmap);
}

static void flip_drain(void *ctx)
{
    (void)ctx;
    drain();
}

/* Moves the handler to the other code table and forgets what only the old one knew. */
static void flip_tables(void) { codetable_flip(flip_drain, flip_rekey, NULL); }

static int interpreter_running(void)
{
    const pyabi *a = &W.abi;
    if (a->runtime)
        return *(volatile int *)(a->runtime + (uintptr_t)a->rt_initialized) != 0;
    return a->is_initialized && a->is_initialized();
}

static void finish_log(int end, int status_known, int status);
static void forget_all(void);
static void put_footer(int end, int status_known, int status);
static void file_begin(void);

/* Ends this file of the series (drained, footer "rotated") and begins the next: a new
 * file whose records announce again every thread, code, stack and module they use.
 * The writer thread only. */
static void rotate(void)
{
    if (W.log.fd < 0)
        return;
    drain();
    record_rss(1);
    W.writer_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    put_footer(PYPROF_END_ROTATED, 0, 0);
    logfile_close(&W.log);
    publish_path("");
    diag_verbose("pyprof: rotated %s (%llu samples)", W.log.path,
                 (unsigned long long)W.samples);
    char done[PATH_MAX];
    snprintf(done, sizeof done, "%s", W.log.path);
    logfile_free(&W.log);
    if (logfile_init(&W.log, count_write_error) < 0) {
        W.log.failed = 1; /* out of memory: samples are taken and discarded */
        keep_finished(done);
        return;
    }
    W.seq++;
    file_begin();
    stacks_reset();
    threadmap_forget(&W.tmap);
    W.snap_n = 0;
    modules_free(&W.mods);
    open_log();
    keep_finished(done);
}

/* Answers a pending request, if any (the writer thread, between drains). */
static void serve_request(void)
{
    pthread_mutex_lock(&R.lock);
    int op = R.op;
    uint64_t id = R.id;
    pthread_mutex_unlock(&R.lock);
    if (!op)
        return;
    int rc = -1;
    /* A window that just started may not have created its log yet. */
    if (W.log.fd < 0 && !W.log.failed && sampler_native() >= 0 && interpreter_running())
        open_log();
    if (W.log.fd >= 0 && !W.log.failed) {
        if (op == WRITER_REQ_ROTATE) {
            rotate();
        } else {
            drain();
            flush_log();
            W.last_flush_ns = clock_mono_ns();
        }
        rc = W.log.fd >= 0 && !W.log.failed ? 0 : -1;
    }
    pthread_mutex_lock(&R.lock);
    if (R.id == id) {
        R.rc = rc;
        snprintf(R.path, sizeof R.path, "%s", W.log.path);
        R.done = id;
        R.op = 0;
        pthread_cond_broadcast(&R.done_cond);
    }
    pthread_mutex_unlock(&R.lock);
}

/* Is it time for the next file of the series? */
static int rotation_due(uint64_t now)
{
    if (W.log.fd < 0 || W.log.failed)
        return 0;
    if (W.cfg.rotate_ns && now - W.file_t0_mono_ns >= W.cfg.rotate_ns)
        return 1;
    return W.cfg.rotate_bytes && W.log.written >= W.cfg.rotate_bytes;
}

uint64_t writer_round(uint64_t now)
{
    const ring *sr = sampler_sample_ring();
    if (!W.rounds++) {
        /* The handler's first pass over the sample ring would take each page's
         * first-touch fault itself, inside the sample (on a virtual machine, an exit to
         * the hypervisor): they are taken here instead, once, without changing a byte.
         * A kernel without MADV_POPULATE_WRITE (before 5.14) refuses, and the handler
         * faults them in as before. */
        madvise(sr->buf, sr->size, MADV_POPULATE_WRITE);
    }
    /* The header says whether samples carry native stacks: wait until the sampler has
     * decided (it starts right after the writer). */
    if (W.log.fd < 0 && !W.log.failed && sampler_native() >= 0 &&
        (interpreter_running() || ring_used(sr)))
        open_log();
    /* Come back often only while the handler fills the ring faster than an idle period
     * could take (more than an eighth of it per round). */
    uint64_t next = ring_used(sr) > sr->size / 8 ? WAKE_BUSY_NS : WAKE_IDLE_NS;
    drain();
    if (now - sampler_t0_ns() - W.last_rss_t_ns >= RSS_EVERY_NS)
        record_rss(0);
    serve_request();
    if (rotation_due(now))
        rotate();
    if (codetable_flip_wanted())
        flip_tables();
    if (W.log.fd >= 0 && now - threadmap_names_ns(&W.tmap) >= NAMES_EVERY_NS)
        threadmap_refresh_names(&W.tmap);
    if (W.log.fd >= 0 && now - W.last_flush_ns >= W.cfg.flush_ns) {
        flush_log();
        W.last_flush_ns = now;
    }
    return next;
}

int writer_writing(void) { return W.log.fd >= 0; }

int writer_start(const pyprof_config *cfg, const pyabi *abi, const writer_meta *meta, char *err,
                 size_t errlen)
{
    /* A new toggle window after a finished one: nothing of the last log is kept. */
    forget_all();
    W.cfg = *cfg;
    calib_begin(cfg->period_ns); /* a new period (ctl period) is measured anew */
    W.abi = *abi;
    snprintf(W.run_id, sizeof W.run_id, "%s", meta->run_id ? meta->run_id : "");
    W.window = meta->window;
    W.pid = getpid();
    threadmap_init(&W.tmap, &W.abi, (uint32_t)W.pid, announce_thread, NULL);
    file_begin();
    W.last_flush_ns = clock_mono_ns();
    /* The directory must be writable now, so a bad PYPROF_OUTPUT is reported at start. */
    char dir[PATH_MAX];
    if (logfile_check_dir(cfg->output, dir, sizeof dir, err, errlen) < 0)
        return -1;
    if (logfile_init(&W.log, count_write_error) < 0) {
        snprintf(err, errlen, "pyprof: out of memory; not profiling");
        return -1;
    }
    if (cfg->memory)
        W.statm_fd = ownfd_move(open("/proc/self/statm", O_RDONLY | O_CLOEXEC));
    W.started = 1;
    return 0;
}

/* The counters now.  The ones that start with each window (the handler's, the timers',
 * the wall passes', the writer thread's) read as zero when `window_started` is 0: the
 * first file of a window begins before its sampler starts, so they count from zero; the
 * process's own (calibration, spans, allocation sampling) are read as they are.  The
 * writer thread's CPU is `writer_ns`, read by the caller (on that thread, or from it). */
static void counters_read(counters *c, int window_started, uint64_t writer_ns)
{
    memset(c, 0, sizeof *c);
    if (window_started) {
        sampler_read_stats(&c->st);
        c->writer_ns = writer_ns;
        c->timer_ns = threadtimer_cpu_ns();
        c->untimed_ns = threadtimer_untimed_ns();
        c->wall_passes = sampler_wall_passes();
        threadtimer_clock(&c->clock_timer_ns, &c->clock_kernel_ns);
    }
    calib_result cal;
    calib_get(&cal);
    c->calib_ns = cal.cpu_ns;
    c->spans_lost = spans_lost();
    allocsample_stats(&c->alloc);
}

/* now - base, counter by counter (allocation sampling's `live` stays now's: it is a
 * level, not a count). */
static void counters_since(counters *d, const counters *now, const counters *base)
{
    _Static_assert(sizeof *d % sizeof(uint64_t) == 0, "counters are all uint64_t");
    uint64_t *o = (uint64_t *)(void *)d;
    const uint64_t *a = (const uint64_t *)(const void *)now;
    const uint64_t *b = (const uint64_t *)(const void *)base;
    for (size_t i = 0; i < sizeof *d / sizeof(uint64_t); i++)
        o[i] = a[i] - b[i];
    d->alloc.live = now->alloc.live;
}

/* This file's counters so far; the writer thread's CPU from the caller. */
static void file_counters(counters *d, uint64_t writer_ns)
{
    counters now;
    counters_read(&now, 1, writer_ns);
    counters_since(d, &now, &W.base);
}

/* Where this file's counters start: now. */
static void file_begin(void)
{
    W.file_t0_mono_ns = clock_mono_ns();
    W.file_rel0_ns = W.seq ? W.file_t0_mono_ns - sampler_t0_ns() : 0;
    W.unix_start_ns = clock_ns(CLOCK_REALTIME);
    if (!W.seq)
        W.series_unix_ns = W.unix_start_ns;
    W.cpu_start_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    /* A later file of a series begins on the writer thread (rotate). */
    counters_read(&W.base, W.seq != 0, W.seq ? clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0);
    W.samples = 0;
    W.alloc_written = W.frees_written = 0;
    W.last_t_us = 0;
    W.last_rss_emit_ns = 0; /* a new file begins with an RSS record */
    W.file_gen++;
}

static void put_footer(int end, int status_known, int status)
{
    counters d;
    file_counters(&d, W.writer_cpu_ns);
    const sampler_stats st = d.st;
    uint64_t cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - W.cpu_start_ns;
    calib_result cal;
    calib_get(&cal);
    uint64_t calib_ns = d.calib_ns;
    logenc_footer_fields f = {
        .end_unix_ns = clock_ns(CLOCK_REALTIME),
        .duration_ns = clock_mono_ns() - sampler_t0_ns() - W.file_rel0_ns,
        .samples = W.samples,
        .signals = st.signals,
        .end = (uint64_t)end,
        .status_known = status_known,
        .status = status,
        .handler_ns = st.handler_ns,
        .writer_ns = d.writer_ns - calib_ns,
        .timer_ns = d.timer_ns,
        .untimed_ns = d.untimed_ns,
        .has_native = W.native,
        .native_ok = st.native_ok,
        .native_truncated = st.native_truncated,
        .native_skipped = st.native_skipped,
        .native_ns = st.native_ns,
        .signal_cost_ns = cal.signal_ns,
        .calib_signals = cal.signals,
        .calib_ns = calib_ns,
        .process_cpu_ns = cpu,
        .spans_lost = d.spans_lost,
        /* Wall mode's counts are the passes'; cpu mode's follow the kernel's CPU. */
        .clock_corrected = W.cfg.clock == PYPROF_CLOCK_CPU && !W.cfg.test_uncorrected,
    };
    f.clock_timer_ns = d.clock_timer_ns;
    f.clock_kernel_ns = d.clock_kernel_ns;
    uint64_t teardown = allocsample_teardown_ns();
    f.teardown_us1 = teardown ? (uint64_t)file_us(teardown) + 1 : 0;
    if (allochook_installed()) {
        f.has_alloc = 1;
        f.alloc_samples = W.alloc_written;
        f.alloc_frees = W.frees_written;
        f.alloc_lost = d.alloc.lost;
        f.frees_lost = d.alloc.frees_lost;
        f.alloc_live = d.alloc.live;
    }
    _Static_assert(sizeof f.drops == sizeof st.drops && sizeof f.cost == sizeof st.cost,
                   "the footer's counters are the sampler's");
    memcpy(f.drops, st.drops, sizeof f.drops);
    memcpy(f.cost, st.cost, sizeof f.cost);
    /* The rate achieved: samples per CPU second (cpu clock); sampling passes over all
     * threads per second (wall clock). */
    uint64_t wall = f.duration_ns;
    f.achieved_hz_milli = W.cfg.clock == PYPROF_CLOCK_WALL
                              ? (wall ? (uint64_t)((double)d.wall_passes * 1e12 / (double)wall)
                                      : 0)
                              : (cpu ? (uint64_t)((double)W.samples * 1e12 / (double)cpu) : 0);
    f.lib_cpu_ns = st.handler_ns + f.writer_ns + calib_ns + f.timer_ns;
    uint8_t buf[2048];
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    logenc_put_footer(&o, &f);
    emit(PYPROF_REC_FOOTER, &o);
}

/* Writes what is left, the footer, and closes the log: once (writer_finish). */
static void finish_log(int end, int status_known, int status)
{
    if (atomic_exchange(&W.finished, 1))
        return;
    /* No span is recorded from now on, and those being recorded are in the ring before
     * the last drain below. */
    spans_close();
    /* At exec, a process that has not written a log yet (the child of fork-and-exec, as
     * subprocess does) leaves none: its Python never ran after the fork. */
    if (W.log.fd < 0 && !W.log.failed && end != PYPROF_END_EXEC &&
        (interpreter_running() || ring_used(sampler_sample_ring()) || W.samples))
        open_log();
    drain();
    record_rss(1);
    if (W.log.fd >= 0) {
        put_footer(end, status_known, status);
        logfile_close(&W.log);
        diag_verbose("pyprof: wrote %s (%llu samples)", W.log.path,
                     (unsigned long long)W.samples);
        keep_finished(W.log.path);
    }
    calib_release();
    publish_path("");
    if (W.statm_fd >= 0) {
        close(W.statm_fd);
        W.statm_fd = -1;
    }
}

void writer_finish(int end, int status_known, int status, uint64_t rounds_cpu_ns)
{
    if (W.pid != getpid())
        return;
    W.writer_cpu_ns = rounds_cpu_ns;
    finish_log(end, status_known, status);
}

/* Frees every map and buffer and returns W to its initial state. */
static void forget_all(void)
{
    logfile_free(&W.log);
    if (W.statm_fd >= 0)
        close(W.statm_fd);
    codemap_free(&W.codes);
    free(W.snap);
    free(W.batch_buf);
    free(W.batch_payload);
    free(W.allocs_buf);
    free(W.allocs_payload);
    blockmap_free(&W.blocks);
    stackmap_free(&W.stacks);
    stackmap_free(&W.nstacks);
    modules_free(&W.mods);
    threadmap_free(&W.tmap);
    memset(&W, 0, sizeof W);
    W.log.fd = -1;
    W.statm_fd = -1;
}

void writer_forget_in_child(void)
{
    /* The cron thread does not exist here: start from a clean state, without touching
     * the parent's file beyond closing our copy of its descriptor.  The parent's
     * finished files are the parent's to remove. */
    forget_all();
    /* Dropped, not freed: the fork may have come in the middle of keep_finished. */
    kept.paths = NULL;
    kept.n = kept.cap = 0;
    pthread_mutex_init(&R.lock, NULL);
    pthread_cond_init(&R.done_cond, NULL);
    R.op = 0;
    R.current[0] = 0;
}

int writer_request(int op, char *path, size_t cap)
{
    if (!W.started || W.pid != getpid() || atomic_load(&W.finished))
        return -1;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 2;
    pthread_mutex_lock(&R.lock);
    while (R.op) /* another request is being answered */
        if (pthread_cond_timedwait(&R.done_cond, &R.lock, &dl) != 0) {
            pthread_mutex_unlock(&R.lock);
            return -1;
        }
    uint64_t id = ++R.id;
    R.op = op;
    doorbell_ring();
    int rc = 0;
    while (R.done != id && rc == 0)
        rc = pthread_cond_timedwait(&R.done_cond, &R.lock, &dl);
    if (R.done != id) {
        R.op = 0; /* not answered: withdrawn */
        pthread_mutex_unlock(&R.lock);
        return -1;
    }
    rc = R.rc;
    if (path && cap)
        snprintf(path, cap, "%s", R.path);
    pthread_mutex_unlock(&R.lock);
    return rc;
}

void writer_status(writer_status_info *st, uint64_t rounds_cpu_ns)
{
    memset(st, 0, sizeof *st);
    if (W.pid != getpid())
        return;
    pthread_mutex_lock(&R.lock);
    snprintf(st->path, sizeof st->path, "%s", R.current);
    pthread_mutex_unlock(&R.lock);
    st->open = st->path[0] != 0;
    st->seq = W.seq;
    st->window = W.window;
    st->samples = W.samples;
    st->snapshot_last = W.snapshot_last;
    uint64_t writer_ns = rounds_cpu_ns;
    counters d;
    file_counters(&d, writer_ns);
    for (int i = 0; i < PYPROF_DROP_COUNT; i++)
        st->dropped += d.st.drops[i];
    st->lib_cpu_ns = d.st.handler_ns + (writer_ns ? d.writer_ns : 0) + d.timer_ns;
}
