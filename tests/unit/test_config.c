/*
 * Unit tests of src/common/config.c: every parser on good and bad input, template expansion,
 * and config_load against the real environment (setenv/unsetenv), including the exact
 * content of the one error line.
 *
 * Decisions these tests pin down (see the opening comment of config.c):
 *   "10MS" is 10 ms (units are case-insensitive); "10 ms" is rejected (no spaces);
 *   "1e3" is rejected (no exponents); ".5" and "2." are accepted; "" is rejected by the
 *   parsers and treated as unset by config_load; PYPROF_SIGNAL=0 means no signal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <signal.h>

#include <pyprof/format.h>

#include "common/config.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- durations ---------------------------------------------------------------------- */

static void test_duration_good(void **state)
{
    static const struct {
        const char *s;
        uint64_t ns;
    } cases[] = {
        /* clang-format off */
        {"10ms", 10000000ull},     {"0.01", 10000000ull},    {"500us", 500000ull},
        {"1s", 1000000000ull},     {"100us", 100000ull},     {"10s", 10000000000ull},
        {"10", 10000000000ull},    {"1.5ms", 1500000ull},    {"0.0001", 100000ull},
        {"100000ns", 100000ull},   {"2500000ns", 2500000ull}, {"10MS", 10000000ull},
        {"10Ms", 10000000ull},     {"500US", 500000ull},     {"1S", 1000000000ull},
        {".5", 500000000ull},      {"2.", 2000000000ull},    {"0.5s", 500000000ull},
        {"000010ms", 10000000ull}, {"10.000000000000000000000000ms", 10000000ull},
        {"500\xc2\xb5s", 500000ull}, {"0.123456789", 123456789ull},
        /* Digits finer than a nanosecond are dropped, not rounded. */
        {"0.0001234567891", 123456ull},
        {"1.0000000009", 1000000000ull},
        /* clang-format on */
    };
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        uint64_t ns = 0;
        if (config_parse_duration(cases[i].s, CONFIG_PERIOD_MIN_NS, CONFIG_PERIOD_MAX_NS,
                                  &ns) != 0)
            fail_msg("\"%s\" rejected", cases[i].s);
        if (ns != cases[i].ns)
            fail_msg("\"%s\" gave %llu ns, expected %llu", cases[i].s, (unsigned long long)ns,
                     (unsigned long long)cases[i].ns);
    }
}

static void test_duration_bad(void **state)
{
    static const char *const cases[] = {
        /* clang-format off */
        "99us",  "10.5s", "11s",   "abc",   "-1",     "+1",     "1e3",   "1e-2",  "",
        "10 ms", " 10ms", "10ms ", "10m",   "10min",  "1h",     "ms",    ".",     "s",
        ".s",    "1..2",  "1.2.3", "0x10",  "inf",    "nan",    "NaN",   "infinity",
        "0",     "0s",    "99999ns", "99.999us", "10000000001ns", "10.000000001",
        "1,5ms", "10msx", "10mss", "1 0ms",
        /* Overflow: of the integer part, of the product with the unit, of the sum. */
        "99999999999999999999999999", "18446744073709551615s", "18446744073ms",
        "18446744073.709551616",
        /* clang-format on */
    };
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        uint64_t ns = 12345;
        if (config_parse_duration(cases[i], CONFIG_PERIOD_MIN_NS, CONFIG_PERIOD_MAX_NS, &ns) !=
            -1)
            fail_msg("\"%s\" accepted as %llu ns", cases[i], (unsigned long long)ns);
        assert_int_equal(ns, 12345); /* Untouched on failure. */
    }
    uint64_t ns = 0;
    assert_int_equal(config_parse_duration(NULL, 0, UINT64_MAX, &ns), -1);
}

static void test_duration_bounds(void **state)
{
    uint64_t ns = 0;
    (void)state;
    /* The bounds are inclusive, one nanosecond either side is out. */
    assert_int_equal(config_parse_duration("100000ns", 100000, 200000, &ns), 0);
    assert_int_equal(config_parse_duration("200000ns", 100000, 200000, &ns), 0);
    assert_int_equal(config_parse_duration("99999ns", 100000, 200000, &ns), -1);
    assert_int_equal(config_parse_duration("200001ns", 100000, 200000, &ns), -1);
    /* The full range of uint64_t is reachable without wrapping. */
    assert_int_equal(config_parse_duration("18446744073709551615ns", 0, UINT64_MAX, &ns), 0);
    assert_true(ns == UINT64_MAX);
    assert_int_equal(config_parse_duration("18446744073709551616ns", 0, UINT64_MAX, &ns), -1);
    assert_int_equal(config_parse_duration("18446744073.709551615", 0, UINT64_MAX, &ns), 0);
    assert_true(ns == UINT64_MAX);
    assert_int_equal(config_parse_duration("0", 0, UINT64_MAX, &ns), 0);
    assert_true(ns == 0);
    /* The flush range: 10 ms to 3600 s, plain numbers are seconds. */
    assert_int_equal(config_parse_duration("3600", 10000000ull, 3600000000000ull, &ns), 0);
    assert_true(ns == 3600000000000ull);
    assert_int_equal(config_parse_duration("3601", 10000000ull, 3600000000000ull, &ns), -1);
    assert_int_equal(config_parse_duration("9ms", 10000000ull, 3600000000000ull, &ns), -1);
}

