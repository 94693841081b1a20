/*
 * cmd_html: `pyprof html` — one self-contained page (no network) with a flame graph, a
 * timeline of samples per thread, RSS over time and process/thread selectors.
 *
 * The page is the template utils/html/viewer.html with the parts the pages share (the
 * Makefile puts them in), embedded into the binary at build time (the .incbin below),
 * with the profile spliced in as one JSON document in a
 * <script type="application/json"> element.  The work that grows with the number of
 * samples is done here, so the page stays fast on millions of them (docs/HTML.md):
 *
 *   - stacks become paths in a tree of functions (calltree's, keyed by function only: a
 *     node is a (parent, function) pair, numbered in the order the samples first use
 *     them, so a parent comes before its children); the flame graph, the depth of
 *     a sample and the base two samples share are all walks over that tree in the page;
 *   - each distinct stack is written once (its leaf node and the line of each frame);
 *   - each thread's samples, sorted by time, become runs: consecutive samples with the
 *     same stack and GIL state, each less than RUN_GAP_PERIODS sampling periods after the
 *     previous one, are one run (start, length, stack, count).  An idle thread sampled in
 *     wall-clock mode is a handful of runs however long it sleeps;
 *   - in wall-clock logs, where each sample's thread stood with the GIL (profile_sample.gil)
 *     is one more column of the runs: a digit per run (every sample of a run has the same
 *     state), with each thread's samples counted by state, and each span's samples that
 *     waited for the GIL counted per stack like its others.  A page whose samples have no
 *     GIL state (cpu mode, older logs) says so ("gil": 0) and has none of these keys;
 *   - each span (src/read/spans.h) carries its thread, times, nesting depth, ids and its
 *     samples counted per stack, so the page's flame graph of a span is exact (runs cut
 *     at its edges would only be counted in proportion);
 *   - with allocation samples (PYPROF_ALLOC), each sampled allocation, sorted by time, is
 *     (time, thread, stack, the bytes it stands for, when it was freed): the page weighs
 *     the flame graph by bytes allocated or in use with them and draws the estimated live
 *     heap over the RSS.  A page without allocation samples has no "allocs" key at all;
 *   - with asyncio task frames (src/read/tasks.h), each task's samples are marks in a lane
 *     of its own: the samples it was running (its frame the innermost task frame) and, in
 *     wall mode, those of it suspended at an await (PYPROF_GIL_AWAIT).  The logs are
 *     loaded with those (PROFILE_AWAITING), which are then kept apart from the samples
 *     (unless --awaiting asks for them there), so the flame graph, the timeline's stacks
 *     and the GIL counts are what they are without them.  Each process's TASK_LANES
 *     tasks with the most samples get a lane, the rest one lane together; a lane's marks
 *     are runs like a thread's.  A page without task frames has no "tasks" key.
 *
 * Every string from the logs (function names, files, thread names, argv) is data: it is
 * written by jsonw with every '<', '>' and '&' as a \u escape (JSONW_HTML), so no name
 * can close the script element or open a comment; the page puts names in the document
 * with textContent or canvas text only.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pyprof/pyprof.h>

#include "read/aggregate.h"
#include "read/allocs.h"
#include "read/calltree.h"
#include "read/keep.h"
#include "read/spans.h"
#include "read/tasks.h"
#include "cli.h"
#include "cli_args.h"
#include "cli_log.h"
#include "cli_output.h"
#include "cli_text.h"
#include "cmd.h"
#include "jsonw.h"

/* The page, between pyprof_viewer_html and pyprof_viewer_html_end: the template
 * utils/html/viewer.html with the parts the pages share put in, as the Makefile assembles
 * it in PYPROF_HTML_DIR (its build directory's html/) before it builds this object.  The
 * path is relative to the top of the source tree, where make runs the compiler. */
__asm__(".section .rodata\n"
        ".globl pyprof_viewer_html\n"
        ".hidden pyprof_viewer_html\n"
        "pyprof_viewer_html:\n"
        ".incbin \"" PYPROF_HTML_DIR "/viewer.html\"\n"
        ".globl pyprof_viewer_html_end\n"
        ".hidden pyprof_viewer_html_end\n"
        "pyprof_viewer_html_end:\n"
        ".byte 0\n"
        ".previous\n");
extern const char pyprof_viewer_html[];
extern const char pyprof_viewer_html_end[];

/* Where the data goes in the template. */

/* Samples of one thread with the same stack are one run while each follows the previous
 * one by less than this many periods; a longer gap (the thread was idle, or not sampled)
 * starts a new run, so the timeline shows it. */
#define RUN_GAP_PERIODS 3

/* Task lanes per process: the tasks with the most samples get one each, the others
 * share one more ("other tasks"). */
#define TASK_LANES 64

/* clang-format off */
const char cmd_html_usage[] =
    "usage: pyprof html [options] LOG... | DIR... -o FILE.html\n"
    "\n"
    "Writes one self-contained HTML page (no network access needed) that shows the\n"
    "profile: a flame graph (click a frame to zoom, search to highlight), a timeline per\n"
    "thread where each sample is a column as high as its stack is deep (click one to see\n"
    "its stack and, in every other sample, the base of the stack they share), the spans\n"
    "above each thread's samples (click one for its flame graph), the resident memory\n"
    "(RSS) over time, and process and thread selectors.  With allocation samples (logs\n"
    "written with PYPROF_ALLOC) the flame graph can also be weighed by bytes allocated or\n"
    "in use at the end, and the estimated live heap is drawn over the RSS.  With GIL\n"
    "states (logs written with PYPROF_CLOCK=wall) the timeline can colour samples by\n"
    "where their thread stood with the GIL, a table gives each thread's split (held,\n"
    "waiting for it, neither), and the flame graph can show the GIL waits alone.  With\n"
    "asyncio task frames, the timeline can show a lane per task, its samples marked as\n"
    "running or (wall mode) awaiting.  A directory stands for every log in it.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE\n"
    "                   write the page to FILE (required; '-' for stdout)\n"
    "  --title TEXT     the page's title (default: the first process's command line)\n"
    CLI_FILTER_HELP
    "  -h, --help       show this text\n"
    "\n"
    "Exit status: 0 ok, 1 bad input (or the page could not be written), 2 usage.\n"
    "\n"
    "EXAMPLES\n"
    "  pyprof html /tmp/pyprof.Ab12Cd -o profile.html\n"
    "  pyprof html --pid 4242 --from 10 --to 20 logs/ -o window.html\n";
