/*
 * Unit tests of src/common/record.c: the primitives of the log format
 * (include/pyprof/format.h).  Every encoder is checked against the exact bytes the format
 * specifies, then decoded back; every decoder is fed truncated and malformed input and must set
 * `bad`, never read past the end, and return zeros.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/record.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Encodes `v` and compares with the expected LEB128 bytes. */
static void expect_uvarint_bytes(uint64_t v, const uint8_t *want, size_t n)
{
    uint8_t buf[16];
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    rec_put_uvarint(&o, v);
    assert_false(o.overflow);
    assert_int_equal(o.len, n);
    assert_memory_equal(buf, want, n);
}

static void test_uvarint_encoding(void **state)
{
    (void)state;
    expect_uvarint_bytes(0, (const uint8_t[]){0x00}, 1);
    expect_uvarint_bytes(1, (const uint8_t[]){0x01}, 1);
    expect_uvarint_bytes(127, (const uint8_t[]){0x7f}, 1);
    expect_uvarint_bytes(128, (const uint8_t[]){0x80, 0x01}, 2);
    expect_uvarint_bytes(300, (const uint8_t[]){0xac, 0x02}, 2);
    expect_uvarint_bytes(16383, (const uint8_t[]){0xff, 0x7f}, 2);
    expect_uvarint_bytes(16384, (const uint8_t[]){0x80, 0x80, 0x01}, 3);
    expect_uvarint_bytes(1ull << 32, (const uint8_t[]){0x80, 0x80, 0x80, 0x80, 0x10}, 5);
    expect_uvarint_bytes(
        UINT64_MAX,
        (const uint8_t[]){0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
        REC_VARINT_MAX);
}

static void test_uvarint_round_trip(void **state)
{
    /* clang-format off */
    static const uint64_t values[] = {
        0, 1, 126, 127, 128, 129, 255, 256, 16383, 16384, 0xffffffffull, 1ull << 32,
        (1ull << 32) + 1, (1ull << 56) - 1, 1ull << 56, (1ull << 63) - 1, 1ull << 63,
        UINT64_MAX - 1, UINT64_MAX,
    };
    /* clang-format on */
    uint8_t buf[ARRAY_LEN(values) * REC_VARINT_MAX];
    rec_out o;
    (void)state;
    rec_out_init(&o, buf, sizeof buf);
    for (size_t i = 0; i < ARRAY_LEN(values); i++)
        rec_put_uvarint(&o, values[i]);
    assert_false(o.overflow);

    rec_in in;
    rec_in_init(&in, buf, o.len);
    for (size_t i = 0; i < ARRAY_LEN(values); i++) {
        uint64_t got = rec_get_uvarint(&in);
        if (got != values[i])
            fail_msg("value %zu: wrote %llu, read %llu", i, (unsigned long long)values[i],
                     (unsigned long long)got);
    }
    assert_false(in.bad);
    assert_int_equal(rec_in_left(&in), 0);
    /* One read too many: bad, and zero. */
    assert_true(rec_get_uvarint(&in) == 0);
    assert_true(in.bad);
}

static void test_svarint(void **state)
{
    static const struct {
        int64_t v;
        uint64_t zigzag;
    } cases[] = {
        /* clang-format off */
        {0, 0},  {-1, 1},  {1, 2},  {-2, 3},  {2, 4},  {-64, 127},  {64, 128},
        {INT64_MAX, UINT64_MAX - 1}, {INT64_MIN, UINT64_MAX},
        {INT64_MIN + 1, UINT64_MAX - 2}, {-2147483648ll, 4294967295ull},
        /* clang-format on */
    };
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        uint8_t a[16], b[16];
        rec_out oa, ob;
        /* The zigzag mapping of the format: the same bytes as the uvarint of zigzag(v). */
        rec_out_init(&oa, a, sizeof a);
        rec_put_svarint(&oa, cases[i].v);
        rec_out_init(&ob, b, sizeof b);
        rec_put_uvarint(&ob, cases[i].zigzag);
        assert_int_equal(oa.len, ob.len);
        assert_memory_equal(a, b, oa.len);

        rec_in in;
        rec_in_init(&in, a, oa.len);
        int64_t got = rec_get_svarint(&in);
        if (got != cases[i].v)
            fail_msg("case %zu: wrote %lld, read %lld", i, (long long)cases[i].v,
                     (long long)got);
        assert_false(in.bad);
        assert_int_equal(rec_in_left(&in), 0);
    }
}