/* ---- booleans, integers, clocks ----------------------------------------------------- */

static void test_bool(void **state)
{
    static const struct {
        const char *s;
        int v;
    } good[] = {
        {"1", 1},   {"0", 0},   {"yes", 1}, {"no", 0},   {"true", 1},  {"false", 0}, {"on", 1},
        {"off", 0}, {"YES", 1}, {"No", 0},  {"TRUE", 1}, {"False", 0}, {"ON", 1},    {"oFF", 0},
    };
    static const char *const bad[] = {"",   "2",  "-1", "01",     "y",  "n", "yess",
                                      " 1", "1 ", "t",  "enable", "10", "o"};
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(good); i++) {
        int v = -7;
        if (config_parse_bool(good[i].s, &v) != 0)
            fail_msg("\"%s\" rejected", good[i].s);
        if (v != good[i].v)
            fail_msg("\"%s\" gave %d", good[i].s, v);
    }
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        int v = -7;
        if (config_parse_bool(bad[i], &v) != -1)
            fail_msg("\"%s\" accepted as %d", bad[i], v);
        assert_int_equal(v, -7);
    }
    int v;
    assert_int_equal(config_parse_bool(NULL, &v), -1);
}

static void test_uint(void **state)
{
    unsigned v = 0;
    (void)state;
    assert_int_equal(config_parse_uint("256", 4, 4096, &v), 0);
    assert_int_equal(v, 256);
    assert_int_equal(config_parse_uint("4", 4, 4096, &v), 0);
    assert_int_equal(v, 4);
    assert_int_equal(config_parse_uint("4096", 4, 4096, &v), 0);
    assert_int_equal(v, 4096);
    assert_int_equal(config_parse_uint("0064", 4, 4096, &v), 0);
    assert_int_equal(v, 64);
    assert_int_equal(config_parse_uint("4294967295", 0, UINT_MAX, &v), 0);
    assert_true(v == UINT_MAX);
    assert_int_equal(config_parse_uint("0", 0, 10, &v), 0);
    assert_int_equal(v, 0);

    static const char *const bad[] = {
        /* clang-format off */
        "3", "4097", "", "-4", "+4", " 4", "4 ", "4.0", "0x10", "1e3", "abc", "12a",
        "4294967296", "18446744073709551616", "99999999999999999999999",
        /* clang-format on */
    };
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        v = 777;
        if (config_parse_uint(bad[i], 4, 4096, &v) != -1)
            fail_msg("\"%s\" accepted as %u", bad[i], v);
        assert_int_equal(v, 777);
    }
    assert_int_equal(config_parse_uint("4294967296", 0, UINT_MAX, &v), -1);
    assert_int_equal(config_parse_uint(NULL, 0, 10, &v), -1);
}

static void test_clock(void **state)
{
    int c = -1;
    (void)state;
    assert_int_equal(config_parse_clock("cpu", &c), 0);
    assert_int_equal(c, PYPROF_CLOCK_CPU);
    assert_int_equal(config_parse_clock("wall", &c), 0);
    assert_int_equal(c, PYPROF_CLOCK_WALL);
    assert_int_equal(config_parse_clock("CPU", &c), 0);
    assert_int_equal(c, PYPROF_CLOCK_CPU);
    assert_int_equal(config_parse_clock("Wall", &c), 0);
    assert_int_equal(c, PYPROF_CLOCK_WALL);
    static const char *const bad[] = {"", "cpux", "cp", "walls", " wall", "real", "1"};
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        c = 99;
        if (config_parse_clock(bad[i], &c) != -1)
            fail_msg("\"%s\" accepted", bad[i]);
        assert_int_equal(c, 99);
    }
    assert_int_equal(config_parse_clock(NULL, &c), -1);
}

/* ---- signals ------------------------------------------------------------------------ */

static void test_signal_names(void **state)
{
    static const struct {
        const char *name;
        int sig;
    } table[] = {
        {"HUP", SIGHUP},   {"INT", SIGINT},       {"QUIT", SIGQUIT}, {"ILL", SIGILL},
        {"TRAP", SIGTRAP}, {"ABRT", SIGABRT},     {"BUS", SIGBUS},   {"FPE", SIGFPE},
        {"KILL", SIGKILL}, {"USR1", SIGUSR1},     {"SEGV", SIGSEGV}, {"USR2", SIGUSR2},
        {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},     {"TERM", SIGTERM}, {"STKFLT", SIGSTKFLT},
        {"CHLD", SIGCHLD}, {"CONT", SIGCONT},     {"STOP", SIGSTOP}, {"TSTP", SIGTSTP},
        {"TTIN", SIGTTIN}, {"TTOU", SIGTTOU},     {"URG", SIGURG},   {"XCPU", SIGXCPU},
        {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH},
        {"IO", SIGIO},     {"POLL", SIGPOLL},     {"PWR", SIGPWR},   {"SYS", SIGSYS},
    };
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(table); i++) {
        char buf[32];
        int sig;
        /* Bare, with SIG, lower case, mixed case. */
        const char *forms[4];
        char sig_upper[32], lower[32], mixed[32];
        snprintf(sig_upper, sizeof sig_upper, "SIG%s", table[i].name);
        snprintf(lower, sizeof lower, "sig%s", table[i].name);
        for (char *p = lower; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        snprintf(mixed, sizeof mixed, "Sig%s", table[i].name);
        mixed[3] = (char)(mixed[3] - 'A' + 'a');
        forms[0] = table[i].name;
        forms[1] = sig_upper;
        forms[2] = lower;
        forms[3] = mixed;
        for (size_t f = 0; f < 4; f++) {
            sig = -1;
            if (config_parse_signal(forms[f], &sig) != 0)
                fail_msg("\"%s\" rejected", forms[f]);
            if (sig != table[i].sig)
                fail_msg("\"%s\" gave %d, expected %d", forms[f], sig, table[i].sig);
        }
        /* The number of every standard signal is accepted too. */
        snprintf(buf, sizeof buf, "%d", table[i].sig);
        assert_int_equal(config_parse_signal(buf, &sig), 0);
        assert_int_equal(sig, table[i].sig);
    }
}

