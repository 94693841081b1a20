/*
 * export_pprof: the profile.proto format of pprof (github.com/google/pprof,
 * proto/profile.proto), gzipped — what `go tool pprof`, Pyroscope and Grafana read.
 *
 *   sample_type   [samples/count, cpu/nanoseconds] (wall/nanoseconds for wall-clock logs)
 *   sample        one per (thread, stack, GIL state): location ids from the innermost
 *                 frame out, values [samples, nanoseconds], labels pid and tid (numbers),
 *                 task and task_state (an asyncio task's samples: its name, running or
 *                 awaiting),
 *                 thread (the thread's name, when it has one) and, in wall-clock logs,
 *                 gil ("held", "wait", "other" or "not_held": `go tool pprof
 *                 -tagfocus=gil=wait` keeps the GIL waits)
 *   location      one per (function, line) met on a stack, with one line entry; a native
 *                 function's locations name its module's mapping
 *   function      one per function: name (the qualified name, or a native symbol), file
 *                 (a native function's: its module's path), first line (0 for native)
 *   mapping       logs with native frames: one per module (path and build-id), with the
 *                 runtime range and file offset of its executable segment in the first
 *                 process that loaded it; the tool symbolized it (has_functions etc.)
 *   string_table  every string once, "" first, as UTF-8 (other bytes become U+FFFD)
 *   time_nanos, duration_nanos, period_type, period  from the logs' headers
 *
 * With --memory, a heap profile as Go's runtime writes one: sample_type [alloc_objects/
 * count, alloc_space/bytes, inuse_objects/count, inuse_space/bytes], one sample per stack
 * with what its sampled allocations stand for (allocs.h; rounded to whole numbers) and no
 * labels, period_type space/bytes with the sampling interval as period (the first
 * process's that has one), and default_sample_type inuse_space (alloc_space with
 * --memory=alloc).  --memory=peak keeps the four sample types but makes the profile a
 * heap snapshot at the peak of the estimated heap (allocs.h): inuse_objects and
 * inuse_space are what was in use then, alloc_* still every allocation kept, and a
 * comment says when the peak was and how high.
 *
 * The protobuf wire format is small enough to write by hand: varints (wire type 0) and
 * length-delimited fields (type 2) for strings, nested messages and packed repeated
 * numbers.  A nested message is encoded into a scratch buffer first, then appended with
 * its length.  The encoded profile is gzipped with zlib as it is written out.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/fnv.h"
#include "common/growarray.h"
#include "read/tasks.h"
#include "read/allocs.h"
#include "read/idmap.h"
#include "cli_fmt.h"
#include "cli_text.h"
#include "export.h"

/* ---- protobuf encoding -------------------------------------------------------------- */

typedef struct pb {
    uint8_t *b;
    size_t len, cap;
    int oom;
} pb;

static void pb_put(pb *b, const void *data, size_t n)
{
    if (b->oom)
        return;
    if (grow_array((void **)&b->b, &b->cap, b->len + n, 1, 256)) {
        b->oom = 1;
        return;
    }
    memcpy(b->b + b->len, data, n);
    b->len += n;
}

