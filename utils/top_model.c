/*
 * top_model: what `pyprof top` computes from the samples.  See top_model.h.
 *
 * What is shown.  The samples of the last interval of the log's own time (the window
 * ends at the newest sample, or slides on with the clock when none arrive), and
 * cumulative times since top started reading: a function's own time is that of the
 * samples taken in it, its total time that of the samples it was on the stack for
 * (once per sample, however often it recurses).  Functions are keyed by name, file and
 * first line, so they carry over from one file of the series to the next.
 */
#include "top_model.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/growarray.h"

#define TOP_NONE UINT32_MAX
#define TOP_IDLE_LAG_US 2000000 /* the window follows the clock once data is this late */

/* A stack of the current file, summed up: the function it was taken in and every
 * function on it, once. */
struct top_model_stack {
    uint32_t own;
    uint32_t nfuncs;
    uint32_t *funcs;
};

/* A sample of the window. */
struct top_model_recent {
    int64_t t_us; /* on the series' axis */
    uint32_t stack;
    uint64_t tid;
};

void top_model_init(top_model *m)
{
    functab_init(&m->func_tab, &m->fn, &m->nfuncs, &m->cfn);
    m->interval_s = 1;
}

void top_model_file_start(top_model *m, uint64_t offset_us, uint64_t start_unix_ns,
                          int new_series)
{
    if (new_series) {
        m->rhead = m->nrecent = 0;
        m->tmax_us = 0;
    }
    m->have_axis = 1;
    m->offset_us = offset_us;
    m->start_unix_ns = start_unix_ns;
}

void top_model_file_end(top_model *m)
{
    idmap_free(&m->code_func);
    idmap_free(&m->stack_sum);
}

/* ---- functions and stacks ------------------------------------------------------------ */

/* The function (name, file, line), added when new; TOP_NONE when out of memory. */
static uint32_t func_get(top_model *m, const char *name, const char *file, int64_t line)
{
    /* Room for its counts first, so that every interned function has them. */
    if (grow_array((void **)&m->funcs, &m->cfuncs, m->nfuncs + 1, sizeof *m->funcs, 64) < 0)
        return TOP_NONE;
    size_t had = m->nfuncs;
    uint32_t f = functab_intern(&m->func_tab, name, file, line, PROFILE_FUNC_PYTHON);
    if (f == IDMAP_EMPTY)
        return TOP_NONE;
    if (f == had)
        memset(&m->funcs[f], 0, sizeof *m->funcs);
    return f;
}

/* The function of a frame: TOP_NONE for a cut marker (or when out of memory). */
static uint32_t frame_func(top_model *m, const livelog *log, const pyprof_frame *fr)
{
    if (fr->code_id == PYPROF_CODE_CUT)
        return TOP_NONE;
    if (fr->code_id < PYPROF_CODE_FIRST)
        return func_get(m, "[unreadable]", "", 0);
    uint32_t f = idmap_get(&m->code_func, fr->code_id);
    if (f != IDMAP_EMPTY)
        return f;
    const livelog_code *c = livelog_get_code(log, fr->code_id);
    if (!c) {
        char name[48];
        snprintf(name, sizeof name, "[code %" PRIu64 "]", fr->code_id);
        return func_get(m, name, "", 0);
    }
    f = func_get(m, livelog_code_name(c), c->filename, c->first_line);
    if (f != TOP_NONE)
        (void)idmap_set(&m->code_func, fr->code_id, f);
    return f;
}

