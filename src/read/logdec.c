/*
 * logdec: record payloads into pyprof_record.  See logdec.h.
 *
 * Nothing in a payload is trusted: every count is checked against the bytes left (each
 * element takes at least a byte or two) and against format.h's limits before anything is
 * allocated, so a corrupt count cannot make us allocate gigabytes.
 */
#include "logdec.h"

#include <stdlib.h>
#include <string.h>

#include "common/growarray.h"
#include "common/record.h"

/* A SNAPSHOT with more threads than a Linux process can have (PID_MAX_LIMIT) is
 * corruption. */
#define LOGDEC_MAX_SNAP_THREADS (4u << 20)

/* rec_get_uvarint with the one-byte case inline: most fields of a SAMPLE are small. */
static inline uint64_t get_uv(rec_in *in)
{
    if (in->p < in->end && *in->p < 0x80)
        return *in->p++;
    return rec_get_uvarint(in);
}

static inline int64_t get_sv(rec_in *in)
{
    uint64_t u = get_uv(in);
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static pyprof_str dec_str(rec_in *in)
{
    pyprof_str s;
    s.s = (const char *)rec_get_str(in, &s.len);
    return s;
}

int logdec_header(logdec *d, const uint8_t *payload, size_t len, pyprof_header *h)
{
    rec_in in;
    rec_in_init(&in, payload, len);
    /* The version comes first and is checked before anything else, because a newer
     * version may have changed everything after it. */
    h->format_version = rec_get_uvarint(&in);
    if (in.bad || h->format_version == 0)
        return -PYPROF_R_CORRUPT;
    if (h->format_version > PYPROF_FORMAT_VERSION)
        return -PYPROF_R_NEWER;
    h->pid = rec_get_uvarint(&in);
    h->ppid = rec_get_uvarint(&in);
    h->run_id = dec_str(&in);
    h->start_unix_ns = rec_get_uvarint(&in);
    h->host = dec_str(&in);
    h->exe = dec_str(&in);
    h->argc = rec_get_uvarint(&in);
    /* Every argument takes at least one byte, so a larger count is a lie. */
    if (in.bad || h->argc > rec_in_left(&in))
        return -PYPROF_R_CORRUPT;
    if (h->argc) {
        d->argv = calloc((size_t)h->argc, sizeof *d->argv);
        if (!d->argv)
            return -PYPROF_R_NOMEM;
    }
    for (uint64_t i = 0; i < h->argc; i++)
        d->argv[i] = dec_str(&in);
    h->argv = d->argv;
    h->python_version = dec_str(&in);
    h->python_hex = rec_get_uvarint(&in);
    h->period_ns = rec_get_uvarint(&in);
    h->clock = rec_get_u8(&in);
    h->timer = dec_str(&in);
    h->max_depth = rec_get_uvarint(&in);
    h->flags = rec_get_uvarint(&in);
    h->window = rec_get_uvarint(&in);
    if (in.bad)
        return -PYPROF_R_CORRUPT;
    /* The rotated series' fields, absent in logs of older writers. */
    h->seq = h->series_start_unix_ns = h->offset_us = 0;
    if (in.p < in.end) {
        h->seq = rec_get_uvarint(&in);
        h->series_start_unix_ns = rec_get_uvarint(&in);
        h->offset_us = rec_get_uvarint(&in);
        /* Times are kept in int64_t microseconds once shifted by the offset. */
        if (in.bad || h->offset_us > (uint64_t)INT64_MAX / 4)
            return -PYPROF_R_CORRUPT;
    }
    /* Allocation sampling's interval, absent in logs of older writers. */
    h->alloc_interval = 0;
    if (in.p < in.end) {
        h->alloc_interval = rec_get_uvarint(&in);
        if (in.bad)
            return -PYPROF_R_CORRUPT;
    }
    d->alloc = h->alloc_interval != 0;
    d->native = !!(h->flags & PYPROF_HDR_NATIVE);
    return 0;
}

/* A native log's tail of a STACK: the run lengths, which must each hold a frame and add
 * up to the stack's frames.  Absent (an older writer, a non-native log): no runs. */
static int dec_runs(logdec *d, rec_in *in, pyprof_stack_rec *s)
{
    s->nruns = 0;
    s->runs = NULL;
    if (!d->native || in->bad || in->p >= in->end)
        return 0;
    uint64_t nruns = rec_get_uvarint(in);
    /* A run holds a frame and takes a byte. */
    if (in->bad || nruns > s->nframes || nruns > rec_in_left(in))
        return -PYPROF_R_CORRUPT;
    if (GROW_ARRAY(d->runs, d->runs_cap, (size_t)nruns))
        return -PYPROF_R_NOMEM;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < nruns; i++) {
        uint64_t len = rec_get_uvarint(in);
        if (in->bad || len == 0 || len > s->nframes - sum)
            return -PYPROF_R_CORRUPT;
        d->runs[i] = (uint32_t)len;
        sum += len;
    }
    if (sum != s->nframes)
        return -PYPROF_R_CORRUPT;
    s->nruns = nruns;
    s->runs = nruns ? d->runs : NULL;
    return 0;
}