/* clang-format on */

/* ---- what the page gets --------------------------------------------------------------- */

/* A sample of an asyncio task: it ran (its task frame the innermost one) or, awaiting,
 * it was suspended at an await. */
typedef struct task_mark {
    int64_t t;           /* on the common axis */
    uint32_t proc, func; /* the task: its process and its task frame's function */
    uint32_t stack;      /* index in "stacks" */
    uint32_t thread;     /* profile thread */
    uint32_t awaiting;   /* 1: suspended (PYPROF_GIL_AWAIT), 0: running */
    uint32_t us;         /* the time it stands for (a suspended task of many is sampled
                          * every few passes, each sample standing for as many periods) */
} task_mark;

/* A lane of the page: one task, or (func UINT32_MAX) the rest of a process's tasks. */
typedef struct task_lane {
    uint32_t proc, func, tasks;
    uint32_t thread; /* the profile thread most of its samples were on */
    uint64_t running, awaiting;
    size_t first, n; /* its marks: page.marks[first .. first + n), by task then time */
} task_lane;

/* A lane's run: marks of one task with the same stack and state, each less than
 * RUN_GAP_PERIODS periods (or times what it stands for, when more) after the previous
 * one. */
typedef struct task_run {
    int64_t start, last, end; /* end: its last mark's time and what that stands for */
    uint32_t stack, count, awaiting;
} task_run;

typedef struct page {
    const profile *p;
    calltree tree;       /* nodes keyed by function only, numbered in order of use */
    uint32_t *func_out;  /* profile func -> index in "funcs", UINT32_MAX: unused */
    uint32_t *func_list; /* index in "funcs" -> profile func */
    size_t nfuncs;
    uint32_t *stack_out;  /* profile stack -> index in "stacks", UINT32_MAX: unused */
    uint32_t *stack_list; /* index in "stacks" -> profile stack */
    size_t nstacks;
    uint32_t *thread_out;    /* profile thread -> index in "threads", UINT32_MAX: no samples */
    uint32_t *order;         /* sample indexes by (thread, time) */
    size_t *thread_first;    /* order[thread_first[t] .. thread_first[t + 1]) */
    int64_t *proc_offset_us; /* process start, from the earliest process's start */
    uint64_t t0_unix_ns;
    int64_t t_min_us, t_max_us;
    spans_index spans;      /* the samples inside each span */
    uint32_t *span_stacks;  /* room for one span's samples' stacks */
    uint32_t *alloc_order;  /* allocation indexes by time on the common axis (nallocs) */
    int has_gil;            /* some sample kept has a GIL state (wall-clock logs) */
    char *run_gil;          /* room for one thread's runs' GIL states, a digit each */
    profile_sample *awaits; /* the suspended tasks' samples kept apart from p->samples */
    size_t nawaits;
    task_mark *marks; /* the task samples, by lane, then task, then time */
    size_t nmarks;
    task_lane *lanes;
    size_t nlanes;
    task_run *runs; /* room for one lane's runs */
} page;

static void page_free(page *g)
{
    calltree_free(&g->tree);
    free(g->func_out);
    free(g->func_list);
    free(g->stack_out);
    free(g->stack_list);
    free(g->thread_out);
    free(g->order);
    free(g->thread_first);
    free(g->proc_offset_us);
    spans_index_free(&g->spans);
    free(g->span_stacks);
    free(g->alloc_order);
    free(g->run_gil);
    free(g->awaits);
    free(g->marks);
    free(g->lanes);
    free(g->runs);
}

static int64_t period_us(const profile_process *pr)
{
    int64_t us = (int64_t)(pr->period_ns / 1000);
    return us > 0 ? us : 1;
}

static int64_t sample_time(const page *g, const profile_sample *s)
{
    return g->proc_offset_us[s->process] + s->t_us;
}

static int64_t alloc_time(const page *g, const profile_alloc *a)
{
    return g->proc_offset_us[a->process] + a->t_us;
}

/* When allocation `a` was freed on the common axis, or -1 when it is in use at the end
 * (allocs_in_use) or untracked: the page's heap line and "in use" never end it. */
static int64_t alloc_free_time(const page *g, const profile_alloc *a)
{
    if (!a->freed || allocs_in_use(g->p, a))
        return -1;
    return g->proc_offset_us[a->process] + a->free_us;
}

static int cmp_alloc_time(const void *a, const void *b, void *arg)
{
    const page *g = arg;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int64_t tx = alloc_time(g, &g->p->allocs[x]), ty = alloc_time(g, &g->p->allocs[y]);
    if (tx != ty)
        return tx < ty ? -1 : 1;
    return (x > y) - (x < y);
}

/* Numbers stack `st` and its functions if nothing has yet, as a stack no sample uses
 * (weight 0 in the tree).  0, or -1 when out of memory. */
static int page_add_stack(page *g, uint32_t st)
{
    const profile *p = g->p;
    if (g->stack_out[st] != UINT32_MAX)
        return 0;
    const profile_stack *ps = &p->stacks[st];
    for (uint32_t d = 0; d < ps->nframes; d++) {
        uint32_t f = p->frames[ps->first + d].func;
        if (g->func_out[f] == UINT32_MAX) {
            g->func_list[g->nfuncs] = f;
            g->func_out[f] = (uint32_t)g->nfuncs++;
        }
    }
    if (calltree_add(&g->tree, p, st, 0, 0) == CALLTREE_NONE)
        return -1;
    g->stack_list[g->nstacks] = st;
    g->stack_out[st] = (uint32_t)g->nstacks++;
    return 0;
}

