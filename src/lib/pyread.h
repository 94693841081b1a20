/*
 * pyread: the small readers of the interpreter's objects that the sample path shares
 * (the signal handler, the frame walk, the code ids and the wall-clock pass): is an
 * object live, is the interpreter running, a thread state's top frame, one frame's
 * contents and what Python shows of it.  Offsets come from pyabi (one row per minor
 * version) and its PYABI_* constants.
 *
 * SIGNAL-HANDLER CODE: every function here runs inside the sampling signal handler (and
 * on the wall-clock sampler thread).  They must be called inside a guarded region
 * (safe_read.h): every read of interpreter memory goes through safe_read.h, which
 * leaves the region on a fault or an implausible address.  A frame or a code object is
 * checked once (safe_span over its first PYREAD_SPAN bytes, where every field read
 * lies), then its fields are plain guarded loads (safe_at_*).  Calls:
 *   safe_* (safe_read.h)        guarded loads, no libc
 *   a->is_initialized()         2.7/3.6 only: Py_IsInitialized, a plain load of a global
 *                               (checked by disassembly), called through the pointer
 *                               dlsym gave at start, so no lazy PLT binding runs here
 * No malloc, no lock, no stdio, no Python C-API beyond that one load, errno untouched.
 *
 * Interface (all static inline, [sigsafe], inside a guarded region):
 *   pyread_is_live(o, type)           a live object of that type
 *   pyread_is_live_span(o, type)      the same, its first PYREAD_SPAN bytes checked
 *   pyread_is_code(a, code)           a live code object (span checked)
 *   pyread_interpreter_ready(a)       between initialization and finalization
 *   pyread_top_frame(a, ts)           the innermost frame of thread state ts, or 0
 *   pyread_gil_holder_addr(a)         where the GIL's last_holder is (3.7+)
 *   pyread_gil(a, &last, &switches, &locked)  the GIL's last holder, hand-over count
 *                                     and lock (3.7+)
 *   pyread_gil_holder(a)              the thread state holding the GIL now, or 0
 *   frame_raw, pyread_frame(a, f, &raw)      one frame's fields, read as they are
 *   pyread_frame_popped(a, &raw)             a frame being popped (3.14+)
 *   pyread_frame_unchanged(a, f, &raw)       still the same code and caller
 *   pyread_frame_view(a, &raw, &code, &off)  shown, hidden, or not a code object
 *   pyread_frame_as, pyread_frame_view_as    the same two for a frame kind known at
 *                                            compile time (a walk's specialized loops)
 */
#ifndef PYPROF_PYREAD_H
#define PYPROF_PYREAD_H

#include <stdint.h>

#include "pyabi.h"
#include "safe_read.h"

/* CPython's frame owners (3.11+): a generator's frame, and from 3.12 on the frames that
 * are no Python function's: the shim frames C code pushes when it calls into Python
 * (owner 3, CSTACK on 3.12/3.13, INTERPRETER on 3.14+) and 3.14's CSTACK (4); 3.15 also
 * ends every chain with the thread's base frame (owner 3). */
enum { PYREAD_OWNER_GENERATOR = 1, PYREAD_OWNER_CSTACK = 3 };

/* Every field the sample path reads of a frame or a code object, in every version,
 * lies in its first PYREAD_SPAN bytes (the farthest: 3.14's _co_firsttraceable at 192;
 * docs/CPYTHON.md).  A field past it would still be a guarded load: the span check only
 * keeps the object's address plausible. */
#define PYREAD_SPAN 256u

/* What one frame holds, read as it is. */
typedef struct frame_raw {
    uintptr_t back, code;
    uint64_t instr;   /* f_lasti (<= 3.10) or the instruction pointer (3.11+) */
    uint8_t owner;    /* 3.11+ */
    uint8_t is_entry; /* 3.11: the eval loop's C activation started at this frame */
} frame_raw;

/* Is `o` a live object of type `type`?  (A freed object keeps its memory for a while,
 * with reference count 0, on CPython's free lists.) */
static inline int pyread_is_live(uintptr_t o, uintptr_t type)
{
    return safe_span_ok(o, 16) && safe_at_ptr(o + PYABI_OB_TYPE) == type &&
           safe_at_u64(o + PYABI_OB_REFCNT) != 0;
}

/* The same, for an object whose first PYREAD_SPAN bytes are read next (a frame, a code
 * object): the one check of its span. */
static inline int pyread_is_live_span(uintptr_t o, uintptr_t type)
{
    return safe_span_ok(o, PYREAD_SPAN) && safe_at_ptr(o + PYABI_OB_TYPE) == type &&
           safe_at_u64(o + PYABI_OB_REFCNT) != 0;
}

/* Is `code` a live code object?  Its first PYREAD_SPAN bytes may then be read with
 * safe_at_*. */
static inline int pyread_is_code(const pyabi *a, uintptr_t code)
{
    return pyread_is_live_span(code, a->code_type);
}

/* Is the interpreter between initialization and finalization? */
static inline int pyread_interpreter_ready(const pyabi *a)
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

/* The innermost frame of thread state `ts`, or 0. */
static inline uintptr_t pyread_top_frame(const pyabi *a, uintptr_t ts)
{
    uintptr_t f = safe_ptr(ts + (uintptr_t)a->ts_frame);
    if (f && a->cframe_current >= 0)
        f = safe_ptr(f + (uintptr_t)a->cframe_current);
    return f;
}

/* The address of the GIL's last_holder (3.7+; 0 on 2.7 and 3.6, and on 3.12+ before the
 * main interpreter exists): in _PyRuntime, or in the main interpreter on 3.12+.  The
 * GIL's structure starts 8 bytes before it (its switch interval). */