static void test_signal_numbers_and_rt(void **state)
{
    int sig = 0;
    (void)state;
    assert_int_equal(config_parse_signal("12", &sig), 0);
    assert_int_equal(sig, 12);
    assert_int_equal(config_parse_signal("1", &sig), 0);
    assert_int_equal(sig, 1);
    assert_int_equal(config_parse_signal("64", &sig), 0);
    assert_int_equal(sig, 64);
    assert_int_equal(config_parse_signal("RTMIN", &sig), 0);
    assert_int_equal(sig, SIGRTMIN);
    assert_int_equal(config_parse_signal("SIGRTMIN+1", &sig), 0);
    assert_int_equal(sig, SIGRTMIN + 1);
    assert_int_equal(config_parse_signal("rtmin+0", &sig), 0);
    assert_int_equal(sig, SIGRTMIN);
    assert_int_equal(config_parse_signal("RTMAX", &sig), 0);
    assert_int_equal(sig, SIGRTMAX);
    assert_int_equal(config_parse_signal("sigrtmax-2", &sig), 0);
    assert_int_equal(sig, SIGRTMAX - 2);
    char buf[32];
    snprintf(buf, sizeof buf, "RTMIN+%d", SIGRTMAX - SIGRTMIN);
    assert_int_equal(config_parse_signal(buf, &sig), 0);
    assert_int_equal(sig, SIGRTMAX);
    snprintf(buf, sizeof buf, "RTMAX-%d", SIGRTMAX - SIGRTMIN);
    assert_int_equal(config_parse_signal(buf, &sig), 0);
    assert_int_equal(sig, SIGRTMIN);

    static const char *const bad[] = {
        "",           "0",         "65",      "-1",     "+12",
        "12x",        " USR2",     "USR2 ",   "USR3",   "SIG",
        "SIGSIGUSR2", "RTMIN-1",   "RTMAX+1", "RTMIN+", "RTMIN+x",
        "RTMIN+1x",   "RTMIN 1",   "RT",      "USR",    "99999999999999999999999",
        "sig12",      "SIGUSR2\n",
    };
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        sig = 1234;
        if (config_parse_signal(bad[i], &sig) != -1)
            fail_msg("\"%s\" accepted as %d", bad[i], sig);
        assert_int_equal(sig, 1234);
    }
    snprintf(buf, sizeof buf, "RTMIN+%d", SIGRTMAX - SIGRTMIN + 1);
    assert_int_equal(config_parse_signal(buf, &sig), -1);
    snprintf(buf, sizeof buf, "RTMAX-%d", SIGRTMAX - SIGRTMIN + 1);
    assert_int_equal(config_parse_signal(buf, &sig), -1);
    assert_int_equal(config_parse_signal(NULL, &sig), -1);
}

/* ---- templates ---------------------------------------------------------------------- */

static const config_template_vars tvars = {
    .pid = 4242,
    .ppid = 1,
    .prog = "python3.11",
    .start = "20240102T030405",
    .host = "box",
    .run_id = "r1d",
    .seq = "0007",
};

static void expect_expand(const char *tmpl, const config_template_vars *v, const char *want)
{
    char out[256];
    memset(out, 'Z', sizeof out);
    if (config_expand_template(tmpl, v, out, sizeof out) != 0)
        fail_msg("template \"%s\" rejected", tmpl);
    assert_string_equal(out, want);
}

