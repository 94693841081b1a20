/*
 * report_gil: `pyprof report --gil`, where wall-clock time went with the GIL.  See
 * report_gil.h.
 */
#include "report_gil.h"

#include <inttypes.h>
#include <stdio.h>

#include "read/gilwait.h"

#include "cli.h"
#include "cli_fmt.h"
#include "cli_text.h"
#include "jsonw.h"

static const char *const gil_key[PYPROF_GIL_STATES] = {"unknown", "held", "wait", "other",
                                                       "not_held"};

/* A stack on one line, innermost first: "f (file:line) < caller (file:line) < ...", at
 * most `max` functions. */
static void print_stack_line(const profile *p, uint32_t stack, unsigned max)
{
    const profile_stack *st = &p->stacks[stack];
    if (!st->nframes) {
        printf("(no Python frame)");
        return;
    }
    unsigned shown = 0;
    for (uint32_t k = st->nframes; k-- > 0 && shown < max; shown++) {
        if (shown)
            printf(" < ");
        cli_print_func(stdout, &p->funcs[p->frames[st->first + k].func]);
    }
    if (st->nframes > max)
        printf(" < ...");
}

static void json_stack(jsonw *w, const profile *p, uint32_t stack)
{
    const profile_stack *st = &p->stacks[stack];
    jsonw_key(w, "stack");
    jsonw_begin_array(w);
    for (uint32_t k = st->nframes; k-- > 0;) {
        const profile_frame *fr = &p->frames[st->first + k];
        jsonw_begin_object(w);
        cli_json_func(w, &p->funcs[fr->func]);
        jsonw_key_i64(w, "at_line", fr->line);
        jsonw_end_object(w);
    }
    jsonw_end_array(w);
}

static uint64_t gil_known(const uint64_t *samples)
{
    uint64_t n = 0;
    for (int g = 1; g < PYPROF_GIL_STATES; g++)
        n += samples[g];
    return n;
}

static int print_gil_text(const profile *p, const gilwait_counts *c, const report_opts *o)
{
    uint64_t known = gil_known(c->samples);
    printf("pyprof report --gil: %zu process%s, %zu samples, %" PRIu64 " with a GIL state\n",
           p->nprocs, p->nprocs == 1 ? "" : "es", p->nsamples, known);
    if (!known) {
        printf("\n  no sample says where its thread stood with the GIL: the logs were not\n"
               "  written in wall mode (PYPROF_CLOCK=wall)\n");
        return CLI_EXIT_OK;
    }
    printf("\n  held %.1f%%, waiting for the GIL %.1f%%, neither %.1f%%",
           cli_pct(c->samples[1], known), cli_pct(c->samples[2], known),
           cli_pct(c->samples[3], known));
    if (c->samples[PYPROF_GIL_NOT_HELD])
        printf(", not held (waits not seen) %.1f%%", cli_pct(c->samples[4], known));
    printf("\n  GIL waits with the holder's stack found: %.1f%%\n",
           cli_pct(c->attributed, c->samples[PYPROF_GIL_WAIT]));
    printf("\n  threads (share of each thread's samples)\n"
           "      pid      tid     held     wait  neither  not held  name\n");
    for (size_t i = 0; i < c->nthreads; i++) {
        const gilwait_thread *t = &c->threads[i];
        uint64_t n = gil_known(t->samples);
        if (!n)
            continue;
        const profile_thread *th = &p->threads[t->thread];
        printf("  %7" PRIu64 " %8" PRIu64 "  %6.1f%%  %6.1f%%  %6.1f%%   %6.1f%%  ",
               p->procs[th->process].pid, th->tid, cli_pct(t->samples[1], n),
               cli_pct(t->samples[2], n), cli_pct(t->samples[3], n), cli_pct(t->samples[4], n));
        cli_put_line(stdout, th->name);
        printf("\n");
    }
    if (!c->nstacks)
        return CLI_EXIT_OK;
    printf("\n  waiting for the GIL, by stack (share of all GIL waits), and who held it\n");
    size_t n = c->nstacks < o->top ? c->nstacks : o->top;
    for (size_t i = 0; i < n; i++) {
        const gilwait_stack *s = &c->stacks[i];
        printf("  %6.1f%%  ", cli_pct(s->samples, c->samples[PYPROF_GIL_WAIT]));
        print_stack_line(p, s->stack, 4);
        printf("\n");
        for (size_t h = 0; h < s->nholders && h < 3; h++) {
            printf("           %5.1f%% behind  ", cli_pct(s->holders[h].samples, s->samples));
            print_stack_line(p, s->holders[h].stack, 4);
            printf("\n");
        }
        if (s->attributed < s->samples)
            printf("           %5.1f%% behind  (no holder sample within a period)\n",
                   cli_pct(s->samples - s->attributed, s->samples));
    }
    return CLI_EXIT_OK;
}

static void json_gil_states(jsonw *w, const uint64_t *samples)
{
    for (int g = 0; g < PYPROF_GIL_STATES; g++)
        jsonw_key_u64(w, gil_key[g], samples[g]);
}

/* docs/JSON.md, "report gil". */
static int print_gil_json(const profile *p, const gilwait_counts *c, const report_opts *o)
{
    jsonw w;
    jsonw_init(&w, stdout, 0);
    jsonw_begin_object(&w);
    jsonw_key_u64(&w, "samples", p->nsamples);
    jsonw_key(&w, "states");
    jsonw_begin_object(&w);
    json_gil_states(&w, c->samples);
    jsonw_end_object(&w);
    jsonw_key_u64(&w, "attributed", c->attributed);
    jsonw_break(&w, 1);
    jsonw_key(&w, "threads");
    jsonw_begin_array(&w);
    for (size_t i = 0; i < c->nthreads; i++) {
        const gilwait_thread *t = &c->threads[i];
        const profile_thread *th = &p->threads[t->thread];
        jsonw_break(&w, 2);
        jsonw_begin_object(&w);
        jsonw_key_u64(&w, "pid", p->procs[th->process].pid);
        jsonw_key_u64(&w, "tid", th->tid);
        jsonw_key_string(&w, "name", th->name);
        json_gil_states(&w, t->samples);
        jsonw_end_object(&w);
    }
    jsonw_end_array(&w);
    jsonw_break(&w, 1);
    jsonw_key(&w, "waits");
    jsonw_begin_array(&w);
    size_t n = o->top_given && c->nstacks > o->top ? o->top : c->nstacks;
    for (size_t i = 0; i < n; i++) {
        const gilwait_stack *s = &c->stacks[i];
        jsonw_break(&w, 2);
        jsonw_begin_object(&w);
        jsonw_key_u64(&w, "samples", s->samples);
        jsonw_key_u64(&w, "attributed", s->attributed);
        json_stack(&w, p, s->stack);
        jsonw_key(&w, "holders");
        jsonw_begin_array(&w);
        for (size_t h = 0; h < s->nholders; h++) {
            jsonw_begin_object(&w);
            jsonw_key_u64(&w, "samples", s->holders[h].samples);
            json_stack(&w, p, s->holders[h].stack);
            jsonw_end_object(&w);
        }
        jsonw_end_array(&w);
        jsonw_end_object(&w);
    }
    jsonw_end_array(&w);
    jsonw_end_object(&w);
    jsonw_finish(&w);
    return CLI_EXIT_OK;
}

int report_gil(const profile *p, const report_opts *o, int json)
{
    gilwait_counts c;
    if (gilwait_sum(p, &c) < 0)
        return cli_oom();
    int rc = json ? print_gil_json(p, &c, o) : print_gil_text(p, &c, o);
    gilwait_counts_free(&c);
    return rc;
}
