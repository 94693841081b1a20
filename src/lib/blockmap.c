/*
 * blockmap: a sampled block's address to its allocation event's ordinal (blockmap.h).
 * The writer thread's alone.
 */
#include "blockmap.h"

#include <sys/mman.h>

#include "common/mix64.h"

#define CAP ((size_t)1 << BLOCKMAP_LOG2)
#define MASK (CAP - 1)

static size_t home(uint64_t addr) { return (size_t)mix64(addr) & MASK; }

int blockmap_put(blockmap *m, uint64_t addr, uint64_t ordinal)
{
    if (!addr || m->failed)
        return -1;
    if (!m->slots) {
        void *p = mmap(NULL, CAP * sizeof *m->slots, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            m->failed = 1;
            return -1;
        }
        m->slots = p;
    }
    size_t i = home(addr);
    while (m->slots[i].addr && m->slots[i].addr != addr)
        i = (i + 1) & MASK;
    if (m->slots[i].addr) {
        m->slots[i].ordinal = ordinal;
        return 0;
    }
    if (m->n >= CAP / 2)
        return -1;
    m->slots[i] = (blockmap_slot){addr, ordinal};
    m->n++;
    return 0;
}

int blockmap_take(blockmap *m, uint64_t addr, uint64_t *ordinal)
{
    if (!addr || !m->n)
        return 0;
    size_t i = home(addr);
    while (m->slots[i].addr != addr) {
        if (!m->slots[i].addr)
            return 0;
        i = (i + 1) & MASK;
    }
    *ordinal = m->slots[i].ordinal;
    /* Backward shift: each entry after the hole that may move into it does, so every
     * entry stays reachable from its home without crossing an empty slot. */
    size_t hole = i;
    for (size_t j = (i + 1) & MASK; m->slots[j].addr; j = (j + 1) & MASK) {
        size_t h = home(m->slots[j].addr);
        /* j's entry may fill the hole when its home is not within (hole, j]. */
        if (((j - h) & MASK) >= ((j - hole) & MASK)) {
            m->slots[hole] = m->slots[j];
            hole = j;
        }
    }
    m->slots[hole].addr = 0;
    m->n--;
    return 1;
}

void blockmap_free(blockmap *m)
{
    if (m->slots)
        munmap(m->slots, CAP * sizeof *m->slots);
    m->slots = NULL;
    m->n = 0;
    m->failed = 0;
}