/* Numbers the stacks and functions that kept samples use, builds the tree of functions
 * and the per-thread sample order.  Returns 0, or -1 when out of memory. */
static int page_build(page *g, const profile *p)
{
    g->p = p; /* the caller zeroed g (and may have split the awaiting samples off) */
    if (calltree_init(&g->tree, p) < 0)
        return -1;
    size_t nf = p->nfuncs ? p->nfuncs : 1, ns = p->nstacks ? p->nstacks : 1;
    size_t nt = p->nthreads;
    g->func_out = malloc(nf * sizeof *g->func_out);
    g->func_list = malloc(nf * sizeof *g->func_list);
    g->stack_out = malloc(ns * sizeof *g->stack_out);
    g->stack_list = malloc(ns * sizeof *g->stack_list);
    g->thread_out = malloc((nt ? nt : 1) * sizeof *g->thread_out);
    g->order = aggregate_samples_by_thread(p);
    g->thread_first = calloc(nt + 1, sizeof *g->thread_first);
    g->proc_offset_us = malloc((p->nprocs ? p->nprocs : 1) * sizeof *g->proc_offset_us);
    g->span_stacks = malloc((p->nsamples ? p->nsamples : 1) * sizeof *g->span_stacks);
    g->run_gil = malloc(p->nsamples + g->nawaits + 1); /* a thread's runs, or a lane's */
    if (!g->func_out || !g->func_list || !g->stack_out || !g->stack_list || !g->thread_out ||
        !g->order || !g->thread_first || !g->proc_offset_us || !g->span_stacks || !g->run_gil ||
        spans_index_build(p, &g->spans) < 0)
        return -1;
    memset(g->func_out, 0xff, nf * sizeof *g->func_out);
    memset(g->stack_out, 0xff, ns * sizeof *g->stack_out);

    /* One time axis for every process: microseconds since the earliest start. */
    g->t0_unix_ns = p->nprocs ? p->procs[0].start_unix_ns : 0;
    for (size_t i = 1; i < p->nprocs; i++)
        if (p->procs[i].start_unix_ns < g->t0_unix_ns)
            g->t0_unix_ns = p->procs[i].start_unix_ns;
    for (size_t i = 0; i < p->nprocs; i++)
        g->proc_offset_us[i] = (int64_t)((p->procs[i].start_unix_ns - g->t0_unix_ns) / 1000);

    /* Samples by thread, then time (within a thread the process, so the offset, is
     * one), then position in the log; each thread's share of the order. */
    for (size_t i = 0; i < p->nsamples; i++) {
        g->thread_first[p->samples[i].thread + 1]++;
        if (p->samples[i].gil != PYPROF_GIL_UNKNOWN)
            g->has_gil = 1;
    }
    for (size_t t = 0; t < nt; t++)
        g->thread_first[t + 1] += g->thread_first[t];

    /* Stacks and functions in the order the samples first use them. */
    size_t nth = 0;
    g->t_min_us = INT64_MAX;
    g->t_max_us = INT64_MIN;
    /* Threads with samples or spans are shown. */
    uint8_t *has_span = calloc(nt ? nt : 1, 1);
    if (!has_span)
        return -1;
    for (size_t i = 0; i < p->nspans; i++)
        has_span[p->spans[i].thread] = 1;
    for (size_t i = 0; i < p->nallocs; i++) /* allocations name their thread too */
        has_span[p->allocs[i].thread] = 1;
    for (size_t t = 0; t < nt; t++) {
        g->thread_out[t] = g->thread_first[t + 1] > g->thread_first[t] || has_span[t]
                               ? (uint32_t)nth++
                               : UINT32_MAX;
        for (size_t k = g->thread_first[t]; k < g->thread_first[t + 1]; k++) {
            const profile_sample *s = &p->samples[g->order[k]];
            int64_t ts = sample_time(g, s);
            if (ts < g->t_min_us)
                g->t_min_us = ts;
            if (ts + period_us(&p->procs[s->process]) > g->t_max_us)
                g->t_max_us = ts + period_us(&p->procs[s->process]);
            if (g->stack_out[s->stack] != UINT32_MAX)
                continue;
            /* Functions are numbered as first used, and so are nodes: the tree of
             * functions is made in this order. */
            const profile_stack *st = &p->stacks[s->stack];
            for (uint32_t d = 0; d < st->nframes; d++) {
                uint32_t f = p->frames[st->first + d].func;
                if (g->func_out[f] == UINT32_MAX) {
                    g->func_list[g->nfuncs] = f;
                    g->func_out[f] = (uint32_t)g->nfuncs++;
                }
            }
            if (calltree_add(&g->tree, p, s->stack, 1, 0) == CALLTREE_NONE) {
                free(has_span);
                return -1;
            }
            g->stack_list[g->nstacks] = s->stack;
            g->stack_out[s->stack] = (uint32_t)g->nstacks++;
        }
    }
    free(has_span);
    for (size_t i = 0; i < p->nspans; i++) {
        const profile_span *sp = &p->spans[i];
        int64_t a = g->proc_offset_us[sp->process] + sp->start_us;
        int64_t b = g->proc_offset_us[sp->process] + sp->stop_us;
        if (a < g->t_min_us)
            g->t_min_us = a;
        if (b > g->t_max_us)
            g->t_max_us = b;
    }
    /* The stacks of the snapshots' threads, after the samples'. */
    for (size_t i = 0; i < p->nsnap_threads; i++) {
        uint32_t st = p->snap_threads[i].stack;
        if (st != PROFILE_NO_STACK && page_add_stack(g, st) < 0)
            return -1;
    }
    /* The allocations', in time order, after those; their times (and frees) are on the
     * axis too. */
    if (p->nallocs) {
        g->alloc_order = malloc(p->nallocs * sizeof *g->alloc_order);
        if (!g->alloc_order)
            return -1;
        for (size_t i = 0; i < p->nallocs; i++)
            g->alloc_order[i] = (uint32_t)i;
        qsort_r(g->alloc_order, p->nallocs, sizeof *g->alloc_order, cmp_alloc_time, g);
    }
    for (size_t k = 0; k < p->nallocs; k++) {
        const profile_alloc *a = &p->allocs[g->alloc_order[k]];
        if (page_add_stack(g, a->stack) < 0)
            return -1;
        int64_t ts = alloc_time(g, a), tf = alloc_free_time(g, a);
        if (ts < g->t_min_us)
            g->t_min_us = ts;
        if (ts > g->t_max_us)
            g->t_max_us = ts;
        if (tf > g->t_max_us)
            g->t_max_us = tf;
    }
    for (size_t i = 0; i < p->nsnapshots; i++) {
        int64_t ts = g->proc_offset_us[p->snapshots[i].process] + p->snapshots[i].t_us;
        if (ts < g->t_min_us)
            g->t_min_us = ts;
        if (ts > g->t_max_us)
            g->t_max_us = ts;
    }
    for (size_t i = 0; i < p->nrss; i++) {
        int64_t ts = g->proc_offset_us[p->rss[i].process] + p->rss[i].t_us;
        if (ts < g->t_min_us)
            g->t_min_us = ts;
        if (ts > g->t_max_us)
            g->t_max_us = ts;
    }
    if (g->t_min_us > g->t_max_us) { /* nothing timed at all */
        g->t_min_us = 0;
        g->t_max_us = 1;
    }
    return 0;
}

