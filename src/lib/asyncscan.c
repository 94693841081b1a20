/*
 * asyncscan: the cron's look at asyncio's bookkeeping before 3.14 (asyncscan.h;
 * docs/ASYNCIO.md).  Not signal-handler code: it runs on the cron thread only.
 *
 * Nobody holds the GIL for us: the program's threads create and finish tasks and
 * resize the set of all tasks while we read.  So the set is walked inside one guarded
 * region (safe_read.h; a fault or a wild pointer ends the walk with what it has), every
 * object is type-checked before its layout is trusted, and every loop is bounded.
 * Instance attributes (`_children`, `_parent_task`) and the thread states' dicts are
 * read with pynames, which owns the per-version knowledge of dicts and attributes.  A
 * link read while it changed may be missing, or stale, for one round: the chains it
 * gives are checked again where they are used (asynctask.c's is_task).
 */
#include "asyncscan.h"

#include <stdlib.h>

#include "common/clock.h"
#include "pynames.h"
#include "safe_read.h"

#define THREADS_MAX 4096 /* thread states walked at most */
#define TASKS_MAX 16384u /* tasks with a link looked at per round */
#define CHILDREN_MAX 256 /* a gather's children looked at */
#define GROUPS_CACHED 16 /* TaskGroups whose parent task is remembered per round */

/* PyThreadState.dict (3.7-3.12), where _asyncio keeps the thread's running loop under
 * RUNNING_LOOP_KEY: 3.7-3.11 in a holder object (the loop at HOLDER_LOOP), 3.12 the loop
 * itself.  3.13 keeps it right after the public PyThreadState (_Py_DebugOffsets' size
 * of it, pyabi's ts_size). */
static const int TS_DICT[] = {
    [7] = 152, [8] = 152, [9] = 152, [10] = 152, [11] = 128, [12] = 112};
#define RUNNING_LOOP_KEY "__asyncio_running_event_loop__"
#define HOLDER_LOOP 16 /* _RunningLoopHolder.rl_loop */

/* The fields read here, the same 3.7-3.13 (docs/ASYNCIO.md). */
#define FUT_CALLBACK0 24 /* FutureObj.fut_callback0: the first done callback */
#define METHOD_SELF 24   /* PyMethodObject.im_self */
#define LIST_SIZE 16     /* PyListObject: ob_size, ob_item */
#define LIST_ITEMS 24
#define SET_MASK 32 /* PySetObject: mask, table of {key, hash} */
#define SET_TABLE 40
#define SET_ENTRY 16
#define WR_OBJECT 16 /* PyWeakReference.wr_object */
#define TP_BASE 256  /* PyTypeObject.tp_base */

/* gcc 12 takes the guard's jump buffer for one left behind (it is cleared on both ways
 * out: SAFE_GUARD_END, or the failure path of SAFE_GUARD_BEGIN). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wunknown-warning-option"
#pragma GCC diagnostic ignored "-Wdangling-pointer"

/* Copies 8 bytes of this process's memory; -1 when the read faulted. */
static int read_word(uintptr_t src, uintptr_t *dst)
{
    safe_jmpbuf jb;
    if (SAFE_GUARD_BEGIN(jb)) {
        *dst = safe_ptr(src);
        SAFE_GUARD_END();
        return 0;
    }
    return -1;
}

/* Orders (key, value) pairs by key. */
static int by_key(const void *x, const void *y)
{
    uintptr_t a = *(const uintptr_t *)x, b = *(const uintptr_t *)y;
    return a < b ? -1 : a > b;
}

/* Sorts the n (key, value) pairs by key and hands them to `publish` as two arrays. */
static void publish_sorted(uintptr_t (*pairs)[2], unsigned n, uintptr_t *keys,
                           uintptr_t *values,
                           void (*publish)(const uintptr_t *, const uintptr_t *, unsigned))
{
    qsort(pairs, n, sizeof pairs[0], by_key);
    for (unsigned i = 0; i < n; i++) {
        keys[i] = pairs[i][0];
        values[i] = pairs[i][1];
    }
    publish(keys, values, n);
}

/* ---- the threads' running loops ------------------------------------------------------ */

