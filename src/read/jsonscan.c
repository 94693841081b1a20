/*
 * jsonscan: a strict JSON checker and a top-level string reader.  See jsonscan.h.
 *
 * One recursive-descent pass; the depth bound keeps the recursion short whatever the
 * input.  Strings are checked byte by byte: escapes as the grammar allows them, UTF-8 as
 * the standard does (no overlong form, no surrogate, nothing above U+10FFFF).
 */
#include "jsonscan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

static const char *skip_ws(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    return s;
}

static int hex4(const char *s, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return -1;
        *v = *v * 16 + d;
    }
    return 0;
}

/* A string at s (its opening quote); returns the byte after the closing quote, or
 * NULL. */
static const char *scan_string(const char *s)
{
    if (*s != '"')
        return NULL;
    s++;
    for (;;) {
        unsigned char c = (unsigned char)*s;
        if (c == '"')
            return s + 1;
        if (c < 0x20)
            return NULL; /* a control character, or the end of the text */
        if (c == '\\') {
            char e = s[1];
            unsigned v;
            if (e == 'u') {
                if (hex4(s + 2, &v) < 0)
                    return NULL;
                s += 6;
            } else if (e && strchr("\"\\/bfnrt", e)) {
                s += 2;
            } else {
                return NULL;
            }
        } else if (c < 0x80) {
            s++;
        } else {
            size_t n = utf8_char_len((const uint8_t *)s, SIZE_MAX);
            if (!n)
                return NULL;
            s += n;
        }
    }
}

static const char *scan_number(const char *s)
{
    if (*s == '-')
        s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (*s >= '0' && *s <= '9')
            s++;
    else
        return NULL;
    if (*s == '.') {
        s++;
        if (!(*s >= '0' && *s <= '9'))
            return NULL;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!(*s >= '0' && *s <= '9'))
            return NULL;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return s;
}

static const char *scan_value(const char *s, int depth);

static const char *scan_container(const char *s, int depth, char close)
{
    if (depth >= JSONSCAN_MAX_DEPTH)
        return NULL;
    s = skip_ws(s + 1);
    if (*s == close)
        return s + 1;
    for (;;) {
        if (close == '}') {
            s = scan_string(s);
            if (!s)
                return NULL;
            s = skip_ws(s);
            if (*s != ':')
                return NULL;
            s = skip_ws(s + 1);
        }
        s = scan_value(s, depth + 1);
        if (!s)
            return NULL;
        s = skip_ws(s);
        if (*s == close)
            return s + 1;
        if (*s != ',')
            return NULL;
        s = skip_ws(s + 1);
    }
}

static const char *scan_value(const char *s, int depth)
{
    switch (*s) {
    case '{':
        return scan_container(s, depth, '}');
    case '[':
        return scan_container(s, depth, ']');
    case '"':
        return scan_string(s);
    case 't':
        return strncmp(s, "true", 4) ? NULL : s + 4;
    case 'f':
        return strncmp(s, "false", 5) ? NULL : s + 5;
    case 'n':
        return strncmp(s, "null", 4) ? NULL : s + 4;
    default:
        return scan_number(s);
    }
}

int jsonscan_is_object(const char *s)
{
    if (!s)
        return 0;
    s = skip_ws(s);
    if (*s != '{')
        return 0;
    s = scan_value(s, 0);
    return s && !*skip_ws(s);
}

/* Decodes the checked string at s (its opening quote), up to `end` (after its closing
 * quote). */
static char *decode_string(const char *s, const char *end)
{
    /* Each escape (2 or 6 bytes) decodes to at most 4 bytes: twice the length is room. */
    char *out = malloc((size_t)(end - s) * 2 + 1), *o = out;
    if (!out)
        return NULL;
    s++;
    while (s < end - 1) {
        if (*s != '\\') {
            *o++ = *s++;
            continue;
        }
        char e = s[1];
        s += 2;
        switch (e) {
        /* clang-format off */
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned c, lo;
            hex4(s, &c);
            s += 4;
            if (c >= 0xd800 && c <= 0xdbff && s[0] == '\\' && s[1] == 'u' &&
                hex4(s + 2, &lo) == 0 && lo >= 0xdc00 && lo <= 0xdfff) {
                c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
                s += 6;
            } else if (c == 0 || (c >= 0xd800 && c <= 0xdfff)) {
                c = UTF8_REPLACEMENT;
            }
            o += utf8_put(o, c);
            break;
        }
        default: *o++ = e; break; /* " \ / */
            /* clang-format on */
        }
    }
    *o = 0;
    return out;
}

char *jsonscan_string(const char *obj, const char *key)
{
    if (!jsonscan_is_object(obj))
        return NULL;
    const char *s = skip_ws(skip_ws(obj) + 1);
    size_t klen = strlen(key);
    while (*s == '"') {
        const char *kend = scan_string(s);
        /* A key written without escapes compares byte for byte; one with escapes is
         * decoded first. */
        char *k = decode_string(s, kend);
        if (!k)
            return NULL;
        int match = strlen(k) == klen && !memcmp(k, key, klen);
        free(k);
        s = skip_ws(skip_ws(kend) + 1); /* past ':' */
        const char *vend = scan_value(s, 1);
        if (match)
            return *s == '"' ? decode_string(s, vend) : NULL;
        s = skip_ws(vend);
        if (*s == ',')
            s = skip_ws(s + 1);
    }
    return NULL;
}
