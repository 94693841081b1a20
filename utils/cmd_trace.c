/*
 * cmd_trace: `pyprof trace list` and `pyprof trace show` — the traces the spans of the
 * logs make (src/read/trace.h: spans grouped by base_id, one tree across processes), and
 * one trace shown as text, as OSProfiler's JSON (`osprofiler trace show --json` has the
 * same schema, and OSProfiler's CLI reads ours in place of a trace id), as a graphviz
 * graph, or as a page of its own.
 *
 * The JSON is OSProfiler's report (drivers/base.py, get_report): a root whose `info` is
 * {name "total", started 0, finished, last_trace_started} in milliseconds from the
 * trace's start, `children` (each node: `info` with name, service, project, host,
 * started, finished, exception once stopped, and `meta.raw_payload.NAME-start` /
 * `-stop` with the notification as OSProfiler would have sent it; `trace_id`,
 * `parent_id`, `children` sorted by start) and `stats` (per name: count and the sum of
 * durations in ms).  What pyprof adds is under keys of its own: `info.pyprof` per span
 * (process, thread, span id, whether it is unfinished, microsecond times, samples, CPU
 * and top functions) and a top-level `pyprof` (the trace id, its processes).
 *
 * Every string from the logs is data: JSON through jsonw (invalid UTF-8 becomes
 * U+FFFD); a span's info is copied as an object only when jsonscan says it is one, else
 * as text; the page's JSON has '<', '>' and '&' as \u escapes (as `pyprof html`'s); dot
 * labels have '"' and '\' escaped and control characters as '?'; text output shows
 * control characters as '?'.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <pyprof/pyprof.h>

#include "common/utf8.h"
#include "read/jsonscan.h"
#include "read/spans.h"
#include "read/trace.h"
#include "cli.h"
#include "cli_args.h"
#include "cli_fmt.h"
#include "cli_parse.h"
#include "cli_text.h"
#include "cmd.h"
#include "jsonw.h"

/* The trace page's template, as cmd_html.c embeds the viewer's. */
__asm__(".section .rodata\n"
        ".globl pyprof_trace_html\n"
        ".hidden pyprof_trace_html\n"
        "pyprof_trace_html:\n"
        ".incbin \"" PYPROF_HTML_DIR "/trace.html\"\n"
        ".globl pyprof_trace_html_end\n"
        ".hidden pyprof_trace_html_end\n"
        "pyprof_trace_html_end:\n"
        ".byte 0\n"
        ".previous\n");
extern const char pyprof_trace_html[];
extern const char pyprof_trace_html_end[];
#define DATA_MARKER "/*PYPROF_DATA*/"

/* clang-format off */
const char cmd_trace_usage[] =
    "usage: pyprof trace list [options] LOG... | DIR...\n"
    "       pyprof trace show TRACE_ID [--json | --html | --dot] [--out FILE] [options]\n"
    "                         LOG... | DIR...\n"
    "\n"
    "Spans (pyprof.span, pyprof_span_start, OSProfiler's trace points through the\n"
    "pyprof:// driver) make traces: the spans that share a base_id, across every process\n"
    "of the logs given, joined into one tree (a process's first span hangs under the span\n"
    "of another process whose trace_id is its parent_id).  A span without a base_id\n"
    "belongs to the trace of the span it is nested in; a top-level one starts a trace\n"
    "whose id is PID.SPAN_ID.  A span whose stop is not in the logs (the log was cut, or\n"
    "the process still runs) is unfinished: it lasts to the end of its process's data.\n"
    "A span's samples are those of the thread that started it, from its start to its\n"
    "stop, nested spans' included.\n"
    "\n"
    "list: one line per trace: id, start (UTC), duration, spans, unfinished spans, pids,\n"
    "the first top-level span's name.  show: the trace's tree with each span's time, CPU\n"
    "samples and top functions.\n"
    "\n"
    "options:\n"
    "  --json           list: one JSON object; show: OSProfiler's trace JSON (what\n"
    "                   `osprofiler trace show --json` prints), each span with an extra\n"
    "                   info.pyprof: samples, cpu_ms, top_functions\n"
    "  --html           show: a self-contained page: the span tree on a time axis; click\n"
    "                   a span for its ids, info and top functions\n"
    "  --dot            show: the span tree as a graphviz digraph\n"
    "  -o, --out FILE   write to FILE instead of standard output\n"
    "  --top N          show: N top functions per span (default 5)\n"
    CLI_FILTER_HELP
    "  -h, --help       show this text\n"
    "\n"
    "Exit status: 0 ok, 1 bad input (an unknown trace id, a damaged log), 2 usage.\n"
    "\n"
    "EXAMPLES\n"
    "  pyprof trace list /tmp/prof\n"
    "  pyprof trace show 5d5b1b0a-52a4-4cbe-8a3c-1f4c3e2d6e55 /tmp/prof\n"
    "  pyprof trace show --json 5d5b1b0a-52a4-4cbe-8a3c-1f4c3e2d6e55 /tmp/prof -o t.json\n"
    "  osprofiler trace show t.json --dot --connection-string x:// --out t.dot\n";
