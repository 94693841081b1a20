/*
 * sighandler: THE SIGNAL PATH.  Everything in this file runs inside the sampling signal
 * handler, on whatever thread the signal interrupted, at any instruction of the program.
 * It is async-signal-safe: no malloc, no locks, no stdio, no Python C-API, errno saved and
 * restored.  Every function it reaches, and why that is safe:
 *
 *   clock_gettime(CLOCK_MONOTONIC)   on signal-safety(7); served by the vDSO
 *   syscall(SYS_gettid)              a raw system call, once per thread (then cached)
 *   pthread_getspecific              not on the POSIX list; in glibc a lock-free read of
 *                                    the thread descriptor for keys < 32 (CPython's TSS
 *                                    key is created first thing at start, so it is small)
 *   __builtin_longjmp (safe_fail)    no libc; leaves only our own guarded reads
 *   ring_reserve/commit/cancel       ours: one CAS on a preallocated buffer, never waits
 *   atomic_* on our counters         lock-free on x86_64
 *   interpose_run_program_handler   the program's own SIGTRAP handler, for traps that
 *                                    are not ours: called as the kernel would have
 *   sem_post                         on signal-safety(7) (wakes the control thread)
 *   writer_request_end/_end_done     ours: atomic flags and sem_post, nothing else
 *   threadtimer_on_signal            ours: atomics on a static table, raw system calls
 *                                    (perf_event_open, ioctl, mmap, close, munmap) and
 *                                    clock_gettime(CLOCK_THREAD_CPUTIME_ID), once per
 *                                    thread; memset of a local struct
 *   nanosleep, pthread_sigmask,      on signal-safety(7): the terminating-signal handler
 *   raise, sigaction (the real one)  waits for the log, then takes the default action
 *
 * Pointers into the interpreter are followed only through safe_read.h, inside one guarded
 * region per sample: a fault or an implausible pointer abandons the sample (counted as
 * UNREADABLE), never the process.  Every code object is checked to be one
 * (ob_type == &PyCode_Type) before anything of it is used.
 *
 * What a sample is.  The interrupted thread's own Python stack: the thread state is
 * found from the thread itself (TSS key on 3.7+, GIL holder or thread list on 2.7/3.6),
 * so in cpu mode each thread is charged for the CPU it used.  Frames are recorded as
 * (code id, instruction offset); code ids come from a table keyed by the code object's
 * address plus a digest of its name, file, line table and first line, so an address
 * reused by a new code object gets a new id.  The first time a code object is seen, its
 * names and line table are copied into a CODE record right then, while the frame that
 * runs it keeps it alive: names are never read from a pointer later.
 */
#include "sighandler.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "interpose.h"
#include "safe_read.h"
#include "threadtimer.h"
#include "writer.h"

sighandler_state sighandler_g;
struct sigaction sighandler_app_trap;
sem_t sighandler_control_sem;
struct sigaction sighandler_app_toggle;

/* How long a terminating signal waits for the log to be finished, at most. */
#define TERMINATE_WAIT_MS 3000

/* Longest name and file name copied, in characters; line tables in bytes. */
#define NAME_MAX_CHARS 200u
#define FILE_MAX_CHARS 1000u
#define LINETABLE_MAX 16384u
/* Frames followed at most.  A cycle in damaged memory is caught sooner (Floyd's
 * tortoise in walk); this bounds the rest, so one sample can never cost more than a few
 * tens of microseconds, even when a garbage chain is long. */
#define WALK_LIMIT 20000u
/* The most CPU time one sample really costs, with a wide margin: a walk stops at
 * WALK_LIMIT frames, and a 15,000-frame stack measured 0.1 ms per sample (median, p90
 * 0.12 ms) on the test machine. */
#define SAMPLE_CPU_MAX_NS 2000000ull
/* si_code of a perf event's SIGTRAP, and where its si_perf_data sits in siginfo_t (not in
 * glibc 2.36's headers; the kernel's struct puts it right after si_addr). */
#define PYPROF_TRAP_PERF 6
#define SI_PERF_DATA_OFFSET 24

