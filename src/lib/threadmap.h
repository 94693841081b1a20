/*
 * threadmap: the writer's map from a kernel thread id to the thread's index in the log,
 * and the threads' Python names (threading.Thread.name, read by pynames.c).  A thread
 * seen for the first time gets the next index and is announced through the caller's
 * `emit` (a THREAD record), and so is every later change of its name.  A daemon that
 * churns through threads for weeks does not grow it without bound: past THREADMAP_MAX
 * threads it forgets them all, and a thread seen again is announced again.  The writer
 * thread's alone: nothing here is sigsafe.
 *
 * Interface:
 *   threadmap_init(m, abi, main_tid, emit, ctx)   an empty map (after threadmap_free)
 *   threadmap_idx(m, tid)      the thread's index, announcing it the first time (its
 *                              name read again first when the last read is 10 ms old)
 *   threadmap_refresh_names(m) reads every thread's name again; announces the changed
 *   threadmap_names_ns(m)      when the names were last read (CLOCK_MONOTONIC)
 *   threadmap_forget(m)        every thread to be announced again (a new file, a flip)
 *   threadmap_free(m)          frees what it holds
 */
#ifndef PYPROF_THREADMAP_H
#define PYPROF_THREADMAP_H

#include <stddef.h>
#include <stdint.h>

#include "pyabi.h"
#include "pynames.h"

#define THREADMAP_MAX 4096 /* threads remembered before the map starts afresh */

typedef void (*threadmap_emit)(uint32_t idx, uint32_t tid, const char *name, void *ctx);

typedef struct threadmap_thread {
    uint32_t tid, idx;
    char name[PYNAMES_NAME_MAX]; /* as last announced */
} threadmap_thread;

typedef struct threadmap {
    threadmap_thread *threads;
    size_t n, cap;
    uint32_t next_idx;
    pynames_entry *names; /* as last read from the interpreter */
    int names_n;
    uint64_t names_ns;
    const pyabi *abi;
    uint32_t main_tid;
    threadmap_emit emit;
    void *ctx;
} threadmap;

void threadmap_init(threadmap *m, const pyabi *abi, uint32_t main_tid, threadmap_emit emit,
                    void *ctx);
uint32_t threadmap_idx(threadmap *m, uint32_t tid);
void threadmap_refresh_names(threadmap *m);
uint64_t threadmap_names_ns(const threadmap *m);
void threadmap_forget(threadmap *m);
void threadmap_free(threadmap *m);

#endif
