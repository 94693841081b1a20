/*
 * config: the PYPROF_* environment variables (README, "Variables").  See config.h.
 *
 * This file is linked into the injected library, which must never harm its host, so it
 * keeps to a small diet: no allocation, no stdio except snprintf into the caller's error
 * buffer, nothing that depends on the locale (no strtod, no strcasecmp, no ctype), and
 * every buffer has a known bound.  Decimal numbers are parsed with integer arithmetic.
 *
 * Accepted syntax, decided here and pinned by tests/unit/test_config.c:
 *   durations  a decimal number with an optional unit s, ms, us (or µs) or ns; no unit
 *              means seconds.  Units are case-insensitive ("10MS" is 10 ms).  Fractions are
 *              allowed ("1.5ms", ".5", "2."); signs, exponents, spaces, hex, inf and nan
 *              are not.  Digits finer than a nanosecond are dropped.
 *   booleans   0/1, no/yes, false/true, off/on, case-insensitive.
 *   integers   decimal digits only: no sign, no spaces.
 *   signals    a name with or without SIG, case-insensitive (USR2, sigusr2), a number from
 *              1 to SIGRTMAX, or RTMIN, RTMIN+n, RTMAX, RTMAX-n.
 *   clocks     cpu or wall, case-insensitive.
 * An empty variable is the same as an unset one, and PYPROF_SIGNAL=0 means no signal.
 * PYPROF_SIGNAL refuses what cannot work as a toggle: KILL and STOP (uncatchable), SEGV,
 * BUS, ILL and FPE (faults), TRAP and PROF (pyprof samples with them), and 32..SIGRTMIN-1
 * (the C library's own).  PYPROF_OUTPUT is checked for template syntax at once, directory
 * or not: a literal '%' is written "%%".  config_load reads PYPROF_QUIET and PYPROF_VERBOSE
 * first, so that c->quiet tells the caller whether to print even when it fails.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pyprof/format.h>

#define NS_PER_S 1000000000ull
#define CONFIG_FLUSH_MIN_NS 10000000ull      /* 10 ms */
#define CONFIG_FLUSH_MAX_NS 3600000000000ull /* 3600 s */

/* ---- small locale-free helpers ------------------------------------------------------ */

static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }

static char to_lower(char ch) { return (ch >= 'A' && ch <= 'Z') ? (char)(ch - 'A' + 'a') : ch; }

/* Case-insensitive equality of two NUL-terminated strings, ASCII only. */
static int str_ieq(const char *a, const char *b)
{
    while (*a && *b) {
        if (to_lower(*a) != to_lower(*b))
            return 0;
        a++;
        b++;
    }
    return *a == *b;
}

/* Case-insensitive test that `s` starts with `prefix`, ASCII only. */
static int str_iprefix(const char *s, const char *prefix)
{
    while (*prefix) {
        if (to_lower(*s) != to_lower(*prefix))
            return 0;
        s++;
        prefix++;
    }
    return 1;
}

/* Parses the decimal digits at *s into *v, advancing *s.  Returns 0, or -1 when there is
 * no digit or the value exceeds `max`. */
static int parse_digits(const char **s, uint64_t max, uint64_t *v)
{
    const char *p = *s;
    uint64_t n = 0;
    if (!is_digit(*p))
        return -1;
    for (; is_digit(*p); p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (n > (max - d) / 10)
            return -1;
        n = n * 10 + d;
    }
    *s = p;
    *v = n;
    return 0;
}

/* ---- parsers ------------------------------------------------------------------------ */

