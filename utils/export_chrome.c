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
#include "cli.h"
#include "export.h"

typedef struct open_frame {
    uint32_t func;
    int64_t begin;
} open_frame;

typedef struct chrome_out {
    FILE *out;
    const profile *p;
    int64_t *base_us; /* per process: its start, from the earliest one */
    open_frame *open; /* the frames open in the current run */
    size_t nopen;
    uint64_t pid, tid; /* of the thread being written */
    int first;         /* no event written yet */
} chrome_out;

static void put_sep(chrome_out *w)
{
    fputs(w->first ? "\n  " : ",\n  ", w->out);
    w->first = 0;
}

static void put_event(chrome_out *w, const open_frame *f, int64_t end)
{
    const profile_func *fn = &w->p->funcs[f->func];
    put_sep(w);
    fputs("{\"ph\": \"X\", \"cat\": \"python\", \"name\": ", w->out);
    cli_json_str(w->out, fn->name);
    fprintf(w->out,
            ", \"pid\": %" PRIu64 ", \"tid\": %" PRIu64 ", \"ts\": %" PRId64
            ", \"dur\": %" PRId64 ", \"args\": {\"file\": ",
            w->pid, w->tid, f->begin, end - f->begin);
    cli_json_str(w->out, fn->file);
    fprintf(w->out, ", \"line\": %" PRId64 "}}", fn->line);
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
        put_sep(w);
        fprintf(w->out,
                "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %" PRIu64
                ", \"tid\": 0, \"args\": {\"name\": ",
                pr->pid);
        cli_json_str(w->out, at ? name : "python");
        fputs("}}", w->out);
        free(name);
    }
    for (size_t i = 0; i < p->nthreads; i++) {
        const profile_thread *t = &p->threads[i];
        put_sep(w);
        fprintf(w->out,
                "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %" PRIu64
                ", \"tid\": %" PRIu64 ", \"args\": {\"name\": ",
                p->procs[t->process].pid, t->tid);
        cli_json_str(w->out, t->name[0] ? t->name : "thread");
        fputs("}}", w->out);
    }
}

static void put_info_arg(FILE *out, const char *key, const char *info)
{
    fprintf(out, ", \"%s\": ", key);
    if (jsonscan_is_object(info))
        fputs(info, out);
    else
        cli_json_str(out, info);
}

static void put_spans(chrome_out *w)
{
    const profile *p = w->p;
    for (size_t i = 0; i < p->nspans; i++) {
        const profile_span *s = &p->spans[i];
        put_sep(w);
        fputs("{\"ph\": \"X\", \"cat\": \"span\", \"name\": ", w->out);
        cli_json_str(w->out, s->name);
        fprintf(w->out,
                ", \"pid\": %" PRIu64 ", \"tid\": %" PRIu64 ", \"ts\": %" PRId64
                ", \"dur\": %" PRId64 ", \"args\": {\"span_id\": %" PRIu64
                ", \"parent_span_id\": %" PRIu64 ", \"unfinished\": %s, \"trace_id\": ",
                p->procs[s->process].pid, p->threads[s->thread].tid,
                w->base_us[s->process] + s->start_us, s->stop_us - s->start_us, s->id,
                s->parent_span_id, s->unfinished ? "true" : "false");
        cli_json_str(w->out, s->trace_id);
        fputs(", \"parent_id\": ", w->out);
        cli_json_str(w->out, s->parent_id);
        fputs(", \"base_id\": ", w->out);
        cli_json_str(w->out, s->base_id);
        put_info_arg(w->out, "info", s->info);
        put_info_arg(w->out, "stop_info", s->stop_info);
        fputs("}}", w->out);
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
    chrome_out w = {out, p, process_bases(p), NULL, 0, 0, 0, 1};
    w.open = malloc(((size_t)aggregate_max_depth(p) + 1) * sizeof *w.open);
    uint32_t *order = aggregate_samples_by_thread(p);
    if (!w.base_us || !w.open || !order) {
        free(w.base_us);
        free(w.open);
        free(order);
        return export_oom();
    }
    fputs("{\"displayTimeUnit\": \"ms\", \"otherData\": {\"exporter\": "
          "\"pyprof " PYPROF_VERSION_STRING "\"},\n \"traceEvents\": [",
          out);
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
    fputs("]}\n", out);
    free(w.base_us);
    free(w.open);
    free(order);
    return 0;
}