/* clang-format on */

enum { OUT_TEXT, OUT_JSON, OUT_HTML, OUT_DOT };

typedef struct trace_opts {
    int show; /* show, not list */
    int format;
    const char *out;
    uint32_t top;
} trace_opts;

/* What the writers share. */
typedef struct trace_out {
    FILE *f;
    const profile *p;
    const trace_set *ts;
    spans_index ix;
    size_t t; /* the trace shown */
    const trace_opts *o;
    spans_func *funcs; /* room for o->top */
    jsonw *j;          /* the JSON being written (put_json) */
    int oom;
} trace_out;

/* ---- small helpers ---------------------------------------------------------------------- */

/* `s` with every control character as '?'. */
static void put_plain(FILE *f, const char *s)
{
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        putc(*c < 0x20 || *c == 0x7f ? '?' : *c, f);
}

/* OSProfiler's timestamp: "2016-04-18T17:42:10.770000" (UTC). */
static void fmt_iso(uint64_t ns, char *buf, size_t len)
{
    time_t t = (time_t)(ns / 1000000000ull);
    struct tm tm;
    char day[40];
    if (!gmtime_r(&t, &tm) || !strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm))
        snprintf(day, sizeof day, "1970-01-01T00:00:00");
    snprintf(buf, len, "%.32s.%06u", day, (unsigned)(ns % 1000000000ull / 1000ull));
}

/* Milliseconds from `t0` to `t`, truncated as OSProfiler's msec() does. */
static int64_t ms_since(uint64_t t0, uint64_t t)
{
    return t >= t0 ? (int64_t)((t - t0) / 1000000ull) : -(int64_t)((t0 - t) / 1000000ull);
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b && b[1] ? b + 1 : path;
}

/* A span's trace_id as the tree shows it: its own, or "PID.SPAN_ID" without one. */
static void span_tid(const profile *p, uint32_t s, char *buf, size_t len)
{
    const profile_span *sp = &p->spans[s];
    if (sp->trace_id[0])
        snprintf(buf, len, "%s", sp->trace_id);
    else
        snprintf(buf, len, "%" PRIu64 ".%" PRIu64, p->procs[sp->process].pid, sp->id);
}

/* A member of the span's start info, when it is a string; else `dflt`.  Malloc'ed. */
static char *info_member(const profile_span *sp, const char *key, const char *dflt)
{
    char *v = jsonscan_string(sp->info, key);
    return v ? v : strdup(dflt);
}

/* A span's info, as an object: the program's when it is one, else its text in one. */
static void put_info_obj(jsonw *j, const char *info)
{
    if (jsonscan_is_object(info)) {
        jsonw_raw(j, info);
        return;
    }
    jsonw_begin_object(j);
    jsonw_key_string(j, "unparsed", info);
    jsonw_end_object(j);
}

/* Walks the trace's tree depth first without recursion (a tree may be as deep as the
 * spans are many): `enter` for each span, `leave` after its children. */
typedef void (*visit_fn)(trace_out *w, uint32_t s, uint32_t depth);
static void walk_tree(trace_out *w, visit_fn enter, visit_fn leave)
{
    const trace_set *ts = w->ts;
    uint32_t cur = ts->traces[w->t].first_root, depth = 0;
    while (cur != PROFILE_NO_SPAN) {
        enter(w, cur, depth);
        if (ts->first_child[cur] != PROFILE_NO_SPAN) {
            cur = ts->first_child[cur];
            depth++;
            continue;
        }
        for (;;) {
            if (leave)
                leave(w, cur, depth);
            if (ts->next_sibling[cur] != PROFILE_NO_SPAN) {
                cur = ts->next_sibling[cur];
                break;
            }
            cur = ts->tparent[cur];
            if (cur == PROFILE_NO_SPAN)
                break;
            depth--;
        }
    }
}

/* ---- list --------------------------------------------------------------------------- */