static void test_template_sequences(void **state)
{
    (void)state;
    expect_expand("%p", &tvars, "4242");
    expect_expand("%P", &tvars, "1");
    expect_expand("%n", &tvars, "python3.11");
    expect_expand("%t", &tvars, "20240102T030405");
    expect_expand("%h", &tvars, "box");
    expect_expand("%r", &tvars, "r1d");
    expect_expand("%s", &tvars, "0007");
    expect_expand("%%", &tvars, "%");
    expect_expand("", &tvars, "");
    expect_expand("plain", &tvars, "plain");
    expect_expand("/tmp/prof/%n.%p.%P.%t.%h.%r.%%.lz4", &tvars,
                  "/tmp/prof/python3.11.4242.1.20240102T030405.box.r1d.%.lz4");
    expect_expand("%%p%%%p", &tvars, "%p%4242");
    expect_expand("%p%p", &tvars, "42424242");

    /* '/' in the program name and the host becomes '_'; not in the rest. */
    config_template_vars v = tvars;
    v.prog = "a/b/c";
    v.host = "/h/";
    v.run_id = "x/y";
    expect_expand("d/%n-%h-%r", &v, "d/a_b_c-_h_-x/y");

    /* Extreme numbers. */
    v = tvars;
    v.pid = 0;
    v.ppid = -5;
    expect_expand("%p %P", &v, "0 -5");
    v.pid = LONG_MAX;
    v.ppid = LONG_MIN;
    expect_expand("%p %P", &v, "9223372036854775807 -9223372036854775808");

    /* Strings that are missing expand to nothing rather than crash. */
    v = tvars;
    v.prog = NULL;
    v.start = NULL;
    v.host = NULL;
    v.run_id = NULL;
    expect_expand("[%n%t%h%r]", &v, "[]");
}

static void test_template_bad(void **state)
{
    static const char *const bad[] = {"%",   "abc%", "%x", "%q.lz4", "%%%", "a%-b",
                                      "%P%", "%N",   "%H", "% p",    "%\n", "%T"};
    char out[256];
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        memset(out, 'Z', sizeof out);
        if (config_expand_template(bad[i], &tvars, out, sizeof out) != -1)
            fail_msg("template \"%s\" accepted as \"%s\"", bad[i], out);
        assert_int_equal(out[0], '\0'); /* Nothing half-expanded is left behind. */
    }
}

static void test_template_overflow(void **state)
{
    char out[16];
    (void)state;
    /* 15 characters and the NUL fit in 16 bytes; 16 do not. */
    assert_int_equal(config_expand_template("123456789012345", &tvars, out, sizeof out), 0);
    assert_string_equal(out, "123456789012345");
    memset(out, 'Z', sizeof out);
    assert_int_equal(config_expand_template("1234567890123456", &tvars, out, sizeof out), -1);
    assert_int_equal(out[0], '\0');
    /* The same edge, reached through expansions. */
    assert_int_equal(config_expand_template("%p%p%p1234", &tvars, out, 16), -1);
    assert_int_equal(config_expand_template("%p%p%p123", &tvars, out, 16), 0);
    assert_string_equal(out, "424242424242123");
    assert_int_equal(config_expand_template("%t%t", &tvars, out, 16), -1);
    assert_int_equal(config_expand_template("%%", &tvars, out, 1), -1);
    assert_int_equal(config_expand_template("", &tvars, out, 1), 0);
    assert_string_equal(out, "");
    assert_int_equal(config_expand_template("", &tvars, out, 0), -1);
    /* A long host cannot write past the buffer: the bytes after it stay untouched. */
    char guard[40];
    memset(guard, 'G', sizeof guard);
    config_template_vars v = tvars;
    v.host = "a-very-long-host-name.example.com";
    assert_int_equal(config_expand_template("%h", &v, guard, 8), -1);
    for (size_t i = 8; i < sizeof guard; i++)
        assert_int_equal(guard[i], 'G');
    /* A syntax error is reported even after the output is already full. */
    assert_int_equal(config_expand_template("123456789012345678%x", &tvars, out, 16), -1);
}

/* ---- config_load -------------------------------------------------------------------- */

static const char *const all_vars[] = {
    "PYPROF_OUTPUT",        "PYPROF_PERIOD",    "PYPROF_CLOCK",
    "PYPROF_NATIVE",        "PYPROF_MEMORY",    "PYPROF_MAX_DEPTH",
    "PYPROF_CHILDREN",      "PYPROF_FILTER",    "PYPROF_SIGNAL",
    "PYPROF_FLUSH",         "PYPROF_QUIET",     "PYPROF_VERBOSE",
    "PYPROF_ROTATE",        "PYPROF_KEEP",      "PYPROF_CONTROL",
    "PYPROF_ALLOC",         "PYPROF_TEST_SKEW", "PYPROF_TEST_UNCORRECTED",
    "PYPROF_ALLOC_WINDOWS",
};

static int clear_env(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(all_vars); i++)
        unsetenv(all_vars[i]);
    return 0;
}

static void assert_defaults(const pyprof_config *c)
{
    assert_string_equal(c->output, "");
    assert_true(c->period_ns == 10000000ull);
    assert_int_equal(c->clock, PYPROF_CLOCK_CPU);
    assert_int_equal(c->native, 0);
    assert_int_equal(c->memory, 1);
    assert_int_equal(c->max_depth, 256);
    assert_int_equal(c->children, 1);
    assert_string_equal(c->filter, "");
    assert_int_equal(c->signal, 0);
    assert_true(c->flush_ns == 1000000000ull);
    assert_int_equal(c->quiet, 0);
    assert_int_equal(c->verbose, 0);
    assert_int_equal(c->alloc_windows, CONFIG_WINDOWS_AUTO);
}

static void test_defaults(void **state)
{
    pyprof_config c;
    (void)state;
    memset(&c, 0xa5, sizeof c);
    config_defaults(&c);
    assert_defaults(&c);
}

