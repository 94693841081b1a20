/*
 * sighandler: THE SIGNAL PATH.  Everything in this file runs inside the sampling signal
 * handler, on whatever thread the signal interrupted, at any instruction of the program
 * (or, for sighandler_sample_alloc, inside the program's allocation calls, possibly in
 * its own signal handlers: the same path under the same rules).
 * It is async-signal-safe: no malloc, no locks, no stdio, no Python C-API, errno saved and
 * restored.  What it calls of the library: the frame walk (walk.c: pyread.h's guarded
 * readers, codeid.c, codetable.c), the running asyncio task and its awaiters (asynctask.c), the
 * sample's commit and counters (sampleout.c, the ring), the thread's timer (threadtimer.c: its
 * credit, the samples wall mode asked of it), calib.c's counter, gilstate.c's flag, native.c's
 * walk (native mode), and sigdisp.c for a trap that is not ours (the program's own handler,
 * called as the kernel would have).  Everything any of them may call outside the library, and
 * why that is safe, is src/lib/sigsafe.list: `make check-sigsafe` reads the built objects and
 * fails on any other call reachable from this file's entry points.
 *
 * Pointers into the interpreter are followed only through safe_read.h, inside one guarded
 * region per sample: a fault or an implausible pointer abandons the sample (counted as
 * UNREADABLE), never the process.  Every code object is checked to be one
 * (ob_type == &PyCode_Type) before anything of it is used.
 *
 * What a sample is.  The interrupted thread's own Python stack: the thread state is
 * found from the thread itself (TSS key on 3.7+, GIL holder or thread list on 2.7/3.6),
 * so in cpu mode each thread is charged for the CPU it used.  Frames are recorded as
 * (code id, instruction offset) by the walk (walk.c); code ids come from a table keyed by
 * the code object's address plus a digest of its name, file, line table and first line
 * (codeid.c, codetable.c), so an address reused by a new code object gets a new id.  The
 * first time a code object is seen, its names and line table are copied into a CODE
 * record right then, while the frame that runs it keeps it alive: names are never read
 * from a pointer later.  The wall-clock pass, which is not a signal handler, is wall.c.
 */
#include "sighandler.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/clock.h"
#include "asynctask.h"
#include "calib.h"
#include "codeid.h"
#include "codetable.h"
#include "gilstate.h"
#include "native.h"
#include "pyread.h"
#include "safe_read.h"
#include "sampleout.h"
#include "sigdisp.h"
#include "threadtimer.h"
#include "walk.h"
#include "sigstate.h"
#include "rrec.h"

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
/* Frames this thread's last sample recorded (0: none yet): the room its next record
 * asks of the ring (see sample_self). */
static __thread uint32_t tls_last_frames __attribute__((tls_model("initial-exec")));

uint32_t sighandler_tid(void)
{
    if (!tls_tid)
        tls_tid = (uint32_t)syscall(SYS_gettid);
    return tls_tid;
}

void sighandler_reset_tid(void) { tls_tid = 0; }

/* ---- the sample --------------------------------------------------------------------- */

/* This thread's thread state as the last sample found it (3.14+), checked before use. */
static __thread uintptr_t tls_tstate __attribute__((tls_model("initial-exec")));

/* The thread state of this thread in the list starting at `ts` (by pthread_t: a thread
 * state carries its thread's pthread_self(), which a raw fork's child keeps, unlike
 * native_thread_id); one that has frames is preferred when there are two. */
