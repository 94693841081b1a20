/*
 * export_chrome: the Trace Event Format (JSON object form) that Perfetto and
 * chrome://tracing open, built from the sample timeline.
 *
 * A sample taken at time t stands for the `w` microseconds before it (the CPU period
 * that fired the timer).  Per thread, in time order, consecutive samples form a run as
 * long as each starts no later than its own `w` after the previous one ended, and one
 * that starts before the previous one ended is clipped to begin there (a late signal
 * followed by a timely one): runs never overlap, and a thread's root events last exactly
 * the union of its samples' intervals plus the gaps bridged (docs/EXPORTS.md); a frame
 * that stays on the stack from one sample to the next (same function at the same depth,
 * all frames above it the same) stays open.  When a frame leaves the stack or the run
 * ends (the thread stopped using CPU), it becomes one complete event ("ph": "X") with
 * its begin and duration.  Events carry the OS pid and tid; metadata events name each
 * process (its command line) and thread.  Times are microseconds from the start of the
 * earliest process, so the processes of one run line up.
 *
 * Spans (pyprof.span, OSProfiler's trace points) are complete events too, category
 * "span", on the thread that started them, from their start to their stop (an
 * unfinished one's to the end of its process's data), with their ids and info in args
 * (info as the program's JSON object when it is one, else as a string).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <pyprof/pyprof.h>

#include "read/jsonscan.h"
#include "export.h"
#include "jsonw.h"

typedef struct open_frame {
    uint32_t func;
    int64_t begin;
} open_frame;

typedef struct chrome_out {
    jsonw *j;
    const profile *p;
    int64_t *base_us; /* per process: its start, from the earliest one */
    open_frame *open; /* the frames open in the current run */
    size_t nopen;
    uint64_t pid, tid; /* of the thread being written */
} chrome_out;

static void put_event(chrome_out *w, const open_frame *f, int64_t end)
{
    const profile_func *fn = &w->p->funcs[f->func];
    jsonw *j = w->j;
    jsonw_break(j, 2);
    jsonw_begin_object(j);
    jsonw_key_string(j, "ph", "X");
    jsonw_key_string(j, "cat", "python");
    jsonw_key_string(j, "name", fn->name);
    jsonw_key_u64(j, "pid", w->pid);
    jsonw_key_u64(j, "tid", w->tid);
    jsonw_key_i64(j, "ts", f->begin);
    jsonw_key_i64(j, "dur", end - f->begin);
    jsonw_key(j, "args");
    jsonw_begin_object(j);
    jsonw_key_string(j, "file", fn->file);
    jsonw_key_i64(j, "line", fn->line);
    jsonw_end_object(j);
    jsonw_end_object(j);
}

/* Closes the open frames deeper than `keep` at time `end`.  The outer ones are written
 * first: frames that began and ended together have the same ts and dur, and viewers
 * nest such events in the order of the file. */
static void close_frames(chrome_out *w, size_t keep, int64_t end)
{
    for (size_t k = keep; k < w->nopen; k++)
        put_event(w, &w->open[k], end);
    if (w->nopen > keep)
        w->nopen = keep;
}

/* The samples order[begin .. end) of one thread, in time order. */
static void put_thread(chrome_out *w, const uint32_t *order, size_t begin, size_t end)
{
    const profile *p = w->p;
    int64_t last_end = 0;
    for (size_t i = begin; i < end; i++) {
        const profile_sample *s = &p->samples[order[i]];
        int64_t dur = (int64_t)aggregate_sample_us(p, s);
        int64_t b = w->base_us[s->process] + s->t_us, a = b - dur;
        if (w->nopen && a > last_end + dur)
            close_frames(w, 0, last_end); /* the thread paused: the run ends */
        else if (w->nopen && a < last_end)
            a = last_end; /* timer jitter: never overlap the previous sample */
        if (a < 0)
            a = 0;
        if (b < a)
            b = a;
        const profile_stack *st = &p->stacks[s->stack];
        const profile_frame *fr = p->frames + st->first;
        size_t same = 0;
        while (same < w->nopen && same < st->nframes && w->open[same].func == fr[same].func)
            same++;
        close_frames(w, same, a);
        for (uint32_t k = (uint32_t)same; k < st->nframes; k++)
            w->open[w->nopen++] = (open_frame){fr[k].func, a};
        last_end = b;
    }
    close_frames(w, 0, last_end);
}

/* A metadata event naming a process or a thread. */
static void put_name(jsonw *j, const char *what, uint64_t pid, uint64_t tid, const char *name)
{
    jsonw_break(j, 2);
    jsonw_begin_object(j);
    jsonw_key_string(j, "ph", "M");
    jsonw_key_string(j, "name", what);
    jsonw_key_u64(j, "pid", pid);
    jsonw_key_u64(j, "tid", tid);
    jsonw_key(j, "args");
    jsonw_begin_object(j);
    jsonw_key_string(j, "name", name);
    jsonw_end_object(j);
    jsonw_end_object(j);
}

