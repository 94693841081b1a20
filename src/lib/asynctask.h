/*
 * asynctask: the asyncio task a sample's thread is running, and the chain of tasks
 * awaiting it, as frames of the sample's stack (docs/ASYNCIO.md, "What the handler reads
 * per sample").  A task is a frame of its own, a "task frame": its code id is a CODE
 * record flagged PYPROF_CODE_F_TASK that carries the task's name (codeid_of_task).
 * Read innermost first, a running task's sample is its own frames down to its outermost
 * coroutine, then its task frame, then the suspended coroutines of the task awaiting it
 * (innermost `await` first) and that task's frame, and so on to the root task, then the
 * event loop's frames.  The layout is published by asyncabi once found and checked: on
 * 3.14+ `.AsyncioDebug`'s, where the thread state holds its running task and each task
 * the tasks awaiting it; on 3.7-3.13 a per-minor table, where the running tasks are the
 * values of _asyncio._current_tasks ({loop: task}), all tasks are in the module's WeakSet,
 * and no task knows who awaits it: the cron's scan (asyncscan.c) says, as of its last
 * round.
 *
 * Interface:
 *   asynctask_layout                the offsets the handler reads by
 *   asynctask_publish(l)   [not sigsafe] the cron: the layout found, sampled from now on
 *   asynctask_loops(ts, loop, n)  [not sigsafe] the cron, 3.7-3.13: each thread's
 *                                   running event loop now
 *   asynctask_awaiters(child, parent, n)  [not sigsafe] the cron, 3.7-3.13: the task
 *                                   awaiting each task now
 *   asynctask_running(a, ts, tasks, frames)  [sigsafe, guarded] the tasks that may be
 *                                   the one the thread runs, and their coroutines' frames:
 *                                   the one whose frame is on the thread's stack is
 *   asynctask_chain(a, t, task, out, cap)  [sigsafe] the task frame of `task` and its
 *                                   awaiters' frames, innermost first, under a guard of
 *                                   its own (a failed read keeps what was whole)
 *   asynctask_insert(st, after, f, n)  [sigsafe, pure] puts n frames into stack st
 *                                   after its frame `after`
 *   asynctask_waiting(ts, tasks, cap, pass, &stride, &listed)  [sigsafe, guarded] the
 *                                   suspended tasks of thread state ts's event loop
 *                                   (3.14+: the thread's list; 3.7-3.13: those of the
 *                                   set of all tasks whose loop it runs), every
 *                                   stride-th of them when there are more than cap
 *   asynctask_suspended(a, t, task, out, cap)  [sigsafe] a suspended task's frames:
 *                                   its coroutines down to the innermost `await`, then
 *                                   its task frame and its awaiters', innermost first
 */
#ifndef PYPROF_ASYNCTASK_H
#define PYPROF_ASYNCTASK_H

#include <stdint.h>

#include "pyabi.h"
#include "rrec.h"

/* Frames a task chain adds to a sample at most (task frames and awaiters' coroutines). */
#define ASYNCTASK_MAX_FRAMES 64u
/* Running tasks looked at per sample (3.7-3.13: one per event loop running). */
#define ASYNCTASK_CANDIDATES 4u
/* Suspended tasks sampled per thread and wall-clock pass, at most, and tasks a thread's
 * list is followed for. */
#define ASYNCTASK_WAITING_MAX 32u
#define ASYNCTASK_LIST_MAX 65536u
/* Awaiting tasks followed at most, and coroutines per awaiting task. */
#define ASYNCTASK_MAX_AWAITERS 16u
#define ASYNCTASK_MAX_COROS 32u

typedef struct asynctask_layout {
    /* 3.7-3.13: the running tasks are the values of this dict, _asyncio._current_tasks
     * (0 on 3.14+), and a task is of type task_type (_asyncio.Task) or a direct subclass */
    uintptr_t current_tasks, task_type;
    /* 3.7-3.13: the set of weak references (of type weakref_type) to every task, the
     * `data` of _asyncio's WeakSet of tasks (0: not found, no suspended tasks) */
    uintptr_t all_tasks, weakref_type;
    int dict_layout; /* the dict's: enum pyabi_dict_layout */
    /* _PyThreadStateImpl (3.14+) */
    int64_t ts_running_loop, ts_running_task, ts_tasks_head;
    /* TaskObj */
    int64_t task_size, task_loop, task_fut_waiter, task_coro, task_name, task_awaited_by,
        task_is_task, task_awaited_by_is_set, task_node;
    /* the coroutine object and its frame: embedded at gen_iframe (3.11+), or a pointer to
     * a heap frame at gen_frame (3.7-3.10; gen_iframe -1) */
    int64_t gen_iframe, gen_frame, gen_frame_state;
    uintptr_t coro_type; /* &PyCoro_Type (0: learned from a running task) */
    /* 3.11+: gi_frame_state while created or suspended (state_first..state_last), and
     * while suspended at an `await` (state_yield_from) */
    int8_t state_first, state_last, state_yield_from;
    /* where the frame's value stack ends (enum asynctask_stack): the field at fr_stack,
     * the stack's base at fr_base; the awaited object is the awaited_slot-th word below
     * the end */
    int stack_kind;
    int64_t fr_stack, fr_base;
    uint8_t awaited_slot;
} asynctask_layout;

