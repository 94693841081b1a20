/*
 * jsonw: the one JSON writer of the `pyprof` tool.  Every JSON text the tool prints or
 * writes (report, tree, diff and dump --json, trace list and show --json, the data of the
 * `pyprof html` and `trace show --html` pages, the chrome and speedscope exports) goes
 * through it: it places the commas and colons, escapes strings and formats numbers, so
 * no output can be invalid JSON.  It streams to a FILE: nothing of the document is kept
 * in memory (a page can hold millions of samples), and it needs no nesting stack, since
 * a container that ends always leaves its parent holding at least one value.
 *
 * Layout: one line unless the caller asks for a line break (jsonw_break), ", " and ": "
 * between members and values, or "," and ":" once compact (jsonw_set_compact).  Strings:
 * '"' and '\' escaped, newline, tab and carriage return as \n \t \r, the other control
 * characters as \u00xx, each byte that is not part of valid UTF-8 as \ufffd.  With
 * JSONW_HTML, every '<', '>' and '&' is written as a \u escape too, so the text can sit
 * inside a <script> element.
 *
 * The first failed write is remembered (its errno) and everything after it is dropped;
 * the caller reports it, as it reports any other write error of the stream.
 *
 * Interface:
 *   set-up          jsonw, JSONW_HTML, jsonw_init, jsonw_set_compact, jsonw_finish,
 *                   jsonw_error
 *   structure       jsonw_begin_object, jsonw_end_object, jsonw_begin_array,
 *                   jsonw_end_array, jsonw_key, jsonw_break
 *   values          jsonw_string, jsonw_u64, jsonw_i64, jsonw_double, jsonw_bool,
 *                   jsonw_null, jsonw_raw
 *   members         jsonw_key_string, jsonw_key_u64, jsonw_key_i64, jsonw_key_double,
 *                   jsonw_key_bool (a key and its value)
 */
#ifndef PYPROF_JSONW_H
#define PYPROF_JSONW_H

#include <stdint.h>
#include <stdio.h>

/* '<', '>' and '&' as \u escapes (JSON inside an HTML page). */
#define JSONW_HTML 1u

typedef struct jsonw {
    FILE *f;
    unsigned flags;
    int compact;   /* no space after ',' and ':' */
    int first;     /* nothing written yet in the current container */
    int after_key; /* a key was written: its value comes next */
    int brk;       /* the next separator ends the line and indents this many spaces; -1 */
    int err;       /* errno of the first failed write, 0 while none failed */
} jsonw;

/* Starts a JSON text on `f` (flags: 0 or JSONW_HTML).  The caller writes one value. */
void jsonw_init(jsonw *w, FILE *f, unsigned flags);

/* From here on, separators have no space after them (compact) or one (not). */
void jsonw_set_compact(jsonw *w, int compact);

/* Ends a text that stands alone: writes its final newline.  Returns jsonw_error(w). */
int jsonw_finish(jsonw *w);

/* The errno of the first write that failed (EIO when the stream gave none), or 0. */
int jsonw_error(const jsonw *w);

void jsonw_begin_object(jsonw *w);
void jsonw_end_object(jsonw *w);
void jsonw_begin_array(jsonw *w);
void jsonw_end_array(jsonw *w);

/* The key of the next member of the current object; its value is written next. */
void jsonw_key(jsonw *w, const char *key);

/* Before the next value, key or closing bracket: a newline and `indent` spaces (after
 * the comma, when one goes there), for outputs that put each element on a line. */
void jsonw_break(jsonw *w, int indent);

/* A NUL-terminated string, escaped as above. */
void jsonw_string(jsonw *w, const char *s);
void jsonw_u64(jsonw *w, uint64_t v);
void jsonw_i64(jsonw *w, int64_t v);
/* `v` with `decimals` (0 to 9) digits after the point ("%.*f"); null when v is NaN or infinite,
 * which JSON cannot hold. */
void jsonw_double(jsonw *w, double v, int decimals);
void jsonw_bool(jsonw *w, int v);
void jsonw_null(jsonw *w);
/* A value that is JSON already: a number the caller formatted, or an object jsonscan
 * checked.  Written as it is (with JSONW_HTML, '<', '>' and '&' escaped: in valid JSON
 * they only occur inside strings). */
void jsonw_raw(jsonw *w, const char *json);

void jsonw_key_string(jsonw *w, const char *key, const char *s);
void jsonw_key_u64(jsonw *w, const char *key, uint64_t v);
void jsonw_key_i64(jsonw *w, const char *key, int64_t v);
void jsonw_key_double(jsonw *w, const char *key, double v, int decimals);
void jsonw_key_bool(jsonw *w, const char *key, int v);

#endif
