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
 *   sigdisp_run_program              the program's own SIGTRAP handler, for traps that
 *                                    are not ours: called as the kernel would have
 *   threadtimer_on_signal            ours: atomics on a static table, raw system calls
 *                                    (perf_event_open, ioctl, mmap, close, munmap) and
 *                                    clock_gettime(CLOCK_THREAD_CPUTIME_ID), once per
 *                                    thread; memset of a local struct
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

#include "common/clock.h"
#include "pthread_tid.h"
#include "safe_read.h"
#include "sigdisp.h"
#include "threadtimer.h"

sighandler_state sighandler_g;

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

/* Is `o` a live object of type `type`?  (A freed object keeps its memory for a while,
 * with reference count 0, on CPython's free lists.) */
static inline int is_live(uintptr_t o, uintptr_t type)
{
    return safe_ptr_ok(o, 8) && safe_ptr(o + 8) == type && safe_u64(o) != 0;
}

/* Copies valid UTF-8 from the bytes at `src` into out (room for 4*len bytes); a byte
 * that does not start a well-formed sequence becomes U+FFFD.  Returns bytes written.
 * 2.7 names and file names are byte strings, often but not always UTF-8. */
static size_t copy_utf8(char *out, uintptr_t src, uint64_t len)
{
    /* The raw bytes go to the end of out, then are decoded forwards from there: each
     * input byte writes at most 3 output bytes, so the output never overtakes the input. */
    uint8_t *raw = (uint8_t *)out + 3 * len;
    safe_copy(raw, src, len);
    size_t n = 0;
    for (uint64_t i = 0; i < len;) {
        uint8_t b = raw[i];
        unsigned need = b < 0x80 ? 0 : b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2
                      : b >= 0xf0 && b <= 0xf4 ? 3 : 4;
        int ok = need < 4 && i + need < len;
        if (ok && need) {
            /* The second byte's range excludes overlong forms, surrogates and > U+10FFFF. */
            uint8_t lo = b == 0xe0 ? 0xa0 : b == 0xf0 ? 0x90 : 0x80;
            uint8_t hi = b == 0xed ? 0x9f : b == 0xf4 ? 0x8f : 0xbf;
            ok = raw[i + 1] >= lo && raw[i + 1] <= hi;
            for (unsigned k = 2; ok && k <= need; k++)
                ok = (raw[i + k] & 0xc0) == 0x80;
        }
        if (!ok) {
            n += put_utf8(out + n, 0xfffd);
            i++;
            continue;
        }
        for (unsigned k = 0; k <= need; k++)
            out[n++] = (char)raw[i + k];
        i += need + 1;
    }
    return n;
}

/* Copies a str object as UTF-8 into out (room for 4*max_chars bytes); returns bytes.  A
 * pointer that is not a live str abandons the sample (safe_fail): a name is never read
 * from memory that no longer holds one. */
static size_t copy_str(const pyabi *a, uintptr_t s, char *out, uint32_t max_chars)
{
    if (!s)
        return 0;
    if (!is_live(s, a->str_type))
        safe_fail();
    uint64_t len = safe_u64(s + 16);
    if (len > max_chars)
        len = max_chars;
    if (a->str_kind == PYABI_STR_BYTES27)
        return copy_utf8(out, s + 36, len);
    uint32_t state = safe_u32(s + 32);
    unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    uintptr_t data;
    if (compact)
        data = s + (uintptr_t)(ascii ? a->uni_ascii_size : a->uni_compact_size);
    else
        data = safe_ptr(s + (uintptr_t)a->uni_data);
    if (kind != 1 && kind != 2 && kind != 4)
        safe_fail();
    size_t n = 0;
    for (uint64_t i = 0; i < len; i++) {
        uint32_t c = kind == 1 ? safe_u8(data + i)
                   : kind == 2 ? (uint32_t)safe_u8(data + 2 * i) |
                                     (uint32_t)safe_u8(data + 2 * i + 1) << 8
                               : safe_u32(data + 4 * i);
        if (ascii && c >= 0x80)
            safe_fail(); /* not the ASCII string its header says it is */
        n += put_utf8(out + n, c);
    }
    return n;
}

