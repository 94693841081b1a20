/*
 * codetable: the code-identity table and its two generations (see codetable.h).
 *
 * SIGNAL-HANDLER CODE: codetable_enter, codetable_leave, codetable_lookup,
 * codetable_publish, codetable_retire and codetable_flip_wanted run inside the sampling
 * signal handler (and on the wall-clock sampler thread).  They call nothing: loads,
 * stores, compare-and-swap and fetch-add on C11 atomics in static state and in the
 * tables mapped at start, all lock-free on x86_64.  No malloc, no lock, no stdio, no
 * pointer into the interpreter (the code object's address is only a key here), errno
 * untouched.
 *
 * Not in a handler: codetable_flip and codetable_holds run on the writer thread
 * (codetable_flip sleeps with nanosleep and calls the writer's callbacks);
 * codetable_start and codetable_reset on the thread that starts the sampler (or in a
 * fork child), when no handler runs.
 *
 * The protocol.  A sample counts itself in the active generation (CT.users) for as
 * long as it uses that table.  The writer flips `active` first, then waits for the old
 * generation's count to reach 0: a sample that loaded the old index after the flip sees
 * `active` change when it checks again and moves to the new table, so once the count is
 * 0 no sample can use the old table until the next flip makes it active again.  Only
 * then is it cleared.
 */
#include "codetable.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include <pyprof/format.h>

#include "common/mix64.h"

/* What a probe walks past: a slot retired by codetable_retire. */
#define SLOT_DEAD ((uintptr_t)1)
/* Slots a lookup probes before it gives up (CODETABLE_FULL). */
#define PROBES_MAX 64u

static struct {
    code_slot *tables[2]; /* two generations of the code table */
    _Atomic int active;
    _Atomic int users[2];     /* samples counted in each generation */
    _Atomic uint32_t fill[2]; /* slots claimed in each generation */
    _Atomic int flip_wanted;  /* the active table is half full: the writer flips it */
    _Atomic uint32_t next_id;
} CT;

void codetable_start(void *mem)
{
    codetable_reset();
    CT.tables[0] = (code_slot *)mem;
    CT.tables[1] = CT.tables[0] + CODE_TABLE_SLOTS;
    atomic_store(&CT.next_id, PYPROF_CODE_FIRST);
}

void codetable_reset(void)
{
    atomic_store(&CT.active, 0);
    atomic_store(&CT.users[0], 0);
    atomic_store(&CT.users[1], 0);
    atomic_store(&CT.fill[0], 0);
    atomic_store(&CT.fill[1], 0);
    atomic_store(&CT.flip_wanted, 0);
}

int codetable_enter(void)
{
    int t = atomic_load(&CT.active);
    atomic_fetch_add(&CT.users[t], 1);
    /* The writer may have flipped between our load and our increment; then use the table
     * it flipped to, which it will not clear while we are counted in. */
    if (atomic_load(&CT.active) != t) {
        atomic_fetch_sub(&CT.users[t], 1);
        t ^= 1;
        atomic_fetch_add(&CT.users[t], 1);
    }
    return t;
}

void codetable_leave(int t) { atomic_fetch_sub(&CT.users[t], 1); }

int codetable_lookup(int t, uintptr_t code, uint64_t digest, uint32_t *id, code_slot **slot)
{
    code_slot *tab = CT.tables[t];
    uint32_t mask = CODE_TABLE_SLOTS - 1;
    uint32_t i = (uint32_t)mix64(code) & mask;
    for (unsigned probe = 0; probe < PROBES_MAX; probe++, i = (i + 1) & mask) {
        code_slot *s = &tab[i];
        uintptr_t p = atomic_load_explicit(&s->ptr, memory_order_acquire);
        if (p == 0) {
            uintptr_t expect = 0;
            if (atomic_compare_exchange_strong(&s->ptr, &expect, code)) {
                atomic_store_explicit(&s->digest, digest, memory_order_relaxed);
                uint32_t fill = atomic_fetch_add(&CT.fill[t], 1) + 1;
                if (fill > CODE_TABLE_SLOTS / 2)
                    atomic_store(&CT.flip_wanted, 1);
                *id = atomic_fetch_add(&CT.next_id, 1);
                *slot = s;
                return CODETABLE_NEW;
            }
            p = expect;
        }
        if (p == code) {
            uint32_t have = atomic_load_explicit(&s->id, memory_order_acquire);
            if (have && atomic_load_explicit(&s->digest, memory_order_relaxed) == digest) {
                *id = have;
                return CODETABLE_FOUND;
            }
            if (!have)
                return CODETABLE_BUSY; /* another thread is filling it right now */
            /* Same address, different code object: an old entry.  Keep probing. */
        }
    }
    atomic_store(&CT.flip_wanted, 1);
    return CODETABLE_FULL;
}

uint32_t codetable_spare_id(void) { return atomic_fetch_add(&CT.next_id, 1); }

void codetable_publish(code_slot *s, uint32_t id)
{
    atomic_store_explicit(&s->id, id, memory_order_release);
}

void codetable_retire(code_slot *s)
{
    atomic_store_explicit(&s->digest, 0, memory_order_relaxed);
    atomic_store_explicit(&s->ptr, SLOT_DEAD, memory_order_release);
}

int codetable_flip_wanted(void) { return atomic_load(&CT.flip_wanted); }

int codetable_flip(void (*drain)(void *ctx), void (*rekey)(void *ctx), void *ctx)
{
    int old = atomic_load(&CT.active);
    atomic_store(&CT.active, old ^ 1);
    for (int spins = 0; atomic_load(&CT.users[old]) > 0 && spins < 100000; spins++) {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&CT.users[old]) > 0)
        return 0; /* a handler is stuck?  Never clear under it; try again later. */
    drain(ctx);
    memset(CT.tables[old], 0, CODE_TABLE_SLOTS * sizeof(code_slot));
    atomic_store(&CT.fill[old], 0);
    rekey(ctx);
    atomic_store(&CT.flip_wanted, 0);
    return 1;
}

int codetable_holds(uint32_t id)
{
    const code_slot *tab = CT.tables[atomic_load(&CT.active)];
    for (size_t s = 0; s < CODE_TABLE_SLOTS; s++)
        if (atomic_load_explicit(&tab[s].id, memory_order_relaxed) == id)
            return 1;
    return 0;
}
