/*
 * cli: helpers shared by the pyprof subcommands.  See cli.h.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/utf8.h"

void cli_error(const char *fmt, ...)
{
    va_list ap;
    fputs("pyprof: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "pyprof %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'pyprof help %s'.\n", cmd);
    return CLI_EXIT_USAGE;
}

int cli_bad_option(const char *cmd, int c, char **argv)
{
    const char *opt = argv[optind - 1];
    if (c == ':')
        return cli_usage_error(cmd, "option '%s' needs a value", opt);
    if (strncmp(opt, "--", 2) == 0)
        return cli_usage_error(cmd, "unrecognized option '%s'", opt);
    return cli_usage_error(cmd, "unknown option '-%c'", optopt ? optopt : '?');
}

int cli_oom(void)
{
    cli_error("out of memory");
    return CLI_EXIT_BAD_INPUT;
}

static int parse_u64(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    if (!s[0] || s[0] == '-')
        return -1;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *v = x;
    return 0;
}

static int parse_seconds(const char *s, double *v)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (!s[0] || errno || *end || !isfinite(x) || x < 0)
        return -1;
    *v = x;
    return 0;
}

static int append_u64(uint64_t **list, size_t *n, uint64_t v)
{
    uint64_t *l = realloc(*list, (*n + 1) * sizeof *l);
    if (!l)
        return -1;
    l[(*n)++] = v;
    *list = l;
    return 0;
}

static int append_str(const char ***list, size_t *n, const char *s)
{
    const char **l = realloc(*list, (*n + 1) * sizeof *l);
    if (!l)
        return -1;
    l[(*n)++] = s;
    *list = l;
    return 0;
}

int cli_filter_option(cli_filter *cf, const char *cmd, int opt, const char *arg)
{
    uint64_t v;
    switch (opt) {
    case CLI_OPT_PID:
    case CLI_OPT_THREAD:
        if (parse_u64(arg, &v) < 0)
            return cli_usage_error(cmd, "--%s: '%s' is not a process or thread id",
                                   opt == CLI_OPT_PID ? "pid" : "thread", arg);
        if (opt == CLI_OPT_PID ? append_u64(&cf->pids, &cf->f.npids, v)
                               : append_u64(&cf->tids, &cf->f.ntids, v)) {
            cli_error("out of memory");
            return CLI_EXIT_BAD_INPUT;
        }
        cf->f.pids = cf->pids;
        cf->f.tids = cf->tids;
        return 1;
    case CLI_OPT_RUN:
    case CLI_OPT_SPAN:
        if (opt == CLI_OPT_RUN ? append_str(&cf->runs, &cf->f.nruns, arg)
                               : append_str(&cf->spans, &cf->f.nspan_names, arg)) {
            cli_error("out of memory");
            return CLI_EXIT_BAD_INPUT;
        }
        cf->f.runs = cf->runs;
        cf->f.span_names = cf->spans;
        return 1;
    case CLI_OPT_GIL_WAIT:
        cf->f.gil_wait = 1;
        return 1;
    case CLI_OPT_FROM:
    case CLI_OPT_TO: {
        double s;
        int rc = cli_parse_seconds(cmd, opt == CLI_OPT_FROM ? "from" : "to", arg, &s);
        if (rc)
            return rc;
        if (opt == CLI_OPT_FROM) {
            cf->f.has_from = 1;
            cf->f.from_s = s;
        } else {
            cf->f.has_to = 1;
            cf->f.to_s = s;
        }
        if (cf->f.has_from && cf->f.has_to && cf->f.to_s < cf->f.from_s)
            return cli_usage_error(cmd, "--to %g is before --from %g", cf->f.to_s,
                                   cf->f.from_s);
        return 1;
    }
    default:
        return 0;
    }
}

void cli_filter_free(cli_filter *cf)
{
    free(cf->pids);
    free(cf->tids);
    free(cf->runs);
    free(cf->spans);
    memset(cf, 0, sizeof *cf);
}

int cli_no_logs(const char *cmd, int nlogs)
{
    return nlogs > 0 ? -1 : cli_usage_error(cmd, "no log given");
}

int cli_parse_pid(const char *cmd, const char *arg, pid_t *pid)
{
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (!arg[0] || *end || errno || v < 1 || v > 0x3fffffff)
        return cli_usage_error(cmd, "'%s' is not a process id", arg);
    *pid = (pid_t)v;
    return 0;
}

void cli_put_line(FILE *f, const char *s)
{
    for (; *s && *s != '\n'; s++)
        putc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
}

int cli_parse_seconds(const char *cmd, const char *opt, const char *arg, double *v)
{
    if (parse_seconds(arg, v) < 0)
        return cli_usage_error(cmd, "--%s: '%s' is not a number of seconds (such as 2.5)", opt,
                               arg);
    return 0;
}

int cli_parse_count(const char *cmd, const char *opt, const char *arg, uint32_t *v)
{
    char *end;
    long x = strtol(arg, &end, 10);
    if (!arg[0] || *end || x < 1 || x > 1000000)
        return cli_usage_error(cmd, "--%s: '%s' is not a number from 1 to 1000000", opt, arg);
    *v = (uint32_t)x;
    return 0;
}

/* --root DIR: an existing directory, kept as an absolute path (the recorded paths are
 * appended to it) in *root, replacing an earlier one.  0, or an exit code after printing
 * why. */