static __thread uint32_t tls_tid __attribute__((tls_model("initial-exec")));
static __thread int tls_busy __attribute__((tls_model("initial-exec")));
/* This thread is inside sighandler_on_signal (counted in `inflight`). */
static __thread int tls_inside __attribute__((tls_model("initial-exec")));
/* Signals this thread still skips because its last sample cost too much (see below). */
static __thread uint32_t tls_skip __attribute__((tls_model("initial-exec")));
/* A CODE record reserved and not yet committed, cancelled if a read fails meanwhile. */
static __thread rrec_code *tls_pending_code __attribute__((tls_model("initial-exec")));

uint32_t sighandler_tid(void)
{
    if (!tls_tid)
        tls_tid = (uint32_t)syscall(SYS_gettid);
    return tls_tid;
}

void sighandler_reset_tid(void) { tls_tid = 0; }

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void drop(int reason) { atomic_fetch_add_explicit(&sighandler_g.drops[reason], 1, memory_order_relaxed); }

/* ---- reading the interpreter -------------------------------------------------------- */

/* Is the interpreter between initialization and finalization? */
static int interpreter_ready(const pyabi *a)
{
    if (a->runtime) {
        return safe_i32(a->runtime + (uintptr_t)a->rt_initialized) != 0 &&
               safe_ptr(a->runtime + (uintptr_t)a->rt_finalizing) == 0;
    }
    /* 2.7 and 3.6: Py_IsInitialized is a plain load (checked by disassembly), called
     * through the pointer dlsym gave us, so no lazy PLT binding runs here. */
    if (!a->is_initialized())
        return 0;
    return !a->finalizing_var || safe_ptr(a->finalizing_var) == 0;
}

/* This thread's PyThreadState, or 0. */
static uintptr_t this_tstate(const pyabi *a)
{
    if (a->runtime) {
        uintptr_t tss = a->runtime + (uintptr_t)a->rt_tss;
        if (!safe_i32(tss))
            return 0;
        return (uintptr_t)pthread_getspecific((pthread_key_t)safe_u32(tss + 4));
    }
    /* 2.7/3.6: the GIL holder if it is us, else our entry in the thread list (a new
     * thread's state carries its parent's id until it runs, so prefer one with frames). */
    uintptr_t self = (uintptr_t)pthread_self();
    uintptr_t ts = safe_ptr(a->gil_tstate);
    if (ts && safe_u64(ts + (uintptr_t)a->ts_thread_id) == self)
        return ts;
    uintptr_t interp = (uintptr_t)a->interp_head();
    if (!interp)
        return 0;
    uintptr_t found = 0;
    ts = safe_ptr(interp + (uintptr_t)a->is_tstate_head);
    for (unsigned n = 0; ts && n < 10000; n++) {
        if (safe_u64(ts + (uintptr_t)a->ts_thread_id) == self) {
            found = ts;
            if (safe_ptr(ts + (uintptr_t)a->ts_frame))
                break;
        }
        ts = safe_ptr(ts + (uintptr_t)a->ts_next);
    }
    return found;
}

static uintptr_t top_frame(const pyabi *a, uintptr_t ts)
{
    uintptr_t f = safe_ptr(ts + (uintptr_t)a->ts_frame);
    if (f && a->cframe_current >= 0)
        f = safe_ptr(f + (uintptr_t)a->cframe_current);
    return f;
}

/* ---- copying names and line tables -------------------------------------------------- */

