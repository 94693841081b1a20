/*
 * cmd_run: `pyprof run -- CMD ARGS...` — runs CMD with libpyprof.so preloaded and a fresh
 * run id, waits for it, then says on stderr where every log of the run went and shows the
 * top functions.  CMD's stdin, stdout and exit status are its own: pyprof writes only to
 * stderr and exits with CMD's status (128 + N when signal N killed it), so it can wrap a
 * command inside a pipeline or a script.
 *
 * Like system(3), pyprof ignores SIGINT and SIGQUIT while CMD runs (the terminal sends
 * them to CMD too, and pyprof must survive to print the summary), and passes SIGTERM and
 * SIGHUP on to CMD.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_args.h"
#include "cli_fmt.h"
#include "cli_text.h"
#include "cmd.h"
#include "common/config.h"
#include "read/aggregate.h"

const char cmd_run_usage[] =
    "usage: pyprof run [options] [--] CMD [ARGS...]\n"
    "\n"
    "Runs CMD with the profiler preloaded (LD_PRELOAD=libpyprof.so), so that every Python\n"
    "process it starts — CMD itself, its children — writes a log.  When CMD exits, prints\n"
    "on stderr where each log went and the functions that took the most samples, and\n"
    "exits with CMD's exit status (128 + N if signal N killed it).  CMD's own output is\n"
    "left alone.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT   a directory for the logs, or a file-name template (%p pid,\n"
    "                     %P parent pid, %n program, %t start time, %h host, %r run id,\n"
    "                     %% a percent sign); default: a new directory in $TMPDIR or /tmp\n"
    "  -p, --period P     sampling period, 100us to 10s: 10ms, 500us, 1s or 0.01\n"
    "                     (default 10ms)\n"
    "  --clock CLOCK      cpu: sample threads as they use CPU (default); wall: sample\n"
    "                     every thread every period, idle ones too\n"
    "  --memory 0|1       record the resident set size beside the samples (default 1)\n"
    "  --native 0|1       also record native C frames (default 0)\n"
    "  --max-depth N      frames kept per stack, 4 to 4096 (default 256)\n"
    "  --children 0|1     also profile forked and exec'd children (default 1)\n"
    "  -h, --help         show this text\n"
    "\n"
    "The options set the PYPROF_* environment variables of the same names; anything else\n"
    "(PYPROF_FILTER, PYPROF_SIGNAL, ...) can be set in the environment directly.\n"
    "\n"
    "EXAMPLES\n"
    "  pyprof run -- python3 app.py --port 8080\n"
    "  pyprof run -p 1ms --clock wall -o /var/tmp/prof -- python3 -m myservice\n"
    "  pyprof run -o 'prof.%n.%p.lz4' -- ./manage.py test\n";

/* The environment CMD gets, on top of ours. */
typedef struct run_env {
    const char *output, *period, *clock, *memory, *native, *max_depth, *children;
    char run_id[17];
    char lib[PATH_MAX];
    char out_path[PATH_MAX]; /* PYPROF_OUTPUT, absolute */
    char scan_dir[PATH_MAX]; /* where the logs will be */
    int made_dir;            /* scan_dir is a directory we created */
} run_env;

static int new_run_id(char out[17])
{
    uint8_t r[8];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        return -1;
    for (int i = 0; i < 8; i++)
        snprintf(out + 2 * i, 3, "%02x", r[i]);
    return 0;
}

