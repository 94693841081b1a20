/*
 * wall: the wall-clock pass (wall.h).  NOT A SIGNAL HANDLER: wall_sample_threads runs on
 * the sampler's own thread (sampler.c's wall thread, one only), which reads the other
 * threads' stacks while they keep running, and sends them no signal (a thread found
 * running is asked of its own CPU timer, threadtimer_ask, which sampler.c arms).  It
 * still keeps the sample path's discipline, because it reads the interpreter without the
 * GIL and shares the rings, the code table and the code ids with the signal handler: no
 * malloc, no lock, no stdio, no Python C-API, errno saved around the one system call
 * that sets it, every pointer into the interpreter read through safe_read.h inside a
 * guarded region.  What it calls:
 *   pyread.h, walk, codeid_of, codeid_abandon    the sample path's readers (sigsafe)
 *   asynctask_running, _chain, _insert           the running asyncio task (sigsafe), and
 *   asynctask_waiting, _suspended                the suspended ones (wall mode)
 *   threadtimer_ask, threadtimer_take_asked_tid, threadtimer_take_ended_asked
 *                                                atomics on threadtimer's slot table
 *   gilstate_watch, gilstate_waiters             atomics on gilstate's table
 *   codetable_enter/leave                        atomics (codetable.c)
 *   ring_reserve/commit/cancel, sampleout_*      ours: the rings and counters
 *   clock_gettime(CLOCK_MONOTONIC)               the vDSO
 *   clock_gettime(a thread's CPU clock)          a system call (on signal-safety(7))
 *   pthread_tid_read                             a guarded read of a glibc descriptor
 *   syscall(SYS_tgkill, pid, tid, 0), getpid     existence tests of the threads listed
 *   memset                                       our static table, a snapshot's end record
 *   open, read, close of /proc/self/task/TID/stat a snapshot's thread states (all three
 *                                                on signal-safety(7))
 *
 * Its scratch (wall_frames, wall_raws, the thread lists and keep_live_threads' cache)
 * is static: one pass at a time, the wall thread's or the control thread's snapshot
 * (wall_snapshot), which take turns through `busy`.
 */
#include "wall.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <time.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/clock.h"
#include "asynctask.h"
#include "codeid.h"
#include "codetable.h"
#include "gilstate.h"
#include "pthread_tid.h"
#include "pyread.h"
#include "safe_read.h"
#include "sampleout.h"
#include "threadtimer.h"
#include "walk.h"
#include "sigstate.h"
#include "rrec.h"

/* The scratch of the one pass that runs at a time. */
static uintptr_t wall_frames[RREC_MAX_DEPTH];
static frame_raw wall_raws[RREC_MAX_DEPTH];
static uint64_t wall_digests[RREC_MAX_DEPTH];
static _Atomic int busy; /* a pass (wall thread) or a snapshot (control thread) runs */

/* A stack that changed under the read: the thread is running Python right now.  Its
 * innermost frame, read again from the thread state, is recorded alone, under the
 * unreadable marker: the function running is known, its callers are not.  (Reading
 * again until a whole stack holds still would favour the moments it does, such as long
 * C calls, over the Python code that keeps changing it: the functions' shares would be
 * wrong, not just their callers.)  Returns 1 when stack st holds that frame. */
static int innermost_only(walk_out *o, uintptr_t ts, rrec_stack *st)
{
    const pyabi *a = o->a;
    uintptr_t frame = pyread_top_frame(a, ts);
    for (unsigned hidden = 0; frame && hidden < 8; hidden++) {
        frame_raw f;
        uintptr_t code;
        int32_t offset;
        if (pyread_frame(a, frame, &f) < 0)
            return 0;
        if (pyread_frame_popped(a, &f)) { /* 3.14+: returning; its caller goes on */
            frame = f.back;
            continue;
        }
        int shown = pyread_frame_view(a, &f, &code, &offset);
        if (shown < 0)
            return 0;
        if (shown) {
            int changed = 0;
            uint32_t id = codeid_of(a, o->t, code, frame, &f, &changed);
            if (changed || id == PYPROF_CODE_UNREADABLE)
                return 0;
            rframe *fr = rrec_frames(st);
            fr[0].code_id = id;
            fr[0].offset = offset;
            st->nframes = 1;
            st->keep_inner = 1;
            st->cut = 0;
            st->unreadable_tail = 1;
            return 1;
        }
        frame = f.back;
    }
    return 0;
}

