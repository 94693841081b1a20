#include "jsonw.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "common/utf8.h"

/* Every byte goes out through put, which remembers the first failure and then drops
 * the rest: a full disk stops a page of millions of samples at once.  The tool has one
 * thread: the stream's lock would only cost time on each of the many small writes. */
static void put(jsonw *w, const char *s, size_t n)
{
    if (w->err || !n)
        return;
    if (fwrite_unlocked(s, 1, n, w->f) != n)
        w->err = errno ? errno : EIO;
}

static void put_str(jsonw *w, const char *s) { put(w, s, strlen(s)); }

/* `s` as it is, except '<', '>' and '&' with JSONW_HTML. */
static void put_text(jsonw *w, const char *s, size_t n)
{
    if (!(w->flags & JSONW_HTML)) {
        put(w, s, n);
        return;
    }
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        const char *esc = s[i] == '<'   ? "\\u003c"
                          : s[i] == '>' ? "\\u003e"
                          : s[i] == '&' ? "\\u0026"
                                        : NULL;
        if (!esc)
            continue;
        put(w, s + from, i - from);
        put_str(w, esc);
        from = i + 1;
    }
    put(w, s + from, n - from);
}

static void put_break(jsonw *w)
{
    static const char spaces[] = "                                ";
    put(w, "\n", 1);
    for (int left = w->brk; left > 0;) {
        int n = left < (int)sizeof spaces - 1 ? left : (int)sizeof spaces - 1;
        put(w, spaces, (size_t)n);
        left -= n;
    }
    w->brk = -1;
}

/* What goes before a value, a key or an opening bracket: nothing after a key, else a
 * comma unless it is the container's first, then the break asked for or a space. */
static void separate(jsonw *w)
{
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (!w->first)
        put(w, ", ", w->brk >= 0 || w->compact ? 1 : 2);
    if (w->brk >= 0)
        put_break(w);
    w->first = 0;
}

static void quoted(jsonw *w, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    put(w, "\"", 1);
    while (*s) {
        /* The longest run that needs no escape goes out in one write. */
        const unsigned char *run = s;
        size_t n;
        while (*s >= 0x20 && *s != '"' && *s != '\\' && (n = utf8_char_len(s, SIZE_MAX)))
            s += n;
        put_text(w, (const char *)run, (size_t)(s - run));
        if (!*s)
            break;
        unsigned char c = *s++;
        char esc[8];
        if (c == '"' || c == '\\')
            snprintf(esc, sizeof esc, "\\%c", c);
        else if (c == '\n')
            strcpy(esc, "\\n");
        else if (c == '\t')
            strcpy(esc, "\\t");
        else if (c == '\r')
            strcpy(esc, "\\r");
        else if (c < 0x20)
            snprintf(esc, sizeof esc, "\\u%04x", c);
        else
            strcpy(esc, "\\ufffd"); /* a byte that starts no valid UTF-8 sequence */
        put_str(w, esc);
    }
    put(w, "\"", 1);
}

void jsonw_init(jsonw *w, FILE *f, unsigned flags) { *w = (jsonw){f, flags, 0, 1, 0, -1, 0}; }

void jsonw_set_compact(jsonw *w, int compact) { w->compact = compact; }

int jsonw_finish(jsonw *w)
{
    put(w, "\n", 1);
    return w->err;
}

int jsonw_error(const jsonw *w) { return w->err; }

static void begin(jsonw *w, char c)
{
    separate(w);
    put(w, &c, 1);
    w->first = 1;
}

static void end(jsonw *w, char c)
{
    if (w->brk >= 0)
        put_break(w);
    put(w, &c, 1);
    w->first = 0;
}

void jsonw_begin_object(jsonw *w) { begin(w, '{'); }

void jsonw_end_object(jsonw *w) { end(w, '}'); }

void jsonw_begin_array(jsonw *w) { begin(w, '['); }

void jsonw_end_array(jsonw *w) { end(w, ']'); }

void jsonw_key(jsonw *w, const char *key)
{
    separate(w);
    quoted(w, key);
    put(w, ": ", w->compact ? 1 : 2);
    w->after_key = 1;
}

void jsonw_break(jsonw *w, int indent) { w->brk = indent > 0 ? indent : 0; }

void jsonw_string(jsonw *w, const char *s)
{
    separate(w);
    quoted(w, s);
}

void jsonw_u64(jsonw *w, uint64_t v)
{
    char buf[24], *p = buf + sizeof buf;
    do
        *--p = (char)('0' + v % 10);
    while (v /= 10);
    separate(w);
    put(w, p, (size_t)(buf + sizeof buf - p));
}

void jsonw_i64(jsonw *w, int64_t v)
{
    if (v >= 0) {
        jsonw_u64(w, (uint64_t)v);
        return;
    }
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    separate(w);
    put_str(w, buf);
}

void jsonw_double(jsonw *w, double v, int decimals)
{
    if (!isfinite(v)) {
        jsonw_null(w);
        return;
    }
    char buf[330]; /* DBL_MAX has 309 digits before the point */
    snprintf(buf, sizeof buf, "%.*f", decimals, v);
    separate(w);
    put_str(w, buf);
}

void jsonw_bool(jsonw *w, int v)
{
    separate(w);
    put_str(w, v ? "true" : "false");
}

void jsonw_null(jsonw *w)
{
    separate(w);
    put_str(w, "null");
}

void jsonw_raw(jsonw *w, const char *json)
{
    separate(w);
    put_text(w, json, strlen(json));
}

void jsonw_key_string(jsonw *w, const char *key, const char *s)
{
    jsonw_key(w, key);
    jsonw_string(w, s);
}

void jsonw_key_u64(jsonw *w, const char *key, uint64_t v)
{
    jsonw_key(w, key);
    jsonw_u64(w, v);
}

void jsonw_key_i64(jsonw *w, const char *key, int64_t v)
{
    jsonw_key(w, key);
    jsonw_i64(w, v);
}

void jsonw_key_double(jsonw *w, const char *key, double v, int decimals)
{
    jsonw_key(w, key);
    jsonw_double(w, v, decimals);
}

void jsonw_key_bool(jsonw *w, const char *key, int v)
{
    jsonw_key(w, key);
    jsonw_bool(w, v);
}
