/*
 * Unit tests of src/common/linetable.c against real line tables from every CPython on the test
 * machines: tests/fixtures/linetables/<version>.txt, written by gen.py there, hold the raw
 * tables of a set of code objects and the line the interpreter itself gives for every
 * instruction offset.  Each table is copied into a buffer of exactly its size, so that an
 * AddressSanitizer build (make asan) catches any read past its end.
 *
 * The fixture directory is tests/fixtures/linetables relative to the working directory
 * (make runs the tests from the top of the tree), or $LINETABLE_FIXTURES.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <limits.h>

#include <pyprof/format.h>

#include "common/linetable.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the fixtures ------------------------------------------------------------------- */

typedef struct fx_code {
    char name[64];
    int first_line;
    uint8_t *tab; /* malloc'd with exactly `len` bytes (NULL when len is 0) */
    size_t len;
    size_t n; /* offsets */
    int64_t *off;
    int *line;
} fx_code;

typedef struct fx_file {
    char path[PATH_MAX];
    char version[32];
    int kind;
    fx_code *codes;
    size_t ncodes;
} fx_file;

static fx_file *files;
static size_t nfiles;

static const char *fixture_dir(void)
{
    const char *d = getenv("LINETABLE_FIXTURES");
    return d && *d ? d : "tests/fixtures/linetables";
}

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    return -1;
}

/* Parses one fixture; any syntax error fails the test with the file and line. */
static void parse_fixture(fx_file *f)
{
    FILE *fp = fopen(f->path, "r");
    if (!fp)
        fail_msg("cannot open %s", f->path);
    char *buf = NULL;
    size_t cap = 0;
    ssize_t got;
    unsigned lineno = 0;
    f->kind = -1;
    while ((got = getline(&buf, &cap, fp)) >= 0) {
        lineno++;
        if (got > 0 && buf[got - 1] == '\n')
            buf[--got] = '\0';
        if (buf[0] == '#' || buf[0] == '\0')
            continue;
        if (strncmp(buf, "version ", 8) == 0) {
            snprintf(f->version, sizeof f->version, "%s", buf + 8);
        } else if (strncmp(buf, "kind ", 5) == 0) {
            f->kind = atoi(buf + 5);
        } else if (strncmp(buf, "code ", 5) == 0) {
            f->codes = realloc(f->codes, (f->ncodes + 1) * sizeof *f->codes);
            assert_non_null(f->codes);
            fx_code *c = &f->codes[f->ncodes++];
            memset(c, 0, sizeof *c);
            char hex[2];
            int pos = 0;
            if (sscanf(buf + 5, "%63s %d %n%1s", c->name, &c->first_line, &pos, hex) != 3)
                fail_msg("%s:%u: bad code line", f->path, lineno);
            const char *h = buf + 5 + pos;
            if (strcmp(h, "-") != 0) {
                size_t hl = strlen(h);
                if (hl % 2)
                    fail_msg("%s:%u: odd hex length", f->path, lineno);
                c->len = hl / 2;
                c->tab = malloc(c->len);
                assert_non_null(c->tab);
                for (size_t i = 0; i < c->len; i++) {
                    int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);
                    if (hi < 0 || lo < 0)
                        fail_msg("%s:%u: bad hex", f->path, lineno);
                    c->tab[i] = (uint8_t)(hi << 4 | lo);
                }
            }
        } else if (strncmp(buf, "at ", 3) == 0) {
            if (!f->ncodes)
                fail_msg("%s:%u: offsets before any code", f->path, lineno);
            fx_code *c = &f->codes[f->ncodes - 1];
            size_t room = (size_t)got / 4 + 1; /* Each "o:l " takes at least 4 chars. */
            c->off = malloc(room * sizeof *c->off);
            c->line = malloc(room * sizeof *c->line);
            assert_non_null(c->off);
            assert_non_null(c->line);
            char *save = NULL;
            for (char *tok = strtok_r(buf + 3, " ", &save); tok;
                 tok = strtok_r(NULL, " ", &save)) {
                long long o;
                int l;
                if (sscanf(tok, "%lld:%d", &o, &l) != 2 || c->n >= room)
                    fail_msg("%s:%u: bad offset pair \"%s\"", f->path, lineno, tok);
                c->off[c->n] = o;
                c->line[c->n] = l;
                c->n++;
            }
        } else {
            fail_msg("%s:%u: unknown line \"%.40s\"", f->path, lineno, buf);
        }
    }
    free(buf);
    fclose(fp);
    if (f->kind < PYPROF_LT_LNOTAB_U8 || f->kind > PYPROF_LT_LOCATIONS_311 || !f->version[0])
        fail_msg("%s: missing version or kind", f->path);
    if (!f->ncodes)
        fail_msg("%s: no code objects", f->path);
    for (size_t i = 0; i < f->ncodes; i++)
        if (!f->codes[i].n)
            fail_msg("%s: code %s has no offsets", f->path, f->codes[i].name);
}