/* docs/JSON.md, "trace list", describes every key. */
static int do_list(FILE *f, const profile *p, const trace_set *ts, int json)
{
    char b[64];
    if (json) {
        jsonw j;
        jsonw_init(&j, f, 0);
        jsonw_begin_object(&j);
        jsonw_key(&j, "traces");
        jsonw_begin_array(&j);
        for (size_t i = 0; i < ts->ntraces; i++) {
            const trace *t = &ts->traces[i];
            jsonw_break(&j, 2);
            jsonw_begin_object(&j);
            jsonw_key_string(&j, "trace_id", t->id);
            fmt_iso(t->start_unix_ns, b, sizeof b);
            jsonw_key_string(&j, "started", b);
            jsonw_key_u64(&j, "started_unix_ns", t->start_unix_ns);
            jsonw_key_double(&j, "duration_ms",
                             (double)(t->end_unix_ns - t->start_unix_ns) / 1e6, 3);
            jsonw_key_string(&j, "root", p->spans[t->first_root].name);
            jsonw_key_u64(&j, "spans", t->nspans);
            jsonw_key_u64(&j, "unfinished", t->unfinished);
            jsonw_key(&j, "pids");
            jsonw_begin_array(&j);
            for (size_t k = 0; k < t->npids; k++)
                jsonw_u64(&j, t->pids[k]);
            jsonw_end_array(&j);
            jsonw_end_object(&j);
        }
        jsonw_end_array(&j);
        jsonw_end_object(&j);
        jsonw_finish(&j);
        return CLI_EXIT_OK;
    }
    if (!ts->ntraces) {
        fprintf(f, "no spans in the logs given\n");
        return CLI_EXIT_OK;
    }
    fprintf(f, "%-36s  %-27s %12s %6s %10s  %-14s %s\n", "TRACE", "STARTED", "DURATION",
            "SPANS", "UNFINISHED", "PIDS", "ROOT");
    for (size_t i = 0; i < ts->ntraces; i++) {
        const trace *t = &ts->traces[i];
        char pids[64] = "", d[64];
        size_t at = 0;
        for (size_t k = 0; k < t->npids && at < sizeof pids - 24; k++)
            at += (size_t)snprintf(pids + at, sizeof pids - at, "%s%" PRIu64, k ? "," : "",
                                   t->pids[k]);
        if (at >= sizeof pids - 24 && t->npids > 1)
            snprintf(pids + at, sizeof pids - at, ",...");
        snprintf(d, sizeof d, "%.3f ms", (double)(t->end_unix_ns - t->start_unix_ns) / 1e6);
        /* The id first, then the columns; a long id pushes them right. */
        put_plain(f, t->id);
        fprintf(f, "%*s", (int)(strlen(t->id) < 36 ? 36 - strlen(t->id) : 0), "");
        fprintf(f, "  %-27s %12s %6zu %10zu  %-14s ",
                cli_fmt_unix_ns(t->start_unix_ns, b, sizeof b), d, t->nspans, t->unfinished,
                pids);
        put_plain(f, p->spans[t->first_root].name);
        putc('\n', f);
    }
    return CLI_EXIT_OK;
}

/* ---- show: per span ----------------------------------------------------------------- */

/* The span's cost and top functions into w->funcs; returns how many, 0 on failure
 * (w->oom set). */
static size_t span_top(trace_out *w, uint32_t s, spans_cost *cost)
{
    long n = spans_top_funcs(w->p, &w->ix, s, w->o->top, w->funcs, cost);
    if (n < 0) {
        w->oom = 1;
        cost->samples = cost->us = 0;
        return 0;
    }
    return (size_t)n;
}

/* The id the tree gives a span's parent: its own parent_id, else its parent's trace id,
 * else (top level) the trace's id. */
static void span_parent_id(const trace_out *w, uint32_t s, char *buf, size_t len)
{
    const profile_span *sp = &w->p->spans[s];
    if (sp->parent_id[0])
        snprintf(buf, len, "%s", sp->parent_id);
    else if (w->ts->tparent[s] != PROFILE_NO_SPAN)
        span_tid(w->p, w->ts->tparent[s], buf, len);
    else
        snprintf(buf, len, "%s", w->ts->traces[w->t].id);
}

