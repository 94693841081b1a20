/*
 * Unit tests for src/read/reader.c: logs are built in memory with the record codec and LZ4F,
 * exactly as include/pyprof/format.h describes them, and read back.  Every field must
 * round-trip; a log cut at any byte must give its whole records and then TRUNCATED; bad
 * input must give the right error and never crash.
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

#include "common/logenc.h"
#include "common/record.h"

/* ---- building logs ---------------------------------------------------------------- */

#define MAX_RECS 64
#define MAX_YIELD 256

/* A decompressed log being built, with the end offset of every record so the truncation
 * tests know how many whole records precede a cut, and what the reader yields for each
 * (one record of its type; a BATCH, the SAMPLE and RSS records of its events). */
typedef struct logbuf {
    uint8_t *p;
    size_t len, cap;
    size_t rec_end[MAX_RECS];
    int rec_type[MAX_RECS];
    int nrec;
    int ytype[MAX_YIELD]; /* the yielded records' types, in order */
    int yrec[MAX_YIELD];  /* the index of the record each comes from */
    int ny;
} logbuf;

static void lb_bytes(logbuf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 256;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void lb_init(logbuf *b)
{
    memset(b, 0, sizeof *b);
    lb_bytes(b, PYPROF_MAGIC, PYPROF_MAGIC_LEN);
}

static void lb_rec(logbuf *b, uint8_t type, const rec_out *pl)
{
    assert_false(pl->overflow);
    size_t cap = pl->len + 16;
    uint8_t *tmp = malloc(cap);
    size_t n = rec_envelope(tmp, cap, type, pl->buf, pl->len);
    assert_true(n > 0);
    lb_bytes(b, tmp, n);
    free(tmp);
    if (b->nrec < MAX_RECS) {
        b->rec_end[b->nrec] = b->len;
        b->rec_type[b->nrec] = type;
    }
    b->nrec++;
    if (type != PYPROF_REC_BATCH && b->ny < MAX_YIELD) {
        b->ytype[b->ny] = type;
        b->yrec[b->ny++] = b->nrec - 1;
    }
}

static uint8_t scratch[1 << 16];

static const char *const test_argv[] = {"python3", "-c", "print('hi')"};

/* A header; `series` (seq, series_start_unix_ns, offset_us) adds the rotated series'
 * fields, NULL leaves them out as an older writer did. */
static void lb_header_series(logbuf *b, uint64_t version, uint64_t flags,
                             const uint64_t *series)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, version);
    rec_put_uvarint(&o, 4242);            /* pid */
    rec_put_uvarint(&o, 1);               /* ppid */
    rec_put_cstr(&o, "0123456789abcdef"); /* run id */
    rec_put_uvarint(&o, 1700000000123456789ull);
    rec_put_cstr(&o, "host.example");
    rec_put_cstr(&o, "/usr/bin/python3.11");
    rec_put_uvarint(&o, 3);
    for (int i = 0; i < 3; i++)
        rec_put_cstr(&o, test_argv[i]);
    rec_put_cstr(&o, "3.11.7");
    rec_put_uvarint(&o, 0x030b07f0);
    rec_put_uvarint(&o, 10000000); /* period_ns */
    rec_put_u8(&o, PYPROF_CLOCK_WALL);
    rec_put_cstr(&o, "perf-task-clock");
    rec_put_uvarint(&o, 256);
    rec_put_uvarint(&o, flags);
    rec_put_uvarint(&o, 3); /* window */
    if (series)
        for (int i = 0; i < 3; i++)
            rec_put_uvarint(&o, series[i]);
    lb_rec(b, PYPROF_REC_HEADER, &o);
}

static void lb_header_flags(logbuf *b, uint64_t version, uint64_t flags)
{
    lb_header_series(b, version, flags, NULL);
}

static void lb_header(logbuf *b, uint64_t version)
{
    lb_header_flags(b, version, PYPROF_HDR_MEMORY);
}

static void lb_thread(logbuf *b, uint64_t idx, uint64_t tid, const char *name)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, idx);
    rec_put_uvarint(&o, tid);
    rec_put_cstr(&o, name);
    lb_rec(b, PYPROF_REC_THREAD, &o);
}

static void lb_code(logbuf *b, uint64_t id, int64_t first_line, const char *name,
                    const char *qualname, const char *file, const void *tab, size_t tablen)
{
    rec_out o;
    size_t cap = tablen + 4096;
    uint8_t *buf = malloc(cap);
    rec_out_init(&o, buf, cap);
    rec_put_uvarint(&o, id);
    rec_put_svarint(&o, first_line);
    rec_put_cstr(&o, name);
    rec_put_cstr(&o, qualname);
    rec_put_cstr(&o, file);
    rec_put_u8(&o, PYPROF_LT_LOCATIONS_311);
    rec_put_str(&o, tab, tablen);
    rec_put_uvarint(&o, PYPROF_CODE_F_TABLE_CUT);
    lb_rec(b, PYPROF_REC_CODE, &o);
    free(buf);
}

static void lb_stack(logbuf *b, uint64_t id, size_t n, const uint64_t *codes,
                     const int64_t *lines)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, id);
    rec_put_uvarint(&o, n);
    for (size_t i = 0; i < n; i++) {
        rec_put_uvarint(&o, codes[i]);
        rec_put_svarint(&o, lines[i]);
    }
    lb_rec(b, PYPROF_REC_STACK, &o);
}

static void lb_sample(logbuf *b, int64_t dt, uint64_t thread, uint64_t stack, uint64_t cpu)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_svarint(&o, dt);
    rec_put_uvarint(&o, thread);
    rec_put_uvarint(&o, stack);
    rec_put_uvarint(&o, cpu);
    lb_rec(b, PYPROF_REC_SAMPLE, &o);
}

static void lb_rss(logbuf *b, int64_t dt, uint64_t rss)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_svarint(&o, dt);
    rec_put_uvarint(&o, rss);
    lb_rec(b, PYPROF_REC_RSS, &o);
}

/* A record of type 7, once MARK: reserved and never written, so readers skip it. */
static void lb_mark(logbuf *b, int64_t dt, uint64_t thread, const char *text)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_svarint(&o, dt);
    rec_put_uvarint(&o, thread);
    rec_put_cstr(&o, text);
    lb_rec(b, 7, &o);
}

static void lb_footer(logbuf *b)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, 1700000009000000000ull);
    rec_put_uvarint(&o, 8876543211ull);
    rec_put_uvarint(&o, 3); /* samples */
    rec_put_uvarint(&o, 7); /* signals */
    rec_put_uvarint(&o, 3); /* ndrop */
    rec_put_uvarint(&o, PYPROF_DROP_RING_FULL);
    rec_put_uvarint(&o, 2);
    rec_put_uvarint(&o, PYPROF_DROP_NO_PYTHON);
    rec_put_uvarint(&o, 2);
    rec_put_uvarint(&o, 99); /* a reason from the future: ignored */
    rec_put_uvarint(&o, 5);
    rec_put_uvarint(&o, PYPROF_END_SIGNAL);
    rec_put_u8(&o, 1);
    rec_put_svarint(&o, 15);
    rec_put_uvarint(&o, 99500);
    rec_put_uvarint(&o, 1234567);
    rec_put_uvarint(&o, 1000);   /* handler_ns */
    rec_put_uvarint(&o, 234567); /* writer_ns */
    rec_put_uvarint(&o, 2);      /* ntime: <= 500 ns, unbounded */
    rec_put_uvarint(&o, 500);
    rec_put_uvarint(&o, 0);
    rec_put_uvarint(&o, 1); /* ndepth: one unbounded bucket */
    rec_put_uvarint(&o, 0);
    rec_put_uvarint(&o, 2);
    rec_put_uvarint(&o, 1);
    rec_put_uvarint(&o, 77); /* a field appended by a later writer: ignored */
    lb_rec(b, PYPROF_REC_FOOTER, &o);
}

static const uint64_t stack_codes[] = {16, PYPROF_CODE_CUT, 17, PYPROF_CODE_UNREADABLE};
static const int64_t stack_lines[] = {10, 42, -1, 0};

/* The reference log of the round-trip test. */
static void build_full(logbuf *b)
{
    lb_init(b);
    lb_header(b, PYPROF_FORMAT_VERSION);
    lb_thread(b, 0, 4242, "MainThread");
    lb_code(b, 16, 3, "f", "C.f", "/x/a.py", "\x01\x02\x03", 3);
    lb_code(b, 17, -5, "g", "", "<string>", "", 0);
    lb_stack(b, 0, 4, stack_codes, stack_lines);
    lb_sample(b, 1000, 0, 0, 10000);
    lb_rss(b, 5, 123456789);
    lb_sample(b, -3, 0, 0, 0);
    {
        rec_out o; /* an unknown record type, which readers skip */
        rec_out_init(&o, scratch, sizeof scratch);
        rec_put_cstr(&o, "from the future");
        lb_rec(b, 42, &o);
    }
    lb_thread(b, 0, 4242, "renamed");
    lb_mark(b, 2, 0, "checkpoint");
    lb_sample(b, 10, 0, 0, 1);
    lb_footer(b);
}

/* Compresses `raw` as consecutive LZ4 frames cut at `cuts` (ascending offsets). */
static uint8_t *compress_frames(const uint8_t *raw, size_t len, const size_t *cuts,
                                size_t ncuts, int block_checksum, size_t *outlen)
{
    LZ4F_preferences_t prefs;
    memset(&prefs, 0, sizeof prefs);
    prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
    prefs.frameInfo.blockChecksumFlag = block_checksum ? LZ4F_blockChecksumEnabled
                                                       : LZ4F_noBlockChecksum;
    prefs.frameInfo.blockSizeID = LZ4F_max64KB;
    prefs.frameInfo.blockMode = LZ4F_blockLinked;
    size_t cap = (ncuts + 1) * LZ4F_compressFrameBound(len, &prefs) + 64;
    uint8_t *out = malloc(cap);
    size_t n = 0, start = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : len;
        size_t r = LZ4F_compressFrame(out + n, cap - n, raw + start, end - start, &prefs);
        assert_false(LZ4F_isError(r));
        n += r;
        start = end;
    }
    *outlen = n;
    return out;
}

static uint8_t *compress1(const uint8_t *raw, size_t len, size_t *outlen)
{
    return compress_frames(raw, len, NULL, 0, 0, outlen);
}

static int streq(pyprof_str s, const char *c)
{
    return s.len == strlen(c) && !memcmp(s.s, c, s.len);
}

/* Reads every record; returns the count and stores the final code in *end. */
static int read_all(pyprof_reader *r, int *types, int maxtypes, int *end)
{
    pyprof_record rec;
    int n = 0, rc;
    while ((rc = pyprof_reader_next(r, &rec)) == 1) {
        if (n < maxtypes)
            types[n] = rec.type;
        n++;
    }
    *end = rc;
    return n;
}

/* ---- tests ------------------------------------------------------------------------ */