static int parse_root(const char *cmd, const char *arg, char **root)
{
    struct stat st;
    if (stat(arg, &st) < 0)
        return cli_usage_error(cmd, "--root: '%s': %s", arg, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cli_usage_error(cmd, "--root: '%s' is not a directory", arg);
    char *abs = realpath(arg, NULL);
    if (!abs) {
        if (errno == ENOMEM)
            return cli_oom();
        return cli_usage_error(cmd, "--root: '%s': %s", arg, strerror(errno));
    }
    free(*root);
    *root = abs;
    return 0;
}

/* The options every command that reads logs takes, before its own. */
static const struct option common_options[] = {
    {"help", no_argument, NULL, 'h'},
    {"native-glue", no_argument, NULL, CLI_OPT_NATIVE_GLUE},
    {"root", required_argument, NULL, CLI_OPT_ROOT},
    CLI_FILTER_OPTIONS,
};
#define NCOMMON (sizeof common_options / sizeof common_options[0])
#define MAX_OPTIONS 32

int cli_start(const cli_command *cmd, int argc, char **argv, void *ctx, cli_args *a)
{
    memset(a, 0, sizeof *a);
    struct option longopts[MAX_OPTIONS];
    size_t n = 0;
    for (size_t i = 0; i < NCOMMON; i++)
        longopts[n++] = common_options[i];
    if (cmd->json)
        longopts[n++] = (struct option){"json", no_argument, NULL, CLI_OPT_JSON};
    for (const struct option *o = cmd->options; o && o->name && n + 1 < MAX_OPTIONS; o++)
        longopts[n++] = *o;
    longopts[n] = (struct option){NULL, 0, NULL, 0};
    char shortopts[64];
    snprintf(shortopts, sizeof shortopts, ":h%s", cmd->shortopts ? cmd->shortopts : "");

    int c;
    unsigned load = cmd->load;
    opterr = 0;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        int fr = cli_filter_option(&a->cf, cmd->name, c, optarg);
        if (fr == 1)
            continue;
        if (fr)
            return fr;
        if (c == 'h') {
            fputs(cmd->usage, stdout);
            return CLI_EXIT_OK;
        }
        if (c == CLI_OPT_JSON) {
            a->json = 1;
            continue;
        }
        if (c == CLI_OPT_NATIVE_GLUE) {
            load |= PROFILE_NATIVE_GLUE;
            continue;
        }
        if (c == CLI_OPT_ROOT) {
            int rr = parse_root(cmd->name, optarg, &a->root);
            if (rr)
                return rr;
            continue;
        }
        if (c == '?' || c == ':' || !cmd->option)
            return cli_bad_option(cmd->name, c, argv);
        int rc = cmd->option(ctx, c, optarg);
        if (rc)
            return rc;
    }
    int nlogs = argc - optind - cmd->nargs;
    int rc = cmd->check ? cmd->check(ctx, nlogs) : cli_no_logs(cmd->name, nlogs);
    if (rc >= 0)
        return rc;
    a->args = argv + optind;
    a->load = load;
    optind += cmd->nargs;
    rc = cli_load(argv + optind, argc - optind, &a->cf.f, load, a->root, &a->p);
    return rc ? rc : -1;
}

