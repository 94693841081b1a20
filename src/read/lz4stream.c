/*
 * lz4stream: the decompressed bytes of a log.  See lz4stream.h.
 *
 * Bytes flow through two buffers:
 *
 *     file or memory --(in: raw LZ4 bytes)--> LZ4F_decompress --(out: log bytes)--> reader
 *
 * `in` is the caller's memory for an in-memory log, or a LZ4STREAM_IN_CHUNK buffer
 * refilled with read(2) for a file.  `out` holds decompressed bytes; [out_pos, out_len)
 * is what the reader has not parsed yet.  When that tail is an incomplete record, the
 * tail is moved to the front of `out` and more is decompressed behind it; a record larger
 * than `out` grows it, up to out_max.
 *
 * LZ4F keeps its own copy of the history that linked blocks refer to (we never set
 * stableDst), so moving bytes inside `out` between calls is safe.  We give LZ4F no more
 * input than it asks for (its return value), which ends every call at a block boundary:
 * a damaged block then cannot take down the good blocks decoded in the same call, which
 * are all delivered before CORRUPT.  A log may be several LZ4 frames back to back (a
 * writer may end a frame and start another): LZ4F_decompress returns 0 at the end of a
 * frame and the same context then decodes the next one.
 *
 * A cut inside a block.  LZ4F decodes a compressed block only once all of it has arrived,
 * so a log cut in the middle of one (a torn write, a copy of a log still being written)
 * would lose the whole block, possibly the first and only one.  So this module also
 * follows the frame structure itself (lz4_track: frame headers, block sizes, checksums)
 * and keeps a copy of the current block's compressed bytes; when the input ends inside a
 * compressed block, it decodes what is there with LZ4_decompress_safe_partial_usingDict,
 * the previous 64 KiB of output as the dictionary (which is why `out` keeps that much
 * history before out_pos).  Those bytes are not checksummed, but a cut is not damage: the
 * records that come out whole are delivered, and the last, cut one makes the log
 * TRUNCATED.
 *
 * Follow mode (a log still being written).  The end of the input is then "not yet": fill
 * returns AGAIN and nothing is given up.  LZ4F keeps the part of a block or frame header
 * it was given, `trk` keeps its place in the frame, the unparsed tail of `out` keeps the
 * part of a record, and the next call reads the file again from where it stopped
 * (read(2) at the file position, which only this module moves).  A cut block is never
 * decoded in pieces then: its records come whole once the writer has written the rest of
 * it.  (A file whose cut block was decoded in part before follow mode began, by an open
 * that needed it for the header, has that part dropped from the block's whole output:
 * recovered_skip.)
 */
#include "lz4stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lz4.h>
#include <pyprof/reader.h>

/* Bytes read from a file at a time. */
#define LZ4STREAM_IN_CHUNK (256u << 10)
/* Initial size of the decompressed-bytes buffer. */
#define LZ4STREAM_OUT_INITIAL (256u << 10)

/* The LZ4 frame format's pieces (lz4's doc/lz4_Frame_format.md), as lz4_track walks them. */
#define LZ4_FRAME_MAGIC 0x184D2204u
#define LZ4_HISTORY (64u << 10) /* how far back a linked block's matches reach */
#define LZ4_FLG_BLOCK_INDEP 0x20
#define LZ4_FLG_BLOCK_CHECKSUM 0x10
#define LZ4_FLG_CONTENT_SIZE 0x08
#define LZ4_FLG_CONTENT_CHECKSUM 0x04
#define LZ4_FLG_DICT_ID 0x01

/* Reads more raw bytes from the file.  Returns 1 when some arrived, 0 at end of file,
 * -PYPROF_R_IO on a read error.  In follow mode the end of a file is only "for now": the
 * next call reads again. */
