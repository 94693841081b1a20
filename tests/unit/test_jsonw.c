/* jsonw: separators, escapes, numbers, line breaks, HTML-safe text and the first write
 * error, each against the exact text expected. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "utils/jsonw.h"

typedef struct out {
    char *buf;
    size_t len;
    FILE *f;
    jsonw w;
} out;

static void start(out *o, unsigned flags)
{
    o->buf = NULL;
    o->len = 0;
    o->f = open_memstream(&o->buf, &o->len);
    assert_non_null(o->f);
    jsonw_init(&o->w, o->f, flags);
}

/* Finishes the text and checks it is exactly `want` (with its final newline). */
static void expect(out *o, const char *want)
{
    assert_int_equal(jsonw_finish(&o->w), 0);
    fclose(o->f);
    assert_string_equal(o->buf, want);
    free(o->buf);
}

static void separators(void **state)
{
    (void)state;
    out o;
    start(&o, 0);
    jsonw_begin_object(&o.w);
    jsonw_key_u64(&o.w, "a", 1);
    jsonw_key(&o.w, "b");
    jsonw_begin_array(&o.w);
    jsonw_i64(&o.w, -2);
    jsonw_bool(&o.w, 1);
    jsonw_null(&o.w);
    jsonw_begin_object(&o.w);
    jsonw_end_object(&o.w);
    jsonw_begin_array(&o.w);
    jsonw_end_array(&o.w);
    jsonw_end_array(&o.w);
    jsonw_key_bool(&o.w, "c", 0);
    jsonw_end_object(&o.w);
    expect(&o, "{\"a\": 1, \"b\": [-2, true, null, {}, []], \"c\": false}\n");

    start(&o, 0);
    jsonw_set_compact(&o.w, 1);
    jsonw_begin_array(&o.w);
    jsonw_u64(&o.w, UINT64_MAX);
    jsonw_i64(&o.w, INT64_MIN);
    jsonw_begin_object(&o.w);
    jsonw_key_string(&o.w, "k", "v");
    jsonw_key_i64(&o.w, "n", 0);
    jsonw_end_object(&o.w);
    jsonw_end_array(&o.w);
    expect(&o, "[18446744073709551615,-9223372036854775808,{\"k\":\"v\",\"n\":0}]\n");
}

static void strings(void **state)
{
    (void)state;
    out o;
    start(&o, 0);
    jsonw_begin_array(&o.w);
    jsonw_string(&o.w, "q\"b\\n\nt\tr\r");
    jsonw_string(&o.w, "\x01\x1f\x7f");
    jsonw_string(&o.w, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    /* Not UTF-8: a lone continuation byte, a cut sequence, an overlong '/', a surrogate. */
    jsonw_string(&o.w, "a\x80z \xe2\x82 \xc0\xaf \xed\xa0\x80");
    jsonw_string(&o.w, "<script>&");
    jsonw_end_array(&o.w);
    expect(&o, "[\"q\\\"b\\\\n\\nt\\tr\\r\", \"\\u0001\\u001f\x7f\", "
               "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\", "
               "\"a\\ufffdz \\ufffd\\ufffd \\ufffd\\ufffd \\ufffd\\ufffd\\ufffd\", "
               "\"<script>&\"]\n");
}

static void html(void **state)
{
    (void)state;
    out o;
    start(&o, JSONW_HTML);
    jsonw_begin_object(&o.w);
    jsonw_key_string(&o.w, "<k>", "</script><!--&");
    jsonw_key(&o.w, "raw");
    jsonw_raw(&o.w, "{\"x\": \"<b>\"}");
    jsonw_end_object(&o.w);
    expect(&o, "{\"\\u003ck\\u003e\": \"\\u003c/script\\u003e\\u003c!--\\u0026\", "
               "\"raw\": {\"x\": \"\\u003cb\\u003e\"}}\n");
}

static void numbers(void **state)
{
    (void)state;
    out o;
    start(&o, 0);
    jsonw_begin_array(&o.w);
    jsonw_double(&o.w, 1.0 / 3, 3);
    jsonw_double(&o.w, 2.5, 0);
    jsonw_double(&o.w, -0.125, 6);
    jsonw_double(&o.w, NAN, 2);
    jsonw_double(&o.w, INFINITY, 2);
    jsonw_double(&o.w, 7, 9);
    jsonw_end_array(&o.w);
    expect(&o, "[0.333, 2, -0.125000, null, null, 7.000000000]\n");
}

static void breaks(void **state)
{
    (void)state;
    out o;
    start(&o, 0);
    jsonw_begin_object(&o.w);
    jsonw_key_u64(&o.w, "n", 2);
    jsonw_break(&o.w, 1);
    jsonw_key(&o.w, "list");
    jsonw_begin_array(&o.w);
    for (int i = 0; i < 2; i++) {
        jsonw_break(&o.w, 2);
        jsonw_u64(&o.w, (uint64_t)i);
    }
    jsonw_end_array(&o.w);
    jsonw_end_object(&o.w);
    expect(&o, "{\"n\": 2,\n \"list\": [\n  0,\n  1]}\n");
}

/* The first failed write is kept and what follows is dropped. */
static void write_error(void **state)
{
    (void)state;
    FILE *f = fopen("/dev/full", "w");
    if (!f)
        skip();
    setvbuf(f, NULL, _IONBF, 0);
    jsonw w;
    jsonw_init(&w, f, 0);
    jsonw_begin_array(&w);
    for (int i = 0; i < 100; i++)
        jsonw_string(&w, "x");
    jsonw_end_array(&w);
    assert_int_equal(jsonw_error(&w), ENOSPC);
    assert_int_equal(jsonw_finish(&w), ENOSPC);
    fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(separators), cmocka_unit_test(strings), cmocka_unit_test(html),
        cmocka_unit_test(numbers),    cmocka_unit_test(breaks),  cmocka_unit_test(write_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
