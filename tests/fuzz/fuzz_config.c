/*
 * fuzz_config: a libFuzzer target for the PYPROF_* value parsers and the file-name
 * template (src/common/config.c).  Their input is the environment of somebody else's
 * process (the library parses it inside the host) and the `pyprof run` command line.
 *
 * An input is a fixed head, then NUL-separated fields:
 *
 *     outlen (2 bytes) | pid (8) | ppid (8) | min (4) | max (4) | value \0 prog \0 start
 *     \0 host \0 run_id \0 seq
 *
 * all little-endian; missing bytes are zeros and missing fields are NULL.  Every string
 * is copied into a buffer of exactly its size (with its NUL), so that a read past the NUL
 * is caught by AddressSanitizer.  `value` goes to every parser, and is also the template
 * expanded into an output buffer of exactly `outlen` bytes (1 to 1024).  What config.h
 * promises is checked:
 *   - config_parse_duration: a value in [min, max], the same value under the widest
 *     bounds, and the value written back as "<n>ns" reads the same;
 *   - config_parse_bool: 0 or 1;  config_parse_uint: in [min, max], and "%u" reads back;
 *   - config_parse_signal: from 1 to SIGRTMAX, and its number reads back;
 *   - config_parse_clock: PYPROF_CLOCK_CPU or PYPROF_CLOCK_WALL;
 *   - config_parse_rotate: exactly one of the time and the size, within the
 *     CONFIG_ROTATE_* bounds;
 *   - config_expand_template: the output always NUL-terminated inside `outlen` bytes
 *     (ASan catches a byte written past them); a success holds the same text as an
 *     expansion into a large buffer, and fits; a failure into the large buffer is a
 *     failure at every size.
 * Beyond config.h's promises, a parser that refuses a value leaves its output alone
 * (checked for the duration, integer, boolean and clock parsers): a caller may keep its
 * default there.
 *
 * Built and run by `make fuzz` (tests/fuzz/README.md); `make fuzz-replay` replays
 * tests/fuzz/corpus-config/ with tests/fuzz/replay_main.c.
 */
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pyprof/format.h>

#include "common/config.h"
#include "fuzz.h"

#define HEAD 26
#define NFIELDS 6
#define OUT_MAX 1024
#define BIG (OUT_MAX * 64)

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void check_duration(const char *s, uint64_t min, uint64_t max)
{
    const uint64_t untouched = 0x5a5a5a5a5a5a5a5aull;
    uint64_t ns = untouched, any = untouched;
    int rc = config_parse_duration(s, min, max, &ns);
    int rc_any = config_parse_duration(s, 0, UINT64_MAX, &any);
    if (rc < 0) {
        CHECK(ns == untouched);
        CHECK(rc_any < 0 || any < min || any > max);
        return;
    }
    CHECK(rc == 0 && rc_any == 0);
    CHECK(ns >= min && ns <= max && ns == any);
    char again[32];
    snprintf(again, sizeof again, "%lluns", (unsigned long long)ns);
    uint64_t back = 0;
    CHECK(config_parse_duration(again, 0, UINT64_MAX, &back) == 0 && back == ns);
}

static void check_uint(const char *s, unsigned min, unsigned max)
{
    unsigned v = 0x5a5a5a5au, any = 0;
    int rc = config_parse_uint(s, min, max, &v);
    int rc_any = config_parse_uint(s, 0, UINT_MAX, &any);
    if (rc < 0) {
        CHECK(v == 0x5a5a5a5au);
        CHECK(rc_any < 0 || any < min || any > max);
        return;
    }
    CHECK(rc == 0 && rc_any == 0 && v >= min && v <= max && v == any);
    char again[16];
    snprintf(again, sizeof again, "%u", v);
    unsigned back = 0;
    CHECK(config_parse_uint(again, 0, UINT_MAX, &back) == 0 && back == v);
}