static void test_load_unset_and_empty(void **state)
{
    pyprof_config c;
    char err[256] = "stale";
    (void)state;
    memset(&c, 0xa5, sizeof c);
    assert_int_equal(config_load(&c, err, sizeof err), 0);
    assert_defaults(&c);
    assert_string_equal(err, "");
    /* An empty value is the same as no value. */
    for (size_t i = 0; i < ARRAY_LEN(all_vars); i++)
        setenv(all_vars[i], "", 1);
    memset(&c, 0xa5, sizeof c);
    assert_int_equal(config_load(&c, err, sizeof err), 0);
    assert_defaults(&c);
}

static void test_load_all_set(void **state)
{
    pyprof_config c;
    char err[256];
    (void)state;
    setenv("PYPROF_OUTPUT", "/var/tmp/prof/%n-%p.lz4", 1);
    setenv("PYPROF_PERIOD", "500us", 1);
    setenv("PYPROF_CLOCK", "wall", 1);
    setenv("PYPROF_NATIVE", "1", 1);
    setenv("PYPROF_MEMORY", "off", 1);
    setenv("PYPROF_MAX_DEPTH", "64", 1);
    setenv("PYPROF_CHILDREN", "no", 1);
    setenv("PYPROF_FILTER", "*worker*", 1);
    setenv("PYPROF_SIGNAL", "SIGUSR2", 1);
    setenv("PYPROF_FLUSH", "0.25", 1);
    setenv("PYPROF_QUIET", "true", 1);
    setenv("PYPROF_VERBOSE", "yes", 1);
    if (config_load(&c, err, sizeof err) != 0)
        fail_msg("config_load failed: %s", err);
    assert_string_equal(c.output, "/var/tmp/prof/%n-%p.lz4");
    assert_true(c.period_ns == 500000ull);
    assert_int_equal(c.clock, PYPROF_CLOCK_WALL);
    assert_int_equal(c.native, 1);
    assert_int_equal(c.memory, 0);
    assert_int_equal(c.max_depth, 64);
    assert_int_equal(c.children, 0);
    assert_string_equal(c.filter, "*worker*");
    assert_int_equal(c.signal, SIGUSR2);
    assert_true(c.flush_ns == 250000000ull);
    assert_int_equal(c.quiet, 1);
    assert_int_equal(c.verbose, 1);

    /* Each value on its own, the others unset. */
    clear_env(NULL);
    setenv("PYPROF_SIGNAL", "rtmin+2", 1);
    assert_int_equal(config_load(&c, err, sizeof err), 0);
    assert_int_equal(c.signal, SIGRTMIN + 2);
    setenv("PYPROF_SIGNAL", "0", 1);
    assert_int_equal(config_load(&c, err, sizeof err), 0);
    assert_int_equal(c.signal, 0);
    setenv("PYPROF_SIGNAL", "10", 1);
    assert_int_equal(config_load(&c, err, sizeof err), 0);
    assert_int_equal(c.signal, 10);
    clear_env(NULL);
    setenv("PYPROF_FLUSH", "3600", 1);
    assert_int_equal(config_load(&c, err, sizeof err), 0);
    assert_true(c.flush_ns == 3600000000000ull);
    setenv("PYPROF_FLUSH", "10ms", 1);
    assert_int_equal(config_load(&c, err, sizeof err), 0);
    assert_true(c.flush_ns == 10000000ull);
    clear_env(NULL);
    setenv("PYPROF_OUTPUT", "/tmp/dir", 1);
    assert_int_equal(config_load(&c, err, sizeof err), 0);
    assert_string_equal(c.output, "/tmp/dir");
    setenv("PYPROF_OUTPUT", "/tmp/100%%", 1);
    assert_int_equal(config_load(&c, err, sizeof err), 0);
    assert_string_equal(c.output, "/tmp/100%%");
}

/* Sets one variable to a bad value and checks the error line word for word. */
static void expect_load_error(const char *name, const char *value, const char *want)
{
    pyprof_config c;
    char err[512];
    clear_env(NULL);
    setenv(name, value, 1);
    memset(err, 'Z', sizeof err);
    err[sizeof err - 1] = '\0';
    if (config_load(&c, err, sizeof err) != -1)
        fail_msg("%s=%s accepted", name, value);
    assert_null(strchr(err, '\n'));
    if (want) {
        assert_string_equal(err, want);
    } else {
        /* The line names the variable and shows the value. */
        char head[512];
        snprintf(head, sizeof head, "pyprof: %s=%s is not valid: ", name, value);
        if (strncmp(err, head, strlen(head)) != 0)
            fail_msg("error line \"%s\" does not start with \"%s\"", err, head);
        assert_true(strlen(err) > strlen(head) + 5);
    }
}

