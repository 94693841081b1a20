/*
 * codemap: code id -> the writer's copy of a code object's line table and CODE record
 * (codemap.h).
 */
#include "codemap.h"

#include <stdlib.h>

static size_t home(uint32_t id, size_t cap) { return (id * 2654435761u) & (cap - 1); }

code_info *codemap_find(const codemap *m, uint32_t id)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = home(id, m->cap);; i = (i + 1) & mask) {
        if (m->slots[i].id == id)
            return &m->slots[i];
        if (m->slots[i].id == 0)
            return NULL;
    }
}

code_info *codemap_slot(codemap *m, uint32_t id)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 1024;
        code_info *n = calloc(ncap, sizeof *n);
        if (!n)
            return NULL;
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].id) {
                size_t j = home(m->slots[i].id, ncap);
                while (n[j].id)
                    j = (j + 1) & (ncap - 1);
                n[j] = m->slots[i];
            }
        free(m->slots);
        m->slots = n;
        m->cap = ncap;
    }
    size_t mask = m->cap - 1;
    size_t i = home(id, m->cap);
    while (m->slots[i].id && m->slots[i].id != id)
        i = (i + 1) & mask;
    if (!m->slots[i].id)
        m->n++;
    return &m->slots[i];
}

void codemap_keep(codemap *m, int (*keep)(uint32_t id))
{
    codemap old = *m;
    *m = (codemap){0};
    for (size_t i = 0; i < old.cap; i++) {
        if (!old.slots[i].id)
            continue;
        code_info *ci = keep(old.slots[i].id) ? codemap_slot(m, old.slots[i].id) : NULL;
        if (ci) {
            *ci = old.slots[i];
        } else {
            free(old.slots[i].lt);
            free(old.slots[i].rec);
        }
    }
    free(old.slots);
}

void codemap_free(codemap *m)
{
    for (size_t i = 0; i < m->cap; i++) {
        free(m->slots[i].lt);
        free(m->slots[i].rec);
    }
    free(m->slots);
    *m = (codemap){0};
}