/* One OSProfiler notification of the span: NAME-start or NAME-stop. */
static void put_payload(trace_out *w, uint32_t s, int stop, const char *service,
                        const char *project, const char *host, const char *tid, const char *pid)
{
    static const char prefix[] = "meta.raw_payload.";
    jsonw *j = w->j;
    const profile_span *sp = &w->p->spans[s];
    char *key = NULL, ts[64];
    if (asprintf(&key, "%s%s-%s", prefix, sp->name, stop ? "stop" : "start") < 0) {
        w->oom = 1;
        return;
    }
    jsonw_break(j, 2);
    jsonw_key(j, key);
    jsonw_begin_object(j);
    jsonw_key_string(j, "name", key + strlen(prefix));
    free(key);
    jsonw_key_string(j, "base_id", sp->base_id[0] ? sp->base_id : w->ts->traces[w->t].id);
    jsonw_key_string(j, "trace_id", tid);
    jsonw_key_string(j, "parent_id", pid);
    fmt_iso(trace_span_unix_ns(w->p, s, stop), ts, sizeof ts);
    jsonw_key_string(j, "timestamp", ts);
    jsonw_key_string(j, "project", project);
    jsonw_key_string(j, "service", service);
    jsonw_key_string(j, "host", host);
    const char *info = stop ? sp->stop_info : sp->info;
    if (info[0]) {
        jsonw_key(j, "info");
        put_info_obj(j, info);
    }
    jsonw_end_object(j);
}

static void json_enter(trace_out *w, uint32_t s, uint32_t depth)
{
    jsonw *j = w->j;
    const profile *p = w->p;
    const profile_span *sp = &p->spans[s];
    const profile_process *pr = &p->procs[sp->process];
    const profile_thread *th = &p->threads[sp->thread];
    uint64_t t0 = w->ts->traces[w->t].start_unix_ns;
    uint64_t a = trace_span_unix_ns(p, s, 0), b = trace_span_unix_ns(p, s, 1);
    char *service = info_member(sp, "service", base_name(pr->exe));
    char *project = info_member(sp, "project", "");
    char *host = info_member(sp, "host", pr->host);
    char tid[PYPROF_SPAN_ID_MAX + 48], pid[PYPROF_SPAN_ID_MAX + 48];
    if (!service || !project || !host) {
        w->oom = 1;
        goto done;
    }
    span_tid(p, s, tid, sizeof tid);
    span_parent_id(w, s, pid, sizeof pid);
    jsonw_break(j, depth < 32 ? (int)depth : 32);
    jsonw_begin_object(j);
    jsonw_key(j, "info");
    jsonw_begin_object(j);
    jsonw_key_string(j, "name", sp->name);
    jsonw_key_string(j, "service", service);
    jsonw_key_string(j, "project", project);
    jsonw_key_string(j, "host", host);
    jsonw_key_i64(j, "started", ms_since(t0, a));
    jsonw_key_i64(j, "finished", ms_since(t0, b));
    if (!sp->unfinished) {
        char *etype = jsonscan_string(sp->stop_info, "etype");
        jsonw_key_string(j, "exception", etype ? etype : "None");
        free(etype);
    }
    put_payload(w, s, 0, service, project, host, tid, pid);
    if (!sp->unfinished)
        put_payload(w, s, 1, service, project, host, tid, pid);
    spans_cost cost;
    size_t n = span_top(w, s, &cost);
    jsonw_break(j, 2);
    jsonw_key(j, "pyprof");
    jsonw_begin_object(j);
    jsonw_key_u64(j, "pid", pr->pid);
    jsonw_key_u64(j, "tid", th->tid);
    jsonw_key_string(j, "thread", th->name);
    jsonw_key_u64(j, "span_id", sp->id);
    jsonw_key_u64(j, "parent_span_id", sp->parent_span_id);
    jsonw_key_bool(j, "unfinished", sp->unfinished);
    jsonw_key_i64(j, "started_us", (int64_t)(a - t0) / 1000);
    jsonw_key_i64(j, "finished_us", (int64_t)(b - t0) / 1000);
    jsonw_key_u64(j, "samples", cost.samples);
    jsonw_key_double(j, "cpu_ms", (double)cost.us / 1000.0, 3);
    jsonw_key(j, "top_functions");
    jsonw_begin_array(j);
    for (size_t k = 0; k < n; k++) {
        const profile_func *fn = &p->funcs[w->funcs[k].func];
        jsonw_begin_object(j);
        jsonw_key_string(j, "function", fn->name);
        jsonw_key_string(j, "file", fn->file);
        jsonw_key_i64(j, "line", fn->line);
        jsonw_key_u64(j, "samples", w->funcs[k].samples);
        jsonw_key_double(j, "self_ms", (double)w->funcs[k].self_us / 1000.0, 3);
        jsonw_end_object(j);
    }
    jsonw_end_array(j);
    jsonw_end_object(j); /* pyprof */
    jsonw_end_object(j); /* info */
    jsonw_break(j, 2);
    jsonw_key_string(j, "trace_id", tid);
    jsonw_key_string(j, "parent_id", pid);
    jsonw_key(j, "children");
    jsonw_begin_array(j);
done:
    free(service);
    free(project);
    free(host);
}

