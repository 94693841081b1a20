/*
 * Unit tests of src/common/logenc.c: every record payload the writer emits, encoded from
 * known values and decoded field by field with the record codec, in the order
 * include/pyprof/format.h gives.  Each payload must be consumed exactly: a field too many
 * or too few shows as bytes left over or a decoder past the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "allocfields.h"
#include "common/logenc.h"
#include "common/record.h"

static uint8_t buf[1 << 16];

/* Decodes a str and compares it with `want`. */
static void expect_str(rec_in *in, const char *want, size_t want_len)
{
    size_t len;
    const uint8_t *p = rec_get_str(in, &len);
    assert_false(in->bad);
    assert_int_equal(len, want_len);
    if (len)
        assert_memory_equal(p, want, len);
}
#define EXPECT_CSTR(in, s) expect_str((in), (s), strlen(s))

static void expect_end(const rec_in *in)
{
    assert_false(in->bad);
    assert_int_equal(rec_in_left(in), 0);
}

static const char cmdline[] = "python3\0-c\0print('hi')\0\0x y\0";

static logenc_header_fields header_fields(void)
{
    return (logenc_header_fields){
        .pid = 4242,
        .ppid = 1,
        .run_id = "0123456789abcdef",
        .start_unix_ns = 1700000000123456789ull,
        .host = "host-1",
        .exe = "/usr/bin/python3.11",
        .cmdline = cmdline,
        .cmdline_len = sizeof cmdline - 1,
        .python_version = "3.11.7",
        .python_hex = 0x030b07f0,
        .period_ns = 10000000,
        .clock = PYPROF_CLOCK_WALL,
        .timer = "perf-task-clock",
        .max_depth = 256,
        .flags = PYPROF_HDR_MEMORY,
        .window = 3,
        .seq = 12,
        .series_start_unix_ns = 1699999999000000000ull,
        .offset_us = 987654321,
        .alloc_interval = 524288,
    };
}

static void test_header(void **state)
{
    (void)state;
    logenc_header_fields h = header_fields();
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_header(&o, &h), 0);
    rec_in in;
    rec_in_init(&in, buf, o.len);
    assert_int_equal(rec_get_uvarint(&in), PYPROF_FORMAT_VERSION);
    assert_int_equal(rec_get_uvarint(&in), 4242);
    assert_int_equal(rec_get_uvarint(&in), 1);
    EXPECT_CSTR(&in, "0123456789abcdef");
    assert_int_equal(rec_get_uvarint(&in), 1700000000123456789ull);
    EXPECT_CSTR(&in, "host-1");
    EXPECT_CSTR(&in, "/usr/bin/python3.11");
    /* Every argument, an empty one too, in order. */
    assert_int_equal(rec_get_uvarint(&in), 5);
    EXPECT_CSTR(&in, "python3");
    EXPECT_CSTR(&in, "-c");
    EXPECT_CSTR(&in, "print('hi')");
    EXPECT_CSTR(&in, "");
    EXPECT_CSTR(&in, "x y");
    EXPECT_CSTR(&in, "3.11.7");
    assert_int_equal(rec_get_uvarint(&in), 0x030b07f0);
    assert_int_equal(rec_get_uvarint(&in), 10000000);
    assert_int_equal(rec_get_u8(&in), PYPROF_CLOCK_WALL);
    EXPECT_CSTR(&in, "perf-task-clock");
    assert_int_equal(rec_get_uvarint(&in), 256);
    assert_int_equal(rec_get_uvarint(&in), PYPROF_HDR_MEMORY);
    assert_int_equal(rec_get_uvarint(&in), 3);
    assert_int_equal(rec_get_uvarint(&in), 12);
    assert_int_equal(rec_get_uvarint(&in), 1699999999000000000ull);
    assert_int_equal(rec_get_uvarint(&in), 987654321);
    assert_int_equal(rec_get_uvarint(&in), 524288);
    expect_end(&in);
}

/* ALLOC in a plain and a native log, FREE: every field in the order format.h gives. */
static void test_alloc_free(void **state)
{
    (void)state;
    for (int native = 0; native < 2; native++) {
        logenc_alloc_fields a = {.t_us = 1234567,
                                 .thread_idx = 3,
                                 .stack_id = 77,
                                 .size = 200001,
                                 .address = 0x7f1234567890ull,
                                 .domain = PYPROF_ALLOC_MMAP,
                                 .flags = PYPROF_ALLOC_F_UNTRACKED,
                                 .native = native,
                                 .nstack_id = 9};
        uint8_t small[LOGENC_ALLOC_MAX];
        rec_out o;
        rec_out_init(&o, small, sizeof small);
        assert_int_equal(logenc_put_alloc(&o, &a), 0);
        rec_in in;
        rec_in_init(&in, small, o.len);
        assert_int_equal(rec_get_uvarint(&in), 1234567);
        assert_int_equal(rec_get_uvarint(&in), 3);
        assert_int_equal(rec_get_uvarint(&in), 77);
        assert_int_equal(rec_get_uvarint(&in), 200001);
        assert_int_equal(rec_get_uvarint(&in), 0x7f1234567890ull);
        assert_int_equal(rec_get_u8(&in), PYPROF_ALLOC_MMAP);
        assert_int_equal(rec_get_uvarint(&in), PYPROF_ALLOC_F_UNTRACKED);
        if (native)
            assert_int_equal(rec_get_uvarint(&in), 9);
        expect_end(&in);
    }
    uint8_t small[LOGENC_FREE_MAX];
    rec_out o;
    rec_out_init(&o, small, sizeof small);
    assert_int_equal(logenc_put_free(&o, 99, 0x7f1234567890ull), 0);
    rec_in in;
    rec_in_init(&in, small, o.len);
    assert_int_equal(rec_get_uvarint(&in), 99);
    assert_int_equal(rec_get_uvarint(&in), 0x7f1234567890ull);
    expect_end(&in);
}

/* AWINDOW: every field in the order format.h gives; LOGENC_AWINDOW_MAX holds the
 * largest. */
static void test_awindow(void **state)
{
    (void)state;
    logenc_awindow_fields w = {.t_us = 1234567,
                               .len_us = 8000,
                               .planned_us = 4000,
                               .shift = 4,
                               .floor_shift = 6,
                               .flags = PYPROF_AWINDOW_F_PAUSED | PYPROF_AWINDOW_F_WRAPPED};
    uint8_t small[LOGENC_AWINDOW_MAX];
    rec_out o;
    rec_out_init(&o, small, sizeof small);
    assert_int_equal(logenc_put_awindow(&o, &w), 0);
    rec_in in;
    rec_in_init(&in, small, o.len);
    assert_int_equal(rec_get_uvarint(&in), 1234567);
    assert_int_equal(rec_get_uvarint(&in), 8000);
    assert_int_equal(rec_get_uvarint(&in), 4000);
    assert_int_equal(rec_get_uvarint(&in), 4);
    assert_int_equal(rec_get_uvarint(&in), 6);
    assert_int_equal(rec_get_uvarint(&in), PYPROF_AWINDOW_F_PAUSED | PYPROF_AWINDOW_F_WRAPPED);
    expect_end(&in);
    logenc_awindow_fields big = {UINT64_MAX, UINT64_MAX, UINT64_MAX,
                                 UINT64_MAX, UINT64_MAX, UINT64_MAX};
    rec_out_init(&o, small, sizeof small);
    assert_int_equal(logenc_put_awindow(&o, &big), 0);
    /* One byte short: refused. */
    rec_out_init(&o, small, sizeof small - 1);
    assert_int_equal(logenc_put_awindow(&o, &big), -1);
}