static uintptr_t tstate_in_list(const pyabi *a, uintptr_t ts, uintptr_t self)
{
    uintptr_t found = 0;
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

/* 3.14+: 3.15 has no thread-state key, and 3.14's is not published, so the main
 * interpreter's thread list is searched, once per thread while the state found stays
 * listed: a state still carrying this thread's id and linked from its predecessor (or
 * the list's head) is this thread's, since a deleted state is unlinked first. */
static uintptr_t this_tstate_listed(const pyabi *a)
{
    uintptr_t self = (uintptr_t)pthread_self();
    uintptr_t interp = safe_ptr(a->runtime + (uintptr_t)a->rt_interp_main);
    if (!interp)
        return 0;
    uintptr_t head = interp + (uintptr_t)a->is_tstate_head;
    uintptr_t ts = tls_tstate;
    if (ts && safe_u64(ts + (uintptr_t)a->ts_thread_id) == self &&
        safe_ptr(ts + (uintptr_t)a->ts_interp) == interp) {
        uintptr_t prev = safe_ptr(ts + (uintptr_t)a->ts_prev);
        if (prev ? safe_ptr(prev + (uintptr_t)a->ts_next) == ts : safe_ptr(head) == ts)
            return ts;
    }
    ts = tstate_in_list(a, safe_ptr(head), self);
    tls_tstate = ts;
    return ts;
}

/* This thread's PyThreadState, or 0. */
static uintptr_t this_tstate(const pyabi *a)
{
    if (a->runtime && a->rt_tss < 0)
        return this_tstate_listed(a);
    if (a->runtime) {
        uintptr_t tss = a->runtime + (uintptr_t)a->rt_tss;
        if (!safe_i32(tss + PYABI_TSS_INITIALIZED))
            return 0;
        return (uintptr_t)pthread_getspecific((pthread_key_t)safe_u32(tss + PYABI_TSS_KEY));
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
    return tstate_in_list(a, safe_ptr(interp + (uintptr_t)a->is_tstate_head), self);
}

/* What an allocation sample adds to the stack (NULL for a CPU sample). */
typedef struct alloc_info {
    uint64_t size;
    uintptr_t addr, ret; /* ret: where the allocator returns to in its caller */
    uint8_t domain, flags;
} alloc_info;

/* Commits allocation record r as `al`'s. */
static uint32_t commit_alloc(rrec_alloc *r, const alloc_info *al)
{
    r->domain = al->domain;
    r->flags = al->flags;
    r->size = al->size;
    r->addr = al->addr;
    sampleout_commit(&r->head, sighandler_tid());
    return 1;
}

/* An allocation sample of a thread without a readable Python stack: the record alone. */
static uint32_t commit_alloc_bare(const alloc_info *al, int unreadable)
{
    rrec_alloc *r = sampleout_reserve(RREC_ALLOC, 0, 0);
    if (!r)
        return 0;
    r->stack.unreadable_tail = (uint8_t)unreadable;
    return commit_alloc(r, al);
}

/* One sample of the calling thread's own Python stack (the signal handler, or an
 * allocation hook: either way the thread is the one running, so its stack cannot change
 * under the read).  Table generation `t` is held by the caller.  With `al`, an allocation
 * sample, kept even without Python frames; without, a CPU sample.  Returns the stack's
 * depth (an allocation sample: at least 1), 0 when no sample was taken. */
static uint32_t sample_self(int t, uintptr_t pc, const alloc_info *al, uint32_t repeat,
                            uint32_t how)
{
    sighandler_state *g = &sighandler_g;
    const pyabi *a = &g->abi;

    /* Assigned between the setjmp and a possible longjmp, so volatile (C11 7.13.2.1). */
    void *volatile r = NULL;
    safe_jmpbuf jb;
    if (!SAFE_GUARD_BEGIN(jb)) {
        /* A read failed: give up the sample and any half-made CODE record. */
        codeid_abandon();
        if (r)
            ring_cancel(&g->samples, r);
        if (al)
            return commit_alloc_bare(al, 1);
        sampleout_drop_n(PYPROF_DROP_UNREADABLE, 1 + (uint64_t)repeat);
        return 0;
    }
    if (!pyread_interpreter_ready(a)) {
        SAFE_GUARD_END();
        if (al)
            return commit_alloc_bare(al, 0);
        sampleout_drop_n(PYPROF_DROP_NOT_READY, 1 + (uint64_t)repeat);
        return 0;
    }
    uintptr_t ts = this_tstate(a);
    uintptr_t frame = ts ? pyread_top_frame(a, ts) : 0;
    /* Wall mode: this thread runs, so it holds the GIL or runs C code without it. */
    uint8_t gil = PYPROF_GIL_UNKNOWN;
    if (g->wall_timed && !al && frame)
        gil = pyread_gil_holder(a) == ts ? PYPROF_GIL_HELD
              : gilstate_installed()     ? PYPROF_GIL_OTHER
                                         : PYPROF_GIL_NOT_HELD;
    if (!frame) {
        SAFE_GUARD_END();
        if (al)
            return commit_alloc_bare(al, 0);
        sampleout_drop_n(PYPROF_DROP_NO_PYTHON, 1 + (uint64_t)repeat);
        return 0;
    }
    /* Native mode: room for the native chain after the frames, with the handler's own
     * frames and the signal trampoline (an allocation sample: the hooks' frames) that the
     * walk starts with. */
    unsigned native_cap = g->native ? g->native_max + NATIVE_SLACK : 0;
    /* The record asks for room for the frames this thread's last sample had, and a
     * quarter more, not for max_depth: a record of max_depth frames (2 KB at the
     * default) on every sample walks the ring onto a fresh page every other sample,
     * and each first touch of a page is a page fault inside the handler (measured:
     * most of a shallow sample's time until the ring has gone round once).  A stack
     * that outgrew the guess is walked again into a record of max_depth. */
    unsigned room = tls_last_frames ? tls_last_frames + tls_last_frames / 4 + 8 : 0;
    if (room >= g->max_depth)
        room = 0;
    /* An asyncio task running: room for its task frame and its awaiters' frames too. */
    uintptr_t tasks[ASYNCTASK_CANDIDATES], task_frames[ASYNCTASK_CANDIDATES];
    unsigned ntasks = asynctask_running(a, ts, tasks, task_frames);
    unsigned extra = ntasks ? ASYNCTASK_MAX_FRAMES : 0;
    walk_out o = {.a = a, .t = t, .runs = g->native, .find = task_frames, .nfind = ntasks};
    int kind = al ? RREC_ALLOC : RREC_SAMPLE;
    rrec_stack *st;
    int rc;
    for (;;) {
        r = sampleout_reserve(kind, (room ? room : g->max_depth) + extra, native_cap);
        if (!r) {
            SAFE_GUARD_END();
            if (!al)
                sampleout_drop_n(PYPROF_DROP_RING_FULL, 1 + (uint64_t)repeat);
            return 0;
        }
        o.room = room;
        st = rrec_stack_of(r);
        rc = walk(&o, frame, st, g->max_depth);
        if (rc != WALK_ROOM || !room)
            break;
        ring_cancel(&g->samples, r);
        r = NULL;
        room = 0;
    }
    if (rc != WALK_OK) {
        SAFE_GUARD_END();
        ring_cancel(&g->samples, r);
        if (al)
            return commit_alloc_bare(al, 1);
        sampleout_drop_n(PYPROF_DROP_UNREADABLE, 1 + (uint64_t)repeat);
        return 0;
    }
    if (o.found >= 0) {
        /* The task's coroutine is on this stack: its task frame and its awaiters' go
         * right outside it. */
        rframe chain[ASYNCTASK_MAX_FRAMES];
        unsigned cap = (room ? room : g->max_depth) + extra - st->nframes;
        asynctask_insert(st, (unsigned)o.found, chain,
                         asynctask_chain(a, t, tasks[o.found_which], chain, cap));
    }
    SAFE_GUARD_END();
    tls_last_frames = st->nframes;
    if (al) {
        if (g->native) {
            /* The chain from the allocator's caller outwards; its innermost address made
             * one inside the call instruction, as an interrupted one would be exact. */
            uint8_t flags;
            uint64_t *nat = rrec_native(st);
            st->nnative = (uint16_t)native_walk(nat, native_cap, al->ret, &flags);
            if (st->nnative && nat[0] == al->ret)
                nat[0] = al->ret - 1;
            st->native_flags = flags;
        }
        return commit_alloc(r, al);
    }
    if (st->nframes == 0 && !st->unreadable_tail) {
        /* Only hidden frames: C code entering or leaving Python, no Python frame yet. */
        ring_cancel(&g->samples, r);
        sampleout_drop_n(PYPROF_DROP_NO_PYTHON, 1 + (uint64_t)repeat);
        return 0;
    }
    if (g->native) {
        /* Outside the Python walk's guard: native_walk has its own, and a fault inside
         * libunwind costs only the native part. */
        uint8_t flags;
        st->nnative = (uint16_t)native_walk(rrec_native(st), native_cap, pc, &flags);
        st->native_flags = flags;
    }
    return sampleout_commit_sample(r, sighandler_tid(), repeat, how, gil);
}

/* The signal handler's sample of its own thread, standing for `repeat` samples more
 * (asked in the GIL states `how` packs: threadtimer_take_asked); returns its depth (0:
 * none taken). */
static uint32_t take_sample(void *uc, uint32_t repeat, uint32_t how)
{
    int t = codetable_enter();
    uintptr_t pc = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
    uint32_t depth = sample_self(t, pc, NULL, repeat, how);
    codetable_leave(t);
    return depth;
}

int sighandler_sample_alloc(uint64_t size, uintptr_t addr, int domain, int flags, uintptr_t ret)
{
    sighandler_state *g = &sighandler_g;
    if (tls_busy)
        return -1; /* inside the handler, or a nested hook: never re-entered */
    int saved_errno = errno;
    int rc = 0;
    atomic_fetch_add(&g->inflight, 1);
    if (atomic_load(&g->enabled)) {
        tls_busy = 1;
        alloc_info al = {size, addr, ret, (uint8_t)domain, (uint8_t)flags};
        int t = codetable_enter();
        rc = sample_self(t, 0, &al, 0, 0) ? 1 : -1;
        codetable_leave(t);
        tls_busy = 0;
    }
    atomic_fetch_sub(&g->inflight, 1);
    errno = saved_errno;
    return rc;
}

void sighandler_on_signal(int sig, siginfo_t *info, void *uc)
{
    int saved_errno = errno;
    sighandler_state *g = &sighandler_g;
    /* Our tag: si_perf_data of a perf event's trap (threadtimer.h). */
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
    if (sig == SIGTRAP && calib_on_signal()) {
        /* calib.c measuring what a signal costs on a thread of ours: nothing to do. */
        errno = saved_errno;
        return;
    }
    atomic_fetch_add(&g->inflight, 1);
    tls_inside = 1;
    /* Before anything can skip the sample: a thread whose first period just ended must
     * get its steady timer whatever happens to this signal, and its CPU clock is read
     * at every signal.  `owed`: the samples this signal stands for, whole periods of
     * the CPU the kernel accounted to the thread (the timer also counts time the
     * hypervisor stole; the process CPU timer's signal is of the kernel's clock). */
    uint32_t owed = 1;
    if (sig == SIGTRAP)
        owed = threadtimer_on_signal(perf_data, sighandler_tid());
    if (atomic_load(&g->enabled)) {
        atomic_fetch_add_explicit(&g->signals, 1, memory_order_relaxed);
        /* The POSIX timer's expirations while its signal was still pending (a busy
         * machine delays delivery) are merged into this one; the kernel counts them. */
        if (info->si_code == SI_TIMER && info->si_overrun > 0)
            atomic_fetch_add_explicit(&g->drops[PYPROF_DROP_MERGED], (uint64_t)info->si_overrun,
                                      memory_order_relaxed);
        /* Wall mode: the timer samples its thread for the passes that found it running
         * (threadtimer_ask), and only for them. */
        uint32_t asked = owed, how = 0;
        if (g->wall_timed && sig == SIGTRAP) {
            how = threadtimer_take_asked(perf_data, sighandler_tid());
            asked = THREADTIMER_ASKED(how);
        }
        if (!asked) {
            /* cpu mode: less than a period of the thread's own CPU since the last
             * sample (the timer counted stolen time); wall mode: nothing asked, the
             * passes sampled this thread themselves */
        } else if (tls_busy) {
            sampleout_drop_n(PYPROF_DROP_REENTERED, asked);
        } else if (tls_skip) {
            tls_skip--;
            sampleout_drop_n(PYPROF_DROP_THROTTLED, asked);
        } else {
            tls_busy = 1;
            uint64_t t0 = clock_mono_ns();
            uint32_t depth = take_sample(uc, asked - 1, how);
            uint64_t cost = clock_mono_ns() - t0;
            if (depth)
                sampleout_cost(depth, cost);
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