/* The summary of the current file's stack `stack_id`; TOP_NONE when it is unknown. */
static uint32_t stack_get(top_model *m, const livelog *log, uint64_t stack_id)
{
    uint32_t s = idmap_get(&m->stack_sum, stack_id);
    if (s != IDMAP_EMPTY)
        return s;
    const livelog_stack *ls = livelog_get_stack(log, stack_id);
    if (!ls || m->nstacks >= TOP_NONE - 1 ||
        grow_array((void **)&m->stacks, &m->cstacks, m->nstacks + 1, sizeof *m->stacks, 64) < 0)
        return TOP_NONE;
    top_model_stack *st = &m->stacks[m->nstacks];
    memset(st, 0, sizeof *st);
    st->own = TOP_NONE;
    st->funcs = malloc((ls->nframes ? ls->nframes : 1) * sizeof *st->funcs);
    if (!st->funcs)
        return TOP_NONE;
    for (uint64_t k = ls->nframes; k-- > 0;) {
        uint32_t f = frame_func(m, log, &ls->frames[k]);
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
    if (idmap_set(&m->stack_sum, stack_id, (uint32_t)m->nstacks) < 0) {
        free(st->funcs);
        return TOP_NONE;
    }
    return (uint32_t)m->nstacks++;
}

void top_model_add_sample(top_model *m, const livelog *log, const pyprof_sample_rec *s)
{
    m->samples++;
    uint32_t si = stack_get(m, log, s->stack_id);
    if (si == TOP_NONE)
        return;
    const top_model_stack *st = &m->stacks[si];
    if (st->own != TOP_NONE)
        m->funcs[st->own].own_us += s->cpu_us;
    for (uint32_t i = 0; i < st->nfuncs; i++)
        m->funcs[st->funcs[i]].total_us += s->cpu_us;
    if (m->rhead + m->nrecent >= m->crecent && m->rhead > m->crecent / 2) {
        memmove(m->recent, m->recent + m->rhead, m->nrecent * sizeof *m->recent);
        m->rhead = 0;
    }
    if (grow_array((void **)&m->recent, &m->crecent, m->rhead + m->nrecent + 1,
                   sizeof *m->recent, 1024) < 0)
        return;
    const livelog_thread *th = livelog_get_thread(log, s->thread_idx);
    int64_t ts = s->t_us + (int64_t)m->offset_us;
    m->recent[m->rhead + m->nrecent++] = (top_model_recent){
        ts, si, th ? th->tid : (s->thread_idx | (1ull << 63))};
    if (ts > m->tmax_us)
        m->tmax_us = ts;
    /* The window never ends before the newest sample: what is older than one interval
     * before it will not be counted again (this bounds the catch-up of a long log). */
    int64_t win_us = (int64_t)(m->interval_s * 1e6);
    while (m->nrecent && m->recent[m->rhead].t_us <= m->tmax_us - win_us) {
        m->rhead++;
        m->nrecent--;
    }
}

/* ---- the window and the rows --------------------------------------------------------- */

static int cmp_func(const void *a, const void *b, void *arg)
{
    const top_model *m = arg;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    const top_model_func *x = &m->funcs[i], *y = &m->funcs[j];
    if (x->win_own != y->win_own)
        return x->win_own > y->win_own ? -1 : 1;
    if (x->own_us != y->own_us)
        return x->own_us > y->own_us ? -1 : 1;
    if (x->win_total != y->win_total)
        return x->win_total > y->win_total ? -1 : 1;
    if (x->total_us != y->total_us)
        return x->total_us > y->total_us ? -1 : 1;
    return strcmp(m->fn[i].name, m->fn[j].name);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t top_model_count_window(top_model *m, size_t *nthreads)
{
    int64_t win_us = (int64_t)(m->interval_s * 1e6);
    int64_t end = m->tmax_us;
    if (m->have_axis) {
        uint64_t now = clock_ns(CLOCK_REALTIME);
        int64_t now_us = now > m->start_unix_ns ? (int64_t)((now - m->start_unix_ns) / 1000) +
                                                      (int64_t)m->offset_us
                                                : 0;
        if (now_us - TOP_IDLE_LAG_US > end)
            end = now_us - TOP_IDLE_LAG_US;
    }
    while (m->nrecent && m->recent[m->rhead].t_us <= end - win_us) {
        m->rhead++;
        m->nrecent--;
    }
    for (size_t i = 0; i < m->nfuncs; i++)
        m->funcs[i].win_own = m->funcs[i].win_total = 0;
    uint64_t *tids = malloc((m->nrecent ? m->nrecent : 1) * sizeof *tids);
    for (size_t i = 0; i < m->nrecent; i++) {
        const top_model_recent *rc = &m->recent[m->rhead + i];
        const top_model_stack *st = &m->stacks[rc->stack];
        if (st->own != TOP_NONE)
            m->funcs[st->own].win_own++;
        for (uint32_t k = 0; k < st->nfuncs; k++)
            m->funcs[st->funcs[k]].win_total++;
        if (tids)
            tids[i] = rc->tid;
    }
    *nthreads = 0;
    if (tids && m->nrecent) {
        qsort(tids, m->nrecent, sizeof *tids, cmp_u64);
        for (size_t i = 0; i < m->nrecent; i++)
            *nthreads += !i || tids[i] != tids[i - 1];
    }
    free(tids);
    return m->nrecent;
}

uint32_t *top_model_rows(const top_model *m, size_t *n)
{
    uint32_t *order = malloc((m->nfuncs ? m->nfuncs : 1) * sizeof *order);
    if (!order)
        return NULL;
    *n = 0;
    for (size_t i = 0; i < m->nfuncs; i++)
        if (m->funcs[i].own_us || m->funcs[i].win_total)
            order[(*n)++] = (uint32_t)i;
    qsort_r(order, *n, sizeof *order, cmp_func, (void *)m);
    return order;
}

void top_model_free(top_model *m)
{
    top_model_file_end(m);
    for (size_t i = 0; i < m->nfuncs; i++) {
        free(m->fn[i].name);
        free(m->fn[i].file);
    }
    free(m->fn);
    functab_free(&m->func_tab);
    free(m->funcs);
    for (size_t i = 0; i < m->nstacks; i++)
        free(m->stacks[i].funcs);
    free(m->stacks);
    free(m->recent);
}
