/*
 * reader: reads a pyprof log record by record.  See include/pyprof/reader.h for the
 * interface and include/pyprof/format.h for the format.
 *
 * Design.  Bytes flow through two buffers:
 *
 *     file or memory --(in: raw LZ4 bytes)--> LZ4F_decompress --(out: log bytes)--> records
 *
 * `in` is the caller's memory for an in-memory log, or a READER_IN_CHUNK buffer refilled
 * with read(2) for a file.  `out` holds decompressed bytes; [out_pos, out_len) is what has
 * not been parsed yet.  A record is parsed in place with rec_parse_envelope, so its strings
 * point into `out`; that is why a record is only valid until the next call.  When the
 * unparsed tail is an incomplete record, the tail is moved to the front of `out` and more
 * is decompressed behind it; a record larger than `out` grows it, up to READER_MAX_RECORD,
 * beyond which the length itself is taken as corruption (the writer never produces records
 * anywhere near that size, and a corrupt length must not make us allocate gigabytes).
 *
 * LZ4F keeps its own copy of the history that linked blocks refer to (we never set
 * stableDst), so moving bytes inside `out` between calls is safe.  We give LZ4F no more
 * input than it asks for (its return value), which ends every call at a block boundary:
 * a damaged block then cannot take down the good blocks decoded in the same call, which
 * are all delivered before CORRUPT.  A log may be several LZ4 frames back to back (a
 * writer may end a frame and start another): LZ4F_decompress returns 0 at the end of a
 * frame and the same context then decodes the next one.  After the footer the rest of
 * the stream is still decoded, for the last frame's content checksum.
 *
 * A cut inside a block.  LZ4F decodes a compressed block only once all of it has arrived,
 * so a log cut in the middle of one (a torn write, a copy of a log still being written)
 * would lose the whole block, possibly the first and only one.  So the reader also follows
 * the frame structure itself (lz4_track: frame headers, block sizes, checksums) and keeps a
 * copy of the current block's compressed bytes; when the input ends inside a compressed
 * block, it decodes what is there with LZ4_decompress_safe_partial_usingDict, the previous
 * 64 KiB of output as the dictionary (which is why `out` keeps that much history before
 * out_pos).  Those bytes are not checksummed, but a cut is not damage: the records that
 * come out whole are delivered, and the last, cut one makes the log TRUNCATED.
 *
 * Errors are sticky: after the first failure every later call returns the same code.  A
 * log that simply stops (no footer, a partial frame, block or record) is TRUNCATED, never
 * CORRUPT: that is what a killed process leaves, and everything before the cut is good.
 *
 * Follow mode (a log still being written).  The end of the input is then "not yet": the
 * call returns AGAIN, which is not sticky, and nothing is given up.  LZ4F keeps the part
 * of a block or frame header it was given, `trk` keeps its place in the frame, the
 * unparsed tail of `out` keeps the part of a record, and the next call reads the file
 * again from where it stopped (read(2) at the file position, which only the reader
 * moves).  A cut block is never decoded in pieces then: its records come whole once the
 * writer has written the rest of it.  (A file whose cut block was decoded in part before
 * follow mode began, by an open that needed it for the header, has that part dropped from
 * the block's whole output: recovered_skip.)  After the footer, the end of the input is
 * the end: a frame end the writer has not written yet loses nothing.
 *
 * Unknown record types are returned with only `type` filled (the payload is skipped), so a
 * caller can count them; format.h's compatibility rule says readers skip them.
 */
#include <pyprof/reader.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lz4.h>
#include <lz4frame.h>

#include "common/record.h"

/* A SNAPSHOT with more threads than a Linux process can have (PID_MAX_LIMIT) is
 * corruption. */
#define READER_MAX_SNAP_THREADS (4u << 20)
/* A record longer than this is corruption, not data. */
#define READER_MAX_RECORD (64u << 20)
/* Bytes read from a file at a time. */
#define READER_IN_CHUNK (256u << 10)
/* Initial size of the decompressed-bytes buffer. */
#define READER_OUT_INITIAL (256u << 10)

/* The LZ4 frame format's pieces (lz4's doc/lz4_Frame_format.md), as lz4_track walks them. */
#define LZ4_FRAME_MAGIC 0x184D2204u
#define LZ4_HISTORY (64u << 10) /* how far back a linked block's matches reach */
#define LZ4_FLG_BLOCK_INDEP 0x20
#define LZ4_FLG_BLOCK_CHECKSUM 0x10
#define LZ4_FLG_CONTENT_SIZE 0x08
#define LZ4_FLG_CONTENT_CHECKSUM 0x04
#define LZ4_FLG_DICT_ID 0x01

enum lz4_track_state {
    TRK_MAGIC,      /* 4 bytes */
    TRK_SKIP_SIZE,  /* 4 bytes of a skippable frame's size */
    TRK_SKIP,       /* its data */
    TRK_FLG_BD,     /* 2 bytes */
    TRK_HDR_REST,   /* content size, dictionary id, header checksum */
    TRK_BLOCK_SIZE, /* 4 bytes; 0 ends the frame */
    TRK_BLOCK_DATA,
    TRK_BLOCK_CRC,   /* 4 bytes */
    TRK_CONTENT_CRC, /* 4 bytes */
};

/* Where the input is in the LZ4 frame structure, and the current block's bytes. */
typedef struct lz4_track {
    enum lz4_track_state state;
    uint8_t field[16]; /* a small field being gathered */
    size_t field_len, field_need;
    uint8_t flg;
    size_t block_max;  /* from the frame's BD byte */
    size_t block_size, block_have;
    int block_stored;  /* the block is stored uncompressed (LZ4F streams those itself) */
    uint8_t *block;    /* the block's compressed bytes so far */
    size_t block_cap;
    uint64_t skip_left;
    uint64_t frame_start; /* absolute decompressed offset where this frame's output starts */
    int lost;             /* the input stopped making sense: LZ4F will say so */
} lz4_track;

/* One event of a BATCH: a SAMPLE (a..e: thread_idx, stack_id, cpu_us, nstack_id,
 * native_flags) or an RSS point (a: rss_bytes). */
struct reader_event {
    int64_t t_us;
    uint64_t a, b, c, d, e;
    uint8_t type; /* PYPROF_REC_SAMPLE or PYPROF_REC_RSS */
};