int config_parse_duration(const char *s, uint64_t min_ns, uint64_t max_ns, uint64_t *ns)
{
    if (!s)
        return -1;
    /* The number first: integer digits, then an optional fraction, at least one digit in
     * all.  The integer part is kept exactly (bounded so that a huge value is an overflow
     * rather than a wrap); the fraction is kept as digits to scale once the unit is
     * known. */
    const char *p = s;
    uint64_t whole = 0;
    int have_digits = 0;
    if (is_digit(*p)) {
        if (parse_digits(&p, UINT64_MAX, &whole) < 0)
            return -1;
        have_digits = 1;
    }
    const char *frac = NULL;
    size_t nfrac = 0;
    if (*p == '.') {
        p++;
        frac = p;
        while (is_digit(*p))
            p++;
        nfrac = (size_t)(p - frac);
        have_digits |= nfrac > 0;
    }
    if (!have_digits)
        return -1;

    uint64_t unit;
    if (*p == '\0' || str_ieq(p, "s"))
        unit = NS_PER_S;
    else if (str_ieq(p, "ms"))
        unit = 1000000ull;
    else if (str_ieq(p, "us") || strcmp(p, "\xc2\xb5s") == 0) /* "µs" in UTF-8 */
        unit = 1000ull;
    else if (str_ieq(p, "ns"))
        unit = 1ull;
    else
        return -1;

    if (whole > UINT64_MAX / unit)
        return -1;
    uint64_t total = whole * unit;
    /* Each fraction digit is worth unit/10^k ns; unit is a power of ten, so this is exact
     * until the place value drops below 1 ns, where the rest is ignored. */
    uint64_t place = unit;
    for (size_t i = 0; i < nfrac && place >= 10; i++) {
        place /= 10;
        uint64_t add = (uint64_t)(frac[i] - '0') * place;
        if (total > UINT64_MAX - add)
            return -1;
        total += add;
    }
    if (total < min_ns || total > max_ns)
        return -1;
    *ns = total;
    return 0;
}

/* Does `s` end with `suffix` (ASCII, case-insensitive)?  Its length before it, or -1. */
static long iends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    if (n < m || !str_ieq(s + n - m, suffix))
        return -1;
    return (long)(n - m);
}

int config_parse_alloc(const char *s, uint64_t *bytes)
{
    static const struct {
        const char *suffix;
        uint64_t mult;
    } units[] = {
        {"KiB", 1ull << 10}, {"MiB", 1ull << 20},
        {"GiB", 1ull << 30}, {"KB", 1ull << 10},
        {"MB", 1ull << 20},  {"GB", 1ull << 30},
        {"K", 1ull << 10},   {"M", 1ull << 20},
        {"G", 1ull << 30},   {"B", 1},
    };
    if (!s || !is_digit(s[0]))
        return -1;
    uint64_t v = 0;
    const char *p = s;
    for (; is_digit(*p); p++) {
        if (v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    uint64_t mult = 1;
    if (*p) {
        size_t i = 0, n = sizeof units / sizeof units[0];
        while (i < n && strcmp(p, units[i].suffix) != 0)
            i++;
        if (i == n)
            return -1;
        mult = units[i].mult;
    }
    if (v > CONFIG_ALLOC_MAX_BYTES / mult)
        return -1;
    *bytes = v * mult;
    return 0;
}

int config_parse_rotate(const char *s, uint64_t *ns, uint64_t *bytes)
{
    static const struct {
        const char *suffix;
        uint64_t mult;
        int size;
    } units[] = {
        {"KiB", 1ull << 10, 1}, {"MiB", 1ull << 20, 1},
        {"GiB", 1ull << 30, 1}, {"KB", 1ull << 10, 1},
        {"MB", 1ull << 20, 1},  {"GB", 1ull << 30, 1},
        {"K", 1ull << 10, 1},   {"M", 1ull << 20, 1},
        {"G", 1ull << 30, 1},   {"B", 1, 1},
        {"min", 60, 0},         {"h", 3600, 0},
        {"d", 86400, 0},
    };
    if (!s)
        return -1;
    char num[32];
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        long at = iends_with(s, units[i].suffix);
        if (at <= 0 || (size_t)at >= sizeof num)
            continue;
        /* A bare lower-case "m" would read as minutes to some: K, M and G alone are
         * upper case only. */
        if (units[i].suffix[1] == '\0' && units[i].size && s[at] != units[i].suffix[0])
            return -1;
        memcpy(num, s, (size_t)at);
        num[at] = '\0';
        for (long k = 0; k < at; k++)
            if (!is_digit(num[k]) && num[k] != '.')
                return -1;
        /* The number, read as seconds (exact, fractions allowed), then scaled: a size is
         * a whole number of bytes once multiplied. */
        uint64_t v;
        if (config_parse_duration(num, 0, UINT64_MAX, &v) < 0)
            return -1;
        if (v > UINT64_MAX / units[i].mult)
            return -1;
        uint64_t scaled = v * units[i].mult; /* ns x mult, or bytes x 10^9 */
        if (units[i].size) {
            uint64_t b = scaled / NS_PER_S;
            if (b < CONFIG_ROTATE_MIN_BYTES || b > CONFIG_ROTATE_MAX_BYTES)
                return -1;
            *bytes = b;
            *ns = 0;
        } else {
            if (scaled < CONFIG_ROTATE_MIN_NS || scaled > CONFIG_ROTATE_MAX_NS)
                return -1;
            *ns = scaled;
            *bytes = 0;
        }
        return 0;
    }
    uint64_t v;
    if (config_parse_duration(s, CONFIG_ROTATE_MIN_NS, CONFIG_ROTATE_MAX_NS, &v) < 0)
        return -1;
    *ns = v;
    *bytes = 0;
    return 0;
}

int config_parse_bool(const char *s, int *v)
{
    static const char *const yes[] = {"1", "yes", "true", "on"};
    static const char *const no[] = {"0", "no", "false", "off"};
    if (!s)
        return -1;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (str_ieq(s, yes[i])) {
            *v = 1;
            return 0;
        }
        if (str_ieq(s, no[i])) {
            *v = 0;
            return 0;
        }
    }
    return -1;
}