static void test_strings_and_bytes(void **state)
{
    uint8_t buf[600];
    char big[300];
    rec_out o;
    (void)state;
    memset(big, 'q', sizeof big);
    rec_out_init(&o, buf, sizeof buf);
    rec_put_cstr(&o, "hello");
    rec_put_cstr(&o, "");
    rec_put_cstr(&o, NULL); /* The same as "". */
    rec_put_str(&o, "a\0b", 3);
    rec_put_str(&o, big, sizeof big); /* A length that needs two varint bytes. */
    rec_put_u8(&o, 0xee);
    rec_put_bytes(&o, "xyz", 3);
    rec_put_bytes(&o, NULL, 0);
    assert_false(o.overflow);
    /* The exact bytes of the first strings: length, then the bytes. */
    /* clang-format off */
    assert_memory_equal(buf, "\x05hello\x00\x00\x03" "a\0b", 1 + 5 + 1 + 1 + 1 + 3);
    /* clang-format on */
    assert_int_equal(o.len, 6 + 1 + 1 + 4 + 2 + 300 + 1 + 3);

    rec_in in;
    size_t n;
    const uint8_t *s;
    rec_in_init(&in, buf, o.len);
    s = rec_get_str(&in, &n);
    assert_int_equal(n, 5);
    assert_memory_equal(s, "hello", 5);
    s = rec_get_str(&in, &n);
    assert_int_equal(n, 0);
    assert_non_null(s);
    s = rec_get_str(&in, &n);
    assert_int_equal(n, 0);
    s = rec_get_str(&in, &n);
    assert_int_equal(n, 3);
    assert_memory_equal(s, "a\0b", 3);
    s = rec_get_str(&in, &n);
    assert_int_equal(n, 300);
    assert_memory_equal(s, big, 300);
    assert_int_equal(rec_get_u8(&in), 0xee);
    assert_int_equal(rec_get_u8(&in), 'x');
    assert_int_equal(rec_in_left(&in), 2);
    assert_false(in.bad);
}

static void test_string_longer_than_input(void **state)
{
    /* Length 10, but only 4 bytes follow. */
    static const uint8_t buf[] = {10, 'a', 'b', 'c', 'd'};
    rec_in in;
    size_t n = 99;
    (void)state;
    rec_in_init(&in, buf, sizeof buf);
    const uint8_t *s = rec_get_str(&in, &n);
    assert_true(in.bad);
    assert_int_equal(n, 0);
    assert_non_null(s);
    /* A length near 2^64 must not wrap the pointer arithmetic into "fits". */
    static const uint8_t huge[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0x01, 'a'};
    rec_in_init(&in, huge, sizeof huge);
    n = 99;
    rec_get_str(&in, &n);
    assert_true(in.bad);
    assert_int_equal(n, 0);
    /* A missing length byte. */
    rec_in_init(&in, buf, 0);
    rec_get_str(&in, &n);
    assert_true(in.bad);
}

