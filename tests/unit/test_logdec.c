/*
 * Unit tests for src/read/logdec.c: payloads made by common/logenc.c decode to the
 * values they were made from, the running time carries across records and a BATCH's
 * events, native tails are read only in native logs, counts the bytes cannot hold are
 * corruption, and a footer's optional sections are found where their log puts them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "allocfields.h"
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

/* AWINDOW: decoded to the values it was made from (unknown flag bits kept, for the user
 * to ignore; a field appended by a newer writer ignored); a shift or floor past
 * PYPROF_ALLOC_SHIFT_MAX, a time past the ALLOC's bound and a record cut short are
 * corruption. */
static void test_awindow(void **state)
{
    (void)state;
    logdec d = {.alloc = 1};
    pyprof_record rec;
    rec_out o;
    logenc_awindow_fields w = {.t_us = 5000,
                               .len_us = 8000,
                               .planned_us = 4000,
                               .shift = 4,
                               .floor_shift = PYPROF_ALLOC_SHIFT_MAX,
                               .flags = PYPROF_AWINDOW_F_WRAPPED | 64};
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_awindow(&o, &w), 0);
    rec_put_uvarint(&o, 777);
    assert_int_equal(decode(&d, PYPROF_REC_AWINDOW, &o, &rec), 0);
    const pyprof_awindow_rec *r = &rec.u.awindow;
    assert_int_equal(r->t_us, 5000);
    assert_int_equal(r->len_us, 8000);
    assert_int_equal(r->planned_us, 4000);
    assert_int_equal(r->shift, 4);
    assert_int_equal(r->floor_shift, PYPROF_ALLOC_SHIFT_MAX);
    assert_int_equal(r->flags, PYPROF_AWINDOW_F_WRAPPED | 64);
    /* Outside the dt chain: the running time is left alone. */
    assert_int_equal(d.t_acc, 0);

    logenc_awindow_fields bad[] = {w, w, w, w};
    bad[0].shift = PYPROF_ALLOC_SHIFT_MAX + 1;
    bad[1].floor_shift = PYPROF_ALLOC_SHIFT_MAX + 1;
    bad[2].t_us = (uint64_t)INT64_MAX / 4 + 1;
    bad[3].len_us = UINT64_MAX;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rec_out_init(&o, buf, sizeof buf);
        assert_int_equal(logenc_put_awindow(&o, &bad[i]), 0);
        assert_int_equal(decode(&d, PYPROF_REC_AWINDOW, &o, &rec), -PYPROF_R_CORRUPT);
    }
    /* Cut before its flags. */
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_awindow(&o, &w), 0);
    o.len--;
    assert_int_equal(decode(&d, PYPROF_REC_AWINDOW, &o, &rec), -PYPROF_R_CORRUPT);
    logdec_free(&d);
}

/* ---- ALLOCS --------------------------------------------------------------------------- */

static void expect_alloc(logdec *d, const logenc_alloc_fields *a, uint64_t address)
{
    pyprof_record rec;
    assert_true(logdec_pending(d));
    logdec_next_event(d, &rec);
    assert_int_equal(rec.type, PYPROF_REC_ALLOC);
    const pyprof_alloc_rec *got = &rec.u.alloc;
    assert_int_equal(got->t_us, a->t_us);
    assert_int_equal(got->thread_idx, a->thread_idx);
    assert_int_equal(got->stack_id, a->stack_id);
    assert_int_equal(got->size, a->size);
    assert_int_equal(got->address, address);
    assert_int_equal(got->domain, a->domain);
    assert_int_equal(got->flags, a->flags);
    assert_int_equal(got->nstack_id, d->native ? a->nstack_id : 0);
}

static void expect_free(logdec *d, int64_t t_us, uint64_t address)
{
    pyprof_record rec;
    assert_true(logdec_pending(d));
    logdec_next_event(d, &rec);
    assert_int_equal(rec.type, PYPROF_REC_FREE);
    assert_int_equal(rec.u.free.t_us, t_us);
    assert_int_equal(rec.u.free.address, address);
}