static int load_fixtures(void **state)
{
    (void)state;
    DIR *d = opendir(fixture_dir());
    if (!d) {
        fprintf(stderr,
                "cannot open %s (run from the top of the tree, or set "
                "LINETABLE_FIXTURES)\n",
                fixture_dir());
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".txt") != 0)
            continue;
        files = realloc(files, (nfiles + 1) * sizeof *files);
        if (!files)
            return -1;
        fx_file *f = &files[nfiles++];
        memset(f, 0, sizeof *f);
        snprintf(f->path, sizeof f->path, "%s/%s", fixture_dir(), e->d_name);
    }
    closedir(d);
    return 0;
}

static int free_fixtures(void **state)
{
    (void)state;
    for (size_t i = 0; i < nfiles; i++) {
        for (size_t j = 0; j < files[i].ncodes; j++) {
            free(files[i].codes[j].tab);
            free(files[i].codes[j].off);
            free(files[i].codes[j].line);
        }
        free(files[i].codes);
    }
    free(files);
    return 0;
}

/* ---- tests against the fixtures ----------------------------------------------------- */

/* Every fixture parses, and together they cover every kind of table. */
static void test_fixtures_present(void **state)
{
    int kinds[8] = {0};
    (void)state;
    for (size_t i = 0; i < nfiles; i++) {
        parse_fixture(&files[i]);
        kinds[files[i].kind]++;
    }
    if (nfiles < 4)
        fail_msg("only %zu fixture files in %s", nfiles, fixture_dir());
    for (int k = PYPROF_LT_LNOTAB_U8; k <= PYPROF_LT_LOCATIONS_311; k++)
        if (!kinds[k])
            fail_msg("no fixture of line-table kind %d", k);
}

/* The decoder gives the interpreter's line for every instruction offset. */
static void test_fixtures_every_offset(void **state)
{
    size_t checks = 0, bad = 0;
    (void)state;
    for (size_t i = 0; i < nfiles; i++) {
        const fx_file *f = &files[i];
        for (size_t j = 0; j < f->ncodes; j++) {
            const fx_code *c = &f->codes[j];
            for (size_t k = 0; k < c->n; k++) {
                int got = linetable_line(f->kind, c->tab, c->len, c->first_line, c->off[k]);
                checks++;
                if (got != c->line[k] && bad++ < 20)
                    print_error("%s %s (line %d): offset %lld: got %d, CPython says %d\n",
                                f->version, c->name, c->first_line, (long long)c->off[k], got,
                                c->line[k]);
            }
        }
    }
    print_message("%zu offsets checked in %zu files, %zu wrong\n", checks, nfiles, bad);
    assert_true(checks > 10000);
    assert_int_equal(bad, 0);
}