/* The threads waiting for the GIL (gilstate_waiters), copied at the start of a pass. */
static uintptr_t waiting[GILSTATE_WAITERS];
static unsigned nwaiting;

/* Where thread state `ts` (of pthread_t `pth`) stands with the GIL: its holder, waiting
 * for it (with gilstate's wrappers), or neither.  Inside a guarded region. */
static uint8_t gil_of(const pyabi *a, uintptr_t ts, uintptr_t pth)
{
    if (pyread_gil_holder(a) == ts)
        return PYPROF_GIL_HELD;
    if (!gilstate_installed())
        return PYPROF_GIL_NOT_HELD;
    for (unsigned i = 0; i < nwaiting; i++)
        if (waiting[i] == pth)
            return PYPROF_GIL_WAIT;
    return PYPROF_GIL_OTHER;
}

/* The CPU time thread `tid` (of this process) has used, in nanoseconds, to the
 * nanosecond: the kernel adds the running slice's share when the thread is on a CPU now.
 * 0 when it cannot be read (the thread has ended). */
static uint64_t thread_cpu_ns(uint32_t tid)
{
    int saved = errno;
    uint64_t ns = clock_thread_ns(tid);
    errno = saved;
    return ns;
}

/* The asyncio task thread state `ts`'s loop is running, with its awaiters, put into
 * stack st (room for `room` frames) right outside the task's outermost coroutine, when
 * that coroutine's frame is one the walk recorded (wall_frames).  Only for a thread
 * that keeps still while it is read (the caller checks that after, and drops the sample
 * otherwise), as the handler does for its own thread.  Inside a guarded region. */
static void add_task(int t, uintptr_t ts, rrec_stack *st, unsigned room)
{
    const pyabi *a = &sighandler_g.abi;
    uintptr_t tasks[ASYNCTASK_CANDIDATES], frames[ASYNCTASK_CANDIDATES];
    unsigned n = asynctask_running(a, ts, tasks, frames);
    unsigned kept = st->cut ? st->keep_inner : st->nframes;
    for (unsigned i = 0; n && i < kept; i++) {
        for (unsigned k = 0; k < n; k++) {
            if (wall_frames[i] != frames[k])
                continue;
            rframe chain[ASYNCTASK_MAX_FRAMES];
            asynctask_insert(st, i, chain,
                             asynctask_chain(a, t, tasks[k], chain, room - st->nframes));
            return;
        }
    }
}

/* Tasks' list nodes followed per second, on average, at most (twice per task and look):
 * with more tasks than that allows at the pass's rate, the suspended tasks are looked
 * at every few passes only, each sample standing for those passes too. */
#define WAITING_NODES_PER_S 200000u
#define WAITING_EVERY_MAX 1000u

/* The asyncio tasks suspended in thread state `ts`'s event loop (OS thread
 * `tid`), one sample each (every stride-th of them standing for `stride`, when there are
 * more than ASYNCTASK_WAITING_MAX), each also standing for the `every` passes since the
 * last look, in the AWAIT state: their coroutines down to the innermost `await` and the
 * task frames of them and their awaiters.  Adds the tasks listed to *listed; returns the
 * samples taken. */
static unsigned sample_waiting(int t, uintptr_t ts, uint32_t tid, unsigned pass, unsigned every,
                               unsigned *listed)
{
    static uintptr_t tasks[ASYNCTASK_WAITING_MAX];
    sighandler_state *g = &sighandler_g;
    unsigned n = 0, stride = 1, taken = 0, here = 0;
    safe_jmpbuf jb;
    if (SAFE_GUARD_BEGIN(jb)) {
        n = asynctask_waiting(ts, tasks, ASYNCTASK_WAITING_MAX, pass, &stride, &here);
        SAFE_GUARD_END();
    }
    *listed += here;
    for (unsigned i = 0; i < n; i++) {
        rrec_sample *r = sampleout_reserve(RREC_SAMPLE, ASYNCTASK_MAX_FRAMES, 0);
        if (!r) {
            sampleout_drop_n(PYPROF_DROP_RING_FULL, (uint64_t)(n - i) * stride * every);
            break;
        }
        rrec_stack *st = rrec_stack_of(&r->head);
        unsigned nf = asynctask_suspended(&g->abi, t, tasks[i], rrec_frames(st),
                                          ASYNCTASK_MAX_FRAMES);
        if (!nf) {
            ring_cancel(&g->samples, r);
            continue;
        }
        st->nframes = (uint16_t)nf;
        st->keep_inner = (uint16_t)nf;
        sampleout_commit_sample(r, tid, stride * every - 1, 0, PYPROF_GIL_AWAIT);
        taken++;
    }
    return taken;
}