/* How a suspended coroutine's frame says where its value stack ends. */
enum asynctask_stack {
    ASYNCTASK_STACK_POINTER = 0, /* 3.14+: a pointer (its words tagged _PyStackRefs) */
    ASYNCTASK_STACK_INDEX = 1,   /* 3.11-3.13: an int, words above localsplus at fr_base */
    ASYNCTASK_STACK_DEPTH = 2,   /* 3.10: an int, words above the pointer at fr_base */
    ASYNCTASK_STACK_TOP = 3      /* 3.7-3.9: a pointer (NULL while running) */
};

/* [not sigsafe] The cron (3.7-3.13): the event loop each thread state runs now (n pairs
 * sorted by thread state, at most ASYNCTASK_LOOPS_MAX kept), which tells the wall pass
 * whose tasks are whose. */
#define ASYNCTASK_LOOPS_MAX 64u
void asynctask_loops(const uintptr_t *ts, const uintptr_t *loop, unsigned n);

/* [not sigsafe] The cron (3.7-3.13): the task awaiting each task (n pairs sorted by
 * child, at most ASYNCTASK_AWAITERS_MAX kept), which no task says itself before 3.14. */
#define ASYNCTASK_AWAITERS_MAX 16384u
void asynctask_awaiters(const uintptr_t *child, const uintptr_t *parent, unsigned n);

/* [not sigsafe] The layout found and checked (asyncabi): samples carry tasks from now on.
 * Called once; a second call is ignored. */
void asynctask_publish(const asynctask_layout *l);

/* [sigsafe] Inside the caller's guarded region: the tasks that may be the one thread
 * state `ts`'s event loop is running (3.14+: the thread's own, or none; 3.7-3.13: each
 * loop's running task, any thread's), up to ASYNCTASK_CANDIDATES, into tasks[], and
 * their coroutines' frames into frames[]: the one whose frame is on the thread's stack is
 * the thread's, and its outermost frame of the task.  Returns how many. */
unsigned asynctask_running(const pyabi *a, uintptr_t ts, uintptr_t *tasks, uintptr_t *frames);

/* [sigsafe] Fills out (room for cap frames, at most ASYNCTASK_MAX_FRAMES) innermost first
 * with `task`'s task frame, then, for each task awaiting it in turn, that task's
 * suspended coroutines and its task frame; code ids from table generation t.  Returns
 * the frames filled: a chain that could not be read further (a failed read, no room)
 * ends at the last whole task. */
unsigned asynctask_chain(const pyabi *a, int t, uintptr_t task, rframe *out, unsigned cap);

/* [sigsafe] Inside the caller's guarded region (the wall-clock pass, on another thread):
 * the tasks of thread state ts's event loop that are created or suspended, not running
 * (3.14+: from the thread's list of tasks; 3.7-3.13: from the set of all tasks, those
 * whose loop the cron last saw the thread run), into tasks[] (room for cap): all of them
 * while they are at most cap, else every *stride-th, starting at pass % *stride.  0 when
 * the thread runs no event loop, before the coroutines' type is known, or when the list
 * was met mid-update.  *listed: the tasks looked at (the cost of the look: each is read
 * twice). */
unsigned asynctask_waiting(uintptr_t ts, uintptr_t *tasks, unsigned cap, unsigned pass,
                           unsigned *stride, unsigned *listed);

/* [sigsafe] The frames of suspended task `task`, innermost first, into out (room for cap,
 * at most ASYNCTASK_MAX_FRAMES): its coroutines from the innermost `await` out, its task
 * frame, then its awaiters' as asynctask_chain gives them; code ids from generation t.
 * Under a guard of its own; 0 when the task's coroutine could not be read. */
unsigned asynctask_suspended(const pyabi *a, int t, uintptr_t task, rframe *out, unsigned cap);

/* [sigsafe] Inserts the n frames f into st's frames after frame index `after` (which
 * must be one of the frames kept before any cut); the caller checked the room. */
void asynctask_insert(rrec_stack *st, unsigned after, const rframe *f, unsigned n);

#endif