static void pb_varint(pb *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    do {
        tmp[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            tmp[n] |= 0x80;
        n++;
    } while (v);
    pb_put(b, tmp, n);
}

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

static void pb_key(pb *b, uint32_t field, int wire)
{
    pb_varint(b, (uint64_t)field << 3 | wire);
}

/* A number field; zero is the default and is left out, as proto3 does. */
static void pb_num(pb *b, uint32_t field, int64_t v)
{
    if (!v)
        return;
    pb_key(b, field, WIRE_VARINT);
    pb_varint(b, (uint64_t)v); /* int64: negative values take ten bytes, as in protobuf */
}

static void pb_bytes(pb *b, uint32_t field, const void *data, size_t n)
{
    pb_key(b, field, WIRE_LEN);
    pb_varint(b, n);
    pb_put(b, data, n);
}

/* Appends the message in `sub` as field `field` of `b`, and empties `sub`. */
static void pb_msg(pb *b, uint32_t field, pb *sub)
{
    if (sub->oom)
        b->oom = 1;
    pb_bytes(b, field, sub->b, sub->len);
    sub->len = 0;
}

/* ---- tables: strings and locations ---------------------------------------------------- */

/* The string table: each string once, indexed in order of first sight; the index is the
 * reader library's idtab (idmap.h), hashed by FNV-1a, compared here. */
typedef struct strtab {
    const char **strs;
    size_t n, cap;
    idtab index;
} strtab;

/* The index of `s` in the string table, added when new; -1 when out of memory.  The
 * string is not copied: it must outlive the table. */
static int64_t strtab_index(strtab *t, const char *s)
{
    uint64_t h = fnv_str(FNV_OFFSET, s);
    size_t pos;
    for (uint32_t i = idtab_first(&t->index, h, &pos); i != IDTAB_NONE;
         i = idtab_next(&t->index, h, &pos))
        if (!strcmp(t->strs[i], s))
            return i;
    if (t->n >= IDTAB_NONE || idtab_reserve(&t->index, t->n + 1) < 0 ||
        grow_array((void **)&t->strs, &t->cap, t->n + 1, sizeof *t->strs, 512) < 0)
        return -1;
    t->strs[t->n] = s;
    idtab_add(&t->index, h, (uint32_t)t->n);
    return (int64_t)t->n++;
}

static void strtab_free(strtab *t)
{
    free(t->strs);
    idtab_free(&t->index);
}

/* Location ids by (function, line), from 1 in order of first sight: an idmap (idmap.h)
 * from the key func << 32 | line. */
typedef struct loctab {
    idmap ids;
    uint32_t n;
} loctab;

static uint64_t loc_key(const profile_frame *f)
{
    return (uint64_t)f->func << 32 | (uint32_t)f->line;
}

/* The location id of frame `f`, numbered in order of first sight; 0 when out of memory.
 * *is_new tells the caller to describe it. */
static uint32_t loctab_id(loctab *t, const profile_frame *f, int *is_new)
{
    *is_new = 0;
    uint64_t key = loc_key(f);
    uint32_t id = idmap_get(&t->ids, key);
    if (id != IDMAP_EMPTY)
        return id;
    if (t->n + 1 >= IDMAP_EXCLUDED || idmap_set(&t->ids, key, t->n + 1) < 0)
        return 0;
    *is_new = 1;
    return ++t->n;
}

/* ---- the profile ------------------------------------------------------------------------ */

typedef struct pprof_out {
    const profile *p;
    strtab strings;
    loctab locs;
    pb msg;                 /* the Profile message but its string table */
    pb locations;           /* the Location messages, as fields of Profile */
    pb sub, sub2;           /* scratch for the message being built */
    pb loc, line;           /* scratch for a Location, built in the middle of a Sample */
    uint32_t *func_mapping; /* function -> mapping id, 0: none (Python functions) */
    char note[256];         /* --memory=peak: the comment (the table keeps no copy) */
    char **task_label;      /* per function: a task frame's task name, made when first
                             * needed (the table keeps no copy) */
} pprof_out;

static int cmp_thread_stack(const void *a, const void *b, void *arg)
{
    const profile *p = arg;
    const profile_sample *x = &p->samples[*(const uint32_t *)a];
    const profile_sample *y = &p->samples[*(const uint32_t *)b];
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    if (x->stack != y->stack)
        return x->stack < y->stack ? -1 : 1;
    return (x->gil > y->gil) - (x->gil < y->gil);
}

/* The gil label's values by enum pyprof_gil (none for unknown). */
static const char *const gil_label[PYPROF_GIL_STATES] = {NULL, "held", "wait", "other",
                                                         "not_held"};

static int64_t str_idx(pprof_out *w, const char *s)
{
    int64_t i = strtab_index(&w->strings, s);
    if (i < 0)
        w->msg.oom = 1;
    return i < 0 ? 0 : i;
}

static void value_type(pprof_out *w, uint32_t field, const char *type, const char *unit)
{
    pb_num(&w->sub, 1, str_idx(w, type));
    pb_num(&w->sub, 2, str_idx(w, unit));
    pb_msg(&w->msg, field, &w->sub);
}

static void add_location(pprof_out *w, uint32_t id, const profile_frame *f)
{
    pb_num(&w->line, 1, f->func + 1); /* Line.function_id */
    pb_num(&w->line, 2, f->line > 0 ? f->line : 0);
    pb_num(&w->loc, 1, id); /* Location.id */
    if (w->func_mapping[f->func])
        pb_num(&w->loc, 2, w->func_mapping[f->func]); /* Location.mapping_id */
    pb_msg(&w->loc, 4, &w->line);
    pb_msg(&w->locations, 4, &w->loc);
}

static void label(pprof_out *w, const char *key, const char *str, int64_t num)
{
    pb_num(&w->sub2, 1, str_idx(w, key));
    if (str)
        pb_num(&w->sub2, 2, str_idx(w, str));
    else
        pb_num(&w->sub2, 3, num);
    pb_msg(&w->sub, 3, &w->sub2);
}

/* A Sample's location ids (packed, from the innermost frame out) into w->sub, and the
 * locations met for the first time into w->locations. */
static void add_stack(pprof_out *w, const profile_stack *st)
{
    const profile *p = w->p;
    for (uint32_t k = st->nframes; k-- > 0;) {
        int is_new;
        const profile_frame *f = &p->frames[st->first + k];
        uint32_t id = loctab_id(&w->locs, f, &is_new);
        if (!id)
            w->msg.oom = 1;
        else if (is_new)
            add_location(w, id, f);
        pb_varint(&w->sub2, id);
    }
    if (st->nframes)
        pb_msg(&w->sub, 1, &w->sub2);
}

/* The task name of task frame function f, kept for the string table; NULL when f is
 * none (or out of memory). */
static const char *task_label(pprof_out *w, uint32_t f)
{
    const char *name;
    size_t len;
    if (!tasks_name(&w->p->funcs[f], &name, &len))
        return NULL;
    if (!w->task_label && !(w->task_label = calloc(w->p->nfuncs, sizeof *w->task_label))) {
        w->msg.oom = 1;
        return NULL;
    }
    if (!w->task_label[f] && !(w->task_label[f] = strndup(name, len)))
        w->msg.oom = 1;
    return w->task_label[f];
}

/* One Sample: a stack of one thread, n samples standing for ns nanoseconds. */
static void add_sample(pprof_out *w, const profile_sample *s, uint64_t n, uint64_t ns)
{
    const profile *p = w->p;
    const profile_thread *t = &p->threads[s->thread];
    add_stack(w, &p->stacks[s->stack]);
    pb_varint(&w->sub2, n);
    pb_varint(&w->sub2, ns);
    pb_msg(&w->sub, 2, &w->sub2);
    label(w, "pid", NULL, (int64_t)p->procs[t->process].pid);
    label(w, "tid", NULL, (int64_t)t->tid);
    if (t->name[0])
        label(w, "thread", t->name, 0);
    if (s->gil < PYPROF_GIL_STATES && gil_label[s->gil])
        label(w, "gil", gil_label[s->gil], 0);
    /* The asyncio task it ran (or, --awaiting, the task suspended). */
    int64_t run = tasks_running(p, s->stack);
    const char *task = run >= 0 ? task_label(w, p->frames[run].func) : NULL;
    if (task) {
        label(w, "task", task, 0);
        label(w, "task_state", s->gil == PYPROF_GIL_AWAIT ? "awaiting" : "running", 0);
    }
    pb_msg(&w->msg, 2, &w->sub);
}

static int add_samples(pprof_out *w)
{
    const profile *p = w->p;
    uint32_t *order = malloc((p->nsamples ? p->nsamples : 1) * sizeof *order);
    if (!order)
        return -1;
    for (size_t i = 0; i < p->nsamples; i++)
        order[i] = (uint32_t)i;
    qsort_r(order, p->nsamples, sizeof *order, cmp_thread_stack, (void *)p);
    for (size_t i = 0; i < p->nsamples;) {
        size_t begin = i;
        uint64_t us = 0;
        for (; i < p->nsamples && !cmp_thread_stack(&order[i], &order[begin], (void *)p); i++)
            us += aggregate_sample_us(p, &p->samples[order[i]]);
        add_sample(w, &p->samples[order[begin]], i - begin, us * 1000);
    }
    free(order);
    return 0;
}

/* --memory: one Sample per stack that allocations were sampled on, with the four values
 * of add_header's sample types (with =peak, in use at the peak rather than at the end).
 * Returns 0, or -1 when out of memory. */
static int add_alloc_samples(pprof_out *w, const export_opts *o)
{
    allocs_counts c;
    if (allocs_sum(w->p, &c) < 0)
        return -1;
    int peak = o->by == ALLOCS_BY_PEAK;
    if (peak) {
        char b[64];
        if (c.peak.found)
            snprintf(w->note, sizeof w->note,
                     "pyprof --memory=peak: inuse_objects and inuse_space are in use at the "
                     "peak of the estimated heap, %.3f s from the start, %s",
                     c.peak.t_s, cli_fmt_bytes(cli_bytes_count(c.peak.bytes), b, sizeof b));
        else
            snprintf(w->note, sizeof w->note,
                     "pyprof --memory=peak: no allocation followed to its free, no peak");
        int64_t k = str_idx(w, w->note);
        if (k < 0) {
            allocs_counts_free(&c);
            return -1;
        }
        pb_num(&w->msg, 13, k); /* comment */
    }
    for (size_t s = 0; s < w->p->nstacks; s++) {
        const allocs_cost *k = &c.stack[s];
        if (!k->samples)
            continue;
        add_stack(w, &w->p->stacks[s]);
        pb_varint(&w->sub2, cli_bytes_count(k->alloc_objects));
        pb_varint(&w->sub2, cli_bytes_count(k->alloc_bytes));
        pb_varint(&w->sub2, cli_bytes_count(peak ? k->peak_objects : k->inuse_objects));
        pb_varint(&w->sub2, cli_bytes_count(peak ? k->peak_bytes : k->inuse_bytes));
        pb_msg(&w->sub, 2, &w->sub2);
        pb_msg(&w->msg, 2, &w->sub);
    }
    allocs_counts_free(&c);
    return 0;
}

/* The Mapping messages: one per module (path, build-id) of the processes, in order of
 * first sight; each native function gets the first mapping with its module's path.
 * Returns 0, or -1 when out of memory. */
static int add_mappings(pprof_out *w)
{
    const profile *p = w->p;
    w->func_mapping = calloc(p->nfuncs ? p->nfuncs : 1, sizeof *w->func_mapping);
    size_t total = 0;
    for (size_t i = 0; i < p->nprocs; i++)
        total += p->procs[i].nmodules;
    const profile_module **maps = malloc((total ? total : 1) * sizeof *maps);
    if (!w->func_mapping || !maps) {
        free(maps);
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < p->nprocs; i++)
        for (size_t k = 0; k < p->procs[i].nmodules; k++) {
            const profile_module *m = &p->procs[i].modules[k];
            size_t j = 0;
            while (j < n &&
                   (strcmp(maps[j]->path, m->path) || strcmp(maps[j]->build_id, m->build_id)))
                j++;
            if (j < n)
                continue;
            maps[n++] = m;
            pb_num(&w->sub, 1, (int64_t)n);              /* id */
            pb_num(&w->sub, 2, (int64_t)m->start);       /* memory_start */
            pb_num(&w->sub, 3, (int64_t)m->limit);       /* memory_limit */
            pb_num(&w->sub, 4, (int64_t)m->file_offset); /* file_offset */
            pb_num(&w->sub, 5, str_idx(w, m->path));     /* filename */
            pb_num(&w->sub, 6, str_idx(w, m->build_id)); /* build_id */
            pb_num(&w->sub, 7, 1);                       /* has_functions */
            pb_num(&w->sub, 8, 1);                       /* has_filenames */
            pb_num(&w->sub, 9, 1);                       /* has_line_numbers */
            pb_num(&w->sub, 10, 1);                      /* has_inline_frames */
            pb_msg(&w->msg, 3, &w->sub);
        }
    for (uint32_t f = 0; f < p->nfuncs; f++) {
        const profile_func *fn = &p->funcs[f];
        if (fn->kind != PROFILE_FUNC_NATIVE)
            continue;
        for (size_t j = 0; j < n; j++)
            if (!strcmp(maps[j]->path, fn->file)) {
                w->func_mapping[f] = (uint32_t)(j + 1);
                break;
            }
    }
    free(maps);
    return 0;
}

static void add_functions(pprof_out *w)
{
    for (uint32_t f = 0; f < w->p->nfuncs; f++) {
        const profile_func *fn = &w->p->funcs[f];
        int64_t name = str_idx(w, fn->name);
        pb_num(&w->sub, 1, f + 1);
        /* No system_name: pprof "demangles" a function whose name equals its system
         * name, and its C++ heuristics strip "<...>" — "<module>" would vanish. */
        pb_num(&w->sub, 2, name);
        pb_num(&w->sub, 4, str_idx(w, fn->file));
        pb_num(&w->sub, 5, fn->line > 0 ? fn->line : 0);
        pb_msg(&w->msg, 5, &w->sub);
    }
}

static void add_header(pprof_out *w, const export_opts *o)
{
    const profile *p = w->p;
    int wall = p->nprocs && p->procs[0].clock == PYPROF_CLOCK_WALL;
    uint64_t start = 0, interval = 0;
    for (size_t i = 0; i < p->nprocs; i++) {
        if (!start || p->procs[i].start_unix_ns < start)
            start = p->procs[i].start_unix_ns;
        if (!interval)
            interval = p->procs[i].alloc_interval;
    }
    str_idx(w, ""); /* string_table[0] must be "" */
    if (o->memory) {
        value_type(w, 1, "alloc_objects", "count");
        value_type(w, 1, "alloc_space", "bytes");
        value_type(w, 1, "inuse_objects", "count");
        value_type(w, 1, "inuse_space", "bytes");
        pb_num(&w->msg, 9, (int64_t)start);
        pb_num(&w->msg, 10, (int64_t)(aggregate_duration(p) * 1e9));
        value_type(w, 11, "space", "bytes");
        pb_num(&w->msg, 12, (int64_t)interval);
        int alloc = o->by_set && o->by == ALLOCS_BY_ALLOC;
        pb_num(&w->msg, 14, str_idx(w, alloc ? "alloc_space" : "inuse_space"));
        return;
    }
    value_type(w, 1, "samples", "count");
    value_type(w, 1, wall ? "wall" : "cpu", "nanoseconds");
    pb_num(&w->msg, 9, (int64_t)start);
    pb_num(&w->msg, 10, (int64_t)(aggregate_duration(p) * 1e9));
    value_type(w, 11, wall ? "wall" : "cpu", "nanoseconds");
    pb_num(&w->msg, 12, p->nprocs ? (int64_t)p->procs[0].period_ns : 0);
}

/* ---- gzip ---------------------------------------------------------------------------------
 */

static int gzip_write(FILE *out, const pb *parts[], size_t nparts)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK)
        return -1;
    uint8_t buf[1 << 16];
    int zr = Z_OK;
    for (size_t i = 0; i < nparts && zr != Z_STREAM_ERROR; i++) {
        int flush = i + 1 == nparts ? Z_FINISH : Z_NO_FLUSH;
        z.next_in = parts[i]->b;
        z.avail_in = (uInt)parts[i]->len;
        do {
            z.next_out = buf;
            z.avail_out = sizeof buf;
            zr = deflate(&z, flush);
            fwrite(buf, 1, sizeof buf - z.avail_out, out);
        } while (z.avail_out == 0 || (flush == Z_FINISH && zr == Z_OK));
    }
    deflateEnd(&z);
    return zr == Z_STREAM_END ? 0 : -1;
}