/* ---- asyncio tasks ---------------------------------------------------------------- */

/* Takes the suspended tasks' samples (PYPROF_GIL_AWAIT) out of p->samples into g->awaits,
 * unless `keep` (--awaiting: they stay samples, as every command keeps them then), so
 * that all but the task lanes count what they count without them.  Before page_build.
 * 0, or -1 when out of memory. */
static int page_split_awaiting(page *g, profile *p, int keep)
{
    size_t n = 0;
    for (size_t i = 0; i < p->nsamples; i++)
        n += p->samples[i].gil == PYPROF_GIL_AWAIT;
    if (keep || !n)
        return 0;
    uint8_t *kept = malloc(p->nsamples);
    g->awaits = malloc(n * sizeof *g->awaits);
    if (!kept || !g->awaits) {
        free(kept);
        return -1;
    }
    for (size_t i = 0; i < p->nsamples; i++) {
        kept[i] = p->samples[i].gil != PYPROF_GIL_AWAIT;
        if (!kept[i])
            g->awaits[g->nawaits++] = p->samples[i];
    }
    keep_samples(p, kept);
    free(kept);
    return 0;
}

static int cmp_mark(const void *a, const void *b)
{
    const task_mark *x = a, *y = b;
    if (x->proc != y->proc)
        return x->proc < y->proc ? -1 : 1;
    if (x->func != y->func)
        return x->func < y->func ? -1 : 1;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->awaiting != y->awaiting)
        return x->awaiting < y->awaiting ? -1 : 1;
    if (x->stack != y->stack)
        return x->stack < y->stack ? -1 : 1;
    return (x->thread > y->thread) - (x->thread < y->thread);
}

/* Tasks by process, then most samples first, then name. */
static int cmp_task(const void *a, const void *b, void *arg)
{
    const profile *p = arg;
    const task_lane *x = a, *y = b;
    if (x->proc != y->proc)
        return x->proc < y->proc ? -1 : 1;
    uint64_t nx = x->running + x->awaiting, ny = y->running + y->awaiting;
    if (nx != ny)
        return nx > ny ? -1 : 1;
    int c = strcmp(p->funcs[x->func].name, p->funcs[y->func].name);
    if (c)
        return c;
    return (x->func > y->func) - (x->func < y->func);
}

static int cmp_run(const void *a, const void *b)
{
    const task_run *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->stack != y->stack)
        return x->stack < y->stack ? -1 : 1;
    return (x->awaiting > y->awaiting) - (x->awaiting < y->awaiting);
}

/* The marks of sample s, when its stack has a task frame (the innermost one is its
 * task); `task_of` caches each stack's task (0: not looked at, UINT32_MAX: none, else
 * the function + 1). */
static void add_mark(page *g, const profile_sample *s, int awaiting, uint32_t *task_of)
{
    const profile *p = g->p;
    if (!task_of[s->stack]) {
        int64_t f = tasks_running(p, s->stack);
        task_of[s->stack] = f < 0 ? UINT32_MAX : p->frames[f].func + 1;
    }
    if (task_of[s->stack] == UINT32_MAX)
        return;
    task_mark *m = &g->marks[g->nmarks++];
    m->t = sample_time(g, s);
    m->proc = s->process;
    m->func = task_of[s->stack] - 1;
    m->stack = g->stack_out[s->stack];
    m->thread = s->thread;
    m->awaiting = (uint32_t)awaiting;
    m->us = s->cpu_us;
}

/* The task lanes: every sample with a task frame (and every suspended task's) as a mark
 * of its task, the tasks of each process by samples, the first TASK_LANES a lane each
 * and the rest one lane.  After page_build.  0, or -1 when out of memory. */
