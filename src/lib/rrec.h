/*
 * rrec: the records the library's producers put into its rings and the writer takes out
 * -- the rings' wire format, in one place, as include/pyprof/format.h is the log's.  Two
 * rings (ring.h) carry them, both made by sampler.c:
 *   the sample ring   RREC_SAMPLE    rrec_sample: a thread's stack, from the sampling
 *                                    signal (sighandler.c) or the wall pass (wall.c)
 *                     RREC_SNAP      rrec_snap: one thread of `pyprof dump`'s snapshot
 *                                    (wall.c)
 *                     RREC_SNAP_END  rrec_snap_end: the end of that snapshot (wall.c)
 *                     RREC_ALLOC     rrec_alloc: an allocation sample (sighandler.c,
 *                                    called by allocsample.c)
 *                     RREC_FREE      rrec_free: a sampled block freed (allocsample.c)
 *                     RREC_AWINDOW   rrec_awindow: an allocation window closed, or windows
 *                                    paused (allochook.c, through allocsample.c)
 *                     RREC_SPAN_*    rrec_span: the program's spans (spans.c)
 *   the code ring     RREC_CODE      rrec_code: a code object's names and line table, the
 *                                    first time the handler meets it (codeid.c)
 * Every record starts with rrec_head, its kind; the writer (writer.c) decodes each by it
 * into the log's records.  A record is written in place in the ring by a signal handler:
 * fixed layouts, no pointers.
 *
 * The three kinds that carry a thread's stack (SAMPLE, SNAP, ALLOC) end with an
 * rrec_stack, the stack's fixed part, and the frames follow the record in memory:
 *
 *   rrec_<kind> { rrec_head; the kind's own fields; rrec_stack }
 *               rframe[nframes], innermost first (rrec_frames)
 *               uint64_t[nnative], native mode: innermost (the interrupted
 *               instruction) first (rrec_native)
 *
 * rrec_stack_of finds a record's stack whatever its kind; walk.c fills it, sampleout.c
 * reserves such records and stamps and commits them, the writer reads them back.
 */
#ifndef PYPROF_RREC_H
#define PYPROF_RREC_H

#include <stddef.h>
#include <stdint.h>

/* The kinds. */
enum {
    RREC_SAMPLE = 1,
    RREC_CODE = 2,
    RREC_SNAP = 3,
    RREC_SNAP_END = 4,
    RREC_SPAN_START = 5,
    RREC_SPAN_STOP = 6,
    RREC_ALLOC = 7,
    RREC_FREE = 8,
    RREC_AWINDOW = 9
};

/* What every record starts with. */
typedef struct rrec_head {
    uint8_t kind; /* RREC_* */
} rrec_head;

typedef struct rframe {
    uint32_t code_id;
    int32_t offset; /* byte offset of the instruction in the bytecode; -1 unknown */
} rframe;

/* Native mode: the walk marks the outermost frame of each eval-loop activation's run
 * of frames (every frame up to 3.10, an entry frame on 3.11+) with this bit of
 * rframe.code_id.  Code ids stay far below it. */
#define RFRAME_RUN_START 0x80000000u

/* The deepest stack a record holds (PYPROF_MAX_DEPTH's upper bound). */
#define RREC_MAX_DEPTH 4096u

/* A thread's stack, as the walk read it: the last member of a record that has one, its
 * frames and native addresses right after it (above). */
typedef struct rrec_stack {
    uint32_t tid;            /* the thread's kernel id */
    uint16_t nframes;        /* rframe entries after this */
    uint16_t keep_inner;     /* frames before the cut; the rest run inner to outer */
    uint64_t t_ns;           /* monotonic, since the samples' zero (sighandler_state.t0_ns) */
    uint32_t cut;            /* frames omitted between frame keep_inner-1 and the rest */
    uint16_t nnative;        /* native mode: addresses after the frames */
    uint8_t native_flags;    /* PYPROF_NATIVE_F_* */
    uint8_t unreadable_tail; /* 1: the walk stopped at a frame it could not validate */
} rrec_stack;

/* RREC_SAMPLE: a sample of a thread's stack, standing for `repeat` samples more (wall
 * mode: the passes that found its thread running since its last). */
typedef struct rrec_sample {
    rrec_head head;
    uint8_t gil;        /* wall mode: enum pyprof_gil, 0 unknown */
    uint8_t repeat_gil; /* the state of the repeats not held or waiting: enum pyprof_gil */
    uint8_t pad;
    uint32_t repeat;
    uint32_t repeat_held; /* of those, the ones whose pass found the thread holding the
                           * GIL (their GIL state is HELD), */
    uint32_t repeat_wait; /* then the ones whose pass found it waiting for the GIL (WAIT);
                           * the others' state is repeat_gil (a repeat's state is its
                           * asking pass's) */
    rrec_stack stack;
} rrec_sample;

/* RREC_SNAP: one thread of snapshot snap_id; a thread without a Python frame read has
 * an empty stack (nframes 0). */