static void test_load_errors(void **state)
{
    (void)state;
    expect_load_error("PYPROF_PERIOD", "abc",
                      "pyprof: PYPROF_PERIOD=abc is not valid: expected a period from 100us "
                      "to 10s, such as 10ms, 500us or 0.01");
    expect_load_error("PYPROF_PERIOD", "99us", NULL);
    expect_load_error("PYPROF_PERIOD", "10.5s", NULL);
    expect_load_error("PYPROF_PERIOD", "1e3", NULL);
    expect_load_error("PYPROF_PERIOD", "-1", NULL);
    expect_load_error("PYPROF_FLUSH", "5ms",
                      "pyprof: PYPROF_FLUSH=5ms is not valid: expected a number of seconds "
                      "from 0.01 to 3600, or a duration such as 500ms or 2s");
    expect_load_error("PYPROF_FLUSH", "3601", NULL);
    expect_load_error("PYPROF_CLOCK", "real",
                      "pyprof: PYPROF_CLOCK=real is not valid: expected cpu or wall");
    expect_load_error("PYPROF_NATIVE", "2",
                      "pyprof: PYPROF_NATIVE=2 is not valid: expected 0 or 1 (also no/yes, "
                      "false/true, off/on)");
    expect_load_error("PYPROF_MEMORY", "maybe", NULL);
    expect_load_error("PYPROF_CHILDREN", "-1", NULL);
    expect_load_error("PYPROF_QUIET", "quiet", NULL);
    expect_load_error("PYPROF_VERBOSE", "2", NULL);
    expect_load_error("PYPROF_MAX_DEPTH", "3",
                      "pyprof: PYPROF_MAX_DEPTH=3 is not valid: expected a whole number of "
                      "frames from 4 to 4096");
    expect_load_error("PYPROF_MAX_DEPTH", "4097", NULL);
    expect_load_error("PYPROF_MAX_DEPTH", "lots", NULL);
    expect_load_error("PYPROF_SIGNAL", "USR3",
                      "pyprof: PYPROF_SIGNAL=USR3 is not valid: expected a signal name or "
                      "number, such as USR2, SIGUSR1, 12 or RTMIN+1");
    expect_load_error("PYPROF_SIGNAL", "65", NULL);
    expect_load_error("PYPROF_OUTPUT", "/tmp/%q.lz4",
                      "pyprof: PYPROF_OUTPUT=/tmp/%q.lz4 is not valid: expected a directory, "
                      "or a file-name template where % is followed by one of p P n t h r s %");
    expect_load_error("PYPROF_OUTPUT", "/tmp/100%", NULL);
}

/* The caller prints the error line unless PYPROF_QUIET says not to, so quiet must be
 * known even when another variable is bad. */
static void test_load_quiet_survives_errors(void **state)
{
    pyprof_config c;
    char err[256];
    (void)state;
    setenv("PYPROF_QUIET", "1", 1);
    setenv("PYPROF_VERBOSE", "1", 1);
    setenv("PYPROF_PERIOD", "abc", 1);
    assert_int_equal(config_load(&c, err, sizeof err), -1);
    assert_int_equal(c.quiet, 1);
    assert_int_equal(c.verbose, 1);
    assert_non_null(strstr(err, "PYPROF_PERIOD=abc"));
    /* A bad PYPROF_QUIET cannot silence its own error. */
    setenv("PYPROF_QUIET", "shh", 1);
    assert_int_equal(config_load(&c, err, sizeof err), -1);
    assert_int_equal(c.quiet, 0);
    assert_non_null(strstr(err, "PYPROF_QUIET=shh"));
}

static void test_load_forbidden_signals(void **state)
{
    static const struct {
        const char *value;
        const char *want;
    } cases[] = {
        {"KILL", "pyprof: PYPROF_SIGNAL=KILL is not valid: SIGKILL cannot be caught; use a "
                 "signal such as USR2"},
        {"sigstop", "pyprof: PYPROF_SIGNAL=sigstop is not valid: SIGSTOP cannot be caught; "
                    "use a signal such as USR2"},
        {"SEGV", "pyprof: PYPROF_SIGNAL=SEGV is not valid: SIGSEGV reports faults and cannot "
                 "toggle profiling; use a signal such as USR2"},
        {"BUS", NULL},
        {"ILL", NULL},
        {"FPE", NULL},
        {"SIGPROF", "pyprof: PYPROF_SIGNAL=SIGPROF is not valid: SIGPROF is used by pyprof "
                    "itself for sampling; use a signal such as USR2"},
        {"trap", "pyprof: PYPROF_SIGNAL=trap is not valid: SIGTRAP is used by pyprof itself "
                 "for sampling; use a signal such as USR2"},
        {"27", "pyprof: PYPROF_SIGNAL=27 is not valid: SIGPROF is used by pyprof itself for "
               "sampling; use a signal such as USR2"},
        {"9", NULL},
        {"32", "pyprof: PYPROF_SIGNAL=32 is not valid: signal 32 is reserved by the C "
               "library; use a signal such as USR2 or RTMIN+1"},
    };
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(cases); i++)
        expect_load_error("PYPROF_SIGNAL", cases[i].value, cases[i].want);
}