static void check_full_log(pyprof_reader *r)
{
    const pyprof_header *h = pyprof_reader_header(r);
    assert_int_equal(h->format_version, PYPROF_FORMAT_VERSION);
    assert_int_equal(h->pid, 4242);
    assert_int_equal(h->ppid, 1);
    assert_true(streq(h->run_id, "0123456789abcdef"));
    assert_int_equal(h->start_unix_ns, 1700000000123456789ull);
    assert_true(streq(h->host, "host.example"));
    assert_true(streq(h->exe, "/usr/bin/python3.11"));
    assert_int_equal(h->argc, 3);
    for (int i = 0; i < 3; i++)
        assert_true(streq(h->argv[i], test_argv[i]));
    assert_true(streq(h->python_version, "3.11.7"));
    assert_int_equal(h->python_hex, 0x030b07f0);
    assert_int_equal(h->period_ns, 10000000);
    assert_int_equal(h->clock, PYPROF_CLOCK_WALL);
    assert_true(streq(h->timer, "perf-task-clock"));
    assert_int_equal(h->max_depth, 256);
    assert_int_equal(h->flags, PYPROF_HDR_MEMORY);
    assert_int_equal(h->window, 3);
    /* An older writer's header: no series fields, read as 0. */
    assert_int_equal(h->seq, 0);
    assert_int_equal(h->series_start_unix_ns, 0);
    assert_int_equal(h->offset_us, 0);

    pyprof_record rec;
    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_THREAD);
    assert_int_equal(rec.u.thread.thread_idx, 0);
    assert_int_equal(rec.u.thread.tid, 4242);
    assert_true(streq(rec.u.thread.name, "MainThread"));

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_CODE);
    assert_int_equal(rec.u.code.code_id, 16);
    assert_int_equal(rec.u.code.first_line, 3);
    assert_true(streq(rec.u.code.name, "f"));
    assert_true(streq(rec.u.code.qualname, "C.f"));
    assert_true(streq(rec.u.code.filename, "/x/a.py"));
    assert_int_equal(rec.u.code.line_table_kind, PYPROF_LT_LOCATIONS_311);
    assert_int_equal(rec.u.code.line_table.len, 3);
    assert_memory_equal(rec.u.code.line_table.s, "\x01\x02\x03", 3);
    assert_int_equal(rec.u.code.flags, PYPROF_CODE_F_TABLE_CUT);

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_CODE);
    assert_int_equal(rec.u.code.code_id, 17);
    assert_int_equal(rec.u.code.first_line, -5);
    assert_true(streq(rec.u.code.qualname, ""));
    assert_int_equal(rec.u.code.line_table.len, 0);

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_STACK);
    assert_int_equal(rec.u.stack.stack_id, 0);
    assert_int_equal(rec.u.stack.nframes, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(rec.u.stack.frames[i].code_id, stack_codes[i]);
        assert_int_equal(rec.u.stack.frames[i].line, stack_lines[i]);
    }

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_SAMPLE);
    assert_int_equal(rec.u.sample.t_us, 1000);
    assert_int_equal(rec.u.sample.thread_idx, 0);
    assert_int_equal(rec.u.sample.stack_id, 0);
    assert_int_equal(rec.u.sample.cpu_us, 10000);

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_RSS);
    assert_int_equal(rec.u.rss.t_us, 1005);
    assert_int_equal(rec.u.rss.rss_bytes, 123456789);

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_SAMPLE);
    assert_int_equal(rec.u.sample.t_us, 1002); /* dt may be negative */
    assert_int_equal(rec.u.sample.cpu_us, 0);

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, 42);

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_THREAD);
    assert_true(streq(rec.u.thread.name, "renamed"));

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, 7); /* skipped whole: its dt does not move the clock */

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_SAMPLE);
    assert_int_equal(rec.u.sample.t_us, 1012);

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_FOOTER);
    const pyprof_footer *f = &rec.u.footer;
    assert_int_equal(f->end_unix_ns, 1700000009000000000ull);
    assert_int_equal(f->duration_ns, 8876543211ull);
    assert_int_equal(f->samples, 3);
    assert_int_equal(f->signals, 7);
    for (int i = 0; i < PYPROF_DROP_COUNT; i++) {
        uint64_t want = (i == PYPROF_DROP_RING_FULL || i == PYPROF_DROP_NO_PYTHON) ? 2 : 0;
        assert_int_equal(f->dropped[i], want);
    }
    assert_int_equal(f->end, PYPROF_END_SIGNAL);
    assert_int_equal(f->status_known, 1);
    assert_int_equal(f->status, 15);
    assert_int_equal(f->achieved_hz_milli, 99500);
    assert_int_equal(f->lib_cpu_ns, 1234567);
    assert_int_equal(f->has_cost, 1);
    assert_int_equal(f->handler_ns, 1000);
    assert_int_equal(f->writer_ns, 234567);
    assert_int_equal(f->cost_ntime, 2);
    assert_int_equal(f->cost_ndepth, 1);
    assert_int_equal(f->cost_time_bound[0], 500);
    assert_int_equal(f->cost_depth_bound[0], 0);
    assert_int_equal(f->cost[0][0], 2);
    assert_int_equal(f->cost[0][1], 1);

    /* A clean end, and it stays one. */
    assert_int_equal(pyprof_reader_next(r, &rec), 0);
    assert_int_equal(pyprof_reader_next(r, &rec), 0);
}

static void test_roundtrip(void **state)
{
    logbuf b;
    build_full(&b);
    size_t clen;
    uint8_t *c = compress1(b.p, b.len, &clen);
    int err = -1;
    pyprof_reader *r = pyprof_reader_open_mem(c, clen, &err);
    assert_non_null(r);
    assert_int_equal(err, PYPROF_R_OK);
    check_full_log(r);
    assert_int_equal(pyprof_reader_offset(r), b.len);
    pyprof_reader_close(r);
    free(c);
    free(b.p);
}

/* The same log as two, three frames, cut anywhere (even inside the magic or a record). */
static void test_multiframe(void **state)
{
    logbuf b;
    build_full(&b);
    for (size_t k = 0; k <= b.len; k++) {
        size_t cuts[2] = {k, k + (b.len - k) / 2};
        for (size_t nc = 1; nc <= 2; nc++) {
            size_t clen;
            uint8_t *c = compress_frames(b.p, b.len, cuts, nc, (int)(k & 1), &clen);
            int err;
            pyprof_reader *r = pyprof_reader_open_mem(c, clen, &err);
            assert_non_null(r);
            check_full_log(r);
            pyprof_reader_close(r);
            free(c);
        }
    }
    free(b.p);
}

/* Cut the compressed file at every byte: never a crash, never a wrong record, and the
 * verdict is TRUNCATED. */
static void test_truncated_compressed(void **state)
{
    logbuf b;
    build_full(&b);
    size_t cuts[1] = {b.len / 2};
    size_t clen;
    uint8_t *c = compress_frames(b.p, b.len, cuts, 1, 0, &clen);
    int prev = -1;
    for (size_t k = 0; k < clen; k++) {
        uint8_t *copy = malloc(k ? k : 1); /* exact size, so ASan sees any overread */
        memcpy(copy, c, k);
        int err;
        pyprof_reader *r = pyprof_reader_open_mem(copy, k, &err);
        int n = 0;
        if (!r) {
            assert_int_equal(err, PYPROF_R_TRUNCATED);
        } else {
            int types[MAX_RECS], end;
            n = read_all(r, types, MAX_RECS, &end);
            /* The footer is the last record: when a cut keeps it, only the LZ4 end mark and
             * checksum are missing, which the reader does not need. */
            if (n == b.nrec - 1)
                assert_int_equal(end, 0);
            else
                assert_int_equal(end, -PYPROF_R_TRUNCATED);
            for (int i = 0; i < n; i++)
                assert_int_equal(types[i], b.rec_type[i + 1]);
            /* Sticky. */
            pyprof_record rec;
            assert_int_equal(pyprof_reader_next(r, &rec), end);
            pyprof_reader_close(r);
        }
        assert_true(n >= prev);
        prev = n;
        free(copy);
    }
    free(c);
    free(b.p);
}

/* Cuts the decompressed log `b` at every byte and compresses what is left properly:
 * exactly the records that end before the cut come back, in order, then TRUNCATED. */
static void check_cut_at_every_byte(const logbuf *b)
{
    for (size_t k = 0; k < b->len; k++) {
        size_t clen;
        uint8_t *c = compress1(b->p, k, &clen);
        int err;
        pyprof_reader *r = pyprof_reader_open_mem(c, clen, &err);
        int whole = 0;
        while (whole < b->nrec && b->rec_end[whole] <= k)
            whole++;
        if (whole == 0) {
            assert_null(r);
            assert_int_equal(err, PYPROF_R_TRUNCATED);
        } else {
            assert_non_null(r);
            /* What the whole records after the header (which next does not return)
             * yield: a cut batch yields none of its events. */
            int want = 0;
            while (want < b->ny && b->yrec[want] < whole)
                want++;
            int types[MAX_YIELD], end;
            int n = read_all(r, types, MAX_YIELD, &end);
            assert_int_equal(n, want - 1);
            for (int i = 0; i < n; i++)
                assert_int_equal(types[i], b->ytype[i + 1]);
            assert_int_equal(end, -PYPROF_R_TRUNCATED);
            pyprof_reader_close(r);
        }
        free(c);
    }
}

static void test_truncated_raw(void **state)
{
    logbuf b;
    build_full(&b);
    check_cut_at_every_byte(&b);
    free(b.p);
}

static void test_not_lz4(void **state)
{
    static const char text[] = "this is a plain text file, not a log\n";
    int err;
    assert_null(pyprof_reader_open_mem(text, sizeof text - 1, &err));
    assert_int_equal(err, PYPROF_R_NOT_LZ4);
    assert_null(pyprof_reader_open_mem(text, 2, &err));
    assert_int_equal(err, PYPROF_R_NOT_LZ4);
    assert_null(pyprof_reader_open_mem(text, 0, &err));
    assert_int_equal(err, PYPROF_R_TRUNCATED);
    assert_null(pyprof_reader_open_mem("\x04\x22", 2, &err));
    assert_int_equal(err, PYPROF_R_TRUNCATED);
}

static void test_not_pyprof(void **state)
{
    static const char text[] = "this is compressed text, but not a pyprof log\n";
    size_t clen;
    uint8_t *c = compress1((const uint8_t *)text, sizeof text - 1, &clen);
    int err;
    assert_null(pyprof_reader_open_mem(c, clen, &err));
    assert_int_equal(err, PYPROF_R_NOT_PYPROF);
    free(c);
    /* Short and different: still not ours. */
    c = compress1((const uint8_t *)"\x89PX", 3, &clen);
    assert_null(pyprof_reader_open_mem(c, clen, &err));
    assert_int_equal(err, PYPROF_R_NOT_PYPROF);
    free(c);
    /* Short and a prefix of the magic: cut short. */
    c = compress1((const uint8_t *)"\x89PY", 3, &clen);
    assert_null(pyprof_reader_open_mem(c, clen, &err));
    assert_int_equal(err, PYPROF_R_TRUNCATED);
    free(c);
    /* The magic, then something other than a header. */
    logbuf b;
    lb_init(&b);
    lb_thread(&b, 0, 1, "x");
    c = compress1(b.p, b.len, &clen);
    assert_null(pyprof_reader_open_mem(c, clen, &err));
    assert_int_equal(err, PYPROF_R_CORRUPT);
    free(c);
    free(b.p);
}

static void test_newer(void **state)
{
    logbuf b;
    lb_init(&b);
    {
        /* A newer version may change the header entirely: only the version is read. */
        rec_out o;
        rec_out_init(&o, scratch, sizeof scratch);
        rec_put_uvarint(&o, PYPROF_FORMAT_VERSION + 1);
        rec_put_u8(&o, 0xff);
        lb_rec(&b, PYPROF_REC_HEADER, &o);
    }
    size_t clen;
    uint8_t *c = compress1(b.p, b.len, &clen);
    int err;
    assert_null(pyprof_reader_open_mem(c, clen, &err));
    assert_int_equal(err, PYPROF_R_NEWER);
    free(c);
    free(b.p);

    lb_init(&b);
    lb_header(&b, 0); /* version 0 was never written */
    c = compress1(b.p, b.len, &clen);
    assert_null(pyprof_reader_open_mem(c, clen, &err));
    assert_int_equal(err, PYPROF_R_CORRUPT);
    free(c);
    free(b.p);
}

