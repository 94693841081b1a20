/*
 * allocset: the live sampled addresses (see allocset.h).  SIGNAL HANDLER: insert, remove
 * and live run inside the allocation hooks, which a program's signal handler may reach;
 * they use atomics on the mapped table only.
 */
#include "allocset.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#define NSLOTS (1u << ALLOCSET_LOG2)
#define MASK (NSLOTS - 1u)
#define EMPTY ((uintptr_t)0)
#define DELETED ((uintptr_t)1) /* never a block's address: blocks are aligned */

static _Atomic uintptr_t *slots;
/* A counting filter in front of the table: per bucket of addresses (allocset_bucket), how
 * many are in the set.  Raised before an insert, lowered after
 * a removal, so a bucket at 0 proves its addresses absent: a free of an unsampled block reads
 * one byte of a 64 KiB array instead of a slot of the 1 MiB table. */
_Atomic uint8_t *allocset_filter;
#define filter allocset_filter
static _Atomic uint64_t live;
static _Atomic int inserting; /* inserts under way (the sweep waits for none) */

static inline uint32_t home(uintptr_t addr)
{
    return (uint32_t)(allocset_mix(addr) >> (64 - ALLOCSET_LOG2));
}

int allocset_init(void)
{
    if (slots)
        return 0;
    size_t table = NSLOTS * sizeof *slots, fsize = (size_t)1 << ALLOCSET_FILTER_LOG2;
    void *m = mmap(NULL, table + fsize, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    filter = (_Atomic uint8_t *)((char *)m + table);
    slots = m;
    return 0;
}

int allocset_insert(uintptr_t addr)
{
    if (!slots || addr <= DELETED)
        return -1;
    _Atomic uint8_t *f = &filter[allocset_bucket(addr)];
    if (atomic_load_explicit(f, memory_order_relaxed) == UINT8_MAX)
        return -1; /* 255 live addresses in one bucket: not an allocator's */
    atomic_fetch_add(f, 1);
    atomic_fetch_add(&inserting, 1);
    uint32_t h = home(addr);
    int rc = -1;
    for (uint32_t i = 0; i < ALLOCSET_PROBES; i++) {
        _Atomic uintptr_t *s = &slots[(h + i) & MASK];
        uintptr_t v = atomic_load_explicit(s, memory_order_acquire);
        while (v == EMPTY || v == DELETED) {
            if (atomic_compare_exchange_weak(s, &v, addr)) {
                rc = 0;
                goto out;
            }
        }
    }
out:
    atomic_fetch_sub(&inserting, 1);
    if (rc == 0)
        atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
    else
        atomic_fetch_sub(f, 1);
    return rc;
}

int allocset_remove(uintptr_t addr)
{
    if (!slots || addr <= DELETED)
        return 0;
    _Atomic uint8_t *f = &filter[allocset_bucket(addr)];
    if (!atomic_load_explicit(f, memory_order_acquire))
        return 0;
    uint32_t h = home(addr);
    for (uint32_t i = 0; i < ALLOCSET_PROBES; i++) {
        _Atomic uintptr_t *s = &slots[(h + i) & MASK];
        uintptr_t v = atomic_load_explicit(s, memory_order_acquire);
        if (v == EMPTY)
            return 0;
        if (v == addr && atomic_compare_exchange_strong(s, &v, DELETED)) {
            atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
            atomic_fetch_sub(f, 1);
            return 1;
        }
    }
    return 0;
}

uint64_t allocset_live(void) { return atomic_load_explicit(&live, memory_order_relaxed); }

void allocset_sweep(void)
{
    if (!slots)
        return;
    /* Start after an empty slot and go backwards round the table, so a run of deleted
     * slots ending at an empty one is emptied from its end in one pass. */
    uint32_t e = 0;
    while (e < NSLOTS && atomic_load(&slots[e]) != EMPTY)
        e++;
    if (e == NSLOTS)
        return; /* no empty slot at all: nothing can be proven unreachable */
    for (uint32_t n = 1; n < NSLOTS; n++) {
        uint32_t i = (e - n) & MASK;
        if (atomic_load(&inserting))
            return; /* next time */
        uintptr_t v = atomic_load(&slots[i]);
        if (v != DELETED || atomic_load(&slots[(i + 1) & MASK]) != EMPTY)
            continue;
        atomic_compare_exchange_strong(&slots[i], &v, EMPTY);
    }
}

void allocset_clear(void)
{
    if (!slots)
        return;
    /* Private anonymous pages read as zeros again: nothing is touched that was not. */
    size_t len = NSLOTS * sizeof *slots + ((size_t)1 << ALLOCSET_FILTER_LOG2);
    if (madvise((void *)slots, len, MADV_DONTNEED) < 0)
        memset((void *)slots, 0, len);
    atomic_store(&live, 0);
    atomic_store(&inserting, 0);
}
