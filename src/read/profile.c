/*
 * profile: the in-memory model of pyprof logs.  See profile.h.
 *
 * Loading is one pass over each log with the reader.  Ids in a log (thread_idx, code_id,
 * stack_id) are the writer's and mean nothing outside their file, so each file gets its
 * own small maps (idmap.h) from those ids to the profile's global indices; the maps are
 * thrown away when the file is done.  Functions are interned by functab.h and stacks in a
 * global index table (idtab), so the same function, or the same stack, seen in two
 * processes is one entry.  Nothing here sums or sorts what was loaded: that is aggregate.c's.
 * The cost per SAMPLE record is the reader's varint decoding, two map lookups and a 24-byte
 * append, which keeps loading well above five million samples per second.
 *
 * The writer's order guarantees (a THREAD, CODE or STACK record precedes its first use)
 * are relied on but not trusted: a reference to an id never defined becomes an
 * "[unknown]" function, stack or thread instead of an error, because a report of
 * everything else in the log is more useful than a refusal.
 */
#include "profile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "allocload.h"
#include "common/fnv.h"
#include "common/growarray.h"
#include "functab.h"
#include "idmap.h"
#include "logset.h"
#include "nativemerge.h"
#include "series.h"
#include "spanload.h"
#include "symbols.h"
#include "tasks.h"

/* ---- global interning of functions and stacks ---------------------------------------- */

struct profile_index {
    spanload spans;   /* the pending stops */
    allocload allocs; /* every ALLOC and FREE read */
    functab funcs;    /* (name, file, line, kind) -> function */
    idtab stacks;     /* frames -> stack */
    uint32_t marker_func[PYPROF_CODE_FIRST];
    uint32_t unknown_func;
    uint32_t unknown_stack;
    profile_frame *tmp; /* a stack being converted */
    size_t tmp_cap;
};

static uint32_t intern_func_cstr(profile *p, const char *name)
{
    return functab_intern(&p->index->funcs, name, "", 0, PROFILE_FUNC_PYTHON);
}

/* The pseudo-function a marker code id stands for. */
static uint32_t marker_func(profile *p, uint64_t code_id)
{
    profile_index *ix = p->index;
    if (ix->marker_func[code_id] == IDMAP_EMPTY) {
        char buf[32];
        if (code_id == PYPROF_CODE_CUT)
            snprintf(buf, sizeof buf, "[cut]");
        else if (code_id == PYPROF_CODE_UNREADABLE)
            snprintf(buf, sizeof buf, "[unreadable]");
        else
            snprintf(buf, sizeof buf, "[marker %u]", (unsigned)code_id);
        ix->marker_func[code_id] = intern_func_cstr(p, buf);
    }
    return ix->marker_func[code_id];
}

static uint32_t unknown_func(profile *p)
{
    if (p->index->unknown_func == IDMAP_EMPTY)
        p->index->unknown_func = intern_func_cstr(p, "[unknown]");
    return p->index->unknown_func;
}

static uint32_t stack_hash(const profile_frame *f, size_t n)
{
    uint64_t h = fnv_bytes(FNV_OFFSET, f, n * sizeof *f);
    return (uint32_t)(h ^ (h >> 32));
}

/* Returns the index of the stack made of `n` frames, adding it when new, or IDMAP_EMPTY
 * when out of memory. */
static uint32_t intern_stack(profile *p, const profile_frame *frames, size_t n)
{
    idtab *t = &p->index->stacks;
    uint32_t h = stack_hash(frames, n);
    size_t pos;
    for (uint32_t i = idtab_first(t, h, &pos); i != IDTAB_NONE; i = idtab_next(t, h, &pos)) {
        const profile_stack *s = &p->stacks[i];
        if (s->hash == h && s->nframes == n &&
            (!n || !memcmp(p->frames + s->first, frames, n * sizeof *frames)))
            return i;
    }
    if (p->nstacks >= IDMAP_EXCLUDED || idtab_reserve(t, p->nstacks + 1) ||
        GROW_ARRAY(p->stacks, p->cap_stacks, p->nstacks + 1) ||
        GROW_ARRAY(p->frames, p->cap_frames, p->nframes + n))
        return IDMAP_EMPTY;
    uint32_t s = (uint32_t)p->nstacks++;
    p->stacks[s].first = p->nframes;
    p->stacks[s].nframes = (uint32_t)n;
    p->stacks[s].hash = h;
    if (n)
        memcpy(p->frames + p->nframes, frames, n * sizeof *frames);
    p->nframes += n;
    idtab_add(t, h, s);
    return s;
}

/* ---- the profile --------------------------------------------------------------------- */

profile *profile_new(const profile_filter *filter, unsigned options, const char *root)
{
    profile *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->index = calloc(1, sizeof *p->index);
    if (!p->index || (root && !(p->root = strdup(root)))) {
        free(p->index);
        free(p);
        return NULL;
    }
    functab_init(&p->index->funcs, &p->funcs, &p->nfuncs, &p->cap_funcs);
    memset(p->index->marker_func, 0xff, sizeof p->index->marker_func);
    p->index->unknown_func = IDMAP_EMPTY;
    p->index->unknown_stack = IDMAP_EMPTY;
    if (filter)
        p->filter = *filter;
    p->options = options;
    return p;
}