/* Opens a log that is the header, `tail` raw bytes, and nothing else, and returns what
 * the first next() says. */
static int first_next_after(const void *tail, size_t n)
{
    logbuf b;
    lb_init(&b);
    lb_header(&b, PYPROF_FORMAT_VERSION);
    lb_bytes(&b, tail, n);
    size_t clen;
    uint8_t *c = compress1(b.p, b.len, &clen);
    int err;
    pyprof_reader *r = pyprof_reader_open_mem(c, clen, &err);
    assert_non_null(r);
    pyprof_record rec;
    int rc = pyprof_reader_next(r, &rec);
    pyprof_reader_close(r);
    free(c);
    free(b.p);
    return rc;
}

static void test_corrupt_records(void **state)
{
    /* A length of 100 MiB. */
    static const uint8_t huge[] = {PYPROF_REC_SAMPLE, 0x80, 0x80, 0x80, 0x32, 0, 0, 0};
    assert_int_equal(first_next_after(huge, sizeof huge), -PYPROF_R_CORRUPT);
    /* A length varint that never ends. */
    static const uint8_t endless[] = {5,    0xff, 0xff, 0xff, 0xff, 0xff,
                                      0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(first_next_after(endless, sizeof endless), -PYPROF_R_CORRUPT);
    /* A SAMPLE whose payload lacks fields. */
    static const uint8_t short_sample[] = {PYPROF_REC_SAMPLE, 2, 4, 0};
    assert_int_equal(first_next_after(short_sample, sizeof short_sample), -PYPROF_R_CORRUPT);
    /* A STACK that claims a billion frames. */
    static const uint8_t big_stack[] = {PYPROF_REC_STACK, 6, 0, 0x80, 0x94, 0xeb, 0xdc, 0x03};
    assert_int_equal(first_next_after(big_stack, sizeof big_stack), -PYPROF_R_CORRUPT);
    /* A string longer than its record. */
    static const uint8_t long_name[] = {PYPROF_REC_THREAD, 4, 0, 1, 9, 'a'};
    assert_int_equal(first_next_after(long_name, sizeof long_name), -PYPROF_R_CORRUPT);
    /* A second header. */
    logbuf h;
    lb_init(&h);
    lb_header(&h, PYPROF_FORMAT_VERSION);
    assert_int_equal(first_next_after(h.p + PYPROF_MAGIC_LEN, h.len - PYPROF_MAGIC_LEN),
                     -PYPROF_R_CORRUPT);
    free(h.p);
    /* An unknown type with an empty payload is fine. */
    static const uint8_t unknown[] = {200, 0};
    assert_int_equal(first_next_after(unknown, sizeof unknown), 1);
}

/* A frame that is fine, then one that is not: the first frame's records come out, then
 * CORRUPT. */
static void test_corrupt_lz4(void **state)
{
    logbuf b;
    build_full(&b);
    size_t cut = b.rec_end[2]; /* header, thread, code */
    size_t clen;
    uint8_t *c = compress_frames(b.p, b.len, &cut, 1, 1, &clen);
    size_t first_len;
    uint8_t *first = compress_frames(b.p, cut, NULL, 0, 1, &first_len);
    free(first);
    /* Damage the second frame's first block (past its 7-byte header and block size). */
    uint8_t *bad = malloc(clen);
    memcpy(bad, c, clen);
    bad[first_len + 12] ^= 0x55;
    int err, types[MAX_RECS], end;
    pyprof_reader *r = pyprof_reader_open_mem(bad, clen, &err);
    assert_non_null(r);
    int n = read_all(r, types, MAX_RECS, &end);
    assert_int_equal(n, 2);
    assert_int_equal(end, -PYPROF_R_CORRUPT);
    pyprof_reader_close(r);

    /* Garbage where the second frame should start. */
    memcpy(bad, c, clen);
    memcpy(bad + first_len, "garbage!", 8);
    r = pyprof_reader_open_mem(bad, clen, &err);
    assert_non_null(r);
    n = read_all(r, types, MAX_RECS, &end);
    assert_int_equal(n, 2);
    assert_int_equal(end, -PYPROF_R_CORRUPT);
    pyprof_reader_close(r);
    free(bad);
    free(c);
    free(b.p);
}

/* One frame of many 64 KiB blocks, the third one damaged: everything in the first two
 * blocks is delivered before CORRUPT, even though LZ4 could decode them all in one go. */
static void test_corrupt_block(void **state)
{
    logbuf b;
    lb_init(&b);
    lb_header(&b, PYPROF_FORMAT_VERSION);
    lb_thread(&b, 0, 10, "MainThread");
    lb_stack(&b, 0, 2, stack_codes, stack_lines);
    uint64_t x = 12345;
    for (int i = 0; i < 60000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull; /* poorly compressible */
        lb_sample(&b, (int64_t)(x >> 40), 0, 0, x >> 50);
    }
    lb_footer(&b);
    size_t clen;
    uint8_t *c = compress_frames(b.p, b.len, NULL, 0, 1, &clen);
    /* Walk the frame: 7-byte header (no content size), then blocks of a 4-byte size,
     * the data and a 4-byte checksum. */
    size_t off = 7;
    for (int blk = 0; blk < 2; blk++) {
        uint32_t sz = (uint32_t)c[off] | (uint32_t)c[off + 1] << 8 |
                      (uint32_t)c[off + 2] << 16 | (uint32_t)(c[off + 3] & 0x7f) << 24;
        off += 4 + sz + 4;
        assert_true(off + 8 < clen);
    }
    c[off + 4 + 10] ^= 0xff;
    int err, end;
    pyprof_reader *r = pyprof_reader_open_mem(c, clen, &err);
    assert_non_null(r);
    pyprof_record rec;
    while ((end = pyprof_reader_next(r, &rec)) == 1)
        ;
    assert_int_equal(end, -PYPROF_R_CORRUPT);
    /* Two whole blocks of decompressed data, less at most one record cut at the end. */
    assert_true(pyprof_reader_offset(r) >= 2 * 65536 - 32);
    assert_true(pyprof_reader_offset(r) <= 2 * 65536);
    pyprof_reader_close(r);
    free(c);
    free(b.p);
}

/* Damage that still decodes into plausible records is caught by the frame's content
 * checksum, which the reader checks after the footer. */
static void test_content_checksum(void **state)
{
    logbuf b;
    build_full(&b);
    size_t clen;
    uint8_t *c = compress1(b.p, b.len, &clen);
    uint8_t *host = memmem(c, clen, "host.example", 12);
    assert_non_null(host); /* a literal in the compressed stream */
    host[3] = 'T';
    int err, types[MAX_RECS], end;
    pyprof_reader *r = pyprof_reader_open_mem(c, clen, &err);
    assert_non_null(r);
    assert_true(streq(pyprof_reader_header(r)->host, "hosT.example"));
    int n = read_all(r, types, MAX_RECS, &end);
    assert_int_equal(n, b.nrec - 1);          /* every record, the footer included... */
    assert_int_equal(end, -PYPROF_R_CORRUPT); /* ...then the checksum says no */
    pyprof_reader_close(r);
    free(c);
    free(b.p);
}

/* A log cut inside a compressed block: the whole records in the part that arrived come
 * out, exactly right (a linked block's matches reach into the blocks before it), then
 * TRUNCATED.  Cut at many places, with linked and independent blocks. */
static void test_cut_block(void **state)
{
    enum { N = 40000 };
    static int64_t dts[N];
    static uint64_t cpus[N];
    logbuf b;
    lb_init(&b);
    lb_header(&b, PYPROF_FORMAT_VERSION);
    lb_thread(&b, 0, 10, "MainThread");
    lb_stack(&b, 0, 2, stack_codes, stack_lines);
    uint64_t x = 99;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        dts[i] = (int64_t)(x >> 54); /* a few bits of noise, so LZ4 finds matches */
        cpus[i] = (x >> 60) * 1000;
        lb_sample(&b, dts[i], 0, 0, cpus[i]);
    }
    for (int linked = 0; linked <= 1; linked++) {
        LZ4F_preferences_t prefs;
        memset(&prefs, 0, sizeof prefs);
        prefs.frameInfo.blockSizeID = LZ4F_max64KB;
        prefs.frameInfo.blockMode = linked ? LZ4F_blockLinked : LZ4F_blockIndependent;
        prefs.frameInfo.blockChecksumFlag = LZ4F_blockChecksumEnabled;
        size_t cap = LZ4F_compressFrameBound(b.len, &prefs);
        uint8_t *c = malloc(cap);
        size_t clen = LZ4F_compressFrame(c, cap, b.p, b.len, &prefs);
        assert_false(LZ4F_isError(clen));
        int prev = 0, stuck = 0, cuts = 0;
        for (size_t cut = 64; cut < clen; cut += 211) {
            int err;
            pyprof_reader *r = pyprof_reader_open_mem(c, cut, &err);
            if (!r) {
                assert_int_equal(err, PYPROF_R_TRUNCATED);
                continue;
            }
            pyprof_record rec;
            int rc, n = 0;
            int64_t t = 0;
            while ((rc = pyprof_reader_next(r, &rec)) == 1) {
                if (rec.type != PYPROF_REC_SAMPLE)
                    continue;
                assert_true(n < N);
                t += dts[n];
                assert_int_equal(rec.u.sample.t_us, t);
                assert_int_equal(rec.u.sample.cpu_us, cpus[n]);
                n++;
            }
            assert_int_equal(rc, -PYPROF_R_TRUNCATED);
            /* 211 more bytes are more samples: the cut block is not lost. */
            assert_true(n >= prev);
            stuck += n == prev;
            cuts++;
            prev = n;
            pyprof_reader_close(r);
        }
        assert_true(prev > N / 2);
        assert_true(stuck * 20 < cuts);
        free(c);
    }
    free(b.p);
}

/* Random damage anywhere: any outcome but a crash (run it under ASan/UBSan). */
static void test_random_damage(void **state)
{
    logbuf b;
    build_full(&b);
    size_t cuts[2] = {b.len / 3, 2 * b.len / 3};
    size_t clen;
    uint8_t *c = compress_frames(b.p, b.len, cuts, 2, 0, &clen);
    uint8_t *bad = malloc(clen);
    srand(12345);
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(bad, c, clen);
        int flips = 1 + rand() % 4;
        for (int i = 0; i < flips; i++)
            bad[(size_t)rand() % clen] ^= (uint8_t)(1 + rand() % 255);
        int err, types[MAX_RECS], end;
        pyprof_reader *r = pyprof_reader_open_mem(bad, clen, &err);
        if (r) {
            read_all(r, types, MAX_RECS, &end);
            assert_true(end <= 0);
            pyprof_reader_close(r);
        } else {
            assert_true(err > PYPROF_R_OK && err <= PYPROF_R_NOMEM);
        }
    }
    free(bad);
    free(c);
    free(b.p);
}

/* A big log through a real file: many input chunks, many frames, a record larger than the
 * reader's initial buffer. */