int config_parse_uint(const char *s, unsigned min, unsigned max, unsigned *v)
{
    uint64_t n;
    if (!s || parse_digits(&s, UINT64_MAX, &n) < 0 || *s != '\0')
        return -1;
    if (n < min || n > max)
        return -1;
    *v = (unsigned)n;
    return 0;
}

/* The standard signals by name.  Numbers come from <signal.h> so they are right for the
 * architecture; names a platform lacks are left out. */
static const struct {
    const char *name;
    int sig;
} signal_names[] = {
    {"HUP", SIGHUP},       {"INT", SIGINT},       {"QUIT", SIGQUIT}, {"ILL", SIGILL},
    {"TRAP", SIGTRAP},     {"ABRT", SIGABRT},     {"IOT", SIGABRT},  {"BUS", SIGBUS},
    {"FPE", SIGFPE},       {"KILL", SIGKILL},     {"USR1", SIGUSR1}, {"SEGV", SIGSEGV},
    {"USR2", SIGUSR2},     {"PIPE", SIGPIPE},     {"ALRM", SIGALRM}, {"TERM", SIGTERM},
#ifdef SIGSTKFLT
    {"STKFLT", SIGSTKFLT},
#endif
    {"CHLD", SIGCHLD},     {"CONT", SIGCONT},     {"STOP", SIGSTOP}, {"TSTP", SIGTSTP},
    {"TTIN", SIGTTIN},     {"TTOU", SIGTTOU},     {"URG", SIGURG},   {"XCPU", SIGXCPU},
    {"XFSZ", SIGXFSZ},     {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH},
    {"IO", SIGIO},         {"POLL", SIGPOLL},
#ifdef SIGPWR
    {"PWR", SIGPWR},
#endif
    {"SYS", SIGSYS},
};