static void test_snapshot(void **state)
{
    (void)state;
    const logenc_snap_thread t[3] = {
        {0, 5, PYPROF_SNAP_F_GIL, 'R'},
        {1, 0, PYPROF_SNAP_F_CHANGED, 'S'},
        {300, 70000, 0, 0},
    };
    uint8_t small[LOGENC_SNAPSHOT_MAX(3)];
    rec_out o;
    rec_out_init(&o, small, sizeof small);
    assert_int_equal(logenc_put_snapshot(&o, 9, 123456789, t, 3), 0);
    rec_in in;
    rec_in_init(&in, small, o.len);
    assert_int_equal(rec_get_uvarint(&in), 9);
    assert_int_equal(rec_get_uvarint(&in), 123456789);
    assert_int_equal(rec_get_uvarint(&in), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rec_get_uvarint(&in), t[i].thread_idx);
        assert_int_equal(rec_get_uvarint(&in), t[i].stack_id);
        assert_int_equal(rec_get_uvarint(&in), t[i].flags);
        assert_int_equal(rec_get_u8(&in), t[i].os_state);
    }
    expect_end(&in);
    /* The bound holds for the largest values a writer can put. */
    logenc_snap_thread big = {UINT32_MAX, UINT32_MAX, 0xff, 0xff};
    rec_out_init(&o, small, LOGENC_SNAPSHOT_MAX(1));
    assert_int_equal(logenc_put_snapshot(&o, UINT64_MAX, UINT64_MAX, &big, 1), 0);
}

static void test_span(void **state)
{
    (void)state;
    /* A name one byte past the limit whose last whole character (a 3-byte one) would
     * straddle the cut: the cut moves back to the character's start. */
    char name[PYPROF_SPAN_NAME_MAX + 1];
    memset(name, 'a', sizeof name);
    memcpy(name + PYPROF_SPAN_NAME_MAX - 1, "\xe2\x82\xac", 2); /* the euro sign's first 2 */
    name[PYPROF_SPAN_NAME_MAX] = (char)0xac;
    logenc_span_start s = {
        .span_id = 7,
        .t_us = 1234567,
        .thread_idx = 3,
        .parent_span_id = 6,
        .name = name,
        .name_len = sizeof name,
        .trace_id = "t-1",
        .trace_id_len = 3,
        .parent_id = NULL,
        .parent_id_len = 0,
        .base_id = "b",
        .base_id_len = 1,
        .info = "{\"a\": 1}",
        .info_len = 8,
    };
    uint8_t out[LOGENC_SPAN_MAX];
    rec_out o;
    rec_out_init(&o, out, sizeof out);
    assert_int_equal(logenc_put_span_start(&o, &s), 0);
    rec_in in;
    rec_in_init(&in, out, o.len);
    assert_int_equal(rec_get_uvarint(&in), 7);
    assert_int_equal(rec_get_uvarint(&in), 1234567);
    assert_int_equal(rec_get_uvarint(&in), 3);
    assert_int_equal(rec_get_uvarint(&in), 6);
    expect_str(&in, name, PYPROF_SPAN_NAME_MAX - 1);
    EXPECT_CSTR(&in, "t-1");
    EXPECT_CSTR(&in, "");
    EXPECT_CSTR(&in, "b");
    EXPECT_CSTR(&in, "{\"a\": 1}");
    expect_end(&in);

    rec_out_init(&o, out, sizeof out);
    assert_int_equal(logenc_put_span_stop(&o, 7, 2000000, 4, "{}", 2), 0);
    rec_in_init(&in, out, o.len);
    assert_int_equal(rec_get_uvarint(&in), 7);
    assert_int_equal(rec_get_uvarint(&in), 2000000);
    assert_int_equal(rec_get_uvarint(&in), 4);
    EXPECT_CSTR(&in, "{}");
    expect_end(&in);

    /* The bound holds for the longest strings and largest numbers. */
    static char big[PYPROF_SPAN_INFO_MAX * 2];
    memset(big, 'x', sizeof big);
    logenc_span_start m = {
        .span_id = UINT64_MAX,
        .t_us = UINT64_MAX,
        .thread_idx = UINT64_MAX,
        .parent_span_id = UINT64_MAX,
        .name = big,
        .name_len = sizeof big,
        .trace_id = big,
        .trace_id_len = sizeof big,
        .parent_id = big,
        .parent_id_len = sizeof big,
        .base_id = big,
        .base_id_len = sizeof big,
        .info = big,
        .info_len = sizeof big,
    };
    rec_out_init(&o, out, sizeof out);
    assert_int_equal(logenc_put_span_start(&o, &m), 0);
}

static void test_header_no_cmdline(void **state)
{
    (void)state;
    logenc_header_fields h = header_fields();
    h.cmdline = "";
    h.cmdline_len = 0;
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_header(&o, &h), 0);
    rec_in in;
    rec_in_init(&in, buf, o.len);
    rec_get_uvarint(&in);
    rec_get_uvarint(&in);
    rec_get_uvarint(&in);
    EXPECT_CSTR(&in, "0123456789abcdef");
    rec_get_uvarint(&in);
    EXPECT_CSTR(&in, "host-1");
    EXPECT_CSTR(&in, "/usr/bin/python3.11");
    assert_int_equal(rec_get_uvarint(&in), 0);
    EXPECT_CSTR(&in, "3.11.7");
}

/* A command line without its last NUL (cut to the caller's buffer, or rewritten by
 * setproctitle): its last argument is still one, and argc says so. */
static void test_header_cut_cmdline(void **state)
{
    (void)state;
    logenc_header_fields h = header_fields();
    h.cmdline = "python3\0-c\0pri";
    h.cmdline_len = 14;
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_header(&o, &h), 0);
    rec_in in;
    rec_in_init(&in, buf, o.len);
    rec_get_uvarint(&in);
    rec_get_uvarint(&in);
    rec_get_uvarint(&in);
    EXPECT_CSTR(&in, "0123456789abcdef");
    rec_get_uvarint(&in);
    EXPECT_CSTR(&in, "host-1");
    EXPECT_CSTR(&in, "/usr/bin/python3.11");
    assert_int_equal(rec_get_uvarint(&in), 3);
    EXPECT_CSTR(&in, "python3");
    EXPECT_CSTR(&in, "-c");
    EXPECT_CSTR(&in, "pri");
    EXPECT_CSTR(&in, "3.11.7");
    assert_int_equal(rec_get_uvarint(&in), 0x030b07f0);
}

static void test_thread(void **state)
{
    (void)state;
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_thread(&o, 7, 123456, "worker-1"), 0);
    rec_in in;
    rec_in_init(&in, buf, o.len);
    assert_int_equal(rec_get_uvarint(&in), 7);
    assert_int_equal(rec_get_uvarint(&in), 123456);
    EXPECT_CSTR(&in, "worker-1");
    expect_end(&in);
}