static void check_values(const char *s)
{
    int b = 7;
    if (config_parse_bool(s, &b) == 0)
        CHECK(b == 0 || b == 1);
    else
        CHECK(b == 7);

    int sig = 0;
    if (config_parse_signal(s, &sig) == 0) {
        CHECK(sig >= 1 && sig <= SIGRTMAX);
        char again[16];
        snprintf(again, sizeof again, "%d", sig);
        int back = 0;
        CHECK(config_parse_signal(again, &back) == 0 && back == sig);
    }

    int clock = -1;
    if (config_parse_clock(s, &clock) == 0)
        CHECK(clock == PYPROF_CLOCK_CPU || clock == PYPROF_CLOCK_WALL);
    else
        CHECK(clock == -1);

    uint64_t ns = 0, bytes = 0;
    if (config_parse_rotate(s, &ns, &bytes) == 0) {
        CHECK((ns == 0) != (bytes == 0));
        if (ns)
            CHECK(ns >= CONFIG_ROTATE_MIN_NS && ns <= CONFIG_ROTATE_MAX_NS);
        else
            CHECK(bytes >= CONFIG_ROTATE_MIN_BYTES && bytes <= CONFIG_ROTATE_MAX_BYTES);
    }
}

static void check_template(const char *tmpl, const config_template_vars *v, size_t outlen)
{
    static char big[BIG];
    char *out = malloc(outlen);
    if (!out)
        return;
    memset(out, 'X', outlen);
    int rc = config_expand_template(tmpl, v, out, outlen);
    CHECK(rc == 0 || rc == -1);
    CHECK(memchr(out, '\0', outlen) != NULL);
    int rc_big = config_expand_template(tmpl, v, big, sizeof big);
    CHECK(rc_big == 0 || rc_big == -1);
    CHECK(memchr(big, '\0', sizeof big) != NULL);
    if (rc == 0) {
        CHECK(rc_big == 0);
        CHECK(strlen(out) < outlen && strcmp(out, big) == 0);
    }
    if (rc_big < 0)
        CHECK(rc < 0);
    else if (strlen(big) < outlen)
        CHECK(rc == 0); /* it fits, so it is written */
    /* Nothing but '%' and the conversions changes: without a '%', the template itself. */
    if (rc_big == 0 && !strchr(tmpl, '%'))
        CHECK(strcmp(big, tmpl) == 0);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t head[HEAD] = {0};
    memcpy(head, data, size < HEAD ? size : HEAD);
    size_t outlen = le(head, 2) % OUT_MAX + 1;
    config_template_vars v;
    v.pid = (long)le(head + 2, 8);
    v.ppid = (long)le(head + 10, 8);
    unsigned umin = (unsigned)le(head + 18, 4), umax = (unsigned)le(head + 22, 4);

    /* The fields, each in a buffer of exactly its size. */
    char *field[NFIELDS] = {0};
    const uint8_t *p = size > HEAD ? data + HEAD : NULL;
    const uint8_t *end = data + size;
    for (int i = 0; i < NFIELDS && p; i++) {
        const uint8_t *nul = memchr(p, '\0', (size_t)(end - p));
        size_t n = nul ? (size_t)(nul - p) : (size_t)(end - p);
        field[i] = malloc(n + 1);
        if (!field[i])
            goto out;
        memcpy(field[i], p, n);
        field[i][n] = '\0';
        p = nul ? nul + 1 : NULL;
    }
    const char *value = field[0] ? field[0] : "";
    v.prog = field[1];
    v.start = field[2];
    v.host = field[3];
    v.run_id = field[4];
    v.seq = field[5];

    check_duration(value, CONFIG_PERIOD_MIN_NS, CONFIG_PERIOD_MAX_NS);
    /* Bounds from the input too: [min, max] in microseconds, either way round. */
    check_duration(value, (uint64_t)umin * 1000u, (uint64_t)umax * 1000u);
    check_uint(value, umin, umax);
    check_uint(value, CONFIG_MAX_DEPTH_MIN, CONFIG_MAX_DEPTH_MAX);
    check_values(value);
    check_template(value, &v, outlen);

out:
    for (int i = 0; i < NFIELDS; i++)
        free(field[i]);
    return 0;
}
