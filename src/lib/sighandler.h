/*
 * sighandler: the sampling signal handler, the records the sample path commits to the
 * rings, and the state it reads, `sighandler_state`.  Its one instance, sighandler_g, is
 * sampler.c's: defined there, set up before the first signal can arrive and torn down
 * only after sampler_stop's quiesce.  What the handler
 * reaches is in modules of its own: the frame walk (walk.h), code ids and CODE records
 * (codeid.h), the code table and its generations (codetable.h), the interpreter's
 * readers (pyread.h), the SAMPLE commit and counters (sampleout.h).  The wall-clock
 * pass, which reads the same way from the sampler's own thread, is wall.h.
 */
#ifndef PYPROF_SIGHANDLER_H
#define PYPROF_SIGHANDLER_H

#include <signal.h>
#include <stdint.h>

#include <pyprof/format.h>

#include "pyabi.h"
#include "ring.h"

/* Records the handler commits.  Frames run innermost first.  The control thread's
 * snapshot (wall_snapshot) commits one RREC_SNAP per thread, in the sample layout, then
 * an RREC_SNAP_END (nframes 0, `tid` the threads listed), all with its snap_id.  The
 * program's spans (spans.h) go in the sample ring too, as RREC_SPAN_START and
 * RREC_SPAN_STOP records in their own layout (rrec_span); every record of the sample
 * ring starts with its kind byte. */
enum {
    RREC_SAMPLE = 1,
    RREC_CODE = 2,
    RREC_SNAP = 3,
    RREC_SNAP_END = 4,
    RREC_SPAN_START = 5,
    RREC_SPAN_STOP = 6,
    RREC_ALLOC = 7, /* an allocation sample: the sample layout with the alloc_* fields */
    RREC_FREE = 8   /* a sampled block freed: rrec_free (allocsample.h) */
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
    uint64_t t_ns;        /* monotonic, since sighandler_state.t0_ns */
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
#define SIGHANDLER_MAX_DEPTH 4096u

typedef struct sighandler_state {
    _Atomic int enabled;  /* handler does work only while set */
    _Atomic int inflight; /* handlers running now (quiesce waits for 0) */
    pyabi abi;
    ring samples; /* rrec_sample */
    ring codes;   /* rrec_code */
    unsigned max_depth;
    uint64_t period_ns;   /* for the handler's own time budget */
    uint64_t t0_ns;       /* CLOCK_MONOTONIC at start */
    uint64_t perf_cookie; /* si_perf_data tag of our perf events (threadtimer.h) */
    int sample_signal;    /* SIGTRAP (perf) or SIGPROF */
    /* Wall mode with a CPU timer per thread: a timer's signal samples its thread only
     * for the passes that found it running (threadtimer_ask; wall.c). */
    int wall_timed;
    _Atomic uint64_t drops[PYPROF_DROP_COUNT];
    _Atomic uint64_t signals;
    _Atomic uint64_t handler_ns; /* time spent inside the handler */
    /* Samples by stack depth and handler time (PYPROF_COST_* buckets). */
    _Atomic uint64_t cost[PYPROF_COST_NDEPTH][PYPROF_COST_NTIME];
    _Atomic int pthread_tid_offset; /* where glibc's thread descriptor keeps the tid, or 0 */
    /* Native mode (PYPROF_NATIVE): set before the first signal; each sample then also
     * walks the native stack (native.h) into up to native_max addresses. */
    int native;
    unsigned native_max;
    _Atomic uint64_t native_ok, native_truncated, native_skipped, native_ns;
} sighandler_state;

/* Defined in sampler.c (see the top of this header). */
extern sighandler_state sighandler_g;

/* [sigsafe] The SA_SIGINFO handler for the sampling signals. */
void sighandler_on_signal(int sig, siginfo_t *info, void *uc);

/* [sigsafe] An allocation sample (allocsample.c): the calling thread's own Python stack
 * (no frame when it runs none), and in native mode its native chain from `ret` (the
 * return address of the allocator's caller) outwards, committed as an RREC_ALLOC of
 * `size` bytes at `addr`.
 * Returns 1 when committed, 0 when sampling is off (no log is written), -1 when the
 * record was lost (the ring is full, or the thread is inside the sampling handler). */
int sighandler_sample_alloc(uint64_t size, uintptr_t addr, int domain, int flags,
                            uintptr_t ret);

/* [sigsafe] The calling thread's kernel thread id, cached. */
uint32_t sighandler_tid(void);

/* [sigsafe] 1 when the calling thread is inside the handler.  Code that runs nested in
 * it (a program's own signal handler that calls _exit, say) must not wait for it. */
int sighandler_inside(void);

/* [not sigsafe] Forgets the cached thread id (in a fork child). */
void sighandler_reset_tid(void);

#endif