typedef struct rrec_snap {
    rrec_head head;
    uint8_t flags;    /* PYPROF_SNAP_F_* */
    uint8_t os_state; /* the kernel's state letter, 0 unknown */
    uint8_t pad;
    uint32_t snap_id;
    rrec_stack stack;
} rrec_snap;

/* RREC_SNAP_END: the end of snapshot snap_id, after its `nthreads` RREC_SNAP records
 * (the threads listed; fewer came when the ring was full). */
typedef struct rrec_snap_end {
    rrec_head head;
    uint8_t pad[3];
    uint32_t snap_id;
    uint32_t nthreads;
    uint32_t pad2;
    uint64_t t_ns; /* monotonic, since the samples' zero */
} rrec_snap_end;

/* RREC_ALLOC: an allocation sample, with the allocating thread's stack (empty when it
 * ran no Python frame, or none could be read). */
typedef struct rrec_alloc {
    rrec_head head;
    uint8_t domain; /* enum pyprof_alloc_domain */
    uint8_t flags;  /* PYPROF_ALLOC_F_* */
    uint8_t pad[5];
    uint64_t size; /* bytes asked for */
    uint64_t addr; /* the block */
    rrec_stack stack;
} rrec_alloc;

/* A record's frames must start right where its stack ends, and its native addresses
 * (after 8-byte frames) stay 8-byte aligned. */
_Static_assert(sizeof(rframe) == 8 && sizeof(rrec_stack) % 8 == 0, "rrec_stack layout");
_Static_assert(offsetof(rrec_sample, stack) + sizeof(rrec_stack) == sizeof(rrec_sample) &&
                   offsetof(rrec_snap, stack) + sizeof(rrec_stack) == sizeof(rrec_snap) &&
                   offsetof(rrec_alloc, stack) + sizeof(rrec_stack) == sizeof(rrec_alloc),
               "a record's stack is its last member");

/* The size of a record of `kind` that carries a stack, frames not counted; 0 for a kind
 * without one. */
static inline size_t rrec_stack_kind_size(int kind)
{
    switch (kind) {
    case RREC_SAMPLE:
        return sizeof(rrec_sample);
    case RREC_SNAP:
        return sizeof(rrec_snap);
    case RREC_ALLOC:
        return sizeof(rrec_alloc);
    default:
        return 0;
    }
}

/* The stack of record `h`, whatever its kind; NULL for a kind without one. */
static inline rrec_stack *rrec_stack_of(const rrec_head *h)
{
    size_t size = rrec_stack_kind_size(h->kind);
    return size ? (rrec_stack *)(void *)((const char *)h + size - sizeof(rrec_stack)) : NULL;
}

/* The frames after stack `s`, and its native addresses after them.  (Like strchr, they
 * give a pointer to change from a record the caller may only read.) */
static inline rframe *rrec_frames(const rrec_stack *s) { return (rframe *)(void *)(s + 1); }
static inline uint64_t *rrec_native(const rrec_stack *s)
{
    return (uint64_t *)(void *)(rrec_frames(s) + s->nframes);
}

/* The bytes stack `s` takes with its frames and native addresses. */
static inline size_t rrec_stack_bytes(const rrec_stack *s)
{
    return sizeof *s + (size_t)s->nframes * sizeof(rframe) +
           (size_t)s->nnative * sizeof(uint64_t);
}

/* RREC_CODE (codeid.c): a code object's names and line table, in the code ring. */
typedef struct rrec_code {
    rrec_head head;
    uint8_t lt_kind;
    uint16_t flags; /* PYPROF_CODE_F_* */
    uint32_t code_id;
    int32_t first_line;
    uint16_t name_len, qualname_len, filename_len, pad;
    uint32_t lt_len;
    char data[]; /* name, qualname, filename (UTF-8), line table */
} rrec_code;

/* RREC_FREE (allocsample.c): a sampled block freed. */
typedef struct rrec_free {
    rrec_head head;
    uint8_t pad[7];
    uint64_t t_ns; /* monotonic, since the samples' zero (sighandler_state.t0_ns) */
    uint64_t addr;
} rrec_free;

/* RREC_AWINDOW (allocsample.c, for allochook.c): an allocation window that closed, or
 * the moment windows paused (format.h, AWINDOW). */
typedef struct rrec_awindow {
    rrec_head head;
    uint8_t shift, floor_shift, flags; /* PYPROF_AWINDOW_F_* */
    uint8_t pad[4];
    uint64_t t_ns; /* opened (or paused), monotonic since the samples' zero */
    uint64_t len_ns, planned_ns;
} rrec_awindow;

/* RREC_SPAN_START, RREC_SPAN_STOP (spans.c): the record, followed by
 * its strings back to back: name, trace_id, parent_id, base_id, info (a stop has only
 * info).  t_ns is CLOCK_MONOTONIC less the samples' zero, like a sample's. */
typedef struct rrec_span {
    rrec_head head;
    uint8_t pad;
    uint16_t name_len, trace_id_len, parent_id_len, base_id_len, info_len;
    uint32_t tid;
    uint64_t t_ns;
    uint64_t span_id;
    uint64_t parent_span;
    char data[];
} rrec_span;

#endif
