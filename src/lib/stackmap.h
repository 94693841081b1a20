/*
 * stackmap: stack interning for the writer.  A stack (its frames, outermost first) gets
 * a small id the first time it is seen, and the same id while it is remembered, so the log
 * holds each STACK record once and every SAMPLE refers to it by id.  Ids only grow: after
 * a reset a stack seen again gets a new id (and the writer a new STACK record), never an
 * id the log already used for another stack.  Memory is bounded: past
 * STACKMAP_ARENA_MAX frames the map forgets everything and starts afresh.  [not sigsafe]
 *
 *   stackmap_intern   the id of a stack, and whether it is new
 *   stackmap_reset    forgets every stack (ids go on growing)
 *   stackmap_free     frees the map's memory; a zeroed stackmap is an empty map
 */
#ifndef PYPROF_STACKMAP_H
#define PYPROF_STACKMAP_H

#include <stddef.h>
#include <stdint.h>

#include "common/logenc.h"

#define STACKMAP_ARENA_MAX (4u << 20) /* frames kept for dedup before a reset */

typedef struct stackmap_entry {
    uint64_t hash;
    uint32_t off, n, id;
} stackmap_entry;

/* Zero-initialised, it is empty. */
typedef struct stackmap {
    logenc_frame *arena;       /* the frames of every remembered stack, back to back */
    size_t arena_len, arena_cap;
    stackmap_entry *stacks;
    size_t stacks_n, stacks_cap;
    uint32_t *index;           /* open addressing on the hash; slots hold entry index + 1 */
    size_t index_cap;
    uint32_t next_id;
} stackmap;

/* The id of the stack f[0..n), > 0; *is_new is 1 when it was not remembered (the caller
 * writes its STACK record now).  0 when memory is short. */
uint32_t stackmap_intern(stackmap *m, const logenc_frame *f, size_t n, int *is_new);

void stackmap_reset(stackmap *m);
void stackmap_free(stackmap *m);

#endif