static int dec_module(logdec *d, rec_in *in, pyprof_module_rec *m)
{
    m->module_id = rec_get_uvarint(in);
    m->path = dec_str(in);
    m->base = rec_get_uvarint(in);
    m->build_id = dec_str(in);
    m->nseg = rec_get_uvarint(in);
    /* A segment takes four bytes at least. */
    if (in->bad || m->build_id.len > PYPROF_BUILD_ID_MAX || m->nseg > PYPROF_MODULE_SEG_MAX ||
        m->nseg > rec_in_left(in) / 4)
        return -PYPROF_R_CORRUPT;
    for (uint64_t i = 0; i < m->nseg; i++) {
        d->segs[i].vaddr = rec_get_uvarint(in);
        d->segs[i].memsz = rec_get_uvarint(in);
        d->segs[i].file_offset = rec_get_uvarint(in);
        d->segs[i].flags = rec_get_uvarint(in);
    }
    m->segs = d->segs;
    m->dev = rec_get_uvarint(in);
    m->ino = rec_get_uvarint(in);
    m->size = rec_get_uvarint(in);
    m->mtime_ns = rec_get_uvarint(in);
    return 0;
}

static int dec_nstack(logdec *d, rec_in *in, pyprof_nstack_rec *n)
{
    n->nstack_id = rec_get_uvarint(in);
    n->n = rec_get_uvarint(in);
    if (in->bad || n->n > PYPROF_NSTACK_MAX || n->n > rec_in_left(in))
        return -PYPROF_R_CORRUPT;
    for (uint64_t i = 0; i < n->n; i++)
        d->addrs[i] = rec_get_uvarint(in);
    n->addrs = d->addrs;
    return 0;
}

static int dec_stack(logdec *d, rec_in *in, pyprof_stack_rec *s)
{
    s->stack_id = rec_get_uvarint(in);
    s->nframes = rec_get_uvarint(in);
    /* A frame takes at least two bytes. */
    if (in->bad || s->nframes > rec_in_left(in) / 2)
        return -PYPROF_R_CORRUPT;
    if (grow_array((void **)&d->frames, &d->frames_cap, (size_t)s->nframes, sizeof *d->frames,
                   64))
        return -PYPROF_R_NOMEM;
    for (uint64_t i = 0; i < s->nframes; i++) {
        d->frames[i].code_id = rec_get_uvarint(in);
        d->frames[i].line = rec_get_svarint(in);
    }
    s->frames = d->frames;
    int rc = dec_runs(d, in, s);
    s->gil = PYPROF_GIL_UNKNOWN;
    if (rc == 0 && in->p < in->end) {
        uint64_t gil = rec_get_uvarint(in);
        if (!in->bad && (gil < PYPROF_GIL_STATES || gil == PYPROF_GIL_AWAIT))
            s->gil = gil;
    }
    return rc;
}

/* A span's string: at most `max` bytes, else the record is corrupt. */
static int span_str(rec_in *in, pyprof_str *out, size_t max)
{
    *out = dec_str(in);
    return in->bad || out->len > max ? -PYPROF_R_CORRUPT : 0;
}