static void test_code(void **state)
{
    (void)state;
    static const uint8_t lt[] = {0x80, 0x00, 0xff, 0x01, 0x7f};
    /* Not NUL-terminated: the lengths count, the bytes after them must not show. */
    logenc_code_fields c = {
        .code_id = 4097,
        .first_line = -3,
        .name = "handleXX",
        .name_len = 6,
        .qualname = "Srv.handle",
        .qualname_len = 10,
        .filename = "/srv/app.pyZ",
        .filename_len = 11,
        .lt_kind = PYPROF_LT_LOCATIONS_311,
        .lt = lt,
        .lt_len = sizeof lt,
        .flags = PYPROF_CODE_F_TABLE_CUT,
    };
    assert_int_equal(logenc_code_max(&c), 64 + 6 + 10 + 11 + sizeof lt);
    rec_out o;
    rec_out_init(&o, buf, logenc_code_max(&c));
    assert_int_equal(logenc_put_code(&o, &c), 0);
    rec_in in;
    rec_in_init(&in, buf, o.len);
    assert_int_equal(rec_get_uvarint(&in), 4097);
    assert_int_equal(rec_get_svarint(&in), -3);
    EXPECT_CSTR(&in, "handle");
    EXPECT_CSTR(&in, "Srv.handle");
    EXPECT_CSTR(&in, "/srv/app.py");
    assert_int_equal(rec_get_u8(&in), PYPROF_LT_LOCATIONS_311);
    expect_str(&in, (const char *)lt, sizeof lt);
    assert_int_equal(rec_get_uvarint(&in), PYPROF_CODE_F_TABLE_CUT);
    expect_end(&in);
}

static void test_stack(void **state)
{
    (void)state;
    const logenc_frame f[] = {
        {PYPROF_CODE_UNREADABLE, 0},
        {16, 10},
        {PYPROF_CODE_CUT, 300},
        {70000, -1},
    };
    size_t n = sizeof f / sizeof f[0];
    rec_out o;
    rec_out_init(&o, buf, LOGENC_STACK_MAX(n));
    assert_int_equal(logenc_put_stack(&o, 99, f, n), 0);
    rec_in in;
    rec_in_init(&in, buf, o.len);
    assert_int_equal(rec_get_uvarint(&in), 99);
    assert_int_equal(rec_get_uvarint(&in), n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(rec_get_uvarint(&in), f[i].code_id);
        assert_int_equal(rec_get_svarint(&in), f[i].line);
    }
    expect_end(&in);
}

/* The largest frames fit the size LOGENC_STACK_MAX promises. */
static void test_stack_max(void **state)
{
    (void)state;
    logenc_frame f[64];
    for (size_t i = 0; i < 64; i++)
        f[i] = (logenc_frame){UINT32_MAX, INT32_MIN};
    rec_out o;
    rec_out_init(&o, buf, LOGENC_STACK_MAX(64));
    assert_int_equal(logenc_put_stack(&o, UINT32_MAX, f, 64), 0);
}

static void test_sample(void **state)
{
    (void)state;
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_sample(&o, -25, 2, 300, 10000), 0);
    rec_in in;
    rec_in_init(&in, buf, o.len);
    assert_int_equal(rec_get_svarint(&in), -25);
    assert_int_equal(rec_get_uvarint(&in), 2);
    assert_int_equal(rec_get_uvarint(&in), 300);
    assert_int_equal(rec_get_uvarint(&in), 10000);
    expect_end(&in);
}

static void test_rss(void **state)
{
    (void)state;
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_rss(&o, 20000, 123456789012ull), 0);
    rec_in in;
    rec_in_init(&in, buf, o.len);
    assert_int_equal(rec_get_svarint(&in), 20000);
    assert_int_equal(rec_get_uvarint(&in), 123456789012ull);
    expect_end(&in);
}

static void test_footer(void **state)
{
    (void)state;
    logenc_footer_fields f = {
        .end_unix_ns = 1700000009000000000ull,
        .duration_ns = 8876543211ull,
        .samples = 3,
        .signals = 7,
        .end = PYPROF_END_SIGNAL,
        .status_known = 5,
        .status = -15,
        .achieved_hz_milli = 99500,
        .lib_cpu_ns = 1234567,
        .handler_ns = 1000,
        .writer_ns = 234567,
        .timer_ns = 4242,
        .untimed_ns = 777,
        .signal_cost_ns = 16500,
        .calib_signals = 32,
        .calib_ns = 31000000,
        .process_cpu_ns = 4000000000ull,
        .spans_lost = 31,
        .has_alloc = 1,
        .alloc_samples = 501,
        .alloc_frees = 402,
        .alloc_lost = 3,
        .frees_lost = 2,
        .alloc_live = 99,
        .clock_timer_ns = 2211000000ull,
        .clock_kernel_ns = 2094000000ull,
        .clock_corrected = 1,
    };
    for (int i = 0; i < PYPROF_DROP_COUNT; i++)
        f.drops[i] = 100u + (unsigned)i;
    for (int d = 0; d < PYPROF_COST_NDEPTH; d++)
        for (int t = 0; t < PYPROF_COST_NTIME; t++)
            f.cost[d][t] = (uint64_t)d * 1000 + (uint64_t)t;
    rec_out o;
    rec_out_init(&o, buf, 2048); /* what the writer gives it */
    assert_int_equal(logenc_put_footer(&o, &f), 0);
    rec_in in;
    rec_in_init(&in, buf, o.len);
    assert_int_equal(rec_get_uvarint(&in), 1700000009000000000ull);
    assert_int_equal(rec_get_uvarint(&in), 8876543211ull);
    assert_int_equal(rec_get_uvarint(&in), 3);
    assert_int_equal(rec_get_uvarint(&in), 7);
    assert_int_equal(rec_get_uvarint(&in), PYPROF_DROP_COUNT);
    for (int i = 0; i < PYPROF_DROP_COUNT; i++) {
        assert_int_equal(rec_get_uvarint(&in), i);
        assert_int_equal(rec_get_uvarint(&in), 100 + i);
    }
    assert_int_equal(rec_get_uvarint(&in), PYPROF_END_SIGNAL);
    assert_int_equal(rec_get_u8(&in), 1); /* status_known is a flag */
    assert_int_equal(rec_get_svarint(&in), -15);
    assert_int_equal(rec_get_uvarint(&in), 99500);
    assert_int_equal(rec_get_uvarint(&in), 1234567);
    assert_int_equal(rec_get_uvarint(&in), 1000);
    assert_int_equal(rec_get_uvarint(&in), 234567);
    static const uint32_t time_bounds[] = PYPROF_COST_TIME_BOUNDS_NS;
    static const uint32_t depth_bounds[] = PYPROF_COST_DEPTH_BOUNDS;
    assert_int_equal(rec_get_uvarint(&in), PYPROF_COST_NTIME);
    for (int t = 0; t < PYPROF_COST_NTIME; t++)
        assert_int_equal(rec_get_uvarint(&in), time_bounds[t]);
    assert_int_equal(rec_get_uvarint(&in), PYPROF_COST_NDEPTH);
    for (int d = 0; d < PYPROF_COST_NDEPTH; d++) {
        assert_int_equal(rec_get_uvarint(&in), depth_bounds[d]);
        for (int t = 0; t < PYPROF_COST_NTIME; t++)
            assert_int_equal(rec_get_uvarint(&in), d * 1000 + t);
    }
    assert_int_equal(rec_get_uvarint(&in), 4242);
    assert_int_equal(rec_get_uvarint(&in), 777);
    /* The whole-cost section, after the timer section in a log without native frames. */
    assert_int_equal(rec_get_uvarint(&in), 16500);
    assert_int_equal(rec_get_uvarint(&in), 32);
    assert_int_equal(rec_get_uvarint(&in), 31000000);
    assert_int_equal(rec_get_uvarint(&in), 4000000000ull);
    assert_int_equal(rec_get_uvarint(&in), 31); /* spans_lost, after the whole-cost section */
    /* The allocation section. */
    assert_int_equal(rec_get_uvarint(&in), 501);
    assert_int_equal(rec_get_uvarint(&in), 402);
    assert_int_equal(rec_get_uvarint(&in), 3);
    assert_int_equal(rec_get_uvarint(&in), 2);
    assert_int_equal(rec_get_uvarint(&in), 99);
    /* The clock section, last. */
    assert_int_equal(rec_get_uvarint(&in), 2211000000ull);
    assert_int_equal(rec_get_uvarint(&in), 2094000000ull);
    assert_int_equal(rec_get_uvarint(&in), 1);
    assert_int_equal(rec_get_uvarint(&in), 0); /* the teardown section: not seen */
    expect_end(&in);
}

