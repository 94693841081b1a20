/*
 * asyncabi: where the asyncio layout comes from (docs/ASYNCIO.md).  Owns the one
 * `asyncabi` of the process: on 3.14+ the thirteen words of the `.AsyncioDebug` section
 * CPython's _asyncio module carries (task, interpreter and thread-state offsets), which
 * loaded object holds it, and whether it was found, is not there yet or was refused (and
 * why).  The section is in whatever object contains _asyncio: its own extension module,
 * loaded at `import asyncio`, long after the start (Debian's 3.14), or the executable or
 * libpython (Debian's 3.15).  On 3.7-3.13 a per-minor table, checked against the
 * _asyncio module once it is imported (its Task type's name and size, its
 * _current_tasks dict).  Nothing here runs in the signal handler: what is found is
 * handed to asynctask.c, which puts tasks into the samples.
 *
 * Interface:
 *   asyncabi_configure(a)   [not sigsafe] the interpreter found (window_configure): its
 *                       minor and the _Py_DebugOffsets sizes the table is checked with
 *   asyncabi_tick()         [not sigsafe] the cron's call, every round (window.c): until
 *                       the layout is found or refused, looks for the section again
 *                       whenever the loader's count of loaded objects moved (3.14+),
 *                       or for _asyncio in sys.modules (3.7-3.13); says once on stderr
 *                       what it found (PYPROF_VERBOSE) or why it refused.  Once a
 *                       3.7-3.13 layout is found, runs asyncscan's look, and returns how
 *                       soon (ns) that wants the next round (0: no wish)
 *   asyncabi_waiting()      [any thread] 1 while a 3.14+ layout may still be loaded:
 *                       not found, not refused
 *   asyncabi_after_dlopen() [not sigsafe] the program loaded an object that may hold the
 *                       section: wakes the cron to look now, not at its next round
 *   asyncabi_get(out)       [not sigsafe] a copy of the state and the layout
 *   asyncabi_check(w, interp_size, tstate_size, err, errlen)  [pure] the table's own
 *                       checks against the interpreter's sizes: 0, or -1 with one line
 *   asyncabi_after_fork_child()  [not sigsafe] a fork child keeps a found or refused
 *                       layout (its mapping is the parent's); one still looked for is not
 *                       looked for there (another thread of the parent may have held the
 *                       loader's lock at the fork)
 */
#ifndef PYPROF_ASYNCABI_H
#define PYPROF_ASYNCABI_H

#include <stddef.h>
#include <stdint.h>

#include "pyabi.h"

#define ASYNCABI_WORDS 13     /* Py_AsyncioModuleDebugOffsets: 13 uint64_t, 104 bytes */
#define ASYNCABI_PATH_MAX 512 /* a longer object name is not looked at */

enum asyncabi_state {
    ASYNCABI_UNSEEN = 0,  /* not looked for yet (or not on this version) */
    ASYNCABI_ABSENT = 1,  /* looked for, not loaded yet: looked for again on a load */
    ASYNCABI_FOUND = 2,   /* the words below are checked and in use */
    ASYNCABI_REFUSED = 3, /* a section was there and failed a check: `reason` */
};

/* The words of `.AsyncioDebug`, in its order (docs/ASYNCIO.md, ".AsyncioDebug"). */
typedef struct asyncabi_words {
    uint64_t task_size;              /* sizeof(TaskObj), _asyncio.Task's tp_basicsize */
    uint64_t task_name;              /* TaskObj.task_name */
    uint64_t task_awaited_by;        /* TaskObj.task_awaited_by */
    uint64_t task_is_task;           /* TaskObj.task_is_task (char) */
    uint64_t task_awaited_by_is_set; /* TaskObj.task_awaited_by_is_set (char) */
    uint64_t task_coro;              /* TaskObj.task_coro */
    uint64_t task_node;              /* TaskObj.task_node (struct llist_node) */
    uint64_t interp_size;            /* sizeof(PyInterpreterState) */
    uint64_t interp_tasks_head;      /* PyInterpreterState.asyncio_tasks_head */
    uint64_t tstate_size;            /* sizeof(_PyThreadStateImpl) */
    uint64_t running_loop;           /* _PyThreadStateImpl.asyncio_running_loop */
    uint64_t running_task;           /* _PyThreadStateImpl.asyncio_running_task */
    uint64_t tstate_tasks_head;      /* _PyThreadStateImpl.asyncio_tasks_head */
} asyncabi_words;

typedef struct asyncabi {
    int state;                    /* enum asyncabi_state */
    asyncabi_words w;             /* valid when FOUND */
    char path[ASYNCABI_PATH_MAX]; /* the object that holds the section (FOUND or REFUSED) */
    char reason[256];             /* REFUSED: the check that failed */
} asyncabi;

void asyncabi_configure(const pyabi *a);
uint64_t asyncabi_tick(void);
int asyncabi_waiting(void);
void asyncabi_after_dlopen(void);
void asyncabi_get(asyncabi *out);
int asyncabi_check(const asyncabi_words *w, uint64_t interp_size, uint64_t tstate_size,
                   char *err, size_t errlen);
void asyncabi_after_fork_child(void);

#endif