static void test_file_big(void **state)
{
    logbuf b;
    lb_init(&b);
    lb_header(&b, PYPROF_FORMAT_VERSION);
    lb_thread(&b, 0, 10, "MainThread");
    lb_thread(&b, 1, 11, "worker");
    size_t tablen = 3u << 20;
    uint8_t *tab = malloc(tablen);
    uint64_t x = 88172645463325252ull; /* xorshift: incompressible on purpose */
    for (size_t i = 0; i < tablen; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        tab[i] = (uint8_t)x;
    }
    lb_code(&b, 16, 1, "big", "big", "/big.py", tab, tablen);
    for (uint64_t s = 0; s < 100; s++) {
        uint64_t codes[40];
        int64_t lines[40];
        for (int i = 0; i < 40; i++) {
            codes[i] = 16;
            lines[i] = (int64_t)(s * 40 + (uint64_t)i);
        }
        lb_stack(&b, s, 1 + s % 40, codes, lines);
    }
    const int nsamples = 300000;
    for (int i = 0; i < nsamples; i++)
        lb_sample(&b, 7, (uint64_t)i & 1, (uint64_t)i % 100, 10000);
    lb_footer(&b);
    /* Frames of about 1 MiB, the way a writer flushes. */
    size_t cuts[64], nc = 0;
    for (size_t off = 1u << 20; off < b.len && nc < 64; off += 1u << 20)
        cuts[nc++] = off;
    size_t clen;
    uint8_t *c = compress_frames(b.p, b.len, cuts, nc, 0, &clen);
    char path[] = "/tmp/test_reader.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, c, clen), (ssize_t)clen);
    close(fd);

    int err;
    pyprof_reader *r = pyprof_reader_open(path, &err);
    assert_non_null(r);
    pyprof_record rec;
    int rc, samples = 0, stacks = 0, footer = 0;
    int64_t last_t = 0;
    while ((rc = pyprof_reader_next(r, &rec)) == 1) {
        if (rec.type == PYPROF_REC_SAMPLE) {
            samples++;
            last_t = rec.u.sample.t_us;
            assert_int_equal(rec.u.sample.stack_id, (uint64_t)(samples - 1) % 100);
        } else if (rec.type == PYPROF_REC_CODE) {
            assert_int_equal(rec.u.code.line_table.len, tablen);
            assert_memory_equal(rec.u.code.line_table.s, tab, tablen);
        } else if (rec.type == PYPROF_REC_STACK) {
            assert_int_equal(rec.u.stack.nframes, 1 + rec.u.stack.stack_id % 40);
            assert_int_equal(rec.u.stack.frames[0].line, rec.u.stack.stack_id * 40);
            stacks++;
        } else if (rec.type == PYPROF_REC_FOOTER) {
            footer++;
        }
    }
    assert_int_equal(rc, 0);
    assert_int_equal(samples, nsamples);
    assert_int_equal(stacks, 100);
    assert_int_equal(footer, 1);
    assert_int_equal(last_t, 7 * (int64_t)nsamples);
    assert_int_equal(pyprof_reader_offset(r), b.len);
    pyprof_reader_close(r);

    /* The same file cut in the middle of a frame, halfway through the samples (the line
     * table, which does not compress, comes first). */
    assert_int_equal(truncate(path, (off_t)(clen - (clen - tablen) / 2)), 0);
    r = pyprof_reader_open(path, &err);
    assert_non_null(r);
    samples = 0;
    while ((rc = pyprof_reader_next(r, &rec)) == 1)
        samples += rec.type == PYPROF_REC_SAMPLE;
    assert_int_equal(rc, -PYPROF_R_TRUNCATED);
    assert_true(samples > 0 && samples < nsamples);
    pyprof_reader_close(r);

    unlink(path);
    assert_null(pyprof_reader_open(path, &err));
    assert_int_equal(err, PYPROF_R_IO);
    free(c);
    free(tab);
    free(b.p);
}

/* ---- native logs ------------------------------------------------------------------ */

/* A MODULE of `nseg` segments (segment i: vaddr 0x1000 * i, memsz i + 1, offset i * 16,
 * flags i & 7) and a build-id of `bid_len` bytes 0, 1, 2, ... */
static void lb_module(logbuf *b, uint64_t id, const char *path, uint64_t base, size_t bid_len,
                      uint64_t nseg)
{
    uint8_t bid[256];
    for (size_t i = 0; i < bid_len; i++)
        bid[i] = (uint8_t)i;
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, id);
    rec_put_cstr(&o, path);
    rec_put_uvarint(&o, base);
    rec_put_str(&o, bid, bid_len);
    rec_put_uvarint(&o, nseg);
    for (uint64_t i = 0; i < nseg; i++) {
        rec_put_uvarint(&o, 0x1000 * i);
        rec_put_uvarint(&o, i + 1);
        rec_put_uvarint(&o, i * 16);
        rec_put_uvarint(&o, i & 7);
    }
    rec_put_uvarint(&o, 0x803);   /* dev */
    rec_put_uvarint(&o, 424242);  /* ino */
    rec_put_uvarint(&o, 1 << 20); /* size */
    rec_put_uvarint(&o, 1700000000123456789ull);
    lb_rec(b, PYPROF_REC_MODULE, &o);
}

/* An NSTACK of n addresses base, base + 1, ... */
static void lb_nstack(logbuf *b, uint64_t id, uint64_t n, uint64_t base)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, id);
    rec_put_uvarint(&o, n);
    for (uint64_t i = 0; i < n; i++)
        rec_put_uvarint(&o, base + i);
    lb_rec(b, PYPROF_REC_NSTACK, &o);
}

/* A STACK of n frames (code 16 + i, line i) and its runs (nruns < 0: none written). */
static void lb_stack_runs(logbuf *b, uint64_t id, uint64_t n, int nruns, const uint64_t *runs)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, id);
    rec_put_uvarint(&o, n);
    for (uint64_t i = 0; i < n; i++) {
        rec_put_uvarint(&o, 16 + i);
        rec_put_svarint(&o, (int64_t)i);
    }
    if (nruns >= 0) {
        rec_put_uvarint(&o, (uint64_t)nruns);
        for (int i = 0; i < nruns; i++)
            rec_put_uvarint(&o, runs[i]);
    }
    lb_rec(b, PYPROF_REC_STACK, &o);
}

static void lb_sample_native(logbuf *b, int64_t dt, uint64_t stack, uint64_t nstack,
                             uint64_t flags)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_svarint(&o, dt);
    rec_put_uvarint(&o, 0);
    rec_put_uvarint(&o, stack);
    rec_put_uvarint(&o, 10000);
    rec_put_uvarint(&o, nstack);
    rec_put_uvarint(&o, flags);
    lb_rec(b, PYPROF_REC_SAMPLE, &o);
}

static void lb_module_gone(logbuf *b, uint64_t id)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, id);
    lb_rec(b, PYPROF_REC_MODULE_GONE, &o);
}

/* A footer with every section, the native one included. */
static void lb_footer_native(logbuf *b)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    for (int i = 0; i < 4; i++)
        rec_put_uvarint(&o, (uint64_t)i + 1); /* end, duration, samples, signals */
    rec_put_uvarint(&o, 0);                   /* ndrop */
    rec_put_uvarint(&o, PYPROF_END_EXIT);
    rec_put_u8(&o, 1);
    rec_put_svarint(&o, 0);
    rec_put_uvarint(&o, 100000);
    rec_put_uvarint(&o, 5);
    rec_put_uvarint(&o, 6);  /* handler_ns */
    rec_put_uvarint(&o, 7);  /* writer_ns */
    rec_put_uvarint(&o, 0);  /* ntime */
    rec_put_uvarint(&o, 0);  /* ndepth */
    rec_put_uvarint(&o, 8);  /* timer_ns */
    rec_put_uvarint(&o, 9);  /* untimed_ns */
    rec_put_uvarint(&o, 40); /* native_ok */
    rec_put_uvarint(&o, 3);  /* native_truncated */
    rec_put_uvarint(&o, 2);  /* native_skipped */
    rec_put_uvarint(&o, 123456);
    rec_put_uvarint(&o, 16000);      /* signal_cost_ns */
    rec_put_uvarint(&o, 32);         /* calib_signals */
    rec_put_uvarint(&o, 30000000);   /* calib_ns */
    rec_put_uvarint(&o, 4000000000); /* process_cpu_ns */
    lb_rec(b, PYPROF_REC_FOOTER, &o);
}

static const uint64_t runs_3_1[] = {3, 1};

static void build_native(logbuf *b)
{
    lb_init(b);
    lb_header_flags(b, PYPROF_FORMAT_VERSION, PYPROF_HDR_NATIVE);
    lb_module(b, 1, "/usr/bin/python3.11", 0x555555554000ull, 20, 4);
    lb_module(b, 2, "linux-vdso.so.1", 0x7ffff7fc1000ull, 0, 1);
    lb_nstack(b, 1, 3, 0x7f0000001000ull);
    lb_stack_runs(b, 1, 4, 2, runs_3_1);
    lb_stack_runs(b, 2, 2, -1, NULL); /* no runs: an older writer */
    lb_stack_runs(b, 3, 0, 0, NULL);  /* no frames, no runs */
    lb_sample_native(b, 10, 1, 1, PYPROF_NATIVE_F_TRUNCATED);
    lb_sample(b, 5, 0, 2, 10000); /* no native tail */
    lb_module_gone(b, 2);
    lb_footer_native(b);
}

static pyprof_reader *open_built(logbuf *b, uint8_t **c)
{
    size_t clen;
    *c = compress1(b->p, b->len, &clen);
    int err;
    pyprof_reader *r = pyprof_reader_open_mem(*c, clen, &err);
    assert_non_null(r);
    return r;
}

static void test_native_roundtrip(void **state)
{
    logbuf b;
    build_native(&b);
    uint8_t *c;
    pyprof_reader *r = open_built(&b, &c);
    assert_int_equal(pyprof_reader_header(r)->flags, PYPROF_HDR_NATIVE);
    pyprof_record rec;

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_MODULE);
    const pyprof_module_rec *m = &rec.u.module;
    assert_int_equal(m->module_id, 1);
    assert_true(streq(m->path, "/usr/bin/python3.11"));
    assert_int_equal(m->base, 0x555555554000ull);
    assert_int_equal(m->build_id.len, 20);
    for (size_t i = 0; i < 20; i++)
        assert_int_equal((uint8_t)m->build_id.s[i], i);
    assert_int_equal(m->nseg, 4);
    for (uint64_t i = 0; i < 4; i++) {
        assert_int_equal(m->segs[i].vaddr, 0x1000 * i);
        assert_int_equal(m->segs[i].memsz, i + 1);
        assert_int_equal(m->segs[i].file_offset, i * 16);
        assert_int_equal(m->segs[i].flags, i & 7);
    }
    assert_int_equal(m->dev, 0x803);
    assert_int_equal(m->ino, 424242);
    assert_int_equal(m->size, 1 << 20);
    assert_int_equal(m->mtime_ns, 1700000000123456789ull);

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_MODULE);
    assert_int_equal(rec.u.module.module_id, 2);
    assert_true(streq(rec.u.module.path, "linux-vdso.so.1"));
    assert_int_equal(rec.u.module.build_id.len, 0);
    assert_int_equal(rec.u.module.nseg, 1);

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_NSTACK);
    assert_int_equal(rec.u.nstack.nstack_id, 1);
    assert_int_equal(rec.u.nstack.n, 3);
    for (uint64_t i = 0; i < 3; i++)
        assert_int_equal(rec.u.nstack.addrs[i], 0x7f0000001000ull + i);

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_STACK);
    assert_int_equal(rec.u.stack.nframes, 4);
    assert_int_equal(rec.u.stack.frames[3].code_id, 19);
    assert_int_equal(rec.u.stack.nruns, 2);
    assert_int_equal(rec.u.stack.runs[0], 3);
    assert_int_equal(rec.u.stack.runs[1], 1);

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_STACK);
    assert_int_equal(rec.u.stack.nframes, 2);
    assert_int_equal(rec.u.stack.nruns, 0);

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_STACK);
    assert_int_equal(rec.u.stack.nframes, 0);
    assert_int_equal(rec.u.stack.nruns, 0);

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_SAMPLE);
    assert_int_equal(rec.u.sample.t_us, 10);
    assert_int_equal(rec.u.sample.stack_id, 1);
    assert_int_equal(rec.u.sample.cpu_us, 10000);
    assert_int_equal(rec.u.sample.nstack_id, 1);
    assert_int_equal(rec.u.sample.native_flags, PYPROF_NATIVE_F_TRUNCATED);

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_SAMPLE);
    assert_int_equal(rec.u.sample.t_us, 15);
    assert_int_equal(rec.u.sample.nstack_id, 0);
    assert_int_equal(rec.u.sample.native_flags, 0);

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_MODULE_GONE);
    assert_int_equal(rec.u.module_gone, 2);

    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_FOOTER);
    assert_true(rec.u.footer.has_timers);
    assert_true(rec.u.footer.has_native);
    assert_int_equal(rec.u.footer.native_ok, 40);
    assert_int_equal(rec.u.footer.native_truncated, 3);
    assert_int_equal(rec.u.footer.native_skipped, 2);
    assert_int_equal(rec.u.footer.native_ns, 123456);
    assert_true(rec.u.footer.has_whole);
    assert_int_equal(rec.u.footer.signal_cost_ns, 16000);
    assert_int_equal(rec.u.footer.calib_signals, 32);
    assert_int_equal(rec.u.footer.calib_ns, 30000000);
    assert_int_equal(rec.u.footer.process_cpu_ns, 4000000000);
    assert_int_equal(pyprof_reader_next(r, &rec), 0);
    pyprof_reader_close(r);
    free(c);
    free(b.p);
}