static void find_loops(const pyabi *a, int minor)
{
    uintptr_t found[ASYNCTASK_LOOPS_MAX][2], ts_of[ASYNCTASK_LOOPS_MAX],
        loop_of[ASYNCTASK_LOOPS_MAX];
    unsigned n = 0;
    uintptr_t interp = 0, ts = 0;
    if (!a->runtime || read_word(a->runtime + (uintptr_t)a->rt_interp_main, &interp) < 0 ||
        !interp || read_word(interp + (uintptr_t)a->is_tstate_head, &ts) < 0)
        return;
    for (unsigned i = 0; ts && i < THREADS_MAX && n < ASYNCTASK_LOOPS_MAX; i++) {
        uintptr_t loop = 0, dict = 0;
        if (minor >= 13) {
            if (read_word(ts + a->ts_size, &loop) < 0)
                return;
        } else if (read_word(ts + (uintptr_t)TS_DICT[minor], &dict) == 0 && dict) {
            loop = pynames_dict_item(a, dict, RUNNING_LOOP_KEY);
            if (loop && minor <= 11 && read_word(loop + HOLDER_LOOP, &loop) < 0)
                loop = 0;
        }
        if (loop) {
            found[n][0] = ts;
            found[n++][1] = loop;
        }
        if (read_word(ts + (uintptr_t)a->ts_next, &ts) < 0)
            return;
    }
    publish_sorted(found, n, ts_of, loop_of, asynctask_loops);
}

/* ---- who awaits whom ------------------------------------------------------------------ */

/* A link the walk found: kind AWAITS (`task` awaits task `to`), GATHER (`task` awaits the
 * gathering future `to`: its children's awaiter) or GROUP (`task` is a child of the
 * TaskGroup `to`: the group's parent task is its awaiter). */
enum { AWAITS, GATHER, GROUP };
typedef struct task_link {
    uintptr_t task, to;
    int kind;
} task_link;

/* The cron's only: too large for its stack. */
static task_link links[TASKS_MAX];
static uintptr_t pairs[TASKS_MAX][2];
static uintptr_t child_of[TASKS_MAX], parent_of[TASKS_MAX];
static struct {
    int ready;
    uintptr_t gathering_type, group_type, method_type, list_type;
} T;

static int is_task(const asynctask_layout *l, uintptr_t o)
{
    uintptr_t type = safe_ptr(o + PYABI_OB_TYPE);
    return type == l->task_type || safe_ptr(type + TP_BASE) == l->task_type;
}

/* The type of `o`, or 0 when it is not a pointer to an object. */
static uintptr_t type_in(uintptr_t o)
{
    return o && safe_ptr_ok(o, 8) ? safe_ptr(o + PYABI_OB_TYPE) : 0;
}

/* The links of the tasks of the set of all tasks, into links[]: inside one guarded
 * region, which a failed read ends with what it has. */
SAFE_NO_SANITIZE static unsigned collect_links(const asynctask_layout *l)
{
    volatile unsigned n = 0;
    safe_jmpbuf jb;
    if (!SAFE_GUARD_BEGIN(jb))
        return n;
    uint64_t mask = safe_u64(l->all_tasks + SET_MASK);
    uintptr_t table = safe_ptr(l->all_tasks + SET_TABLE);
    if (mask < 7 || mask >= 4u * ASYNCTASK_LIST_MAX || (mask & (mask + 1))) {
        SAFE_GUARD_END();
        return 0;
    }
    for (uint64_t k = 0; k <= mask && n < TASKS_MAX; k++) {
        uintptr_t ref = safe_ptr(table + k * SET_ENTRY);
        if (type_in(ref) != l->weakref_type)
            continue;
        uintptr_t task = safe_ptr(ref + WR_OBJECT);
        if (!type_in(task) || !is_task(l, task))
            continue;
        uintptr_t waiter = safe_ptr(task + (uintptr_t)l->task_fut_waiter);
        uintptr_t wtype = type_in(waiter);
        if (wtype && is_task(l, waiter))
            links[n++] = (task_link){task, waiter, AWAITS};
        else if (wtype && wtype == T.gathering_type)
            links[n++] = (task_link){task, waiter, GATHER};
        /* A TaskGroup's task: its first done callback is the group's _on_task_done. */
        uintptr_t callback = safe_ptr(task + FUT_CALLBACK0);
        if (T.group_type && n < TASKS_MAX && type_in(callback) == T.method_type) {
            uintptr_t group = safe_ptr(callback + METHOD_SELF);
            if (type_in(group) == T.group_type)
                links[n++] = (task_link){task, group, GROUP};
        }
    }
    SAFE_GUARD_END();
    return n;
}

