/*
 * cmd_top: `pyprof top PID|DIR` — a live view of a profiled process's hottest
 * functions, redrawn every interval from what the library appended to its log since
 * (the reader's follow mode), like top(1).
 *
 * Where the samples come from.  For a PID, the log the process writes now is the `log:`
 * of its `status` reply (docs/CONTROL.md); when that log ends (its footer: rotated,
 * paused, a new period or clock), the process is asked again.  For a DIR, the newest log
 * in it that is still being written (no footer yet, its process alive); when it ends,
 * the next file of the same process and run: the next of its rotated series, or the
 * first of a later window.  A directory's logs and their order are logset.h's, as for
 * every command: its files whose header reads as a pyprof log's, whatever their names.
 *
 * What is shown.  The samples of the last interval of the log's own time (the window
 * ends at the newest sample, or slides on with the clock when none arrive), and
 * cumulative times since top started reading: a function's own time is that of the
 * samples taken in it, its total time that of the samples it was on the stack for
 * (once per sample, however often it recurses).  Functions are keyed by name, file and
 * first line, so they carry over from one file of the series to the next.
 *
 * The terminal.  On a terminal: the alternate screen, the cursor hidden, the keyboard
 * read key by key without echo (q, or Ctrl-C, quits), every line cut to the width so
 * nothing wraps, everything restored on the way out.  Elsewhere (a pipe, --once) plain
 * lines, one screen per interval.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <pyprof/reader.h>

#include "common/clock.h"
#include "common/growarray.h"
#include "common/utf8.h"
#include "read/functab.h"
#include "read/idmap.h"
#include "read/logset.h"
#include "cli.h"
#include "cli_fmt.h"
#include "cli_log.h"
#include "cli_parse.h"
#include "cmd.h"
#include "ctlclient.h"
#include "livelog.h"

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

#define TOP_NONE UINT32_MAX
#define TOP_IDLE_LAG_US 2000000 /* the window follows the clock once data is this late */

/* A function's counts, across all the files read (its name, file and line: top.fn). */
typedef struct top_func {
    uint64_t own_us, total_us;   /* cumulative */
    uint64_t win_own, win_total; /* samples in the window */
} top_func;

/* A stack of the current file, summed up: the function it was taken in and every
 * function on it, once. */
typedef struct top_stack {
    uint32_t own;
    uint32_t nfuncs;
    uint32_t *funcs;
} top_stack;

/* A sample of the window. */
typedef struct top_recent {
    int64_t t_us; /* on the series' axis */
    uint32_t stack;
    uint64_t tid;
} top_recent;

/* What the current file's header says, owned. */
typedef struct top_info {
    uint64_t pid, window, seq, series_start_unix_ns, offset_us, start_unix_ns, period_ns;
    int clock;
    char *run_id, *prog, *pyver;
} top_info;

enum top_state { ST_FOLLOWING, ST_WAITING, ST_PAUSED, ST_ENDED, ST_ERROR };