/* What one try at a thread's stack came to. */
enum { TRY_TAKEN, TRY_NONE, TRY_CHANGED, TRY_UNREADABLE, TRY_RUNNING };

/* How a try shows that the thread kept its stack still while it was read. */
enum {
    STILL_UNSHOWN, /* it does not: the walk's own checks only */
    STILL_CPU,     /* its CPU clock did not move (any version) */
    STILL_GIL      /* it was not the GIL's last holder and the GIL passed to no other
                    * thread meanwhile (3.7+): no Python code of its own ran, and no
                    * system call is made */
};

/* One try at reading thread state `ts` (OS thread `tid`), whose thread keeps running:
 * the walk (hand over hand, see walk), then the code objects of the recorded frames,
 * each looked up while the frame that holds it is checked to still hold it.
 *
 * With STILL_CPU, the thread's CPU clock is read before and after: a thread that used
 * no CPU time at all in between ran no instruction, so the stack read is the one it
 * had; one that did comes to TRY_RUNNING, whatever was read.  With STILL_GIL, the GIL
 * is read before and after: only the thread holding it runs Python code, so a thread
 * that was not its last holder, while it passed to no other thread, changed no frame of
 * its own (it may run C code meanwhile); a try that cannot show that comes to
 * TRY_RUNNING too (then STILL_CPU decides).  With STILL_UNSHOWN, the walk's own
 * checks are all there is, and they do not make a read that races the thread whole:
 * 3.11+ frames live in the thread's own stack of frames, where a frame's memory holds
 * a frame of the same depth or none and its caller link leads to the frames below, and
 * heap frames (2.7-3.10) are read hand over hand, but either read may cross returns and
 * calls and join frames of two moments (a recursion's callers read from a later,
 * shallower one).  A stack found changing keeps its innermost frame only, under the
 * unreadable marker. */
