/*
 * fuzz_jsonscan: a libFuzzer target for the span-info JSON checker and string reader
 * (src/read/jsonscan.c).  A span's info is text the profiled program wrote (any bytes,
 * through the C API); the tool checks it and reads members out of it.
 *
 * An input is
 *
 *     text [\0 key [\0 ...]]
 *
 * `text` is the JSON (the API takes C strings, so it ends at the first NUL), `key` an
 * extra member name to look up.  Each string is copied into a buffer of exactly its size
 * (with its NUL), so that a read past the NUL is caught by AddressSanitizer.  Every entry
 * point of jsonscan.h is checked against an independent checker and decoder written here
 * (iterative, working on lengths, UTF-8 from the Unicode standard's table of well-formed
 * sequences):
 *   - jsonscan_is_object: exactly one RFC 8259 object with whitespace around it, strings
 *     of valid UTF-8 without control characters, at most JSONSCAN_MAX_DEPTH levels of
 *     nesting; the same answer for the text cut at a few places, and for the text with
 *     more whitespace around it; an accepted object put inside another one is accepted
 *     exactly when its depth is below JSONSCAN_MAX_DEPTH; NULL is not an object;
 *   - jsonscan_string, for the extra key, "", every top-level member name (up to
 *     MAX_KEYS of them, decoded) and one cut short: NULL when the text is not an object,
 *     else the first top-level member of that name decoded when it is a string (a \u0000
 *     and a lone surrogate as U+FFFD, a surrogate pair as one character), NULL when it is
 *     not a string or there is none; a result is valid UTF-8 without a NUL inside;
 *   - a result written back as a JSON string (escaping only what must be, and again with
 *     every non-ASCII character as \u escapes, surrogate pairs above U+FFFF, under a key
 *     written with an escape) is an object that reads back as the same bytes;
 *   - neither function writes to its input.
 *
 * Built and run by `make fuzz` (tests/fuzz/README.md); `make fuzz-replay` replays
 * tests/fuzz/corpus-jsonscan/ with tests/fuzz/replay_main.c.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "read/jsonscan.h"

/* Member names looked up per input, besides the extra key and "". */
#define MAX_KEYS 16
#define FAIL ((size_t)-1)

/* ---- the reference: an independent checker over (p, n) ------------------------------ */

struct member {
    size_t key, key_end; /* the key's quotes included */
    size_t val, val_end; /* the value's span when it is a string, quotes included */
    int is_string;
};

struct ref {
    int ok;
    int depth; /* deepest nesting seen, the object itself being 1 */
    struct member *mem;
    size_t nmem, cap;
};

static int is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static size_t ref_ws(const uint8_t *p, size_t n, size_t i)
{
    while (i < n && is_ws(p[i]))
        i++;
    return i;
}

/* The length of the well-formed UTF-8 sequence at p[i] (Unicode Table 3-7), 0 if none. */
static size_t ref_utf8(const uint8_t *p, size_t n, size_t i)
{
    uint8_t b = p[i], lo = 0x80, hi = 0xbf;
    size_t len;
    if (b < 0x80)
        return 1;
    if (b >= 0xc2 && b <= 0xdf)
        len = 2;
    else if (b == 0xe0)
        len = 3, lo = 0xa0;
    else if ((b >= 0xe1 && b <= 0xec) || b == 0xee || b == 0xef)
        len = 3;
    else if (b == 0xed)
        len = 3, hi = 0x9f;
    else if (b == 0xf0)
        len = 4, lo = 0x90;
    else if (b >= 0xf1 && b <= 0xf3)
        len = 4;
    else if (b == 0xf4)
        len = 4, hi = 0x8f;
    else
        return 0;
    if (n - i < len || p[i + 1] < lo || p[i + 1] > hi)
        return 0;
    for (size_t k = 2; k < len; k++)
        if (p[i + k] < 0x80 || p[i + k] > 0xbf)
            return 0;
    return len;
}