/* Decides PYPROF_OUTPUT and the directory to look for the logs in. */
static int prepare_output(run_env *e)
{
    if (!e->output) {
        const char *tmp = getenv("TMPDIR");
        if (!tmp || !tmp[0])
            tmp = "/tmp";
        snprintf(e->out_path, sizeof e->out_path, "%s/pyprof.XXXXXX", tmp);
        if (!mkdtemp(e->out_path)) {
            cli_error("cannot create a directory in %s: %s", tmp, strerror(errno));
            return -1;
        }
        snprintf(e->scan_dir, sizeof e->scan_dir, "%s", e->out_path);
        e->made_dir = 1;
        return 0;
    }
    /* Absolute, so that a child that changes directory writes to the same place. */
    if (e->output[0] == '/') {
        snprintf(e->out_path, sizeof e->out_path, "%s", e->output);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) {
            cli_error("cannot get the current directory: %s", strerror(errno));
            return -1;
        }
        if ((size_t)snprintf(e->out_path, sizeof e->out_path, "%s/%s", cwd, e->output) >=
            sizeof e->out_path) {
            cli_error("output path too long");
            return -1;
        }
    }
    struct stat st;
    size_t len = strlen(e->out_path);
    /* "-o DIR/" is clearly a directory: create it, as the library will not. */
    if (e->out_path[len - 1] == '/' && stat(e->out_path, &st) < 0 && errno == ENOENT &&
        mkdir(e->out_path, 0777) < 0) {
        cli_error("cannot create %s: %s", e->out_path, strerror(errno));
        return -1;
    }
    if (stat(e->out_path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(e->scan_dir, sizeof e->scan_dir, "%s", e->out_path);
        for (size_t l = strlen(e->scan_dir); l > 1 && e->scan_dir[l - 1] == '/'; l--)
            e->scan_dir[l - 1] = 0;
    } else {
        /* A template: the logs land in its directory. */
        snprintf(e->scan_dir, sizeof e->scan_dir, "%s", e->out_path);
        char *slash = strrchr(e->scan_dir, '/');
        if (slash == e->scan_dir)
            slash[1] = 0;
        else
            *slash = 0;
    }
    return 0;
}

/* Whether an LD_PRELOAD entry is a sanitizer runtime, which must stay first in the
 * list (ASan refuses to start otherwise). */
static int is_sanitizer_runtime(const char *entry, size_t len)
{
    static const char *const names[] = {"libasan", "libubsan",  "libtsan",
                                        "liblsan", "libhwasan", "libclang_rt."};
    const char *base = entry;
    for (size_t i = 0; i < len; i++)
        if (entry[i] == '/')
            base = entry + i + 1;
    size_t blen = len - (size_t)(base - entry);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (blen >= strlen(names[i]) && !memcmp(base, names[i], strlen(names[i])))
            return 1;
    return 0;
}

/* LD_PRELOAD for CMD: our library in front of the inherited list, except that sanitizer
 * runtimes stay in front of everything. */
static void build_preload(const char *lib, const char *old, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    for (int pass = 0; pass < 3; pass++) {
        if (pass == 1) {
            n += (size_t)snprintf(n < cap ? out + n : NULL, n < cap ? cap - n : 0, "%s%s",
                                  n ? ":" : "", lib);
            continue;
        }
        /* Entries are separated by colons or spaces (ld.so(8)). */
        for (const char *p = old ? old : ""; *p;) {
            size_t len = strcspn(p, ": ");
            if (len && is_sanitizer_runtime(p, len) == (pass == 0))
                n += (size_t)snprintf(n < cap ? out + n : NULL, n < cap ? cap - n : 0, "%s%.*s",
                                      n ? ":" : "", (int)len, p);
            p += len;
            p += strspn(p, ": ");
        }
    }
}

/* In the child: sets the environment and execs CMD.  When exec fails, tells the parent
 * through `status_fd` (closed by a successful exec) and exits like a shell would. */
