/*
 * fuzz_linetable: a libFuzzer target for the line-table decoders (src/common/linetable.c).
 *
 * A log carries each code object's raw line table, so the tool decodes tables it did not
 * write: every kind (PYPROF_LT_*, and kinds no writer uses) is decoded with arbitrary
 * first lines and offsets.  An input is
 *
 *     kind (1 byte) | first_line (4 bytes, LE) | offset (8 bytes, LE) | cut (1) | table
 *
 * and shorter inputs are padded with zeros.  The table is copied into a buffer of exactly
 * its size, so that a read past its end is caught by AddressSanitizer.  Besides the given
 * offset, the offsets 0 .. 2 * len + 8 (at most SWEEP of them) are decoded, and what
 * linetable.h promises is checked:
 *   - a negative offset, an empty or absent table, and an unknown kind give first_line;
 *   - the same question gives the same answer, and the table is not written to;
 *   - PYPROF_LT_LNOTAB_U8 (unsigned increments) never goes below first_line, and its line
 *     never goes down as the offset grows (unless it falls back to first_line);
 *   - PYPROF_LT_LOCATIONS_311 counts 2-byte code units: offsets 2k and 2k + 1 agree;
 *   - PYPROF_LT_LINETABLE_310 and _311 read a table entry by entry: a table cut after
 *     `cut` bytes answers first_line for what it no longer covers, and the full table's
 *     answer for the rest, so a prefix either agrees with the whole or gives first_line.
 *
 * Built and run by `make fuzz` (tests/fuzz/README.md); `make fuzz-replay` replays
 * tests/fuzz/corpus-linetable/ with tests/fuzz/replay_main.c.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <pyprof/format.h>

#include "common/linetable.h"
#include "fuzz.h"

#define HEAD 14
/* Offsets swept per input: enough for every entry of a table the fuzzer makes. */
#define SWEEP 512

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* One decode, with the promises that hold for every kind and offset. */
static int line_of(int kind, const uint8_t *tab, size_t len, int first, int64_t off)
{
    int line = linetable_line(kind, tab, len, first, off);
    CHECK(linetable_line(kind, tab, len, first, off) == line);
    if (off < 0 || len == 0 || kind <= PYPROF_LT_NONE || kind > PYPROF_LT_LOCATIONS_311)
        CHECK(line == first);
    if (kind == PYPROF_LT_LNOTAB_U8)
        CHECK(line >= first);
    return line;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t head[HEAD] = {0};
    memcpy(head, data, size < HEAD ? size : HEAD);
    int kind = head[0] % 8; /* the four kinds, NONE, and three unknown ones */
    int first = (int)(int32_t)(uint32_t)le(head + 1, 4);
    int64_t off = (int64_t)le(head + 5, 8);
    size_t len = size > HEAD ? size - HEAD : 0;
    size_t cut = len ? head[13] % (len + 1) : 0;

    /* Exactly the table's bytes (one byte more allocated for an empty table, unused). */
    uint8_t *tab = malloc(len ? len : 1);
    if (!tab)
        return 0;
    if (len)
        memcpy(tab, data + HEAD, len);

    CHECK(linetable_line(kind, NULL, len, first, off) == first);
    CHECK(line_of(kind, tab, len, first, -1) == first);
    int whole = line_of(kind, tab, len, first, off);
    int partial = line_of(kind, tab, cut, first, off);
    int by_entry = kind == PYPROF_LT_LINETABLE_310 || kind == PYPROF_LT_LOCATIONS_311;
    if (by_entry)
        CHECK(partial == first || partial == whole);

    size_t sweep = 2 * len + 8 < SWEEP ? 2 * len + 8 : SWEEP;
    int prev = first;
    for (size_t o = 0; o < sweep; o++) {
        int line = line_of(kind, tab, len, first, (int64_t)o);
        if (kind == PYPROF_LT_LNOTAB_U8)
            CHECK(line >= prev || line == first);
        if (kind == PYPROF_LT_LOCATIONS_311 && (o & 1))
            CHECK(line == prev);
        if (by_entry) {
            int p = line_of(kind, tab, cut, first, (int64_t)o);
            CHECK(p == first || p == line);
        }
        prev = line;
    }
    /* The decoders take the table as const: it is as it was. */
    CHECK(len == 0 || memcmp(tab, data + HEAD, len) == 0);
    free(tab);
    return 0;
}