static int dec_span_start(rec_in *in, pyprof_span_start_rec *s)
{
    s->span_id = rec_get_uvarint(in);
    uint64_t t = rec_get_uvarint(in);
    s->thread_idx = rec_get_uvarint(in);
    s->parent_span_id = rec_get_uvarint(in);
    if (in->bad || s->span_id == 0 || t > (uint64_t)INT64_MAX / 4)
        return -PYPROF_R_CORRUPT;
    s->t_us = (int64_t)t;
    if (span_str(in, &s->name, PYPROF_SPAN_NAME_MAX) < 0 ||
        span_str(in, &s->trace_id, PYPROF_SPAN_ID_MAX) < 0 ||
        span_str(in, &s->parent_id, PYPROF_SPAN_ID_MAX) < 0 ||
        span_str(in, &s->base_id, PYPROF_SPAN_ID_MAX) < 0 ||
        span_str(in, &s->info, PYPROF_SPAN_INFO_MAX) < 0)
        return -PYPROF_R_CORRUPT;
    return 0;
}

static int dec_span_stop(rec_in *in, pyprof_span_stop_rec *s)
{
    s->span_id = rec_get_uvarint(in);
    uint64_t t = rec_get_uvarint(in);
    s->thread_idx = rec_get_uvarint(in);
    if (in->bad || s->span_id == 0 || t > (uint64_t)INT64_MAX / 4)
        return -PYPROF_R_CORRUPT;
    s->t_us = (int64_t)t;
    return span_str(in, &s->info, PYPROF_SPAN_INFO_MAX);
}

static int dec_snapshot(logdec *d, rec_in *in, pyprof_snapshot_rec *s)
{
    s->snapshot_id = rec_get_uvarint(in);
    uint64_t t = rec_get_uvarint(in);
    s->nthreads = rec_get_uvarint(in);
    /* A thread takes four bytes at least (three varints and its state byte). */
    if (in->bad || t > (uint64_t)INT64_MAX / 4 || s->nthreads > LOGDEC_MAX_SNAP_THREADS ||
        s->nthreads > rec_in_left(in) / 4)
        return -PYPROF_R_CORRUPT;
    s->t_us = (int64_t)t;
    if (GROW_ARRAY(d->snap, d->snap_cap, (size_t)s->nthreads))
        return -PYPROF_R_NOMEM;
    for (uint64_t i = 0; i < s->nthreads; i++) {
        d->snap[i].thread_idx = rec_get_uvarint(in);
        d->snap[i].stack_id = rec_get_uvarint(in);
        d->snap[i].flags = rec_get_uvarint(in);
        d->snap[i].os_state = rec_get_u8(in);
    }
    s->threads = s->nthreads ? d->snap : NULL;
    return in->bad ? -PYPROF_R_CORRUPT : 0;
}