/* A native log's STACK: the runs follow the frames, inside LOGENC_RUNS_MAX. */
static void test_stack_runs(void **state)
{
    (void)state;
    const logenc_frame f[] = {{PYPROF_CODE_UNREADABLE, 0}, {16, 1}, {17, 2}, {18, 3}};
    const uint32_t runs[] = {1, 2, 1};
    rec_out o;
    rec_out_init(&o, buf, LOGENC_STACK_MAX(4) + LOGENC_RUNS_MAX(4));
    assert_int_equal(logenc_put_stack(&o, 5, f, 4), 0);
    assert_int_equal(logenc_put_stack_runs(&o, runs, 3), 0);
    rec_in in;
    rec_in_init(&in, buf, o.len);
    assert_int_equal(rec_get_uvarint(&in), 5);
    assert_int_equal(rec_get_uvarint(&in), 4);
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(rec_get_uvarint(&in), f[i].code_id);
        assert_int_equal(rec_get_svarint(&in), f[i].line);
    }
    assert_int_equal(rec_get_uvarint(&in), 3);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(rec_get_uvarint(&in), runs[i]);
    expect_end(&in);
    /* The largest run lengths fit too. */
    uint32_t big[64];
    for (size_t i = 0; i < 64; i++)
        big[i] = UINT32_MAX;
    rec_out_init(&o, buf, LOGENC_RUNS_MAX(64));
    assert_int_equal(logenc_put_stack_runs(&o, big, 64), 0);
}

/* A wall-clock log's STACK: the GIL state is the last field, after the frames, and in a
 * native log after the runs; the writer's buffer (the stack's, the runs' and one varint
 * more) holds it. */
static void test_stack_gil(void **state)
{
    (void)state;
    const logenc_frame f[] = {{16, 1}, {17, 2}, {18, -1}};
    const uint32_t runs[] = {2, 1};
    for (int native = 0; native < 2; native++) {
        rec_out o;
        rec_out_init(&o, buf, LOGENC_STACK_MAX(3) + LOGENC_RUNS_MAX(3) + REC_VARINT_MAX);
        assert_int_equal(logenc_put_stack(&o, 8, f, 3), 0);
        if (native)
            assert_int_equal(logenc_put_stack_runs(&o, runs, 2), 0);
        assert_int_equal(logenc_put_stack_gil(&o, PYPROF_GIL_WAIT), 0);
        rec_in in;
        rec_in_init(&in, buf, o.len);
        assert_int_equal(rec_get_uvarint(&in), 8);
        assert_int_equal(rec_get_uvarint(&in), 3);
        for (size_t i = 0; i < 3; i++) {
            assert_int_equal(rec_get_uvarint(&in), f[i].code_id);
            assert_int_equal(rec_get_svarint(&in), f[i].line);
        }
        if (native) {
            assert_int_equal(rec_get_uvarint(&in), 2);
            assert_int_equal(rec_get_uvarint(&in), 2);
            assert_int_equal(rec_get_uvarint(&in), 1);
        }
        assert_int_equal(rec_get_uvarint(&in), PYPROF_GIL_WAIT);
        expect_end(&in);
    }
    /* No room left for the state: the encoder says so. */
    rec_out o;
    rec_out_init(&o, buf, 2);
    assert_int_equal(logenc_put_stack(&o, 8, NULL, 0), 0);
    assert_int_equal(logenc_put_stack_gil(&o, PYPROF_GIL_HELD), -1);
    assert_true(o.overflow);
}

static void test_sample_native(void **state)
{
    (void)state;
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_sample(&o, 7, 1, 2, 3), 0);
    assert_int_equal(logenc_put_sample_native(&o, 300, PYPROF_NATIVE_F_TRUNCATED), 0);
    rec_in in;
    rec_in_init(&in, buf, o.len);
    assert_int_equal(rec_get_svarint(&in), 7);
    assert_int_equal(rec_get_uvarint(&in), 1);
    assert_int_equal(rec_get_uvarint(&in), 2);
    assert_int_equal(rec_get_uvarint(&in), 3);
    assert_int_equal(rec_get_uvarint(&in), 300);
    assert_int_equal(rec_get_uvarint(&in), PYPROF_NATIVE_F_TRUNCATED);
    expect_end(&in);
}

