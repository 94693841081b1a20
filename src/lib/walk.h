/*
 * walk: reading one thread's Python frames into a record's stack (rrec.h's rrec_stack,
 * in a SAMPLE, SNAP or ALLOC record), innermost first, for every supported version
 * (heap PyFrameObjects on 2.7-3.10, _PyInterpreterFrames on 3.11+, both read through
 * pyread.h).  A deep stack keeps its innermost and outermost frames with the cut between
 * them counted.  Two callers: the signal handler, on its own stopped thread (code ids
 * looked up during the walk), and the wall-clock pass, on threads that keep running
 * (frames recorded as read, optionally hand over hand, their code ids looked up after
 * the walk).
 *
 * Interface ([sigsafe], inside a guarded region; see walk.c for what it calls):
 *   WALK_OK, WALK_BAD, WALK_CHANGED, WALK_ROOM   what a walk came to
 *   walk_out                            where a walk puts what it finds
 *   walk(o, frame, st, max_depth)       walks from `frame` into stack st
 */
#ifndef PYPROF_WALK_H
#define PYPROF_WALK_H

#include <stdint.h>

#include "pyabi.h"
#include "pyread.h"
#include "rrec.h"

/* Why a walk gave up. */
enum { WALK_OK = 0, WALK_BAD = -1, WALK_CHANGED = -2, WALK_ROOM = -3 };

/* Where a walk puts what it finds: code ids looked up at once (the signal handler, whose
 * thread is stopped), or, for a thread that keeps running (the wall clock), each
 * recorded frame's address and contents and its code object's identity, read with the
 * frame; the code objects are looked up by that identity after the walk
 * (codeid_of_digest). */
typedef struct walk_out {
    const pyabi *a;
    int t;             /* the code table generation held (codetable_enter) */
    uintptr_t *frames; /* NULL: look code ids up during the walk */
    frame_raw *raws;
    uint64_t *digests; /* with frames: each frame's codeid_digest, read with the frame */
    uintptr_t ts;      /* with frames: the thread state whose stack this is */
    int strict;        /* read hand over hand (see walk); one thread only may walk so */
    int runs;          /* native mode, code ids looked up: mark each eval-loop C
                        * activation's outermost recorded frame with RFRAME_RUN_START */
    unsigned room;     /* the stack's room in frames, when less than max_depth (0: max_depth);
                        * a stack that needs more ends the walk with WALK_ROOM */
    const uintptr_t *find; /* code ids looked up: frame addresses to look for */
    unsigned nfind;
    int found;            /* set by the walk: the index the first of them met was
                           * recorded at, or -1 (none met, or only in a part a cut
                           * leaves out) */
    unsigned found_which; /* which of them it was */
} walk_out;

/* [sigsafe] Walks the thread's frames from `frame` into st's frames (rrec_frames; room for
 * max_depth), setting st's nframes, keep_inner, cut and unreadable_tail; without o->frames,
 * each recorded frame's code id too, and with o->runs the RFRAME_RUN_START marks.  Inside a
 * guarded region.  Returns WALK_OK, WALK_BAD when the top of the stack is not a valid frame or
 * the chain is cyclic or absurdly long (the sample is rejected), WALK_CHANGED when a strict
 * walk found the stack changing under it, or another thread's walk (3.14+) met a frame popped
 * below the top, WALK_ROOM when the stack needs more frames than o->room (its record is then to
 * be cancelled, and the walk made again into a record with room for max_depth).  The rules are
 * at the definition. */
int walk(walk_out *o, uintptr_t frame, rrec_stack *st, unsigned max_depth);

#endif
