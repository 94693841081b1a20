/*
 * cmd_top: `pyprof top PID|DIR` — a live view of a profiled process's hottest
 * functions, redrawn every interval from what the library appended to its log since
 * (the reader's follow mode), like top(1).  This file is the command: its options,
 * where the samples come from, and the loop; what is computed from them is
 * top_model.c's, what is drawn and the terminal top_screen.c's.
 *
 * Where the samples come from.  For a PID, the log the process writes now is the `log:`
 * of its `status` reply (docs/CONTROL.md); when that log ends (its footer: rotated,
 * paused, a new period or clock), the process is asked again.  For a DIR, the newest log
 * in it that is still being written (no footer yet, its process alive); when it ends,
 * the next file of the same process and run: the next of its rotated series, or the
 * first of a later window.  A directory's logs and their order are logset.h's, as for
 * every command: its files whose header reads as a pyprof log's, whatever their names.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pyprof/reader.h>

#include "common/clock.h"
#include "read/logset.h"
#include "cli.h"
#include "cli_log.h"
#include "cli_parse.h"
#include "cmd.h"
#include "ctlclient.h"
#include "livelog.h"
#include "top_model.h"
#include "top_screen.h"

const char cmd_top_usage[] =
    "usage: pyprof top [--interval SECONDS] [--once] PID|DIR\n"
    "\n"
    "A live view of a running profiled process, like top(1): every interval, the\n"
    "samples the process's library appended to its log since, and a table of the\n"
    "hottest functions.\n"
    "\n"
    "  PID   a process profiled with its control socket on: its current log is asked\n"
    "        of it (pyprof ctl PID status), and asked again when that log ends\n"
    "        (rotated, paused, a new period or clock)\n"
    "  DIR   the newest log in DIR still being written, then the next files of that\n"
    "        process (its rotated series, later windows); a directory named by digits\n"
    "        is given as ./NAME\n"
    "\n"
    "The header gives the process, its program, Python version, sampling clock and\n"
    "period, the samples read (and in the last interval) and its threads with samples in\n"
    "the last interval.  The table:\n"
    "  %Own       share of the last interval's samples taken in the function\n"
    "  %Total     share of the last interval's samples with the function on the stack\n"
    "  OwnTime    seconds the function's samples stand for, since top started\n"
    "  TotalTime  the same for the samples with the function on the stack\n"
    "sorted by the last interval's own samples, then by own time.\n"
    "\n"
    "options:\n"
    "  --interval SECONDS  time between refreshes, and the window of the percentages\n"
    "                   (default 1; 0.1 to 3600)\n"
    "  --once           print one screen after one interval and exit (no terminal\n"
    "                   control: for scripts)\n"
    "  -h, --help       show this text\n"
    "\n"
    "Keys: q or Ctrl-C quits.  Exit status: 0 ok, 1 when PID has no control socket or\n"
    "DIR no log being written, 2 usage.\n"
    "\n"
    "EXAMPLES\n"
    "  pyprof top 4242\n"
    "  pyprof top /var/log/pyprof\n"
    "  pyprof top --once --interval 2 4242 > hot.txt\n";

/* What the current file's header says, owned. */
typedef struct top_info {
    uint64_t pid, window, seq, series_start_unix_ns, offset_us, start_unix_ns, period_ns;
    int clock;
    char *run_id, *prog, *pyver;
} top_info;

enum top_state { ST_FOLLOWING, ST_WAITING, ST_PAUSED, ST_ENDED, ST_ERROR };

typedef struct top {
    /* options */
    int once;
    pid_t pid;       /* PID mode, else 0 */
    const char *dir; /* DIR mode */

    /* the file being read */
    pyprof_reader *r;
    char *path; /* the file being read, or the one that ended */
    int have_info;
    top_info info;
    livelog log;
    uint64_t last_end; /* the footer's end of the file that ended */

    enum top_state state;
    char message[256];

    top_model model; /* what is shown (its interval_s: --interval) */
    top_screen_term term;
} top;