static int try_other(int t, uintptr_t ts, uint32_t tid, uintptr_t pth, uint32_t *depth,
                     int kind, int still, uint32_t snap_id, uint8_t snap_flags,
                     uint8_t os_state)
{
    sighandler_state *g = &sighandler_g;
    const pyabi *a = &g->abi;
    unsigned max_depth = g->max_depth < RREC_MAX_DEPTH ? g->max_depth : RREC_MAX_DEPTH;
    uint64_t cpu0 = 0;
    if (still == STILL_CPU && (cpu0 = thread_cpu_ns(tid)) == 0)
        return TRY_NONE; /* the thread has ended */
    void *volatile r = NULL;
    safe_jmpbuf jb;
    if (!SAFE_GUARD_BEGIN(jb)) {
        /* A read failed: memory that moved on under the read, most likely. */
        codeid_abandon();
        if (r)
            ring_cancel(&g->samples, r);
        if (still == STILL_GIL)
            return TRY_RUNNING;
        return still == STILL_CPU && thread_cpu_ns(tid) != cpu0 ? TRY_RUNNING : TRY_UNREADABLE;
    }
    uintptr_t last0 = 0;
    uint64_t switches0 = 0;
    int locked0;
    if (still == STILL_GIL && (!pyread_gil(a, &last0, &switches0, &locked0) || last0 == ts)) {
        SAFE_GUARD_END();
        return TRY_RUNNING;
    }
    atomic_thread_fence(memory_order_acquire); /* the GIL read before the frames */
    uintptr_t frame = pyread_top_frame(a, ts);
    if (!frame) {
        SAFE_GUARD_END();
        return TRY_NONE;
    }
    /* Room for the thread's asyncio task chain too. */
    unsigned extra = ASYNCTASK_MAX_FRAMES;
    r = sampleout_reserve(kind, max_depth + extra, 0);
    if (!r) {
        SAFE_GUARD_END();
        sampleout_drop(PYPROF_DROP_RING_FULL);
        return TRY_NONE;
    }
    walk_out o = {.a = a,
                  .t = t,
                  .frames = wall_frames,
                  .raws = wall_raws,
                  .digests = wall_digests,
                  .ts = ts,
                  /* A thread that holds still needs no hand-over-hand read. */
                  .strict = still == STILL_UNSHOWN && a->frame_kind == PYABI_FRAME_OBJECT};
    rrec_stack *st = rrec_stack_of(r);
    int rc = walk(&o, frame, st, max_depth);
    int changed = 0;
    for (unsigned i = 0; rc == WALK_OK && i < st->nframes; i++) {
        /* By the identity read with the frame: the thread went on meanwhile, and may
         * have freed that code object and made another at its address. */
        uint32_t id = codeid_of_digest(a, t, wall_raws[i].code, wall_digests[i], wall_frames[i],
                                       &wall_raws[i], &changed);
        if (changed)
            rc = WALK_CHANGED;
        else if (id == PYPROF_CODE_UNREADABLE)
            rc = WALK_BAD; /* no name for it: the stack is not recorded half-named */
        rrec_frames(st)[i].code_id = id;
    }
    if (rc == WALK_OK && extra && still != STILL_UNSHOWN)
        add_task(t, ts, st, max_depth + extra);
    if (still == STILL_GIL) {
        atomic_thread_fence(memory_order_acquire); /* the frames read before the GIL */
        uintptr_t last;
        uint64_t switches;
        int locked;
        if (rc != WALK_OK || !pyread_gil(a, &last, &switches, &locked) || last != last0 ||
            switches != switches0) {
            SAFE_GUARD_END();
            ring_cancel(&g->samples, r);
            return TRY_RUNNING;
        }
    }
    if (still == STILL_CPU && thread_cpu_ns(tid) != cpu0) {
        SAFE_GUARD_END();
        ring_cancel(&g->samples, r);
        return TRY_RUNNING;
    }
    for (int i = 0; rc == WALK_CHANGED && i < 3; i++)
        if (innermost_only(&o, ts, st))
            rc = WALK_OK;
    uint8_t gil = kind == RREC_SAMPLE ? gil_of(a, ts, pth) : PYPROF_GIL_UNKNOWN;
    SAFE_GUARD_END();
    if (rc != WALK_OK) {
        ring_cancel(&g->samples, r);
        return rc == WALK_CHANGED ? TRY_CHANGED : TRY_UNREADABLE;
    }
    if (st->nframes == 0 && !st->unreadable_tail) {
        /* Only hidden frames: C code entering or leaving Python. */
        ring_cancel(&g->samples, r);
        return TRY_NONE;
    }
    /* Never native (the stack's nnative stays 0), and no RFRAME_RUN_START marks
     * (walk_out.runs is 0): a thread that keeps running cannot be unwound from here. */
    if (kind == RREC_SNAP) {
        rrec_snap *sn = r;
        sn->snap_id = snap_id;
        sn->flags = (uint8_t)(snap_flags |
                              (st->unreadable_tail && st->nframes == 1 ? PYPROF_SNAP_F_CHANGED
                                                                       : 0));
        sn->os_state = os_state;
        *depth = sampleout_commit(&sn->head, tid);
        return TRY_TAKEN;
    }
    /* A thread found still takes over the samples its timer was asked for and has not
     * taken yet (it stopped running first). */
    uint32_t asked = still != STILL_UNSHOWN && g->wall_timed ? threadtimer_take_asked_tid(tid)
                                                             : 0;
    *depth = sampleout_commit_sample(r, tid, THREADTIMER_ASKED(asked), asked, gil);
    return TRY_TAKEN;
}

static uintptr_t gil_holder_now(const pyabi *a);

/* Where a thread found running stands with the GIL, for the sample asked of its timer. */
static int ask_state(uintptr_t ts, uintptr_t pth)
{
    if (gil_holder_now(&sighandler_g.abi) == ts)
        return THREADTIMER_HELD;
    for (unsigned i = 0; i < nwaiting; i++)
        if (waiting[i] == pth)
            return THREADTIMER_WAIT; /* in the GIL's wait, between two sleeps */
    return THREADTIMER_OTHER;
}

