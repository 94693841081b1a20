/*
 * asyncscan: the cron's look at asyncio's own bookkeeping before 3.14, where no task
 * knows which thread runs it or who awaits it (docs/ASYNCIO.md, "The running task of a
 * thread" and "Who awaits a task").  Every ASYNCSCAN_EVERY_NS it reads,
 * without the GIL and through guarded reads only:
 *   - each thread state's running event loop (3.7-3.12: the thread state's dict; 3.13:
 *     right after the public PyThreadState), so that the wall pass knows whose tasks are
 *     whose (asynctask_loops);
 *   - each task's awaiter, from the links asyncio keeps the other way: a task awaiting a
 *     task (its fut_waiter is that task), a task awaiting a gather (its fut_waiter is a
 *     _GatheringFuture, whose `_children` are the tasks gathered), and a task of a
 *     TaskGroup (3.11+: its first done callback is its group's bound _on_task_done, and
 *     the group's `_parent_task` awaits it) (asynctask_awaiters).
 * What it finds is handed to asynctask.c, which the signal handler and the wall pass
 * read.  A link newer than the last look is not seen until the next: a task's first
 * 20 ms or so show no awaiter.
 *
 * Interface:
 *   asyncscan_round(a, l, minor)  [not sigsafe] the cron's call, each round, once the
 *                                 3.7-3.13 layout l is found (asyncabi.c): looks every
 *                                 ASYNCSCAN_EVERY_NS (20 ms), and says when next
 */
#ifndef PYPROF_ASYNCSCAN_H
#define PYPROF_ASYNCSCAN_H

#include "asynctask.h"
#include "pyabi.h"

/* [not sigsafe] The cron: each thread's running loop and each task's awaiter now, for
 * interpreter `a` of minor `minor` (7-13) with asyncio layout `l`, when ASYNCSCAN_EVERY_NS
 * have passed since the last look.  Returns how soon (ns) it wants the next round. */
#define ASYNCSCAN_EVERY_NS 20000000ull
uint64_t asyncscan_round(const pyabi *a, const asynctask_layout *l, int minor);

#endif