static void json_leave(trace_out *w, uint32_t s, uint32_t depth)
{
    (void)s, (void)depth;
    jsonw_end_array(w->j);
    jsonw_end_object(w->j);
}

/* For stats: the trace's spans by name (as written: invalid UTF-8 replaced, so two
 * names that print the same are one). */
typedef struct named {
    char *name;
    int64_t ms;
} named;

static int cmp_named(const void *a, const void *b)
{
    return strcmp(((const named *)a)->name, ((const named *)b)->name);
}

static void put_stats(trace_out *w)
{
    const profile *p = w->p;
    const trace *t = &w->ts->traces[w->t];
    named *v = calloc(t->nspans ? t->nspans : 1, sizeof *v);
    size_t n = 0;
    if (!v) {
        w->oom = 1;
        return;
    }
    for (size_t i = 0; i < p->nspans && n < t->nspans; i++) {
        if (w->ts->trace_of[i] != w->t)
            continue;
        v[n].name = cli_utf8_dup(p->spans[i].name);
        if (!v[n].name) {
            w->oom = 1;
            break;
        }
        v[n].ms = ms_since(t->start_unix_ns, trace_span_unix_ns(p, (uint32_t)i, 1)) -
                  ms_since(t->start_unix_ns, trace_span_unix_ns(p, (uint32_t)i, 0));
        n++;
    }
    qsort(v, n, sizeof *v, cmp_named);
    jsonw_break(w->j, 0);
    jsonw_key(w->j, "stats");
    jsonw_begin_object(w->j);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        int64_t ms = 0;
        for (; j < n && !strcmp(v[j].name, v[i].name); j++)
            ms += v[j].ms;
        jsonw_key(w->j, v[i].name);
        jsonw_begin_object(w->j);
        jsonw_key_u64(w->j, "count", j - i);
        jsonw_key_i64(w->j, "duration", ms);
        jsonw_end_object(w->j);
        i = j;
    }
    jsonw_end_object(w->j);
    for (size_t i = 0; i < n; i++)
        free(v[i].name);
    free(v);
}

/* OSProfiler's report and ours (docs/JSON.md, "trace show"); `flags`: JSONW_HTML for
 * the page, else 0. */
static void put_json(trace_out *w, unsigned flags)
{
    const profile *p = w->p;
    const trace *t = &w->ts->traces[w->t];
    jsonw j;
    jsonw_init(&j, w->f, flags);
    w->j = &j;
    uint64_t last = t->start_unix_ns;
    for (size_t i = 0; i < p->nspans; i++)
        if (w->ts->trace_of[i] == w->t && trace_span_unix_ns(p, (uint32_t)i, 0) > last)
            last = trace_span_unix_ns(p, (uint32_t)i, 0);
    jsonw_begin_object(&j);
    jsonw_key(&j, "info");
    jsonw_begin_object(&j);
    jsonw_key_string(&j, "name", "total");
    jsonw_key_i64(&j, "started", 0);
    jsonw_key_i64(&j, "finished", ms_since(t->start_unix_ns, t->end_unix_ns));
    jsonw_key_i64(&j, "last_trace_started", ms_since(t->start_unix_ns, last));
    jsonw_end_object(&j);
    jsonw_break(&j, 0);
    jsonw_key(&j, "children");
    jsonw_begin_array(&j);
    walk_tree(w, json_enter, json_leave);
    jsonw_end_array(&j);
    put_stats(w);
    jsonw_break(&j, 0);
    jsonw_key(&j, "pyprof");
    jsonw_begin_object(&j);
    jsonw_key_string(&j, "trace_id", t->id);
    jsonw_key_u64(&j, "started_unix_ns", t->start_unix_ns);
    jsonw_key_u64(&j, "finished_unix_ns", t->end_unix_ns);
    jsonw_key_u64(&j, "spans", t->nspans);
    jsonw_key_u64(&j, "unfinished", t->unfinished);
    jsonw_key_string(&j, "tool", "pyprof " PYPROF_VERSION_STRING);
    jsonw_key(&j, "processes");
    jsonw_begin_array(&j);
    for (size_t k = 0; k < t->npids; k++) {
        /* The first process of the logs with that pid among the trace's spans. */
        const profile_process *pr = NULL;
        for (size_t i = 0; i < p->nspans && !pr; i++)
            if (w->ts->trace_of[i] == w->t && p->procs[p->spans[i].process].pid == t->pids[k])
                pr = &p->procs[p->spans[i].process];
        jsonw_begin_object(&j);
        jsonw_key_u64(&j, "pid", pr->pid);
        jsonw_key_string(&j, "host", pr->host);
        jsonw_key(&j, "argv");
        jsonw_begin_array(&j);
        for (size_t a = 0; a < pr->argc; a++)
            jsonw_string(&j, pr->argv[a]);
        jsonw_end_array(&j);
        jsonw_key_string(&j, "log", pr->path);
        jsonw_end_object(&j);
    }
    jsonw_end_array(&j);
    jsonw_end_object(&j);
    jsonw_end_object(&j);
    jsonw_finish(&j);
    w->j = NULL;
}

