/*
 * lz4stream: the decompressed bytes of a log, from a file or from memory.  It owns the
 * input, the LZ4F context and the output buffer; it follows the LZ4 frame structure
 * itself (frame headers, block sizes, checksums) so that a log cut inside a compressed
 * block still gives the bytes that arrived of it (the cut-block recovery), and in follow
 * mode it takes the end of a file as "not yet".  What the bytes mean is the reader's
 * (reader.c); nothing here knows a record.  Tool-side only.
 *
 * Interface: lz4stream, lz4stream_open, lz4stream_open_mem, lz4stream_start,
 * lz4stream_fill, lz4stream_want, lz4stream_follow, lz4stream_close.
 *
 * The caller parses out[out_pos .. out_len) and moves out_pos past what it took; every
 * other field is this module's.  Functions return 0 or 1 as said, or -PYPROF_R_* codes.
 */
#ifndef PYPROF_LZ4STREAM_H
#define PYPROF_LZ4STREAM_H

#include <stddef.h>
#include <stdint.h>

#include <lz4frame.h>

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
    size_t block_max; /* from the frame's BD byte */
    size_t block_size, block_have;
    int block_stored; /* the block is stored uncompressed (LZ4F streams those itself) */
    uint8_t *block;   /* the block's compressed bytes so far */
    size_t block_cap;
    uint64_t skip_left;
    uint64_t frame_start; /* absolute decompressed offset where this frame's output starts */
    int lost;             /* the input stopped making sense: LZ4F will say so */
} lz4_track;

typedef struct lz4stream {
    int fd; /* -1 for an in-memory log */
    const uint8_t *in;
    size_t in_len, in_pos;
    uint8_t *in_buf; /* owned, for a file */
    int in_eof;      /* the source has no more bytes */
    int follow;      /* lz4stream_follow: the end of the input is "not yet" */

    LZ4F_dctx *dctx;
    size_t lz4_next; /* input LZ4F wants next: the rest of this block and the next header */

    lz4_track trk;
    int recovered; /* the cut block has been decoded */
    /* Bytes of the cut block's output already decoded by the recovery that LZ4F will
     * output again once the rest of the block arrives (follow mode turned on after a cut
     * was met): they are dropped from its output. */
    size_t recovered_skip;

    uint8_t *out;
    size_t out_cap, out_pos, out_len;
    size_t out_max;    /* lz4stream_start's: the most `out` grows to */
    uint64_t out_base; /* absolute decompressed offset of out[0] */
} lz4stream;

/* Sets a zeroed `s` up to read the file `path`.  0, -PYPROF_R_NOMEM or -PYPROF_R_IO
 * (errno set); lz4stream_close frees what was set up either way. */
int lz4stream_open(lz4stream *s, const char *path);

/* Sets a zeroed `s` up to read `len` bytes at `data` (which must outlive it; NULL when
 * `len` is 0). */
void lz4stream_open_mem(lz4stream *s, const void *data, size_t len);

/* Checks that the input starts like an LZ4 frame (or a skippable frame, which lz4 itself
 * accepts) and gets ready to decompress, `out` never to grow past `out_max` bytes (an
 * unparsed tail longer than that is corruption).  0, -PYPROF_R_NOT_LZ4,
 * -PYPROF_R_TRUNCATED (fewer than 4 bytes that could start a frame), -PYPROF_R_NOMEM,
 * -PYPROF_R_IO. */
int lz4stream_start(lz4stream *s, size_t out_max);

/* Decompresses more bytes behind out_len, keeping out_pos and the 64 KiB before it.
 * Returns 1 when some arrived, 0 when the input is exhausted, or a negative code;
 * -PYPROF_R_AGAIN in follow mode when the file has no more bytes for now.  At the end of
 * the input, with `recover`, a cut compressed block is decoded as far as it arrived
 * (once; never in follow mode). */
int lz4stream_fill(lz4stream *s, int recover);

/* Makes at least `want` unparsed bytes available.  Returns 1, 0 when the input ends
 * first, or a negative code. */
int lz4stream_want(lz4stream *s, size_t want);

/* Follow mode on or off (pyprof_reader_follow). */
void lz4stream_follow(lz4stream *s, int on);

/* Closes the file and frees the buffers. */
void lz4stream_close(lz4stream *s);

#endif