struct pyprof_reader {
    int fd; /* -1 for an in-memory log */
    const uint8_t *in;
    size_t in_len, in_pos;
    uint8_t *in_buf; /* owned, for a file */
    int in_eof;      /* the source has no more bytes */

    LZ4F_dctx *dctx;
    size_t lz4_next; /* input LZ4F wants next: the rest of this block and the next header */

    lz4_track trk;
    int recovered; /* the cut block has been decoded */
    /* Bytes of the cut block's output already decoded by reader_recover that LZ4F will
     * output again once the rest of the block arrives (follow mode turned on after a cut
     * was met): they are dropped from its output. */
    size_t recovered_skip;

    uint8_t *out;
    size_t out_cap, out_pos, out_len;
    uint64_t out_base; /* absolute decompressed offset of out[0] */
    uint64_t consumed; /* decompressed bytes parsed, magic included */

    int err;  /* 0, or the negative code every call now returns */
    int done; /* 1: the footer has been returned; 2: and the stream after it checked */
    uint64_t t_acc; /* running sum of dt_us, kept unsigned so bad input cannot overflow */

    pyprof_header hdr;
    uint8_t *hdr_copy; /* the header payload, which hdr's strings point into */
    pyprof_str *argv;

    pyprof_frame *frames;
    size_t frames_cap;
    uint32_t *runs; /* a native STACK's run lengths (frames_cap of them) */
    size_t runs_cap;
    pyprof_snap_thread *snap; /* a SNAPSHOT's threads */
    size_t snap_cap;
    /* A BATCH record's events, decoded whole when it is read and returned one by one
     * as the SAMPLE and RSS records they stand for. */
    struct reader_event *bev;
    size_t bev_cap, bev_n, bev_pos;
    int follow; /* pyprof_reader_follow: the end of the input is "not yet" */
    /* Native records, bounded by format.h, so a fixed room each. */
    pyprof_segment segs[PYPROF_MODULE_SEG_MAX];
    uint64_t addrs[PYPROF_NSTACK_MAX];
};

char *pyprof_str_dup(pyprof_str s)
{
    char *c = malloc(s.len + 1);
    if (!c)
        return NULL;
    for (size_t i = 0; i < s.len; i++)
        c[i] = s.s[i] ? s.s[i] : '?';
    c[s.len] = 0;
    return c;
}

const char *pyprof_reader_strerror(int err)
{
    static const char *const text[] = {
#define PYPROF_X_TEXT(name, t) [PYPROF_R_##name] = t,
        PYPROF_READER_ERRORS(PYPROF_X_TEXT)
#undef PYPROF_X_TEXT
    };
    if (err < 0)
        err = -err;
    if ((size_t)err >= sizeof text / sizeof text[0] || !text[err])
        return "unknown reader error";
    return text[err];
}

/* Reads more raw bytes from the file.  Returns 1 when some arrived, 0 at end of file,
 * -PYPROF_R_IO on a read error.  In follow mode the end of a file is only "for now": the
 * next call reads again. */
