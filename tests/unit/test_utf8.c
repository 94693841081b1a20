/*
 * Unit tests of src/common/utf8.h, the one UTF-8 encoder and cleaner of the sample path
 * (CODE records' names) and of pynames (thread names): utf8_put writes what UTF-8 can
 * hold and U+FFFD for the rest; utf8_clean copies well-formed sequences unchanged and
 * turns each byte that does not start one into U+FFFD, honours its room and flags, and
 * works in place with the raw bytes at out + 3 * len (as the handler calls it).  A
 * reference validator, written differently (decode to a code point, then check the
 * range), checks every output of an exhaustive run over 1- to 3-byte inputs and of
 * random inputs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/utf8.h"

#define FFFD "\xef\xbf\xbd"

/* Cleans `in` (len bytes) into a fresh buffer with the given room and flags; returns the
 * bytes written, NUL-terminated in out. */
static size_t clean(char *out, size_t room, const char *in, size_t len, unsigned flags)
{
    size_t n = utf8_clean(out, room, (const uint8_t *)in, len, flags);
    assert_true(n <= room);
    out[n] = 0;
    return n;
}

#define assert_clean(in, want)                                                                 \
    do {                                                                                       \
        char out_[256];                                                                        \
        size_t n_ = clean(out_, sizeof out_ - 1, in, sizeof(in) - 1, 0);                       \
        assert_int_equal(n_, sizeof(want) - 1);                                                \
        assert_memory_equal(out_, want, sizeof(want) - 1);                                     \
    } while (0)

/* The reference: 1 when b[0..len) is well-formed UTF-8 (decoded to code points, each
 * checked for its shortest form, surrogates and the U+10FFFF bound). */
static int valid_utf8(const uint8_t *b, size_t len)
{
    for (size_t i = 0; i < len;) {
        uint32_t c = b[i];
        size_t n = c < 0x80             ? 1
                   : (c & 0xe0) == 0xc0 ? 2
                   : (c & 0xf0) == 0xe0 ? 3
                   : (c & 0xf8) == 0xf0 ? 4
                                        : 0;
        if (!n || i + n > len)
            return 0;
        if (n > 1)
            c &= 0x7fu >> n;
        for (size_t k = 1; k < n; k++) {
            if ((b[i + k] & 0xc0) != 0x80)
                return 0;
            c = c << 6 | (b[i + k] & 0x3f);
        }
        static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (c < min[n] || c > 0x10ffff || (c >= 0xd800 && c < 0xe000))
            return 0;
        i += n;
    }
    return 1;
}

static void test_put(void **state)
{
    (void)state;
    static const struct {
        uint32_t c;
        const char *want;
    } cases[] = {
        {0x41, "A"},
        {0x7f, "\x7f"},
        {0x80, "\xc2\x80"},
        {0xe9, "\xc3\xa9"},
        {0x7ff, "\xdf\xbf"},
        {0x800, "\xe0\xa0\x80"},
        {0x20ac, "\xe2\x82\xac"},
        {0xd7ff, "\xed\x9f\xbf"},
        {0xd800, FFFD}, /* lone surrogates */
        {0xdc80, FFFD},
        {0xdfff, FFFD},
        {0xe000, "\xee\x80\x80"},
        {0xfffd, FFFD},
        {0xffff, "\xef\xbf\xbf"},
        {0x10000, "\xf0\x90\x80\x80"},
        {0x1d11e, "\xf0\x9d\x84\x9e"},
        {0x10ffff, "\xf4\x8f\xbf\xbf"},
        {0x110000, FFFD}, /* past Unicode */
        {0xffffffffu, FFFD},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[8] = {0};
        size_t n = utf8_put(out, cases[i].c);
        assert_int_equal(n, strlen(cases[i].want));
        assert_int_equal(n, utf8_len(cases[i].c));
        assert_memory_equal(out, cases[i].want, n);
    }
    char nul[2] = {'x', 'x'};
    assert_int_equal(utf8_put(nul, 0), 1);
    assert_int_equal(nul[0], 0);
}

static void test_put_every_code_point(void **state)
{
    (void)state;
    for (uint32_t c = 0; c <= 0x110000; c++) {
        char out[4];
        size_t n = utf8_put(out, c);
        assert_int_equal(n, utf8_len(c));
        assert_true(valid_utf8((const uint8_t *)out, n));
        /* What UTF-8 holds is cleaned unchanged. */
        char again[16];
        size_t m = utf8_clean(again, sizeof again, (const uint8_t *)out, n, 0);
        assert_int_equal(m, n);
        assert_memory_equal(again, out, n);
    }
}

static void test_clean_valid(void **state)
{
    (void)state;
    assert_clean("", "");
    assert_clean("plain ascii", "plain ascii");
    assert_clean("h\xc3\xa9llo \xe2\x82\xac \xf0\x9d\x84\x9e",
                 "h\xc3\xa9llo \xe2\x82\xac \xf0\x9d\x84\x9e");
    assert_clean("\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"); /* U+10FFFF */
    assert_clean("\xed\x9f\xbf", "\xed\x9f\xbf");         /* U+D7FF */
    assert_clean("\xee\x80\x80", "\xee\x80\x80");         /* U+E000 */
    assert_clean("a\0b", "a\0b");                         /* NUL kept without the flag */
}