static void test_load_error_value_is_sanitised(void **state)
{
    pyprof_config c;
    char err[512];
    (void)state;
    /* A newline in the value must not split the message into two lines. */
    expect_load_error("PYPROF_CLOCK", "cpu\nwall",
                      "pyprof: PYPROF_CLOCK=cpu?wall is not valid: expected cpu or wall");
    /* A very long value is shown cut short, so the line stays readable. */
    char longval[300];
    memset(longval, 'x', sizeof longval - 1);
    longval[sizeof longval - 1] = '\0';
    clear_env(NULL);
    setenv("PYPROF_PERIOD", longval, 1);
    assert_int_equal(config_load(&c, err, sizeof err), -1);
    assert_true(strlen(err) < 200);
    assert_non_null(strstr(err, "PYPROF_PERIOD=xxxx"));
    assert_non_null(strstr(err, "xxx... is not valid"));
    /* A tiny error buffer is cut, still NUL-terminated, and nothing is written past it. */
    char small[16];
    memset(small, 'G', sizeof small);
    assert_int_equal(config_load(&c, small, 8), -1);
    assert_int_equal(small[7], '\0');
    assert_int_equal(small[8], 'G');
    assert_int_equal(config_load(&c, NULL, 0), -1);
    /* Values longer than their fields are errors, not cut silently. */
    char path[PATH_MAX + 10];
    memset(path, 'p', sizeof path - 1);
    path[0] = '/';
    path[sizeof path - 1] = '\0';
    clear_env(NULL);
    setenv("PYPROF_OUTPUT", path, 1);
    assert_int_equal(config_load(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "PYPROF_OUTPUT="));
    path[PATH_MAX - 1] = '\0'; /* 4095 bytes: the longest that fits. */
    setenv("PYPROF_OUTPUT", path, 1);
    assert_int_equal(config_load(&c, err, sizeof err), 0);
    assert_int_equal(strlen(c.output), PATH_MAX - 1);
    char glob[300];
    memset(glob, '*', sizeof glob - 1);
    glob[sizeof glob - 1] = '\0';
    clear_env(NULL);
    setenv("PYPROF_FILTER", glob, 1);
    assert_int_equal(config_load(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "PYPROF_FILTER="));
    glob[255] = '\0';
    setenv("PYPROF_FILTER", glob, 1);
    assert_int_equal(config_load(&c, err, sizeof err), 0);
    assert_int_equal(strlen(c.filter), 255);
}

/* ---- PYPROF_ROTATE, PYPROF_KEEP, PYPROF_CONTROL -------------------------------------- */

static void test_rotate_parse(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        uint64_t ns, bytes;
    } good[] = {
        {"1s", 1000000000ull, 0},      {"10min", 600000000000ull, 0},
        {"1.5h", 5400000000000ull, 0}, {"2d", 172800000000000ull, 0},
        {"30", 30000000000ull, 0},     {"1500ms", 1500000000ull, 0},
        {"64MB", 0, 64ull << 20},      {"64mib", 0, 64ull << 20},
        {"512KB", 0, 512ull << 10},    {"1G", 0, 1ull << 30},
        {"65536B", 0, 65536},          {"0.5MB", 0, 512ull << 10},
    };
    for (size_t i = 0; i < ARRAY_LEN(good); i++) {
        uint64_t ns = 99, bytes = 99;
        if (config_parse_rotate(good[i].s, &ns, &bytes) < 0)
            fail_msg("\"%s\" rejected", good[i].s);
        if (ns != good[i].ns || bytes != good[i].bytes)
            fail_msg("\"%s\" gave %llu ns, %llu bytes", good[i].s, (unsigned long long)ns,
                     (unsigned long long)bytes);
    }
    static const char *const bad[] = {
        "",     "0",    "0.5s", "999ms", "-1min",  "1m", "10 min", "MB",  "5msMB",
        "1e3s", "63KB", "2TB",  "367d",  "1.5.5h", "h",  "64MBB",  "nan",
    };
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        uint64_t ns = 0, bytes = 0;
        if (config_parse_rotate(bad[i], &ns, &bytes) == 0)
            fail_msg("\"%s\" accepted as %llu ns, %llu bytes", bad[i], (unsigned long long)ns,
                     (unsigned long long)bytes);
    }
}

static void test_load_rotate_keep_control(void **state)
{
    (void)state;
    pyprof_config c;
    char err[512];
    assert_int_equal(config_load(&c, err, sizeof err), 0);
    assert_true(c.rotate_ns == 0 && c.rotate_bytes == 0 && c.keep == 0);
    assert_int_equal(c.control, 1);
    setenv("PYPROF_KEEP", "3", 1);
    assert_int_equal(config_load(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "PYPROF_KEEP=3"));
    assert_non_null(strstr(err, "PYPROF_ROTATE"));
    setenv("PYPROF_ROTATE", "10min", 1);
    assert_int_equal(config_load(&c, err, sizeof err), 0);
    assert_true(c.rotate_ns == 600000000000ull && c.keep == 3);
    setenv("PYPROF_ROTATE", "10 minutes", 1);
    assert_int_equal(config_load(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "PYPROF_ROTATE=10 minutes"));
    setenv("PYPROF_ROTATE", "64MB", 1);
    setenv("PYPROF_KEEP", "0", 1);
    assert_int_equal(config_load(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "PYPROF_KEEP=0"));
    unsetenv("PYPROF_KEEP");
    setenv("PYPROF_CONTROL", "0", 1);
    assert_int_equal(config_load(&c, err, sizeof err), 0);
    assert_true(c.rotate_bytes == (64ull << 20) && c.control == 0);
    setenv("PYPROF_CONTROL", "maybe", 1);
    assert_int_equal(config_load(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "PYPROF_CONTROL=maybe"));
}

