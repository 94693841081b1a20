/*
 * config: the PYPROF_* environment variables (README, "Variables"), parsed and validated
 * once at start.  Parsers are pure functions so the unit tests and the tool share them;
 * only config_load reads the environment.
 */
#ifndef PYPROF_CONFIG_H
#define PYPROF_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_PERIOD_MIN_NS 100000ull      /* 100 us */
#define CONFIG_PERIOD_MAX_NS 10000000000ull /* 10 s */
#define CONFIG_MAX_DEPTH_MIN 4
#define CONFIG_MAX_DEPTH_MAX 4096

typedef struct pyprof_config {
    char output[PATH_MAX]; /* PYPROF_OUTPUT: a directory or a template ("" = default) */
    uint64_t period_ns;    /* PYPROF_PERIOD */
    int clock;             /* PYPROF_CLOCK: enum pyprof_clock */
    int native;            /* PYPROF_NATIVE */
    int memory;            /* PYPROF_MEMORY */
    unsigned max_depth;    /* PYPROF_MAX_DEPTH */
    int children;          /* PYPROF_CHILDREN */
    char filter[256];      /* PYPROF_FILTER ("" = all) */
    int signal;            /* PYPROF_SIGNAL (0 = none) */
    uint64_t flush_ns;     /* PYPROF_FLUSH */
    uint64_t rotate_ns;    /* PYPROF_ROTATE as a duration (0 = not by time) */
    uint64_t rotate_bytes; /* PYPROF_ROTATE as a size (0 = not by size) */
    unsigned keep;         /* PYPROF_KEEP: complete logs kept per series (0 = all) */
    int control;           /* PYPROF_CONTROL: the control socket */
    uint64_t alloc;        /* PYPROF_ALLOC: mean allocation-sampling interval, bytes (0 off) */
    int alloc_windows;     /* PYPROF_ALLOC_WINDOWS: CONFIG_WINDOWS_AUTO, 0 (off: the Python
                            * domains always wrapped) or a fixed shift (duty 2^-shift) */
    int quiet;             /* PYPROF_QUIET */
    int verbose;           /* PYPROF_VERBOSE */
    /* Settings for the test suite and make bench, not for users (docs/ARCHITECTURE.md,
     * "CPU the kernel accounts"): */
    unsigned test_skew_milli; /* PYPROF_TEST_SKEW x 1000: the CPU timers run this much
                               * faster than the threads' CPU, as under hypervisor steal */
    int test_uncorrected;     /* PYPROF_TEST_UNCORRECTED: a sample per timer signal, as
                               * the timer counted */
} pyprof_config;

/* Fills `c` with the documented defaults (README, "Variables"). */
void config_defaults(pyprof_config *c);

/* Reads and validates every PYPROF_* variable.  Returns 0, or -1 with one line in `err`
 * naming the variable, the value and what is allowed. */
int config_load(pyprof_config *c, char *err, size_t errlen);

/* "0.01", "10ms", "500us", "1s", "2500ns", "1m"? (no: s, ms, us, ns only).  Returns 0 and
 * the period in ns, or -1 (syntax, or outside [min_ns, max_ns]). */
int config_parse_duration(const char *s, uint64_t min_ns, uint64_t max_ns, uint64_t *ns);

/* "0"/"1" (also "no"/"yes", "false"/"true", "off"/"on").  Returns 0 or -1. */
int config_parse_bool(const char *s, int *v);

/* A decimal integer in [min, max].  Returns 0 or -1. */
int config_parse_uint(const char *s, unsigned min, unsigned max, unsigned *v);

/* "USR2", "SIGUSR2", "12", "RTMIN+1".  Returns 0 and the number, or -1. */
int config_parse_signal(const char *s, int *sig);

#define CONFIG_ROTATE_MIN_NS 1000000000ull                    /* 1 s */
#define CONFIG_ROTATE_MAX_NS (366ull * 86400 * 1000000000ull) /* a year */
#define CONFIG_ROTATE_MIN_BYTES (64ull << 10)                 /* 64 KiB */
#define CONFIG_ROTATE_MAX_BYTES (1ull << 40)                  /* 1 TiB */
#define CONFIG_KEEP_MAX 100000u

/* PYPROF_ROTATE: a duration ("30s", "10min", "1h", "2d", or what config_parse_duration
 * takes) or a size ("64MB", "512KB", "1GB", "65536B"; K, M, G, with or without B or iB,
 * are powers of 1024; K, M and G alone are upper case, so "1m" is refused rather than
 * read as a mebibyte).  Returns 0 with exactly one of *ns and *bytes nonzero, or -1
 * (syntax, or outside the CONFIG_ROTATE_* bounds). */
int config_parse_rotate(const char *s, uint64_t *ns, uint64_t *bytes);

#define CONFIG_ALLOC_MAX_BYTES (1ull << 30) /* 1 GiB */

/* PYPROF_ALLOC: "0" (off), or a whole number of bytes with an optional unit: "4096",
 * "512KB", "1MB", "1MiB", "64K" (K, M, G, with or without B or iB, are powers of 1024).
 * Returns 0 and the bytes (0 for off), or -1 (syntax, or above CONFIG_ALLOC_MAX_BYTES). */
int config_parse_alloc(const char *s, uint64_t *bytes);

#define CONFIG_WINDOWS_AUTO (-1)
#define CONFIG_WINDOWS_MAX_SHIFT 10 /* a duty of 1/1024 */

/* PYPROF_ALLOC_WINDOWS: "auto" (the duty follows the allocation rate), "off" (no windows:
 * every small Python allocation seen, at its cost), or a fixed duty "1/N", N a power of
 * two from 2 to 1024.  Returns 0 and CONFIG_WINDOWS_AUTO, 0 or log2 N, or -1. */
int config_parse_alloc_windows(const char *s, int *shift);

/* "cpu" or "wall".  Returns 0 and enum pyprof_clock, or -1. */
int config_parse_clock(const char *s, int *clock);

/* PYPROF_TEST_SKEW: a factor from 1 to 4 with at most three decimals ("1.3"), as
 * thousandths.  Returns 0, or -1 when malformed or out of range. */
int config_parse_skew(const char *s, unsigned *milli);

/* What a file-name template may refer to. */
typedef struct config_template_vars {
    long pid, ppid;
    const char *prog;   /* %n: program name (basename, no directory) */
    const char *start;  /* %t: YYYYmmddTHHMMSS (UTC) */
    const char *host;   /* %h */
    const char *run_id; /* %r */
    const char *seq;    /* %s: the file's place in a rotated series, "0000", "0001", ... */
} config_template_vars;

/* Expands %p %P %n %t %h %r %s %% in `tmpl` into `out`.  Returns 0, or -1 when the result
 * does not fit or the template has an unknown %-sequence.  Characters of %n and %h that
 * are '/' become '_'. */
int config_expand_template(const char *tmpl, const config_template_vars *v, char *out,
                           size_t outlen);

#endif