static int reader_read_input(pyprof_reader *r)
{
    if (r->in_eof)
        return 0;
    if (r->fd < 0) {
        r->in_eof = 1;
        return 0;
    }
    /* Keep unconsumed bytes: the magic check asks for 4 bytes that may arrive in pieces. */
    size_t keep = r->in_len - r->in_pos;
    memmove(r->in_buf, r->in_buf + r->in_pos, keep);
    r->in_len = keep;
    r->in_pos = 0;
    for (;;) {
        ssize_t n = read(r->fd, r->in_buf + r->in_len, READER_IN_CHUNK - r->in_len);
        if (n > 0) {
            r->in_len += (size_t)n;
            return 1;
        }
        if (n == 0) {
            r->in_eof = !r->follow;
            return 0;
        }
        if (errno != EINTR)
            return -PYPROF_R_IO;
    }
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void track_expect(lz4_track *t, enum lz4_track_state state, size_t need)
{
    t->state = state;
    t->field_len = 0;
    t->field_need = need;
}

/* The current block's data is complete: its checksum or the next block's size follows. */
static void track_block_end(lz4_track *t)
{
    if (t->flg & LZ4_FLG_BLOCK_CHECKSUM)
        track_expect(t, TRK_BLOCK_CRC, 4);
    else
        track_expect(t, TRK_BLOCK_SIZE, 4);
}

/* A small field is complete: move on.  `out_abs` is the decompressed offset so far. */
static void track_field(lz4_track *t, uint64_t out_abs)
{
    const uint8_t *f = t->field;
    switch (t->state) {
    case TRK_MAGIC:
        if (le32(f) == LZ4_FRAME_MAGIC)
            track_expect(t, TRK_FLG_BD, 2);
        else if ((le32(f) & 0xfffffff0u) == 0x184D2A50u)
            track_expect(t, TRK_SKIP_SIZE, 4);
        else
            t->lost = 1;
        break;
    case TRK_SKIP_SIZE:
        t->skip_left = le32(f);
        track_expect(t, t->skip_left ? TRK_SKIP : TRK_MAGIC, t->skip_left ? 0 : 4);
        break;
    case TRK_FLG_BD: {
        unsigned bsid = (f[1] >> 4) & 7;
        if (bsid < 4) {
            t->lost = 1;
            break;
        }
        t->flg = f[0];
        t->block_max = (size_t)1 << (8 + 2 * bsid); /* 4: 64 KiB ... 7: 4 MiB */
        size_t rest = 1 + (t->flg & LZ4_FLG_CONTENT_SIZE ? 8 : 0) +
                      (t->flg & LZ4_FLG_DICT_ID ? 4 : 0);
        track_expect(t, TRK_HDR_REST, rest);
        break;
    }
    case TRK_HDR_REST:
        t->frame_start = out_abs;
        track_expect(t, TRK_BLOCK_SIZE, 4);
        break;
    case TRK_BLOCK_SIZE: {
        uint32_t v = le32(f);
        if (v == 0) {
            if (t->flg & LZ4_FLG_CONTENT_CHECKSUM)
                track_expect(t, TRK_CONTENT_CRC, 4);
            else
                track_expect(t, TRK_MAGIC, 4);
            break;
        }
        t->block_size = v & 0x7fffffffu;
        t->block_stored = (int)(v >> 31);
        t->block_have = 0;
        if (t->block_size > t->block_max) {
            t->lost = 1;
            break;
        }
        if (t->block_size == 0) {
            /* An empty stored block (0x80000000): valid, no data, and no buffer needed
             * (t->block may still be NULL). */
            track_block_end(t);
            break;
        }
        if (t->block_size > t->block_cap) {
            uint8_t *b = realloc(t->block, t->block_size);
            if (!b) {
                t->lost = 1; /* only the recovery of a cut block is given up */
                break;
            }
            t->block = b;
            t->block_cap = t->block_size;
        }
        track_expect(t, TRK_BLOCK_DATA, 0);
        break;
    }
    case TRK_BLOCK_CRC:
        track_expect(t, TRK_BLOCK_SIZE, 4);
        break;
    case TRK_CONTENT_CRC:
        track_expect(t, TRK_MAGIC, 4);
        break;
    default:
        break;
    }
}

/* Follows the `n` raw bytes just given to LZ4F. */
static void track_bytes(lz4_track *t, const uint8_t *p, size_t n, uint64_t out_abs)
{
    while (n && !t->lost) {
        size_t take;
        if (t->state == TRK_BLOCK_DATA) {
            take = t->block_size - t->block_have;
            if (take > n)
                take = n;
            /* take > 0: an empty block never enters TRK_BLOCK_DATA, and the block
             * buffer is allocated for every other one. */
            memcpy(t->block + t->block_have, p, take);
            t->block_have += take;
            if (t->block_have == t->block_size)
                track_block_end(t);
        } else if (t->state == TRK_SKIP) {
            take = t->skip_left < n ? (size_t)t->skip_left : n;
            t->skip_left -= take;
            if (!t->skip_left)
                track_expect(t, TRK_MAGIC, 4);
        } else {
            take = t->field_need - t->field_len;
            if (take > n)
                take = n;
            memcpy(t->field + t->field_len, p, take);
            t->field_len += take;
            if (t->field_len == t->field_need)
                track_field(t, out_abs);
        }
        p += take;
        n -= take;
    }
}

/* The input ended inside a compressed block: decodes as much of it as arrived.  Returns 1
 * when that added bytes to `out`, else 0, or a negative code. */
static int reader_recover(pyprof_reader *r)
{
    lz4_track *t = &r->trk;
    if (r->recovered || r->done || t->lost || t->block_stored || !t->block_have ||
        (t->state != TRK_BLOCK_DATA && t->state != TRK_BLOCK_CRC))
        return 0;
    r->recovered = 1;
    if (r->out_cap - r->out_len < t->block_max) {
        uint8_t *p = realloc(r->out, r->out_len + t->block_max);
        if (!p)
            return -PYPROF_R_NOMEM;
        r->out = p;
        r->out_cap = r->out_len + t->block_max;
    }
    /* A linked block may refer to the last 64 KiB of its frame's output. */
    const char *dict = NULL;
    int dict_len = 0;
    if (!(t->flg & LZ4_FLG_BLOCK_INDEP)) {
        uint64_t end = r->out_base + r->out_len;
        uint64_t start = end > LZ4_HISTORY ? end - LZ4_HISTORY : 0;
        if (start < t->frame_start)
            start = t->frame_start;
        if (start < r->out_base)
            start = r->out_base;
        dict = (const char *)r->out + (start - r->out_base);
        dict_len = (int)(end - start);
    }
    char *dst = (char *)r->out + r->out_len;
    const char *src = (const char *)t->block;
    int have = (int)t->block_have, max = (int)t->block_max;
    int got = LZ4_decompress_safe_partial_usingDict(src, dst, have, max, max, dict, dict_len);
    if (got < 0) {
        /* The cut fell inside a sequence the decoder cannot finish: find the longest
         * output it can produce, which is everything before that sequence. */
        int lo = 0, hi = max;
        got = 0;
        while (lo < hi) {
            int mid = lo + (hi - lo + 1) / 2;
            int n = LZ4_decompress_safe_partial_usingDict(src, dst, have, mid, max, dict,
                                                          dict_len);
            if (n >= 0) {
                lo = mid;
                got = n;
            } else {
                hi = mid - 1;
            }
        }
        if (got > 0)
            got = LZ4_decompress_safe_partial_usingDict(src, dst, have, lo, max, dict,
                                                        dict_len);
    }
    if (got <= 0)
        return 0;
    r->out_len += (size_t)got;
    r->recovered_skip = (size_t)got;
    return 1;
}

/* Decompresses more bytes behind the unparsed tail of `out`.  Returns 1 when some arrived,
 * 0 when the input is exhausted, or a negative code: -PYPROF_R_AGAIN in follow mode,
 * where a cut block is not decoded in pieces (LZ4F keeps what arrived of it, and decodes
 * it whole once the rest is there). */
static int reader_fill(pyprof_reader *r)
{
    /* Keep LZ4_HISTORY bytes before out_pos: reader_recover's dictionary. */
    if (r->out_pos > LZ4_HISTORY) {
        size_t drop = r->out_pos - LZ4_HISTORY;
        memmove(r->out, r->out + drop, r->out_len - drop);
        r->out_len -= drop;
        r->out_pos -= drop;
        r->out_base += drop;
    }
    if (r->out_len == r->out_cap) {
        /* One incomplete record fills the buffer: it is big, so make room for it. */
        size_t cap = r->out_cap * 2;
        if (cap > READER_MAX_RECORD + 2 * REC_VARINT_MAX)
            cap = READER_MAX_RECORD + 2 * REC_VARINT_MAX;
        if (cap <= r->out_cap)
            return -PYPROF_R_CORRUPT;
        uint8_t *p = realloc(r->out, cap);
        if (!p)
            return -PYPROF_R_NOMEM;
        r->out = p;
        r->out_cap = cap;
    }
    for (;;) {
        if (r->in_pos == r->in_len) {
            int rc = reader_read_input(r);
            if (rc == 0)
                return r->follow ? -PYPROF_R_AGAIN : reader_recover(r);
            if (rc < 0)
                return rc;
        }
        /* Never more input than LZ4F asked for (see the top of the file). */
        size_t src = r->in_len - r->in_pos;
        size_t want = r->lz4_next ? r->lz4_next : 4;
        if (src > want)
            src = want;
        size_t dst = r->out_cap - r->out_len;
        size_t ret = LZ4F_decompress(r->dctx, r->out + r->out_len, &dst, r->in + r->in_pos,
                                     &src, NULL);
        if (LZ4F_isError(ret))
            return -PYPROF_R_CORRUPT;
        track_bytes(&r->trk, r->in + r->in_pos, src, r->out_base + r->out_len);
        if (r->recovered_skip && dst) {
            /* The block reader_recover decoded in part, now whole: keep only what is
             * new. */
            size_t k = dst < r->recovered_skip ? dst : r->recovered_skip;
            memmove(r->out + r->out_len, r->out + r->out_len + k, dst - k);
            dst -= k;
            r->recovered_skip -= k;
            if (!r->recovered_skip)
                r->recovered = 0;
        }
        r->in_pos += src;
        r->out_len += dst;
        r->lz4_next = ret;
        if (dst > 0)
            return 1;
        /* No output yet: LZ4F consumed a frame header, a block header or a frame end.  It
         * always consumes something when it has input and room, but do not spin if a
         * future version did not. */
        if (src == 0 && r->in_pos < r->in_len)
            return -PYPROF_R_CORRUPT;
    }
}

/* Makes at least `want` unparsed bytes available.  Returns 1, 0 when the log ends first,
 * or a negative code. */
static int reader_want(pyprof_reader *r, size_t want)
{
    while (r->out_len - r->out_pos < want) {
        int rc = reader_fill(r);
        if (rc <= 0)
            return rc;
    }
    return 1;
}

/* Takes the next record's envelope.  Returns 1, or a negative code (TRUNCATED when the log
 * ends before a whole record). */
static int reader_envelope(pyprof_reader *r, uint8_t *type, const uint8_t **payload,
                           size_t *plen)
{
    for (;;) {
        size_t total;
        int rc = rec_parse_envelope(r->out + r->out_pos, r->out_len - r->out_pos,
                                    READER_MAX_RECORD, type, payload, plen, &total);
        if (rc > 0) {
            r->out_pos += total;
            r->consumed += total;
            return 1;
        }
        if (rc < 0)
            return -PYPROF_R_CORRUPT;
        rc = reader_fill(r);
        if (rc < 0)
            return rc;
        if (rc == 0)
            return -PYPROF_R_TRUNCATED;
    }
}

/* rec_get_uvarint with the one-byte case inline: most fields of a SAMPLE are small. */
static inline uint64_t get_uv(rec_in *in)
{
    if (in->p < in->end && *in->p < 0x80)
        return *in->p++;
    return rec_get_uvarint(in);
}

static inline int64_t get_sv(rec_in *in)
{
    uint64_t u = get_uv(in);
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static pyprof_str reader_str(rec_in *in)
{
    pyprof_str s;
    s.s = (const char *)rec_get_str(in, &s.len);
    return s;
}

/* Decodes the header payload (already copied into r->hdr_copy). */
static int reader_parse_header(pyprof_reader *r, size_t len)
{
    pyprof_header *h = &r->hdr;
    rec_in in;
    rec_in_init(&in, r->hdr_copy, len);
    /* The version comes first and is checked before anything else, because a newer
     * version may have changed everything after it. */
    h->format_version = rec_get_uvarint(&in);
    if (in.bad || h->format_version == 0)
        return -PYPROF_R_CORRUPT;
    if (h->format_version > PYPROF_FORMAT_VERSION)
        return -PYPROF_R_NEWER;
    h->pid = rec_get_uvarint(&in);
    h->ppid = rec_get_uvarint(&in);
    h->run_id = reader_str(&in);
    h->start_unix_ns = rec_get_uvarint(&in);
    h->host = reader_str(&in);
    h->exe = reader_str(&in);
    h->argc = rec_get_uvarint(&in);
    /* Every argument takes at least one byte, so a larger count is a lie. */
    if (in.bad || h->argc > rec_in_left(&in))
        return -PYPROF_R_CORRUPT;
    if (h->argc) {
        r->argv = calloc((size_t)h->argc, sizeof *r->argv);
        if (!r->argv)
            return -PYPROF_R_NOMEM;
    }
    for (uint64_t i = 0; i < h->argc; i++)
        r->argv[i] = reader_str(&in);
    h->argv = r->argv;
    h->python_version = reader_str(&in);
    h->python_hex = rec_get_uvarint(&in);
    h->period_ns = rec_get_uvarint(&in);
    h->clock = rec_get_u8(&in);
    h->timer = reader_str(&in);
    h->max_depth = rec_get_uvarint(&in);
    h->flags = rec_get_uvarint(&in);
    h->window = rec_get_uvarint(&in);
    if (in.bad)
        return -PYPROF_R_CORRUPT;
    /* The rotated series' fields, absent in logs of older writers. */
    h->seq = h->series_start_unix_ns = h->offset_us = 0;
    if (in.p < in.end) {
        h->seq = rec_get_uvarint(&in);
        h->series_start_unix_ns = rec_get_uvarint(&in);
        h->offset_us = rec_get_uvarint(&in);
        /* Times are kept in int64_t microseconds once shifted by the offset. */
        if (in.bad || h->offset_us > (uint64_t)INT64_MAX / 4)
            return -PYPROF_R_CORRUPT;
    }
    return 0;
}

/* Checks that the raw bytes start like an LZ4 frame (or a skippable frame, which lz4
 * itself accepts).  Returns 0 or a negative code. */
static int reader_check_lz4(pyprof_reader *r)
{
    static const uint8_t lz4_magic[4] = {0x04, 0x22, 0x4d, 0x18};
    while (r->in_len - r->in_pos < 4) {
        int rc = reader_read_input(r);
        if (rc < 0)
            return rc;
        if (rc == 0)
            break;
    }
    const uint8_t *p = r->in + r->in_pos;
    size_t n = r->in_len - r->in_pos;
    if (n >= 4) {
        if (!memcmp(p, lz4_magic, 4))
            return 0;
        if ((p[0] & 0xf0) == 0x50 && p[1] == 0x2a && p[2] == 0x4d && p[3] == 0x18)
            return 0;
        return -PYPROF_R_NOT_LZ4;
    }
    /* Fewer than 4 bytes in all: a log cut before its first byte of data, or not LZ4. */
    return memcmp(p, lz4_magic, n) ? -PYPROF_R_NOT_LZ4 : -PYPROF_R_TRUNCATED;
}

/* The common part of both opens: checks LZ4, the magic and the header. */
static int reader_start(pyprof_reader *r)
{
    if (LZ4F_isError(LZ4F_createDecompressionContext(&r->dctx, LZ4F_VERSION)))
        return -PYPROF_R_NOMEM;
    track_expect(&r->trk, TRK_MAGIC, 4);
    r->out_cap = READER_OUT_INITIAL;
    r->out = malloc(r->out_cap);
    if (!r->out)
        return -PYPROF_R_NOMEM;

    int rc = reader_check_lz4(r);
    if (rc < 0)
        return rc;
    rc = reader_want(r, PYPROF_MAGIC_LEN);
    if (rc < 0)
        return rc;
    size_t have = r->out_len - r->out_pos;
    if (have > PYPROF_MAGIC_LEN)
        have = PYPROF_MAGIC_LEN;
    if (memcmp(r->out + r->out_pos, PYPROF_MAGIC, have))
        return -PYPROF_R_NOT_PYPROF;
    if (rc == 0)
        return -PYPROF_R_TRUNCATED; /* a prefix of the magic, then nothing */
    r->out_pos += PYPROF_MAGIC_LEN;
    r->consumed += PYPROF_MAGIC_LEN;

    uint8_t type;
    const uint8_t *payload;
    size_t plen;
    rc = reader_envelope(r, &type, &payload, &plen);
    if (rc < 0)
        return rc;
    if (type != PYPROF_REC_HEADER)
        return -PYPROF_R_CORRUPT;
    /* Copy it: the header must outlive the buffer that the next records reuse. */
    r->hdr_copy = malloc(plen ? plen : 1);
    if (!r->hdr_copy)
        return -PYPROF_R_NOMEM;
    memcpy(r->hdr_copy, payload, plen);
    return reader_parse_header(r, plen);
}

static pyprof_reader *reader_finish_open(pyprof_reader *r, int *err)
{
    int rc = reader_start(r);
    if (rc < 0) {
        pyprof_reader_close(r);
        if (err)
            *err = -rc;
        return NULL;
    }
    if (err)
        *err = PYPROF_R_OK;
    return r;
}

pyprof_reader *pyprof_reader_open(const char *path, int *err)
{
    pyprof_reader *r = calloc(1, sizeof *r);
    if (!r) {
        if (err)
            *err = PYPROF_R_NOMEM;
        return NULL;
    }
    r->in_buf = malloc(READER_IN_CHUNK);
    if (!r->in_buf) {
        free(r);
        if (err)
            *err = PYPROF_R_NOMEM;
        return NULL;
    }
    r->in = r->in_buf;
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        r->fd = -1;
        pyprof_reader_close(r);
        if (err)
            *err = PYPROF_R_IO;
        return NULL;
    }
    return reader_finish_open(r, err);
}

pyprof_reader *pyprof_reader_open_mem(const void *data, size_t len, int *err)
{
    pyprof_reader *r = calloc(1, sizeof *r);
    if (!r) {
        if (err)
            *err = PYPROF_R_NOMEM;
        return NULL;
    }
    /* `in` is never NULL, even for an empty log given as (NULL, 0): the input is
     * addressed as in + in_pos, and an offset on a null pointer is undefined even when it
     * is zero. */
    static const uint8_t no_bytes[1];
    r->fd = -1;
    r->in = data ? data : no_bytes;
    r->in_len = data ? len : 0;
    r->in_eof = 1;
    return reader_finish_open(r, err);
}

const pyprof_header *pyprof_reader_header(const pyprof_reader *r) { return &r->hdr; }

uint64_t pyprof_reader_offset(const pyprof_reader *r) { return r->consumed; }

/* A native log's tail of a STACK: the run lengths, which must each hold a frame and add
 * up to the stack's frames.  Absent (an older writer, a non-native log): no runs. */
static int reader_parse_runs(pyprof_reader *r, rec_in *in, pyprof_stack_rec *s)
{
    s->nruns = 0;
    s->runs = NULL;
    if (!(r->hdr.flags & PYPROF_HDR_NATIVE) || in->bad || in->p >= in->end)
        return 0;
    uint64_t nruns = rec_get_uvarint(in);
    /* A run holds a frame and takes a byte. */
    if (in->bad || nruns > s->nframes || nruns > rec_in_left(in))
        return -PYPROF_R_CORRUPT;
    if (nruns > r->runs_cap) {
        uint32_t *p = realloc(r->runs, (size_t)nruns * sizeof *p);
        if (!p)
            return -PYPROF_R_NOMEM;
        r->runs = p;
        r->runs_cap = (size_t)nruns;
    }
    uint64_t sum = 0;
    for (uint64_t i = 0; i < nruns; i++) {
        uint64_t len = rec_get_uvarint(in);
        if (in->bad || len == 0 || len > s->nframes - sum)
            return -PYPROF_R_CORRUPT;
        r->runs[i] = (uint32_t)len;
        sum += len;
    }
    if (sum != s->nframes)
        return -PYPROF_R_CORRUPT;
    s->nruns = nruns;
    s->runs = nruns ? r->runs : NULL;
    return 0;
}

static int reader_parse_module(pyprof_reader *r, rec_in *in, pyprof_module_rec *m)
{
    m->module_id = rec_get_uvarint(in);
    m->path = reader_str(in);
    m->base = rec_get_uvarint(in);
    m->build_id = reader_str(in);
    m->nseg = rec_get_uvarint(in);
    /* A segment takes four bytes at least. */
    if (in->bad || m->build_id.len > PYPROF_BUILD_ID_MAX || m->nseg > PYPROF_MODULE_SEG_MAX ||
        m->nseg > rec_in_left(in) / 4)
        return -PYPROF_R_CORRUPT;
    for (uint64_t i = 0; i < m->nseg; i++) {
        r->segs[i].vaddr = rec_get_uvarint(in);
        r->segs[i].memsz = rec_get_uvarint(in);
        r->segs[i].file_offset = rec_get_uvarint(in);
        r->segs[i].flags = rec_get_uvarint(in);
    }
    m->segs = r->segs;
    m->dev = rec_get_uvarint(in);
    m->ino = rec_get_uvarint(in);
    m->size = rec_get_uvarint(in);
    m->mtime_ns = rec_get_uvarint(in);
    return 0;
}

static int reader_parse_nstack(pyprof_reader *r, rec_in *in, pyprof_nstack_rec *n)
{
    n->nstack_id = rec_get_uvarint(in);
    n->n = rec_get_uvarint(in);
    if (in->bad || n->n > PYPROF_NSTACK_MAX || n->n > rec_in_left(in))
        return -PYPROF_R_CORRUPT;
    for (uint64_t i = 0; i < n->n; i++)
        r->addrs[i] = rec_get_uvarint(in);
    n->addrs = r->addrs;
    return 0;
}

static int reader_parse_stack(pyprof_reader *r, rec_in *in, pyprof_stack_rec *s)
{
    s->stack_id = rec_get_uvarint(in);
    s->nframes = rec_get_uvarint(in);
    /* A frame takes at least two bytes. */
    if (in->bad || s->nframes > rec_in_left(in) / 2)
        return -PYPROF_R_CORRUPT;
    if (s->nframes > r->frames_cap) {
        size_t cap = r->frames_cap ? r->frames_cap : 64;
        while (cap < s->nframes)
            cap *= 2;
        pyprof_frame *f = realloc(r->frames, cap * sizeof *f);
        if (!f)
            return -PYPROF_R_NOMEM;
        r->frames = f;
        r->frames_cap = cap;
    }
    for (uint64_t i = 0; i < s->nframes; i++) {
        r->frames[i].code_id = rec_get_uvarint(in);
        r->frames[i].line = rec_get_svarint(in);
    }
    s->frames = r->frames;
    return reader_parse_runs(r, in, s);
}

/* A span's string: at most `max` bytes, else the record is corrupt. */
static int reader_span_str(rec_in *in, pyprof_str *out, size_t max)
{
    *out = reader_str(in);
    return in->bad || out->len > max ? -PYPROF_R_CORRUPT : 0;
}

static int reader_parse_span_start(rec_in *in, pyprof_span_start_rec *s)
{
    s->span_id = rec_get_uvarint(in);
    uint64_t t = rec_get_uvarint(in);
    s->thread_idx = rec_get_uvarint(in);
    s->parent_span_id = rec_get_uvarint(in);
    if (in->bad || s->span_id == 0 || t > (uint64_t)INT64_MAX / 4)
        return -PYPROF_R_CORRUPT;
    s->t_us = (int64_t)t;
    if (reader_span_str(in, &s->name, PYPROF_SPAN_NAME_MAX) < 0 ||
        reader_span_str(in, &s->trace_id, PYPROF_SPAN_ID_MAX) < 0 ||
        reader_span_str(in, &s->parent_id, PYPROF_SPAN_ID_MAX) < 0 ||
        reader_span_str(in, &s->base_id, PYPROF_SPAN_ID_MAX) < 0 ||
        reader_span_str(in, &s->info, PYPROF_SPAN_INFO_MAX) < 0)
        return -PYPROF_R_CORRUPT;
    return 0;
}

static int reader_parse_span_stop(rec_in *in, pyprof_span_stop_rec *s)
{
    s->span_id = rec_get_uvarint(in);
    uint64_t t = rec_get_uvarint(in);
    s->thread_idx = rec_get_uvarint(in);
    if (in->bad || s->span_id == 0 || t > (uint64_t)INT64_MAX / 4)
        return -PYPROF_R_CORRUPT;
    s->t_us = (int64_t)t;
    return reader_span_str(in, &s->info, PYPROF_SPAN_INFO_MAX);
}

static int reader_parse_snapshot(pyprof_reader *r, rec_in *in, pyprof_snapshot_rec *s)
{
    s->snapshot_id = rec_get_uvarint(in);
    uint64_t t = rec_get_uvarint(in);
    s->nthreads = rec_get_uvarint(in);
    /* A thread takes four bytes at least (three varints and its state byte). */
    if (in->bad || t > (uint64_t)INT64_MAX / 4 || s->nthreads > READER_MAX_SNAP_THREADS ||
        s->nthreads > rec_in_left(in) / 4)
        return -PYPROF_R_CORRUPT;
    s->t_us = (int64_t)t;
    if (s->nthreads > r->snap_cap) {
        size_t cap = r->snap_cap ? r->snap_cap : 16;
        while (cap < s->nthreads)
            cap *= 2;
        pyprof_snap_thread *p = realloc(r->snap, cap * sizeof *p);
        if (!p)
            return -PYPROF_R_NOMEM;
        r->snap = p;
        r->snap_cap = cap;
    }
    for (uint64_t i = 0; i < s->nthreads; i++) {
        r->snap[i].thread_idx = rec_get_uvarint(in);
        r->snap[i].stack_id = rec_get_uvarint(in);
        r->snap[i].flags = rec_get_uvarint(in);
        r->snap[i].os_state = rec_get_u8(in);
    }
    s->threads = s->nthreads ? r->snap : NULL;
    return in->bad ? -PYPROF_R_CORRUPT : 0;
}

static void reader_parse_footer(rec_in *in, pyprof_footer *f, int native)
{
    f->end_unix_ns = rec_get_uvarint(in);
    f->duration_ns = rec_get_uvarint(in);
    f->samples = rec_get_uvarint(in);
    f->signals = rec_get_uvarint(in);
    uint64_t ndrop = rec_get_uvarint(in);
    for (uint64_t i = 0; i < ndrop && !in->bad; i++) {
        uint64_t reason = rec_get_uvarint(in);
        uint64_t count = rec_get_uvarint(in);
        /* A reason this reader does not know (added later) is not counted under a known
         * one. */
        if (reason < PYPROF_DROP_COUNT)
            f->dropped[reason] += count;
    }
    f->end = rec_get_uvarint(in);
    f->status_known = rec_get_u8(in);
    f->status = rec_get_svarint(in);
    f->achieved_hz_milli = rec_get_uvarint(in);
    f->lib_cpu_ns = rec_get_uvarint(in);
    if (in->bad || in->p >= in->end)
        return; /* a footer without the optional cost section */
    /* Read from a copy: a section this reader cannot parse is skipped, never an error. */
    rec_in c = *in;
    f->handler_ns = rec_get_uvarint(&c);
    f->writer_ns = rec_get_uvarint(&c);
    uint64_t ntime = rec_get_uvarint(&c);
    if (c.bad || ntime > PYPROF_COST_MAX)
        return;
    for (uint64_t t = 0; t < ntime; t++)
        f->cost_time_bound[t] = rec_get_uvarint(&c);
    uint64_t ndepth = rec_get_uvarint(&c);
    if (c.bad || ndepth > PYPROF_COST_MAX)
        return;
    for (uint64_t d = 0; d < ndepth && !c.bad; d++) {
        f->cost_depth_bound[d] = rec_get_uvarint(&c);
        for (uint64_t t = 0; t < ntime; t++)
            f->cost[d][t] = rec_get_uvarint(&c);
    }
    if (c.bad) {
        f->handler_ns = f->writer_ns = 0;
        return;
    }
    f->cost_ntime = (uint32_t)ntime;
    f->cost_ndepth = (uint32_t)ndepth;
    f->has_cost = 1;
    if (c.p >= c.end)
        return; /* a footer without the timer section */
    uint64_t timer_ns = rec_get_uvarint(&c), untimed_ns = rec_get_uvarint(&c);
    if (c.bad)
        return;
    f->timer_ns = timer_ns;
    f->untimed_ns = untimed_ns;
    f->has_timers = 1;
    if (native) {
        if (c.p >= c.end)
            return; /* a footer without the native section */
        uint64_t ok = rec_get_uvarint(&c), truncated = rec_get_uvarint(&c);
        uint64_t skipped = rec_get_uvarint(&c), native_ns = rec_get_uvarint(&c);
        if (c.bad)
            return;
        f->native_ok = ok;
        f->native_truncated = truncated;
        f->native_skipped = skipped;
        f->native_ns = native_ns;
        f->has_native = 1;
    }
    if (c.p >= c.end)
        return; /* a footer without the whole-cost section */
    uint64_t sig_ns = rec_get_uvarint(&c), calib_signals = rec_get_uvarint(&c);
    uint64_t calib_ns = rec_get_uvarint(&c), process_cpu_ns = rec_get_uvarint(&c);
    if (c.bad)
        return;
    f->signal_cost_ns = sig_ns;
    f->calib_signals = calib_signals;
    f->calib_ns = calib_ns;
    f->process_cpu_ns = process_cpu_ns;
    f->has_whole = 1;
    if (c.p >= c.end)
        return; /* a footer without the span section */
    uint64_t spans_lost = rec_get_uvarint(&c);
    if (c.bad)
        return;
    f->spans_lost = spans_lost;
    f->has_spans = 1;
}

/* A BATCH: every event checked and decoded into r->bev (nothing of a damaged batch is
 * returned), the running time carried through them. */
static int reader_parse_batch(pyprof_reader *r, rec_in *in)
{
    uint64_t count = rec_get_uvarint(in);
    uint64_t base = rec_get_uvarint(in);
    uint64_t cpu = rec_get_uvarint(in);
    uint64_t unit = rec_get_uvarint(in);
    /* An event takes two bytes at least (its head and its dt). */
    if (in->bad || unit == 0 || count > PYPROF_BATCH_MAX || count > rec_in_left(in) / 2)
        return -PYPROF_R_CORRUPT;
    if (count > r->bev_cap) {
        size_t cap = r->bev_cap ? r->bev_cap : 256;
        while (cap < count)
            cap *= 2;
        struct reader_event *p = realloc(r->bev, cap * sizeof *p);
        if (!p)
            return -PYPROF_R_NOMEM;
        r->bev = p;
        r->bev_cap = cap;
    }
    int native = !!(r->hdr.flags & PYPROF_HDR_NATIVE);
    /* Unsigned: any input wraps, as t_acc does, instead of overflowing.  t: the last
     * event's time; ts: the last sample's (format.h: a sample's gap counts from it). */
    uint64_t thread = 0, rss = 0, t = r->t_acc, ts = r->t_acc;
    for (uint64_t i = 0; i < count; i++) {
        struct reader_event *ev = &r->bev[i];
        uint64_t h = get_uv(in), kind = h & 1 ? h & 7 : 0, v = h & 1 ? h >> 3 : h >> 1;
        if (kind == 7)
            return -PYPROF_R_CORRUPT;
        if (kind == 3) {
            rss += (v >> 1) ^ -(v & 1);
            t += (uint64_t)get_sv(in);
            ev->type = PYPROF_REC_RSS;
            ev->a = rss * unit;
        } else {
            uint64_t flags = 0, ev_cpu = cpu;
            if (kind == 1)
                flags = PYPROF_BATCH_F_THREAD;
            else if (kind == 5)
                flags = get_uv(in);
            if (flags & ~(uint64_t)PYPROF_BATCH_F_ALL)
                return -PYPROF_R_CORRUPT;
            if (flags & PYPROF_BATCH_F_THREAD)
                thread = get_uv(in);
            if (flags & PYPROF_BATCH_F_CPU)
                ev_cpu = get_uv(in);
            uint64_t gap = (uint64_t)get_sv(in);
            if (!(flags & PYPROF_BATCH_F_DT))
                gap += base;
            t = ts += gap;
            ev->type = PYPROF_REC_SAMPLE;
            ev->a = thread;
            ev->b = v;
            ev->c = ev_cpu;
            ev->d = native ? get_uv(in) : 0;
            ev->e = native ? get_uv(in) : 0;
        }
        if (in->bad)
            return -PYPROF_R_CORRUPT;
        ev->t_us = (int64_t)t;
    }
    r->t_acc = t;
    r->bev_n = (size_t)count;
    r->bev_pos = 0;
    return 0;
}

/* The next event of the current BATCH as the record it stands for. */
static void reader_batch_event(pyprof_reader *r, pyprof_record *rec)
{
    const struct reader_event *ev = &r->bev[r->bev_pos++];
    rec->type = ev->type;
    if (ev->type == PYPROF_REC_RSS) {
        rec->u.rss.t_us = ev->t_us;
        rec->u.rss.rss_bytes = ev->a;
        return;
    }
    pyprof_sample_rec *s = &rec->u.sample;
    s->t_us = ev->t_us;
    s->thread_idx = ev->a;
    s->stack_id = ev->b;
    s->cpu_us = ev->c;
    s->nstack_id = ev->d;
    s->native_flags = ev->e;
}

/* Adds a dt field to the running time. */
static int64_t reader_advance(pyprof_reader *r, int64_t dt)
{
    r->t_acc += (uint64_t)dt;
    return (int64_t)r->t_acc;
}

int pyprof_reader_next(pyprof_reader *r, pyprof_record *rec)
{
    if (r->err)
        return r->err;
    if (r->done == 1) {
        /* After the footer, decode what is left of the LZ4 stream anyway: the frame's
         * content checksum comes at its very end, and is the only check that catches a
         * damaged byte that still decoded into plausible records.  A stream cut after the
         * footer lost nothing, so running out of input here is fine. */
        int rc;
        do {
            r->out_pos = r->out_len; /* nothing after the footer is read */
            rc = reader_fill(r);
        } while (rc > 0);
        r->done = 2;
        /* Follow mode: the frame's end is not written yet; the log is complete. */
        if (rc < 0 && rc != -PYPROF_R_AGAIN) {
            r->err = rc;
            return rc;
        }
    }
    if (r->done)
        return 0;
next_record:
    if (r->bev_pos < r->bev_n) {
        reader_batch_event(r, rec);
        return 1;
    }

    uint8_t type;
    const uint8_t *payload;
    size_t plen;
    int rc = reader_envelope(r, &type, &payload, &plen);
    if (rc < 0)
        goto fail;

    /* Each case sets every field of its record (clearing the whole union for every
     * record cost a fifth of the time to read a log). */
    rec->type = type;
    rec_in in;
    rec_in_init(&in, payload, plen);
    switch (type) {
    case PYPROF_REC_HEADER:
        rc = -PYPROF_R_CORRUPT; /* there is exactly one, and open has read it */
        goto fail;
    case PYPROF_REC_THREAD:
        rec->u.thread.thread_idx = rec_get_uvarint(&in);
        rec->u.thread.tid = rec_get_uvarint(&in);
        rec->u.thread.name = reader_str(&in);
        break;
    case PYPROF_REC_CODE: {
        pyprof_code_rec *c = &rec->u.code;
        c->code_id = rec_get_uvarint(&in);
        c->first_line = rec_get_svarint(&in);
        c->name = reader_str(&in);
        c->qualname = reader_str(&in);
        c->filename = reader_str(&in);
        c->line_table_kind = rec_get_u8(&in);
        c->line_table = reader_str(&in);
        c->flags = rec_get_uvarint(&in);
        break;
    }
    case PYPROF_REC_STACK:
        rc = reader_parse_stack(r, &in, &rec->u.stack);
        if (rc < 0)
            goto fail;
        break;
    case PYPROF_REC_SAMPLE: {
        int64_t dt = get_sv(&in);
        rec->u.sample.t_us = reader_advance(r, dt);
        rec->u.sample.thread_idx = get_uv(&in);
        rec->u.sample.stack_id = get_uv(&in);
        rec->u.sample.cpu_us = get_uv(&in);
        rec->u.sample.nstack_id = rec->u.sample.native_flags = 0;
        if ((r->hdr.flags & PYPROF_HDR_NATIVE) && in.p < in.end) {
            rec->u.sample.nstack_id = get_uv(&in);
            rec->u.sample.native_flags = get_uv(&in);
        }
        break;
    }
    case PYPROF_REC_RSS: {
        int64_t dt = rec_get_svarint(&in);
        rec->u.rss.t_us = reader_advance(r, dt);
        rec->u.rss.rss_bytes = rec_get_uvarint(&in);
        break;
    }
    case PYPROF_REC_BATCH:
        rc = reader_parse_batch(r, &in);
        if (rc < 0)
            goto fail;
        /* Its first event; an empty batch stands for no record: the next one. */
        goto next_record;
    case PYPROF_REC_MODULE:
        rc = reader_parse_module(r, &in, &rec->u.module);
        if (rc < 0)
            goto fail;
        break;
    case PYPROF_REC_NSTACK:
        rc = reader_parse_nstack(r, &in, &rec->u.nstack);
        if (rc < 0)
            goto fail;
        break;
    case PYPROF_REC_MODULE_GONE:
        rec->u.module_gone = rec_get_uvarint(&in);
        break;
    case PYPROF_REC_SNAPSHOT:
        rc = reader_parse_snapshot(r, &in, &rec->u.snapshot);
        if (rc < 0)
            goto fail;
        break;
    case PYPROF_REC_SPAN_START:
        rc = reader_parse_span_start(&in, &rec->u.span_start);
        if (rc < 0)
            goto fail;
        break;
    case PYPROF_REC_SPAN_STOP:
        rc = reader_parse_span_stop(&in, &rec->u.span_stop);
        if (rc < 0)
            goto fail;
        break;
    case PYPROF_REC_FOOTER:
        memset(&rec->u.footer, 0, sizeof rec->u.footer);
        reader_parse_footer(&in, &rec->u.footer, !!(r->hdr.flags & PYPROF_HDR_NATIVE));
        r->done = 1;
        break;
    default:
        /* Unknown, or MARK (7): reserved and never written, so no log has one to show
         * and its payload is skipped like any unknown record's.  Only `type` is
         * filled. */
        return 1;
    }
    if (in.bad) {
        rc = -PYPROF_R_CORRUPT;
        goto fail;
    }
    return 1;

fail:
    /* Follow mode's "not yet" is the one error that is not sticky: the envelope has not
     * been taken, and the next call reads it again from where it stands. */
    if (rc != -PYPROF_R_AGAIN)
        r->err = rc;
    return rc;
}

void pyprof_reader_follow(pyprof_reader *r, int on)
{
    r->follow = !!on;
    /* A file may have grown since its end was last met. */
    if (r->follow && r->fd >= 0)
        r->in_eof = 0;
}

void pyprof_reader_close(pyprof_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    if (r->dctx)
        LZ4F_freeDecompressionContext(r->dctx);
    free(r->in_buf);
    free(r->out);
    free(r->hdr_copy);
    free(r->argv);
    free(r->frames);
    free(r->runs);
    free(r->snap);
    free(r->bev);
    free(r->trk.block);
    free(r);
}