#pragma GCC diagnostic pop

static int type_of(uintptr_t o, uintptr_t *type)
{
    return o && safe_ptr_ok(o, 8) && read_word(o + PYABI_OB_TYPE, type) == 0 ? 0 : -1;
}

/* Is `o` a task, read with guards of its own? */
static int task_checked(const asynctask_layout *l, uintptr_t o)
{
    uintptr_t type, base;
    if (type_of(o, &type) < 0)
        return 0;
    return type == l->task_type ||
           (read_word(type + TP_BASE, &base) == 0 && base == l->task_type);
}

/* Adds (each child of gathering future `outer`, parent) to pairs[] from *n. */
static void add_gathered(const pyabi *a, const asynctask_layout *l, uintptr_t outer,
                         uintptr_t parent, unsigned *n)
{
    uintptr_t children = pynames_attr(a, outer, "_children"), type = 0, size = 0, items = 0;
    if (type_of(children, &type) < 0 || type != T.list_type ||
        read_word(children + LIST_SIZE, &size) < 0 ||
        read_word(children + LIST_ITEMS, &items) < 0)
        return;
    for (uintptr_t c = 0; c < size && c < CHILDREN_MAX && *n < TASKS_MAX; c++) {
        uintptr_t child = 0;
        if (read_word(items + 8 * c, &child) == 0 && task_checked(l, child)) {
            pairs[*n][0] = child;
            pairs[(*n)++][1] = parent;
        }
    }
}

static void find_awaiters(const pyabi *a, const asynctask_layout *l)
{
    if (!T.ready) {
        T.gathering_type = pynames_module_attr(a, "asyncio.tasks", "_GatheringFuture");
        T.method_type = (uintptr_t)pyabi_dlsym_python("PyMethod_Type");
        T.list_type = (uintptr_t)pyabi_dlsym_python("PyList_Type");
        /* asyncio.tasks comes with asyncio; taskgroups (3.11+) may come later. */
        T.ready = T.gathering_type && T.method_type && T.list_type;
    }
    if (T.ready && !T.group_type)
        T.group_type = pynames_module_attr(a, "asyncio.taskgroups", "TaskGroup");
    if (!T.ready)
        return;
    unsigned nl = collect_links(l), n = 0;
    uintptr_t groups[GROUPS_CACHED][2];
    unsigned ngroups = 0;
    for (unsigned i = 0; i < nl && n < TASKS_MAX; i++) {
        const task_link *k = &links[i];
        if (k->kind == AWAITS) {
            pairs[n][0] = k->to;
            pairs[n++][1] = k->task;
        } else if (k->kind == GATHER) {
            add_gathered(a, l, k->to, k->task, &n);
        } else {
            uintptr_t parent = 0;
            for (unsigned g = 0; g < ngroups && !parent; g++)
                if (groups[g][0] == k->to)
                    parent = groups[g][1];
            if (!parent) {
                parent = pynames_attr(a, k->to, "_parent_task");
                if (ngroups < GROUPS_CACHED) {
                    groups[ngroups][0] = k->to;
                    groups[ngroups++][1] = parent;
                }
            }
            if (parent && parent != k->task && task_checked(l, parent)) {
                pairs[n][0] = k->task;
                pairs[n++][1] = parent;
            }
        }
    }
    publish_sorted(pairs, n, child_of, parent_of, asynctask_awaiters);
}

uint64_t asyncscan_round(const pyabi *a, const asynctask_layout *l, int minor)
{
    static uint64_t last_ns;
    uint64_t now = clock_mono_ns();
    if (last_ns && now - last_ns < ASYNCSCAN_EVERY_NS)
        return ASYNCSCAN_EVERY_NS - (now - last_ns);
    last_ns = now;
    if (minor < 7 || minor > 13)
        return 0;
    find_loops(a, minor);
    if (l->all_tasks && l->weakref_type && l->task_fut_waiter > 0)
        find_awaiters(a, l);
    return ASYNCSCAN_EVERY_NS;
}