static volatile sig_atomic_t quit_flag, winch_flag;

static void on_quit(int sig)
{
    (void)sig;
    quit_flag = 1;
}

static void on_winch(int sig)
{
    (void)sig;
    winch_flag = 1;
}

static void set_message(top *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_message(top *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->message, sizeof t->message, fmt, ap);
    va_end(ap);
}

/* ---- files --------------------------------------------------------------------------- */

static void info_free(top_info *i)
{
    free(i->run_id);
    free(i->prog);
    free(i->pyver);
    memset(i, 0, sizeof *i);
}

static int info_from(top_info *i, const pyprof_header *h)
{
    memset(i, 0, sizeof *i);
    i->pid = h->pid;
    i->window = h->window;
    i->seq = h->seq;
    i->series_start_unix_ns = h->series_start_unix_ns ? h->series_start_unix_ns
                                                      : h->start_unix_ns;
    i->offset_us = h->offset_us;
    i->start_unix_ns = h->start_unix_ns;
    i->period_ns = h->period_ns;
    i->clock = h->clock;
    i->run_id = pyprof_str_dup(h->run_id);
    i->pyver = pyprof_str_dup(h->python_version);
    size_t len = 1;
    for (uint64_t a = 0; a < h->argc; a++)
        len += h->argv[a].len + 1;
    if (!h->argc)
        len += h->exe.len;
    i->prog = malloc(len);
    if (i->prog) {
        char *p = i->prog;
        for (uint64_t a = 0; a < h->argc; a++) {
            if (a)
                *p++ = ' ';
            memcpy(p, h->argv[a].s, h->argv[a].len);
            p += h->argv[a].len;
        }
        if (!h->argc) {
            memcpy(p, h->exe.s, h->exe.len);
            p += h->exe.len;
        }
        *p = 0;
    }
    if (!i->run_id || !i->pyver || !i->prog) {
        info_free(i);
        return -1;
    }
    return 0;
}

static void close_file(top *t)
{
    if (t->r)
        pyprof_reader_close(t->r);
    t->r = NULL;
    livelog_free(&t->log);
    top_model_file_end(&t->model);
}

/* Starts reading `path`.  Returns 0, or -1 with the reason in the message (-2 when the
 * log is cut before the end of its header: not yet on disk, or killed at start). */
static int open_file(top *t, const char *path)
{
    int err = 0;
    pyprof_reader *r = pyprof_reader_open(path, &err);
    if (!r) {
        set_message(t, "%s: %s", path, pyprof_reader_strerror(err));
        return err == PYPROF_R_TRUNCATED ? -2 : -1;
    }
    top_info ni;
    if (info_from(&ni, pyprof_reader_header(r)) < 0) {
        pyprof_reader_close(r);
        set_message(t, "out of memory");
        return -1;
    }
    char *np = strdup(path);
    if (!np) {
        info_free(&ni);
        pyprof_reader_close(r);
        set_message(t, "out of memory");
        return -1;
    }
    close_file(t);
    /* Another series (a new window) has its own time axis: the window starts over. */
    int new_series = t->have_info && (ni.series_start_unix_ns != t->info.series_start_unix_ns ||
                                      ni.pid != t->info.pid);
    top_model_file_start(&t->model, ni.offset_us, ni.start_unix_ns, new_series);
    if (t->have_info)
        info_free(&t->info);
    t->info = ni;
    t->have_info = 1;
    free(t->path);
    t->path = np;
    t->r = r;
    pyprof_reader_follow(r, 1);
    t->state = ST_FOLLOWING;
    t->message[0] = 0;
    return 0;
}

static int process_alive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

/* PID mode: the log the process writes now, from its status.  Returns 1 when a new file
 * was opened, 0 when there is none to read now (the state says why), -1 when the
 * process cannot be asked at all (the message says why). */