void cli_args_free(cli_args *a)
{
    profile_free(a->p);
    cli_filter_free(&a->cf);
    free(a->root);
    memset(a, 0, sizeof *a);
}

int cli_load(char **paths, int npaths, const profile_filter *filter, unsigned options,
             const char *root, profile **out)
{
    *out = NULL;
    profile *p = profile_new(filter, options, root);
    if (!p) {
        cli_error("out of memory");
        return CLI_EXIT_BAD_INPUT;
    }
    int rc = CLI_EXIT_OK;
    /* One set: the files of a rotated series load in seq order whatever the order given. */
    if (profile_load_paths(p, (const char *const *)paths, (size_t)npaths) < 0)
        rc = CLI_EXIT_BAD_INPUT;
    /* Warnings first, in the order met, then the error that stopped us. */
    for (size_t i = 0; i < p->nwarnings; i++)
        cli_error("%s", p->warnings[i]);
    if (rc)
        cli_error("%s", p->error);
    if (rc) {
        profile_free(p);
        return rc;
    }
    *out = p;
    return CLI_EXIT_OK;
}

int cli_parse_memory(const char *cmd, const char *arg, int peak, int *on, int *by)
{
    if (!arg || !strcmp(arg, "alloc"))
        *by = ALLOCS_BY_ALLOC;
    else if (!strcmp(arg, "inuse"))
        *by = ALLOCS_BY_INUSE;
    else if (!strcmp(arg, "peak") && peak)
        *by = ALLOCS_BY_PEAK;
    else if (!strcmp(arg, "peak"))
        return cli_usage_error(cmd, "--memory=peak: %s compares alloc or inuse only", cmd);
    else if (!peak)
        return cli_usage_error(cmd, "--memory: '%s' is neither alloc nor inuse", arg);
    else
        return cli_usage_error(cmd, "--memory: '%s' is none of alloc, inuse and peak", arg);
    *on = 1;
    return 0;
}

int cli_need_allocs(const profile *p)
{
    for (size_t i = 0; i < p->nprocs; i++)
        if (p->procs[i].alloc_interval || p->procs[i].allocs_read)
            return -1;
    cli_error("no allocation samples: the logs were written without PYPROF_ALLOC");
    return CLI_EXIT_BAD_INPUT;
}

uint64_t cli_bytes_count(double v)
{
    if (!(v >= 0.5))
        return 0;
    if (v >= 18446744073709551616.0) /* 2^64 */
        return UINT64_MAX;
    return (uint64_t)(v + 0.5);
}

char *cli_utf8_dup(const char *s)
{
    /* A byte that becomes U+FFFD takes three. */
    size_t len = strlen(s);
    char *out = malloc(3 * len + 1);
    if (!out)
        return NULL;
    out[utf8_clean(out, 3 * len, (const uint8_t *)s, len, 0)] = 0;
    return out;
}

double cli_pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

const char *cli_fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    size_t u = 0;
    while (v >= 1024 && u + 1 < sizeof unit / sizeof unit[0]) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%" PRIu64 " B", bytes);
    else
        snprintf(buf, len, "%.1f %s", v, unit[u]);
    return buf;
}

const char *cli_fmt_ns(uint64_t ns, char *buf, size_t len)
{
    if (ns >= 1000000000ull)
        snprintf(buf, len, "%g s", (double)ns / 1e9);
    else if (ns >= 1000000ull)
        snprintf(buf, len, "%g ms", (double)ns / 1e6);
    else if (ns >= 1000ull)
        snprintf(buf, len, "%g us", (double)ns / 1e3);
    else
        snprintf(buf, len, "%" PRIu64 " ns", ns);
    return buf;
}

const char *cli_fmt_unix_ns(uint64_t ns, char *buf, size_t len)
{
    time_t t = (time_t)(ns / 1000000000ull);
    struct tm tm;
    char day[64];
    if (!gmtime_r(&t, &tm) || !strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(day, sizeof day, "%" PRIu64, ns / UINT64_C(1000000000));
    snprintf(buf, len, "%s.%03u UTC", day, (unsigned)(ns % 1000000000ull / 1000000ull));
    return buf;
}

/* Whether `s` can be printed to a shell without quotes. */
static int shell_plain(const char *s)
{
    if (!s[0])
        return 0;
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                    "@%+=:,./-_",
                    *s))
            return 0;
    return 1;
}