/* The name of a standard signal ("USR2"), or NULL for a real-time one. */
static const char *signal_name(int sig)
{
    for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
        if (signal_names[i].sig == sig)
            return signal_names[i].name;
    return NULL;
}

int config_parse_signal(const char *s, int *sig)
{
    if (!s)
        return -1;
    uint64_t n;
    const char *p = s;
    if (is_digit(*p)) {
        if (parse_digits(&p, UINT64_MAX, &n) < 0 || *p != '\0' || n < 1 ||
            n > (uint64_t)SIGRTMAX)
            return -1;
        *sig = (int)n;
        return 0;
    }
    if (str_iprefix(p, "SIG"))
        p += 3;
    for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++) {
        if (str_ieq(p, signal_names[i].name)) {
            *sig = signal_names[i].sig;
            return 0;
        }
    }
    /* SIGRTMIN and SIGRTMAX are calls into the C library (it keeps some real-time signals
     * for itself), not constants. */
    int lo = SIGRTMIN, hi = SIGRTMAX;
    int base, dir;
    if (str_iprefix(p, "RTMIN")) {
        base = lo;
        dir = 1;
    } else if (str_iprefix(p, "RTMAX")) {
        base = hi;
        dir = -1;
    } else {
        return -1;
    }
    p += 5;
    if (*p == '\0') {
        *sig = base;
        return 0;
    }
    if (*p != (dir > 0 ? '+' : '-'))
        return -1;
    p++;
    if (parse_digits(&p, UINT64_MAX, &n) < 0 || *p != '\0' || n > (uint64_t)(hi - lo))
        return -1;
    *sig = base + dir * (int)n;
    return 0;
}

int config_parse_clock(const char *s, int *clock)
{
    if (!s)
        return -1;
    if (str_ieq(s, "cpu")) {
        *clock = PYPROF_CLOCK_CPU;
        return 0;
    }
    if (str_ieq(s, "wall")) {
        *clock = PYPROF_CLOCK_WALL;
        return 0;
    }
    return -1;
}

/* ---- file-name templates ------------------------------------------------------------ */

#define EXPAND_SYNTAX (-1)
#define EXPAND_TOO_LONG (-2)

/* Appends `n` bytes of `s` at out[*len], turning '/' into '_' when `slash` is set.
 * Leaves room for the final NUL. */
static int put_chars(char *out, size_t outlen, size_t *len, const char *s, size_t n, int slash)
{
    if (n >= outlen - *len)
        return EXPAND_TOO_LONG;
    for (size_t i = 0; i < n; i++)
        out[(*len)++] = (slash && s[i] == '/') ? '_' : s[i];
    return 0;
}