static int next_file_pid(top *t)
{
    char *reply, err[256];
    int rc = ctl_request(t->pid, "status", &reply, err, sizeof err);
    if (rc == CTL_NO_SOCKET) {
        t->state = ST_ENDED;
        set_message(t, "%s", ctl_no_socket_text(t->pid, err, sizeof err));
        return -1;
    }
    if (rc != CTL_OK) {
        t->state = ST_ERROR;
        set_message(t, "%s", err);
        return -1;
    }
    if (ctl_reply_kind(reply) <= 0) {
        t->state = ST_ERROR;
        size_t n = strcspn(reply, "\n");
        set_message(t, "status: %.*s", (int)(n > 200 ? 200 : n), reply);
        for (char *c = t->message; *c; c++)
            if ((unsigned char)*c < 0x20)
                *c = '?';
        free(reply);
        return -1;
    }
    char path[4096], state[32];
    int has = ctl_reply_value(reply, "log", path, sizeof path) == 0;
    if (ctl_reply_value(reply, "state", state, sizeof state) < 0)
        state[0] = 0;
    free(reply);
    if (!strcmp(state, "paused")) {
        t->state = ST_PAUSED;
        set_message(t, "profiling is paused (pyprof ctl %ld resume)", (long)t->pid);
        return 0;
    }
    if (!has || !path[0]) {
        t->state = ST_WAITING;
        set_message(t, "no log yet (it is created once the interpreter runs)");
        return 0;
    }
    if (t->path && !strcmp(path, t->path) && !t->r) {
        t->state = ST_WAITING;
        return 0;
    }
    int opened = open_file(t, path);
    if (opened == -2) {
        /* The process has made its log but its header is not on disk yet (it is written
         * at the first flush): waited for like a log not made yet. */
        t->state = ST_WAITING;
        set_message(t, "no log yet (its header reaches the disk at the first flush)");
        return 0;
    }
    if (opened < 0) {
        t->state = ST_ERROR;
        return 0;
    }
    return 1;
}

/* DIR mode: the directory's candidates with their headers read, into *s (free with
 * logset_free).  0, or -1 with errno when the directory cannot be read. */
static int dir_logs(const char *dir, logset *s)
{
    memset(s, 0, sizeof *s);
    if (logset_scan_dir(s, dir, 0) < 0) {
        int e = errno;
        logset_free(s);
        errno = e;
        return -1;
    }
    for (size_t i = 0; i < s->n; i++)
        (void)logset_read_header(&s->files[i]); /* out of memory: not taken */
    return 0;
}

/* DIR mode: the file that comes after the one that ended: of the same process and run,
 * the next of its series, or the first of a later window.  Returns 1 when one was
 * opened, else 0. */
static int next_file_dir(top *t)
{
    logset s;
    if (dir_logs(t->dir, &s) < 0) {
        t->state = ST_ERROR;
        set_message(t, "%s: %s", t->dir, strerror(errno));
        return 0;
    }
    long next = logset_next(&s, t->info.pid, t->info.run_id, t->info.window, t->info.seq,
                            t->path);
    int rc = 0;
    if (next < 0)
        t->state = process_alive((pid_t)t->info.pid) ? ST_WAITING : ST_ENDED;
    else
        rc = open_file(t, s.files[next].path) == 0;
    logset_free(&s);
    return rc;
}

/* Reads everything the current file holds now, going on to the next files. */
static void read_available(top *t)
{
    for (int hops = 0; hops < 64;) {
        if (!t->r) {
            int rc = t->pid ? next_file_pid(t) : next_file_dir(t);
            if (rc <= 0)
                return;
            hops++;
        }
        pyprof_record rec;
        int n = pyprof_reader_next(t->r, &rec);
        if (n == 1) {
            if (rec.type == PYPROF_REC_SAMPLE)
                top_model_add_sample(&t->model, &t->log, &rec.u.sample);
            else if (rec.type == PYPROF_REC_FOOTER)
                t->last_end = rec.u.footer.end;
            else if (livelog_add(&t->log, &rec) < 0) {
                t->state = ST_ERROR;
                set_message(t, "out of memory");
                return;
            }
            continue;
        }
        if (n == -PYPROF_R_AGAIN) {
            pid_t owner = t->pid ? t->pid : (pid_t)t->info.pid;
            if (!process_alive(owner)) {
                t->state = ST_ENDED;
                set_message(t, "process %ld has ended (its log has no footer)", (long)owner);
            }
            return;
        }
        close_file(t);
        if (n == 0) {
            t->state = ST_WAITING;
            set_message(t, "log ended: %s", cli_end_text(t->last_end));
            continue;
        }
        t->state = ST_ERROR;
        set_message(t, "%s: %s", t->path, pyprof_reader_strerror(-n));
        return;
    }
}

