/*
 * Unit tests for src/read/logdec.c: payloads made by common/logenc.c decode to the
 * values they were made from, the running time carries across records and a BATCH's
 * events, native tails are read only in native logs, and counts the bytes cannot hold
 * are corruption.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/logenc.h"
#include "read/logdec.h"

static uint8_t buf[4096];

static int decode(logdec *d, int type, const rec_out *o, pyprof_record *rec)
{
    rec->type = type;
    return logdec_record(d, type, o->buf, o->len, rec);
}

static void test_header(void **state)
{
    (void)state;
    static const char cmdline[] = "python3\0app.py\0";
    logenc_header_fields h = {.pid = 42,
                              .ppid = 1,
                              .run_id = "run",
                              .start_unix_ns = 7,
                              .host = "h",
                              .exe = "/bin/py",
                              .cmdline = cmdline,
                              .cmdline_len = sizeof cmdline - 1,
                              .python_version = "3.11.7",
                              .python_hex = 0x030b07f0,
                              .period_ns = 1000000,
                              .clock = 0,
                              .timer = "t",
                              .max_depth = 256,
                              .flags = PYPROF_HDR_NATIVE,
                              .seq = 3,
                              .offset_us = 9};
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_header(&o, &h), 0);
    logdec d = {0};
    pyprof_header got;
    assert_int_equal(logdec_header(&d, o.buf, o.len, &got), 0);
    assert_int_equal(got.pid, 42);
    assert_int_equal(got.argc, 2);
    assert_memory_equal(got.argv[1].s, "app.py", 6);
    assert_int_equal(got.seq, 3);
    assert_int_equal(got.offset_us, 9);
    assert_true(d.native);
    logdec_free(&d);

    /* A newer format version is refused before anything after it is read. */
    uint8_t newer[] = {PYPROF_FORMAT_VERSION + 1, 0xff};
    logdec d2 = {0};
    assert_int_equal(logdec_header(&d2, newer, sizeof newer, &got), -PYPROF_R_NEWER);
    logdec_free(&d2);
}

static void test_timed_and_batch(void **state)
{
    (void)state;
    logdec d = {0};
    pyprof_record rec;
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_sample(&o, 100, 1, 2, 3), 0);
    assert_int_equal(decode(&d, PYPROF_REC_SAMPLE, &o, &rec), 0);
    assert_int_equal(rec.u.sample.t_us, 100);
    assert_int_equal(rec.u.sample.stack_id, 2);
    assert_int_equal(rec.u.sample.nstack_id, 0);

    /* A BATCH counts on from the last timed record. */
    uint8_t evbuf[256];
    rec_out ev;
    rec_out_init(&ev, evbuf, sizeof evbuf);
    logenc_batch b;
    logenc_batch_start(&b, 100, 10, 5, 4096, 0);
    assert_int_equal(logenc_batch_sample(&ev, &b, 110, 1, 7, 5, 0, 0), 0);
    assert_int_equal(logenc_batch_rss(&ev, &b, 115, 8192), 0);
    assert_int_equal(logenc_batch_sample(&ev, &b, 130, 2, 8, 6, 0, 0), 0);
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_batch(&o, &b, ev.buf, ev.len), 0);
    assert_int_equal(decode(&d, PYPROF_REC_BATCH, &o, &rec), 0);
    static const struct {
        int type;
        int64_t t;
        uint64_t v;
    } want[] = {
        {PYPROF_REC_SAMPLE, 110, 7}, {PYPROF_REC_RSS, 115, 8192}, {PYPROF_REC_SAMPLE, 130, 8}};
    for (size_t i = 0; i < 3; i++) {
        assert_true(logdec_pending(&d));
        logdec_next_event(&d, &rec);
        assert_int_equal(rec.type, want[i].type);
        if (rec.type == PYPROF_REC_RSS) {
            assert_int_equal(rec.u.rss.t_us, want[i].t);
            assert_int_equal(rec.u.rss.rss_bytes, want[i].v);
        } else {
            assert_int_equal(rec.u.sample.t_us, want[i].t);
            assert_int_equal(rec.u.sample.stack_id, want[i].v);
        }
    }
    assert_false(logdec_pending(&d));
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_rss(&o, 5, 1234), 0);
    assert_int_equal(decode(&d, PYPROF_REC_RSS, &o, &rec), 0);
    assert_int_equal(rec.u.rss.t_us, 135);
    logdec_free(&d);
}