static void test_module(void **state)
{
    (void)state;
    static const uint8_t bid[20] = {0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3};
    const logenc_segment segs[] = {
        {0, 0x1000, 0, 4},
        {0x1000, 0x5432, 0x1000, 5},
        {UINT64_MAX, 1, 2, 6},
    };
    logenc_module_fields m = {
        .module_id = 3,
        .path = "/usr/lib/libx.so.1",
        .base = 0x7f0000000000ull,
        .build_id = bid,
        .build_id_len = sizeof bid,
        .segs = segs,
        .nseg = 3,
        .dev = 0x803,
        .ino = 123456,
        .size = 98765,
        .mtime_ns = 1700000000987654321ull,
    };
    rec_out o;
    rec_out_init(&o, buf, logenc_module_max(&m));
    assert_int_equal(logenc_put_module(&o, &m), 0);
    rec_in in;
    rec_in_init(&in, buf, o.len);
    assert_int_equal(rec_get_uvarint(&in), 3);
    EXPECT_CSTR(&in, "/usr/lib/libx.so.1");
    assert_int_equal(rec_get_uvarint(&in), 0x7f0000000000ull);
    expect_str(&in, (const char *)bid, sizeof bid);
    assert_int_equal(rec_get_uvarint(&in), 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(rec_get_uvarint(&in), segs[i].vaddr);
        assert_int_equal(rec_get_uvarint(&in), segs[i].memsz);
        assert_int_equal(rec_get_uvarint(&in), segs[i].file_offset);
        assert_int_equal(rec_get_uvarint(&in), segs[i].flags);
    }
    assert_int_equal(rec_get_uvarint(&in), 0x803);
    assert_int_equal(rec_get_uvarint(&in), 123456);
    assert_int_equal(rec_get_uvarint(&in), 98765);
    assert_int_equal(rec_get_uvarint(&in), 1700000000987654321ull);
    expect_end(&in);
    /* No build-id, no segments, no file: still a whole record. */
    logenc_module_fields v = {.module_id = 4, .path = "linux-vdso.so.1", .base = 1};
    rec_out_init(&o, buf, logenc_module_max(&v));
    assert_int_equal(logenc_put_module(&o, &v), 0);
    rec_in_init(&in, buf, o.len);
    assert_int_equal(rec_get_uvarint(&in), 4);
    EXPECT_CSTR(&in, "linux-vdso.so.1");
    assert_int_equal(rec_get_uvarint(&in), 1);
    expect_str(&in, "", 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(rec_get_uvarint(&in), 0);
    expect_end(&in);
}

static void test_nstack(void **state)
{
    (void)state;
    const uint64_t a[] = {0x401000, 0x7fffffffffffull, UINT64_MAX, 0};
    rec_out o;
    rec_out_init(&o, buf, LOGENC_NSTACK_MAX(4));
    assert_int_equal(logenc_put_nstack(&o, UINT32_MAX, a, 4), 0);
    rec_in in;
    rec_in_init(&in, buf, o.len);
    assert_int_equal(rec_get_uvarint(&in), UINT32_MAX);
    assert_int_equal(rec_get_uvarint(&in), 4);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(rec_get_uvarint(&in), a[i]);
    expect_end(&in);
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_module_gone(&o, 77), 0);
    rec_in_init(&in, buf, o.len);
    assert_int_equal(rec_get_uvarint(&in), 77);
    expect_end(&in);
}

/* The native section follows the timer section, only when asked for; the whole-cost,
 * span and clock sections come after it (the clock section right after the span section
 * in a log without allocation sampling). */
static void test_footer_native(void **state)
{
    (void)state;
    logenc_footer_fields f = {.timer_ns = 4242,
                              .untimed_ns = 777,
                              .signal_cost_ns = 300,
                              .calib_signals = 5,
                              .calib_ns = 6,
                              .process_cpu_ns = 7,
                              .spans_lost = 8,
                              .clock_timer_ns = 9,
                              .clock_kernel_ns = 10,
                              .clock_corrected = 0};
    rec_out o;
    rec_out_init(&o, buf, 2048);
    assert_int_equal(logenc_put_footer(&o, &f), 0);
    /* The whole-cost, span, clock and teardown sections: 2 + 1 + 1 + 1, 1, 1 + 1 + 1,
     * 1 bytes. */
    size_t plain = o.len - 10;
    f.has_native = 1;
    f.native_ok = 10;
    f.native_truncated = 2;
    f.native_skipped = 3;
    f.native_ns = 123456789;
    rec_out_init(&o, buf, 2048);
    assert_int_equal(logenc_put_footer(&o, &f), 0);
    rec_in in;
    /* Two bytes each for the timer section: the tail of before. */
    rec_in_init(&in, buf + plain - 4, o.len - plain + 4);
    assert_int_equal(rec_get_uvarint(&in), 4242);
    assert_int_equal(rec_get_uvarint(&in), 777);
    assert_int_equal(rec_get_uvarint(&in), 10);
    assert_int_equal(rec_get_uvarint(&in), 2);
    assert_int_equal(rec_get_uvarint(&in), 3);
    assert_int_equal(rec_get_uvarint(&in), 123456789);
    assert_int_equal(rec_get_uvarint(&in), 300);
    assert_int_equal(rec_get_uvarint(&in), 5);
    assert_int_equal(rec_get_uvarint(&in), 6);
    assert_int_equal(rec_get_uvarint(&in), 7);
    assert_int_equal(rec_get_uvarint(&in), 8);
    assert_int_equal(rec_get_uvarint(&in), 9);
    assert_int_equal(rec_get_uvarint(&in), 10);
    assert_int_equal(rec_get_uvarint(&in), 0);
    assert_int_equal(rec_get_uvarint(&in), 0);
    expect_end(&in);
}

/* ---- BATCH ---------------------------------------------------------------------------- */

static uint8_t evbuf[4096];

/* A batch after a timed record at 1000 us, period 10 ms, RSS in 4 KiB pages: every
 * kind of event, each in the form format.h gives it. */
static void test_batch(void **state)
{
    (void)state;
    logenc_batch b;
    logenc_batch_start(&b, 1000, 10000, 10000, 4096, 0);
    rec_out ev;
    rec_out_init(&ev, evbuf, sizeof evbuf);
    /* One period after t0, the current thread (0): an even head, gap - base 0. */
    assert_int_equal(logenc_batch_sample(&ev, &b, 11000, 0, 5, 10000, 0, 0), 0);
    /* Another thread, 3 us late: kind 1. */
    assert_int_equal(logenc_batch_sample(&ev, &b, 21003, 2, 40, 10000, 0, 0), 0);
    /* An RSS point: 100 pages, 3997 us after the sample. */
    assert_int_equal(logenc_batch_rss(&ev, &b, 25000, 100 * 4096), 0);
    /* The gap counts from the last sample, not from the RSS point: 3 us early. */
    assert_int_equal(logenc_batch_sample(&ev, &b, 31000, 2, 5, 10000, 0, 0), 0);
    /* Thread 0 at the same moment, with its own cpu_us: kind 5, a plain gap (0). */
    assert_int_equal(logenc_batch_sample(&ev, &b, 31000, 0, 7, 5000, 0, 0), 0);
    /* RSS two pages down, 500 us later. */
    assert_int_equal(logenc_batch_rss(&ev, &b, 31500, 98 * 4096), 0);
    /* A gap far from the period, the same thread and cpu: kind 5 with only the plain
     * gap (540 us from the last sample takes 2 bytes plain, 3 relative to 10000). */
    assert_int_equal(logenc_batch_sample(&ev, &b, 31540, 0, 7, 10000, 0, 0), 0);
    assert_int_equal(b.count, 7);

    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_batch(&o, &b, ev.buf, ev.len), 0);
    rec_in in;
    rec_in_init(&in, buf, o.len);
    assert_int_equal(rec_get_uvarint(&in), 7);     /* count */
    assert_int_equal(rec_get_uvarint(&in), 10000); /* base_us */
    assert_int_equal(rec_get_uvarint(&in), 10000); /* cpu_us */
    assert_int_equal(rec_get_uvarint(&in), 4096);  /* rss_unit */
    assert_int_equal(rec_get_uvarint(&in), 5 << 1);
    assert_int_equal(rec_get_svarint(&in), 0);
    assert_int_equal(rec_get_uvarint(&in), 40 << 3 | 1);
    assert_int_equal(rec_get_uvarint(&in), 2);
    assert_int_equal(rec_get_svarint(&in), 3);
    assert_int_equal(rec_get_uvarint(&in), 200 << 3 | 3); /* zigzag(100) = 200 */
    assert_int_equal(rec_get_svarint(&in), 3997);
    assert_int_equal(rec_get_uvarint(&in), 5 << 1);
    assert_int_equal(rec_get_svarint(&in), -3);
    assert_int_equal(rec_get_uvarint(&in), 7 << 3 | 5);
    assert_int_equal(rec_get_uvarint(&in),
                     PYPROF_BATCH_F_THREAD | PYPROF_BATCH_F_CPU | PYPROF_BATCH_F_DT);
    assert_int_equal(rec_get_uvarint(&in), 0);
    assert_int_equal(rec_get_uvarint(&in), 5000);
    assert_int_equal(rec_get_svarint(&in), 0);
    assert_int_equal(rec_get_uvarint(&in), 3 << 3 | 3); /* zigzag(-2) = 3 */
    assert_int_equal(rec_get_svarint(&in), 500);
    assert_int_equal(rec_get_uvarint(&in), 7 << 3 | 5);
    assert_int_equal(rec_get_uvarint(&in), PYPROF_BATCH_F_DT);
    assert_int_equal(rec_get_svarint(&in), 540);
    expect_end(&in);
}