/* ---- show: text --------------------------------------------------------------------- */

static void text_enter(trace_out *w, uint32_t s, uint32_t depth)
{
    FILE *f = w->f;
    const profile *p = w->p;
    const profile_span *sp = &p->spans[s];
    uint64_t t0 = w->ts->traces[w->t].start_unix_ns;
    uint64_t a = trace_span_unix_ns(p, s, 0), b = trace_span_unix_ns(p, s, 1);
    uint32_t ind = depth < 24 ? depth : 24;
    fprintf(f, "%*s%s", (int)(2 * ind), "", depth > ind ? "... " : "");
    put_plain(f, sp->name);
    fprintf(f, "  +%.3f ms  %.3f ms%s  pid %" PRIu64 " tid %" PRIu64, (double)(a - t0) / 1e6,
            (double)(b - a) / 1e6, sp->unfinished ? " (unfinished)" : "",
            p->procs[sp->process].pid, p->threads[sp->thread].tid);
    spans_cost cost;
    size_t n = span_top(w, s, &cost);
    fprintf(f, "  cpu %.3f ms (%" PRIu64 " samples)", (double)cost.us / 1000.0, cost.samples);
    for (size_t k = 0; k < n; k++) {
        fputs(k ? ", " : ": ", f);
        put_plain(f, p->funcs[w->funcs[k].func].name);
        fprintf(f, " %" PRIu64, w->funcs[k].samples);
    }
    fputc('\n', f);
}

static void put_text(trace_out *w)
{
    const trace *t = &w->ts->traces[w->t];
    char b[64];
    fputs("trace ", w->f);
    put_plain(w->f, t->id);
    fprintf(w->f, ": %zu span%s (%zu unfinished), started %s, %.3f ms, pids", t->nspans,
            t->nspans == 1 ? "" : "s", t->unfinished,
            cli_fmt_unix_ns(t->start_unix_ns, b, sizeof b),
            (double)(t->end_unix_ns - t->start_unix_ns) / 1e6);
    for (size_t k = 0; k < t->npids; k++)
        fprintf(w->f, "%s%" PRIu64, k ? ", " : " ", t->pids[k]);
    fputc('\n', w->f);
    walk_tree(w, text_enter, NULL);
}

/* ---- show: dot ---------------------------------------------------------------------- */

/* A dot string: quoted, '"' and '\' escaped, control characters as '?', invalid UTF-8
 * as U+FFFD. */
static void put_dot_str(FILE *f, const char *s)
{
    putc('"', f);
    while (*s) {
        unsigned char c = (unsigned char)*s;
        size_t n = utf8_char_len((const uint8_t *)s, SIZE_MAX);
        if (c == '"' || c == '\\') {
            putc('\\', f);
            putc(c, f);
        } else if (c < 0x20 || c == 0x7f) {
            putc('?', f);
        } else if (n > 1) {
            fwrite(s, 1, n, f);
            s += n;
            continue;
        } else if (!n) {
            fputs("\xef\xbf\xbd", f);
        } else {
            putc(c, f);
        }
        s++;
    }
    putc('"', f);
}