static void test_stack_runs(void **state)
{
    (void)state;
    logenc_frame f[3] = {
        {PYPROF_CODE_FIRST, 1}, {PYPROF_CODE_FIRST + 1, 2}, {PYPROF_CODE_FIRST + 2, -1}};
    uint32_t runs[2] = {1, 2};
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_stack(&o, 5, f, 3), 0);
    assert_int_equal(logenc_put_stack_runs(&o, runs, 2), 0);
    pyprof_record rec;
    /* Not a native log: the runs are not read. */
    logdec d = {0};
    assert_int_equal(decode(&d, PYPROF_REC_STACK, &o, &rec), 0);
    assert_int_equal(rec.u.stack.nframes, 3);
    assert_int_equal(rec.u.stack.frames[2].line, -1);
    assert_int_equal(rec.u.stack.nruns, 0);
    d.native = 1;
    assert_int_equal(decode(&d, PYPROF_REC_STACK, &o, &rec), 0);
    assert_int_equal(rec.u.stack.nruns, 2);
    assert_int_equal(rec.u.stack.runs[1], 2);
    logdec_free(&d);

    /* Runs that do not add up to the frames are corruption. */
    rec_out_init(&o, buf, sizeof buf);
    uint32_t bad[2] = {1, 1};
    assert_int_equal(logenc_put_stack(&o, 5, f, 3), 0);
    assert_int_equal(logenc_put_stack_runs(&o, bad, 2), 0);
    logdec d2 = {.native = 1};
    assert_int_equal(decode(&d2, PYPROF_REC_STACK, &o, &rec), -PYPROF_R_CORRUPT);
    logdec_free(&d2);
}

/* A STACK's GIL state: read after the frames, and in a native log after the runs; a
 * STACK without it (older writers, cpu mode) or with a value this reader does not know
 * reads PYPROF_GIL_UNKNOWN, and neither is corruption. */