/* Native logs: every sample ends with its native stack and flags; RSS points do not. */
static void test_batch_native(void **state)
{
    (void)state;
    logenc_batch b;
    logenc_batch_start(&b, 0, 1000, 1000, 0, 1);
    assert_int_equal(b.rss_unit, 1); /* 0 is taken as 1 */
    rec_out ev;
    rec_out_init(&ev, evbuf, sizeof evbuf);
    assert_int_equal(
        logenc_batch_sample(&ev, &b, 1000, 0, 3, 1000, 300, PYPROF_NATIVE_F_TRUNCATED), 0);
    assert_int_equal(logenc_batch_rss(&ev, &b, 1500, 12345), 0);
    assert_int_equal(logenc_batch_sample(&ev, &b, 2001, 1, 4, 1000, 0, PYPROF_NATIVE_F_SKIPPED),
                     0);
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_batch(&o, &b, ev.buf, ev.len), 0);
    rec_in in;
    rec_in_init(&in, buf, o.len);
    assert_int_equal(rec_get_uvarint(&in), 3);
    assert_int_equal(rec_get_uvarint(&in), 1000);
    assert_int_equal(rec_get_uvarint(&in), 1000);
    assert_int_equal(rec_get_uvarint(&in), 1);
    assert_int_equal(rec_get_uvarint(&in), 3 << 1);
    assert_int_equal(rec_get_svarint(&in), 0);
    assert_int_equal(rec_get_uvarint(&in), 300);
    assert_int_equal(rec_get_uvarint(&in), PYPROF_NATIVE_F_TRUNCATED);
    assert_int_equal(rec_get_uvarint(&in), (uint64_t)24690 << 3 | 3);
    assert_int_equal(rec_get_svarint(&in), 500);
    assert_int_equal(rec_get_uvarint(&in), 4 << 3 | 1);
    assert_int_equal(rec_get_uvarint(&in), 1);
    assert_int_equal(rec_get_svarint(&in), 1);
    assert_int_equal(rec_get_uvarint(&in), 0);
    assert_int_equal(rec_get_uvarint(&in), PYPROF_NATIVE_F_SKIPPED);
    expect_end(&in);
}

/* What a batch cannot take leaves the events and the state as they were, so the writer
 * can write the batch and start the next, or fall back to an RSS record. */
static void test_batch_refused(void **state)
{
    (void)state;
    logenc_batch b;
    logenc_batch_start(&b, 0, 10000, 10000, 4096, 0);
    rec_out ev;
    rec_out_init(&ev, evbuf, 3);
    assert_int_equal(logenc_batch_sample(&ev, &b, 10000, 0, 1, 10000, 0, 0), 0);
    logenc_batch before = b;
    size_t len = ev.len;
    /* No room for a 2-byte head and its thread and gap. */
    assert_int_equal(logenc_batch_sample(&ev, &b, 20000, 5, 100, 10000, 0, 0), -1);
    assert_int_equal(ev.len, len);
    assert_false(ev.overflow);
    assert_memory_equal(&b, &before, sizeof b);
    /* Not a whole number of pages. */
    rec_out_init(&ev, evbuf, sizeof evbuf);
    assert_int_equal(logenc_batch_rss(&ev, &b, 20000, 4097), -1);
    assert_int_equal(ev.len, 0);
    assert_memory_equal(&b, &before, sizeof b);
    /* Full. */
    b.count = PYPROF_BATCH_MAX;
    assert_int_equal(logenc_batch_sample(&ev, &b, 20000, 0, 1, 10000, 0, 0), -1);
    assert_int_equal(logenc_batch_rss(&ev, &b, 20000, 4096), -1);
    assert_int_equal(ev.len, 0);
}

/* ---- ALLOCS --------------------------------------------------------------------------- */

/* An ALLOCS at t0 5000 us whose first allocation is the process's eleventh (ordinal 10):
 * every kind of event, each in the form format.h gives it. */