static inline uintptr_t pyread_gil_holder_addr(const pyabi *a)
{
    if (a->gil_holder < 0 || !a->runtime)
        return 0;
    uintptr_t base = a->runtime;
    if (a->gil_in_interp && !(base = safe_ptr(a->runtime + (uintptr_t)a->rt_interp_main)))
        return 0;
    return base + (uintptr_t)a->gil_holder;
}

/* The GIL's state (3.7+; 0 on 2.7 and 3.6, which keep no count): its last holder's
 * thread state, how many times it has passed from one thread to another (switch_number,
 * 16 bytes after last_holder; take_gil counts before the thread that took the GIL runs
 * any Python code), and whether it is locked (the int 8 bytes after last_holder).  The
 * holder is last_holder while the GIL is locked; a thread that released it may take it
 * again without a count. */
static inline int pyread_gil(const pyabi *a, uintptr_t *last, uint64_t *switches, int *locked)
{
    uintptr_t holder = pyread_gil_holder_addr(a);
    if (!holder)
        return 0;
    *switches = safe_u64(holder + 16);
    *last = safe_ptr(holder);
    *locked = safe_u32(holder + 8) != 0;
    return 1;
}

/* The thread state holding the GIL now, 0 when none or unknown: 2.7 and 3.6 keep it in
 * _PyThreadState_Current; later versions in the GIL's last_holder, which counts only
 * while the GIL is locked. */
static inline uintptr_t pyread_gil_holder(const pyabi *a)
{
    if (a->gil_tstate)
        return safe_ptr(a->gil_tstate);
    uintptr_t last;
    uint64_t switches;
    int locked;
    return pyread_gil(a, &last, &switches, &locked) && locked ? last : 0;
}

/* Reads one frame.  Returns 0, or -1 when a heap frame (<= 3.10) is not a live frame
 * object: a freed frame keeps its memory on CPython's free lists, with reference count 0
 * and, on the free list, a `f_back` that chains the free list, not a stack.
 * pyread_frame_as is the same for a frame kind known at compile time (kind is
 * a->frame_kind), so that a walk's loop carries no test of it. */
#define PYREAD_INLINE static inline __attribute__((always_inline))
PYREAD_INLINE int pyread_frame_as(const pyabi *a, int kind, uintptr_t frame, frame_raw *f)
{
    if (kind == PYABI_FRAME_OBJECT) {
        if (!pyread_is_live_span(frame, a->frame_type))
            return -1;
        f->instr = (uint64_t)(int64_t)safe_at_i32(frame + (uintptr_t)a->fr_lasti);
        f->owner = 0;
    } else {
        safe_span(frame, PYREAD_SPAN);
        f->instr = safe_at_ptr(frame + (uintptr_t)a->fr_lasti);
        f->owner = safe_at_u8(frame + (uintptr_t)a->fr_owner);
    }
    f->is_entry = a->fr_is_entry >= 0 ? safe_at_u8(frame + (uintptr_t)a->fr_is_entry) : 0;
    f->back = safe_at_ptr(frame + (uintptr_t)a->fr_back);
    f->code = safe_at_ptr(frame + (uintptr_t)a->fr_code) & ~(uintptr_t)a->fr_code_tag;
    return 0;
}
static inline int pyread_frame(const pyabi *a, uintptr_t frame, frame_raw *f)
{
    return pyread_frame_as(a, a->frame_kind, frame, f);
}

/* Is this frame one being popped (3.14+ clear a returning frame's executable)?  Its code
 * reads 0 once the tag is masked off. */
static inline int pyread_frame_popped(const pyabi *a, const frame_raw *f)
{
    return a->fr_code_tag && !f->code;
}

/* Does `frame`, read as `was`, still hold the same code object and caller? */
static inline int pyread_frame_unchanged(const pyabi *a, uintptr_t frame, const frame_raw *was)
{
    frame_raw now;
    return pyread_frame(a, frame, &now) == 0 && now.back == was->back &&
           now.code == was->code && now.owner == was->owner;
}

/* What a frame shows: 1 and its code object and instruction offset for a frame Python
 * itself shows, 0 for one it hides (3.12+ shims; 3.11+ frames not yet complete, such as
 * a frame whose prologue has not run or 3.13's __init__ clean-up frame, as CPython's
 * _PyFrame_IsIncomplete says), -1 when its code is not a code object. */
PYREAD_INLINE int pyread_frame_view_as(const pyabi *a, int kind, const frame_raw *f,
                                       uintptr_t *code, int32_t *offset)
{
    *code = f->code;
    if (kind == PYABI_FRAME_OBJECT) {
        int32_t lasti = (int32_t)f->instr;
        *offset = a->lasti_kind == PYABI_LASTI_UNITS && lasti >= 0 ? lasti * PYABI_CODEUNIT
                                                                   : lasti;
        return pyread_is_code(a, f->code) ? 1 : -1;
    }
    if (a->minor >= 12 && f->owner >= PYREAD_OWNER_CSTACK)
        return 0;
    if (!pyread_is_code(a, f->code))
        return -1;
    intptr_t off = (intptr_t)f->instr - (intptr_t)(f->code + (uintptr_t)a->co_code_adaptive);
    *offset = off < -2 || off > (1 << 28) ? -1 : (int32_t)off;
    if (f->owner != PYREAD_OWNER_GENERATOR &&
        off < PYABI_CODEUNIT * (intptr_t)safe_at_i32(f->code + (uintptr_t)a->co_firsttraceable))
        return 0;
    return 1;
}
static inline int pyread_frame_view(const pyabi *a, const frame_raw *f, uintptr_t *code,
                                    int32_t *offset)
{
    return pyread_frame_view_as(a, a->frame_kind, f, code, offset);
}

#endif
