/*
 * jsonscan: the little JSON the tool reads from logs: a span's info, a JSON object the
 * program wrote.  It is the program's text, so it is checked before it is copied into
 * the tool's own JSON as an object (strictly: RFC 8259 grammar, valid UTF-8, no control
 * character inside strings, at most 64 levels of nesting), and a top-level string member
 * can be read out of it, decoded.  Pure; tool-side only.
 *
 * Interface: JSONSCAN_MAX_DEPTH, jsonscan_is_object, jsonscan_string.
 */
#ifndef PYPROF_JSONSCAN_H
#define PYPROF_JSONSCAN_H

#define JSONSCAN_MAX_DEPTH 64

/* 1 when `s` is exactly one JSON object (whitespace around it allowed), else 0. */
int jsonscan_is_object(const char *s);

/* In `obj`, a string that jsonscan_is_object accepts: the value of its top-level member
 * `key` when that is a string, decoded to UTF-8 (a \u0000 or a lone surrogate becomes
 * U+FFFD, so the result has no NUL inside), malloc'ed; NULL when there is no such string
 * member (the first member of that name counts), `obj` is not an object, or out of
 * memory. */
char *jsonscan_string(const char *obj, const char *key);

#endif