/* Two ALLOCS records of one process, in a plain and a native log: every event comes out
 * as the ALLOC or FREE it stands for, at its absolute time, a block named by its ordinal
 * with the same address in its ALLOC and its FREE (in the same record or a later one),
 * and the dt chain of the timed records goes on as if the ALLOCS were not there. */
static void test_allocs(void **state)
{
    (void)state;
    for (int native = 0; native < 2; native++) {
        logdec d = {.native = native};
        pyprof_record rec;
        rec_out o;
        rec_out_init(&o, buf, sizeof buf);
        assert_int_equal(logenc_put_sample(&o, 100, 1, 2, 3), 0);
        assert_int_equal(decode(&d, PYPROF_REC_SAMPLE, &o, &rec), 0);

        uint8_t evbuf[512];
        rec_out ev;
        rec_out_init(&ev, evbuf, sizeof evbuf);
        logenc_allocs b;
        logenc_allocs_start(&b, 5000, 10, native);
        logenc_alloc_fields a[6];
        /* 10: the current thread (0), by ordinal. */
        a[0] = alloc_at(5010, 0, 77, 100, 0, PYPROF_ALLOC_PYMEM, 0, 31);
        assert_int_equal(logenc_allocs_alloc(&ev, &b, &a[0], 0), 0);
        /* 11: thread 3, which becomes the current one. */
        a[1] = alloc_at(5015, 3, 5, 4096, 0, PYPROF_ALLOC_MALLOC, 0, 0);
        assert_int_equal(logenc_allocs_alloc(&ev, &b, &a[1], 0), 0);
        /* 12: thread 3 again, by address, untracked. */
        a[2] = alloc_at(5015, 3, 0, 1 << 20, 0x7f0012340000ull, PYPROF_ALLOC_MMAP,
                        PYPROF_ALLOC_F_UNTRACKED, 32);
        assert_int_equal(logenc_allocs_alloc(&ev, &b, &a[2], 1), 0);
        /* 13: thread 0 again, by ordinal, with flags this reader does not know. */
        a[3] = alloc_at(5020, 0, 9, 64, 0, PYPROF_ALLOC_PYOBJECT, 8, 33);
        assert_int_equal(logenc_allocs_alloc(&ev, &b, &a[3], 0), 0);
        assert_int_equal(logenc_allocs_free(&ev, &b, 5030, 0, 11, 0), 0);
        /* A block of an earlier record, 5 us before the last event. */
        assert_int_equal(logenc_allocs_free(&ev, &b, 5025, 0, 3, 0), 0);
        assert_int_equal(logenc_allocs_free(&ev, &b, 5025, 1, 0, 0x7f0012340000ull), 0);
        /* 14: every `more` field, a domain this reader does not know. */
        a[4] = alloc_at(5100, 7, 1 << 20, 24, 0x7f00aa000010ull, 7, PYPROF_ALLOC_F_UNTRACKED,
                        34);
        assert_int_equal(logenc_allocs_alloc(&ev, &b, &a[4], 1), 0);
        assert_int_equal(logenc_allocs_free(&ev, &b, 5101, 0, 13, 0), 0);
        assert_int_equal(logenc_allocs_free(&ev, &b, 5102, 0, 0, 0), 0);
        rec_out_init(&o, buf, sizeof buf);
        assert_int_equal(logenc_put_allocs(&o, &b, ev.buf, ev.len), 0);
        assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), 0);
        expect_alloc(&d, &a[0], PYPROF_ALLOC_ORDINAL | 10);
        expect_alloc(&d, &a[1], PYPROF_ALLOC_ORDINAL | 11);
        expect_alloc(&d, &a[2], 0x7f0012340000ull);
        expect_alloc(&d, &a[3], PYPROF_ALLOC_ORDINAL | 13);
        expect_free(&d, 5030, PYPROF_ALLOC_ORDINAL | 11);
        expect_free(&d, 5025, PYPROF_ALLOC_ORDINAL | 3);
        expect_free(&d, 5025, 0x7f0012340000ull);
        expect_alloc(&d, &a[4], 0x7f00aa000010ull);
        expect_free(&d, 5101, PYPROF_ALLOC_ORDINAL | 13);
        expect_free(&d, 5102, PYPROF_ALLOC_ORDINAL | 0);
        assert_false(logdec_pending(&d));

        /* The next record goes on from ordinal 15, its current thread 0 again. */
        rec_out_init(&ev, evbuf, sizeof evbuf);
        logenc_allocs_start(&b, 4000, 15, native);
        assert_int_equal(logenc_allocs_free(&ev, &b, 4001, 0, 10, 0), 0);
        a[5] = alloc_at(4002, 0, 1, 2, 0, PYPROF_ALLOC_MALLOC, 0, 35);
        assert_int_equal(logenc_allocs_alloc(&ev, &b, &a[5], 0), 0);
        assert_int_equal(logenc_allocs_free(&ev, &b, 4003, 0, 15, 0), 0);
        assert_int_equal(logenc_allocs_free(&ev, &b, 4004, 0, 0, 0), 0);
        rec_out_init(&o, buf, sizeof buf);
        assert_int_equal(logenc_put_allocs(&o, &b, ev.buf, ev.len), 0);
        assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), 0);
        expect_free(&d, 4001, PYPROF_ALLOC_ORDINAL | 10);
        expect_alloc(&d, &a[5], PYPROF_ALLOC_ORDINAL | 15);
        expect_free(&d, 4003, PYPROF_ALLOC_ORDINAL | 15);
        expect_free(&d, 4004, PYPROF_ALLOC_ORDINAL | 0);
        assert_false(logdec_pending(&d));

        /* An empty record: no events. */
        logenc_allocs_start(&b, 7, 16, native);
        rec_out_init(&o, buf, sizeof buf);
        assert_int_equal(logenc_put_allocs(&o, &b, evbuf, 0), 0);
        assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), 0);
        assert_false(logdec_pending(&d));

        /* The timed records count on from the SAMPLE at 100. */
        rec_out_init(&o, buf, sizeof buf);
        assert_int_equal(logenc_put_rss(&o, 5, 1234), 0);
        assert_int_equal(decode(&d, PYPROF_REC_RSS, &o, &rec), 0);
        assert_int_equal(rec.u.rss.t_us, 105);
        logdec_free(&d);
    }
}