typedef struct top {
    /* options */
    double interval_s;
    int once;
    pid_t pid;       /* PID mode, else 0 */
    const char *dir; /* DIR mode */

    /* the file being read */
    pyprof_reader *r;
    char *path; /* the file being read, or the one that ended */
    int have_info;
    top_info info;
    livelog log;
    idmap code_func;   /* code_id -> function, this file */
    idmap stack_sum;   /* stack_id -> top_stack, this file */
    uint64_t last_end; /* the footer's end of the file that ended */

    enum top_state state;
    char message[256];

    /* across files */
    profile_func *fn; /* the functions, interned in func_tab */
    size_t nfuncs, cfn;
    functab func_tab;
    top_func *funcs; /* their counts, as many */
    size_t cfuncs;
    top_stack *stacks;
    size_t nstacks, cstacks;
    top_recent *recent;
    size_t rhead, nrecent, crecent;
    int64_t tmax_us;
    uint64_t samples;

    /* the terminal */
    int interactive, raw;
    struct termios saved;
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

/* ---- functions and stacks ------------------------------------------------------------ */

/* The function (name, file, line), added when new; TOP_NONE when out of memory. */
static uint32_t func_get(top *t, const char *name, const char *file, int64_t line)
{
    /* Room for its counts first, so that every interned function has them. */
    if (grow_array((void **)&t->funcs, &t->cfuncs, t->nfuncs + 1, sizeof *t->funcs, 64) < 0)
        return TOP_NONE;
    size_t had = t->nfuncs;
    uint32_t f = functab_intern(&t->func_tab, name, file, line, PROFILE_FUNC_PYTHON);
    if (f == IDMAP_EMPTY)
        return TOP_NONE;
    if (f == had)
        memset(&t->funcs[f], 0, sizeof *t->funcs);
    return f;
}

/* The function of a frame: TOP_NONE for a cut marker (or when out of memory). */
static uint32_t frame_func(top *t, const pyprof_frame *fr)
{
    if (fr->code_id == PYPROF_CODE_CUT)
        return TOP_NONE;
    if (fr->code_id < PYPROF_CODE_FIRST)
        return func_get(t, "[unreadable]", "", 0);
    uint32_t f = idmap_get(&t->code_func, fr->code_id);
    if (f != IDMAP_EMPTY)
        return f;
    const livelog_code *c = livelog_get_code(&t->log, fr->code_id);
    if (!c) {
        char name[48];
        snprintf(name, sizeof name, "[code %" PRIu64 "]", fr->code_id);
        return func_get(t, name, "", 0);
    }
    f = func_get(t, livelog_code_name(c), c->filename, c->first_line);
    if (f != TOP_NONE)
        (void)idmap_set(&t->code_func, fr->code_id, f);
    return f;
}

/* The summary of the current file's stack `stack_id`; TOP_NONE when it is unknown. */
static uint32_t stack_get(top *t, uint64_t stack_id)
{
    uint32_t s = idmap_get(&t->stack_sum, stack_id);
    if (s != IDMAP_EMPTY)
        return s;
    const livelog_stack *ls = livelog_get_stack(&t->log, stack_id);
    if (!ls || t->nstacks >= TOP_NONE - 1 ||
        grow_array((void **)&t->stacks, &t->cstacks, t->nstacks + 1, sizeof *t->stacks, 64) < 0)
        return TOP_NONE;
    top_stack *st = &t->stacks[t->nstacks];
    memset(st, 0, sizeof *st);
    st->own = TOP_NONE;
    st->funcs = malloc((ls->nframes ? ls->nframes : 1) * sizeof *st->funcs);
    if (!st->funcs)
        return TOP_NONE;
    for (uint64_t k = ls->nframes; k-- > 0;) {
        uint32_t f = frame_func(t, &ls->frames[k]);
        if (f == TOP_NONE)
            continue;
        if (st->own == TOP_NONE && k == ls->nframes - 1)
            st->own = f;
        uint32_t j = 0;
        while (j < st->nfuncs && st->funcs[j] != f)
            j++;
        if (j == st->nfuncs)
            st->funcs[st->nfuncs++] = f;
    }
    if (idmap_set(&t->stack_sum, stack_id, (uint32_t)t->nstacks) < 0) {
        free(st->funcs);
        return TOP_NONE;
    }
    return (uint32_t)t->nstacks++;
}

static void add_sample(top *t, const pyprof_sample_rec *s)
{
    t->samples++;
    uint32_t si = stack_get(t, s->stack_id);
    if (si == TOP_NONE)
        return;
    const top_stack *st = &t->stacks[si];
    if (st->own != TOP_NONE)
        t->funcs[st->own].own_us += s->cpu_us;
    for (uint32_t i = 0; i < st->nfuncs; i++)
        t->funcs[st->funcs[i]].total_us += s->cpu_us;
    if (t->rhead + t->nrecent >= t->crecent && t->rhead > t->crecent / 2) {
        memmove(t->recent, t->recent + t->rhead, t->nrecent * sizeof *t->recent);
        t->rhead = 0;
    }
    if (grow_array((void **)&t->recent, &t->crecent, t->rhead + t->nrecent + 1,
                   sizeof *t->recent, 1024) < 0)
        return;
    const livelog_thread *th = livelog_get_thread(&t->log, s->thread_idx);
    int64_t ts = s->t_us + (int64_t)t->info.offset_us;
    t->recent[t->rhead + t->nrecent++] = (top_recent){
        ts, si, th ? th->tid : (s->thread_idx | (1ull << 63))};
    if (ts > t->tmax_us)
        t->tmax_us = ts;
    /* The window never ends before the newest sample: what is older than one interval
     * before it will not be counted again (this bounds the catch-up of a long log). */
    int64_t win_us = (int64_t)(t->interval_s * 1e6);
    while (t->nrecent && t->recent[t->rhead].t_us <= t->tmax_us - win_us) {
        t->rhead++;
        t->nrecent--;
    }
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
    idmap_free(&t->code_func);
    idmap_free(&t->stack_sum);
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
    if (t->have_info &&
        (ni.series_start_unix_ns != t->info.series_start_unix_ns || ni.pid != t->info.pid)) {
        t->rhead = t->nrecent = 0;
        t->tmax_us = 0;
    }
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
                add_sample(t, &rec.u.sample);
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

typedef struct screen {
    char **lines;
    size_t n, cap;
    int cols, rows;
} screen;

/* Appends a line: control characters become '?', cut to the width in columns (one per
 * UTF-8 character). */
static void screen_line(screen *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void screen_line(screen *s, const char *fmt, ...)
{
    char raw[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    if (grow_array((void **)&s->lines, &s->cap, s->n + 1, sizeof *s->lines, 32) < 0)
        return;
    char *out = malloc(strlen(raw) + 1);
    if (!out)
        return;
    size_t o = 0;
    int col = 0;
    for (const char *p = raw; *p;) {
        size_t k = utf8_char_len((const uint8_t *)p, SIZE_MAX);
        if (!k) { /* not UTF-8: one '?' */
            k = 1;
            if (col >= s->cols)
                break;
            out[o++] = '?';
            col++;
            p += k;
            continue;
        }
        if (col >= s->cols)
            break;
        if (k == 1)
            out[o++] = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;
        else
            memcpy(out + o, p, k), o += k;
        col++;
        p += k;
    }
    out[o] = 0;
    s->lines[s->n++] = out;
}

/* Columns `s` takes on a terminal: one per UTF-8 character. */
static size_t columns(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

static void screen_free(screen *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->lines[i]);
    free(s->lines);
    memset(s, 0, sizeof *s);
}

static void term_size(int *cols, int *rows)
{
    struct winsize ws;
    *cols = 80;
    *rows = 24;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
        *cols = ws.ws_col;
        if (ws.ws_row > 0)
            *rows = ws.ws_row;
    }
}

static int cmp_func(const void *a, const void *b, void *arg)
{
    const top *t = arg;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    const top_func *x = &t->funcs[i], *y = &t->funcs[j];
    if (x->win_own != y->win_own)
        return x->win_own > y->win_own ? -1 : 1;
    if (x->own_us != y->own_us)
        return x->own_us > y->own_us ? -1 : 1;
    if (x->win_total != y->win_total)
        return x->win_total > y->win_total ? -1 : 1;
    if (x->total_us != y->total_us)
        return x->total_us > y->total_us ? -1 : 1;
    return strcmp(t->fn[i].name, t->fn[j].name);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

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

/* The window's samples counted into the functions; returns how many, and the threads
 * among them. */
static uint64_t count_window(top *t, size_t *nthreads)
{
    int64_t win_us = (int64_t)(t->interval_s * 1e6);
    int64_t end = t->tmax_us;
    if (t->have_info) {
        uint64_t now = clock_ns(CLOCK_REALTIME);
        int64_t now_us = now > t->info.start_unix_ns
                             ? (int64_t)((now - t->info.start_unix_ns) / 1000) +
                                   (int64_t)t->info.offset_us
                             : 0;
        if (now_us - TOP_IDLE_LAG_US > end)
            end = now_us - TOP_IDLE_LAG_US;
    }
    while (t->nrecent && t->recent[t->rhead].t_us <= end - win_us) {
        t->rhead++;
        t->nrecent--;
    }
    for (size_t i = 0; i < t->nfuncs; i++)
        t->funcs[i].win_own = t->funcs[i].win_total = 0;
    uint64_t *tids = malloc((t->nrecent ? t->nrecent : 1) * sizeof *tids);
    for (size_t i = 0; i < t->nrecent; i++) {
        const top_recent *rc = &t->recent[t->rhead + i];
        const top_stack *st = &t->stacks[rc->stack];
        if (st->own != TOP_NONE)
            t->funcs[st->own].win_own++;
        for (uint32_t k = 0; k < st->nfuncs; k++)
            t->funcs[st->funcs[k]].win_total++;
        if (tids)
            tids[i] = rc->tid;
    }
    *nthreads = 0;
    if (tids && t->nrecent) {
        qsort(tids, t->nrecent, sizeof *tids, cmp_u64);
        for (size_t i = 0; i < t->nrecent; i++)
            *nthreads += !i || tids[i] != tids[i - 1];
    }
    free(tids);
    return t->nrecent;
}

static void build_screen(top *t, screen *s)
{
    term_size(&s->cols, &s->rows);
    size_t nthreads;
    uint64_t win = count_window(t, &nthreads);
    char pb[32];
    if (t->have_info) {
        screen_line(s, "pyprof top - pid %" PRIu64 ": %s", t->info.pid, t->info.prog);
        screen_line(s,
                    "Python %s  clock %s  period %s  samples %" PRIu64 " (+%" PRIu64
                    " in %gs)  threads %zu",
                    t->info.pyver, cli_clock_name(t->info.clock),
                    cli_fmt_ns(t->info.period_ns, pb, sizeof pb), t->samples, win,
                    t->interval_s, nthreads);
    } else {
        screen_line(s, "pyprof top - pid %ld", (long)t->pid);
        screen_line(s, "no log yet");
    }
    if (t->message[0]) {
        screen_line(s, "[%s] %s", state_text(t), t->message);
    } else {
        /* The path's end says most: cut from the left to fit. */
        char pre[96];
        int n = snprintf(pre, sizeof pre, "[%s] window %" PRIu64 " seq %" PRIu64 ": ",
                         state_text(t), t->info.window, t->info.seq);
        const char *path = t->path ? t->path : "";
        size_t room = s->cols > n + 4 ? (size_t)(s->cols - n) : 4;
        size_t len = strlen(path);
        if (len > room)
            screen_line(s, "%s...%s", pre, path + len - (room - 3));
        else
            screen_line(s, "%s%s", pre, path);
    }
    screen_line(s, "%s", "");
    screen_line(s, "%7s %7s %9s %10s  %s", "%Own", "%Total", "OwnTime", "TotalTime",
                "Function (file:line)");
    uint32_t *order = malloc((t->nfuncs ? t->nfuncs : 1) * sizeof *order);
    if (!order)
        return;
    size_t n = 0;
    for (size_t i = 0; i < t->nfuncs; i++)
        if (t->funcs[i].own_us || t->funcs[i].win_total)
            order[n++] = (uint32_t)i;
    qsort_r(order, n, sizeof *order, cmp_func, (void *)t);
    size_t room = s->rows > 6 ? (size_t)s->rows - 5 : 1;
    for (size_t i = 0; i < n && i < room; i++) {
        const top_func *f = &t->funcs[order[i]];
        const profile_func *fn = &t->fn[order[i]];
        char num[64], where[64] = "";
        int pre = snprintf(num, sizeof num, "%6.1f%% %6.1f%% %8.2fs %9.2fs  ",
                           cli_pct(f->win_own, win), cli_pct(f->win_total, win),
                           (double)f->own_us / 1e6, (double)f->total_us / 1e6);
        if (fn->file[0])
            snprintf(where, sizeof where, ":%" PRId64 ")", fn->line);
        /* What does not fit is the file's start: its name and the line stay in view. */
        const char *file = fn->file, *cut = "";
        long fit = (long)s->cols - pre - (long)columns(fn->name) - 2 - (long)strlen(where);
        size_t flen = columns(file);
        if (fn->file[0] && (long)flen > fit && fit > 8) {
            cut = "...";
            while (*file && (long)columns(file) > fit - 3)
                file++;
        }
        screen_line(s, "%s%s%s%s%s%s", num, fn->name, fn->file[0] ? " (" : "", cut, file,
                    where);
    }
    free(order);
}

static void draw(top *t)
{
    screen s = {0};
    build_screen(t, &s);
    if (t->interactive) {
        fputs("\033[H", stdout);
        for (size_t i = 0; i < s.n && (int)i < s.rows; i++) {
            fputs(s.lines[i], stdout);
            fputs("\033[K", stdout);
            if ((int)i + 1 < s.rows)
                fputs("\r\n", stdout);
        }
        fputs("\033[J", stdout);
    } else {
        for (size_t i = 0; i < s.n; i++)
            puts(s.lines[i]);
        if (!t->once)
            putchar('\n');
    }
    fflush(stdout);
    screen_free(&s);
}

/* ---- the terminal and the loop ------------------------------------------------------- */

static void term_enter(top *t)
{
    if (!t->interactive)
        return;
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &t->saved) == 0) {
        struct termios raw = t->saved;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0)
            t->raw = 1;
    }
    fputs("\033[?1049h\033[?25l\033[H\033[2J", stdout);
    fflush(stdout);
}

static void term_leave(top *t)
{
    if (!t->interactive)
        return;
    fputs("\033[?25h\033[?1049l", stdout);
    fflush(stdout);
    if (t->raw)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &t->saved);
    t->raw = 0;
}

