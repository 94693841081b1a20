/*
 * logbuf: a log the reading side's unit tests write record by record in memory (each
 * payload from logenc, in its record envelope), then into a file as one LZ4 frame, for
 * the reader and the model to load.  Test code, header only.
 *
 *   logbuf                    the bytes so far (zero-initialised: empty; the caller may
 *                             start it with the magic)
 *   logbuf_put(b, type, o)    appends record `type` with payload o (o must not have
 *                             overflowed)
 *   logbuf_write(b, path)     writes b as an LZ4 frame to `path` (created or truncated)
 */
#ifndef PYPROF_TEST_LOGBUF_H
#define PYPROF_TEST_LOGBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <lz4frame.h>

#include "common/record.h"

typedef struct logbuf {
    uint8_t *p;
    size_t len, cap;
} logbuf;

static inline void logbuf_put(logbuf *b, uint8_t type, const rec_out *o)
{
    assert_false(o->overflow);
    if (b->len + o->len + 16 > b->cap) {
        b->cap = (b->len + o->len + 16) * 2;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    size_t n = rec_envelope(b->p + b->len, b->cap - b->len, type, o->buf, o->len);
    assert_true(n > 0);
    b->len += n;
}

static inline void logbuf_write(const logbuf *b, const char *path)
{
    LZ4F_preferences_t prefs;
    memset(&prefs, 0, sizeof prefs);
    size_t cap = LZ4F_compressFrameBound(b->len, &prefs);
    uint8_t *c = malloc(cap);
    assert_non_null(c);
    size_t clen = LZ4F_compressFrame(c, cap, b->p, b->len, &prefs);
    assert_false(LZ4F_isError(clen));
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(c, 1, clen, f), clen);
    assert_int_equal(fclose(f), 0);
    free(c);
}

#endif