static void dec_footer(rec_in *in, pyprof_footer *f, int native, int alloc)
{
    f->end_unix_ns = rec_get_uvarint(in);
    f->duration_ns = rec_get_uvarint(in);
    f->samples = rec_get_uvarint(in);
    f->signals = rec_get_uvarint(in);
    uint64_t ndrop = rec_get_uvarint(in);
    for (uint64_t i = 0; i < ndrop && !in->bad; i++) {
        uint64_t reason = rec_get_uvarint(in);
        uint64_t count = rec_get_uvarint(in);
        /* A reason this reader does not know (added later) is not counted under a known
         * one. */
        if (reason < PYPROF_DROP_COUNT)
            f->dropped[reason] += count;
    }
    f->end = rec_get_uvarint(in);
    f->status_known = rec_get_u8(in);
    f->status = rec_get_svarint(in);
    f->achieved_hz_milli = rec_get_uvarint(in);
    f->lib_cpu_ns = rec_get_uvarint(in);
    if (in->bad || in->p >= in->end)
        return; /* a footer without the optional cost section */
    /* Read from a copy: a section this reader cannot parse is skipped, never an error. */
    rec_in c = *in;
    f->handler_ns = rec_get_uvarint(&c);
    f->writer_ns = rec_get_uvarint(&c);
    uint64_t ntime = rec_get_uvarint(&c);
    if (c.bad || ntime > PYPROF_COST_MAX)
        return;
    for (uint64_t t = 0; t < ntime; t++)
        f->cost_time_bound[t] = rec_get_uvarint(&c);
    uint64_t ndepth = rec_get_uvarint(&c);
    if (c.bad || ndepth > PYPROF_COST_MAX)
        return;
    for (uint64_t d = 0; d < ndepth && !c.bad; d++) {
        f->cost_depth_bound[d] = rec_get_uvarint(&c);
        for (uint64_t t = 0; t < ntime; t++)
            f->cost[d][t] = rec_get_uvarint(&c);
    }
    if (c.bad) {
        f->handler_ns = f->writer_ns = 0;
        return;
    }
    f->cost_ntime = (uint32_t)ntime;
    f->cost_ndepth = (uint32_t)ndepth;
    f->has_cost = 1;
    if (c.p >= c.end)
        return; /* a footer without the timer section */
    uint64_t timer_ns = rec_get_uvarint(&c), untimed_ns = rec_get_uvarint(&c);
    if (c.bad)
        return;
    f->timer_ns = timer_ns;
    f->untimed_ns = untimed_ns;
    f->has_timers = 1;
    if (native) {
        if (c.p >= c.end)
            return; /* a footer without the native section */
        uint64_t ok = rec_get_uvarint(&c), truncated = rec_get_uvarint(&c);
        uint64_t skipped = rec_get_uvarint(&c), native_ns = rec_get_uvarint(&c);
        if (c.bad)
            return;
        f->native_ok = ok;
        f->native_truncated = truncated;
        f->native_skipped = skipped;
        f->native_ns = native_ns;
        f->has_native = 1;
    }
    if (c.p >= c.end)
        return; /* a footer without the whole-cost section */
    uint64_t sig_ns = rec_get_uvarint(&c), calib_signals = rec_get_uvarint(&c);
    uint64_t calib_ns = rec_get_uvarint(&c), process_cpu_ns = rec_get_uvarint(&c);
    if (c.bad)
        return;
    f->signal_cost_ns = sig_ns;
    f->calib_signals = calib_signals;
    f->calib_ns = calib_ns;
    f->process_cpu_ns = process_cpu_ns;
    f->has_whole = 1;
    if (c.p >= c.end)
        return; /* a footer without the span section */
    uint64_t spans_lost = rec_get_uvarint(&c);
    if (c.bad)
        return;
    f->spans_lost = spans_lost;
    f->has_spans = 1;
    if (alloc) {
        if (c.p >= c.end)
            return; /* a footer without the allocation section */
        uint64_t v[5];
        for (int i = 0; i < 5; i++)
            v[i] = rec_get_uvarint(&c);
        if (c.bad)
            return;
        f->alloc_samples = v[0];
        f->alloc_frees = v[1];
        f->alloc_lost = v[2];
        f->frees_lost = v[3];
        f->alloc_live = v[4];
        f->has_alloc = 1;
    }
    if (c.p >= c.end)
        return; /* a footer without the clock section */
    uint64_t timer = rec_get_uvarint(&c), kernel = rec_get_uvarint(&c);
    uint64_t corrected = rec_get_uvarint(&c);
    if (c.bad)
        return;
    f->clock_timer_ns = timer;
    f->clock_kernel_ns = kernel;
    f->clock_corrected = corrected & 1; /* the other bits are reserved */
    f->has_clock = 1;
    if (c.p >= c.end)
        return; /* a footer without the teardown section */
    uint64_t teardown = rec_get_uvarint(&c);
    if (c.bad || !teardown)
        return;
    f->has_teardown = 1;
    f->teardown_us = teardown - 1;
}

static int dec_alloc(logdec *d, rec_in *in, pyprof_alloc_rec *a)
{
    uint64_t t = rec_get_uvarint(in);
    a->thread_idx = rec_get_uvarint(in);
    a->stack_id = rec_get_uvarint(in);
    a->size = rec_get_uvarint(in);
    a->address = rec_get_uvarint(in);
    a->domain = rec_get_u8(in);
    a->flags = rec_get_uvarint(in);
    a->nstack_id = 0;
    if (d->native && in->p < in->end)
        a->nstack_id = rec_get_uvarint(in);
    if (in->bad || t > (uint64_t)INT64_MAX / 4 || (a->address & PYPROF_ALLOC_ORDINAL))
        return -PYPROF_R_CORRUPT;
    a->t_us = (int64_t)t;
    return 0;
}

