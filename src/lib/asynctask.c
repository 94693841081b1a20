/*
 * asynctask: a sample's asyncio task and the tasks awaiting it (asynctask.h;
 * docs/ASYNCIO.md).
 *
 * SIGNAL-HANDLER CODE: asynctask_running, asynctask_chain and asynctask_insert run inside
 * the sampling signal handler, on the sampled thread (and asynctask_waiting and
 * asynctask_suspended on the wall-clock pass, under the same rules).  They are
 * async-signal-safe: no malloc, no locks, no stdio, no Python C-API, errno untouched.
 * What they call, and why that is safe:
 *   safe_read.h, pyread.h    guarded reads; asynctask_running runs in the caller's
 *                            guarded region, asynctask_chain opens one of its own inside it
 *   codeid_of, codeid_of_task, codeid_abandon   ours, sigsafe (codeid.c)
 * Only asynctask_publish, asynctask_loops and asynctask_awaiters are not: the cron calls
 * the first once, before the flag that lets the handler read the layout is set (release;
 * the handler's load is an acquire), and the others each round (3.7-3.13), writing
 * tables of atomic words under a sequence count that a reader checks before and after.
 *
 * What is trusted.  The running task comes from the thread's own state (3.14+), read
 * while the thread is stopped in the handler, or is one of _asyncio._current_tasks'
 * values (3.7-3.13, a dict the cron found and checked, of a type checked there too); the task's
 * coroutine is a coroutine because its frame, at coroutine + gen_iframe, is one of the frames
 * the walk met on the thread's stack (the caller checks that before asynctask_chain).  Every
 * awaiting task is checked to be a task (task_is_task, and a type at least a Task's size), each
 * coroutine of its chain to be live and of the running coroutine's type, each frame's code to
 * be a live code object, and each awaited object is read only inside its frame's stack.  The
 * chain is bounded (ASYNCTASK_MAX_AWAITERS tasks, ASYNCTASK_MAX_COROS coroutines each).
 * A suspended task (the wall pass) comes from the thread's own list (3.14+, each node's
 * back link checked) or from the set of all tasks (3.7-3.13: a weak reference's referent
 * of the Task type, of the loop the cron last saw the thread run); its coroutine must be
 * created or suspended, not running or finished.  Before 3.14 a task's awaiter is the
 * cron's last finding (asyncscan.c), checked to be a task before it is followed.
 */
#include "asynctask.h"

#include <stdatomic.h>

#include <pyprof/format.h>

#include "codeid.h"
#include "pyread.h"
#include "safe_read.h"

/* A coroutine's value stack lies within this many bytes of its frame (the stack pointer
 * is checked to, before the awaited object is read below it). */
#define STACK_SPAN 65536u
/* Members of an awaiting set looked at, at most. */
#define SET_PROBE_MAX 64u
/* PySetObject: mask and table; a table entry is {key, hash}. */
#define SET_MASK 32
#define SET_TABLE 40
#define SET_ENTRY 16
/* _PyStackRef's tag bits (3.14+). */
#define STACKREF_TAG 3u
#define TP_BASE 256  /* PyTypeObject.tp_base */
#define WR_OBJECT 16 /* PyWeakReference.wr_object */

static asynctask_layout L;
static _Atomic int ready;

void asynctask_publish(const asynctask_layout *l)
{
    if (atomic_load(&ready))
        return;
    L = *l;
    atomic_store_explicit(&ready, 1, memory_order_release);
}

/* A table of (key, value) words sorted by key, which the cron rewrites (3.7-3.13) and
 * the signal path reads: `seq` is odd while the cron rewrites it, and a reader that saw
 * it change reads nothing. */
typedef struct pairs {
    _Atomic uint32_t seq, n;
    unsigned cap;
    _Atomic uintptr_t *key, *value;
} pairs;

static _Atomic uintptr_t loop_ts[ASYNCTASK_LOOPS_MAX], loop_loop[ASYNCTASK_LOOPS_MAX];
static _Atomic uintptr_t await_child[ASYNCTASK_AWAITERS_MAX],
    await_parent[ASYNCTASK_AWAITERS_MAX];
