/*
 * walk: a thread's Python frames into a record's stack (walk.h).
 *
 * SIGNAL-HANDLER CODE: walk runs inside the sampling signal handler (and on the
 * wall-clock sampler thread), inside the caller's guarded region.  It is
 * async-signal-safe: no malloc, no locks, no stdio, no Python C-API, errno untouched.
 * What it calls, and why that is safe:
 *   pyread.h (frames, code objects)   inline guarded reads (safe_read.h): a fault or an
 *                                     implausible pointer jumps back to the caller's guard
 *   codeid_of                         ours, sigsafe (codeid.c): the table, the ring and
 *                                     guarded reads
 *   mix64                             pure
 * Every frame's code is checked to be a live code object (pyread_frame_view) before its
 * id is looked up or taken from the walk's memo (walk_memo, on the walk's own stack).
 * A frame being popped (3.14+: its executable cleared) is skipped at the top of a stack
 * and ends the walk anywhere below it (pyread_frame_popped).
 * The set of frames seen (seen_set) is static and used by strict walks only, which
 * only the wall-clock sampler thread makes: no two walks share it at once.
 */
#include <pyprof/format.h>

#include "walk.h"

#include "common/mix64.h"
#include "codeid.h"
#include "rrec.h"
#include "safe_read.h"

/* Frames followed at most.  A cycle in damaged memory is caught sooner (Floyd's
 * tortoise in walk); this bounds the rest, so one sample can never cost more than a few
 * tens of microseconds, even when a garbage chain is long. */
#define WALK_LIMIT 20000u

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

/* Native mode (o->runs): which recorded frames start an eval-loop C activation's run,
 * seen from the root.  Up to 3.10 each activation runs one frame, so every frame does.
 * On 3.11 the activation's first frame carries is_entry.  On 3.12+ C code entering
 * Python pushes a shim frame (owner CSTACK, hidden) just outside the activation's
 * first frame.  A hidden frame that marks a boundary (a 3.11 entry frame not yet
 * complete, a shim) passes the mark to the recorded frame just inside it.  The
 * outermost recorded frame always starts a run. */
static inline int run_boundary_hidden(const pyabi *a, const frame_raw *f)
{
    return (a->minor >= 12 && f->owner >= PYREAD_OWNER_CSTACK) || f->is_entry;
}

static inline void mark_run(rframe *fr, int idx)
{
    if (idx >= 0)
        fr[idx].code_id |= RFRAME_RUN_START;
}

/* The code ids one walk of the thread's own stack has looked up, by code object
 * address (direct-mapped).  The thread is stopped in the handler and each of its frames
 * holds its code object, so within one walk an address met again is the same code
 * object: its id is not looked up again (a recursion's frames, a loop of calls).  Each
 * frame's code is still checked to be a live code object (pyread_frame_view) first.
 * Not across walks: between two samples the object may die and its address be reused;
 * that is what the table's digest is for. */
#define MEMO_SLOTS 16u /* a power of two */
typedef struct walk_memo {
    uintptr_t code[MEMO_SLOTS];
    uint32_t id[MEMO_SLOTS];
} walk_memo;

static inline unsigned memo_slot(uintptr_t code)
{
    return (unsigned)((code >> 4) ^ (code >> 9)) & (MEMO_SLOTS - 1);
}

static inline __attribute__((always_inline)) void
record_frame(walk_out *o, int kind, int self, walk_memo *memo, uintptr_t frame,
             const frame_raw *f, uintptr_t code, int32_t offset, rframe *fr, unsigned i)
{
    fr[i].offset = offset;
    if (!self) {
        o->frames[i] = frame;
        o->raws[i] = *f;
        o->digests[i] = codeid_digest(o->a, code);
        return;
    }
    unsigned m = memo_slot(code);
    if (memo->code[m] == code) {
        fr[i].code_id = memo->id[m];
    } else {
        uint32_t id = codeid_of(o->a, o->t, code, 0, NULL, NULL);
        fr[i].code_id = id;
        if (id != PYPROF_CODE_UNREADABLE) {
            memo->code[m] = code;
            memo->id[m] = id;
        }
    }
    if (o->runs && (kind == PYABI_FRAME_OBJECT || f->is_entry))
        fr[i].code_id |= RFRAME_RUN_START;
}