static int read_input(lz4stream *s)
{
    if (s->in_eof)
        return 0;
    if (s->fd < 0) {
        s->in_eof = 1;
        return 0;
    }
    /* Keep unconsumed bytes: the magic check asks for 4 bytes that may arrive in pieces. */
    size_t keep = s->in_len - s->in_pos;
    memmove(s->in_buf, s->in_buf + s->in_pos, keep);
    s->in_len = keep;
    s->in_pos = 0;
    for (;;) {
        ssize_t n = read(s->fd, s->in_buf + s->in_len, LZ4STREAM_IN_CHUNK - s->in_len);
        if (n > 0) {
            s->in_len += (size_t)n;
            return 1;
        }
        if (n == 0) {
            s->in_eof = !s->follow;
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
static int recover_cut_block(lz4stream *s)
{
    lz4_track *t = &s->trk;
    if (s->recovered || t->lost || t->block_stored || !t->block_have ||
        (t->state != TRK_BLOCK_DATA && t->state != TRK_BLOCK_CRC))
        return 0;
    s->recovered = 1;
    if (s->out_cap - s->out_len < t->block_max) {
        uint8_t *p = realloc(s->out, s->out_len + t->block_max);
        if (!p)
            return -PYPROF_R_NOMEM;
        s->out = p;
        s->out_cap = s->out_len + t->block_max;
    }
    /* A linked block may refer to the last 64 KiB of its frame's output. */
    const char *dict = NULL;
    int dict_len = 0;
    if (!(t->flg & LZ4_FLG_BLOCK_INDEP)) {
        uint64_t end = s->out_base + s->out_len;
        uint64_t start = end > LZ4_HISTORY ? end - LZ4_HISTORY : 0;
        if (start < t->frame_start)
            start = t->frame_start;
        if (start < s->out_base)
            start = s->out_base;
        dict = (const char *)s->out + (start - s->out_base);
        dict_len = (int)(end - start);
    }
    char *dst = (char *)s->out + s->out_len;
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
    s->out_len += (size_t)got;
    s->recovered_skip = (size_t)got;
    return 1;
}

/* Decompresses more bytes behind the unparsed tail of `out`.  Returns 1 when some arrived,
 * 0 when the input is exhausted, or a negative code: -PYPROF_R_AGAIN in follow mode,
 * where a cut block is not decoded in pieces (LZ4F keeps what arrived of it, and decodes
 * it whole once the rest is there). */
int lz4stream_fill(lz4stream *s, int recover)
{
    /* Keep LZ4_HISTORY bytes before out_pos: the cut-block recovery's dictionary. */
    if (s->out_pos > LZ4_HISTORY) {
        size_t drop = s->out_pos - LZ4_HISTORY;
        memmove(s->out, s->out + drop, s->out_len - drop);
        s->out_len -= drop;
        s->out_pos -= drop;
        s->out_base += drop;
    }
    if (s->out_len == s->out_cap) {
        /* One incomplete record fills the buffer: it is big, so make room for it. */
        size_t cap = s->out_cap * 2;
        if (cap > s->out_max)
            cap = s->out_max;
        if (cap <= s->out_cap)
            return -PYPROF_R_CORRUPT;
        uint8_t *p = realloc(s->out, cap);
        if (!p)
            return -PYPROF_R_NOMEM;
        s->out = p;
        s->out_cap = cap;
    }
    for (;;) {
        if (s->in_pos == s->in_len) {
            int rc = read_input(s);
            if (rc == 0)
                return s->follow ? -PYPROF_R_AGAIN : recover ? recover_cut_block(s) : 0;
            if (rc < 0)
                return rc;
        }
        /* Never more input than LZ4F asked for (see the top of the file). */
        size_t src = s->in_len - s->in_pos;
        size_t want = s->lz4_next ? s->lz4_next : 4;
        if (src > want)
            src = want;
        size_t dst = s->out_cap - s->out_len;
        size_t ret = LZ4F_decompress(s->dctx, s->out + s->out_len, &dst, s->in + s->in_pos,
                                     &src, NULL);
        if (LZ4F_isError(ret))
            return -PYPROF_R_CORRUPT;
        track_bytes(&s->trk, s->in + s->in_pos, src, s->out_base + s->out_len);
        if (s->recovered_skip && dst) {
            /* The block recover_cut_block decoded in part, now whole: keep only what is
             * new. */
            size_t k = dst < s->recovered_skip ? dst : s->recovered_skip;
            memmove(s->out + s->out_len, s->out + s->out_len + k, dst - k);
            dst -= k;
            s->recovered_skip -= k;
            if (!s->recovered_skip)
                s->recovered = 0;
        }
        s->in_pos += src;
        s->out_len += dst;
        s->lz4_next = ret;
        if (dst > 0)
            return 1;
        /* No output yet: LZ4F consumed a frame header, a block header or a frame end.  It
         * always consumes something when it has input and room, but do not spin if a
         * future version did not. */
        if (src == 0 && s->in_pos < s->in_len)
            return -PYPROF_R_CORRUPT;
    }
}

/* Makes at least `want` unparsed bytes available.  Returns 1, 0 when the log ends first,
 * or a negative code. */
int lz4stream_want(lz4stream *s, size_t want)
{
    while (s->out_len - s->out_pos < want) {
        int rc = lz4stream_fill(s, 1);
        if (rc <= 0)
            return rc;
    }
    return 1;
}

/* Checks that the raw bytes start like an LZ4 frame (or a skippable frame, which lz4
 * itself accepts).  Returns 0 or a negative code. */
static int check_lz4(lz4stream *s)
{
    static const uint8_t lz4_magic[4] = {0x04, 0x22, 0x4d, 0x18};
    while (s->in_len - s->in_pos < 4) {
        int rc = read_input(s);
        if (rc < 0)
            return rc;
        if (rc == 0)
            break;
    }
    const uint8_t *p = s->in + s->in_pos;
    size_t n = s->in_len - s->in_pos;
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

int lz4stream_open(lz4stream *s, const char *path)
{
    s->fd = -1;
    s->in_buf = malloc(LZ4STREAM_IN_CHUNK);
    if (!s->in_buf)
        return -PYPROF_R_NOMEM;
    s->in = s->in_buf;
    s->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (s->fd < 0) {
        s->fd = -1;
        return -PYPROF_R_IO;
    }
    return 0;
}

void lz4stream_open_mem(lz4stream *s, const void *data, size_t len)
{
    /* `in` is never NULL, even for an empty log given as (NULL, 0): the input is
     * addressed as in + in_pos, and an offset on a null pointer is undefined even when it
     * is zero. */
    static const uint8_t no_bytes[1];
    s->fd = -1;
    s->in = data ? data : no_bytes;
    s->in_len = data ? len : 0;
    s->in_eof = 1;
}

int lz4stream_start(lz4stream *s, size_t out_max)
{
    if (LZ4F_isError(LZ4F_createDecompressionContext(&s->dctx, LZ4F_VERSION)))
        return -PYPROF_R_NOMEM;
    track_expect(&s->trk, TRK_MAGIC, 4);
    s->out_max = out_max;
    s->out_cap = LZ4STREAM_OUT_INITIAL;
    s->out = malloc(s->out_cap);
    if (!s->out)
        return -PYPROF_R_NOMEM;
    return check_lz4(s);
}

void lz4stream_follow(lz4stream *s, int on)
{
    s->follow = !!on;
    /* A file may have grown since its end was last met. */
    if (s->follow && s->fd >= 0)
        s->in_eof = 0;
}

void lz4stream_close(lz4stream *s)
{
    if (s->fd >= 0)
        close(s->fd);
    if (s->dctx)
        LZ4F_freeDecompressionContext(s->dctx);
    free(s->in_buf);
    free(s->out);
    free(s->trk.block);
}
