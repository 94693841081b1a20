/*
 * rrec: the records the library's producers put into its rings and the writer takes out
 * -- the rings' wire format, in one place, as include/pyprof/format.h is the log's.  Two
 * rings (ring.h) carry them, both made by sampler.c:
 *   the sample ring   RREC_SAMPLE    a thread's stack, from the sampling signal
 *                                    (sighandler.c) or the wall pass (wall.c)
 *                     RREC_SNAP      one thread of `pyprof dump`'s snapshot (wall.c), in
 *                     RREC_SNAP_END  the sample layout; then the end of the snapshot
 *                                    (nframes 0, `tid` the threads listed), both with its
 *                                    snap_id
 *                     RREC_ALLOC     an allocation sample (sighandler.c, called by
 *                                    allocsample.c): the sample layout with the alloc_*
 *                                    fields
 *                     RREC_FREE      a sampled block freed (allocsample.c): rrec_free
 *                     RREC_SPAN_*    the program's spans (spans.c): rrec_span
 *   the code ring     RREC_CODE      a code object's names and line table, the first
 *                                    time the handler meets it (codeid.c): rrec_code
 * The writer (writer.c) decodes each by its kind into the log's records.  A record is
 * written in place in the ring by a signal handler: fixed layouts, no pointers.  Frames
 * run innermost first.
 */
#ifndef PYPROF_RREC_H
#define PYPROF_RREC_H

#include <stdint.h>

/* The kinds.  Every record starts with its kind byte. */
enum {
    RREC_SAMPLE = 1,
    RREC_CODE = 2,
    RREC_SNAP = 3,
    RREC_SNAP_END = 4,
    RREC_SPAN_START = 5,
    RREC_SPAN_STOP = 6,
    RREC_ALLOC = 7, /* an allocation sample: the sample layout with the alloc_* fields */
    RREC_FREE = 8   /* a sampled block freed: rrec_free */
};

typedef struct rframe {
    uint32_t code_id;
    int32_t offset; /* byte offset of the instruction in the bytecode; -1 unknown */
} rframe;

typedef struct rrec_sample {
    uint8_t kind;
    uint8_t unreadable_tail; /* 1: the walk stopped at a frame it could not validate */
    uint16_t nframes;        /* frames[] entries */
    uint32_t tid;
    uint64_t t_ns;        /* monotonic, since the samples' zero (sighandler_state.t0_ns) */
    uint32_t cut;         /* frames omitted between frames[keep_inner-1] and the rest */
    uint16_t keep_inner;  /* frames before the cut; the rest run inner to outer */
    uint16_t nnative;     /* native mode: addresses after frames[nframes] */
    uint8_t native_flags; /* PYPROF_NATIVE_F_* */
    uint8_t snap_flags;   /* RREC_SNAP: PYPROF_SNAP_F_* */
    uint8_t os_state;     /* RREC_SNAP: the kernel's state letter, 0 unknown */
    uint8_t gil;          /* RREC_SAMPLE, wall mode: enum pyprof_gil, 0 unknown */
    uint32_t snap_id;     /* RREC_SNAP, RREC_SNAP_END: the snapshot */
    uint32_t repeat;      /* RREC_SAMPLE: stands for this many samples more (wall mode:
                           * the passes that found its thread running since its last) */
    uint32_t repeat_held; /* of those, the ones whose pass found the thread holding the
                           * GIL (their GIL state is HELD), */
    uint32_t repeat_wait; /* then the ones whose pass found it waiting for the GIL (WAIT);
                           * the others' state is repeat_gil (a repeat's state is its
                           * asking pass's) */
    uint8_t repeat_gil;   /* enum pyprof_gil */
    uint8_t alloc_domain; /* RREC_ALLOC: enum pyprof_alloc_domain */
    uint8_t alloc_flags;  /* RREC_ALLOC: PYPROF_ALLOC_F_* */
    uint64_t alloc_size;  /* RREC_ALLOC: bytes asked for */
    uint64_t alloc_addr;  /* RREC_ALLOC: the block */
    rframe frames[];
    /* then, native mode: uint64_t native[nnative], innermost (the interrupted
     * instruction) first; see rrec_native */
} rrec_sample;

/* Native mode: the walk marks the outermost frame of each eval-loop activation's run
 * of frames (every frame up to 3.10, an entry frame on 3.11+) with this bit of
 * rframe.code_id.  Code ids stay far below it. */
#define RFRAME_RUN_START 0x80000000u

/* The native addresses of a sample record. */
static inline uint64_t *rrec_native(rrec_sample *r)
{
    return (uint64_t *)(void *)(r->frames + r->nframes);
}

typedef struct rrec_code {
    uint8_t kind;
    uint8_t lt_kind;
    uint16_t flags; /* PYPROF_CODE_F_* */
    uint32_t code_id;
    int32_t first_line;
    uint16_t name_len, qualname_len, filename_len, pad;
    uint32_t lt_len;
    char data[]; /* name, qualname, filename (UTF-8), line table */
} rrec_code;

/* The deepest stack a sample records (PYPROF_MAX_DEPTH's upper bound). */
#define RREC_MAX_DEPTH 4096u

/* RREC_FREE (allocsample.c): a sampled block freed. */
typedef struct rrec_free {
    uint8_t kind; /* RREC_FREE */
    uint8_t pad[7];
    uint64_t t_ns; /* monotonic, since the samples' zero (sighandler_state.t0_ns) */
    uint64_t addr;
} rrec_free;

/* RREC_SPAN_START, RREC_SPAN_STOP (spans.c): the record, followed by
 * its strings back to back: name, trace_id, parent_id, base_id, info (a stop has only
 * info).  t_ns is CLOCK_MONOTONIC less the samples' zero, like a sample's. */
typedef struct rrec_span {
    uint8_t kind;
    uint8_t pad;
    uint16_t name_len, trace_id_len, parent_id_len, base_id_len, info_len;
    uint32_t tid;
    uint64_t t_ns;
    uint64_t span_id;
    uint64_t parent_span;
    char data[];
} rrec_span;

#endif