/* Reads the keys waiting on stdin; returns 1 when one of them quits. */
static int read_keys(void)
{
    char buf[64];
    ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == 'q' || buf[i] == 'Q' || buf[i] == 3 /* Ctrl-C */)
            return 1;
    return 0;
}

static void top_free(top *t)
{
    close_file(t);
    if (t->have_info)
        info_free(&t->info);
    free(t->path);
    for (size_t i = 0; i < t->nfuncs; i++) {
        free(t->fn[i].name);
        free(t->fn[i].file);
    }
    free(t->fn);
    functab_free(&t->func_tab);
    free(t->funcs);
    for (size_t i = 0; i < t->nstacks; i++)
        free(t->stacks[i].funcs);
    free(t->stacks);
    free(t->recent);
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

    uint64_t step = (uint64_t)(t->interval_s * 1e9);
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
    term_enter(t);
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
        int n = poll(&p, t->raw ? 1 : 0, ms);
        if (n > 0 && (p.revents & POLLIN) && read_keys())
            break;
        if (n > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)) && t->raw)
            break;
        if (winch_flag) {
            winch_flag = 0;
            fputs("\033[2J", stdout);
            draw(t);
        }
    }
    term_leave(t);
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
    functab_init(&t.func_tab, &t.fn, &t.nfuncs, &t.cfn);
    t.interval_s = 1;
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
            t.interval_s = v;
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
    t.interactive = !t.once && isatty(STDOUT_FILENO);
    read_available(&t);
    rc = run_loop(&t);
    top_free(&t);
    return rc;
}
