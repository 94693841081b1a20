/*
 * threadmap: kernel thread id -> the log's thread index, and the threads' Python names
 * (threadmap.h).
 */
#include "threadmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/growarray.h"

#define NAMES_MAX 4096           /* threads whose names are read at a time */
#define NAMES_NEW_NS 10000000ull /* a new thread's name is read again at most every 10 ms */

void threadmap_init(threadmap *m, const pyabi *abi, uint32_t main_tid, threadmap_emit emit,
                    void *ctx)
{
    memset(m, 0, sizeof *m);
    m->abi = abi;
    m->main_tid = main_tid;
    m->emit = emit;
    m->ctx = ctx;
}

void threadmap_refresh_names(threadmap *m)
{
    if (!m->names && !(m->names = malloc(NAMES_MAX * sizeof *m->names)))
        return;
    m->names_n = pynames_collect(m->abi, m->names, NAMES_MAX);
    m->names_ns = clock_mono_ns();
    for (int i = 0; i < m->names_n; i++)
        for (size_t j = 0; j < m->n; j++) {
            threadmap_thread *t = &m->threads[j];
            if (t->tid == m->names[i].tid && strcmp(t->name, m->names[i].name) != 0) {
                snprintf(t->name, sizeof t->name, "%s", m->names[i].name);
                m->emit(t->idx, t->tid, t->name, m->ctx);
            }
        }
}

static const char *name_of(const threadmap *m, uint32_t tid)
{
    for (int i = 0; i < m->names_n; i++)
        if (m->names[i].tid == tid)
            return m->names[i].name;
    return tid == m->main_tid ? "MainThread" : "";
}

uint32_t threadmap_idx(threadmap *m, uint32_t tid)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->threads[i].tid == tid)
            return m->threads[i].idx;
    if (m->n >= THREADMAP_MAX)
        m->n = 0;
    if (grow_array((void **)&m->threads, &m->cap, m->n + 1, sizeof *m->threads, 16) < 0)
        return 0;
    /* A thread seen for the first time: its name may be newer than the last read. */
    if (!name_of(m, tid)[0] && clock_mono_ns() - m->names_ns >= NAMES_NEW_NS)
        threadmap_refresh_names(m);
    threadmap_thread *t = &m->threads[m->n++];
    t->tid = tid;
    t->idx = m->next_idx++;
    snprintf(t->name, sizeof t->name, "%s", name_of(m, tid));
    m->emit(t->idx, t->tid, t->name, m->ctx);
    return t->idx;
}

uint64_t threadmap_names_ns(const threadmap *m) { return m->names_ns; }

void threadmap_forget(threadmap *m) { m->n = 0; }

void threadmap_free(threadmap *m)
{
    free(m->threads);
    free(m->names);
    m->threads = NULL;
    m->names = NULL;
    m->n = m->cap = 0;
    m->names_n = 0;
}