void cli_print_argv(FILE *f, char *const *argv, size_t argc)
{
    for (size_t i = 0; i < argc; i++) {
        if (i)
            putc(' ', f);
        if (shell_plain(argv[i])) {
            fputs(argv[i], f);
            continue;
        }
        putc('\'', f);
        for (const char *s = argv[i]; *s; s++) {
            if (*s == '\'')
                fputs("'\\''", f);
            else if ((unsigned char)*s < 0x20 || *s == 0x7f)
                putc('?', f); /* never send control characters to a terminal */
            else
                putc(*s, f);
        }
        putc('\'', f);
    }
}

const char *cli_end_text(uint64_t end)
{
    static const char *const text[] = {
#define PYPROF_X_TEXT(name, t) t,
        PYPROF_END_LIST(PYPROF_X_TEXT)
#undef PYPROF_X_TEXT
    };
    return end < PYPROF_END_COUNT ? text[end] : "unknown";
}

const char *cli_fmt_end(const profile_process *pr, char *buf, size_t len)
{
    if (!pr->has_footer) {
        snprintf(buf, len, "truncated (no footer: the process was killed or crashed)");
        return buf;
    }
    const pyprof_footer *f = &pr->footer;
    if (f->end == PYPROF_END_SIGNAL && f->status_known)
        snprintf(buf, len, "signal %" PRId64 " (%s)", f->status, strsignal((int)f->status));
    else if (f->status_known)
        snprintf(buf, len, "%s (status %" PRId64 ")", cli_end_text(f->end), f->status);
    else
        snprintf(buf, len, "%s", cli_end_text(f->end));
    return buf;
}

const char *cli_clock_name(int clock)
{
    return clock == PYPROF_CLOCK_WALL ? "wall" : clock == PYPROF_CLOCK_CPU ? "cpu" : "unknown";
}

const char *cli_drop_name(int reason)
{
    static const char *const names[] = {
#define PYPROF_X_NAME(name, t) #name,
        PYPROF_DROP_LIST(PYPROF_X_NAME)
#undef PYPROF_X_NAME
    };
    static char lower[PYPROF_DROP_COUNT][32];
    if (reason < 0 || reason >= PYPROF_DROP_COUNT)
        return "unknown";
    if (!lower[reason][0]) {
        size_t i;
        for (i = 0; names[reason][i] && i + 1 < sizeof lower[reason]; i++)
            lower[reason][i] = (char)tolower((unsigned char)names[reason][i]);
        lower[reason][i] = 0;
    }
    return lower[reason];
}

const char *cli_drop_text(int reason)
{
    static const char *const text[] = {
#define PYPROF_X_TEXT(name, t) t,
        PYPROF_DROP_LIST(PYPROF_X_TEXT)
#undef PYPROF_X_TEXT
    };
    return reason >= 0 && reason < PYPROF_DROP_COUNT ? text[reason] : "unknown";
}