/* One sample of a thread.  Read while it keeps still, shown by the GIL (3.7+: no system
 * call) or else its CPU clock (with `timed`); a thread found running is asked of its
 * timer (with `timed`: *running is set) or, with none, read as it runs.  Returns the
 * stack's depth, 0 when no sample was taken here. */
static uint32_t sample_other(int t, uintptr_t ts, uint32_t tid, uintptr_t pth, int timed,
                             int *running)
{
    uint32_t depth = 0;
    int rc = TRY_RUNNING;
    *running = 0;
    if (sighandler_g.abi.gil_holder >= 0)
        rc = try_other(t, ts, tid, pth, &depth, RREC_SAMPLE, STILL_GIL, 0, 0, 0);
    if (rc == TRY_RUNNING && timed)
        rc = try_other(t, ts, tid, pth, &depth, RREC_SAMPLE, STILL_CPU, 0, 0, 0);
    if (rc == TRY_RUNNING && timed && threadtimer_ask(tid, ask_state(ts, pth)) == 0) {
        *running = 1; /* its timer's next signal takes the sample */
        return 0;
    }
    if (rc == TRY_RUNNING) /* no timer of its own: read as it runs */
        rc = try_other(t, ts, tid, pth, &depth, RREC_SAMPLE, STILL_UNSHOWN, 0, 0, 0);
    if (rc == TRY_CHANGED)
        sampleout_drop(PYPROF_DROP_CHANGING);
    else if (rc == TRY_UNREADABLE)
        sampleout_drop(PYPROF_DROP_UNREADABLE);
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
static void keep_live_threads(uintptr_t *ts_of, uint32_t *tid_of, uintptr_t *pth_of,
                              unsigned *n)
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
        pth_of[kept] = pth_of[i];
        kept++;
    }
    *n = kept;
}

enum { MAX_THREADS = 4096 };
static uintptr_t ts_of[MAX_THREADS];
static uint32_t tid_of[MAX_THREADS];
static uintptr_t pth_of[MAX_THREADS]; /* the thread's pthread_t (thread_id) */

/* The main interpreter's thread states and their threads, into ts_of/tid_of: how many,
 * or -1 when the interpreter is not running. */
static int list_threads(void)
{
    const pyabi *a = &sighandler_g.abi;
    volatile unsigned n = 0;
    safe_jmpbuf jb;
    if (!SAFE_GUARD_BEGIN(jb)) {
        /* The list changed under us: the threads found so far. */
        sampleout_drop(PYPROF_DROP_UNREADABLE);
        goto listed;
    }
    if (!pyread_interpreter_ready(a)) {
        SAFE_GUARD_END();
        return -1;
    }
    /* The main interpreter (3.7+; the newest on 2.7/3.6, which have no pointer to it). */
    uintptr_t interp = a->runtime ? safe_ptr(a->runtime + (uintptr_t)a->rt_interp_main)
                                  : (uintptr_t)a->interp_head();
    uintptr_t ts = interp ? safe_ptr(interp + (uintptr_t)a->is_tstate_head) : 0;
    for (unsigned guard = 0; ts && n < MAX_THREADS && guard < 100000; guard++) {
        uint32_t tid = tstate_tid(a, ts);
        if (tid) {
            ts_of[n] = ts;
            tid_of[n] = tid;
            pth_of[n] = safe_ptr(ts + (uintptr_t)a->ts_thread_id);
            n++;
        }
        ts = safe_ptr(ts + (uintptr_t)a->ts_next);
    }
    SAFE_GUARD_END();
listed:
    keep_live_threads(ts_of, tid_of, pth_of, (unsigned *)&n);
    return (int)n;
}