static int dec_free(rec_in *in, pyprof_free_rec *f)
{
    uint64_t t = rec_get_uvarint(in);
    f->address = rec_get_uvarint(in);
    if (in->bad || t > (uint64_t)INT64_MAX / 4 || (f->address & PYPROF_ALLOC_ORDINAL))
        return -PYPROF_R_CORRUPT;
    f->t_us = (int64_t)t;
    return 0;
}

/* An AWINDOW: times bounded as ALLOC's (so that t_us + len_us cannot overflow), shifts
 * within the flags' five bits. */
static int dec_awindow(rec_in *in, pyprof_awindow_rec *w)
{
    uint64_t t = rec_get_uvarint(in);
    w->len_us = rec_get_uvarint(in);
    w->planned_us = rec_get_uvarint(in);
    w->shift = rec_get_uvarint(in);
    w->floor_shift = rec_get_uvarint(in);
    w->flags = rec_get_uvarint(in);
    if (in->bad || t > (uint64_t)INT64_MAX / 4 || w->len_us > (uint64_t)INT64_MAX / 4 ||
        w->planned_us > (uint64_t)INT64_MAX / 4 || w->shift > PYPROF_ALLOC_SHIFT_MAX ||
        w->floor_shift > PYPROF_ALLOC_SHIFT_MAX)
        return -PYPROF_R_CORRUPT;
    w->t_us = (int64_t)t;
    return 0;
}

/* A BATCH: every event checked and decoded into d->bev (nothing of a damaged batch is
 * returned), the running time carried through them. */
static int dec_batch(logdec *d, rec_in *in)
{
    uint64_t count = rec_get_uvarint(in);
    uint64_t base = rec_get_uvarint(in);
    uint64_t cpu = rec_get_uvarint(in);
    uint64_t unit = rec_get_uvarint(in);
    /* An event takes two bytes at least (its head and its dt). */
    if (in->bad || unit == 0 || count > PYPROF_BATCH_MAX || count > rec_in_left(in) / 2)
        return -PYPROF_R_CORRUPT;
    if (grow_array((void **)&d->bev, &d->bev_cap, (size_t)count, sizeof *d->bev, 256))
        return -PYPROF_R_NOMEM;
    int native = d->native;
    /* Unsigned: any input wraps, as t_acc does, instead of overflowing.  t: the last
     * event's time; ts: the last sample's (format.h: a sample's gap counts from it). */
    uint64_t thread = 0, rss = 0, t = d->t_acc, ts = d->t_acc;
    for (uint64_t i = 0; i < count; i++) {
        logdec_event *ev = &d->bev[i];
        uint64_t h = get_uv(in), kind = h & 1 ? h & 7 : 0, v = h & 1 ? h >> 3 : h >> 1;
        if (kind == 7)
            return -PYPROF_R_CORRUPT;
        if (kind == 3) {
            rss += (v >> 1) ^ -(v & 1);
            t += (uint64_t)get_sv(in);
            ev->type = PYPROF_REC_RSS;
            ev->u.rss.rss_bytes = rss * unit;
            ev->u.rss.t_us = (int64_t)t;
        } else {
            uint64_t flags = 0, ev_cpu = cpu;
            if (kind == 1)
                flags = PYPROF_BATCH_F_THREAD;
            else if (kind == 5)
                flags = get_uv(in);
            if (flags & ~(uint64_t)PYPROF_BATCH_F_ALL)
                return -PYPROF_R_CORRUPT;
            if (flags & PYPROF_BATCH_F_THREAD)
                thread = get_uv(in);
            if (flags & PYPROF_BATCH_F_CPU)
                ev_cpu = get_uv(in);
            uint64_t gap = (uint64_t)get_sv(in);
            if (!(flags & PYPROF_BATCH_F_DT))
                gap += base;
            t = ts += gap;
            pyprof_sample_rec *sm = &ev->u.sample;
            ev->type = PYPROF_REC_SAMPLE;
            sm->t_us = (int64_t)t;
            sm->thread_idx = thread;
            sm->stack_id = v;
            sm->cpu_us = ev_cpu;
            sm->nstack_id = native ? get_uv(in) : 0;
            sm->native_flags = native ? get_uv(in) : 0;
        }
        if (in->bad)
            return -PYPROF_R_CORRUPT;
    }
    d->t_acc = t;
    d->bev_n = (size_t)count;
    d->bev_pos = 0;
    return 0;
}

