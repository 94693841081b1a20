/*
 * ring: lock-free multi-producer, single-consumer byte ring.  See ring.h.
 *
 * Design.  `head` and `tail` are byte counters that only grow; a position's place in the
 * buffer is counter & (size - 1).  Every record starts with an 8-byte header word:
 *
 *     bits 0..31   length of the whole record, header included, a multiple of 8
 *     bit  32      committed
 *     bit  33      skip (padding at the end of the buffer, or a cancelled record)
 *
 * A producer reserves by advancing `head` with one compare-and-swap.  If the record would
 * cross the end of the buffer, the same CAS also takes the rest of the buffer, which
 * becomes a committed padding record, and the record starts at offset 0.  The producer
 * fills its payload and then stores its header with release ordering; that store is the
 * commit.  The consumer reads the header at `tail` with acquire ordering: zero means "not
 * committed yet" (the producer is still writing; the consumer waits and tries later).
 *
 * Free space must therefore never show a committed bit left from an earlier lap.  The
 * consumer guarantees it: before it gives a record's bytes back (advancing `tail`), it
 * zeroes them.  A reserving producer writes its length into the header at once (without
 * the committed bit) and the commit adds the bit.
 *
 * Producers are signal handlers on any thread.  A handler cannot be interrupted by itself
 * on the same thread (the signal is blocked while it runs), and threads only compete on
 * the CAS, so reserve is wait-free except for CAS retries, and never blocks.
 */
#include "ring.h"

#include <stdatomic.h>
#include <string.h>

#define HDR_LEN 8u
#define HDR_COMMITTED (1ull << 32)
#define HDR_SKIP (1ull << 33)
#define HDR_LEN_MASK 0xffffffffull

static inline uint64_t align8(uint64_t n) { return (n + 7u) & ~(uint64_t)7u; }

int ring_init(ring *r, void *mem, uint64_t size)
{
    if (size < 4096 || (size & (size - 1)) || size > (1ull << 31) || ((uintptr_t)mem & 7))
        return -1;
    r->buf = mem;
    r->size = size;
    atomic_store(&r->head, 0);
    atomic_store(&r->tail, 0);
    return 0;
}

static inline _Atomic uint64_t *hdr_at(ring *r, uint64_t pos)
{
    return (_Atomic uint64_t *)(void *)(r->buf + (pos & (r->size - 1)));
}

void *ring_reserve(ring *r, size_t len)
{
    if (len == 0 || len > RING_MAX_RECORD(r->size))
        return NULL;
    uint64_t need = align8(len) + HDR_LEN;
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    for (;;) {
        uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
        uint64_t off = head & (r->size - 1);
        uint64_t pad = (off + need > r->size) ? r->size - off : 0;
        if (head + pad + need - tail > r->size)
            return NULL;
        if (atomic_compare_exchange_weak_explicit(&r->head, &head, head + pad + need,
                                                  memory_order_acq_rel, memory_order_relaxed)) {
            if (pad)
                atomic_store_explicit(hdr_at(r, head), pad | HDR_COMMITTED | HDR_SKIP,
                                      memory_order_release);
            /* The length goes in now, without the committed bit: the consumer waits on
             * that bit alone. */
            _Atomic uint64_t *h = hdr_at(r, head + pad);
            atomic_store_explicit(h, need, memory_order_relaxed);
            return (uint64_t *)h + 1;
        }
    }
}

static void publish(void *rec, uint64_t flags)
{
    _Atomic uint64_t *h = (_Atomic uint64_t *)((uint64_t *)rec - 1);
    uint64_t len = atomic_load_explicit(h, memory_order_relaxed) & HDR_LEN_MASK;
    atomic_store_explicit(h, len | flags, memory_order_release);
}

void ring_commit(ring *r, void *rec)
{
    (void)r;
    publish(rec, HDR_COMMITTED);
}

void ring_cancel(ring *r, void *rec)
{
    (void)r;
    publish(rec, HDR_COMMITTED | HDR_SKIP);
}

const void *ring_peek(ring *r, size_t *len)
{
    for (;;) {
        uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
        uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
        if (tail == head)
            return NULL;
        uint64_t h = atomic_load_explicit(hdr_at(r, tail), memory_order_acquire);
        if (!(h & HDR_COMMITTED))
            return NULL;
        if (h & HDR_SKIP) {
            ring_release(r);
            continue;
        }
        *len = (size_t)((h & HDR_LEN_MASK) - HDR_LEN);
        return (const uint8_t *)hdr_at(r, tail) + HDR_LEN;
    }
}

void ring_release(ring *r)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t h = atomic_load_explicit(hdr_at(r, tail), memory_order_relaxed);
    uint64_t n = h & HDR_LEN_MASK;
    memset(r->buf + (tail & (r->size - 1)), 0, n);
    atomic_store_explicit(&r->tail, tail + n, memory_order_release);
}

uint64_t ring_used(const ring *r)
{
    return atomic_load(&((ring *)r)->head) - atomic_load(&((ring *)r)->tail);
}
