/*
 * top_screen: what `pyprof top` draws and the terminal it draws on — the header (the
 * process, its program and clock, the samples, the state of the reading), the table of
 * the model's rows (top_model.h) cut to the terminal's width and height, and, on a
 * terminal, the alternate screen, the hidden cursor and the keys read one by one.
 *
 * Interface: top_screen_term, top_screen_source, top_screen_draw, top_screen_clear,
 * top_screen_enter, top_screen_leave, top_screen_read_keys.
 */
#ifndef PYPROF_TOP_SCREEN_H
#define PYPROF_TOP_SCREEN_H

#include <stdint.h>
#include <termios.h>

#include "top_model.h"

/* The terminal: `interactive` when stdout is one and top redraws in place (set by the
 * caller); `raw` and `saved` while top_screen_enter has the keyboard. */
typedef struct top_screen_term {
    int interactive, raw;
    struct termios saved;
} top_screen_term;

/* Where the samples come from, as the command knows it: the screen's first lines. */
typedef struct top_screen_source {
    int have_info; /* a log was opened: the fields down to pyver are its header's */
    uint64_t pid, window, seq, period_ns;
    int clock;
    const char *prog, *pyver;
    long asked_pid;      /* the PID given (shown until a log is opened) */
    const char *path;    /* the file being read, or the one that ended; NULL: none */
    const char *state;   /* the state of the reading, in words */
    const char *message; /* why it is in that state, or "" */
} top_screen_source;

/* One screen on stdout: the header from `src`, the model's window counted
 * (top_model_count_window) and its rows, as many as the terminal has room for.  On an
 * interactive terminal drawn over the last one; elsewhere plain lines, then a blank line
 * unless `once`. */
void top_screen_draw(const top_screen_term *term, int once, const top_screen_source *src,
                     top_model *m);

/* Clears the terminal (its size changed: the next top_screen_draw redraws it all). */
void top_screen_clear(void);

/* On an interactive terminal: the keyboard key by key without echo (when stdin is a
 * terminal: term->raw), the alternate screen, the cursor hidden.  Otherwise nothing. */
void top_screen_enter(top_screen_term *term);

/* Everything top_screen_enter changed, restored. */
void top_screen_leave(top_screen_term *term);

/* Reads the keys waiting on stdin; returns 1 when one of them quits (q, Q, Ctrl-C). */
int top_screen_read_keys(void);

#endif