/* An ALLOCS: every event checked and decoded into d->bev, as dec_batch.  Its times are
 * absolute (like ALLOC's), outside the dt chain.  A block named by its ordinal gets the
 * address PYPROF_ALLOC_ORDINAL | ordinal (reader.h), which its free by ordinal names
 * too. */
static int dec_allocs(logdec *d, rec_in *in)
{
    uint64_t count = rec_get_uvarint(in);
    uint64_t t = rec_get_uvarint(in);
    uint64_t next = rec_get_uvarint(in); /* the next allocation event's ordinal */
    /* An event takes two bytes at least (its head and its gap). */
    if (in->bad || count > PYPROF_BATCH_MAX || count > rec_in_left(in) / 2 ||
        t > (uint64_t)INT64_MAX / 4 || next >= PYPROF_ALLOC_ORDINAL)
        return -PYPROF_R_CORRUPT;
    if (grow_array((void **)&d->bev, &d->bev_cap, (size_t)count, sizeof *d->bev, 256))
        return -PYPROF_R_NOMEM;
    uint64_t thread = 0;
    for (uint64_t i = 0; i < count; i++) {
        logdec_event *ev = &d->bev[i];
        uint64_t h = get_uv(in);
        if ((h & 3) == 0) {
            pyprof_alloc_rec *a = &ev->u.alloc;
            uint64_t more = h & PYPROF_ALLOCS_MORE ? get_uv(in) : 0;
            if (more & ~(uint64_t)PYPROF_ALLOCS_M_ALL)
                return -PYPROF_R_CORRUPT;
            if (more & PYPROF_ALLOCS_M_THREAD)
                thread = get_uv(in);
            ev->type = PYPROF_REC_ALLOC;
            a->domain = (uint8_t)(h >> 2 & 7);
            a->stack_id = h >> 6;
            a->thread_idx = thread;
            a->address = more & PYPROF_ALLOCS_M_ADDRESS ? get_uv(in)
                                                        : PYPROF_ALLOC_ORDINAL | next;
            if ((more & PYPROF_ALLOCS_M_ADDRESS) && (a->address & PYPROF_ALLOC_ORDINAL))
                return -PYPROF_R_CORRUPT; /* a real address never has the ordinal bit */
            a->flags = more & PYPROF_ALLOCS_M_FLAGS ? get_uv(in) : 0;
            a->size = get_uv(in);
            t += (uint64_t)get_sv(in);
            a->nstack_id = d->native ? get_uv(in) : 0;
            a->t_us = (int64_t)t;
            if (++next >= PYPROF_ALLOC_ORDINAL)
                return -PYPROF_R_CORRUPT;
        } else if ((h & 3) == 1) {
            uint64_t back = h >> 2;
            if (back >= next)
                return -PYPROF_R_CORRUPT;
            ev->type = PYPROF_REC_FREE;
            ev->u.free.address = PYPROF_ALLOC_ORDINAL | (next - 1 - back);
            t += (uint64_t)get_sv(in);
            ev->u.free.t_us = (int64_t)t;
        } else if ((h & 3) == 2) {
            ev->type = PYPROF_REC_FREE;
            ev->u.free.address = h >> 2;
            t += (uint64_t)get_sv(in);
            ev->u.free.t_us = (int64_t)t;
        } else {
            return -PYPROF_R_CORRUPT;
        }
        if (in->bad || t > (uint64_t)INT64_MAX / 4)
            return -PYPROF_R_CORRUPT;
    }
    d->bev_n = (size_t)count;
    d->bev_pos = 0;
    return 0;
}

/* The next event of the current BATCH or ALLOCS as the record it stands for. */
void logdec_next_event(logdec *d, pyprof_record *rec)
{
    const logdec_event *ev = &d->bev[d->bev_pos++];
    rec->type = ev->type;
    switch (ev->type) {
    case PYPROF_REC_RSS:
        rec->u.rss = ev->u.rss;
        break;
    case PYPROF_REC_ALLOC:
        rec->u.alloc = ev->u.alloc;
        break;
    case PYPROF_REC_FREE:
        rec->u.free = ev->u.free;
        break;
    default:
        rec->u.sample = ev->u.sample;
    }
}