/* Without PYPROF_HDR_NATIVE, bytes after a SAMPLE's, a STACK's or a footer's known fields
 * are a later writer's fields, never native ones. */
static void test_native_tails_ignored(void **state)
{
    logbuf b;
    lb_init(&b);
    lb_header(&b, PYPROF_FORMAT_VERSION);
    lb_stack_runs(&b, 1, 2, 1, (const uint64_t[]){2});
    lb_sample_native(&b, 1, 1, 5, 1);
    lb_footer_native(&b);
    uint8_t *c;
    pyprof_reader *r = open_built(&b, &c);
    pyprof_record rec;
    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.u.stack.nruns, 0);
    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.u.sample.nstack_id, 0);
    assert_int_equal(rec.u.sample.native_flags, 0);
    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_FOOTER);
    assert_true(rec.u.footer.has_timers);
    assert_false(rec.u.footer.has_native);
    /* In a log without native frames the whole-cost section follows the timers. */
    assert_true(rec.u.footer.has_whole);
    assert_int_equal(rec.u.footer.signal_cost_ns, 40);
    pyprof_reader_close(r);
    free(c);
    free(b.p);
}

/* A footer with the timer section, the native section when `native`, then `tail` more
 * uvarints (the whole-cost section, then the span section). */
static void lb_footer_tail(logbuf *b, int native, const uint64_t *tail, size_t ntail)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    for (int i = 0; i < 4; i++)
        rec_put_uvarint(&o, (uint64_t)i + 1); /* end, duration, samples, signals */
    rec_put_uvarint(&o, 0);                   /* ndrop */
    rec_put_uvarint(&o, PYPROF_END_EXIT);
    rec_put_u8(&o, 1);
    rec_put_svarint(&o, 0);
    rec_put_uvarint(&o, 100000);
    rec_put_uvarint(&o, 5);
    rec_put_uvarint(&o, 6); /* handler_ns */
    rec_put_uvarint(&o, 7); /* writer_ns */
    rec_put_uvarint(&o, 0); /* ntime */
    rec_put_uvarint(&o, 0); /* ndepth */
    rec_put_uvarint(&o, 8); /* timer_ns */
    rec_put_uvarint(&o, 9); /* untimed_ns */
    if (native)
        for (int i = 0; i < 4; i++)
            rec_put_uvarint(&o, 40u + (unsigned)i);
    for (size_t i = 0; i < ntail; i++)
        rec_put_uvarint(&o, tail[i]);
    lb_rec(b, PYPROF_REC_FOOTER, &o);
}

/* The footer of a log `native` or not, `ntail` span-section values: what the reader
 * makes of it. */
static pyprof_footer footer_with(int native, const uint64_t *tail, size_t ntail)
{
    logbuf b;
    lb_init(&b);
    lb_header_flags(&b, PYPROF_FORMAT_VERSION, native ? PYPROF_HDR_NATIVE : 0);
    lb_footer_tail(&b, native, tail, ntail);
    uint8_t *c;
    pyprof_reader *r = open_built(&b, &c);
    pyprof_record rec;
    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_FOOTER);
    pyprof_footer f = rec.u.footer;
    assert_int_equal(pyprof_reader_next(r, &rec), 0);
    pyprof_reader_close(r);
    free(c);
    free(b.p);
    return f;
}

/* The whole-cost section follows the timer section, or the native section in a native
 * log, spans_lost follows it, and the clock section follows that; a footer without them
 * (an older writer's) reads as none measured and none lost, and what a later writer
 * appends after is ignored. */
static void test_footer_spans_lost(void **state)
{
    (void)state;
    pyprof_footer f = footer_with(0, (const uint64_t[]){16000, 32, 3000, 900, 1234}, 5);
    assert_true(f.has_timers);
    assert_false(f.has_native);
    assert_true(f.has_whole);
    assert_int_equal(f.signal_cost_ns, 16000);
    assert_int_equal(f.process_cpu_ns, 900);
    assert_true(f.has_spans);
    assert_int_equal(f.spans_lost, 1234);
    f = footer_with(1, (const uint64_t[]){1, 2, 3, 4, 7}, 5);
    assert_true(f.has_native);
    assert_int_equal(f.native_ok, 40);
    assert_int_equal(f.native_ns, 43);
    assert_true(f.has_whole);
    assert_int_equal(f.calib_signals, 2);
    assert_int_equal(f.calib_ns, 3);
    assert_true(f.has_spans);
    assert_int_equal(f.spans_lost, 7);
    f = footer_with(0, NULL, 0);
    assert_true(f.has_timers);
    assert_false(f.has_whole);
    assert_false(f.has_spans);
    assert_int_equal(f.spans_lost, 0);
    f = footer_with(1, NULL, 0);
    assert_true(f.has_native);
    assert_false(f.has_spans);
    /* A whole-cost section cut short is not taken. */
    f = footer_with(0, (const uint64_t[]){16000, 32}, 2);
    assert_false(f.has_whole);
    assert_false(f.has_spans);
    /* Then the clock section (no allocation section in these logs): taken whole or not
     * at all, and what a later writer appends after it is ignored. */
    f = footer_with(0, (const uint64_t[]){1, 2, 3, 4, 5, 99, 1u << 20}, 7);
    assert_true(f.has_spans);
    assert_int_equal(f.spans_lost, 5);
    assert_false(f.has_clock);
    f = footer_with(1, (const uint64_t[]){1, 2, 3, 4, 5, 99, 1u << 20, 1, 77}, 9);
    assert_true(f.has_spans);
    assert_int_equal(f.spans_lost, 5);
    assert_true(f.has_clock);
    assert_int_equal(f.clock_timer_ns, 99);
    assert_int_equal(f.clock_kernel_ns, 1u << 20);
    assert_int_equal(f.clock_corrected, 1);
}

/* The first record after a native header, as built by `add`: what next() says. */
static int native_first(void (*add)(logbuf *b))
{
    logbuf b;
    lb_init(&b);
    lb_header_flags(&b, PYPROF_FORMAT_VERSION, PYPROF_HDR_NATIVE);
    add(&b);
    uint8_t *c;
    pyprof_reader *r = open_built(&b, &c);
    pyprof_record rec;
    int rc = pyprof_reader_next(r, &rec);
    pyprof_reader_close(r);
    free(c);
    free(b.p);
    return rc;
}

static void add_seg_max(logbuf *b) { lb_module(b, 1, "/a", 0, 0, PYPROF_MODULE_SEG_MAX); }
static void add_seg_over(logbuf *b) { lb_module(b, 1, "/a", 0, 0, PYPROF_MODULE_SEG_MAX + 1); }
static void add_bid_max(logbuf *b) { lb_module(b, 1, "/a", 0, PYPROF_BUILD_ID_MAX, 1); }
static void add_bid_over(logbuf *b) { lb_module(b, 1, "/a", 0, PYPROF_BUILD_ID_MAX + 1, 1); }
static void add_nstack_max(logbuf *b) { lb_nstack(b, 1, PYPROF_NSTACK_MAX, 1); }
static void add_nstack_over(logbuf *b) { lb_nstack(b, 1, PYPROF_NSTACK_MAX + 1, 1); }
static void add_runs_short(logbuf *b) { lb_stack_runs(b, 1, 5, 2, runs_3_1); }
static void add_runs_long(logbuf *b) { lb_stack_runs(b, 1, 3, 2, runs_3_1); }
static void add_runs_zero(logbuf *b) { lb_stack_runs(b, 1, 3, 2, (const uint64_t[]){3, 0}); }
static void add_runs_many(logbuf *b) { lb_stack_runs(b, 1, 1, 2, (const uint64_t[]){1, 1}); }
static void add_runs_huge(logbuf *b)
{
    lb_stack_runs(b, 1, 2, 2, (const uint64_t[]){UINT64_MAX, 3}); /* wraps to 2 */
}
static void add_runs_none_for_frames(logbuf *b) { lb_stack_runs(b, 1, 3, 0, NULL); }
/* A segment count the record has no room for. */
static void add_seg_lie(logbuf *b)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, 1);
    rec_put_cstr(&o, "/a");
    rec_put_uvarint(&o, 0);
    rec_put_str(&o, "", 0);
    rec_put_uvarint(&o, 200);
    lb_rec(b, PYPROF_REC_MODULE, &o);
}
static void add_nstack_lie(logbuf *b)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, 1);
    rec_put_uvarint(&o, 100);
    rec_put_uvarint(&o, 7);
    lb_rec(b, PYPROF_REC_NSTACK, &o);
}
static void add_gone_empty(logbuf *b)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    lb_rec(b, PYPROF_REC_MODULE_GONE, &o);
}

static void test_native_bounds(void **state)
{
    assert_int_equal(native_first(add_seg_max), 1);
    assert_int_equal(native_first(add_seg_over), -PYPROF_R_CORRUPT);
    assert_int_equal(native_first(add_seg_lie), -PYPROF_R_CORRUPT);
    assert_int_equal(native_first(add_bid_max), 1);
    assert_int_equal(native_first(add_bid_over), -PYPROF_R_CORRUPT);
    assert_int_equal(native_first(add_nstack_max), 1);
    assert_int_equal(native_first(add_nstack_over), -PYPROF_R_CORRUPT);
    assert_int_equal(native_first(add_nstack_lie), -PYPROF_R_CORRUPT);
    assert_int_equal(native_first(add_runs_short), -PYPROF_R_CORRUPT);
    assert_int_equal(native_first(add_runs_long), -PYPROF_R_CORRUPT);
    assert_int_equal(native_first(add_runs_zero), -PYPROF_R_CORRUPT);
    assert_int_equal(native_first(add_runs_many), -PYPROF_R_CORRUPT);
    assert_int_equal(native_first(add_runs_huge), -PYPROF_R_CORRUPT);
    /* Runs written must cover the frames; only an absent tail means "not recorded". */
    assert_int_equal(native_first(add_runs_none_for_frames), -PYPROF_R_CORRUPT);
    assert_int_equal(native_first(add_gone_empty), -PYPROF_R_CORRUPT);
}