static int page_tasks(page *g)
{
    const profile *p = g->p;
    size_t n = p->nsamples + g->nawaits;
    if (!n)
        return 0;
    uint32_t *task_of = calloc(p->nstacks ? p->nstacks : 1, sizeof *task_of);
    g->marks = malloc(n * sizeof *g->marks);
    if (!task_of || !g->marks) {
        free(task_of);
        return -1;
    }
    for (size_t i = 0; i < p->nsamples; i++)
        add_mark(g, &p->samples[i], p->samples[i].gil == PYPROF_GIL_AWAIT, task_of);
    for (size_t i = 0; i < g->nawaits; i++) {
        const profile_sample *s = &g->awaits[i];
        if (page_add_stack(g, s->stack) < 0) {
            free(task_of);
            return -1;
        }
        add_mark(g, s, 1, task_of);
        int64_t ts = sample_time(g, s);
        if (ts < g->t_min_us)
            g->t_min_us = ts;
        if (ts + period_us(&p->procs[s->process]) > g->t_max_us)
            g->t_max_us = ts + period_us(&p->procs[s->process]);
    }
    free(task_of);
    if (!g->nmarks)
        return 0;
    qsort(g->marks, g->nmarks, sizeof *g->marks, cmp_mark);

    /* One entry per task, then the lanes in place: each process's tasks by samples, the
     * first TASK_LANES as they are, the rest folded into the lane after them. */
    size_t ntasks = 0;
    for (size_t i = 0; i < g->nmarks; i++)
        ntasks += !i || g->marks[i].proc != g->marks[i - 1].proc ||
                  g->marks[i].func != g->marks[i - 1].func;
    task_lane *tasks = calloc(ntasks, sizeof *tasks);
    task_mark *sorted = malloc(g->nmarks * sizeof *sorted);
    g->lanes = calloc(ntasks, sizeof *g->lanes);
    g->runs = malloc(g->nmarks * sizeof *g->runs);
    if (!tasks || !sorted || !g->lanes || !g->runs) {
        free(tasks);
        free(sorted);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < g->nmarks; i++) {
        const task_mark *m = &g->marks[i];
        if (i && (m->proc != g->marks[i - 1].proc || m->func != g->marks[i - 1].func))
            k++;
        task_lane *t = &tasks[k];
        if (!t->n) {
            t->proc = m->proc;
            t->func = m->func;
            t->tasks = 1;
            t->first = i;
        }
        t->n++;
        if (m->awaiting)
            t->awaiting++;
        else
            t->running++;
    }
    qsort_r(tasks, ntasks, sizeof *tasks, cmp_task, (void *)p);
    size_t out = 0, rank = 0;
    for (size_t i = 0; i < ntasks; i++) {
        const task_lane *t = &tasks[i];
        if (i && t->proc != tasks[i - 1].proc)
            rank = 0;
        if (rank++ < TASK_LANES) {
            g->lanes[g->nlanes] = *t;
            g->lanes[g->nlanes++].first = out;
        } else if (rank == TASK_LANES + 1) {
            g->lanes[g->nlanes] = *t;
            g->lanes[g->nlanes].func = UINT32_MAX;
            g->lanes[g->nlanes++].first = out;
        } else {
            task_lane *o = &g->lanes[g->nlanes - 1];
            o->tasks++;
            o->n += t->n;
            o->running += t->running;
            o->awaiting += t->awaiting;
        }
        memcpy(&sorted[out], &g->marks[t->first], t->n * sizeof *sorted);
        out += t->n;
    }
    free(tasks);
    free(g->marks);
    g->marks = sorted;

    /* Each lane's thread: the one most of its marks are on (a majority vote). */
    for (size_t l = 0; l < g->nlanes; l++) {
        task_lane *ln = &g->lanes[l];
        uint32_t cand = 0;
        size_t votes = 0;
        for (size_t i = ln->first; i < ln->first + ln->n; i++) {
            if (!votes)
                cand = g->marks[i].thread;
            votes += g->marks[i].thread == cand ? 1 : (size_t)-1;
        }
        ln->thread = cand;
    }
    return 0;
}

/* Task lanes: process, "th" (index in "threads" of the thread most of its samples were
 * on, -1: not listed), "name" (its task frame's, "<task NAME>", or "" for the lane of a
 * process's other tasks), "tasks" (tasks in the lane), "running" and "awaiting" (its
 * samples of each kind), "runs" as quadruples (start - the previous run's start, end -
 * start, stack, samples; its end is its last sample's time and the time that sample
 * stands for; by start, so runs of several tasks may overlap) and
 * "runs_await", a digit per run (1: awaiting, 0: running).  Only written when some
 * sample has a task frame. */
static void write_tasks(jsonw *j, const page *g)
{
    const profile *p = g->p;
    if (!g->nlanes)
        return;
    jsonw_break(j, 0);
    jsonw_key(j, "tasks");
    jsonw_begin_array(j);
    for (size_t l = 0; l < g->nlanes; l++) {
        const task_lane *ln = &g->lanes[l];
        int64_t period = period_us(&p->procs[ln->proc]);
        size_t nruns = 0;
        for (size_t i = ln->first; i < ln->first + ln->n; i++) {
            const task_mark *m = &g->marks[i];
            task_run *r = nruns ? &g->runs[nruns - 1] : NULL;
            int64_t us = m->us > period ? (int64_t)m->us : period;
            if (r && m->func == g->marks[i - 1].func && m->stack == r->stack &&
                m->awaiting == r->awaiting && m->t - r->last < RUN_GAP_PERIODS * us) {
                r->last = m->t;
                r->end = m->t + us;
                r->count++;
                continue;
            }
            g->runs[nruns++] = (task_run){m->t, m->t, m->t + us, m->stack, 1, m->awaiting};
        }
        qsort(g->runs, nruns, sizeof *g->runs, cmp_run);
        jsonw_break(j, 0);
        jsonw_begin_object(j);
        jsonw_key_u64(j, "p", ln->proc);
        uint32_t th = g->thread_out[ln->thread];
        jsonw_key_i64(j, "th", th == UINT32_MAX ? -1 : (int64_t)th);
        jsonw_key_string(j, "name", ln->func == UINT32_MAX ? "" : p->funcs[ln->func].name);
        jsonw_key_u64(j, "tasks", ln->tasks);
        jsonw_key_u64(j, "running", ln->running);
        jsonw_key_u64(j, "awaiting", ln->awaiting);
        jsonw_key(j, "runs");
        jsonw_begin_array(j);
        int64_t prev = 0;
        for (size_t k = 0; k < nruns; k++) {
            const task_run *r = &g->runs[k];
            jsonw_i64(j, r->start - prev);
            jsonw_i64(j, r->end - r->start);
            jsonw_u64(j, r->stack);
            jsonw_u64(j, r->count);
            g->run_gil[k] = (char)('0' + r->awaiting);
            prev = r->start;
        }
        jsonw_end_array(j);
        g->run_gil[nruns] = 0;
        jsonw_key_string(j, "runs_await", g->run_gil);
        jsonw_end_object(j);
    }
    jsonw_end_array(j);
}