/* The native stack is a field of native logs only: the same events decoded the other way
 * lose their alignment. */
static void test_allocs_native_only(void **state)
{
    (void)state;
    uint8_t evbuf[64];
    rec_out ev, o;
    pyprof_record rec;
    logenc_allocs b;
    /* A native record: each allocation ends with its nstack_id (5). */
    rec_out_init(&ev, evbuf, sizeof evbuf);
    logenc_allocs_start(&b, 0, 0, 1);
    logenc_alloc_fields a = alloc_at(1, 0, 1, 8, 0, PYPROF_ALLOC_MALLOC, 0, 5);
    assert_int_equal(logenc_allocs_alloc(&ev, &b, &a, 0), 0);
    assert_int_equal(logenc_allocs_alloc(&ev, &b, &a, 0), 0);
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_allocs(&o, &b, ev.buf, ev.len), 0);
    logdec d = {.native = 1};
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), 0);
    expect_alloc(&d, &a, PYPROF_ALLOC_ORDINAL | 0);
    expect_alloc(&d, &a, PYPROF_ALLOC_ORDINAL | 1);
    logdec_free(&d);
    /* Read as a plain record, the first nstack_id is taken for the second event's head:
     * 5, a free by ordinal 1 back, before ordinal 0 with one allocation before it. */
    logdec p = {0};
    assert_int_equal(decode(&p, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    logdec_free(&p);

    /* A plain record read as a native one: the second event's head becomes the first
     * one's nstack_id, and the record is cut short. */
    rec_out_init(&ev, evbuf, sizeof evbuf);
    logenc_allocs_start(&b, 0, 0, 0);
    assert_int_equal(logenc_allocs_alloc(&ev, &b, &a, 0), 0);
    assert_int_equal(logenc_allocs_free(&ev, &b, 2, 0, 0, 0), 0);
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_allocs(&o, &b, ev.buf, ev.len), 0);
    logdec p2 = {0};
    assert_int_equal(decode(&p2, PYPROF_REC_ALLOCS, &o, &rec), 0);
    expect_alloc(&p2, &a, PYPROF_ALLOC_ORDINAL | 0);
    expect_free(&p2, 2, PYPROF_ALLOC_ORDINAL | 0);
    logdec_free(&p2);
    logdec n = {.native = 1};
    assert_int_equal(decode(&n, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    logdec_free(&n);
}

/* An ALLOCS payload from raw fields: count, t0_us, ordinal0, then the events' varints
 * (svarints given as their zigzag). */
static void put_allocs_raw(rec_out *o, uint64_t count, uint64_t t0, uint64_t ordinal0,
                           const uint64_t *v, size_t n)
{
    rec_out_init(o, buf, sizeof buf);
    rec_put_uvarint(o, count);
    rec_put_uvarint(o, t0);
    rec_put_uvarint(o, ordinal0);
    for (size_t i = 0; i < n; i++)
        rec_put_uvarint(o, v[i]);
    assert_false(o->overflow);
}

#define RAW(o, count, t0, ordinal0, ...)                                                       \
    do {                                                                                       \
        static const uint64_t v_[] = {__VA_ARGS__};                                            \
        put_allocs_raw((o), (count), (t0), (ordinal0), v_, sizeof v_ / sizeof v_[0]);          \
    } while (0)

/* What format.h calls corruption in an ALLOCS, each beside the nearest payload that is
 * not. */
static void test_allocs_corrupt(void **state)
{
    (void)state;
    logdec d = {0};
    pyprof_record rec;
    rec_out o;
    /* Kind 3; kind 2 (a free by address) is fine. */
    RAW(&o, 1, 10, 0, 0x40 << 2 | 3, 0);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    RAW(&o, 1, 10, 0, 0x40 << 2 | 2, 0);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), 0);
    expect_free(&d, 10, 0x40);
    /* `more` bits format.h does not define; all three it does. */
    RAW(&o, 1, 10, 0, PYPROF_ALLOCS_MORE, 8, 100, 0);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    RAW(&o, 1, 10, 0, PYPROF_ALLOCS_MORE, 1ull << 40, 100, 0);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    RAW(&o, 1, 10, 0, PYPROF_ALLOCS_MORE, PYPROF_ALLOCS_M_ALL | 8, 4, 0x50, 1, 100, 0);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    RAW(&o, 1, 10, 0, PYPROF_ALLOCS_MORE, PYPROF_ALLOCS_M_ALL, 4, 0x50, 1, 100, 0);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), 0);
    logenc_alloc_fields a = alloc_at(10, 4, 0, 100, 0, 0, 1, 0);
    expect_alloc(&d, &a, 0x50);
    /* A free by ordinal before ordinal 0: with ordinal0 2 and one allocation (next 3),
     * 3 back is corruption, 2 back is ordinal 0. */
    RAW(&o, 2, 10, 2, 0, 100, 0, 3 << 2 | 1, 0);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    RAW(&o, 2, 10, 2, 0, 100, 0, 2 << 2 | 1, 0);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), 0);
    a = alloc_at(10, 0, 0, 100, 0, 0, 0, 0);
    expect_alloc(&d, &a, PYPROF_ALLOC_ORDINAL | 2);
    expect_free(&d, 10, PYPROF_ALLOC_ORDINAL | 0);
    /* Before any allocation of the process, a free by ordinal names nothing. */
    RAW(&o, 1, 10, 0, 0 << 2 | 1, 0);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    /* A count larger than the bytes can hold, or than PYPROF_BATCH_MAX; refused before
     * room for that many events is made. */
    RAW(&o, 3, 10, 0, 0x40 << 2 | 2, 0, 0x41 << 2 | 2, 0);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    RAW(&o, 2, 10, 0, 0x40 << 2 | 2, 0, 0x41 << 2 | 2, 0);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), 0);
    expect_free(&d, 10, 0x40);
    expect_free(&d, 10, 0x41);
    logdec d2 = {0};
    RAW(&o, PYPROF_BATCH_MAX, 10, 0, 0x40 << 2 | 2, 0);
    assert_int_equal(decode(&d2, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    assert_true(d2.bev_cap < PYPROF_BATCH_MAX);
    logdec_free(&d2);
    {
        /* PYPROF_BATCH_MAX events of 2 bytes each are fine; one more is not. */
        static uint8_t big[2 * PYPROF_BATCH_MAX + 64];
        for (uint64_t count = PYPROF_BATCH_MAX; count <= PYPROF_BATCH_MAX + 1; count++) {
            rec_out_init(&o, big, sizeof big);
            rec_put_uvarint(&o, count);
            rec_put_uvarint(&o, 10);
            rec_put_uvarint(&o, 0);
            for (uint64_t i = 0; i < count; i++) {
                rec_put_uvarint(&o, 0x10 << 2 | 2);
                rec_put_svarint(&o, 0);
            }
            assert_false(o.overflow);
            logdec d3 = {0};
            rec.type = PYPROF_REC_ALLOCS;
            assert_int_equal(logdec_record(&d3, PYPROF_REC_ALLOCS, o.buf, o.len, &rec),
                             count > PYPROF_BATCH_MAX ? -PYPROF_R_CORRUPT : 0);
            logdec_free(&d3);
        }
    }
    /* Events cut short: an allocation without its gap, its size, its `more` fields;
     * a free without its gap; in a native log, an allocation without its nstack_id. */
    RAW(&o, 1, 10, 0, 1 << 6, 100);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    RAW(&o, 1, 10, 0, PYPROF_ALLOCS_MORE, PYPROF_ALLOCS_M_ADDRESS);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    RAW(&o, 1, 10, 0, PYPROF_ALLOCS_MORE, PYPROF_ALLOCS_M_ALL, 4, 0x50);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    RAW(&o, 2, 10, 0, 0x40 << 2 | 2, 0, 0x41 << 2 | 2);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    RAW(&o, 1, 10, 0, 1 << 6, 100, 0);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), 0);
    logdec n = {.native = 1};
    assert_int_equal(decode(&n, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    RAW(&o, 1, 10, 0, 1 << 6, 100, 0, 0);
    assert_int_equal(decode(&n, PYPROF_REC_ALLOCS, &o, &rec), 0);
    logdec_free(&n);
    /* A varint cut in the middle. */
    RAW(&o, 1, 10, 0, 0x40 << 2 | 2);
    buf[o.len++] = 0x80;
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    /* A header cut short. */
    rec_out_init(&o, buf, sizeof buf);
    rec_put_uvarint(&o, 0);
    rec_put_uvarint(&o, 10);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    /* An ordinal0 no ordinal can have; the largest that can. */
    RAW(&o, 1, 10, PYPROF_ALLOC_ORDINAL, 0x40 << 2 | 2, 0);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    RAW(&o, 0, 10, UINT64_MAX);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    RAW(&o, 2, 10, PYPROF_ALLOC_ORDINAL - 2, 0, 100, 0, 0 << 2 | 1, 0);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), 0);
    a = alloc_at(10, 0, 0, 100, 0, 0, 0, 0);
    expect_alloc(&d, &a, PYPROF_ALLOC_ORDINAL | (PYPROF_ALLOC_ORDINAL - 2));
    expect_free(&d, 10, PYPROF_ALLOC_ORDINAL | (PYPROF_ALLOC_ORDINAL - 2));
    /* A time before the start of profiling (t0 3, a gap of -5: zigzag 9). */
    RAW(&o, 1, 3, 0, 0x40 << 2 | 2, 9);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), -PYPROF_R_CORRUPT);
    RAW(&o, 1, 5, 0, 0x40 << 2 | 2, 9);
    assert_int_equal(decode(&d, PYPROF_REC_ALLOCS, &o, &rec), 0);
    expect_free(&d, 0, 0x40);
    assert_false(logdec_pending(&d));
    logdec_free(&d);
}
#undef RAW

