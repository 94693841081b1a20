/*
 * report_tasks: `pyprof report --tasks`, the time of asyncio programs by task.  See
 * report_tasks.h.
 */
#include "report_tasks.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read/tasks.h"

#include "cli.h"
#include "cli_fmt.h"
#include "cli_text.h"
#include "jsonw.h"

/* Functions listed per task row, and await sites kept per row. */
#define ROW_FUNCS 3
#define ROW_SITES 16

/* Where a suspended task waited: its innermost frame. */
typedef struct await_site {
    uint32_t func;
    int32_t line;
    uint64_t us; /* the waiting its samples stand for */
} await_site;

/* One row: a folded task name. */
typedef struct task_row {
    char *name;
    uint64_t names; /* distinct task names folded into it */
    uint64_t self, total;
    uint64_t *func_self;  /* per function: samples it was innermost while the row ran */
    uint64_t awaiting;    /* samples of the row's tasks suspended (wall mode) */
    uint64_t awaiting_us; /* the waiting they stand for (their cpu_us) */
    await_site sites[ROW_SITES];
    unsigned nsites;
    uint64_t sites_other; /* awaiting samples at a site past the ROW_SITES kept */
} task_row;

typedef struct task_rows {
    task_row *rows;
    size_t n;
    uint32_t *row_of_func; /* per function: its row + 1 for a task frame, else 0 */
    uint64_t with_task, awaiting, awaiting_us;
} task_rows;

static void rows_free(task_rows *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->rows[i].name);
        free(t->rows[i].func_self);
    }
    free(t->rows);
    free(t->row_of_func);
}

/* Each task function's row, made on first sight of its folded name. */
static int rows_make(const profile *p, task_rows *t)
{
    t->row_of_func = calloc(p->nfuncs ? p->nfuncs : 1, sizeof *t->row_of_func);
    if (!t->row_of_func)
        return -1;
    for (size_t f = 0; f < p->nfuncs; f++) {
        const char *name;
        size_t len;
        if (!tasks_name(&p->funcs[f], &name, &len))
            continue;
        char *folded = malloc(len + 2);
        if (!folded)
            return -1;
        tasks_fold(name, len, folded);
        size_t r = 0;
        while (r < t->n && strcmp(t->rows[r].name, folded) != 0)
            r++;
        if (r == t->n) {
            task_row *rows = realloc(t->rows, (t->n + 1) * sizeof *rows);
            if (!rows) {
                free(folded);
                return -1;
            }
            t->rows = rows;
            memset(&rows[r], 0, sizeof rows[r]);
            rows[r].name = folded;
            rows[r].func_self = calloc(p->nfuncs, sizeof *rows[r].func_self);
            t->n++;
            if (!rows[r].func_self)
                return -1;
        } else {
            free(folded);
        }
        t->rows[r].names++;
        t->row_of_func[f] = (uint32_t)r + 1;
    }
    return 0;
}

/* An awaiting sample standing for `us` of waiting at frame f of row r. */
static void count_site(task_row *r, const profile_frame *f, uint64_t us)
{
    for (unsigned k = 0; k < r->nsites; k++) {
        if (r->sites[k].func == f->func && r->sites[k].line == f->line) {
            r->sites[k].us += us;
            return;
        }
    }
    if (r->nsites == ROW_SITES) {
        r->sites_other += us;
        return;
    }
    r->sites[r->nsites++] = (await_site){f->func, f->line, us};
}

static int by_count(const void *x, const void *y)
{
    const await_site *a = x, *b = y;
    return a->us != b->us ? (a->us < b->us ? 1 : -1) : 0;
}

/* Counts every sample into the rows of its stack's tasks. */
static int rows_count(const profile *p, task_rows *t)
{
    uint64_t *seen = calloc(t->n ? t->n : 1, sizeof *seen); /* sample index + 1 per row */
    if (!seen)
        return -1;
    for (size_t i = 0; i < p->nsamples; i++) {
        const profile_stack *st = &p->stacks[p->samples[i].stack];
        int64_t run = tasks_running(p, p->samples[i].stack);
        if (run < 0)
            continue;
        task_row *self = &t->rows[t->row_of_func[p->frames[run].func] - 1];
        if (p->samples[i].gil == PYPROF_GIL_AWAIT) {
            /* A suspended task: where it waits is its innermost frame. */
            uint64_t us = p->samples[i].cpu_us;
            t->awaiting++;
            t->awaiting_us += us;
            self->awaiting++;
            self->awaiting_us += us;
            if (st->nframes)
                count_site(self, &p->frames[st->first + st->nframes - 1], us);
            continue;
        }
        t->with_task++;
        self->self++;
        if (st->nframes)
            self->func_self[p->frames[st->first + st->nframes - 1].func]++;
        for (uint32_t k = 0; k < st->nframes; k++) {
            uint32_t r = t->row_of_func[p->frames[st->first + k].func];
            if (r && seen[r - 1] != i + 1) {
                seen[r - 1] = i + 1;
                t->rows[r - 1].total++;
            }
        }
    }
    free(seen);
    return 0;
}

static int by_total(const void *x, const void *y)
{
    const task_row *a = x, *b = y;
    if (a->total != b->total)
        return a->total < b->total ? 1 : -1;
    if (a->awaiting_us != b->awaiting_us)
        return a->awaiting_us < b->awaiting_us ? 1 : -1;
    if (a->self != b->self)
        return a->self < b->self ? 1 : -1;
    return strcmp(a->name, b->name);
}

