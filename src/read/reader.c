/*
 * reader: reads a pyprof log record by record.  See include/pyprof/reader.h for the
 * interface and include/pyprof/format.h for the format.
 *
 * Three parts: lz4stream.c turns the file (or memory) into decompressed bytes, a log cut
 * inside a compressed block included; this file finds the records in them (the magic,
 * then envelopes, rec_parse_envelope); logdec.c decodes each record's payload.  A record
 * is parsed in place, so its strings point into the stream's buffer: that is why a record
 * is only valid until the next call.  A record longer than READER_MAX_RECORD is taken as
 * corruption (the writer never produces records anywhere near that size, and a corrupt
 * length must not make us allocate gigabytes).
 *
 * Errors are sticky: after the first failure every later call returns the same code.  A
 * log that simply stops (no footer, a partial frame, block or record) is TRUNCATED, never
 * CORRUPT: that is what a killed process leaves, and everything before the cut is good.
 * After the footer the rest of the stream is still decoded, for the last frame's content
 * checksum.
 *
 * Follow mode (a log still being written, lz4stream.c): the end of the input is "not
 * yet", and the call returns AGAIN, which is not sticky; nothing is given up.  After the
 * footer, the end of the input is the end: a frame end the writer has not written yet
 * loses nothing.
 *
 * Unknown record types are returned with only `type` filled (the payload is skipped), so a
 * caller can count them; format.h's compatibility rule says readers skip them.
 */
#include <pyprof/reader.h>

#include <stdlib.h>
#include <string.h>

#include "common/record.h"
#include "logdec.h"
#include "lz4stream.h"

/* A record longer than this is corruption, not data. */
#define READER_MAX_RECORD (64u << 20)

struct pyprof_reader {
    lz4stream in;
    logdec dec;
    uint64_t consumed; /* decompressed bytes parsed, magic included */
    int err;           /* 0, or the negative code every call now returns */
    int done;          /* 1: the footer has been returned; 2: and the stream after it checked */
    pyprof_header hdr;
    uint8_t *hdr_copy; /* the header payload, which hdr's strings point into */
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

/* Takes the next record's envelope.  Returns 1, or a negative code (TRUNCATED when the log
 * ends before a whole record). */
static int reader_envelope(pyprof_reader *r, uint8_t *type, const uint8_t **payload,
                           size_t *plen)
{
    for (;;) {
        size_t total;
        lz4stream *s = &r->in;
        int rc = rec_parse_envelope(s->out + s->out_pos, s->out_len - s->out_pos,
                                    READER_MAX_RECORD, type, payload, plen, &total);
        if (rc > 0) {
            s->out_pos += total;
            r->consumed += total;
            return 1;
        }
        if (rc < 0)
            return -PYPROF_R_CORRUPT;
        rc = lz4stream_fill(&r->in, 1);
        if (rc < 0)
            return rc;
        if (rc == 0)
            return -PYPROF_R_TRUNCATED;
    }
}

/* The common part of both opens: checks LZ4, the magic and the header. */
static int reader_start(pyprof_reader *r)
{
    lz4stream *s = &r->in;
    int rc = lz4stream_start(s, READER_MAX_RECORD + 2 * REC_VARINT_MAX);
    if (rc < 0)
        return rc;
    rc = lz4stream_want(s, PYPROF_MAGIC_LEN);
    if (rc < 0)
        return rc;
    size_t have = s->out_len - s->out_pos;
    if (have > PYPROF_MAGIC_LEN)
        have = PYPROF_MAGIC_LEN;
    if (memcmp(s->out + s->out_pos, PYPROF_MAGIC, have))
        return -PYPROF_R_NOT_PYPROF;
    if (rc == 0)
        return -PYPROF_R_TRUNCATED; /* a prefix of the magic, then nothing */
    s->out_pos += PYPROF_MAGIC_LEN;
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
    return logdec_header(&r->dec, r->hdr_copy, plen, &r->hdr);
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
    int rc = lz4stream_open(&r->in, path);
    if (rc < 0) {
        pyprof_reader_close(r);
        if (err)
            *err = -rc;
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
    lz4stream_open_mem(&r->in, data, len);
    return reader_finish_open(r, err);
}

const pyprof_header *pyprof_reader_header(const pyprof_reader *r) { return &r->hdr; }

uint64_t pyprof_reader_offset(const pyprof_reader *r) { return r->consumed; }

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
            r->in.out_pos = r->in.out_len; /* nothing after the footer is read */
            rc = lz4stream_fill(&r->in, 0);
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
    if (logdec_pending(&r->dec)) {
        logdec_next_event(&r->dec, rec);
        return 1;
    }

    uint8_t type;
    const uint8_t *payload;
    size_t plen;
    int rc = reader_envelope(r, &type, &payload, &plen);
    if (rc < 0)
        goto fail;
    rec->type = type;
    if (type == PYPROF_REC_HEADER) {
        rc = -PYPROF_R_CORRUPT; /* there is exactly one, and open has read it */
        goto fail;
    }
    rc = logdec_record(&r->dec, type, payload, plen, rec);
    if (rc < 0)
        goto fail;
    if (type == PYPROF_REC_BATCH || type == PYPROF_REC_ALLOCS)
        goto next_record; /* its first event; an empty batch stands for no record */
    if (type == PYPROF_REC_FOOTER)
        r->done = 1;
    return 1;

fail:
    /* Follow mode's "not yet" is the one error that is not sticky: the envelope has not
     * been taken, and the next call reads it again from where it stands. */
    if (rc != -PYPROF_R_AGAIN)
        r->err = rc;
    return rc;
}

void pyprof_reader_follow(pyprof_reader *r, int on) { lz4stream_follow(&r->in, on); }

void pyprof_reader_close(pyprof_reader *r)
{
    if (!r)
        return;
    lz4stream_close(&r->in);
    logdec_free(&r->dec);
    free(r->hdr_copy);
    free(r);
}