static void test_overflow_flag(void **state)
{
    uint8_t buf[8];
    rec_out o;
    (void)state;
    memset(buf, 0xaa, sizeof buf);
    rec_out_init(&o, buf, 4);
    rec_put_bytes(&o, "abcd", 4);
    assert_false(o.overflow);
    assert_int_equal(o.len, 4);
    rec_put_u8(&o, 1);
    assert_true(o.overflow);
    assert_int_equal(o.len, 4);
    /* Nothing was written past the capacity. */
    for (size_t i = 4; i < sizeof buf; i++)
        assert_int_equal(buf[i], 0xaa);
    /* Once set, the flag stays, even for writes that would have fitted. */
    rec_put_bytes(&o, NULL, 0);
    assert_true(o.overflow);

    /* A varint that does not fit whole is not written in part. */
    memset(buf, 0xaa, sizeof buf);
    rec_out_init(&o, buf, 3);
    rec_put_u8(&o, 7);
    rec_put_uvarint(&o, 1ull << 32); /* 5 bytes, 2 left. */
    assert_true(o.overflow);
    assert_int_equal(o.len, 1);
    assert_int_equal(buf[1], 0xaa);
    assert_int_equal(buf[2], 0xaa);

    /* A string whose length fits but whose bytes do not. */
    rec_out_init(&o, buf, 4);
    rec_put_cstr(&o, "toolong");
    assert_true(o.overflow);

    /* A zero-capacity buffer. */
    rec_out_init(&o, buf, 0);
    rec_put_u8(&o, 1);
    assert_true(o.overflow);
    assert_int_equal(o.len, 0);
}

static void test_truncated_input(void **state)
{
    uint8_t buf[32];
    rec_out o;
    (void)state;
    rec_out_init(&o, buf, sizeof buf);
    rec_put_uvarint(&o, UINT64_MAX);
    assert_int_equal(o.len, 10);
    /* Every cut of a 10-byte varint is bad and gives 0. */
    for (size_t cut = 0; cut < 10; cut++) {
        rec_in in;
        rec_in_init(&in, buf, cut);
        if (rec_get_uvarint(&in) != 0)
            fail_msg("cut at %zu returned a value", cut);
        if (!in.bad)
            fail_msg("cut at %zu not flagged", cut);
    }
    /* u8 and svarint on empty input. */
    rec_in in;
    rec_in_init(&in, buf, 0);
    assert_int_equal(rec_get_u8(&in), 0);
    assert_true(in.bad);
    rec_in_init(&in, buf, 0);
    assert_true(rec_get_svarint(&in) == 0);
    assert_true(in.bad);
    /* Once bad, later reads stay bad and do not move past the end. */
    rec_in_init(&in, (const uint8_t[]){0x80}, 1);
    rec_get_uvarint(&in);
    assert_true(in.bad);
    assert_int_equal(rec_get_u8(&in), 0);
    assert_true(in.bad);
    assert_int_equal(rec_in_left(&in), 0);
}

static void test_overlong_varint(void **state)
{
    /* Eleven bytes, ten with the continuation bit: longer than any varint we write. */
    static const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                     0x80, 0x80, 0x80, 0x80, 0x00};
    static const uint8_t all_cont[16] = {0x81, 0x81, 0x81, 0x81, 0x81, 0x81, 0x81, 0x81,
                                         0x81, 0x81, 0x81, 0x81, 0x81, 0x81, 0x81, 0x81};
    rec_in in;
    (void)state;
    rec_in_init(&in, eleven, sizeof eleven);
    assert_true(rec_get_uvarint(&in) == 0);
    assert_true(in.bad);
    rec_in_init(&in, all_cont, sizeof all_cont);
    assert_true(rec_get_uvarint(&in) == 0);
    assert_true(in.bad);
    /* A ten-byte varint that is not the maximum is still fine (non-canonical zeros). */
    static const uint8_t ten[] = {0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    rec_in_init(&in, ten, sizeof ten);
    assert_true(rec_get_uvarint(&in) == 1);
    assert_false(in.bad);
}

