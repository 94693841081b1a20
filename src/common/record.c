/*
 * record: the log's primitive encodings.  See record.h and include/pyprof/format.h.
 */
#include "record.h"

#include <string.h>

void rec_out_init(rec_out *o, void *buf, size_t cap)
{
    o->buf = buf;
    o->len = 0;
    o->cap = cap;
    o->overflow = 0;
}

void rec_put_bytes(rec_out *o, const void *p, size_t n)
{
    if (o->overflow || n > o->cap - o->len) {
        o->overflow = 1;
        return;
    }
    if (n)
        memcpy(o->buf + o->len, p, n);
    o->len += n;
}

void rec_put_u8(rec_out *o, uint8_t v) { rec_put_bytes(o, &v, 1); }

void rec_put_uvarint(rec_out *o, uint64_t v)
{
    uint8_t tmp[REC_VARINT_MAX];
    size_t n = 0;
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        tmp[n++] = b | (v ? 0x80 : 0);
    } while (v);
    rec_put_bytes(o, tmp, n);
}

void rec_put_svarint(rec_out *o, int64_t v)
{
    rec_put_uvarint(o, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void rec_put_str(rec_out *o, const void *p, size_t n)
{
    rec_put_uvarint(o, n);
    rec_put_bytes(o, p, n);
}

void rec_put_cstr(rec_out *o, const char *s) { rec_put_str(o, s, s ? strlen(s) : 0); }

size_t rec_envelope(uint8_t *dst, size_t cap, uint8_t type, const void *payload, size_t len)
{
    rec_out o;
    rec_out_init(&o, dst, cap);
    rec_put_u8(&o, type);
    rec_put_uvarint(&o, len);
    rec_put_bytes(&o, payload, len);
    return o.overflow ? 0 : o.len;
}

void rec_in_init(rec_in *in, const void *buf, size_t len)
{
    in->p = buf;
    in->end = len ? in->p + len : in->p;
    in->bad = 0;
}

size_t rec_in_left(const rec_in *in) { return (size_t)(in->end - in->p); }

uint8_t rec_get_u8(rec_in *in)
{
    if (in->p >= in->end) {
        in->bad = 1;
        return 0;
    }
    return *in->p++;
}

uint64_t rec_get_uvarint(rec_in *in)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (in->p >= in->end) {
            in->bad = 1;
            return 0;
        }
        uint8_t b = *in->p++;
        if (shift == 63 && b > 1) { /* bits past 64: not a varint we wrote */
            in->bad = 1;
            return 0;
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    in->bad = 1; /* more than 10 bytes: not a varint we wrote */
    return 0;
}

int64_t rec_get_svarint(rec_in *in)
{
    uint64_t u = rec_get_uvarint(in);
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

const uint8_t *rec_get_str(rec_in *in, size_t *len)
{
    uint64_t n = rec_get_uvarint(in);
    if (in->bad || n > rec_in_left(in)) {
        in->bad = 1;
        *len = 0;
        return (const uint8_t *)"";
    }
    const uint8_t *s = in->p;
    in->p += n;
    *len = (size_t)n;
    return s;
}

int rec_parse_envelope(const uint8_t *buf, size_t len, size_t max_len, uint8_t *type,
                       const uint8_t **payload, size_t *payload_len, size_t *total)
{
    if (len < 2)
        return 0;
    rec_in in;
    rec_in_init(&in, buf + 1, len - 1);
    uint64_t n = rec_get_uvarint(&in);
    if (in.bad)
        return (len - 1 >= REC_VARINT_MAX) ? -1 : 0;
    if (n > max_len)
        return -1;
    if (n > rec_in_left(&in))
        return 0;
    *type = buf[0];
    *payload = in.p;
    *payload_len = (size_t)n;
    *total = (size_t)(in.p - buf) + (size_t)n;
    return 1;
}
