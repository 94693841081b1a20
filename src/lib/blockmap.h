/*
 * blockmap: the writer's map from a sampled block's address to the ordinal its
 * allocation event got in an ALLOCS record, so that the block's free names it by a
 * small number rather than by its address (format.h, ALLOCS).  Open addressing with
 * linear probing on a fixed table mapped once (touched only where used), at most half
 * full; a removal shifts the entries after it back, so no tombstones.  The writer thread
 * alone uses it.  [not sigsafe]
 *
 * Interface:
 *   blockmap_put(m, addr, ordinal)  0, or -1 when the table is half full or cannot be
 *                                   mapped (the block is then named by its address); an
 *                                   address already in the map gets the new ordinal (its
 *                                   old block is freed, its free was not seen)
 *   blockmap_take(m, addr, &ordinal)  1 and the ordinal, removed; 0 when absent
 *   blockmap_free(m)                forgets every address and unmaps the table; a
 *                                   zeroed blockmap is empty
 */
#ifndef PYPROF_BLOCKMAP_H
#define PYPROF_BLOCKMAP_H

#include <stddef.h>
#include <stdint.h>

#define BLOCKMAP_LOG2 17 /* slots: 131072 of 16 bytes, 65536 blocks named by ordinal */

typedef struct blockmap_slot {
    uint64_t addr; /* 0: empty (no block lives at address 0) */
    uint64_t ordinal;
} blockmap_slot;

/* Zero-initialised, it is empty. */
typedef struct blockmap {
    blockmap_slot *slots; /* mapped at the first put */
    size_t n;
    int failed; /* the table could not be mapped */
} blockmap;

int blockmap_put(blockmap *m, uint64_t addr, uint64_t ordinal);
int blockmap_take(blockmap *m, uint64_t addr, uint64_t *ordinal);
void blockmap_free(blockmap *m);

#endif