static int put_long(char *out, size_t outlen, size_t *len, long v)
{
    char tmp[24];
    size_t n = sizeof tmp;
    /* Work on the magnitude as unsigned so that LONG_MIN does not overflow. */
    unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
    do {
        tmp[--n] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[--n] = '-';
    return put_chars(out, outlen, len, tmp + n, sizeof tmp - n, 0);
}

static int put_str(char *out, size_t outlen, size_t *len, const char *s, int slash)
{
    return s ? put_chars(out, outlen, len, s, strlen(s), slash) : 0;
}

/* The expansion proper; tells a syntax error from an overflow so that config_load can
 * check a template's syntax without caring about its final length.  A syntax error wins
 * over an overflow: the whole template is scanned even after the output is full. */
static int expand(const char *tmpl, const config_template_vars *v, char *out, size_t outlen)
{
    size_t len = 0;
    int rc = 0;
    for (const char *p = tmpl; *p; p++) {
        char conv = 0;
        if (*p == '%') {
            conv = *++p;
            if (conv == '\0' || !strchr("pPnthrs%", conv)) {
                /* An unknown letter, or a lone '%' at the end. */
                out[0] = '\0';
                return EXPAND_SYNTAX;
            }
        }
        if (rc < 0)
            continue; /* The output is full: only the syntax is still checked. */
        switch (conv) {
        /* clang-format off */
        case 0: rc = put_chars(out, outlen, &len, p, 1, 0); break;
        case 'p': rc = put_long(out, outlen, &len, v->pid); break;
        case 'P': rc = put_long(out, outlen, &len, v->ppid); break;
        case 'n': rc = put_str(out, outlen, &len, v->prog, 1); break;
        case 't': rc = put_str(out, outlen, &len, v->start, 0); break;
        case 'h': rc = put_str(out, outlen, &len, v->host, 1); break;
        case 'r': rc = put_str(out, outlen, &len, v->run_id, 0); break;
        case 's': rc = put_str(out, outlen, &len, v->seq, 0); break;
        default: rc = put_chars(out, outlen, &len, "%", 1, 0); break;
            /* clang-format on */
        }
    }
    out[rc < 0 ? 0 : len] = '\0';
    return rc;
}

int config_expand_template(const char *tmpl, const config_template_vars *v, char *out,
                           size_t outlen)
{
    if (!tmpl || !v || !out || outlen == 0)
        return -1;
    return expand(tmpl, v, out, outlen) < 0 ? -1 : 0;
}

/* ---- the environment ---------------------------------------------------------------- */

void config_defaults(pyprof_config *c)
{
    memset(c, 0, sizeof *c);
    c->output[0] = '\0';
    c->period_ns = 10000000ull; /* 10 ms */
    c->clock = PYPROF_CLOCK_CPU;
    c->native = 0;
    c->memory = 1;
    c->max_depth = 256;
    c->children = 1;
    c->filter[0] = '\0';
    c->signal = 0;
    c->flush_ns = NS_PER_S;
    c->quiet = 0;
    c->verbose = 0;
    c->rotate_ns = c->rotate_bytes = 0;
    c->keep = 0;
    c->control = 1;
    c->alloc = 0;
    c->alloc_windows = CONFIG_WINDOWS_AUTO;
    c->test_skew_milli = 1000;
    c->test_uncorrected = 0;
}

/* Writes the one error line: "pyprof: NAME=VALUE is not valid: WHAT".  The value is shown
 * at most 64 bytes long and with control bytes replaced, so the message stays one short
 * line whatever the environment holds.  Returns -1 for the caller to pass on. */
static int config_error(char *err, size_t errlen, const char *name, const char *value,
                        const char *what)
{
    char shown[64 + 4];
    size_t n = 0;
    for (const char *p = value; *p && n < 64; p++)
        shown[n++] = ((unsigned char)*p < 0x20 || *p == 0x7f) ? '?' : *p;
    if (strlen(value) > 64) {
        memcpy(shown + n, "...", 3);
        n += 3;
    }
    shown[n] = '\0';
    if (err && errlen)
        snprintf(err, errlen, "pyprof: %s=%s is not valid: %s", name, shown, what);
    return -1;
}

/* getenv, with an empty value taken as unset. */
static const char *env(const char *name)
{
    const char *v = getenv(name);
    return (v && *v) ? v : NULL;
}

static int load_bool(const char *name, int *out, char *err, size_t errlen)
{
    const char *v = env(name);
    if (v && config_parse_bool(v, out) < 0)
        return config_error(err, errlen, name, v,
                            "expected 0 or 1 (also no/yes, false/true, off/on)");
    return 0;
}

static int load_signal(int *out, char *err, size_t errlen)
{
    static const char name[] = "PYPROF_SIGNAL";
    const char *v = env(name);
    int sig;
    /* "0" is the default spelled out: no toggle signal. */
    if (!v || strcmp(v, "0") == 0)
        return 0;
    if (config_parse_signal(v, &sig) < 0)
        return config_error(err, errlen, name, v,
                            "expected a signal name or number, such as USR2, SIGUSR1, 12 "
                            "or RTMIN+1");
    const char *why = NULL;
    if (sig == SIGKILL || sig == SIGSTOP)
        why = "cannot be caught; use a signal such as USR2";
    else if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE)
        why = "reports faults and cannot toggle profiling; use a signal such as USR2";
    else if (sig == SIGTRAP || sig == SIGPROF)
        why = "is used by pyprof itself for sampling; use a signal such as USR2";
    else if (sig > 31 && sig < SIGRTMIN)
        why = "is reserved by the C library; use a signal such as USR2 or RTMIN+1";
    if (why) {
        char what[128];
        const char *sname = signal_name(sig);
        if (sname)
            snprintf(what, sizeof what, "SIG%s %s", sname, why);
        else
            snprintf(what, sizeof what, "signal %d %s", sig, why);
        return config_error(err, errlen, name, v, what);
    }
    *out = sig;
    return 0;
}