/* Adds a dt field to the running time. */
static int64_t dec_advance(logdec *d, int64_t dt)
{
    d->t_acc += (uint64_t)dt;
    return (int64_t)d->t_acc;
}

int logdec_record(logdec *d, int type, const uint8_t *payload, size_t plen, pyprof_record *rec)
{
    rec_in in;
    rec_in_init(&in, payload, plen);
    int rc = 0;
    /* Each case sets every field of its record (clearing the whole union for every
     * record cost a fifth of the time to read a log). */
    switch (type) {
    case PYPROF_REC_THREAD:
        rec->u.thread.thread_idx = rec_get_uvarint(&in);
        rec->u.thread.tid = rec_get_uvarint(&in);
        rec->u.thread.name = dec_str(&in);
        break;
    case PYPROF_REC_CODE: {
        pyprof_code_rec *c = &rec->u.code;
        c->code_id = rec_get_uvarint(&in);
        c->first_line = rec_get_svarint(&in);
        c->name = dec_str(&in);
        c->qualname = dec_str(&in);
        c->filename = dec_str(&in);
        c->line_table_kind = rec_get_u8(&in);
        c->line_table = dec_str(&in);
        c->flags = rec_get_uvarint(&in);
        break;
    }
    case PYPROF_REC_STACK:
        rc = dec_stack(d, &in, &rec->u.stack);
        break;
    case PYPROF_REC_SAMPLE: {
        int64_t dt = get_sv(&in);
        rec->u.sample.t_us = dec_advance(d, dt);
        rec->u.sample.thread_idx = get_uv(&in);
        rec->u.sample.stack_id = get_uv(&in);
        rec->u.sample.cpu_us = get_uv(&in);
        rec->u.sample.nstack_id = rec->u.sample.native_flags = 0;
        if (d->native && in.p < in.end) {
            rec->u.sample.nstack_id = get_uv(&in);
            rec->u.sample.native_flags = get_uv(&in);
        }
        break;
    }
    case PYPROF_REC_RSS: {
        int64_t dt = rec_get_svarint(&in);
        rec->u.rss.t_us = dec_advance(d, dt);
        rec->u.rss.rss_bytes = rec_get_uvarint(&in);
        break;
    }
    case PYPROF_REC_BATCH:
        return dec_batch(d, &in);
    case PYPROF_REC_ALLOCS:
        return dec_allocs(d, &in);
    case PYPROF_REC_MODULE:
        rc = dec_module(d, &in, &rec->u.module);
        break;
    case PYPROF_REC_NSTACK:
        rc = dec_nstack(d, &in, &rec->u.nstack);
        break;
    case PYPROF_REC_MODULE_GONE:
        rec->u.module_gone = rec_get_uvarint(&in);
        break;
    case PYPROF_REC_SNAPSHOT:
        rc = dec_snapshot(d, &in, &rec->u.snapshot);
        break;
    case PYPROF_REC_SPAN_START:
        rc = dec_span_start(&in, &rec->u.span_start);
        break;
    case PYPROF_REC_SPAN_STOP:
        rc = dec_span_stop(&in, &rec->u.span_stop);
        break;
    case PYPROF_REC_ALLOC:
        rc = dec_alloc(d, &in, &rec->u.alloc);
        break;
    case PYPROF_REC_FREE:
        rc = dec_free(&in, &rec->u.free);
        break;
    case PYPROF_REC_AWINDOW:
        rc = dec_awindow(&in, &rec->u.awindow);
        break;
    case PYPROF_REC_FOOTER:
        memset(&rec->u.footer, 0, sizeof rec->u.footer);
        dec_footer(&in, &rec->u.footer, d->native, d->alloc);
        break;
    default:
        /* Unknown, or MARK (7): reserved and never written, so no log has one to show
         * and its payload is skipped like any unknown record's.  Only `type` is
         * filled. */
        return 0;
    }
    if (rc < 0)
        return rc;
    return in.bad ? -PYPROF_R_CORRUPT : 0;
}

void logdec_free(logdec *d)
{
    free(d->argv);
    free(d->frames);
    free(d->runs);
    free(d->snap);
    free(d->bev);
}