/* The lines of one fixture are not all the same: the fixture really tests something. */
static void test_fixtures_are_varied(void **state)
{
    (void)state;
    for (size_t i = 0; i < nfiles; i++) {
        const fx_file *f = &files[i];
        int has_big_line = 0, has_none = 0;
        for (size_t j = 0; j < f->ncodes; j++)
            for (size_t k = 0; k < f->codes[j].n; k++) {
                has_big_line |= f->codes[j].line[k] > 400;
                has_none |= f->codes[j].line[k] == -1;
            }
        if (!has_big_line)
            fail_msg("%s: no line above 400 (big jumps missing)", f->path);
        if (f->kind >= PYPROF_LT_LINETABLE_310 && !has_none)
            fail_msg("%s: no instruction without a line", f->path);
    }
}

/*
 * A table cut short (the profiler copies at most a fixed number of bytes) is never read
 * past its end, and gives either the right line or, where the cut hides it, first_line.
 * For the 3.10 format, cut at an entry boundary, the rule is exact: offsets in the kept
 * entries keep their line, the rest get first_line.  For co_lnotab, offsets before the
 * first dropped entry keep their line.
 */
static void test_fixtures_cut_tables(void **state)
{
    (void)state;
    for (size_t i = 0; i < nfiles; i++) {
        const fx_file *f = &files[i];
        for (size_t j = 0; j < f->ncodes; j++) {
            const fx_code *c = &f->codes[j];
            /* Every cut of a short table; about a hundred cuts of a long one, so the
             * test stays fast. */
            size_t step = c->len > 100 ? c->len / 50 : 1;
            for (size_t cut = 0; cut <= c->len; cut += (cut < 50 ? 1 : step)) {
                uint8_t *t = cut ? malloc(cut) : NULL;
                if (cut)
                    memcpy(t, c->tab, cut);
                /* Where the kept entries end, in bytes of bytecode. */
                int64_t covered = 0;
                if (f->kind != PYPROF_LT_LOCATIONS_311)
                    for (size_t p = 0; p + 1 < cut; p += 2)
                        covered += c->tab[p];
                for (size_t k = 0; k < c->n; k++) {
                    int got = linetable_line(f->kind, t, cut, c->first_line, c->off[k]);
                    int ok;
                    if (f->kind == PYPROF_LT_LINETABLE_310 && cut % 2 == 0)
                        ok = got == (c->off[k] < covered ? c->line[k] : c->first_line);
                    else if (f->kind != PYPROF_LT_LOCATIONS_311 && c->off[k] < covered)
                        ok = got == c->line[k];
                    else if (f->kind == PYPROF_LT_LOCATIONS_311 ||
                             f->kind == PYPROF_LT_LINETABLE_310)
                        ok = got == c->line[k] || got == c->first_line;
                    else
                        ok = 1; /* co_lnotab past the cut: any line the kept pairs reach. */
                    if (!ok)
                        fail_msg("%s %s: table cut to %zu of %zu bytes: offset %lld gave "
                                 "%d (full table: %d, first line %d)",
                                 f->version, c->name, cut, c->len, (long long)c->off[k], got,
                                 c->line[k], c->first_line);
                }
                free(t);
            }
        }
    }
}

/* ---- hand-made tables: the semantics, independent of any compiler ------------------- */

static void test_edges(void **state)
{
    static const uint8_t lnotab[] = {4, 1, 4, 2};
    (void)state;
    /* A negative offset (an instruction not started yet) gives first_line. */
    for (int kind = 1; kind <= 4; kind++)
        assert_int_equal(linetable_line(kind, lnotab, sizeof lnotab, 7, -1), 7);
    /* No table, an empty table, an unknown kind: first_line. */
    for (int kind = 0; kind <= 6; kind++) {
        assert_int_equal(linetable_line(kind, NULL, 0, 7, 0), 7);
        assert_int_equal(linetable_line(kind, NULL, 10, 7, 3), 7);
        assert_int_equal(linetable_line(kind, lnotab, 0, 7, 3), 7);
    }
    assert_int_equal(linetable_line(PYPROF_LT_NONE, lnotab, sizeof lnotab, 7, 5), 7);
    assert_int_equal(linetable_line(99, lnotab, sizeof lnotab, 7, 5), 7);
    assert_int_equal(linetable_line(-1, lnotab, sizeof lnotab, 7, 5), 7);
    /* A table of odd length: the lone last byte is ignored. */
    assert_int_equal(linetable_line(PYPROF_LT_LNOTAB_U8, lnotab, 3, 7, 100), 8);
}

