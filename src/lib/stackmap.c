/*
 * stackmap: stacks to ids.  See stackmap.h.
 */
#include "stackmap.h"

#include <stdlib.h>
#include <string.h>

#include "common/fnv.h"
#include "common/growarray.h"

/* FNV-1a over whole words, each step folded so that the high bits of a word (addresses,
 * code ids) reach the low bits that pick a slot. */
static uint64_t hash_words(const uint64_t *w, size_t n)
{
    uint64_t h = FNV_OFFSET;
    for (size_t i = 0; i < n; i++) {
        h ^= w[i];
        h *= FNV_PRIME;
        h ^= h >> 29;
    }
    return h;
}

void stackmap_reset(stackmap *m)
{
    m->arena_len = 0;
    m->stacks_n = 0;
    if (m->index)
        memset(m->index, 0, m->index_cap * sizeof *m->index);
}

static int index_grow(stackmap *m)
{
    size_t ncap = m->index_cap ? m->index_cap * 2 : 4096;
    uint32_t *n = calloc(ncap, sizeof *n);
    if (!n)
        return -1;
    for (size_t e = 0; e < m->stacks_n; e++) {
        size_t j = m->stacks[e].hash & (ncap - 1);
        while (n[j])
            j = (j + 1) & (ncap - 1);
        n[j] = (uint32_t)e + 1;
    }
    free(m->index);
    m->index = n;
    m->index_cap = ncap;
    return 0;
}

uint32_t stackmap_intern(stackmap *m, const uint64_t *w, size_t n, int *is_new)
{
    *is_new = 0;
    if (m->arena_len + n > STACKMAP_ARENA_MAX)
        stackmap_reset(m);
    if ((m->stacks_n + 1) * 2 > m->index_cap && index_grow(m) < 0)
        return 0;
    uint64_t h = hash_words(w, n);
    size_t mask = m->index_cap - 1;
    size_t j = h & mask;
    for (; m->index[j]; j = (j + 1) & mask) {
        stackmap_entry *e = &m->stacks[m->index[j] - 1];
        if (e->hash == h && e->n == n &&
            (n == 0 || memcmp(m->arena + e->off, w, n * sizeof *w) == 0))
            return e->id;
    }
    if (grow_array((void **)&m->stacks, &m->stacks_cap, m->stacks_n + 1, sizeof *m->stacks,
                   1024) < 0 ||
        grow_array((void **)&m->arena, &m->arena_cap, m->arena_len + n, sizeof *m->arena,
                   65536) < 0)
        return 0;
    if (n)
        memcpy(m->arena + m->arena_len, w, n * sizeof *w);
    uint32_t id = ++m->next_id;
    m->stacks[m->stacks_n] = (stackmap_entry){
        .hash = h, .off = (uint32_t)m->arena_len, .n = (uint32_t)n, .id = id};
    m->arena_len += n;
    m->index[j] = (uint32_t)++m->stacks_n;
    *is_new = 1;
    return id;
}

void stackmap_free(stackmap *m)
{
    free(m->arena);
    free(m->stacks);
    free(m->index);
    memset(m, 0, sizeof *m);
}