/* A native log cut at every byte. */
static void test_native_truncated(void **state)
{
    logbuf b;
    build_native(&b);
    check_cut_at_every_byte(&b);
    free(b.p);
}

/* ---- rotated series, snapshots, follow mode ---------------------------------------- */

/* A SNAPSHOT record: thread i is (idx[i], stack[i], flags[i], state[i]). */
static void lb_snapshot(logbuf *b, uint64_t id, uint64_t t_us, size_t n, const uint64_t *idx,
                        const uint64_t *stack, const uint64_t *flags, const uint8_t *state)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, id);
    rec_put_uvarint(&o, t_us);
    rec_put_uvarint(&o, n);
    for (size_t i = 0; i < n; i++) {
        rec_put_uvarint(&o, idx[i]);
        rec_put_uvarint(&o, stack[i]);
        rec_put_uvarint(&o, flags[i]);
        rec_put_u8(&o, state[i]);
    }
    lb_rec(b, PYPROF_REC_SNAPSHOT, &o);
}

static const uint64_t snap_idx[] = {0, 1, 7};
static const uint64_t snap_stack[] = {0, 1, 0};
static const uint64_t snap_flags[] = {PYPROF_SNAP_F_GIL, 0, PYPROF_SNAP_F_CHANGED};
static const uint8_t snap_state[] = {'R', 'S', 0};
static const uint64_t series_2[] = {2, 1699999990000000000ull, 123456789};

/* The second file of a series (seq 2) with two snapshots between samples. */
static void build_snapshots(logbuf *b)
{
    lb_init(b);
    lb_header_series(b, PYPROF_FORMAT_VERSION, PYPROF_HDR_MEMORY, series_2);
    lb_thread(b, 0, 4242, "MainThread");
    lb_thread(b, 1, 4243, "worker");
    lb_code(b, 16, 3, "f", "C.f", "/x/a.py", "", 0);
    lb_stack(b, 1, 1, stack_codes, stack_lines);
    lb_sample(b, 100, 0, 1, 10000);
    lb_snapshot(b, 1, 150, 3, snap_idx, snap_stack, snap_flags, snap_state);
    lb_sample(b, 100, 1, 1, 10000);
    lb_snapshot(b, 2, 5000000, 0, NULL, NULL, NULL, NULL);
    lb_sample(b, 100, 1, 1, 10000);
    lb_footer(b);
}

static void test_snapshot_roundtrip(void **state)
{
    logbuf b;
    build_snapshots(&b);
    uint8_t *c;
    pyprof_reader *r = open_built(&b, &c);
    const pyprof_header *h = pyprof_reader_header(r);
    assert_int_equal(h->seq, series_2[0]);
    assert_int_equal(h->series_start_unix_ns, series_2[1]);
    assert_int_equal(h->offset_us, series_2[2]);
    assert_int_equal(h->window, 3); /* the fields before are unchanged */
    pyprof_record rec;
    int rc, snaps = 0, samples = 0;
    int64_t last_t = 0;
    while ((rc = pyprof_reader_next(r, &rec)) == 1) {
        if (rec.type == PYPROF_REC_SAMPLE) {
            samples++;
            last_t = rec.u.sample.t_us;
        }
        if (rec.type != PYPROF_REC_SNAPSHOT)
            continue;
        const pyprof_snapshot_rec *s = &rec.u.snapshot;
        snaps++;
        if (snaps == 1) {
            assert_int_equal(s->snapshot_id, 1);
            assert_int_equal(s->t_us, 150);
            assert_int_equal(s->nthreads, 3);
            for (int i = 0; i < 3; i++) {
                assert_int_equal(s->threads[i].thread_idx, snap_idx[i]);
                assert_int_equal(s->threads[i].stack_id, snap_stack[i]);
                assert_int_equal(s->threads[i].flags, snap_flags[i]);
                assert_int_equal(s->threads[i].os_state, snap_state[i]);
            }
        } else {
            assert_int_equal(s->snapshot_id, 2);
            assert_int_equal(s->t_us, 5000000);
            assert_int_equal(s->nthreads, 0);
        }
    }
    assert_int_equal(rc, 0);
    assert_int_equal(snaps, 2);
    assert_int_equal(samples, 3);
    /* A snapshot's time is absolute: the dt chain of the samples runs past it. */
    assert_int_equal(last_t, 300);
    pyprof_reader_close(r);
    free(c);
    check_cut_at_every_byte(&b);
    free(b.p);
}

/* ---- spans ------------------------------------------------------------------------- */

static void lb_span_start(logbuf *b, uint64_t id, uint64_t t_us, uint64_t thread,
                          uint64_t parent, const char *name, const char *info)
{
    logenc_span_start s = {
        .span_id = id,
        .t_us = t_us,
        .thread_idx = thread,
        .parent_span_id = parent,
        .name = name,
        .name_len = strlen(name),
        .trace_id = "trace-1",
        .trace_id_len = 7,
        .parent_id = "p",
        .parent_id_len = 1,
        .base_id = "base",
        .base_id_len = 4,
        .info = info,
        .info_len = strlen(info),
    };
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    assert_int_equal(logenc_put_span_start(&o, &s), 0);
    lb_rec(b, PYPROF_REC_SPAN_START, &o);
}

static void lb_span_stop(logbuf *b, uint64_t id, uint64_t t_us, uint64_t thread)
{
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    assert_int_equal(logenc_put_span_stop(&o, id, t_us, thread, "{}", 2), 0);
    lb_rec(b, PYPROF_REC_SPAN_STOP, &o);
}

static void test_span_roundtrip(void **state)
{
    (void)state;
    logbuf b;
    lb_init(&b);
    lb_header(&b, PYPROF_FORMAT_VERSION);
    lb_thread(&b, 0, 4242, "MainThread");
    lb_code(&b, 16, 3, "f", "C.f", "/x/a.py", "", 0);
    lb_stack(&b, 1, 1, stack_codes, stack_lines);
    lb_span_start(&b, 1, 50, 0, 0, "request <GET>", "{\"path\": \"/\"}");
    lb_sample(&b, 100, 0, 1, 10000);
    lb_span_start(&b, 2, 120, 0, 1, "db", "");
    lb_span_stop(&b, 2, 180, 0);
    lb_sample(&b, 100, 0, 1, 10000);
    lb_footer(&b); /* span 1 never stops: it was open when the log ended */
    uint8_t *c;
    pyprof_reader *r = open_built(&b, &c);
    pyprof_record rec;
    int rc, starts = 0, stops = 0;
    int64_t last_t = 0;
    while ((rc = pyprof_reader_next(r, &rec)) == 1) {
        if (rec.type == PYPROF_REC_SAMPLE)
            last_t = rec.u.sample.t_us;
        if (rec.type == PYPROF_REC_SPAN_START) {
            const pyprof_span_start_rec *s = &rec.u.span_start;
            starts++;
            assert_int_equal(s->span_id, (uint64_t)starts);
            assert_int_equal(s->parent_span_id, starts == 1 ? 0 : 1);
            assert_int_equal(s->t_us, starts == 1 ? 50 : 120);
            assert_int_equal(s->thread_idx, 0);
            const char *want = starts == 1 ? "request <GET>" : "db";
            assert_int_equal(s->name.len, strlen(want));
            assert_memory_equal(s->name.s, want, s->name.len);
            assert_int_equal(s->trace_id.len, 7);
            assert_memory_equal(s->trace_id.s, "trace-1", 7);
            assert_int_equal(s->parent_id.len, 1);
            assert_int_equal(s->base_id.len, 4);
            assert_int_equal(s->info.len, starts == 1 ? 13 : 0);
        }
        if (rec.type == PYPROF_REC_SPAN_STOP) {
            stops++;
            assert_int_equal(rec.u.span_stop.span_id, 2);
            assert_int_equal(rec.u.span_stop.t_us, 180);
            assert_int_equal(rec.u.span_stop.info.len, 2);
        }
    }
    assert_int_equal(rc, 0);
    assert_int_equal(starts, 2);
    assert_int_equal(stops, 1);
    assert_int_equal(last_t, 200); /* span times are absolute, outside the dt chain */
    pyprof_reader_close(r);
    free(c);
    check_cut_at_every_byte(&b);
    free(b.p);
}