static int hexval(uint8_t c)
{
    static const char digits[] = "0123456789abcdef";
    if (c >= 'A' && c <= 'F')
        c = (uint8_t)(c - 'A' + 'a');
    const char *d = c ? strchr(digits, c) : NULL;
    return d ? (int)(d - digits) : -1;
}

/* The four hex digits at p[i], or -1. */
static long ref_hex4(const uint8_t *p, size_t n, size_t i)
{
    if (n - i < 4)
        return -1;
    long v = 0;
    for (int k = 0; k < 4; k++) {
        int d = hexval(p[i + k]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* A string at p[i] (its quote): the index past its closing quote, or FAIL. */
static size_t ref_string(const uint8_t *p, size_t n, size_t i)
{
    if (i >= n || p[i] != '"')
        return FAIL;
    for (i++; i < n;) {
        uint8_t c = p[i];
        if (c == '"')
            return i + 1;
        if (c < 0x20)
            return FAIL;
        if (c == '\\') {
            if (i + 1 >= n)
                return FAIL;
            switch (p[i + 1]) {
            case '"':
            case '\\':
            case '/':
            case 'b':
            case 'f':
            case 'n':
            case 'r':
            case 't':
                i += 2;
                break;
            case 'u':
                if (ref_hex4(p, n, i + 2) < 0)
                    return FAIL;
                i += 6;
                break;
            default:
                return FAIL;
            }
            continue;
        }
        size_t len = ref_utf8(p, n, i);
        if (!len)
            return FAIL;
        i += len;
    }
    return FAIL;
}

static int digit(const uint8_t *p, size_t n, size_t i)
{
    return i < n && p[i] >= '0' && p[i] <= '9';
}

static size_t ref_number(const uint8_t *p, size_t n, size_t i)
{
    if (i < n && p[i] == '-')
        i++;
    if (!digit(p, n, i))
        return FAIL;
    if (p[i++] != '0')
        while (digit(p, n, i))
            i++;
    if (i < n && p[i] == '.') {
        if (!digit(p, n, ++i))
            return FAIL;
        while (digit(p, n, i))
            i++;
    }
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-'))
            i++;
        if (!digit(p, n, i))
            return FAIL;
        while (digit(p, n, i))
            i++;
    }
    return i;
}

static size_t ref_literal(const uint8_t *p, size_t n, size_t i, const char *word)
{
    size_t len = strlen(word);
    return n - i >= len && memcmp(p + i, word, len) == 0 ? i + len : FAIL;
}

/* A top-level member, when `r` collects them (failing quietly when out of memory). */
static struct member *add_member(struct ref *r)
{
    if (r->nmem == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        struct member *m = realloc(r->mem, cap * sizeof *m);
        if (!m)
            abort(); /* a reference that cannot answer is no reference */
        r->mem = m;
        r->cap = cap;
    }
    struct member *m = &r->mem[r->nmem++];
    memset(m, 0, sizeof *m);
    return m;
}

/* Is p[0..n) one object, whitespace around it allowed?  With `r`, its depth and
 * top-level members are recorded. */
static int ref_scan(const uint8_t *p, size_t n, struct ref *r)
{
    enum { VALUE, VALUE_OR_CLOSE, KEY, KEY_OR_CLOSE, AFTER } st = VALUE;
    char stack[JSONSCAN_MAX_DEPTH];
    int sp = 0;
    struct member *cur = NULL;
    size_t i = ref_ws(p, n, 0);
    if (i >= n || p[i] != '{')
        return 0;
    for (;;) {
        i = ref_ws(p, n, i);
        switch (st) {
        case KEY_OR_CLOSE:
            if (i < n && p[i] == '}') {
                sp--, i++, st = AFTER;
                break;
            }
            /* fall through */
        case KEY: {
            size_t e = ref_string(p, n, i);
            if (e == FAIL)
                return 0;
            if (sp == 1 && r) {
                cur = add_member(r);
                cur->key = i;
                cur->key_end = e;
            }
            i = ref_ws(p, n, e);
            if (i >= n || p[i] != ':')
                return 0;
            i++, st = VALUE;
            break;
        }
        case VALUE_OR_CLOSE:
            if (i < n && p[i] == ']') {
                sp--, i++, st = AFTER;
                break;
            }
            /* fall through */
        case VALUE: {
            if (i >= n)
                return 0;
            uint8_t c = p[i];
            if (c == '{' || c == '[') {
                if (sp == JSONSCAN_MAX_DEPTH)
                    return 0;
                stack[sp++] = (char)c;
                if (r && sp > r->depth)
                    r->depth = sp;
                i++, st = c == '{' ? KEY_OR_CLOSE : VALUE_OR_CLOSE;
                break;
            }
            size_t e;
            if (c == '"')
                e = ref_string(p, n, i);
            else if (c == 't')
                e = ref_literal(p, n, i, "true");
            else if (c == 'f')
                e = ref_literal(p, n, i, "false");
            else if (c == 'n')
                e = ref_literal(p, n, i, "null");
            else
                e = ref_number(p, n, i);
            if (e == FAIL)
                return 0;
            if (sp == 1 && cur && c == '"') {
                cur->is_string = 1;
                cur->val = i;
                cur->val_end = e;
            }
            i = e, st = AFTER;
            break;
        }
        case AFTER:
            if (sp == 0)
                return i == n;
            if (i >= n)
                return 0;
            if (p[i] == ',') {
                i++, st = stack[sp - 1] == '{' ? KEY : VALUE;
                break;
            }
            if (p[i] != (stack[sp - 1] == '{' ? '}' : ']'))
                return 0;
            sp--, i++;
            break;
        }
    }
}

static void put_cp(uint8_t *o, size_t *len, unsigned long c)
{
    if (c < 0x80) {
        o[(*len)++] = (uint8_t)c;
    } else if (c < 0x800) {
        o[(*len)++] = (uint8_t)(0xc0 | c >> 6);
        o[(*len)++] = (uint8_t)(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
        o[(*len)++] = (uint8_t)(0xe0 | c >> 12);
        o[(*len)++] = (uint8_t)(0x80 | (c >> 6 & 0x3f));
        o[(*len)++] = (uint8_t)(0x80 | (c & 0x3f));
    } else {
        o[(*len)++] = (uint8_t)(0xf0 | c >> 18);
        o[(*len)++] = (uint8_t)(0x80 | (c >> 12 & 0x3f));
        o[(*len)++] = (uint8_t)(0x80 | (c >> 6 & 0x3f));
        o[(*len)++] = (uint8_t)(0x80 | (c & 0x3f));
    }
}

/* The checked string p[i..e) (quotes included) decoded, as jsonscan.h documents it; the
 * result is malloc'ed (never NULL) and NUL-terminated, its length in *len. */
static uint8_t *ref_decode(const uint8_t *p, size_t i, size_t e, size_t *len)
{
    uint8_t *o = malloc(2 * (e - i) + 1);
    if (!o)
        abort();
    *len = 0;
    for (i++, e--; i < e;) {
        if (p[i] != '\\') {
            o[(*len)++] = p[i++];
            continue;
        }
        uint8_t c = p[i + 1];
        i += 2;
        if (c != 'u') {
            const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
            o[(*len)++] = (uint8_t)to[strchr(from, c) - from];
            continue;
        }
        long u = ref_hex4(p, e, i);
        i += 4;
        if (u >= 0xd800 && u < 0xdc00 && e - i >= 6 && p[i] == '\\' && p[i + 1] == 'u') {
            long lo = ref_hex4(p, e, i + 2);
            if (lo >= 0xdc00 && lo < 0xe000) {
                put_cp(o, len,
                       0x10000 + (((unsigned long)u - 0xd800) << 10) +
                           ((unsigned long)lo - 0xdc00));
                i += 6;
                continue;
            }
        }
        if (u == 0 || (u >= 0xd800 && u < 0xe000))
            u = 0xfffd;
        put_cp(o, len, (unsigned long)u);
    }
    o[*len] = 0;
    return o;
}

/* What jsonscan_string should give for `key` (ref->ok known): malloc'ed, or NULL. */
static uint8_t *ref_lookup(const uint8_t *p, const struct ref *r, const char *key, size_t *len)
{
    if (!r->ok)
        return NULL;
    size_t klen = strlen(key);
    for (size_t m = 0; m < r->nmem; m++) {
        size_t kl;
        uint8_t *k = ref_decode(p, r->mem[m].key, r->mem[m].key_end, &kl);
        int match = kl == klen && memcmp(k, key, klen) == 0;
        free(k);
        if (match)
            return r->mem[m].is_string ? ref_decode(p, r->mem[m].val, r->mem[m].val_end, len)
                                       : NULL;
    }
    return NULL;
}

/* ---- the checks ------------------------------------------------------------------- */

/* A copy of p[0..n) with a NUL, in a buffer of exactly that size. */
static char *exact(const void *p, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        abort();
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}

/* jsonscan_is_object on p[0..n), against the reference; its answer. */
static int check_object(const uint8_t *p, size_t n)
{
    char *s = exact(p, n);
    int got = jsonscan_is_object(s);
    CHECK(got == 0 || got == 1);
    CHECK(got == ref_scan(p, n, NULL));
    CHECK(memcmp(s, p, n) == 0 && s[n] == 0);
    free(s);
    return got;
}

/* Well-formed UTF-8 without a NUL. */
static int valid_utf8(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t len = ref_utf8(s, n, i);
        if (!len || s[i] == 0)
            return 0;
        i += len;
    }
    return 1;
}

static void append(char *out, size_t *len, const char *s)
{
    size_t n = strlen(s);
    memcpy(out + *len, s, n);
    *len += n;
}

/* `v` (valid UTF-8) as the member "k" of an object, escaped only where it must be, or
 * with every character outside printable ASCII as \u escapes; the key as "\u006b". */
static char *as_object(const uint8_t *v, size_t n, int all_escaped)
{
    static const char hex[] = "0123456789abcdef";
    char *out = malloc(16 + 12 * n);
    if (!out)
        abort();
    size_t len = 0;
    append(out, &len, all_escaped ? "{\"\\u006b\": \"" : "{\"k\":\"");
    for (size_t i = 0; i < n;) {
        uint8_t c = v[i];
        size_t sl = ref_utf8(v, n, i);
        CHECK(sl > 0);
        if (c == '"' || c == '\\') {
            out[len++] = '\\';
            out[len++] = (char)c;
        } else if (c >= 0x20 && c < 0x7f) {
            out[len++] = (char)c;
        } else if (c < 0x80 || all_escaped) {
            unsigned long cp = c;
            if (sl > 1) {
                cp = c & (0xff >> (sl + 1));
                for (size_t k = 1; k < sl; k++)
                    cp = cp << 6 | (v[i + k] & 0x3f);
            }
            unsigned long units[2] = {cp, 0};
            int nu = 1;
            if (cp >= 0x10000) {
                units[0] = 0xd800 + ((cp - 0x10000) >> 10);
                units[1] = 0xdc00 + ((cp - 0x10000) & 0x3ff);
                nu = 2;
            }
            for (int u = 0; u < nu; u++) {
                out[len++] = '\\';
                out[len++] = 'u';
                for (int sh = 12; sh >= 0; sh -= 4)
                    out[len++] = hex[units[u] >> sh & 0xf];
            }
        } else {
            memcpy(out + len, v + i, sl);
            len += sl;
        }
        i += sl;
    }
    append(out, &len, "\"}");
    out[len] = 0;
    return out;
}

/* jsonscan_string on `text` (n bytes, ref known) for `key`, against the reference. */
static void check_string(const char *text, size_t n, const struct ref *r, const char *key)
{
    char *k = exact(key, strlen(key));
    char *got = jsonscan_string(text, k);
    size_t want_len = 0;
    uint8_t *want = ref_lookup((const uint8_t *)text, r, key, &want_len);
    CHECK(strcmp(k, key) == 0);
    free(k);
    if (!want) {
        CHECK(got == NULL);
        return;
    }
    /* jsonscan_string gives NULL only out of memory, which a fuzz run does not see. */
    CHECK(got != NULL);
    CHECK(valid_utf8(want, want_len));
    CHECK(strlen(got) == want_len && memcmp(got, want, want_len) == 0);
    CHECK(want_len <= n);
    /* Written back as a JSON string, it reads back the same. */
    for (int all = 0; all <= 1; all++) {
        char *obj = as_object((const uint8_t *)got, want_len, all);
        CHECK(jsonscan_is_object(obj) == 1);
        char *again = jsonscan_string(obj, "k");
        CHECK(again && strcmp(again, got) == 0);
        free(again);
        free(obj);
    }
    free(want);
    free(got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t n = nul ? (size_t)(nul - data) : size;
    char *text = exact(data, n);
    char *extra = NULL;
    if (nul) {
        const uint8_t *k = nul + 1, *end = data + size;
        const uint8_t *knul = memchr(k, 0, (size_t)(end - k));
        extra = exact(k, (size_t)((knul ? knul : end) - k));
    }

    CHECK(jsonscan_is_object(NULL) == 0);
    struct ref r = {0};
    r.ok = ref_scan(data, n, &r);
    int ok = check_object(data, n);
    CHECK(ok == r.ok);
    if (ok)
        CHECK(r.depth >= 1 && r.depth <= JSONSCAN_MAX_DEPTH);

    /* Cut short, at a few places: the reference says what the cut text is. */
    size_t cuts[3] = {n ? n - 1 : 0, n / 2, n ? data[0] % n : 0};
    for (int c = 0; c < 3; c++)
        check_object(data, cuts[c]);

    /* With more whitespace around it: the same answer. */
    char *wide = malloc(n + 8);
    if (!wide)
        abort();
    memcpy(wide, " \t\r\n", 4);
    memcpy(wide + 4, data, n);
    memcpy(wide + 4 + n, "\n\r\t ", 4);
    CHECK(check_object((const uint8_t *)wide, n + 8) == ok);
    free(wide);

    /* Inside another object: one level deeper. */
    if (ok) {
        char *in = malloc(n + 6);
        if (!in)
            abort();
        memcpy(in, "{\"\":", 4);
        memcpy(in + 4, data, n);
        memcpy(in + 4 + n, "}", 2);
        CHECK(jsonscan_is_object(in) == (r.depth < JSONSCAN_MAX_DEPTH));
        free(in);
    }

    /* jsonscan_string: the extra key, "", the member names, and one cut short. */
    if (extra)
        check_string(text, n, &r, extra);
    check_string(text, n, &r, "");
    check_string(text, n, &r, "name");
    for (size_t m = 0; m < r.nmem && m < MAX_KEYS; m++) {
        size_t kl;
        uint8_t *k = ref_decode(data, r.mem[m].key, r.mem[m].key_end, &kl);
        CHECK(strlen((char *)k) == kl); /* no NUL inside a decoded name */
        check_string(text, n, &r, (char *)k);
        if (m == 0 && kl) {
            k[kl - 1] = 0;
            check_string(text, n, &r, (char *)k);
        }
        free(k);
    }

    CHECK(memcmp(text, data, n) == 0 && text[n] == 0);
    free(r.mem);
    free(text);
    free(extra);
    return 0;
}