static void dot_enter(trace_out *w, uint32_t s, uint32_t depth)
{
    (void)depth;
    FILE *f = w->f;
    const profile *p = w->p;
    const profile_span *sp = &p->spans[s];
    uint64_t a = trace_span_unix_ns(p, s, 0), b = trace_span_unix_ns(p, s, 1);
    uint64_t t0 = w->ts->traces[w->t].start_unix_ns;
    spans_cost cost;
    size_t n = span_top(w, s, &cost);
    char *label = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&label, &len);
    if (!m) {
        w->oom = 1;
        return;
    }
    /* Names with their control characters as '?': the label's only newlines are ours. */
    put_plain(m, sp->name);
    fprintf(m, " - %" PRId64 " ms%s\ncpu %.1f ms, %" PRIu64 " samples",
            ms_since(t0, b) - ms_since(t0, a), sp->unfinished ? " (unfinished)" : "",
            (double)cost.us / 1000.0, cost.samples);
    for (size_t k = 0; k < n; k++) {
        fputc('\n', m);
        put_plain(m, p->funcs[w->funcs[k].func].name);
        fprintf(m, " %" PRIu64, w->funcs[k].samples);
    }
    if (fclose(m) || !label) {
        free(label);
        w->oom = 1;
        return;
    }
    /* Lines of the label: the newlines written above become dot's \n. */
    fprintf(f, "  s%" PRIu32 " [label=", s);
    char *line = label;
    putc('"', f);
    for (;;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        /* put_dot_str without its quotes */
        char *q = NULL;
        size_t qlen = 0;
        FILE *qm = open_memstream(&q, &qlen);
        if (qm) {
            put_dot_str(qm, line);
            if (fclose(qm) == 0 && q && qlen >= 2)
                fwrite(q + 1, 1, qlen - 2, f);
            else
                w->oom = 1;
            free(q);
        } else {
            w->oom = 1;
        }
        if (!nl)
            break;
        fputs("\\n", f);
        line = nl + 1;
    }
    fputs("\"];\n", f);
    if (w->ts->tparent[s] == PROFILE_NO_SPAN)
        fprintf(f, "  total -> s%" PRIu32 ";\n", s);
    else
        fprintf(f, "  s%" PRIu32 " -> s%" PRIu32 ";\n", w->ts->tparent[s], s);
    free(label);
}

static void put_dot(trace_out *w)
{
    const trace *t = &w->ts->traces[w->t];
    fputs("digraph pyprof_trace {\n  graph [label=", w->f);
    char *title = NULL;
    if (asprintf(&title, "pyprof trace %s", t->id) < 0) {
        w->oom = 1;
        return;
    }
    put_dot_str(w->f, title);
    free(title);
    fprintf(w->f,
            ", labelloc=t];\n  node [shape=box, fontname=\"sans-serif\"];\n"
            "  total [label=\"total - %" PRId64 " ms\"];\n",
            ms_since(t->start_unix_ns, t->end_unix_ns));
    walk_tree(w, dot_enter, NULL);
    fputs("}\n", w->f);
}

/* ---- show: the page ------------------------------------------------------------------ */

static void put_html(trace_out *w)
{
    const char *tpl = pyprof_trace_html;
    size_t tpl_len = (size_t)(pyprof_trace_html_end - pyprof_trace_html);
    const char *mark = memmem(tpl, tpl_len, DATA_MARKER, strlen(DATA_MARKER));
    if (!mark) {
        w->oom = 1;
        return;
    }
    fwrite(tpl, 1, (size_t)(mark - tpl), w->f);
    put_json(w, JSONW_HTML);
    const char *rest = mark + strlen(DATA_MARKER);
    fwrite(rest, 1, (size_t)(tpl + tpl_len - rest), w->f);
}

/* ---- the command -------------------------------------------------------------------- */

static int do_show(const profile *p, const trace_set *ts, const char *id, const trace_opts *o,
                   FILE *f)
{
    long t = trace_find(ts, id);
    if (t < 0) {
        char shown[128];
        size_t k = 0;
        for (const unsigned char *c = (const unsigned char *)id; *c && k + 4 < sizeof shown;
             c++)
            shown[k++] = *c < 0x20 || *c == 0x7f ? '?' : (char)*c;
        shown[k] = 0;
        cli_error("trace '%s%s' is not in the logs given (%zu trace%s there; see 'pyprof "
                  "trace list')",
                  shown, id[k] ? "..." : "", ts->ntraces, ts->ntraces == 1 ? "" : "s");
        return CLI_EXIT_BAD_INPUT;
    }
    trace_out w = {f, p, ts, {0}, (size_t)t, o, NULL, NULL, 0};
    w.funcs = malloc(o->top * sizeof *w.funcs);
    if (!w.funcs || spans_index_build(p, &w.ix) < 0) {
        free(w.funcs);
        return cli_oom();
    }
    switch (o->format) {
    case OUT_JSON:
        put_json(&w, 0);
        break;
    case OUT_HTML:
        put_html(&w);
        break;
    case OUT_DOT:
        put_dot(&w);
        break;
    default:
        put_text(&w);
        break;
    }
    spans_index_free(&w.ix);
    free(w.funcs);
    return w.oom ? cli_oom() : CLI_EXIT_OK;
}