static void child_exec(const run_env *e, char **cmd, const struct sigaction *old_int,
                       const struct sigaction *old_quit, int status_fd)
{
    sigaction(SIGINT, old_int, NULL);
    sigaction(SIGQUIT, old_quit, NULL);
    char preload[4 * PATH_MAX];
    build_preload(e->lib, getenv("LD_PRELOAD"), preload, sizeof preload);
    setenv("LD_PRELOAD", preload, 1);
    setenv("PYPROF_OUTPUT", e->out_path, 1);
    setenv("PYPROF_RUN_ID", e->run_id, 1);
    static const char *const names[] = {"PYPROF_PERIOD", "PYPROF_CLOCK",     "PYPROF_MEMORY",
                                        "PYPROF_NATIVE", "PYPROF_MAX_DEPTH", "PYPROF_CHILDREN"};
    const char *const vals[] = {e->period, e->clock,     e->memory,
                                e->native, e->max_depth, e->children};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (vals[i])
            setenv(names[i], vals[i], 1);
    execvp(cmd[0], cmd);
    int err = errno;
    fprintf(stderr, "pyprof run: %s: %s\n", cmd[0], strerror(err));
    if (write(status_fd, &err, sizeof err) < 0) {
        /* The parent then only misses that exec failed. */
    }
    _exit(err == ENOENT ? 127 : 126);
}

/* How long to wait for descendants still running when CMD exits. */
#define RUN_ORPHAN_WAIT_MS 2000

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
    int saved = errno;
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
    errno = saved;
}

/* Waits a little for the descendants CMD left running (a forked worker finishing its
 * log), but never for long: a daemon CMD started is not ours to wait for. */
static void wait_orphans(void)
{
    for (int i = 0; i < RUN_ORPHAN_WAIT_MS / 10; i++) {
        pid_t w;
        while ((w = waitpid(-1, NULL, WNOHANG)) > 0)
            ;
        if (w < 0 && errno == ECHILD)
            return;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    cli_error("processes started by the command are still running; their logs are not "
              "complete yet");
}

/* Runs CMD and returns its exit code, the shell's way; *exec_failed is set when CMD
 * could not be started at all. */
static int run_child(const run_env *e, char **cmd, int *exec_failed)
{
    struct sigaction ign, fwd, old_int, old_quit, old_term, old_hup;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    memset(&fwd, 0, sizeof fwd);
    fwd.sa_handler = forward_signal;
    sigemptyset(&fwd.sa_mask);
    fwd.sa_flags = SA_RESTART;
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    /* Become the subreaper of CMD's process tree, so that a child CMD leaves behind is
     * ours to wait for: its log is only complete once it has exited. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    int pfd[2] = {-1, -1};
    *exec_failed = 0;
    if (pipe2(pfd, O_CLOEXEC) < 0)
        pfd[0] = pfd[1] = -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        child_exec(e, cmd, &old_int, &old_quit, pfd[1]);
    if (pfd[1] >= 0)
        close(pfd[1]);
    int code;
    if (pid < 0) {
        cli_error("fork: %s", strerror(errno));
        code = 126;
        *exec_failed = 1;
    } else {
        child_pid = pid;
        sigaction(SIGTERM, &fwd, &old_term);
        sigaction(SIGHUP, &fwd, &old_hup);
        /* EOF means exec succeeded; an errno means it did not. */
        int err;
        ssize_t n;
        while ((n = read(pfd[0], &err, sizeof err)) < 0 && errno == EINTR)
            ;
        *exec_failed = n == (ssize_t)sizeof err;
        /* As the subreaper, orphaned descendants are ours to reap too. */
        int status = 0, st;
        pid_t w;
        while ((w = waitpid(-1, &st, 0)) != pid && (w >= 0 || errno == EINTR))
            ;
        status = st;
        child_pid = 0;
        sigaction(SIGTERM, &old_term, NULL);
        sigaction(SIGHUP, &old_hup, NULL);
        if (w < 0) {
            cli_error("waitpid: %s", strerror(errno));
            code = 1;
        } else {
            code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
        }
    }
    if (pfd[0] >= 0)
        close(pfd[0]);
    if (pid > 0)
        wait_orphans();
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    return code;
}

/* Whether `path` is a log of this run.  Only files changed since the run started are
 * opened, so a template in a busy directory does not make us read all of it. */