static void test_allocs(void **state)
{
    (void)state;
    logenc_allocs b;
    logenc_allocs_start(&b, 5000, 10, 0);
    rec_out ev;
    rec_out_init(&ev, evbuf, sizeof evbuf);
    logenc_alloc_fields a;
    /* Ordinal 10: the current thread (0), by ordinal, no flags: a head and no `more`. */
    a = alloc_at(5010, 0, 77, 100, 0x1000, PYPROF_ALLOC_PYMEM, 0, 0);
    assert_int_equal(logenc_allocs_alloc(&ev, &b, &a, 0), 0);
    /* 11: thread 3, which becomes the current one. */
    a = alloc_at(5015, 3, 5, 4096, 0x2000, PYPROF_ALLOC_MALLOC, 0, 0);
    assert_int_equal(logenc_allocs_alloc(&ev, &b, &a, 0), 0);
    /* 12: thread 3 again (no M_THREAD), named by its address, at the same moment. */
    a = alloc_at(5015, 3, 0, 1 << 20, 0x7f0012340000ull, PYPROF_ALLOC_MMAP, 0, 0);
    assert_int_equal(logenc_allocs_alloc(&ev, &b, &a, 1), 0);
    /* 13: back to thread 0, untracked. */
    a = alloc_at(5020, 0, 9, 64, 0x3000, PYPROF_ALLOC_PYOBJECT, PYPROF_ALLOC_F_UNTRACKED, 0);
    assert_int_equal(logenc_allocs_alloc(&ev, &b, &a, 0), 0);
    assert_int_equal(b.nallocs, 4);
    /* A free of 11 (this record's): 14 - 1 - 11 = 2 back. */
    assert_int_equal(logenc_allocs_free(&ev, &b, 5030, 0, 11, 0), 0);
    /* A free of 3, allocated in an earlier record; 5 us before the last event. */
    assert_int_equal(logenc_allocs_free(&ev, &b, 5025, 0, 3, 0), 0);
    /* A free by address, at the same moment. */
    assert_int_equal(logenc_allocs_free(&ev, &b, 5025, 1, 0, 0x7f0012340000ull), 0);
    /* 14: every `more` field at once (a flag format.h does not define yet), a stack whose
     * head takes several bytes. */
    a = alloc_at(5100, 7, 1 << 20, 24, 0x7f00aa000010ull, PYPROF_ALLOC_PYRAW, 8, 0);
    assert_int_equal(logenc_allocs_alloc(&ev, &b, &a, 1), 0);
    /* A free of the block just allocated (0 back) and of ordinal 0, the process's first. */
    assert_int_equal(logenc_allocs_free(&ev, &b, 5101, 0, 14, 0), 0);
    assert_int_equal(logenc_allocs_free(&ev, &b, 5102, 0, 0, 0), 0);
    assert_int_equal(b.count, 10);
    assert_int_equal(b.nallocs, 5);
    assert_int_equal(b.thread, 7);
    assert_int_equal(b.t_us, 5102);

    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_allocs(&o, &b, ev.buf, ev.len), 0);
    rec_in in;
    rec_in_init(&in, buf, o.len);
    assert_int_equal(rec_get_uvarint(&in), 10);   /* count */
    assert_int_equal(rec_get_uvarint(&in), 5000); /* t0_us */
    assert_int_equal(rec_get_uvarint(&in), 10);   /* ordinal0 */
    /* 10 */
    assert_int_equal(rec_get_uvarint(&in), 77 << 6 | PYPROF_ALLOC_PYMEM << 2);
    assert_int_equal(rec_get_uvarint(&in), 100);
    assert_int_equal(rec_get_svarint(&in), 10);
    /* 11 */
    assert_int_equal(rec_get_uvarint(&in), 5 << 6 | PYPROF_ALLOCS_MORE);
    assert_int_equal(rec_get_uvarint(&in), PYPROF_ALLOCS_M_THREAD);
    assert_int_equal(rec_get_uvarint(&in), 3);
    assert_int_equal(rec_get_uvarint(&in), 4096);
    assert_int_equal(rec_get_svarint(&in), 5);
    /* 12 */
    assert_int_equal(rec_get_uvarint(&in), PYPROF_ALLOCS_MORE | PYPROF_ALLOC_MMAP << 2);
    assert_int_equal(rec_get_uvarint(&in), PYPROF_ALLOCS_M_ADDRESS);
    assert_int_equal(rec_get_uvarint(&in), 0x7f0012340000ull);
    assert_int_equal(rec_get_uvarint(&in), 1 << 20);
    assert_int_equal(rec_get_svarint(&in), 0);
    /* 13 */
    assert_int_equal(rec_get_uvarint(&in),
                     9 << 6 | PYPROF_ALLOCS_MORE | PYPROF_ALLOC_PYOBJECT << 2);
    assert_int_equal(rec_get_uvarint(&in), PYPROF_ALLOCS_M_THREAD | PYPROF_ALLOCS_M_FLAGS);
    assert_int_equal(rec_get_uvarint(&in), 0);
    assert_int_equal(rec_get_uvarint(&in), PYPROF_ALLOC_F_UNTRACKED);
    assert_int_equal(rec_get_uvarint(&in), 64);
    assert_int_equal(rec_get_svarint(&in), 5);
    /* The frees: by ordinal (2 back, 10 back), by address. */
    assert_int_equal(rec_get_uvarint(&in), 2 << 2 | 1);
    assert_int_equal(rec_get_svarint(&in), 10);
    assert_int_equal(rec_get_uvarint(&in), 10 << 2 | 1);
    assert_int_equal(rec_get_svarint(&in), -5);
    assert_int_equal(rec_get_uvarint(&in), 0x7f0012340000ull << 2 | 2);
    assert_int_equal(rec_get_svarint(&in), 0);
    /* 14 */
    assert_int_equal(rec_get_uvarint(&in),
                     (uint64_t)1 << 26 | PYPROF_ALLOCS_MORE | PYPROF_ALLOC_PYRAW << 2);
    assert_int_equal(rec_get_uvarint(&in), PYPROF_ALLOCS_M_ALL);
    assert_int_equal(rec_get_uvarint(&in), 7);
    assert_int_equal(rec_get_uvarint(&in), 0x7f00aa000010ull);
    assert_int_equal(rec_get_uvarint(&in), 8);
    assert_int_equal(rec_get_uvarint(&in), 24);
    assert_int_equal(rec_get_svarint(&in), 75);
    assert_int_equal(rec_get_uvarint(&in), 0 << 2 | 1);
    assert_int_equal(rec_get_svarint(&in), 1);
    assert_int_equal(rec_get_uvarint(&in), 14 << 2 | 1); /* 15 - 1 - 0 */
    assert_int_equal(rec_get_svarint(&in), 1);
    expect_end(&in);
}

/* Native logs: every allocation event ends with its native stack, after the gap; frees
 * have none. */
static void test_allocs_native(void **state)
{
    (void)state;
    logenc_allocs b;
    logenc_allocs_start(&b, 0, 0, 1);
    rec_out ev;
    rec_out_init(&ev, evbuf, sizeof evbuf);
    logenc_alloc_fields a = alloc_at(40, 2, 6, 128, 0, PYPROF_ALLOC_MALLOC, 0, 300);
    assert_int_equal(logenc_allocs_alloc(&ev, &b, &a, 0), 0);
    assert_int_equal(logenc_allocs_free(&ev, &b, 45, 0, 0, 0), 0);
    a = alloc_at(30, 2, 6, 256, 0xabc0, PYPROF_ALLOC_MALLOC, 0, 0);
    assert_int_equal(logenc_allocs_alloc(&ev, &b, &a, 1), 0);
    assert_int_equal(logenc_allocs_free(&ev, &b, 50, 1, 0, 0xabc0), 0);
    rec_out o;
    rec_out_init(&o, buf, sizeof buf);
    assert_int_equal(logenc_put_allocs(&o, &b, ev.buf, ev.len), 0);
    rec_in in;
    rec_in_init(&in, buf, o.len);
    assert_int_equal(rec_get_uvarint(&in), 4);
    assert_int_equal(rec_get_uvarint(&in), 0);
    assert_int_equal(rec_get_uvarint(&in), 0);
    assert_int_equal(rec_get_uvarint(&in), 6 << 6 | PYPROF_ALLOCS_MORE);
    assert_int_equal(rec_get_uvarint(&in), PYPROF_ALLOCS_M_THREAD);
    assert_int_equal(rec_get_uvarint(&in), 2);
    assert_int_equal(rec_get_uvarint(&in), 128);
    assert_int_equal(rec_get_svarint(&in), 40);
    assert_int_equal(rec_get_uvarint(&in), 300);
    assert_int_equal(rec_get_uvarint(&in), 0 << 2 | 1);
    assert_int_equal(rec_get_svarint(&in), 5);
    assert_int_equal(rec_get_uvarint(&in), 6 << 6 | PYPROF_ALLOCS_MORE);
    assert_int_equal(rec_get_uvarint(&in), PYPROF_ALLOCS_M_ADDRESS);
    assert_int_equal(rec_get_uvarint(&in), 0xabc0);
    assert_int_equal(rec_get_uvarint(&in), 256);
    assert_int_equal(rec_get_svarint(&in), -15);
    assert_int_equal(rec_get_uvarint(&in), 0); /* nstack_id 0: none */
    assert_int_equal(rec_get_uvarint(&in), 0xabc0 << 2 | 2);
    assert_int_equal(rec_get_svarint(&in), 20);
    expect_end(&in);
}