static int trace_option(void *ctx, int c, const char *arg)
{
    trace_opts *o = ctx;
    switch (c) {
    case 'H':
    case 'D':
        if (o->format && o->format != (c == 'H' ? OUT_HTML : OUT_DOT))
            return cli_usage_error("trace", "choose one of --json, --html and --dot");
        o->format = c == 'H' ? OUT_HTML : OUT_DOT;
        return 0;
    case 'o':
        o->out = arg;
        return 0;
    default: /* --top */
        return cli_parse_count("trace", "top", arg, &o->top);
    }
}

static int trace_check(void *ctx, int nlogs)
{
    const trace_opts *o = ctx;
    if (nlogs < 0)
        return cli_usage_error("trace", "no trace id given: pyprof trace show TRACE_ID LOG...");
    if (o->out && !o->out[0])
        return cli_usage_error("trace", "--out: empty file name");
    if (!o->show && o->format)
        return cli_usage_error("trace", "--html and --dot are options of 'trace show'");
    return cli_no_logs("trace", nlogs);
}

int cmd_trace(int argc, char **argv)
{
    static const struct option options[] = {
        {"html", no_argument, NULL, 'H'},
        {"dot", no_argument, NULL, 'D'},
        {"out", required_argument, NULL, 'o'},
        {"top", required_argument, NULL, 't'},
        {NULL, 0, NULL, 0},
    };
    static const cli_command list_cmd = {"trace",      cmd_trace_usage, 1, "o:", options,
                                         trace_option, trace_check,     0, 0};
    static const cli_command show_cmd = {"trace",      cmd_trace_usage, 1, "o:", options,
                                         trace_option, trace_check,     0, 1};
    if (argc < 2)
        return cli_usage_error("trace", "say 'list' or 'show'");
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(cmd_trace_usage, stdout);
        return CLI_EXIT_OK;
    }
    int show = !strcmp(argv[1], "show");
    if (!show && strcmp(argv[1], "list"))
        return cli_usage_error("trace", "unknown subcommand '%.100s': say 'list' or 'show'",
                               argv[1]);
    trace_opts o = {show, OUT_TEXT, NULL, 5};
    trace_set ts;
    memset(&ts, 0, sizeof ts);
    cli_args a;
    int rc = cli_start(show ? &show_cmd : &list_cmd, argc - 1, argv + 1, &o, &a);
    if (rc >= 0)
        goto cleanup;
    if (a.json && o.format) {
        rc = cli_usage_error("trace", "choose one of --json, --html and --dot");
        goto cleanup;
    }
    if (a.json)
        o.format = OUT_JSON;
    if (trace_build(a.p, &ts) < 0) {
        rc = cli_oom();
        goto cleanup;
    }
    if (show && trace_find(&ts, a.args[0]) < 0) {
        rc = do_show(a.p, &ts, a.args[0], &o, stdout); /* the error line */
        goto cleanup;
    }
    int to_stdout = !o.out || !strcmp(o.out, "-");
    FILE *f = to_stdout ? stdout : fopen(o.out, "w");
    if (!f) {
        cli_error("%s: cannot create: %s", o.out, strerror(errno));
        rc = CLI_EXIT_BAD_INPUT;
        goto cleanup;
    }
    struct stat st;
    int regular = !to_stdout && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode);
    if (show) {
        rc = do_show(a.p, &ts, a.args[0], &o, f);
    } else {
        rc = do_list(f, a.p, &ts, o.format == OUT_JSON);
    }
    if (!to_stdout) {
        int bad = ferror(f) || fflush(f) != 0, err = errno;
        if (fclose(f) != 0 && !bad) {
            bad = 1;
            err = errno;
        }
        if (bad && !rc) {
            cli_error("%s: cannot write: %s", o.out, strerror(err ? err : EIO));
            rc = CLI_EXIT_BAD_INPUT;
        }
        if (rc && regular)
            unlink(o.out);
    }

cleanup:
    trace_set_free(&ts);
    cli_args_free(&a);
    return rc;
}