static int is_run_log(const char *path, const char *run_id, time_t since)
{
    struct stat st;
    if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0 || st.st_mtime < since ||
        st.st_uid != getuid())
        return 0;
    int err;
    pyprof_reader *r = pyprof_reader_open(path, &err);
    if (!r)
        return 0;
    const pyprof_header *h = pyprof_reader_header(r);
    int match = h->run_id.len == strlen(run_id) && !memcmp(h->run_id.s, run_id, h->run_id.len);
    pyprof_reader_close(r);
    return match;
}

/* Collects the logs of the run, sorted by name.  Returns how many, or -1. */
static int find_logs(const run_env *e, time_t since, char ***out)
{
    struct dirent **names;
    *out = NULL;
    int n = scandir(e->scan_dir, &names, NULL, alphasort);
    if (n < 0)
        return -1;
    char **logs = calloc((size_t)n + 1, sizeof *logs);
    int nlogs = 0;
    for (int i = 0; i < n; i++) {
        char full[PATH_MAX + 256];
        if (logs && names[i]->d_name[0] != '.' &&
            (size_t)snprintf(full, sizeof full, "%s/%s", e->scan_dir, names[i]->d_name) <
                sizeof full &&
            is_run_log(full, e->run_id, since))
            logs[nlogs++] = strdup(full);
        free(names[i]);
    }
    free(names);
    if (!logs)
        return -1;
    *out = logs;
    return nlogs;
}

/* The summary on stderr: where the logs are, and the top functions by self. */
static void summarize(const run_env *e, char **logs, int nlogs)
{
    profile *p;
    if (cli_load(logs, nlogs, NULL, 0, NULL, &p))
        return;
    fprintf(stderr, "pyprof: run %s: %d log%s\n", e->run_id, nlogs, nlogs == 1 ? "" : "s");
    for (size_t i = 0; i < p->nprocs; i++) {
        const profile_process *pr = &p->procs[i];
        fprintf(stderr, "  pid %" PRIu64 " (", pr->pid);
        cli_print_argv(stderr, pr->argv, pr->argc);
        fprintf(stderr, "): %s\n", pr->path);
    }
    aggregate_counts agg;
    uint32_t *order = malloc((p->nfuncs ? p->nfuncs : 1) * sizeof *order);
    if (order && p->nsamples && aggregate_funcs(p, &agg) == 0) {
        size_t n = aggregate_sort_funcs(p, &agg, agg.self, order);
        fprintf(stderr, "pyprof: top functions by self, of %zu samples:\n", p->nsamples);
        for (size_t k = 0; k < n && k < 10 && agg.self[order[k]]; k++) {
            const profile_func *f = &p->funcs[order[k]];
            fprintf(stderr, "  %5.1f%%  %s", cli_pct(agg.self[order[k]], p->nsamples), f->name);
            if (f->file[0])
                fprintf(stderr, " (%s:%" PRId64 ")", f->file, f->line);
            fputc('\n', stderr);
        }
        aggregate_counts_free(&agg);
    } else if (!p->nsamples) {
        fprintf(stderr, "pyprof: no samples were taken\n");
    }
    free(order);
    if (e->made_dir)
        fprintf(stderr, "pyprof: full report: pyprof report %s\n", e->scan_dir);
    else
        fprintf(stderr, "pyprof: full report: pyprof report --run %s %s\n", e->run_id,
                e->scan_dir);
    profile_free(p);
}

/* Checks a 0|1 option with the library's own parser. */
static int check_bool(const char *opt, const char *v)
{
    int b;
    if (config_parse_bool(v, &b) < 0)
        return cli_usage_error("run", "%s: '%s' is not 0 or 1", opt, v);
    return 0;
}