/* A footer with every section the writer fills (the native one aside): cost, timers,
 * whole cost, spans, the allocation section when `alloc`, and the clock section. */
static logenc_footer_fields footer_fields(int alloc)
{
    logenc_footer_fields f = {.end_unix_ns = 1700000009000000000ull,
                              .duration_ns = 8876543211ull,
                              .samples = 3,
                              .signals = 7,
                              .end = PYPROF_END_EXIT,
                              .status_known = 1,
                              .status = 2,
                              .achieved_hz_milli = 99500,
                              .lib_cpu_ns = 1234567,
                              .handler_ns = 1000,
                              .writer_ns = 2000,
                              .timer_ns = 4242,
                              .untimed_ns = 777,
                              .signal_cost_ns = 16500,
                              .calib_signals = 32,
                              .calib_ns = 31000,
                              .process_cpu_ns = 4000000000ull,
                              .spans_lost = 31,
                              .has_alloc = alloc,
                              .alloc_samples = 501,
                              .alloc_frees = 402,
                              .alloc_lost = 3,
                              .frees_lost = 2,
                              .alloc_live = 99,
                              .clock_timer_ns = 2211000000ull,
                              .clock_kernel_ns = 2094000000ull,
                              .clock_corrected = 1};
    f.drops[PYPROF_DROP_RING_FULL] = 4;
    f.cost[1][2] = 3;
    return f;
}

