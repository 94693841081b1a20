/*
 * mix64: MurmurHash3's 64-bit finalizer, a pure bit mixer for hashing addresses into
 * open-addressing tables (the code table, lib/codetable.c, and the walker's set of
 * frames seen, lib/walk.c) and for the code objects' identity digests.  No state, no
 * call: async-signal-safe.
 */
#ifndef PYPROF_MIX64_H
#define PYPROF_MIX64_H

#include <stdint.h>

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

#endif
