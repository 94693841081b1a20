/*
 * record: encoding and decoding of the primitives of the log format (varints, strings,
 * the record envelope), as include/pyprof/format.h specifies them.  Pure functions on
 * caller-owned memory; no allocation, no I/O.  Used by the writer and the reader alike.
 */
#ifndef PYPROF_RECORD_H
#define PYPROF_RECORD_H

#include <stddef.h>
#include <stdint.h>

/* Longest uvarint encoding of a uint64_t. */
#define REC_VARINT_MAX 10

/* An output buffer.  Writes past `cap` set `overflow` and are dropped, so a caller can
 * encode a whole record and check once.  [sigsafe] (pure code) */
typedef struct rec_out {
    uint8_t *buf;
    size_t len;
    size_t cap;
    int overflow;
} rec_out;

void rec_out_init(rec_out *o, void *buf, size_t cap);
void rec_put_u8(rec_out *o, uint8_t v);
void rec_put_uvarint(rec_out *o, uint64_t v);
void rec_put_svarint(rec_out *o, int64_t v);
void rec_put_bytes(rec_out *o, const void *p, size_t n);
/* uvarint length followed by the bytes. */
void rec_put_str(rec_out *o, const void *p, size_t n);
void rec_put_cstr(rec_out *o, const char *s);

/* Frames a finished payload as a record: type, uvarint length, payload.  Returns the
 * record's size, or 0 if it does not fit in `cap`. */
size_t rec_envelope(uint8_t *dst, size_t cap, uint8_t type, const void *payload, size_t len);

/* An input cursor.  Reads past the end set `bad` and return zeros, so a decoder can read
 * a whole record and check once. */
typedef struct rec_in {
    const uint8_t *p;
    const uint8_t *end;
    int bad;
} rec_in;

void rec_in_init(rec_in *in, const void *buf, size_t len);
uint8_t rec_get_u8(rec_in *in);
uint64_t rec_get_uvarint(rec_in *in);
int64_t rec_get_svarint(rec_in *in);
/* Returns a pointer into the input and its length (not NUL-terminated). */
const uint8_t *rec_get_str(rec_in *in, size_t *len);
size_t rec_in_left(const rec_in *in);

/* Parses a record envelope at the start of `buf`.  Returns 1 and fills the fields when a
 * whole record is there, 0 when more bytes are needed, -1 when the length is absurd
 * (more than `max_len`). */
int rec_parse_envelope(const uint8_t *buf, size_t len, size_t max_len, uint8_t *type,
                       const uint8_t **payload, size_t *payload_len, size_t *total);

#endif
