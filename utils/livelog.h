/*
 * livelog: what the records of one log that is still being written say about its ids,
 * kept as `pyprof dump` and `pyprof top` read it record by record (in the reader's
 * follow mode): thread_idx -> (tid, newest name), code_id -> names and file, stack_id ->
 * frames.  The ids are those of one file; a reader of a rotated series starts a new
 * livelog for each file.
 *
 * Interface: livelog_thread, livelog_code, livelog_stack, livelog, livelog_add,
 * livelog_get_thread, livelog_get_code, livelog_get_stack, livelog_code_name,
 * livelog_free.
 */
#ifndef PYPROF_LIVELOG_H
#define PYPROF_LIVELOG_H

#include <stddef.h>
#include <stdint.h>

#include <pyprof/reader.h>

#include "read/idmap.h"

typedef struct livelog_thread {
    uint64_t thread_idx, tid;
    char *name; /* the newest name the log gave it ("" until one is known) */
} livelog_thread;

typedef struct livelog_code {
    uint64_t code_id;
    int64_t first_line;
    char *name, *qualname, *filename; /* qualname "" where the version has none */
    int task; /* an asyncio task's frame (PYPROF_CODE_F_TASK): name is "<task NAME>" */
} livelog_code;

typedef struct livelog_stack {
    uint64_t stack_id, nframes;
    pyprof_frame *frames; /* outermost first, as in the log */
} livelog_stack;

typedef struct livelog {
    idmap thread_map, code_map, stack_map; /* log id -> index in the arrays below */
    livelog_thread *threads;
    livelog_code *codes;
    livelog_stack *stacks;
    size_t nthreads, ncodes, nstacks, cthreads, ccodes, cstacks;
} livelog;

/* Takes a THREAD, CODE or STACK record into the maps (other records are ignored).
 * Returns 0, or -1 when out of memory.  A zeroed livelog is empty. */
int livelog_add(livelog *l, const pyprof_record *rec);

/* What the log said of an id, or NULL when it has not said it (yet). */
const livelog_thread *livelog_get_thread(const livelog *l, uint64_t thread_idx);
const livelog_code *livelog_get_code(const livelog *l, uint64_t code_id);
const livelog_stack *livelog_get_stack(const livelog *l, uint64_t stack_id);

/* The name to show for a function: its qualified name where there is one, else its
 * name. */
const char *livelog_code_name(const livelog_code *c);

void livelog_free(livelog *l);

#endif