/* ---- the JSON document ------------------------------------------------------------- */

/* The document is compact, with a line break before each top-level member and between
 * the elements of its long arrays (docs/JSON.md, "html"). */

static void write_argv_line(jsonw *j, const profile_process *pr)
{
    char *line = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&line, &len);
    if (m) {
        cli_print_argv(m, pr->argv, pr->argc);
        if (fclose(m) == 0 && line) {
            jsonw_string(j, line);
            free(line);
            return;
        }
        free(line);
    }
    jsonw_string(j, "");
}

static void write_procs(jsonw *j, const page *g)
{
    const profile *p = g->p;
    jsonw_break(j, 0);
    jsonw_key(j, "procs");
    jsonw_begin_array(j);
    for (size_t i = 0; i < p->nprocs; i++) {
        const profile_process *pr = &p->procs[i];
        char buf[256];
        if (i)
            jsonw_break(j, 0);
        jsonw_begin_object(j);
        jsonw_key_u64(j, "pid", pr->pid);
        jsonw_key_u64(j, "ppid", pr->ppid);
        jsonw_key_string(j, "run", pr->run_id);
        jsonw_key(j, "cmd");
        write_argv_line(j, pr);
        jsonw_key_string(j, "python", pr->python_version);
        jsonw_key_string(j, "log", pr->path);
        jsonw_key_string(j, "ended", cli_fmt_end(pr, buf, sizeof buf));
        jsonw_key_string(j, "clock", cli_clock_name(pr->clock));
        jsonw_key_i64(j, "period_us", period_us(pr));
        jsonw_key_i64(j, "start_us", g->proc_offset_us[i]);
        jsonw_key_double(j, "duration_s", aggregate_process_duration(p, i), 6);
        jsonw_key_u64(j, "samples", pr->samples);
        jsonw_key_u64(j, "dropped", aggregate_process_dropped(p, i));
        /* RSS points as (microseconds since the previous point, KiB). */
        jsonw_key(j, "rss");
        jsonw_begin_array(j);
        int64_t prev = 0;
        for (size_t r = 0; r < p->nrss; r++) {
            if (p->rss[r].process != i)
                continue;
            int64_t ts = g->proc_offset_us[i] + p->rss[r].t_us;
            jsonw_i64(j, ts - prev);
            jsonw_u64(j, p->rss[r].bytes / 1024);
            prev = ts;
        }
        jsonw_end_array(j);
        jsonw_end_object(j);
    }
    jsonw_end_array(j);
}

/* Each thread's runs: (start - end of the previous run, end - start, stack, samples), the
 * times in microseconds on the common axis, a run's end being its last sample's time.  A
 * change of GIL state ends a run too; with GIL states, "runs_gil" gives each run's state
 * as one digit (enum pyprof_gil) and "gil" the thread's samples by state. */
static void write_threads(jsonw *j, const page *g)
{
    const profile *p = g->p;
    jsonw_break(j, 0);
    jsonw_key(j, "threads");
    jsonw_begin_array(j);
    int any = 0;
    for (size_t t = 0; t < p->nthreads; t++) {
        if (g->thread_out[t] == UINT32_MAX)
            continue;
        const profile_thread *th = &p->threads[t];
        if (any++)
            jsonw_break(j, 0);
        jsonw_begin_object(j);
        jsonw_key_u64(j, "p", th->process);
        jsonw_key_u64(j, "tid", th->tid);
        jsonw_key_string(j, "name", th->name);
        jsonw_key_u64(j, "samples", th->samples);
        jsonw_key(j, "runs");
        jsonw_begin_array(j);
        int64_t gap = RUN_GAP_PERIODS * period_us(&p->procs[th->process]);
        int64_t prev_end = 0, start = 0, last = 0;
        uint32_t stack = 0;
        uint64_t count = 0;
        unsigned gil = 0;
        size_t nruns = 0;
        uint64_t by_state[PYPROF_GIL_STATES] = {0};
        for (size_t k = g->thread_first[t]; k <= g->thread_first[t + 1]; k++) {
            int64_t ts = 0;
            uint32_t st = 0;
            unsigned gs = 0;
            if (k < g->thread_first[t + 1]) {
                const profile_sample *s = &p->samples[g->order[k]];
                ts = sample_time(g, s);
                st = g->stack_out[s->stack];
                gs = s->gil < PYPROF_GIL_STATES ? s->gil : PYPROF_GIL_UNKNOWN;
                by_state[gs]++;
                if (count && st == stack && gs == gil && ts - last < gap) {
                    last = ts;
                    count++;
                    continue;
                }
            }
            if (count) {
                jsonw_i64(j, start - prev_end);
                jsonw_i64(j, last - start);
                jsonw_u64(j, stack);
                jsonw_u64(j, count);
                g->run_gil[nruns++] = (char)('0' + gil);
                prev_end = last;
            }
            start = last = ts;
            stack = st;
            gil = gs;
            count = 1;
        }
        jsonw_end_array(j);
        if (g->has_gil) {
            g->run_gil[nruns] = 0;
            jsonw_key_string(j, "runs_gil", g->run_gil);
            jsonw_key(j, "gil");
            jsonw_begin_array(j);
            for (int s = 0; s < PYPROF_GIL_STATES; s++)
                jsonw_u64(j, by_state[s]);
            jsonw_end_array(j);
        }
        jsonw_end_object(j);
    }
    jsonw_end_array(j);
}