static void test_span_corrupt(void **state)
{
    (void)state;
    /* Span id 0. */
    static const uint8_t id0[] = {PYPROF_REC_SPAN_START, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    assert_int_equal(first_next_after(id0, sizeof id0), -PYPROF_R_CORRUPT);
    static const uint8_t stop0[] = {PYPROF_REC_SPAN_STOP, 4, 0, 0, 0, 0};
    assert_int_equal(first_next_after(stop0, sizeof stop0), -PYPROF_R_CORRUPT);
    /* A name cut short, and an info string missing. */
    static const uint8_t cut[] = {PYPROF_REC_SPAN_START, 6, 1, 0, 0, 0, 5, 'a'};
    assert_int_equal(first_next_after(cut, sizeof cut), -PYPROF_R_CORRUPT);
    static const uint8_t noinfo[] = {PYPROF_REC_SPAN_START, 8, 1, 0, 0, 0, 0, 0, 0, 0};
    assert_int_equal(first_next_after(noinfo, sizeof noinfo), -PYPROF_R_CORRUPT);
    /* A name longer than the format allows. */
    logbuf b;
    lb_init(&b);
    lb_header(&b, PYPROF_FORMAT_VERSION);
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    rec_put_uvarint(&o, 1);
    rec_put_uvarint(&o, 0);
    rec_put_uvarint(&o, 0);
    rec_put_uvarint(&o, 0);
    static char longname[PYPROF_SPAN_NAME_MAX + 1];
    memset(longname, 'n', sizeof longname);
    rec_put_str(&o, longname, sizeof longname);
    for (int i = 0; i < 4; i++)
        rec_put_str(&o, "", 0);
    lb_rec(&b, PYPROF_REC_SPAN_START, &o);
    uint8_t *c;
    pyprof_reader *r = open_built(&b, &c);
    pyprof_record rec;
    assert_int_equal(pyprof_reader_next(r, &rec), -PYPROF_R_CORRUPT);
    pyprof_reader_close(r);
    free(c);
    free(b.p);
}

static void test_snapshot_corrupt(void **state)
{
    /* Three threads announced, one present. */
    static const uint8_t short_threads[] = {PYPROF_REC_SNAPSHOT, 7, 1, 0, 3, 0, 0, 0, 'R'};
    assert_int_equal(first_next_after(short_threads, sizeof short_threads), -PYPROF_R_CORRUPT);
    /* A thread without its state byte. */
    static const uint8_t no_state[] = {PYPROF_REC_SNAPSHOT, 6, 1, 0, 1, 0, 0, 0};
    assert_int_equal(first_next_after(no_state, sizeof no_state), -PYPROF_R_CORRUPT);
    /* A billion threads in a few bytes. */
    static const uint8_t billion[] = {
        PYPROF_REC_SNAPSHOT, 7, 1, 0, 0x80, 0x94, 0xeb, 0xdc, 0x03};
    assert_int_equal(first_next_after(billion, sizeof billion), -PYPROF_R_CORRUPT);
    /* A time no clock reaches (2^63 us). */
    static const uint8_t far[] = {PYPROF_REC_SNAPSHOT,
                                  12,
                                  1,
                                  0x80,
                                  0x80,
                                  0x80,
                                  0x80,
                                  0x80,
                                  0x80,
                                  0x80,
                                  0x80,
                                  0x80,
                                  0x01,
                                  0};
    assert_int_equal(first_next_after(far, sizeof far), -PYPROF_R_CORRUPT);
    /* The payload cut inside the id. */
    static const uint8_t cut_id[] = {PYPROF_REC_SNAPSHOT, 1, 0x80};
    assert_int_equal(first_next_after(cut_id, sizeof cut_id), -PYPROF_R_CORRUPT);
    /* More threads than a process can have, with the bytes to back the count. */
    logbuf b;
    lb_init(&b);
    lb_header(&b, PYPROF_FORMAT_VERSION);
    size_t n = (4u << 20) + 1;
    size_t cap = n * 4 + 32;
    uint8_t *big = malloc(cap);
    rec_out o;
    rec_out_init(&o, big, cap);
    rec_put_uvarint(&o, 1); /* snapshot_id */
    rec_put_uvarint(&o, 0); /* t_us */
    rec_put_uvarint(&o, n);
    for (size_t i = 0; i < n; i++)
        rec_put_bytes(&o, "\0\0\0R", 4);
    lb_rec(&b, PYPROF_REC_SNAPSHOT, &o);
    free(big);
    uint8_t *c;
    pyprof_reader *r = open_built(&b, &c);
    pyprof_record rec;
    assert_int_equal(pyprof_reader_next(r, &rec), -PYPROF_R_CORRUPT);
    pyprof_reader_close(r);
    free(c);
    free(b.p);
    /* The series fields cut short in a header. */
    lb_init(&b);
    lb_header_series(&b, PYPROF_FORMAT_VERSION, 0, series_2);
    b.p[b.len - 1] = 0x80; /* offset_us's last byte now says "more follows" */
    size_t clen;
    c = compress1(b.p, b.len, &clen);
    int err;
    assert_null(pyprof_reader_open_mem(c, clen, &err));
    assert_int_equal(err, PYPROF_R_CORRUPT);
    free(c);
    free(b.p);
}

/* ---- BATCH ------------------------------------------------------------------------- */

/* One timed event, as a reader yields it: a sample, or (rss != 0) an RSS point. */
typedef struct tev {
    int64_t t_us;
    uint64_t thread, stack, cpu, rss, nstack, nflags;
} tev;

/* A BATCH of `n` events coded by logenc (the batch counts from t0_us, the time of the
 * timed record before it), after a sanity check that each event is taken.  Its yields
 * are the events' types. */
static void lb_batch(logbuf *b, int64_t t0_us, const tev *e, size_t n, int native)
{
    static uint8_t ev_buf[1 << 15];
    logenc_batch lb;
    logenc_batch_start(&lb, t0_us, 10000, 10000, 4096, native);
    rec_out ev;
    rec_out_init(&ev, ev_buf, sizeof ev_buf);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(e[i].rss
                             ? logenc_batch_rss(&ev, &lb, e[i].t_us, e[i].rss)
                             : logenc_batch_sample(&ev, &lb, e[i].t_us, e[i].thread, e[i].stack,
                                                   e[i].cpu, e[i].nstack, e[i].nflags),
                         0);
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    assert_int_equal(logenc_put_batch(&o, &lb, ev.buf, ev.len), 0);
    lb_rec(b, PYPROF_REC_BATCH, &o);
    for (size_t i = 0; i < n && b->ny < MAX_YIELD; i++) {
        b->ytype[b->ny] = e[i].rss ? PYPROF_REC_RSS : PYPROF_REC_SAMPLE;
        b->yrec[b->ny++] = b->nrec - 1;
    }
}

/* Every kind of event: thread switches, a cpu_us of its own, gaps near and far from the
 * period, a gap of 0 (a wall-clock pass), a negative one, RSS points up and down. */
/* clang-format off */
static const tev batch1[] = {
    {11000, 0, 1, 10000, 0, 0, 0},
    {21007, 1, 2, 10000, 0, 0, 0},
    {21007, 0, 3, 10000, 0, 0, 0},
    {23000, 0, 0, 0, 50 << 12, 0, 0},
    {30990, 0, 1, 2500, 0, 0, 0},
    {30985, 1, 70, 10000, 0, 0, 0},
    {31500, 0, 0, 0, 49 << 12, 0, 0},
    {900000, 1, 3, 10000, 0, 0, 0},
};
/* clang-format on */
static const tev batch2[] = {
    {910000, 1, 1, 10000, 0, 0, 0},
    {910100, 0, 0, 0, (uint64_t)3 << 30, 0, 0},
};

/* A log with plain SAMPLE and RSS records between batches: the time runs through all. */
static void build_batches(logbuf *b)
{
    lb_init(b);
    lb_header(b, PYPROF_FORMAT_VERSION);
    lb_thread(b, 0, 4242, "MainThread");
    lb_thread(b, 1, 4243, "worker");
    lb_code(b, 16, 3, "f", "C.f", "/x/a.py", "", 0);
    lb_stack(b, 1, 4, stack_codes, stack_lines);
    lb_sample(b, 1000, 0, 1, 10000); /* t 1000 */
    lb_batch(b, 1000, batch1, sizeof batch1 / sizeof *batch1, 0);
    lb_rss(b, 100, 4096);            /* t 900100 */
    lb_batch(b, 900100, NULL, 0, 0); /* empty: yields nothing */
    lb_batch(b, 900100, batch2, sizeof batch2 / sizeof *batch2, 0);
    lb_sample(b, 5, 0, 1, 10000); /* t 910105 */
    lb_footer(b);
}

static void expect_event(const pyprof_record *rec, const tev *e)
{
    if (e->rss) {
        assert_int_equal(rec->type, PYPROF_REC_RSS);
        assert_int_equal(rec->u.rss.t_us, e->t_us);
        assert_int_equal(rec->u.rss.rss_bytes, e->rss);
        return;
    }
    assert_int_equal(rec->type, PYPROF_REC_SAMPLE);
    assert_int_equal(rec->u.sample.t_us, e->t_us);
    assert_int_equal(rec->u.sample.thread_idx, e->thread);
    assert_int_equal(rec->u.sample.stack_id, e->stack);
    assert_int_equal(rec->u.sample.cpu_us, e->cpu);
    assert_int_equal(rec->u.sample.nstack_id, e->nstack);
    assert_int_equal(rec->u.sample.native_flags, e->nflags);
}

static void test_batch_roundtrip(void **state)
{
    (void)state;
    logbuf b;
    build_batches(&b);
    uint8_t *c;
    pyprof_reader *r = open_built(&b, &c);
    pyprof_record rec;
    for (int i = 0; i < 4; i++) /* threads, code, stack */
        assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_STACK);
    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    expect_event(&rec, &(tev){1000, 0, 1, 10000, 0, 0, 0});
    for (size_t i = 0; i < sizeof batch1 / sizeof *batch1; i++) {
        assert_int_equal(pyprof_reader_next(r, &rec), 1);
        expect_event(&rec, &batch1[i]);
    }
    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    expect_event(&rec, &(tev){900100, 0, 0, 0, 4096, 0, 0});
    for (size_t i = 0; i < sizeof batch2 / sizeof *batch2; i++) {
        assert_int_equal(pyprof_reader_next(r, &rec), 1);
        expect_event(&rec, &batch2[i]);
    }
    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    expect_event(&rec, &(tev){910105, 0, 1, 10000, 0, 0, 0});
    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, PYPROF_REC_FOOTER);
    assert_int_equal(pyprof_reader_next(r, &rec), 0);
    pyprof_reader_close(r);
    free(c);
    check_cut_at_every_byte(&b);
    free(b.p);
}

/* In a native log every sample of a batch carries its native stack and flags. */
static void test_batch_native(void **state)
{
    (void)state;
    static const tev ev[] = {
        {10000, 0, 1, 10000, 0, 5, PYPROF_NATIVE_F_TRUNCATED},
        {10500, 0, 0, 0, 4096, 0, 0},
        {20000, 0, 1, 10000, 0, 0, PYPROF_NATIVE_F_SKIPPED},
    };
    logbuf b;
    lb_init(&b);
    lb_header_flags(&b, PYPROF_FORMAT_VERSION, PYPROF_HDR_MEMORY | PYPROF_HDR_NATIVE);
    lb_batch(&b, 0, ev, 3, 1);
    uint8_t *c;
    pyprof_reader *r = open_built(&b, &c);
    pyprof_record rec;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pyprof_reader_next(r, &rec), 1);
        expect_event(&rec, &ev[i]);
    }
    assert_int_equal(pyprof_reader_next(r, &rec), -PYPROF_R_TRUNCATED);
    pyprof_reader_close(r);
    free(c);
    check_cut_at_every_byte(&b);
    free(b.p);
}

/* A BATCH payload from raw varints (count, base, cpu, unit, then the events' bytes). */
static int batch_raw(const uint64_t *v, size_t nv)
{
    uint8_t tail[256];
    rec_out o;
    rec_out_init(&o, scratch, sizeof scratch);
    for (size_t i = 0; i < nv; i++)
        rec_put_uvarint(&o, v[i]);
    size_t n = rec_envelope(tail, sizeof tail, PYPROF_REC_BATCH, o.buf, o.len);
    assert_true(n > 0);
    return first_next_after(tail, n);
}

/* A damaged batch gives none of its events, only CORRUPT. */
static void test_batch_corrupt(void **state)
{
    (void)state;
    /* Well formed: one sample (an even head: stack 1, gap = base). */
    assert_int_equal(batch_raw((const uint64_t[]){1, 10, 10, 1, 1 << 1, 0}, 6), 1);
    /* More events than its bytes can hold; more than the format allows. */
    assert_int_equal(batch_raw((const uint64_t[]){2, 10, 10, 1, 1 << 1, 0}, 6),
                     -PYPROF_R_CORRUPT);
    assert_int_equal(batch_raw((const uint64_t[]){PYPROF_BATCH_MAX + 1, 10, 10, 1}, 4),
                     -PYPROF_R_CORRUPT);
    /* An RSS unit of 0. */
    assert_int_equal(batch_raw((const uint64_t[]){1, 10, 10, 0, 1 << 1, 0}, 6),
                     -PYPROF_R_CORRUPT);
    /* A flag this reader does not know; the kind that does not exist. */
    assert_int_equal(batch_raw((const uint64_t[]){1, 10, 10, 1, 1 << 3 | 5, 8, 0, 0}, 8),
                     -PYPROF_R_CORRUPT);
    assert_int_equal(batch_raw((const uint64_t[]){1, 10, 10, 1, 1 << 3 | 7, 0, 0}, 7),
                     -PYPROF_R_CORRUPT);
    /* The second event cut short: the first is not returned either. */
    assert_int_equal(batch_raw((const uint64_t[]){2, 10, 10, 1, 1 << 1, 0, 1 << 3 | 1, 5}, 8),
                     -PYPROF_R_CORRUPT);
    /* Extreme values wrap without harm (times and RSS are unsigned sums). */
    assert_int_equal(batch_raw((const uint64_t[]){2, UINT64_MAX, UINT64_MAX, UINT64_MAX,
                                                  (UINT64_MAX >> 3) << 3 | 3, UINT64_MAX,
                                                  (UINT64_MAX >> 3) << 3 | 5, 7, UINT64_MAX,
                                                  UINT64_MAX, UINT64_MAX},
                               11),
                     1);
}

