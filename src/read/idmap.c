/*
 * idmap: the tool's small hash maps.  See idmap.h.
 *
 * Both tables grow by doubling and stay at most half full, so a probe is short and a
 * failed lookup stops at the first free slot.  An idtab slot keeps its entry's hash
 * (mixed, then folded to 32 bits): growing rehashes without asking the caller, and a
 * probe compares entries only when their hashes agree.
 */
#include "idmap.h"

#include <stdlib.h>
#include <string.h>

#include "common/growarray.h"

/* Spreads a hash over the low bits that pick a slot. */
static uint64_t mix(uint64_t h)
{
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return h;
}

/* ---- idmap -------------------------------------------------------------------------- */

uint32_t idmap_get(const idmap *m, uint64_t key)
{
    if (key < m->ndirect)
        return m->direct[key];
    if (!m->cap)
        return IDMAP_EMPTY;
    for (size_t i = (size_t)mix(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->vals[i] == IDMAP_EMPTY)
            return IDMAP_EMPTY;
        if (m->keys[i] == key)
            return m->vals[i];
    }
}

static void idmap_insert_unchecked(idmap *m, uint64_t key, uint32_t val)
{
    size_t i = (size_t)mix(key) & (m->cap - 1);
    while (m->vals[i] != IDMAP_EMPTY && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (m->vals[i] == IDMAP_EMPTY)
        m->n++;
    m->keys[i] = key;
    m->vals[i] = val;
}

int idmap_set(idmap *m, uint64_t key, uint32_t val)
{
    if (key < IDMAP_DIRECT_MAX) {
        if (key >= m->ndirect) {
            size_t had = m->ndirect;
            if (grow_array((void **)&m->direct, &m->ndirect, (size_t)key + 1, sizeof *m->direct,
                           64))
                return -1;
            memset(m->direct + had, 0xff, (m->ndirect - had) * sizeof *m->direct);
        }
        m->direct[key] = val;
        return 0;
    }
    if ((m->n + 1) * 2 > m->cap) {
        idmap old = *m;
        size_t cap = old.cap ? old.cap * 2 : 64;
        m->keys = malloc(cap * sizeof *m->keys);
        m->vals = malloc(cap * sizeof *m->vals);
        if (!m->keys || !m->vals) {
            free(m->keys);
            free(m->vals);
            *m = old;
            return -1;
        }
        memset(m->vals, 0xff, cap * sizeof *m->vals);
        m->cap = cap;
        m->n = 0;
        for (size_t i = 0; i < old.cap; i++)
            if (old.vals[i] != IDMAP_EMPTY)
                idmap_insert_unchecked(m, old.keys[i], old.vals[i]);
        free(old.keys);
        free(old.vals);
    }
    idmap_insert_unchecked(m, key, val);
    return 0;
}

void idmap_free(idmap *m)
{
    free(m->direct);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- idtab -------------------------------------------------------------------------- */

static uint32_t fold(uint64_t h)
{
    h = mix(h);
    return (uint32_t)(h ^ (h >> 32));
}

uint64_t idtab_hash2(uint32_t a, uint32_t b, int32_t c)
{
    uint64_t h = ((uint64_t)a << 32 | b) * 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)(uint32_t)c * 0xc2b2ae3d27d4eb4full;
    return h ^ (h >> 29);
}

static void put(idtab_slot *slots, size_t nslots, uint32_t hash, uint32_t idx)
{
    size_t i = hash & (nslots - 1);
    while (slots[i].idx != IDTAB_NONE)
        i = (i + 1) & (nslots - 1);
    slots[i].idx = idx;
    slots[i].hash = hash;
}

int idtab_reserve(idtab *t, size_t n)
{
    if (n * 2 <= t->nslots)
        return 0;
    size_t ns = t->nslots ? t->nslots : 256;
    while (n * 2 > ns)
        ns *= 2;
    idtab_slot *s = malloc(ns * sizeof *s);
    if (!s)
        return -1;
    memset(s, 0xff, ns * sizeof *s);
    for (size_t i = 0; i < t->nslots; i++)
        if (t->slots[i].idx != IDTAB_NONE)
            put(s, ns, t->slots[i].hash, t->slots[i].idx);
    free(t->slots);
    t->slots = s;
    t->nslots = ns;
    return 0;
}

void idtab_add(idtab *t, uint64_t h, uint32_t idx)
{
    put(t->slots, t->nslots, fold(h), idx);
    t->n++;
}

/* The entry at or after *pos with hash `f`, or IDTAB_NONE at the first free slot. */
static uint32_t scan(const idtab *t, uint32_t f, size_t *pos)
{
    for (size_t i = *pos;; i = (i + 1) & (t->nslots - 1)) {
        if (t->slots[i].idx == IDTAB_NONE || t->slots[i].hash == f) {
            *pos = i;
            return t->slots[i].idx;
        }
    }
}

uint32_t idtab_first(const idtab *t, uint64_t h, size_t *pos)
{
    if (!t->nslots)
        return IDTAB_NONE;
    uint32_t f = fold(h);
    *pos = f & (t->nslots - 1);
    return scan(t, f, pos);
}

uint32_t idtab_next(const idtab *t, uint64_t h, size_t *pos)
{
    *pos = (*pos + 1) & (t->nslots - 1);
    return scan(t, fold(h), pos);
}

void idtab_free(idtab *t)
{
    free(t->slots);
    memset(t, 0, sizeof *t);
}