/* Tells gilstate where the GIL is, and copies the threads waiting for it now.  (The
 * guard's noreturn jump: see gil_holder_now.) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
static void gil_waiters_now(const pyabi *a)
{
    nwaiting = 0;
    if (!gilstate_installed())
        return;
    volatile uintptr_t holder = 0;
    safe_jmpbuf jb;
    if (SAFE_GUARD_BEGIN(jb)) {
        holder = pyread_gil_holder_addr(a);
        SAFE_GUARD_END();
    }
    if (holder)
        gilstate_watch(holder - 8);
    nwaiting = gilstate_waiters(waiting, GILSTATE_WAITERS);
}
#pragma GCC diagnostic pop

unsigned wall_sample_threads(int timed)
{
    sighandler_state *g = &sighandler_g;
    if (atomic_exchange(&busy, 1))
        return 0; /* a snapshot is being taken: this period's pass is skipped */
    int listed = list_threads();
    if (listed < 0) {
        atomic_store(&busy, 0);
        sampleout_drop(PYPROF_DROP_NOT_READY);
        return 0;
    }
    unsigned n = (unsigned)listed, taken = 0;
    if (timed) /* asked of a thread's timer, but the thread ended first */
        sampleout_drop_n(PYPROF_DROP_ENDED_RUNNING, threadtimer_take_ended_asked());
    gil_waiters_now(&g->abi);
    int t = codetable_enter();
    for (unsigned i = 0; i < n; i++) {
        uint64_t t0 = clock_mono_ns();
        int running;
        uint32_t depth = sample_other(t, ts_of[i], tid_of[i], pth_of[i], timed, &running);
        if (running) {
            taken++; /* its own timer's signal samples it, and counts that */
            continue;
        }
        atomic_fetch_add_explicit(&g->signals, 1, memory_order_relaxed);
        if (depth) {
            sampleout_cost(depth, clock_mono_ns() - t0);
            taken++;
        }
    }
    /* The suspended asyncio tasks, every `every` passes (more often than that, the walk
     * of long task lists would cost more than the rest of the pass). */
    static unsigned pass, every = 1;
    if (++pass % every == 0) {
        unsigned tasks = 0;
        for (unsigned i = 0; i < n; i++)
            sample_waiting(t, ts_of[i], tid_of[i], pass / every, every, &tasks);
        uint64_t period = g->period_ns ? g->period_ns : 1;
        uint64_t per_s = 2ull * tasks * (1000000000ull / period + 1);
        uint64_t want = (per_s + WAITING_NODES_PER_S - 1) / WAITING_NODES_PER_S;
        every = want < 1 ? 1 : want > WAITING_EVERY_MAX ? WAITING_EVERY_MAX : (unsigned)want;
    }
    codetable_leave(t);
    atomic_store(&busy, 0);
    return taken;
}

/* The kernel's state letter of thread `tid` ('R', 'S', 'D', ...), 0 when unknown: the
 * field after the command name, which ends at the last ')'. */
static uint8_t os_state_of(uint32_t tid)
{
    char path[64], buf[512];
    int saved = errno;
    /* "/proc/self/task/" then the decimal tid, without snprintf. */
    static const char pre[] = "/proc/self/task/";
    char digits[12];
    int nd = 0;
    do {
        digits[nd++] = (char)('0' + tid % 10);
        tid /= 10;
    } while (tid && nd < (int)sizeof digits);
    size_t len = sizeof pre - 1;
    memcpy(path, pre, len);
    while (nd)
        path[len++] = digits[--nd];
    memcpy(path + len, "/stat", 6);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t r = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    errno = saved;
    if (r <= 0)
        return 0;
    uint8_t st = 0;
    for (ssize_t i = r - 1; i >= 0; i--)
        if (buf[i] == ')') {
            if (i + 2 < r)
                st = (uint8_t)buf[i + 2];
            break;
        }
    return st;
}

/* pyread_gil_holder in a guarded region of its own.  (GCC takes the failing reads' noreturn
 * jump for a way out with the guard still set: its dangling-pointer warning is off for
 * this function.) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
static uintptr_t gil_holder_now(const pyabi *a)
{
    volatile uintptr_t holder = 0;
    safe_jmpbuf jb;
    if (SAFE_GUARD_BEGIN(jb)) {
        holder = pyread_gil_holder(a);
        SAFE_GUARD_END();
    }
    return holder;
}
#pragma GCC diagnostic pop

/* Tasks a snapshot takes per thread, at most. */
#define SNAP_TASKS_MAX 1024u

/* A snapshot's entries for the asyncio tasks suspended in thread state `ts`'s loop
 * (3.7+), each flagged PYPROF_SNAP_F_TASK with its task's frames.  Returns how many. */