static void write_funcs_nodes_stacks(jsonw *j, const page *g)
{
    const profile *p = g->p;
    /* Functions as (name, file, first line, 1 when native). */
    jsonw_break(j, 0);
    jsonw_key(j, "funcs");
    jsonw_begin_array(j);
    for (size_t i = 0; i < g->nfuncs; i++) {
        const profile_func *fn = &p->funcs[g->func_list[i]];
        jsonw_break(j, 0);
        jsonw_begin_array(j);
        jsonw_string(j, fn->name);
        jsonw_string(j, fn->file);
        jsonw_i64(j, fn->line);
        jsonw_u64(j, fn->kind == PROFILE_FUNC_NATIVE);
        jsonw_end_array(j);
    }
    jsonw_end_array(j);
    /* Nodes 1.. as (parent, function); node 0, the root, is implicit. */
    jsonw_break(j, 0);
    jsonw_key(j, "nodes");
    jsonw_begin_array(j);
    for (size_t i = 1; i < g->tree.nnodes; i++) {
        jsonw_u64(j, g->tree.nodes[i].parent);
        jsonw_u64(j, g->func_out[g->tree.nodes[i].func]);
    }
    jsonw_end_array(j);
    /* Stacks as (leaf node, the line of each frame outermost first; -1: unknown). */
    jsonw_break(j, 0);
    jsonw_key(j, "stacks");
    jsonw_begin_array(j);
    for (size_t i = 0; i < g->nstacks; i++) {
        const profile_stack *st = &p->stacks[g->stack_list[i]];
        if (i)
            jsonw_break(j, 0);
        jsonw_begin_array(j);
        jsonw_u64(j, g->tree.stack_leaf[g->stack_list[i]]);
        for (uint32_t d = 0; d < st->nframes; d++)
            jsonw_i64(j, p->frames[st->first + d].line);
        jsonw_end_array(j);
    }
    jsonw_end_array(j);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Samples order[a..b) whose GIL state is `gil` (all of them when gil < 0), as pairs
 * (stack in "stacks", samples) by stack; `st` has room for b - a stacks. */
static void write_stack_counts(jsonw *j, const page *g, const uint32_t *order, size_t a,
                               size_t b, int gil, uint32_t *st)
{
    const profile *p = g->p;
    size_t n = 0;
    for (size_t k = a; k < b; k++) {
        const profile_sample *s = &p->samples[order[k]];
        if (gil < 0 || s->gil == (unsigned)gil)
            st[n++] = g->stack_out[s->stack];
    }
    qsort(st, n, sizeof *st, cmp_u32);
    jsonw_begin_array(j);
    for (size_t k = 0; k < n;) {
        size_t e = k;
        while (e < n && st[e] == st[k])
            e++;
        jsonw_u64(j, st[k]);
        jsonw_u64(j, e - k);
        k = e;
    }
    jsonw_end_array(j);
}

/* Spans: thread (index in "threads"), name, start and stop on the common axis, nesting
 * depth, unfinished, span id, trace_id, base_id, and "st": their samples as pairs
 * (stack in "stacks", samples); with GIL states, "st_wait": those of them that waited
 * for the GIL, the same way. */
static void write_spans(jsonw *j, const page *g)
{
    const profile *p = g->p;
    uint32_t *st = g->span_stacks;
    jsonw_break(j, 0);
    jsonw_key(j, "spans");
    jsonw_begin_array(j);
    for (size_t i = 0; i < p->nspans; i++) {
        const profile_span *sp = &p->spans[i];
        if (i)
            jsonw_break(j, 0);
        jsonw_begin_object(j);
        jsonw_key_u64(j, "th", g->thread_out[sp->thread]);
        jsonw_key_string(j, "name", sp->name);
        jsonw_key_i64(j, "t0", g->proc_offset_us[sp->process] + sp->start_us);
        jsonw_key_i64(j, "t1", g->proc_offset_us[sp->process] + sp->stop_us);
        jsonw_key_u64(j, "d", sp->depth);
        jsonw_key_i64(j, "u", sp->unfinished);
        jsonw_key_u64(j, "id", sp->id);
        jsonw_key_string(j, "trace", sp->trace_id);
        jsonw_key_string(j, "base", sp->base_id);
        size_t a, b;
        spans_samples(p, &g->spans, (uint32_t)i, &a, &b);
        jsonw_key(j, "st");
        write_stack_counts(j, g, g->spans.order, a, b, -1, st);
        if (g->has_gil) {
            jsonw_key(j, "st_wait");
            write_stack_counts(j, g, g->spans.order, a, b, PYPROF_GIL_WAIT, st);
        }
        jsonw_end_object(j);
    }
    jsonw_end_array(j);
}

/* Snapshots: process, id, time on the common axis, and every thread as (tid, name, stack
 * in "stacks" or -1 without a Python frame, flags, the kernel's state letter or ""). */
static void write_snaps(jsonw *j, const page *g)
{
    const profile *p = g->p;
    jsonw_break(j, 0);
    jsonw_key(j, "snaps");
    jsonw_begin_array(j);
    for (size_t i = 0; i < p->nsnapshots; i++) {
        const profile_snapshot *sn = &p->snapshots[i];
        if (i)
            jsonw_break(j, 0);
        jsonw_begin_object(j);
        jsonw_key_u64(j, "p", sn->process);
        jsonw_key_u64(j, "id", sn->id);
        jsonw_key_i64(j, "t", g->proc_offset_us[sn->process] + sn->t_us);
        jsonw_key(j, "threads");
        jsonw_begin_array(j);
        for (uint32_t k = 0; k < sn->nthreads; k++) {
            const profile_snap_thread *st = &p->snap_threads[sn->first + k];
            const profile_thread *th = &p->threads[st->thread];
            jsonw_begin_array(j);
            jsonw_u64(j, th->tid);
            jsonw_string(j, th->name);
            if (st->stack == PROFILE_NO_STACK)
                jsonw_i64(j, -1);
            else
                jsonw_u64(j, g->stack_out[st->stack]);
            char state[2] = {
                (char)(st->os_state >= 0x21 && st->os_state < 0x7f ? st->os_state : 0), 0};
            jsonw_u64(j, st->flags);
            jsonw_string(j, state);
            jsonw_end_array(j);
        }
        jsonw_end_array(j);
        jsonw_end_object(j);
    }
    jsonw_end_array(j);
}

/* Sampled allocations, by time: quintuples (µs since the previous one's time, thread
 * (index in "threads"), stack (index in "stacks"), the bytes it stands for (allocs.h's
 * estimate, rounded), µs from it to its free, or -1: in use at the end, -2: untracked
 * (its free not followed: never in use, not on the heap line)).  Only written when there
 * are some. */
static void write_allocs(jsonw *j, const page *g)
{
    const profile *p = g->p;
    if (!p->nallocs)
        return;
    jsonw_break(j, 0);
    jsonw_key(j, "allocs");
    jsonw_begin_array(j);
    int64_t prev = 0;
    for (size_t k = 0; k < p->nallocs; k++) {
        const profile_alloc *a = &p->allocs[g->alloc_order[k]];
        int64_t ts = alloc_time(g, a), tf = alloc_free_time(g, a);
        if (k && k % 8 == 0)
            jsonw_break(j, 0);
        jsonw_i64(j, ts - prev);
        jsonw_u64(j, g->thread_out[a->thread]);
        jsonw_u64(j, g->stack_out[a->stack]);
        jsonw_u64(j, a->bytes > 0 ? (uint64_t)llround(a->bytes) : 0);
        if (a->flags & PYPROF_ALLOC_F_UNTRACKED)
            jsonw_i64(j, -2);
        else
            jsonw_i64(j, tf < 0 ? -1 : tf > ts ? tf - ts : 0);
        prev = ts;
    }
    jsonw_end_array(j);
}

/* The page's data, as JSON inside its <script> element: '<', '>' and '&' only occur
 * inside strings there, and as \u escapes (JSONW_HTML) they cannot end the element
 * ("</script>"), open a comment ("<!--") or be read as markup, while JSON.parse gives
 * the same string back.  Returns the errno of the first write that failed, or 0. */
static int write_json(FILE *f, const page *g, const char *title)
{
    const profile *p = g->p;
    jsonw j;
    jsonw_init(&j, f, JSONW_HTML);
    jsonw_set_compact(&j, 1);
    jsonw_begin_object(&j);
    jsonw_key_u64(&j, "format", 1);
    jsonw_key_string(&j, "tool", "pyprof " PYPROF_VERSION_STRING);
    jsonw_key_string(&j, "title", title);
    jsonw_key_u64(&j, "t0_unix_ns", g->t0_unix_ns);
    jsonw_key_i64(&j, "t_min_us", g->t_min_us);
    jsonw_key_i64(&j, "t_max_us", g->t_max_us);
    jsonw_key_u64(&j, "samples", p->nsamples);
    jsonw_key_u64(&j, "gil", (uint64_t)g->has_gil);
    jsonw_break(&j, 0);
    jsonw_key(&j, "warnings");
    jsonw_begin_array(&j);
    for (size_t i = 0; i < p->nwarnings; i++)
        jsonw_string(&j, p->warnings[i]);
    jsonw_end_array(&j);
    write_procs(&j, g);
    write_threads(&j, g);
    write_funcs_nodes_stacks(&j, g);
    write_snaps(&j, g);
    write_spans(&j, g);
    write_allocs(&j, g);
    write_tasks(&j, g);
    jsonw_end_object(&j);
    return jsonw_error(&j);
}

typedef struct page_out {
    const page *g;
    const char *title;
} page_out;

static int write_page_data(FILE *f, void *ctx)
{
    const page_out *o = ctx;
    return write_json(f, o->g, o->title);
}

static int write_page(const page *g, const char *title, const char *path)
{
    page_out o = {g, title};
    return cli_write_page("html", path, pyprof_viewer_html,
                          (size_t)(pyprof_viewer_html_end - pyprof_viewer_html),
                          write_page_data, &o);
}

static char *default_title(const profile *p)
{
    char *line = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&line, &len);
    if (!m)
        return NULL;
    fputs("pyprof: ", m);
    if (p->nprocs)
        cli_print_argv(m, p->procs[0].argv, p->procs[0].argc);
    if (p->nprocs > 1)
        fprintf(m, " (+%zu processes)", p->nprocs - 1);
    if (fclose(m)) {
        free(line);
        return NULL;
    }
    return line;
}