static void test_lnotab_signedness(void **state)
{
    /* 0xc8 is +200 in 2.7 (unsigned) and -56 from 3.6 (signed). */
    static const uint8_t tab[] = {0, 0xc8, 6, 3, 255, 0, 10, 0x81};
    (void)state;
    assert_int_equal(linetable_line(PYPROF_LT_LNOTAB_U8, tab, sizeof tab, 100, 0), 300);
    assert_int_equal(linetable_line(PYPROF_LT_LNOTAB_U8, tab, sizeof tab, 100, 5), 300);
    assert_int_equal(linetable_line(PYPROF_LT_LNOTAB_U8, tab, sizeof tab, 100, 6), 303);
    assert_int_equal(linetable_line(PYPROF_LT_LNOTAB_U8, tab, sizeof tab, 100, 270), 303);
    assert_int_equal(linetable_line(PYPROF_LT_LNOTAB_U8, tab, sizeof tab, 100, 271), 432);
    assert_int_equal(linetable_line(PYPROF_LT_LNOTAB_S8, tab, sizeof tab, 100, 0), 44);
    assert_int_equal(linetable_line(PYPROF_LT_LNOTAB_S8, tab, sizeof tab, 100, 6), 47);
    assert_int_equal(linetable_line(PYPROF_LT_LNOTAB_S8, tab, sizeof tab, 100, 271), -80);
}

static void test_linetable_310_handmade(void **state)
{
    /* [0,4) line +1; [4,4) empty, +127; [4,10) no line; [10,16) -3. */
    static const uint8_t tab[] = {4, 1, 0, 127, 6, 0x80, 6, 0xfd};
    (void)state;
    assert_int_equal(linetable_line(PYPROF_LT_LINETABLE_310, tab, sizeof tab, 10, 0), 11);
    assert_int_equal(linetable_line(PYPROF_LT_LINETABLE_310, tab, sizeof tab, 10, 2), 11);
    assert_int_equal(linetable_line(PYPROF_LT_LINETABLE_310, tab, sizeof tab, 10, 4), -1);
    assert_int_equal(linetable_line(PYPROF_LT_LINETABLE_310, tab, sizeof tab, 10, 8), -1);
    assert_int_equal(linetable_line(PYPROF_LT_LINETABLE_310, tab, sizeof tab, 10, 10), 135);
    assert_int_equal(linetable_line(PYPROF_LT_LINETABLE_310, tab, sizeof tab, 10, 14), 135);
    /* Past the end of the table: first_line (the table does not cover it). */
    assert_int_equal(linetable_line(PYPROF_LT_LINETABLE_310, tab, sizeof tab, 10, 16), 10);
}