static size_t put_utf8(char *out, uint32_t c)
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xc0 | (c >> 6));
        out[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        if (c >= 0xd800 && c < 0xe000)
            c = 0xfffd; /* a lone surrogate is not UTF-8 */
        out[0] = (char)(0xe0 | (c >> 12));
        out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    if (c > 0x10ffff)
        c = 0xfffd;
    if (c == 0xfffd)
        return put_utf8(out, c);
    out[0] = (char)(0xf0 | (c >> 18));
    out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    out[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* Copies a str object as UTF-8 into out (room for 4*max_chars bytes); returns bytes. */
static size_t copy_str(const pyabi *a, uintptr_t s, char *out, uint32_t max_chars)
{
    if (!s)
        return 0;
    uint64_t len = safe_u64(s + 16);
    if (len > max_chars)
        len = max_chars;
    if (a->str_kind == PYABI_STR_BYTES27) {
        safe_copy(out, s + 36, len);
        return (size_t)len;
    }
    uint32_t state = safe_u32(s + 32);
    unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    uintptr_t data;
    if (compact)
        data = s + (uintptr_t)(ascii ? a->uni_ascii_size : a->uni_compact_size);
    else
        data = safe_ptr(s + (uintptr_t)a->uni_data);
    if (ascii && kind == 1) {
        safe_copy(out, data, len);
        return (size_t)len;
    }
    if (kind != 1 && kind != 2 && kind != 4)
        safe_fail();
    size_t n = 0;
    for (uint64_t i = 0; i < len; i++) {
        uint32_t c = kind == 1 ? safe_u8(data + i)
                   : kind == 2 ? (uint32_t)safe_u8(data + 2 * i) |
                                     (uint32_t)safe_u8(data + 2 * i + 1) << 8
                               : safe_u32(data + 4 * i);
        n += put_utf8(out + n, c);
    }
    return n;
}

/* Emits the CODE record for a code object seen for the first time.  Returns 0, or -1
 * when the ring has no room (the caller then gives the frame up). */
static int emit_code(const pyabi *a, uintptr_t code, uint32_t id, int32_t first_line,
                     uintptr_t name, uintptr_t filename, uintptr_t linetable)
{
    uintptr_t qualname = a->co_qualname >= 0 ? safe_ptr(code + (uintptr_t)a->co_qualname) : 0;
    uint64_t lt_len = linetable ? safe_u64(linetable + (uintptr_t)a->bytes_size) : 0;
    uint16_t flags = 0;
    if (lt_len > LINETABLE_MAX) {
        lt_len = LINETABLE_MAX;
        flags |= PYPROF_CODE_F_TABLE_CUT;
    }
    size_t room = sizeof(rrec_code) + 4 * (2 * NAME_MAX_CHARS + FILE_MAX_CHARS) + lt_len;
    rrec_code *r = ring_reserve(&sighandler_g.codes, room);
    if (!r)
        return -1;
    /* A failed read below jumps out of the walk; the guard's failure path cancels this
     * reservation so the ring never holds a record that is never committed. */
    tls_pending_code = r;
    char *p = r->data;
    r->name_len = (uint16_t)copy_str(a, name, p, NAME_MAX_CHARS);
    p += r->name_len;
    r->qualname_len = (uint16_t)copy_str(a, qualname, p, NAME_MAX_CHARS);
    p += r->qualname_len;
    r->filename_len = (uint16_t)copy_str(a, filename, p, FILE_MAX_CHARS);
    p += r->filename_len;
    safe_copy(p, linetable + (uintptr_t)a->bytes_data, lt_len);
    r->kind = RREC_CODE;
    r->lt_kind = (uint8_t)a->linetable_kind;
    r->flags = flags;
    r->code_id = id;
    r->first_line = first_line;
    r->lt_len = (uint32_t)lt_len;
    ring_commit(&sighandler_g.codes, r);
    tls_pending_code = NULL;
    return 0;
}

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* The id of the code object at `code`, assigning one (and emitting its CODE record) the
 * first time.  Returns PYPROF_CODE_UNREADABLE when it cannot. */
static uint32_t code_id_of(const pyabi *a, code_slot *tab, int t, uintptr_t code)
{
    uintptr_t name = safe_ptr(code + (uintptr_t)a->co_name);
    uintptr_t filename = safe_ptr(code + (uintptr_t)a->co_filename);
    uintptr_t linetable = safe_ptr(code + (uintptr_t)a->co_linetable);
    int32_t first_line = safe_i32(code + (uintptr_t)a->co_firstlineno);
    uint64_t digest = mix64(name ^ mix64(filename ^ mix64(linetable ^ (uint64_t)(uint32_t)first_line)));
    if (!digest)
        digest = 1;
    uint32_t mask = CODE_TABLE_SLOTS - 1;
    uint32_t i = (uint32_t)mix64(code) & mask;
    for (unsigned probe = 0; probe < 64; probe++, i = (i + 1) & mask) {
        code_slot *s = &tab[i];
        uintptr_t p = atomic_load_explicit(&s->ptr, memory_order_acquire);
        if (p == 0) {
            uintptr_t expect = 0;
            if (atomic_compare_exchange_strong(&s->ptr, &expect, code)) {
                atomic_store_explicit(&s->digest, digest, memory_order_relaxed);
                uint32_t id = atomic_fetch_add(&sighandler_g.next_code_id, 1);
                if (emit_code(a, code, id, first_line, name, filename, linetable) < 0) {
                    /* No room: the slot stays claimed with no id, like one being filled;
                     * the next table generation gets another chance. */
                    drop(PYPROF_DROP_RING_FULL);
                    return PYPROF_CODE_UNREADABLE;
                }
                atomic_store_explicit(&s->id, id, memory_order_release);
                uint32_t fill = atomic_fetch_add(&sighandler_g.table_fill[t], 1) + 1;
                if (fill > CODE_TABLE_SLOTS / 2)
                    atomic_store(&sighandler_g.flip_wanted, 1);
                return id;
            }
            p = expect;
        }
        if (p == code) {
            uint32_t id = atomic_load_explicit(&s->id, memory_order_acquire);
            if (id && atomic_load_explicit(&s->digest, memory_order_relaxed) == digest)
                return id;
            if (!id)
                return PYPROF_CODE_UNREADABLE; /* another thread is filling it right now */
            /* Same address, different code object: an old entry.  Keep probing. */
        }
    }
    drop(PYPROF_DROP_CODE_TABLE_FULL);
    atomic_store(&sighandler_g.flip_wanted, 1);
    return PYPROF_CODE_UNREADABLE;
}

/* ---- the walk ----------------------------------------------------------------------- */

/* One step of the walk: the frame's code object and instruction offset, and the next
 * frame.  Returns 1 for a frame to record, 0 for a shim frame to skip (3.12+: owner >= 3
 * marks the frames C code pushes when it calls into Python). */
static inline int read_frame(const pyabi *a, uintptr_t frame, uintptr_t *code,
                             int32_t *offset, uintptr_t *back)
{
    if (a->frame_kind == PYABI_FRAME_INTERP) {
        *back = safe_ptr(frame + (uintptr_t)a->fr_back);
        if (a->minor >= 12 && safe_u8(frame + (uintptr_t)a->fr_owner) >= 3)
            return 0;
        *code = safe_ptr(frame + (uintptr_t)a->fr_code);
        uintptr_t instr = safe_ptr(frame + (uintptr_t)a->fr_lasti);
        intptr_t off = (intptr_t)instr - (intptr_t)(*code + (uintptr_t)a->co_code_adaptive);
        *offset = off < -2 || off > (1 << 28) ? -1 : (int32_t)off;
    } else {
        *back = safe_ptr(frame + (uintptr_t)a->fr_back);
        *code = safe_ptr(frame + (uintptr_t)a->fr_code);
        int32_t lasti = safe_i32(frame + (uintptr_t)a->fr_lasti);
        *offset = a->lasti_kind == PYABI_LASTI_UNITS && lasti >= 0 ? lasti * 2 : lasti;
    }
    return 1;
}

/* Records one frame into *f: validates the code object and gets its id.  Returns 0, or
 * -1 when `code` is not a code object. */
static inline int record_frame(const pyabi *a, code_slot *tab, int t, uintptr_t code,
                               int32_t offset, rframe *f)
{
    if (!safe_ptr_ok(code, 8) || safe_ptr(code + 8) != a->code_type)
        return -1;
    f->code_id = code_id_of(a, tab, t, code);
    f->offset = offset;
    return 0;
}

/* Walks the thread's frames into r->frames, innermost first.  Stacks deeper than
 * max_depth keep the innermost max_depth/2 frames and the outermost rest, in two passes:
 * the first records the inner frames and only counts the others (one pointer read
 * each, no code lookup), the second goes back to where the inner part ended, skips the
 * middle and records the outer end.  Returns 0, or -1 when the top of the stack is not
 * a valid frame or the chain is cyclic or absurdly long (the sample is rejected). */
static int walk(const pyabi *a, code_slot *tab, int t, uintptr_t frame, rrec_sample *r,
                unsigned max_depth)
{
    unsigned keep_inner = max_depth / 2, keep_outer = max_depth - keep_inner;
    uint64_t total = 0;      /* Python frames seen (shims not counted) */
    uintptr_t resume = 0;    /* the frame at index keep_inner */
    uintptr_t tortoise = frame; /* advances every other step; meeting it means a cycle */
    unsigned steps = 0;
    r->unreadable_tail = 0;
    while (frame) {
        /* Step k looks at frame k-1; the tortoise is at frame (k-1)/2. */
        if (++steps > WALK_LIMIT)
            return -1;
        if (steps > 1 && (steps & 1)) {
            tortoise = safe_ptr(tortoise + (uintptr_t)a->fr_back);
            if (tortoise == frame)
                return -1;
        }
        uintptr_t code, back;
        int32_t offset;
        if (!read_frame(a, frame, &code, &offset, &back)) {
            frame = back;
            continue;
        }
        if (total == keep_inner)
            resume = frame;
        if (total < max_depth && record_frame(a, tab, t, code, offset, &r->frames[total]) < 0) {
            if (total == 0)
                return -1;
            r->unreadable_tail = 1; /* the rest of the chain cannot be trusted */
            break;
        }
        total++;
        frame = back;
    }
    if (total <= max_depth) {
        r->nframes = (uint16_t)total;
        r->keep_inner = (uint16_t)total;
        r->cut = 0;
        return 0;
    }
    /* Second pass: skip the middle, record the outer end. */
    uint64_t skip = total - keep_inner - keep_outer, seen = 0;
    unsigned n = keep_inner;
    frame = resume;
    for (unsigned s2 = 0; frame && s2 < steps && n < max_depth; s2++) {
        uintptr_t code, back;
        int32_t offset;
        if (!read_frame(a, frame, &code, &offset, &back)) {
            frame = back;
            continue;
        }
        if (seen++ >= skip) {
            if (record_frame(a, tab, t, code, offset, &r->frames[n]) < 0) {
                r->unreadable_tail = 1;
                break;
            }
            n++;
        }
        frame = back;
    }
    r->nframes = (uint16_t)n;
    r->keep_inner = (uint16_t)keep_inner;
    r->cut = (uint32_t)skip;
    return 0;
}

/* Takes one sample of the calling thread. */
/* Takes a code-table generation for a sample: the writer does not clear a table while
 * a sample is counted in it.  Returns the table's index, for table_leave. */
static int table_enter(void)
{
    sighandler_state *g = &sighandler_g;
    int t = atomic_load(&g->active_table);
    atomic_fetch_add(&g->table_users[t], 1);
    /* The writer may have flipped between our load and our increment; then use the table
     * it flipped to, which it will not clear while we are counted in. */
    if (atomic_load(&g->active_table) != t) {
        atomic_fetch_sub(&g->table_users[t], 1);
        t ^= 1;
        atomic_fetch_add(&g->table_users[t], 1);
    }
    return t;
}

static void table_leave(int t) { atomic_fetch_sub(&sighandler_g.table_users[t], 1); }

/* Counts one sample of `depth` frames that cost `ns` in the cost histogram. */
static void account_cost(uint32_t depth, uint64_t ns)
{
    static const uint32_t depth_bounds[PYPROF_COST_NDEPTH] = PYPROF_COST_DEPTH_BOUNDS;
    static const uint32_t time_bounds[PYPROF_COST_NTIME] = PYPROF_COST_TIME_BOUNDS_NS;
    int d = 0, t = 0;
    while (d < PYPROF_COST_NDEPTH - 1 && depth > depth_bounds[d])
        d++;
    while (t < PYPROF_COST_NTIME - 1 && ns > time_bounds[t])
        t++;
    atomic_fetch_add_explicit(&sighandler_g.cost[d][t], 1, memory_order_relaxed);
}

/* One sample of one thread's Python stack: of the calling thread when `given_ts` is 0
 * (the signal handler), else of the thread state `given_ts`, OS thread `tid` (the wall
 * clock sampler reading another thread).  Table generation `t` is held by the caller.
 * Returns the stack's depth (frames, cut ones included), 0 when no sample was taken. */
static uint32_t sample_thread(int t, uintptr_t given_ts, uint32_t tid)
{
    sighandler_state *g = &sighandler_g;
    const pyabi *a = &g->abi;
    code_slot *tab = g->tables[t];

    /* Assigned between the setjmp and a possible longjmp, so volatile (C11 7.13.2.1). */
    rrec_sample *volatile r = NULL;
    safe_jmpbuf jb;
    if (!SAFE_GUARD_BEGIN(jb)) {
        /* A read failed: give up the sample and any half-made CODE record. */
        if (tls_pending_code) {
            ring_cancel(&g->codes, tls_pending_code);
            tls_pending_code = NULL;
        }
        if (r)
            ring_cancel(&g->samples, (void *)r);
        drop(PYPROF_DROP_UNREADABLE);
        return 0;
    }
    if (!given_ts && !interpreter_ready(a)) {
        SAFE_GUARD_END();
        drop(PYPROF_DROP_NOT_READY);
        return 0;
    }
    uintptr_t ts = given_ts ? given_ts : this_tstate(a);
    uintptr_t frame = ts ? top_frame(a, ts) : 0;
    if (!frame) {
        SAFE_GUARD_END();
        if (!given_ts) /* another thread outside Python is simply not sampled */
            drop(PYPROF_DROP_NO_PYTHON);
        return 0;
    }
    r = ring_reserve(&g->samples, sizeof(rrec_sample) + g->max_depth * sizeof(rframe));
    if (!r) {
        SAFE_GUARD_END();
        drop(PYPROF_DROP_RING_FULL);
        return 0;
    }
    r->unreadable_tail = 0;
    if (walk(a, tab, t, frame, (rrec_sample *)r, g->max_depth) < 0) {
        SAFE_GUARD_END();
        ring_cancel(&g->samples, (void *)r);
        drop(PYPROF_DROP_UNREADABLE);
        return 0;
    }
    SAFE_GUARD_END();
    if (r->nframes == 0 && !r->unreadable_tail) {
        /* Only shim frames: C code entering or leaving Python, no Python frame yet. */
        ring_cancel(&g->samples, (void *)r);
        if (!given_ts)
            drop(PYPROF_DROP_NO_PYTHON);
        return 0;
    }
    r->kind = RREC_SAMPLE;
    r->tid = given_ts ? tid : sighandler_tid();
    r->t_ns = now_ns() - g->t0_ns;
    uint32_t depth = (uint32_t)r->nframes + r->cut;
    ring_commit(&g->samples, (void *)r);
    return depth;
}

/* The signal handler's sample of its own thread; returns its depth (0: none taken). */
static uint32_t take_sample(void)
{
    int t = table_enter();
    uint32_t depth = sample_thread(t, 0, 0);
    table_leave(t);
    return depth;
}

/* The OS thread id of thread state `ts`, inside a guarded region; 0 when unknown. */
static uint32_t tstate_tid(const pyabi *a, uintptr_t ts)
{
    if (a->ts_native_tid >= 0)
        return safe_u32(ts + (uintptr_t)a->ts_native_tid);
    int off = atomic_load_explicit(&sighandler_g.pthread_tid_offset, memory_order_relaxed);
    if (off <= 0)
        return 0;
    /* Before 3.11 only the pthread_t is kept: glibc's thread descriptor holds the tid. */
    uintptr_t pt = safe_ptr(ts + (uintptr_t)a->ts_thread_id);
    return safe_u32(pt + (uintptr_t)off);
}

void sighandler_sample_threads(void)
{
    sighandler_state *g = &sighandler_g;
    const pyabi *a = &g->abi;
    enum { MAX_THREADS = 4096 };
    uintptr_t ts_of[MAX_THREADS];
    uint32_t tid_of[MAX_THREADS];
    volatile unsigned n = 0;
    safe_jmpbuf jb;
    if (!SAFE_GUARD_BEGIN(jb)) {
        /* The list changed under us: sample the threads found so far. */
        drop(PYPROF_DROP_UNREADABLE);
        goto sample;
    }
    if (!interpreter_ready(a)) {
        SAFE_GUARD_END();
        drop(PYPROF_DROP_NOT_READY);
        return;
    }
    /* The main interpreter (3.7+; the newest on 2.7/3.6, which have no pointer to it). */
    uintptr_t interp = a->runtime ? safe_ptr(a->runtime + (uintptr_t)a->rt_interp_head + 8)
                                  : (uintptr_t)a->interp_head();
    uintptr_t ts = interp ? safe_ptr(interp + (uintptr_t)a->is_tstate_head) : 0;
    for (unsigned guard = 0; ts && n < MAX_THREADS && guard < 100000; guard++) {
        uint32_t tid = tstate_tid(a, ts);
        if (tid) {
            ts_of[n] = ts;
            tid_of[n] = tid;
            n++;
        }
        ts = safe_ptr(ts + (uintptr_t)a->ts_next);
    }
    SAFE_GUARD_END();
sample:;
    int t = table_enter();
    for (unsigned i = 0; i < n; i++) {
        atomic_fetch_add_explicit(&g->signals, 1, memory_order_relaxed);
        uint64_t t0 = now_ns();
        uint32_t depth = sample_thread(t, ts_of[i], tid_of[i]);
        if (depth)
            account_cost(depth, now_ns() - t0);
    }
    table_leave(t);
}

void sighandler_on_signal(int sig, siginfo_t *info, void *uc)
{
    int saved_errno = errno;
    sighandler_state *g = &sighandler_g;
    uint64_t perf_data = sig == SIGTRAP && info->si_code == PYPROF_TRAP_PERF
                             ? *(const uint64_t *)((const char *)info + SI_PERF_DATA_OFFSET)
                             : 0;
    if (sig == SIGTRAP && !threadtimer_is_ours(perf_data)) {
        /* A trap that is not ours goes to the program's own handler.  With SIG_DFL, a
         * breakpoint nobody handles would end the process with a core dump; we keep it
         * alive instead, which only differs for a program that traps itself without a
         * handler. */
        interpose_run_program_handler(&sighandler_app_trap, sig, info, uc);
        errno = saved_errno;
        return;
    }
    atomic_fetch_add(&g->inflight, 1);
    tls_inside = 1;
    /* Before anything can skip the sample: a thread whose first period just ended must
     * get its steady timer whatever happens to this signal. */
    if (sig == SIGTRAP)
        threadtimer_on_signal(perf_data, sighandler_tid());
    if (atomic_load(&g->enabled)) {
        atomic_fetch_add_explicit(&g->signals, 1, memory_order_relaxed);
        /* The POSIX timer's expirations while its signal was still pending (a busy
         * machine delays delivery) are merged into this one; the kernel counts them. */
        if (sig == SIGPROF && info->si_code == SI_TIMER && info->si_overrun > 0)
            atomic_fetch_add_explicit(&g->drops[PYPROF_DROP_MERGED],
                                      (uint64_t)info->si_overrun, memory_order_relaxed);
        if (tls_busy) {
            drop(PYPROF_DROP_REENTERED);
        } else if (tls_skip) {
            tls_skip--;
            drop(PYPROF_DROP_THROTTLED);
        } else {
            tls_busy = 1;
            uint64_t t0 = now_ns();
            uint32_t depth = take_sample();
            uint64_t cost = now_ns() - t0;
            if (depth)
                account_cost(depth, cost);
            atomic_fetch_add_explicit(&g->handler_ns, cost, memory_order_relaxed);
            /* The program comes first: the timer counts the handler's own CPU time, so a
             * sample costing more than the period would leave the thread nothing but
             * handlers.  Past a quarter of the period, skip signals until the average
             * cost is back under it.  The cost is wall time; a handler preempted on a
             * busy machine looks far costlier than the CPU it took, so no more signals
             * are skipped than the costliest real sample would need
             * (SAMPLE_CPU_MAX_NS): the quarter-period bound holds for every real cost,
             * and a preemption cannot blind a thread for long. */
            uint64_t budget = g->period_ns / 4;
            if (cost > budget) {
                uint64_t skip = cost / budget, most = SAMPLE_CPU_MAX_NS / budget + 1;
                tls_skip = (uint32_t)(skip < most ? skip : most);
            }
            tls_busy = 0;
        }
    }
    tls_inside = 0;
    atomic_fetch_sub(&g->inflight, 1);
    errno = saved_errno;
}

int sighandler_inside(void) { return tls_inside; }

/* ---- the control signals ------------------------------------------------------------ */

void sighandler_on_toggle(int sig, siginfo_t *info, void *uc)
{
    int saved_errno = errno;
    sem_post(&sighandler_control_sem);
    /* A program that also handles the toggle signal still gets it. */
    interpose_run_program_handler(&sighandler_app_toggle, sig, info, uc);
    errno = saved_errno;
}

void sighandler_on_terminate(int sig, siginfo_t *info, void *uc)
{
    (void)info;
    (void)uc;
    int saved_errno = errno;
    if (writer_request_end(PYPROF_END_SIGNAL, sig)) {
        for (int i = 0; i < TERMINATE_WAIT_MS && !writer_end_done(); i++) {
            struct timespec ms = { 0, 1000000 };
            nanosleep(&ms, NULL);
        }
    }
    /* Then what the default action would have done: end the process by this signal. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    interpose_real_sigaction(sig, &dfl, NULL);
    sigset_t unblock;
    sigemptyset(&unblock);
    sigaddset(&unblock, sig);
    pthread_sigmask(SIG_UNBLOCK, &unblock, NULL);
    raise(sig);
    errno = saved_errno;
}