int cli_close_stdout(void)
{
    /* fflush finds most errors; fclose the ones a file system reports only at close. */
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int err = errno;
    if (fclose(stdout) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    if (bad) {
        cli_error("error writing to standard output: %s", strerror(err ? err : EIO));
        return CLI_EXIT_BAD_INPUT;
    }
    return CLI_EXIT_OK;
}

uint64_t cli_cost_samples(const pyprof_footer *f, uint32_t d)
{
    uint64_t n = 0;
    for (uint32_t t = 0; t < f->cost_ntime; t++)
        n += f->cost[d][t];
    return n;
}

double cli_cost_quantile_ns(const pyprof_footer *f, uint32_t d, double q)
{
    uint64_t n = cli_cost_samples(f, d);
    if (!n)
        return 0;
    double want = q * (double)n, seen = 0, lo = 0;
    for (uint32_t t = 0; t < f->cost_ntime; t++) {
        double hi = f->cost_time_bound[t] ? (double)f->cost_time_bound[t] : 2 * lo;
        double c = (double)f->cost[d][t];
        if (c > 0 && seen + c >= want)
            return lo + (hi - lo) * (want - seen) / c;
        seen += c;
        lo = hi;
    }
    return lo;
}

double cli_clock_drift(const pyprof_footer *f, const char **way, const char **why)
{
    double pct = 100.0 * ((double)f->clock_timer_ns / (double)f->clock_kernel_ns - 1.0);
    /* A timer that counts more than the kernel also counted time the kernel did not give
     * the thread (a hypervisor's steal, interrupts).  The library counts no interval's
     * kernel CPU above the timer's, so one that counts less is rare: a fresh interval's
     * share taken from the process's (the kernel counts a thread's context switches to
     * it, which the timer does not). */
    *way = pct >= 0 ? "ahead of" : "behind";
    *why = pct >= 0 ? "hypervisor steal or interrupt time"
                    : "the kernel counts the threads' context switches, which the timer "
                      "does not";
    return pct;
}

int cli_write_page(const char *cmd, const char *path, const char *tpl, size_t tpl_len,
                   int (*write_data)(FILE *f, void *ctx), void *ctx)
{
    static const char marker[] = "/*PYPROF_DATA*/";
    const char *mark = memmem(tpl, tpl_len, marker, sizeof marker - 1);
    if (!mark) {
        cli_error("%s: the embedded page template has no data marker (a build problem)", cmd);
        return CLI_EXIT_BAD_INPUT;
    }
    int to_stdout = !strcmp(path, "-");
    FILE *out = to_stdout ? stdout : fopen(path, "w");
    if (!out) {
        cli_error("%s: cannot create: %s", path, strerror(errno));
        return CLI_EXIT_BAD_INPUT;
    }
    /* A page cut short is removed, but only a regular file: never a device or a pipe the
     * user named (-o /dev/stdout). */
    struct stat st;
    int regular = !to_stdout && fstat(fileno(out), &st) == 0 && S_ISREG(st.st_mode);
    fwrite(tpl, 1, (size_t)(mark - tpl), out);
    int err = write_data(out, ctx);
    const char *rest = mark + sizeof marker - 1;
    fwrite(rest, 1, (size_t)(tpl + tpl_len - rest), out);
    if (to_stdout)
        return CLI_EXIT_OK; /* main checks that stdout got everything */
    int bad = ferror(out);
    if (!err)
        err = errno;
    if (fclose(out) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    if (bad) {
        cli_error("%s: cannot write: %s", path, strerror(err ? err : EIO));
        if (regular)
            unlink(path);
        return CLI_EXIT_BAD_INPUT;
    }
    return CLI_EXIT_OK;
}

void cli_json_func(jsonw *w, const profile_func *f)
{
    jsonw_key_string(w, "name", f->name);
    jsonw_key_string(w, "file", f->file);
    jsonw_key_i64(w, "line", f->line);
    jsonw_key_string(w, "kind", f->kind == PROFILE_FUNC_NATIVE ? "native" : "python");
}

void cli_print_func(FILE *out, const profile_func *f)
{
    if (f->kind == PROFILE_FUNC_NATIVE)
        fprintf(out, f->file[0] ? "%s [native] (%s)" : "%s [native]", f->name, f->file);
    else if (f->file[0])
        fprintf(out, "%s (%s:%" PRId64 ")", f->name, f->file, f->line);
    else
        fputs(f->name, out);
}

#ifndef PYPROF_LIBDIR
#define PYPROF_LIBDIR "/usr/local/lib"
#endif

int cli_find_library(char *out, size_t len)
{
    char dir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    char *slash = NULL;
    if (n > 0) {
        dir[n] = 0;
        slash = strrchr(dir, '/');
    }
    if (slash)
        *slash = 0;
    const char *const cands[][2] = {
        {slash ? dir : NULL, "libpyprof.so"},
        {slash ? dir : NULL, "../lib/libpyprof.so"},
        {PYPROF_LIBDIR, "libpyprof.so"},
    };
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        char cand[PATH_MAX + 32];
        if (!cands[i][0])
            continue;
        snprintf(cand, sizeof cand, "%s/%s", cands[i][0], cands[i][1]);
        if (access(cand, R_OK) == 0 && realpath(cand, out) && strlen(out) < len)
            return 0;
    }
    return -1;
}