int config_load(pyprof_config *c, char *err, size_t errlen)
{
    const char *v;
    unsigned u;
    if (err && errlen)
        err[0] = '\0';
    config_defaults(c);

    /* PYPROF_QUIET and PYPROF_VERBOSE come first: when another variable is bad, the caller
     * still knows from c->quiet whether it may print the error line. */
    if (load_bool("PYPROF_QUIET", &c->quiet, err, errlen) < 0 ||
        load_bool("PYPROF_VERBOSE", &c->verbose, err, errlen) < 0)
        return -1;

    if ((v = env("PYPROF_OUTPUT"))) {
        /* Only the syntax can be checked now: the values come later (the pid changes at
         * fork), and the writer reports a name that ends up too long. */
        static const config_template_vars probe = {1, 1, "p", "t", "h", "r", "0000"};
        char tmp[PATH_MAX];
        if (strlen(v) >= sizeof c->output)
            return config_error(err, errlen, "PYPROF_OUTPUT", v,
                                "expected a path of at most 4095 bytes");
        if (expand(v, &probe, tmp, sizeof tmp) == EXPAND_SYNTAX)
            return config_error(err, errlen, "PYPROF_OUTPUT", v,
                                "expected a directory, or a file-name template where % is "
                                "followed by one of p P n t h r s %");
        memcpy(c->output, v, strlen(v) + 1);
    }
    if ((v = env("PYPROF_PERIOD")) &&
        config_parse_duration(v, CONFIG_PERIOD_MIN_NS, CONFIG_PERIOD_MAX_NS, &c->period_ns) < 0)
        return config_error(err, errlen, "PYPROF_PERIOD", v,
                            "expected a period from 100us to 10s, such as 10ms, 500us or 0.01");
    if ((v = env("PYPROF_CLOCK")) && config_parse_clock(v, &c->clock) < 0)
        return config_error(err, errlen, "PYPROF_CLOCK", v, "expected cpu or wall");
    if (load_bool("PYPROF_NATIVE", &c->native, err, errlen) < 0 ||
        load_bool("PYPROF_MEMORY", &c->memory, err, errlen) < 0)
        return -1;
    if ((v = env("PYPROF_MAX_DEPTH"))) {
        if (config_parse_uint(v, CONFIG_MAX_DEPTH_MIN, CONFIG_MAX_DEPTH_MAX, &u) < 0)
            return config_error(err, errlen, "PYPROF_MAX_DEPTH", v,
                                "expected a whole number of frames from 4 to 4096");
        c->max_depth = u;
    }
    if (load_bool("PYPROF_CHILDREN", &c->children, err, errlen) < 0)
        return -1;
    if ((v = env("PYPROF_FILTER"))) {
        if (strlen(v) >= sizeof c->filter)
            return config_error(err, errlen, "PYPROF_FILTER", v,
                                "expected a shell glob of at most 255 bytes");
        memcpy(c->filter, v, strlen(v) + 1);
    }
    if (load_signal(&c->signal, err, errlen) < 0)
        return -1;
    if ((v = env("PYPROF_FLUSH")) &&
        config_parse_duration(v, CONFIG_FLUSH_MIN_NS, CONFIG_FLUSH_MAX_NS, &c->flush_ns) < 0)
        return config_error(err, errlen, "PYPROF_FLUSH", v,
                            "expected a number of seconds from 0.01 to 3600, or a duration "
                            "such as 500ms or 2s");
    if ((v = env("PYPROF_ROTATE")) &&
        config_parse_rotate(v, &c->rotate_ns, &c->rotate_bytes) < 0)
        return config_error(err, errlen, "PYPROF_ROTATE", v,
                            "expected a duration from 1s to 366d (30s, 10min, 1h, 2d) or a "
                            "size from 64KB to 1TB (512KB, 64MB, 1GB)");
    if ((v = env("PYPROF_KEEP"))) {
        if (config_parse_uint(v, 1, CONFIG_KEEP_MAX, &c->keep) < 0)
            return config_error(err, errlen, "PYPROF_KEEP", v,
                                "expected a number of complete logs from 1 to 100000");
        if (!c->rotate_ns && !c->rotate_bytes)
            return config_error(err, errlen, "PYPROF_KEEP", v,
                                "needs PYPROF_ROTATE (logs are removed only after rotation)");
    }
    if (load_bool("PYPROF_CONTROL", &c->control, err, errlen) < 0)
        return -1;
    if ((v = env("PYPROF_ALLOC")) && config_parse_alloc(v, &c->alloc) < 0)
        return config_error(err, errlen, "PYPROF_ALLOC", v,
                            "expected 0 (off) or a mean interval in bytes up to 1GB "
                            "(512KB, 1MB, 65536)");
    if ((v = env("PYPROF_ALLOC_WINDOWS")) &&
        config_parse_alloc_windows(v, &c->alloc_windows) < 0)
        return config_error(err, errlen, "PYPROF_ALLOC_WINDOWS", v,
                            "expected auto, off, or a duty 1/N with N a power of two from 2 "
                            "to 1024 (1/16)");
    if ((v = env("PYPROF_TEST_SKEW")) && config_parse_skew(v, &c->test_skew_milli) < 0)
        return config_error(err, errlen, "PYPROF_TEST_SKEW", v,
                            "expected a factor from 1 to 4 with at most three decimals "
                            "(1.3): a test setting");
    if (load_bool("PYPROF_TEST_UNCORRECTED", &c->test_uncorrected, err, errlen) < 0)
        return -1;
    return 0;
}

