/*
 * top_screen: what `pyprof top` draws, and the terminal.  See top_screen.h.
 *
 * The terminal.  On a terminal: the alternate screen, the cursor hidden, the keyboard
 * read key by key without echo (q, or Ctrl-C, quits), every line cut to the width so
 * nothing wraps, everything restored on the way out.  Elsewhere (a pipe, --once) plain
 * lines, one screen per interval.
 */
#include "top_screen.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/growarray.h"
#include "common/utf8.h"

#include "cli_fmt.h"
#include "cli_log.h"

/* ---- the lines ----------------------------------------------------------------------- */

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

/* ---- the screen ---------------------------------------------------------------------- */

static void build_screen(const top_screen_source *src, top_model *m, screen *s)
{
    term_size(&s->cols, &s->rows);
    size_t nthreads;
    uint64_t win = top_model_count_window(m, &nthreads);
    char pb[32];
    if (src->have_info) {
        screen_line(s, "pyprof top - pid %" PRIu64 ": %s", src->pid, src->prog);
        screen_line(s,
                    "Python %s  clock %s  period %s  samples %" PRIu64 " (+%" PRIu64
                    " in %gs)  threads %zu",
                    src->pyver, cli_clock_name(src->clock),
                    cli_fmt_ns(src->period_ns, pb, sizeof pb), m->samples, win, m->interval_s,
                    nthreads);
    } else {
        screen_line(s, "pyprof top - pid %ld", src->asked_pid);
        screen_line(s, "no log yet");
    }
    if (src->message[0]) {
        screen_line(s, "[%s] %s", src->state, src->message);
    } else {
        /* The path's end says most: cut from the left to fit. */
        char pre[96];
        int n = snprintf(pre, sizeof pre, "[%s] window %" PRIu64 " seq %" PRIu64 ": ",
                         src->state, src->window, src->seq);
        const char *path = src->path ? src->path : "";
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
    size_t n;
    uint32_t *order = top_model_rows(m, &n);
    if (!order)
        return;
    size_t room = s->rows > 6 ? (size_t)s->rows - 5 : 1;
    for (size_t i = 0; i < n && i < room; i++) {
        const top_model_func *f = &m->funcs[order[i]];
        const profile_func *fn = &m->fn[order[i]];
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

void top_screen_draw(const top_screen_term *term, int once, const top_screen_source *src,
                     top_model *m)
{
    screen s = {0};
    build_screen(src, m, &s);
    if (term->interactive) {
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
        if (!once)
            putchar('\n');
    }
    fflush(stdout);
    screen_free(&s);
}

void top_screen_clear(void) { fputs("\033[2J", stdout); }

/* ---- the terminal -------------------------------------------------------------------- */

void top_screen_enter(top_screen_term *term)
{
    if (!term->interactive)
        return;
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &term->saved) == 0) {
        struct termios raw = term->saved;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0)
            term->raw = 1;
    }
    fputs("\033[?1049h\033[?25l\033[H\033[2J", stdout);
    fflush(stdout);
}

void top_screen_leave(top_screen_term *term)
{
    if (!term->interactive)
        return;
    fputs("\033[?25h\033[?1049l", stdout);
    fflush(stdout);
    if (term->raw)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &term->saved);
    term->raw = 0;
}

int top_screen_read_keys(void)
{
    char buf[64];
    ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == 'q' || buf[i] == 'Q' || buf[i] == 3 /* Ctrl-C */)
            return 1;
    return 0;
}