/* Each thread state's running event loop, and each task's awaiter. */
static pairs loops = {.cap = ASYNCTASK_LOOPS_MAX, .key = loop_ts, .value = loop_loop};
static pairs awaiters = {
    .cap = ASYNCTASK_AWAITERS_MAX, .key = await_child, .value = await_parent};

static void pairs_write(pairs *t, const uintptr_t *key, const uintptr_t *value, unsigned n)
{
    if (n > t->cap)
        n = t->cap;
    atomic_fetch_add_explicit(&t->seq, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (unsigned i = 0; i < n; i++) {
        atomic_store_explicit(&t->key[i], key[i], memory_order_relaxed);
        atomic_store_explicit(&t->value[i], value[i], memory_order_relaxed);
    }
    atomic_store_explicit(&t->n, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->seq, 1, memory_order_release);
}

/* The value of `key` (binary search), 0 when it has none or the table was rewritten
 * meanwhile. */
static uintptr_t pairs_find(pairs *t, uintptr_t key)
{
    uint32_t seq = atomic_load_explicit(&t->seq, memory_order_acquire);
    if (seq & 1)
        return 0;
    unsigned lo = 0, hi = atomic_load_explicit(&t->n, memory_order_relaxed);
    if (hi > t->cap)
        return 0;
    uintptr_t value = 0;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        uintptr_t k = atomic_load_explicit(&t->key[mid], memory_order_relaxed);
        if (k == key) {
            value = atomic_load_explicit(&t->value[mid], memory_order_relaxed);
            break;
        }
        if (k < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&t->seq, memory_order_relaxed) == seq ? value : 0;
}

void asynctask_loops(const uintptr_t *ts, const uintptr_t *loop, unsigned n)
{
    pairs_write(&loops, ts, loop, n);
}

void asynctask_awaiters(const uintptr_t *child, const uintptr_t *parent, unsigned n)
{
    pairs_write(&awaiters, child, parent, n);
}

/* The frame of coroutine `coro`: embedded in it (3.11+), or the heap frame it points to. */
static uintptr_t frame_of(uintptr_t coro)
{
    return L.gen_iframe >= 0 ? coro + (uintptr_t)L.gen_iframe
                             : safe_ptr(coro + (uintptr_t)L.gen_frame);
}

/* Is `o` a task (not a bare Future, which shares the head)?  3.14+ say so in the task;
 * before, its type is _asyncio.Task or a class derived from it directly. */
static int is_task(uintptr_t o)
{
    uintptr_t type = safe_ptr(o + PYABI_OB_TYPE);
    if (L.task_is_task < 0)
        return type == L.task_type || safe_ptr(type + TP_BASE) == L.task_type;
    if (safe_u8(o + (uintptr_t)L.task_is_task) != 1)
        return 0;
    return safe_u64(type + PYABI_TP_BASICSIZE) >= (uint64_t)L.task_size;
}

/* PyDictObject and PyDictKeysObject, for _current_tasks (3.7-3.13; the same constants
 * as pynames.c, which documents where they come from). */
#define DICT_KEYS 32
#define DICT_VALUES 40
#define KEYS36_SIZE 8
#define KEYS36_NENTRIES 32
#define KEYS36_INDICES 40
#define KEYS311_LOG2_INDEX 9
#define KEYS311_KIND 10
#define KEYS311_NENTRIES 24
#define KEYS311_INDICES 32
#define ENTRY_SIZE 24 /* (hash, key, value): a dict whose keys are loops, not str */
#define ENTRY_VALUE 16
#define DICT_ENTRIES_MAX 64u /* entries looked at: one per event loop running */

/* The running tasks in _current_tasks, up to ASYNCTASK_CANDIDATES. */
static unsigned from_dict(uintptr_t *tasks, uintptr_t *frames)
{
    uintptr_t d = L.current_tasks;
    if (safe_ptr(d + DICT_VALUES))
        return 0; /* a split table: not a dict of loops */
    uintptr_t keys = safe_ptr(d + DICT_KEYS), entries;
    uint64_t n;
    if (L.dict_layout == PYABI_DICT_36) {
        uint64_t size = safe_u64(keys + KEYS36_SIZE);
        if (size < 8 || size > (1u << 20) || (size & (size - 1)))
            return 0;
        unsigned width = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
        entries = keys + KEYS36_INDICES + size * width;
        n = safe_u64(keys + KEYS36_NENTRIES);
    } else {
        unsigned log2_index = safe_u8(keys + KEYS311_LOG2_INDEX);
        if (log2_index > 24 || safe_u8(keys + KEYS311_KIND) != 0)
            return 0;
        entries = keys + KEYS311_INDICES + (1ull << log2_index);
        n = safe_u64(keys + KEYS311_NENTRIES);
    }
    unsigned found = 0;
    for (uint64_t i = 0; i < n && i < DICT_ENTRIES_MAX && found < ASYNCTASK_CANDIDATES; i++) {
        uintptr_t task = safe_ptr(entries + i * ENTRY_SIZE + ENTRY_VALUE);
        if (!task || !safe_ptr_ok(task, 8) || !is_task(task))
            continue; /* a deleted entry, or not a Task */
        uintptr_t coro = safe_ptr(task + (uintptr_t)L.task_coro);
        if (!coro)
            continue;
        tasks[found] = task;
        frames[found++] = frame_of(coro);
    }
    return found;
}

unsigned asynctask_running(const pyabi *a, uintptr_t ts, uintptr_t *tasks, uintptr_t *frames)
{
    (void)a;
    if (!atomic_load_explicit(&ready, memory_order_acquire))
        return 0;
    if (L.current_tasks)
        return from_dict(tasks, frames);
    if (!safe_ptr(ts + (uintptr_t)L.ts_running_loop))
        return 0;
    uintptr_t task = safe_ptr(ts + (uintptr_t)L.ts_running_task);
    if (!task)
        return 0;
    uintptr_t coro = safe_ptr(task + (uintptr_t)L.task_coro);
    if (!coro)
        return 0;
    tasks[0] = task;
    frames[0] = frame_of(coro);
    return 1;
}

/* The task awaiting `task` (the first task of the set, when several do), or 0.  Before
 * 3.14 no task knows who awaits it: the cron's scan says. */
static uintptr_t awaiter(uintptr_t task)
{
    if (L.task_awaited_by < 0) {
        uintptr_t by = pairs_find(&awaiters, task);
        return by && safe_ptr_ok(by, 8) && is_task(by) ? by : 0;
    }
    uintptr_t by = safe_ptr(task + (uintptr_t)L.task_awaited_by);
    if (!by)
        return 0;
    if (safe_u8(task + (uintptr_t)L.task_awaited_by_is_set)) {
        uint64_t mask = safe_u64(by + SET_MASK);
        uintptr_t table = safe_ptr(by + SET_TABLE);
        uintptr_t found = 0;
        for (uint64_t i = 0; i <= mask && i < SET_PROBE_MAX && !found; i++) {
            uintptr_t key = safe_ptr(table + i * SET_ENTRY);
            if (key && safe_ptr_ok(key, 8) && is_task(key))
                found = key;
        }
        by = found;
    }
    return by && is_task(by) ? by : 0;
}

/* The frame of coroutine `c` as a sample's frame. */
static rframe coro_frame(const pyabi *a, int t, uintptr_t c)
{
    rframe out = {PYPROF_CODE_UNREADABLE, -1};
    frame_raw f;
    uintptr_t code;
    int32_t offset;
    if (L.gen_iframe >= 0) {
        if (pyread_frame_as(a, PYABI_FRAME_INTERP, c + (uintptr_t)L.gen_iframe, &f) < 0 ||
            pyread_frame_view_as(a, PYABI_FRAME_INTERP, &f, &code, &offset) != 1)
            return out;
    } else if (pyread_frame_as(a, PYABI_FRAME_OBJECT, frame_of(c), &f) < 0 ||
               pyread_frame_view_as(a, PYABI_FRAME_OBJECT, &f, &code, &offset) != 1) {
        return out;
    }
    int changed = 0;
    out.code_id = codeid_of(a, t, code, 0, NULL, &changed);
    out.offset = offset;
    return out;
}

/* Is coroutine `c` created or suspended (not running, not finished)?  3.11+ say so in
 * their frame state; before, a finished coroutine has no frame, and the caller leaves
 * out the running tasks. */
static int waits(uintptr_t c)
{
    if (L.gen_frame_state < 0)
        return frame_of(c) != 0;
    int8_t state = (int8_t)safe_u8(c + (uintptr_t)L.gen_frame_state);
    return state >= L.state_first && state <= L.state_last;
}

/* What suspended coroutine `c` awaits, as its frame's value stack holds it at the top
 * (docs/ASYNCIO.md, "What a suspended coroutine awaits"), or 0: not at an `await`, or a
 * stack that does not look like one. */
static uintptr_t awaited(uintptr_t c)
{
    uintptr_t fr = frame_of(c);
    if (!fr)
        return 0;
    if (L.stack_kind <= ASYNCTASK_STACK_INDEX &&
        (int8_t)safe_u8(c + (uintptr_t)L.gen_frame_state) != L.state_yield_from)
        return 0;
    uintptr_t end;
    switch (L.stack_kind) {
    case ASYNCTASK_STACK_POINTER:
        end = safe_ptr(fr + (uintptr_t)L.fr_stack);
        if (end <= fr + 8u * L.awaited_slot || end > fr + STACK_SPAN)
            return 0;
        return safe_ptr(end - 8u * L.awaited_slot) & ~(uintptr_t)STACKREF_TAG;
    case ASYNCTASK_STACK_INDEX: {
        int32_t top = safe_i32(fr + (uintptr_t)L.fr_stack);
        if (top < (int32_t)L.awaited_slot || top > (int32_t)(STACK_SPAN / 8))
            return 0;
        return safe_ptr(fr + (uintptr_t)L.fr_base + 8u * (uint32_t)(top - L.awaited_slot));
    }
    case ASYNCTASK_STACK_DEPTH: {
        int32_t depth = safe_i32(fr + (uintptr_t)L.fr_stack);
        if (depth < (int32_t)L.awaited_slot || depth > (int32_t)(STACK_SPAN / 8))
            return 0;
        uintptr_t base = safe_ptr(fr + (uintptr_t)L.fr_base);
        return safe_ptr(base + 8u * (uint32_t)(depth - L.awaited_slot));
    }
    default:
        end = safe_ptr(fr + (uintptr_t)L.fr_stack);
        if (end < safe_ptr(fr + (uintptr_t)L.fr_base) + 8u * L.awaited_slot ||
            end - safe_ptr(fr + (uintptr_t)L.fr_base) > STACK_SPAN)
            return 0;
        return safe_ptr(end - 8u * L.awaited_slot);
    }
}

/* The coroutines of suspended task `task`, outermost first, into chain (room for
 * ASYNCTASK_MAX_COROS): its own coroutine while created or suspended, then each one
 * awaits while that is a live coroutine of type `type`.  Returns how many. */
static unsigned coro_chain(uintptr_t task, uintptr_t type, uintptr_t *chain)
{
    unsigned n = 0;
    uintptr_t c = safe_ptr(task + (uintptr_t)L.task_coro);
    if (!c || !pyread_is_live(c, type) || !waits(c))
        return 0;
    while (n < ASYNCTASK_MAX_COROS && c && pyread_is_live(c, type) && frame_of(c)) {
        chain[n++] = c;
        c = awaited(c);
    }
    return n;
}

/* The coroutines' type, learned from a running task whose coroutine's frame was on its
 * thread's stack (asynctask_chain's caller checked it): the wall pass reads suspended
 * tasks' coroutines only once it is known. */
static _Atomic uintptr_t coro_type;

/* The chain of `task` into out (room for cap): with `own`, its own coroutines first (a
 * suspended task), then its task frame, then each awaiter's coroutines and task frame.
 * Returns the frames of the whole tasks written. */
static unsigned chain_of(const pyabi *a, int t, uintptr_t task, uintptr_t type, int own,
                         rframe *out, unsigned cap)
{
    /* A failed read ends the chain, not the sample: this guard nests in the caller's
     * (if any), which is given back on either path. */
    void **outer = safe_guard_tls;
    volatile unsigned whole = 0;
    safe_jmpbuf jb;
    if (!SAFE_GUARD_BEGIN(jb)) {
        codeid_abandon();
        safe_guard_tls = outer;
        return whole;
    }
    uintptr_t chain[ASYNCTASK_MAX_COROS];
    unsigned n = 0;
    if (own) {
        unsigned nc = coro_chain(task, type, chain);
        if (!nc || nc + 1 > cap) {
            safe_guard_tls = outer;
            return 0;
        }
        while (nc)
            out[n++] = coro_frame(a, t, chain[--nc]);
    }
    for (unsigned k = 0; n < cap; k++) {
        uintptr_t name_at = L.task_name >= 0 ? task + (uintptr_t)L.task_name : 0;
        out[n++] = (rframe){codeid_of_task(a, t, task, name_at), -1};
        whole = n;
        uintptr_t by = k < ASYNCTASK_MAX_AWAITERS ? awaiter(task) : 0;
        if (!by)
            break;
        unsigned nc = coro_chain(by, type, chain);
        if (n + nc + 1 > cap)
            break;
        while (nc)
            out[n++] = coro_frame(a, t, chain[--nc]);
        task = by;
    }
    safe_guard_tls = outer;
    return whole;
}

/* The coroutines' type: the interpreter's own, else the one learned. */
static uintptr_t coroutine_type(void)
{
    return L.coro_type ? L.coro_type : atomic_load_explicit(&coro_type, memory_order_relaxed);
}

unsigned asynctask_chain(const pyabi *a, int t, uintptr_t task, rframe *out, unsigned cap)
{
    if (cap > ASYNCTASK_MAX_FRAMES)
        cap = ASYNCTASK_MAX_FRAMES;
    /* The caller found this coroutine's frame on its thread's stack: a coroutine, whose
     * type its awaiters' coroutines must have too. */
    uintptr_t type = safe_ptr(safe_ptr(task + (uintptr_t)L.task_coro) + PYABI_OB_TYPE);
    if (!atomic_load_explicit(&coro_type, memory_order_relaxed))
        atomic_store_explicit(&coro_type, type, memory_order_relaxed);
    return chain_of(a, t, task, type, 0, out, cap);
}

/* The task weak reference `ref` (an entry of the set of all tasks) refers to, or 0. */
static uintptr_t task_of_ref(uintptr_t ref)
{
    if (!safe_ptr_ok(ref, 8) || safe_ptr(ref + PYABI_OB_TYPE) != L.weakref_type)
        return 0; /* the set's dummy entry, or memory reused */
    uintptr_t task = safe_ptr(ref + WR_OBJECT);
    return task && safe_ptr_ok(task, 8) && is_task(task) ? task : 0;
}

/* asynctask_waiting before 3.14: the tasks of the set of all tasks whose loop is the one
 * thread state `ts` runs, but the running ones.  The set is walked twice, as the 3.14+
 * list is; a table that moved between the walks (it grew or shrank) gives none. */
static unsigned from_set(uintptr_t ts, uintptr_t *tasks, unsigned cap, unsigned pass,
                         unsigned *stride, unsigned *listed)
{
    uintptr_t loop = pairs_find(&loops, ts);
    if (!loop || !L.all_tasks)
        return 0;
    uintptr_t running[ASYNCTASK_CANDIDATES], frames[ASYNCTASK_CANDIDATES];
    unsigned nrunning = from_dict(running, frames);
    uint64_t mask = safe_u64(L.all_tasks + SET_MASK);
    uintptr_t table = safe_ptr(L.all_tasks + SET_TABLE);
    if (mask < 7 || mask >= 4u * ASYNCTASK_LIST_MAX || (mask & (mask + 1)))
        return 0;
    unsigned total = 0;
    for (int round = 0; round < 2; round++) {
        unsigned i = 0, n = 0, start = round ? pass % *stride : 0;
        for (uint64_t k = 0; k <= mask; k++) {
            uintptr_t ref = safe_ptr(table + k * SET_ENTRY);
            uintptr_t task = ref ? task_of_ref(ref) : 0;
            if (!task || safe_ptr(task + (uintptr_t)L.task_loop) != loop)
                continue;
            int run = 0;
            for (unsigned r = 0; r < nrunning; r++)
                run |= running[r] == task;
            if (run)
                continue;
            if (round && i % *stride == start && n < cap)
                tasks[n++] = task;
            i++;
        }
        if (!round) {
            total = i;
            *listed = total;
            *stride = total > cap ? (total + cap - 1) / cap : 1;
        } else {
            if (safe_ptr(L.all_tasks + SET_TABLE) != table)
                return 0;
            return n;
        }
    }
    return 0;
}

unsigned asynctask_waiting(uintptr_t ts, uintptr_t *tasks, unsigned cap, unsigned pass,
                           unsigned *stride, unsigned *listed)
{
    *stride = 1;
    *listed = 0;
    if (!atomic_load_explicit(&ready, memory_order_acquire) || !coroutine_type() || !cap)
        return 0;
    if (L.current_tasks)
        return from_set(ts, tasks, cap, pass, stride, listed);
    if (!safe_ptr(ts + (uintptr_t)L.ts_running_loop))
        return 0;
    uintptr_t running = safe_ptr(ts + (uintptr_t)L.ts_running_task);
    uintptr_t head = ts + (uintptr_t)L.ts_tasks_head;
    /* Twice along the list: to count, then to take every stride-th.  The thread keeps
     * running and links and unlinks its tasks meanwhile: each node's `prev` must lead
     * back to the node before it, else the list is mid-update and the pass gets none. */
    unsigned total = 0;
    for (int round = 0; round < 2; round++) {
        unsigned i = 0, n = 0, start = round ? pass % *stride : 0;
        uintptr_t prev = head;
        for (uintptr_t node = safe_ptr(head); node != head; node = safe_ptr(node)) {
            if (i >= ASYNCTASK_LIST_MAX || safe_ptr(node + 8) != prev)
                return 0;
            uintptr_t task = node - (uintptr_t)L.task_node;
            if (task != running) {
                if (round && i % *stride == start && n < cap && is_task(task))
                    tasks[n++] = task;
                i++;
            }
            prev = node;
        }
        if (!round) {
            total = i;
            *listed = total;
            *stride = total > cap ? (total + cap - 1) / cap : 1;
        } else {
            return n;
        }
    }
    return 0;
}

unsigned asynctask_suspended(const pyabi *a, int t, uintptr_t task, rframe *out, unsigned cap)
{
    if (cap > ASYNCTASK_MAX_FRAMES)
        cap = ASYNCTASK_MAX_FRAMES;
    uintptr_t type = coroutine_type();
    return type ? chain_of(a, t, task, type, 1, out, cap) : 0;
}

void asynctask_insert(rrec_stack *st, unsigned after, const rframe *f, unsigned n)
{
    rframe *fr = rrec_frames(st);
    for (unsigned i = st->nframes; i-- > after + 1;)
        fr[i + n] = fr[i];
    for (unsigned i = 0; i < n; i++)
        fr[after + 1 + i] = f[i];
    st->nframes = (uint16_t)(st->nframes + n);
    if (st->cut)
        st->keep_inner = (uint16_t)(st->keep_inner + n);
    else
        st->keep_inner = st->nframes;
}