/* The row's ROW_FUNCS functions that were innermost most often, into top (-1: none). */
static void row_top_funcs(const profile *p, const task_row *r, int64_t *top)
{
    for (int k = 0; k < ROW_FUNCS; k++)
        top[k] = -1;
    for (size_t f = 0; f < p->nfuncs; f++) {
        if (!r->func_self[f])
            continue;
        for (int k = 0; k < ROW_FUNCS; k++) {
            if (top[k] < 0 || r->func_self[f] > r->func_self[top[k]]) {
                memmove(&top[k + 1], &top[k], (size_t)(ROW_FUNCS - 1 - k) * sizeof *top);
                top[k] = (int64_t)f;
                break;
            }
        }
    }
}

static void print_text(const profile *p, const task_rows *t, size_t top)
{
    printf("pyprof report --tasks: %zu process%s, %" PRIu64 " samples, %" PRIu64
           " while an asyncio task ran; tasks awaiting %.2f s in all\n",
           p->nprocs, p->nprocs == 1 ? "" : "es", (uint64_t)p->nsamples - t->awaiting,
           t->with_task, t->awaiting_us / 1e6);
    if (!t->n) {
        printf("\n  no sample has a task frame: no asyncio task ran while sampled, or the\n"
               "  interpreter's asyncio layout was not found (Python 3.7 and later)\n");
        return;
    }
    uint64_t running = (uint64_t)p->nsamples - t->awaiting;
    printf("\ntasks (names ending in a number folded into one row; self: the task's own\n"
           "frames ran, total: it or a task it awaited ran, %% of the samples that are not\n"
           "awaiting; awaiting: seconds its tasks were suspended at an await, summed, wall\n"
           "mode)\n"
           "   self%%      self  total%%     total  awaiting  names  task\n");
    for (size_t i = 0; i < t->n && i < top; i++) {
        const task_row *r = &t->rows[i];
        printf("  %5.1f%% %9" PRIu64 " %5.1f%% %9" PRIu64 " %8.2fs %6" PRIu64 "  %s\n",
               cli_pct(r->self, running), r->self, cli_pct(r->total, running), r->total,
               r->awaiting_us / 1e6, r->names, r->name);
        int64_t funcs[ROW_FUNCS];
        row_top_funcs(p, r, funcs);
        for (int k = 0; k < ROW_FUNCS && funcs[k] >= 0; k++) {
            printf("          %5.1f%% of its self  ", cli_pct(r->func_self[funcs[k]], r->self));
            cli_print_func(stdout, &p->funcs[funcs[k]]);
            printf("\n");
        }
        for (unsigned k = 0; k < r->nsites && k < ROW_FUNCS; k++) {
            printf("          %5.1f%% of its awaiting at line %d of ",
                   cli_pct(r->sites[k].us, r->awaiting_us), r->sites[k].line);
            cli_print_func(stdout, &p->funcs[r->sites[k].func]);
            printf("\n");
        }
    }
    if (t->n > top)
        printf("  ... %zu more (--top)\n", t->n - top);
}

static void print_json(const profile *p, const task_rows *t, size_t top)
{
    jsonw w;
    jsonw_init(&w, stdout, 0);
    jsonw_begin_object(&w);
    jsonw_key_u64(&w, "samples", (uint64_t)p->nsamples - t->awaiting);
    jsonw_key_u64(&w, "with_task", t->with_task);
    jsonw_key_u64(&w, "awaiting", t->awaiting);
    jsonw_key_double(&w, "awaiting_s", t->awaiting_us / 1e6, 6);
    jsonw_key(&w, "tasks");
    jsonw_begin_array(&w);
    for (size_t i = 0; i < t->n && i < top; i++) {
        const task_row *r = &t->rows[i];
        jsonw_break(&w, 2);
        jsonw_begin_object(&w);
        jsonw_key_string(&w, "task", r->name);
        jsonw_key_u64(&w, "names", r->names);
        jsonw_key_u64(&w, "self", r->self);
        jsonw_key_u64(&w, "total", r->total);
        jsonw_key_u64(&w, "awaiting", r->awaiting);
        jsonw_key_double(&w, "awaiting_s", r->awaiting_us / 1e6, 6);
        jsonw_key(&w, "await_sites");
        jsonw_begin_array(&w);
        for (unsigned k = 0; k < r->nsites; k++) {
            jsonw_begin_object(&w);
            cli_json_func(&w, &p->funcs[r->sites[k].func]);
            jsonw_key_i64(&w, "at_line", r->sites[k].line);
            jsonw_key_double(&w, "seconds", r->sites[k].us / 1e6, 6);
            jsonw_end_object(&w);
        }
        jsonw_end_array(&w);
        jsonw_key(&w, "functions");
        jsonw_begin_array(&w);
        int64_t funcs[ROW_FUNCS];
        row_top_funcs(p, r, funcs);
        for (int k = 0; k < ROW_FUNCS && funcs[k] >= 0; k++) {
            jsonw_begin_object(&w);
            cli_json_func(&w, &p->funcs[funcs[k]]);
            jsonw_key_u64(&w, "self", r->func_self[funcs[k]]);
            jsonw_end_object(&w);
        }
        jsonw_end_array(&w);
        jsonw_end_object(&w);
    }
    jsonw_end_array(&w);
    jsonw_end_object(&w);
    jsonw_finish(&w);
}

int report_tasks(const profile *p, const report_opts *o, int json)
{
    task_rows t = {0};
    if (rows_make(p, &t) < 0 || rows_count(p, &t) < 0) {
        rows_free(&t);
        return cli_oom();
    }
    qsort(t.rows, t.n, sizeof *t.rows, by_total);
    for (size_t i = 0; i < t.n; i++)
        qsort(t.rows[i].sites, t.rows[i].nsites, sizeof t.rows[i].sites[0], by_count);
    size_t top = json && !o->top_given ? t.n : o->top;
    if (json)
        print_json(p, &t, top);
    else
        print_text(p, &t, top);
    rows_free(&t);
    return CLI_EXIT_OK;
}
