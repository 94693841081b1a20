/*
 * Unit tests for src/read/lz4stream.c: what comes out is what went in, a stream cut
 * inside a compressed block gives the part of the block that arrived (and only with
 * recovery asked for), follow mode waits for the rest of a file and then goes on, and
 * input that is not LZ4 is told apart from input cut too short to say.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <lz4frame.h>

#include <pyprof/reader.h>

#include "read/lz4stream.h"

#define RAW_LEN (200u << 10) /* four 64 KiB blocks, the last one partial */

static uint8_t raw[RAW_LEN];

/* Words picked at random: compressed blocks (random letters would be stored ones, which
 * LZ4F streams itself), yet not so compressible that a block is tiny. */
static void make_raw(void)
{
    static const char *const words[] = {"sample ", "stack ",  "frame ",  "thread ", "span ",
                                        "record ", "footer ", "header ", "batch ",  "code "};
    uint32_t x = 12345;
    for (size_t i = 0; i < RAW_LEN;) {
        x = x * 1103515245u + 12345u;
        const char *w = words[(x >> 16) % 10];
        for (; *w && i < RAW_LEN; w++)
            raw[i++] = (uint8_t)*w;
    }
}

static uint8_t *compress(size_t *len)
{
    LZ4F_preferences_t prefs = {0};
    prefs.frameInfo.blockSizeID = LZ4F_max64KB;
    prefs.frameInfo.blockMode = LZ4F_blockLinked;
    prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
    size_t cap = LZ4F_compressFrameBound(RAW_LEN, &prefs);
    uint8_t *c = malloc(cap);
    assert_non_null(c);
    *len = LZ4F_compressFrame(c, cap, raw, RAW_LEN, &prefs);
    assert_false(LZ4F_isError(*len));
    return c;
}

/* Everything the stream gives, as the reader takes it: out_pos moved past it all. */
static size_t drain(lz4stream *s, int recover, int *last)
{
    size_t total = 0;
    int rc;
    while ((rc = lz4stream_fill(s, recover)) > 0) {
        size_t n = s->out_len - s->out_pos;
        assert_true(total + n <= RAW_LEN);
        assert_memory_equal(s->out + s->out_pos, raw + total, n);
        total += n;
        s->out_pos = s->out_len;
    }
    *last = rc;
    return total;
}

static void test_whole(void **state)
{
    (void)state;
    size_t clen;
    uint8_t *c = compress(&clen);
    lz4stream s = {0};
    lz4stream_open_mem(&s, c, clen);
    assert_int_equal(lz4stream_start(&s, 1u << 20), 0);
    int last;
    assert_int_equal(drain(&s, 1, &last), RAW_LEN);
    assert_int_equal(last, 0);
    lz4stream_close(&s);
    free(c);
}

static void test_cut_block(void **state)
{
    (void)state;
    size_t clen;
    uint8_t *c = compress(&clen);
    /* Half-way through the compressed data: inside a block past the first. */
    size_t cut = clen / 2;
    int last;
    lz4stream s = {0};
    lz4stream_open_mem(&s, c, cut);
    assert_int_equal(lz4stream_start(&s, 1u << 20), 0);
    size_t whole_blocks = drain(&s, 0, &last);
    assert_int_equal(last, 0);
    lz4stream_close(&s);

    lz4stream r = {0};
    lz4stream_open_mem(&r, c, cut);
    assert_int_equal(lz4stream_start(&r, 1u << 20), 0);
    size_t recovered = drain(&r, 1, &last);
    assert_int_equal(last, 0);
    assert_true(recovered > whole_blocks);
    assert_true(recovered < RAW_LEN);
    lz4stream_close(&r);
    free(c);
}

static void test_follow(void **state)
{
    (void)state;
    size_t clen;
    uint8_t *c = compress(&clen);
    char path[] = "/tmp/test_lz4stream.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t cut = clen / 2;
    assert_int_equal(write(fd, c, cut), (ssize_t)cut);

    lz4stream s = {0};
    assert_int_equal(lz4stream_open(&s, path), 0);
    assert_int_equal(lz4stream_start(&s, 1u << 20), 0);
    lz4stream_follow(&s, 1);
    int last;
    size_t got = drain(&s, 1, &last);
    assert_int_equal(last, -PYPROF_R_AGAIN);
    assert_true(got < RAW_LEN);
    assert_int_equal(write(fd, c + cut, clen - cut), (ssize_t)(clen - cut));
    /* drain() checks each byte against raw at its offset: continue from `got`. */
    size_t more = 0;
    int rc;
    while ((rc = lz4stream_fill(&s, 1)) > 0) {
        size_t n = s.out_len - s.out_pos;
        assert_memory_equal(s.out + s.out_pos, raw + got + more, n);
        more += n;
        s.out_pos = s.out_len;
    }
    assert_int_equal(rc, -PYPROF_R_AGAIN);
    assert_int_equal(got + more, RAW_LEN);
    lz4stream_close(&s);
    close(fd);
    unlink(path);
    free(c);
}

static void test_not_lz4(void **state)
{
    (void)state;
    lz4stream s = {0};
    lz4stream_open_mem(&s, "hello, world", 12);
    assert_int_equal(lz4stream_start(&s, 1u << 20), -PYPROF_R_NOT_LZ4);
    lz4stream_close(&s);
    /* Two bytes of the LZ4 magic, then nothing: cut, not foreign. */
    static const uint8_t magic[2] = {0x04, 0x22};
    lz4stream t = {0};
    lz4stream_open_mem(&t, magic, 2);
    assert_int_equal(lz4stream_start(&t, 1u << 20), -PYPROF_R_TRUNCATED);
    lz4stream_close(&t);
    lz4stream u = {0};
    assert_int_equal(lz4stream_open(&u, "/nonexistent/x.lz4"), -PYPROF_R_IO);
    lz4stream_close(&u);
}

int main(void)
{
    make_raw();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole),
        cmocka_unit_test(test_cut_block),
        cmocka_unit_test(test_follow),
        cmocka_unit_test(test_not_lz4),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