static void test_locations_311_handmade(void **state)
{
    static const uint8_t tab[] = {
        0x80 | 0 << 3 | 1,  0x12,              /* short form, 2 units, same line */
        0x80 | 11 << 3 | 0, 4,           9,    /* one-line form, +1 */
        0x80 | 12 << 3 | 2, 4,           9,    /* one-line form, +2, 3 units */
        0x80 | 13 << 3 | 0, 0x40 | 0x01, 0x02, /* no columns, svarint -(0x81>>1) = -64 */
        0x80 | 15 << 3 | 3,                    /* no location, 4 units */
        0x80 | 14 << 3 | 1, 0x14,        1,    5,    9, /* long form, +10 */
        0x80 | 13 << 3 | 0, 0x40,        0x40, 0x01,    /* no columns, +2048 (three groups) */
    };
    static const struct {
        int64_t off;
        int line;
    } want[] = {
        {0, 100}, {2, 100}, {3, 100}, {4, 101}, {6, 103}, {10, 103},  {12, 39},
        {13, 39}, {14, -1}, {20, -1}, {22, 49}, {24, 49}, {26, 2097}, {28, 100},
    };
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(want); i++) {
        int got = linetable_line(PYPROF_LT_LOCATIONS_311, tab, sizeof tab, 100, want[i].off);
        if (got != want[i].line)
            fail_msg("offset %lld: got %d, want %d", (long long)want[i].off, got, want[i].line);
    }
    /* A byte without the entry bit where an entry should start: not a table we know. */
    static const uint8_t lost[] = {0x80 | 11 << 3 | 0, 4, 9, 0x05, 0x80};
    assert_int_equal(linetable_line(PYPROF_LT_LOCATIONS_311, lost, sizeof lost, 100, 0), 101);
    assert_int_equal(linetable_line(PYPROF_LT_LOCATIONS_311, lost, sizeof lost, 100, 2), 100);
    /* A varint that never ends. */
    static const uint8_t endless[] = {0x80 | 13 << 3, 0x41, 0x41, 0x41, 0x41,
                                      0x41,           0x41, 0x41, 0x41};
    assert_int_equal(linetable_line(PYPROF_LT_LOCATIONS_311, endless, sizeof endless, 100, 0),
                     100);
}

/*
 * Garbage tables, as a damaged or hostile log could carry: every result is computed
 * without reading out of bounds (make asan) and without signed overflow (make ubsan).
 * Large line deltas repeated are the case that overflows an `int` line counter.
 */
static void test_garbage_tables(void **state)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    (void)state;
    for (int round = 0; round < 2000; round++) {
        size_t len = (size_t)(round % 97) + 1;
        uint8_t *t = malloc(len);
        assert_non_null(t);
        for (size_t i = 0; i < len; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            t[i] = (uint8_t)x;
        }
        for (int kind = 0; kind <= 5; kind++)
            for (int64_t off = -2; off < 300; off += 7)
                (void)linetable_line(kind, t, len, 1, off);
        free(t);
    }
    /* Deltas of +2^29 - 1 (code 13, five varint groups), many times over. */
    uint8_t big[6 * 40];
    for (size_t i = 0; i < sizeof big; i += 6) {
        big[i] = 0x80 | 13 << 3;
        big[i + 1] = 0x40 | 0x3e;
        big[i + 2] = 0x40 | 0x3f;
        big[i + 3] = 0x40 | 0x3f;
        big[i + 4] = 0x40 | 0x3f;
        big[i + 5] = 0x0f;
    }
    int line = linetable_line(PYPROF_LT_LOCATIONS_311, big, sizeof big, 1, 2 * 39);
    (void)line;
    /* co_lnotab: 2^31 / 255 pairs of +255 lines. */
    size_t n = 2 * (INT_MAX / 255 + 2);
    uint8_t *lt = malloc(n);
    assert_non_null(lt);
    memset(lt, 0xff, n);
    for (size_t i = 0; i < n; i += 2)
        lt[i] = 0;
    line = linetable_line(PYPROF_LT_LNOTAB_U8, lt, n, 1, 0);
    (void)line;
    free(lt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures_present),
        cmocka_unit_test(test_fixtures_every_offset),
        cmocka_unit_test(test_fixtures_are_varied),
        cmocka_unit_test(test_fixtures_cut_tables),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_lnotab_signedness),
        cmocka_unit_test(test_linetable_310_handmade),
        cmocka_unit_test(test_locations_311_handmade),
        cmocka_unit_test(test_garbage_tables),
    };
    return cmocka_run_group_tests(tests, load_fixtures, free_fixtures);
}
