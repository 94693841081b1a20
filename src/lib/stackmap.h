/*
 * stackmap: stack interning for the writer.  A stack is an array of 8-byte words, its
 * entries outermost first, and gets a small id the first time it is seen and the same id
 * while it is remembered, so the log holds each STACK (or NSTACK) record once and every
 * SAMPLE refers to it by id.  The writer keeps one map of Python stacks (each frame packed
 * into a word with stackmap_frame_word) and one of native stacks (addresses).  Ids only
 * grow: after a reset a stack seen again gets a new id (and the writer a new record),
 * never an id the log already used for another stack.  Memory is bounded: past
 * STACKMAP_ARENA_MAX words the map forgets everything and starts afresh.  [not sigsafe]
 *
 *   stackmap_frame_word  a frame (code id, line, starts a run) as one word
 *   stackmap_intern      the id of a stack, and whether it is new
 *   stackmap_reset       forgets every stack (ids go on growing)
 *   stackmap_free        frees the map's memory; a zeroed stackmap is an empty map
 */
#ifndef PYPROF_STACKMAP_H
#define PYPROF_STACKMAP_H

#include <stddef.h>
#include <stdint.h>

#define STACKMAP_ARENA_MAX (4u << 20) /* words kept for dedup before a reset */

typedef struct stackmap_entry {
    uint64_t hash;
    uint32_t off, n, id;
} stackmap_entry;

/* Zero-initialised, it is empty. */
typedef struct stackmap {
    uint64_t *arena; /* the words of every remembered stack, back to back */
    size_t arena_len, arena_cap;
    stackmap_entry *stacks;
    size_t stacks_n, stacks_cap;
    uint32_t *index; /* open addressing on the hash; slots hold entry index + 1 */
    size_t index_cap;
    uint32_t next_id;
} stackmap;

/* A Python frame as a word: the code id (below 2^31) and the run mark in the high half,
 * the line in the low half, so two stacks that differ only in their runs differ. */
static inline uint64_t stackmap_frame_word(uint32_t code_id, int32_t line, int run_start)
{
    return (uint64_t)(code_id | (run_start ? 0x80000000u : 0)) << 32 | (uint32_t)line;
}

/* The id of the stack w[0..n), > 0; *is_new is 1 when it was not remembered (the caller
 * writes its record now).  0 when memory is short. */
uint32_t stackmap_intern(stackmap *m, const uint64_t *w, size_t n, int *is_new);

void stackmap_reset(stackmap *m);
void stackmap_free(stackmap *m);

#endif