/* DIR mode at start: the newest log in the directory that is still being written.
 * Returns 0 with it open, 1 when there is none (*nlogs says how many logs there are), or
 * an exit code after printing why. */
static int find_first_dir(top *t, size_t *nlogs)
{
    logset s;
    if (dir_logs(t->dir, &s) < 0) {
        fprintf(stderr, "pyprof top: %s: %s\n", t->dir, strerror(errno));
        return CLI_EXIT_BAD_INPUT;
    }
    logset_sort_newest(&s);
    const char *chosen = NULL;
    size_t nc = 0;
    for (size_t i = 0; i < s.n; i++) {
        const logset_file *f = &s.files[i];
        nc += !logset_not_log(f);
        if (chosen || f->err != PYPROF_R_OK)
            continue;
        int err;
        pyprof_reader *r = pyprof_reader_open(f->path, &err);
        if (!r)
            continue;
        if (process_alive((pid_t)pyprof_reader_header(r)->pid)) {
            pyprof_reader_follow(r, 1);
            pyprof_record rec;
            int n;
            while ((n = pyprof_reader_next(r, &rec)) == 1)
                ;
            if (n == -PYPROF_R_AGAIN)
                chosen = f->path;
        }
        pyprof_reader_close(r);
    }
    int rc = CLI_EXIT_OK;
    *nlogs = nc;
    if (!chosen) {
        rc = 1;
    } else if (open_file(t, chosen) < 0) {
        fprintf(stderr, "pyprof top: %s\n", t->message);
        rc = CLI_EXIT_BAD_INPUT;
    }
    logset_free(&s);
    return rc;
}

/* A log is created only once the interpreter runs, and its header reaches the disk at
 * the first flush: a process that has just started may need a moment to show up. */
#define TOP_FIRST_WAIT_NS (3000ull * 1000000ull)

