/*
 * allocset: the addresses of the sampled blocks that are still alive, so that a free of
 * one of them can be recorded, and a free of any other block costs one miss.
 *
 * Lock-free: an open-addressing table of addresses with linear probing, in memory mapped
 * once, behind a counting filter (live addresses per bucket of 256 bytes of address
 * space, modulo 16 MiB) that answers most
 * lookups of an address never sampled from one byte.  Inserting takes an empty or deleted slot
 * with one compare-and-swap; removing marks the slot deleted with one compare-and-swap; a
 * lookup probes until an empty slot or ALLOCSET_PROBES slots.  Nothing waits, so every call is
 * safe in a signal handler and on any thread, and a thread preempted in the middle of one
 * delays nobody.  Deleted slots are given back by allocset_sweep (the writer thread, now and
 * then): a deleted slot followed by an empty one can become empty, since no probe for a live
 * address crosses it; the sweep skips while an insert is under way, so an insert never lands
 * past a slot the sweep empties under it.
 *
 * Interface:
 *   allocset_init()        [not sigsafe] maps the table (once); 0 or -1
 *   allocset_insert(addr)  [sigsafe] 0, or -1 when no slot was free within the probes
 *   allocset_may_hold(addr) [sigsafe] inline: 0 when addr is surely not in the set (its
 *                          filter bucket is empty), 1 when allocset_remove must look
 *   allocset_remove(addr)  [sigsafe] 1 when addr was in the set (now removed), else 0
 *   allocset_live()        [sigsafe] addresses in the set
 *   allocset_sweep()       [not sigsafe] deleted slots back to empty where safe
 *   allocset_clear()       [not sigsafe] forgets every address; nothing else may run
 *                          (a fork child's only thread, or between windows)
 */
#ifndef PYPROF_ALLOCSET_H
#define PYPROF_ALLOCSET_H

#include <stdatomic.h>
#include <stdint.h>

#define ALLOCSET_LOG2 17    /* slots: 131072 (1 MiB, touched only where used) */
#define ALLOCSET_PROBES 64u /* the farthest an address sits from its home slot */

#define ALLOCSET_FILTER_LOG2 16 /* the counting filter: 64 KiB of 8-bit counts */

/* The filter itself: NULL until allocset_init; read inline by allocset_may_hold. */
extern _Atomic uint8_t *allocset_filter;

static inline uint64_t allocset_mix(uintptr_t addr)
{
    return (uint64_t)addr * 0x9e3779b97f4a7c15ull;
}

/* The filter's bucket: the address's own bits above ALLOCSET_FILTER_SHIFT, so that the
 * frees of blocks near each other (a program's frees cluster where it just worked) read
 * the same few cache lines of the filter: one line stands for 16 KiB of addresses.  A
 * 256-byte span holds at most 16 blocks of the 16 bytes every allocator aligns to; spans
 * 16 MiB apart share a bucket, whose count stops at 255 (allocset_insert). */
#define ALLOCSET_FILTER_SHIFT 8
static inline uint32_t allocset_bucket(uintptr_t addr)
{
    return (uint32_t)(addr >> ALLOCSET_FILTER_SHIFT) & ((1u << ALLOCSET_FILTER_LOG2) - 1);
}

static inline int allocset_may_hold(uintptr_t addr)
{
    _Atomic uint8_t *f = allocset_filter;
    return f && __atomic_load_n(&f[allocset_bucket(addr)], __ATOMIC_ACQUIRE) != 0;
}

int allocset_init(void);
int allocset_insert(uintptr_t addr);
int allocset_remove(uintptr_t addr);
uint64_t allocset_live(void);
void allocset_sweep(void);
void allocset_clear(void);

#endif