void profile_free(profile *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nprocs; i++) {
        profile_process *pr = &p->procs[i];
        free(pr->path);
        free(pr->run_id);
        free(pr->host);
        free(pr->exe);
        free(pr->python_version);
        free(pr->timer);
        for (size_t a = 0; a < pr->argc; a++)
            free(pr->argv[a]);
        free(pr->argv);
        for (size_t k = 0; k < pr->nmodules; k++) {
            free(pr->modules[k].path);
            free(pr->modules[k].build_id);
        }
        free(pr->modules);
        for (size_t k = 0; k < pr->nfiles; k++)
            free(pr->files[k].path);
        free(pr->files);
    }
    for (size_t i = 0; i < p->nthreads; i++)
        free(p->threads[i].name);
    for (size_t i = 0; i < p->nfuncs; i++) {
        free(p->funcs[i].name);
        free(p->funcs[i].file);
    }
    for (size_t i = 0; i < p->nwarnings; i++)
        free(p->warnings[i]);
    free(p->procs);
    free(p->threads);
    free(p->funcs);
    free(p->stacks);
    free(p->frames);
    free(p->samples);
    free(p->rss);
    free(p->snapshots);
    free(p->snap_threads);
    for (size_t i = 0; i < p->nspans; i++) {
        profile_span *sp = &p->spans[i];
        free(sp->name);
        free(sp->trace_id);
        free(sp->parent_id);
        free(sp->base_id);
        free(sp->info);
        free(sp->stop_info);
    }
    free(p->spans);
    free(p->allocs);
    free(p->warnings);
    if (p->index) {
        spanload_free(&p->index->spans);
        allocload_clear(&p->index->allocs);
        functab_free(&p->index->funcs);
        idtab_free(&p->index->stacks);
        free(p->index->tmp);
        free(p->index);
    }
    free(p->root);
    free(p);
}

static int set_error(profile *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int set_error(profile *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->error, sizeof p->error, fmt, ap);
    va_end(ap);
    return -1;
}

