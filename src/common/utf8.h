/*
 * utf8: encoding code points as UTF-8, checking it, and cleaning byte strings into valid
 * UTF-8, the one codec of both programs (the tool's JSON reading and text output too).  Pure
 * functions on memory the caller owns: no allocation, no libc call, no global state, so
 * they are async-signal-safe and run inside the sampling signal handler (the CODE
 * records' names, lib/codeid.c) as well as on the writer thread (thread names,
 * lib/pynames.c).  Reading the bytes out of the interpreter is the caller's business
 * (safe_read.h); nothing here dereferences a pointer it was not handed.
 *
 * Interface:
 *   utf8_len(c)                    bytes utf8_put writes for code point c
 *   utf8_put(out, c)               writes c as UTF-8 (U+FFFD for what UTF-8 cannot hold)
 *   utf8_char_len(in, len)         the length of the well-formed character at in, 0 when
 *                                  the bytes there start none
 *   utf8_clean(out, room, in, len, flags)
 *                                  copies valid UTF-8 from in, each byte that does not
 *                                  start a well-formed sequence becoming U+FFFD
 */
#ifndef PYPROF_UTF8_H
#define PYPROF_UTF8_H

#include <stddef.h>
#include <stdint.h>

#define UTF8_REPLACEMENT 0xfffdu

/* What UTF-8 cannot hold (a lone surrogate, from surrogateescape or a broken str, or a
 * value past U+10FFFF) is written as U+FFFD. */
static inline uint32_t utf8_scalar(uint32_t c)
{
    return (c >= 0xd800 && c < 0xe000) || c > 0x10ffff ? UTF8_REPLACEMENT : c;
}

/* [sigsafe] The bytes utf8_put writes for code point c: 1 to 4. */
static inline size_t utf8_len(uint32_t c)
{
    c = utf8_scalar(c);
    return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
}

/* [sigsafe] Writes code point c at out (room for utf8_len(c) bytes) as UTF-8; a NUL is
 * written as the byte 0.  Returns the bytes written. */
static inline size_t utf8_put(char *out, uint32_t c)
{
    c = utf8_scalar(c);
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xc0 | (c >> 6));
        out[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xe0 | (c >> 12));
        out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (c >> 18));
    out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    out[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* Continuation bytes lead byte b announces (1 to 3), 0 for an ASCII byte, 4 for a byte
 * that starts no well-formed sequence. */
static inline unsigned utf8_need(uint8_t b)
{
    return b < 0x80                 ? 0
           : b >= 0xc2 && b <= 0xdf ? 1
           : b >= 0xe0 && b <= 0xef ? 2
           : b >= 0xf0 && b <= 0xf4 ? 3
                                    : 4;
}

/* [sigsafe] The length (1 to 4) of the well-formed character at in[0..len) (Unicode's
 * table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF; a byte below 0x80
 * is one, NUL included), or 0 when the bytes there start none or it runs past len.  A
 * NUL-terminated string may be given with len SIZE_MAX: no byte after a NUL is read. */
static inline size_t utf8_char_len(const uint8_t *in, size_t len)
{
    if (!len)
        return 0;
    uint8_t b = in[0];
    unsigned need = utf8_need(b);
    if (need == 4 || need >= len)
        return 0;
    if (need) {
        /* The second byte's range excludes overlong forms, surrogates and > U+10FFFF. */
        uint8_t lo = b == 0xe0 ? 0xa0 : b == 0xf0 ? 0x90 : 0x80;
        uint8_t hi = b == 0xed ? 0x9f : b == 0xf4 ? 0x8f : 0xbf;
        if (in[1] < lo || in[1] > hi)
            return 0;
        for (unsigned k = 2; k <= need; k++)
            if ((in[k] & 0xc0) != 0x80)
                return 0;
    }
    return need + 1;
}

/* utf8_clean's flags. */
enum {
    /* `in` is a prefix of a longer string: a sequence it ends in the middle of is
     * dropped (the rest of the character was not copied), not replaced. */
    UTF8_CUT = 1,
    /* Stop at a NUL byte (a C string ends there anyway). */
    UTF8_STOP_AT_NUL = 2,
};

/* [sigsafe] Copies the bytes in[0..len) into out as valid UTF-8: a well-formed sequence
 * (Unicode's table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF) is copied
 * as it is, and each byte that does not start one becomes U+FFFD (3 bytes) and the copy
 * goes on at the next byte.  Stops before a character that would not fit in `room`
 * bytes, and as `flags` say.  Returns the bytes written (no NUL is added).
 *
 * `in` may lie inside out itself, at out + 3 * len or later (the handler copies the raw
 * bytes there first): a byte read writes at most 3 bytes, so the writing never overtakes
 * the reading. */
static inline size_t utf8_clean(char *out, size_t room, const uint8_t *in, size_t len,
                                unsigned flags)
{
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        uint8_t b = in[i];
        if (b == 0 && (flags & UTF8_STOP_AT_NUL))
            break;
        unsigned need = utf8_need(b);
        if (need && need < 4 && (flags & UTF8_CUT) && i + need >= len)
            break; /* the rest of this character is beyond what was copied */
        size_t k = utf8_char_len(in + i, len - i);
        if (!k) {
            if (n + 3 > room)
                break;
            n += utf8_put(out + n, UTF8_REPLACEMENT);
            i++;
            continue;
        }
        if (n + k > room)
            break;
        for (size_t j = 0; j < k; j++)
            out[n++] = (char)in[i + j];
        i += k;
    }
    return n;
}

#endif