int config_parse_alloc_windows(const char *s, int *shift)
{
    if (!s)
        return -1;
    if (!strcmp(s, "auto")) {
        *shift = CONFIG_WINDOWS_AUTO;
        return 0;
    }
    if (!strcmp(s, "off")) {
        *shift = 0;
        return 0;
    }
    if (s[0] != '1' || s[1] != '/' || !is_digit(s[2]))
        return -1;
    unsigned n;
    if (config_parse_uint(s + 2, 2, 1u << CONFIG_WINDOWS_MAX_SHIFT, &n) < 0 || (n & (n - 1)))
        return -1;
    *shift = __builtin_ctz(n);
    return 0;
}

int config_parse_skew(const char *s, unsigned *milli)
{
    unsigned whole = 0, frac = 0, scale = 1000;
    const char *p = s;
    if (*p < '0' || *p > '9')
        return -1;
    while (*p >= '0' && *p <= '9' && whole < 10)
        whole = whole * 10 + (unsigned)(*p++ - '0');
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return -1;
        while (*p >= '0' && *p <= '9') {
            if (scale == 1)
                return -1; /* more than three decimals */
            scale /= 10;
            frac += (unsigned)(*p++ - '0') * scale;
        }
    }
    unsigned v = whole * 1000 + frac;
    if (*p || v < 1000 || v > 4000)
        return -1;
    *milli = v;
    return 0;
}