/* The FOOTER payload `p` (len bytes) of a log with allocation sampling or not. */
static void decode_footer(const uint8_t *p, size_t len, int alloc, pyprof_footer *f)
{
    logdec d = {.alloc = alloc};
    pyprof_record rec;
    rec.type = PYPROF_REC_FOOTER;
    assert_int_equal(logdec_record(&d, PYPROF_REC_FOOTER, p, len, &rec), 0);
    *f = rec.u.footer;
    logdec_free(&d);
}

/* Every field but the clock section's is what footer_fields(alloc) wrote. */
static void expect_footer_but_clock(const pyprof_footer *f, int alloc)
{
    logenc_footer_fields w = footer_fields(alloc);
    assert_int_equal(f->end_unix_ns, w.end_unix_ns);
    assert_int_equal(f->duration_ns, w.duration_ns);
    assert_int_equal(f->samples, w.samples);
    assert_int_equal(f->signals, w.signals);
    assert_memory_equal(f->dropped, w.drops, sizeof f->dropped);
    assert_int_equal(f->end, w.end);
    assert_int_equal(f->status_known, 1);
    assert_int_equal(f->status, w.status);
    assert_int_equal(f->achieved_hz_milli, w.achieved_hz_milli);
    assert_int_equal(f->lib_cpu_ns, w.lib_cpu_ns);
    assert_true(f->has_cost);
    assert_int_equal(f->handler_ns, w.handler_ns);
    assert_int_equal(f->writer_ns, w.writer_ns);
    assert_int_equal(f->cost_ntime, PYPROF_COST_NTIME);
    assert_int_equal(f->cost_ndepth, PYPROF_COST_NDEPTH);
    for (int d = 0; d < PYPROF_COST_NDEPTH; d++)
        for (int t = 0; t < PYPROF_COST_NTIME; t++)
            assert_int_equal(f->cost[d][t], w.cost[d][t]);
    assert_true(f->has_timers);
    assert_int_equal(f->timer_ns, w.timer_ns);
    assert_int_equal(f->untimed_ns, w.untimed_ns);
    assert_false(f->has_native);
    assert_true(f->has_whole);
    assert_int_equal(f->signal_cost_ns, w.signal_cost_ns);
    assert_int_equal(f->calib_signals, w.calib_signals);
    assert_int_equal(f->calib_ns, w.calib_ns);
    assert_int_equal(f->process_cpu_ns, w.process_cpu_ns);
    assert_true(f->has_spans);
    assert_int_equal(f->spans_lost, w.spans_lost);
    assert_int_equal(f->has_alloc, alloc);
    if (alloc) {
        assert_int_equal(f->alloc_samples, w.alloc_samples);
        assert_int_equal(f->alloc_frees, w.alloc_frees);
        assert_int_equal(f->alloc_lost, w.alloc_lost);
        assert_int_equal(f->frees_lost, w.frees_lost);
        assert_int_equal(f->alloc_live, w.alloc_live);
    }
}