static void test_alloc_parse(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        uint64_t bytes;
    } good[] = {
        {"0", 0},
        {"1", 1},
        {"65536", 65536},
        {"512KB", 512ull << 10},
        {"512K", 512ull << 10},
        {"1MB", 1ull << 20},
        {"1MiB", 1ull << 20},
        {"4096B", 4096},
        {"1G", 1ull << 30},
        {"1GB", 1ull << 30},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint64_t b = 12345;
        if (config_parse_alloc(good[i].s, &b) < 0)
            fail_msg("refused %s", good[i].s);
        if (b != good[i].bytes)
            fail_msg("%s read as %llu", good[i].s, (unsigned long long)b);
    }
    static const char *const bad[] = {
        "",      "-1", "1.5MB", "2GB", "1m", "1kb", "KB", "1 MB", "99999999999999999999",
        "0x100", "on"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t b;
        if (config_parse_alloc(bad[i], &b) == 0)
            fail_msg("took %s as %llu", bad[i], (unsigned long long)b);
    }
}

static void test_alloc_windows_parse(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int shift;
    } good[] = {
        {"auto", CONFIG_WINDOWS_AUTO}, {"off", 0}, {"1/2", 1}, {"1/16", 4}, {"1/1024", 10},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int k = 99;
        if (config_parse_alloc_windows(good[i].s, &k) < 0)
            fail_msg("refused %s", good[i].s);
        if (k != good[i].shift)
            fail_msg("%s read as %d", good[i].s, k);
    }
    static const char *const bad[] = {"",     "1",     "1/1",  "1/3", "1/0",   "1/2048",
                                      "2/16", "1/16x", "AUTO", "on",  "1/ 16", "0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int k;
        if (config_parse_alloc_windows(bad[i], &k) == 0)
            fail_msg("took %s as %d", bad[i], k);
    }
}

static void test_load_alloc(void **state)
{
    (void)state;
    pyprof_config c;
    char err[512];
    assert_int_equal(config_load(&c, err, sizeof err), 0);
    assert_true(c.alloc == 0);
    setenv("PYPROF_ALLOC", "512KB", 1);
    assert_int_equal(config_load(&c, err, sizeof err), 0);
    assert_true(c.alloc == 512ull << 10);
    setenv("PYPROF_ALLOC", "lots", 1);
    assert_int_equal(config_load(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "PYPROF_ALLOC=lots"));
}

static void test_skew_parse(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        unsigned milli;
    } good[] = {{"1", 1000},     {"1.3", 1300}, {"1.25", 1250},
                {"1.001", 1001}, {"4", 4000},   {"2.0", 2000}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        unsigned m = 1;
        if (config_parse_skew(good[i].s, &m) < 0)
            fail_msg("refused %s", good[i].s);
        if (m != good[i].milli)
            fail_msg("%s read as %u", good[i].s, m);
    }
    static const char *const bad[] = {"",   "0.9", "0",   "4.001", "5",    "1.2345",     "1.",
                                      ".5", "-1",  "1,3", "x",     "1.3x", "99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsigned m;
        if (config_parse_skew(bad[i], &m) == 0)
            fail_msg("took %s as %u", bad[i], m);
    }
}

static void test_load_test_settings(void **state)
{
    (void)state;
    pyprof_config c;
    char err[512];
    assert_int_equal(config_load(&c, err, sizeof err), 0);
    assert_int_equal(c.test_skew_milli, 1000);
    assert_int_equal(c.test_uncorrected, 0);
    setenv("PYPROF_TEST_SKEW", "1.3", 1);
    setenv("PYPROF_TEST_UNCORRECTED", "1", 1);
    assert_int_equal(config_load(&c, err, sizeof err), 0);
    assert_int_equal(c.test_skew_milli, 1300);
    assert_int_equal(c.test_uncorrected, 1);
    setenv("PYPROF_TEST_SKEW", "0.5", 1);
    assert_int_equal(config_load(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "PYPROF_TEST_SKEW=0.5"));
    unsetenv("PYPROF_TEST_SKEW");
    unsetenv("PYPROF_TEST_UNCORRECTED");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duration_good),
        cmocka_unit_test(test_duration_bad),
        cmocka_unit_test(test_duration_bounds),
        cmocka_unit_test(test_bool),
        cmocka_unit_test(test_uint),
        cmocka_unit_test(test_clock),
        cmocka_unit_test(test_signal_names),
        cmocka_unit_test(test_signal_numbers_and_rt),
        cmocka_unit_test(test_template_sequences),
        cmocka_unit_test(test_template_bad),
        cmocka_unit_test(test_template_overflow),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test_setup(test_load_unset_and_empty, clear_env),
        cmocka_unit_test_setup(test_load_all_set, clear_env),
        cmocka_unit_test_setup(test_load_errors, clear_env),
        cmocka_unit_test_setup(test_load_quiet_survives_errors, clear_env),
        cmocka_unit_test_setup(test_load_forbidden_signals, clear_env),
        cmocka_unit_test_setup(test_load_error_value_is_sanitised, clear_env),
        cmocka_unit_test(test_rotate_parse),
        cmocka_unit_test_setup(test_load_rotate_keep_control, clear_env),
        cmocka_unit_test(test_alloc_parse),
        cmocka_unit_test(test_alloc_windows_parse),
        cmocka_unit_test_setup(test_load_alloc, clear_env),
        cmocka_unit_test(test_skew_parse),
        cmocka_unit_test_setup(test_load_test_settings, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