/* A slot whose code object turned out not to be one we may name (it died while its
 * names were copied, or a read failed meanwhile).  Probes go past it; nothing reuses it
 * before the table's next generation. */
#define SLOT_DEAD ((uintptr_t)1)

/* The slot being filled by emit_code on this thread, retired if a read fails. */
static __thread code_slot *tls_pending_slot __attribute__((tls_model("initial-exec")));

static void slot_retire(code_slot *s)
{
    atomic_store_explicit(&s->digest, 0, memory_order_relaxed);
    atomic_store_explicit(&s->ptr, SLOT_DEAD, memory_order_release);
}

/* Fills the CODE record for a code object seen for the first time, and leaves it
 * reserved for the caller to commit or cancel.  Returns it, or NULL when the ring has no
 * room (the caller then gives the frame up). */
static rrec_code *emit_code(const pyabi *a, uintptr_t code, uint32_t id, int32_t first_line,
                            uintptr_t name, uintptr_t filename, uintptr_t linetable)
{
    uintptr_t qualname = a->co_qualname >= 0 ? safe_ptr(code + (uintptr_t)a->co_qualname) : 0;
    if (linetable && !is_live(linetable, a->bytes_type))
        safe_fail();
    uint64_t lt_len = linetable ? safe_u64(linetable + (uintptr_t)a->bytes_size) : 0;
    uint16_t flags = 0;
    if (lt_len > LINETABLE_MAX) {
        lt_len = LINETABLE_MAX;
        flags |= PYPROF_CODE_F_TABLE_CUT;
    }
    size_t room = sizeof(rrec_code) + 4 * (2 * NAME_MAX_CHARS + FILE_MAX_CHARS) + lt_len;
    rrec_code *r = ring_reserve(&sighandler_g.codes, room);
    if (!r)
        return NULL;
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
    return r;
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

/* ---- reading frames ----------------------------------------------------------------- */

/* CPython's frame owners (3.11+): a generator's frame, and (3.12+) the shim frames C code
 * pushes when it calls into Python. */
enum { OWNER_GENERATOR = 1, OWNER_CSTACK = 3 };

/* What one frame holds, read as it is. */
typedef struct frame_raw {
    uintptr_t back, code;
    uint64_t instr; /* f_lasti (<= 3.10) or the instruction pointer (3.11+) */
    uint8_t owner;  /* 3.11+ */
} frame_raw;

/* Reads one frame.  Returns 0, or -1 when a heap frame (<= 3.10) is not a live frame
 * object: a freed frame keeps its memory on CPython's free lists, with reference count 0
 * and, on the free list, a `f_back` that chains the free list, not a stack. */
static inline int read_raw(const pyabi *a, uintptr_t frame, frame_raw *f)
{
    if (a->frame_kind == PYABI_FRAME_OBJECT) {
        if (!is_live(frame, a->frame_type))
            return -1;
        f->instr = (uint64_t)(int64_t)safe_i32(frame + (uintptr_t)a->fr_lasti);
        f->owner = 0;
    } else {
        f->instr = safe_ptr(frame + (uintptr_t)a->fr_lasti);
        f->owner = safe_u8(frame + (uintptr_t)a->fr_owner);
    }
    f->back = safe_ptr(frame + (uintptr_t)a->fr_back);
    f->code = safe_ptr(frame + (uintptr_t)a->fr_code);
    return 0;
}

/* Does `frame`, read as `was`, still hold the same code object and caller? */
static inline int frame_unchanged(const pyabi *a, uintptr_t frame, const frame_raw *was)
{
    frame_raw now;
    return read_raw(a, frame, &now) == 0 && now.back == was->back && now.code == was->code &&
           now.owner == was->owner;
}

/* Is `code` a live code object? */
static inline int is_code(const pyabi *a, uintptr_t code) { return is_live(code, a->code_type); }

/* What a frame shows: 1 and its code object and instruction offset for a frame Python
 * itself shows, 0 for one it hides (3.12+ shims; 3.11+ frames not yet complete, such as
 * a frame whose prologue has not run or 3.13's __init__ clean-up frame, as CPython's
 * _PyFrame_IsIncomplete says), -1 when its code is not a code object. */
static inline int frame_view(const pyabi *a, const frame_raw *f, uintptr_t *code,
                             int32_t *offset)
{
    *code = f->code;
    if (a->frame_kind == PYABI_FRAME_OBJECT) {
        int32_t lasti = (int32_t)f->instr;
        *offset = a->lasti_kind == PYABI_LASTI_UNITS && lasti >= 0 ? lasti * 2 : lasti;
        return is_code(a, f->code) ? 1 : -1;
    }
    if (a->minor >= 12 && f->owner >= OWNER_CSTACK)
        return 0;
    if (!is_code(a, f->code))
        return -1;
    intptr_t off = (intptr_t)f->instr - (intptr_t)(f->code + (uintptr_t)a->co_code_adaptive);
    *offset = off < -2 || off > (1 << 28) ? -1 : (int32_t)off;
    if (f->owner != OWNER_GENERATOR &&
        off < 2 * (intptr_t)safe_i32(f->code + (uintptr_t)a->co_firsttraceable))
        return 0;
    return 1;
}

/* ---- code identities ---------------------------------------------------------------- */

/* The id of the code object at `code`, assigning one (and emitting its CODE record) the
 * first time.  `holder`, when not 0, is a frame of a thread that keeps running (the wall
 * clock), read as `held`: the frame keeps the code object alive, so a new record is
 * committed only if the frame still holds it after the copy.  Returns
 * PYPROF_CODE_UNREADABLE when it cannot give an id; *changed is set when that is because
 * the holder moved on. */
static uint32_t code_id_of(const pyabi *a, code_slot *tab, int t, uintptr_t code,
                           uintptr_t holder, const frame_raw *held, int *changed)
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
                uint32_t fill = atomic_fetch_add(&sighandler_g.table_fill[t], 1) + 1;
                if (fill > CODE_TABLE_SLOTS / 2)
                    atomic_store(&sighandler_g.flip_wanted, 1);
                uint32_t id = atomic_fetch_add(&sighandler_g.next_code_id, 1);
                tls_pending_slot = s;
                rrec_code *rec = emit_code(a, code, id, first_line, name, filename, linetable);
                if (rec && holder && !frame_unchanged(a, holder, held)) {
                    ring_cancel(&sighandler_g.codes, rec);
                    rec = NULL;
                    *changed = 1;
                } else if (!rec) {
                    drop(PYPROF_DROP_RING_FULL);
                }
                tls_pending_code = NULL;
                tls_pending_slot = NULL;
                if (!rec) {
                    slot_retire(s);
                    return PYPROF_CODE_UNREADABLE;
                }
                ring_commit(&sighandler_g.codes, rec);
                atomic_store_explicit(&s->id, id, memory_order_release);
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

/* Why a walk gave up. */
enum { WALK_OK = 0, WALK_BAD = -1, WALK_CHANGED = -2 };

/* The frames one strict walk has passed, to catch a frame met twice.  Entries carry the
 * walk's stamp, so nothing is cleared between walks.  Only the wall sampler thread walks
 * strictly, so one set serves. */
#define SEEN_SLOTS 32768u /* a power of two, above WALK_LIMIT */
static struct {
    uintptr_t frame;
    uint64_t stamp;
} seen_set[SEEN_SLOTS];
static uint64_t seen_stamp;

/* Adds `frame` to the current walk's set; 0 when it was there already. */
static int seen_add(uintptr_t frame)
{
    uint32_t i = (uint32_t)mix64(frame) & (SEEN_SLOTS - 1);
    for (;; i = (i + 1) & (SEEN_SLOTS - 1)) {
        if (seen_set[i].stamp != seen_stamp) {
            seen_set[i].frame = frame;
            seen_set[i].stamp = seen_stamp;
            return 1;
        }
        if (seen_set[i].frame == frame)
            return 0;
    }
}

/* Where a walk puts what it finds: code ids looked up at once (the signal handler, whose
 * thread is stopped), or, for a thread that keeps running (the wall clock), each
 * recorded frame's address and contents, whose code objects are looked up after the
 * walk. */
typedef struct walk_out {
    const pyabi *a;
    code_slot *tab;
    int t;
    uintptr_t *frames;  /* NULL: look code ids up during the walk */
    frame_raw *raws;
    uintptr_t ts;       /* with frames: the thread state whose stack this is */
    int strict;         /* read hand over hand (see walk) */
} walk_out;

static inline void record_frame(walk_out *o, uintptr_t frame, const frame_raw *f,
                                uintptr_t code, int32_t offset, rrec_sample *r, unsigned i)
{
    r->frames[i].offset = offset;
    if (o->frames) {
        o->frames[i] = frame;
        o->raws[i] = *f;
        return;
    }
    r->frames[i].code_id = code_id_of(o->a, o->tab, o->t, code, 0, NULL, NULL);
}

/* Walks the thread's frames into r->frames, innermost first.  Stacks deeper than
 * max_depth keep the innermost max_depth/2 frames and the outermost rest, in two passes:
 * the first records the inner frames and only counts the others (no code lookup), the
 * second goes back to where the inner part ended, skips the middle and records the outer
 * end.
 *
 * A strict walk (o->strict: another thread's heap frames, 2.7-3.10, read by the wall
 * clock) goes hand over hand: after each frame is read, its caller's link to it is read
 * again (and a lone frame must still be the thread's top); the walk gives up
 * (WALK_CHANGED) if a frame has died or changed meanwhile, was met twice, or any frame
 * fails validation.  A frame holds its caller alive and never changes its caller while
 * it lives, so a chain read this way is the thread's stack as it was when the top frame
 * was read, however the thread went on meanwhile.  Without the re-reads, a frame freed
 * during the walk leads it into CPython's free list of frames, a chain of dead frames.
 *
 * Returns WALK_OK, WALK_BAD when the top of the stack is not a valid frame or the chain
 * is cyclic or absurdly long (the sample is rejected), WALK_CHANGED as above. */
static int walk(walk_out *o, uintptr_t frame, rrec_sample *r, unsigned max_depth)
{
    const pyabi *a = o->a;
    int strict = o->strict;
    unsigned keep_inner = max_depth / 2, keep_outer = max_depth - keep_inner;
    uint64_t total = 0;      /* Python frames seen (hidden ones not counted) */
    uintptr_t resume = 0;    /* the frame at index keep_inner */
    uintptr_t tortoise = frame; /* advances every other step; meeting it means a cycle */
    unsigned steps = 0;
    uintptr_t prev = 0, top = 0;
    frame_raw prev_raw = { 0 }, top_raw = { 0 };
    r->unreadable_tail = 0;
    if (strict)
        seen_stamp++;
    while (frame) {
        /* Step k looks at frame k-1; the tortoise is at frame (k-1)/2. */
        if (++steps > WALK_LIMIT)
            return WALK_BAD;
        if (steps > 1 && (steps & 1)) {
            tortoise = safe_ptr(tortoise + (uintptr_t)a->fr_back);
            if (tortoise == frame)
                return WALK_BAD;
        }
        frame_raw f;
        if (read_raw(a, frame, &f) < 0)
            return WALK_CHANGED;
        /* A real stack holds no frame twice; a walk that crossed from an old stack into
         * a new one reusing its memory can (see below). */
        if (strict && !seen_add(frame))
            return WALK_CHANGED;
        /* A frame popped just after the thread state was read can be reused before it
         * is filled in, showing a caller left from its last use: a stale caller shows
         * when the frame is read again at the next step, and a frame with no caller at
         * all must still be the top once read. */
        if (strict && (prev ? !frame_unchanged(a, prev, &prev_raw)
                            : !f.back && (top_frame(a, o->ts) != frame ||
                                          !frame_unchanged(a, frame, &f))))
            return WALK_CHANGED;
        uintptr_t code;
        int32_t offset;
        int shown = frame_view(a, &f, &code, &offset);
        if (shown < 0) {
            if (total == 0 || strict)
                return WALK_BAD;
            r->unreadable_tail = 1; /* the rest of the chain cannot be trusted */
            break;
        }
        if (shown) {
            if (total == keep_inner)
                resume = frame;
            if (total < max_depth)
                record_frame(o, frame, &f, code, offset, r, (unsigned)total);
            total++;
        }
        if (!prev) {
            top = frame;
            top_raw = f;
        }
        prev = frame;
        prev_raw = f;
        frame = f.back;
    }
    /* A thread that went on to pop and push the same functions again meanwhile reuses
     * the same memory for them (CPython's free lists are last in, first out), in a
     * recursion one level off: links read again still match, yet the walk may have
     * crossed from the old stack into the new one.  Where that made a stack deeper than
     * any the thread had, a frame was met twice (above); where the top frame's memory
     * was reused for another caller or code, it shows here (a frame that merely died
     * keeps them until reused). */
    if (strict && top && (safe_ptr(top + (uintptr_t)a->fr_back) != top_raw.back ||
                          safe_ptr(top + (uintptr_t)a->fr_code) != top_raw.code))
        return WALK_CHANGED;
    if (total <= max_depth) {
        r->nframes = (uint16_t)total;
        r->keep_inner = (uint16_t)total;
        r->cut = 0;
        return WALK_OK;
    }
    /* Second pass: skip the middle, record the outer end. */
    uint64_t skip = total - keep_inner - keep_outer, seen = 0;
    unsigned n = keep_inner;
    frame = resume;
    prev = 0;
    for (unsigned s2 = 0; frame && s2 < steps && n < max_depth; s2++) {
        frame_raw f;
        if (read_raw(a, frame, &f) < 0)
            return WALK_CHANGED;
        if (strict && prev && !frame_unchanged(a, prev, &prev_raw))
            return WALK_CHANGED;
        uintptr_t code;
        int32_t offset;
        int shown = frame_view(a, &f, &code, &offset);
        if (shown < 0) {
            if (strict)
                return WALK_CHANGED; /* it was valid in the first pass */
            r->unreadable_tail = 1;
            break;
        }
        if (shown && seen++ >= skip)
            record_frame(o, frame, &f, code, offset, r, n++);
        prev = frame;
        prev_raw = f;
        frame = f.back;
    }
    r->nframes = (uint16_t)n;
    r->keep_inner = (uint16_t)keep_inner;
    r->cut = (uint32_t)skip;
    return WALK_OK;
}

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

/* Commits sample r of thread `tid`; returns its depth (frames, cut ones included). */
static uint32_t commit_sample(rrec_sample *r, uint32_t tid)
{
    sighandler_state *g = &sighandler_g;
    r->kind = RREC_SAMPLE;
    r->tid = tid;
    r->t_ns = clock_mono_ns() - g->t0_ns;
    uint32_t depth = (uint32_t)r->nframes + r->cut;
    ring_commit(&g->samples, (void *)r);
    return depth;
}

/* A read failed inside a guarded region: gives up the CODE record being filled. */
static void abandon_pending_code(void)
{
    if (tls_pending_code) {
        ring_cancel(&sighandler_g.codes, tls_pending_code);
        tls_pending_code = NULL;
    }
    if (tls_pending_slot) {
        slot_retire(tls_pending_slot);
        tls_pending_slot = NULL;
    }
}

/* One sample of the calling thread's own Python stack (the signal handler: the thread
 * is stopped in it, so its stack cannot change under the read).  Table generation `t` is
 * held by the caller.  Returns the stack's depth, 0 when no sample was taken. */
static uint32_t sample_self(int t)
{
    sighandler_state *g = &sighandler_g;
    const pyabi *a = &g->abi;

    /* Assigned between the setjmp and a possible longjmp, so volatile (C11 7.13.2.1). */
    rrec_sample *volatile r = NULL;
    safe_jmpbuf jb;
    if (!SAFE_GUARD_BEGIN(jb)) {
        /* A read failed: give up the sample and any half-made CODE record. */
        abandon_pending_code();
        if (r)
            ring_cancel(&g->samples, (void *)r);
        drop(PYPROF_DROP_UNREADABLE);
        return 0;
    }
    if (!interpreter_ready(a)) {
        SAFE_GUARD_END();
        drop(PYPROF_DROP_NOT_READY);
        return 0;
    }
    uintptr_t ts = this_tstate(a);
    uintptr_t frame = ts ? top_frame(a, ts) : 0;
    if (!frame) {
        SAFE_GUARD_END();
        drop(PYPROF_DROP_NO_PYTHON);
        return 0;
    }
    r = ring_reserve(&g->samples, sizeof(rrec_sample) + g->max_depth * sizeof(rframe));
    if (!r) {
        SAFE_GUARD_END();
        drop(PYPROF_DROP_RING_FULL);
        return 0;
    }
    walk_out o = { .a = a, .tab = g->tables[t], .t = t };
    if (walk(&o, frame, (rrec_sample *)r, g->max_depth) != WALK_OK) {
        SAFE_GUARD_END();
        ring_cancel(&g->samples, (void *)r);
        drop(PYPROF_DROP_UNREADABLE);
        return 0;
    }
    SAFE_GUARD_END();
    if (r->nframes == 0 && !r->unreadable_tail) {
        /* Only hidden frames: C code entering or leaving Python, no Python frame yet. */
        ring_cancel(&g->samples, (void *)r);
        drop(PYPROF_DROP_NO_PYTHON);
        return 0;
    }
    return commit_sample((rrec_sample *)r, sighandler_tid());
}

/* The signal handler's sample of its own thread; returns its depth (0: none taken). */
static uint32_t take_sample(void)
{
    int t = table_enter();
    uint32_t depth = sample_self(t);
    table_leave(t);
    return depth;
}

/* ---- the wall clock: reading threads that keep running ------------------------------ */

/* The wall sampler thread's scratch (there is one such thread). */
static uintptr_t wall_frames[SIGHANDLER_MAX_DEPTH];
static frame_raw wall_raws[SIGHANDLER_MAX_DEPTH];

/* A stack that changed under the read: the thread is running Python right now.  Its
 * innermost frame, read again from the thread state, is recorded alone, under the
 * unreadable marker: the function running is known, its callers are not.  (Reading
 * again until a whole stack holds still would favour the moments it does, such as long
 * C calls, over the Python code that keeps changing it: the functions' shares would be
 * wrong, not just their callers.)  Returns 1 when r holds that frame. */
static int innermost_only(walk_out *o, uintptr_t ts, rrec_sample *r)
{
    const pyabi *a = o->a;
    uintptr_t frame = top_frame(a, ts);
    for (unsigned hidden = 0; frame && hidden < 8; hidden++) {
        frame_raw f;
        uintptr_t code;
        int32_t offset;
        if (read_raw(a, frame, &f) < 0)
            return 0;
        int shown = frame_view(a, &f, &code, &offset);
        if (shown < 0)
            return 0;
        if (shown) {
            int changed = 0;
            uint32_t id = code_id_of(a, o->tab, o->t, code, frame, &f, &changed);
            if (changed || id == PYPROF_CODE_UNREADABLE)
                return 0;
            r->frames[0].code_id = id;
            r->frames[0].offset = offset;
            r->nframes = 1;
            r->keep_inner = 1;
            r->cut = 0;
            r->unreadable_tail = 1;
            return 1;
        }
        frame = f.back;
    }
    return 0;
}

/* What one try at a thread's stack came to. */
enum { TRY_TAKEN, TRY_NONE, TRY_CHANGED, TRY_UNREADABLE };

/* One try at reading thread state `ts` (OS thread `tid`), whose thread keeps running:
 * the walk (hand over hand, see walk), then the code objects of the recorded frames,
 * each looked up while the frame that holds it is checked to still hold it. */
static int try_other(int t, uintptr_t ts, uint32_t tid, uint32_t *depth)
{
    sighandler_state *g = &sighandler_g;
    const pyabi *a = &g->abi;
    unsigned max_depth = g->max_depth < SIGHANDLER_MAX_DEPTH ? g->max_depth
                                                             : SIGHANDLER_MAX_DEPTH;
    rrec_sample *volatile r = NULL;
    safe_jmpbuf jb;
    if (!SAFE_GUARD_BEGIN(jb)) {
        /* A read failed: memory that moved on under the read, most likely. */
        abandon_pending_code();
        if (r)
            ring_cancel(&g->samples, (void *)r);
        return TRY_UNREADABLE;
    }
    uintptr_t frame = top_frame(a, ts);
    if (!frame) {
        SAFE_GUARD_END();
        return TRY_NONE;
    }
    r = ring_reserve(&g->samples, sizeof(rrec_sample) + max_depth * sizeof(rframe));
    if (!r) {
        SAFE_GUARD_END();
        drop(PYPROF_DROP_RING_FULL);
        return TRY_NONE;
    }
    /* 3.11+ frames live in the thread's own stack of frames: a frame's memory holds a
     * frame of the same depth or none, and its caller link always leads to the frames
     * below it, so a read that races the thread still follows real caller links down to
     * the thread's first frame.  Heap frames (2.7-3.10) are freed, listed and reused
     * anywhere, so they are read hand over hand. */
    walk_out o = { .a = a, .tab = g->tables[t], .t = t, .frames = wall_frames,
                   .raws = wall_raws, .ts = ts,
                   .strict = a->frame_kind == PYABI_FRAME_OBJECT };
    int rc = walk(&o, frame, (rrec_sample *)r, max_depth);
    int changed = 0;
    for (unsigned i = 0; rc == WALK_OK && i < r->nframes; i++) {
        uint32_t id = code_id_of(a, o.tab, t, wall_raws[i].code, wall_frames[i], &wall_raws[i],
                                 &changed);
        if (changed)
            rc = WALK_CHANGED;
        else if (id == PYPROF_CODE_UNREADABLE)
            rc = WALK_BAD; /* no name for it: the stack is not recorded half-named */
        r->frames[i].code_id = id;
    }
    for (int i = 0; rc == WALK_CHANGED && i < 3; i++)
        if (innermost_only(&o, ts, (rrec_sample *)r))
            rc = WALK_OK;
    SAFE_GUARD_END();
    if (rc != WALK_OK) {
        ring_cancel(&g->samples, (void *)r);
        return rc == WALK_CHANGED ? TRY_CHANGED : TRY_UNREADABLE;
    }
    if (r->nframes == 0 && !r->unreadable_tail) {
        /* Only hidden frames: C code entering or leaving Python. */
        ring_cancel(&g->samples, (void *)r);
        return TRY_NONE;
    }
    *depth = commit_sample((rrec_sample *)r, tid);
    return TRY_TAKEN;
}

/* One sample of a thread that keeps running, read once.  Returns the stack's depth, 0
 * when no sample was taken. */
static uint32_t sample_other(int t, uintptr_t ts, uint32_t tid)
{
    uint32_t depth = 0;
    int rc = try_other(t, ts, tid, &depth);
    if (rc == TRY_CHANGED)
        drop(PYPROF_DROP_CHANGING);
    else if (rc == TRY_UNREADABLE)
        drop(PYPROF_DROP_UNREADABLE);
    return depth;
}

/* The OS thread id of thread state `ts`, inside a guarded region; 0 when unknown.  The
 * pthread_t's glibc descriptor is asked first: glibc keeps its tid right after any fork
 * (the child's own tid in the forking thread's descriptor, 0 in the others'), where
 * 3.11+'s native_thread_id keeps the parent's when the fork bypassed Python's after-fork
 * hook (fork() from C). */
static uint32_t tstate_tid(const pyabi *a, uintptr_t ts)
{
    int off = atomic_load_explicit(&sighandler_g.pthread_tid_offset, memory_order_relaxed);
    if (off > 0)
        return pthread_tid_read(safe_ptr(ts + (uintptr_t)a->ts_thread_id), off);
    if (a->ts_native_tid >= 0)
        return safe_u32(ts + (uintptr_t)a->ts_native_tid);
    return 0;
}

/* Drops the thread states whose thread is not one of this process's: in a child forked
 * by a thread other than the main one, glibc leaves the main thread's descriptor with
 * the parent's tid (it clears the others'), and when the fork bypassed Python's
 * after-fork hook, the main thread's state is still listed.  Each (thread state, tid)
 * pair is checked once, with tgkill's existence test, and remembered by its position
 * from the end of the list (new threads are added at the front). */
static void keep_live_threads(uintptr_t *ts_of, uint32_t *tid_of, unsigned *n)
{
    enum { KNOWN = 4096 };
    static uintptr_t known_ts[KNOWN];
    static uint32_t known_tid[KNOWN];
    static uint8_t known_live[KNOWN];
    static pid_t known_pid;
    pid_t pid = getpid();
    if (known_pid != pid) { /* a new process: what the parent knew does not hold */
        memset(known_ts, 0, sizeof known_ts);
        known_pid = pid;
    }
    unsigned kept = 0, count = *n;
    for (unsigned i = 0; i < count; i++) {
        unsigned k = count - 1 - i;
        if (k < KNOWN && known_ts[k] == ts_of[i] && known_tid[k] == tid_of[i]) {
            if (!known_live[k])
                continue;
        } else {
            int saved = errno;
            int live = syscall(SYS_tgkill, pid, (pid_t)tid_of[i], 0) == 0 || errno != ESRCH;
            errno = saved;
            if (k < KNOWN) {
                known_ts[k] = ts_of[i];
                known_tid[k] = tid_of[i];
                known_live[k] = (uint8_t)live;
            }
            if (!live)
                continue;
        }
        ts_of[kept] = ts_of[i];
        tid_of[kept] = tid_of[i];
        kept++;
    }
    *n = kept;
}

unsigned sighandler_sample_threads(void)
{
    sighandler_state *g = &sighandler_g;
    const pyabi *a = &g->abi;
    enum { MAX_THREADS = 4096 };
    static uintptr_t ts_of[MAX_THREADS];
    static uint32_t tid_of[MAX_THREADS];
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
        return 0;
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
sample:
    keep_live_threads(ts_of, tid_of, (unsigned *)&n);
    unsigned taken = 0;
    int t = table_enter();
    for (unsigned i = 0; i < n; i++) {
        atomic_fetch_add_explicit(&g->signals, 1, memory_order_relaxed);
        uint64_t t0 = clock_mono_ns();
        uint32_t depth = sample_other(t, ts_of[i], tid_of[i]);
        if (depth) {
            account_cost(depth, clock_mono_ns() - t0);
            taken++;
        }
    }
    table_leave(t);
    return taken;
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
        sigdisp_run_program(sig, info, uc);
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
            uint64_t t0 = clock_mono_ns();
            uint32_t depth = take_sample();
            uint64_t cost = clock_mono_ns() - t0;
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