/* What an ALLOCS cannot take leaves the events and the state as they were. */
static void test_allocs_refused(void **state)
{
    (void)state;
    logenc_allocs b, before;
    logenc_allocs_start(&b, 100, 5, 0);
    rec_out ev;
    rec_out_init(&ev, evbuf, sizeof evbuf);
    logenc_alloc_fields a = alloc_at(110, 0, 1, 8, 0, PYPROF_ALLOC_MALLOC, 0, 0);
    size_t len;
#define UNCHANGED()                                                                            \
    do {                                                                                       \
        assert_int_equal(ev.len, len);                                                         \
        assert_false(ev.overflow);                                                             \
        assert_memory_equal(&b, &before, sizeof b);                                            \
    } while (0)
    /* No allocation yet: ordinal 5 is the next one's, not a block's. */
    before = b;
    len = ev.len;
    assert_int_equal(logenc_allocs_free(&ev, &b, 110, 0, 5, 0), -1);
    UNCHANGED();
    assert_int_equal(logenc_allocs_free(&ev, &b, 110, 0, UINT64_MAX, 0), -1);
    UNCHANGED();
    assert_int_equal(logenc_allocs_alloc(&ev, &b, &a, 0), 0);
    /* Ordinal 5 is now a block; 6 is not. */
    before = b;
    len = ev.len;
    assert_int_equal(logenc_allocs_free(&ev, &b, 120, 0, 6, 0), -1);
    UNCHANGED();
    /* An address whose h does not fit. */
    assert_int_equal(logenc_allocs_free(&ev, &b, 120, 1, 0, (UINT64_MAX >> 2) + 1), -1);
    UNCHANGED();
    /* A domain past 7 and a stack_id past 58 bits do not fit in h. */
    a = alloc_at(120, 0, 1, 8, 0, 8, 0, 0);
    assert_int_equal(logenc_allocs_alloc(&ev, &b, &a, 0), -1);
    UNCHANGED();
    a = alloc_at(120, 0, (UINT64_MAX >> 6) + 1, 8, 0, PYPROF_ALLOC_MALLOC, 0, 0);
    assert_int_equal(logenc_allocs_alloc(&ev, &b, &a, 0), -1);
    UNCHANGED();
    /* Domain 7 does (a reader takes it as an unknown allocator). */
    a = alloc_at(120, 0, UINT64_MAX >> 6, 8, 0, 7, 0, 0);
    assert_int_equal(logenc_allocs_alloc(&ev, &b, &a, 0), 0);
    assert_int_equal(logenc_allocs_free(&ev, &b, 120, 0, 6, 0), 0);

    /* Room for one more byte only: neither an allocation (7 bytes), nor a free by address
     * (3 + 1), nor by ordinal (1 + 1) fits. */
    logenc_allocs_start(&b, 100, 5, 0);
    rec_out_init(&ev, evbuf, 4);
    a = alloc_at(110, 0, 1, 8, 0, PYPROF_ALLOC_MALLOC, 0, 0);
    assert_int_equal(logenc_allocs_alloc(&ev, &b, &a, 0), 0);
    assert_int_equal(ev.len, 3);
    before = b;
    len = ev.len;
    a = alloc_at(120, 9, 1, 8, 0x1000, PYPROF_ALLOC_MALLOC, 0, 0);
    assert_int_equal(logenc_allocs_alloc(&ev, &b, &a, 1), -1);
    UNCHANGED();
    assert_int_equal(logenc_allocs_free(&ev, &b, 120, 1, 0, 0x1000), -1);
    UNCHANGED();
    assert_int_equal(logenc_allocs_free(&ev, &b, 120, 0, 5, 0), -1);
    UNCHANGED();
    /* One byte more and the free by ordinal fits exactly. */
    ev.cap = 5;
    assert_int_equal(logenc_allocs_free(&ev, &b, 120, 0, 5, 0), 0);
    assert_int_equal(ev.len, 5);
    assert_int_equal(b.count, 2);
    assert_int_equal(b.t_us, 120);

    /* Full. */
    logenc_allocs_start(&b, 0, 0, 0);
    rec_out_init(&ev, evbuf, sizeof evbuf);
    a = alloc_at(0, 0, 1, 8, 0, PYPROF_ALLOC_MALLOC, 0, 0);
    assert_int_equal(logenc_allocs_alloc(&ev, &b, &a, 0), 0);
    b.count = PYPROF_BATCH_MAX;
    before = b;
    len = ev.len;
    assert_int_equal(logenc_allocs_alloc(&ev, &b, &a, 0), -1);
    UNCHANGED();
    assert_int_equal(logenc_allocs_free(&ev, &b, 0, 0, 0, 0), -1);
    UNCHANGED();
#undef UNCHANGED
}

/* A buffer too small: the encoder says so, so the writer can refuse a cut payload. */
static void test_overflow(void **state)
{
    (void)state;
    logenc_header_fields h = header_fields();
    rec_out o;
    rec_out_init(&o, buf, 20);
    assert_int_equal(logenc_put_header(&o, &h), -1);
    assert_true(o.overflow);
    rec_out_init(&o, buf, 3);
    assert_int_equal(logenc_put_thread(&o, 1, 2, "long name"), -1);
    rec_out_init(&o, buf, 2);
    assert_int_equal(logenc_put_sample(&o, 1, 1, 1, 100000), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header),
        cmocka_unit_test(test_alloc_free),
        cmocka_unit_test(test_awindow),
        cmocka_unit_test(test_snapshot),
        cmocka_unit_test(test_span),
        cmocka_unit_test(test_header_no_cmdline),
        cmocka_unit_test(test_header_cut_cmdline),
        cmocka_unit_test(test_thread),
        cmocka_unit_test(test_code),
        cmocka_unit_test(test_stack),
        cmocka_unit_test(test_stack_max),
        cmocka_unit_test(test_sample),
        cmocka_unit_test(test_rss),
        cmocka_unit_test(test_footer),
        cmocka_unit_test(test_stack_runs),
        cmocka_unit_test(test_stack_gil),
        cmocka_unit_test(test_sample_native),
        cmocka_unit_test(test_module),
        cmocka_unit_test(test_nstack),
        cmocka_unit_test(test_footer_native),
        cmocka_unit_test(test_batch),
        cmocka_unit_test(test_batch_native),
        cmocka_unit_test(test_batch_refused),
        cmocka_unit_test(test_allocs),
        cmocka_unit_test(test_allocs_native),
        cmocka_unit_test(test_allocs_refused),
        cmocka_unit_test(test_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