static void test_clean_invalid(void **state)
{
    (void)state;
    /* clang-format off */
    assert_clean("\x80", FFFD);                         /* lone continuation */
    assert_clean("a\xbf" "b", "a" FFFD "b");
    assert_clean("\xc0\xaf", FFFD FFFD);                /* overlong '/' */
    assert_clean("\xc1\xbf", FFFD FFFD);
    assert_clean("\xe0\x80\x80", FFFD FFFD FFFD);       /* overlong NUL */
    assert_clean("\xe0\x9f\xbf", FFFD FFFD FFFD);       /* overlong U+07FF */
    assert_clean("\xf0\x8f\xbf\xbf", FFFD FFFD FFFD FFFD); /* overlong U+FFFF */
    assert_clean("\xed\xa0\x80", FFFD FFFD FFFD);       /* surrogate U+D800 */
    assert_clean("\xed\xbf\xbf", FFFD FFFD FFFD);       /* surrogate U+DFFF */
    assert_clean("\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD); /* U+110000 */
    assert_clean("\xf5\x80\x80\x80", FFFD FFFD FFFD FFFD);
    assert_clean("\xfe\xff", FFFD FFFD);
    assert_clean("\xe2\x82", FFFD FFFD);                /* truncated at the end */
    assert_clean("\xe2\x82" "A", FFFD FFFD "A");        /* interrupted */
    assert_clean("\xf0\x9d\x84" "x", FFFD FFFD FFFD "x");
    assert_clean("\xc3", FFFD);
    assert_clean("\xc3\xa9\xc3", "\xc3\xa9" FFFD);
    /* clang-format on */
}

static void test_clean_flags_and_room(void **state)
{
    (void)state;
    char out[64];
    /* UTF8_CUT: a sequence the prefix ends in the middle of is dropped, not replaced. */
    assert_int_equal(clean(out, 63, "ab\xe2\x82", 4, UTF8_CUT), 2);
    assert_string_equal(out, "ab");
    assert_int_equal(clean(out, 63, "ab\xf0", 3, UTF8_CUT), 2);
    /* ... but a bad byte before the end is still replaced. */
    /* clang-format off */
    assert_int_equal(clean(out, 63, "\xe2" "A\xe2\x82", 4, UTF8_CUT), 4);
    /* clang-format on */
    assert_string_equal(out, FFFD "A");
    assert_int_equal(clean(out, 63, "\xff", 1, UTF8_CUT), 3);
    /* UTF8_STOP_AT_NUL. */
    assert_int_equal(clean(out, 63, "ab\0cd", 5, UTF8_STOP_AT_NUL), 2);
    assert_int_equal(clean(out, 63, "ab\0cd", 5, 0), 5);
    /* Room: no character is written in part. */
    assert_int_equal(clean(out, 3, "ab\xc3\xa9", 4, 0), 2);
    assert_int_equal(clean(out, 4, "ab\xc3\xa9", 4, 0), 4);
    assert_int_equal(clean(out, 4, "ab\x80", 3, 0), 2);
    assert_int_equal(clean(out, 5, "ab\x80", 3, 0), 5);
    assert_int_equal(clean(out, 0, "a", 1, 0), 0);
}

/* As the handler calls it: the raw bytes at out + 3 * len, cleaned forwards into out. */
static void test_clean_in_place(void **state)
{
    (void)state;
    static const char *inputs[] = {
        "\x80\x80\x80\x80",
        "abc",
        "\xc3\xa9\xff\xe2\x82\xac\xed\xa0\x80x",
        "\xff",
        "\xf0\x9d\x84\x9e\xf0\x9d\x84",
        "",
    };
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        size_t len = strlen(inputs[i]);
        char sep[64], buf[64];
        size_t want = utf8_clean(sep, sizeof sep, (const uint8_t *)inputs[i], len, 0);
        memcpy(buf + 3 * len, inputs[i], len);
        size_t got = utf8_clean(buf, 4 * len, (const uint8_t *)buf + 3 * len, len, 0);
        assert_int_equal(got, want);
        assert_memory_equal(buf, sep, got);
    }
}

/* Every input of 1 to 3 bytes: the output is valid, and a valid input is unchanged. */
static void test_clean_exhaustive(void **state)
{
    (void)state;
    uint8_t in[3];
    char out[16];
    for (uint32_t v = 0; v < (1u << 24); v++) {
        size_t len = v < 256 ? 1 : v < 65536 ? 2 : 3;
        for (size_t k = 0; k < len; k++)
            in[k] = (uint8_t)(v >> (8 * k));
        size_t n = utf8_clean(out, sizeof out, in, len, 0);
        if (!valid_utf8((const uint8_t *)out, n))
            fail_msg("invalid output for input %06x", v);
        if (valid_utf8(in, len) && (n != len || memcmp(out, in, len) != 0))
            fail_msg("valid input %06x changed", v);
    }
}

static void test_clean_random(void **state)
{
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 200000; round++) {
        uint8_t in[16];
        size_t len = (size_t)(round % 17);
        for (size_t k = 0; k < len; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            /* Mostly bytes that start or continue sequences. */
            in[k] = (uint8_t)(x & 1 ? 0x80 | (x >> 8 & 0x7f) : x >> 8);
        }
        char out[64];
        size_t n = utf8_clean(out, sizeof out, in, len, 0);
        assert_true(n <= 3 * len);
        assert_true(valid_utf8((const uint8_t *)out, n));
        if (valid_utf8(in, len)) {
            assert_int_equal(n, len);
            assert_memory_equal(out, in, len);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put),
        cmocka_unit_test(test_put_every_code_point),
        cmocka_unit_test(test_clean_valid),
        cmocka_unit_test(test_clean_invalid),
        cmocka_unit_test(test_clean_flags_and_room),
        cmocka_unit_test(test_clean_in_place),
        cmocka_unit_test(test_clean_exhaustive),
        cmocka_unit_test(test_clean_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