/* Walks the thread's frames into st's frames, innermost first.  Stacks deeper than
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
 * is cyclic or absurdly long (the sample is rejected), WALK_CHANGED as above, WALK_ROOM
 * when st has room for fewer frames than the stack needs (o->room).
 *
 * walk_as is the walk for a frame kind (`kind`, a->frame_kind) and a caller (`self`:
 * the signal handler, looking code ids up; else the wall clock, recording frames) known
 * at compile time: walk instantiates it four times, so that the loop of each carries no
 * test of either, which measurably matters at a few nanoseconds a frame. */
static inline __attribute__((always_inline)) int
walk_as(walk_out *o, uintptr_t frame, rrec_stack *st, unsigned max_depth, int kind, int self)
{
    rframe *fr = rrec_frames(st);
    const pyabi *a = o->a;
    int strict = !self && o->strict;
    unsigned room = o->room && o->room < max_depth ? o->room : max_depth;
    unsigned keep_inner = max_depth / 2, keep_outer = max_depth - keep_inner;
    uint64_t total = 0;         /* Python frames seen (hidden ones not counted) */
    uintptr_t resume = 0;       /* the frame at index keep_inner */
    uintptr_t tortoise = frame; /* advances every other step; meeting it means a cycle */
    unsigned steps = 0;
    uintptr_t prev = 0, top = 0;
    frame_raw prev_raw = {0}, top_raw = {0};
    int runs = self && o->runs;
    int last_rec = -1; /* index of the last shown frame if it was recorded, else -1 */
    walk_memo memo;
    if (self)
        for (unsigned m = 0; m < MEMO_SLOTS; m++)
            memo.code[m] = 0;
    o->found = -1;
    st->unreadable_tail = 0;
    if (strict)
        seen_stamp++;
    while (frame) {
        /* Step k looks at frame k-1; the tortoise is at frame (k-1)/2. */
        if (++steps > WALK_LIMIT)
            return WALK_BAD;
        if (steps > 1 && (steps & 1)) {
            /* A frame read already (its span checked): one guarded load. */
            tortoise = safe_at_ptr(tortoise + (uintptr_t)a->fr_back);
            if (tortoise == frame)
                return WALK_BAD;
        }
        frame_raw f;
        if (pyread_frame_as(a, kind, frame, &f) < 0)
            return WALK_CHANGED;
        /* A real stack holds no frame twice; a walk that crossed from an old stack into
         * a new one reusing its memory can (see below). */
        if (strict && !seen_add(frame))
            return WALK_CHANGED;
        /* A frame popped just after the thread state was read can be reused before it
         * is filled in, showing a caller left from its last use: a stale caller shows
         * when the frame is read again at the next step, and a frame with no caller at
         * all must still be the top once read. */
        if (strict && (prev ? !pyread_frame_unchanged(a, prev, &prev_raw)
                            : !f.back && (pyread_top_frame(a, o->ts) != frame ||
                                          !pyread_frame_unchanged(a, frame, &f))))
            return WALK_CHANGED;
        if (kind == PYABI_FRAME_INTERP && pyread_frame_popped(a, &f)) {
            /* 3.14+: a frame being popped.  At the top it is a function returning, and
             * its caller is where the thread goes on.  Below the top, the thread (the
             * wall clock's, running on) returned past it while the walk read: what
             * was read is no stack the thread had. */
            if (!prev) {
                frame = f.back;
                continue;
            }
            if (!self)
                return WALK_CHANGED;
            if (total == 0)
                return WALK_BAD;
            st->unreadable_tail = 1;
            break;
        }
        uintptr_t code;
        int32_t offset;
        int shown = pyread_frame_view_as(a, kind, &f, &code, &offset);
        if (shown < 0) {
            if (total == 0 || strict)
                return WALK_BAD;
            st->unreadable_tail = 1; /* the rest of the chain cannot be trusted */
            break;
        }
        if (shown) {
            if (total == keep_inner)
                resume = frame;
            last_rec = -1;
            if (total < max_depth) {
                if (total >= room)
                    return WALK_ROOM;
                record_frame(o, kind, self, &memo, frame, &f, code, offset, fr,
                             (unsigned)total);
                for (unsigned k = 0; self && k < o->nfind && o->found < 0; k++) {
                    if (frame == o->find[k]) {
                        o->found = (int)total;
                        o->found_which = k;
                    }
                }
                last_rec = (int)total;
            }
            total++;
        } else if (runs && run_boundary_hidden(a, &f)) {
            mark_run(fr, last_rec);
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
    if (strict && top &&
        (safe_ptr(top + (uintptr_t)a->fr_back) != top_raw.back ||
         safe_ptr(top + (uintptr_t)a->fr_code) != top_raw.code))
        return WALK_CHANGED;
    if (total <= max_depth) {
        st->nframes = (uint16_t)total;
        st->keep_inner = (uint16_t)total;
        st->cut = 0;
        if (runs)
            mark_run(fr, (int)total - 1);
        return WALK_OK;
    }
    if (o->found >= (int)keep_inner)
        o->found = -1; /* the second pass records other frames there */
    /* Second pass: skip the middle, record the outer end. */
    uint64_t skip = total - keep_inner - keep_outer, seen = 0;
    unsigned n = keep_inner;
    frame = resume;
    prev = 0;
    last_rec = -1;
    for (unsigned s2 = 0; frame && s2 < steps && n < max_depth; s2++) {
        frame_raw f;
        if (pyread_frame_as(a, kind, frame, &f) < 0)
            return WALK_CHANGED;
        if (strict && prev && !pyread_frame_unchanged(a, prev, &prev_raw))
            return WALK_CHANGED;
        if (kind == PYABI_FRAME_INTERP && pyread_frame_popped(a, &f)) {
            if (!self)
                return WALK_CHANGED; /* it was not popped in the first pass */
            st->unreadable_tail = 1;
            break;
        }
        uintptr_t code;
        int32_t offset;
        int shown = pyread_frame_view_as(a, kind, &f, &code, &offset);
        if (shown < 0) {
            if (strict)
                return WALK_CHANGED; /* it was valid in the first pass */
            st->unreadable_tail = 1;
            break;
        }
        if (shown) {
            last_rec = -1;
            if (seen++ >= skip) {
                record_frame(o, kind, self, &memo, frame, &f, code, offset, fr, n);
                last_rec = (int)n++;
            }
        } else if (runs && run_boundary_hidden(a, &f)) {
            mark_run(fr, last_rec);
        }
        prev = frame;
        prev_raw = f;
        frame = f.back;
    }
    st->nframes = (uint16_t)n;
    st->keep_inner = (uint16_t)keep_inner;
    st->cut = (uint32_t)skip;
    if (runs)
        mark_run(fr, (int)n - 1);
    return WALK_OK;
}

int walk(walk_out *o, uintptr_t frame, rrec_stack *st, unsigned max_depth)
{
    int self = !o->frames;
    if (o->a->frame_kind == PYABI_FRAME_OBJECT)
        return self ? walk_as(o, frame, st, max_depth, PYABI_FRAME_OBJECT, 1)
                    : walk_as(o, frame, st, max_depth, PYABI_FRAME_OBJECT, 0);
    return self ? walk_as(o, frame, st, max_depth, PYABI_FRAME_INTERP, 1)
                : walk_as(o, frame, st, max_depth, PYABI_FRAME_INTERP, 0);
}
