/*
 * idmap: the two small hash maps the tool's model is built with.
 *
 *   - idmap: uint64_t keys to uint32_t values, for a log's own ids (thread_idx, code_id,
 *     stack_id, tid) mapped to the profile's indices.  Writers number ids densely from 0,
 *     so keys below IDMAP_DIRECT_MAX index an array and only the others are hashed.
 *   - idtab: a set of uint32_t indices into an array the caller owns, found by a hash
 *     of the entry and the caller's own comparison: the interning of functions and
 *     stacks, the call tree's (parent, function, line) -> node and the call graph's
 *     (caller, line, callee) -> edge.  The key lives in the caller's entry, never here.
 *
 * Interface:
 *   IDMAP_EMPTY, IDMAP_EXCLUDED, IDMAP_DIRECT_MAX, idmap, idmap_get, idmap_set, idmap_free;
 *   IDTAB_NONE, idtab, idtab_hash2, idtab_reserve, idtab_add, idtab_first, idtab_next,
 *   idtab_free.
 *
 * Both tables are open addressing with linear probing, at most half full.  Not
 * thread-safe; tool-side only.
 */
#ifndef PYPROF_IDMAP_H
#define PYPROF_IDMAP_H

#include <stddef.h>
#include <stdint.h>

/* ---- idmap: uint64_t -> uint32_t --------------------------------------------------- */

#define IDMAP_EMPTY UINT32_MAX /* "no value"; never stored */
/* A value that is no index either: a key deliberately left out (the loader's thread the
 * --thread filter excludes, whose records are dropped). */
#define IDMAP_EXCLUDED (UINT32_MAX - 1)
#define IDMAP_DIRECT_MAX 65536u

typedef struct idmap {
    uint32_t *direct; /* keys below ndirect */
    size_t ndirect;
    uint64_t *keys; /* open addressing for the rest */
    uint32_t *vals;
    size_t cap, n;
} idmap;

/* A zeroed idmap is empty.  The value stored for `key`, or IDMAP_EMPTY. */
uint32_t idmap_get(const idmap *m, uint64_t key);

/* Stores `val` (not IDMAP_EMPTY) for `key`, replacing any earlier value.  Returns 0, or
 * -1 when out of memory (the map is unchanged). */
int idmap_set(idmap *m, uint64_t key, uint32_t val);

void idmap_free(idmap *m);

/* ---- idtab: a set of indices, hashed by what they index ---------------------------- */

#define IDTAB_NONE UINT32_MAX

typedef struct idtab_slot {
    uint32_t idx;  /* IDTAB_NONE where free */
    uint32_t hash; /* the entry's hash, folded, so growing needs no callback */
} idtab_slot;

typedef struct idtab {
    idtab_slot *slots;
    size_t nslots, n;
} idtab;

/* A hash of two 32-bit values and a signed one, for keys made of indices. */
uint64_t idtab_hash2(uint32_t a, uint32_t b, int32_t c);

/* Makes room for `n` entries in all, growing the table (a zeroed idtab is empty) so that
 * it stays at most half full.  Returns 0, or -1 when out of memory (unchanged). */
int idtab_reserve(idtab *t, size_t n);

/* Adds index `idx` with hash `h`; idtab_reserve must have made room.  The caller has
 * checked that no equal entry is there. */
void idtab_add(idtab *t, uint64_t h, uint32_t idx);

/* Walks the entries whose hash may be `h`, for the caller to compare:
 *     for (uint32_t i = idtab_first(t, h, &pos); i != IDTAB_NONE;
 *          i = idtab_next(t, h, &pos)) if (same(entries[i], key)) ...
 * The entries with another hash are skipped here. */
uint32_t idtab_first(const idtab *t, uint64_t h, size_t *pos);
uint32_t idtab_next(const idtab *t, uint64_t h, size_t *pos);

void idtab_free(idtab *t);

#endif