static void test_stack_gil(void **state)
{
    (void)state;
    logenc_frame f[3] = {
        {PYPROF_CODE_FIRST, 1}, {PYPROF_CODE_FIRST + 1, 2}, {PYPROF_CODE_FIRST + 2, -1}};
    uint32_t runs[2] = {2, 1};
    pyprof_record rec;
    rec_out o;
    for (int native = 0; native < 2; native++) {
        logdec d = {.native = native};
        /* Every state this reader knows, after the runs in a native log. */
        for (uint64_t g = 0; g < PYPROF_GIL_STATES; g++) {
            rec_out_init(&o, buf, sizeof buf);
            assert_int_equal(logenc_put_stack(&o, 5, f, 3), 0);
            if (native)
                assert_int_equal(logenc_put_stack_runs(&o, runs, 2), 0);
            assert_int_equal(logenc_put_stack_gil(&o, g), 0);
            assert_int_equal(decode(&d, PYPROF_REC_STACK, &o, &rec), 0);
            assert_int_equal(rec.u.stack.stack_id, 5);
            assert_int_equal(rec.u.stack.nframes, 3);
            assert_int_equal(rec.u.stack.frames[2].line, -1);
            assert_int_equal(rec.u.stack.nruns, native ? 2 : 0);
            if (native)
                assert_int_equal(rec.u.stack.runs[0], 2);
            assert_int_equal(rec.u.stack.gil, g);
        }
        /* A field appended after the state by a newer writer is ignored. */
        rec_out_init(&o, buf, sizeof buf);
        assert_int_equal(logenc_put_stack(&o, 6, f, 3), 0);
        if (native)
            assert_int_equal(logenc_put_stack_runs(&o, runs, 2), 0);
        assert_int_equal(logenc_put_stack_gil(&o, PYPROF_GIL_HELD), 0);
        rec_put_uvarint(&o, 12345);
        assert_int_equal(decode(&d, PYPROF_REC_STACK, &o, &rec), 0);
        assert_int_equal(rec.u.stack.gil, PYPROF_GIL_HELD);

        /* No state, in the same record as before: it reads 0, not the last one. */
        rec.u.stack.gil = PYPROF_GIL_WAIT;
        rec_out_init(&o, buf, sizeof buf);
        assert_int_equal(logenc_put_stack(&o, 7, f, 3), 0);
        if (native)
            assert_int_equal(logenc_put_stack_runs(&o, runs, 2), 0);
        assert_int_equal(decode(&d, PYPROF_REC_STACK, &o, &rec), 0);
        assert_int_equal(rec.u.stack.stack_id, 7);
        assert_int_equal(rec.u.stack.nruns, native ? 2 : 0);
        assert_int_equal(rec.u.stack.gil, PYPROF_GIL_UNKNOWN);

        /* Values past the last state, one byte and several: unknown, the stack kept. */
        static const uint64_t unknown[] = {PYPROF_GIL_STATES, 127, 300, UINT64_MAX};
        for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
            rec.u.stack.gil = PYPROF_GIL_WAIT;
            rec_out_init(&o, buf, sizeof buf);
            assert_int_equal(logenc_put_stack(&o, 8, f, 3), 0);
            if (native)
                assert_int_equal(logenc_put_stack_runs(&o, runs, 2), 0);
            assert_int_equal(logenc_put_stack_gil(&o, unknown[i]), 0);
            assert_int_equal(decode(&d, PYPROF_REC_STACK, &o, &rec), 0);
            assert_int_equal(rec.u.stack.stack_id, 8);
            assert_int_equal(rec.u.stack.nframes, 3);
            assert_int_equal(rec.u.stack.nruns, native ? 2 : 0);
            assert_int_equal(rec.u.stack.gil, PYPROF_GIL_UNKNOWN);
        }
        logdec_free(&d);
    }
}

static void test_counts_checked(void **state)
{
    (void)state;
    logdec d = {0};
    pyprof_record rec;
    rec_out o;
    /* A STACK announcing more frames than its bytes hold. */
    rec_out_init(&o, buf, sizeof buf);
    rec_put_uvarint(&o, 1);
    rec_put_uvarint(&o, 1000);
    rec_put_uvarint(&o, 1);
    assert_int_equal(decode(&d, PYPROF_REC_STACK, &o, &rec), -PYPROF_R_CORRUPT);
    /* A SNAPSHOT the same way. */
    rec_out_init(&o, buf, sizeof buf);
    rec_put_uvarint(&o, 1);
    rec_put_uvarint(&o, 0);
    rec_put_uvarint(&o, 100);
    assert_int_equal(decode(&d, PYPROF_REC_SNAPSHOT, &o, &rec), -PYPROF_R_CORRUPT);
    /* A record cut short. */
    rec_out_init(&o, buf, sizeof buf);
    rec_put_uvarint(&o, 1);
    assert_int_equal(decode(&d, PYPROF_REC_THREAD, &o, &rec), -PYPROF_R_CORRUPT);
    /* An unknown type is skipped whatever its payload. */
    assert_int_equal(decode(&d, 200, &o, &rec), 0);
    logdec_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header),         cmocka_unit_test(test_timed_and_batch),
        cmocka_unit_test(test_stack_runs),     cmocka_unit_test(test_stack_gil),
        cmocka_unit_test(test_counts_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
