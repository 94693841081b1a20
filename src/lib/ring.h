/*
 * ring: the buffer between the signal handler (many producers, one per thread that takes
 * a signal) and the writer thread (the one consumer).  Variable-size records, lock-free:
 * a producer reserves space with one compare-and-swap, fills it, and commits it; the
 * consumer takes committed records in reservation order.  A record never wraps around
 * the end of the buffer (a padding record fills the tail instead), so every record is
 * one contiguous block.  When the buffer is full, reserve fails and the caller counts a
 * drop: producers never wait.
 *
 * The memory is the caller's: ring_init takes it, nothing here allocates.
 */
#ifndef PYPROF_RING_H
#define PYPROF_RING_H

#include <stddef.h>
#include <stdint.h>

typedef struct ring {
    uint8_t *buf;
    uint64_t size;         /* a power of two */
    _Atomic uint64_t head; /* next byte to reserve (monotonic, not masked) */
    _Atomic uint64_t tail; /* next byte the consumer reads (monotonic) */
} ring;

/* Largest record ring_reserve accepts for a ring of `size` bytes. */
#define RING_MAX_RECORD(size) ((size) / 4)

/* `mem` must be `size` bytes, zeroed, 8-byte aligned; `size` a power of two >= 4096.
 * Returns 0, or -1 when the size is not acceptable. */
int ring_init(ring *r, void *mem, uint64_t size);

/* [sigsafe] Reserves `len` bytes (1 .. RING_MAX_RECORD).  Returns a pointer to them,
 * 8-byte aligned, or NULL when the ring lacks the space.  Every successful reserve must
 * be followed by ring_commit or ring_cancel on the same pointer. */
void *ring_reserve(ring *r, size_t len);

/* [sigsafe] Publishes a reserved record to the consumer. */
void ring_commit(ring *r, void *rec);

/* [sigsafe] Gives a reserved record up; the consumer skips it. */
void ring_cancel(ring *r, void *rec);

/* [consumer only] Returns the oldest committed record and its length (the length asked
 * of reserve, rounded up to 8), or NULL when there is none yet or the oldest reserved
 * record is still being written.  Skips padding and cancelled records itself. */
const void *ring_peek(ring *r, size_t *len);

/* [consumer only] Frees the record ring_peek returned. */
void ring_release(ring *r);

/* [any thread] Bytes reserved and not yet released. */
uint64_t ring_used(const ring *r);

#endif