static int first_file_dir(top *t)
{
    uint64_t until = clock_mono_ns() + TOP_FIRST_WAIT_NS;
    for (;;) {
        size_t nlogs = 0;
        int rc = find_first_dir(t, &nlogs);
        if (rc != 1)
            return rc;
        if (clock_mono_ns() >= until || quit_flag) {
            if (nlogs)
                fprintf(stderr,
                        "pyprof top: %s: no log being written there (%zu %s, "
                        "finished or unreadable)\n",
                        t->dir, nlogs, nlogs == 1 ? "log" : "logs");
            else
                fprintf(stderr, "pyprof top: %s: no log there\n", t->dir);
            return CLI_EXIT_BAD_INPUT;
        }
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* ---- the screen ---------------------------------------------------------------------- */

static const char *state_text(const top *t)
{
    switch (t->state) {
    case ST_FOLLOWING:
        return "following";
    case ST_WAITING:
        return "waiting for the next log";
    case ST_PAUSED:
        return "paused";
    case ST_ENDED:
        return "ended";
    default:
        return "error";
    }
}

/* One screen on stdout (top_screen.c), told where the samples come from. */
static void draw(top *t)
{
    const top_screen_source src = {
        .have_info = t->have_info,
        .pid = t->info.pid,
        .window = t->info.window,
        .seq = t->info.seq,
        .period_ns = t->info.period_ns,
        .clock = t->info.clock,
        .prog = t->info.prog,
        .pyver = t->info.pyver,
        .asked_pid = (long)t->pid,
        .path = t->path,
        .state = state_text(t),
        .message = t->message,
    };
    top_screen_draw(&t->term, t->once, &src, &t->model);
}

/* ---- the loop ------------------------------------------------------------------------ */

static void top_free(top *t)
{
    close_file(t);
    if (t->have_info)
        info_free(&t->info);
    free(t->path);
    top_model_free(&t->model);
}

static int run_loop(top *t)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_quit; /* no SA_RESTART: a wait ends at once */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = on_winch;
    sigaction(SIGWINCH, &sa, NULL);

    uint64_t step = (uint64_t)(t->model.interval_s * 1e9);
    if (t->once) {
        uint64_t until = clock_mono_ns() + step;
        while (!quit_flag) {
            uint64_t now = clock_mono_ns();
            if (now >= until)
                break;
            uint64_t left = until - now;
            struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
            nanosleep(&ts, NULL);
        }
        read_available(t);
        draw(t);
        return CLI_EXIT_OK;
    }
    top_screen_enter(&t->term);
    draw(t);
    uint64_t next = clock_mono_ns() + step;
    while (!quit_flag) {
        uint64_t now = clock_mono_ns();
        if (now >= next) {
            read_available(t);
            draw(t);
            next += step;
            if (next <= now)
                next = now + step;
            continue;
        }
        int ms = (int)((next - now + 999999) / 1000000);
        struct pollfd p = {STDIN_FILENO, POLLIN, 0};
        int n = poll(&p, t->term.raw ? 1 : 0, ms);
        if (n > 0 && (p.revents & POLLIN) && top_screen_read_keys())
            break;
        if (n > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)) && t->term.raw)
            break;
        if (winch_flag) {
            winch_flag = 0;
            top_screen_clear();
            draw(t);
        }
    }
    top_screen_leave(&t->term);
    return CLI_EXIT_OK;
}

int cmd_top(int argc, char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'},
        {"interval", required_argument, NULL, 'i'},
        {"once", no_argument, NULL, 'o'},
        {NULL, 0, NULL, 0},
    };
    top t;
    memset(&t, 0, sizeof t);
    top_model_init(&t.model);
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            fputs(cmd_top_usage, stdout);
            return CLI_EXIT_OK;
        case 'i': {
            char *end;
            double v = strtod(optarg, &end);
            if (!optarg[0] || *end || !isfinite(v) || v < 0.1 || v > 3600)
                return cli_usage_error("top",
                                       "--interval: '%s' is not a number of seconds "
                                       "from 0.1 to 3600",
                                       optarg);
            t.model.interval_s = v;
            break;
        }
        case 'o':
            t.once = 1;
            break;
        default:
            return cli_bad_option("top", c, argv);
        }
    }
    if (argc - optind != 1)
        return cli_usage_error("top",
                               argc - optind ? "one PID or DIR only" : "no PID or DIR given");
    const char *arg = argv[optind];
    int digits = arg[0] != 0;
    for (const char *p = arg; *p; p++)
        digits &= isdigit((unsigned char)*p) != 0;
    int rc;
    if (digits) {
        rc = cli_parse_pid("top", arg, &t.pid);
        if (rc)
            return rc;
        /* A process that has just started may need a moment to show its log, as in
         * a directory (first_file_dir). */
        uint64_t until = clock_mono_ns() + TOP_FIRST_WAIT_NS;
        while ((rc = next_file_pid(&t)) == 0 && t.state == ST_WAITING &&
               clock_mono_ns() < until && !quit_flag) {
            struct timespec ts = {0, 200 * 1000000L};
            nanosleep(&ts, NULL);
        }
        if (rc < 0) {
            fprintf(stderr, "pyprof top: %s\n", t.message);
            top_free(&t);
            return CLI_EXIT_BAD_INPUT;
        }
    } else {
        t.dir = arg;
        rc = first_file_dir(&t);
        if (rc) {
            top_free(&t);
            return rc;
        }
    }
    t.term.interactive = !t.once && isatty(STDOUT_FILENO);
    read_available(&t);
    rc = run_loop(&t);
    top_free(&t);
    return rc;
}
