/*
 * fnv: the FNV-1a hash (Fowler, Noll, Vo), for hashing names and byte strings into the
 * tables of both programs (the tool's functions and stacks, pprof's string table, `top`'s
 * functions; the writer's stack map).  No state, no call: async-signal-safe.
 *
 *   FNV_OFFSET, FNV_PRIME   the 64-bit offset basis and prime
 *   fnv_byte(h, b)          h with one more byte
 *   fnv_bytes(h, p, n)      h with n more bytes
 *   fnv_str(h, s)           h with the bytes of the C string s (not its NUL)
 */
#ifndef PYPROF_FNV_H
#define PYPROF_FNV_H

#include <stddef.h>
#include <stdint.h>

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static inline uint64_t fnv_byte(uint64_t h, uint8_t b) { return (h ^ b) * FNV_PRIME; }

static inline uint64_t fnv_bytes(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = fnv_byte(h, b[i]);
    return h;
}

static inline uint64_t fnv_str(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = fnv_byte(h, (uint8_t)*s);
    return h;
}

#endif
