/*
 * linetable: decoders for CPython's line tables.
 *
 * The formats (measured and cross-checked against dis/co_lines/co_positions on every
 * version here; see docs/CPYTHON.md, "Line tables"):
 *   2.7       co_lnotab  (addr_incr u8, line_incr u8) pairs
 *   3.6-3.9   co_lnotab  (addr_incr u8, line_incr int8) pairs
 *   3.10      co_linetable (start_delta u8, line_delta int8; -128 = no line), bytes
 *   3.11+     location table: entries of a header byte (bit 7 set, code in bits 6-3,
 *             length-1 in bits 2-0, in 2-byte code units) and code-dependent varints.
 */
#include "linetable.h"

#include <limits.h>

#include <pyprof/format.h>

static int lnotab_line(const uint8_t *tab, size_t len, int first_line, int64_t offset,
                       int signed_incr)
{
    int64_t line = first_line;
    int64_t addr = 0;
    for (size_t i = 0; i + 1 < len; i += 2) {
        addr += tab[i];
        if (addr > offset)
            break;
        line += signed_incr ? (int8_t)tab[i + 1] : tab[i + 1];
        if (line > INT_MAX || line < INT_MIN)
            return first_line; /* no real table goes there */
    }
    return (int)line;
}

static int linetable310_line(const uint8_t *tab, size_t len, int first_line, int64_t offset)
{
    int64_t line = first_line;
    int64_t end = 0;
    for (size_t i = 0; i + 1 < len; i += 2) {
        int64_t start = end;
        end += tab[i];
        int8_t delta = (int8_t)tab[i + 1];
        if (delta != -128)
            line += delta;
        if (line > INT_MAX || line < INT_MIN)
            return first_line; /* no real table goes there */
        if (start <= offset && offset < end)
            return delta == -128 ? -1 : (int)line;
    }
    return first_line;
}

/* The location table's varint: 6-bit groups, little-endian, 0x40 = more follows. */
static int loc_varint(const uint8_t *tab, size_t len, size_t *i, uint32_t *out)
{
    uint32_t v = 0;
    unsigned shift = 0;
    for (;;) {
        if (*i >= len || shift > 28)
            return -1;
        uint8_t b = tab[(*i)++];
        v |= (uint32_t)(b & 0x3f) << shift;
        shift += 6;
        if (!(b & 0x40))
            break;
    }
    *out = v;
    return 0;
}

static int loc_svarint(const uint8_t *tab, size_t len, size_t *i, int32_t *out)
{
    uint32_t u;
    if (loc_varint(tab, len, i, &u) < 0)
        return -1;
    *out = (u & 1) ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
    return 0;
}

static int locations311_line(const uint8_t *tab, size_t len, int first_line, int64_t offset)
{
    int64_t unit = offset / 2;
    int64_t start = 0;
    int64_t line = first_line;
    size_t i = 0;
    while (i < len) {
        uint8_t head = tab[i++];
        if (!(head & 0x80))
            return first_line; /* lost synchronisation: not a table we understand */
        int code = (head >> 3) & 15;
        int64_t n = (head & 7) + 1;
        int has_line = 1;
        uint32_t u;
        int32_t s;
        if (code <= 9) {
            i += 1;
        } else if (code <= 12) {
            line += code - 10;
            i += 2;
        } else if (code == 13) {
            if (loc_svarint(tab, len, &i, &s) < 0)
                return first_line;
            line += s;
        } else if (code == 14) {
            if (loc_svarint(tab, len, &i, &s) < 0 || loc_varint(tab, len, &i, &u) < 0 ||
                loc_varint(tab, len, &i, &u) < 0 || loc_varint(tab, len, &i, &u) < 0)
                return first_line;
            line += s;
        } else {
            has_line = 0;
        }
        if (line > INT_MAX || line < INT_MIN)
            return first_line; /* no real table goes there */
        if (start <= unit && unit < start + n)
            return has_line ? (int)line : -1;
        start += n;
    }
    return first_line;
}

int linetable_line(int kind, const uint8_t *tab, size_t len, int first_line, int64_t offset)
{
    if (offset < 0 || !tab)
        return first_line;
    switch (kind) {
    case PYPROF_LT_LNOTAB_U8:
        return lnotab_line(tab, len, first_line, offset, 0);
    case PYPROF_LT_LNOTAB_S8:
        return lnotab_line(tab, len, first_line, offset, 1);
    case PYPROF_LT_LINETABLE_310:
        return linetable310_line(tab, len, first_line, offset);
    case PYPROF_LT_LOCATIONS_311:
        return locations311_line(tab, len, first_line, offset);
    default:
        return first_line;
    }
}