static void put_metadata(chrome_out *w)
{
    const profile *p = w->p;
    for (size_t i = 0; i < p->nprocs; i++) {
        const profile_process *pr = &p->procs[i];
        size_t len = 32;
        for (size_t k = 0; k < pr->argc; k++)
            len += strlen(pr->argv[k]) + 1;
        char *name = malloc(len);
        if (!name)
            continue; /* a name is a nicety, not worth failing the export for */
        size_t at = 0;
        for (size_t k = 0; k < pr->argc; k++)
            at += (size_t)snprintf(name + at, len - at, "%s%s", k ? " " : "", pr->argv[k]);
        put_name(w->j, "process_name", pr->pid, 0, at ? name : "python");
        free(name);
    }
    for (size_t i = 0; i < p->nthreads; i++) {
        const profile_thread *t = &p->threads[i];
        put_name(w->j, "thread_name", p->procs[t->process].pid, t->tid,
                 t->name[0] ? t->name : "thread");
    }
}

/* A span's info: the program's JSON object when it is one, else its text. */
static void put_info_arg(jsonw *j, const char *key, const char *info)
{
    jsonw_key(j, key);
    if (jsonscan_is_object(info))
        jsonw_raw(j, info);
    else
        jsonw_string(j, info);
}

static void put_spans(chrome_out *w)
{
    const profile *p = w->p;
    for (size_t i = 0; i < p->nspans; i++) {
        const profile_span *s = &p->spans[i];
        jsonw *j = w->j;
        jsonw_break(j, 2);
        jsonw_begin_object(j);
        jsonw_key_string(j, "ph", "X");
        jsonw_key_string(j, "cat", "span");
        jsonw_key_string(j, "name", s->name);
        jsonw_key_u64(j, "pid", p->procs[s->process].pid);
        jsonw_key_u64(j, "tid", p->threads[s->thread].tid);
        jsonw_key_i64(j, "ts", w->base_us[s->process] + s->start_us);
        jsonw_key_i64(j, "dur", s->stop_us - s->start_us);
        jsonw_key(j, "args");
        jsonw_begin_object(j);
        jsonw_key_u64(j, "span_id", s->id);
        jsonw_key_u64(j, "parent_span_id", s->parent_span_id);
        jsonw_key_bool(j, "unfinished", s->unfinished);
        jsonw_key_string(j, "trace_id", s->trace_id);
        jsonw_key_string(j, "parent_id", s->parent_id);
        jsonw_key_string(j, "base_id", s->base_id);
        put_info_arg(j, "info", s->info);
        put_info_arg(j, "stop_info", s->stop_info);
        jsonw_end_object(j);
        jsonw_end_object(j);
    }
}

/* Each process's start in microseconds after the earliest one. */
static int64_t *process_bases(const profile *p)
{
    int64_t *base = calloc(p->nprocs ? p->nprocs : 1, sizeof *base);
    if (!base)
        return NULL;
    uint64_t first = UINT64_MAX;
    for (size_t i = 0; i < p->nprocs; i++)
        if (p->procs[i].start_unix_ns < first)
            first = p->procs[i].start_unix_ns;
    for (size_t i = 0; i < p->nprocs; i++)
        base[i] = (int64_t)((p->procs[i].start_unix_ns - first) / 1000);
    return base;
}

int export_chrome(FILE *out, const profile *p, const export_opts *o)
{
    (void)o;
    jsonw j;
    jsonw_init(&j, out, 0);
    chrome_out w = {&j, p, process_bases(p), NULL, 0, 0, 0};
    w.open = malloc(((size_t)aggregate_max_depth(p) + 1) * sizeof *w.open);
    uint32_t *order = aggregate_samples_by_thread(p);
    if (!w.base_us || !w.open || !order) {
        free(w.base_us);
        free(w.open);
        free(order);
        return export_oom();
    }
    jsonw_begin_object(&j);
    jsonw_key_string(&j, "displayTimeUnit", "ms");
    jsonw_key(&j, "otherData");
    jsonw_begin_object(&j);
    jsonw_key_string(&j, "exporter", "pyprof " PYPROF_VERSION_STRING);
    jsonw_end_object(&j);
    jsonw_break(&j, 1);
    jsonw_key(&j, "traceEvents");
    jsonw_begin_array(&j);
    put_metadata(&w);
    for (size_t i = 0; i < p->nsamples;) {
        const profile_sample *s = &p->samples[order[i]];
        const profile_thread *t = &p->threads[s->thread];
        size_t end = i;
        while (end < p->nsamples && p->samples[order[end]].thread == s->thread)
            end++;
        w.pid = p->procs[t->process].pid;
        w.tid = t->tid;
        put_thread(&w, order, i, end);
        i = end;
    }
    put_spans(&w);
    jsonw_end_array(&j);
    jsonw_end_object(&j);
    jsonw_finish(&j);
    free(w.base_us);
    free(w.open);
    free(order);
    return 0;
}