static int add_warning(profile *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int add_warning(profile *p, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *w = strdup(buf);
    if (!w || GROW_ARRAY(p->warnings, p->cap_warnings, p->nwarnings + 1)) {
        free(w);
        return set_error(p, "out of memory");
    }
    p->warnings[p->nwarnings++] = w;
    return 0;
}

static int filter_has_u64(const uint64_t *list, size_t n, uint64_t v)
{
    if (!n)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (list[i] == v)
            return 1;
    return 0;
}

static int filter_keeps_log(const profile_filter *f, uint64_t pid, const char *run_id)
{
    if (!filter_has_u64(f->pids, f->npids, pid))
        return 0;
    if (!f->nruns)
        return 1;
    for (size_t i = 0; i < f->nruns; i++)
        if (!strcmp(f->runs[i], run_id))
            return 1;
    return 0;
}

static int copy_header(profile_process *pr, const pyprof_header *h)
{
    pr->format_version = h->format_version;
    pr->pid = h->pid;
    pr->ppid = h->ppid;
    pr->start_unix_ns = h->start_unix_ns;
    pr->python_hex = h->python_hex;
    pr->period_ns = h->period_ns;
    pr->max_depth = h->max_depth;
    pr->flags = h->flags;
    pr->window = h->window;
    pr->alloc_interval = h->alloc_interval;
    pr->clock = h->clock;
    pr->run_id = pyprof_str_dup(h->run_id);
    pr->host = pyprof_str_dup(h->host);
    pr->exe = pyprof_str_dup(h->exe);
    pr->python_version = pyprof_str_dup(h->python_version);
    pr->timer = pyprof_str_dup(h->timer);
    pr->argv = calloc(h->argc ? (size_t)h->argc : 1, sizeof *pr->argv);
    if (!pr->run_id || !pr->host || !pr->exe || !pr->python_version || !pr->timer || !pr->argv)
        return -1;
    for (uint64_t i = 0; i < h->argc; i++) {
        pr->argv[i] = pyprof_str_dup(h->argv[i]);
        if (!pr->argv[i])
            return -1;
        pr->argc++;
    }
    return 0;
}

/* A log's STACK record as the native merge needs it. */
typedef struct stack_info {
    uint64_t runs_off; /* into load_maps.runs */
    uint32_t nruns;
    uint8_t broken; /* a cut or unreadable marker, or a code id never defined */
} stack_info;

/* A log's NSTACK record: its addresses in load_maps.addrs. */
typedef struct nstack_info {
    uint64_t off;
    uint32_t n;
} nstack_info;

/* A kept sample (or allocation) with a native stack, merged when the log is done. */
typedef struct pending_sample {
    uint64_t sample; /* index into profile.samples (an allocation: into allocload's) */
    uint64_t stack_id, nstack_id;
    uint64_t pos; /* the log's record count at the sample */
    int alloc;    /* an ALLOC's stack, not a sample's */
    int no_py;    /* an ALLOC without a Python frame (stack_id 0): no Python stack */
} pending_sample;

/* A (stack_id, nstack_id) pair already merged. */
typedef struct merged_pair {
    uint64_t stack_id, nstack_id;
    int no_py; /* pending_sample's */
    uint32_t stack;
    int paired;
} merged_pair;

/* One log's ids, mapped to the profile's indices. */
typedef struct load_maps {
    uint64_t pos;      /* records read from this file, the header included */
    int64_t offset_us; /* this file's start on its process's axis */
    int older;         /* a file of the series with a higher seq was loaded before it */
    idmap code;        /* code_id -> function */
    idmap stack;       /* stack_id -> stack */
    idmap stack_gil;   /* stack_id -> its GIL state (enum pyprof_gil), when known */
    idmap thread;      /* thread_idx -> thread, or IDMAP_EXCLUDED */
    idmap tid;         /* OS thread id -> thread, so a renamed thread stays one */
    /* Native frames, only in logs that have them. */
    symbols *sym;
    idmap stack_info; /* stack_id -> index into sinfo */
    stack_info *sinfo;
    size_t nsinfo, cap_sinfo;
    uint32_t *runs;
    size_t nruns, cap_runs;
    idmap nstack; /* nstack_id -> index into nsinfo */
    nstack_info *nsv;
    size_t nnsv, cap_nsv;
    uint64_t *addrs;
    size_t naddrs, cap_addrs;
    pending_sample *pending;
    size_t npending, cap_pending;
    idtab pairs; /* merged (stack_id, nstack_id) pairs */
    merged_pair *mpairs;
    size_t nmpairs, cap_mpairs;
    idmap sym_frames; /* a symbols_lookup result (its address) -> offset in natf */
    profile_frame *natf;
    size_t nnatf, cap_natf;
    /* Scratch for one merge. */
    nm_native *nat;
    size_t cap_nat;
    uint32_t *offs;
    size_t cap_offs;
    profile_frame *merged;
    size_t cap_merged;
} load_maps;

static void load_maps_free(load_maps *m)
{
    idmap_free(&m->code);
    idmap_free(&m->stack);
    idmap_free(&m->stack_gil);
    idmap_free(&m->thread);
    idmap_free(&m->tid);
    symbols_free(m->sym);
    idmap_free(&m->stack_info);
    free(m->sinfo);
    free(m->runs);
    idmap_free(&m->nstack);
    free(m->nsv);
    free(m->addrs);
    free(m->pending);
    idtab_free(&m->pairs);
    free(m->mpairs);
    idmap_free(&m->sym_frames);
    free(m->natf);
    free(m->nat);
    free(m->offs);
    free(m->merged);
}

static uint32_t new_thread(profile *p, uint32_t proc, uint64_t tid)
{
    if (p->nthreads >= IDMAP_EXCLUDED ||
        GROW_ARRAY(p->threads, p->cap_threads, p->nthreads + 1))
        return IDMAP_EMPTY;
    char *name = strdup("");
    if (!name)
        return IDMAP_EMPTY;
    profile_thread *t = &p->threads[p->nthreads];
    t->process = proc;
    t->tid = tid;
    t->name = name;
    t->samples = 0;
    return (uint32_t)p->nthreads++;
}

static int on_thread(profile *p, load_maps *m, uint32_t proc, const pyprof_thread_rec *t)
{
    if (!filter_has_u64(p->filter.tids, p->filter.ntids, t->tid))
        return idmap_set(&m->thread, t->thread_idx, IDMAP_EXCLUDED);
    uint32_t th = idmap_get(&m->tid, t->tid);
    if (th == IDMAP_EMPTY) {
        th = new_thread(p, proc, t->tid);
        if (th == IDMAP_EMPTY || idmap_set(&m->tid, t->tid, th))
            return -1;
    }
    /* A later record for the same thread carries its newer name (a file older than one
     * loaded before only names a thread that has no name yet). */
    if (t->name.len && (!m->older || !p->threads[th].name[0])) {
        char *name = pyprof_str_dup(t->name);
        if (!name)
            return -1;
        free(p->threads[th].name);
        p->threads[th].name = name;
    }
    return idmap_set(&m->thread, t->thread_idx, th);
}

/* "<task NAME>": an asyncio task frame's function name. */
static char *task_name(pyprof_str name)
{
    char *s = malloc(name.len + sizeof "<task >");
    if (s)
        snprintf(s, name.len + sizeof "<task >", "<task %.*s>", (int)name.len, name.s);
    return s;
}

static int on_code(profile *p, load_maps *m, const pyprof_code_rec *c)
{
    int task = (c->flags & PYPROF_CODE_F_TASK) != 0;
    char *name = task ? task_name(c->name)
                      : pyprof_str_dup(c->qualname.len ? c->qualname : c->name);
    char *file = task ? strdup("") : pyprof_str_dup(c->filename);
    if (!name || !file) {
        free(name);
        free(file);
        return -1;
    }
    uint32_t f = functab_intern(&p->index->funcs, name, file, task ? 0 : c->first_line,
                                task ? PROFILE_FUNC_TASK : PROFILE_FUNC_PYTHON);
    free(name);
    free(file);
    if (f == IDMAP_EMPTY)
        return -1;
    return idmap_set(&m->code, c->code_id, f);
}

static int32_t clamp_line(int64_t line)
{
    if (line < INT32_MIN)
        return INT32_MIN;
    if (line > INT32_MAX)
        return INT32_MAX;
    return (int32_t)line;
}

/* Keeps what the native merge needs of a STACK record: its runs, and whether it is
 * whole. */
static int keep_stack_info(load_maps *m, const pyprof_stack_rec *s, int broken)
{
    uint32_t nruns = s->nruns > UINT32_MAX ? 0 : (uint32_t)s->nruns;
    if (s->nruns > UINT32_MAX)
        broken = 1;
    if (GROW_ARRAY(m->sinfo, m->cap_sinfo, m->nsinfo + 1) ||
        GROW_ARRAY(m->runs, m->cap_runs, m->nruns + nruns))
        return -1;
    for (uint32_t i = 0; i < nruns; i++)
        m->runs[m->nruns + i] = s->runs[i];
    m->sinfo[m->nsinfo] = (stack_info){m->nruns, nruns, (uint8_t)broken};
    m->nruns += nruns;
    if (m->nsinfo >= IDMAP_EXCLUDED ||
        idmap_set(&m->stack_info, s->stack_id, (uint32_t)m->nsinfo))
        return -1;
    m->nsinfo++;
    return 0;
}

static int on_stack(profile *p, load_maps *m, uint32_t proc, const pyprof_stack_rec *s)
{
    profile_index *ix = p->index;
    int broken = 0;
    if (s->nframes > UINT32_MAX || GROW_ARRAY(ix->tmp, ix->tmp_cap, (size_t)s->nframes))
        return -1;
    for (uint64_t i = 0; i < s->nframes; i++) {
        uint64_t id = s->frames[i].code_id;
        uint32_t f = id < PYPROF_CODE_FIRST ? marker_func(p, id) : idmap_get(&m->code, id);
        if (id < PYPROF_CODE_FIRST || f == IDMAP_EMPTY)
            broken = 1;
        if (f == IDMAP_EMPTY)
            f = unknown_func(p);
        if (f == IDMAP_EMPTY)
            return -1;
        ix->tmp[i].func = f;
        ix->tmp[i].line = clamp_line(s->frames[i].line);
    }
    uint32_t st = intern_stack(p, ix->tmp, (size_t)s->nframes);
    if (st == IDMAP_EMPTY)
        return -1;
    if ((p->procs[proc].flags & PYPROF_HDR_NATIVE) && keep_stack_info(m, s, broken) < 0)
        return -1;
    if (s->gil && idmap_set(&m->stack_gil, s->stack_id, (uint32_t)s->gil))
        return -1;
    return idmap_set(&m->stack, s->stack_id, st);
}

/* The stack used for a sample whose stack_id the log never defined. */
static uint32_t unknown_stack(profile *p)
{
    profile_index *ix = p->index;
    if (ix->unknown_stack == IDMAP_EMPTY) {
        profile_frame fr = {unknown_func(p), 0};
        if (fr.func == IDMAP_EMPTY)
            return IDMAP_EMPTY;
        ix->unknown_stack = intern_stack(p, &fr, 1);
    }
    return ix->unknown_stack;
}

/* The stack of no frame: an allocation made without a Python frame. */
static uint32_t empty_stack(profile *p)
{
    profile_frame none = {0, 0};
    return intern_stack(p, &none, 0);
}

/* The thread a record names, created nameless when the log did not define it. */
static uint32_t thread_of(profile *p, load_maps *m, uint32_t proc, uint64_t thread_idx)
{
    uint32_t th = idmap_get(&m->thread, thread_idx);
    if (th != IDMAP_EMPTY)
        return th;
    if (p->filter.ntids)
        th = IDMAP_EXCLUDED; /* its tid is unknown, so it cannot match */
    else
        th = new_thread(p, proc, 0);
    if (th == IDMAP_EMPTY || idmap_set(&m->thread, thread_idx, th))
        return IDMAP_EMPTY;
    return th;
}

static int on_sample(profile *p, load_maps *m, uint32_t proc, const pyprof_sample_rec *s)
{
    uint32_t th = thread_of(p, m, proc, s->thread_idx);
    if (th == IDMAP_EMPTY)
        return -1;
    if (th == IDMAP_EXCLUDED)
        return 0;
    uint32_t gil = idmap_get(&m->stack_gil, s->stack_id);
    if (gil == IDMAP_EMPTY)
        gil = PYPROF_GIL_UNKNOWN;
    if (gil == PYPROF_GIL_AWAIT) {
        p->procs[proc].awaiting++;
        if (!(p->options & PROFILE_AWAITING) && !p->filter.awaiting)
            return 0; /* a suspended task's: not the thread's time */
    }
    if (p->filter.gil_wait && gil != PYPROF_GIL_WAIT)
        return 0;
    uint32_t st = idmap_get(&m->stack, s->stack_id);
    if (st == IDMAP_EMPTY) {
        st = unknown_stack(p);
        if (st == IDMAP_EMPTY)
            return -1;
    }
    if (GROW_ARRAY(p->samples, p->cap_samples, p->nsamples + 1))
        return -1;
    profile_sample *out = &p->samples[p->nsamples++];
    out->t_us = s->t_us + m->offset_us;
    out->thread = th;
    out->stack = st;
    out->cpu_us = s->cpu_us > UINT32_MAX ? UINT32_MAX : (uint32_t)s->cpu_us;
    out->process = proc;
    out->gil = (uint8_t)gil;
    p->threads[th].samples++;
    p->procs[proc].samples++;
    if (s->nstack_id) {
        if (GROW_ARRAY(m->pending, m->cap_pending, m->npending + 1))
            return -1;
        pending_sample ps = {p->nsamples - 1, s->stack_id, s->nstack_id, m->pos, 0, 0};
        m->pending[m->npending++] = ps;
        p->procs[proc].native_samples++;
    }
    return 0;
}

static int on_rss(profile *p, uint32_t proc, const pyprof_rss_rec *r, int64_t t_us)
{
    if (GROW_ARRAY(p->rss, p->cap_rss, p->nrss + 1))
        return -1;
    p->rss[p->nrss].t_us = t_us;
    p->rss[p->nrss].bytes = r->rss_bytes;
    p->rss[p->nrss].process = proc;
    p->nrss++;
    profile_process *pr = &p->procs[proc];
    if (!pr->has_rss) {
        pr->has_rss = 1;
        pr->rss_start = r->rss_bytes;
        pr->rss_peak = r->rss_bytes;
    }
    if (r->rss_bytes > pr->rss_peak)
        pr->rss_peak = r->rss_bytes;
    pr->rss_end = r->rss_bytes;
    return 0;
}

/* Whether a timed record at t_us is inside the --from/--to window. */
static int in_window(const profile_filter *f, int64_t t_us)
{
    double t = (double)t_us / 1e6;
    if (f->has_from && t < f->from_s)
        return 0;
    if (f->has_to && t > f->to_s)
        return 0;
    return 1;
}

/* A snapshot at t_us on the process's axis: each thread's stack mapped to the model's,
 * the threads the --thread filter excludes left out. */
static int on_snapshot(profile *p, load_maps *m, uint32_t proc, const pyprof_snapshot_rec *s,
                       int64_t t_us)
{
    if (GROW_ARRAY(p->snapshots, p->cap_snapshots, p->nsnapshots + 1) ||
        GROW_ARRAY(p->snap_threads, p->cap_snap_threads,
                   p->nsnap_threads + (size_t)s->nthreads))
        return -1;
    profile_snapshot *out = &p->snapshots[p->nsnapshots];
    out->process = proc;
    out->id = s->snapshot_id;
    out->t_us = t_us;
    out->first = p->nsnap_threads;
    out->nthreads = 0;
    for (uint64_t i = 0; i < s->nthreads; i++) {
        const pyprof_snap_thread *st = &s->threads[i];
        if (st->flags & PYPROF_SNAP_F_TASK)
            continue; /* an asyncio task's, read by `pyprof dump --tasks` only */
        uint32_t th = thread_of(p, m, proc, st->thread_idx);
        if (th == IDMAP_EMPTY)
            return -1;
        if (th == IDMAP_EXCLUDED)
            continue;
        uint32_t stack = PROFILE_NO_STACK;
        if (st->stack_id) {
            stack = idmap_get(&m->stack, st->stack_id);
            if (stack == IDMAP_EMPTY && (stack = unknown_stack(p)) == IDMAP_EMPTY)
                return -1;
        }
        p->snap_threads[p->nsnap_threads++] = (profile_snap_thread){
            th, stack, st->flags > UINT32_MAX ? UINT32_MAX : (uint32_t)st->flags, st->os_state};
        out->nthreads++;
    }
    p->nsnapshots++;
    p->procs[proc].snapshots++;
    return 0;
}

static int on_span_start(profile *p, load_maps *m, uint32_t proc,
                         const pyprof_span_start_rec *s, int64_t t_us)
{
    uint32_t th = thread_of(p, m, proc, s->thread_idx);
    if (th == IDMAP_EMPTY)
        return -1;
    return spanload_start(p, &p->index->spans, proc, th, s, t_us);
}

static int on_span_stop(profile *p, load_maps *m, uint32_t proc, const pyprof_span_stop_rec *s,
                        int64_t t_us)
{
    uint32_t th = thread_of(p, m, proc, s->thread_idx);
    if (th == IDMAP_EMPTY)
        return -1;
    return spanload_stop(&p->index->spans, proc, th, s, t_us);
}

/* An ALLOC at t_us on the process's axis, of the file `pf`; `loaded`: inside the time
 * window.  Kept for the matching of frees whatever the filters say; its stack is mapped
 * (and its native stack merged) only when the filters keep it. */
static int on_alloc(profile *p, load_maps *m, uint32_t proc, const profile_file *pf,
                    const pyprof_alloc_rec *a, int64_t t_us, int loaded)
{
    uint32_t th = thread_of(p, m, proc, a->thread_idx);
    if (th == IDMAP_EMPTY)
        return -1;
    loaded = loaded && th != IDMAP_EXCLUDED;
    uint32_t st = PROFILE_NO_STACK;
    if (loaded) {
        st = a->stack_id ? idmap_get(&m->stack, a->stack_id) : empty_stack(p);
        if (st == IDMAP_EMPTY && (!a->stack_id || (st = unknown_stack(p)) == IDMAP_EMPTY))
            return -1;
    }
    long i = allocload_alloc(&p->index->allocs, proc, th, st, a, t_us, pf->alloc_interval,
                             pf->seq, m->pos, loaded);
    if (i < 0)
        return -1;
    if (loaded && a->nstack_id) {
        if (GROW_ARRAY(m->pending, m->cap_pending, m->npending + 1))
            return -1;
        pending_sample ps = {(uint64_t)i, a->stack_id, a->nstack_id, m->pos, 1, !a->stack_id};
        m->pending[m->npending++] = ps;
    }
    return 0;
}

/* ---- native frames ------------------------------------------------------------------- */

static int on_module(const profile *p, load_maps *m, uint64_t pos, const pyprof_module_rec *r)
{
    if (!m->sym && !(m->sym = symbols_new(NULL, p->root)))
        return -1;
    return symbols_add_module(m->sym, r, pos);
}

static void on_module_gone(load_maps *m, uint64_t pos, uint64_t module_id)
{
    if (m->sym)
        symbols_module_gone(m->sym, module_id, pos);
}

static int on_nstack(load_maps *m, const pyprof_nstack_rec *r)
{
    if (r->n > UINT32_MAX || GROW_ARRAY(m->nsv, m->cap_nsv, m->nnsv + 1) ||
        GROW_ARRAY(m->addrs, m->cap_addrs, m->naddrs + (size_t)r->n))
        return -1;
    memcpy(m->addrs + m->naddrs, r->addrs, (size_t)r->n * sizeof *r->addrs);
    m->nsv[m->nnsv] = (nstack_info){m->naddrs, (uint32_t)r->n};
    m->naddrs += (size_t)r->n;
    if (m->nnsv >= IDMAP_EXCLUDED || idmap_set(&m->nstack, r->nstack_id, (uint32_t)m->nnsv))
        return -1;
    m->nnsv++;
    return 0;
}

/* The offset in m->natf of the model's frames for a symbolized address, interning its
 * native functions the first time; UINT32_MAX when out of memory. */
static uint32_t native_frames(profile *p, load_maps *m, const sym_info *si)
{
    uint64_t key = (uint64_t)(uintptr_t)si;
    uint32_t off = idmap_get(&m->sym_frames, key);
    if (off != IDMAP_EMPTY)
        return off;
    if (m->nnatf + si->nframes >= IDMAP_EXCLUDED ||
        GROW_ARRAY(m->natf, m->cap_natf, m->nnatf + si->nframes))
        return UINT32_MAX;
    for (uint32_t i = 0; i < si->nframes; i++) {
        uint32_t f = functab_intern(&p->index->funcs, si->frames[i].name, si->frames[i].module,
                                    0, PROFILE_FUNC_NATIVE);
        if (f == IDMAP_EMPTY)
            return UINT32_MAX;
        m->natf[m->nnatf + i] = (profile_frame){f, si->frames[i].line};
    }
    off = (uint32_t)m->nnatf;
    m->nnatf += si->nframes;
    if (idmap_set(&m->sym_frames, key, off))
        return UINT32_MAX;
    return off;
}

/* The merged stack of a pending sample's (stack_id, nstack_id) pair, its addresses
 * looked up as seen at the sample's position; *paired as nativemerge sets it.
 * IDMAP_EMPTY when out of memory. */
static uint32_t merge_pair(profile *p, load_maps *m, const pending_sample *ps, int *paired)
{
    const nstack_info *ns = &m->nsv[idmap_get(&m->nstack, ps->nstack_id)];
    if (GROW_ARRAY(m->nat, m->cap_nat, ns->n) || GROW_ARRAY(m->offs, m->cap_offs, ns->n))
        return IDMAP_EMPTY;
    /* Offsets first: m->natf may move while functions are interned. */
    for (uint32_t j = 0; j < ns->n; j++) {
        const sym_info *si = symbols_lookup(m->sym, m->addrs[ns->off + j], ps->pos,
                                            j + 1 < ns->n);
        if (!si)
            return IDMAP_EMPTY;
        uint32_t off = native_frames(p, m, si);
        if (off == UINT32_MAX)
            return IDMAP_EMPTY;
        m->offs[j] = off;
        m->nat[j] = (nm_native){NULL, si->nframes, si->flags};
    }
    for (uint32_t j = 0; j < ns->n; j++)
        m->nat[j].frames = m->natf + m->offs[j];

    nm_input in = {
        .nat = m->nat, .nnat = ns->n, .show_glue = !!(p->options & PROFILE_NATIVE_GLUE)};
    uint32_t st = ps->no_py ? empty_stack(p) : idmap_get(&m->stack, ps->stack_id);
    uint32_t info_idx = ps->no_py ? IDMAP_EMPTY : idmap_get(&m->stack_info, ps->stack_id);
    if (ps->no_py) {
        if (st == IDMAP_EMPTY)
            return IDMAP_EMPTY;
    } else if (st == IDMAP_EMPTY || info_idx == IDMAP_EMPTY) {
        st = unknown_stack(p);
        if (st == IDMAP_EMPTY)
            return IDMAP_EMPTY;
        in.py_broken = 1;
    } else {
        const stack_info *info = &m->sinfo[info_idx];
        in.runs = m->runs + info->runs_off;
        in.nruns = info->nruns;
        in.py_broken = info->broken;
    }
    in.py = p->frames + p->stacks[st].first;
    in.npy = p->stacks[st].nframes;
    long n = nativemerge(&in, &m->merged, &m->cap_merged, paired);
    if (n < 0)
        return IDMAP_EMPTY;
    return intern_stack(p, m->merged, (size_t)n);
}

/* Merges every pending sample of the log into process `proc` and keeps the process's
 * modules.  0, or -1 when out of memory. */
static int merge_native(profile *p, load_maps *m, uint32_t proc)
{
    if (!m->npending && !m->sym)
        return 0;
    if (!m->sym && !(m->sym = symbols_new(NULL, p->root)))
        return -1;
    uint64_t unmerged = 0;
    for (size_t i = 0; i < m->npending; i++) {
        const pending_sample *ps = &m->pending[i];
        if (idmap_get(&m->nstack, ps->nstack_id) == IDMAP_EMPTY) {
            unmerged += !ps->alloc; /* an NSTACK the log never defined: the Python stack */
            continue;
        }
        uint64_t h = idtab_hash2((uint32_t)ps->stack_id, (uint32_t)ps->nstack_id,
                                 (int32_t)((ps->stack_id >> 32) ^ (ps->nstack_id >> 32)));
        size_t pos;
        const merged_pair *mp = NULL;
        for (uint32_t k = idtab_first(&m->pairs, h, &pos); k != IDTAB_NONE;
             k = idtab_next(&m->pairs, h, &pos))
            if (m->mpairs[k].stack_id == ps->stack_id &&
                m->mpairs[k].nstack_id == ps->nstack_id && m->mpairs[k].no_py == ps->no_py) {
                mp = &m->mpairs[k];
                break;
            }
        if (!mp) {
            int paired = 0;
            uint32_t st = merge_pair(p, m, ps, &paired);
            if (st == IDMAP_EMPTY || m->nmpairs >= IDMAP_EXCLUDED ||
                idtab_reserve(&m->pairs, m->nmpairs + 1) ||
                GROW_ARRAY(m->mpairs, m->cap_mpairs, m->nmpairs + 1))
                return -1;
            m->mpairs[m->nmpairs] = (merged_pair){ps->stack_id, ps->nstack_id, ps->no_py, st,
                                                  paired};
            idtab_add(&m->pairs, h, (uint32_t)m->nmpairs);
            mp = &m->mpairs[m->nmpairs++];
        }
        if (ps->alloc) {
            allocload_set_stack(&p->index->allocs, (size_t)ps->sample, mp->stack);
            continue;
        }
        p->samples[ps->sample].stack = mp->stack;
        if (!mp->paired)
            unmerged++;
    }
    profile_process *pr = &p->procs[proc];
    pr->native_unmerged += unmerged;
    pr->native_unresolved += symbols_unresolved(m->sym);
    /* The file's modules join the process's (the files of a series announce theirs
     * again): one entry per distinct mapping. */
    size_t nmod = symbols_nmodules(m->sym);
    profile_module *mods = realloc(pr->modules, (pr->nmodules + nmod + 1) * sizeof *mods);
    if (!mods)
        return -1;
    pr->modules = mods;
    for (size_t i = 0; i < nmod; i++) {
        const sym_module *sm = symbols_module(m->sym, i);
        int seen = 0;
        for (size_t k = 0; k < pr->nmodules && !seen; k++) {
            const profile_module *o = &pr->modules[k];
            seen = o->start == sm->start && o->limit == sm->limit &&
                   o->file_offset == sm->file_offset && !strcmp(o->path, sm->path) &&
                   !strcmp(o->build_id, sm->build_id_hex);
        }
        if (seen)
            continue;
        profile_module *pm = &pr->modules[pr->nmodules];
        pm->path = strdup(sm->path);
        pm->build_id = strdup(sm->build_id_hex);
        pm->start = sm->start;
        pm->limit = sm->limit;
        pm->file_offset = sm->file_offset;
        if (!pm->path || !pm->build_id) {
            free(pm->path);
            free(pm->build_id);
            return -1;
        }
        pr->nmodules++;
    }
    return 0;
}

/* Reads every record of an open log into process `proc`, its per-file numbers into `pf`.
 * Returns the reader's final code (0, or negative), or 1 when out of memory. */
static int load_records(profile *p, pyprof_reader *r, uint32_t proc, profile_file *pf)
{
    load_maps m;
    memset(&m, 0, sizeof m);
    m.pos = 1; /* the header */
    m.offset_us = (int64_t)pf->offset_us;
    m.older = pf != &p->procs[proc].files[p->procs[proc].nfiles - 1];
    profile_process *pr;
    const profile_filter *f = &p->filter;
    int timed = f->has_from || f->has_to;
    /* A file that joins a process: its threads are the process's, by tid. */
    for (size_t i = 0; i < p->nthreads; i++)
        if (p->threads[i].process == proc && p->threads[i].tid &&
            idmap_set(&m.tid, p->threads[i].tid, (uint32_t)i)) {
            load_maps_free(&m);
            return 1;
        }
    pyprof_record rec;
    int rc = 0, oom = 0;
    int64_t t;
    pf->last_t_us = m.offset_us;
    while (!oom && (rc = pyprof_reader_next(r, &rec)) == 1) {
        pr = &p->procs[proc];
        pr->records++;
        pf->records++;
        m.pos++;
        switch (rec.type) {
        case PYPROF_REC_SAMPLE:
            pr->samples_read++;
            pf->samples_read++;
            t = rec.u.sample.t_us + m.offset_us;
            pf->last_t_us = t;
            if (!timed || in_window(f, t))
                oom = on_sample(p, &m, proc, &rec.u.sample) < 0;
            break;
        case PYPROF_REC_STACK:
            pr->stacks_read++;
            oom = on_stack(p, &m, proc, &rec.u.stack) < 0;
            break;
        case PYPROF_REC_CODE:
            pr->codes_read++;
            oom = on_code(p, &m, &rec.u.code) < 0;
            break;
        case PYPROF_REC_THREAD:
            pr->threads_read++;
            oom = on_thread(p, &m, proc, &rec.u.thread) < 0;
            break;
        case PYPROF_REC_RSS:
            pr->rss_read++;
            t = rec.u.rss.t_us + m.offset_us;
            pf->last_t_us = t;
            if (!timed || in_window(f, t))
                oom = on_rss(p, proc, &rec.u.rss, t) < 0;
            break;
        case PYPROF_REC_SNAPSHOT:
            t = rec.u.snapshot.t_us + m.offset_us;
            if (!timed || in_window(f, t))
                oom = on_snapshot(p, &m, proc, &rec.u.snapshot, t) < 0;
            break;
        case PYPROF_REC_SPAN_START:
            pr->span_starts_read++;
            oom = on_span_start(p, &m, proc, &rec.u.span_start,
                                rec.u.span_start.t_us + m.offset_us) < 0;
            break;
        case PYPROF_REC_SPAN_STOP:
            pr->span_stops_read++;
            oom = on_span_stop(p, &m, proc, &rec.u.span_stop,
                               rec.u.span_stop.t_us + m.offset_us) < 0;
            break;
        case PYPROF_REC_ALLOC:
            pr->allocs_read++;
            t = rec.u.alloc.t_us + m.offset_us;
            oom = on_alloc(p, &m, proc, pf, &rec.u.alloc, t, !timed || in_window(f, t)) < 0;
            break;
        case PYPROF_REC_FREE:
            pr->frees_read++;
            oom = allocload_free(&p->index->allocs, proc, &rec.u.free,
                                 rec.u.free.t_us + m.offset_us, pf->seq, m.pos) < 0;
            break;
        case PYPROF_REC_AWINDOW:
            pr->awindows_read++;
            oom = allocload_awindow(&p->index->allocs, proc, &rec.u.awindow,
                                    rec.u.awindow.t_us + m.offset_us, pf->seq, m.pos) < 0;
            break;
        case PYPROF_REC_MODULE:
            pr->modules_read++;
            oom = on_module(p, &m, m.pos, &rec.u.module) < 0;
            break;
        case PYPROF_REC_NSTACK:
            pr->nstacks_read++;
            oom = on_nstack(&m, &rec.u.nstack) < 0;
            break;
        case PYPROF_REC_MODULE_GONE:
            on_module_gone(&m, m.pos, rec.u.module_gone);
            break;
        case PYPROF_REC_FOOTER:
            pf->has_footer = 1;
            pf->footer = rec.u.footer;
            if (rec.u.footer.has_teardown) {
                pr->has_teardown = 1;
                pr->teardown_us = (int64_t)rec.u.footer.teardown_us + m.offset_us;
            }
            break;
        default:
            pr->unknown_read++;
            break;
        }
    }
    pf->bytes = pyprof_reader_offset(r);
    p->procs[proc].bytes += pf->bytes;
    /* MODULE records may follow the samples that use them: merge once the log is read,
     * whatever stopped the reading. */
    if (!oom)
        oom = merge_native(p, &m, proc) < 0;
    load_maps_free(&m);
    return oom ? 1 : rc;
}

/* ---- loading files ------------------------------------------------------------------- */

/* The files to load are a logset (logset.h): the ones named on the command line (errors
 * are errors) and each directory's candidates (files that are not logs are skipped). */

/* The reader's refusal of `path` (err, and errno `sys_errno` for PYPROF_R_IO) in the
 * loader's words.  Returns 0 (skip it quietly), 1 (skipped with a warning: it is a log),
 * -1 (an error, in p->error). */
static int refusal(profile *p, const char *path, int named, int err, int sys_errno)
{
    if (!named && (err == PYPROF_R_NOT_LZ4 || err == PYPROF_R_NOT_PYPROF))
        return 0;
    if (err == PYPROF_R_TRUNCATED) {
        if (!named)
            return add_warning(p, "%s: warning: log is truncated before its header; skipped",
                               path) < 0
                       ? -1
                       : 1;
        return set_error(p,
                         "%s: log is truncated before its header (the process was "
                         "killed or crashed); nothing survived",
                         path);
    }
    if (err == PYPROF_R_IO)
        return set_error(p, "%s: %s", path, strerror(sys_errno));
    return set_error(p, "%s: %s", path, pyprof_reader_strerror(err));
}

/* Opens a log to load it.  Returns the reader, or NULL (p->error set). */
static pyprof_reader *open_log(profile *p, const char *path)
{
    int err;
    pyprof_reader *r = pyprof_reader_open(path, &err);
    if (!r)
        refusal(p, path, 1, err, errno);
    return r;
}

/* Loads one log (a candidate whose header was read) into the process of its series, or a
 * new one.  Returns 0 or -1 (p->error set). */
static int load_file(profile *p, const char *path)
{
    pyprof_reader *r = open_log(p, path);
    if (!r)
        return -1;
    int ret = -1;
    const pyprof_header *h = pyprof_reader_header(r);
    series_key key = {(char *)"", (char *)"", h->pid, h->window, h->series_start_unix_ns,
                      h->seq};
    key.host = pyprof_str_dup(h->host);
    key.run_id = pyprof_str_dup(h->run_id);
    if (!key.host || !key.run_id) {
        set_error(p, "out of memory");
        goto cleanup;
    }
    uint32_t proc = series_process(p, &key);
    if (proc == UINT32_MAX) {
        if (p->nprocs >= IDMAP_EXCLUDED || GROW_ARRAY(p->procs, p->cap_procs, p->nprocs + 1)) {
            set_error(p, "out of memory");
            goto cleanup;
        }
        proc = (uint32_t)p->nprocs++;
        profile_process *pr = &p->procs[proc];
        memset(pr, 0, sizeof *pr);
        pr->path = strdup(path);
        if (!pr->path || copy_header(pr, h) < 0) {
            set_error(p, "out of memory");
            goto cleanup;
        }
        pr->series_start_unix_ns = h->series_start_unix_ns;
        /* Every time of the process counts from the series' start. */
        if (h->series_start_unix_ns)
            pr->start_unix_ns = h->series_start_unix_ns;
    }
    long fi = series_add_file(p, proc, path, h);
    if (fi < 0) {
        set_error(p, "out of memory");
        goto cleanup;
    }
    profile_process *pr = &p->procs[proc];
    pr->records++; /* the header */
    profile_file *pf = &pr->files[fi];
    pf->records = 1;
    int rc = load_records(p, r, proc, pf);
    pr = &p->procs[proc];
    pf = &pr->files[fi];
    if (rc == 1 || rc == -PYPROF_R_NOMEM) {
        set_error(p, "out of memory");
        goto cleanup;
    }
    pf->end_error = rc;
    if (series_combine(pr) < 0) {
        set_error(p, "out of memory");
        goto cleanup;
    }
    if (rc == -PYPROF_R_TRUNCATED) {
        ret = add_warning(p, "%s: warning: %s; %llu samples survived", path,
                          pyprof_reader_strerror(rc), (unsigned long long)pf->samples_read);
        goto cleanup;
    }
    if (rc < 0) {
        const char *what = rc == -PYPROF_R_IO ? strerror(errno) : pyprof_reader_strerror(rc);
        if (p->options & PROFILE_KEEP_CORRUPT) {
            ret = add_warning(p,
                              "%s: %s after %llu records (byte %llu of the decompressed "
                              "log); %llu samples survived",
                              path, what, (unsigned long long)pf->records,
                              (unsigned long long)pf->bytes,
                              (unsigned long long)pf->samples_read);
            goto cleanup;
        }
        set_error(p, "%s: %s after %llu records (byte %llu of the decompressed log)", path,
                  what, (unsigned long long)pf->records, (unsigned long long)pf->bytes);
        goto cleanup;
    }
    ret = 0;

cleanup:
    free(key.host);
    free(key.run_id);
    pyprof_reader_close(r);
    return ret;
}

/* Reads a candidate's header: whether it is a log, its series, whether the filters keep
 * it (its `use`).  0, or -1 (p->error set). */
static int read_candidate(profile *p, logset_file *f)
{
    if (logset_read_header(f) < 0)
        return set_error(p, "out of memory");
    if (f->err != PYPROF_R_OK)
        return refusal(p, f->path, f->dir == LOGSET_NAMED, f->err, f->sys_errno) < 0 ? -1 : 0;
    f->use = filter_keeps_log(&p->filter, f->pid, f->run_id);
    return 0;
}

int profile_load_paths(profile *p, const char *const *paths, size_t npaths)
{
    logset set = {0};
    int ret = 0;
    /* The files: named ones, and each directory's. */
    for (size_t i = 0; i < npaths && ret == 0; i++) {
        struct stat st;
        if (stat(paths[i], &st) < 0)
            ret = set_error(p, "%s: %s", paths[i], strerror(errno));
        else if (S_ISDIR(st.st_mode)) {
            if (logset_scan_dir(&set, paths[i], (int)i) < 0)
                ret = errno == ENOMEM ? set_error(p, "out of memory")
                                      : set_error(p, "%s: %s", paths[i], strerror(errno));
        } else if (S_ISREG(st.st_mode) && st.st_size == 0)
            ret = set_error(p, "%s: empty file (no log data was ever written to it)", paths[i]);
        else if (logset_add(&set, paths[i], LOGSET_NAMED) < 0)
            ret = set_error(p, "out of memory");
    }
    /* Their headers; a directory without any log is an error. */
    for (size_t i = 0; i < set.n && ret == 0; i++)
        ret = read_candidate(p, &set.files[i]);
    for (size_t d = 0; d < npaths && ret == 0; d++) {
        struct stat st;
        if (stat(paths[d], &st) < 0 || !S_ISDIR(st.st_mode))
            continue;
        int found = 0;
        for (size_t i = 0; i < set.n; i++)
            found |= set.files[i].dir == (int)d && !logset_not_log(&set.files[i]);
        if (!found)
            ret = set_error(p, "%s: no pyprof log in this directory", paths[d]);
    }
    /* The kept logs by series, each in seq order. */
    size_t *order = NULL;
    long nload = 0;
    if (ret == 0 && (nload = logset_series_order(&set, &order)) < 0)
        ret = set_error(p, "out of memory");
    for (long i = 0; i < nload && ret == 0; i++)
        ret = load_file(p, set.files[order[i]].path);
    if (ret == 0 && (spanload_resolve(p, &p->index->spans) < 0 || spanload_filter(p) < 0 ||
                     tasks_filter(p) < 0 || allocload_resolve(p, &p->index->allocs) < 0))
        ret = set_error(p, "out of memory");
    free(order);
    logset_free(&set);
    return ret;
}

int profile_load(profile *p, const char *path) { return profile_load_paths(p, &path, 1); }