typedef struct html_opts {
    const char *output, *title;
} html_opts;

static int html_option(void *ctx, int c, const char *arg)
{
    html_opts *o = ctx;
    if (c == 'o')
        o->output = arg;
    else
        o->title = arg;
    return 0;
}

static int html_check(void *ctx, int nlogs)
{
    const html_opts *o = ctx;
    int rc = cli_no_logs("html", nlogs);
    if (rc < 0 && (!o->output || !o->output[0]))
        rc = cli_usage_error("html", "no output file given (-o FILE.html)");
    return rc;
}

int cmd_html(int argc, char **argv)
{
    static const struct option options[] = {
        {"output", required_argument, NULL, 'o'},
        {"title", required_argument, NULL, 'T'},
        {NULL, 0, NULL, 0},
    };
    static const cli_command cmd = {
        "html", cmd_html_usage, 0, "o:", options, html_option, html_check,
        PROFILE_AWAITING /* for the task lanes; page_split_awaiting keeps them apart */};
    html_opts o = {NULL, NULL};
    page g;
    memset(&g, 0, sizeof g);
    char *made_title = NULL;
    cli_args a;
    int rc = cli_start(&cmd, argc, argv, &o, &a);
    if (rc >= 0)
        goto cleanup;
    const char *title = o.title;
    if (!title) {
        title = made_title = default_title(a.p);
        if (!title)
            title = "pyprof";
    }
    if (page_split_awaiting(&g, a.p, a.cf.f.awaiting) < 0 || page_build(&g, a.p) < 0 ||
        page_tasks(&g) < 0)
        rc = cli_oom();
    else
        rc = write_page(&g, title, o.output);

cleanup:
    page_free(&g);
    free(made_title);
    cli_args_free(&a);
    return rc;
}