/* Many empty batches in a row: read in a loop, not by recursion. */
static void test_batch_empty_run(void **state)
{
    (void)state;
    logbuf b;
    lb_init(&b);
    lb_header(&b, PYPROF_FORMAT_VERSION);
    static const uint8_t empty[] = {PYPROF_REC_BATCH, 4, 0, 1, 1, 1};
    for (int i = 0; i < 200000; i++)
        lb_bytes(&b, empty, sizeof empty);
    lb_sample(&b, 7, 0, 1, 10000);
    uint8_t *c;
    pyprof_reader *r = open_built(&b, &c);
    pyprof_record rec;
    assert_int_equal(pyprof_reader_next(r, &rec), 1);
    expect_event(&rec, &(tev){7, 0, 1, 10000, 0, 0, 0});
    assert_int_equal(pyprof_reader_next(r, &rec), -PYPROF_R_TRUNCATED);
    pyprof_reader_close(r);
    free(c);
    free(b.p);
}

/* What a record says, folded into a number: two readings of one log must agree. */
static uint64_t rec_digest(const pyprof_record *rec)
{
    uint64_t h = (uint64_t)rec->type * 0x9e3779b97f4a7c15ull;
#define MIX(v) (h = (h ^ (uint64_t)(v)) * 0x100000001b3ull)
    switch (rec->type) {
    case PYPROF_REC_SAMPLE:
        MIX(rec->u.sample.t_us);
        MIX(rec->u.sample.thread_idx);
        MIX(rec->u.sample.stack_id);
        MIX(rec->u.sample.cpu_us);
        break;
    case PYPROF_REC_RSS:
        MIX(rec->u.rss.t_us);
        MIX(rec->u.rss.rss_bytes);
        break;
    case PYPROF_REC_STACK:
        MIX(rec->u.stack.stack_id);
        for (uint64_t i = 0; i < rec->u.stack.nframes; i++)
            MIX(rec->u.stack.frames[i].line);
        break;
    case PYPROF_REC_THREAD:
        MIX(rec->u.thread.tid);
        for (size_t i = 0; i < rec->u.thread.name.len; i++)
            MIX(rec->u.thread.name.s[i]);
        break;
    case PYPROF_REC_SNAPSHOT:
        MIX(rec->u.snapshot.snapshot_id);
        MIX(rec->u.snapshot.t_us);
        for (uint64_t i = 0; i < rec->u.snapshot.nthreads; i++)
            MIX(rec->u.snapshot.threads[i].stack_id * 256 +
                rec->u.snapshot.threads[i].os_state);
        break;
    case PYPROF_REC_FOOTER:
        MIX(rec->u.footer.samples);
        MIX(rec->u.footer.duration_ns);
        break;
    default:
        break;
    }
#undef MIX
    return h;
}

/* A log long enough for several 64 KiB blocks, with snapshots among the samples. */
static void build_long(logbuf *b, int footer)
{
    lb_init(b);
    lb_header_series(b, PYPROF_FORMAT_VERSION, PYPROF_HDR_MEMORY, series_2);
    lb_thread(b, 0, 4242, "MainThread");
    lb_thread(b, 1, 4243, "worker");
    lb_code(b, 16, 3, "f", "C.f", "/x/a.py", "", 0);
    uint64_t x = 88172645463325252ull;
    for (uint64_t s = 0; s < 64; s++) {
        uint64_t codes[8] = {16, 16, 16, 16, 16, 16, 16, 16};
        int64_t lines[8];
        for (int i = 0; i < 8; i++)
            lines[i] = (int64_t)(s * 8 + (uint64_t)i);
        lb_stack(b, s, 1 + s % 8, codes, lines);
    }
    for (int i = 0; i < 40000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        lb_sample(b, (int64_t)(x % 20000), x >> 63, (x >> 8) % 64, 10000);
        if (i % 5000 == 0)
            lb_snapshot(b, (uint64_t)i / 5000 + 1, (uint64_t)i * 10, 3, snap_idx, snap_stack,
                        snap_flags, snap_state);
    }
    if (footer)
        lb_footer(b);
}

/* Every record's digest, read in one go; returns the count. */
static size_t digests_whole(const uint8_t *c, size_t clen, uint64_t *out, size_t max, int *end)
{
    int err;
    pyprof_reader *r = pyprof_reader_open_mem(c, clen, &err);
    assert_non_null(r);
    pyprof_record rec;
    size_t n = 0;
    int rc;
    while ((rc = pyprof_reader_next(r, &rec)) == 1) {
        assert_true(n < max);
        out[n++] = rec_digest(&rec);
    }
    *end = rc;
    pyprof_reader_close(r);
    return n;
}

/* Writes `c` to a file in pieces of `step` bytes (the first one up to `first`), reading
 * in follow mode after each: the records must come out exactly as from the whole log,
 * each once, with AGAIN whenever the file has no more for now. */
static void follow_in_pieces(const uint8_t *c, size_t clen, size_t first, size_t step,
                             const uint64_t *want, size_t nwant, int footer)
{
    char path[] = "/tmp/test_follow.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, c, first), (ssize_t)first);
    int err;
    pyprof_reader *r = pyprof_reader_open(path, &err);
    assert_non_null(r);
    pyprof_reader_follow(r, 1);
    size_t written = first, n = 0, agains = 0;
    pyprof_record rec;
    int rc;
    for (;;) {
        while ((rc = pyprof_reader_next(r, &rec)) == 1) {
            assert_true(n < nwant);
            assert_true(rec_digest(&rec) == want[n]);
            n++;
        }
        if (rc == 0)
            break;
        assert_int_equal(rc, -PYPROF_R_AGAIN);
        agains++;
        if (written == clen)
            break;
        size_t k = clen - written < step ? clen - written : step;
        assert_int_equal(write(fd, c + written, k), (ssize_t)k);
        written += k;
    }
    assert_int_equal(n, nwant);
    assert_true(agains > 0);
    if (footer) {
        assert_int_equal(rc, 0);
        assert_int_equal(pyprof_reader_next(r, &rec), 0);
    } else {
        /* Still being written: "not yet", as often as asked, until follow mode ends. */
        assert_int_equal(pyprof_reader_next(r, &rec), -PYPROF_R_AGAIN);
        pyprof_reader_follow(r, 0);
        assert_int_equal(pyprof_reader_next(r, &rec), -PYPROF_R_TRUNCATED);
    }
    pyprof_reader_close(r);
    close(fd);
    unlink(path);
}

static void test_follow(void **state)
{
    for (int footer = 1; footer >= 0; footer--) {
        logbuf b;
        build_long(&b, footer);
        /* The header alone in a first frame (open needs it whole); then frames of about
         * 100 KB, each of several linked blocks. */
        size_t cuts[8], nc = 0;
        cuts[nc++] = b.rec_end[0];
        for (size_t off = 100000; off < b.len && nc < 8; off += 100000)
            cuts[nc++] = off;
        for (int crc = 0; crc < 2; crc++) {
            size_t clen;
            uint8_t *c = compress_frames(b.p, b.len, cuts, nc, crc, &clen);
            static uint64_t want[50000];
            int end;
            size_t nwant = digests_whole(c, clen, want, 50000, &end);
            assert_int_equal(end, footer ? 0 : -PYPROF_R_TRUNCATED);
            assert_true(nwant > 40000);
            /* The header's frame: its size, from an open that stops there. */
            size_t hlen = 0;
            for (size_t k = 1; k <= clen && !hlen; k++) {
                int err;
                pyprof_reader *r = pyprof_reader_open_mem(c, k, &err);
                if (r) {
                    hlen = k;
                    pyprof_reader_close(r);
                }
            }
            assert_true(hlen > 0);
            /* Opened where the header's block is cut (open decodes that block in part)
             * or where its frame ends. */
            size_t flen;
            free(compress_frames(b.p, cuts[0], NULL, 0, crc, &flen));
            assert_true(flen > hlen);
            static const size_t steps[] = {1, 3, 509, 4096, 65536};
            for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
                follow_in_pieces(c, clen, hlen, steps[i], want, nwant, footer);
                follow_in_pieces(c, clen, flen, steps[i], want, nwant, footer);
            }
            free(c);
        }
        free(b.p);
    }
}

/* An in-memory log in follow mode: its end is "not yet", never a cut, and asking again
 * changes nothing. */
static void test_follow_mem(void **state)
{
    logbuf b;
    build_snapshots(&b);
    size_t full = b.len;
    b.len = b.rec_end[6] + 2; /* inside the second sample */
    size_t clen;
    uint8_t *c = compress1(b.p, b.len, &clen);
    int err;
    pyprof_reader *r = pyprof_reader_open_mem(c, clen, &err);
    assert_non_null(r);
    pyprof_reader_follow(r, 1);
    int types[MAX_RECS], end;
    assert_int_equal(read_all(r, types, MAX_RECS, &end), 6);
    assert_int_equal(end, -PYPROF_R_AGAIN);
    assert_int_equal(types[5], PYPROF_REC_SNAPSHOT);
    pyprof_record rec;
    assert_int_equal(pyprof_reader_next(r, &rec), -PYPROF_R_AGAIN);
    pyprof_reader_follow(r, 0);
    assert_int_equal(pyprof_reader_next(r, &rec), -PYPROF_R_TRUNCATED);
    assert_int_equal(pyprof_reader_next(r, &rec), -PYPROF_R_TRUNCATED);
    pyprof_reader_close(r);
    free(c);
    b.len = full;
    free(b.p);
}

static void test_strerror(void **state)
{
    assert_string_equal(pyprof_reader_strerror(PYPROF_R_OK), "no error");
    assert_string_equal(pyprof_reader_strerror(-PYPROF_R_NOT_PYPROF),
                        "not a pyprof log (bad magic)");
    assert_string_equal(pyprof_reader_strerror(PYPROF_R_TRUNCATED),
                        "log is truncated (the process was killed or crashed)");
    assert_string_equal(pyprof_reader_strerror(-PYPROF_R_AGAIN),
                        "no more data yet (the log is still being written)");
    assert_string_equal(pyprof_reader_strerror(1000), "unknown reader error");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_multiframe),
        cmocka_unit_test(test_truncated_compressed),
        cmocka_unit_test(test_truncated_raw),
        cmocka_unit_test(test_not_lz4),
        cmocka_unit_test(test_not_pyprof),
        cmocka_unit_test(test_newer),
        cmocka_unit_test(test_corrupt_records),
        cmocka_unit_test(test_corrupt_lz4),
        cmocka_unit_test(test_corrupt_block),
        cmocka_unit_test(test_content_checksum),
        cmocka_unit_test(test_cut_block),
        cmocka_unit_test(test_random_damage),
        cmocka_unit_test(test_file_big),
        cmocka_unit_test(test_native_roundtrip),
        cmocka_unit_test(test_native_tails_ignored),
        cmocka_unit_test(test_footer_spans_lost),
        cmocka_unit_test(test_native_bounds),
        cmocka_unit_test(test_native_truncated),
        cmocka_unit_test(test_snapshot_roundtrip),
        cmocka_unit_test(test_snapshot_corrupt),
        cmocka_unit_test(test_span_roundtrip),
        cmocka_unit_test(test_span_corrupt),
        cmocka_unit_test(test_batch_roundtrip),
        cmocka_unit_test(test_batch_native),
        cmocka_unit_test(test_batch_corrupt),
        cmocka_unit_test(test_batch_empty_run),
        cmocka_unit_test(test_follow),
        cmocka_unit_test(test_follow_mem),
        cmocka_unit_test(test_strerror),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