/* The clock section comes back after the allocation section, or after the span section
 * in a log without allocation sampling; a footer without it (an older writer's) reads as
 * no clock section and the rest intact, and so does one whose section is cut short.
 * clock_corrected's reserved bits are dropped.  The teardown section after it: 0 is
 * "not seen", n is n - 1 µs, and a footer without it reads as not seen. */
static void test_footer_clock(void **state)
{
    (void)state;
    for (int alloc = 0; alloc < 2; alloc++) {
        logenc_footer_fields w = footer_fields(alloc);
        rec_out o;
        rec_out_init(&o, buf, sizeof buf);
        assert_int_equal(logenc_put_footer(&o, &w), 0);
        pyprof_footer f;
        decode_footer(o.buf, o.len, alloc, &f);
        expect_footer_but_clock(&f, alloc);
        assert_true(f.has_clock);
        assert_int_equal(f.clock_timer_ns, 2211000000ull);
        assert_int_equal(f.clock_kernel_ns, 2094000000ull);
        assert_int_equal(f.clock_corrected, 1);

        assert_false(f.has_teardown); /* written as 0: not seen */

        /* A clock-section writer's footer: without the teardown section (1 byte). */
        decode_footer(o.buf, o.len - 1, alloc, &f);
        expect_footer_but_clock(&f, alloc);
        assert_true(f.has_clock);
        assert_false(f.has_teardown);

        /* An older writer's footer: without the clock section (5 + 5 + 1 bytes) either. */
        size_t old_len = o.len - 12;
        decode_footer(o.buf, old_len, alloc, &f);
        expect_footer_but_clock(&f, alloc);
        assert_false(f.has_clock);
        assert_int_equal(f.clock_timer_ns, 0);
        assert_int_equal(f.clock_kernel_ns, 0);
        assert_int_equal(f.clock_corrected, 0);

        /* Cut inside the clock section: not taken. */
        decode_footer(o.buf, o.len - 2, alloc, &f);
        expect_footer_but_clock(&f, alloc);
        assert_false(f.has_clock);
        assert_int_equal(f.clock_timer_ns, 0);

        /* Uncorrected, with reserved bits set; no per-thread timers (both 0); what a
         * later writer appends after the section is ignored. */
        w.clock_timer_ns = w.clock_kernel_ns = 0;
        w.clock_corrected = 6;
        rec_out_init(&o, buf, sizeof buf);
        assert_int_equal(logenc_put_footer(&o, &w), 0);
        rec_put_uvarint(&o, 12345);
        decode_footer(o.buf, o.len, alloc, &f);
        expect_footer_but_clock(&f, alloc);
        assert_true(f.has_clock);
        assert_int_equal(f.clock_timer_ns, 0);
        assert_int_equal(f.clock_kernel_ns, 0);
        assert_int_equal(f.clock_corrected, 0);

        /* The teardown seen at 1234 µs (written as 1 + it). */
        w.teardown_us1 = 1235;
        rec_out_init(&o, buf, sizeof buf);
        assert_int_equal(logenc_put_footer(&o, &w), 0);
        decode_footer(o.buf, o.len, alloc, &f);
        expect_footer_but_clock(&f, alloc);
        assert_true(f.has_clock);
        assert_true(f.has_teardown);
        assert_int_equal(f.teardown_us, 1234);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header),         cmocka_unit_test(test_timed_and_batch),
        cmocka_unit_test(test_stack_runs),     cmocka_unit_test(test_stack_gil),
        cmocka_unit_test(test_counts_checked), cmocka_unit_test(test_awindow),
        cmocka_unit_test(test_allocs),         cmocka_unit_test(test_allocs_native_only),
        cmocka_unit_test(test_allocs_corrupt), cmocka_unit_test(test_footer_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
