/*
 * fuzz_reader: a libFuzzer target for the log reader (src/read/reader.c).
 *
 * Each input is read twice:
 *   1. as a log file, exactly as given (LZ4 frames around the records);
 *   2. as the decompressed content of a log: the target compresses it into one LZ4 frame
 *      first.  A fuzzer cannot see inside liblz4 and would rarely get a mutated frame past
 *      its checksum, so this is the path on which it explores the record parser.
 * Every byte of every string and frame array the reader hands out is read, so that a
 * pointer or length that strays outside the reader's buffers is caught by
 * AddressSanitizer, and the reader's promises from include/pyprof/reader.h are checked:
 * an error code from its list, offsets that only grow, a clean end only after the footer,
 * an AWINDOW's shifts within PYPROF_ALLOC_SHIFT_MAX and its end a time that does not
 * overflow.
 * The log as given is also read in follow mode, where its end must be "not yet" (AGAIN,
 * not sticky) and never a cut.
 *
 * An empty log is also read as (NULL, 0), which pyprof_reader_open_mem accepts.
 *
 * `make fuzz` builds this target with clang, as
 *
 *     clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
 *         -D_GNU_SOURCE -Iinclude -Isrc tests/fuzz/fuzz_reader.c src/read/reader.c \
 *         src/read/lz4stream.c src/read/logdec.c src/common/record.c -llz4 \
 *         -o build/fuzz/fuzz_reader
 *
 * and runs it on build/fuzz-corpus/reader/, seeded from tests/fuzz/corpus/ and
 * tests/fixtures/.  libFuzzer writes a crash-<sha1> (or timeout-, leak-, oom-) file under
 * build/fuzz-findings/reader/ for each failure; reproduce one with
 * `build/fuzz/fuzz_reader FILE`, and once it is fixed add it to tests/fuzz/corpus/, where
 * `make fuzz-replay` (this file with tests/fuzz/replay_main.c, ASan and UBSan, no
 * libFuzzer) runs it on every `make check` and `make test`.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <lz4frame.h>
#include <pyprof/reader.h>
#include "fuzz.h"

/* Bounds the work per input: a reader that stops making progress is a bug the fuzzer's
 * timeout reports, but the replay must not hang on it. */
#define MAX_RECORDS 1000000

/* Reads every byte of a string so a bad pointer faults under AddressSanitizer; the sum
 * goes into a volatile so the reads are not optimised away. */
static volatile uint64_t sink;

static void touch(const void *p, size_t n)
{
    const volatile uint8_t *b = p;
    uint64_t s = 0;
    CHECK(n == 0 || p != NULL);
    for (size_t i = 0; i < n; i++)
        s += b[i];
    sink += s;
}

static void touch_str(pyprof_str s) { touch(s.s, s.len); }

static void touch_header(const pyprof_header *h)
{
    touch_str(h->run_id);
    touch_str(h->host);
    touch_str(h->exe);
    touch_str(h->python_version);
    touch_str(h->timer);
    CHECK(h->argc == 0 || h->argv != NULL);
    for (uint64_t i = 0; i < h->argc; i++)
        touch_str(h->argv[i]);
}

static void touch_record(const pyprof_record *rec)
{
    switch (rec->type) {
    case PYPROF_REC_HEADER:
        touch_header(&rec->u.header);
        break;
    case PYPROF_REC_THREAD:
        touch_str(rec->u.thread.name);
        break;
    case PYPROF_REC_CODE:
        touch_str(rec->u.code.name);
        touch_str(rec->u.code.qualname);
        touch_str(rec->u.code.filename);
        touch_str(rec->u.code.line_table);
        break;
    case PYPROF_REC_STACK:
        CHECK(rec->u.stack.nframes == 0 || rec->u.stack.frames != NULL);
        touch(rec->u.stack.frames, rec->u.stack.nframes * sizeof(pyprof_frame));
        break;
    case PYPROF_REC_SNAPSHOT:
        CHECK(rec->u.snapshot.nthreads == 0 || rec->u.snapshot.threads != NULL);
        touch(rec->u.snapshot.threads, rec->u.snapshot.nthreads * sizeof(pyprof_snap_thread));
        CHECK(rec->u.snapshot.t_us >= 0);
        break;
    case PYPROF_REC_AWINDOW:
        CHECK(rec->u.awindow.t_us >= 0);
        CHECK(rec->u.awindow.len_us <= (uint64_t)(INT64_MAX - rec->u.awindow.t_us));
        CHECK(rec->u.awindow.shift <= PYPROF_ALLOC_SHIFT_MAX);
        CHECK(rec->u.awindow.floor_shift <= PYPROF_ALLOC_SHIFT_MAX);
        break;
    default:
        break;
    }
}

/* Reads a log to its end.  `follow`: in follow mode, where the end of the input is "not
 * yet" (AGAIN, asked twice to check it is not sticky) rather than a cut. */
static void read_log(const uint8_t *data, size_t size, int follow)
{
    int err = -1;
    pyprof_reader *r = pyprof_reader_open_mem(data, size, &err);
    if (!r) {
        /* A refusal names one of the reader's errors, never "no error". */
        CHECK(err > PYPROF_R_OK && err < PYPROF_R_AGAIN);
        CHECK(pyprof_reader_strerror(err) != NULL);
        return;
    }
    /* Open refuses logs from a newer pyprof. */
    CHECK(pyprof_reader_header(r)->format_version <= PYPROF_FORMAT_VERSION);
    touch_header(pyprof_reader_header(r));
    pyprof_reader_follow(r, follow);
    int again = 0;
    uint64_t offset = pyprof_reader_offset(r);
    int saw_footer = 0;
    pyprof_record rec;
    for (long n = 0; n < MAX_RECORDS; n++) {
        int rc = pyprof_reader_next(r, &rec);
        uint64_t now = pyprof_reader_offset(r);
        CHECK(now >= offset);
        CHECK(now <= UINT64_MAX / 2);
        offset = now;
        if (rc == 1) {
            touch_record(&rec);
            saw_footer |= rec.type == PYPROF_REC_FOOTER;
            continue;
        }
        if (rc == -PYPROF_R_AGAIN) {
            CHECK(follow && !saw_footer);
            if (!again++)
                continue; /* once more: the same answer, nothing lost */
            break;
        }
        if (rc == 0) {
            /* A clean end is the end after a footer. */
            CHECK(saw_footer);
        } else {
            /* Follow mode never takes the end of the input for a cut. */
            CHECK(!follow || rc != -PYPROF_R_TRUNCATED);
            CHECK(rc == -PYPROF_R_TRUNCATED || rc == -PYPROF_R_CORRUPT || rc == -PYPROF_R_IO ||
                  rc == -PYPROF_R_NOMEM);
            CHECK(pyprof_reader_strerror(-rc) != NULL);
        }
        break;
    }
    pyprof_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    read_log(data, size, 0);
    read_log(data, size, 1);
    /* An empty log may also come as a null pointer. */
    if (size == 0)
        read_log(NULL, 0, 0);

    /* The same bytes as the decompressed content of a log.  Inputs beyond 1 MiB are left
     * to the first path only; they add time, not coverage. */
    if (size > (1u << 20))
        return 0;
    size_t cap = LZ4F_compressFrameBound(size, NULL);
    uint8_t *frame = malloc(cap);
    if (!frame)
        return 0;
    size_t n = LZ4F_compressFrame(frame, cap, data, size, NULL);
    if (!LZ4F_isError(n))
        read_log(frame, n, 0);
    free(frame);
    return 0;
}