static void test_envelope(void **state)
{
    uint8_t payload[200];
    uint8_t rec[256];
    (void)state;
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 7);

    /* A short payload: type, one length byte, payload. */
    size_t n = rec_envelope(rec, sizeof rec, 5, payload, 3);
    assert_int_equal(n, 5);
    assert_int_equal(rec[0], 5);
    assert_int_equal(rec[1], 3);
    assert_memory_equal(rec + 2, payload, 3);

    uint8_t type = 0;
    const uint8_t *p = NULL;
    size_t plen = 0, total = 0;
    assert_int_equal(rec_parse_envelope(rec, n, 1 << 20, &type, &p, &plen, &total), 1);
    assert_int_equal(type, 5);
    assert_ptr_equal(p, rec + 2);
    assert_int_equal(plen, 3);
    assert_int_equal(total, 5);

    /* A payload of 200 bytes needs a two-byte length. */
    n = rec_envelope(rec, sizeof rec, 15, payload, sizeof payload);
    assert_int_equal(n, 1 + 2 + 200);
    assert_int_equal(rec[1], 0xc8);
    assert_int_equal(rec[2], 0x01);
    assert_int_equal(rec_parse_envelope(rec, n, 1 << 20, &type, &p, &plen, &total), 1);
    assert_int_equal(type, 15);
    assert_int_equal(plen, 200);
    assert_int_equal(total, 203);
    assert_memory_equal(p, payload, 200);

    /* An empty payload. */
    n = rec_envelope(rec, sizeof rec, 2, NULL, 0);
    assert_int_equal(n, 2);
    assert_int_equal(rec_parse_envelope(rec, n, 1 << 20, &type, &p, &plen, &total), 1);
    assert_int_equal(plen, 0);
    assert_int_equal(total, 2);

    /* Extra bytes after the record are not part of it. */
    n = rec_envelope(rec, sizeof rec, 4, payload, 10);
    assert_int_equal(rec_parse_envelope(rec, n + 20, 1 << 20, &type, &p, &plen, &total), 1);
    assert_int_equal(total, 12);

    /* A record that does not fit: 0, and the capacity edge exactly. */
    assert_int_equal(rec_envelope(rec, 4, 1, payload, 3), 0);
    assert_int_equal(rec_envelope(rec, 5, 1, payload, 3), 5);
    assert_int_equal(rec_envelope(rec, 0, 1, payload, 0), 0);
}

static void test_envelope_partial_and_absurd(void **state)
{
    uint8_t payload[200] = {0};
    uint8_t rec[256];
    uint8_t type;
    const uint8_t *p;
    size_t plen, total;
    (void)state;
    size_t n = rec_envelope(rec, sizeof rec, 3, payload, sizeof payload);
    assert_int_equal(n, 203);
    /* Every prefix of a whole record asks for more bytes. */
    for (size_t cut = 0; cut < n; cut++) {
        int rc = rec_parse_envelope(rec, cut, 1 << 20, &type, &p, &plen, &total);
        if (rc != 0)
            fail_msg("prefix of %zu bytes gave %d", cut, rc);
    }
    assert_int_equal(rec_parse_envelope(rec, n, 1 << 20, &type, &p, &plen, &total), 1);

    /* A length above max_len is absurd, however few bytes have arrived. */
    assert_int_equal(rec_parse_envelope(rec, 3, 199, &type, &p, &plen, &total), -1);
    assert_int_equal(rec_parse_envelope(rec, n, 199, &type, &p, &plen, &total), -1);
    assert_int_equal(rec_parse_envelope(rec, n, 200, &type, &p, &plen, &total), 1);
    static const uint8_t huge[] = {1,    0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0x01};
    assert_int_equal(rec_parse_envelope(huge, sizeof huge, 1 << 20, &type, &p, &plen, &total),
                     -1);
    /* A length varint that never ends is absurd once it is longer than any varint. */
    static const uint8_t endless[] = {1,    0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                      0x80, 0x80, 0x80, 0x80, 0x80, 0x80};
    assert_int_equal(
        rec_parse_envelope(endless, sizeof endless, 1 << 20, &type, &p, &plen, &total), -1);
    /* ... but a short unfinished varint is only partial. */
    assert_int_equal(rec_parse_envelope(endless, 5, 1 << 20, &type, &p, &plen, &total), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uvarint_encoding),
        cmocka_unit_test(test_uvarint_round_trip),
        cmocka_unit_test(test_svarint),
        cmocka_unit_test(test_strings_and_bytes),
        cmocka_unit_test(test_string_longer_than_input),
        cmocka_unit_test(test_overflow_flag),
        cmocka_unit_test(test_truncated_input),
        cmocka_unit_test(test_overlong_varint),
        cmocka_unit_test(test_envelope),
        cmocka_unit_test(test_envelope_partial_and_absurd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