int export_pprof(FILE *out, const profile *p, const export_opts *o)
{
    pprof_out w;
    memset(&w, 0, sizeof w);
    w.p = p;
    pb strings = {0};
    int rc = -1;
    add_header(&w, o);
    if (add_mappings(&w) < 0 || (o->memory ? add_alloc_samples(&w, o) : add_samples(&w)) < 0)
        goto cleanup;
    add_functions(&w);
    for (size_t i = 0; i < w.strings.n; i++) {
        /* protobuf strings are UTF-8, and strict decoders refuse anything else. */
        char *clean = cli_utf8_dup(w.strings.strs[i]);
        if (!clean)
            goto cleanup;
        pb_bytes(&strings, 6, clean, strlen(clean));
        free(clean);
    }
    if (w.msg.oom || w.locations.oom || w.sub.oom || w.sub2.oom || w.loc.oom || w.line.oom ||
        strings.oom)
        goto cleanup;
    const pb *parts[] = {&w.msg, &w.locations, &strings};
    rc = gzip_write(out, parts, 3);
cleanup:
    free(w.msg.b);
    free(w.locations.b);
    free(w.sub.b);
    free(w.sub2.b);
    free(w.loc.b);
    free(w.line.b);
    free(strings.b);
    strtab_free(&w.strings);
    idmap_free(&w.locs.ids);
    free(w.func_mapping);
    for (size_t f = 0; w.task_label && f < w.p->nfuncs; f++)
        free(w.task_label[f]);
    free(w.task_label);
    return rc < 0 ? export_oom() : 0;
}