static unsigned snap_waiting(int t, uintptr_t ts, uint32_t tid, uint32_t snapshot_id)
{
    static uintptr_t tasks[SNAP_TASKS_MAX];
    sighandler_state *g = &sighandler_g;
    unsigned n = 0, stride = 1, listed = 0, taken = 0;
    safe_jmpbuf jb;
    if (SAFE_GUARD_BEGIN(jb)) {
        n = asynctask_waiting(ts, tasks, SNAP_TASKS_MAX, 0, &stride, &listed);
        SAFE_GUARD_END();
    }
    for (unsigned i = 0; i < n; i++) {
        rrec_snap *r = sampleout_reserve(RREC_SNAP, ASYNCTASK_MAX_FRAMES, 0);
        if (!r)
            break;
        unsigned nf = asynctask_suspended(&g->abi, t, tasks[i], rrec_frames(&r->stack),
                                          ASYNCTASK_MAX_FRAMES);
        if (!nf) {
            ring_cancel(&g->samples, r);
            continue;
        }
        r->stack.nframes = (uint16_t)nf;
        r->stack.keep_inner = (uint16_t)nf;
        r->snap_id = snapshot_id;
        r->flags = PYPROF_SNAP_F_TASK;
        sampleout_commit(&r->head, tid);
        taken++;
    }
    return taken;
}

int wall_snapshot(uint32_t snapshot_id)
{
    sighandler_state *g = &sighandler_g;
    const pyabi *a = &g->abi;
    /* The wall thread's pass, if one runs, ends within a period's reads. */
    for (int i = 0; atomic_exchange(&busy, 1); i++) {
        if (i >= 2000)
            return -1;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    if (!atomic_load_explicit(&g->pthread_tid_offset, memory_order_relaxed))
        atomic_store(&g->pthread_tid_offset, pthread_tid_offset());
    int listed = list_threads();
    if (listed < 0) {
        atomic_store(&busy, 0);
        return -1;
    }
    unsigned n = (unsigned)listed;
    uintptr_t gil = gil_holder_now(a);
    gil_waiters_now(a);
    int t = codetable_enter();
    for (unsigned i = 0; i < n; i++) {
        uint8_t flags = gil && ts_of[i] == gil ? PYPROF_SNAP_F_GIL : 0;
        for (unsigned k = 0; k < nwaiting && !flags; k++)
            if (waiting[k] == pth_of[i])
                flags = PYPROF_SNAP_F_GIL_WAIT;
        uint8_t state = os_state_of(tid_of[i]);
        uint32_t depth = 0;
        int rc = TRY_NONE;
        /* A thread found still is read whole; one that keeps running, with the walk's
         * own checks (its innermost frame only when they find it changing). */
        rc = try_other(t, ts_of[i], tid_of[i], pth_of[i], &depth, RREC_SNAP, STILL_CPU,
                       snapshot_id, flags, state);
        for (int k = 0; k < 3 && rc != TRY_TAKEN; k++)
            rc = try_other(t, ts_of[i], tid_of[i], pth_of[i], &depth, RREC_SNAP, STILL_UNSHOWN,
                           snapshot_id, flags, state);
        if (rc == TRY_TAKEN)
            continue;
        /* No Python frame, or none readable: the thread is listed all the same. */
        rrec_snap *r = sampleout_reserve(RREC_SNAP, 0, 0);
        if (!r)
            continue;
        r->snap_id = snapshot_id;
        r->flags = (uint8_t)(flags | (rc == TRY_CHANGED ? PYPROF_SNAP_F_CHANGED : 0));
        r->os_state = state;
        sampleout_commit(&r->head, tid_of[i]);
    }
    unsigned entries = n;
    for (unsigned i = 0; i < n; i++)
        entries += snap_waiting(t, ts_of[i], tid_of[i], snapshot_id);
    codetable_leave(t);
    rrec_snap_end *end = ring_reserve(&g->samples, sizeof *end);
    if (end) {
        memset(end, 0, sizeof *end);
        end->head.kind = RREC_SNAP_END;
        end->snap_id = snapshot_id;
        end->nthreads = entries;
        end->t_ns = sampleout_now_ns();
        ring_commit(&g->samples, end);
    }
    atomic_store(&busy, 0);
    return end ? 0 : -1;
}

void wall_forget_in_child(void) { atomic_store(&busy, 0); }