int cmd_run(int argc, char **argv)
{
    enum { OPT_CLOCK = 0x100, OPT_MEMORY, OPT_NATIVE, OPT_MAX_DEPTH, OPT_CHILDREN };
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"period", required_argument, NULL, 'p'},
        {"clock", required_argument, NULL, OPT_CLOCK},
        {"memory", required_argument, NULL, OPT_MEMORY},
        {"native", required_argument, NULL, OPT_NATIVE},
        {"max-depth", required_argument, NULL, OPT_MAX_DEPTH},
        {"children", required_argument, NULL, OPT_CHILDREN},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    run_env e;
    memset(&e, 0, sizeof e);
    int c, rc;
    uint64_t ns;
    unsigned u;
    int clock;

    opterr = 0;
    /* '+': stop at CMD, so its own options are not taken for ours. */
    while ((c = getopt_long(argc, argv, "+:o:p:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (!optarg[0])
                return cli_usage_error("run", "-o: empty path");
            e.output = optarg;
            break;
        case 'p':
            if (config_parse_duration(optarg, CONFIG_PERIOD_MIN_NS, CONFIG_PERIOD_MAX_NS, &ns) <
                0)
                return cli_usage_error("run",
                                       "-p: '%s' is not a period from 100us to 10s "
                                       "(such as 10ms, 500us, 1s or 0.01)",
                                       optarg);
            e.period = optarg;
            break;
        case OPT_CLOCK:
            if (config_parse_clock(optarg, &clock) < 0)
                return cli_usage_error("run", "--clock: '%s' is not cpu or wall", optarg);
            e.clock = optarg;
            break;
        case OPT_MEMORY:
            if ((rc = check_bool("--memory", optarg)))
                return rc;
            e.memory = optarg;
            break;
        case OPT_NATIVE:
            if ((rc = check_bool("--native", optarg)))
                return rc;
            e.native = optarg;
            break;
        case OPT_CHILDREN:
            if ((rc = check_bool("--children", optarg)))
                return rc;
            e.children = optarg;
            break;
        case OPT_MAX_DEPTH:
            if (config_parse_uint(optarg, CONFIG_MAX_DEPTH_MIN, CONFIG_MAX_DEPTH_MAX, &u) < 0)
                return cli_usage_error("run",
                                       "--max-depth: '%s' is not a number from %d to "
                                       "%d",
                                       optarg, CONFIG_MAX_DEPTH_MIN, CONFIG_MAX_DEPTH_MAX);
            e.max_depth = optarg;
            break;
        case 'h':
            fputs(cmd_run_usage, stdout);
            return CLI_EXIT_OK;
        default:
            return cli_bad_option("run", c, argv);
        }
    }
    if (optind >= argc)
        return cli_usage_error("run", "no command given");
    if (cli_find_library(e.lib, sizeof e.lib) < 0) {
        cli_error("cannot find libpyprof.so beside the pyprof executable or in "
                  "../lib relative to it");
        return CLI_EXIT_BAD_INPUT;
    }
    if (new_run_id(e.run_id) < 0) {
        cli_error("getrandom: %s", strerror(errno));
        return CLI_EXIT_BAD_INPUT;
    }
    if (prepare_output(&e) < 0)
        return CLI_EXIT_BAD_INPUT;

    /* File times have a one-second grain on some file systems. */
    time_t since = time(NULL) - 1;
    int exec_failed;
    int code = run_child(&e, argv + optind, &exec_failed);

    char **logs = NULL;
    int nlogs = exec_failed ? 0 : find_logs(&e, since, &logs);
    if (exec_failed)
        ; /* the child said why */
    else if (nlogs < 0)
        cli_error("cannot list %s to find the logs: %s", e.scan_dir, strerror(errno));
    else if (nlogs == 0)
        cli_error("no Python process was profiled (no log of run %s in %s)", e.run_id,
                  e.scan_dir);
    else
        summarize(&e, logs, nlogs);
    if (nlogs == 0 && e.made_dir)
        rmdir(e.scan_dir);
    for (int i = 0; i < nlogs; i++)
        free(logs[i]);
    free(logs);
    return code;
}
